"""The DataFrame view without a kernel: real pandas and polars frames described in this process, and the text of a description.

The same code runs inside the kernel (``vars_rules`` is sent there as
source); tests/kernel/test_frames.py runs it there, through ``vars`` and
``exec``. Here: the bounds on wide, long, hostile and odd frames, the text
the model reads, how a reply's answer is read, and where the exec result
puts it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import polars as pl
import pytest

from jcli_sidecar.kernel.exec_result import ExecutionResult, build_result
from jcli_sidecar.kernel.frame_view import FRAME_CHARS, FRAME_KEY, frame_expressions, frame_text, read_frame
from jcli_sidecar.kernel.kernel_vars import NAMED_VALUE_CHARS, VALUE_CHARS
from jcli_sidecar.kernel.vars_rules import (
    FRAME_CELL_CHARS,
    FRAME_COLUMNS,
    FRAME_ROW_COLUMNS,
    FRAME_ROWS,
    NULL_SCAN_CELLS,
    describe,
    describe_frame,
)


def _fits(frame, cap):
    return len(json.dumps(frame)) <= cap


def test_a_pandas_frame_by_columns_dtypes_nulls_index_head_and_tail():
    df = pd.DataFrame(
        {
            "x": range(12),
            "price": [None, 2.5] * 6,
            "when": pd.date_range("2024-01-01", periods=12, tz="Europe/Paris"),
            "kind": pd.Categorical(list("ab") * 6),
        }
    ).set_index(["x", "kind"])
    frame = describe_frame(df, NAMED_VALUE_CHARS, full=True)
    assert frame["library"] == "pandas" and frame["kind"] == "DataFrame" and frame["rows"] == 12 and frame["columns_total"] == 2
    assert frame["columns"] == [
        {"name": "price", "dtype": "float64", "nulls": 6},
        {"name": "when", "dtype": "datetime64[us, Europe/Paris]", "nulls": 0},
    ]
    assert frame["index"] == {"type": "MultiIndex", "names": ["x", "kind"], "dtypes": ["int64", "category"]}
    assert frame["head"][0] == ["(0, a)", "nan", "2024-01-01 00:00:00+01:00"] and len(frame["head"]) == FRAME_ROWS
    assert [row[0] for row in frame["tail"]] == ["(7, b)", "(8, a)", "(9, b)", "(10, a)", "(11, b)"]
    listed = describe_frame(df, VALUE_CHARS, full=False)
    assert set(listed) == {"library", "kind", "rows", "columns_total", "columns"} and _fits(listed, VALUE_CHARS)
    assert listed["columns"][0] == {"name": "price", "dtype": "float64"}  # no nulls in a listing: no scan


def test_a_short_frame_has_no_tail_that_repeats_its_head_and_a_series_is_one_column():
    series = pd.Series([1.0, None, 3.0], name="s", index=pd.Index(["a", "b", "c"], name="key"))
    frame = describe_frame(series, NAMED_VALUE_CHARS, full=True)
    assert frame["kind"] == "Series" and frame["columns"] == [{"name": "s", "dtype": "float64", "nulls": 1}]
    assert frame["head"] == [["a", "1.0"], ["b", "nan"], ["c", "3.0"]] and frame["tail"] == []
    assert frame["index"] == {"type": "Index", "names": ["key"], "dtypes": ["str"]}


def test_polars_frames_and_series_by_their_schema_and_null_counts():
    df = pl.DataFrame({"a": [1, None, 3], "s": ["x" * 10_000, "y", None], "l": [list(range(1000)), [], None]})
    frame = describe_frame(df, NAMED_VALUE_CHARS, full=True)
    assert frame["library"] == "polars" and frame["rows"] == 3 and "index" not in frame
    assert frame["columns"] == [
        {"name": "a", "dtype": "Int64", "nulls": 1},
        {"name": "s", "dtype": "String", "nulls": 1},
        {"name": "l", "dtype": "List(Int64)", "nulls": 1},
    ]
    assert frame["head"][0][0] == "1" and len(frame["head"][0][1]) == FRAME_CELL_CHARS and frame["head"][0][1].endswith("…")
    assert frame["head"][1] == ["None", "y", "[]"]
    series = describe_frame(df.get_column("a"), NAMED_VALUE_CHARS, full=True)
    assert series["kind"] == "Series" and series["head"] == [["1"], ["None"], ["3"]]


def test_a_wide_frame_describes_its_first_columns_within_the_budget():
    wide = pd.DataFrame(np.zeros((3, 10_000)), columns=[f"column_{i}" for i in range(10_000)])
    for cap, full in ((VALUE_CHARS, False), (NAMED_VALUE_CHARS, True)):
        frame = describe_frame(wide, cap, full=full)
        assert frame["columns_total"] == 10_000 and 0 < len(frame["columns"]) <= FRAME_COLUMNS and _fits(frame, cap)
    assert all(len(row) == 1 + FRAME_ROW_COLUMNS for row in frame["head"] + frame["tail"])
    polars_wide = describe_frame(pl.from_numpy(np.zeros((3, 10_000))), NAMED_VALUE_CHARS, full=True)
    assert polars_wide["columns_total"] == 10_000 and _fits(polars_wide, NAMED_VALUE_CHARS)


@pytest.mark.slow  # 10M rows take seconds to build
def test_a_long_frame_counts_nulls_only_within_the_scan_bound():
    rows = 10_000_000
    long = pd.DataFrame({"i": np.arange(rows), "o": pd.Series(np.full(rows, "x", dtype=object), dtype=object)})
    frame = describe_frame(long, NAMED_VALUE_CHARS, full=True)
    assert frame["rows"] == rows and frame["index"]["range"] == [0, rows, 1]
    # 10M int cells fit the bound; 10M object cells (counted 10 each) do not: not counted, said so.
    assert rows <= NULL_SCAN_CELLS < rows + 10 * rows
    assert frame["columns"] == [{"name": "i", "dtype": "int64", "nulls": 0}, {"name": "o", "dtype": "object", "nulls": None}]
    assert frame["tail"][-1] == [str(rows - 1), str(rows - 1), "x"]
    assert "o: object, nulls not counted" in frame_text(frame)


def test_huge_strings_and_hostile_values_are_cut_and_never_raise():
    class Loud:
        def __repr__(self):
            raise RuntimeError("no repr")

        __str__ = __repr__

    huge = pd.DataFrame({"text": ["z" * 5_000_000, "ok"], "obj": [Loud(), list(range(10**5))]})
    frame = describe_frame(huge, NAMED_VALUE_CHARS, full=True)
    cells = [cell for row in frame["head"] for cell in row]
    assert max(len(cell) for cell in cells) <= FRAME_CELL_CHARS and _fits(frame, NAMED_VALUE_CHARS)
    assert frame["head"][0][1] == "z" * (FRAME_CELL_CHARS - 1) + "…" and frame["head"][0][2].startswith("<")


def test_a_frame_that_raises_while_described_is_an_error_in_the_row_not_a_failure():
    class Hostile(pd.DataFrame):
        @property
        def columns(self):
            raise RuntimeError("no columns")

        def __repr__(self):
            raise RuntimeError("no repr")

    row = describe("h", Hostile({"a": [1]}), VALUE_CHARS)
    assert row["value"] == "<repr failed: RuntimeError>"
    assert row["frame"] == {"library": "pandas", "kind": "DataFrame", "error": "RuntimeError while describing it"}
    assert frame_text(row["frame"]) == "pandas DataFrame: not described (RuntimeError while describing it)"


def test_only_frames_and_series_of_imported_libraries_are_described():
    for value in (1, "text", [1, 2], np.arange(3), pd.Index([1]), pl.LazyFrame({"a": [1]})):
        assert describe_frame(value, NAMED_VALUE_CHARS, full=True) is None
    # A process that never imported pandas or polars describes values without importing either.
    probe = (
        "import sys\n"
        "from jcli_sidecar.kernel import vars_rules\n"
        "class DataFrame: shape = (1, 1)\n"
        "rows = [vars_rules.describe(n, v, 4000) for n, v in (('d', DataFrame()), ('x', 1))]\n"
        "print(rows[0].get('frame'), 'pandas' in sys.modules, 'polars' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out == "None False False\n"


def test_the_text_the_model_reads():
    frame = describe_frame(pd.DataFrame({"a": [1, None], "b": ["x", "y"]}), NAMED_VALUE_CHARS, full=True)
    assert frame_text(frame) == (
        "pandas DataFrame: 2 rows x 2 columns\n"
        "index: RangeIndex 0..2 step 1\n"
        "columns (name: dtype, nulls):\n"
        "  a: float64, 1 null\n"
        "  b: str, 0 nulls\n"
        "head (2 rows):\n"
        "  (index) | a | b\n"
        "  0 | 1.0 | x\n"
        "  1 | nan | y"
    )
    wide = describe_frame(pd.DataFrame(np.zeros((1, 60))), VALUE_CHARS, full=False)
    text = frame_text(wide)
    assert text.startswith("pandas DataFrame: 1 rows x 60 columns\ncolumns (name: dtype):\n  0: float64")
    assert f"… {60 - len(wide['columns'])} more column(s) not described" in text
    long = frame_text(describe_frame(pd.DataFrame(np.zeros((20, 60))), NAMED_VALUE_CHARS, full=True), cap=300)
    assert len(long) == 300 and long.endswith("…")


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "text",
        {FRAME_KEY: {"status": "error", "ename": "NameError"}},
        {FRAME_KEY: {"status": "ok", "data": {"text/plain": "None"}}},
        {FRAME_KEY: {"status": "ok", "data": {"text/plain": "'not json'"}}},
        {FRAME_KEY: {"status": "ok", "data": {"text/plain": repr(json.dumps([1, 2]))}}},
        {FRAME_KEY: {"status": "ok", "data": {"text/plain": repr(json.dumps({"library": "numpy"}))}}},
        {FRAME_KEY: {"status": "ok", "data": {"text/plain": repr("x" * (10 * FRAME_CHARS))}}},
        {FRAME_KEY: {"status": "ok", "data": "text"}},
    ],
)
def test_a_reply_without_a_description_reads_as_none(answer):
    assert read_frame(answer) is None


def test_a_reply_with_one_reads_back():
    frame = {"library": "polars", "kind": "Series", "rows": 1, "columns_total": 1, "columns": []}
    assert read_frame({FRAME_KEY: {"status": "ok", "data": {"text/plain": repr(json.dumps(frame))}}}) == frame
    expression = frame_expressions()[FRAME_KEY]
    assert "last_execution_result" in expression and "sys" in expression  # gated on sys.modules before running the rules


def _result(outputs, frame):
    result = ExecutionResult(outputs)
    result.frame = frame
    return result


def test_the_exec_result_puts_the_text_on_the_execute_result_item_only():
    frame = describe_frame(pd.DataFrame({"a": [1]}), FRAME_CHARS, full=True)
    outputs = [
        {"output_type": "display_data", "data": {"text/plain": "shown"}, "metadata": {}},
        {"output_type": "execute_result", "data": {"text/plain": "   a\n0  1"}, "metadata": {}, "execution_count": 1},
    ]
    doc = build_result(_result(outputs, frame), session_id="s", kernel_id="k")
    assert "frame" not in doc["outputs"][0] and doc["outputs"][1]["frame"] == frame_text(frame)
    assert doc["text"] == "shown\n   a\n0  1\n" and doc["outputs"][1]["text"] == "   a\n0  1"  # text/plain as the kernel gave it
    plain = build_result(_result(outputs, None), session_id="s", kernel_id="k")
    assert all("frame" not in item for item in plain["outputs"])
    assert plain == {**doc, "outputs": [doc["outputs"][0], {k: v for k, v in doc["outputs"][1].items() if k != "frame"}]}
    stored = [{"type": "text", "output_index": 1, "mime": "text/plain", "path": "p", "bytes": 8}]
    kept = build_result(_result(outputs, frame), session_id="s", kernel_id="k", stored=stored)
    assert kept["outputs"][1] == {**stored[0], "frame": frame_text(frame)}
    # A description with no execute_result to go on (a cell cut short) is left out; a malformed one says so.
    assert all("frame" not in item for item in build_result(_result(outputs[:1], frame), session_id="s", kernel_id="k")["outputs"])
    odd = build_result(_result(outputs, {"library": "pandas", "kind": "DataFrame", "columns": [1]}), session_id="s", kernel_id="k")
    assert odd["outputs"][1]["frame"] == "pandas DataFrame: not described (TypeError)"


def test_the_vars_table_shows_a_frame_by_its_columns_and_one_variable_by_its_view():
    from jcli.vars_cmd import _human_table, _human_variable

    wide = pd.DataFrame(np.zeros((2, 30)))
    rows = [describe(name, value, VALUE_CHARS) for name, value in (("wide", wide), ("n", 1), ("pls", pl.Series("a", [1, None])))]
    doc = {"order": "definition", "source": "snippet", "count": 3, "total": 3, "modules_hidden": 0, "notes": [], "variables": rows}
    table = {line.split()[0]: line for line in _human_table(doc).splitlines()[1:4]}
    assert table["wide"].split()[1:4] == ["DataFrame", "2x30", "0:float64"] and table["wide"].endswith("…")
    assert table["pls"].split()[1:] == ["Series", "2", "a:Int64"] and table["n"].split()[1:] == ["int", "1"]
    one = _human_variable({"variable": describe("pls", pl.Series("a", [1, None]), NAMED_VALUE_CHARS)})
    assert one.startswith("pls: Series (2)\npolars Series: 2 rows\ncolumns (name: dtype, nulls):\n  a: Int64, 1 null\n")
    assert "\n--- repr:\nshape: (2,)" in one
