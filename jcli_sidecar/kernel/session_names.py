"""The names of the sessions j-cli created on a server that does not list them: remembered per server, per user.

Kernel Gateway and Enterprise Gateway forbid listing sessions by default, so
such a server cannot say which session a name means. ``session create`` on
one remembers the name instead, in the runtime dir: one small JSON file per
server, ``<hash>.names.json``, the hash being :func:`server_key` (of the
normalized base URL, never the token); mode 0600, replaced whole by a rename
under the server's names lock (``<hash>.names.lock``), so two j-cli
processes creating sessions at once both keep their names::

    {"schema_version": 1, "server": "http://host:8888",
     "sessions": {"job": {"kernel_id": "…", "session_id": "…", "path": "job",
                          "kernel_name": "python3", "created": "2026-01-02T03:04:05Z"}}}

The rules:

- Listing wins. Where the server lists sessions, this memory is neither
  read nor written (:func:`~jcli_sidecar.kernel.session_lookup.find_sessions`
  asks it only after a listing was refused).
- The server has the last word. A remembered kernel is used only once
  ``GET /api/kernels/ID`` (open at the gateways' default settings) finds it;
  one it answers 404 for is forgotten, and its name is ``SESSION_NOT_FOUND``
  saying it was remembered but is gone.
- Only this user's own file counts. A file that is a symlink, not a regular
  file, not owned by this user, writable by others, too big or not this
  format is ignored, never followed and never an error; the next change
  replaces it by a rename (which never writes through a link).
- A session j-cli kills is forgotten (:func:`forget_kernels`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time

from ..base import JcliError, SessionNotFound, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from .jupyter_api import JupyterServer

__all__ = [
    "MEMORY_MAX_BYTES",
    "NameMemory",
    "create_remembered",
    "forget_kernels",
    "is_full_id",
    "remembered_session",
    "remembered_sessions",
    "server_key",
]

SCHEMA_VERSION = 1
#: The largest names file read; a bigger one is ignored (far above thousands of sessions).
MEMORY_MAX_BYTES = 1 << 20
_DEFAULT_PORTS = {"http": 80, "https": 443}
_TEXT_FIELDS = ("path", "kernel_name", "created")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def is_full_id(key: str) -> bool:
    """Whether ``key`` is a whole session or kernel id (a UUID), which needs no listing.

    Example:
        >>> is_full_id("a9fe24a1-eee4-4e83-9c84-e2f5736940c6"), is_full_id("a9fe24a1"), is_full_id("eg1")
        (True, False, False)
    """
    return bool(_UUID.match(key))


def server_key(url: str) -> str:
    """16 hex characters naming a server's files: a hash of its base URL, normalized.

    The scheme and host are lowercased, the default port is made explicit,
    credentials (``user:password@``), a query and a trailing slash are
    left out: the same server under two spellings is one memory.

    Example:
        >>> server_key("http://GW.example:80/base/") == server_key("http://me:pw@gw.example/base")
        True
        >>> server_key("http://gw.example/base") == server_key("https://gw.example/base")
        False
    """
    from urllib.parse import urlsplit

    from ..base import workspace_hash

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        port = 0
    return workspace_hash(f"{scheme}://{(parts.hostname or '').lower()}:{port}{parts.path.rstrip('/')}")


class NameMemory:
    """The names remembered for one server, in the (verified) runtime dir ``directory``.

    Attributes:
        path: the names file.
        lock_path: the lock held while it changes.
        failed: the last write that failed (:meth:`changing`), else None.
    """

    def __init__(self, url: str, shown_url: str, directory: str) -> None:
        from ..base import SERVER_FILES

        self.shown_url = shown_url
        base = os.path.join(directory, server_key(url))
        self.path = base + SERVER_FILES["names"]
        self.lock_path = base + SERVER_FILES["names_lock"]
        self.failed: OSError | None = None

    @classmethod
    def of(cls, server: JupyterServer, *, create: bool = False) -> NameMemory:
        """The memory of ``server`` in this user's runtime dir.

        Raises:
            RuntimeDirUnsafe, RuntimeDirUnusable, FileNotFoundError: as
                :func:`~jcli_sidecar.base.runtime.ensure_runtime_dir` (``create``: made when missing).
        """
        from ..base import ensure_runtime_dir

        return cls(server.url, server.shown_url, ensure_runtime_dir(create=create))

    def entries(self) -> dict[str, dict[str, Any]]:
        """The remembered sessions by name; empty when there is no file we trust (see the module). Never raises."""
        raw = self._read_own()
        if raw is None:
            return {}
        try:
            from ..base import loads

            doc = loads(raw)
        except (ValueError, RecursionError):
            return {}
        if not isinstance(doc, dict) or doc.get("schema_version") != SCHEMA_VERSION or not isinstance(doc.get("sessions"), dict):
            return {}
        return {name: entry for name, entry in doc["sessions"].items() if _valid(name, entry)}

    def _read_own(self) -> bytes | None:
        """The file's bytes when it is a regular file of this user, not writable by others, one link, within the cap."""
        from ..base import read_open

        try:
            before = os.lstat(self.path)
            if not _own_file(before):
                return None
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except (OSError, ValueError):  # absent, a link, or unreadable: no remembered names (never trusted)
            return None
        try:
            info = os.fstat(fd)
            if not _own_file(info) or (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
                return None
            return read_open(fd, info, self.path, MEMORY_MAX_BYTES)
        except OSError:  # unreadable: no remembered names (never trusted)
            return None
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def changing(self) -> Iterator[dict[str, dict[str, Any]]]:
        """Hold the names lock and yield the entries to change in place; written back (whole, by a rename) when changed.

        A write that fails changes nothing on disk and is kept in :attr:`failed`.

        Raises:
            OSError: the lock cannot be taken (a link or another user's file
                in its place); nothing is changed then.
        """
        from ..base import private_lock

        with private_lock(self.lock_path):
            entries = self.entries()
            before = json.dumps(entries, sort_keys=True)
            yield entries
            if json.dumps(entries, sort_keys=True) != before:
                try:
                    self._write(entries)
                except OSError as exc:
                    self.failed = exc

    def _write(self, entries: dict[str, dict[str, Any]]) -> None:
        from ..base import clean_dead_temps, temp_path

        clean_dead_temps(self.path)
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # a link or a planted file goes too; nothing it points at is touched
            return
        doc = {"schema_version": SCHEMA_VERSION, "server": self.shown_url, "sessions": entries}
        data = json.dumps(doc, indent=1, sort_keys=True).encode("utf-8")
        tmp = temp_path(self.path, "tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def forget(self, kernel_ids: set[str]) -> list[str]:
        """Forget every name whose kernel is in ``kernel_ids``; the names forgotten.

        Raises:
            OSError: the lock cannot be taken (:meth:`changing`).
        """
        if not any(entry["kernel_id"] in kernel_ids for entry in self.entries().values()):
            return []  # nothing to change: no lock taken, no file made
        with self.changing() as entries:
            gone = [name for name, entry in entries.items() if entry["kernel_id"] in kernel_ids]
            for name in gone:
                del entries[name]
        return gone


def _own_file(info: os.stat_result) -> bool:
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_uid == os.geteuid()
        and not info.st_mode & 0o022
        and info.st_nlink == 1
        and info.st_size <= MEMORY_MAX_BYTES
    )


def _valid(name: Any, entry: Any) -> bool:
    """One entry as j-cli writes it: a name, a full kernel id, a full session id or null, text fields or null."""
    if not isinstance(name, str) or not name or len(name) > 4096 or not isinstance(entry, dict):
        return False
    kernel_id, session_id = entry.get("kernel_id"), entry.get("session_id")
    if not isinstance(kernel_id, str) or not is_full_id(kernel_id):
        return False
    if session_id is not None and not (isinstance(session_id, str) and is_full_id(session_id)):
        return False
    return all(entry.get(field) is None or isinstance(entry.get(field), str) for field in _TEXT_FIELDS)


def _entry(row: dict[str, Any]) -> dict[str, Any]:
    """What is remembered of a new session (a summary)."""
    return {
        "kernel_id": row["kernel_id"],
        "session_id": row["id"],
        "path": row["path"],
        "kernel_name": row["kernel_name"],
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _row(name: str, entry: dict[str, Any], kernel: dict[str, Any]) -> dict[str, Any]:
    """A remembered session the server still has, as a session summary marked ``remembered``."""
    return {
        "id": entry.get("session_id"),
        "name": name,
        "path": entry.get("path"),
        "kernel_id": entry["kernel_id"],
        "kernel_name": kernel.get("name") or entry.get("kernel_name"),
        "execution_state": kernel.get("execution_state"),
        "remembered": True,
        "created": entry.get("created"),
    }


def _reader(server: JupyterServer) -> NameMemory | None:
    try:
        return NameMemory.of(server)
    except (OSError, JcliError):  # no runtime dir yet, or one we may not use: nothing remembered
        return None


def _prune(server: JupyterServer, memory: NameMemory, gone: dict[str, dict[str, Any]]) -> None:
    """Forget the names in ``gone`` (name: entry) that still mean that kernel, and drop their stale sessions; best effort."""
    with contextlib.suppress(OSError), memory.changing() as entries:
        for name, entry in gone.items():
            if (entries.get(name) or {}).get("kernel_id") == entry["kernel_id"]:
                del entries[name]
    for entry in gone.values():
        _drop_stale_session(server, entry)


def _drop_stale_session(server: JupyterServer, entry: dict[str, Any]) -> None:
    """Drop the session of a kernel the server no longer has; best effort.

    A gateway keeps such a session (under the name as its path) until it
    notices the kernel is gone, which it does when the session is next
    asked for; a new session with the same path fails (HTTP 500) and so
    does that. So it is asked for twice, by a DELETE and by a GET of its
    id (each answers an error, 404, 410 or 500), after which the path is
    free (pinned in tests/remote/test_remote_gateways.py).
    """
    session_id = entry.get("session_id")
    if session_id:
        with contextlib.suppress(JcliError):
            server.delete_session(session_id)
        with contextlib.suppress(JcliError):
            server.session(session_id)


def remembered_session(server: JupyterServer, key: str, *, kernel: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The remembered session ``key`` names (its name, or its full session or kernel id), checked with the server.

    Args:
        kernel: the server's model of the kernel ``key`` names, when the caller fetched it already.

    Returns:
        Its summary (``remembered: true``), or None when nothing remembered matches.

    Raises:
        SessionNotFound: it was remembered, but the server no longer has its
            kernel; the name is forgotten.
        JcliError: the server cannot be asked.
    """
    memory = _reader(server)
    if memory is None:
        return None
    entries = memory.entries()
    name = key if key in entries else next((n for n, e in entries.items() if key in (e["kernel_id"], e.get("session_id"))), None)
    if name is None:
        return None
    entry = entries[name]
    if kernel is None or kernel.get("id") != entry["kernel_id"]:
        kernel = server.kernel(entry["kernel_id"])
    if kernel is not None:
        return _row(name, entry, kernel)
    _prune(server, memory, {name: entry})
    raise SessionNotFound(
        f"the session {name!r} was created here through j-cli (kernel {entry['kernel_id']}, {entry.get('created') or 'time unknown'}), "
        f"but {server.shown_url} no longer has its kernel (shut down or culled); j-cli forgot the name",
        selector=key,
        remembered=True,
        kernel_id=entry["kernel_id"],
    )


def remembered_sessions(server: JupyterServer) -> list[dict[str, Any]]:
    """Every remembered session the server still has (one ``GET /api/kernels/ID`` each), by name; the rest are forgotten.

    Raises:
        JcliError: the server cannot be asked.
    """
    memory = _reader(server)
    if memory is None:
        return []
    rows, gone = [], {}
    for name, entry in sorted(memory.entries().items()):
        kernel = server.kernel(entry["kernel_id"])
        if kernel is None:
            gone[name] = entry
        else:
            rows.append(_row(name, entry, kernel))
    if gone:
        _prune(server, memory, gone)
    return rows


def create_remembered(server: JupyterServer, name: str, create: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], str | None]:
    """Create a session named ``name`` with ``create()`` (returning its summary) and remember the name.

    Under the server's names lock: a name remembered for a kernel the
    server still has is refused, as a listed name is; one whose kernel is
    gone is given to the new session. Where the memory cannot be used (an
    unsafe runtime dir, a link where the lock belongs), the session is still
    created, and the returned note says why its name was not remembered.

    Returns:
        ``(summary, note)``: note is None when the name was remembered.

    Raises:
        UsageError: the name belongs to a live remembered session.
        JcliError: as ``create``.
    """
    unusable: OSError | JcliError | None = None
    with contextlib.ExitStack() as stack:
        try:
            memory = NameMemory.of(server, create=True)
            entries = stack.enter_context(memory.changing())
        except (OSError, JcliError) as exc:
            unusable = exc
        if unusable is not None:
            return create(), _not_remembered(unusable)
        entry = entries.get(name)
        if entry is not None:
            if server.kernel(entry["kernel_id"]) is not None:
                raise UsageError(f"a session named {name!r} exists already (kernel {entry['kernel_id']}, created here through j-cli)")
            _drop_stale_session(server, entry)
        row = create()
        entries[name] = _entry(row)
    return row, None if memory.failed is None else _not_remembered(memory.failed)


def _not_remembered(exc: OSError | JcliError) -> str:
    from ..base import os_reason

    reason = exc.message if isinstance(exc, JcliError) else os_reason(exc)
    return f"j-cli could not remember the name ({reason})"


def forget_kernels(server: JupyterServer, kernel_ids: list[str]) -> None:
    """Forget the names of these kernels (killed through j-cli); best effort, never raises."""
    memory = _reader(server)
    if memory is not None and kernel_ids:
        with contextlib.suppress(OSError):
            memory.forget(set(kernel_ids))
