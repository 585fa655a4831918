"""``j-cli sidecar start|stop|status``: the workspace's sidecar on request.

``start`` spawns it (see :mod:`jcli_sidecar.sidecar.spawn`) and waits on the spawn
lock, an event rather than a poll; ``stop`` asks it to exit and waits for its
lifetime lock, terminating it only when the pid file still names it;
``status`` asks it for its stats over the wire.
"""

from __future__ import annotations

import os

from ..base.locks import wait_for_lock
from ..base.process_record import wait_for_exit
from .pidfile import recorded_process
from .spawn import spawn_detached

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..base.runtime import SidecarPaths

__all__ = ["sidecar_status", "start_sidecar", "stop_sidecar"]


def sidecar_status(paths: SidecarPaths) -> dict:
    """What is known about the workspace's sidecar, live or not."""
    from ..base.errors import JcliError
    from .client import call

    out: dict = {"workspace": paths.workspace, "socket": paths.socket, "instance": paths.hash}
    try:
        stats = call(paths, "stats", {}, timeout=5.0)
    except JcliError as exc:
        out["running"] = False
        out["reason"] = exc.message
        leftovers = [p for p in (paths.socket, paths.pid) if os.path.exists(p)]
        if leftovers:
            out["stale_files"] = leftovers
        return out
    out["running"] = True
    out.update(stats)
    return out


def start_sidecar(paths: SidecarPaths, timeout: float = 30.0) -> dict:
    """Start the sidecar if needed and wait until it answers.

    Raises:
        SidecarUnavailable: it did not come up (the log tail says why).
    """
    from ..base.errors import SidecarUnavailable

    spawn_detached(paths)
    if not wait_for_lock(paths.spawn_lock, timeout):
        raise SidecarUnavailable(f"the sidecar did not start within {timeout:g} s; see {paths.log}")
    result = sidecar_status(paths)
    if not result["running"]:
        raise SidecarUnavailable(f"the sidecar did not start: {_log_tail(paths)}", log=paths.log)
    return result


def stop_sidecar(paths: SidecarPaths, timeout: float = 10.0) -> dict:
    """Ask the sidecar to exit and wait for its lifetime lock to be released.

    An unresponsive sidecar is terminated, but only if the pid file still
    names it (pid plus create time).
    """
    from .client import request_shutdown

    proc = recorded_process(paths)  # before asking: the pid file goes away with it
    asked = request_shutdown(paths)
    if wait_for_lock(paths.lock, timeout):
        if proc is not None:
            wait_for_exit(proc, timeout)  # the lock is released just before the process ends
        return {"stopped": asked, "workspace": paths.workspace}
    proc = proc or recorded_process(paths)
    if proc is not None:
        proc.kill()
        wait_for_exit(proc, timeout)
    return {"stopped": True, "killed": proc is not None, "workspace": paths.workspace}


def _log_tail(paths: SidecarPaths, lines: int = 5) -> str:
    try:
        with open(paths.log, encoding="utf-8", errors="replace") as fh:
            return " | ".join(fh.read().splitlines()[-lines:]) or "(empty log)"
    except OSError:
        return "(no log)"
