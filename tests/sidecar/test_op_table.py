"""Every sidecar op is declared once (``jcli_sidecar/sidecar/op_table.py``), and everything else follows the declarations.

The server has one handler per declared op and checks each request against
the op's spec; the client names ops only through the declarations; the op
tables of docs/protocol.md and docs/sidecar.md are what the declarations
write (``make docs``). The retry-on-changed read and the decode of an error
frame are each written once. Real sidecars where the wire is involved.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, run_cli

import jcli
from jcli import op_docs
from jcli_sidecar.base.errors import CellNotFound, NotebookReadFailed, ProtocolError, SidecarUnavailable, UsageError
from jcli_sidecar.base.framing import pack_frame, read_frame
from jcli_sidecar.base.runtime import SidecarPaths
from jcli_sidecar.ipynb.nbindex import Changed, stable_read
from jcli_sidecar.sidecar import op_table
from jcli_sidecar.sidecar.client import error_of, transport_failed
from jcli_sidecar.sidecar.ops import HANDLERS

DOCS = REPO / "docs"
CLIENT = Path(jcli.__file__).parent


def test_every_declared_op_has_one_handler_and_every_handler_a_declaration():
    assert sorted(HANDLERS) == sorted(op_table.OPS)
    for op in op_table.OPS.values():
        assert op.without_sidecar in op_table.WITHOUT_SIDECAR, op.name
        assert not (op.blocking and op.streaming), op.name
        assert (op.without_sidecar == op_table.START) == (op.refuse is not None), op.name
        if op.core is not None:
            assert callable(op.core_function()), op.name


def test_an_in_process_read_op_runs_its_core_function_on_the_request(fixture_dir):
    request = {"file_path": str(fixture_dir / "kernel_v4.5.ipynb"), "cell_index": 0}
    listed = op_table.NOTEBOOK_LIST.core_function()(request)
    assert listed["status"] == "ok" and "outputs" in listed
    with pytest.raises(CellNotFound):
        op_table.NOTEBOOK_READ.core_function()({**request, "cell_index": 10_000})


def test_a_user_request_is_checked_as_a_usage_error_and_a_client_built_one_as_a_protocol_error():
    with pytest.raises(UsageError, match="cell_index must be a JSON integer"):
        op_table.NOTEBOOK_READ.check({"file_path": "a.ipynb", "cell_index": "0"})
    with pytest.raises(ProtocolError, match=r"^kernel.exec: server: the request needs token$"):
        op_table.KERNEL_EXEC.check({"run_id": "r", "session": "s", "code": "1", "server": {"url": "http://h"}})
    with pytest.raises(ProtocolError, match="job.start: unknown request field"):
        op_table.JOB_START.check({"cwd": "/w", "kind": "inline", "session": "s", "server": {"url": "u", "token": ""}, "bogus": 1})
    with pytest.raises(UsageError, match="paths must be a list of JSON strings"):
        op_table.NOTEBOOK_GREP.check({"pattern": "x", "paths": ["a", 3]})
    checked = op_table.KERNEL_EXEC.check(
        {"run_id": "r", "session": "s", "code": "1", "timeout": None, "server": {"url": "http://h", "token": "t"}}
    )
    assert checked == {"run_id": "r", "session": "s", "code": "1", "server": {"url": "http://h", "token": "t"}}


def _op_name_literals(path: Path) -> list[str]:
    """Strings that are op names, except a map's keys (MCP has a method "ping" of its own)."""
    names = set(op_table.OPS)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    keys = {id(key) for node in ast.walk(tree) if isinstance(node, ast.Dict) for key in node.keys}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names and id(node) not in keys:
            found.append(f"{path.name}:{node.lineno}: {node.value!r}")
    return found


def test_the_client_names_ops_only_through_their_declarations():
    found = [hit for path in sorted(CLIENT.rglob("*.py")) for hit in _op_name_literals(path)]
    assert found == []


def test_the_op_name_scan_finds_a_literal(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('read(request, "notebook.grep")\nMETHODS = {"ping": None}\n', encoding="utf-8")
    assert _op_name_literals(sample) == ["sample.py:1: 'notebook.grep'"]


@pytest.mark.parametrize("page", sorted(op_docs.TABLES))
def test_the_committed_op_table_is_what_the_declarations_write(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    assert op_docs.rewrite(text, op_docs.TABLES[page](), page) == text, f"docs/{page}'s op table is stale: run `make docs`"
    for op in op_table.OPS:
        assert f"| `{op}` |" in text


def test_make_docs_rewrites_a_stale_table_and_check_mode_names_it(tmp_path):
    for page in op_docs.TABLES:
        shutil.copyfile(DOCS / page, tmp_path / page)
    text = (tmp_path / "sidecar.md").read_text(encoding="utf-8")
    (tmp_path / "sidecar.md").write_text(text.replace("| `job.cancel` |", "| `job.abandon` |"), encoding="utf-8")
    check = [sys.executable, "-m", "jcli.op_docs", "--check", str(tmp_path)]
    proc = subprocess.run(check, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "sidecar.md: its op table is stale: run `make docs`" in proc.stderr
    assert "protocol.md" not in proc.stderr
    assert op_docs.main([str(tmp_path)]) == 0
    assert (tmp_path / "sidecar.md").read_text(encoding="utf-8") == text
    assert subprocess.run(check, capture_output=True, text=True, timeout=120).returncode == 0


def test_a_page_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="no op table markers"):
        op_docs.rewrite("# a page\n", "| op |\n", "page.md")


def test_stable_read_starts_again_while_the_file_changes_then_gives_up_or_answers_otherwise():
    attempts = []

    def changing_twice():
        attempts.append(1)
        if len(attempts) < 3:
            raise Changed()
        return "read"

    assert stable_read(changing_twice, "nb.ipynb") == "read" and len(attempts) == 3

    def always_changing():
        raise Changed()

    with pytest.raises(NotebookReadFailed, match=r"^nb.ipynb: kept changing while it was being written back; try again$"):
        stable_read(always_changing, Path("nb.ipynb"), doing="written back")
    assert stable_read(always_changing, "nb.ipynb", otherwise=lambda: None) is None


def test_an_error_frame_decodes_to_its_coded_error_and_a_transport_code_to_a_fallback():
    err = error_of({"code": "CELL_NOT_FOUND", "message": "no cell 9", "cell_index": 9, 7: "dropped"}, executed=False)
    assert isinstance(err, CellNotFound) and err.message == "no cell 9" and err.details == {"cell_index": 9, "executed": False}
    assert transport_failed(err) is None
    odd = error_of("not a map")
    assert odd.code == "PROTOCOL_ERROR" and odd.message == "no message"
    assert isinstance(transport_failed(odd), SidecarUnavailable)


@pytest.fixture
def ws(tmp_path, sidecar_on):
    work = tmp_path / "ws"
    work.mkdir()
    started = run_cli("-j", "sidecar", "start", cwd=work)
    assert started.returncode == 0, started.stderr
    yield work
    run_cli("sidecar", "stop", cwd=work)


def test_the_server_checks_every_request_against_its_op_spec_and_keeps_serving(ws):
    from jcli_sidecar.sidecar.client import greeted

    with greeted(SidecarPaths(os.path.realpath(ws)), timeout=30) as sock:
        bad = {
            "job.start": {"cwd": str(ws), "kind": "inline", "session": 5},
            "job.cancel": {},
            "run.publish": {"cwd": str(ws), "run_id": "r", "extra": True},
            "kernel.stop": {"run_id": "r", "signal": "INT"},
            "ping": {"anything": 1},
        }
        for rid, (name, args) in enumerate(bad.items(), start=1):
            sock.sendall(pack_frame({"id": rid, "op": name, "args": args}))
            reply = read_frame(sock)
            assert reply["id"] == rid and reply["ok"] is False and reply["error"]["code"] == "PROTOCOL_ERROR", reply
            assert reply["error"]["message"].startswith(f"{name}: "), reply
        sock.sendall(pack_frame({"id": 99, "op": "notebook.read", "args": {"file_path": "a.ipynb", "cell_index": True}}))
        assert read_frame(sock)["error"]["code"] == "USAGE_ERROR"
        sock.sendall(pack_frame({"id": 100, "op": "ping", "args": {}}))
        assert read_frame(sock) == {"id": 100, "ok": True, "result": {"pong": True}}


def test_without_any_sidecar_a_job_cancel_is_refused_and_an_index_hand_over_skipped(tmp_path, sidecar_on, monkeypatch):
    from jcli.transport import ask

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SidecarUnavailable):
        ask(op_table.JOB_CANCEL, {"job_id": "0" * 26})
    assert ask(op_table.NOTEBOOK_ADOPT, {"file_path": str(tmp_path / "nb.ipynb"), "index": None}) is None
