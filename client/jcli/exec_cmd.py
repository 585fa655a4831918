"""``j-cli exec``: run code in a session's kernel (click-free, for the fast path).

Inline code (``--code``, or a plain ``.py``) keeps rich outputs in
``.j-cli/outputs``; notebook runs (``--file x.ipynb`` or a py:percent
``x.py``) write outputs into the notebook only. The options are one table,
:data:`EXEC_OPTIONS`, from which both the lean fast path and the click
command are built.

Everything that can fail is checked before code goes to the kernel. From
then on every failure (``TIMEOUT``, ``KERNEL_DIED``, ``INTERRUPTED``, a
save that failed, a bug) is an error envelope with ``executed: true`` and
``result``: the bounded document of what was captured, ``partial: true``
when the run was cut short, and its stored run when the outputs were rich
or long, as for a normal run. SIGINT and SIGTERM interrupt the kernel and
exit 130 and 143 (:class:`~jcli_sidecar.kernel.stop_switch.StopSwitch`).
"""

from __future__ import annotations

import os
import sys

from jcli_sidecar.base import JcliError, UsageError, internal_error

from . import emit
from .read_options import ReadOption

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EXEC_HELP", "EXEC_OPTIONS", "ExecRequest", "code_to_run", "inline_server", "run_exec", "server_of"]

EXEC_HELP = (
    "Run code in a session's kernel and print what it produced.\n\n"
    "Inline code (--code, or a plain .py) keeps rich outputs in .j-cli/outputs; "
    "notebook runs (--file x.ipynb or a py:percent x.py) write outputs into the notebook only."
)

EXEC_OPTIONS: tuple[ReadOption, ...] = (
    ReadOption(("--code", "-c"), "code", "str", "Code to run.", "CODE"),
    ReadOption(
        ("--file", "-f"),
        "file_path",
        "str",
        "An .ipynb or py:percent .py (outputs go into the notebook), or a plain .py script.",
        "FILE",
    ),
    ReadOption(("--cell",), "cell_spec", "str", "Notebook cells to run: N, A:B (B excluded), A: or :B.", "SPEC"),
    ReadOption(
        ("--timeout",),
        "timeout",
        "timeout",
        "Seconds per cell (at most 30 days) before the kernel is interrupted (TIMEOUT); 0 or none: no limit. "
        "Default: JCLI_EXEC_TIMEOUT, else 600.",
        "S",
    ),
    ReadOption(
        ("--run-timeout",),
        "run_timeout",
        "timeout",
        "For a notebook run: seconds for the whole run (at most 30 days); when they run out, the running cell is "
        "interrupted as on --timeout (TIMEOUT) and the cells after it do not run. 0 or none (the default): no budget.",
        "S",
    ),
    ReadOption(
        ("--allow-errors",),
        "allow_errors",
        "flag",
        "For a notebook run: a cell whose code raises does not stop the run; its error stays in the notebook, the "
        "summary lists it (failed_cells) and the exit status is still 1. A cell tagged raises-exception may raise "
        "without this flag.",
        None,
    ),
    ReadOption(
        ("--stale",),
        "stale",
        "flag",
        "For a notebook run: run exactly the stale cells, in order: cells edited since their outputs were made, never "
        "run, or reading names from a cell that changed or ran after them, transitively (see j-cli notebook summary). "
        "Not with --cell.",
        None,
    ),
    ReadOption(
        ("--display-mode",),
        "display_mode",
        "str",
        "What IPython displays for this exec: last_expr, all, last_expr_or_assign, last or none "
        "(ast_node_interactivity; the kernel's own setting is restored afterwards). Default: the kernel's setting.",
        "MODE",
    ),
    ReadOption(
        ("--no-stream",),
        "no_stream",
        "flag",
        "Print outputs when each cell (or the inline code) finishes, not live; a notebook run also skips saving "
        "a running cell's partial outputs.",
        None,
    ),
    ReadOption(("--stream",), "stream", "flag", "Upstream jupyter-jcli's spelling of the default.", None, hidden=True),
    ReadOption(
        ("--py-wins",),
        "py_wins",
        "flag",
        "For a py:percent .py: sync its notebook from it even when that overwrites notebook edits, cells or outputs "
        "the .py never knew about (otherwise PAIR_CONFLICT).",
        None,
    ),
    ReadOption(
        ("--background",),
        "background",
        "flag",
        "Hand the run to the workspace's sidecar and return at once with a job id (see j-cli job; docs/jobs.md). "
        "Use it when a run may outlast the caller's shell timeout.",
        None,
    ),
    ReadOption(
        ("--queue",),
        "queue",
        "flag",
        "With --background: when the session's kernel runs another job, run after it (otherwise KERNEL_BUSY).",
        None,
    ),
    ReadOption(
        ("--parameters", "-p"),
        "parameters",
        "pair",
        "For a notebook run: set parameter NAME to VALUE, typed as papermill's CLI types it (True, False, None, an "
        "int, a float, else a string); repeatable. The values go into a cell tagged injected-parameters after the "
        "cell tagged parameters (see docs/notebook-runs.md).",
        "NAME VALUE",
    ),
    ReadOption(
        ("--parameters-yaml", "-y"),
        "parameters_yaml",
        "multi",
        "For a notebook run: parameters as a YAML mapping (lists and maps too); repeatable; -p wins over it.",
        "YAML",
    ),
    ReadOption(
        ("--parameters-file",),
        "parameters_file",
        "multi",
        "For a notebook run: parameters from a YAML (or JSON) file holding a mapping; repeatable; -y and -p win over it.",
        "PATH",
    ),
    ReadOption(
        ("--any-kernel",),
        "any_kernel",
        "flag",
        "For a notebook run: run the file even when it asks for another kernel than the session's "
        "(otherwise KERNEL_MISMATCH; a kernel of the same language runs with a note).",
        None,
    ),
)


def _open_free(server, kernel_id: str):
    """A connection for a foreground run that does not go through the sidecar: refused (``KERNEL_BUSY``) while a job runs there."""
    from jcli_sidecar.base import workspace_of
    from jcli_sidecar.kernel import KernelConnection
    from jcli_sidecar.runs import check_kernel_free

    check_kernel_free(workspace_of(), kernel_id)
    return KernelConnection(server, kernel_id)


def _select(server_url: str | None, token: str | None, key: str):
    from jcli_sidecar.kernel import find_session

    from .embedded import resolve_server

    srv = resolve_server(server_url, token)
    return srv, find_session(srv, key)


def run_exec(
    json_mode: bool,
    server_url: str | None,
    token: str | None,
    session_key: str,
    code: str | None = None,
    file_path: str | None = None,
    cell_spec: str | None = None,
    timeout: float | None = None,
    py_wins: bool = False,
    display_mode: str | None = None,
    no_stream: bool = False,
    any_kernel: bool = False,
    stream: bool = False,
    background: bool = False,
    queue: bool = False,
    run_timeout: float | None = None,
    allow_errors: bool = False,
    parameters: Any = (),
    parameters_yaml: Any = (),
    parameters_file: Any = (),
    stale: bool = False,
) -> int:
    """Do one ``j-cli exec``; returns the process exit code (``stream``: upstream's spelling of the default)."""
    from jcli_sidecar.kernel import StopRequested, StopSwitch, signals_to

    if queue and not background:
        return emit.error(UsageError("--queue applies to --background runs"), json_mode)
    runs = _RunLimits(timeout is not None, None if run_timeout == 0 else run_timeout, allow_errors, stale)
    runs.parameter_args = (tuple(parameters or ()), tuple(parameters_yaml or ()), tuple(parameters_file or ()))
    if background:
        from .background import start_background

        return start_background(
            json_mode,
            ExecRequest(
                server_url,
                token,
                session_key,
                code,
                file_path,
                cell_spec,
                timeout,
                py_wins,
                display_mode,
                no_stream,
                any_kernel,
                queue,
                runs,
            ),
        )

    stop = StopSwitch()
    settings = _Settings(display_mode, no_stream, any_kernel, runs)
    try:
        with signals_to(stop):
            return _run_exec(json_mode, server_url, token, session_key, code, file_path, cell_spec, timeout, py_wins, settings, stop)
    except StopRequested:  # a signal before any code was sent: nothing ran
        return emit.error(stop.interrupted("stopped before any code ran", executed=False), json_mode)
    finally:
        stop.close()


class ExecRequest:
    """One ``j-cli exec`` as its options gave it (the server as ``-s/-t`` gave it, the session's name)."""

    __slots__ = (
        "server_url",
        "token",
        "session_key",
        "code",
        "file_path",
        "cell_spec",
        "timeout",
        "py_wins",
        "display_mode",
        "no_stream",
        "any_kernel",
        "queue",
        "runs",
    )

    def __init__(
        self,
        server_url: str | None,
        token: str | None,
        session_key: str,
        code: str | None,
        file_path: str | None,
        cell_spec: str | None,
        timeout: float | None,
        py_wins: bool,
        display_mode: str | None,
        no_stream: bool,
        any_kernel: bool,
        queue: bool,
        runs: _RunLimits,
    ) -> None:
        self.server_url = server_url
        self.token = token
        self.session_key = session_key
        self.code = code
        self.file_path = file_path
        self.cell_spec = cell_spec
        self.timeout = timeout
        self.py_wins = py_wins
        self.display_mode = display_mode
        self.no_stream = no_stream
        self.any_kernel = any_kernel
        self.queue = queue
        self.runs = runs


class _RunLimits:
    """What only a notebook run takes: ``--run-timeout`` (None: no budget), ``--allow-errors``, ``--stale``, whether ``--timeout`` was given,
    and the parameters as given (``-p`` pairs, ``-y`` texts, ``--parameters-file`` paths)."""

    __slots__ = ("timeout_given", "run_timeout", "allow_errors", "stale", "parameter_args", "_resolved")

    def __init__(
        self, timeout_given: bool = False, run_timeout: float | None = None, allow_errors: bool = False, stale: bool = False
    ) -> None:
        self.timeout_given = timeout_given
        self.run_timeout = run_timeout
        self.allow_errors = allow_errors
        self.stale = stale
        self.parameter_args: tuple[tuple[Any, ...], tuple[str, ...], tuple[str, ...]] = ((), (), ())
        self._resolved: Any = None

    def parameters(self):
        """The run's parameters, resolved as papermill's CLI resolves them; None when none were given.

        Raises:
            ParametersInvalid: a bad name, YAML that is not a mapping, a value that cannot be a parameter.
            FileNotFound, NotebookReadFailed: a parameters file cannot be read.
        """
        pairs, yaml_texts, files = self.parameter_args
        if not (pairs or yaml_texts or files):
            return None
        if self._resolved is None:
            from jcli_sidecar.kernel import resolve_parameters

            self._resolved = resolve_parameters(pairs, yaml_texts, files)
        return self._resolved

    def check(self) -> None:
        """Refuse a bad ``--run-timeout`` before anything runs.

        Raises:
            UsageError: not seconds > 0 and at most 30 days.
        """
        from jcli_sidecar.kernel import check_timeout

        check_timeout(self.run_timeout, "--run-timeout")

    def refuse_inline(self) -> None:
        """Inline code has one cell: its ``--timeout`` is its whole budget, and an error ends it.

        Raises:
            ParametersInvalid: parameters were given.
            UsageError: ``--run-timeout``, ``--allow-errors`` or ``--stale`` was given.
        """
        if any(self.parameter_args):
            from jcli_sidecar.base import ParametersInvalid

            raise ParametersInvalid("-p, -y and --parameters-file apply to notebook runs (--file x.ipynb or a py:percent x.py)")
        if self.stale:
            raise UsageError("--stale applies to notebook runs (--file x.ipynb or a py:percent x.py)")
        if self.run_timeout is not None or self.allow_errors:
            raise UsageError(
                "--run-timeout and --allow-errors apply to notebook runs (--file x.ipynb or a py:percent x.py); "
                "inline code's --timeout already bounds all of it"
            )


class _Settings:
    """How the code runs and shows, beyond what it is: ``--display-mode``, ``--no-stream``, ``--any-kernel`` and the run's limits."""

    __slots__ = ("display_mode", "no_stream", "any_kernel", "runs")

    def __init__(self, display_mode: str | None, no_stream: bool, any_kernel: bool = False, runs: _RunLimits | None = None) -> None:
        self.display_mode = display_mode
        self.no_stream = no_stream
        self.any_kernel = any_kernel
        self.runs = runs if runs is not None else _RunLimits()


def _run_exec(
    json_mode: bool, server_url, token, session_key: str, code, file_path, cell_spec, timeout, py_wins: bool, settings: _Settings, stop
) -> int:
    try:
        from jcli_sidecar.kernel import check_display_mode, resolve_timeout

        timeout = resolve_timeout(timeout)
        check_display_mode(settings.display_mode)
        settings.runs.check()
        settings.runs.parameters()  # bad parameters are refused before any server is asked
        if settings.runs.stale and cell_spec is not None:
            raise UsageError("--stale chooses the cells to run itself (the stale ones, in order); it does not combine with --cell")
        if file_path is not None and code is None:
            from jcli_sidecar.kernel import is_notebook_file

            if is_notebook_file(file_path):
                return _exec_notebook(json_mode, server_url, token, session_key, file_path, cell_spec, timeout, py_wins, settings, stop)
        if cell_spec is not None:
            raise UsageError("--cell applies to notebook runs (--file x.ipynb or a py:percent x.py)")
        if py_wins:
            raise UsageError("--py-wins applies to running a py:percent .py paired with a notebook")
        if settings.any_kernel:
            raise UsageError("--any-kernel applies to notebook runs (--file x.ipynb or a py:percent x.py)")
        settings.runs.refuse_inline()
        code = code_to_run(code, file_path)
        return _exec_inline(json_mode, server_url, token, session_key, code, timeout, settings, stop)
    except JcliError as err:
        err.details.setdefault("executed", False)  # failures after the send say executed: true themselves
        return emit.error(err, json_mode)
    except Exception as exc:  # a bug before any code ran: still one coded line, never a traceback
        err = internal_error(exc)
        err.details["executed"] = False
        return emit.error(err, json_mode)


def _exec_inline(json_mode: bool, server_url, token, session_key: str, code: str, timeout, settings: _Settings, stop) -> int:
    """The core's inline run (:mod:`jcli_sidecar.kernel.inline_run`), through the sidecar when one is used; then print."""
    import time

    from jcli_sidecar.kernel import ExecutionResult, finish_inline
    from jcli_sidecar.runs import resolve_policy

    from .embedded import resolve_server
    from .transport import exec_inline, publish

    policy = resolve_policy()  # a bad JCLI_OUTPUT_* setting fails before any code runs
    srv, server = inline_server(server_url, token)
    started_ns = time.time_ns()
    result = ExecutionResult()
    live = None if json_mode or settings.no_stream else emit.live_output
    request = {"server": server, "session": session_key, "code": code, "timeout": timeout, "display_mode": settings.display_mode}
    row, failure = exec_inline(
        request,
        result=result,
        on_output=live,
        stop=stop,
        direct=lambda: _run_here(srv or resolve_server(server_url, token), request, result, live, stop),
    )
    doc, failure = finish_inline(result, failure, row, code, started_ns=started_ns, policy=policy, publish=publish, stop=stop)
    if not json_mode:
        if settings.no_stream:
            emit.show_outputs(result.outputs)
        emit.show_stored_outputs(doc)  # each rich output: what it is and where it was kept
        for note in result.notes:  # the outputs themselves were shown live (or just now, with --no-stream)
            sys.stderr.write(f"note: {note}\n")
        if "run" in doc:
            sys.stderr.write(f"[outputs kept in {os.path.dirname(doc['run']['manifest'])}]\n")
    if failure is not None:
        return emit.error(failure, json_mode)
    if json_mode:
        from .upstream_fields import with_inline

        emit.document(with_inline(doc), True)
    return emit.EXIT_FAILURE if doc["status"] == "error" else emit.EXIT_OK


def inline_server(server_url: str | None, token: str | None):
    """``(server, request's server map)``: the map ``{url, token, proxy_env}`` a sidecar request names, and
    the resolved server, or None when ``-s/-t`` or the environment named one (it is passed on as given, and checked where it is used).

    ``proxy_env`` is this client's proxy variables: the sidecar routes by them, not by its own.
    """
    from .embedded import resolve_server, server_address

    address = server_address(server_url, token)
    if address is not None:
        from jcli_sidecar.kernel import proxy_environment

        return None, {"url": address[0], "token": address[1], "proxy_env": proxy_environment()}
    srv = resolve_server(server_url, token)
    return srv, server_of(srv)


def server_of(srv) -> dict[str, Any]:
    """The map ``{url, token, proxy_env}`` a sidecar request names the server ``srv`` by (and this client's proxy variables)."""
    from jcli_sidecar.kernel import proxy_environment

    return {"url": srv.url, "token": srv.token, "proxy_env": proxy_environment()}


def _run_here(srv, request: dict[str, Any], result, live, stop) -> tuple[dict[str, Any], JcliError | None]:
    """The in-process run: ``(session, failure)``; raises when nothing was sent."""
    from jcli_sidecar.kernel import run_inline

    return run_inline(
        srv,
        request["session"],
        request["code"],
        timeout=request["timeout"],
        display_mode=request["display_mode"],
        result=result,
        stop=stop,
        on_output=live,
        open_kernel=_open_free,
    )


def code_to_run(code: str | None, file_path: str | None) -> str:
    if (code is None) == (file_path is None):
        raise UsageError("give exactly one of --code and --file")
    if code is not None:
        return code
    from jcli_sidecar.ipynb import read_file_bytes
    from jcli_sidecar.pair import is_percent

    if not file_path.endswith(".py"):
        raise UsageError(f"{file_path}: --file takes an .ipynb, a py:percent .py or a plain .py script")
    text = read_file_bytes(os.path.abspath(file_path)).decode("utf-8", "replace")
    if is_percent(text):
        raise UsageError(f"{file_path} has '# %%' cells: it is a notebook pair")
    return text


def _exec_notebook(
    json_mode: bool, server_url, token, session_key: str, file_path: str, cell_spec, timeout, py_wins: bool, settings: _Settings, stop
) -> int:
    """Run notebook cells (``notebook_exec``): JSON mode prints one line per cell, then a summary."""
    from .notebook_exec import notebook_options, run_notebook

    srv, row = _select(server_url, token, session_key)
    options = notebook_options(
        row,
        cell_spec,
        timeout,
        py_wins,
        display_mode=settings.display_mode,
        no_stream=settings.no_stream,
        any_kernel=settings.any_kernel,
        server=srv,
        runs=settings.runs,
    )
    return run_notebook(json_mode, srv, row, file_path, options, stop=stop, live=not settings.no_stream, open_kernel=_open_free)
