"""The offset index's two walks: linear in the file's size whatever its shape, and near reading the bytes.

A first read of a notebook builds its offset index (``jcli_sidecar.ipynb.nbindex.build_index``)
in one pass over the file. The pass walks each value in C (``_nbwalk.c``) where the package was
built with a compiler, and in Python otherwise, or wherever the C walk hands a value back. Both
walks must be linear in the file's size whatever its layout and nesting. Each shape is built at
a size and at four times that size, and each walk timed on both:

* ``realistic, nbformat layout`` / ``compact``: bench/realistic_notebook.py's mix (PNGs, logs,
  HTML tables), as Jupyter writes it and one cell per line, 6 and 24 MiB;
* ``text as lines``: 500 and 2,000 cells whose sources and outputs are many short lines;
* ``compact GeoJSON``: one output holding a one-line GeoJSON of 37,500 and 150,000 coordinate
  pairs (a small array repeated, which once cost the Python walk seconds per few megabytes).

Then the 20 MB case (:func:`big_geojson_lines`): a compact notebook whose first output is a GeoJSON
of 900,000 coordinate pairs, and the same notebook indented; its index build and a read of the next
cell's 3-byte output, each against reading the file's bytes, and the compact read against the indented.

``growth`` is the per-byte cost at four times the size over the per-byte cost at one: 1.0 is
linear, and the target is at most :data:`GROWTH_TARGET`. ``x bytes`` is the big build against
reading the same bytes (:func:`harness.read_bytes`, the page cache copied out), for scale: a
shape dense in structure (many short strings, numbers) must look at every byte, and reading
alone does not. Each figure is the best of :data:`REPEATS` builds, interleaved, in this one
process; nothing is asserted (each line says "meets target" or "misses target"). The notebooks
are written once into bench/.work.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from unittest import mock

from harness import WORK, read_bytes
from realistic_notebook import write_notebook

from jcli_sidecar.ipynb import jsonscan
from jcli_sidecar.ipynb.nbindex import build_index

REPEATS = 5
#: The most the per-byte cost may grow from one size to four times it (1.0: linear; a walk quadratic in the size gives 4).
GROWTH_TARGET = 2.0


def _geojson_notebook(path: Path, pairs: int, indent: int | None = None) -> None:
    """A notebook whose first output is a GeoJSON line of ``pairs`` coordinate pairs, then a cell whose output is 3 bytes."""
    coords = [[i * 0.001, -i * 0.002] for i in range(pairs)]
    geo = {"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "LineString", "coordinates": coords}}]}
    result = {
        "output_type": "execute_result",
        "execution_count": 1,
        "metadata": {},
        "data": {"application/geo+json": geo, "text/plain": "<geo>"},
    }
    cells = [
        {"cell_type": "code", "execution_count": 1, "id": "a", "metadata": {}, "source": "g", "outputs": [result]},
        {
            "cell_type": "code",
            "execution_count": 2,
            "id": "b",
            "metadata": {},
            "source": "1",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "ok\n"}],
        },
    ]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(doc, indent=indent) if indent else json.dumps(doc, separators=(",", ":")))


def _geojson(path: Path, scale: int) -> None:
    _geojson_notebook(path, 37_500 * scale)


def _big_geojson(path: Path, indent: int | None) -> None:
    """The 20 MB case: 900,000 coordinate pairs."""
    _geojson_notebook(path, 900_000, indent)


def big_geojson_lines(walks: dict) -> None:
    """The compact 20 MB GeoJSON against the same notebook indented, and each against reading its bytes.

    Two figures per layout, best of :data:`REPEATS`: the index build, and a whole in-process read of
    the next cell's 3-byte output (``read_output(path, 1, 0)``: index, then the output), each as a ratio
    to reading the file's bytes (the floor any reader that looks at every byte pays).
    """
    from jcli_sidecar.read.reader import read_output

    paths = {"compact": WORK / "walk_geo20_compact.ipynb", "indented": WORK / "walk_geo20_indented.ipynb"}
    for layout, path in paths.items():
        if not path.exists():
            _big_geojson(path, None if layout == "compact" else 1)
    print()
    print(f"{'20 MB GeoJSON':13s} {'MB':>5s}  {'walk':11s} {'bytes':>8s} {'index':>9s} {'x bytes':>8s} {'read next':>10s} {'x bytes':>8s}")
    best: dict = {}
    for _ in range(REPEATS):
        for layout, path in paths.items():
            start = time.perf_counter()
            read_bytes(path)
            best["floor", layout] = min(best.get(("floor", layout), float("inf")), time.perf_counter() - start)
            for walk, native in walks.items():
                with mock.patch.object(jsonscan, "native", native):
                    best["index", walk, layout] = min(best.get(("index", walk, layout), float("inf")), build_seconds(path))
                    start = time.perf_counter()
                    assert read_output(str(path), 1, 0)["stream"]["data"] == "ok\n"
                    best["read", walk, layout] = min(best.get(("read", walk, layout), float("inf")), time.perf_counter() - start)
    for walk in walks:
        for layout, path in paths.items():
            floor = best["floor", layout]
            index, read = best["index", walk, layout], best["read", walk, layout]
            print(
                f"{layout:13s} {path.stat().st_size / 1e6:5.1f}  {walk:11s} {floor * 1e3:6.1f}ms {index * 1e3:7.1f}ms "
                f"{index / floor:7.1f}x {read * 1e3:8.1f}ms {read / floor:7.1f}x"
            )
        compact, indented = best["read", walk, "compact"], best["read", walk, "indented"]
        print(f"{'':13s} {'':5s}  {walk:11s} compact read / indented read: {compact / indented:.2f}")


def _lines(path: Path, scale: int) -> None:
    cells = [
        {
            "cell_type": "code",
            "execution_count": i,
            "id": f"c{i}",
            "metadata": {},
            "source": [f"x = {i}\n"] * 20,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": [f"line {j}\n" for j in range(200)]}],
        }
        for i in range(500 * scale)
    ]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))


SHAPES = {
    "realistic, nbformat layout": lambda p, scale: write_notebook(p, (6 << 20) * scale, nbformat_layout=True),
    "realistic, compact": lambda p, scale: write_notebook(p, (6 << 20) * scale, nbformat_layout=False),
    "text as lines": _lines,
    "compact GeoJSON": _geojson,
}


def notebooks() -> dict[str, tuple[Path, Path]]:
    """Each shape's notebook at one size and at four times it, written once."""
    WORK.mkdir(parents=True, exist_ok=True)
    out = {}
    for i, (name, write) in enumerate(SHAPES.items()):
        pair = []
        for scale in (1, 4):
            path = WORK / f"walk_{i}_x{scale}.ipynb"
            if not path.exists():
                write(path, scale)
            pair.append(path)
        out[name] = (pair[0], pair[1])
    return out


def build_seconds(path: Path) -> float:
    fd = os.open(path, os.O_RDONLY)
    try:
        start = time.perf_counter()
        build_index(fd, os.fstat(fd))
        return time.perf_counter() - start
    finally:
        os.close(fd)


def main() -> int:
    walks = {"C walk": jsonscan.native, "Python walk": None}
    if jsonscan.native is None:
        print("the C walk was not built (no compiler at install): only the Python walk is timed")
        del walks["C walk"]
    print(f"{'notebook':27s} {'MB':>5s}  {'walk':11s} {'small':>8s} {'big':>9s} {'x bytes':>8s}  growth")
    for name, (small, big) in notebooks().items():
        best = {(walk, path): float("inf") for walk in walks for path in (small, big)}
        floor = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            read_bytes(big)
            floor = min(floor, time.perf_counter() - start)
            for walk, native in walks.items():
                with mock.patch.object(jsonscan, "native", native):
                    for path in (small, big):
                        best[walk, path] = min(best[walk, path], build_seconds(path))
        for walk in walks:
            per_byte_small = best[walk, small] / small.stat().st_size
            per_byte_big = best[walk, big] / big.stat().st_size
            growth = per_byte_big / per_byte_small
            verdict = "meets target" if growth <= GROWTH_TARGET else "misses target"
            print(
                f"{name:27s} {big.stat().st_size / 1e6:5.1f}  {walk:11s} {best[walk, small] * 1e3:6.1f}ms {best[walk, big] * 1e3:7.1f}ms "
                f"{best[walk, big] / floor:7.1f}x  {growth:.2f} (<= {GROWTH_TARGET:g}) {verdict}"
            )
    big_geojson_lines(walks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
