"""Read saved notebook outputs: the catalog of a cell, or one output.

Both functions are plain, synchronous and side-effect free: they read the
notebook (and, for a ``.py``, its pair) and write nothing anywhere.
"""

from __future__ import annotations

import base64
import os

from . import image_headers
from . import mime as mimes
from .errors import (
    FileNotFound,
    InvalidWindow,
    MimeNotFound,
    NotebookReadFailed,
    OutputDataInvalid,
    OutputNotFound,
    OutputTooLarge,
    UsageError,
)
from .notebook import NotebookFile, cell_at, join_text, read_file_bytes
from .pairing import is_percent, map_cell, paired_notebook_path, parse_percent
from .protocol import (
    SCHEMA_VERSION,
    check_max_response_bytes,
    dump_json,
    json_size,
    json_text,
    utf8_size,
)
from .textwindow import check_window, is_whole, window

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .imageview import ViewSpec

    Loader = Callable[[str], NotebookFile]

__all__ = [
    "ResolvedCell",
    "catalog_envelope",
    "fit_response",
    "list_outputs",
    "output_envelope",
    "read_output",
    "resolve_cell",
]


class ResolvedCell:
    """A requested ``(path, cell_index)`` pinned to one notebook cell."""

    __slots__ = (
        "notebook_path",
        "cell_index",
        "cell",
        "requested_path",
        "requested_cell_index",
        "mapping",
        "py_lines",
        "notebook",
    )

    def __init__(
        self,
        notebook_path: str,
        cell_index: int,
        cell: dict[str, Any],
        requested_path: str,
        requested_cell_index: int,
        mapping: str,
        py_lines: tuple[int, int] | None = None,
        notebook: NotebookFile | None = None,
    ) -> None:
        self.notebook_path = notebook_path
        self.cell_index = cell_index
        self.cell = cell
        self.requested_path = requested_path
        self.requested_cell_index = requested_cell_index
        self.mapping = mapping
        self.py_lines = py_lines
        self.notebook = notebook

    def source(self) -> dict[str, Any]:
        """The ``source`` block of every envelope."""
        cell_id = self.cell.get("id")
        count = self.cell.get("execution_count")
        out: dict[str, Any] = {
            "kind": "notebook",
            "path": self.notebook_path,
            "cell_index": self.cell_index,
            "requested_path": self.requested_path,
            "requested_cell_index": self.requested_cell_index,
            "mapping": self.mapping,
            "cell_id": cell_id if isinstance(cell_id, str) else None,
            "cell_type": self.cell["cell_type"],
        }
        if self.py_lines is not None:
            out["source_start_line"], out["source_end_line"] = self.py_lines
        out["execution_count"] = count if isinstance(count, int) else None
        return out


def resolve_cell(path: str | os.PathLike[str], cell_index: int, load: Loader | None = None) -> ResolvedCell:
    """Pin ``(path, cell_index)`` to a notebook cell.

    An ``.ipynb`` (or any non-``.py`` file) is read as a notebook and the
    index is used as is (mapping ``"direct"``). A py:percent ``.py`` is mapped
    onto its paired ``.ipynb`` (mapping ``"id"`` or ``"content"``).
    ``path`` in the result is the notebook's real path. ``load`` opens a
    notebook by real path (default :meth:`NotebookFile.load`; the sidecar
    passes its cache).

    Raises:
        FileNotFound, NotebookReadFailed, CellNotFound,
        CellMappingUnreliable, UsageError.
    """
    requested = os.fspath(path)
    load = load or NotebookFile.load
    if requested.endswith(".py"):
        return _resolve_percent(requested, cell_index, load)
    nb_path = _real(requested)
    if not isinstance(cell_index, int) or isinstance(cell_index, bool) or cell_index < 0:
        raise UsageError(f"cell index must be a non-negative integer, got {cell_index!r}")
    nb = load(nb_path)
    cell = cell_at(nb, cell_index)
    return ResolvedCell(nb_path, cell_index, cell, requested, cell_index, "direct", None, nb)


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except OSError as exc:  # e.g. a relative path while the cwd has been deleted
        raise FileNotFound(f"{path}: cannot be resolved ({exc.strerror}); is the current directory gone?", path=path) from None


def _resolve_percent(requested: str, cell_index: int, load: Loader) -> ResolvedCell:
    py_path = _real(requested)
    raw = read_file_bytes(py_path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NotebookReadFailed(f"{py_path}: not UTF-8 text", path=py_path) from None
    if not is_percent(text):
        raise NotebookReadFailed(
            f"{py_path}: a plain script (no '# %%' cell markers), so it has no paired notebook",
            path=py_path,
        )
    nb_path = paired_notebook_path(py_path)
    try:
        nb = load(nb_path)
    except FileNotFound:
        raise FileNotFound(
            f"{py_path}: its paired notebook {nb_path} does not exist; run the file with j-cli exec to create it",
            path=nb_path,
        ) from None
    py_cells = parse_percent(text)
    heads = [nb.cell_head(i) for i in range(nb.cell_count)]
    nb_index, mapping = map_cell(py_cells, cell_index, heads, py_path)
    cell = cell_at(nb, nb_index)
    lines = (py_cells[cell_index].start_line, py_cells[cell_index].end_line)
    return ResolvedCell(nb_path, nb_index, cell, requested, cell_index, mapping, lines, nb)


# --- outputs -----------------------------------------------------------------


class _Output:
    """One stored output, checked. Streams and errors keep their structure."""

    __slots__ = ("output_type", "bundle", "metadata", "stream_name", "text", "error", "execution_count")

    def __init__(
        self,
        output_type: str,
        bundle: dict[str, Any],  # mime -> stored value; empty for stream and error
        metadata: dict[str, Any],
        stream_name: str | None = None,
        text: str | None = None,  # stream text
        error: dict[str, Any] | None = None,  # {ename, evalue, traceback}
        execution_count: int | None = None,
    ) -> None:
        self.output_type = output_type
        self.bundle = bundle
        self.metadata = metadata
        self.stream_name = stream_name
        self.text = text
        self.error = error
        self.execution_count = execution_count

    @property
    def available(self) -> list[str]:
        if self.output_type == "stream":
            return [STREAM_MIME]
        return list(self.bundle)


#: The one representation of a stream output.
STREAM_MIME = "text/plain"


def _parse_output(raw: Any, index: int) -> _Output:
    """Check one stored output.

    Raises:
        OutputDataInvalid: a required field is missing or of the wrong type.
    """
    where = f"output {index}"
    if not isinstance(raw, dict) or not isinstance(raw.get("output_type"), str):
        raise OutputDataInvalid(f"{where} has no output_type", output_index=index)
    kind = raw["output_type"]
    metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    if kind == "stream":
        name = raw.get("name")
        if not isinstance(name, str):
            raise OutputDataInvalid(f"{where} (stream) has no name", output_index=index)
        if "text" not in raw:
            raise OutputDataInvalid(f"{where} (stream) has no text", output_index=index)
        text = join_text(raw["text"], f"{where} text")
        return _Output(kind, {}, {}, stream_name=name, text=text)
    if kind == "error":
        ename, evalue, tb = raw.get("ename"), raw.get("evalue"), raw.get("traceback")
        if not isinstance(ename, str) or not isinstance(evalue, str):
            raise OutputDataInvalid(f"{where} (error) has no ename/evalue", output_index=index)
        if not isinstance(tb, list) or not all(isinstance(x, str) for x in tb):
            raise OutputDataInvalid(f"{where} (error) has no traceback list", output_index=index)
        return _Output(kind, {}, {}, error={"ename": ename, "evalue": evalue, "traceback": tb})
    if kind in ("display_data", "execute_result"):
        data = raw.get("data")
        if not isinstance(data, dict):
            raise OutputDataInvalid(f"{where} ({kind}) has no data bundle", output_index=index)
        count = raw.get("execution_count")
        if kind != "execute_result" or not isinstance(count, int):
            count = None
        return _Output(kind, data, metadata, execution_count=count)
    raise OutputDataInvalid(f"{where} has an unknown output_type {kind!r}", output_index=index)


def _value_size(mime: str, value: Any) -> int:
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    kind = mimes.mime_kind(mime, value)
    if kind == "image":
        return mimes.decoded_size(join_text(value, mime))
    if kind == "text":
        return utf8_size(join_text(value, mime))
    return len(dump_json(value))


def _catalog_entry(raw: Any, index: int) -> dict[str, Any]:
    try:
        out = _parse_output(raw, index)
    except OutputDataInvalid as exc:
        kind = raw.get("output_type") if isinstance(raw, dict) else None
        return {
            "output_index": index,
            "output_type": kind if isinstance(kind, str) else None,
            "available_mime_types": [],
            "error": {"code": exc.code, "message": exc.message},
        }
    entry: dict[str, Any] = {
        "output_index": index,
        "output_type": out.output_type,
        "available_mime_types": out.available,
    }
    if out.output_type == "stream":
        entry["name"] = out.stream_name
        entry["bytes"] = {STREAM_MIME: utf8_size(out.text)}
    elif out.output_type == "error":
        entry["ename"] = out.error["ename"]
        entry["evalue"] = out.error["evalue"]
    else:
        entry["default_mime_type"] = mimes.auto_select(out.available)
        sizes = {}
        for mime, value in out.bundle.items():
            try:
                sizes[mime] = _value_size(mime, value)
            except OutputDataInvalid:
                sizes[mime] = None
        entry["bytes"] = sizes
        entry["metadata"] = out.metadata
        if out.execution_count is not None:
            entry["execution_count"] = out.execution_count
    return entry


def _cell_outputs(resolved: ResolvedCell) -> list[Any]:
    if resolved.cell["cell_type"] != "code":
        return []
    outputs = resolved.cell.get("outputs", [])
    if not isinstance(outputs, list):
        raise NotebookReadFailed(
            f"{resolved.notebook_path}: cell {resolved.cell_index} outputs is not a list",
            path=resolved.notebook_path,
        )
    return outputs


def list_outputs(path: str | os.PathLike[str], cell_index: int, *, load: Loader | None = None) -> dict[str, Any]:
    """The catalog of one cell's saved outputs, without payloads.

    A markdown or raw cell has an empty catalog that names its
    ``cell_type``; an empty code cell too. Malformed outputs are listed with
    their own ``error`` and keep their index.

    Returns:
        ``{schema_version, status, source, cell_type, output_count, outputs}``.

    Raises:
        FileNotFound, NotebookReadFailed, CellNotFound,
        CellMappingUnreliable, UsageError.

    Example:
        >>> cat = list_outputs("examples/demo.ipynb", 9)
        >>> [(o["output_type"], o["available_mime_types"]) for o in cat["outputs"]]
        [('display_data', ['image/jpeg', 'image/png', 'text/plain']), ('stream', ['text/plain'])]
    """
    return _catalog(resolve_cell(path, cell_index, load))


def _catalog(resolved: ResolvedCell) -> dict[str, Any]:
    return catalog_envelope(_cell_outputs(resolved), resolved.source(), resolved.cell["cell_type"])


def read_output(
    path: str | os.PathLike[str],
    cell_index: int,
    output_index: int | None,
    mime_type: str | None = None,
    offset: int = 0,
    limit: int | None = None,
    max_response_bytes: int | None = None,
    *,
    binary: bool = False,
    load: Loader | None = None,
    view: ViewSpec | None = None,
) -> dict[str, Any]:
    """Read one saved output as a schema-v1 envelope.

    Args:
        path: an ``.ipynb``, or a py:percent ``.py`` with a paired notebook.
        cell_index: 0-based physical cell index in ``path``.
        output_index: 0-based index in ``cell.outputs``; None gives the catalog.
        mime_type: exactly this representation; None picks by
            :data:`jcli_sidecar.mime.AUTO_ORDER`.
        offset, limit: a text window in code points (text, JSON, tracebacks).
        max_response_bytes: cap on the serialised envelope (default 32 MiB),
            measured as the JSON a client prints.
        binary: keep image ``data`` as bytes (for the msgpack wire); the
            default is canonical base64 text.
        load: how to open a notebook (see :func:`resolve_cell`).
        view: convert the selected image (or render the selected SVG) for a
            host, in memory (see :func:`jcli_sidecar.imageview.view_spec`).

    Returns:
        ``{schema_version, status, source, output_type,
        available_mime_types, ...}`` and then, by output type:
        ``metadata`` and ``selected{mime_type, encoding, bytes, data, ...}``
        for display_data and execute_result; ``stream{name, encoding,
        bytes, data, ...}`` for a stream; ``error{ename, evalue,
        traceback}`` for an error. Text carries its window: ``offset``,
        ``returned_characters``, ``total_characters``, ``truncated`` and
        ``next_offset``.

    Raises:
        FileNotFound, NotebookReadFailed, CellNotFound,
        CellMappingUnreliable, OutputNotFound, MimeNotFound, InvalidWindow,
        OutputDataInvalid, OutputTooLarge, UsageError, and with ``view``
        ImageTooLarge, RenderFailed, RendererUnavailable.

    Example:
        >>> env = read_output("examples/demo.ipynb", 1, 1)
        >>> env["output_type"], env["stream"]["name"], env["stream"]["data"]
        ('stream', 'stderr', 'warned\\n')
    """
    check_window(offset, limit)
    cap = check_max_response_bytes(max_response_bytes)
    if mime_type is not None and not isinstance(mime_type, str):
        raise UsageError(f"mime_type must be a string, got {mime_type!r}")
    resolved = resolve_cell(path, cell_index, load)
    if output_index is None:
        return _fit(_catalog(resolved), cap)
    outputs = _cell_outputs(resolved)
    if not isinstance(output_index, int) or isinstance(output_index, bool) or output_index < 0:
        raise UsageError(f"output index must be an integer >= 0, got {output_index!r}")
    if output_index >= len(outputs):
        kind = resolved.cell["cell_type"]
        what = f"a {kind} cell has no outputs" if kind != "code" else f"it has {len(outputs)}"
        raise OutputNotFound(
            f"cell {resolved.requested_cell_index} has no output {output_index} ({what})",
            output_count=len(outputs),
        )
    source = resolved.source()
    source["output_index"] = output_index
    memo = (resolved.notebook, (resolved.cell_index, output_index))
    envelope = output_envelope(outputs[output_index], output_index, source, mime_type, offset, limit, binary, memo, view)
    return _fit(envelope, cap)


def output_envelope(
    raw: Any,
    output_index: int,
    source: dict[str, Any],
    mime_type: str | None = None,
    offset: int = 0,
    limit: int | None = None,
    binary: bool = False,
    memo: tuple[Any, Any] = (None, None),
    view: ViewSpec | None = None,
) -> dict[str, Any]:
    """The schema-v1 envelope of one stored output (nbformat-shaped ``raw``).

    Shared by notebook reads and inline-run reads; image values may be
    base64 text (notebooks) or bytes (run files). ``memo`` is
    ``(NotebookFile or None, key)`` for keeping decoded images; ``view``
    converts the selection (see :func:`read_output`).

    Raises:
        OutputDataInvalid, MimeNotFound, InvalidWindow, and with ``view``
        UsageError, ImageTooLarge, RenderFailed, RendererUnavailable.
    """
    out = _parse_output(raw, output_index)
    envelope: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "source": source,
        "output_type": out.output_type,
        "available_mime_types": out.available,
    }
    if out.output_type in ("stream", "error") and view is not None and view.as_mime_type is not None:
        raise UsageError(f"--as converts images and SVG; output {output_index} is a {out.output_type}")
    if out.output_type == "stream":
        _check_mime(mime_type, out, output_index)
        envelope["stream"] = {"name": out.stream_name, **_text_block(out.text, offset, limit)}
    elif out.output_type == "error":
        _check_mime(mime_type, out, output_index)
        envelope["error"] = _error_block(out.error, offset, limit)
    else:
        if mime_type is None and view is not None and view.as_mime_type is not None:
            # converting: the best image representation, SVG source included
            images = [m for m in out.available if mimes.is_raster_image(m) or m == "image/svg+xml"]
            mime_type = mimes.auto_select(images)
        chosen = _check_mime(mime_type, out, output_index)
        envelope["metadata"] = out.metadata
        if out.execution_count is not None:
            envelope["execution_count"] = out.execution_count
        notebook, key = memo
        envelope["selected"] = _select(chosen, out.bundle[chosen], offset, limit, binary, (notebook, (key, chosen)), view)
    return envelope


def catalog_envelope(outputs: list[Any], source: dict[str, Any], cell_type: str = "code") -> dict[str, Any]:
    """The catalog document of a list of nbformat-shaped outputs."""
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "source": source,
        "cell_type": cell_type,
        "output_count": len(outputs),
        "outputs": [_catalog_entry(raw, i) for i, raw in enumerate(outputs)],
    }


def fit_response(envelope: dict[str, Any], max_response_bytes: int | None) -> dict[str, Any]:
    """Return ``envelope`` if it fits the response cap, else ``OUTPUT_TOO_LARGE``."""
    return _fit(envelope, check_max_response_bytes(max_response_bytes))


def _check_mime(mime_type: str | None, out: _Output, index: int) -> str:
    available = out.available
    if mime_type is None:
        chosen = mimes.auto_select(available)
        if chosen is None and out.output_type != "error":
            raise MimeNotFound(f"output {index} has an empty MIME bundle", available=[])
        return chosen
    if mime_type in available:
        return mime_type
    if out.output_type == "error":
        raise MimeNotFound(
            f"output {index} is an error, which has no MIME representations; omit the MIME",
            available=[],
        )
    raise MimeNotFound(
        f"output {index} has no {mime_type} representation (available: {', '.join(available) or 'none'})",
        available=available,
    )


def _text_block(text: str, offset: int, limit: int | None) -> dict[str, Any]:
    piece, info = window(text, offset, limit)
    return {"encoding": "utf-8", "bytes": utf8_size(text), "data": piece, **info}


def _error_block(error: dict[str, Any], offset: int, limit: int | None) -> dict[str, Any]:
    serialised = json_text(error)
    if is_whole(len(serialised), offset, limit):
        return dict(error)
    # A cut traceback is text, and says so; never a partial structure.
    return {"ename": error["ename"], "serialization": "json", **_text_block(serialised, offset, limit)}


def _select(mime: str, value: Any, offset: int, limit: int | None, binary: bool, memo, view: ViewSpec | None = None) -> dict[str, Any]:
    kind = mimes.mime_kind(mime, value)
    if kind == "image":
        if offset or limit is not None:
            raise InvalidWindow(f"offset/limit apply to text; {mime} is an image")
        notebook, key = memo
        known = notebook.memo if notebook is not None and notebook.memo is not None else {}
        data = known.get(key)
        if data is None and isinstance(value, (bytes, bytearray)):
            data = mimes.check_image(mime, bytes(value))  # a run's payload file
        elif data is None:
            data = mimes.decode_image(mime, join_text(value, mime))
            if notebook is not None:
                notebook.remember(key, data, len(data))
        facts: dict[str, Any] = {}
        if view is not None:
            from .imageview import view_image

            mime, data, facts = view_image(mime, data, view)
        return _image_block(mime, data, binary, facts)
    if view is not None and view.as_mime_type is not None:
        if mime != "image/svg+xml" or kind != "text":
            raise UsageError(f"--as converts images and SVG; the selected representation is {mime}")
        if offset or limit is not None:
            raise InvalidWindow("offset/limit apply to text; the SVG is being rendered as an image")
        from .imageview import render_svg

        shown, data, facts = render_svg(join_text(value, mime), view)
        return _image_block(shown, data, binary, facts)
    if kind == "text":
        return {"mime_type": mime, **_text_block(join_text(value, mime), offset, limit)}
    serialised = json_text(value)
    if is_whole(len(serialised), offset, limit):
        return {"mime_type": mime, "encoding": "json", "bytes": len(dump_json(value)), "data": value}
    # Never a partial JSON value: a cut is text, and says so.
    return {"mime_type": mime, "serialization": "json", **_text_block(serialised, offset, limit)}


def _image_block(mime: str, data: bytes, binary: bool, facts: dict[str, Any]) -> dict[str, Any]:
    selected: dict[str, Any] = {
        "mime_type": mime,
        "encoding": "base64",
        "bytes": len(data),
        "data": data if binary else base64.b64encode(data).decode("ascii"),
    }
    size = image_headers.image_size(mime, data)
    if size is not None:
        selected["width"], selected["height"] = size
    if image_headers.is_animated(mime, data):
        selected["animated"] = True
    if facts:
        from .imageview import view_note

        selected.update(facts)
        note = view_note(facts)
        if note:
            selected["note"] = note
    return selected


def _fit(envelope: dict[str, Any], cap: int) -> dict[str, Any]:
    size = json_size(envelope)
    if size <= cap:
        return envelope
    selected = envelope.get("selected") or {}
    if selected.get("encoding") == "base64":
        hint = "an image cannot be windowed; raise --max-response-bytes if the host allows"
    elif "output_type" in envelope:
        hint = "read it in windows with --offset/--limit"
    else:
        hint = "read one output at a time with --output"
    raise OutputTooLarge(
        f"the response is {size} bytes, over the {cap}-byte cap; {hint}",
        response_bytes=size,
        max_response_bytes=cap,
    )
