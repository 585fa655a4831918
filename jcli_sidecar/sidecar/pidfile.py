"""The sidecar's pid file, ``<hash>.pid``: who serves this socket.

The sidecar writes it (atomically) once it listens, or once a
socket-activated one learns its workspace; ``status`` and ``stop`` read it;
on the way out the sidecar removes it only if it still names this process.
The record is a :class:`~jcli_sidecar.base.process_record.ProcessRecord` (pid,
create time, uid, host) plus the workspace, socket, version and protocol.
"""

from __future__ import annotations

import json
import os

from .. import __version__
from ..base import PROTOCOL_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..base import SidecarPaths

__all__ = ["read_pid_record", "recorded_process", "unlink_pid_file_if_ours", "write_pid_file"]


def write_pid_file(paths: SidecarPaths, workspace: str | None) -> None:
    """Atomically record who serves this socket (pid plus create time)."""
    from ..base import ProcessRecord

    record = {
        **ProcessRecord.current().to_dict(),
        "workspace": workspace,
        "socket": paths.socket,
        "version": __version__,
        "protocol": PROTOCOL_VERSION,
    }
    tmp = f"{paths.pid}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh)
    os.replace(tmp, paths.pid)


def read_pid_record(paths: SidecarPaths) -> dict | None:
    """The pid file's record, or None when missing or unreadable."""
    try:
        with open(paths.pid, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):  # missing or unreadable: None (documented)
        return None
    return record if isinstance(record, dict) else None


def recorded_process(paths: SidecarPaths):
    """The live process the pid file names, checked by pid *and* create time.

    Returns None for a missing or stale record (dead pid, or a pid reused by
    another process), so a stale file never leads to signalling a stranger.
    """
    from ..base import ProcessRecord

    record = ProcessRecord.from_dict(read_pid_record(paths))
    return None if record is None else record.process()


def unlink_pid_file_if_ours(path: str) -> None:
    """Remove the pid file at ``path`` if it names this process; never another's."""
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):  # missing or unreadable: not provably ours, so left alone
        return
    if isinstance(record, dict) and record.get("pid") == os.getpid():
        try:
            os.unlink(path)
        except OSError:  # already gone
            pass
