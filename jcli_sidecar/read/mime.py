"""MIME rules: the automatic order, what kind each MIME is, image checks.

Defined once here and imported by every reader and client.
"""

from __future__ import annotations

import binascii
import re

from ..base import OutputDataInvalid

__all__ = [
    "AUTO_ORDER",
    "RASTER_IMAGE_TYPES",
    "RENDER_HINT",
    "auto_rank",
    "auto_select",
    "chart_kind",
    "check_image",
    "decode_image",
    "decoded_size",
    "is_json_mime",
    "is_raster_image",
    "mime_kind",
    "render_hint",
]

#: Raster images a reader returns as base64, best first.
RASTER_IMAGE_TYPES: tuple[str, ...] = (
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/gif",
)

#: The fixed automatic choice: raster image, HTML, Markdown, plain text,
#: JSON, SVG source. JSON stands for ``application/json`` and any ``+json``.
AUTO_ORDER: tuple[str, ...] = RASTER_IMAGE_TYPES + (
    "text/html",
    "text/markdown",
    "text/plain",
    "application/json",
    "image/svg+xml",
)

_RANK: dict[str, int] = {mime: i for i, mime in enumerate(AUTO_ORDER)}

_MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # plus "WEBP" at offset 8, checked below
    "image/bmp": (b"BM",),
}

_WHITESPACE = b" \t\n\r\f\v"


#: Chart MIMEs; Altair 6 names its bundle ``application/vnd.vegalite.v6.json`` (no ``+``).
_CHART = re.compile(r"application/vnd\.(vegalite|vega|plotly)\.v([0-9]{1,3})[+.]json")


def chart_kind(mime: str) -> tuple[str, int] | None:
    """``(renderer, major version)`` of a chart MIME (Vega-Lite, Vega, Plotly), or None.

    Example:
        >>> chart_kind("application/vnd.vegalite.v5+json"), chart_kind("application/json")
        (('vegalite', 5), None)
    """
    found = _CHART.fullmatch(mime)
    return (found.group(1), int(found.group(2))) if found else None


#: How a chart output is read as an image: what the catalog and an exec's lines name.
RENDER_HINT = "--as image/png"


def render_hint(mimes: list[str]) -> str | None:
    """:data:`RENDER_HINT` when a bundle with these MIMEs holds a chart, else None.

    Example:
        >>> render_hint(["application/vnd.plotly.v1+json", "text/html"]), render_hint(["text/plain"])
        ('--as image/png', None)
    """
    return RENDER_HINT if any(chart_kind(m) for m in mimes) else None


def is_json_mime(mime: str) -> bool:
    """``application/json``, any structured ``+json`` type, or a chart type (:func:`chart_kind`)."""
    return mime == "application/json" or mime.endswith("+json") or chart_kind(mime) is not None


def is_raster_image(mime: str) -> bool:
    """An ``image/*`` stored as base64 (everything but SVG)."""
    return mime.startswith("image/") and mime != "image/svg+xml"


def mime_kind(mime: str, value: object) -> str:
    """How a bundle value is carried: ``"image"``, ``"json"`` or ``"text"``.

    Structured values (dicts, lists that are not line lists, numbers) are
    JSON whatever their MIME, so nothing is ever flattened silently.

    Example:
        >>> mime_kind("image/png", "iVBOR"), mime_kind("text/html", ["<b>", "x"])
        ('image', 'text')
    """
    if isinstance(value, (bytes, bytearray)) or (is_raster_image(mime) and _is_text_value(value)):
        return "image"
    if is_json_mime(mime) or not _is_text_value(value):
        return "json"
    return "text"


def _is_text_value(value: object) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def auto_rank(mime: str) -> int:
    """The position of ``mime`` in :data:`AUTO_ORDER`; unknown MIMEs rank last."""
    if is_json_mime(mime):
        return _RANK["application/json"]
    return _RANK.get(mime, len(AUTO_ORDER))


def auto_select(mimes: list[str]) -> str | None:
    """Pick the representation shown when no MIME is asked for.

    The fixed :data:`AUTO_ORDER` decides; ties (several JSON types, or
    unknown MIMEs) go to the one first in the bundle.

    Example:
        >>> auto_select(["text/plain", "image/png", "text/html"])
        'image/png'
        >>> auto_select(["image/svg+xml", "application/vnd.plotly.v1+json"])
        'application/vnd.plotly.v1+json'
    """
    if not mimes:
        return None
    best = min(range(len(mimes)), key=lambda i: (auto_rank(mimes[i]), i))
    return mimes[best]


def _strip_whitespace(text: str) -> bytes:
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        raise OutputDataInvalid("image data is not base64: it holds non-ASCII characters") from None
    return raw.translate(None, _WHITESPACE)


def decoded_size(text: str) -> int:
    """The decoded byte size of base64 text, without decoding it.

    Whitespace is ignored; the result is exact for well-formed data.
    """
    raw = _strip_whitespace(text)
    pad = len(raw) - len(raw.rstrip(b"="))
    return max(0, len(raw) * 3 // 4 - pad)


def decode_image(mime: str, text: str) -> bytes:
    """Decode a notebook's base64 image and prove it is what it says.

    ASCII whitespace (real notebooks wrap lines) is removed first; then the
    alphabet, the padding and the magic bytes are checked.

    Raises:
        OutputDataInvalid: bad alphabet, bad padding, or wrong magic bytes.

    Example:
        >>> decode_image("image/gif", "R0lG\\nODlh")[:6]
        b'GIF89a'
    """
    raw = _strip_whitespace(text)
    if not raw:
        raise OutputDataInvalid(f"{mime} data is empty")
    if len(raw) % 4:
        raise OutputDataInvalid(f"{mime} data is not valid base64: bad length or padding")
    try:
        data = binascii.a2b_base64(raw, strict_mode=True)
    except binascii.Error:
        raise OutputDataInvalid(f"{mime} data is not valid base64: bad alphabet or padding") from None
    return check_image(mime, data)


def check_image(mime: str, data: bytes) -> bytes:
    """Check decoded image bytes against the magic bytes of ``mime``.

    Raises:
        OutputDataInvalid: the signature does not match.
    """
    magics = _MAGIC.get(mime)
    if magics is not None:
        ok = any(data.startswith(m) for m in magics)
        if mime == "image/webp":
            ok = ok and data[8:12] == b"WEBP"
        if not ok:
            raise OutputDataInvalid(f"{mime} data does not start with the {mime} signature")
    return data
