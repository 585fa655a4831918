"""Upstream jupyter-jcli 0.9.7's field names in ``j-cli -j exec -f`` lines, beside ours.

Scripts written for upstream read, from each cell's line, ``status``,
``cell`` (``cell_index``, ``source_preview``, ``outputs``,
``execution_count``), ``notebook_updated`` and, on the first line of a run
that created the notebook, ``notebook_created``; from the last line,
``summary`` (``cells_executed``, ``notebook_updated``). A run's lines carry
them too, with the same meaning; j-cli's own fields stay as they are.

``cell.outputs`` has upstream's shapes: ``stream`` (``name``, ``text``),
``error`` (``ename``, ``evalue``, ``traceback`` without terminal colours), ``image`` (``mime``; a raster image),
``html`` (``html``), ``execute_result`` (``text``: any output with plain
text) and else ``display_data`` (``keys``: its MIME types). Like every
exec document they are bounded (:data:`~jcli_sidecar.kernel.exec_result.TEXT_BUDGET`
characters, :data:`~jcli_sidecar.kernel.exec_result.ITEM_BUDGET` items); when
something was cut, ``cell.truncated`` is true.
"""

from __future__ import annotations

from ..base import strip_ansi
from .exec_result import ITEM_BUDGET, TEXT_BUDGET

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SOURCE_PREVIEW_CHARS", "cell_fields", "source_preview", "summary_fields"]

#: How much of a cell's source ``cell.source_preview`` shows (newlines become spaces).
SOURCE_PREVIEW_CHARS = 80


def source_preview(source: str) -> str:
    """The first :data:`SOURCE_PREVIEW_CHARS` characters of ``source``, on one line.

    Example:
        >>> source_preview("x = 1\\nx")
        'x = 1 x'
    """
    return source.replace("\r\n", "\n").replace("\n", " ")[:SOURCE_PREVIEW_CHARS]


def cell_fields(cell_index: int, source: str, outputs: list[dict[str, Any]], execution_count: int | None) -> dict[str, Any]:
    """Upstream's ``cell`` object of one cell's line.

    Example:
        >>> cell_fields(1, "print(1)", [{"output_type": "stream", "name": "stdout", "text": "1\\n"}], 3)["outputs"]
        [{'type': 'stream', 'name': 'stdout', 'text': '1\\n'}]
    """
    budget = _Budget()
    shown = [_output(output, budget) for output in outputs[:ITEM_BUDGET]]
    cell: dict[str, Any] = {
        "cell_index": cell_index,
        "source_preview": source_preview(source),
        "outputs": shown,
        "execution_count": execution_count,
    }
    if budget.cut or len(outputs) > ITEM_BUDGET:
        cell["truncated"] = True
    return cell


def summary_fields(cells_run: int, notebook_updated: bool) -> dict[str, Any]:
    """Upstream's ``summary`` object of a run's last line."""
    return {"cells_executed": cells_run, "notebook_updated": notebook_updated}


class _Budget:
    """The text left for a line's outputs; remembers whether anything was cut."""

    __slots__ = ("left", "cut")

    def __init__(self) -> None:
        self.left = TEXT_BUDGET
        self.cut = False

    def take(self, text: str) -> str:
        kept = text[: self.left]
        self.left -= len(kept)
        self.cut = self.cut or len(kept) < len(text)
        return kept


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def _output(output: dict[str, Any], budget: _Budget) -> dict[str, Any]:
    kind = output.get("output_type")
    if kind == "stream":
        return {"type": "stream", "name": output.get("name"), "text": budget.take(_text(output.get("text")))}
    if kind == "error":
        traceback = [budget.take(strip_ansi(str(line))) for line in output.get("traceback") or []]
        return {
            "type": "error",
            "ename": output.get("ename"),
            "evalue": budget.take(str(output.get("evalue", ""))),
            "traceback": [line for line in traceback if line],
        }
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    image = next((mime for mime in data if isinstance(mime, str) and mime.startswith("image/") and mime != "image/svg+xml"), None)
    if image is not None:
        return {"type": "image", "mime": image}
    if "text/html" in data:
        return {"type": "html", "html": budget.take(_text(data["text/html"]))}
    if "text/plain" in data:
        return {"type": "execute_result", "text": budget.take(_text(data["text/plain"]))}
    return {"type": "display_data", "keys": list(data)}
