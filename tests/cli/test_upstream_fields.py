"""Upstream jupyter-jcli 0.9.7's field names and error codes, beside j-cli's, checked against its recorded outputs.

``tests/fixtures/upstream/*.json`` were recorded from upstream 0.9.7 by
``record_upstream.py`` there (same server, same ``nb.py``). Each test runs
the same command with j-cli and checks that what a script written for
upstream reads is there, with the same meaning.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import TESTS, run_cli

from jcli_sidecar.base import errors

UPSTREAM = TESTS / "fixtures" / "upstream"
PLOT = "import matplotlib.pyplot as plt; plt.plot([1, 2, 3]); plt.show()"


def recorded(name: str) -> tuple[int, dict]:
    data = json.loads((UPSTREAM / name).read_text())
    return data["exit_code"], data["document"]


@pytest.fixture
def ws(tmp_path, use_jupyter, exec_path):
    work = tmp_path / "ws"
    work.mkdir()
    exec_path(work)
    shutil.copy(UPSTREAM / "nb.py", work / "nb.py")
    return work


def _ours(*args, cwd, env=None):
    result = run_cli("-j", *args, cwd=cwd, env=env)
    return result.returncode, (result.json() if result.stdout.strip() else result.error())


def test_healthcheck_has_upstreams_kernels_running(ws, kernel_session):
    code, theirs = recorded("healthcheck.json")
    status, ours = _ours("healthcheck", cwd=ws)
    assert status == code and set(theirs) <= set(ours)
    assert isinstance(ours["kernels_running"], int) and ours["kernels_running"] == ours["kernels"] >= 1
    assert ours["status"] == theirs["status"]


def test_session_create_has_upstreams_session_id_and_a_selector_that_selects(ws):
    code, theirs = recorded("session_create.json")
    status, ours = _ours("session", "create", "-n", "upstream-fields", cwd=ws)
    try:
        assert status == code and set(theirs) <= set(ours)
        assert ours["session_id"] == ours["id"]
        ran = run_cli("exec", ours["session_selector"], "-c", "print('selected')", cwd=ws)
        assert ran.returncode == 0 and ran.stdout == b"selected\n"
    finally:
        run_cli("session", "kill", "upstream-fields", cwd=ws)


def test_inline_exec_has_upstreams_output_manifest(ws, kernel_session):
    code, theirs = recorded("exec_inline_plot.json")
    status, ours = _ours("exec", kernel_session, "-c", PLOT, cwd=ws)
    assert status == code and set(theirs) <= set(ours)
    assert ours["output_manifest"] == ours["run"]["manifest"] and json.loads(Path(ours["output_manifest"]).read_text())
    assert [(o["type"], o["mime"]) for o in ours["outputs"]] == [(o["type"], o["mime"]) for o in theirs["outputs"]]
    assert all(Path(o["path"]).read_bytes()[:4] == b"\x89PNG" for o in ours["outputs"])


def test_inline_exec_without_kept_outputs_has_no_output_manifest(ws, kernel_session):
    status, ours = _ours("exec", kernel_session, "-c", "1 + 1", cwd=ws)
    assert status == 0 and "output_manifest" not in ours and "run" not in ours


def _ran(ws, session):
    result = run_cli("exec", session, "-f", "nb.py", cwd=ws)
    assert result.returncode == 0, result.stderr


def test_notebook_summary_has_upstreams_index_type_and_full_text(ws, kernel_session):
    code, theirs = recorded("notebook_summary.json")
    _ran(ws, kernel_session)
    status, ours = _ours("notebook", "summary", "nb.ipynb", cwd=ws)
    assert status == code and ours["cell_count"] == theirs["cell_count"]
    fields = ("index", "type", "line_count", "full_text")
    assert [{k: c.get(k) for k in fields} for c in ours["cells"]] == [{k: c.get(k) for k in fields} for c in theirs["cells"]]


def test_notebook_summary_leaves_full_text_out_of_a_long_cell(ws):
    (ws / "long.py").write_text("# %%\n" + "\n".join(f"x{k} = {k}" for k in range(10)) + "\n")
    status, ours = _ours("notebook", "summary", "long.py", cwd=ws)
    assert status == 0 and ours["cells"][0]["preview_truncated"] is True and "full_text" not in ours["cells"][0]


def test_notebook_map_has_upstreams_alignment_and_change_names(ws, kernel_session):
    code, theirs = recorded("notebook_map.json")
    _ran(ws, kernel_session)
    status, ours = _ours("notebook", "map", "nb.py", cwd=ws)
    assert status == code and ours["python_path"] == ours["py_path"]
    fields = ("python_index", "notebook_index", "type", "cell_id", "alignment", "change", "python_change", "notebook_change")
    assert [{k: c[k] for k in fields} for c in ours["cells"]] == [{k: c[k] for k in fields} for c in theirs["cells"]]


def test_notebook_map_names_the_side_that_changed(ws, kernel_session):
    _ran(ws, kernel_session)
    (ws / "nb.py").write_text((ws / "nb.py").read_text().replace("x = 41", "x = 40"))
    status, ours = _ours("notebook", "map", "nb.py", cwd=ws)
    edited = [c for c in ours["cells"] if c["change"] != "equal"]
    assert status == 0 and len(edited) == 1
    assert edited[0]["python_change"] == edited[0]["change"] and edited[0]["notebook_change"] is None


def test_vars_has_upstreams_session_selector_and_variable_fields(ws, kernel_session):
    code, theirs = recorded("vars.json")
    run_cli("exec", kernel_session, "-c", "x = 41", cwd=ws)
    status, ours = _ours("vars", kernel_session, cwd=ws)
    assert status == code and {"session_id", "session_selector", "variables"} <= set(ours)
    theirs_x = next(v for v in theirs["variables"] if v["name"] == "x")
    ours_x = next(v for v in ours["variables"] if v["name"] == "x")
    assert {k: ours_x[k] for k in ("name", "type", "value")} == {k: theirs_x[k] for k in ("name", "type", "value")}


def test_execution_error_is_an_alias_on_code_that_raised(ws, kernel_session):
    code, theirs = recorded("exec_inline_error.stderr.json")
    status, ours = _ours("exec", kernel_session, "-c", "1/0", cwd=ws)
    assert status == code and ours["status"] == theirs["status"] == "error"
    assert theirs["code"] in ours["error"]["code_aliases"]
    _, their_doc = recorded("exec_inline_error.json")
    assert ours["outputs"][0]["traceback"] == their_doc["outputs"][0]["traceback"][:1] + ours["outputs"][0]["traceback"][1:]
    assert ours["outputs"][0]["traceback"][-1] == their_doc["outputs"][0]["traceback"][-1]


def test_a_notebook_cell_that_raised_carries_execution_error_in_the_summary(ws, kernel_session):
    (ws / "bad.py").write_text("# %%\n1/0\n")
    result = run_cli("-j", "exec", kernel_session, "-f", "bad.py", cwd=ws)
    *cells, summary = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 1 and summary["code_aliases"] == ["EXECUTION_ERROR"]
    assert cells[0]["error"]["code_aliases"] == ["EXECUTION_ERROR"]


def test_connection_failed_is_an_alias_of_server_unavailable(ws):
    code, theirs = recorded("connection_failed.stderr.json")
    status, ours = _ours("healthcheck", cwd=ws, env={**os.environ, "JCLI_JUPYTER_SERVER_URL": "http://127.0.0.1:1"})
    assert status == code and ours["code"] == "SERVER_UNAVAILABLE" and theirs["code"] in ours["code_aliases"]


def test_interrupt_failed_is_an_alias_that_crosses_the_sidecar_wire():
    """The sidecar's own error frame, sent through a real socket and read back by the client's one decode."""
    import socket

    from jcli_sidecar.base.framing import read_frame
    from jcli_sidecar.sidecar import client, server

    err = errors.Interrupted("the kernel could not be interrupted (refused)", executed=True)
    err.code_aliases = errors.INTERRUPT_FAILED_ALIASES
    sidecar_end, client_end = socket.socketpair()
    with sidecar_end, client_end:
        sidecar_end.sendall(server._error_frame(7, err))
        reply = read_frame(client_end)
    assert reply["id"] == 7 and reply["ok"] is False
    with pytest.raises(errors.JcliError) as raised:
        client._result(reply)
    again = raised.value
    assert type(again) is errors.Interrupted
    assert again.code == "INTERRUPTED" and again.code_aliases == ("INTERRUPT_FAILED",) and again.details == {"executed": True}
    assert again.message == err.message
    assert errors.Interrupted("stopped", executed=True).to_dict().get("code_aliases") is None


def test_every_upstream_code_is_in_the_table_and_documented():
    doc = (TESTS.parent / "docs" / "migration.md").read_text()
    for upstream, ours in errors.UPSTREAM_CODES.items():
        assert f"`{upstream}`" in doc
        if ours is not None:
            assert upstream in errors.error_from_code(ours, "x").code_aliases
