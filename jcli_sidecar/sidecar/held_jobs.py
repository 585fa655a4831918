"""Background jobs in the sidecar (``exec --background``): runs held by the sidecar, detached from any client.

:meth:`HeldJobs.start` checks the request, finds the session, takes its
place in its kernel's queue (one job per kernel: ``KERNEL_BUSY`` names the
job that holds it, unless the request queues behind it; jobs another
sidecar of the same directory holds count, read from the records), writes the job record
(:class:`~jcli_sidecar.runs.jobs.JobRecord`) and starts the run on a thread
of its own; the client gets the job id at once. The run is the core's, the
one a foreground exec runs: :func:`~jcli_sidecar.kernel.inline_run.run_inline`
then :func:`~jcli_sidecar.kernel.inline_run.finish_inline` (its run directory
published here), or :class:`~jcli_sidecar.kernel.notebook_run.NotebookRun`
(each cell written back as it ends, the running one checkpointed), over a
connection the sidecar holds. Its progress (cells done of N, the running
cell, the text captured so far, the final result document) goes into the
record as it goes. A job ends in one state of
:data:`~jcli_sidecar.runs.jobs.JOB_STATES`; :meth:`HeldJobs.cancel`
interrupts it (``cancelled``).
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time

from ..base import JcliError, ProtocolError, internal_error
from ..kernel import StopSwitch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..runs import JobRecord
    from .held_kernels import HeldKernels

__all__ = ["FLUSH_SECONDS", "HeldJobs", "state_of"]

#: How often a job's captured text is written out while it changes.
FLUSH_SECONDS = 0.25
#: An ended job's record that could not be saved (a full disk) is tried again after the first, doubling up to the second.
SAVE_RETRY_SECONDS = (0.5, 30.0)
#: Failure codes that name a job's end state (any other failure is ``error``).
_STATE_OF_CODE = {"TIMEOUT": "timeout", "KERNEL_DIED": "kernel_died", "INTERRUPTED": "interrupted"}


def state_of(status: str | None, code: str | None, *, cancelled: bool) -> str:
    """A job's end state from its result's ``status`` and the code of the failure that cut it short.

    Example:
        >>> state_of("ok", None, cancelled=False), state_of("error", "INTERRUPTED", cancelled=True)
        ('ok', 'cancelled')
    """
    if code is not None:
        state = _STATE_OF_CODE.get(code, "error")
        return "cancelled" if state == "interrupted" and cancelled else state
    return "ok" if status == "ok" else "error"


class _Job:
    """One job in flight: its record, stop switch, kernel and captured text (appended to the record's output)."""

    def __init__(self, job_id: str, record: JobRecord, kernel_id: str) -> None:
        self.job_id = job_id
        self.record = record
        self.kernel_id = kernel_id
        self.stop = StopSwitch()
        self.stop.defer()  # a cancel is recorded from the start; the run checks it before sending
        self.cancelled = False
        self.done = threading.Event()
        self.foreign: list[str] = []  # jobs ahead of it on the kernel that another sidecar holds

    def on_output(self, *, event: str, output: dict[str, Any], index: int, outputs: list, chunk: str | None = None) -> None:
        """Append what a person would see now: a stream's new text, an output's text, a display's new text (a clear appends nothing)."""
        from ..kernel import output_text

        if event == "stream":
            text = chunk or ""
        elif event in ("append", "update"):
            text = chunk if chunk is not None else output_text(output)
        else:
            return
        self.record.output.add(text)

    def flush(self) -> None:
        try:
            self.record.flush_output()
        except JcliError:
            pass  # what was not written stays queued (bounded): the next flush, or the end's save, writes it

    def flusher(self) -> None:
        while not self.done.wait(FLUSH_SECONDS):
            self.flush()


class HeldJobs:
    """The sidecar's background jobs (thread-safe)."""

    def __init__(self, kernels: HeldKernels) -> None:
        self.kernels = kernels
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._unsaved: dict[str, JobRecord] = {}
        self._stopping = threading.Event()
        self._ended: set[str] = set()  # ids of records known to be over (never read again to find a kernel's jobs)
        self._records = threading.Lock()  # guards _ended

    def running(self) -> int:
        """How many jobs this sidecar holds (running or queued)."""
        with self._lock:
            return len(self._jobs)

    def start(self, args: dict[str, Any], workspace: str | None) -> dict[str, Any]:
        """Start the job ``args`` (checked against ``JOB_SPEC`` by the server) asks for; returns ``{job_id, status, session, kind, file, cells, queued_behind}`` at once.

        Raises:
            JcliError: nothing was started (``SESSION_NOT_FOUND``, ``KERNEL_BUSY``, a record that cannot be written...).
        """
        from ..kernel import find_session
        from ..runs import new_job_id

        cwd, kind, key = args["cwd"], args["kind"], args["session"]
        if os.path.realpath(cwd) != workspace:
            raise ProtocolError("job.start is only for this sidecar's workspace")
        if kind not in ("inline", "notebook") or (kind == "inline") != ("code" in args) or (kind == "notebook") != ("file" in args):
            raise ProtocolError("job.start needs kind: inline with code, or notebook with file")
        server = self.kernels.server_of(args["server"])
        session = find_session(server, key)
        queue = bool(args.get("queue"))
        from ..base import os_error
        from ..runs import jobs_lock

        try:
            with jobs_lock(cwd):  # its place on the kernel, decided and recorded under the lock every sidecar of the directory takes
                job_id = new_job_id()
                foreign = self.foreign(cwd, session["kernel_id"])
                behind = self.kernels.enqueue(session["kernel_id"], job_id, queue=queue, foreign=foreign)  # or KERNEL_BUSY
                try:
                    record, doc = self._create(cwd, job_id, kind, key, session, server, args, behind)
                except BaseException:
                    self.kernels.release(session["kernel_id"], job_id)
                    raise
        except OSError as exc:
            raise os_error(exc, "write", os.path.join(cwd, ".j-cli", "jobs")) from None
        job = _Job(job_id, record, session["kernel_id"])
        job.foreign = foreign
        with self._lock:
            self._jobs[job_id] = job
        thread = threading.Thread(target=self._run, args=(job, server, session, args, queue), name=f"job-{job_id}")
        thread.start()
        threading.Thread(target=job.flusher, name=f"job-text-{job_id}", daemon=True).start()
        return {
            "job_id": job_id,
            "status": "running",
            "session": key,
            "kind": kind,
            "file": doc["file"],
            "cells": doc["cells"],
            "queued_behind": behind,
        }

    def foreign(self, cwd: str, kernel_id: str) -> list[str]:
        """The jobs the records of ``cwd`` show running or queued on ``kernel_id`` that another process holds, oldest first.

        Another sidecar of the same directory (reached by another path: a
        bind mount, a second name) writes its jobs' records here too; this
        sidecar's own jobs are in its memory.
        """
        from ..base import ProcessRecord
        from ..runs import jobs_on_kernel

        me = ProcessRecord.current().to_dict()
        try:
            with self._records:
                found = jobs_on_kernel(cwd, kernel_id, ended=self._ended)
        except (JcliError, OSError):  # records that cannot be read hold no job, as for a foreground run
            return []
        return [str(job["job_id"]) for job in found if job.get("holder") != me]

    def _create(
        self, cwd: str, job_id: str, kind: str, key: str, session: dict[str, Any], server: Any, args: dict[str, Any], behind: str | None
    ) -> tuple[JobRecord, dict[str, Any]]:
        from ..base import ProcessRecord
        from ..runs import JobRecord

        doc = {
            "job_id": job_id,
            "state": "running",
            "kind": kind,
            "session": key,
            "session_id": session["id"],
            "kernel_id": session["kernel_id"],
            "server_url": server.shown_url,
            "file": args.get("file") if kind == "notebook" else None,
            "cells": args.get("cells") if kind == "notebook" else 1,
            "cell_spec": args.get("cell_spec"),
            "cells_done": 0,
            "running_cell": None,
            "written_back": [],
            "executed": False,
            "queued_behind": behind,
            "created_ns": time.time_ns(),
            "started_ns": None,
            "finished_ns": None,
            "holder": ProcessRecord.current().to_dict(),
            "result": None,
            "error": None,
        }
        return JobRecord.create(cwd, doc, output_max_bytes=args.get("output_max_bytes")), doc

    def cancel(self, job_id: str) -> dict[str, Any]:
        """Interrupt job ``job_id`` (it ends ``cancelled``): ``{job_id, cancelling}`` (false: this sidecar does not hold it)."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return {"job_id": job_id, "cancelling": False}
            job.cancelled = True
            job.stop.handle(signal.SIGINT)
        self.kernels.wake()  # a queued job stops waiting
        return {"job_id": job_id, "cancelling": True}

    def close(self, signum: int) -> None:
        """The sidecar is stopping: every job is interrupted (it ends ``interrupted``, its record written).

        An ended job whose record could not be saved gets one last attempt
        here; if it fails again, ``end.json`` still says how it ended.
        """
        with self._lock:
            for job in self._jobs.values():
                job.stop.handle(signum)
            self._stopping.set()
            for job_id, record in list(self._unsaved.items()):
                if record.save_end() is None:
                    del self._unsaved[job_id]
                    record.close()
        self.kernels.wake()  # a queued job stops waiting (even behind another sidecar's job)

    # -- the run, on the job's thread ------------------------------------------------------------

    def _run(self, job: _Job, server: Any, session: dict[str, Any], args: dict[str, Any], queue: bool) -> None:
        end: dict[str, Any] = {}
        try:
            claimed = self.kernels.claim(
                session["kernel_id"],
                job.job_id,
                cancelled=lambda: job.cancelled or job.stop.signum is not None,  # cancelled, or the sidecar stops
                foreign=job.foreign,
                ended=functools.partial(_over, args["cwd"]),
                on_ahead=functools.partial(_now_behind, job),
            )
            if not claimed:  # cancelled while queued, or the sidecar stopped: nothing ran
                why = "cancelled before it started" if job.cancelled else "the sidecar stopped before it started"
                end = {
                    "state": "cancelled" if job.cancelled else "interrupted",
                    "executed": False,
                    "error": {"code": "INTERRUPTED", "message": why},
                }
                return
            job.record.update(started_ns=time.time_ns())
            open_kernel = functools.partial(self.kernels.holding, job_id=job.job_id)
            if args["kind"] == "inline":
                end = self._inline(job, server, session, args, open_kernel)
            else:
                end = self._notebook(job, server, session, args, open_kernel)
        except JcliError as err:
            end = {"state": "error", "error": err.to_dict()}
        except Exception as exc:  # a bug: the record still ends
            end = {"state": "error", "error": internal_error(exc).to_dict()}
        finally:
            self.kernels.release(session["kernel_id"], job.job_id)  # the next queued job may start
            job.done.set()
            job.stop.close()
            if job.record.finish(**end, running_cell=None, finished_ns=time.time_ns()) is None:
                job.record.close()
            else:  # a full disk: the job reads ended (end.json); the record and its last text are saved when space allows
                self._keep_saving(job.record)
            with self._lock:
                self._jobs.pop(job.job_id, None)
            self._clean(args)

    def _keep_saving(self, record: JobRecord) -> None:
        """Save an ended job's record again and again (backing off) until it is on disk, or the sidecar stops."""
        with self._lock:
            self._unsaved[record.job_id] = record
        threading.Thread(target=self._saver, args=(record,), name=f"job-save-{record.job_id}", daemon=True).start()

    def _saver(self, record: JobRecord) -> None:
        delay = SAVE_RETRY_SECONDS[0]
        try:
            while True:
                stopping = self._stopping.wait(delay)
                with self._lock:
                    if record.job_id not in self._unsaved:
                        return  # saved by close()
                    if record.save_end() is None:
                        del self._unsaved[record.job_id]
                        return
                if stopping:
                    return
                delay = min(delay * 2, SAVE_RETRY_SECONDS[1])
        finally:
            with self._lock:
                if record.job_id not in self._unsaved:
                    record.close()

    def unsaved(self) -> list[str]:
        """The ended jobs whose record is not yet on disk (a full disk)."""
        with self._lock:
            return sorted(self._unsaved)

    def _clean(self, args: dict[str, Any]) -> None:
        """Apply the client's retention policy to ended jobs (best effort, as after a publish)."""
        from ..runs import Policy, clean_jobs

        try:
            clean_jobs(args["cwd"], Policy.from_wire(args.get("policy")))
        except (JcliError, OSError):  # best effort (above): the next publish or clean applies the policy again
            pass

    def _inline(self, job: _Job, server: Any, session: dict[str, Any], args: dict[str, Any], open_kernel: Any) -> dict[str, Any]:
        from ..kernel import ExecutionResult, finish_inline, run_inline
        from ..runs import Policy

        result = ExecutionResult()
        started_ns = time.time_ns()
        row, failure = run_inline(
            server,
            session["id"],
            args["code"],
            timeout=args.get("timeout"),
            display_mode=args.get("display_mode"),
            result=result,
            stop=job.stop,
            on_output=job.on_output,
            on_send=lambda _session: job.record.update(executed=True),
            open_kernel=open_kernel,
        )
        doc, failure = finish_inline(
            result,
            failure,
            row,
            args["code"],
            started_ns=started_ns,
            policy=Policy.from_wire(args.get("policy")),
            publish=_publish,
            stop=job.stop,
        )
        code = None if failure is None else failure.code
        end: dict[str, Any] = {
            "state": state_of(doc.get("status"), code, cancelled=job.cancelled),
            "executed": True,
            "result": doc,
            "cells_done": 1,
        }
        if failure is not None:
            end["error"] = {k: v for k, v in failure.to_dict().items() if k != "result"}
        return end

    def _notebook(self, job: _Job, server: Any, session: dict[str, Any], args: dict[str, Any], open_kernel: Any) -> dict[str, Any]:
        from ..kernel import NotebookRun, Parameters, RunOptions

        parameters = args.get("parameters")
        options = RunOptions(
            parameters=None if parameters is None else Parameters.from_wire(parameters, args.get("parameters_source") or ""),
            cells=args.get("cell_spec"),
            timeout=args.get("timeout"),
            checkpoint_seconds=args.get("checkpoint_seconds"),
            kernel_name=args.get("kernel_name"),
            py_wins=bool(args.get("py_wins")),
            display_mode=args.get("display_mode"),
            writeback_pace=float(args.get("writeback_pace") or 0.0),
            kernel_language=args.get("kernel_language"),
            any_kernel=bool(args.get("any_kernel")),
            allow_errors=bool(args.get("allow_errors")),
            run_timeout=args.get("run_timeout"),
            timeout_given=bool(args.get("timeout_given")),
            stale=bool(args.get("stale")),
        )
        from ..room import open_live_run

        run = NotebookRun(args["file"], options)
        progress = _Progress(job)
        progress.attach(run)
        name = session.get("name")
        room, run.live_reason = open_live_run(server, args["file"], session=name if isinstance(name, str) else None)
        run.live = room  # a job lands live too: the person watches it run
        try:
            summary = run.execute(server, session, stop=job.stop, open_kernel=open_kernel)
        except JcliError as err:
            err.details["executed"] = run.sent
            return {"state": "error", "executed": run.sent, "error": err.to_dict(), "cells_done": progress.done}
        finally:
            if room is not None:
                room.close()
        code = progress.failure if summary.get("code") is None else summary.get("code")
        state = state_of(summary.get("status"), code, cancelled=job.cancelled)
        return {"state": state, "executed": run.sent, "result": summary, "cells_done": progress.done}


def _over(cwd: str, job_id: str) -> bool:
    """Whether another sidecar's job ``job_id`` is over (or gone, or unreadable: it holds the kernel no more)."""
    from ..runs import read_job

    try:
        return read_job(cwd, job_id).get("state") != "running"
    except (JcliError, OSError):  # gone or unreadable: it holds the kernel no more
        return True


def _now_behind(job: _Job, ahead: str | None) -> None:
    """The job ``job`` waited behind was cancelled while queued: its record names the one now directly ahead."""
    try:
        job.record.update(queued_behind=ahead)
    except JcliError:
        pass  # best effort: the queue's order is kept in memory


def _publish(cwd: str, run_id: str, policy: Any) -> dict[str, Any]:
    """The sidecar publishes a job's inline run itself, under the outputs lock (the client is gone)."""
    from ..base import Outputs, os_error
    from ..runs import publish_run

    try:
        return publish_run(Outputs.of_workspace(cwd).root, run_id, policy)
    except OSError as exc:
        raise os_error(exc, "publish", run_id, run_id=run_id) from None


class _Progress:
    """A notebook job's hooks: the record follows the run (cells done, the running cell, what was written back)."""

    def __init__(self, job: _Job) -> None:
        self.job = job
        self.done = 0
        self.failure: str | None = None
        self.written: list[int] = []

    def attach(self, run: Any) -> None:
        run.on_notebook_start = self.on_notebook_start
        run.on_cell_start = self.on_cell_start
        run.on_output = self.job.on_output
        run.on_cell_complete = self.on_cell_complete
        run.on_cell_error = self.on_cell_error

    def on_notebook_start(self, *, notebook: str, cell_indexes: list[int]) -> None:
        self.job.record.update(cells=len(cell_indexes), notebook=notebook, cell_indexes=cell_indexes)

    def on_cell_start(self, *, cell_index: int, cell: dict[str, Any]) -> None:
        self.job.record.update(running_cell=cell_index, executed=True)

    def _ended(self, cell_index: int, line: dict[str, Any]) -> None:
        self.done += 1
        if line.get("notebook_updated", True):
            self.written.append(cell_index)
        self.job.record.update(cells_done=self.done, written_back=list(self.written))

    def on_cell_complete(self, *, cell_index: int, line: dict[str, Any]) -> None:
        self._ended(cell_index, line)

    def on_cell_error(self, *, cell_index: int, line: dict[str, Any], error: JcliError) -> None:
        self.failure = error.code
        self._ended(cell_index, line)
