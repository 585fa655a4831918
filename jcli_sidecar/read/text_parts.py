"""The text a notebook holds, part by part: each cell's source, each output's text.

What ``notebook grep`` searches and ``notebook text`` prints. A part is one
cell's source, or one text field of one output: a stream's text or an error's
traceback (terminal escapes removed from both), or one representation of a display
whose MIME is text (``text/*``) or JSON (``application/json``, ``+json``;
searched as its JSON text). Every other representation (images, SVG, PDF)
is a binary part: its size is told, its value never decoded.

An indexed notebook (:mod:`jcli_sidecar.ipynb.nbindex`) is read through its
offsets, on one open file descriptor, front to back: a cell's members are
spanned by the walk, and only ``cell_type``, ``id`` and ``source`` are
decoded (never its ``attachments``); an output's ``data`` is spanned key by
key, and only the values of text MIMEs are decoded. A notebook the walk
could not index was parsed whole; its parts come from that. Reads only.
"""

from __future__ import annotations

import json
import os

from ..base import Bail, OutputDataInvalid, TooDeep, open_regular, strip_ansi, strip_ansi_lines
from ..ipynb import Changed, MemberReader, join_text, stat_key
from .mime import is_json_mime, is_raster_image

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from ..ipynb import NotebookFile
    from ..pair import PercentCell

__all__ = ["Part", "is_text_mime", "notebook_parts", "output_parts", "percent_parts", "source_part"]


def is_text_mime(mime: str) -> bool:
    """A representation searched as text: ``text/*`` and JSON; every other one is binary.

    Example:
        >>> is_text_mime("text/html"), is_text_mime("application/vnd.foo+json"), is_text_mime("image/svg+xml")
        (True, True, False)
    """
    return mime.startswith("text/") or is_json_mime(mime)


class Part:
    """One searchable piece of a notebook.

    Attributes:
        cell: the 0-based cell index (the file's own cells for a ``.py``).
        output: the 0-based index in the cell's outputs, or None for the source.
        kind: for a source, the cell type; for an output, ``"stream"``
            (``name`` says which), ``"error"``, or the MIME of a display.
        name: a stream's name (``stdout``, ``stderr``), else None.
        text: the text, or None for a binary part (or a part that is not text).
        size: a binary part's size in bytes (estimated from its base64), else the text's length.
    """

    __slots__ = ("cell", "output", "kind", "name", "text", "size")

    def __init__(self, cell: int, output: int | None, kind: str, text: str | None, size: int = 0, name: str | None = None) -> None:
        self.cell = cell
        self.output = output
        self.kind = kind
        self.name = name
        self.text = text
        self.size = len(text) if text is not None and not size else size


def _text(value: Any, what: str) -> str | None:
    try:
        return join_text(value, what)
    except OutputDataInvalid:
        return None


def _cell_type(value: Any) -> str:
    return value if isinstance(value, str) else "?"


def source_part(index: int, cell: Any) -> Part:
    """The source of a decoded cell (or of its head)."""
    if not isinstance(cell, dict):
        return Part(index, None, "?", None)
    return Part(index, None, _cell_type(cell.get("cell_type")), _text(cell.get("source", ""), "source"))


class _Undecoded:
    """A binary value left in the file: only its size is known."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


def output_parts(index: int, number: int, output: Any) -> list[Part]:
    """The parts of one decoded output (its binary values may be left :class:`_Undecoded`)."""
    if not isinstance(output, dict):
        return []
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name")
        text = _text(output.get("text", ""), "text")
        return [Part(index, number, "stream", text and strip_ansi(text), name=name if isinstance(name, str) else None)]
    if kind == "error":
        lines = strip_ansi_lines(output.get("traceback"))
        text = "\n".join(lines) if lines else f"{output.get('ename', '')}: {output.get('evalue', '')}"
        return [Part(index, number, "error", text)]
    data = output.get("data")
    parts = []
    if isinstance(data, dict):
        for mime, value in data.items():
            if isinstance(value, _Undecoded):
                parts.append(Part(index, number, mime, None, size=value.size))
            elif not is_text_mime(mime):
                parts.append(Part(index, number, mime, None, size=_base64_size(mime, value)))
            elif isinstance(value, (str, list)) and not is_json_mime(mime):
                parts.append(Part(index, number, mime, _text(value, mime)))
            else:
                parts.append(Part(index, number, mime, json.dumps(value, ensure_ascii=False)))
    return parts


def _stored_size(mime: str, chars: int) -> int:
    """The size of a value stored in ``chars`` characters: decoded base64 for an image or a PDF, else the text."""
    return max(chars, 0) * 3 // 4 if is_raster_image(mime) or mime == "application/pdf" else max(chars, 0)


def _base64_size(mime: str, value: Any) -> int:
    if isinstance(value, list):
        value = "".join(v for v in value if isinstance(v, str))
    return _stored_size(mime, len(value)) if isinstance(value, str) else 0


def percent_parts(cells: list[PercentCell]) -> Iterator[Part]:
    """The sources of a py:percent file's cells (it holds no outputs)."""
    for index, cell in enumerate(cells):
        yield Part(index, None, cell.cell_type, cell.source)


def notebook_parts(nb: NotebookFile, *, outputs: bool = True) -> Iterator[Part]:
    """Every part of ``nb`` in file order: a cell's source, then its outputs' parts.

    Raises:
        Changed: the file changed while it was read (load it again).
        OSError: it could not be read.
    """
    if nb.index is None:
        yield from _parsed_parts(nb, outputs)
        return
    fd, info = open_regular(nb.path)
    try:
        if stat_key(info) != nb.index.key:
            raise Changed()
        reader = MemberReader(fd, info.st_size)
        for index, span in enumerate(nb.index.cells):
            yield from _indexed_cell(nb, reader, index, span, outputs)
        if stat_key(os.fstat(fd)) != nb.index.key:
            raise Changed()
    finally:
        os.close(fd)


def _parsed_parts(nb: NotebookFile, outputs: bool) -> Iterator[Part]:
    for index in range(nb.cell_count):
        cell = nb.head(index)
        yield source_part(index, cell)
        if outputs and isinstance(cell, dict) and cell.get("cell_type") == "code":
            found = nb.outputs(index)
            for number, output in enumerate(found if isinstance(found, list) else ()):
                yield from output_parts(index, number, output)


def _decoded(reader: MemberReader, span: tuple[int, int] | None) -> Any:
    if span is None:
        return None
    try:
        return json.loads(reader.read(*span))
    except ValueError:
        return None


def _indexed_cell(nb: NotebookFile, reader: MemberReader, index: int, span: Any, outputs: bool) -> Iterator[Part]:
    try:
        members = reader.members(span.start, known={} if span.outputs is None else {"outputs": span.outputs[1]})
    except (Bail, TooDeep):
        cell = nb.head(index)  # odd JSON in this cell: decoded whole (the reader does the same)
        yield source_part(index, cell)
        if outputs and isinstance(cell, dict) and cell.get("cell_type") == "code":
            found = nb.outputs(index)
            for number, output in enumerate(found if isinstance(found, list) else ()):
                yield from output_parts(index, number, output)
        return
    head = {key: _decoded(reader, members.get(key)) for key in ("cell_type", "source") if key in members}
    yield source_part(index, head)
    if not outputs or head.get("cell_type") != "code" or span.items is None:
        return
    for number, item in enumerate(span.items):
        yield from _indexed_output(nb, reader, index, number, item)


def _indexed_output(nb: NotebookFile, reader: MemberReader, index: int, number: int, item: tuple[int, int]) -> list[Part]:
    try:
        members = reader.members(item[0], nested=("data",))
    except (Bail, TooDeep):
        return output_parts(index, number, nb.output(index, number))
    output: dict[str, Any] = {}
    for key, value in members.items():
        if key == "data":
            output[key] = {
                mime: _decoded(reader, (start, end)) if is_text_mime(mime) else _Undecoded(_stored_size(mime, end - start - 2))
                for mime, (start, end) in value.items()
            }
        elif key in ("output_type", "name", "text", "ename", "evalue", "traceback"):
            output[key] = _decoded(reader, value)
    return output_parts(index, number, output)
