"""Job records: ``<cwd>/.j-cli/jobs/<job-id>/`` for runs the workspace's sidecar holds (``exec --background``).

A job directory holds ``job.json`` (the record, rewritten whole each time:
temp file plus rename, so a reader never sees half of one; a temp file a
failed write left is removed), ``end.json`` (made at the start, full size,
and written in place only when the end's ``job.json`` could not be: a full
disk; a reader then reads the job as ended, with ``record_save_failed``)
and the text the run captured (:mod:`jcli_sidecar.runs.job_output`:
appended, a bounded tail kept). Every name is reached through an open
directory without following a link
(:mod:`jcli_sidecar.base.nofollow`): a symlinked ``.j-cli``, ``jobs``, job
directory or record is refused, never followed.

States: ``running``, then one of ``ok``, ``error``, ``timeout``,
``interrupted``, ``cancelled``, ``kernel_died``, ``lost``. Only the holder
(a sidecar, recorded as ``holder``: pid plus start time) writes a record.
A reader changes nothing: a ``running`` record whose holder is provably
gone (:class:`~jcli_sidecar.base.process_record.ProcessRecord`) reads as
``lost``, with the time of its last update and what it had saved.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time

from ..base import (
    DIR_MODE,
    JOB_END,
    JOB_READ,
    JOB_RECORD,
    MANAGED_BY,
    SCHEMA_VERSION,
    Dir,
    JcliError,
    JobAmbiguous,
    JobNotFound,
    KernelBusy,
    LinkRefused,
    OutputDataInvalid,
    UsageError,
    check_dir,
    open_jobs,
    os_error,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = [
    "ENDED_STATES",
    "JOB_STATES",
    "JobRecord",
    "check_kernel_free",
    "is_job_id",
    "job_on_kernel",
    "job_view",
    "jobs_lock",
    "jobs_on_kernel",
    "list_jobs",
    "new_job_id",
    "note_read",
    "read_job",
    "read_job_output",
    "read_mark_ns",
    "resolve_job",
]

JOB_STATES = ("running", "ok", "error", "timeout", "interrupted", "cancelled", "kernel_died", "lost")
#: Every state but ``running``: the job is over.
ENDED_STATES = frozenset(JOB_STATES[1:])
#: The largest record read back (a result document is bounded far below this).
MAX_RECORD_BYTES = 8 * 1024 * 1024
#: The size of ``end.json``: allocated when the job starts, so writing the end there needs no new space.
END_SLOT_BYTES = 4096
_ID = re.compile(r"^\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{8}$")
_TMP = ".{}.tmp"
SAVE_FAILED_NOTE = (
    "the job ended but its record could not be written (a full disk?); its end state is kept, and its sidecar "
    "writes the whole record (the result, the last text) as soon as it can"
)
LOST_NOTE = (
    "the sidecar that held this job stopped without ending it (killed?); what was saved is kept, "
    "and the kernel may still be running the code"
)


def new_job_id(now_ns: int | None = None) -> str:
    """A job id that sorts by creation time: UTC to the nanosecond, then random bits (the form of a run id).

    Example:
        >>> new_job_id(1_700_000_000_123_456_789)[:26], is_job_id(new_job_id())
        ('20231114T221320.123456789Z', True)
    """
    now_ns = time.time_ns() if now_ns is None else now_ns
    seconds, nanos = divmod(now_ns, 1_000_000_000)
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(seconds))}.{nanos:09d}Z-{os.urandom(4).hex()}"


def is_job_id(name: str) -> bool:
    """Whether ``name`` has the form of a job id (nothing else under ``jobs`` is a job)."""
    return bool(_ID.match(name))


def _write_atomic(directory: Dir, name: str, data: bytes) -> None:
    """Write ``name`` in ``directory`` whole: a fresh temp file (never through a link), then rename."""
    tmp = _TMP.format(name)
    try:
        directory.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = directory.open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        directory.rename(tmp, directory, name)
    except BaseException:
        try:
            directory.unlink(tmp)  # a full disk leaves no half-written temp file behind
        except OSError:  # gone already, or the directory itself refuses: the write's own error is what counts
            pass
        raise


def _encode(doc: dict[str, Any]) -> bytes:
    import json

    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogateescape")


class JobRecord:
    """The holder's handle on one job directory: create it, then rewrite its record and append its text as the run goes."""

    __slots__ = ("cwd", "job_id", "dir", "doc", "output", "unsaved", "save_failures")

    def __init__(self, cwd: str, job_id: str, directory: Dir, doc: dict[str, Any], *, output_max_bytes: int | None = None) -> None:
        from .job_output import OutputLog
        from .job_output import output_max_bytes as bound

        self.cwd = cwd
        self.job_id = job_id
        self.dir = directory
        self.doc = doc
        #: The job's text (appended as it comes).
        self.output = OutputLog(directory, bound(output_max_bytes))
        #: The end record not yet saved (a full disk): kept here, saved again by :meth:`save_end`.
        self.unsaved: dict[str, Any] | None = None
        #: The failures to save the end so far (the first one is reported in the record once saved).
        self.save_failures: list[dict[str, Any]] = []

    @classmethod
    def create(cls, cwd: str, doc: dict[str, Any], *, output_max_bytes: int | None = None) -> JobRecord:
        """Make ``.j-cli/jobs/<doc["job_id"]>/``, its full-size ``end.json`` and its first record.

        Nothing of it is left when one step fails.

        Raises:
            OutputSaveFailed: the directory or record could not be written (a
                link in the way, no permission, a full disk).
            WorkspaceUnsafe: ``.j-cli`` or ``jobs`` is owned or writable by another user.
        """
        job_id = doc["job_id"]
        place = os.path.join(cwd, ".j-cli", "jobs", job_id)
        try:
            with open_jobs(cwd, create=True) as jobs:
                jobs.mkdir(job_id, DIR_MODE)
                try:
                    directory = check_dir(jobs.sub(job_id), "job directory")
                    try:
                        _make_end_slot(directory)
                        record = cls(cwd, job_id, directory, {}, output_max_bytes=output_max_bytes)
                        record.write(doc)
                    except BaseException:
                        directory.close()
                        raise
                except BaseException:
                    jobs.remove_tree(job_id, depth=2)
                    raise
        except LinkRefused as exc:
            raise os_error(exc, "write", f"the job record {place}", path=place) from None
        except OSError as exc:
            raise os_error(exc, "write", f"the job record {place}", path=place) from None
        return record

    @classmethod
    def open(cls, cwd: str, job_id: str) -> JobRecord:
        """The existing record of ``job_id``, to rewrite it (a new sidecar settling a lost job).

        Raises:
            JobNotFound, UsageError, OutputDataInvalid: as :func:`read_job`.
        """
        with _jobs_holding(cwd, job_id) as jobs:
            doc = _read_record(jobs, job_id)
            try:
                directory = check_dir(jobs.sub(job_id), "job directory")
            except LinkRefused as exc:
                raise UsageError(f"{exc.describe()}; refusing to write a job through it", path=exc.filename) from None
            except OSError as exc:
                raise os_error(exc, "write", f"the job record of {job_id}") from None
        return cls(cwd, job_id, directory, doc)

    def write(self, doc: dict[str, Any]) -> None:
        """Replace the record with ``doc`` (``updated_ns`` is set here).

        Raises:
            OutputSaveFailed: it could not be written.
        """
        doc = {"managed_by": MANAGED_BY, "schema_version": SCHEMA_VERSION, **doc, "updated_ns": time.time_ns()}
        try:
            _write_atomic(self.dir, JOB_RECORD, _encode(doc))
        except OSError as exc:
            raise os_error(exc, "write", f"the job record {self.dir.path}", path=self.dir.path) from None
        self.doc = doc

    def update(self, **fields: Any) -> None:
        """Rewrite the record with ``fields`` changed."""
        self.write({**self.doc, **fields})

    def write_output(self, text: str) -> None:
        """Append ``text`` to the captured text and write it out now.

        Raises:
            OutputSaveFailed: it could not be written (what was not is kept, for the next write).
        """
        self.output.add(text)
        self.flush_output()

    def flush_output(self) -> None:
        """Write out the text queued so far.

        Raises:
            OutputSaveFailed: it could not be written (what was not is kept, for the next write).
        """
        try:
            self.output.flush()
        except LinkRefused as exc:
            raise os_error(exc, "write", f"the job output {self.dir.path}", path=self.dir.path) from None
        except OSError as exc:
            raise os_error(exc, "write", f"the job output {self.dir.path}", path=self.dir.path) from None

    def finish(self, **fields: Any) -> JcliError | None:
        """Write the end (``fields``: state, finished_ns, result...): the record, else the end state in place.

        When ``job.json`` cannot be written (a full disk), the end state goes
        into ``end.json`` (its space was allocated when the job started), so
        every reader sees the job ended, with ``record_save_failed``; the whole
        end record is kept in :attr:`unsaved` for :meth:`save_end`, and the
        failure is returned.
        """
        self.unsaved = {**self.doc, **fields}
        return self.save_end()

    def save_end(self) -> JcliError | None:
        """Try again to save the end record (and the text still queued); None once both are on disk."""
        failure: JcliError | None = None
        if self.output.unwritten():
            try:
                self.flush_output()
            except JcliError as err:
                failure = err
        if self.unsaved is not None:
            doc = dict(self.unsaved)
            if self.save_failures:
                doc["end_save_retried"] = {"first_error": self.save_failures[0], "attempts": len(self.save_failures) + 1}
            if self.output.dropped_unwritten:
                doc["output_dropped_unwritten"] = self.output.dropped_unwritten
            try:
                self.write(doc)
                self.unsaved = None
            except JcliError as err:
                failure = failure or err
        if failure is not None:
            self.save_failures.append({"code": failure.code, "message": failure.message, "at_ns": time.time_ns()})
            if self.unsaved is not None:
                try:
                    self._write_end_slot(failure)
                except OSError:  # nothing more to try now: the record stays as it was until the next attempt
                    pass
        return failure

    def _write_end_slot(self, failure: JcliError) -> None:
        """The end state written in place into ``end.json`` (no new space needed)."""
        end = self.unsaved or {}
        slot: dict[str, Any] = {k: end.get(k) for k in _END_FIELDS if k in end}
        error = slot.get("error")
        if isinstance(error, dict):
            slot["error"] = {"code": error.get("code"), "message": str(error.get("message", ""))[:400]}
        slot["save_error"] = {"code": failure.code, "message": failure.message[:400], "at_ns": time.time_ns()}
        data = _encode(slot)
        if len(data) > END_SLOT_BYTES:  # a message that does not fit: the state and the codes do
            slot = {k: slot[k] for k in ("state", "finished_ns", "executed", "cells_done") if k in slot}
            slot["save_error"] = {"code": failure.code, "message": "the job record could not be written"}
            data = _encode(slot)
        fd = self.dir.open_fd(JOB_END, os.O_WRONLY)
        try:
            view = memoryview(data.ljust(END_SLOT_BYTES, b" "))
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:], done)
        finally:
            os.close(fd)

    def close(self) -> None:
        self.dir.close()


#: What ``end.json`` keeps of the end (the result document stays in memory until ``job.json`` is saved).
_END_FIELDS = ("state", "finished_ns", "executed", "cells_done", "error")


def _make_end_slot(directory: Dir) -> None:
    """``end.json``, full size, blank: the space the end needs when the disk is full by then."""
    fd = directory.open_fd(JOB_END, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        data = memoryview(b" " * END_SLOT_BYTES)
        done = 0
        while done < len(data):
            done += os.write(fd, data[done:])
    finally:
        os.close(fd)


def _read_end_slot(directory: Dir) -> dict[str, Any] | None:
    """The end state ``end.json`` holds, or None (blank, missing, damaged: the record alone counts)."""
    from ..base import loads

    try:
        raw = directory.read_bytes(JOB_END)
    except (OSError, JcliError):  # no slot (a job of an older j-cli), or not readable: the record alone counts
        return None
    raw = raw.strip(b" \0\n")
    if not raw or len(raw) > END_SLOT_BYTES:
        return None
    try:
        slot = loads(raw)
    except ValueError:
        return None
    return slot if isinstance(slot, dict) and slot.get("state") in ENDED_STATES else None


def _open_jobs(cwd: str) -> Dir | None:
    """``.j-cli/jobs`` for reading; None when there is none.

    Raises:
        UsageError: ``.j-cli`` or ``jobs`` is a link or not a directory (refused, named).
        WorkspaceUnsafe: another user owns or can write it.
    """
    try:
        return open_jobs(cwd)
    except FileNotFoundError:
        return None
    except LinkRefused as exc:
        raise UsageError(f"{exc.describe()}; refusing to read jobs through it", path=exc.filename, kind=exc.kind) from None


def _jobs_holding(cwd: str, job_id: str) -> Dir:
    """``.j-cli/jobs`` for reading the record of ``job_id``.

    Raises:
        JobNotFound: the workspace has no jobs folder (no job was started here).
        UsageError, WorkspaceUnsafe: as :func:`_open_jobs`.
    """
    jobs = _open_jobs(cwd)
    if jobs is None:
        raise JobNotFound(f"no job {job_id} in this workspace (no job was started here)", job_id=job_id)
    return jobs


def _read_record(jobs: Dir, job_id: str) -> dict[str, Any]:
    """The raw record of ``job_id``; links refused.

    Raises:
        JobNotFound: no such job directory (or record yet).
        UsageError: a link in the way. OutputDataInvalid: not a record of ours.
    """
    from ..base import loads

    slot = None
    try:
        with jobs.sub(job_id) as directory:
            raw = directory.read_bytes(JOB_RECORD)
            if b'"state":"running"' in raw:
                slot = _read_end_slot(directory)
    except FileNotFoundError:
        raise JobNotFound(f"no job {job_id} in this workspace (it may have been cleaned)", job_id=job_id) from None
    except LinkRefused as exc:
        raise UsageError(f"{exc.describe()}; refusing to read a job through it", path=exc.filename, kind=exc.kind) from None
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise JobNotFound(f"no job {job_id} in this workspace", job_id=job_id) from None
        raise os_error(exc, "read", f"the job record of {job_id}") from None
    if len(raw) > MAX_RECORD_BYTES:
        raise OutputDataInvalid(f"the record of job {job_id} is too large ({len(raw)} bytes)", job_id=job_id)
    try:
        doc = loads(raw)
    except ValueError:
        raise OutputDataInvalid(f"the record of job {job_id} is not JSON", job_id=job_id) from None
    if not isinstance(doc, dict) or doc.get("managed_by") != MANAGED_BY or doc.get("job_id") != job_id:
        raise OutputDataInvalid(f"the record of job {job_id} is not a j-cli job record", job_id=job_id)
    if slot is not None and doc.get("state") == "running":  # its end could not be saved whole: it ended all the same
        doc = {**doc, **{k: slot[k] for k in _END_FIELDS if k in slot}, "running_cell": None}
        doc["record_save_failed"] = {
            **(slot.get("save_error") if isinstance(slot.get("save_error"), dict) else {}),
            "note": SAVE_FAILED_NOTE,
        }
    return doc


def job_view(doc: dict[str, Any], *, alive: Any = None) -> dict[str, Any]:
    """The record as a reader sees it now: a ``running`` job whose holder is gone reads ``lost``.

    ``alive(holder)`` (injectable) says whether the holder record names a live
    process; the default proves it by pid and start time. A holder that cannot
    be checked (another host) counts as alive.
    """
    view = {k: v for k, v in doc.items() if k not in ("managed_by",)}
    if view.get("state") != "running":
        return view
    from ..base import GONE, ProcessRecord

    holder = ProcessRecord.from_dict(doc.get("holder"))
    gone = (holder is None or holder.state() == GONE) if alive is None else not alive(doc.get("holder"))
    if gone:
        view["state"] = "lost"
        view["lost"] = {"last_update_ns": doc.get("updated_ns"), "note": LOST_NOTE}
        view["kernel_may_be_running"] = True
    return view


def read_job(cwd: str, job_id: str) -> dict[str, Any]:
    """The job ``job_id`` (a full id) as it stands (:func:`job_view`); reads only.

    Raises:
        JobNotFound, UsageError, OutputDataInvalid: as :func:`_read_record`.
    """
    with _jobs_holding(cwd, job_id) as jobs:
        return job_view(_read_record(jobs, job_id))


def _job_names(jobs: Dir) -> list[str]:
    return sorted(name for name in jobs.names() if is_job_id(name) and jobs.is_dir(name))


def list_jobs(cwd: str) -> list[dict[str, Any]]:
    """Every job of the workspace, oldest first (a link or a damaged record is listed as such); reads only."""
    jobs = _open_jobs(cwd)
    if jobs is None:
        return []
    found: list[dict[str, Any]] = []
    with jobs:
        for name in sorted(n for n in jobs.names() if is_job_id(n)):
            if not jobs.is_dir(name):
                found.append({"job_id": name, "state": "unreadable", "reason": "not a directory (a link?)"})
                continue
            try:
                found.append(job_view(_read_record(jobs, name)))
            except (JobNotFound, UsageError, OutputDataInvalid) as exc:
                found.append({"job_id": name, "state": "unreadable", "reason": exc.message})
            except OSError as exc:
                found.append({"job_id": name, "state": "unreadable", "reason": os_error(exc, "read").message})
    return found


def resolve_job(cwd: str, name: str) -> str:
    """The full id of the job ``name`` names: a full id, or a prefix of exactly one.

    Raises:
        JobNotFound: none matches. JobAmbiguous: several do (``matches``).
        UsageError: an empty name, or one that cannot be part of an id.
    """
    if not name or "/" in name or name in (".", ".."):
        raise UsageError(f"{name!r} is not a job id")
    jobs = _open_jobs(cwd)
    if jobs is None:
        raise JobNotFound(f"no job {name} in this workspace (no job was started here)", job_id=name)
    with jobs:
        names = _job_names(jobs)
    if name in names:
        return name
    matches = [n for n in names if n.startswith(name)]
    if not matches:
        raise JobNotFound(f"no job {name} in this workspace (it may have been cleaned)", job_id=name)
    if len(matches) > 1:
        raise JobAmbiguous(f"{name} names {len(matches)} jobs; give more of the id", matches=matches[:10])
    return matches[0]


def read_job_output(cwd: str, job_id: str, offset: int = 0, limit: int = 4000) -> tuple[str, dict[str, Any]]:
    """A window of the text job ``job_id`` captured so far, by byte offset (:func:`~jcli_sidecar.runs.job_output.read_window`); reads only.

    Only the window is read, whatever the size of the text.

    Raises:
        JobNotFound, UsageError: as :func:`read_job`. InvalidWindow: ``offset`` past the end.
        OutputDataInvalid: the text cannot be read.
    """
    from .job_output import read_window

    jobs = _open_jobs(cwd)
    if jobs is None:
        raise JobNotFound(f"no job {job_id} in this workspace", job_id=job_id)
    with jobs:
        _read_record(jobs, job_id)
        try:
            with jobs.sub(job_id) as directory:
                return read_window(directory, offset, limit)
        except FileNotFoundError:
            raise JobNotFound(f"no job {job_id} in this workspace (it may have been cleaned)", job_id=job_id) from None
        except LinkRefused as exc:
            raise UsageError(f"{exc.describe()}; refusing to read a job through it", path=exc.filename, kind=exc.kind) from None
        except OSError as exc:
            raise os_error(exc, "job-output", f"the text of job {job_id}") from None


def note_read(cwd: str, views: list[dict[str, Any]]) -> None:
    """Leave the ``read`` mark in each ended job of ``views`` (its end was just given to someone); best effort.

    The mark (an empty file, its mtime the time of the first read) is what
    retention waits for (:mod:`jcli_sidecar.runs.job_retention`); the record
    itself is never touched. A mark that cannot be made (a read-only
    workspace, another user's) is skipped: the job is then kept as unread.
    """
    ended = [str(v["job_id"]) for v in views if v.get("state") in ENDED_STATES and is_job_id(str(v.get("job_id")))]
    if not ended:
        return
    try:
        jobs = _open_jobs(cwd)
    except (JcliError, OSError):  # best effort (above): no mark, the job stays
        return
    if jobs is None:
        return
    with jobs:
        for job_id in ended:
            try:
                with jobs.sub(job_id) as directory:
                    os.close(directory.open_fd(JOB_READ, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except (FileExistsError, FileNotFoundError):  # read before, or cleaned meanwhile
                continue
            except OSError:  # best effort (above): this job stays unread
                continue


def read_mark_ns(jobs: Dir, job_id: str) -> int | None:
    """When job ``job_id`` was first read (its ``read`` mark's mtime), or None: never read."""
    import stat

    try:
        with jobs.sub(job_id) as directory:
            info = directory.lstat(JOB_READ)
    except OSError:  # no mark (or none we can see): never read, so kept (the safe side)
        return None
    return info.st_mtime_ns if stat.S_ISREG(info.st_mode) else None


def jobs_on_kernel(cwd: str, kernel_id: str, *, ended: set[str] | None = None) -> list[dict[str, Any]]:
    """The jobs of this workspace running or queued on ``kernel_id`` (their holder alive), oldest first; reads only.

    The kernel is named by its id, whatever path named the workspace (a bind
    mount, a second path: the records are the same files). A record that
    cannot be read counts as no job (``job list`` shows it ``unreadable``); a
    lost job holds no kernel. ``ended`` (the caller's, kept between calls)
    collects the ids of records that are over, which are never read again:
    a job that ended stays ended.
    """
    jobs = _open_jobs(cwd)
    if jobs is None:
        return []
    found: list[dict[str, Any]] = []
    with jobs:
        names = sorted(n for n in jobs.names() if is_job_id(n))
        if ended is not None:
            ended.intersection_update(names)
        for name in names:
            if ended is not None and name in ended:
                continue
            try:
                doc = _read_record(jobs, name)
            except (JcliError, OSError):  # a record no one can read claims no kernel; `job status` names its error
                continue
            if doc.get("state") in ENDED_STATES and ended is not None:
                ended.add(name)
            view = job_view(doc)
            if view.get("state") == "running" and view.get("kernel_id") == kernel_id:
                found.append(view)
    return found


def job_on_kernel(cwd: str, kernel_id: str) -> str | None:
    """The id of the first job of this workspace running on ``kernel_id`` (:func:`jobs_on_kernel`), or None; reads only."""
    found = jobs_on_kernel(cwd, kernel_id)
    return str(found[0]["job_id"]) if found else None


@contextlib.contextmanager
def jobs_lock(cwd: str) -> Iterator[None]:
    """Hold the flock of ``.j-cli/jobs`` (made if missing): a job's place on its kernel is decided and recorded under it.

    Every sidecar of the directory takes the same lock, whatever path
    named it (the flock is on the directory itself, one inode).

    Raises:
        OSError, LinkRefused, WorkspaceUnsafe: as :func:`~jcli_sidecar.base.open_jobs`.
    """
    import fcntl

    with open_jobs(cwd, create=True) as jobs:
        fcntl.flock(jobs.fd, fcntl.LOCK_EX)  # closing the directory releases it
        yield


def check_kernel_free(cwd: str, kernel_id: str) -> None:
    """Refuse a foreground run on a kernel a background job of this workspace runs on.

    What the sidecar checks from its memory, read from the job records: for
    a run that does not go through the sidecar (``JCLI_SIDECAR=off``, a
    notebook run, a fallback). Nothing is sent.

    A workspace whose ``.j-cli`` or ``jobs`` cannot be trusted or read (a
    link, a file, another user's) holds no job this check believes: the run
    goes on, and its own store step says what is wrong with the workspace.

    Raises:
        KernelBusy: ``job_id`` names the job (``executed: false``).
    """
    try:
        busy = job_on_kernel(cwd, kernel_id)
    except (JcliError, OSError):  # records that cannot be read hold no job (documented): the run's own store step reports the workspace
        return
    if busy is not None:
        raise KernelBusy(
            f"the kernel runs background job {busy}; wait for it (j-cli job wait {busy}) or cancel it (j-cli job cancel {busy})",
            job_id=busy,
            executed=False,
        )
