"""Hostile input to ``j-cli notebook cell ...``: each is a clear coded error, never blocks, and changes nothing.

As NB or as ``--source-file``: a FIFO (nothing waits on a writer), a
device (the node /dev/zero is, inside the workspace: nothing streams from
it), a symlink that leads out of the workspace (``PATH_NOT_ALLOWED``: a
link planted in a project never makes an edit read or write elsewhere).
As NB also: a text that is no notebook, a py:percent ``.py``, a notebook
paired with a ``.py`` (``NOTEBOOK_PAIRED``: the ``.py`` is the truth for
its cells). Bad cells and flags: an unknown id, an index out of range,
``--before`` with ``--after``, a markdown cell given to ``clear``. After
each, every file in the workspace is byte for byte what it was and no temp
file is left.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import nbformat
import pytest
from helpers import run_cli

#: Every j-cli call here must end within this many seconds (a blocked read would hang it).
BOUND = 60


@pytest.fixture
def ws(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("# Title")]
    nb.cells[0]["id"], nb.cells[1]["id"] = "c0", "m1"
    nbformat.write(nb, str(work / "nb.ipynb"))
    (tmp_path / "outside.ipynb").write_bytes((work / "nb.ipynb").read_bytes())
    (tmp_path / "secret.txt").write_text("not for a notebook\n")
    return work


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Each entry of ``folder`` and its parent: a regular file's bytes, else its kind."""
    seen: dict[str, bytes | str] = {}
    for base in (folder, folder.parent):
        for entry in sorted(base.iterdir()):
            info = entry.lstat()
            if stat.S_ISREG(info.st_mode):
                seen[str(entry)] = entry.read_bytes()
            elif stat.S_ISLNK(info.st_mode):
                seen[str(entry)] = f"link to {os.readlink(entry)}"
            else:
                seen[str(entry)] = f"mode {stat.S_IFMT(info.st_mode):o}"
    return seen


def refused(ws: Path, args: list[str], code: str, said: str, exit_code: int = 1, stdin: bytes | None = None) -> dict:
    before = snapshot(ws)
    result = run_cli("-j", "notebook", "cell", *args, cwd=ws, stdin=stdin)
    assert result.returncode == exit_code, (result.stdout, result.stderr)
    assert result.stdout == b"" and b"Traceback" not in result.stderr
    error = result.error()
    assert error["code"] == code and said in error["message"], error
    assert snapshot(ws) == before
    return error


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero_device(path: Path) -> None:
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))


@pytest.mark.parametrize(("make", "said"), [(_fifo, "FIFO"), (_zero_device, "character device")])
def test_a_fifo_or_a_device_as_the_notebook_is_refused_without_blocking(ws, make, said):
    make(ws / "odd.ipynb")
    refused(ws, ["replace", "odd.ipynb", "c0", "--source", "y"], "NOTEBOOK_READ_FAILED", said)
    refused(ws, ["insert", "odd.ipynb", "--source", "y"], "NOTEBOOK_READ_FAILED", said)


@pytest.mark.parametrize(("make", "said"), [(_fifo, "FIFO"), (_zero_device, "character device")])
def test_a_fifo_or_a_device_as_the_source_file_is_refused_without_blocking(ws, make, said):
    make(ws / "src.txt")
    refused(ws, ["replace", "nb.ipynb", "c0", "--source-file", "src.txt"], "NOTEBOOK_READ_FAILED", said)
    refused(ws, ["replace", "nb.ipynb", "c0", "--source-file", "/dev/zero"], "NOTEBOOK_READ_FAILED", "character device")


def test_a_symlink_out_of_the_workspace_is_refused_as_notebook_and_as_source(ws):
    (ws / "away.ipynb").symlink_to(ws.parent / "outside.ipynb")
    (ws / "src.txt").symlink_to(ws.parent / "secret.txt")
    refused(ws, ["delete", "away.ipynb", "c0"], "PATH_NOT_ALLOWED", "leads out of the workspace")
    refused(ws, ["replace", "nb.ipynb", "c0", "--source-file", "src.txt"], "PATH_NOT_ALLOWED", "leads out of the workspace")


def test_what_is_not_a_notebook_is_refused(ws):
    (ws / "text.ipynb").write_text("just words\n")
    (ws / "list.ipynb").write_text("[1, 2]\n")
    (ws / "plain.py").write_text("# %%\nx = 1\n")
    refused(ws, ["delete", "text.ipynb", "0"], "NOTEBOOK_READ_FAILED", "not valid JSON")
    refused(ws, ["delete", "list.ipynb", "0"], "NOTEBOOK_READ_FAILED", "list.ipynb")
    refused(ws, ["delete", "plain.py", "0"], "USAGE_ERROR", "take an .ipynb", exit_code=2)
    refused(ws, ["delete", "missing.ipynb", "0"], "FILE_NOT_FOUND", "missing.ipynb")


def test_a_paired_notebook_is_refused_and_names_the_py(ws):
    (ws / "nb.py").write_text("# %%\nx = 1\n\n# %% [markdown]\n# # Title\n")
    error = refused(ws, ["replace", "nb.ipynb", "c0", "--source", "x = 2"], "NOTEBOOK_PAIRED", "edit the .py")
    assert error["py_path"] == "nb.py"


@pytest.mark.parametrize(
    ("args", "code", "said", "exit_code"),
    [
        (["replace", "nb.ipynb", "nope", "--source", "y"], "CELL_NOT_FOUND", "no cell has the id 'nope'", 1),
        (["delete", "nb.ipynb", "7"], "CELL_NOT_FOUND", "outside the notebook (2 cells)", 1),
        (["insert", "nb.ipynb", "--source", "y", "--at", "9"], "CELL_NOT_FOUND", "0 to 2", 1),
        (["insert", "nb.ipynb", "--source", "y", "--before", "c0", "--after", "m1"], "USAGE_ERROR", "not --before and --after", 2),
        (["move", "nb.ipynb", "c0", "--before", "m1", "--after", "m1"], "USAGE_ERROR", "not --before and --after", 2),
        (["clear", "nb.ipynb", "m1"], "USAGE_ERROR", "markdown cell", 2),
        (["replace", "nb.ipynb", "c0"], "USAGE_ERROR", "--source TEXT or --source-file", 2),
        (["replace", "nb.ipynb", "c0", "--source", "a", "--source-file", "-"], "USAGE_ERROR", "give the source once", 2),
        (["replace", "nb.ipynb", "c0", "--source", "a", "--if-source", "zz"], "USAGE_ERROR", "16-hex", 2),
    ],
)
def test_bad_cells_and_flags_are_coded_errors_and_change_nothing(ws, args, code, said, exit_code):
    refused(ws, args, code, said, exit_code)


def test_stdin_that_is_not_text_is_refused(ws):
    refused(ws, ["replace", "nb.ipynb", "c0", "--source-file", "-"], "USAGE_ERROR", "not UTF-8", exit_code=2, stdin=b"\xff\xfe\x00")
