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

from jcli_sidecar.base import JcliError, UsageError, internal_error

from . import emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .exec_cmd import ExecRequest

__all__ = ["start_background"]


def start_background(json_mode: bool, request: ExecRequest) -> int:
    """Start a background job; prints ``{job_id, status, session, kind, file, cells}`` and returns the exit code."""
    try:
        doc = _start(request)
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


def _start(req: ExecRequest) -> dict[str, Any]:
    from jcli_sidecar.base import open_jobs, os_error, setting, workspace_of
    from jcli_sidecar.kernel import check_display_mode, is_notebook_file, resolve_timeout
    from jcli_sidecar.runs import resolve_policy
    from jcli_sidecar.sidecar import JOB_START

    from .embedded import resolve_server
    from .exec_cmd import code_to_run, inline_server, server_of
    from .transport import sidecar_for, start_job

    timeout = resolve_timeout(req.timeout)
    check_display_mode(req.display_mode)
    req.runs.check()
    req.runs.parameters()  # bad parameters are refused before anything else
    policy = resolve_policy()
    paths = sidecar_for(JOB_START)  # before anything is written: no sidecar, nothing done
    cwd = workspace_of()
    args: dict[str, Any] = {"cwd": cwd, "session": req.session_key, "timeout": timeout, "display_mode": req.display_mode}
    args.update(policy=policy.to_wire(), queue=req.queue, output_max_bytes=setting("JCLI_JOB_OUTPUT_MAX_BYTES"))
    if req.file_path is not None and req.code is None and is_notebook_file(req.file_path):
        srv = resolve_server(req.server_url, req.token)
        args.update(_notebook(srv, req, timeout))
        args["server"] = server_of(srv)
    else:
        if req.cell_spec is not None or req.py_wins or req.any_kernel:
            raise UsageError("--cell, --py-wins and --any-kernel apply to notebook runs (--file x.ipynb or a py:percent x.py)")
        req.runs.refuse_inline()
        _, args["server"] = inline_server(req.server_url, req.token)
        args.update(kind="inline", code=code_to_run(req.code, req.file_path))
    try:
        open_jobs(cwd, create=True).close()  # the job's record must be writable here, as its outputs must
    except OSError as exc:
        raise os_error(exc, "write", os.path.join(cwd, ".j-cli", "jobs")) from None
    return {"schema_version": 1, **start_job(args, paths)}


def _notebook(srv, req: ExecRequest, timeout) -> dict[str, Any]:
    """Prepare the notebook run here (what a foreground run checks before sending code); the job's arguments."""
    from jcli_sidecar.kernel import NotebookRun, find_session

    from .notebook_exec import join_live, notebook_options

    row = find_session(srv, req.session_key)
    options = notebook_options(
        row,
        req.cell_spec,
        timeout,
        req.py_wins,
        display_mode=req.display_mode,
        no_stream=req.no_stream,
        any_kernel=req.any_kernel,
        server=srv,
        runs=req.runs,
    )
    run = NotebookRun(req.file_path, options)
    room = join_live(run, srv, req.file_path, row)  # its changes before the run (a pair's sync, parameters) go where the job's will
    try:
        run.prepare()
    finally:
        if room is not None:
            room.close()
    wire = {} if options.parameters is None else options.parameters.to_wire()
    return {
        **wire,
        "kind": "notebook",
        "file": os.path.abspath(req.file_path),
        "cells": len(run.code_cells()),
        "cell_spec": req.cell_spec,
        "py_wins": req.py_wins,
        "any_kernel": req.any_kernel,
        "kernel_name": options.kernel_name,
        "kernel_language": options.kernel_language if isinstance(options.kernel_language, str) else None,
        "checkpoint_seconds": options.checkpoint_seconds,
        "writeback_pace": options.writeback_pace,
        "allow_errors": options.allow_errors,
        "run_timeout": options.run_timeout,
        "timeout_given": options.timeout_given,
        "stale": options.stale,
    }
