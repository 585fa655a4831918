"""Settling lost jobs: the next sidecar of a workspace ends the records its dead predecessor left ``running``.

A sidecar killed (SIGKILL, a crash) mid-job leaves its record ``running``
(readers already see it ``lost``: :func:`~jcli_sidecar.runs.jobs.job_view`)
and, when a long cell's checkpoint had landed, that cell marked
``metadata.jcli.running`` in the notebook. When a sidecar starts for the
workspace, :func:`settle_lost_jobs` (the one documented repair step) takes
each such job: under the notebook's write-back lock, the running cell's
mark is removed (its checkpointed outputs stay: the last consistent state),
then the record is rewritten ``lost`` for good, saying what was saved and
which marks went. Reads never do this.
"""

from __future__ import annotations

import time

from ..base import JcliError
from .jobs import LOST_NOTE, JobRecord, list_jobs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RUNNING_MARK", "clear_running_mark", "settle_lost_jobs"]

#: What a checkpoint writes into a running cell's metadata (``metadata.jcli``).
RUNNING_MARK = {"running": True}


def clear_running_mark(notebook: str, index: int) -> bool:
    """Remove the ``running`` mark of cell ``index`` of ``notebook``, keeping its outputs; whether one was removed.

    Under the notebook's write-back lock; a cell without the mark (another
    program saved over it, the cells moved) is left as it is.

    Raises:
        JcliError: the notebook cannot be read or written, or the lock taken.
        OSError: the new file cannot be written.
    """
    from ..ipynb import CellWriter, load_notebook
    from ..pair import notebook_write_lock

    with notebook_write_lock(notebook):
        cells = load_notebook(notebook).get("cells")
        if not isinstance(cells, list) or not 0 <= index < len(cells) or not isinstance(cells[index], dict):
            return False
        cell = cells[index]
        metadata = cell.get("metadata")
        if not isinstance(metadata, dict) or metadata.get("jcli") != RUNNING_MARK:
            return False
        outputs = cell.get("outputs", [])

        def clear(found: Any) -> None:
            meta = found.get("metadata") if isinstance(found, dict) else None
            if not isinstance(meta, dict) or meta.get("jcli") != RUNNING_MARK:
                from ..base import NotebookOutOfSync

                raise NotebookOutOfSync("the cell lost its running mark meanwhile", no_mark=True)
            meta.pop("jcli", None)
            found["outputs"] = outputs  # the checkpoint's, as the notebook holds them

        refused = CellWriter(notebook).update_cells([(index, cell.get("id") if isinstance(cell.get("id"), str) else None, clear)])[0]
        return refused is None


def _settle(cwd: str, view: dict[str, Any]) -> dict[str, Any]:
    """End one lost job's record (after clearing its running cell's mark); what was done."""
    job_id = str(view["job_id"])
    done: dict[str, Any] = {"job_id": job_id, "marks_cleared": []}
    notebook, running = view.get("notebook"), view.get("running_cell")
    if view.get("kind") == "notebook" and isinstance(notebook, str) and isinstance(running, int) and not isinstance(running, bool):
        try:
            if clear_running_mark(notebook, running):
                done["marks_cleared"] = [running]
        except (JcliError, OSError, ValueError, RecursionError) as exc:
            done["mark_error"] = exc.message if isinstance(exc, JcliError) else type(exc).__name__
    record = JobRecord.open(cwd, job_id)
    try:
        last = record.doc.get("updated_ns")
        record.update(
            state="lost",
            finished_ns=last if isinstance(last, int) else time.time_ns(),
            lost={"last_update_ns": last, "note": LOST_NOTE, "settled_ns": time.time_ns(), **done},
            kernel_may_be_running=True,
        )
    finally:
        record.close()
    return done


def settle_lost_jobs(cwd: str) -> list[dict[str, Any]]:
    """End every lost job of the workspace ``cwd`` (see the module); one entry per job settled.

    Best effort: a job that cannot be settled stays as it is (it still reads ``lost``).
    """
    settled = []
    for view in list_jobs(cwd):
        if view.get("state") != "lost" or "lost" not in view or view.get("lost", {}).get("settled_ns"):
            continue
        try:
            settled.append(_settle(cwd, view))
        except (JcliError, OSError):  # not settled now: it stays lost, and a later pass settles it
            continue
    return settled
