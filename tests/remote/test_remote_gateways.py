"""Smoke tests against real Jupyter gateways (Enterprise Gateway, Kernel Gateway).

j-cli lists their kernel specs as it does a Jupyter Server's; and the REST
facts j-cli's remote support is built on are pinned here with plain urllib,
so a gateway upgrade that changes one (a status code, a version, listing
being off by default) fails a test instead of going unnoticed. The fixtures
are described in tests/gateways.py.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from helpers import run_cli

ALL = ["enterprise_gateway", "enterprise_gateway_root", "enterprise_gateway_listing", "kernel_gateway", "kernel_gateway_listing"]
#: What GET /api answers, per gateway (EG reports its jupyter_server as ``version``).
API = {"eg": {"version": "1.24.0", "gateway_version": "3.3.0"}, "kg": {"version": "2.21.1"}}


def _call(gateway: dict, method: str, path: str, body: dict | None = None, token: str | None = None) -> tuple[int, object]:
    """(status, JSON body or None) of one REST call to ``gateway``."""
    request = urllib.request.Request(
        gateway["url"] + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"token {token if token is not None else gateway['token']}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, None


@pytest.fixture(params=ALL)
def gateway(request):
    return request.getfixturevalue(request.param)


def _no_server_env(monkeypatch):
    for name in ("JCLI_JUPYTER_SERVER_URL", "JCLI_JUPYTER_SERVER_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_kernelspec_list_names_python3_as_json(gateway, monkeypatch, tmp_path):
    _no_server_env(monkeypatch)
    result = run_cli("-s", gateway["url"], "-t", gateway["token"], "-j", "kernelspec", "list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert doc["default"] == "python3"
    assert [(s["name"], s["language"]) for s in doc["kernelspecs"]] == [("python3", "python")]
    assert gateway["token"] not in result.stdout.decode()


def test_kernelspec_list_names_python3_for_a_human(gateway, monkeypatch, tmp_path):
    _no_server_env(monkeypatch)
    result = run_cli("-s", gateway["url"], "-t", gateway["token"], "kernelspec", "list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().split() == ["python3", "Python", "3", "(default)"]


def test_api_answers_the_pinned_versions(gateway):
    assert _call(gateway, "GET", "/api") == (200, API[gateway["kind"]])


def test_listing_is_forbidden_unless_switched_on(gateway):
    for path in ("/api/kernels", "/api/sessions"):
        status, body = _call(gateway, "GET", path)
        if gateway["listing"]:
            assert (status, type(body)) == (200, list), path
        else:
            assert status == 403, path


def test_a_wrong_token_is_refused_with_401(gateway):
    for path in ("/api", "/api/kernelspecs"):
        assert _call(gateway, "GET", path, token="not-the-token")[0] == 401, path


def test_neither_status_nor_contents_exists(gateway):
    assert _call(gateway, "GET", "/api/status")[0] == 404
    assert _call(gateway, "GET", "/api/contents")[0] == 404


def test_an_unknown_kernel_name_is_501_with_a_message(gateway):
    status, body = _call(
        gateway, "POST", "/api/sessions", {"path": "a.ipynb", "type": "notebook", "name": "a", "kernel": {"name": "nosuch"}}
    )
    assert status == 501
    assert isinstance(body, dict) and body["message"].startswith("The 'nosuch' kernel is not available.") and body["short_message"]


def test_enterprise_gateway_as_root_refuses_to_start_a_kernel(enterprise_gateway_root):
    status, body = _call(
        enterprise_gateway_root,
        "POST",
        "/api/sessions",
        {"path": "a.ipynb", "type": "notebook", "name": "a", "kernel": {"name": "python3"}},
    )
    assert status == 500
    assert isinstance(body, dict) and "HTTP 403: User 'root' is not authorized to start kernel" in body["message"]


@pytest.mark.parametrize("name", ["enterprise_gateway", "kernel_gateway"])
def test_a_kernel_starts_and_stops_through_the_gateway(request, name, starts_jupyter):
    """The kernelspec the fixtures write really starts a kernel (as nobody under EG)."""
    import psutil

    gateway = request.getfixturevalue(name)
    status, kernel = _call(gateway, "POST", "/api/kernels", {"name": "python3"})
    assert status == 201 and isinstance(kernel, dict), kernel
    try:
        assert _call(gateway, "GET", f"/api/kernels/{kernel['id']}")[1]["name"] == "python3"
        kernels = [p for p in psutil.process_iter(["cmdline", "username"]) if "ipykernel_launcher" in (p.info["cmdline"] or [])]
        mine = [p for p in kernels if any(kernel["id"] in part for part in p.info["cmdline"])]
        assert len(mine) == 1, [p.info["cmdline"] for p in kernels]
        assert mine[0].info["username"] == ("nobody" if gateway["kind"] == "eg" else "root")
    finally:
        assert _call(gateway, "DELETE", f"/api/kernels/{kernel['id']}")[0] == 204


@pytest.mark.parametrize("name", ["enterprise_gateway", "kernel_gateway"])
def test_per_id_kernel_lookups_work_without_listing_and_a_dead_kernels_session_is_dropped_when_asked_for(request, name, starts_jupyter):
    """What j-cli's remembered names rely on (jcli_sidecar/kernel/session_names.py): ``GET /api/kernels/ID``
    answers 200, then 404 once the kernel is gone; the gateway keeps that kernel's session until it is asked
    for (a DELETE answers 404 or 410, a GET by id 500), after which its path is free again."""
    gateway = request.getfixturevalue(name)
    body = {"path": "stale", "name": "stale", "type": "console", "kernel": {"name": "python3"}}
    status, session = _call(gateway, "POST", "/api/sessions", body)
    assert status == 201 and isinstance(session, dict), session
    kernel_id = session["kernel"]["id"]
    try:
        assert _call(gateway, "GET", f"/api/kernels/{kernel_id}")[0] == 200
        assert _call(gateway, "DELETE", f"/api/kernels/{kernel_id}")[0] == 204
        assert _call(gateway, "GET", f"/api/kernels/{kernel_id}")[0] == 404
        assert _call(gateway, "DELETE", f"/api/sessions/{session['id']}")[0] in (404, 410)
        assert _call(gateway, "GET", f"/api/sessions/{session['id']}")[0] == 500
        status, again = _call(gateway, "POST", "/api/sessions", body)
        assert status == 201 and isinstance(again, dict), again
        kernel_id = again["kernel"]["id"]
    finally:
        _call(gateway, "DELETE", f"/api/kernels/{kernel_id}")
