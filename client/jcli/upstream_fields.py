"""Upstream jupyter-jcli 0.9.7's field names, added beside j-cli's in ``-j`` results.

Scripts written for upstream read these names; j-cli's own fields stay as
they are, and human output does not change. Each function returns the
document it was given, with upstream's names added (never replacing one of
j-cli's). A notebook run's JSON lines carry upstream's fields from the core
(:mod:`jcli_sidecar.kernel.jsonl_compat`).

=====================  ===========================================================
command                upstream's fields
=====================  ===========================================================
``healthcheck``        ``kernels_running`` (``kernels``)
``session create``     ``session_id`` (``id``), ``session_selector`` (the id: it always selects)
``exec -c``            ``output_manifest`` (``run.manifest``, when outputs were kept)
``notebook summary``   per cell ``index``, ``type``, and ``full_text`` when ``preview`` is the whole source
``notebook map``       ``python_path``; per cell ``python_index``, ``type``, ``alignment`` (``match``),
                       ``python_change``/``notebook_change`` (``change`` on the side that made it)
``vars``               ``session_selector``
=====================  ===========================================================
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["with_health", "with_inline", "with_map", "with_session", "with_summary", "with_vars"]


def _add(doc: dict[str, Any], **fields: Any) -> dict[str, Any]:
    for key, value in fields.items():
        doc.setdefault(key, value)
    return doc


def with_health(doc: dict[str, Any]) -> dict[str, Any]:
    """``healthcheck``: ``kernels_running``."""
    return _add(doc, kernels_running=doc.get("kernels"))


def with_session(row: dict[str, Any]) -> dict[str, Any]:
    """``session create``: ``session_id`` and ``session_selector``."""
    return _add(row, session_id=row.get("id"), session_selector=row.get("id"))


def with_inline(doc: dict[str, Any]) -> dict[str, Any]:
    """``exec -c``: ``output_manifest`` when the run's outputs were kept."""
    run = doc.get("run")
    if isinstance(run, dict) and isinstance(run.get("manifest"), str):
        _add(doc, output_manifest=run["manifest"])
    return doc


def with_summary(doc: dict[str, Any]) -> dict[str, Any]:
    """``notebook summary``: per cell ``index``, ``type`` and, for a cell shown whole, ``full_text``."""
    for cell in doc.get("cells") or ():
        _add(cell, index=cell.get("cell_index"), type=cell.get("cell_type"))
        if cell.get("preview_truncated") is False and isinstance(cell.get("preview"), str):
            _add(cell, full_text=cell["preview"])
    return doc


def with_map(doc: dict[str, Any]) -> dict[str, Any]:
    """``notebook map``: ``python_path``; per cell ``python_index``, ``type``, ``alignment`` and each side's change."""
    _add(doc, python_path=doc.get("py_path"))
    for cell in doc.get("cells") or ():
        side = cell.get("changed_on")
        change = cell.get("change")
        _add(
            cell,
            python_index=cell.get("py_index"),
            type=cell.get("cell_type"),
            alignment=cell.get("match"),
            python_change=change if side == "py" else None,
            notebook_change=change if side == "notebook" else None,
        )
    return doc


def with_vars(doc: dict[str, Any]) -> dict[str, Any]:
    """``vars``: ``session_selector`` (the session id)."""
    return _add(doc, session_selector=doc.get("session_id"))
