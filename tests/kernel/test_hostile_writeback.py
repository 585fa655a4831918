"""Writing a notebook back under hostile conditions: another program's save, a full disk, a kill, old formats.

- Another program's save (a temp file renamed over the notebook, an
  in-place rewrite, a delete) that lands while j-cli writes its new copy is
  never destroyed: j-cli's rename is a swap it checks and undoes
  (``renameat2``'s ``RENAME_EXCHANGE``; elsewhere a move aside and a link),
  the run fails with ``NOTEBOOK_CHANGED`` naming both files, and j-cli's
  version is kept beside the notebook.
- A final write-back that fails after a checkpoint landed clears the
  checkpoint's ``running`` mark, or says the checkpoint stays
  (``notebook_cell``); the line is bounded and the summary counts the cell.
- A killed write-back's temp file carries its writer's pid and start time;
  the next write-back of that notebook removes it once the writer is gone.
- An nbformat 3 notebook or one starting with a byte order mark is written
  back as nbformat 4 without the mark, and the run says so.

Races are landed with the exec stall hook (``JCLI_EXEC_TEST_STALL_*``) at
``write-back:swap:*`` (the new copy is complete, the swap is next), never
with sleeps. Full disks are real (a small tmpfs), kills are real (SIGKILL).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import run_cli
from test_hostile_exec import Exec, assert_no_traceback, cells_of, json_lines, text_of, write_notebook

from jcli_sidecar.base import stall as stall_module
from jcli_sidecar.base import swap as swap_module
from jcli_sidecar.base.errors import NotebookChanged
from jcli_sidecar.base.fileio import write_text_atomic
from jcli_sidecar.base.tempnames import clean_dead_temps, temp_path
from jcli_sidecar.kernel.exec_result import TEXT_BUDGET

TEMP = re.compile(r"\.nb\.ipynb\.jcli-(\d+)-(\d+)-[0-9a-f]{8}\.(tmp|old|rewrite)\Z")


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def foreign_save(nb: Path, how: str) -> bytes | None:
    """Another program's save of ``nb`` with cell 0 edited: JupyterLab's (temp file + rename), in place, or a delete."""
    if how == "delete":
        nb.unlink()
        return None
    doc = json.loads(nb.read_text(encoding="utf-8"))
    doc["cells"][0]["source"] = "edited_by_someone_else = 1"
    data = json.dumps(doc, indent=2).encode()
    if how == "replace":
        tmp = nb.parent / f".~{nb.name}"
        tmp.write_bytes(data)
        os.replace(tmp, nb)
    else:  # the same inode, truncated and rewritten (a different length, so even a coarse clock cannot hide it)
        with open(nb, "r+b") as fh:
            fh.truncate(0)
            fh.write(data)
    return data


def conflict_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("nb.jcli-conflict-*.ipynb"))


def temps_in(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if TEMP.match(name))


# -- item 1: another program's save during the write-back ---------------------------


@pytest.mark.parametrize("how", ["replace", "in_place", "delete"])
def test_a_save_by_another_program_during_the_final_write_back_stays_and_ours_is_kept(ws, kernel_session, how):
    nb = ws / "nb.ipynb"
    write_notebook(nb, ["x = 1", "print('ours')"])
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.ipynb", "--cell", "1"], ws, step="write-back:swap:final")
    run.stalled()
    theirs = foreign_save(nb, how)
    code, out, err = run.finish()
    assert code == 1
    assert_no_traceback(err)
    line, summary = json_lines(out)
    assert line["code"] == "NOTEBOOK_CHANGED" and line["executed"] is True, line
    assert line["result"]["text"] == "ours\n" and line["notebook_updated"] is False
    kept = conflict_files(ws)
    assert len(kept) == 1 and line["kept"] == str(kept[0]) and str(kept[0]) in line["message"]
    assert text_of(json.loads(kept[0].read_text())["cells"][1]) == "ours\n"
    if theirs is None:
        assert not nb.exists()  # a delete stays a delete
    else:
        assert nb.read_bytes() == theirs  # their save, byte for byte
    assert summary["code"] == "NOTEBOOK_CHANGED" and summary["summary"]["cells_executed"] == 1
    assert temps_in(ws) == []


def test_a_save_during_the_write_back_of_a_cell_cut_short_stays_and_the_line_says_where_ours_is(ws, kernel_session):
    nb = ws / "nb.ipynb"
    write_notebook(nb, ["x = 1", "print('progress', flush=True)\nimport time\ntime.sleep(3600)"])
    run = Exec(
        ["-j", "exec", kernel_session, "-f", "nb.ipynb", "--cell", "1", "--timeout", "2", "--no-stream"],
        ws,
        step="write-back:swap:final",
    )
    run.stalled()
    theirs = foreign_save(nb, "replace")
    code, out, err = run.finish()
    assert_no_traceback(err)
    line, _summary = json_lines(out)
    assert code == 1 and line["code"] == "TIMEOUT" and line["result"]["text"].startswith("progress\n")
    saved = line["save_error"]
    assert saved["code"] == "NOTEBOOK_CHANGED" and saved["kept"] == str(conflict_files(ws)[0])
    assert nb.read_bytes() == theirs and line["notebook_cell"] == "unchanged"


def test_a_save_through_a_symlinked_notebook_stays_and_ours_is_kept_beside_the_real_file(ws, kernel_session):
    real_dir = ws / "real"
    real_dir.mkdir()
    real = real_dir / "nb.ipynb"
    write_notebook(real, ["x = 1", "print('ours')"])
    (ws / "nb.ipynb").symlink_to(real)
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.ipynb", "--cell", "1"], ws, step="write-back:swap:final")
    run.stalled()
    theirs = foreign_save(real, "replace")
    code, out, _err = run.finish()
    line, _summary = json_lines(out)
    assert code == 1 and line["code"] == "NOTEBOOK_CHANGED"
    assert (ws / "nb.ipynb").is_symlink() and real.read_bytes() == theirs
    assert len(conflict_files(real_dir)) == 1 and temps_in(real_dir) == []


def test_a_save_during_a_checkpoint_stays_and_the_final_write_back_goes_into_it(ws, kernel_session):
    nb = ws / "nb.ipynb"
    write_notebook(nb, ["x = 1", "print('early', flush=True)\nprint('late')"])
    run = Exec(
        ["-j", "exec", kernel_session, "-f", "nb.ipynb", "--cell", "1"],
        ws,
        step="write-back:swap:checkpoint",
        env={"JCLI_CHECKPOINT_SECONDS": "0"},
    )
    run.stalled()
    foreign_save(nb, "replace")
    code, out, err = run.finish()
    assert code == 0, err
    line, _summary = json_lines(out)
    assert line["status"] == "ok" and line["notebook_updated"] is True
    cells = cells_of(nb)
    assert "".join(cells[0]["source"]) == "edited_by_someone_else = 1"  # their edit survived
    assert text_of(cells[1]) == "early\nlate\n" and "jcli" not in cells[1]["metadata"]
    assert conflict_files(ws) == [] and temps_in(ws) == []  # the checkpoint's copy is superseded


def test_a_save_after_a_checkpoint_stays_and_loses_the_running_mark_it_copied(ws, kernel_session):
    nb = ws / "nb.ipynb"
    write_notebook(nb, ["x = 1", "print('early', flush=True)"])
    run = Exec(
        ["-j", "exec", kernel_session, "-f", "nb.ipynb", "--cell", "1"],
        ws,
        step="write-back:swap:final",
        env={"JCLI_CHECKPOINT_SECONDS": "0"},
    )
    run.stalled()
    assert cells_of(nb)[1]["metadata"]["jcli"] == {"running": True}  # the checkpoint landed; their save copies it
    foreign_save(nb, "replace")
    code, out, _err = run.finish()
    line, _summary = json_lines(out)
    assert code == 1 and line["code"] == "NOTEBOOK_CHANGED" and line["notebook_cell"] == "marks_cleared"
    cells = cells_of(nb)
    assert "".join(cells[0]["source"]) == "edited_by_someone_else = 1"
    assert "jcli" not in cells[1]["metadata"] and text_of(cells[1]) == "early\n"
    assert cells[1]["execution_count"] == line["result"]["execution_count"]
    assert len(conflict_files(ws)) == 1 and temps_in(ws) == []


def test_a_save_during_the_pair_sync_write_stays_and_nothing_runs(ws, kernel_session):
    nb = ws / "nb.ipynb"
    marker = ws / "ran"
    write_notebook(nb, ["x = 1"])
    (ws / "nb.py").write_text(f"# %%\nx = 1\n\n# %%\nopen({str(marker)!r}, 'w').close()\n")
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.py"], ws, step="pair-sync:swap")
    run.stalled()
    theirs = foreign_save(nb, "replace")
    code, out, err = run.finish()
    assert code != 0
    assert_no_traceback(err)
    doc = json.loads(err or out)
    assert doc["code"] == "NOTEBOOK_CHANGED" and doc["executed"] is False, doc
    assert nb.read_bytes() == theirs and not marker.exists()
    assert len(conflict_files(ws)) == 1 and temps_in(ws) == []


def test_a_save_over_one_name_of_a_hard_linked_notebook_stays(ws, kernel_session):
    nb = ws / "nb.ipynb"
    write_notebook(nb, ["x = 1", "print('ours')"])
    os.link(nb, ws / "twin.ipynb")
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.ipynb", "--cell", "1"], ws, step="write-back:swap:final")
    run.stalled()
    theirs = foreign_save(nb, "replace")
    code, out, _err = run.finish()
    line, _summary = json_lines(out)
    assert code == 1 and line["code"] == "NOTEBOOK_CHANGED"
    assert nb.read_bytes() == theirs and text_of(cells_of(ws / "twin.ipynb")[1]) == "OLD\n"
    assert len(conflict_files(ws)) == 1 and temps_in(ws) == []


@contextlib.contextmanager
def foreign_at(monkeypatch, step: str, action):
    """In this process: at stall ``step`` run ``action`` (another program's save), then let the write go on."""
    fifo = Path(os.environ.get("TMPDIR", "/tmp")) / f"stall-{os.urandom(3).hex()}"
    os.mkfifo(fifo)
    monkeypatch.setenv("JCLI_EXEC_TEST_STALL_FIFO", str(fifo))
    monkeypatch.setenv("JCLI_EXEC_TEST_STALL_AT", step)
    monkeypatch.setattr(stall_module, "_STALLED", set())

    def act() -> None:
        with open(fifo, encoding="utf-8") as stalled:
            assert stalled.readline() == f"stalled {step}\n"
        try:
            action()
        finally:
            with open(fifo, "w", encoding="utf-8"):
                pass

    helper = threading.Thread(target=act, daemon=True)
    helper.start()
    try:
        yield
    finally:
        helper.join(60)
        fifo.unlink()


def _key(path: Path):
    return swap_module.file_key(os.stat(path))


@pytest.mark.parametrize("how", ["replace", "in_place", "delete"])
@pytest.mark.parametrize("swap", ["exchange", "no_exchange"])
def test_a_checked_write_never_destroys_a_save_made_meanwhile(tmp_path, monkeypatch, how, swap):
    if swap == "no_exchange":  # a system without the swap call (macOS, an old libc): cannot be caused here for real
        monkeypatch.setattr(swap_module, "_CALL", [None])
    else:
        assert swap_module.can_exchange()  # Linux: the swap itself is what is tested
    nb = tmp_path / "nb.ipynb"
    write_notebook(nb, ["x = 1"])
    read = _key(nb)
    saved: list[bytes | None] = []
    with foreign_at(monkeypatch, "test:swap", lambda: saved.append(foreign_save(nb, how))), pytest.raises(NotebookChanged) as caught:
        write_text_atomic(str(nb), "OURS", expect=read, stall="test:swap")
    kept = Path(caught.value.details["kept"])
    assert kept.read_text() == "OURS" and kept.parent == tmp_path and str(kept) in caught.value.message
    assert (nb.read_bytes() if nb.exists() else None) == saved[0]
    assert [name for name in os.listdir(tmp_path) if ".jcli-" in name and name.startswith(".")] == []


def test_two_lost_races_in_one_second_keep_both_versions(tmp_path, monkeypatch):
    nb = tmp_path / "nb.ipynb"
    kept = []
    for text in ("FIRST", "SECOND"):
        write_notebook(nb, ["x = 1"])
        read = _key(nb)
        with foreign_at(monkeypatch, "test:swap", lambda: foreign_save(nb, "replace")), pytest.raises(NotebookChanged) as caught:
            write_text_atomic(str(nb), text, expect=read, stall="test:swap")
        kept.append(Path(caught.value.details["kept"]))
    assert kept[0] != kept[1] and [path.read_text() for path in kept] == ["FIRST", "SECOND"]


@pytest.mark.parametrize("swap", ["exchange", "no_exchange"])
def test_a_checked_write_of_an_unchanged_file_keeps_its_links_mode_and_symlink(tmp_path, monkeypatch, swap):
    if swap == "no_exchange":
        monkeypatch.setattr(swap_module, "_CALL", [None])
    real = tmp_path / "real.ipynb"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.ipynb"
    link.symlink_to(real)
    write_text_atomic(str(link), "new", expect=_key(real))
    assert link.is_symlink() and real.read_text() == "new" and (real.stat().st_mode & 0o777) == 0o640
    os.link(real, tmp_path / "twin.ipynb")
    write_text_atomic(str(real), "newer", expect=_key(real))
    assert (tmp_path / "twin.ipynb").read_text() == "newer"
    assert sorted(os.listdir(tmp_path)) == ["link.ipynb", "real.ipynb", "twin.ipynb"]


# -- item 8: a killed write-back's temp file ----------------------------------------


@pytest.mark.parametrize("links", [1, 2], ids=["one-name", "hard-linked"])
def test_a_killed_write_back_leaves_a_recognisable_temp_file_the_next_write_back_removes(ws, kernel_session, links):
    nb = ws / "nb.ipynb"
    write_notebook(nb, ["print('first')"])
    if links == 2:
        os.link(nb, ws / "twin.ipynb")
    before = nb.read_bytes()
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.ipynb"], ws, step="write-back:swap:final")
    run.stalled()
    run.proc.kill()
    run.proc.wait()
    left = temps_in(ws)
    assert len(left) == 1 and int(TEMP.match(left[0])[1]) == run.proc.pid
    assert nb.read_bytes() == before
    run.finish()
    again = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", cwd=ws)
    assert again.returncode == 0, again.stderr
    assert temps_in(ws) == [] and text_of(cells_of(nb)[0]) == "first\n"


def _dead_pid() -> tuple[int, int]:
    """A pid and start time of a process that ran and is gone (reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    with open(f"/proc/{proc.pid}/stat", "rb") as fh:
        stat = fh.read()
    start = int(stat[stat.rindex(b")") + 2 :].split()[19])
    proc.communicate(b"")
    return proc.pid, start


def test_only_temp_files_of_writers_that_are_gone_are_cleaned(tmp_path):
    nb = tmp_path / "nb.ipynb"
    nb.write_text("the notebook")
    pid, start = _dead_pid()
    mine = Path(temp_path(str(nb), "tmp"))
    mine.write_text("a live writer's")
    dead = tmp_path / f".nb.ipynb.jcli-{pid}-{start}-0123abcd.tmp"
    reused = tmp_path / f".nb.ipynb.jcli-{os.getpid()}-{int(TEMP.match(mine.name)[2]) + 1}-0123abcd.tmp"  # our pid, another start
    other = tmp_path / f".other.ipynb.jcli-{pid}-{start}-0123abcd.tmp"
    users = tmp_path / ".nb.ipynb.tmp"  # not ours
    for path in (dead, reused, other, users):
        path.write_text("x")
    assert sorted(clean_dead_temps(str(nb))) == sorted([dead.name])
    assert mine.exists() and reused.exists() and other.exists() and users.exists() and not dead.exists()


def test_a_dead_in_place_copy_is_removed_only_once_the_notebook_holds_it(tmp_path):
    nb = tmp_path / "nb.ipynb"
    nb.write_text("half written")
    pid, start = _dead_pid()
    copy = tmp_path / f".nb.ipynb.jcli-{pid}-{start}-0123abcd.rewrite"
    copy.write_text("the full new text")
    assert clean_dead_temps(str(nb)) == [] and copy.exists()  # the only full copy stays
    nb.write_text("the full new text")
    assert clean_dead_temps(str(nb)) == [copy.name] and not copy.exists()


def test_a_notebook_a_dead_writer_moved_aside_goes_back(tmp_path):
    nb = tmp_path / "nb.ipynb"
    pid, start = _dead_pid()
    aside = tmp_path / f".nb.ipynb.jcli-{pid}-{start}-0123abcd.old"
    aside.write_text("the notebook")
    assert clean_dead_temps(str(nb)) == [aside.name]
    assert nb.read_text() == "the notebook" and not aside.exists()


# -- item 4 and the smaller ones: a failed final save -------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A real 2 MiB file system (tmpfs), unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    assert done.returncode == 0, done.stderr
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> None:
    """Fill the file system ``folder`` is on to the last byte."""
    with open(folder / "filler", "wb", buffering=0) as fh:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    fh.write(b"\0" * size)


BIG = "print('early', flush=True)\nimport sys\nsys.stdout.write('x' * 3_000_000)\nsys.stdout.flush()"


def test_a_final_save_that_hits_a_full_disk_after_a_checkpoint_clears_the_running_mark(small_disk, use_jupyter, kernel_session):
    nb = small_disk / "nb.ipynb"
    write_notebook(nb, [BIG])
    done = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", env={**os.environ, "JCLI_CHECKPOINT_SECONDS": "0"}, cwd=small_disk)
    assert done.returncode == 1
    assert_no_traceback(done.stderr)
    raw_line = done.stdout.splitlines()[0]
    line, summary = json_lines(done.stdout)
    assert line["code"] == "OUTPUT_SAVE_FAILED" and line["executed"] is True
    assert line["notebook_cell"] == "marks_cleared"
    cell = cells_of(nb)[0]
    assert "jcli" not in cell["metadata"] and text_of(cell) == "early\n"
    assert cell["execution_count"] == line["result"]["execution_count"] is not None
    assert summary["summary"]["cells_executed"] == 1 and summary["cells_failed"] == 1  # (a): the cell ran
    assert len(raw_line) < 4 * TEXT_BUDGET + 8192, len(raw_line)  # (b): bounded like every result
    assert temps_in(small_disk) == []


def test_a_failed_save_that_cannot_clear_the_mark_says_the_checkpoint_stays(small_disk, use_jupyter, kernel_session):
    nb = small_disk / "nb.ipynb"
    write_notebook(nb, ["print('early')"])
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.ipynb"], small_disk, step="write-back:final", env={"JCLI_CHECKPOINT_SECONDS": "0"})
    run.stalled()
    fill(small_disk)
    code, out, err = run.finish()
    assert code == 1
    assert_no_traceback(err)
    line, summary = json_lines(out)
    assert line["code"] == "OUTPUT_SAVE_FAILED" and line["notebook_cell"] == "checkpoint"
    cell = cells_of(nb)[0]  # the last consistent checkpoint, still valid JSON
    assert cell["metadata"]["jcli"] == {"running": True} and text_of(cell) == "early\n"
    assert summary["summary"]["cells_executed"] == 1
    assert temps_in(small_disk) == []


def test_a_failed_save_without_a_checkpoint_says_the_cell_is_as_before(small_disk, use_jupyter, kernel_session):
    nb = small_disk / "nb.ipynb"
    write_notebook(nb, ["print('x' * 3_000_000)"])
    done = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", "--no-stream", cwd=small_disk)
    line, summary = json_lines(done.stdout)
    assert line["code"] == "OUTPUT_SAVE_FAILED" and line["notebook_cell"] == "unchanged"
    assert text_of(cells_of(nb)[0]) == "OLD\n"
    assert summary["summary"]["cells_executed"] == 1
    assert len(done.stdout.splitlines()[0]) < 4 * TEXT_BUDGET + 8192


# -- (c): old formats and a byte order mark ---------------------------------------


V3 = {
    "metadata": {"name": ""},
    "nbformat": 3,
    "nbformat_minor": 0,
    "worksheets": [
        {"cells": [{"cell_type": "code", "collapsed": False, "input": "print('v3')", "language": "python", "metadata": {}, "outputs": []}]}
    ],
}


@pytest.mark.parametrize("kind", ["nbformat3", "bom"])
def test_an_old_format_or_a_byte_order_mark_is_written_back_as_nbformat_4_and_the_run_says_so(ws, kernel_session, kind):
    nb = ws / "nb.ipynb"
    if kind == "nbformat3":
        nb.write_text(json.dumps(V3))
    else:
        write_notebook(nb, ["print('v3')"])
        nb.write_bytes(b"\xef\xbb\xbf" + nb.read_bytes())
    done = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", cwd=ws)
    assert done.returncode == 0, done.stderr
    _line, summary = json_lines(done.stdout)
    word = "nbformat 3" if kind == "nbformat3" else "byte order mark"
    assert any(word in note for note in summary["notes"]), summary
    assert not nb.read_bytes().startswith(b"\xef\xbb\xbf") and json.loads(nb.read_bytes())["nbformat"] == 4
    human = run_cli("exec", kernel_session, "-f", "nb.ipynb", cwd=ws)
    assert human.returncode == 0 and word.encode() not in human.stderr  # written once as 4: nothing to say any more


def test_a_run_of_a_plain_notebook_has_no_format_notes(ws, kernel_session):
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    done = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", cwd=ws)
    assert "notes" not in json_lines(done.stdout)[-1]


def test_human_mode_prints_the_format_notes(ws, kernel_session):
    nb = ws / "nb.ipynb"
    nb.write_text(json.dumps(V3))
    done = run_cli("exec", kernel_session, "-f", "nb.ipynb", cwd=ws)
    assert done.returncode == 0 and b"nbformat 3" in done.stderr


@pytest.mark.parametrize("codec", ["utf-16", "utf-32-le"])
def test_a_notebook_that_is_not_utf8_is_refused_by_a_run_and_left_as_it_was(ws, kernel_session, codec):
    """nbformat reads notebooks as UTF-8 only: ``exec -f`` refuses one in UTF-16 or UTF-32, naming it, and never rewrites it."""
    nb = ws / "nb.ipynb"
    write_notebook(nb, ["print('ran')"])
    nb.write_bytes(nb.read_text(encoding="utf-8").encode(codec))
    before = nb.read_bytes()
    done = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", cwd=ws)
    assert done.returncode != 0
    error = json.loads(done.stderr.splitlines()[-1])
    assert error["code"] == "NOTEBOOK_READ_FAILED" and "not UTF-8" in error["message"] and error["encoding"].startswith(codec[:6].upper())
    assert nb.read_bytes() == before
    assert b"ran" not in done.stdout  # nothing ran
