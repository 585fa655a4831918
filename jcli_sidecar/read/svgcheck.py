"""Refuse SVG source that could reach beyond itself or blow up, before rendering.

Checked with expat, in the image worker: no DTD internal subset and no
entity declarations (so no XML entity expansion and no external entities),
nesting at most ``CAPS.svg_depth`` deep, at most ``CAPS.svg_elements``
elements, an ``<svg>`` root, and embedded ``data:`` images only of a raster
type whose header stays under the pixel cap. References to other files or
URLs are left to the renderer, which loads nothing from outside a buffer.
"""

from __future__ import annotations

import base64
import binascii
import re
import xml.parsers.expat

from ..base import ImageTooLarge, RenderFailed
from . import image_headers
from . import mime as mimes
from .imageview import CAPS

__all__ = ["check_svg"]

_DATA_URL = re.compile(r"^\s*data:([^;,]*)((?:;[^;,]*)*),", re.I)
_SVG_NS = "http://www.w3.org/2000/svg"


def _refuse(reason: str) -> RenderFailed:
    return RenderFailed(f"the SVG was refused: {reason}")


def check_svg(data: bytes, decode_pixels: int) -> None:
    """Raise RenderFailed or ImageTooLarge unless ``data`` is safe to render."""
    parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    state = {"depth": 0, "elements": 0, "root": None}

    def doctype(name, sysid, pubid, has_internal_subset):
        if has_internal_subset:
            raise _refuse("it declares a DTD internal subset")

    def entity(*_args):
        raise _refuse("it declares XML entities")

    def external(*_args):
        raise _refuse("it refers to an external entity")

    def start(name, attrs):
        state["depth"] += 1
        state["elements"] += 1
        if state["root"] is None:
            state["root"] = name
            if name not in (f"{_SVG_NS} svg", "svg"):
                raise _refuse("its root element is not <svg>")
        if state["depth"] > CAPS.svg_depth:
            raise _refuse(f"elements nest deeper than {CAPS.svg_depth}")
        if state["elements"] > CAPS.svg_elements:
            raise _refuse(f"it has more than {CAPS.svg_elements} elements")
        for key, value in attrs.items():
            if key.rsplit(" ", 1)[-1] == "href":
                _check_embedded(value, decode_pixels)

    def end(_name):
        state["depth"] -= 1

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.ExternalEntityRefHandler = external
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise _refuse(f"it is not well-formed XML ({xml.parsers.expat.ErrorString(exc.code)}, line {exc.lineno})") from None
    if state["root"] is None:
        raise _refuse("it has no <svg> element")


def _check_embedded(href: str, decode_pixels: int) -> None:
    match = _DATA_URL.match(href)
    if match is None:
        return  # not embedded: the renderer loads nothing from outside the buffer
    media = match.group(1).strip().lower()
    if media not in mimes.RASTER_IMAGE_TYPES:
        raise _refuse(f"it embeds {media or 'data'} content; only png, jpeg, webp and gif images may be embedded")
    if ";base64" not in match.group(2).lower():
        raise _refuse("an embedded image is not base64")
    payload = re.sub(r"\s+", "", href[match.end() :])[:65536]
    try:
        head = base64.b64decode(payload[: len(payload) // 4 * 4], validate=True)
    except (binascii.Error, ValueError):
        raise _refuse("an embedded image is not valid base64") from None
    size = image_headers.image_size(media, head)
    if size is None:
        raise _refuse(f"an embedded {media} has no readable size")
    if size[0] * size[1] > decode_pixels:
        raise ImageTooLarge(f"an embedded {media} is {size[0]}x{size[1]} px, over the {decode_pixels}-pixel cap")
