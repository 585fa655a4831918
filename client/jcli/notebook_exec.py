"""``j-cli exec SESSION --file x.ipynb|x.py [--cell SPEC]``: the command side of a notebook run.

The run itself is the core's :class:`~jcli_sidecar.kernel.notebook_run.NotebookRun`
(outputs go into the notebook, cell by cell). Here the arguments become its
:class:`~jcli_sidecar.kernel.notebook_run.RunOptions`, and hooks print: in JSON mode
one line per cell as it is written back, then the summary; in human mode the
outputs live (with ``--no-stream``, each cell's when it finishes), a cell's
coded error on stderr, then where the outputs went. On a terminal, human
mode also shows on stderr which cell of how many is starting
(``[cell 2/5] index 3``); piped, it does not. A run stopped by SIGINT or
SIGTERM ends with the summary (``code: "INTERRUPTED"``) and exits 130 or 143.
"""

from __future__ import annotations

import sys

from jcli_sidecar.base import JcliError, internal_error
from jcli_sidecar.kernel import NotebookRun, RunOptions, checkpoint_seconds_from_env, writeback_pace_from_env

from . import emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from jcli_sidecar.kernel import JupyterServer, StopSwitch

__all__ = ["join_live", "notebook_options", "run_notebook"]


def notebook_options(
    session: dict[str, Any],
    cell_spec: str | None,
    timeout: float | None,
    py_wins: bool = False,
    *,
    display_mode: str | None = None,
    no_stream: bool = False,
    any_kernel: bool = False,
    server: JupyterServer | None = None,
    runs: Any = None,
) -> RunOptions:
    """``--cell``, ``--timeout`` (resolved), ``--py-wins``, ``--display-mode``, ``--no-stream`` and ``--any-kernel``,
    this process's ``JCLI_CHECKPOINT_SECONDS`` and ``JCLI_WRITEBACK_PACE``, and the session's kernel.

    ``runs`` (``exec_cmd._RunLimits``) brings ``--run-timeout``, ``--allow-errors``,
    ``--stale``, whether ``--timeout`` was given, and the parameters (resolved here: a bad one is refused before anything runs).

    ``--no-stream`` saves no partial outputs of a running cell (only each
    cell's final write-back), in JSON mode as in human mode. The session
    kernel's language is asked of ``server`` (its kernelspecs) only when the
    run needs it.
    """
    kernel = session.get("kernel_name")
    return RunOptions(
        kernel_language=_language_of(server, kernel) if server is not None and isinstance(kernel, str) else None,
        any_kernel=any_kernel,
        cells=cell_spec,
        timeout=timeout,
        checkpoint_seconds=None if no_stream else checkpoint_seconds_from_env(),
        kernel_name=session.get("kernel_name"),
        py_wins=py_wins,
        display_mode=display_mode,
        writeback_pace=writeback_pace_from_env(),
        allow_errors=bool(runs is not None and runs.allow_errors),
        run_timeout=None if runs is None else runs.run_timeout,
        timeout_given=bool(runs is not None and runs.timeout_given),
        parameters=None if runs is None else runs.parameters(),
        stale=bool(runs is not None and runs.stale),
    )


def _language_of(server: JupyterServer, kernel: str) -> Callable[[], str | None]:
    """A function that asks the server which language kernel ``kernel`` speaks (None when it cannot tell)."""

    def ask() -> str | None:
        try:
            specs = server.kernelspecs()
        except (JcliError, OSError, ValueError):  # the server cannot tell: None (documented)
            return None
        table = specs.get("kernelspecs") if isinstance(specs, dict) else None
        entry = table.get(kernel) if isinstance(table, dict) else None
        spec = entry.get("spec") if isinstance(entry, dict) else None
        language = spec.get("language") if isinstance(spec, dict) else None
        return language if isinstance(language, str) else None

    return ask


def run_notebook(
    json_mode: bool,
    server: JupyterServer,
    session: dict[str, Any],
    file_path: str,
    options: RunOptions,
    *,
    stop: StopSwitch | None = None,
    live: bool = True,
    open_kernel: Any = None,
) -> int:
    """Run ``file_path``'s cells in the session's kernel, printing as they finish; returns the exit code.

    ``live`` (human mode) shows outputs as they arrive; else each cell's when it finishes.
    ``open_kernel`` opens the connection (default: a fresh one).
    """
    run = NotebookRun(file_path, options)
    if json_mode:
        run.on_cell_complete = _print_line
        run.on_cell_error = _print_line
    else:
        cells = _CellLines()
        cells.attach(run)
        if live:
            run.on_output = cells.on_output
            run.on_cell_error = _print_error
        else:
            _Finished(cells).attach(run)
    room = join_live(run, server, file_path, session)
    try:
        summary = (
            run.execute(server, session, stop=stop)
            if open_kernel is None
            else run.execute(server, session, stop=stop, open_kernel=open_kernel)
        )
    except Exception as exc:
        if not run.sent:
            raise  # nothing ran: the caller reports it (executed: false)
        err = exc if isinstance(exc, JcliError) else internal_error(exc)
        err.details.update(executed=True, cells_run=run.summary.get("cells_run", 0))
        return emit.error(err, json_mode)
    finally:
        if room is not None:
            room.close()
    if json_mode:
        emit.document(summary, True)
    else:
        for note in summary.get("notes", []):
            sys.stderr.write(f"j-cli: note: {note}\n")
        if isinstance(summary.get("parameters"), dict):
            said = ", ".join(f"{name}={value!r}" for name, value in summary["parameters"].items())
            sys.stderr.write(f"j-cli: parameters: {said}\n")
        if summary.get("live") is not None and (summary["live"] or "lost" in summary.get("live_reason", "")):
            sys.stderr.write(f"j-cli: live: {summary['live_reason']}\n")  # the run went through the room, or left it: say so
        if summary.get("message") and summary.get("stopped_at") not in summary.get("failed_cells", []):
            sys.stderr.write(f"j-cli: error [{summary.get('code')}]: {summary['message']}\n")  # no cell said it: it stopped between cells
        sys.stderr.write(f"[{summary['cells_run']} cell(s) run into {summary['notebook']}{_failures(summary)}]\n")
    if summary["status"] == "ok":
        return emit.EXIT_OK
    if summary.get("code") == "INTERRUPTED":
        from jcli_sidecar.base import Interrupted

        return emit.exit_code(Interrupted("", signal=summary.get("signal")))
    return emit.EXIT_FAILURE


def join_live(run: NotebookRun, server: JupyterServer, file_path: str, session: dict[str, Any]) -> Any:
    """Join the notebook's collaboration room when its server has one, and hand it to ``run`` (its outputs then land
    live in the person's document); returns the room to close after the run, or None (``run.live_reason`` says why)."""
    from jcli_sidecar.room import open_live_run

    name = session.get("name")
    room, run.live_reason = open_live_run(server, file_path, session=name if isinstance(name, str) else None)
    run.live = room
    return room


def _failures(summary: dict[str, Any]) -> str:
    """Human mode: which cells raised or failed, which raised as tagged, which did not start, which were skipped (the end of the last line)."""
    said = []
    for key, words in (("failed_cells", "failed"), ("expected_errors", "raised as tagged raises-exception"), ("not_run", "not run")):
        if summary.get(key):
            said.append(f"{words}: cell(s) {', '.join(str(i) for i in summary[key])}")
    if summary.get("skipped"):  # empty or tagged skip-execution: not run, as nbclient does
        said.append("skipped: " + ", ".join(f"cell {s['cell_index']} ({s['reason']})" for s in summary["skipped"]))
    return "".join(f"; {part}" for part in said)


def _print_line(cell_index: int, line: dict[str, Any], error: JcliError | None = None) -> None:
    """JSON mode's ``on_cell_complete`` and ``on_cell_error``: the cell's document, one line."""
    emit.document(line, True)


def _print_error(cell_index: int, line: dict[str, Any], error: JcliError) -> None:
    """Human mode's ``on_cell_error``: the code and message (the outputs were shown live)."""
    sys.stderr.write(f"j-cli: error [{error.code}]: {error.message}\n")


class _CellLines:
    """Human mode: a ``[cell I] K/N`` line on stdout as each code cell starts, and a read command for each rich output.

    ``I`` is the notebook's cell index, the one ``notebook output --cell``
    takes; an output with more than plain text gets
    ``MIME SIZE -> j-cli notebook output NB --cell I --output K`` (with ``--as image/png`` for a chart).
    """

    __slots__ = ("positions", "notebook", "running")

    def __init__(self) -> None:
        self.positions: dict[int, int] = {}
        self.notebook = ""
        self.running = -1

    def attach(self, run: NotebookRun) -> None:
        run.on_notebook_start = self.on_notebook_start
        run.on_cell_start = self.on_cell_start

    def on_notebook_start(self, notebook: str, cell_indexes: list[int]) -> None:
        self.notebook = notebook
        self.positions = {cell_index: number for number, cell_index in enumerate(cell_indexes, start=1)}

    def on_cell_start(self, cell_index: int, cell: dict[str, Any]) -> None:
        self.running = cell_index
        self.header(cell_index)

    def header(self, cell_index: int) -> None:
        """Print cell ``cell_index``'s header line."""
        number = self.positions.get(cell_index)
        if number is not None:  # a pair's injected parameters cell has no index in the .py (None)
            emit.say(f"[cell {'injected-parameters' if cell_index is None else cell_index}] {number}/{len(self.positions)}")

    def on_output(self, event: str, output: dict[str, Any], index: int, outputs: list[dict[str, Any]], chunk: str | None = None) -> None:
        emit.live_output(event, output, index, outputs, chunk, rich=self.reader(self.running))

    def reader(self, cell_index: int) -> Callable[[int, str, int], None]:
        """The ``rich`` hook for one cell's outputs: prints how to read output K."""
        import shlex

        from jcli_sidecar.read import render_hint

        def say(index: int, mime: str, size: int) -> None:
            words = ["j-cli", "notebook", "output", emit.shown_path(self.notebook), "--cell", str(cell_index), "--output", str(index)]
            hint = render_hint([mime])  # a chart: the read that renders it as an image
            command = shlex.join(words + (hint.split() if hint else []))
            emit.say(f"{mime} {emit.human_size(size)} -> {command}")

        return say


class _Finished:
    """Human mode with ``--no-stream``: a cell's outputs shown when it finishes (or fails), then its error.

    A cell ends once it is written back, which may be after the next one
    started (a big notebook's cells are written in batches), so outputs are
    kept per cell.
    """

    __slots__ = ("outputs", "running", "cells")

    def __init__(self, cells: _CellLines) -> None:
        self.outputs: dict[int, list[dict[str, Any]]] = {}
        self.running = -1
        self.cells = cells

    def attach(self, run: NotebookRun) -> None:
        run.on_cell_start = self.on_cell_start
        run.on_output = self.on_output
        run.on_cell_complete = self.on_cell_complete
        run.on_cell_error = self.on_cell_error

    def on_cell_start(self, cell_index: int, cell: dict[str, Any]) -> None:
        self.running = cell_index

    def on_output(self, event: str, output: dict[str, Any], index: int, outputs: list[dict[str, Any]], chunk: str | None = None) -> None:
        self.outputs[self.running] = outputs  # the running cell's outputs, kept up to date by the run

    def on_cell_complete(self, cell_index: int, line: dict[str, Any]) -> None:
        self.cells.header(cell_index)  # with its outputs: a cell ends after the next one may have started
        emit.show_outputs(self.outputs.pop(cell_index, []), rich=self.cells.reader(cell_index))

    def on_cell_error(self, cell_index: int, line: dict[str, Any], error: JcliError) -> None:
        self.on_cell_complete(cell_index, line)
        _print_error(cell_index, line, error)
