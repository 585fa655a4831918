""" "Is this still the process we recorded?", answered in one place.

j-cli records processes it may later trust or signal: the sidecar (its pid
file), the embedded Jupyter Server (its state file) and the writer of an
inline run (the manifest's ``owner``). A pid alone proves nothing, since pids
are reused, so a record carries the process's start time, its uid and the
host, and a process matches only when all of them do.

``psutil`` is imported only when a record is made or checked, never by the
warm read path.
"""

from __future__ import annotations

import os
import socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ALIVE", "GONE", "ProcessRecord", "UNKNOWN"]

#: The recorded process runs (same pid, start time, uid and host; not a zombie).
ALIVE = "alive"
#: It is gone, or its pid now belongs to another process.
GONE = "gone"
#: It cannot be checked from here: another host, or a process we may not inspect.
UNKNOWN = "unknown"

_START_TIME_SLACK = 0.01  # seconds: psutil's create time is rounded to 10 ms


class ProcessRecord:
    """A process as recorded on disk: ``{pid, create_time, uid, host}``.

    Example:
        >>> me = ProcessRecord.current()
        >>> ProcessRecord.from_dict(me.to_dict()).state()
        'alive'
    """

    __slots__ = ("pid", "create_time", "uid", "host")

    def __init__(self, pid: int, create_time: float, uid: int | None, host: str | None) -> None:
        self.pid = pid
        self.create_time = create_time
        self.uid = uid
        self.host = host

    @classmethod
    def current(cls) -> ProcessRecord:
        """The calling process."""
        return cls.of_pid(os.getpid())

    @classmethod
    def of_pid(cls, pid: int) -> ProcessRecord:
        """A running process, by pid.

        Raises:
            psutil.Error: there is no such process.
        """
        import psutil

        proc = psutil.Process(pid)
        return cls(pid, proc.create_time(), proc.uids().real, socket.gethostname())

    @classmethod
    def from_dict(cls, data: Any) -> ProcessRecord | None:
        """The record in a stored map, or None when the map does not hold one."""
        if not isinstance(data, dict):
            return None
        pid, created, uid, host = data.get("pid"), data.get("create_time"), data.get("uid"), data.get("host")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            return None
        if not isinstance(created, (int, float)) or isinstance(created, bool):
            return None
        if uid is not None and (not isinstance(uid, int) or isinstance(uid, bool)):
            return None
        return cls(pid, float(created), uid, host if isinstance(host, str) else None)

    def to_dict(self) -> dict[str, Any]:
        """The map to store (JSON-safe)."""
        return {"pid": self.pid, "create_time": self.create_time, "uid": self.uid, "host": self.host}

    def state(self) -> str:
        """:data:`ALIVE`, :data:`GONE` or :data:`UNKNOWN` (see each)."""
        return self._check()[0]

    def process(self):
        """The live ``psutil.Process`` when the record matches it, else None."""
        state, proc = self._check()
        return proc if state == ALIVE else None

    def _check(self):
        if self.host is not None and self.host != socket.gethostname():
            return UNKNOWN, None
        import psutil

        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > _START_TIME_SLACK:
                return GONE, None  # the pid was reused
            if self.uid is not None and proc.uids().real != self.uid:
                return GONE, None
            if proc.status() == psutil.STATUS_ZOMBIE:
                return GONE, None
            return ALIVE, proc
        except psutil.NoSuchProcess:
            return GONE, None
        except psutil.Error:
            return UNKNOWN, None
