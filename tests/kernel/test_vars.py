"""``j-cli vars`` and ``session list --vars`` against a real Jupyter Server and real ipykernels.

Two kernels hold the same namespace: the stock ``python3`` (its debugger
available) and ``nodebug``, a kernelspec of this module's own whose kernel
cannot import debugpy, so ipykernel runs without a debugger. Both must give
the same rows; a busy kernel is made by a cell blocked on a FIFO that the
test releases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import JCLI, run_cli

from jcli_sidecar.kernel.kernel_vars import NAMED_VALUE_CHARS, RICH_CHARS, VALUE_CHARS

NAMESPACE = """
import numpy as np
import pandas as pd
n = 1
arr = np.arange(12).reshape(3, 4)
df = pd.DataFrame({"x": range(5), "y": list("abcde")})
def f(x):
    return x
class C:
    pass
big = "z" * 200_000
moved = 1
gone = 1
_private = 3
n = 10
del gone
del moved
moved = 2
"""
#: Definition order: reassigning n keeps its place, del + assign moves `moved` to the end; np and pd are modules.
EXPECTED = ["n", "arr", "df", "f", "C", "big", "_private", "moved"]


@pytest.fixture(scope="module")
def server(tmp_path_factory, starts_jupyter):
    """A Jupyter Server that also offers the ``nodebug`` kernelspec; yields the environment for j-cli."""
    from helpers import embedded_server_with_kernels

    launch = "import sys; sys.modules['debugpy'] = None; from ipykernel.kernelapp import launch_new_instance; launch_new_instance()"
    argv = [sys.executable, "-c", launch, "-f", "{connection_file}"]
    nodebug = {"argv": argv, "display_name": "no debugger", "language": "python"}
    for state in embedded_server_with_kernels(tmp_path_factory, {"nodebug": nodebug}):
        yield {"JCLI_JUPYTER_SERVER_URL": state["url"], "JCLI_JUPYTER_SERVER_TOKEN": state["token"]}


@pytest.fixture(scope="module")
def sessions(server, tmp_path_factory):
    """``{"dap": name, "nodebug": name}``: one session per kernel, each holding :data:`NAMESPACE`."""
    env = {**os.environ, **server}
    here = tmp_path_factory.mktemp("vars-ws")  # never the directory pytest runs in
    names = {}
    for key, spec in (("dap", "python3"), ("nodebug", "nodebug")):
        names[key] = f"vars-{key}-{os.urandom(3).hex()}"
        created = run_cli("session", "create", "-n", names[key], "-k", spec, cwd=here, env=env)
        assert created.returncode == 0, created.stderr
        ran = run_cli("-j", "exec", names[key], "-c", NAMESPACE, cwd=here, env=env)
        assert ran.returncode == 0 and ran.json()["status"] == "ok", ran.stdout
    yield names
    for name in names.values():
        run_cli("session", "kill", name, cwd=here, env=env)


@pytest.fixture
def jcli(server, tmp_path):
    def call(*args):
        return run_cli(*args, cwd=tmp_path, env={**os.environ, **server})

    return call


def _kernel_info(server, jcli, session):
    from jcli_sidecar.kernel.jupyter_api import JupyterServer
    from jcli_sidecar.kernel.kernel_client import KernelConnection

    row = next(r for r in jcli("-j", "session", "list").json()["sessions"] if r["name"] == session)
    srv = JupyterServer(server["JCLI_JUPYTER_SERVER_URL"], server["JCLI_JUPYTER_SERVER_TOKEN"])
    with KernelConnection(srv, row["kernel_id"]) as kernel:
        return kernel.request("kernel_info_request", {}, channel="control", timeout=30)


def test_only_the_stock_kernel_has_a_debugger(server, sessions, jcli):
    assert "debugger" in _kernel_info(server, jcli, sessions["dap"])["supported_features"]
    info = _kernel_info(server, jcli, sessions["nodebug"])
    assert "debugger" not in info["supported_features"] and not info.get("debugger")


def _shape(row):
    return {k: row.get(k) for k in ("name", "type", "kind", "shape", "len", "truncated", "repr_length")}


def test_both_kernels_list_the_same_rows_in_definition_order_with_bounded_values(sessions, jcli):
    docs = {}
    for key, name in sessions.items():
        result = jcli("-j", "vars", name)
        assert result.returncode == 0, result.stderr
        doc = docs[key] = result.json()
        assert doc["source"] == "snippet" and doc["order"] == "definition"
        assert [row["name"] for row in doc["variables"]] == EXPECTED
        assert doc["count"] == doc["total"] == len(EXPECTED) and doc["modules_hidden"] == 2
        rows = {row["name"]: row for row in doc["variables"]}
        assert rows["arr"]["type"] == "ndarray" and rows["arr"]["shape"] == [3, 4]
        assert rows["df"]["type"] == "DataFrame" and rows["df"]["shape"] == [5, 2]
        assert rows["f"]["kind"] == "function" and rows["C"]["kind"] == "class"
        assert rows["n"]["value"] == "10" and rows["moved"]["value"] == "2"
        big = rows["big"]
        assert big["len"] == 200_000 and big["truncated"] and big["repr_length"] == 200_002 and len(big["value"]) == VALUE_CHARS
        assert len(result.stdout) < 5000  # a 200 kB string does not make a 200 kB answer
    assert [_shape(r) for r in docs["dap"]["variables"]] == [_shape(r) for r in docs["nodebug"]["variables"]]


def test_the_human_table_is_in_definition_order_and_says_so(sessions, jcli):
    result = jcli("vars", sessions["nodebug"])
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "SIZE", "VALUE"]
    assert [line.split()[0] for line in lines[1 : 1 + len(EXPECTED)]] == EXPECTED
    table = dict(line.split(None, 1) for line in lines[1 : 1 + len(EXPECTED)])
    assert table["f"].startswith("function") and table["C"].startswith("class") and table["arr"].startswith("ndarray    3x4")
    assert table["big"].rstrip().endswith("…") and len(lines[1 + EXPECTED.index("big")]) < 120
    assert "definition order; source: snippet" in result.stdout.decode() and "2 module(s) hidden" in result.stdout.decode()
    for hidden in ("In", "Out", "_", "exit", "quit", "get_ipython", "_i1"):
        assert hidden not in table


def test_modules_are_listed_when_asked(sessions, jcli):
    doc = jcli("-j", "vars", sessions["dap"], "--modules").json()
    rows = {row["name"]: row for row in doc["variables"]}
    assert rows["np"]["kind"] == rows["pd"]["kind"] == "module" and doc["modules_hidden"] == 0
    assert [row["name"] for row in doc["variables"]][:2] == ["np", "pd"]


@pytest.mark.parametrize("kernel", ["dap", "nodebug"])
def test_one_variable_by_name_functions_and_classes_included(sessions, jcli, kernel):
    for name, kind in (("f", "function"), ("C", "class"), ("df", "value"), ("np", "module")):
        doc = jcli("-j", "vars", sessions[kernel], "--name", name).json()
        assert doc["variable"]["name"] == name and doc["variable"]["kind"] == kind
    big = jcli("-j", "vars", sessions[kernel], "--name", "big").json()["variable"]
    assert len(big["value"]) == NAMED_VALUE_CHARS and big["truncated"] and big["repr_length"] == 200_002
    human = jcli("vars", sessions[kernel], "-n", "big").stdout.decode()
    assert human.startswith("big: str (len 200000)\n") and f"[truncated: {NAMED_VALUE_CHARS} of 200002 chars]" in human


@pytest.mark.parametrize("rich", [[], ["--rich"]])
def test_a_missing_name_is_a_coded_error(sessions, jcli, rich):
    for name in ("nosuch", "Out", "_i1"):  # IPython's own names are not found either
        result = jcli("-j", "vars", sessions["dap"], "--name", name, *rich)
        assert result.returncode == 1 and result.error()["code"] == "VARIABLE_NOT_FOUND" and result.stdout == b""
    human = jcli("vars", sessions["nodebug"], "--name", "nosuch", *rich)
    assert human.returncode == 1 and b"[VARIABLE_NOT_FOUND]" in human.stderr and b"Traceback" not in human.stderr


def test_rich_is_bounded_too(sessions, jcli):
    doc = jcli("-j", "vars", sessions["nodebug"], "--name", "df", "--rich").json()
    assert "<table" in doc["rich"]["data"]["text/html"] and doc["rich"]["truncated"] == []
    result = jcli("-j", "vars", sessions["nodebug"], "--name", "big", "--rich")
    rich = result.json()["rich"]
    assert rich["truncated"] == ["text/plain"] and len(rich["data"]["text/plain"]) == RICH_CHARS
    assert rich["lengths"]["text/plain"] == 200_002 and len(result.stdout) < RICH_CHARS + NAMED_VALUE_CHARS + 2000
    human = jcli("vars", sessions["dap"], "--name", "df", "--rich").stdout.decode()
    assert "--- text/html:" in human and "<table" in human


@pytest.mark.parametrize("args", [["--rich"], ["--timeout", "0"], ["--name", "a.b"], ["--timeout", "nan"]])
def test_bad_arguments_are_usage_errors(sessions, jcli, args):
    result = jcli("-j", "vars", sessions["dap"], *args)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"


#: Run after the snapshot cell: how many cells, which names and what ``_`` changed since (beyond the snapshot's own).
CHECK = "(len(In) - snap[0], sorted(set(globals()) - snap[1] - {'snap', f'_i{len(In) - 1}'}), _, get_ipython().execution_count - snap[2])"


@pytest.mark.parametrize("kernel", ["dap", "nodebug"])
def test_vars_leaves_no_trace(sessions, jcli, kernel):
    session = sessions[kernel]
    assert jcli("-j", "exec", session, "-c", "'marker'").json()["text"] == "'marker'\n"
    jcli("-j", "exec", session, "-c", "snap = (len(In), set(globals()), get_ipython().execution_count)")
    try:
        for args in ([], ["--modules"], ["--name", "df"], ["--name", "df", "--rich"]):
            listed = jcli("-j", "vars", session, *args)
            assert listed.returncode == 0, (args, listed.stderr)
            assert listed.json()  # a document, not an empty answer
        missing = jcli("-j", "vars", session, "--name", "nosuch")
        assert missing.returncode == 1 and missing.error()["code"] == "VARIABLE_NOT_FOUND"
        assert jcli("session", "list", "--vars").returncode == 0
        # Only this check cell since the snapshot: one more In entry, its own _iN, `_` untouched.
        assert jcli("-j", "exec", session, "-c", CHECK).json()["text"] == "(1, [], 'marker', 1)\n"
    finally:
        jcli("-j", "exec", session, "-c", "del snap")


def _row(jcli, name):
    return next(r for r in jcli("-j", "session", "list").json()["sessions"] if r["name"] == name)


@pytest.fixture
def busy(sessions, jcli, server, tmp_path):
    """Make a session's kernel busy on a cell blocked reading a FIFO; released (and its exec awaited) at teardown."""
    started = []

    def make(name):
        fifo = tmp_path / f"release-{name}"
        os.mkfifo(fifo)
        proc = subprocess.Popen(
            [JCLI, "-j", "exec", name, "-c", f"open({str(fifo)!r}).read()"],
            env={**os.environ, **server},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        started.append((fifo, proc))
        while _row(jcli, name)["execution_state"] != "busy":  # wait for the event: the server says busy
            assert proc.poll() is None, proc.communicate()
        return proc

    yield make
    for fifo, proc in started:
        with open(fifo, "w") as release:
            release.write("go")
        out, _ = proc.communicate(timeout=60)
        assert json.loads(out)["text"] == "'go'\n"


def test_a_busy_kernel_answers_through_its_debugger(sessions, jcli, busy):
    busy(sessions["dap"])
    result = jcli("-j", "vars", sessions["dap"])
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert doc["source"] == "debugger" and doc["order"] == "name" and doc["notes"]
    names = [row["name"] for row in doc["variables"]]
    assert set(names) == set(EXPECTED) - {"f", "C"} and "special variables" not in names
    assert max(len(row["value"]) for row in doc["variables"]) == VALUE_CHARS and len(result.stdout) < 5000
    assert jcli("-j", "vars", sessions["dap"], "-n", "df", "--rich").json()["rich"]["data"]["text/html"].count("<table") == 1
    missing = jcli("-j", "vars", sessions["dap"], "-n", "f")
    assert missing.returncode == 1 and missing.error()["code"] == "VARIABLE_NOT_FOUND" and "busy" in missing.error()["message"]
    assert "source: debugger" in jcli("vars", sessions["dap"]).stdout.decode()
    preview = _preview(jcli, sessions["dap"])
    assert preview == {"skipped": "kernel busy"}


def test_a_busy_kernel_without_a_debugger_is_kernel_busy(sessions, jcli, busy):
    busy(sessions["nodebug"])
    result = jcli("-j", "vars", sessions["nodebug"])
    assert result.returncode == 1 and result.error()["code"] == "KERNEL_BUSY" and result.stdout == b""
    human = jcli("vars", sessions["nodebug"], "--name", "df")
    assert human.returncode == 1 and b"[KERNEL_BUSY]" in human.stderr


def _preview(jcli, name):
    listed = jcli("-j", "session", "list", "--vars")
    assert listed.returncode == 0
    return next(r for r in listed.json()["sessions"] if r["name"] == name)["vars"]


def _last_activity(server, jcli, name):
    from jcli_sidecar.kernel.jupyter_api import JupyterServer

    srv = JupyterServer(server["JCLI_JUPYTER_SERVER_URL"], server["JCLI_JUPYTER_SERVER_TOKEN"])
    return srv.kernel(_row(jcli, name)["kernel_id"])["last_activity"]


def test_session_list_previews_variables_only_when_asked(sessions, jcli, server):
    before = _last_activity(server, jcli, sessions["nodebug"])
    plain = jcli("-j", "session", "list")
    assert plain.returncode == 0 and all("vars" not in row for row in plain.json()["sessions"])
    assert "vars:" not in jcli("session", "list").stdout.decode()
    # The plain listing sent the kernel nothing: the server saw no kernel message since.
    assert _last_activity(server, jcli, sessions["nodebug"]) == before
    preview = _preview(jcli, sessions["nodebug"])
    assert preview == {"names": EXPECTED[:8], "total": len(EXPECTED)}
    assert _last_activity(server, jcli, sessions["nodebug"]) != before  # the probe sees a preview
    human = jcli("session", "list", "--vars").stdout.decode()
    assert f"vars: {', '.join(EXPECTED[:8])}" in human
