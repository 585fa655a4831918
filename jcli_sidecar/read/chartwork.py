"""The chart worker: one Vega, Vega-Lite or Plotly render, in a child process.

Run as ``python -B -m jcli_sidecar.read.chartwork CPU_SECONDS`` with one
msgpack request on stdin; one msgpack answer goes to stdout, shaped as the
image worker's (:mod:`jcli_sidecar.read.imagework`). The parent checked the
spec first (its size, no remote data: :mod:`jcli_sidecar.read.charts`) and
ends this process, and every process it started, at a deadline.

Unlike the image worker it sets no address-space cap: vl-convert's V8 and
Chromium reserve far more address space than they use (V8 does not start
under about 128 GiB), so the memory is bounded by the size of the spec the
parent lets through and the pixels the render may make. It caps its CPU
time; a Vega render also writes no file (``RLIMIT_FSIZE`` = 0), while a
Plotly render needs Chromium's profile and page in a temporary directory.

Requests: ``{op: "vegalite" | "vega" | "plotly", spec: JSON bytes, version?,
target, max_edge?, max_pixels?, max_bytes?, decode_pixels, browser?,
plotly_js?}``.
"""

from __future__ import annotations

import io
import re
import resource
import sys

from ..base import ImageTooLarge, JcliError, RemoteDataRefused, RenderFailed
from .imagework import _fit_pixels, _scale, _short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

#: A Plotly figure with no size of its own is drawn at plotly.js's default.
PLOTLY_DEFAULT_SIZE = (700, 500)

_SVG_SIZE = re.compile(rb"<svg\b[^>]*?\bwidth=\"([0-9.]+)\"[^>]*?\bheight=\"([0-9.]+)\"")


def _fitted_scale(width: float, height: float, req: dict[str, Any]) -> float:
    if width < 1 or height < 1:
        raise RenderFailed("the chart has no drawable size")
    scale = _scale(int(width), int(height), req)
    if width * height * scale * scale > req["decode_pixels"]:
        scale = (req["decode_pixels"] / (width * height)) ** 0.5
    return scale


def _done(png: bytes, req: dict[str, Any], width: float, height: float) -> dict[str, Any]:
    from PIL import Image

    im = Image.open(io.BytesIO(png))
    done = _fit_pixels(im, req["target"], {k: req.get(k) for k in ("max_edge", "max_pixels", "max_bytes")})
    done["original_width"], done["original_height"] = round(width), round(height)
    return done


def render_vega(req: dict[str, Any]) -> dict[str, Any]:
    """Vega-Lite or Vega: to SVG (its size known), then to pixels at the scale the limits allow."""
    import json

    import vl_convert

    spec = json.loads(req["spec"])
    try:
        if req["op"] == "vegalite":
            svg = vl_convert.vegalite_to_svg(spec, vl_version=req.get("version"), allowed_base_urls=[])
        else:
            svg = vl_convert.vega_to_svg(spec, allowed_base_urls=[])
    except ValueError as exc:
        raise RenderFailed(f"the chart cannot be rendered: {_short(exc)}") from None
    if "<image" in svg:  # resvg would load what an image element names: only inline data is drawn
        raise RemoteDataRefused("the rendered chart holds an image element; only inline data is rendered (nothing is loaded)")
    head = _SVG_SIZE.search(svg.encode("utf-8")[:4096])
    if head is None:
        raise RenderFailed("the rendered chart has no size")
    width, height = float(head.group(1)), float(head.group(2))
    png = vl_convert.svg_to_png(svg, scale=_fitted_scale(width, height, req))
    return _done(png, req, width, height)


def render_plotly(req: dict[str, Any]) -> dict[str, Any]:
    """A Plotly figure through kaleido, with the Chromium and plotly.js the parent found (none is downloaded)."""
    import json

    import kaleido
    import logistro

    logistro.betterConfig(level=logistro.logging.CRITICAL)  # kaleido's log lines are not an answer
    figure = json.loads(req["spec"])
    layout = figure.get("layout") if isinstance(figure.get("layout"), dict) else {}
    width, height = (
        layout.get(name) if isinstance(layout.get(name), (int, float)) else default
        for name, default in zip(("width", "height"), PLOTLY_DEFAULT_SIZE, strict=True)
    )
    scale = _fitted_scale(width, height, req)
    page = kaleido.PageGenerator(plotly=req["plotly_js"], mathjax=False)
    png = kaleido.calc_fig_sync(
        figure,
        opts={"format": "png", "width": width, "height": height, "scale": scale},
        kopts={"path": req["browser"], "page_generator": page},
    )
    return _done(png, req, width, height)


OPS = {"vegalite": render_vega, "vega": render_vega, "plotly": render_plotly}


def main() -> int:
    import os

    import msgpack

    answer_to = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a renderer prints goes to stderr: stdout carries the answer only
    seconds = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    try:
        req = msgpack.unpackb(sys.stdin.buffer.read(), raw=False)
        if req["op"] != "plotly":
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        answer = {"ok": True, **OPS[req["op"]](req)}
    except JcliError as err:
        answer = {"ok": False, "code": err.code, "message": err.message}
    except MemoryError:
        answer = {"ok": False, "code": ImageTooLarge.code, "message": "the chart render ran out of memory"}
    except Exception as exc:  # any renderer failure is a coded answer, never a traceback
        answer = {"ok": False, "code": RenderFailed.code, "message": f"the chart cannot be rendered ({type(exc).__name__}: {_short(exc)})"}
    answer_to.write(msgpack.packb(answer, use_bin_type=True))
    answer_to.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
