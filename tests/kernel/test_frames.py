"""DataFrames described by their schema, in a real ipykernel: ``vars``, ``exec`` and a notebook run.

One session of this module's own (a fresh kernel: the worker's may have
imported pandas already) first proves that ``vars`` and ``exec`` import
neither pandas nor polars where the user has not; then it holds frames of
every hard kind: wide, long, MultiIndex, categorical, tz-aware, huge
strings, one that raises when described, and polars frames and series.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from helpers import run_cli

from jcli_sidecar.kernel.frame_view import FRAME_CHARS
from jcli_sidecar.kernel.kernel_vars import NAMED_VALUE_CHARS, VALUE_CHARS

#: Run before any frame exists: neither library may be imported by j-cli.
LOADED = "import sys as _s; ('pandas' in _s.modules, 'polars' in _s.modules)"

NAMESPACE = """
import numpy as np
import pandas as pd
import polars as pl
sales = pd.DataFrame({
    "store": pd.Categorical(["north", "south"] * 6),
    "day": pd.date_range("2024-03-01", periods=12, tz="UTC"),
    "amount": [None, 2.5] * 6,
}).set_index(["store", "day"])
wide = pd.DataFrame(np.zeros((3, 10_000)))
long = pd.DataFrame({"n": np.arange(10_000_000)})
huge = pd.DataFrame({"text": pd.Series(["z" * 5_000_000, "short"], dtype=object)})
class Hostile(pd.DataFrame):  # shows itself, but raises when described
    @property
    def iloc(self):
        raise RuntimeError("no iloc")
hostile = Hostile({"a": [1]})
plf = pl.DataFrame({"a": [1, None, 3], "s": ["x" * 10_000, "y", None]})
pls = plf.get_column("a")
"""
FRAMES = ["sales", "wide", "long", "huge", "hostile", "plf", "pls"]

#: The names a check cell may add: the history's own (_iN, _N) and the snapshot.
_HISTORY = re.compile(r"_i?\d+|snap")


@pytest.fixture(scope="module")
def frames(jupyter, tmp_path_factory):
    """``(session, env, loaded)``: a fresh session holding :data:`NAMESPACE`; ``loaded`` is :data:`LOADED` asked first."""
    env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": jupyter["url"], "JCLI_JUPYTER_SERVER_TOKEN": jupyter["token"]}
    here = tmp_path_factory.mktemp("frames-ws")
    name = f"frames-{os.urandom(3).hex()}"
    created = run_cli("-j", "session", "create", "-n", name, cwd=here, env=env)
    assert created.returncode == 0, created.stderr
    try:
        # vars and exec (a result, a listing, one variable) before the user imports anything
        for args in (["exec", name, "-c", "x = [1, 2]\nx"], ["vars", name], ["vars", name, "-n", "x", "--rich"]):
            assert run_cli("-j", *args, cwd=here, env=env).returncode == 0
        loaded = run_cli("-j", "exec", name, "-c", LOADED, cwd=here, env=env).json()["text"]
        ran = run_cli("-j", "exec", name, "-c", NAMESPACE, cwd=here, env=env)
        assert ran.returncode == 0 and ran.json()["status"] == "ok", ran.stdout
        yield name, env, loaded
    finally:
        run_cli("session", "kill", name, cwd=here, env=env)


@pytest.fixture
def jcli(frames, tmp_path):
    session, env, _ = frames

    def call(*args, cwd=tmp_path):
        return run_cli(*args, cwd=cwd, env=env)

    return call


def test_neither_library_is_imported_by_j_cli(frames):
    assert frames[2] == "(False, False)\n"


def test_the_listing_describes_each_frame_by_its_dtypes_within_the_value_budget(frames, jcli):
    result = jcli("-j", "vars", frames[0])
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in result.json()["variables"]}
    for name in FRAMES:
        frame = rows[name]["frame"]
        assert len(json.dumps(frame)) <= VALUE_CHARS and "head" not in frame, name
    assert rows["sales"]["frame"]["columns"] == [{"name": "amount", "dtype": "float64"}]
    assert rows["wide"]["frame"]["columns_total"] == 10_000 and rows["long"]["frame"]["rows"] == 10_000_000
    assert rows["hostile"]["frame"]["error"] == "RuntimeError while describing it"
    assert rows["plf"]["frame"]["columns"] == [{"name": "a", "dtype": "Int64"}, {"name": "s", "dtype": "String"}]
    assert rows["pls"]["frame"]["kind"] == "Series" and all("frame" not in rows[n] for n in rows if n not in FRAMES)
    assert len(result.stdout) < 8000
    human = jcli("vars", frames[0]).stdout.decode()
    table = dict(line.split(None, 1) for line in human.splitlines()[1 : 1 + len(rows)])
    assert table["plf"].split() == ["DataFrame", "3x2", "a:Int64", "s:String"]
    assert table["wide"].split()[:3] == ["DataFrame", "3x10000", "0:float64"] and table["wide"].rstrip().endswith("…")


def test_one_frame_by_name_has_nulls_index_head_and_tail_within_the_named_budget(frames, jcli):
    views = {}
    for name in FRAMES:
        result = jcli("-j", "vars", frames[0], "--name", name)
        assert result.returncode == 0, result.stderr
        views[name] = result.json()["variable"]["frame"]
        assert len(json.dumps(views[name])) <= NAMED_VALUE_CHARS, name
    sales = views["sales"]
    assert sales["columns"] == [{"name": "amount", "dtype": "float64", "nulls": 6}]
    assert sales["index"] == {"type": "MultiIndex", "names": ["store", "day"], "dtypes": ["category", "datetime64[us, UTC]"]}
    assert sales["head"][0] == ["(north, 2024-03-01 00:00:00+00:00)", "nan"] and len(sales["tail"]) == 5
    assert views["long"]["columns"] == [{"name": "n", "dtype": "int64", "nulls": 0}] and views["long"]["tail"][-1] == ["9999999", "9999999"]
    assert views["wide"]["columns_total"] == 10_000 and len(views["wide"]["columns"]) <= 50
    assert max(len(cell) for row in views["huge"]["head"] for cell in row) <= 40
    assert views["plf"]["columns"][0] == {"name": "a", "dtype": "Int64", "nulls": 1} and "index" not in views["plf"]
    assert views["pls"]["head"] == [["1"], ["None"], ["3"]]
    human = jcli("vars", frames[0], "-n", "sales").stdout.decode()
    assert human.startswith("sales: DataFrame (12x1)\npandas DataFrame: 12 rows x 1 column\nindex: MultiIndex (store: category")
    assert "  amount: float64, 6 nulls" in human and "--- repr:" in human


@pytest.mark.transport
def test_a_cell_whose_result_is_a_frame_carries_its_description_beside_its_text(frames, jcli, exec_path, tmp_path):
    exec_path(tmp_path)  # in-process, then through a sidecar: the description crosses its socket
    session = frames[0]
    doc = jcli("-j", "exec", session, "-c", "sales").json()
    item = next(i for i in doc["outputs"] if "frame" in i)
    assert item["frame"].startswith("pandas DataFrame: 12 rows x 1 column\nindex: MultiIndex (store: category, day: datetime64[us, UTC])")
    assert "amount: float64, 6 nulls" in item["frame"] and len(item["frame"]) <= FRAME_CHARS
    kernel_text = jcli("-j", "exec", session, "-c", "print(repr(sales))").json()["text"]
    assert doc["text"] == kernel_text  # text/plain as the kernel gave it
    polars = jcli("-j", "exec", session, "-c", "plf").json()
    assert [i["frame"].splitlines()[0] for i in polars["outputs"] if "frame" in i] == ["polars DataFrame: 3 rows x 2 columns"]
    for code in ("1 + 1", "sales;", "display(sales)", "x = sales", "[sales]", "hostile.shape"):
        other = jcli("-j", "exec", session, "-c", code).json()
        assert all("frame" not in i for i in other["outputs"]), code
    hostile = jcli("-j", "exec", session, "-c", "hostile")  # a frame that raises when described: the run is as it was
    assert hostile.returncode == 0 and hostile.json()["text"] == "   a\n0  1\n"
    assert [i["frame"] for i in hostile.json()["outputs"] if "frame" in i] == [
        "pandas DataFrame: not described (RuntimeError while describing it)"
    ]


def test_describing_leaves_no_trace_in_the_kernel(frames, jcli):
    session = frames[0]
    jcli("-j", "exec", session, "-c", "snap = set(globals())")
    try:
        for args in (["exec", session, "-c", "long"], ["exec", session, "-c", "plf"], ["vars", session], ["vars", session, "-n", "huge"]):
            assert jcli("-j", *args).returncode == 0
        check = "sorted(k for k in set(globals()) - snap if not __import__('re').fullmatch(r'_i?\\d+|snap|_+|_i+', k))"
        assert jcli("-j", "exec", session, "-c", check).json()["text"] == "[]\n"
        assert jcli("-j", "exec", session, "-c", "_ is Out[max(Out)]").json()["text"] == "True\n"
    finally:
        jcli("-j", "exec", session, "-c", "del snap")


def test_a_notebook_run_describes_the_frame_a_cell_returns_and_saves_only_the_kernels_outputs(frames, jcli, tmp_path):
    cells = [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
        for i, source in enumerate(["plf", "1 + 1", "sales['amount']"])
    ]
    path = tmp_path / "frames.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = jcli("-j", "exec", frames[0], "--file", str(path))
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.decode().splitlines()]
    described = [[i.get("frame", "").split("\n")[0] for i in line.get("outputs", [])] for line in lines if "cell_index" in line]
    assert described == [["polars DataFrame: 3 rows x 2 columns"], [""], ["pandas Series: 12 rows"]]
    saved = json.loads(path.read_text())
    assert [sorted(out["data"]) for cell in saved["cells"] for out in cell["outputs"]] == [
        ["text/html", "text/plain"],
        ["text/plain"],
        ["text/plain"],
    ]
    assert all(set(out) == {"output_type", "data", "metadata", "execution_count"} for cell in saved["cells"] for out in cell["outputs"])
