"""A write-back hands over the offset index it wrote: equal to a fresh build, byte for byte, and dropped at any other write.

The writer (:class:`~jcli_sidecar.ipynb.nbsplice.CellWriter`) knows where
everything it spliced lies; :meth:`index` must be exactly what
:func:`~jcli_sidecar.ipynb.nbindex.build_index` finds in the file it left,
on the shared fixtures and a 100 MB realistic notebook. Handed over, the next
load of that version builds nothing; a write by another program changes the
file's key, and the next load indexes the file again and reads what it holds.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from helpers import FIXTURES, REPO, run_cli

from jcli_sidecar.base.boundedjson import Bail, TooDeep
from jcli_sidecar.base.runtime import SidecarPaths, workspace_of
from jcli_sidecar.ipynb.nbindex import adopted_uses, build_index, index_to_wire
from jcli_sidecar.ipynb.nbsplice import CellWriter
from jcli_sidecar.ipynb.notebook import NotebookFile
from jcli_sidecar.sidecar.client import call

sys.path.insert(0, str(REPO / "bench"))
from realistic_notebook import IMAGE_OUTPUT, cell_kind, write_notebook  # noqa: E402

NOTEBOOKS = sorted({*FIXTURES.rglob("*.ipynb"), *(REPO / "examples").rglob("*.ipynb")})
NEW_OUTPUTS = [
    {"name": "stdout", "output_type": "stream", "text": ['a "quoted" [line]\n', "\\ back\n"]},
    {
        "data": {"application/json": {"deep": [[{"k": [1, 2, {"x": None}]}]]}, "text/plain": ["{...}"]},
        "metadata": {},
        "output_type": "display_data",
    },
    {"data": {"text/plain": "été ☃"}, "execution_count": 7, "metadata": {}, "output_type": "execute_result"},
]


def spans(index) -> tuple:
    return index.key, [(c.start, c.end, c.outputs, c.items) for c in index.cells]


def fresh(path) -> tuple | str:
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            return spans(build_index(fd, os.fstat(fd)))
        except (Bail, TooDeep) as exc:
            return type(exc).__name__
    finally:
        os.close(fd)


def give_outputs(outputs: list):
    def edit(cell) -> None:
        assert cell is not None
        if cell.get("cell_type") == "code":
            cell["outputs"] = outputs
            cell["execution_count"] = 7

    return edit


def first_code_cell(path) -> int | None:
    cells = json.loads(path.read_bytes()).get("cells")
    if not isinstance(cells, list):
        return None
    return next((i for i, c in enumerate(cells) if isinstance(c, dict) and c.get("cell_type") == "code"), None)


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_the_index_a_write_back_hands_over_is_the_one_a_fresh_build_finds(tmp_path, source):
    path = tmp_path / source.name
    shutil.copyfile(source, path)
    if not isinstance(fresh(path), tuple) or (number := first_code_cell(path)) is None:
        pytest.skip("a notebook the pass does not index is parsed whole: nothing to hand over")
    writer = CellWriter(str(path))
    writer.update_cell(number, None, give_outputs([]))  # lays the file out as nbformat does, when it was not
    for outputs in (NEW_OUTPUTS, NEW_OUTPUTS[:1], []):
        writer.update_cell(number, None, give_outputs(outputs))
        index = writer.index()
        assert index is not None, "a splice knows what it wrote"
        assert spans(index) == fresh(path)


def test_a_handed_over_index_is_used_until_another_program_writes_the_file(tmp_path):
    path = tmp_path / "nb.ipynb"
    shutil.copyfile(FIXTURES / "kernel_v4.5.ipynb", path)
    number = first_code_cell(path)
    writer = CellWriter(str(path))
    writer.update_cell(number, None, give_outputs([]))
    writer.update_cell(number, None, give_outputs(NEW_OUTPUTS))
    handed = writer.hand_over()
    assert handed is not None and spans(handed) == fresh(path)

    used = adopted_uses()
    nb = NotebookFile.load(str(path))
    assert adopted_uses() == used + 1 and nb.index is handed
    assert nb.output(number, 0) == NEW_OUTPUTS[0]

    raw = path.read_bytes()  # another program: same size, same inode, new bytes
    with open(path, "r+b") as fh:
        fh.write(raw.replace(b'"a \\"quoted\\" [line]\\n"', b'"b \\"quoted\\" [LINE]\\n"'))
    nb = NotebookFile.load(str(path))
    assert adopted_uses() == used + 1 and nb.index is not handed, "the foreign write was not seen"
    assert nb.output(number, 0)["text"] == ['b "quoted" [LINE]\n', "\\ back\n"]
    assert spans(nb.index) == fresh(path)


def test_the_sidecar_adopts_a_handed_over_index_and_drops_it_at_a_foreign_write(tmp_path, sidecar_on, monkeypatch):
    monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", "0")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "nb.ipynb"
    shutil.copyfile(FIXTURES / "kernel_v4.5.ipynb", path)
    number = 1  # a code cell with outputs
    assert run_cli("-j", "sidecar", "start", cwd=tmp_path).returncode == 0
    read = ["-j", "notebook", "output", "nb.ipynb", "--cell", str(number), "--output", "0"]
    first = run_cli(*read, cwd=tmp_path)
    assert first.returncode == 0, first.stderr  # cached: the version before the write

    writer = CellWriter(str(path))
    writer.update_cell(number, None, give_outputs([]))
    writer.update_cell(number, None, give_outputs(NEW_OUTPUTS))
    index = writer.index()
    assert index is not None
    paths = SidecarPaths(workspace_of(str(tmp_path)))
    wire = index_to_wire(index)
    assert call(paths, "notebook.adopt", {"file_path": str(path), "index": [wire[0][:4] + [0], wire[1]]}) == {"adopted": False}
    assert call(paths, "notebook.adopt", {"file_path": str(path), "index": wire}) == {"adopted": True}

    before = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["cache"]
    got = run_cli(*read, cwd=tmp_path)
    assert got.returncode == 0 and json.loads(got.stdout)["stream"]["data"] == "".join(NEW_OUTPUTS[0]["text"])
    after = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["cache"]
    assert after["adopted_loads"] == before["adopted_loads"] + 1, (before, after)

    raw = path.read_bytes()
    with open(path, "r+b") as fh:
        fh.write(raw.replace(b"[line]", b"[LINE]"))
    got = run_cli(*read, cwd=tmp_path)
    assert got.returncode == 0 and "[LINE]" in json.loads(got.stdout)["stream"]["data"]
    assert run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["cache"]["adopted_loads"] == after["adopted_loads"]


def test_a_malformed_index_is_refused_by_the_sidecar(tmp_path, sidecar_on, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "nb.ipynb"
    shutil.copyfile(FIXTURES / "kernel_v4.5.ipynb", path)
    assert run_cli("-j", "sidecar", "start", cwd=tmp_path).returncode == 0
    paths = SidecarPaths(workspace_of(str(tmp_path)))
    fd = os.open(path, os.O_RDONLY)
    key = list(build_index(fd, os.fstat(fd)).key)
    os.close(fd)
    for bad in ([key, [[5, 3]]], [key, [[0, 10, 20, 30, [1, 2]]]], [key[:3], []], "index", [key, [[0, 10**12]]], [key, [[0, 9], [5, 20]]]):
        assert call(paths, "notebook.adopt", {"file_path": str(path), "index": bad}) == {"adopted": False}, bad
    assert call(paths, "ping", {}) == {"pong": True}
    cache = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["cache"]
    assert cache["adopted_loads"] == 0


@pytest.mark.slow
def test_a_100_mb_realistic_notebook_hands_over_the_index_a_fresh_build_finds(tmp_path):
    path = tmp_path / "real.ipynb"
    cells = write_notebook(path, 100 << 20, with_ids=True, nbformat_layout=True)
    middle = next(i for i in range(cells // 2, cells) if cell_kind(i) == "image")
    writer = CellWriter(str(path))
    writer.update_cell(middle, None, give_outputs(NEW_OUTPUTS))
    assert writer.full_rewrites == 0, "nbformat's layout is spliced"
    handed = writer.hand_over()
    assert handed is not None and spans(handed) == fresh(path)
    used = adopted_uses()
    nb = NotebookFile.load(str(path))
    assert adopted_uses() == used + 1
    assert nb.output(middle, 1) == NEW_OUTPUTS[1]
    later = next(i for i in range(middle + 1, cells) if cell_kind(i) == "image")  # moved by the splice
    assert nb.output(later, IMAGE_OUTPUT)["output_type"] == "display_data"


def test_exec_f_hands_its_index_to_the_sidecar_and_the_next_read_builds_none(
    tmp_path, sidecar_on, use_jupyter, kernel_session, monkeypatch
):
    monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", "0")
    cells = [code([], source=f"print({n})", id=f"c{n}") for n in range(3)]
    path = tmp_path / "run.ipynb"
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")  # nbformat's layout: spliced
    assert run_cli("-j", "sidecar", "start", cwd=tmp_path).returncode == 0
    ran = run_cli("-j", "exec", kernel_session, "-f", "run.ipynb", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    before = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["cache"]
    got = run_cli("-j", "notebook", "output", "run.ipynb", "--cell", "2", "--output", "0", cwd=tmp_path)
    assert got.returncode == 0 and json.loads(got.stdout)["stream"]["data"] == "2\n", got.stderr
    after = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["cache"]
    assert after["adopted_loads"] == before["adopted_loads"] + 1, (before, after)
    assert spans(NotebookFile.load(str(path)).index) == fresh(path)


def code(outputs: list, source: str, **extra) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": outputs, "source": source, **extra}


def test_a_full_rewrite_hands_over_its_index_and_the_next_splice_builds_none(tmp_path, monkeypatch):
    from jcli_sidecar.ipynb import nbsplice
    from jcli_sidecar.ipynb.nbwrite import write_notebook

    path = tmp_path / "nb.ipynb"
    nb = json.loads((FIXTURES / "kernel_v4.5.ipynb").read_bytes())
    nb["cells"][1]["outputs"] = NEW_OUTPUTS
    used = adopted_uses()
    write_notebook(str(path), nb)  # what a pair sync, a convert or an open writes
    loaded = NotebookFile.load(str(path))
    assert adopted_uses() == used + 1 and spans(loaded.index) == fresh(path)
    assert loaded.output(1, 1) == NEW_OUTPUTS[1]

    def no_build(fd, info):
        raise AssertionError("the writer indexed the file it had just written")

    monkeypatch.setattr(nbsplice, "build_index", no_build)
    writer = CellWriter(str(path))
    writer.update_cell(1, None, give_outputs(NEW_OUTPUTS[:1]))
    assert writer.full_rewrites == 0 and spans(writer.index()) == fresh(path)
    monkeypatch.undo()

    raw = path.read_bytes()  # another program, same size: the handed-over index is not used
    write = raw.replace(b"[line]", b"[LINE]")
    assert write != raw
    with open(path, "r+b") as fh:
        fh.write(write)
    used = adopted_uses()
    assert NotebookFile.load(str(path)).output(1, 0)["text"][0] == 'a "quoted" [LINE]\n' and adopted_uses() == used


def test_convert_hands_its_index_to_the_sidecar_and_the_next_read_builds_none(tmp_path, sidecar_on, monkeypatch):
    monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", "0")
    cells = [
        code([{"name": "stdout", "output_type": "stream", "text": ["one\n"]}], source="print('one')", id="c1"),
        code([], source="b = 2", id="c2"),
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "m.ipynb").write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    (tmp_path / "m.py").write_text('# %% id="c1"\nprint(\'one\')\n\n# %% id="c2"\nb = 3\n')
    assert run_cli("-j", "sidecar", "start", cwd=tmp_path).returncode == 0
    converted = run_cli("-j", "convert", "py-to-ipynb", "m.py", "--outputs", "preserve", "--py-wins", cwd=tmp_path)
    assert converted.returncode == 0, converted.stderr  # a full rewrite: the edited cell and the kept output
    before = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["cache"]
    got = run_cli("-j", "notebook", "output", "m.ipynb", "--cell", "0", "--output", "0", cwd=tmp_path)
    assert got.returncode == 0 and json.loads(got.stdout)["stream"]["data"] == "one\n", got.stderr
    after = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["cache"]
    assert after["adopted_loads"] == before["adopted_loads"] + 1, (before, after)
    assert spans(NotebookFile.load(str(tmp_path / "m.ipynb")).index) == fresh(tmp_path / "m.ipynb")
