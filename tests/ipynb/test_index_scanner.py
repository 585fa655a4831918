"""The offset index's C-speed scanner builds the very index the token-by-token walk built.

The walk as it was is kept in ``tests/ipynb/nbwalk_reference.py``; every notebook
here is indexed both ways and the answers compared: the same spans, or the
same refusal (``Bail`` or ``TooDeep``). Shared fixtures, hostile layouts
and escapes, windows of a few bytes (every token cut somewhere), random
notebooks, and a 100 MB realistic one. Each is indexed by the scanner twice:
with the walk in C (``jcli_sidecar/ipynb/_nbwalk.c``, which must have been
built) and with the Python walk alone, as where no compiler built it.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import ExitStack
from unittest import mock

import nbwalk_reference
import pytest
from helpers import FIXTURES, REPO, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbwalk_reference import reference_build_index

from jcli_sidecar.base.boundedjson import MAX_DEPTH, Bail, TooDeep
from jcli_sidecar.ipynb import jsonscan
from jcli_sidecar.ipynb.nbindex import build_index

sys.path.insert(0, str(REPO / "bench"))
from realistic_notebook import write_notebook  # noqa: E402

NOTEBOOKS = sorted({*FIXTURES.rglob("*.ipynb"), *(REPO / "examples").rglob("*.ipynb")})


def outcome(build, path) -> object:
    """What ``build`` makes of the file: its key and every span, or the name of its refusal."""
    fd = os.open(path, os.O_RDONLY)
    try:
        info = os.fstat(fd)
        try:
            index = build(fd, info)
        except (Bail, TooDeep) as exc:
            return type(exc).__name__
        return index.key, [(c.start, c.end, c.outputs, c.items) for c in index.cells]
    finally:
        os.close(fd)


def windows(chunk: int | None) -> ExitStack:
    """Both builders reading ``chunk`` bytes at a time (None: as shipped)."""
    stack = ExitStack()
    if chunk is not None:
        stack.enter_context(mock.patch.object(jsonscan, "CHUNK", chunk))
        stack.enter_context(mock.patch.object(nbwalk_reference, "CHUNK", chunk))
        stack.enter_context(mock.patch.object(nbwalk_reference, "FAST_FIRST", chunk))
        stack.enter_context(mock.patch.object(nbwalk_reference, "FAST_MAX", 8 * chunk))
        stack.enter_context(mock.patch.object(jsonscan, "NATIVE_MAX", 8 * chunk))
    return stack


def assert_same(path, chunks=(None,)) -> object:
    """The scanner's outcome, with and without its C walk, equals the walk's at every window size."""
    assert jsonscan.native is not None, "the C walk (jcli_sidecar/ipynb/_nbwalk.c) was not built"
    for chunk in chunks:
        with windows(chunk):
            old = outcome(reference_build_index, path)
            new = outcome(build_index, path)
            with mock.patch.object(jsonscan, "native", None):
                python = outcome(build_index, path)
        assert new == old, f"{path} read {chunk or 'CHUNK'} bytes at a time, with the C walk"
        assert python == old, f"{path} read {chunk or 'CHUNK'} bytes at a time, with the Python walk"
    return new


def notebook(cells: list, **top) -> dict:
    return {"cells": cells, "metadata": top.pop("metadata", {}), "nbformat": 4, "nbformat_minor": 5, **top}


def code(outputs: list, source="x = 1\n", **extra) -> dict:
    return {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, "outputs": outputs, "source": source, **extra}


def stream(text) -> dict:
    return {"name": "stdout", "output_type": "stream", "text": text}


def nested(depth: int) -> object:
    value: object = "leaf"
    for level in range(depth):
        value = [value, level] if level % 2 else {"k": value, "n": level}
    return value


def display(data: dict) -> dict:
    return {"data": data, "metadata": {}, "output_type": "display_data"}


BIG_TEXT = "".join(f'line {i} "quoted" \\ back [{i % 7}] {{x}} é\n' for i in range(40_000))  # about 1.6 MB

HOSTILE = {
    "escaped quotes and backslash runs": notebook(
        [
            code(
                [stream(['a "b" c\n', "\\", '\\"', "\\\\", '\\\\"', "tail \\\\\\"]), stream("ends \\\\\\\\")],
                source=['print("\\"")\n', "# \\\\\n"],
                metadata={'k"ey': 'v\\"', "\\": "\\\\"},
            )
        ]
    ),
    "unicode escapes and raw utf-8": notebook(
        [code([display({"text/plain": ["été \u2603 \U0001f600", "\ud7ff"], "text/html": "<b>Ä</b>"})], source="s = 'ünï'")]
    ),
    "brackets and braces inside strings": notebook(
        [code([stream(["[", "]", "{", "}", '"]', "\n ]", "[[[{{{"]), display({"text/plain": "}]"})], source="']'")]
    ),
    "deep json output within the limit": notebook([code([display({"application/json": nested(MAX_DEPTH - 8)})])]),
    "deep json output over the limit": notebook([code([display({"application/json": nested(MAX_DEPTH + 4)})])]),
    "deep metadata over the limit": notebook([code([], metadata={"deep": nested(MAX_DEPTH)})]),
    "huge single-line string": notebook([code([display({"image/png": "iVBORw0KGgo" * 400_000, "text/plain": ["<Figure>"]})])]),
    "huge text with escapes": notebook([code([stream(BIG_TEXT)]), code([stream(BIG_TEXT.splitlines(keepends=True))])]),
    "keys in odd order": {
        "nbformat_minor": 4,
        "nbformat": 4,
        "metadata": {"z": 1},
        "cells": [
            {"outputs": [stream("a")], "source": "b", "metadata": {}, "execution_count": None, "cell_type": "code"},
            {"source": [], "cell_type": "markdown", "metadata": {}},
        ],
    },
    "scalars of every kind": notebook(
        [
            code(
                [
                    {
                        "output_type": "execute_result",
                        "execution_count": 3,
                        "metadata": {"a": -0.0, "b": 1e300, "c": True, "d": None},
                        "data": {},
                    }
                ]
            )
        ]
    ),
    "no outputs key and outputs not an array": notebook([{"cell_type": "raw", "metadata": {}, "source": ""}, code({"not": "an array"})]),
    "empty everything": notebook([code([]), code([{}]), {"cell_type": "markdown", "metadata": {}, "source": []}]),
    "many outputs": notebook([code([stream(f"{i}\n") for i in range(500)])]),
}


def layouts(doc: dict) -> dict[str, bytes]:
    """The same notebook laid out in ways people and programs write JSON."""
    nbformat_like = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    return {
        "nbformat": nbformat_like.encode(),
        "ascii escapes": json.dumps(doc, indent=1, ensure_ascii=True).encode(),
        "compact": json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode(),
        "tabs and crlf": json.dumps(doc, indent="\t", ensure_ascii=False).replace("\n", "\r\n").encode(),
        "wide spacing": json.dumps(doc, indent=" " * 150, separators=(" ,  ", "   :\t ")).encode(),
    }


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shared_notebook_gets_the_index_the_walk_built(path):
    assert_same(path, chunks=(None, 7, 64))


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_notebooks_get_the_index_the_walk_built_in_every_layout(tmp_path, name):
    for layout, raw in layouts(HOSTILE[name]).items():
        path = tmp_path / f"{layout}.ipynb"
        path.write_bytes(raw)
        got = assert_same(path, chunks=(None, 5, 300) if len(raw) < 50_000 else (None, 4096))
        if "over the limit" in name:
            assert got == "TooDeep", layout
        elif name != "no outputs key and outputs not an array":
            assert isinstance(got, tuple), (layout, got)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"cells": [{"outputs": [{"text": "unterminated}]}], "nbformat": 4}',
        b'{"cells": [{"outputs": [{"a": [1, 2}]}], "nbformat": 4}',
        b'{"cells": [{"outputs": [{"a": 1}]]}, "nbformat": 4}',
        b'{"cells": [{"outputs": [{"a" "b"}]}], "nbformat": 4}',
        b'{"cells": [{"outputs": [{"a": tr"ue}]}], "nbformat": 4}',
        b'{"cells": [{"outputs": [], "outputs": []}], "nbformat": 4}',
        b'{"cells": [{"out\\u0070uts": [{"a": 1}, 2]}], "nbformat": 4}',
        b'{"cells": [{"k\\x": 1}], "nbformat": 4}',
        b'{"cells": [{"\xff": 1}], "nbformat": 4}',
        b'{"cells": [{"a": 1 2}], "nbformat": 4}',
        b'{"cells": [{"a": [1,]}, {"b": {}}], "nbformat": 4}',
        b'{"cells": [], "nbformat": 4} trailing',
        b'{"cells": [], "nbformat": 3}',
        b'{"cells": [{"outputs": [[[[["deep"]]]], {"x": [[]]}]}], "nbformat": 4}',
        b'{"cells": [{"outputs": [{"a": [1, {"b": "]"}], "c": "\\\\"}]}], "nbformat": 4}',
        b'{"cells":[{"outputs":[{"a":"\\"","b":["\\\\","\\""]}]}],"nbformat":4}',
    ],
)
def test_odd_and_broken_json_is_refused_or_indexed_as_the_walk_did(tmp_path, raw):
    path = tmp_path / "odd.ipynb"
    path.write_bytes(raw)
    assert_same(path, chunks=(None, 1, 2, 3))


json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
lines = st.lists(st.text(alphabet=st.sampled_from('ab "\\\n[]{}é'), max_size=12), max_size=6)
output = st.one_of(
    st.builds(stream, st.one_of(lines, st.text(max_size=30))),
    st.builds(lambda v, t: display({"application/json": v, "text/plain": t}), json_value, lines),
    json_value,
)
cell = st.one_of(
    st.builds(
        lambda o, s, m: code(o, source=s, metadata=m),
        st.lists(output, max_size=4),
        lines,
        st.dictionaries(st.text(max_size=5), json_value, max_size=2),
    ),
    st.builds(lambda s: {"cell_type": "markdown", "metadata": {}, "source": s}, lines),
)


@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(cells=st.lists(cell, max_size=5), layout=st.sampled_from(["nbformat", "ascii escapes", "compact", "tabs and crlf", "wide spacing"]))
def test_random_notebooks_get_the_index_the_walk_built(tmp_path, cells, layout):
    path = tmp_path / "random.ipynb"
    path.write_bytes(layouts(notebook(cells))[layout])
    assert_same(path, chunks=(None, 3, 17))


def test_a_compact_nested_output_the_c_walk_hands_back_gets_the_index_the_walk_built(tmp_path):
    """A one-line GeoJSON of coordinate pairs, with strings that hold escapes and brackets, longer than the
    C walk's window at the smaller sizes: the Python walk passes it, the next cell is indexed as the walk did."""
    coords = [[i * 0.5, -i, f'p{i}\\]{{"q"' if i % 97 == 0 else i] for i in range(3000)]
    geo = {"type": "LineString", "coordinates": coords, "long": "x" * 700 + '\\"]' * 40}
    result = {"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"application/geo+json": geo}}
    doc = notebook([code([result], "g"), code([{"output_type": "stream", "name": "stdout", "text": "ok"}], "1")])
    path = tmp_path / "geo.ipynb"
    path.write_text(json.dumps(doc, separators=(",", ":")))
    got = assert_same(path, chunks=(None, 5, 300, 4096))
    assert isinstance(got, tuple) and len(got[1]) == 2


@pytest.mark.slow
def test_a_realistic_100_mb_notebook_gets_the_index_the_walk_built(tmp_path):
    path = tmp_path / "real.ipynb"
    cells = write_notebook(path, 100 << 20, with_ids=True)
    got = assert_same(path)
    assert isinstance(got, tuple) and len(got[1]) == cells


@pytest.mark.parametrize(
    ("raw", "pos", "limit", "end"),
    [
        (b'"abc" ,', 0, 5, 5),
        (rb'"a\\" ,', 0, 5, 5),  # an even run: the quote ends the string
        (rb'"a\\\"b" ,', 0, 5, 8),  # an odd run: it does not
        (b'"never closed', 0, 5, -1),
        (b'[1, "]", {"a": [2]}] tail', 0, 5, 20),
        (b"[[[1]]]", 0, 2, -2),  # deeper than the limit: the walk raises TooDeep
        (b"[[[1]]]", 0, 3, 7),
        (b"[1, 2", 0, 5, -1),  # runs past the buffer: a longer one may hold it
        (b"[1]]]", 1, 5, 2),
        (b"]", 0, 5, -2),  # closes more than it opens
        (b"true  ,", 0, 5, 4),
        (b" ,", 1, 5, -2),  # an empty scalar
        (b"12", 0, 5, -1),  # a number may go on
        (b"x", 5, 5, -1),  # past the buffer
    ],
)
def test_the_c_walk_stops_where_the_walk_does_or_says_why_not(raw, pos, limit, end):
    assert jsonscan.native.value_end(raw, pos, limit) == end


_SEED_NOTEBOOK = layouts(notebook([code([stream(['a "b" [c]\n', "d\\\n"]), display({"text/plain": ["{x}"]})]), code([], source=["y\n"])]))


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    layout=st.sampled_from(sorted(_SEED_NOTEBOOK)),
    edits=st.lists(
        st.tuples(
            st.floats(0, 1, exclude_max=True), st.sampled_from(["replace", "insert", "delete"]), st.sampled_from(list(b'"\\[]{},: \nx0'))
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_damaged_bytes_are_refused_or_indexed_as_the_walk_did(tmp_path, layout, edits):
    """Random damage (a quote, a backslash, a bracket put in, dropped or swapped anywhere): both walks still agree with the reference."""
    raw = bytearray(_SEED_NOTEBOOK[layout])
    for where, how, byte in edits:
        at = int(where * len(raw))
        if how == "replace":
            raw[at] = byte
        elif how == "insert":
            raw.insert(at, byte)
        else:
            del raw[at]
    path = tmp_path / "damaged.ipynb"
    path.write_bytes(bytes(raw))
    assert_same(path, chunks=(None, 3))
