"""The pure cell-edit op (jcli_sidecar.read.cell_edits): every op on an nbformat dict, its precondition, its refusals.

Each refusal leaves the notebook exactly as it was (compared with a deep
copy taken before); the results are validated by nbformat, as written
notebooks are.
"""

from __future__ import annotations

import copy

import nbformat
import pytest

from jcli_sidecar.base import CellChanged, CellNotFound, UsageError
from jcli_sidecar.read.cell_edits import CellEdit, apply_cell_edit, parse_cell_ref
from jcli_sidecar.read.staleness import RAN_KEY, source_digest


def _code(cell_id, source, count=None, outputs=None, ran=False):
    metadata = {RAN_KEY: {"src": "x", "run": "r1", "deps": {}}, "tags": ["keep"]} if ran else {}
    return {"cell_type": "code", "id": cell_id, "metadata": metadata, "source": source, "execution_count": count, "outputs": outputs or []}


def _stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def notebook(minor=5):
    nb = {
        "cells": [
            _code("a", "x = 1", 1, [_stream("1\n")], ran=True),
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# Title"},
            _code("b", ["print(", "x)"], 2, [_stream("1\n")]),
            _code("c", "z = 3"),
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": minor,
    }
    if minor < 5:
        for cell in nb["cells"]:
            del cell["id"]
    return nb


def ids(nb):
    return [cell["id"] for cell in nb["cells"]]


def valid(nb):
    nbformat.validate(nbformat.from_dict(copy.deepcopy(nb)))
    return nb


def test_replace_clears_a_code_cells_outputs_and_run_record_and_reports_the_new_digest():
    nb = notebook()
    done = apply_cell_edit(nb, CellEdit("replace", "a", source="x = 2\n", if_source=source_digest("x = 1")))
    cell = valid(nb)["cells"][0]
    assert cell["source"] == "x = 2\n" and cell["outputs"] == [] and cell["execution_count"] is None
    assert cell["metadata"] == {"tags": ["keep"]}  # only the run record goes: the cell reads stale
    assert done == {
        "op": "replace",
        "cell_id": "a",
        "cell_index": 0,
        "cell_type": "code",
        "source_sha": source_digest("x = 2"),
        "cell_count": 4,
    }
    done = apply_cell_edit(nb, CellEdit("replace", "m", source="# New"))
    assert nb["cells"][1] == {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# New"} and done["cell_index"] == 1


@pytest.mark.parametrize(
    ("where", "index"),
    [({}, 4), ({"before": "b"}, 2), ({"after": "b"}, 3), ({"at": 0}, 0), ({"at": -1}, 4), ({"after": 0}, 1), ({"before": -1}, 3)],
)
def test_insert_puts_a_fresh_cell_where_asked(where, index):
    nb = notebook()
    done = apply_cell_edit(nb, CellEdit("insert", source="new = 1", cell_type="code", **where))
    valid(nb)
    cell = nb["cells"][index]
    assert done["cell_index"] == index and done["cell_id"] == cell["id"] and len(cell["id"]) == 8
    assert cell["id"] not in {"a", "m", "b", "c"} and cell["outputs"] == [] and cell["source"] == "new = 1"
    assert [i for i in ids(nb) if i != cell["id"]] == ["a", "m", "b", "c"]


def test_insert_of_markdown_and_raw_cells():
    nb = notebook()
    apply_cell_edit(nb, CellEdit("insert", source="# Notes", cell_type="markdown", at=1))
    apply_cell_edit(nb, CellEdit("insert", source="raw text", cell_type="raw"))
    valid(nb)
    assert nb["cells"][1]["cell_type"] == "markdown" and "outputs" not in nb["cells"][1]
    assert nb["cells"][-1]["cell_type"] == "raw"


@pytest.mark.parametrize(
    ("where", "order"),
    [
        ({"before": "a"}, ["c", "a", "m", "b"]),
        ({"after": "a"}, ["a", "c", "m", "b"]),
        ({"at": 1}, ["a", "c", "m", "b"]),
        ({"at": 3}, ["a", "m", "b", "c"]),
        ({"after": "m"}, ["a", "m", "c", "b"]),
    ],
)
def test_move_puts_the_cell_where_asked(where, order):
    nb = notebook()
    done = apply_cell_edit(nb, CellEdit("move", "c", **where))
    assert ids(valid(nb)) == order and done["cell_index"] == order.index("c") and done["cell_id"] == "c"


def test_moving_forward_counts_the_places_after_the_cell_left():
    nb = notebook()
    apply_cell_edit(nb, CellEdit("move", "a", after="b"))
    assert ids(nb) == ["m", "b", "a", "c"]
    apply_cell_edit(nb, CellEdit("move", 0, at=3))
    assert ids(nb) == ["b", "a", "c", "m"]


def test_delete_and_clear():
    nb = notebook()
    done = apply_cell_edit(nb, CellEdit("delete", "m"))
    assert ids(nb) == ["a", "b", "c"] and done["source_sha"] is None and done["cell_index"] == 1 and done["cell_count"] == 3
    done = apply_cell_edit(nb, CellEdit("clear", "b"))
    assert nb["cells"][1]["outputs"] == [] and nb["cells"][1]["execution_count"] is None and nb["cells"][1]["source"] == ["print(", "x)"]
    nb = notebook()
    done = apply_cell_edit(nb, CellEdit("clear", all_cells=True))
    assert done["cleared"] == [0, 2, 3]
    assert all(cell.get("outputs", []) == [] and cell.get("execution_count") is None for cell in valid(nb)["cells"])
    assert RAN_KEY not in nb["cells"][0]["metadata"]


def test_an_index_is_resolved_to_the_cells_id_once_before_the_edit():
    nb = notebook()
    pinned = CellEdit("replace", 2, source="print(2)").pinned(nb)
    assert pinned.cell == "b"
    nb["cells"].insert(0, _code("person", "inserted = 1"))  # the person inserts a cell above it meanwhile
    done = apply_cell_edit(nb, pinned)
    assert done["cell_index"] == 3 and nb["cells"][3]["source"] == "print(2)" and nb["cells"][2]["source"] == "# Title"


def test_a_list_source_and_a_final_newline_digest_as_shown():
    nb = notebook()
    apply_cell_edit(nb, CellEdit("delete", "b", if_source=source_digest("print(x)\n")))
    assert ids(nb) == ["a", "m", "c"]


def test_a_stale_precondition_is_refused_with_the_current_source_and_nothing_changes():
    nb = notebook()
    before = copy.deepcopy(nb)
    for op, extra in (("replace", {"source": "y"}), ("delete", {}), ("move", {"at": 0}), ("clear", {})):
        with pytest.raises(CellChanged) as caught:
            apply_cell_edit(nb, CellEdit(op, "b", if_source=source_digest("print(old)"), **extra))
        assert caught.value.code == "CELL_CHANGED"
        assert caught.value.details["source"] == "print(x)" and caught.value.details["source_sha"] == source_digest("print(x)")
        assert caught.value.details["cell_id"] == "b" and caught.value.details["cell_index"] == 2
        assert nb == before


@pytest.mark.parametrize(
    ("edit", "error", "said"),
    [
        (lambda: CellEdit("replace", "gone", source="x"), CellNotFound, "no cell has the id 'gone'"),
        (lambda: CellEdit("delete", 4), CellNotFound, "outside the notebook (4 cells)"),
        (lambda: CellEdit("delete", -5), CellNotFound, "outside the notebook"),
        (lambda: CellEdit("insert", source="x", at=6), CellNotFound, "0 to 4"),
        (lambda: CellEdit("move", "a", before="gone"), CellNotFound, "'gone'"),
        (lambda: CellEdit("move", "a", after="a"), UsageError, "itself"),
        (lambda: CellEdit("clear", "m"), UsageError, "markdown cell"),
    ],
)
def test_bad_targets_are_refused_and_nothing_changes(edit, error, said):
    nb = notebook()
    before = copy.deepcopy(nb)
    with pytest.raises(error) as caught:
        apply_cell_edit(nb, edit())
    assert said in caught.value.message and nb == before


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda: CellEdit("insert", source="x", before="a", after="b"), "not --before and --after"),
        (lambda: CellEdit("move", "a", before="b", at=1), "not --before and --at/--to"),
        (lambda: CellEdit("move", "a"), "move needs where to"),
        (lambda: CellEdit("replace", "a"), "needs the source"),
        (lambda: CellEdit("delete", "a", source="x"), "takes no source"),
        (lambda: CellEdit("delete", "a", before="b"), "is for insert and move"),
        (lambda: CellEdit("insert", "a", source="x"), "names no cell"),
        (lambda: CellEdit("insert", source="x", cell_type="heading"), "--type"),
        (lambda: CellEdit("clear", "a", all_cells=True), "names no cell"),
        (lambda: CellEdit("replace", "a", source="x", if_source="not-a-digest"), "16-hex"),
        (lambda: CellEdit("rename", "a"), "unknown cell op"),
    ],
)
def test_flags_that_do_not_go_together_are_usage_errors_before_anything_is_read(make, said):
    with pytest.raises(UsageError) as caught:
        make()
    assert said in caught.value.message and caught.value.code == "USAGE_ERROR"


def test_a_notebook_without_ids_is_addressed_by_index_only_and_says_so():
    nb = notebook(minor=4)
    with pytest.raises(CellNotFound) as caught:
        apply_cell_edit(nb, CellEdit("delete", "a").pinned(nb))
    assert "no cell ids" in caught.value.message and "by index" in caught.value.message
    done = apply_cell_edit(nb, CellEdit("insert", source="new", after=0).pinned(nb))
    assert done["cell_id"] is None and "id" not in nb["cells"][1]
    done = apply_cell_edit(nb, CellEdit("replace", 1, source="newer").pinned(nb))
    assert nb["cells"][1]["source"] == "newer" and done["cell_index"] == 1
    valid(nb)


def test_cell_refs():
    assert parse_cell_ref("12") == 12 and parse_cell_ref("-2") == -2 and parse_cell_ref("abc-1") == "abc-1"
    assert parse_cell_ref("id:12") == "12"
    nb = notebook()
    nb["cells"][3]["id"] = "0"  # an id that is a number: index 0 would be ambiguous
    with pytest.raises(UsageError) as caught:
        apply_cell_edit(nb, CellEdit("delete", 0))
    assert "id:0" in caught.value.message
    apply_cell_edit(nb, CellEdit("delete", "0"))
    assert ids(nb) == ["a", "m", "b"]


def test_a_fresh_id_made_only_of_digits_is_found_by_that_number_when_no_cell_has_that_index():
    nb = notebook()
    nb["cells"][1]["id"] = "32907906"  # a fresh id can be all digits (8 hex digits, each below a)
    done = apply_cell_edit(nb, CellEdit("move", 32907906, at=0).pinned(nb))
    assert done["cell_id"] == "32907906" and ids(nb)[0] == "32907906"
    with pytest.raises(CellNotFound, match="outside the notebook"):
        apply_cell_edit(nb, CellEdit("delete", 99))
