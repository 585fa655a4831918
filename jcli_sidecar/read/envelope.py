"""The schema-v1 envelope of stored outputs: one output, or a catalog.

Shared by notebook reads (:mod:`jcli_sidecar.read.reader`) and inline-run reads
(:mod:`jcli_sidecar.runs.runs`). What a caller asks for (MIME, text window,
response cap, image view) is one :class:`OutputQuery`; how each kind of
value is carried comes from :mod:`jcli_sidecar.read.representations`; where the
data came from is ``source``, whose ``label`` is the one human line every
client shows.
"""

from __future__ import annotations

import base64

from ..base import (
    SCHEMA_VERSION,
    InvalidWindow,
    MimeNotFound,
    OutputDataInvalid,
    OutputTooLarge,
    UsageError,
    check_max_response_bytes,
    dump_json,
    json_size,
    json_text,
    strip_ansi_lines,
    utf8_size,
)
from ..ipynb import join_text
from . import image_headers, representations
from . import mime as mimes
from .textwindow import check_window, is_whole, window

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .imageview import ViewSpec

__all__ = [
    "DEFAULT_QUERY",
    "OutputQuery",
    "STREAM_MIME",
    "catalog_envelope",
    "fit_response",
    "output_envelope",
    "source_label",
]


class OutputQuery:
    """What a read asks of one output, checked when made.

    Attributes:
        mime_type: exactly this representation; None picks by
            :data:`jcli_sidecar.read.mime.AUTO_ORDER`.
        offset, limit: a text window in code points (text, JSON, tracebacks).
        max_response_bytes: cap on the serialised envelope (default 32 MiB),
            measured as the JSON a client prints.
        binary: keep image ``data`` as bytes (for the msgpack wire); the
            default is canonical base64 text.
        view: convert the selected image (or render the selected SVG) for a
            host, in memory (see :func:`jcli_sidecar.read.imageview.view_spec`).
        agent_text: also carry, as ``agent_text``, the strings every client
            shows beside the data (:func:`jcli_sidecar.read.agent_text.agent_strings`).
        text_only: the model takes no image input: a selected image is told
            as text (:mod:`jcli_sidecar.read.withheld`), and no view is made
            (a chart asked for with ``--as`` is told as text, not rendered).

    Raises:
        InvalidWindow: a bad ``offset``/``limit``.
        UsageError: a bad ``max_response_bytes`` or a non-string ``mime_type``.

    Example:
        >>> OutputQuery(limit=10)
        OutputQuery(mime_type=None, offset=0, limit=10, max_response_bytes=None, binary=False, view=None, agent_text=False, text_only=False, render_asked=False)
    """

    # A plain class, not a dataclass: importing dataclasses costs every cold read milliseconds.
    __slots__ = ("mime_type", "offset", "limit", "max_response_bytes", "binary", "view", "agent_text", "text_only", "render_asked")

    def __init__(
        self,
        mime_type: str | None = None,
        offset: int = 0,
        limit: int | None = None,
        max_response_bytes: int | None = None,
        binary: bool = False,
        view: ViewSpec | None = None,
        agent_text: bool = False,
        text_only: bool = False,
    ) -> None:
        check_window(offset, limit)
        check_max_response_bytes(max_response_bytes)
        if mime_type is not None and not isinstance(mime_type, str):
            raise UsageError(f"mime_type must be a string, got {mime_type!r}")
        self.mime_type = mime_type
        self.offset = offset
        self.limit = limit
        self.max_response_bytes = max_response_bytes
        self.binary = binary
        self.view = None if text_only else view  # nothing is converted for a model that takes no images
        #: ``--as`` was given: a chart is selected (and, text-only, told as text instead of rendered).
        self.render_asked = view is not None and view.as_mime_type is not None
        self.agent_text = agent_text
        self.text_only = text_only

    def __repr__(self) -> str:
        return "OutputQuery(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"

    @property
    def converting(self) -> bool:
        """True when the selection is converted to another image type (``--as``)."""
        return self.view is not None and self.view.as_mime_type is not None


#: The query of a plain read: automatic MIME, whole text, default cap.
DEFAULT_QUERY = OutputQuery()


def source_label(source: dict[str, Any]) -> str:
    """The one human line saying where an envelope's data came from.

    Example:
        >>> source_label({"kind": "run", "run_id": "r1", "output_index": 0})
        'run r1 output 0'
        >>> source_label({"kind": "notebook", "path": "/p/a.ipynb", "cell_index": 4, "mapping": "id",
        ...               "requested_path": "a.py", "requested_cell_index": 3})
        '/p/a.ipynb cell 4 (from a.py cell 3, by id)'
    """
    if source.get("kind") == "run":
        label = f"run {source.get('run_id')}"
    else:
        label = f"{source.get('path')} cell {source.get('cell_index')}"
    if "output_index" in source:
        label += f" output {source['output_index']}"
    if source.get("kind") != "run" and source.get("mapping") not in (None, "direct"):
        label += f" (from {source.get('requested_path')} cell {source.get('requested_cell_index')}, by {source['mapping']})"
    return label


def _labelled(source: dict[str, Any]) -> dict[str, Any]:
    source["label"] = source_label(source)
    return source


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
        return _Output(kind, {}, {}, error={"ename": ename, "evalue": evalue, "traceback": strip_ansi_lines(tb)})
    if kind in ("display_data", "execute_result"):
        data = raw.get("data")
        if not isinstance(data, dict):
            raise OutputDataInvalid(f"{where} ({kind}) has no data bundle", output_index=index)
        count = raw.get("execution_count")
        if kind != "execute_result" or not isinstance(count, int):
            count = None
        return _Output(kind, data, metadata, execution_count=count)
    raise OutputDataInvalid(f"{where} has an unknown output_type {kind!r}", output_index=index)


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
        chart = next((m for m in out.available if mimes.chart_kind(m)), None)
        if chart is not None:
            entry["renders_as"] = {"mime_type": chart, "read_with": mimes.RENDER_HINT}
        sizes = {}
        for mime, value in out.bundle.items():
            try:
                sizes[mime] = representations.checked(mime, value).size(mime, value)
            except OutputDataInvalid:
                sizes[mime] = None
        entry["bytes"] = sizes
        entry["metadata"] = out.metadata
        if out.execution_count is not None:
            entry["execution_count"] = out.execution_count
    return entry


def output_envelope(
    raw: Any,
    output_index: int,
    source: dict[str, Any],
    query: OutputQuery = DEFAULT_QUERY,
    memo: tuple[Any, Any] = (None, None),
) -> dict[str, Any]:
    """The schema-v1 envelope of one stored output (nbformat-shaped ``raw``).

    Shared by notebook reads and inline-run reads; image values may be
    base64 text (notebooks) or bytes (run files). ``memo`` is
    ``(NotebookFile or None, key)`` for keeping decoded images. ``source``
    gains its ``label``. The response cap (and the agent text) is applied by :func:`fit_response`.

    Raises:
        OutputDataInvalid, MimeNotFound, InvalidWindow, and with ``view``
        UsageError, ImageTooLarge, RenderFailed, RendererUnavailable.
    """
    out = _parse_output(raw, output_index)
    envelope: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "source": _labelled(source),
        "output_type": out.output_type,
        "available_mime_types": out.available,
    }
    mime_type, offset, limit = query.mime_type, query.offset, query.limit
    if out.output_type in ("stream", "error") and query.converting:
        raise UsageError(f"--as converts images, SVG and charts; output {output_index} is a {out.output_type}")
    if out.output_type == "stream":
        _check_mime(mime_type, out, output_index)
        envelope["stream"] = {"name": out.stream_name, **_text_block(out.text, offset, limit)}
    elif out.output_type == "error":
        _check_mime(mime_type, out, output_index)
        envelope["error"] = _error_block(out.error, offset, limit)
    else:
        if mime_type is None and query.render_asked:
            # converting: the best image representation, SVG source included, else a chart
            images = [m for m in out.available if mimes.is_raster_image(m) or m == "image/svg+xml"]
            mime_type = mimes.auto_select(images) or next((m for m in out.available if mimes.chart_kind(m)), None)
        chosen = _check_mime(mime_type, out, output_index)
        envelope["metadata"] = out.metadata
        if out.execution_count is not None:
            envelope["execution_count"] = out.execution_count
        notebook, key = memo
        selected = _select(chosen, out.bundle[chosen], query, (notebook, (key, chosen)))
        if query.text_only and (selected.get("encoding") == "base64" or "withheld" in selected):
            from .withheld import withheld_image

            selected = withheld_image(selected, out.bundle)
        envelope["selected"] = selected
    return envelope


def catalog_envelope(outputs: list[Any], source: dict[str, Any], cell_type: str = "code") -> dict[str, Any]:
    """The catalog document of a list of nbformat-shaped outputs; ``source`` gains its ``label``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "source": _labelled(source),
        "cell_type": cell_type,
        "output_count": len(outputs),
        "outputs": [_catalog_entry(raw, i) for i, raw in enumerate(outputs)],
    }


def fit_response(envelope: dict[str, Any], query: OutputQuery = DEFAULT_QUERY) -> dict[str, Any]:
    """Finish ``envelope`` for ``query``: return it if it fits the response cap, else ``OUTPUT_TOO_LARGE``.

    With ``query.agent_text`` it first gains ``agent_text``, so the cap
    measures what the client prints.
    """
    if query.agent_text:
        from .agent_text import agent_strings

        envelope["agent_text"] = agent_strings(envelope)
    return _fit(envelope, check_max_response_bytes(query.max_response_bytes))


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


def _select(mime: str, value: Any, query: OutputQuery, memo) -> dict[str, Any]:
    kind = representations.checked(mime, value)
    if kind is representations.IMAGE_KIND:
        return _select_image(mime, value, query, memo)
    if query.render_asked and mimes.chart_kind(mime) is not None:
        return _render_chart(mime, value, query)
    if query.converting:
        return _render_svg(mime, value, kind, query)
    if kind is representations.TEXT_KIND:
        return {"mime_type": mime, **_text_block(join_text(value, mime), query.offset, query.limit)}
    return _select_json(mime, value, query)


def _select_image(mime: str, value: Any, query: OutputQuery, memo) -> dict[str, Any]:
    if query.offset or query.limit is not None:
        raise InvalidWindow(f"offset/limit apply to text; {mime} is an image")
    notebook, key = memo
    known = notebook.memo if notebook is not None and notebook.memo is not None else {}
    data = known.get(key)
    if data is None:
        data = representations.IMAGE_KIND.payload(mime, value)  # checked: base64 text, or a run's bytes
        if notebook is not None and not isinstance(value, (bytes, bytearray)):
            notebook.remember(key, data, len(data))
    facts: dict[str, Any] = {}
    if query.view is not None:
        from .imageview import view_image

        mime, data, facts = view_image(mime, data, query.view)
    return _image_block(mime, data, query.binary, facts)


def _render_svg(mime: str, value: Any, kind: representations.Representation, query: OutputQuery) -> dict[str, Any]:
    if mime != "image/svg+xml" or kind is not representations.TEXT_KIND:
        raise UsageError(f"--as converts images, SVG and charts; the selected representation is {mime}")
    if query.offset or query.limit is not None:
        raise InvalidWindow("offset/limit apply to text; the SVG is being rendered as an image")
    from .imageview import render_svg

    assert query.view is not None  # converting
    shown, data, facts = render_svg(join_text(value, mime), query.view)
    return _image_block(shown, data, query.binary, facts)


def _render_chart(mime: str, value: Any, query: OutputQuery) -> dict[str, Any]:
    if query.offset or query.limit is not None:
        raise InvalidWindow(f"offset/limit apply to text; the {mime} chart is being rendered as an image")
    from .charts import render_chart

    if query.text_only:  # told as text, like an image a text-only model is sent: nothing is rendered
        from .withheld import WITHHELD_ENCODING, WITHHELD_WHY

        return {"mime_type": mime, "encoding": WITHHELD_ENCODING, "bytes": len(dump_json(value)), "withheld": WITHHELD_WHY}
    assert query.view is not None  # converting
    shown, data, facts = render_chart(mime, value, query.view)
    return _image_block(shown, data, query.binary, facts)


def _select_json(mime: str, value: Any, query: OutputQuery) -> dict[str, Any]:
    serialised = json_text(value)
    if is_whole(len(serialised), query.offset, query.limit):
        return {"mime_type": mime, "encoding": "json", "bytes": len(dump_json(value)), "data": value}
    # Never a partial JSON value: a cut is text, and says so.
    return {"mime_type": mime, "serialization": "json", **_text_block(serialised, query.offset, query.limit)}


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
