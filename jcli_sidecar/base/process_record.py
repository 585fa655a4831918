""" "Is this still the process we recorded?", answered in one place.

j-cli records processes it may later trust or signal: the sidecar (its pid
file), the embedded Jupyter Server (its state file) and the writer of an
inline run (a staged run's ``.writer.json``, then the manifest's
``owner``). A pid alone proves nothing, since pids are reused, so a
record carries the process's start time, its uid and the host, and a
process matches only when all of them do. A recorded server is
trusted only when, on top of that, the process itself holds the socket that
listens on its port (:meth:`ProcessRecord.listens_on`): whoever else listens
there now (another user, after the server died) is never spoken to.

On Linux a check reads ``/proc`` directly (the same start time psutil
computes), so checking imports nothing heavy; ``psutil`` is imported only
when a record is made, a process is wanted for signalling, or there is no
``/proc`` (macOS, the BSDs: :func:`~jcli_sidecar.base.procfs.proc_root`),
where it reads the same facts from the kernel. Waiting for an exit uses a
pidfd where the system has them (Linux), else polls the process's state.
"""

from __future__ import annotations

import os
import socket

from .procfs import proc_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ALIVE", "GONE", "ProcessRecord", "UNKNOWN", "wait_for_exit"]

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
        if self.host is not None and self.host != socket.gethostname():
            return UNKNOWN
        proc = proc_root()
        if proc is None:
            return self._check()[0]
        try:
            created, uid, zombie = _proc_facts(proc, self.pid)
        except FileNotFoundError:
            return GONE
        except (OSError, ValueError, IndexError):  # /proc unreadable or garbled: unknown, never taken as alive or gone
            return UNKNOWN
        if zombie or abs(created - self.create_time) > _START_TIME_SLACK:
            return GONE  # a zombie, or the pid was reused
        if self.uid is not None and uid != self.uid:
            return GONE
        return ALIVE

    def stopped(self) -> bool:
        """True when the recorded process runs but is stopped (SIGSTOP, SIGTSTP, a tracer): it answers nothing until continued."""
        if self.state() != ALIVE:
            return False
        proc = proc_root()
        if proc is None:
            import psutil

            try:
                return psutil.Process(self.pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
            except psutil.Error:  # gone meanwhile, or not ours to inspect: not known to be stopped
                return False
        try:
            with open(f"{proc}/{self.pid}/stat", "rb") as fh:
                stat = fh.read()
            return stat[stat.rindex(b")") + 2 :].split()[0] in (b"T", b"t")
        except (OSError, ValueError, IndexError):  # gone, or /proc unreadable: not known to be stopped
            return False

    def listens_on(self, host: str, port: int) -> bool:
        """True when the recorded process runs and itself holds the socket listening on ``host:port``.

        ``host`` is an IPv4 address; a listener on the wildcard address
        counts too. The process is checked before and after its sockets are
        read, so a pid reused meanwhile never passes.

        Example:
            >>> import socket
            >>> with socket.socket() as sock:
            ...     sock.bind(("127.0.0.1", 0))
            ...     sock.listen()
            ...     port = sock.getsockname()[1]
            ...     ProcessRecord.current().listens_on("127.0.0.1", port)
            True
        """
        if self.state() != ALIVE:
            return False
        proc = proc_root()
        try:
            held = _psutil_listens(self.pid, host, port) if proc is None else _proc_listens(proc, self.pid, host, port)
        except (OSError, ValueError, IndexError):  # its sockets cannot be read: not proven to listen, so not trusted
            return False
        return held and self.state() == ALIVE

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


# -- waiting, and reading /proc (Linux) -------------------------------------------------


def wait_for_exit(process: Any, timeout: float) -> bool:
    """Wait until ``process`` (a ``psutil.Process``) has ended: True once it has, False after ``timeout`` seconds.

    A process that has exited counts as ended even before its parent reaps it.
    The sidecar and the embedded server run detached, so their parent is the
    init process, which may reap them seconds later, or (in a container
    without an init) never; waiting for the pid to vanish would wait that
    long. A pidfd becomes readable the moment the process exits, so the wait
    is an event, not a poll; where pidfds are missing (macOS, the BSDs, an
    old Linux), the process's state is polled instead, a zombie counting as
    ended at the next look.
    """
    import select

    try:
        fd = os.pidfd_open(process.pid)
    except ProcessLookupError:
        return True
    except (OSError, AttributeError):  # no pidfd here: poll, counting a zombie as ended
        return _poll_for_exit(process, timeout)
    try:
        if not process.is_running():  # gone, or the pid is another process's by now
            return True
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(0.0, timeout) * 1000))
    finally:
        os.close(fd)


#: The longest pause between two looks of :func:`_poll_for_exit` (it starts at 0.1 ms and doubles).
_POLL_MAX_SECONDS = 0.05


def _poll_for_exit(process: Any, timeout: float) -> bool:
    """:func:`wait_for_exit` without a pidfd: look at the process's state, then wait for it a little longer each time."""
    import time

    import psutil

    deadline = time.monotonic() + max(0.0, timeout)
    pause = 0.0001
    while True:
        try:
            if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
                return True  # gone, reused, or exited and not yet reaped
        except psutil.Error:  # gone between the two looks, or no longer ours to see: ended for us
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            process.wait(min(pause, left))  # our own child is reaped here
            return True
        except psutil.TimeoutExpired:
            pause = min(pause * 2, _POLL_MAX_SECONDS)
        except psutil.Error:
            return True


def _proc_facts(proc: str, pid: int) -> tuple[float, int, bool]:
    """(create time, real uid, is a zombie) of ``pid`` from ``/proc`` (at ``proc``), as psutil computes them.

    Raises:
        FileNotFoundError: there is no such process.
    """
    with open(f"{proc}/{pid}/stat", "rb") as fh:
        stat = fh.read()
    fields = stat[stat.rindex(b")") + 2 :].split()  # the name may hold spaces and parentheses
    state, start_ticks = fields[0], int(fields[19])  # stat fields 3 and 22
    with open(f"{proc}/{pid}/status", "rb") as fh:
        uid = next(int(line.split()[1]) for line in fh if line.startswith(b"Uid:"))
    with open(f"{proc}/stat", "rb") as fh:
        boot = next(float(line.split()[1]) for line in fh if line.startswith(b"btime"))
    return start_ticks / os.sysconf("SC_CLK_TCK") + boot, uid, state == b"Z"


def _listening_inodes(proc: str, host: str, port: int) -> set[bytes]:
    """The inodes of the TCP sockets listening on ``host:port`` (or the wildcard), IPv4 and IPv6."""
    import struct

    packed = socket.inet_aton(host)
    v4 = {b"%08X" % struct.unpack("=I", packed)[0], b"00000000"}
    # IPv6: the wildcard, or the IPv4-mapped address (four host-order words in hex).
    v6 = {b"0" * 32, b"0000000000000000FFFF0000" + b"%08X" % struct.unpack("=I", packed)[0]}
    found: set[bytes] = set()
    for table, addresses in ((f"{proc}/net/tcp", v4), (f"{proc}/net/tcp6", v6)):
        try:
            with open(table, "rb") as fh:
                lines = fh.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].partition(b":")
            if fields[3] == b"0A" and int(hex_port, 16) == port and address.upper() in addresses:
                found.add(fields[9])
    return found


def _proc_listens(proc: str, pid: int, host: str, port: int) -> bool:
    inodes = _listening_inodes(proc, host, port)
    if not inodes:
        return False
    fd_dir = f"{proc}/{pid}/fd"
    for name in os.listdir(fd_dir):
        try:
            target = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:[") and target[8:-1].encode() in inodes:
            return True
    return False


def _psutil_listens(pid: int, host: str, port: int) -> bool:
    """:func:`_proc_listens` where there is no ``/proc``: the process's own TCP sockets, as psutil lists them."""
    import psutil

    process = psutil.Process(pid)
    listing = getattr(process, "net_connections", None) or process.connections  # psutil before 6.0 names it connections
    try:
        connections = listing(kind="tcp")
    except psutil.Error as exc:  # gone, or not ours to inspect: not proven to listen
        raise OSError(f"the sockets of process {pid} cannot be read: {exc}") from None
    wanted = (host, "0.0.0.0", "::", f"::ffff:{host}")
    return any(
        conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.laddr.ip in wanted for conn in connections
    )
