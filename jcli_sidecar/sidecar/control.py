"""``j-cli sidecar start|stop|status``: the workspace's sidecar on request.

``start`` spawns it (see :mod:`jcli_sidecar.sidecar.spawn`) and waits on the spawn
lock, an event rather than a poll; ``stop`` asks it to exit and waits for its
lifetime lock, terminating it only when the pid file still names it;
``status`` asks it for its stats over the wire.

A sidecar that missed its hello (:mod:`.liveness`) is reported by
``status`` as ``unresponsive`` (its pid, whether it is stopped, since
when), without connecting to a stopped one. ``stop`` ends a stopped one
with SIGTERM and then SIGCONT (a stopped process acts on no signal but
SIGKILL until it is continued), so that it exits cleanly and removes its
own files, and with SIGKILL if it has not ended within the timeout.
"""

from __future__ import annotations

import os

from ..base import wait_for_exit, wait_for_lock
from .pidfile import recorded_process
from .spawn import spawn_detached

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..base import SidecarPaths

__all__ = ["sidecar_status", "start_sidecar", "stop_sidecar"]


def sidecar_status(paths: SidecarPaths) -> dict:
    """What is known about the workspace's sidecar, live or not."""
    from ..base import JcliError
    from .client import call
    from .op_table import STATS

    out: dict = {"workspace": paths.workspace, "socket": paths.socket, "instance": paths.hash}
    try:
        stats = call(paths, STATS.name, {}, timeout=5.0)
    except JcliError as exc:
        out["running"] = False
        out["reason"] = exc.message
        unresponsive = _unresponsive(paths) if exc.details.get("unresponsive") else None
        if unresponsive is not None:
            out["unresponsive"] = unresponsive
            return out
        leftovers = [p for p in (paths.socket, paths.pid) if os.path.exists(p)]
        if leftovers:
            out["stale_files"] = leftovers
        return out
    out["running"] = True
    out.update(stats)
    return out


def _unresponsive(paths: SidecarPaths) -> dict | None:
    """``{pid, stopped, since}`` of the sidecar recorded as missing its hello, if that process still runs."""
    from ..base import ALIVE, ProcessRecord
    from .liveness import read_unresponsive

    record = read_unresponsive(paths)
    process = ProcessRecord.from_dict(record)
    if record is None or process is None or process.state() != ALIVE:
        return None
    return {"pid": process.pid, "stopped": process.stopped(), "since": record.get("since")}


def start_sidecar(paths: SidecarPaths, timeout: float = 30.0) -> dict:
    """Start the sidecar if needed and wait until it answers.

    Raises:
        SidecarUnavailable: it did not come up (the log tail says why), the
            one running does not answer (stopped: stop it first), or the
            system cannot check a socket's peer.
        RuntimeDirUnusable: the runtime dir is too long for its socket.
    """
    from ..base import SidecarUnavailable
    from .peercred import can_check

    paths.check_socket()
    if not can_check():
        raise SidecarUnavailable(
            "this system offers no way to tell who connects to a Unix socket (SO_PEERCRED, LOCAL_PEERCRED, getpeereid), "
            "so no sidecar is started; every command runs in-process"
        )
    spawn_detached(paths)
    if not wait_for_lock(paths.spawn_lock, timeout):
        raise SidecarUnavailable(f"the sidecar did not start within {timeout:g} s; see {paths.log}")
    result = sidecar_status(paths)
    if result.get("unresponsive"):
        raise SidecarUnavailable(result["reason"], unresponsive=result["unresponsive"])
    if not result["running"]:
        raise SidecarUnavailable(f"the sidecar did not start: {_log_tail(paths)}", log=paths.log)
    return result


def stop_sidecar(paths: SidecarPaths, timeout: float = 10.0) -> dict:
    """Ask the sidecar to exit and wait for its lifetime lock to be released.

    An unresponsive sidecar is terminated, but only if the pid file still
    names it (pid plus create time).
    """
    from .client import request_shutdown
    from .liveness import clear_unresponsive

    proc = recorded_process(paths)  # before asking: the pid file goes away with it
    if proc is not None and _is_stopped(proc):
        doc = _end_stopped(proc, timeout)
        clear_unresponsive(paths)
        return {**doc, "workspace": paths.workspace}
    asked = request_shutdown(paths)
    if not asked and proc is None and not os.path.exists(paths.lock):
        return {"stopped": False, "workspace": paths.workspace}  # no sidecar has run here
    if not asked and proc is not None:
        proc.terminate()  # it did not take the request: the signal asks the same
    if wait_for_lock(paths.lock, timeout):
        if proc is not None:
            wait_for_exit(proc, timeout)  # the lock is released just before the process ends
        clear_unresponsive(paths)
        return {"stopped": asked or proc is not None, "workspace": paths.workspace}
    proc = proc or recorded_process(paths)
    if proc is not None:
        proc.kill()
        wait_for_exit(proc, timeout)
    clear_unresponsive(paths)
    return {"stopped": True, "killed": proc is not None, "workspace": paths.workspace}


def _is_stopped(proc) -> bool:
    import psutil

    try:
        return proc.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    except psutil.Error:
        return False


def _end_stopped(proc, timeout: float) -> dict:
    """End a stopped sidecar: SIGTERM, then SIGCONT so that it acts on it; SIGKILL if it has not ended in ``timeout``."""
    import psutil

    try:
        proc.terminate()
        proc.resume()
    except psutil.Error:
        return {"stopped": True}
    if wait_for_exit(proc, timeout):
        return {"stopped": True, "was_stopped": True}
    try:
        proc.kill()
    except psutil.Error:
        pass
    wait_for_exit(proc, timeout)
    return {"stopped": True, "was_stopped": True, "killed": True}


def _log_tail(paths: SidecarPaths, lines: int = 5) -> str:
    try:
        with open(paths.log, encoding="utf-8", errors="replace") as fh:
            return " | ".join(fh.read().splitlines()[-lines:]) or "(empty log)"
    except OSError:  # the log is only quoted in a message
        return "(no log)"
