"""The image worker: one fit or one SVG render, in a child process.

Run as ``python -B -m jcli_sidecar.read.imagework MEMORY_BYTES CPU_SECONDS`` with
one msgpack request on stdin; one msgpack answer goes to stdout. Before it
reads the request it caps its own address space (``RLIMIT_AS``), CPU time
(``RLIMIT_CPU``) and file writes (``RLIMIT_FSIZE`` = 0: nothing may be
written to any file, so no intermediate file can exist). The parent kills it
at a deadline too.

Requests: ``{op: "fit", mime, data, target, max_edge?, max_pixels?,
max_bytes?, decode_pixels}`` and ``{op: "svg", data, target, ...limits}``.
Answers: ``{ok: true, mime, data, width, height, original_width,
original_height, first_frame_only?}`` or ``{ok: false, code, message}``,
the code being one of :mod:`jcli_sidecar.base.errors`; messages never carry
payload data.
"""

from __future__ import annotations

import io
import math
import re
import resource
import sys

from ..base import ImageTooLarge, JcliError, RendererUnavailable, RenderFailed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["OPS", "main"]

_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}")


def _cap_self(memory_bytes: int, cpu_seconds: int) -> None:
    """Cap this process's memory, CPU time and file writes.

    macOS refuses an address-space cap (``EINVAL``, which Python raises as
    ``ValueError``) and would not enforce one: there the work goes on under
    the CPU and file caps, and the pixel caps bound what is decoded.
    """
    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ValueError, OSError):  # the system takes no address-space cap (macOS): the other caps still hold
        pass
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def _scale(width: int, height: int, req: dict[str, Any]) -> float:
    scale = 1.0
    if req.get("max_edge"):
        scale = min(scale, req["max_edge"] / max(width, height))
    if req.get("max_pixels"):
        scale = min(scale, math.sqrt(req["max_pixels"] / (width * height)))
    return scale


def _open(data: bytes, decode_pixels: int):
    import warnings

    from PIL import Image

    Image.MAX_IMAGE_PIXELS = decode_pixels
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            im = Image.open(io.BytesIO(data))  # the header only; pixels are not decoded yet
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise ImageTooLarge(f"the image is over the {decode_pixels}-pixel cap for conversion") from None
    width, height = im.size
    if width < 1 or height < 1 or width * height > decode_pixels:
        raise ImageTooLarge(f"the image is {width}x{height} px, over the {decode_pixels}-pixel cap for conversion")
    return im


def _encode(frame, target: str, quality: int) -> bytes:
    out = io.BytesIO()
    if target == "image/jpeg":
        if frame.mode not in ("RGB", "L"):
            from PIL import Image

            rgba = frame.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            frame = flat
        frame.save(out, "JPEG", quality=quality, optimize=True)
    elif target == "image/webp":
        frame.save(out, "WEBP", quality=quality)
    elif target == "image/gif":
        frame.save(out, "GIF", optimize=True)
    else:
        frame.save(out, "PNG", compress_level=6)
    return out.getvalue()


def _fit_pixels(im, target: str, req: dict[str, Any]) -> dict[str, Any]:
    """Downscale (and re-encode) an opened image to the request's limits."""
    from PIL import Image

    width, height = im.size
    first_frame_only = bool(getattr(im, "is_animated", False))
    scale = _scale(width, height, req)
    size = (max(1, int(width * scale + 1e-6)), max(1, int(height * scale + 1e-6)))
    if im.format == "JPEG" and scale < 1:
        im.draft("RGB", size)  # decode at a reduced scale: less memory, less time
    if first_frame_only:
        im.seek(0)
    frame = im.convert("RGBA") if im.mode in ("P", "PA", "LA", "I;16", "I", "F", "CMYK", "YCbCr", "1") else im.copy()
    quality = 90
    from .imageview import CAPS

    for _ in range(CAPS.fit_rounds):
        shown = frame.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0) if size != frame.size else frame
        data = _encode(shown, target, quality)
        if not req.get("max_bytes") or len(data) <= req["max_bytes"]:
            return {
                "mime": target,
                "data": data,
                "width": shown.size[0],
                "height": shown.size[1],
                "original_width": width,
                "original_height": height,
                "first_frame_only": first_frame_only,
            }
        if target in ("image/jpeg", "image/webp") and quality > 50:
            quality -= 20
        else:
            size = (max(1, int(size[0] * 0.75)), max(1, int(size[1] * 0.75)))
    raise ImageTooLarge(f"the image does not fit in {req['max_bytes']} bytes as {target}")


def fit(req: dict[str, Any]) -> dict[str, Any]:
    im = _open(req["data"], req["decode_pixels"])
    return _fit_pixels(im, req["target"], req)


def render_svg(req: dict[str, Any]) -> dict[str, Any]:
    from .svgcheck import check_svg

    check_svg(req["data"], req["decode_pixels"])
    try:
        import pyvips
    except (ImportError, OSError):
        raise RendererUnavailable("the SVG renderer (pyvips with libvips) cannot be loaded") from None
    # Only the SVG-from-memory loader may run: no other loader, no files.
    pyvips.operation_block_set("VipsForeignLoad", True)
    pyvips.operation_block_set("VipsForeignLoadSvgBuffer", False)
    try:
        head = pyvips.Image.svgload_buffer(req["data"])  # reads the size only
        width, height = head.width, head.height
        if width < 1 or height < 1:
            raise RenderFailed("the SVG has no drawable size")
        scale = _scale(width, height, req)
        if width * height * scale * scale > req["decode_pixels"]:
            raise ImageTooLarge("the rendered SVG would be over the pixel cap")
        png = pyvips.Image.svgload_buffer(req["data"], scale=scale).write_to_buffer(".png")
    except pyvips.Error as exc:
        raise RenderFailed(f"the SVG cannot be rendered: {_short(exc)}") from None
    from PIL import Image

    im = Image.open(io.BytesIO(png))
    done = _fit_pixels(im, req["target"], {"max_bytes": req.get("max_bytes")})
    done["original_width"], done["original_height"] = width, height
    return done


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return _BASE64_RUN.sub("[data]", text)[:200]


OPS = {"fit": fit, "svg": render_svg}


def main() -> int:
    import msgpack

    _cap_self(int(sys.argv[1]), int(sys.argv[2]))
    try:
        req = msgpack.unpackb(sys.stdin.buffer.read(), raw=False)
        answer = {"ok": True, **OPS[req["op"]](req)}
    except JcliError as err:
        answer = {"ok": False, "code": err.code, "message": err.message}
    except MemoryError:
        answer = {"ok": False, "code": RenderFailed.code, "message": "the image work reached its memory cap"}
    except Exception as exc:  # any decoder failure is a coded answer, never a traceback
        answer = {"ok": False, "code": RenderFailed.code, "message": f"the image cannot be converted ({type(exc).__name__}: {_short(exc)})"}
    sys.stdout.buffer.write(msgpack.packb(answer, use_bin_type=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
