"""Three-way edits of the shared notebook: what j-cli changed, and only that, made in the room's document.

Each edit is made on a document of its own, from a copy of what it read,
while a second document (the person's) changes other parts; then the two
merge as the room merges them. The person's edits survive: in other cells,
in the notebook's metadata, and in the same cell's source away from j-cli's
change. No server is needed here; tests/room/test_room_live_runs.py does it
through a real room.
"""

from __future__ import annotations

import copy

from jupyter_ydoc import YNotebook
from pycrdt import Doc

from jcli_sidecar.room.document import apply_cell, apply_notebook, cell_dict, notebook_dict, set_outputs, set_text


def _code(cell_id: str, source: str, outputs=None) -> dict:
    return {"cell_type": "code", "id": cell_id, "metadata": {}, "source": source, "execution_count": None, "outputs": outputs or []}


NOTEBOOK = {
    "cells": [
        _code("a", "x = 1\ny = 2\n"),
        {"cell_type": "markdown", "id": "m", "metadata": {"tags": ["intro"]}, "source": "# Title"},
        _code("b", "print(x)", [{"output_type": "stream", "name": "stdout", "text": "1\n"}]),
        _code("c", "z = 3"),
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _pair(notebook=NOTEBOOK) -> tuple[YNotebook, YNotebook]:
    mine = YNotebook(Doc())
    mine.set(notebook)
    theirs = YNotebook(Doc())
    theirs.ydoc.apply_update(mine.ydoc.get_update())
    return mine, theirs


def _merge(mine: YNotebook, theirs: YNotebook) -> None:
    mine.ydoc.apply_update(theirs.ydoc.get_update(mine.ydoc.get_state()))
    theirs.ydoc.apply_update(mine.ydoc.get_update(theirs.ydoc.get_state()))


def _edit(notebook: YNotebook, change) -> None:
    before = notebook_dict(notebook)
    after = copy.deepcopy(before)
    change(after)
    with notebook.ydoc.transaction():
        apply_notebook(notebook, before, after)
    assert notebook_dict(notebook) == after  # the document reads as the edit meant, alone


def test_insert_delete_move_and_change_merge_with_the_persons_edits():
    mine, theirs = _pair()

    def change(nb):
        cells = nb["cells"]
        cells[0]["source"] = "x = 10\ny = 2\n"
        cells.insert(1, _code("new", "print('inserted')"))
        del cells[4]  # "c"
        cells.append(cells.pop(2))  # "m" to the end
        nb["metadata"]["papermill"] = {"parameters": {"n": 1}}

    _edit(mine, change)
    with theirs.ydoc.transaction():  # meanwhile the person types at the end of "a" and in "b", and tags "b"
        text = theirs.ycells[0]["source"]
        text += "# Ada\n"
        theirs.ycells[2]["source"].insert(0, "# check\n")
        theirs.ycells[2]["metadata"]["tags"] = ["Ada's"]
    _merge(mine, theirs)
    for doc in (mine, theirs):
        shown = notebook_dict(doc)
        assert [cell["id"] for cell in shown["cells"]] == ["a", "new", "b", "m"]
        assert shown["cells"][0]["source"] == "x = 10\ny = 2\n# Ada\n"
        assert shown["cells"][2]["source"] == "# check\nprint(x)" and shown["cells"][2]["metadata"] == {"tags": ["Ada's"]}
        assert shown["cells"][2]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
        assert shown["cells"][3] == {"cell_type": "markdown", "id": "m", "metadata": {"tags": ["intro"]}, "source": "# Title"}
        assert shown["metadata"]["papermill"] == {"parameters": {"n": 1}} and shown["metadata"]["kernelspec"]["name"] == "python3"


def test_a_source_change_is_one_edit_between_the_common_ends():
    mine, theirs = _pair()
    with mine.ydoc.transaction():
        set_text(mine.ycells[0]["source"], "x = 1\nw = 0\ny = 2\n")
    with theirs.ydoc.transaction():
        theirs.ycells[0]["source"].insert(0, "# top\n")
        text = theirs.ycells[0]["source"]
        text += "# end\n"
    _merge(mine, theirs)
    assert str(mine.ycells[0]["source"]) == str(theirs.ycells[0]["source"]) == "# top\nx = 1\nw = 0\ny = 2\n# end\n"


def test_outputs_change_one_by_one_and_a_grown_stream_is_appended_to():
    mine, theirs = _pair()
    b = mine.ycells[2]
    grown = [
        {"output_type": "stream", "name": "stdout", "text": "1\n2\n"},
        {"output_type": "display_data", "data": {"text/plain": "<plot>"}, "metadata": {}},
    ]
    with mine.ydoc.transaction():
        set_outputs(b, cell_dict(b)["outputs"], grown)
    stream = mine.ycells[2]["outputs"][0]
    assert str(stream["text"]) == "1\n2\n"  # the same Y text, appended to
    replaced = [{"output_type": "display_data", "data": {"text/plain": "<new plot>"}, "metadata": {}}]
    with mine.ydoc.transaction():
        set_outputs(b, grown, replaced)
    _merge(mine, theirs)
    assert cell_dict(theirs.ycells[2])["outputs"] == replaced
    # Outputs that are not what j-cli read (the person cleared them meanwhile) are written whole.
    with theirs.ydoc.transaction():
        theirs.ycells[2]["outputs"].clear()
    _merge(mine, theirs)
    with mine.ydoc.transaction():
        set_outputs(mine.ycells[2], replaced, grown)
    _merge(mine, theirs)
    assert cell_dict(theirs.ycells[2])["outputs"] == grown


def test_a_cell_edit_touches_only_what_differs():
    mine, theirs = _pair()
    before = cell_dict(mine.ycells[0])
    after = {**copy.deepcopy(before), "execution_count": 3, "metadata": {"execution": {"iopub.status.idle": "t"}}}
    with mine.ydoc.transaction():
        apply_cell(mine.ycells[0], before, after)
    with theirs.ydoc.transaction():
        theirs.ycells[0]["source"].insert(0, "# Ada\n")
    _merge(mine, theirs)
    cell = cell_dict(theirs.ycells[0])
    assert cell["execution_count"] == 3 and cell["metadata"] == {"execution": {"iopub.status.idle": "t"}}
    assert cell["source"] == "# Ada\nx = 1\ny = 2\n"


def test_cells_without_ids_are_addressed_by_the_ids_the_room_gives_them():
    old = {**copy.deepcopy(NOTEBOOK), "nbformat_minor": 4}
    for cell in old["cells"]:
        del cell["id"]
    mine, _theirs = _pair(old)
    shown = notebook_dict(mine)
    assert all(isinstance(cell.get("id"), str) and cell["id"] for cell in shown["cells"])
    assert mine.get()["cells"][0].get("id") is None  # what the server saves: still without ids
