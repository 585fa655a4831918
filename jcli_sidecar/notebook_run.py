"""Notebook runs (``j-cli exec SESSION --file x.ipynb|x.py [--cell SPEC]``).

Outputs go only into the notebook: each cell's raw outputs and
``execution_count`` are written back as the cell finishes (under the
notebook lock, temp file plus rename, mode kept), so a crash keeps the
finished cells. Before each write the target cell must still hold the
source that ran, else ``NOTEBOOK_OUT_OF_SYNC`` and nothing is overwritten.
A ``.py`` pair first brings its ``.ipynb`` in line (``pairsync``).
"""

from __future__ import annotations

import os

from .errors import CellNotFound, JcliError, NotebookOutOfSync, OutputSaveFailed, UsageError
from .exec_result import build_result
from .kernel_client import KernelConnection
from .locks import notebook_lock
from .nbwrite import read_for_update, write_notebook
from .notebook import join_text
from .pairing import is_percent, normalize_source, paired_notebook_path, parse_percent
from .protocol import SCHEMA_VERSION
from .runtime import ensure_runtime_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["is_notebook_file", "parse_cell_spec", "run_notebook"]


def is_notebook_file(path: str) -> bool:
    """An ``.ipynb``, or a ``.py`` with ``# %%`` markers (a pair)."""
    if path.endswith(".ipynb"):
        return True
    if not path.endswith(".py"):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return is_percent(fh.read())
    except OSError:
        return False


def parse_cell_spec(spec: str | None, count: int) -> list[int]:
    """Cell indexes for ``N``, ``A:B`` (B excluded, as in Python), ``A:`` or ``:B``; None is all.

    Raises:
        UsageError: not one of those forms.
        CellNotFound: ``N`` outside the file.

    Example:
        >>> parse_cell_spec("1:3", 5), parse_cell_spec(":2", 5), parse_cell_spec("4", 5)
        ([1, 2], [0, 1], [4])
    """
    if spec is None:
        return list(range(count))
    text = spec.strip()
    try:
        if ":" not in text:
            index = int(text)
            if index < 0:
                raise ValueError
            if index >= count:
                raise CellNotFound(f"cell {index} is outside the file ({count} cells)", cell_count=count)
            return [index]
        first, _, last = text.partition(":")
        start = int(first) if first.strip() else 0
        stop = int(last) if last.strip() else count
        if start < 0 or stop < 0 or ":" in last:
            raise ValueError
    except ValueError:
        raise UsageError(f"bad cell spec {spec!r}: use N, A:B, A: or :B with indexes >= 0") from None
    return list(range(start, min(stop, count)))


def _prepare(file_path: str, kernel_name: str | None) -> tuple[str, dict[str, Any], list[int] | None, dict[str, int] | None]:
    """``(notebook path, notebook, py_to_nb or None, sync report or None)``."""
    from .notebook import read_file_bytes

    path = os.path.abspath(file_path)
    if path.endswith(".ipynb"):
        return path, read_for_update(path), None, None
    from .pairsync import sync_notebook

    py_cells = parse_percent(read_file_bytes(path).decode("utf-8", "replace"))
    nb_path = paired_notebook_path(path)
    with notebook_lock(ensure_runtime_dir(create=True), nb_path):
        current = read_for_update(nb_path) if os.path.exists(nb_path) else None
        synced, py_to_nb, report = sync_notebook(py_cells, current, kernel_name)
        if current is None or synced != current:
            try:
                write_notebook(nb_path, synced)
            except OSError as exc:
                raise OutputSaveFailed(f"cannot write {nb_path}: {exc.strerror or exc}", executed=False) from None
    return nb_path, synced, py_to_nb, report


def checkpoint_seconds() -> float:
    """``JCLI_CHECKPOINT_SECONDS`` (default 10): how often a long cell's partial outputs are saved."""
    try:
        value = float(os.environ.get("JCLI_CHECKPOINT_SECONDS", "10"))
    except ValueError:
        return 10.0
    return value if value >= 0 else 10.0


def _write_back(nb_path: str, index: int, cell_id: str | None, ran: str, result) -> None:
    with notebook_lock(ensure_runtime_dir(create=True), nb_path):
        nb = read_for_update(nb_path)
        cells = nb["cells"]
        if cell_id is not None:
            found = [i for i, c in enumerate(cells) if isinstance(c, dict) and c.get("id") == cell_id]
            index = found[0] if len(found) == 1 else -1
        cell = cells[index] if 0 <= index < len(cells) else None
        if (
            not isinstance(cell, dict)
            or cell.get("cell_type") != "code"
            or normalize_source(join_text(cell.get("source", ""), "source")) != normalize_source(ran)
        ):
            raise NotebookOutOfSync(
                f"{nb_path} changed while the cell ran: the cell no longer holds the code that ran; its outputs were not written",
                executed=True,
            )
        cell["outputs"] = result.outputs
        cell["execution_count"] = result.execution_count
        if getattr(result, "partial", False):
            cell.setdefault("metadata", {})["jcli"] = {"running": True}
        elif isinstance(cell.get("metadata"), dict):
            cell["metadata"].pop("jcli", None)
        try:
            write_notebook(nb_path, nb)
        except OSError as exc:
            raise OutputSaveFailed(f"cannot write {nb_path}: {exc.strerror or exc}", executed=True) from None


def run_notebook(
    server,
    session: dict[str, Any],
    file_path: str,
    cell_spec: str | None,
    *,
    timeout: float | None,
    on_cell: Callable[..., None],
    on_output: Callable[..., None] | None = None,
) -> dict[str, Any]:
    """Run the chosen code cells in order, writing each back as it finishes.

    ``on_cell(line=...)`` receives the per-cell JSON line as soon as the cell
    is written back. Stops at the first cell that raised or failed.

    Returns:
        The summary document.
    """
    nb_path, nb, py_to_nb, report = _prepare(file_path, session.get("kernel_name"))
    count = len(nb["cells"])
    chosen = parse_cell_spec(cell_spec, count)
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "notebook": nb_path,
        "cells_run": 0,
        "cells_failed": 0,
    }
    if report is not None:
        summary["sync"] = report
    with KernelConnection(server, session["kernel_id"]) as kernel:  # one connection for every cell
        return _run_cells(kernel, nb, nb_path, chosen, py_to_nb, session, summary, timeout, on_cell, on_output)


def _run_cells(kernel, nb, nb_path, chosen, py_to_nb, session, summary, timeout, on_cell, on_output) -> dict[str, Any]:
    for requested in chosen:
        index = py_to_nb[requested] if py_to_nb is not None else requested
        cell = nb["cells"][index]
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = join_text(cell.get("source", ""), "source")
        line: dict[str, Any] = {"cell_index": requested, "notebook_cell_index": index, "cell_id": cell.get("id")}
        try:
            hook = _checkpointing(nb_path, index, cell.get("id"), source, on_output)
            result = kernel.execute(source, timeout=timeout, on_output=hook)
            _write_back(nb_path, index, cell.get("id"), source, result)
        except JcliError as err:
            line.update({"schema_version": SCHEMA_VERSION, "status": "error", "code": err.code, "message": err.message})
            line.update({k: v for k, v in err.details.items() if k not in line})
            summary.update(status="error", cells_failed=summary["cells_failed"] + 1, stopped_at=requested, code=err.code)
            on_cell(line=line)
            return summary
        doc = build_result(result, session_id=session["id"], kernel_id=session["kernel_id"])
        line = {**line, **doc}
        summary["cells_run"] += 1
        on_cell(line=line)
        if doc["status"] == "error":
            summary.update(status="error", cells_failed=summary["cells_failed"] + 1, stopped_at=requested)
            return summary
    return summary


class _Partial:
    """What a checkpoint writes: the outputs so far, no execution count yet."""

    __slots__ = ("outputs", "execution_count", "partial")

    def __init__(self, outputs: list[dict[str, Any]]) -> None:
        self.outputs = outputs
        self.execution_count = None
        self.partial = True


def _checkpointing(nb_path: str, index: int, cell_id: str | None, source: str, on_output):
    """An ``on_output`` hook that also saves partial outputs every period.

    A person watching the notebook in JupyterLab sees a long cell progress.
    A checkpoint that cannot be written is skipped: the final write-back
    reports any real problem.
    """
    import time

    period = checkpoint_seconds()
    last = [time.monotonic()]

    def hook(event: str, output: dict[str, Any], index_: int, outputs: list, chunk: str | None) -> None:
        if on_output is not None:
            on_output(event=event, output=output, index=index_, outputs=outputs, chunk=chunk)
        now = time.monotonic()
        if now - last[0] >= period:
            last[0] = now
            try:
                _write_back(nb_path, index, cell_id, source, _Partial([dict(o) for o in outputs]))
            except JcliError:
                pass

    return lambda **kw: hook(kw["event"], kw["output"], kw["index"], kw["outputs"], kw.get("chunk"))
