"""View-time image conversion: host profiles, fitting and SVG rendering.

The stored notebook or run is never changed: a selected image is converted
in memory, for one answer, only when asked (``--host``, ``--max-edge``,
``--max-pixels``, ``--max-bytes``, ``--as``). An image already within the
limits comes back byte-identical and no child process starts. Otherwise the
work runs in a child process (:mod:`jcli_sidecar.read.imagework`) that caps its
own address space, CPU time and file writes before it touches the data, and
is killed at a deadline; the parent checks pixel counts from the headers
first. A failure is a coded error, never a blank image.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

from ..base import ImageTooLarge, RendererUnavailable, RenderFailed, UsageError, error_from_code
from . import image_headers
from .host_profiles import HOST_PROFILES, MiB
from .mime import RASTER_IMAGE_TYPES
from .request_spec import AS_MIME_TYPES as _OUTPUT_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CAPS",
    "HOST_PROFILES",
    "SVG_INSTALL_HINT",
    "ViewSpec",
    "render_svg",
    "view_image",
    "view_note",
    "view_spec",
    "worker_command",
]


class _Caps:
    """Hard caps on every conversion, whatever the request says."""

    #: Largest image decoded at all (width x height, read from the header first).
    decode_pixels = 50_000_000
    #: The child's address-space limit (RLIMIT_AS).
    child_memory_bytes = 2048 * MiB
    #: The child is killed after this long.
    child_seconds = 20.0
    #: SVG source larger than this is refused unparsed.
    svg_bytes = 8 * MiB
    #: Deepest SVG element nesting accepted.
    svg_depth = 100
    #: Most SVG elements accepted.
    svg_elements = 200_000
    #: Long edge of a rendered SVG when no host or limit is given.
    svg_default_edge = 2048
    #: Downscale rounds tried to meet a byte limit before giving up.
    fit_rounds = 8


CAPS = _Caps()

SVG_INSTALL_HINT = "install the SVG extra: pip install 'j-cli[svg]'"


class ViewSpec:
    """How one selected image should be returned.

    ``types`` are the accepted image types (all raster types without a
    host); the three limits are None when nothing limits them.
    """

    __slots__ = ("host", "as_mime_type", "types", "max_edge", "max_pixels", "max_bytes")

    def __init__(self, host=None, as_mime_type=None, types=RASTER_IMAGE_TYPES, max_edge=None, max_pixels=None, max_bytes=None):
        self.host = host
        self.as_mime_type = as_mime_type
        self.types = types
        self.max_edge = max_edge
        self.max_pixels = max_pixels
        self.max_bytes = max_bytes

    def limits(self) -> dict[str, int]:
        return {
            k: v for k, v in (("max_edge", self.max_edge), ("max_pixels", self.max_pixels), ("max_bytes", self.max_bytes)) if v is not None
        }


def view_spec(
    host: Any = None, as_mime_type: Any = None, max_edge: Any = None, max_pixels: Any = None, max_bytes: Any = None
) -> ViewSpec | None:
    """The view asked for, or None when the stored bytes are wanted as they are.

    Explicit limits override the host profile's.

    Raises:
        UsageError: an unknown host, an unsupported ``as`` type, or a limit below 1.
    """
    if host is None and as_mime_type is None and max_edge is None and max_pixels is None and max_bytes is None:
        return None
    profile = None
    if host is not None:
        profile = HOST_PROFILES.get(host)
        if profile is None:
            raise UsageError(f"unknown host {host!r} (known: {', '.join(HOST_PROFILES)})")
    if as_mime_type is not None and as_mime_type not in _OUTPUT_TYPES:
        raise UsageError(f"--as takes {', '.join(_OUTPUT_TYPES)}, got {as_mime_type!r}")
    if profile is not None and as_mime_type is not None and as_mime_type not in profile.types:
        raise UsageError(f"{host} does not take {as_mime_type}")
    for name, value in (("max_edge", max_edge), ("max_pixels", max_pixels), ("max_bytes", max_bytes)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise UsageError(f"{name} must be an integer >= 1, got {value!r}")
    return ViewSpec(
        host=host,
        as_mime_type=as_mime_type,
        types=profile.types if profile else RASTER_IMAGE_TYPES,
        max_edge=max_edge if max_edge is not None else (profile.max_edge if profile else None),
        max_pixels=max_pixels if max_pixels is not None else (profile.max_pixels if profile else None),
        max_bytes=max_bytes if max_bytes is not None else (profile.max_bytes if profile else None),
    )


def _within(spec: ViewSpec, size: tuple[int, int] | None, nbytes: int) -> bool:
    if size is None:
        return False
    width, height = size
    if spec.max_edge is not None and max(width, height) > spec.max_edge:
        return False
    if spec.max_pixels is not None and width * height > spec.max_pixels:
        return False
    return spec.max_bytes is None or nbytes <= spec.max_bytes


def view_image(mime: str, data: bytes, spec: ViewSpec) -> tuple[str, bytes, dict[str, Any]]:
    """``(mime, bytes, facts)`` of a raster image as ``spec`` wants it.

    ``facts`` is empty when the stored bytes are returned; when the image
    was changed, ``original{mime_type, bytes, width, height}`` and
    ``fitted_to`` (the limits), plus ``animated`` and ``first_frame_only``
    for an animation cut to one frame.

    Raises:
        ImageTooLarge, RenderFailed.
    """
    size = image_headers.image_size(mime, data)
    target = spec.as_mime_type or (mime if mime in spec.types else "image/png")
    if target == mime and _within(spec, size, len(data)):
        return mime, data, {}  # byte-identical
    if size is not None and size[0] * size[1] > CAPS.decode_pixels:
        raise ImageTooLarge(
            f"the {mime} is {size[0]}x{size[1]} px, over the {CAPS.decode_pixels}-pixel cap for conversion",
            width=size[0],
            height=size[1],
        )
    done = _run_child({"op": "fit", "mime": mime, "data": data, "target": target, **_limits(spec)})
    facts: dict[str, Any] = {
        "original": {"mime_type": mime, "bytes": len(data), "width": done["original_width"], "height": done["original_height"]},
        "fitted_to": spec.limits(),
    }
    if done.get("first_frame_only"):
        facts.update(animated=True, first_frame_only=True)  # the stored image is animated; this view is not
    return done["mime"], done["data"], facts


def render_svg(svg: str, spec: ViewSpec) -> tuple[str, bytes, dict[str, Any]]:
    """Rasterize SVG source in memory: ``(mime, bytes, facts)``.

    Raises:
        RendererUnavailable: the ``[svg]`` extra is not installed.
        ImageTooLarge, RenderFailed.
    """
    import importlib.util

    if importlib.util.find_spec("pyvips") is None:
        raise RendererUnavailable(f"rendering SVG needs the optional renderer; {SVG_INSTALL_HINT}")
    source = svg.encode("utf-8")
    if len(source) > CAPS.svg_bytes:
        raise ImageTooLarge(f"the SVG is {len(source)} bytes, over the {CAPS.svg_bytes}-byte cap for rendering")
    target = spec.as_mime_type or "image/png"
    limits = _limits(spec)
    limits.setdefault("max_edge", CAPS.svg_default_edge)
    done = _run_child({"op": "svg", "data": source, "target": target, **limits})
    facts = {
        "converted_from": "image/svg+xml",
        "original": {
            "mime_type": "image/svg+xml",
            "bytes": len(source),
            "width": done["original_width"],
            "height": done["original_height"],
        },
        "fitted_to": {k: v for k, v in limits.items() if k != "decode_pixels"},
    }
    return done["mime"], done["data"], facts


def view_note(facts: dict[str, Any]) -> str | None:
    """One line saying what was done to the stored image for this view (no data).

    Example:
        >>> view_note({"original": {"mime_type": "image/png", "bytes": 9, "width": 60, "height": 40}})
        'fitted from 60x40 px image/png, 9 bytes'
    """
    parts = []
    original = facts.get("original")
    if facts.get("converted_from"):
        parts.append(f"rendered from {facts['converted_from']}, {original['bytes']} bytes")
    elif original:
        parts.append(f"fitted from {original['width']}x{original['height']} px {original['mime_type']}, {original['bytes']} bytes")
    if facts.get("first_frame_only"):
        parts.append("first frame of an animation")
    return "; ".join(parts) or None


def _limits(spec: ViewSpec) -> dict[str, int]:
    limits = spec.limits()
    limits["decode_pixels"] = CAPS.decode_pixels
    return limits


def worker_command() -> list[str]:
    """The image worker's command line: this interpreter, the worker module, and the caps it puts on itself."""
    return [sys.executable, "-B", "-m", "jcli_sidecar.read.imagework", str(CAPS.child_memory_bytes), str(math.ceil(CAPS.child_seconds))]


def _run_child(request: dict[str, Any]) -> dict[str, Any]:
    import msgpack

    env = dict(os.environ, VIPS_CONCURRENCY="1", OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            worker_command(),
            input=msgpack.packb(request, use_bin_type=True),
            capture_output=True,
            timeout=CAPS.child_seconds,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RenderFailed(f"the image work took longer than {CAPS.child_seconds:g} s and was killed") from None
    try:
        answer = msgpack.unpackb(proc.stdout, raw=False)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
        answer = None
    if not isinstance(answer, dict) or "ok" not in answer:
        how = f"was killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exited with {proc.returncode}"
        raise RenderFailed(f"the image worker {how} (memory cap {CAPS.child_memory_bytes // MiB} MiB) before answering")
    if not answer["ok"]:
        message = answer.get("message", "")
        if answer.get("code") == RendererUnavailable.code:
            message = f"{message}; {SVG_INSTALL_HINT}"
        raise error_from_code(answer.get("code", RenderFailed.code), message)
    return answer
