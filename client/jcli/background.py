"""``j-cli exec … --background``: check the run as a foreground one would, then hand it to the workspace's sidecar.

Everything a foreground run checks is checked here first, in this process
(the code or file, ``--cell``, ``--timeout``, ``--display-mode``, the
retention policy; for a notebook the pair's sync, ``PAIR_CONFLICT``,
``KERNEL_MISMATCH`` and that the notebook can be written back; that
``.j-cli/jobs`` can be written). Then the sidecar (started if needed) takes
the run (``job.start``) and this returns at once with the job id. With no
sidecar possible the answer is ``BACKGROUND_UNAVAILABLE``, never a silent
foreground run.
"""

from __future__ import annotations

import os
import sys

from jcli_sidecar.base import BackgroundUnavailable, JcliError, SidecarUnavailable, UsageError, internal_error

from . import emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["start_background"]


def start_background(
    json_mode: bool,
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
    runs: Any = None,
) -> int:
    """Start a background job; prints ``{job_id, status, session, kind, file, cells}`` and returns the exit code.

    ``runs`` (``exec_cmd._RunLimits``): ``--run-timeout``, ``--allow-errors`` and whether ``--timeout`` was given.
    """
    try:
        doc = _start(
            server_url, token, session_key, code, file_path, cell_spec, timeout, py_wins, display_mode, no_stream, any_kernel, queue, runs
        )
    except JcliError as err:
        err.details.setdefault("executed", False)
        return emit.error(err, json_mode)
    except Exception as exc:  # a bug before anything ran
        err = internal_error(exc)
        err.details["executed"] = False
        return emit.error(err, json_mode)
    if json_mode:
        return emit.document(doc, True)
    what = f"{doc['file']} ({doc['cells']} cell(s))" if doc["kind"] == "notebook" else "inline code"
    behind = f", queued behind job {doc['queued_behind']}" if doc.get("queued_behind") else ""
    sys.stdout.write(f"job {doc['job_id']} started: {what} in session {doc['session']}{behind}\n")
    sys.stdout.write(f"wait for it with: j-cli job wait {doc['job_id']}\n")
    return emit.EXIT_OK


def _sidecar():
    """The workspace's sidecar paths, with a sidecar running there (started if needed).

    Raises:
        BackgroundUnavailable: the sidecar is off, or cannot live in the runtime dir, or did not start.
    """
    from jcli_sidecar.base import SidecarPaths, disabled, ensure_runtime_dir, workspace_of

    if disabled():
        raise BackgroundUnavailable(
            "--background needs the workspace's sidecar to hold the job, and JCLI_SIDECAR=off disables it; "
            "run in the foreground, or unset JCLI_SIDECAR",
            reason="disabled",
        )
    try:
        directory = ensure_runtime_dir(create=True)
        paths = SidecarPaths(workspace_of(), directory)
        paths.check_socket()
    except (JcliError, OSError) as exc:
        why = exc.message if isinstance(exc, JcliError) else str(exc)
        raise BackgroundUnavailable(
            f"--background needs the workspace's sidecar, which cannot run here: {why}", reason="runtime_dir"
        ) from None
    return paths


def _call(paths, args: dict[str, Any]) -> dict[str, Any]:
    from jcli_sidecar.sidecar import call, start_sidecar

    try:
        return call(paths, "job.start", args)
    except SidecarUnavailable:
        pass
    try:
        start_sidecar(paths)
    except JcliError as exc:
        raise BackgroundUnavailable(
            f"--background needs the workspace's sidecar, which did not start: {exc.message}", reason="start"
        ) from None
    try:
        return call(paths, "job.start", args)
    except SidecarUnavailable as exc:
        raise BackgroundUnavailable(f"the workspace's sidecar did not take the job: {exc.message}", reason="unavailable") from None


def _start(server_url, token, session_key, code, file_path, cell_spec, timeout, py_wins, display_mode, no_stream, any_kernel, queue, runs):
    from jcli_sidecar.base import open_jobs, os_error, workspace_of
    from jcli_sidecar.kernel import check_display_mode, is_notebook_file, proxy_environment, resolve_timeout
    from jcli_sidecar.runs import resolve_policy

    from .embedded import resolve_server, server_address

    timeout = resolve_timeout(timeout)
    check_display_mode(display_mode)
    if runs is not None:
        runs.check()
    policy = resolve_policy()
    paths = _sidecar()  # before anything is written: no sidecar, nothing done
    cwd = workspace_of()
    address = server_address(server_url, token)
    args: dict[str, Any] = {"cwd": cwd, "session": session_key, "timeout": timeout, "display_mode": display_mode}
    args.update(policy=policy.to_wire(), queue=queue)
    if file_path is not None and code is None and is_notebook_file(file_path):
        srv = resolve_server(server_url, token)
        args.update(_notebook(srv, session_key, file_path, cell_spec, timeout, py_wins, display_mode, no_stream, any_kernel, runs))
        args["server"] = {"url": srv.url, "token": srv.token}
    else:
        from .exec_cmd import _code_to_run

        if cell_spec is not None or py_wins or any_kernel:
            raise UsageError("--cell, --py-wins and --any-kernel apply to notebook runs (--file x.ipynb or a py:percent x.py)")
        if runs is not None:
            runs.refuse_inline()
        srv = None if address is not None else resolve_server(server_url, token)
        args.update(kind="inline", code=_code_to_run(code, file_path))
        args["server"] = {"url": address[0], "token": address[1]} if srv is None else {"url": srv.url, "token": srv.token}
    args["server"]["proxy_env"] = proxy_environment()  # the job's connections go as this client's would
    try:
        open_jobs(cwd, create=True).close()  # the job's record must be writable here, as its outputs must
    except OSError as exc:
        raise os_error(exc, "write", os.path.join(cwd, ".j-cli", "jobs")) from None
    return {"schema_version": 1, **_call(paths, args)}


def _notebook(srv, session_key, file_path, cell_spec, timeout, py_wins, display_mode, no_stream, any_kernel, runs) -> dict[str, Any]:
    """Prepare the notebook run here (what a foreground run checks before sending code); the job's arguments."""
    from jcli_sidecar.kernel import NotebookRun, find_session

    from .notebook_exec import notebook_options

    row = find_session(srv, session_key)
    options = notebook_options(
        row, cell_spec, timeout, py_wins, display_mode=display_mode, no_stream=no_stream, any_kernel=any_kernel, server=srv, runs=runs
    )
    run = NotebookRun(file_path, options)
    run.prepare()
    return {
        "kind": "notebook",
        "file": os.path.abspath(file_path),
        "cells": len(run.code_cells()),
        "cell_spec": cell_spec,
        "py_wins": py_wins,
        "any_kernel": any_kernel,
        "kernel_name": options.kernel_name,
        "kernel_language": options.kernel_language if isinstance(options.kernel_language, str) else None,
        "checkpoint_seconds": options.checkpoint_seconds,
        "writeback_pace": options.writeback_pace,
        "allow_errors": options.allow_errors,
        "run_timeout": options.run_timeout,
        "timeout_given": options.timeout_given,
    }
