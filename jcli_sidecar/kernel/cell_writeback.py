"""Writing a running notebook's cells back: each cell's target, one splice for several, when to write, checkpoints.

A notebook run (:class:`~jcli_sidecar.kernel.notebook_run.NotebookRun`)
writes each finished cell's outputs into the notebook under the write-back
lock, only where the cell still holds the source that ran
(:class:`CellTarget`); finished cells may wait a little and go together
(:class:`WritebackPacer`, :func:`write_back_all`); a long cell's partial
outputs are saved every period (:class:`Checkpoint`). What a write-back
needs is tried before any code is sent (:func:`check_writable`).
"""

from __future__ import annotations

import os
import time

from ..base import JcliError, NotebookChanged, NotebookOutOfSync, OutputSaveFailed, clean_dead_temps, os_error, stall_point, temp_path
from ..ipynb import dumps_cell, join_text, stat_key
from ..pair import normalize_source, notebook_write_lock
from ..read import RAN_KEY
from .cell_timing import EXECUTION_METADATA, TIMING_KEYS
from .exec_result import ExecutionResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..ipynb import CellWriter
    from .output_collector import OutputEvent

    #: A hook: called with keyword arguments only.
    Hook = Callable[..., None]

__all__ = ["CellTarget", "Checkpoint", "WritebackPacer", "check_writable", "fill_cell", "write_back_all"]


def check_writable(nb_path: str, cells: list[Any]) -> None:
    """Try everything a write-back needs, before any code is sent.

    Every cell must encode as it stands, outputs aside (nothing in it the
    writer cannot write), the runtime dir must be safe and the write-back lock takeable,
    and the notebook's directory must take a new file (the temp file of the
    atomic replace). Temp files an earlier write-back left there when it
    was killed are cleaned up here (:func:`~jcli_sidecar.base.tempnames.clean_dead_temps`).

    Raises:
        OutputSaveFailed: any of these fails (``executed: false``).
        RuntimeDirUnsafe: the runtime dir is unsafe (``executed: false``).
    """
    try:
        for cell in cells:
            if isinstance(cell, dict):
                dumps_cell(cell).encode("utf-8")
    except (ValueError, TypeError, RecursionError) as exc:
        raise OutputSaveFailed(
            f"{nb_path} could not be written back as it stands ({type(exc).__name__}); nothing was run", executed=False
        ) from None
    with notebook_write_lock(nb_path, executed=False):
        clean_dead_temps(os.path.realpath(nb_path))
        try:
            probe = temp_path(os.path.realpath(nb_path), "tmp")
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
            os.unlink(probe)
        except OSError as exc:
            folder = os.path.dirname(nb_path)
            raise os_error(exc, "write-into", folder, note="; nothing was run", executed=False) from None


class CellTarget:
    """Where one cell's outputs go: its notebook's writer, its place, and the source that ran."""

    __slots__ = ("writer", "nb_path", "index", "cell_id", "source", "marked", "ran")

    def __init__(self, writer: CellWriter, index: int, cell_id: str | None, source: str, ran: dict[str, Any] | None = None) -> None:
        self.writer = writer
        self.nb_path = writer.path
        self.index = index
        self.cell_id = cell_id
        self.source = source
        #: The outputs of this cell's checkpoint the notebook holds (marked ``metadata.jcli.running``); None when it holds none.
        self.marked: list[dict[str, Any]] | None = None
        #: The run record a final write-back leaves in ``metadata.jcli_ran`` (:mod:`jcli_sidecar.read.staleness`); None: none.
        self.ran = ran

    def edit(self, result: ExecutionResult) -> Callable[[Any], None]:
        """What writing ``result`` does to the cell found, if it still holds the source that ran (:func:`fill_cell`).

        The edit raises :class:`NotebookOutOfSync` when the cell changed (or went) while it ran.
        """
        nb_path = self.nb_path

        def edit(cell: Any) -> None:
            if (
                not isinstance(cell, dict)
                or cell.get("cell_type") != "code"
                or normalize_source(join_text(cell.get("source", ""), "source")) != normalize_source(self.source)
            ):
                raise NotebookOutOfSync(
                    f"{nb_path} changed while the cell ran: the cell no longer holds the code that ran; its outputs were not written",
                    executed=True,
                )
            fill_cell(cell, result, self.ran)
            stall_point("write-back:checkpoint" if result.partial else "write-back:final")

        return edit

    def live_edit(self, result: ExecutionResult, notes: list[str]) -> Callable[[Any], None]:
        """What writing ``result`` does to the cell in a shared document (:meth:`edit`'s fields), where the person may be typing.

        A cell whose source the person changed while it ran keeps their
        source and gets the outputs of the code that ran, without a run
        record (it reads stale), and ``notes`` says so; a cell that is no
        longer a code cell is refused (:class:`NotebookOutOfSync`), as on the file.
        """
        nb_path = self.nb_path

        def edit(cell: Any) -> None:
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                raise NotebookOutOfSync(
                    f"{nb_path}: the cell that ran is no longer a code cell in the shared document; its outputs were not written",
                    executed=True,
                )
            edited = normalize_source(join_text(cell.get("source", ""), "source")) != normalize_source(self.source)
            if edited:
                notes.append(
                    f"cell {self.cell_id!r} was edited in the shared document while it ran: it keeps that source, "
                    "and the outputs of the code that ran (it reads stale)"
                )
            fill_cell(cell, result, None if edited else self.ran)

        return edit

    def write_back(self, result: ExecutionResult) -> None:
        """Write ``result`` into the cell (see :meth:`edit`).

        Raises:
            NotebookOutOfSync: the cell changed (or went) while it ran.
            OutputSaveFailed: the notebook could not be written.
        """
        refused = write_back_all(self.writer, [(self, result)])[0]
        if refused is not None:
            raise refused

    def after_failed_save(self, execution_count: int | None) -> str:
        """What the notebook holds of this cell once its final write-back failed; clears a checkpoint's mark first.

        Returns:
            ``"unchanged"``: no checkpoint of this run landed, the cell is as
            it was before. ``"marks_cleared"``: a checkpoint had landed; its
            ``running`` mark is now gone (the cell keeps the checkpoint's
            outputs and gets ``execution_count``). ``"checkpoint"``: that
            write failed too; the cell holds the last checkpoint, marked
            ``running``.
        """
        outputs = self.marked
        if outputs is None:
            return "unchanged"
        source = normalize_source(self.source)

        def clear(cell: Any) -> None:
            if not isinstance(cell, dict) or normalize_source(join_text(cell.get("source", ""), "source")) != source:
                raise NotebookOutOfSync("the cell changed", executed=True)
            metadata = cell.get("metadata")
            if not isinstance(metadata, dict) or metadata.get("jcli") != {"running": True}:
                raise NotebookOutOfSync("no running mark", no_mark=True)  # another program's version without it: left as it is
            metadata.pop("jcli", None)
            if cell.get("execution_count") is None:
                cell["execution_count"] = execution_count
            cell["outputs"] = outputs  # the checkpoint's, as the notebook holds them

        try:
            with notebook_write_lock(self.nb_path, executed=True):
                refused = self.writer.update_cells([(self.index, self.cell_id, clear)], "write-back:swap:clear")[0]
                if refused is not None and not refused.details.get("no_mark"):
                    return "checkpoint"
        except NotebookChanged as err:  # yet another save: it stays, and this copy of it is not ours to keep
            _drop_kept(err)
            return "checkpoint"
        except (JcliError, OSError, ValueError, RecursionError):  # that write failed too: reported as "checkpoint" (documented above)
            return "checkpoint"
        self.marked = None
        return "marks_cleared"


def fill_cell(cell: dict[str, Any], result: ExecutionResult, ran: dict[str, Any] | None) -> None:
    """Put ``result`` into a code cell (a dict): outputs, count, the running mark, the run record, the run's times.

    A partial result also marks the cell ``metadata.jcli.running`` (and
    drops an older run record); a final one clears that mark and leaves
    the run record ``ran`` (``metadata.jcli_ran``) when there is one. The
    cell's ``metadata.execution`` becomes the run's timing (nbclient's
    ``record_timing``; what is known so far for a checkpoint), and an older
    run's goes.
    """
    cell["outputs"] = result.outputs
    cell["execution_count"] = result.execution_count
    metadata = cell.get("metadata")
    if not isinstance(metadata, dict):
        metadata = cell["metadata"] = {}
    if result.partial:
        metadata["jcli"] = {"running": True}
    else:
        metadata.pop("jcli", None)
    if ran is not None and not result.partial:
        metadata[RAN_KEY] = ran
    else:  # outputs not made by a whole run of this source: no record
        metadata.pop(RAN_KEY, None)
    if result.timing:  # this run's times (a checkpoint's so far), never an older run's
        metadata[EXECUTION_METADATA] = {key: result.timing[key] for key in TIMING_KEYS if key in result.timing}
    else:
        metadata.pop(EXECUTION_METADATA, None)


def write_back_all(writer: CellWriter, cells: list[tuple[CellTarget, ExecutionResult]]) -> list[JcliError | None]:
    """Write several cells' results in one splice, under the lock; each cell's coded error, or None where it was written.

    A notebook that cannot be read or written fails every cell alike.
    """
    nb_path = writer.path
    stall = "write-back:swap:checkpoint" if any(result.partial for _target, result in cells) else "write-back:swap:final"
    try:
        with notebook_write_lock(nb_path, executed=True):
            try:
                answers = writer.update_cells([(target.index, target.cell_id, target.edit(result)) for target, result in cells], stall)
            except NotebookChanged as err:
                err.details["executed"] = True
                raise
            except OSError as exc:
                raise os_error(exc, "write", nb_path, executed=True) from None
            except (ValueError, RecursionError) as exc:  # the notebook changed into something the writer cannot write
                raise OutputSaveFailed(f"cannot write {nb_path} ({type(exc).__name__})", executed=True) from None
    except JcliError as err:
        return [err] + [_copy_error(err) for _ in cells[1:]]
    for (target, result), answer in zip(cells, answers, strict=True):
        if answer is None:
            target.marked = result.outputs if result.partial else None
    return answers


def _copy_error(err: JcliError) -> JcliError:
    """The same coded error for another cell (each cell's line adds its own details)."""
    import copy

    twin = copy.copy(err)
    twin.details = dict(err.details)
    return twin


class WritebackPacer:
    """When finished cells are written back: at once, unless writing the notebook costs a real share of the run.

    Each write-back copies the whole file (by the kernel, but still in its
    size), so a re-run of many quick cells of a big notebook would spend
    most of its time writing. The pacer queues finished cells while less
    than ``pace`` times the last write's duration has passed since it
    ended, so writing takes at most about ``1 / (1 + pace)`` of the run;
    a small notebook (a write of a millisecond or two) is written after
    every cell. Nothing is queued once the file's ``fstat`` key differs
    from the writer's own last write (someone else wrote it): the queued
    cells are written, and checked, at once.
    """

    __slots__ = ("pace", "cost", "done")

    def __init__(self, pace: float) -> None:
        self.pace = pace
        self.cost = 0.0
        self.done = time.monotonic()

    def due(self, writer: CellWriter) -> bool:
        if writer.key is None or time.monotonic() - self.done >= self.pace * self.cost:
            return True
        try:
            return stat_key(os.stat(writer.path)) != writer.key
        except (OSError, ValueError):  # the notebook cannot be looked at now: a write-back is due, and it reports what it meets
            return True

    def wrote(self, started: float) -> None:
        self.done = time.monotonic()
        self.cost = self.done - started


class Checkpoint:
    """The ``on_output`` hook a cell runs with: passes each change on, and saves partial outputs every period.

    A person watching the notebook in JupyterLab sees a long cell progress.
    A checkpoint that cannot be written is skipped: the final write-back
    reports any real problem.
    """

    __slots__ = ("target", "period", "on_output", "last", "flush")

    def __init__(self, target: CellTarget, period: float | None, on_output: Hook | None, flush: Callable[[], None]) -> None:
        self.target = target
        self.period = period
        self.on_output = on_output
        self.last = time.monotonic()
        self.flush = flush  # the finished cells still queued are written first

    def __call__(
        self, event: OutputEvent, output: dict[str, Any], index: int, outputs: list[dict[str, Any]], chunk: str | None = None
    ) -> None:
        if self.on_output is not None:
            self.on_output(event=event, output=output, index=index, outputs=outputs, chunk=chunk)
        now = time.monotonic()
        if self.period is not None and now - self.last >= self.period:
            self.last = now
            self.flush()
            try:
                self.target.write_back(ExecutionResult([dict(o) for o in outputs], partial=True))
            except NotebookChanged as err:  # another program saved meanwhile: the final write-back goes into its version
                _drop_kept(err)
            except Exception:  # the final write-back reports what is wrong
                pass


def _drop_kept(err: NotebookChanged) -> None:
    """Remove the copy a checkpoint kept aside: the final write-back supersedes its partial outputs."""
    kept = err.details.get("kept")
    if isinstance(kept, str):
        try:
            os.unlink(kept)
        except OSError:  # already gone, or not ours to remove: the copy is only a leftover
            pass
