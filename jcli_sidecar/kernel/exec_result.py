"""The result of ``j-cli exec``: status, bounded text, and one item per output.

The text budget is one rule, defined here: at most :data:`TEXT_BUDGET`
characters and :data:`ITEM_BUDGET` items, with an explicit notice when
anything was left out.
"""

from __future__ import annotations

from ..base import EXECUTION_ERROR_ALIASES, SCHEMA_VERSION, strip_ansi_lines
from ..ipynb import join_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ExecutionResult", "ITEM_BUDGET", "TEXT_BUDGET", "build_result", "needs_store", "output_text"]

TEXT_BUDGET = 4000
ITEM_BUDGET = 20


class ExecutionResult:
    """What one execution produced.

    ``partial`` marks a snapshot taken while the code still runs (a
    checkpoint): the outputs so far, no execution count yet. ``sent`` is
    true once the request went to the kernel: from then on the code may have
    run, and these are the outputs captured so far. ``dropped`` is the first
    line of the notice the server sent when it dropped output (its IOPub
    rate limit: ``"IOPub data rate exceeded."``), else None. ``user_expressions``
    is the reply's evaluation of the request's ``user_expressions``.
    ``timing`` holds when the kernel went busy, took the input, replied and
    went idle, as nbclient records them (:mod:`~jcli_sidecar.kernel.cell_timing`);
    empty until the first of them arrives. ``frame`` describes the cell's
    result when it is a pandas or polars DataFrame or Series
    (:mod:`~jcli_sidecar.kernel.frame_view`), else None.
    """

    __slots__ = (
        "status",
        "execution_count",
        "outputs",
        "error",
        "notes",
        "partial",
        "sent",
        "dropped",
        "user_expressions",
        "timing",
        "frame",
    )

    def __init__(self, outputs: list[dict[str, Any]] | None = None, *, partial: bool = False) -> None:
        self.status = "ok"
        self.execution_count: int | None = None
        self.outputs: list[dict[str, Any]] = [] if outputs is None else outputs
        self.error: dict[str, Any] | None = None
        self.notes: list[str] = []
        self.partial = partial
        self.sent = False
        self.dropped: str | None = None
        self.user_expressions: dict[str, Any] | None = None
        self.timing: dict[str, str] = {}
        self.frame: dict[str, Any] | None = None


def _join(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(x) for x in value)
    return value if isinstance(value, str) else ""


def output_text(output: dict[str, Any]) -> str:
    """The plain text a person would see for one output."""
    kind = output.get("output_type")
    if kind == "stream":
        return _join(output.get("text"))
    if kind == "error":
        return f"{output.get('ename', '')}: {output.get('evalue', '')}"
    data = output.get("data") or {}
    return _join(data.get("text/plain"))


def _item(index: int, output: dict[str, Any]) -> dict[str, Any]:
    kind = output.get("output_type")
    if kind == "stream":
        return {"type": "stream", "output_index": index, "name": output.get("name"), "text": output_text(output)}
    if kind == "error":
        return {
            "type": "error",
            "output_index": index,
            "ename": output.get("ename"),
            "evalue": output.get("evalue"),
            "traceback": strip_ansi_lines(output.get("traceback", [])),
        }
    data = output.get("data") or {}
    item: dict[str, Any] = {"type": "display", "output_index": index, "output_type": kind, "mime_types": list(data)}
    if "text/plain" in data:
        item["text"] = output_text(output)
    return item


def _bounded(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with their texts (``text``, ``traceback``) sharing one :data:`TEXT_BUDGET`; a cut item says ``truncated``.

    A run whose outputs are not stored (a notebook run's cell: its outputs
    are in the notebook) carries them here, so one big output never makes
    a line bigger than the budget.
    """
    left = TEXT_BUDGET
    bounded = []
    for item in items:
        item = dict(item)
        text = item.get("text")
        if isinstance(text, str):
            item["text"] = text[:left]
            left -= len(item["text"])
            if len(text) > len(item["text"]):
                item["truncated"] = True
        traceback = item.get("traceback")
        if isinstance(traceback, list):
            kept = []
            for line in traceback:
                line = line if isinstance(line, str) else str(line)
                kept.append(line[:left])
                left -= len(kept[-1])
                if len(line) > len(kept[-1]):
                    item["truncated"] = True
                    break
            item["traceback"] = kept
        bounded.append(item)
    return bounded


def _described_output(result: ExecutionResult) -> int | None:
    """The index of the ``execute_result`` that :attr:`ExecutionResult.frame` describes (the last one), or None."""
    if not isinstance(result.frame, dict):
        return None
    found = [i for i, out in enumerate(result.outputs) if out.get("output_type") == "execute_result"]
    return found[-1] if found else None


def _frame_text(frame: dict[str, Any]) -> str:
    from .frame_view import frame_text

    try:
        return frame_text(frame)
    except Exception as exc:  # a kernel's answer we could not read: say so, never fail the run's result
        return f"{frame.get('library')} {frame.get('kind')}: not described ({type(exc).__name__})"


def build_result(
    result: ExecutionResult,
    *,
    session_id: str,
    kernel_id: str,
    stored: list[dict[str, Any]] | None = None,
    run: dict[str, Any] | None = None,
    partial: bool = False,
) -> dict[str, Any]:
    """The exec document printed in JSON mode.

    ``text`` is the bounded, human-readable transcript; ``status`` is
    ``"error"`` when the code raised. ``outputs`` has, for each output, one
    item per stored payload file (``{type, output_index, mime, path, bytes}``;
    images are ``type: "image"``) or else a text summary; bounded too.
    ``run`` names the stored run (``run_id``, ``manifest``) when there is one.
    The item of an ``execute_result`` whose value was a pandas or polars
    DataFrame or Series has ``frame``: its description as text (columns
    with dtypes and null counts, the index, a head and tail), at most
    :data:`~jcli_sidecar.kernel.frame_view.FRAME_CHARS` characters.

    ``partial`` is for a run cut short (a timeout, the kernel dying, a
    signal, a failure of j-cli's own): the document is what was captured
    until then, with ``status: "error"`` and ``partial: true``. Output the
    server dropped (its IOPub rate limit) makes ``truncated`` true, with a
    note, and ``dropped`` holds the first line of the server's notice.

    Example:
        >>> from jcli_sidecar.kernel.exec_result import ExecutionResult
        >>> r = ExecutionResult(); r.outputs = [{"output_type": "stream", "name": "stdout", "text": "hi\\n"}]
        >>> build_result(r, session_id="s", kernel_id="k")["text"]
        'hi\\n'
    """
    texts = []
    for output in result.outputs:
        text = output_text(output)
        if text:
            texts.append(text if text.endswith("\n") or output.get("output_type") == "stream" else text + "\n")
    full = "".join(texts)
    by_output: dict[int, list[dict[str, Any]]] = {}
    for item in stored or []:
        by_output.setdefault(item["output_index"], []).append(item)
    items = []
    described = _described_output(result)
    for i, out in enumerate(result.outputs):
        these = by_output.get(i) or [_item(i, out)]
        if i == described:
            these = [{**these[0], "frame": _frame_text(result.frame)}, *these[1:]]
        items.extend(these)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": "error" if partial or result.status == "error" else "ok",
        "session_id": session_id,
        "kernel_id": kernel_id,
        "execution_count": result.execution_count,
        "text": full[:TEXT_BUDGET],
        "truncated": False,
        "outputs": _bounded(items[:ITEM_BUDGET]),
    }
    left_out = []
    if len(full) > TEXT_BUDGET:
        left_out.append(f"{len(full) - TEXT_BUDGET} more characters of text")
    elif any(item.get("truncated") for item in doc["outputs"]):
        left_out.append("part of the outputs' text")
    if len(items) > ITEM_BUDGET:
        left_out.append(f"{len(items) - ITEM_BUDGET} more outputs")
    if partial:
        doc["partial"] = True
    if run is not None:
        doc["run"] = run
    notices = []
    if left_out:
        where = f"; the full record: j-cli output show {run['run_id']}" if run else ""
        notices.append("left out: " + " and ".join(left_out) + where)
    if result.dropped is not None:
        doc["dropped"] = result.dropped
        notices.append("the Jupyter Server dropped output (its IOPub rate limit); no record holds it")
    if notices:
        doc["truncated"] = True
        doc["truncation_notice"] = "; ".join(notices)
    if result.status == "error" and result.error:
        doc["error"] = {
            **result.error,
            "traceback": strip_ansi_lines(result.error.get("traceback")),
            "code_aliases": list(EXECUTION_ERROR_ALIASES),  # upstream jupyter-jcli's code for code that raised
        }
    if result.notes:
        doc["notes"] = list(result.notes)
    return doc


def needs_store(outputs: list[dict[str, Any]], text_budget: int = TEXT_BUDGET) -> bool:
    """True when a run has any rich MIME, or more text than the budget: its outputs are kept on disk.

    A short, text-only result creates nothing on disk.
    """
    total = 0
    for output in outputs:
        kind = output.get("output_type")
        if kind in ("display_data", "execute_result"):
            data = output.get("data") or {}
            if any(m != "text/plain" for m in data):
                return True
            total += len(join_text(data.get("text/plain", ""), "text"))
        elif kind == "stream":
            total += len(join_text(output.get("text", ""), "text"))
        elif kind == "error":
            total += sum(len(line) for line in output.get("traceback") or [])
    return total > text_budget
