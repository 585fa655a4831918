"""Both walks of the offset index do work linear in the file's size, whatever its nesting and layout.

Counted, never timed: each build's window records the bytes it read (``fetched``),
the bytes it handed to the C walk (``scanned``) and the steps of the Python walk
(``steps``). Windows are a few KiB here, so values many windows long stay cheap to
build: a compact GeoJSON, a long string of escapes, deep nests, text as lines.
With the C walk, a value of any length is passed in C, one window after another,
with no Python step; without it, the Python walk's steps grow with the brackets,
and four times the file is four times the work.
"""

from __future__ import annotations

import json
import os
from unittest import mock

import pytest

from jcli_sidecar.ipynb import jsonscan, nbindex
from jcli_sidecar.ipynb.nbindex import build_index

CHUNK = 4096


def _notebook(outputs: list, compact: bool = True) -> bytes:
    cells = [
        {"cell_type": "code", "execution_count": 1, "id": "a", "metadata": {}, "source": "g", "outputs": outputs},
        {
            "cell_type": "code",
            "execution_count": 2,
            "id": "b",
            "metadata": {},
            "source": "1",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "ok"}],
        },
    ]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(doc, separators=(",", ":")) if compact else json.dumps(doc, indent=1)).encode()


def _result(value) -> list:
    return [
        {
            "output_type": "execute_result",
            "execution_count": 1,
            "metadata": {},
            "data": {"application/geo+json": value, "text/plain": "<geo>"},
        }
    ]


def _geojson(n: int) -> list:
    coords = [[i * 0.001, -i * 0.002] for i in range(n)]
    return _result(
        {"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "LineString", "coordinates": coords}}]}
    )


def _deep(n: int) -> list:
    one: object = 1
    for level in range(60):
        one = [one] if level % 2 else {"k": one}
    return _result([one] * n)


SHAPES = {
    "compact GeoJSON": (lambda n: _notebook(_geojson(2500 * n)), True),
    "indented GeoJSON": (lambda n: _notebook(_geojson(600 * n), compact=False), True),
    "GeoJSON nested 100 deep": (lambda n: _notebook(_result(_nest(_geojson(2500 * n)[0]["data"], 100))), True),
    "a string of escapes": (lambda n: _notebook(_result('\\"q\\\\' * 5000 * n)), True),
    "deep nests repeated": (lambda n: _notebook(_deep(200 * n)), True),
    "text as lines, compact": (
        lambda n: _notebook([{"output_type": "stream", "name": "stdout", "text": [f"l{j}\n" for j in range(5000 * n)]}]),
        False,
    ),
}


def _nest(value, depth: int):
    for _ in range(depth):
        value = {"k": value}
    return value


class _Counted(jsonscan.JsonWindow):
    made: list[jsonscan.JsonWindow] = []

    def __init__(self, fd: int, size: int) -> None:
        super().__init__(fd, size)
        _Counted.made.append(self)


def _work(path, native) -> tuple[int, int, int]:
    """``(fetched, scanned, steps)`` of one build of the file at ``path``."""
    _Counted.made = []
    fd = os.open(path, os.O_RDONLY)
    try:
        with (
            mock.patch.object(jsonscan, "native", native),
            mock.patch.object(jsonscan, "CHUNK", CHUNK),
            mock.patch.object(jsonscan, "NATIVE_MAX", 4 * CHUNK),
            mock.patch.object(nbindex, "JsonWindow", _Counted),
        ):
            index = build_index(fd, os.fstat(fd))
    finally:
        os.close(fd)
    assert len(index.cells) == 2 and len(_Counted.made) == 1
    window = _Counted.made[0]
    return window.fetched, window.scanned, window.steps


@pytest.mark.parametrize("shape", SHAPES)
def test_the_c_walk_passes_a_value_of_any_size_in_one_pass_with_no_python_step(tmp_path, shape):
    assert jsonscan.native is not None, "the C walk (jcli_sidecar/ipynb/_nbwalk.c) was not built"
    make, _one_window_value = SHAPES[shape]
    for n in (1, 4):
        path = tmp_path / f"{n}.ipynb"
        path.write_bytes(make(n))
        size = path.stat().st_size
        assert size > 8 * CHUNK
        fetched, scanned, steps = _work(path, jsonscan.native)
        assert steps == 0, f"{shape} x{n}: the Python walk took {steps} steps"
        assert scanned <= 3 * size and fetched <= 3 * size, f"{shape} x{n}: {scanned} bytes scanned, {fetched} read of {size}"


@pytest.mark.parametrize("shape", SHAPES)
def test_the_python_walk_does_four_times_the_work_on_four_times_the_file(tmp_path, shape):
    make, _ = SHAPES[shape]
    work = {}
    for n in (1, 4):
        path = tmp_path / f"{n}.ipynb"
        path.write_bytes(make(n))
        fetched, _scanned, steps = _work(path, None)
        size = path.stat().st_size
        assert fetched <= 3 * size, f"{shape} x{n}: {fetched} bytes read of {size}"
        work[n] = (steps, size)
    (small, small_size), (big, big_size) = work[1], work[4]
    assert big <= 1.25 * small * big_size / small_size + 16, f"{shape}: {small} steps for {small_size} bytes, {big} for {big_size}"
