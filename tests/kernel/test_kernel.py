"""Kernel commands against a real Jupyter Server and a real ipykernel."""

from __future__ import annotations

import json
import os
import threading

import pytest
from helpers import jupyter_server_process, run_cli

WORKDIR = {}


@pytest.fixture(autouse=True)
def private_cwd(tmp_path, exec_path):
    """Every command runs in the test's own directory (rich runs are kept there); in-process, and for a test marked transport through a sidecar too."""
    WORKDIR["cwd"] = tmp_path
    exec_path(tmp_path)
    yield tmp_path


def jcli(*args, **kwargs):
    kwargs.setdefault("cwd", WORKDIR["cwd"])
    return run_cli(*args, **kwargs)


def run(session, code, *extra):
    result = jcli("-j", "exec", session, "-c", code, *extra)
    return result, (result.json() if result.stdout else None)


def test_healthcheck_and_kernelspecs(use_jupyter):
    health = jcli("-j", "healthcheck")
    assert health.returncode == 0 and health.json()["status"] == "ok"
    assert "python3" in health.json()["kernelspecs"]
    specs = jcli("-j", "kernelspec", "list").json()
    assert specs["default"] == "python3" and specs["kernelspecs"][0]["language"] == "python"


def test_sessions_are_selected_by_id_prefix_or_name(use_jupyter):
    name = f"sel-{os.urandom(3).hex()}"
    row = jcli("-j", "session", "create", "--name", name).json()
    try:
        listed = jcli("-j", "session", "list").json()["sessions"]
        assert any(r["id"] == row["id"] and r["name"] == name for r in listed)
        for key in (row["id"], row["id"][:8], name):
            result = jcli("-j", "exec", key, "-c", "21 * 2")
            assert result.json()["text"] == "42\n"
        duplicate = jcli("-j", "session", "create", "-n", name)
        assert duplicate.returncode == 2 and duplicate.error()["code"] == "USAGE_ERROR"
        for bad in ("no-such-session", row["id"][:2]):
            missing = jcli("-j", "exec", bad, "-c", "1")
            assert missing.returncode == 1 and missing.error()["code"] == "SESSION_NOT_FOUND"
    finally:
        killed = jcli("-j", "session", "kill", name)
    assert killed.returncode == 0 and killed.json()["session_ids"] == [row["id"]]
    assert killed.json()["killed"] == [{"id": row["id"], "name": name, "kernel_id": row["kernel_id"]}]
    assert all(r["id"] != row["id"] for r in jcli("-j", "session", "list").json()["sessions"])


@pytest.mark.transport
def test_streams_results_and_errors(use_jupyter, kernel_session):
    # stdout is flushed first: ipykernel flushes its two streams independently otherwise
    result, doc = run(kernel_session, "print('hello', flush=True); import sys; print('warn', file=sys.stderr); 6 * 7")
    assert result.returncode == 0 and doc["status"] == "ok"
    assert [o["type"] for o in doc["outputs"]] == ["stream", "stream", "display"]
    assert doc["outputs"][0] == {"type": "stream", "output_index": 0, "name": "stdout", "text": "hello\n"}
    assert doc["outputs"][2]["text"] == "42" and doc["execution_count"] >= 1
    failed, doc = run(kernel_session, "1 / 0")
    assert failed.returncode == 1 and doc["status"] == "error"  # a result on stdout, not a j-cli failure
    assert doc["error"]["ename"] == "ZeroDivisionError" and doc["error"]["traceback"]
    assert failed.stderr == b""


@pytest.mark.transport
def test_stream_chunks_are_coalesced(use_jupyter, kernel_session):
    _, doc = run(kernel_session, "import sys\nfor i in range(50):\n    print(i, flush=True)")
    assert len(doc["outputs"]) == 1
    assert doc["outputs"][0]["text"] == "".join(f"{i}\n" for i in range(50))


@pytest.mark.transport
def test_rich_outputs_are_listed_with_their_mime_types(use_jupyter, kernel_session):
    code = (
        "import matplotlib.pyplot as plt\n"
        "from IPython.display import HTML, display\n"
        "plt.plot([1, 3, 2]); plt.show()\n"
        "display(HTML('<b>bold</b>'))"
    )
    _, doc = run(kernel_session, code)
    stored = [(o["type"], o["mime"]) for o in doc["outputs"] if "path" in o]
    assert stored == [("image", "image/png"), ("html", "text/html")]
    assert "iVBOR" not in json.dumps(doc)  # no base64 in an exec result


@pytest.mark.transport
def test_update_display_and_clear_output(use_jupyter, kernel_session):
    code = (
        "from IPython.display import display, clear_output\n"
        "h = display('first', display_id=True)\n"
        "h.update('second')\n"
        "print('gone'); clear_output(wait=True); print('kept')"
    )
    _, doc = run(kernel_session, code)
    assert [o.get("text") for o in doc["outputs"]] == ["kept\n"]
    _, doc = run(kernel_session, "from IPython.display import display\nh = display('a', display_id=True)\nprint('x')\nh.update('b')")
    assert [o.get("text") for o in doc["outputs"]] == ["'b'", "x\n"]


@pytest.mark.transport
def test_input_is_refused_clearly(use_jupyter, kernel_session):
    result, doc = run(kernel_session, "input('name? ')")
    assert result.returncode == 1 and doc["status"] == "error"
    assert doc["error"]["ename"] == "StdinNotImplementedError"
    assert any("no stdin" in note for note in doc["notes"])


@pytest.mark.transport
def test_a_timeout_interrupts_the_kernel_which_stays_usable(use_jupyter, kernel_session):
    result = jcli("-j", "exec", kernel_session, "-c", "import time; time.sleep(60)", "--timeout", "1")
    assert result.returncode == 1 and result.error()["code"] == "TIMEOUT"
    assert run(kernel_session, "'still alive'")[1]["text"] == "'still alive'\n"


def test_kernel_interrupt_from_another_process(use_jupyter, kernel_session):
    box = {}
    ready = threading.Event()

    def long_run():
        ready.set()
        box["result"] = run(kernel_session, "import time\nprint('started', flush=True)\ntime.sleep(60)")

    worker = threading.Thread(target=long_run)
    worker.start()
    ready.wait()
    # Interrupt as soon as the kernel reports it is busy with our code.
    while True:
        rows = jcli("-j", "session", "list").json()["sessions"]
        if any(r["name"] == kernel_session and r["execution_state"] == "busy" for r in rows):
            break
    assert jcli("kernel", "interrupt", kernel_session).returncode == 0
    worker.join(60)
    _, doc = box["result"]
    assert doc["status"] == "error" and doc["error"]["ename"] == "KeyboardInterrupt"


def test_a_restart_mid_session_clears_state(use_jupyter, kernel_session):
    run(kernel_session, "remember_me = 5")
    assert run(kernel_session, "remember_me")[1]["text"] == "5\n"
    assert jcli("kernel", "restart", kernel_session).returncode == 0
    _, doc = run(kernel_session, "remember_me")
    assert doc["status"] == "error" and doc["error"]["ename"] == "NameError"


@pytest.mark.transport
def test_a_dying_kernel_is_a_coded_error(use_jupyter):
    name = f"die-{os.urandom(3).hex()}"
    assert jcli("session", "create", "-n", name).returncode == 0
    try:
        result = jcli("-j", "exec", name, "-c", "import os; os._exit(1)")
        assert result.returncode == 1 and result.error()["code"] == "KERNEL_DIED"
    finally:
        jcli("session", "kill", name)


def test_text_and_items_are_bounded_with_a_notice(use_jupyter, kernel_session):
    _, doc = run(kernel_session, "print('x' * 10000)")
    assert len(doc["text"]) == 4000 and doc["truncated"]
    assert "6001 more characters" in doc["truncation_notice"]
    _, doc = run(kernel_session, "from IPython.display import display\nfor i in range(30): display(i)")
    assert len(doc["outputs"]) == 20 and "10 more outputs" in doc["truncation_notice"]


def test_a_plain_script_runs_as_inline_code(use_jupyter, kernel_session, tmp_path):
    script = tmp_path / "script.py"
    script.write_text("total = sum(range(10))\nprint(total)\n")
    result = jcli("-j", "exec", kernel_session, "-f", str(script))
    assert result.returncode == 0 and result.json()["text"] == "45\n"


@pytest.mark.parametrize(
    "args",
    [[], ["-c", "1", "-f", "x.py"], ["-c", "1", "--timeout", "-1"], ["-f", "data.csv"]],
    ids=["neither", "both", "negative-timeout", "not-code"],
)
def test_exec_usage_errors(use_jupyter, kernel_session, args):
    result = jcli("-j", "exec", kernel_session, *args)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"


def test_a_missing_notebook_is_file_not_found(use_jupyter, kernel_session):
    result = jcli("-j", "exec", kernel_session, "-f", "missing.ipynb")
    assert result.returncode == 1 and result.error()["code"] == "FILE_NOT_FOUND"


def test_an_unreachable_server_is_server_unavailable_and_a_wrong_token_not_authorized(jupyter):
    gone = jcli("-j", "-s", "http://127.0.0.1:9", "healthcheck")
    assert gone.returncode == 1 and gone.error()["code"] == "SERVER_UNAVAILABLE"
    wrong = jcli("-j", "-s", jupyter["url"], "-t", "not-the-token", "session", "list")
    assert wrong.returncode == 1 and wrong.error()["code"] == "NOT_AUTHORIZED"
    assert "token" in wrong.error()["message"] and jupyter["token"] not in wrong.stderr.decode()


EXEC_IMPORT_PROBE = """
import sys
from jcli.__main__ import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    fh.write("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""


def modules_of_exec(session: str, cwd) -> set[str]:
    """Every module one ``j-cli -j exec SESSION -c '40 + 2'`` in ``cwd`` loaded (its answer checked)."""
    import subprocess
    import sys

    listing = cwd / "modules.txt"
    proc = subprocess.run(
        [sys.executable, "-c", EXEC_IMPORT_PROBE, str(listing), "-j", "exec", session, "-c", "40 + 2"],
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"] == "42\n"
    return set(listing.read_text().split())


def test_exec_takes_the_lean_path_without_click(use_jupyter, kernel_session, tmp_path):
    roots = {name.split(".")[0] for name in modules_of_exec(kernel_session, tmp_path)}
    assert not roots & {"click", "nbformat", "psutil", "mcp"}


def test_a_server_behind_a_url_prefix_works_like_a_hub_user_server(tmp_path):
    """JupyterHub and gateways serve Jupyter under a path prefix: -s URL carries it."""
    with jupyter_server_process(tmp_path, "--ServerApp.base_url=/user/someone/") as (port, token):
        url = f"http://127.0.0.1:{port}/user/someone/"
        created = run_cli("-j", "-s", url, "-t", token, "session", "create", "-n", "hub", cwd=tmp_path)
        assert created.returncode == 0, created.stderr
        result = run_cli("-j", "-s", url, "-t", token, "exec", "hub", "-c", "'through the prefix'", cwd=tmp_path)
        assert result.json()["text"] == "'through the prefix'\n"
        printed = run_cli("-j", "-s", f"{url}lab/tree/x.ipynb?token={token}", "session", "list", cwd=tmp_path)
        assert printed.returncode == 0 and "hub" in printed.stdout.decode(), printed.stderr  # the URL JupyterLab shows, token in it
        assert token not in (printed.stdout + printed.stderr).decode()
        bare = run_cli("-j", "-s", f"http://127.0.0.1:{port}/", "-t", token, "session", "list", cwd=tmp_path)
        assert bare.returncode == 1 and bare.error()["code"] == "SERVER_UNAVAILABLE"  # no traceback for a wrong base URL
        assert "base URL" in bare.error()["message"]
