"""An image told as text, for a model that takes no image input (a read's ``text_only``).

A host whose model cannot take images (DSH's default model, an OpenCode
model without image input) breaks, or answers with an error, when a tool
result carries one: the image then sits in the session's history and every
later request is refused. A read asked with ``text_only: true`` therefore
never carries image data. Its ``selected`` block keeps what the image is
(type, bytes, pixel size) and says why nothing was sent (``withheld``) and
which text representations the same output has (``text_forms``), so the
model can read one of those instead. The caption
(:func:`jcli_sidecar.read.agent_text.caption`) puts all of it in one line.

Example:
    >>> withheld_image({"mime_type": "image/png", "encoding": "base64", "bytes": 3630, "data": "iVBOR"},
    ...                {"image/png": "iVBOR", "text/plain": "<Figure size 640x480 with 1 Axes>"})
    {'mime_type': 'image/png', 'encoding': 'none', 'bytes': 3630, 'withheld': 'the model takes no image input', 'text_forms': [{'mime_type': 'text/plain', 'bytes': 33}]}
"""

from __future__ import annotations

from ..base import OutputDataInvalid
from . import representations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["WITHHELD_ENCODING", "WITHHELD_WHY", "text_forms", "withheld_image"]

#: The ``encoding`` of a selected image whose data was not sent.
WITHHELD_ENCODING = "none"
#: Why: the one reason a read withholds an image.
WITHHELD_WHY = "the model takes no image input"


def text_forms(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """The output's representations a text-only model can read, plain text first, with their sizes.

    Example:
        >>> text_forms({"image/png": "iVBOR", "text/html": "<b>x</b>", "text/plain": "x"})
        [{'mime_type': 'text/plain', 'bytes': 1}, {'mime_type': 'text/html', 'bytes': 8}]
    """
    forms = []
    for mime, value in bundle.items():
        try:
            kind = representations.checked(mime, value)
        except OutputDataInvalid:
            continue  # a damaged representation is no way to read the output
        if kind is not representations.IMAGE_KIND:
            forms.append({"mime_type": mime, "bytes": kind.size(mime, value)})
    forms.sort(key=lambda form: form["mime_type"] != "text/plain")
    return forms


def withheld_image(selected: dict[str, Any], bundle: dict[str, Any]) -> dict[str, Any]:
    """``selected`` (an image block) without its data, with ``withheld`` and ``text_forms`` from ``bundle``."""
    block = {key: value for key, value in selected.items() if key != "data"}
    block["encoding"] = WITHHELD_ENCODING
    block["withheld"] = WITHHELD_WHY
    block["text_forms"] = text_forms(bundle)
    return block
