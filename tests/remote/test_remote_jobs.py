"""The main job on real gateways: Enterprise Gateway 3.3.0 and Kernel Gateway 3.0.1, as they ship.

Each runnable gateway (tests/gateways.py) gets ``make demo``'s steps with
``-s``: healthcheck, session create, inline code that prints and plots
(its image kept under ``.j-cli/outputs``), the run listed, a py:percent file
run into its notebook and two of its outputs read back, an error, a timeout
that interrupts, a restart, and the session killed. With listing on, the
session is selected by name from the server's list; with default settings
(no listing), by the name j-cli remembered when it created the session
(tests/remote/test_remote_names.py tests that memory), and by its full kernel id.
Enterprise Gateway runs as ``nobody``: its kernel cannot enter the test's
directory, so it stays where the gateway put it, and the notebook run still
reads and writes the notebook here.
"""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request

import pytest
from helpers import REPO, run_cli

RUNNABLE = ["enterprise_gateway", "enterprise_gateway_listing", "kernel_gateway", "kernel_gateway_listing"]
KINDS = {"eg": "enterprise_gateway", "kg": "kernel_gateway"}
SETTINGS = {"eg": "--EnterpriseGatewayApp.list_kernels=True", "kg": "--JupyterWebsocketPersonality.list_kernels=True"}
PLOT = "import matplotlib.pyplot as plt\nprint('hello from the kernel')\nplt.figure(figsize=(3, 2)); plt.plot([1, 3, 2]); plt.show()"


@pytest.fixture
def on_gateway(request, monkeypatch):
    gateway = request.getfixturevalue(request.param)
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", gateway["url"])
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_TOKEN", gateway["token"])
    return gateway


def _kernel_exists(gateway: dict, kernel_id: str) -> bool:
    request = urllib.request.Request(f"{gateway['url']}/api/kernels/{kernel_id}", headers={"Authorization": f"token {gateway['token']}"})
    try:
        with urllib.request.urlopen(request, timeout=30):
            return True
    except urllib.error.HTTPError as err:
        assert err.code == 404
        return False


def _ok(*args: str, cwd) -> dict:
    result = run_cli("-j", *args, cwd=cwd)
    assert result.returncode == 0, (args, result.stderr)
    return result.json()


@pytest.mark.parametrize("on_gateway", RUNNABLE, indirect=True)
def test_the_main_job_runs_on_the_gateway(on_gateway, tmp_path):
    gateway, here = on_gateway, tmp_path
    shutil.copy(REPO / "examples" / "analysis.py", here)
    health = _ok("healthcheck", cwd=here)
    assert health["server_kind"] == KINDS[gateway["kind"]] and health["listing"] is gateway["listing"]
    assert health["kernels"] is None if not gateway["listing"] else isinstance(health["kernels"], int)

    created = _ok("session", "create", "-n", "job", cwd=here)
    kernel_id = created["kernel_id"]
    selector = "job"
    try:
        assert created["name"] == "job" and created["kernel_name"] == "python3"
        # EG's kernel runs as nobody, who cannot enter the test's directory; KG's runs here as root.
        assert created["kernel_in_cwd"] is (gateway["kind"] == "kg"), created
        if not gateway["listing"]:
            assert kernel_id in created["notes"][0] and "remembers the name 'job'" in created["notes"][0]
            by_id = _ok("exec", kernel_id, "-c", "1 + 1", cwd=here)
            assert by_id["text"] == "2\n" and by_id["session_id"] == created["id"]  # the remembered session, found by its kernel
            unknown = run_cli("-j", "exec", "nosuch", "-c", "1", cwd=here)
            err = unknown.error()
            assert unknown.returncode == 1 and err["code"] == "FORBIDDEN" and SETTINGS[gateway["kind"]] in err["setting"], err
            assert "created here through j-cli" in err["message"]

        ran = _ok("exec", selector, "-c", PLOT, cwd=here)
        assert ran["status"] == "ok" and "hello from the kernel" in ran["text"] and ran["kernel_id"] == kernel_id
        images = [o for o in ran["outputs"] if o["type"] == "image"]
        assert len(images) == 1 and images[0]["path"].startswith(str(here / ".j-cli" / "outputs"))
        with open(images[0]["path"], "rb") as png:
            assert png.read(8) == b"\x89PNG\r\n\x1a\n"
        listed = _ok("output", "list", cwd=here)
        assert ran["run"]["run_id"] in json.dumps(listed)

        run = run_cli("-j", "exec", selector, "-f", "analysis.py", cwd=here)
        assert run.returncode == 0, run.stderr
        summary = json.loads(run.stdout.splitlines()[-1])  # one JSON line per cell, then the summary
        assert summary["summary"]["cells_executed"] == 3 and summary["summary"]["notebook_updated"] is True
        assert (here / "analysis.ipynb").is_file()
        image = _ok("notebook", "output", "analysis.py", "--cell", "2", "--output", "0", cwd=here)
        assert image["selected"]["mime_type"] == "image/png"
        html = run_cli("notebook", "output", "analysis.py", "--cell", "3", "--output", "0", cwd=here)
        assert html.returncode == 0 and b"<table" in html.stdout

        failed = run_cli("-j", "exec", selector, "-c", "1 / 0", cwd=here)
        assert failed.returncode == 1 and failed.json()["error"]["ename"] == "ZeroDivisionError"
        slow = run_cli("-j", "exec", selector, "-c", "kept = 5\nimport time; time.sleep(120)", "--timeout", "2", cwd=here)
        assert slow.returncode == 1 and slow.error()["code"] == "TIMEOUT"
        assert _ok("exec", selector, "-c", "kept", cwd=here)["text"] == "5\n"  # interrupted, not killed

        assert _ok("kernel", "restart", selector, cwd=here)["restarted"] == kernel_id
        assert _ok("exec", selector, "-c", "'kept' in dir()", cwd=here)["text"] == "False\n"

        listed = _ok("session", "list", cwd=here)
        assert [row["name"] for row in listed["sessions"] if row["kernel_id"] == kernel_id] == ["job"]
        assert listed.get("listing", True) is gateway["listing"]  # said where the server does not list
        if not gateway["listing"]:  # only what this user created here, marked as such
            assert [(row["name"], row["remembered"], row["id"]) for row in listed["sessions"]] == [("job", True, created["id"])]
            assert "only the sessions this user created here through j-cli" in listed["notes"][0]
        killed = _ok("session", "kill", selector, cwd=here)
        assert [row["kernel_id"] for row in killed["killed"]] == [kernel_id]
        assert not _kernel_exists(gateway, kernel_id)
        assert kernel_id not in [row["kernel_id"] for row in _ok("session", "list", cwd=here)["sessions"]]  # forgotten with it
    finally:
        if _kernel_exists(gateway, kernel_id):
            run_cli("session", "kill", kernel_id, cwd=here)


def test_enterprise_gateway_as_root_refuses_kernels_and_says_which_setting(enterprise_gateway_root, tmp_path, monkeypatch):
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", enterprise_gateway_root["url"])
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_TOKEN", enterprise_gateway_root["token"])
    result = run_cli("-j", "session", "create", "-n", "refused", cwd=tmp_path)
    err = result.error()
    assert result.returncode == 1 and err["code"] == "FORBIDDEN" and err["http_status"] == 500, err
    assert "not authorized to start kernel" in err["server_message"] and "unauthorized_users" in err["setting"]
    human = run_cli("session", "create", "-n", "refused", cwd=tmp_path)
    assert b"[FORBIDDEN]" in human.stderr and b"run the gateway as another user" in human.stderr


@pytest.mark.parametrize("on_gateway", ["enterprise_gateway", "kernel_gateway"], indirect=True)
def test_a_gateways_refusals_are_coded(on_gateway, tmp_path):
    unknown = run_cli("-j", "session", "create", "-k", "nosuch", cwd=tmp_path)
    assert unknown.returncode == 2 and unknown.error()["code"] == "KERNELSPEC_NOT_FOUND" and "nosuch" in unknown.error()["server_message"]
    wrong = run_cli("-j", "-t", "not-the-token", "kernelspec", "list", cwd=tmp_path)
    assert wrong.returncode == 1 and wrong.error()["code"] == "NOT_AUTHORIZED" and wrong.error()["http_status"] == 401
    assert b"not-the-token" not in wrong.stderr
