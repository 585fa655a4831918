"""MIME rules: the fixed automatic order and image checks."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from jcli_sidecar.base.errors import OutputDataInvalid
from jcli_sidecar.read.image_headers import image_size
from jcli_sidecar.read.mime import AUTO_ORDER, auto_select, decode_image, decoded_size, mime_kind


def test_the_automatic_order_is_image_html_markdown_plain_json_svg():
    assert AUTO_ORDER == (
        "image/png",
        "image/jpeg",
        "image/webp",
        "image/gif",
        "text/html",
        "text/markdown",
        "text/plain",
        "application/json",
        "image/svg+xml",
    )


@pytest.mark.parametrize(
    "bundle, expected",
    [
        (["text/plain", "image/jpeg", "image/png"], "image/png"),
        (["text/plain", "text/html"], "text/html"),
        (["text/plain", "text/markdown"], "text/markdown"),
        (["application/json", "text/plain"], "text/plain"),
        (["image/svg+xml", "application/json"], "application/json"),
        (["image/svg+xml", "application/vnd.plotly.v1+json"], "application/vnd.plotly.v1+json"),
        (["application/vnd.b+json", "application/json"], "application/vnd.b+json"),
        (["image/svg+xml", "text/latex"], "image/svg+xml"),
        (["text/latex", "application/x-thing"], "text/latex"),
        ([], None),
    ],
)
def test_auto_select(bundle, expected):
    assert auto_select(bundle) == expected


def _image(fmt: str, size=(7, 5), **save) -> bytes:
    buf = io.BytesIO()
    mode = "P" if fmt == "GIF" else "RGB"
    Image.new(mode, size).save(buf, format=fmt, **save)
    return buf.getvalue()


@pytest.mark.parametrize(
    "mime, fmt",
    [("image/png", "PNG"), ("image/jpeg", "JPEG"), ("image/gif", "GIF"), ("image/webp", "WEBP")],
)
def test_images_are_checked_by_magic_and_sized_from_the_header(mime, fmt):
    data = _image(fmt)
    text = base64.encodebytes(data).decode()  # wrapped, as older tools wrote it
    assert decode_image(mime, text) == data
    assert decoded_size(text) == len(data)
    assert image_size(mime, data) == (7, 5)
    other = "image/png" if mime != "image/png" else "image/jpeg"
    with pytest.raises(OutputDataInvalid):
        decode_image(other, text)


def test_lossless_webp_is_sized_too():
    assert image_size("image/webp", _image("WEBP", (9, 4), lossless=True)) == (9, 4)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "iVBOR*w0K", "iVBORw0KGgo", "iVBORw0KGgo=====", "ïVBORw0KGgo=", "iVBORw0KGgo=AAAA"],
)
def test_bad_base64_is_output_data_invalid(text):
    with pytest.raises(OutputDataInvalid) as info:
        decode_image("image/png", text)
    assert text.strip() == "" or text not in info.value.message


def test_structured_values_are_json_whatever_their_mime():
    assert mime_kind("text/plain", {"a": 1}) == "json"
    assert mime_kind("application/vnd.x+json", "text") == "json"
    assert mime_kind("image/png", {"a": 1}) == "json"
    assert mime_kind("image/svg+xml", "<svg/>") == "text"
    assert mime_kind("application/x-thing", ["a", "b"]) == "text"
