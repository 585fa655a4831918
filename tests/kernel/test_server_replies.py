"""A server's refusals as specific coded errors, full ids without listing, and where a new kernel runs.

Against a real Jupyter Server of its own (kernel specs: ipykernel, a kernel
that is not IPython, and one whose binary does not exist), so every reply
here is the server's own. The gateways' side is tests/remote/test_remote_gateways.py.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
import uuid

import pytest
from helpers import FIXTURES, run_cli

SECRET_TOKEN = "not-the-token-4f1c"


@pytest.fixture(scope="module")
def server(tmp_path_factory, starts_jupyter):
    from helpers import embedded_server_with_kernels

    echo = [sys.executable, str(FIXTURES.parent / "echo_kernel.py"), "-f", "{connection_file}"]
    missing = str(tmp_path_factory.mktemp("nowhere") / "no-such-kernel-binary")
    kernels = {
        "echo": {"argv": echo, "display_name": "Echo", "language": "echo"},
        "broken": {"argv": [missing, "-f", "{connection_file}"], "display_name": "Broken", "language": "python"},
    }
    yield from embedded_server_with_kernels(tmp_path_factory, kernels)


@pytest.fixture
def on_server(server, monkeypatch):
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", server["url"])
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_TOKEN", server["token"])
    return server


def _rest(server, method: str, path: str, body=None):
    request = urllib.request.Request(
        f"{server['url']}/api/{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {server['token']}"},
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read() or b"null")


@pytest.mark.parametrize("args", [["healthcheck"], ["session", "list"], ["kernelspec", "list"], ["exec", "x", "-c", "1"]], ids=" ".join)
@pytest.mark.parametrize("json_mode", [True, False], ids=["json", "human"])
def test_a_wrong_token_is_not_authorized_though_jupyter_server_answers_403(server, tmp_path, args, json_mode):
    result = run_cli(*(["-j"] if json_mode else []), "-s", server["url"], "-t", SECRET_TOKEN, *args, cwd=tmp_path)
    out = (result.stdout + result.stderr).decode()
    assert result.returncode == 1 and SECRET_TOKEN not in out and "Traceback" not in out
    if json_mode:
        err = result.error()
        assert err["code"] == "NOT_AUTHORIZED" and err["http_status"] == 403 and "refused the token" in err["message"], err
    else:
        assert "[NOT_AUTHORIZED]" in out and "-t or JCLI_JUPYTER_SERVER_TOKEN" in out


def test_an_unknown_kernel_spec_is_kernelspec_not_found_with_the_servers_words(on_server, tmp_path):
    result = run_cli("-j", "session", "create", "-n", "nope", "-k", "nosuch", cwd=tmp_path)
    err = result.error()
    assert result.returncode == 2 and err["code"] == "KERNELSPEC_NOT_FOUND" and err["kernel"] == "nosuch", err
    assert err["http_status"] == 501 and "nosuch" in err["server_message"] and "kernelspec list" in err["message"]
    human = run_cli("session", "create", "-n", "nope", "-k", "nosuch", cwd=tmp_path)
    assert human.returncode == 2 and b"[KERNELSPEC_NOT_FOUND]" in human.stderr and b"HTTP 501" not in human.stderr
    assert "nope" not in {row["name"] for row in run_cli("-j", "session", "list", cwd=tmp_path).json()["sessions"]}


def test_a_kernel_that_cannot_start_is_a_server_error_carrying_what_the_server_said(on_server, tmp_path):
    result = run_cli("-j", "session", "create", "-n", "broken", "-k", "broken", cwd=tmp_path)
    err = result.error()
    assert result.returncode == 1 and err["code"] == "SERVER_ERROR" and err["http_status"] == 500, err
    assert "no-such-kernel-binary" in err["server_message"] and err["server_message"] in err["message"]


def test_healthcheck_says_what_the_server_is_and_allows(on_server, tmp_path):
    doc = run_cli("-j", "healthcheck", cwd=tmp_path).json()
    assert doc["server_kind"] == "jupyter_server" and doc["listing"] is True and doc["gateway_version"] is None
    assert isinstance(doc["kernels"], int) and doc["version"] and doc["notes"] == []
    assert {"python3", "echo", "broken"} <= set(doc["kernelspecs"])


def test_a_full_kernel_id_selects_a_kernel_that_no_session_holds(on_server, tmp_path):
    kernel = _rest(on_server, "POST", "kernels", {"name": "python3"})
    ran = run_cli("-j", "exec", kernel["id"], "-c", "6 * 7", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.json()["text"] == "42\n" and ran.json()["kernel_id"] == kernel["id"] and ran.json()["session_id"] is None
    assert run_cli("kernel", "interrupt", kernel["id"], cwd=tmp_path).returncode == 0
    killed = run_cli("-j", "session", "kill", kernel["id"], cwd=tmp_path)
    assert killed.returncode == 0 and killed.json()["killed"] == [{"id": None, "name": None, "kernel_id": kernel["id"]}]
    assert kernel["id"] not in {k["id"] for k in _rest(on_server, "GET", "kernels")}


def test_a_kernel_id_of_a_session_selects_that_session(on_server, tmp_path):
    created = run_cli("-j", "session", "create", "-n", "held", cwd=tmp_path).json()
    try:
        ran = run_cli("-j", "exec", created["kernel_id"], "-c", "1 + 1", cwd=tmp_path).json()
        assert ran["session_id"] == created["id"] and ran["text"] == "2\n"
        by_id = run_cli("-j", "exec", created["id"], "-c", "2 + 2", cwd=tmp_path).json()
        assert by_id["session_id"] == created["id"] and by_id["text"] == "4\n"
    finally:
        run_cli("session", "kill", created["id"], cwd=tmp_path)


def test_a_full_id_nobody_has_is_session_not_found_naming_it(on_server, tmp_path):
    ghost = str(uuid.uuid4())
    result = run_cli("-j", "exec", ghost, "-c", "1", cwd=tmp_path)
    err = result.error()
    assert result.returncode == 1 and err["code"] == "SESSION_NOT_FOUND" and err["selector"] == ghost


def test_a_kernel_on_an_explicit_server_on_this_machine_moves_into_the_cwd(on_server, tmp_path):
    here = tmp_path / "work here"
    here.mkdir()
    created = run_cli("-j", "session", "create", "-n", "placed", cwd=here)
    assert created.returncode == 0, created.stderr
    doc = created.json()
    try:
        assert on_server["workspace"] != os.path.realpath(here)  # the server's own root is elsewhere
        assert doc["kernel_in_cwd"] is True and doc["kernel_cwd"] == os.path.realpath(here)
        ran = run_cli("-j", "exec", "placed", "-c", "import os; os.getcwd()", cwd=here).json()
        assert ran["text"] == repr(os.path.realpath(here)) + "\n"
        assert ran["execution_count"] == 1  # moving it was silent: no history entry, no count
        left = run_cli("-j", "exec", "placed", "-c", "sorted(k for k in dir() if not k.startswith('_'))", cwd=here).json()
        assert "jcli_cwd" not in left["text"] and "same" not in left["text"]
    finally:
        run_cli("session", "kill", "placed", cwd=here)


def test_a_kernel_that_is_not_python_stays_and_the_result_says_where(on_server, tmp_path):
    created = run_cli("-j", "session", "create", "-n", "echoes", "-k", "echo", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    doc = created.json()
    try:
        assert doc["kernel_in_cwd"] is False and doc["kernel_cwd"] is None and "echo" in doc["kernel_cwd_note"]
        human = run_cli("session", "create", "-n", "echoes2", "-k", "echo", cwd=tmp_path)
        assert human.returncode == 0 and b"not here" in human.stdout
    finally:
        run_cli("session", "kill", "echoes", "echoes2", cwd=tmp_path)


def test_the_embedded_server_says_its_kernel_runs_here(tmp_path, monkeypatch, starts_jupyter):
    for name in ("JCLI_JUPYTER_SERVER_URL", "JCLI_JUPYTER_SERVER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    try:
        doc = run_cli("-j", "session", "create", "-n", "local", cwd=tmp_path).json()
        assert doc["kernel_in_cwd"] is True and os.path.realpath(doc["kernel_cwd"]) == os.path.realpath(tmp_path)
        ran = run_cli("-j", "exec", "local", "-c", "import os; os.getcwd()", cwd=tmp_path).json()
        assert ran["text"] == repr(os.path.realpath(tmp_path)) + "\n"
    finally:
        run_cli("server", "stop", cwd=tmp_path)
