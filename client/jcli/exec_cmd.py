"""``j-cli exec``: run code in a session's kernel (click-free, for the fast path).

Inline code (``--code``, or a plain ``.py``) keeps rich outputs in
``.j-cli/outputs``; notebook runs (``--file x.ipynb`` or a py:percent
``x.py``) write outputs into the notebook only. The options are one table,
:data:`EXEC_OPTIONS`, from which both the lean fast path and the click
command are built.
"""

from __future__ import annotations

import os
import sys

from jcli_sidecar.errors import JcliError, UsageError

from . import emit
from .read_options import ReadOption

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EXEC_HELP", "EXEC_OPTIONS", "run_exec"]

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
    ReadOption(("--timeout",), "timeout", "float", "Seconds per cell before the kernel is interrupted (TIMEOUT).", "S"),
    ReadOption(
        ("--py-wins",),
        "py_wins",
        "flag",
        "For a py:percent .py: sync its notebook from it even when that overwrites notebook edits, cells or outputs "
        "the .py never knew about (otherwise PAIR_CONFLICT).",
        None,
    ),
)


def _select(server_url: str | None, token: str | None, key: str):
    from jcli_sidecar.jupyter_api import select_session, session_summary

    from .embedded import resolve_server

    srv = resolve_server(server_url, token)
    return srv, session_summary(select_session(srv.sessions(), key))


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
) -> int:
    """Do one ``j-cli exec``; returns the process exit code."""
    try:
        if timeout is not None and not timeout > 0:
            raise UsageError("--timeout must be a positive number of seconds")
        if file_path is not None and code is None:
            from jcli_sidecar.notebook_run import is_notebook_file

            if is_notebook_file(file_path):
                return _exec_notebook(json_mode, server_url, token, session_key, file_path, cell_spec, timeout, py_wins)
        if cell_spec is not None:
            raise UsageError("--cell applies to notebook runs (--file x.ipynb or a py:percent x.py)")
        if py_wins:
            raise UsageError("--py-wins applies to running a py:percent .py paired with a notebook")
        code = _code_to_run(code, file_path)
        return _exec_inline(json_mode, server_url, token, session_key, code, timeout)
    except JcliError as err:
        return emit.error(err, json_mode)
    except Exception as exc:  # a bug: still one coded line, never a traceback
        return emit.unexpected(exc, json_mode)


def _exec_inline(json_mode: bool, server_url, token, session_key: str, code: str, timeout) -> int:
    import time

    from jcli_sidecar.exec_result import build_result
    from jcli_sidecar.kernel_client import execute
    from jcli_sidecar.retention import resolve_policy

    policy = resolve_policy()  # a bad JCLI_OUTPUT_* setting fails before any code runs
    srv, row = _select(server_url, token, session_key)
    started_ns = time.time_ns()
    result = execute(srv, row["kernel_id"], code, timeout=timeout, on_output=None if json_mode else emit.live_output)
    doc = build_result(result, session_id=row["id"], kernel_id=row["kernel_id"])
    try:
        doc = _store_if_needed(result, doc, row, code, started_ns, policy)
    except JcliError as err:  # the code ran; only saving failed: say both
        err.details.update(executed=True, result=doc)
        return emit.error(err, json_mode)
    exit_code = emit.EXIT_FAILURE if doc["status"] == "error" else emit.EXIT_OK
    if json_mode:
        emit.document(doc, True)
        return exit_code
    for note in result.notes:  # the outputs themselves were shown live
        sys.stderr.write(f"note: {note}\n")
    if "run" in doc:
        sys.stderr.write(f"[outputs kept in {os.path.dirname(doc['run']['manifest'])}]\n")
    return exit_code


def _store_if_needed(result, doc: dict[str, Any], row: dict[str, Any], code: str, started_ns: int, policy) -> dict[str, Any]:
    """Keep rich (or long) outputs in ``<cwd>/.j-cli/outputs/<run-id>/``; short text keeps nothing.

    The client stages the files itself; the sidecar (or this process) publishes.
    """
    from jcli_sidecar.exec_result import TEXT_BUDGET, build_result
    from jcli_sidecar.runtime import workspace_of
    from jcli_sidecar.store import needs_store, stage_run

    from .transport import publish

    if not needs_store(result.outputs, TEXT_BUDGET):
        return doc
    cwd = workspace_of()
    source = {
        "kind": "inline",
        "session_id": row["id"],
        "kernel_id": row["kernel_id"],
        "execution_count": result.execution_count,
        "code": code,
    }
    staged = stage_run(cwd, result.outputs, source=source, status=doc["status"], created_ns=started_ns)
    published = publish(cwd, staged.run_id, policy)
    run = {"run_id": staged.run_id, "manifest": published["manifest"]}
    doc = build_result(result, session_id=row["id"], kernel_id=row["kernel_id"], stored=staged.items, run=run)
    if published.get("warnings"):
        doc["warnings"] = list(published["warnings"])[:5]
    return doc


def _code_to_run(code: str | None, file_path: str | None) -> str:
    if (code is None) == (file_path is None):
        raise UsageError("give exactly one of --code and --file")
    if code is not None:
        return code
    from jcli_sidecar.notebook import read_file_bytes
    from jcli_sidecar.pairing import is_percent

    if not file_path.endswith(".py"):
        raise UsageError(f"{file_path}: --file takes an .ipynb, a py:percent .py or a plain .py script")
    text = read_file_bytes(os.path.abspath(file_path)).decode("utf-8", "replace")
    if is_percent(text):
        raise UsageError(f"{file_path} has '# %%' cells: it is a notebook pair")
    return text


def _exec_notebook(json_mode: bool, server_url, token, session_key: str, file_path: str, cell_spec, timeout, py_wins: bool) -> int:
    """Run notebook cells (``notebook_exec``): JSON mode prints one line per cell, then a summary."""
    from .notebook_exec import notebook_options, run_notebook

    srv, row = _select(server_url, token, session_key)
    return run_notebook(json_mode, srv, row, file_path, notebook_options(row, cell_spec, timeout, py_wins))
