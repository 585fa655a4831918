"""Whether the workspace's sidecar is worth asking: the record of one that missed its hello.

A live sidecar answers ``hello`` from its event loop at once, so a client
waits for it only ``JCLI_SIDECAR_HELLO_SECONDS`` (default 1 s) and then
reads in-process. A sidecar that missed that deadline (stopped with
SIGSTOP or by a debugger, or its loop stuck) is recorded in
``<hash>.unresponsive``: the pid file's :class:`ProcessRecord` of it, the
state it was in (``stopped`` or ``running``) and when it was last asked.
Until it proves alive, the next calls do not connect at all:

- while that very process is stopped, no call asks it;
- once it is not stopped any more but was when recorded (continued), the
  next call asks it again at once;
- one that missed its hello while running (stuck, or swamped) is asked
  again by one call every :data:`RETRY_SECONDS`, the others reading
  in-process meanwhile.

An answered hello removes the record; so does a record whose process is
gone or is no longer the one the pid file names (a new sidecar). Nothing
here signals the sidecar: ``j-cli sidecar status`` reports it as
unresponsive and ``j-cli sidecar stop`` ends it (:mod:`.control`).

Only the standard library is imported, and only once a record exists: a
client of a healthy sidecar pays one failed ``stat``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..base import SidecarPaths

__all__ = ["RETRY_SECONDS", "clear_unresponsive", "hello_seconds", "mark_unresponsive", "read_unresponsive", "why_not_ask"]

#: How long a sidecar that missed its hello while running is left alone before one call asks it again.
RETRY_SECONDS = 10.0


def hello_seconds() -> float:
    """``JCLI_SIDECAR_HELLO_SECONDS``: how long a client waits for the sidecar's hello."""
    from ..base import setting

    return setting("JCLI_SIDECAR_HELLO_SECONDS")


def read_unresponsive(paths: SidecarPaths) -> dict[str, Any] | None:
    """The record of a sidecar that missed its hello, or None."""
    import json

    try:
        with open(paths.unresponsive, "rb") as fh:
            record = json.loads(fh.read(4096))
    except (OSError, ValueError):  # missing or unreadable: no record
        return None
    return record if isinstance(record, dict) else None


def _recorded_sidecar(paths: SidecarPaths):
    """The ProcessRecord the pid file names, or None."""
    from ..base import ProcessRecord
    from .pidfile import read_pid_record

    return ProcessRecord.from_dict(read_pid_record(paths))


def why_not_ask(paths: SidecarPaths) -> tuple[str | None, bool]:
    """Whether this call may connect to the sidecar: ``(reason not to, or None; whether a record exists)``.

    A call that is let through to ask again a sidecar recorded as stuck
    first moves the record's time on, so that racing calls do not all ask.
    """
    if not os.path.exists(paths.unresponsive):
        return None, False
    return _why_not(paths), True


def _why_not(paths: SidecarPaths) -> str | None:
    import time

    from ..base import ALIVE, ProcessRecord

    record = read_unresponsive(paths)
    marked = ProcessRecord.from_dict(record)
    current = _recorded_sidecar(paths)
    if record is None or marked is None or current is None or (current.pid, current.create_time) != (marked.pid, marked.create_time):
        clear_unresponsive(paths)  # another sidecar serves now (or none): the record is about nobody
        return None
    if marked.state() != ALIVE:
        clear_unresponsive(paths)
        return None
    if marked.stopped():
        return f"the sidecar (pid {marked.pid}) is stopped and did not answer its hello; j-cli sidecar stop ends it"
    if record.get("state") == "stopped":
        return None  # continued since: ask it now
    checked = record.get("checked")
    now = time.time()
    if isinstance(checked, (int, float)) and 0 <= now - checked < RETRY_SECONDS:
        return f"the sidecar (pid {marked.pid}) did not answer its hello {now - checked:.0f} s ago; it is asked again after {RETRY_SECONDS:g} s"
    _write(paths, {**record, "checked": now})
    return None


def mark_unresponsive(paths: SidecarPaths) -> None:
    """Record that the pid file's sidecar missed its hello (nothing is recorded without a live pid file's process)."""
    import time

    from ..base import ALIVE

    current = _recorded_sidecar(paths)
    if current is None or current.state() != ALIVE:
        return
    previous = read_unresponsive(paths) or {}
    now = time.time()
    same = (previous.get("pid"), previous.get("create_time")) == (current.pid, current.create_time)
    since = previous.get("since") if same and isinstance(previous.get("since"), (int, float)) else now
    state = "stopped" if current.stopped() else "running"
    _write(paths, {**current.to_dict(), "state": state, "since": since, "checked": now})


def clear_unresponsive(paths: SidecarPaths) -> None:
    """Forget the record (the sidecar answered, or it is gone)."""
    try:
        os.unlink(paths.unresponsive)
    except OSError:  # already gone: nothing to forget
        pass


def _write(paths: SidecarPaths, record: dict[str, Any]) -> None:
    """Replace the record atomically (mode 0600); a runtime dir that cannot be written keeps none."""
    import json

    tmp = f"{paths.unresponsive}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, paths.unresponsive)
    except OSError:  # the record is advice only: not written, and the temp file removed
        try:
            os.unlink(tmp)
        except OSError:  # never created: nothing to remove
            pass
