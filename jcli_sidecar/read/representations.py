"""Representation kinds: how one MIME value of an output is carried.

A value in a MIME bundle is an **image** (base64 in a notebook, bytes in a
run file), **JSON** (a structured value) or **text**. Which kind a value is
comes from :func:`jcli_sidecar.read.mime.mime_kind`; what each kind means
everywhere else is here, once:

- its size in bytes as a catalog reports it;
- the bytes a run stores for it and how they are read back;
- the ``encoding`` it has in a run manifest and in an envelope's
  ``selected`` block (so renderers can tell the kind of what they got);
- the file extension and manifest item type of a stored payload.

Reader, store, runs and the renderers dispatch through :func:`kind_of`,
:func:`kind_of_manifest_ref` and :func:`kind_of_selected` instead of branching on names.
"""

from __future__ import annotations

from ..base import OutputDataInvalid, dump_json, json_text, loads, utf8_size
from ..ipynb import join_text
from . import mime as mimes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "IMAGE_KIND",
    "JSON_KIND",
    "KINDS",
    "Representation",
    "TEXT_KIND",
    "checked",
    "kind_of",
    "kind_of_manifest_ref",
    "kind_of_selected",
]

#: Payload file extensions of well-known MIME types; others use the kind's default.
_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/bmp": "bmp",
    "image/svg+xml": "svg",
    "text/html": "html",
    "text/markdown": "md",
    "text/plain": "txt",
    "text/latex": "tex",
    "application/json": "json",
}

#: What a run manifest calls a stored text payload, by MIME.
_TEXT_ITEM_TYPES = {"text/html": "html", "text/markdown": "markdown", "image/svg+xml": "svg"}


class Representation:
    """One kind of value, with the few rules that differ between kinds."""

    #: ``"image"``, ``"json"`` or ``"text"`` (what :func:`~jcli_sidecar.read.mime.mime_kind` returns).
    name = ""
    #: ``selected.encoding`` in an envelope.
    envelope_encoding = ""
    #: ``encoding`` of a payload file in a run manifest (None: raw bytes).
    manifest_encoding: str | None = None
    #: Payload file extension when the MIME has no well-known one.
    default_extension = ""

    def size(self, mime: str, value: Any) -> int:
        """The byte size a catalog reports for a stored value."""
        raise NotImplementedError

    def payload(self, mime: str, value: Any) -> bytes:
        """The bytes a run's payload file holds for ``value``.

        Raises:
            OutputDataInvalid: an image that is not what its MIME says.
        """
        raise NotImplementedError

    def load(self, raw: bytes) -> Any:
        """A value read back from a payload file written by :meth:`payload`.

        Raises:
            ValueError: the file does not hold what its kind stores.
        """
        raise NotImplementedError

    def as_text(self, data: Any) -> str | None:
        """An envelope's ``selected.data`` as text for a host that shows text; None for an image."""
        return data

    def extension(self, mime: str) -> str:
        """The payload file's extension."""
        return _EXTENSIONS.get(mime, self.default_extension)

    def item_type(self, mime: str) -> str:
        """The ``type`` of a manifest item (``image``, ``json``, ``html``, ``text``, ...)."""
        return self.name

    def __repr__(self) -> str:
        return f"<representation {self.name}>"


class _Image(Representation):
    name = "image"
    envelope_encoding = "base64"
    default_extension = "bin"

    def size(self, mime: str, value: Any) -> int:
        if isinstance(value, (bytes, bytearray)):
            return len(value)
        return mimes.decoded_size(join_text(value, mime))

    def payload(self, mime: str, value: Any) -> bytes:
        if isinstance(value, (bytes, bytearray)):
            return mimes.check_image(mime, bytes(value))
        return mimes.decode_image(mime, join_text(value, mime))

    def load(self, raw: bytes) -> Any:
        return raw

    def as_text(self, data: Any) -> str | None:
        return None


class _Json(Representation):
    name = "json"
    envelope_encoding = "json"
    manifest_encoding = "json"
    default_extension = "json"

    def size(self, mime: str, value: Any) -> int:
        return len(dump_json(value))

    def payload(self, mime: str, value: Any) -> bytes:
        return dump_json(value)

    def load(self, raw: bytes) -> Any:
        return loads(raw)

    def as_text(self, data: Any) -> str | None:
        return json_text(data)  # readable and reversible


class _Text(Representation):
    name = "text"
    envelope_encoding = "utf-8"
    manifest_encoding = "utf-8"
    default_extension = "txt"

    def size(self, mime: str, value: Any) -> int:
        if isinstance(value, (bytes, bytearray)):
            return len(value)
        return utf8_size(join_text(value, mime))

    def payload(self, mime: str, value: Any) -> bytes:
        return join_text(value, mime).encode("utf-8", "surrogatepass")

    def load(self, raw: bytes) -> Any:
        return raw.decode("utf-8", "surrogatepass")

    def item_type(self, mime: str) -> str:
        return _TEXT_ITEM_TYPES.get(mime, "text")


IMAGE_KIND: Representation = _Image()
JSON_KIND: Representation = _Json()
TEXT_KIND: Representation = _Text()

#: Every kind, by name.
KINDS: dict[str, Representation] = {kind.name: kind for kind in (IMAGE_KIND, JSON_KIND, TEXT_KIND)}
_BY_ENVELOPE = {kind.envelope_encoding: kind for kind in KINDS.values()}


def kind_of(mime: str, value: Any) -> Representation:
    """The kind of a stored bundle value.

    Example:
        >>> kind_of("image/png", "iVBOR").name, kind_of("text/html", ["<b>", "x"]).name, kind_of("text/plain", {"a": 1}).name
        ('image', 'text', 'json')
    """
    return KINDS[mimes.mime_kind(mime, value)]


def checked(mime: str, value: Any) -> Representation:
    """The kind of a bundle value a reader returns, refusing values of the wrong type.

    nbformat allows any JSON value only for JSON MIME types (``application/json``
    and ``+json``); every other MIME's value is text (a string or a list of
    strings), or, in a run, image bytes. Anything else (``null``, a number,
    an object under ``image/png``) is damage, not data.

    Raises:
        OutputDataInvalid: a value of the wrong type for its MIME.

    Example:
        >>> checked("application/json", None).name
        'json'
        >>> checked("image/png", None)
        Traceback (most recent call last):
        ...
        jcli_sidecar.base.errors.OutputDataInvalid: the image/png value is null, not text
    """
    kind = kind_of(mime, value)
    if kind is JSON_KIND and not mimes.is_json_mime(mime):
        raise OutputDataInvalid(f"the {mime} value is {_json_type(value)}, not text")
    return kind


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list that is not all strings"
    return type(value).__name__


def kind_of_manifest_ref(ref: dict[str, Any], path: str) -> Representation:
    """The kind of a run's payload file, from its manifest reference.

    Files without an ``encoding`` are raw image bytes, except ``.txt``
    files, which are text.
    """
    encoding = ref.get("encoding")
    if encoding == JSON_KIND.manifest_encoding:
        return JSON_KIND
    if encoding == TEXT_KIND.manifest_encoding or path.endswith(".txt"):
        return TEXT_KIND
    return IMAGE_KIND


def kind_of_selected(selected: dict[str, Any]) -> Representation:
    """The kind of an envelope's ``selected`` block (a cut JSON value is text).

    Example:
        >>> kind_of_selected({"encoding": "base64"}).name, kind_of_selected({"encoding": "utf-8", "serialization": "json"}).name
        ('image', 'text')
    """
    return _BY_ENVELOPE.get(selected.get("encoding", ""), TEXT_KIND)
