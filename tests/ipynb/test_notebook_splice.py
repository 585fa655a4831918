"""Write-back splices one cell into the file: the result is byte for byte what nbformat writes whole."""

from __future__ import annotations

import json
import os
import stat

import nbformat
import pytest
from helpers import REPO, run_cli

from jcli_sidecar.base.errors import NotebookOutOfSync
from jcli_sidecar.ipynb.nbsplice import CellWriter
from jcli_sidecar.ipynb.nbwrite import dumps_cell, dumps_notebook

REAL_DIR = REPO / "tests" / "fixtures" / "real_notebooks"
REAL = sorted(REAL_DIR.glob("*.ipynb"))
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="


def nbformat_bytes(nb) -> bytes:
    """What ``nbformat.write`` puts in a file (it adds the trailing newline)."""
    return (nbformat.writes(nb) + "\n").encode("utf-8")


def outputs_for(number: int) -> list[dict]:
    """A run's outputs, varied: empty, stream, a rich result with an image, an error."""
    kind = number % 4
    if kind == 0:
        return []
    if kind == 1:
        return [{"output_type": "stream", "name": "stdout", "text": f"line {number}\nnext é ✓\n"}]
    if kind == 2:
        return [
            {
                "output_type": "execute_result",
                "execution_count": number,
                "metadata": {},
                "data": {"text/plain": f"<Figure {number}>\nsize", "image/png": PNG, "text/html": "<b>x</b>\n<i>y</i>"},
            }
        ]
    return [{"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["Traceback", "ValueError: bad"]}]


def rewrite_code_cells(path, nb, *, partial_first: bool = False) -> CellWriter:
    """Write every code cell of ``nb`` back into ``path`` as a run does, and into ``nb`` the same way."""
    writer = CellWriter(str(path))
    for number, index in enumerate(i for i, c in enumerate(nb.cells) if c.cell_type == "code"):
        for partial in (True, False) if partial_first else (False,):
            outputs = outputs_for(number)

            def edit(cell, outputs=outputs, partial=partial, number=number):
                cell["outputs"] = outputs
                cell["execution_count"] = None if partial else number + 1
                if partial:
                    cell.setdefault("metadata", {})["jcli"] = {"running": True}
                else:
                    cell["metadata"].pop("jcli", None)

            writer.update_cell(index, nb.cells[index].get("id"), edit)
        nb.cells[index].outputs = [nbformat.from_dict(o) for o in outputs_for(number)]
        nb.cells[index].execution_count = number + 1
    return writer


@pytest.mark.parametrize("fixture", REAL, ids=[p.stem for p in REAL])
def test_rewriting_every_code_cell_of_a_real_notebook_gives_nbformats_bytes(tmp_path, fixture):
    nb = nbformat.read(str(fixture), as_version=4)
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    writer = rewrite_code_cells(path, nb, partial_first=True)
    assert path.read_bytes() == nbformat_bytes(nb)
    assert writer.full_rewrites == 0  # every write was a splice


def test_first_and_last_cells_and_empty_outputs_splice_exactly(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"x = {i}\nprint(x)") for i in range(5)]
    nb.cells[2] = nbformat.v4.new_markdown_cell("# between\ntext")
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="old\n" * 50)]  # shrinks to []
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    writer = rewrite_code_cells(path, nb)
    assert nb.cells[0].outputs == [] and nb.cells[-1].outputs  # first: emptied; last: filled
    assert path.read_bytes() == nbformat_bytes(nb)
    assert writer.full_rewrites == 0


@pytest.mark.parametrize("layout", ["indent2", "minified", "unsorted"])
def test_a_notebook_not_in_nbformats_layout_is_rewritten_whole_once_then_spliced(tmp_path, layout):
    nb = nbformat.read(str(REAL_DIR / "text_outputs_and_images.ipynb"), as_version=4)
    path = tmp_path / "nb.ipynb"
    plain = json.loads(nbformat.writes(nb))
    if layout == "indent2":
        path.write_text(json.dumps(plain, indent=2, sort_keys=True))
    elif layout == "minified":
        path.write_text(json.dumps(plain, separators=(",", ":")))
    else:  # nbformat's indentation, but keys in another order
        plain["cells"] = [dict(reversed(list(cell.items()))) for cell in plain["cells"]]
        path.write_text(json.dumps(plain, indent=1, ensure_ascii=False) + "\n")
    assert path.read_bytes() != nbformat_bytes(nb)
    writer = rewrite_code_cells(path, nb)
    assert writer.full_rewrites == 1
    assert path.read_bytes() == nbformat_bytes(nb)


def test_dumps_cell_is_the_cells_bytes_inside_the_whole_notebook():
    for fixture in REAL:
        nb = json.loads(fixture.read_text())
        whole = dumps_notebook(nb)
        for cell in nb["cells"]:
            assert "\n  " + dumps_cell(cell) + ("\n" if cell is nb["cells"][-1] else ",\n") in whole


def test_another_writer_between_write_backs_is_seen_by_the_stat_key(tmp_path):
    """Someone else's write moves the cells: the writer indexes again and finds its cell by id."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"print({i})") for i in range(4)]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    writer = rewrite_code_cells(path, nb)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("inserted by a person\n" * 40))
    nb.cells[3].source = "print('edited by a person')"
    nbformat.write(nb, str(path))
    target = nb.cells[2]

    def edit(cell):
        assert "".join(cell["source"]) == "print(1)"  # as stored: a list of lines
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "again\n"}]
        cell["execution_count"] = 9

    writer.update_cell(1, target.id, edit)
    target.outputs = [nbformat.v4.new_output("stream", text="again\n")]
    target.execution_count = 9
    assert path.read_bytes() == nbformat_bytes(nb)  # the person's edits are kept, the cell landed where it is now


def test_an_edit_that_refuses_writes_nothing(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(1)")]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    before = path.read_bytes()

    def refuse(cell):
        raise NotebookOutOfSync("changed", executed=True)

    with pytest.raises(NotebookOutOfSync):
        CellWriter(str(path)).update_cell(0, nb.cells[0].id, refuse)
    with pytest.raises(NotebookOutOfSync):
        CellWriter(str(path)).update_cell(0, "no-such-id", refuse)  # no cell matches: edit is told None
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["nb.ipynb"]  # no temp file left


# With a real kernel: `j-cli exec -f` on a notebook whose first and last cells are code.

CELLS = [
    "x = 41",  # no output: outputs stay []
    "print('one')\nprint('two')",
    "# a markdown cell sits here in the notebook",
    "x + 1",
    "from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>\\n<i>it</i>'))",
    "print('last é ✓')",
]


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def run_notebook(session, ws, name, *extra):
    result = run_cli("-j", "exec", session, "-f", name, *extra, cwd=ws)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def demo_notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.cells[2] = nbformat.v4.new_markdown_cell("## notes\nsome text")
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="stale output\n" * 100)]
    nb.cells[1].execution_count = 7
    return nb


def test_a_run_writes_the_notebook_nbformat_would_write_whole(ws, kernel_session):
    path = ws / "nb.ipynb"
    nbformat.write(demo_notebook(), str(path))
    os.chmod(path, 0o640)
    lines = run_notebook(kernel_session, ws, "nb.ipynb")
    assert lines[-1]["cells_run"] == 5
    after = nbformat.read(str(path), as_version=4)
    nbformat.validate(after)
    assert path.read_bytes() == nbformat_bytes(after)
    assert after.cells[0].outputs == [] and after.cells[0].execution_count is not None
    assert after.cells[1].outputs[0].text == "one\ntwo\n"
    assert after.cells[-1].outputs[0].text == "last é ✓\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    run_notebook(kernel_session, ws, "nb.ipynb", "--cell", "3:")  # again, over its own output
    assert path.read_bytes() == nbformat_bytes(nbformat.read(str(path), as_version=4))


def test_an_indent_2_notebook_comes_out_in_nbformats_layout(ws, kernel_session):
    path = ws / "nb.ipynb"
    path.write_text(json.dumps(json.loads(nbformat.writes(demo_notebook())), indent=2))
    run_notebook(kernel_session, ws, "nb.ipynb", "--cell", "1")
    after = nbformat.read(str(path), as_version=4)
    assert after.cells[1].outputs[0].text == "one\ntwo\n"
    assert path.read_bytes() == nbformat_bytes(after)


def test_a_hard_linked_notebook_shows_the_run_under_both_names(ws, kernel_session):
    path = ws / "nb.ipynb"
    nbformat.write(demo_notebook(), str(path))
    os.link(path, ws / "other-name.ipynb")
    inode = path.stat().st_ino
    run_notebook(kernel_session, ws, "nb.ipynb")
    assert path.stat().st_ino == inode and path.stat().st_nlink == 2
    assert (ws / "other-name.ipynb").read_bytes() == path.read_bytes()
    after = nbformat.read(str(path), as_version=4)
    assert after.cells[-1].outputs[0].text == "last é ✓\n"
    assert path.read_bytes() == nbformat_bytes(after)
    assert sorted(p.name for p in ws.iterdir()) == ["nb.ipynb", "other-name.ipynb"]


# Pacing: finished cells of a big notebook are written together; JCLI_WRITEBACK_PACE makes that deterministic here.


def paced_notebook(path, *middle: str) -> None:
    """Cells 0 and 1, ``middle``, a cell that says how many outputs cell 1 has in the file right now, and a last one."""
    peek = f"import json\nprint('cell 1 outputs in the file:', len(json.load(open({str(path)!r}))['cells'][1]['outputs']))"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in ("x = 0", "print('one')", *middle, peek, "print('last')")]
    nbformat.write(nb, str(path))


@pytest.mark.parametrize(("pace", "seen"), [("0", 1), ("1e9", 0)])
def test_finished_cells_are_written_at_once_or_together_as_the_pace_says(ws, kernel_session, pace, seen):
    path = ws / "nb.ipynb"
    paced_notebook(path)
    result = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", cwd=ws, env={**os.environ, "JCLI_WRITEBACK_PACE": pace})
    assert result.returncode == 0, result.stdout
    *cells, summary = [json.loads(line) for line in result.stdout.splitlines()]
    assert [c["cell_index"] for c in cells] == [0, 1, 2, 3] and all(c["notebook_updated"] for c in cells)
    assert cells[2]["text"] == f"cell 1 outputs in the file: {seen}\n"  # 1e9: cell 1 still queued while cell 2 ran
    after = nbformat.read(str(path), as_version=4)
    assert [c.outputs[0].text for c in after.cells[1:]] == ["one\n", cells[2]["text"], "last\n"]
    assert path.read_bytes() == nbformat_bytes(after)
    assert summary["status"] == "ok" and summary["cells_run"] == 4


def test_someone_elses_write_ends_the_wait_and_queued_cells_are_checked(ws, kernel_session):
    """Cell 2 edits cell 1 in the file while cell 1 is still queued: cell 1 is refused, the edit kept, the run stops."""
    path = ws / "nb.ipynb"
    edit = (
        f"import nbformat\nnb = nbformat.read({str(path)!r}, as_version=4)\n"
        f"nb.cells[1].source = \"print('edited by a person')\"\nnbformat.write(nb, {str(path)!r})"
    )
    paced_notebook(path, edit)
    result = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", cwd=ws, env={**os.environ, "JCLI_WRITEBACK_PACE": "1e9"})
    assert result.returncode == 1
    *cells, summary = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(c["cell_index"], c["status"]) for c in cells] == [(0, "ok"), (1, "error"), (2, "ok")]
    assert cells[1]["code"] == "NOTEBOOK_OUT_OF_SYNC" and cells[1]["executed"] is True
    assert summary["status"] == "error" and summary["cells_run"] == 2  # the peek and the last cell never ran
    after = nbformat.read(str(path), as_version=4)
    assert after.cells[1].source == "print('edited by a person')" and after.cells[1].outputs == []
    assert after.cells[2].execution_count == cells[2]["execution_count"]  # written in the same splice
    assert after.cells[3].outputs == [] and after.cells[4].outputs == []


def test_no_stream_human_mode_shows_each_cells_own_outputs_when_cells_are_queued(ws, kernel_session):
    path = ws / "nb.ipynb"
    paced_notebook(path)
    env = {**os.environ, "JCLI_WRITEBACK_PACE": "1e9"}
    result = run_cli("exec", kernel_session, "-f", "nb.ipynb", "--no-stream", cwd=ws, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == "[cell 0] 1/4\n[cell 1] 2/4\none\n[cell 2] 3/4\ncell 1 outputs in the file: 0\n[cell 3] 4/4\nlast\n"
