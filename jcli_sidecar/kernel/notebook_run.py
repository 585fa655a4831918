"""Notebook runs, modelled on nbclient's ``NotebookClient``: one options object in, named hooks out.

:class:`NotebookRun` runs a notebook's chosen code cells in order, in one
kernel, over one connection. Outputs go only into the notebook: each cell's
raw outputs and ``execution_count`` are written back as the cell finishes
(under the notebook lock, temp file plus rename, mode kept; only the cell's
bytes are new, see :mod:`jcli_sidecar.ipynb.nbsplice`), so a crash keeps the
finished cells. In a notebook big enough that writing it takes a real share
of the run, finished cells wait a little and are written together
(:class:`WritebackPacer`); a cell's ``on_cell_complete`` always comes once it is in
the file, so its line is never ahead of the notebook. Before each write the target cell must still hold
the source that ran, else ``NOTEBOOK_OUT_OF_SYNC`` and nothing is
overwritten. A long cell's partial outputs are saved every
:attr:`RunOptions.checkpoint_seconds`. A ``.py`` pair first brings its
``.ipynb`` in line (``pairsync``).

Everything a write-back needs (the notebook encodes, its directory takes a
new file, the runtime dir and the lock are usable) is tried in
:meth:`NotebookRun.prepare`, before any code is sent. A cell cut short
(``TIMEOUT``, ``KERNEL_DIED``, ``INTERRUPTED``) gets the outputs it
produced until then, never stale ones, and no ``running`` mark; its error
line says ``executed: true`` and carries them as ``result``.

As in nbclient, a cell whose code raises stops the run unless the run
allows errors (:attr:`RunOptions.allow_errors`) or the cell is tagged
``raises-exception`` (in the notebook's ``metadata.tags``, or on a ``.py``'s
marker): then the run goes on, and the kernel is asked not to discard what
follows (``stop_on_error`` false). As in nbclient, a code cell whose source
is only whitespace, or that is tagged ``skip-execution``, is not sent to
the kernel and is left as it is (the summary lists it in ``skipped``); and
a display shown with an id (``display(..., display_id=True)``) is updated
wherever this run showed it: a later cell's ``handle.update(...)`` (or a new
output with the same id) rewrites the earlier cell's outputs in the
notebook, written back with the next write-back (the later cell's line
names the cells it changed in ``displays_updated``). Each cell's ``metadata.execution`` gets
the kernel's times of its run (nbclient's ``record_timing``), and its line
``timing``. :attr:`RunOptions.run_timeout` bounds the whole run
(:class:`~jcli_sidecar.kernel.run_budget.RunBudget`).

The run prints nothing: callers attach hooks (the CLI prints JSON lines or
live output; a sidecar could hold the kernel connection and stream).
"""

from __future__ import annotations

import os
import time

from ..base import (
    EXECUTION_ERROR_ALIASES,
    SCHEMA_VERSION,
    CellNotFound,
    Interrupted,
    JcliError,
    NotebookOutOfSync,
    ParametersInvalid,
    RoomLost,
    Timeout,
    UsageError,
    internal_error,
    stall_point,
)
from ..ipynb import CellWriter, join_text, metadata_tags, parse_cell_spec
from ..pair import paired_notebook_path
from ..read import SKIP_EXECUTION_TAG, RunLedger
from .cell_timing import timing_fields
from .cell_writeback import CellTarget, Checkpoint, WritebackPacer, check_writable, write_back_all
from .display_mode import in_display_mode
from .exec_result import ExecutionResult, build_result
from .jsonl_compat import cell_fields, summary_fields
from .kernel_client import KernelConnection
from .notebook_open import open_live, open_notebook
from .output_collector import DisplayIds
from .run_budget import RunBudget, per_cell_note
from .run_options import RunOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..ipynb import NotebookIndex
    from .inline_run import OpenKernel
    from .jupyter_api import JupyterServer
    from .live_notebook import LiveNotebook
    from .parameters import Parameters
    from .stop_switch import StopSwitch

    #: A hook: called with keyword arguments only (see :class:`NotebookRun`).
    Hook = Callable[..., None]

__all__ = ["NotebookRun", "RAISES_EXCEPTION_TAG", "SKIP_EXECUTION_TAG"]

#: The cell tag that lets a cell's code raise without stopping the run (nbclient's).
RAISES_EXCEPTION_TAG = "raises-exception"


class NotebookRun:
    """One run of a notebook's code cells; hooks are attributes, called with keyword arguments.

    - ``on_notebook_start(notebook, cell_indexes)``: the cells are chosen and
      about to run; ``notebook`` is the notebook's path and ``cell_indexes``
      the file indexes of the code cells that will run, in order (the run
      stops early at a cell that raised, unless errors are allowed, or
      failed, or when ``run_timeout`` ran out).
    - ``on_cell_start(cell_index, cell)``: a code cell is about to run.
      ``cell_index`` counts cells as the file does (a pair's ``.py`` cells);
      ``cell`` is the notebook's cell.
    - ``on_output(event, output, index, outputs, chunk)``: the running cell's
      outputs changed, as :meth:`KernelConnection.execute` reports it
      (``event`` is one of ``output_collector.OUTPUT_EVENTS``).
    - ``on_cell_complete(cell_index, line)``: the cell ran and its outputs are
      in the notebook; ``line`` is its JSON document, with the cell's
      ``timing`` (``started``, ``ended``, ``duration_s``). Code that raised is a
      result too (``line["status"] == "error"``); the run stops after it,
      unless ``allow_errors``, or the cell is tagged ``raises-exception``
      (then ``line["expected_error"]`` is true).
    - ``on_cell_error(cell_index, line, error)``: j-cli could not run the cell
      or save its outputs; ``error`` is the coded :class:`JcliError` and
      ``line`` its document (``executed`` says whether the code was sent;
      once it was, ``result`` is what the cell printed, ``partial: true``
      when it was cut short). The run stops.

    Every line (and the summary) also carries upstream jupyter-jcli's field
    names (:mod:`jcli_sidecar.kernel.jsonl_compat`).

    Every cell that starts ends in exactly one of the last two. Unlike
    nbclient, ``on_cell_error`` is not about the code raising: that is a
    result, as it is for ``j-cli exec -c``.

    Example:
        >>> run = NotebookRun("report.py", RunOptions(cells="2:", timeout=60))
        >>> run.on_cell_complete = print_line  # doctest: +SKIP
        >>> summary = run.execute(server, session)  # doctest: +SKIP
    """

    __slots__ = (
        "path",
        "options",
        "on_notebook_start",
        "on_cell_start",
        "on_output",
        "on_cell_complete",
        "on_cell_error",
        "nb_path",
        "cells",
        "writer",
        "handed",
        "summary",
        "_chosen",
        "_py_to_nb",
        "_stop",
        "_created",
        "_updated",
        "_pending",
        "_pacer",
        "_halted",
        "_executed",
        "_budget",
        "_tagged",
        "_py_tags",
        "_displays",
        "_ran",
        "_refresh",
        "_injected",
        "_ledger",
        "sent",
        "live",
        "live_reason",
        "_live_done",
        "_went_live",
    )

    def __init__(self, path: str, options: RunOptions | None = None) -> None:
        self.path = path
        self.options = options if options is not None else RunOptions()
        self.on_notebook_start: Hook | None = None
        self.on_cell_start: Hook | None = None
        self.on_output: Hook | None = None
        self.on_cell_complete: Hook | None = None
        self.on_cell_error: Hook | None = None
        self.nb_path: str | None = None
        #: The notebook's cells without their outputs (``cell_type``, ``id``, ``metadata``, ``source``).
        self.cells: list[Any] = []
        self.writer: CellWriter | None = None
        #: The offset index the run's last write-back left (None: none or unknown), for a sidecar to adopt.
        self.handed: NotebookIndex | None = None
        self.summary: dict[str, Any] = {}
        self._chosen: list[int] = []
        self._py_to_nb: list[int] | None = None
        self._stop: StopSwitch | None = None
        self._created: str | None = None  # the notebook this run created (for notebook_created), as the caller named it
        self._updated = False  # whether any cell was written back
        #: Cells run but not yet written back: ``(target, result, line)`` (see :class:`WritebackPacer`).
        self._pending: list[tuple[CellTarget, ExecutionResult, dict[str, Any]]] = []
        self._pacer = WritebackPacer(self.options.writeback_pace)
        self._halted = False  # a checkpoint's write of the queued cells failed: stop after this cell
        #: Whether any code went to the kernel (from then on every failure says ``executed: true``).
        self.sent = False
        self._executed = 0  # cells that ran to their end (``summary.cells_executed``), saved or not
        self._budget = RunBudget(self.options.run_timeout)
        self._tagged: set[int] = set()  # file indexes of the cells run that are tagged raises-exception
        self._py_tags: list[list[str]] | None = None  # a pair's tags on its .py markers, by .py cell
        self._displays = DisplayIds()  # where each display id was shown in this run, by notebook index
        #: The cells this run ran to their end that showed a display id, by notebook index: ``(target, result, file index)``,
        #: for a later display update to rewrite.
        self._ran: dict[int, tuple[CellTarget, ExecutionResult, int]] = {}
        self._refresh: set[int] = set()  # notebook indexes of ran cells a later display update changed, not yet rewritten
        self._injected: int | None = None  # a pair's injected parameters cell (notebook index), run without a .py index
        self._ledger: RunLedger | None = None  # the cells' run records: what is stale, what each cell run records
        #: The notebook open in a collaboration room, when the caller joined it: the run reads and writes through it.
        self.live: LiveNotebook | None = None
        #: Why the run writes through a room or not (the summary's ``live_reason``); None: the caller did not look for one.
        self.live_reason: str | None = None
        self._live_done: list[tuple[CellTarget, ExecutionResult]] = []  # cells written through the room, for a fallback to rewrite
        self._went_live = False  # whether any output went through the room (then the file is the server's to write)

    def execute(
        self,
        server: JupyterServer,
        session: dict[str, Any],
        *,
        stop: StopSwitch | None = None,
        open_kernel: OpenKernel = KernelConnection,
    ) -> dict[str, Any]:
        """Prepare, then run the chosen cells over one connection to the session's kernel.

        ``session`` is a session summary (``id``, ``kernel_id``); ``stop``
        (a ``stop_switch.StopSwitch``) lets a signal interrupt the run;
        ``open_kernel`` opens the connection, as for an inline run
        (:func:`~jcli_sidecar.kernel.inline_run.run_inline`).

        Returns:
            The summary document.

        Raises:
            JcliError: what :meth:`prepare` raises, or the kernel cannot be
                reached. A cell's own failure is never raised: it goes to
                ``on_cell_error`` and into the summary.
        """
        self.prepare()
        stall_point("prepared")
        with open_kernel(server, session["kernel_id"]) as kernel:  # one connection for every cell
            return self.run_cells(kernel, session["id"], stop=stop)

    def prepare(self) -> dict[str, Any]:
        """Bring a pair's notebook in line, read the notebook and choose the cells.

        Returns:
            The summary so far: nothing run yet, and a pair's ``sync`` report.

        A notebook whose cells share an id is repaired first (later copies
        get fresh ids, ``ids_renewed`` in the summary); a file that asks for
        another kernel than the session's is refused (or noted, see
        :func:`~jcli_sidecar.kernel.kernel_request.check_session_kernel`).

        Raises:
            UsageError, CellNotFound: a bad ``cells`` spec, or ``cells`` with ``stale``.
            CellIdDuplicate: a ``.py``'s markers repeat an id.
            KernelMismatch: the file asks for another kernel than the session's.
            OutputSaveFailed: a pair's notebook could not be written, or the
                notebook could not be written back (``executed: false``).
            RuntimeDirUnsafe: the runtime dir (where the lock lives) is unsafe.
        """
        if self.options.stale and self.options.cells is not None:
            raise UsageError("--stale chooses the cells to run itself (the stale ones, in order); it does not combine with --cell")
        if self.live is not None:
            self.live_reason = self.live.reason
            try:
                return self._prepare()
            except RoomLost as err:  # before any code: the whole preparation again, by the file
                self._fall_back(err, "before the run")
        return self._prepare()

    def _prepare(self) -> dict[str, Any]:
        parameters = self.options.parameters
        if parameters is not None:
            self._check_parameters()
        pair_existed = self.path.endswith(".ipynb") or os.path.lexists(paired_notebook_path(os.path.realpath(os.path.abspath(self.path))))
        opened = open_notebook(self.path, self.options) if self.live is None else open_live(self.live, self.path, self.options)
        self.nb_path, self.cells, self._py_to_nb, report = opened.nb_path, opened.cells, opened.py_to_nb, opened.report
        self._py_tags = opened.py_tags
        if parameters is not None:
            self._inject(parameters)
        self.writer = CellWriter(self.nb_path)
        if not pair_existed:
            self._created = self.nb_path if os.path.isabs(self.path) else os.path.relpath(self.nb_path)
        self._chosen = parse_cell_spec(self.options.cells, len(self._py_to_nb) if self._py_to_nb is not None else len(self.cells))
        self._ledger = RunLedger(self.cells)
        if self.options.stale:
            stale = set(self._ledger.stale())  # a pair's injected parameters cell (no file index) runs whatever
            self._chosen = [requested for requested, index in self._placed() if index in stale and requested is not None]
        check_writable(self.nb_path, self.cells)
        self.summary = {
            "schema_version": SCHEMA_VERSION,
            "status": "ok",
            "notebook": self.nb_path,
            "cells_run": 0,
            "cells_failed": 0,
            "summary": summary_fields(0, False),
        }
        if self.options.stale:
            self.summary["stale"] = list(self._chosen)
        if report is not None:
            self.summary["sync"] = report
        if opened.renewed:
            self.summary["ids_renewed"] = opened.renewed
        if opened.notes:
            self.summary["notes"] = list(opened.notes)
        if parameters is not None:
            self.summary["parameters"] = parameters.values
        if self.live_reason is not None:
            self.summary.update(live=self.live is not None, live_reason=self.live_reason)
        return self.summary

    def _check_parameters(self) -> None:
        """Parameters go with a whole run of a Python kernel's notebook: checked before anything is written.

        Raises:
            ParametersInvalid: ``--cell`` was given too.
            ParametersUnsupportedKernel: the session's kernel is not Python.
        """
        from .parameters import check_parameters_language

        if self.options.cells is not None:
            raise ParametersInvalid("parameters apply to a whole notebook run, as papermill's; --cell runs only some cells")
        check_parameters_language(self.options.kernel_name, self.options.session_language())

    def _inject(self, parameters: Parameters) -> None:
        """Write the parameters' cell into the notebook (after its sync, for a pair); the run's cells read again.

        In a pair the injected cell is the notebook's only: it runs first of
        the cells after it, with no ``.py`` index (``cell_index: null``).
        """
        from .notebook_open import heads, read_heads
        from .parameters import PARAMETERS_TAG, inject_into, inject_parameters

        assert self.nb_path is not None
        tagged = [k for k, tags in enumerate(self._py_tags or []) if PARAMETERS_TAG in tags]  # a pair's: on its .py markers
        after = self._py_to_nb[tagged[0]] if tagged and self._py_to_nb is not None else None
        if self.live is not None:
            nb_path, live = self.nb_path, self.live
            at = live.edit(lambda nb: inject_into(nb, parameters, after, nb_path))
            self.cells = heads(live.document()["cells"])
        else:
            at = inject_parameters(self.nb_path, parameters, after)
            self.cells = read_heads(self.nb_path)
        if self._py_to_nb is not None:
            self._py_to_nb = [index + 1 if index >= at else index for index in self._py_to_nb]
            self._injected = at

    def code_cells(self) -> list[int | None]:
        """The file indexes of the code cells this run runs, in order (after :meth:`prepare`); skipped cells aside."""
        return [requested for requested, index in self._placed() if _is_code(self.cells[index]) and not self._skipped(requested, index)]

    def _tags(self, cell_index: int | None, nb_index: int) -> list[str]:
        """The cell's tags: the notebook's ``metadata.tags`` and a pair's ``.py`` marker's."""
        cell = self.cells[nb_index]
        found = metadata_tags(cell.get("metadata") if isinstance(cell, dict) else None)
        if self._py_tags is not None and cell_index is not None and cell_index < len(self._py_tags):
            found += self._py_tags[cell_index]
        return found

    def _skipped(self, cell_index: int | None, nb_index: int) -> str | None:
        """Why a code cell is not sent to the kernel (nbclient's rules), or None: ``empty``, ``skip-execution``."""
        if not join_text(self.cells[nb_index].get("source", ""), "source").strip():
            return "empty"
        return SKIP_EXECUTION_TAG if SKIP_EXECUTION_TAG in self._tags(cell_index, nb_index) else None

    def run_cells(self, kernel: KernelConnection, session_id: str, *, stop: StopSwitch | None = None) -> dict[str, Any]:
        """Run the prepared cells in order over ``kernel``, each written back as it finishes.

        Stops at the first cell that raised (unless it may, see
        :attr:`RunOptions.allow_errors`) or failed, when ``stop`` was tripped
        (the summary then says ``code: "INTERRUPTED"``), and when the run's
        budget ran out (``code: "TIMEOUT"``, ``not_run``).

        Returns:
            The summary document.
        """
        self._stop = stop
        code_cells = []
        for requested, index in self._placed():
            if not _is_code(self.cells[index]):
                continue
            reason = self._skipped(requested, index)
            if reason is None:
                code_cells.append((requested, index))
            else:
                self.summary.setdefault("skipped", []).append({"cell_index": requested, "reason": reason})
        if self.on_notebook_start is not None:
            self.on_notebook_start(notebook=self.nb_path, cell_indexes=[requested for requested, _ in code_cells])
        notes: list[str] = []
        if self.options.timeout_given and self.options.run_timeout is None and len(code_cells) > 1:
            notes.append(per_cell_note(self.options.timeout, len(code_cells)))
        self._budget.start()
        with in_display_mode(kernel, self.options.display_mode, notes=notes, stop=stop, timeout=self.options.timeout):
            try:
                for position, (requested, index) in enumerate(code_cells):
                    if stop is not None and stop.count:  # a signal between cells: the next one does not start
                        self.summary.setdefault("stopped_at", requested)
                        break
                    if self._budget.spent():
                        self._flush(session_id, kernel.kernel_id)
                        self._out_of_budget(self._budget.exhausted(requested), [r for r, _ in code_cells[position:]])
                        break
                    if not self._run_cell(kernel, session_id, requested, index) or self._halted:
                        if self.summary.get("run_timeout") is not None:
                            self.summary["not_run"] = [r for r, _ in code_cells[position + 1 :]]
                        break
            finally:
                self._flush(session_id, kernel.kernel_id)  # the cells still queued
                self._end_live()
                self.handed = self._hand_over()
        if stop is not None and stop.count:
            self.summary.update(status="error", code=Interrupted.code, signal=stop.signal_name)
        if notes:
            self.summary["notes"] = [*self.summary.get("notes", []), *notes]
        self.summary["summary"] = summary_fields(self._executed, self._updated)
        return self.summary

    def _out_of_budget(self, err: Timeout, not_run: list[int]) -> None:
        """The summary of a run whose budget ran out between cells: ``TIMEOUT``, and the cells that did not start."""
        if self.summary["status"] == "error" and self.summary.get("code") is not None:
            return  # a failure came first (a write-back): it stays the run's code
        self.summary.update(status="error", code=err.code, message=err.message, run_timeout=self._budget.seconds)
        self.summary.update(stopped_at=not_run[0], not_run=not_run)

    def _may_raise(self, cell_index: int | None, nb_index: int) -> bool:
        """Whether the cell is tagged ``raises-exception``: in the notebook, or on a pair's ``.py`` marker."""
        return RAISES_EXCEPTION_TAG in self._tags(cell_index, nb_index)

    def _hand_over(self) -> NotebookIndex | None:
        """The writer's index of the notebook as the run left it, kept for this process's next reads (best effort: None on any trouble)."""
        if self.writer is None or self._went_live:  # the server wrote the file: the writer's index is not of it
            return None
        try:
            return self.writer.hand_over()
        except Exception:  # a convenience: the run and its write-backs stand without it
            return None

    def _placed(self) -> list[tuple[int | None, int]]:
        """``(file index, notebook index)`` of each chosen cell; a pair's injected parameters cell has no file index (None)."""
        placed: list[tuple[int | None, int]] = [
            (requested, self._py_to_nb[requested] if self._py_to_nb is not None else requested) for requested in self._chosen
        ]
        if self._injected is not None:
            later = [k for k, (_, index) in enumerate(placed) if index > self._injected]
            placed.insert(later[0] if later else len(placed), (None, self._injected))
        return placed

    def _compat(self, cell_index: int | None, source: str, result: ExecutionResult, written: bool) -> dict[str, Any]:
        """Upstream's fields of one cell's line (:mod:`jcli_sidecar.kernel.jsonl_compat`); the first line names a created notebook."""
        fields: dict[str, Any] = {
            "cell": cell_fields(cell_index, source, result.outputs, result.execution_count),
            "notebook_updated": written,
        }
        if self._created is not None:
            fields["notebook_created"] = self._created
            self._created = None
        self._updated = self._updated or written
        return fields

    def _run_cell(self, kernel: KernelConnection, session_id: str, cell_index: int | None, nb_index: int) -> bool:
        """Run one code cell and queue its write-back (:meth:`_finish`); False stops the run."""
        cell = self.cells[nb_index]
        assert self.writer is not None and self._ledger is not None
        record = self._ledger.record_for(nb_index)
        target = CellTarget(self.writer, nb_index, cell.get("id"), join_text(cell.get("source", ""), "source"), record)
        line: dict[str, Any] = {"cell_index": cell_index, "notebook_cell_index": nb_index, "cell_id": target.cell_id}
        if self.on_cell_start is not None:
            self.on_cell_start(cell_index=cell_index, cell=cell)
        if self.live is not None and target.cell_id is not None:
            self._through_room(lambda live: live.cell_started(target.cell_id))
        result = ExecutionResult()
        written = False
        if self._may_raise(cell_index, nb_index):
            self._tagged.add(cell_index)
        timeout, budgeted = self._budget.cell_timeout(self.options.timeout)
        try:
            checkpoint = Checkpoint(
                target, self.options.checkpoint_seconds, self.on_output, self._flush_before_checkpoint(session_id, kernel)
            )
            if self.live is not None:  # each change goes to the room as it comes; no file checkpoints while it holds
                checkpoint.period = None
                checkpoint.on_output = self._live_outputs(checkpoint)
            kernel.execute(
                target.source,
                timeout=timeout,
                on_output=checkpoint,
                stop=self._stop,
                result=result,
                stop_on_error=not (self.options.allow_errors or cell_index in self._tagged),
                displays=self._displays,
                owner=nb_index,
                describe_result=True,
            )
        except Exception as exc:
            self._displays_changed(line)
            err = exc if isinstance(exc, JcliError) else internal_error(exc)
            if budgeted and isinstance(err, Timeout):
                self._budget.explain(err, cell_index)
            if timing := timing_fields(result.timing):
                line["timing"] = timing
            self._flush(session_id, kernel.kernel_id)  # the cells before it end first
            if result.sent:  # cut short: the cell shows what it printed until then, not an older run's outputs
                self.sent = True
                target.ran = None  # and keeps no run record: it is stale
                try:
                    if self.live is not None:
                        refused = self._write_live([(target, result)])[0]
                        if refused is not None:
                            raise refused
                    else:
                        target.write_back(result)
                    written = True
                except Exception as save_exc:
                    save_error = save_exc if isinstance(save_exc, JcliError) else internal_error(save_exc)
                    err.details["save_error"] = {"code": save_error.code, "message": save_error.message}
                    err.details["save_error"].update({k: v for k, v in save_error.details.items() if k in ("notebook", "kept")})
                    line["notebook_cell"] = target.after_failed_save(result.execution_count)
            line.update(self._compat(cell_index, target.source, result, written))
            return self._cell_failed(line, err, result, session_id, kernel.kernel_id, partial=True)
        self.sent = True
        self._executed += 1
        self._displays_changed(line)
        if nb_index in self._displays.outputs:  # it showed a display id: a later cell may update it (only those are kept)
            self._ran[nb_index] = (target, result, cell_index)
        if record is not None:  # the cells after it read from this run
            self._ledger.ran(nb_index, record)
        self._pending.append((target, result, line))
        if result.status != "ok" or self._pacer.due(target.writer) or (self._stop is not None and self._stop.count):
            return self._flush(session_id, kernel.kernel_id)
        return True

    # -- through a collaboration room ---------------------------------------

    def _through_room(self, call: Callable[[LiveNotebook], None]) -> bool:
        """``call(self.live)``; a lost room makes the run go on by the file (False)."""
        assert self.live is not None
        try:
            call(self.live)
        except RoomLost as err:
            self._fall_back(err, "during the run")
            return False
        self._went_live = True
        return True

    def _live_outputs(self, checkpoint: Checkpoint) -> Hook:
        """The running cell's ``on_output`` while the run writes through a room: the caller's hook, then the outputs to the room.

        Every :attr:`RunOptions.checkpoint_seconds` the server is asked to save
        the document (a long cell's outputs so far reach the file, as a run
        by the file checkpoints them). Once the room is lost, the cell's
        partial outputs are saved to the file every period again.
        """
        on_output, cell_id, period = self.on_output, checkpoint.target.cell_id, self.options.checkpoint_seconds

        def hook(event: Any, output: dict[str, Any], index: int, outputs: list[dict[str, Any]], chunk: str | None = None) -> None:
            if on_output is not None:
                on_output(event=event, output=output, index=index, outputs=outputs, chunk=chunk)
            if self.live is None or cell_id is None:
                return
            if not self._through_room(lambda live: live.outputs(cell_id, outputs)):
                checkpoint.period = period
                checkpoint.on_output = on_output
                return
            now = time.monotonic()
            if period is not None and now - checkpoint.last >= period:  # the server saves what the person sees so far
                checkpoint.last = now
                self._through_room(lambda live: live.checkpoint())

        return hook

    def _write_live(self, cells: list[tuple[CellTarget, ExecutionResult]]) -> list[JcliError | None]:
        """Each cell's final outputs, count and metadata written into the shared document; each cell's refusal or None.

        A cell the person deleted (or made a markdown cell) while it ran is
        refused as on the file (``NOTEBOOK_OUT_OF_SYNC``); one whose source
        they edited keeps their source (a note says so). A room lost on the
        way: these cells, and every cell written through it before, go to the file.
        """
        notes: list[str] = []
        answers: list[JcliError | None] = []
        for position, (target, result) in enumerate(cells):
            if self.live is None or target.cell_id is None:
                answers.extend(write_back_all(self.writer, cells[position:]) if self.writer is not None else [])
                break
            try:
                self.live.finish_cell(target.cell_id, target.live_edit(result, notes))
            except RoomLost as err:
                self._fall_back(err, "during the run")
                assert self.writer is not None
                answers.extend(write_back_all(self.writer, cells[position:]))
                break
            except CellNotFound:
                answers.append(
                    NotebookOutOfSync(
                        f"{target.nb_path}: the cell that ran was deleted in the shared document; its outputs were not written",
                        executed=True,
                    )
                )
                continue
            except JcliError as err:
                answers.append(err)
                continue
            self._went_live = True
            self._live_done.append((target, result))
            answers.append(None)
        if notes:
            self.summary.setdefault("notes", []).extend(notes)
        return answers

    def _end_live(self) -> None:
        """A run through a room ends with every write applied there and the document saved by the server (``saved``)."""
        if self.live is None:
            return
        try:
            self.summary.update(self.live.end())
        except RoomLost as err:
            self._fall_back(err, "at its end")

    def _fall_back(self, err: RoomLost, when: str) -> None:
        """The room is lost: the run goes on by the file, and the cells it wrote through the room are written to the file too."""
        reason = err.details.get("reason") or err.message
        self.live = None
        self.live_reason = f"the collaboration room was lost {when} ({reason}); j-cli wrote the file instead"
        if self.summary:
            self.summary.update(live=False, live_reason=self.live_reason)
        done, self._live_done = self._live_done, []
        if done and self.writer is not None:
            for (target, _result), refused in zip(done, write_back_all(self.writer, done), strict=True):
                if refused is not None:
                    self.summary.setdefault("notes", []).append(
                        f"cell {target.cell_id!r}: written through the room before it was lost, then not to the file ({refused.message})"
                    )
        self._went_live = False

    def _flush_before_checkpoint(self, session_id: str, kernel: KernelConnection) -> Callable[[], None]:
        """What a checkpoint does first: write the finished cells still queued, and those whose displays changed (a failure stops the run after the cell)."""

        def flush() -> None:
            if not self._flush(session_id, kernel.kernel_id):  # and earlier cells whose displays it updated
                self._halted = True

        return flush

    def _displays_changed(self, line: dict[str, Any]) -> None:
        """The earlier cells the running cell's display updates changed: queued to be written again, named in its line."""
        touched = sorted(self._displays.changed)
        self._displays.changed.clear()
        self._refresh.update(touched)
        updated = [self._ran[nb][2] for nb in touched if nb in self._ran]
        if updated:
            line["displays_updated"] = updated

    def _refreshes(self, pending: list[tuple[CellTarget, ExecutionResult, dict[str, Any]]]) -> list[tuple[CellTarget, ExecutionResult]]:
        """The ran cells a display update changed since their write-back, to be written again (those still queued go anyway)."""
        self._refresh.update(self._displays.changed)  # a checkpoint's write: the running cell's updates so far
        queued = {target.index for target, _result, _line in pending}
        again = [self._ran[nb][:2] for nb in sorted(self._refresh) if nb in self._ran and nb not in queued]
        self._refresh.clear()
        return again

    def _flush(self, session_id: str, kernel_id: str) -> bool:
        """Write every queued cell back in one splice, then end each (``on_cell_complete`` or ``on_cell_error``); False stops the run.

        Cells that ran earlier and whose displays a later cell updated are
        written again in the same splice; one that cannot be (its cell was
        edited since) keeps what it had, and the summary's ``notes`` say so.
        """
        pending, self._pending = self._pending, []
        again = self._refreshes(pending)
        if not pending and not again:
            return True
        assert self.writer is not None
        started = time.monotonic()
        try:
            cells = [(target, result) for target, result, _line in pending] + again
            answers = write_back_all(self.writer, cells) if self.live is None else self._write_live(cells)
        except Exception as exc:  # a bug of ours: each cell says so
            answers = [internal_error(exc) for _ in pending + again]
        self._pacer.wrote(started)
        for (target, _result), refused in zip(again, answers[len(pending) :], strict=True):
            if refused is not None:
                note = (
                    f"cell {self._ran[target.index][2]}: a later cell updated its display, which could not be written ({refused.message})"
                )
                self.summary.setdefault("notes", []).append(note)
        answers = answers[: len(pending)]
        going = True
        for (target, result, line), refused in zip(pending, answers, strict=True):
            going = self._finish(target, result, line, refused, session_id, kernel_id) and going
        return going

    def _finish(
        self, target: CellTarget, result: ExecutionResult, line: dict[str, Any], refused: JcliError | None, session_id: str, kernel_id: str
    ) -> bool:
        """End one cell whose write-back was tried; False stops the run."""
        cell_index = line["cell_index"]
        written = refused is None
        try:
            if refused is not None:
                line["notebook_cell"] = target.after_failed_save(result.execution_count)
                raise refused
            doc = build_result(result, session_id=session_id, kernel_id=kernel_id)
        except Exception as exc:
            err = exc if isinstance(exc, JcliError) else internal_error(exc)
            line.update(self._compat(cell_index, target.source, result, written))
            return self._cell_failed(line, err, result, session_id, kernel_id, partial=False)
        line = {**line, **doc, **self._compat(cell_index, target.source, result, written)}
        if timing := timing_fields(result.timing):
            line["timing"] = timing
        expected = doc["status"] == "error" and cell_index in self._tagged
        if expected:
            line["expected_error"] = True
        self.summary["cells_run"] += 1
        if self.on_cell_complete is not None:
            self.on_cell_complete(cell_index=cell_index, line=line)
        if expected:  # tagged raises-exception: allowed, and no failure
            self.summary.setdefault("expected_errors", []).append(cell_index)
            return True
        if doc["status"] == "error":
            self.summary.update(
                status="error",
                cells_failed=self.summary["cells_failed"] + 1,
                code_aliases=list(EXECUTION_ERROR_ALIASES),  # upstream jupyter-jcli's code for a cell that raised
            )
            self.summary.setdefault("failed_cells", []).append(cell_index)
            if self.options.allow_errors:
                return True
            self.summary["stopped_at"] = cell_index
            return False
        return True

    def _cell_failed(
        self, line: dict[str, Any], err: JcliError, result: ExecutionResult, session_id: str, kernel_id: str, *, partial: bool
    ) -> bool:
        """Report a cell j-cli could not run or save (``on_cell_error``); False stops the run."""
        if result.sent:
            err.details.update(executed=True, result=build_result(result, session_id=session_id, kernel_id=kernel_id, partial=partial))
        else:
            err.details.setdefault("executed", False)
        line.update({"schema_version": SCHEMA_VERSION, "status": "error", "code": err.code, "message": err.message})
        line.update({k: v for k, v in err.details.items() if k not in line})
        failed = self.summary["cells_failed"] + 1
        self.summary.update(status="error", cells_failed=failed, stopped_at=line["cell_index"], code=err.code)
        self.summary.setdefault("failed_cells", []).append(line["cell_index"])
        if err.details.get("run_timeout") is not None:
            self.summary.update(message=err.message, run_timeout=err.details["run_timeout"])
        if self.on_cell_error is not None:
            self.on_cell_error(cell_index=line["cell_index"], line=line, error=err)
        return False


def _is_code(cell: Any) -> bool:
    return isinstance(cell, dict) and cell.get("cell_type") == "code"
