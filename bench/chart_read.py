"""Chart reads: the first ``--as image/png`` read of a Vega-Lite chart, and the cached second one, against a PNG read.

One small notebook (``bench/.work/charts.ipynb``) holds a PNG output (an
Altair-sized chart's PNG, about the same pixels) and :data:`SPECS` Vega-Lite
charts (the same bar chart with its data changed, so each is new content).
Every read is a whole ``j-cli -j notebook output`` process through this
script's own warm sidecar (which holds the rendered-image cache):

* first render  -- ``--as image/png`` on a chart never read before (one sample per chart);
* cached read   -- the same read again: the image comes from the cache, no render;
* PNG read      -- the stored PNG output, no conversion.

The cached reads and PNG reads are interleaved, round-robin. Target: the
cached read's median within 1.3x the PNG read's. Nothing asserts on the
numbers; the script exits non-zero only if a read fails or returns no PNG.
"""

from __future__ import annotations

import base64
import io
import json
import sys

import harness
import nbformat
from harness import J_CLI, WORK, BenchError, Sidecar, sidecar_runtime_dir, stop_and_clean, timed

SPECS = 5
ROUNDS = 15
TARGET = 1.3
NOTEBOOK = WORK / "charts.ipynb"


def _spec(i: int) -> dict:
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"values": [{"k": k, "v": (i * 7 + n * 3) % 11 + 1} for n, k in enumerate("ABCDEFGH")]},
        "mark": {"type": "bar", "color": "#4c78a8"},
        "encoding": {"x": {"field": "k", "type": "nominal"}, "y": {"field": "v", "type": "quantitative"}},
        "width": 400,
        "height": 300,
    }


def _png() -> str:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (460, 340), "white")
    draw = ImageDraw.Draw(image)
    for n in range(8):
        draw.rectangle([40 + n * 50, 300 - n * 30, 80 + n * 50, 300], fill=(76, 120, 168))
    out = io.BytesIO()
    image.save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def build() -> None:
    nb = nbformat.v4.new_notebook()
    png = nbformat.v4.new_code_cell("png")
    png.outputs = [nbformat.v4.new_output("display_data", data={"image/png": _png(), "text/plain": "<Figure>"})]
    charts = []
    for i in range(SPECS):
        cell = nbformat.v4.new_code_cell(f"chart {i}")
        cell.outputs = [
            nbformat.v4.new_output("display_data", data={"application/vnd.vegalite.v5+json": _spec(i), "text/plain": "alt.Chart(...)"})
        ]
        charts.append(cell)
    nb.cells = [png, *charts]
    WORK.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(NOTEBOOK))
    harness.make_old(NOTEBOOK)


def read(env: dict, cell: int, *extra: str) -> float:
    ms, r = timed(harness.run, [str(J_CLI), "-j", "notebook", "output", str(NOTEBOOK), "--cell", str(cell), "--output", "0", *extra], env)
    if r.returncode != 0:
        raise BenchError(harness.describe_failure(f"read of cell {cell} {' '.join(extra)}", r))
    selected = json.loads(r.stdout)["selected"]
    if selected["mime_type"] != "image/png" or not base64.b64decode(selected["data"]).startswith(b"\x89PNG"):
        raise BenchError(f"cell {cell} did not come back as a PNG")
    return ms


def main() -> int:
    build()
    kept = WORK / "runtime"
    runtime = sidecar_runtime_dir(kept)
    sidecar = Sidecar(runtime)
    try:
        sidecar.start()
        env = sidecar.env
        read(env, 0)  # the sidecar holds the notebook's index from here on
        first = [read(env, 1 + i, "--as", "image/png") for i in range(SPECS)]
        cached: list[float] = []
        plain: list[float] = []
        for n in range(ROUNDS):
            for name in harness.rotated(["cached", "png"], n):
                if name == "cached":
                    cached.append(read(env, 1 + n % SPECS, "--as", "image/png"))
                else:
                    plain.append(read(env, 0))
    except BenchError as exc:
        print(f"error: {exc}")
        return 1
    finally:
        stop_and_clean(sidecar, runtime, kept)
    width = 44
    print(harness.stats_header("chart read (whole j-cli process, warm sidecar)", width))
    print(harness.stats_row(f"first --as image/png (render, {SPECS} charts)", first, width, 1))
    print(harness.stats_row("second --as image/png (cached)", cached, width, 1))
    print(harness.stats_row("PNG read (stored image)", plain, width, 1))
    ratio = harness.medians({"c": cached})["c"] / harness.medians({"p": plain})["p"]
    print(f"cached chart read / PNG read: {ratio:.2f}x (target <= {TARGET}x: {harness.verdict(ratio, '<=', TARGET)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
