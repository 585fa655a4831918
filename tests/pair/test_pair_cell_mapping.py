"""py:percent parsing, writing, and mapping .py cells onto the notebook."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import FIXTURES
from hypothesis import given
from hypothesis import strategies as st

from jcli_sidecar.base.errors import CellMappingUnreliable, CellNotFound, UsageError
from jcli_sidecar.pair.pairing import PercentCell, is_percent, map_cell, parse_percent, write_percent
from jcli_sidecar.read.reader import read_output

JUPYTEXT_STYLE = """\
# ---
# jupyter:
#   kernelspec:
#     name: python3
# ---

import os

# %% [markdown]
# # Title
#
# Some text

# %% id="abc" tags=["x"]
x = 1

# %% Named cell [raw]
# raw text
"""


def test_parse_skips_the_header_and_keeps_code_before_the_first_marker():
    cells = parse_percent(JUPYTEXT_STYLE)
    assert [(c.cell_type, c.source, c.cell_id) for c in cells] == [
        ("code", "import os", None),
        ("markdown", "# Title\n\nSome text", None),
        ("code", "x = 1", "abc"),
        ("raw", "raw text", None),
    ]
    assert (cells[2].start_line, cells[2].end_line) == (14, 15)


def test_a_cell_magic_comment_is_not_a_marker_and_reads_as_the_magic():
    text = "# %%\n# %%time\nx = 1\n"
    assert [c.source for c in parse_percent(text)] == ["%%time\nx = 1"]
    assert not is_percent("print('# %% inside a string')\n")


def test_the_writer_refuses_what_cannot_read_back():
    with pytest.raises(UsageError):
        write_percent([PercentCell("code", "a = 1\n# %% sneaky\nb = 2")])
    # a quote in an id is JSON on the marker, and reads back
    assert parse_percent(write_percent([PercentCell("code", "x", 'odd"id')]))[0].cell_id == 'odd"id'


_line = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20).map(str.rstrip)
_source = st.lists(_line, max_size=6).map("\n".join).map(lambda s: s.strip("\n"))
_cell = st.builds(
    PercentCell,
    st.sampled_from(["code", "markdown", "raw"]),
    _source,
    st.one_of(st.none(), st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True)),
)


@given(st.lists(_cell, min_size=1, max_size=6))
def test_write_then_parse_round_trips(cells):
    from hypothesis import assume

    from jcli_sidecar.pair.pairing import normalize_source

    cells = [c._replace(source=normalize_source(c.source)) for c in cells]
    try:
        text = write_percent(cells)
    except UsageError:
        assume(False)
    back = parse_percent(text)
    assert [(c.cell_type, c.source, c.cell_id) for c in back] == [(c.cell_type, c.source, c.cell_id) for c in cells]


def _heads(nb_path):
    return json.loads(nb_path.read_text())["cells"]


def test_mapping_prefers_the_marker_id_even_after_an_edit(tmp_path):
    nb = tmp_path / "p.ipynb"
    shutil.copy(FIXTURES / "pair_ids.ipynb", nb)
    py = (FIXTURES / "pair_ids.py").read_text().replace("figure_bytes('png')", "figure_bytes('png')  # edited")
    cells = parse_percent(py)
    assert map_cell(cells, 1, _heads(nb), "p.py") == (2, "id")


def test_mapping_by_content_needs_a_unique_match():
    nb = FIXTURES / "pair_drift.ipynb"
    cells = parse_percent((FIXTURES / "pair_drift.py").read_text())
    assert map_cell(cells, 2, _heads(nb), "d.py") == (2, "content")
    with pytest.raises(CellMappingUnreliable) as edited:
        map_cell(cells, 1, _heads(nb), "d.py")
    assert edited.value.details["candidates"] == []
    with pytest.raises(CellMappingUnreliable) as duplicate:
        map_cell(cells, 13, _heads(nb), "d.py")
    assert duplicate.value.details["candidates"] == [13, 15]
    with pytest.raises(CellNotFound):
        map_cell(cells, 99, _heads(nb), "d.py")


def test_reading_through_a_py_reports_both_sides():
    env = read_output(str(FIXTURES / "pair_jupytext.py"), 5, 0)
    source = env["source"]
    assert source["mapping"] == "content"
    assert source["requested_path"].endswith("pair_jupytext.py")
    assert source["path"].endswith("pair_jupytext.ipynb")
    assert source["cell_index"] == 5 and source["requested_cell_index"] == 5
    py_lines = (FIXTURES / "pair_jupytext.py").read_text().splitlines()
    assert py_lines[source["source_start_line"] - 1].startswith("# %%")
    assert "HTML(" in py_lines[source["source_end_line"] - 1]
