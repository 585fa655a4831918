"""Every sidecar op, declared once: its name, request spec, core function, how it runs, and what happens without a sidecar.

The server dispatches from :data:`OPS` (each op's handler in :mod:`.ops`
is registered under its declaration), checks every request against the
op's spec in one place (:meth:`Op.check`), and the client names ops only
through these declarations; one client call
(``jcli.transport.ask``) owns the sidecar-or-in-process choice by
:attr:`Op.without_sidecar`. The op tables of docs/protocol.md and
docs/sidecar.md are written from here (``make docs``) and a test fails
when they are stale. A new op is one declaration here, its handler in
:mod:`.ops` (which calls its core function), and its test.

Cheap to import: a client loads it on every read, so it holds names only;
a request spec is named by its name in ``jcli_sidecar.read.request_spec``
and a core function ``"module:function"``, each imported when it is used.
"""

from __future__ import annotations

import sys

from ..base import ProtocolError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..read import Field

__all__ = [
    "IN_PROCESS",
    "JOB_CANCEL",
    "JOB_START",
    "KERNEL_EXEC",
    "KERNEL_STOP",
    "NOTEBOOK_ADOPT",
    "NOTEBOOK_GREP",
    "NOTEBOOK_LIST",
    "NOTEBOOK_LOOK",
    "NOTEBOOK_READ",
    "NOT_APPLICABLE",
    "OPS",
    "Op",
    "PING",
    "REFUSE",
    "RUN_PUBLISH",
    "SHUTDOWN",
    "SKIP",
    "START",
    "STATS",
    "WITHOUT_SIDECAR",
]

#: Without a sidecar answering, the client does the work itself (and, for a read or a run, starts one for the next call).
IN_PROCESS = "in-process"
#: Only a sidecar can do it: one is started now, and the op is refused with :attr:`Op.refuse` when none can run.
START = "start"
#: Only a running sidecar can do it: the op is refused (``SIDECAR_UNAVAILABLE``).
REFUSE = "refuse"
#: Best effort: nothing happens (the answer is None).
SKIP = "skip"
#: Not a client's request: control (``j-cli sidecar``), a run's own connection, or tests.
NOT_APPLICABLE = "n/a"
#: Each choice of :attr:`Op.without_sidecar`, as the docs tables say it.
WITHOUT_SIDECAR = {
    IN_PROCESS: "done in-process",
    START: "a sidecar is started; refused (with the op's code) when none can run",
    REFUSE: "refused (`SIDECAR_UNAVAILABLE`)",
    SKIP: "skipped",
    NOT_APPLICABLE: "–",
}


class Op:
    """One sidecar op.

    Args:
        name: the op on the wire.
        spec_name: its request's spec in :mod:`jcli_sidecar.read.request_spec`
            (:attr:`spec`); the server checks each request against it.
        core: ``"module:function"`` (or ``"module:Class.method"``), the core
            function the op runs; for a read, the one the client calls
            in-process too (None: the op is the sidecar's own). Another
            subpackage's function is named through its face
            (``"jcli_sidecar.read:handle_read"``), the sidecar's own by its module.
        without_sidecar: :data:`IN_PROCESS`, :data:`START`, :data:`REFUSE`, :data:`SKIP` or :data:`NOT_APPLICABLE`.
        args: the request, as the docs tables say it (``FIELDS``: the spec's fields, :meth:`args_text`).
        result: the answer, as the docs tables say it.
        blocking: it reads files or waits: it runs on a worker thread, within the request deadline.
        streaming: it sends events before its answer, on a thread of its own, with no deadline.
        user_request: the request is a user's own (a read): a bad one is
            ``USAGE_ERROR``; otherwise only j-cli's client builds it, and a
            bad one is ``PROTOCOL_ERROR``.
        spawn: with no sidecar answering, one is started in the background for the next call.
        here_when: a result holding this key (true) asks the client to do the work in-process after all.
        refuse: the error code of a :data:`START` op no sidecar can take.
        needed_by: what the user asked for that needs the sidecar (a :data:`START` op's refusal names it).
    """

    __slots__ = (
        "name",
        "spec_name",
        "core",
        "without_sidecar",
        "args",
        "result",
        "blocking",
        "streaming",
        "user_request",
        "spawn",
        "here_when",
        "refuse",
        "needed_by",
    )

    name: str
    spec_name: str
    core: str | None
    without_sidecar: str
    args: str
    result: str
    blocking: bool
    streaming: bool
    user_request: bool
    spawn: bool
    here_when: str | None
    refuse: str | None
    needed_by: str | None

    def __init__(
        self,
        name: str,
        spec_name: str,
        core: str | None,
        without_sidecar: str,
        args: str,
        result: str,
        *,
        blocking: bool = False,
        streaming: bool = False,
        user_request: bool = False,
        spawn: bool = False,
        here_when: str | None = None,
        refuse: str | None = None,
        needed_by: str | None = None,
    ) -> None:
        # A plain class, not a dataclass: a read loads this module, and dataclasses costs milliseconds to import.
        for field, value in locals().items():
            if field != "self":
                object.__setattr__(self, field, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"op {self.name!r} is a declaration: its {name} does not change")

    def __repr__(self) -> str:
        return f"Op({self.name!r})"

    @property
    def spec(self) -> tuple[Field, ...]:
        """The request's fields: :attr:`spec_name` in :mod:`jcli_sidecar.read.request_spec` (imported on first use, off a client's read path)."""
        from ..read import spec_named

        return spec_named(self.spec_name)

    def args_text(self) -> str:
        """:attr:`args` with ``FIELDS`` spelled out as the spec's fields (``?``: optional), as the docs tables show it."""
        names = ", ".join(f"{f.name}{'' if f.required else '?'}" for f in self.spec)
        return self.args.replace("FIELDS", f"`{{{names}}}`")

    def check(self, args: Any) -> dict[str, Any]:
        """``args`` checked against :attr:`spec`, None values dropped.

        Raises:
            UsageError: a bad user request (:attr:`user_request`).
            ProtocolError: a bad request of any other op.
        """
        from ..read import check_request

        if self.user_request:
            return check_request(args, self.spec, error=UsageError)
        try:
            return check_request(args, self.spec, error=ProtocolError)
        except ProtocolError as exc:
            raise ProtocolError(f"{self.name}: {exc.message}") from None

    def core_function(self) -> Any:
        """The core function :attr:`core` names (imported now).

        Raises:
            ValueError: the op has none.
        """
        if self.core is None:
            raise ValueError(f"{self.name} is the sidecar's own: it has no core function")
        module, _, name = self.core.partition(":")
        __import__(module)  # not importlib, whose package costs an in-process read a millisecond
        found: Any = sys.modules[module]
        for part in name.split("."):
            found = getattr(found, part)
        return found


_READ_ARGS = "the read request, the JSON object `notebook output --request -` reads on stdin (FIELDS)"

PING = Op("ping", "NO_ARGS", None, NOT_APPLICABLE, "`{}`", "`{pong: true}`")
STATS = Op(
    "stats",
    "NO_ARGS",
    "jcli_sidecar.sidecar.server:Sidecar.stats",
    NOT_APPLICABLE,
    "`{}`",
    "what `j-cli -j sidecar status` shows: pid, version, workspace, uptime, `requests_served` (every request after hello, "
    "this one included) and in flight, connections, cache counters (`adopted_loads`: loads that took a handed-over index), "
    "`memory: {rss_bytes, trims}`, held kernels, running jobs",
)
NOTEBOOK_LIST = Op(
    "notebook.list",
    "READ_SPEC",
    "jcli_sidecar.read:handle_list",
    IN_PROCESS,
    "the read request, without `output_index`",
    "the catalog `notebook outputs` prints with `-j`",
    blocking=True,
    user_request=True,
    spawn=True,
)
NOTEBOOK_READ = Op(
    "notebook.read",
    "READ_SPEC",
    "jcli_sidecar.read:handle_read",
    IN_PROCESS,
    _READ_ARGS,
    "the envelope `notebook output` prints with `-j` (a catalog when `output_index` is absent), exactly as the in-process "
    "reader gives it, with `bin` for image bytes",
    blocking=True,
    user_request=True,
    spawn=True,
)
NOTEBOOK_GREP = Op(
    "notebook.grep",
    "GREP_SPEC",
    "jcli_sidecar.read:handle_grep",
    IN_PROCESS,
    "FIELDS",
    "what `notebook grep` prints with `-j`, without `next.command`, from the cached indexes (paths relative to the "
    "workspace); `{grep_budget: true}` when the search would outlast half the request deadline, and the client searches "
    "in-process (see [reading-outputs.md](reading-outputs.md#searching-notebooks-notebook-grep-and-notebook-text))",
    blocking=True,
    user_request=True,
    spawn=True,
    here_when="grep_budget",
)
NOTEBOOK_LOOK = Op(
    "notebook.look",
    "LOOK_SPEC",
    "jcli_sidecar.read:handle_look",
    IN_PROCESS,
    "FIELDS",
    "what `notebook summary` or `show` prints with `-j`, read from the shared document of a collaboration room a job "
    "of this sidecar holds for the notebook (`live: true`); `{here: true}` when it holds none, and the client reads the "
    "file in-process (see [notebook-runs.md](notebook-runs.md#live-runs-the-notebook-a-person-has-open))",
    blocking=True,
    user_request=True,
    here_when="here",
)
NOTEBOOK_ADOPT = Op(
    "notebook.adopt",
    "ADOPT_SPEC",
    "jcli_sidecar.ipynb:adopt",
    SKIP,
    "`{file_path, index}`: an absolute path, and the offset index a j-cli write left of the notebook it wrote (an "
    "`exec -f` write-back, a pair sync, `convert`; each command offers it as it exits), `[key, cells]` (`key` the file's "
    "`[st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns]`, each cell `[start, end]` or `[start, end, outputs_start, "
    "outputs_end, [output starts and ends...]]`)",
    "`{adopted}`: true only when the index is well formed and the file is that very version now (same `fstat` key), so "
    "the first read after the write builds none",
    blocking=True,
)
RUN_PUBLISH = Op(
    "run.publish",
    "PUBLISH_SPEC",
    "jcli_sidecar.runs:publish_run",
    IN_PROCESS,
    "FIELDS",
    "rename a run the client staged into `.j-cli/outputs` under the outputs lock, then apply the client's retention "
    "policy (`max_age_days`, `max_runs`, `staging_grace_seconds`); `{manifest, warnings, cleaned}`. A permission "
    "problem is `OUTPUT_SAVE_FAILED` with `permission: true`, and the client publishes in-process",
    blocking=True,
)
KERNEL_EXEC = Op(
    "kernel.exec",
    "EXEC_SPEC",
    "jcli_sidecar.kernel:run_inline",
    IN_PROCESS,
    "FIELDS, `server` being `{url, token, proxy_env?}`",
    "events (`sending`, then `output`s), then `{session, status, execution_count, error, notes, dropped, failure}` "
    "(see [sidecar.md](sidecar.md#exec-through-the-sidecar-kernelexec-kernelstop))",
    streaming=True,
    spawn=True,
)
KERNEL_STOP = Op(
    "kernel.stop",
    "STOP_SPEC",
    "jcli_sidecar.kernel:StopSwitch.handle",
    NOT_APPLICABLE,
    "FIELDS (SIGINT or SIGTERM, as a number), on the run's own connection",
    "`{stopped}` (false: no such run)",
)
JOB_START = Op(
    "job.start",
    "JOB_SPEC",
    "jcli_sidecar.sidecar.held_jobs:HeldJobs.start",
    START,
    "FIELDS: inline, `code`; for a notebook, `file`, `cells` and the run's options, as a foreground "
    "run checked them (see [jobs.md](jobs.md))",
    "`{job_id, status, session, kind, file, cells, queued_behind}` at once; the run goes on in the sidecar",
    blocking=True,
    refuse="BACKGROUND_UNAVAILABLE",
    needed_by="--background",
)
JOB_CANCEL = Op(
    "job.cancel",
    "CANCEL_SPEC",
    "jcli_sidecar.sidecar.held_jobs:HeldJobs.cancel",
    REFUSE,
    "FIELDS",
    "`{job_id, cancelling}` (false: this sidecar holds no such job)",
)
SHUTDOWN = Op(
    "shutdown",
    "NO_ARGS",
    "jcli_sidecar.sidecar.server:Sidecar.request_stop",
    NOT_APPLICABLE,
    "`{}`",
    "`{stopping: true}`; then the process exits",
)

#: Every op by name, in the order the docs list them.
OPS: dict[str, Op] = {
    op.name: op
    for op in (
        PING,
        STATS,
        NOTEBOOK_READ,
        NOTEBOOK_LIST,
        NOTEBOOK_GREP,
        NOTEBOOK_LOOK,
        NOTEBOOK_ADOPT,
        RUN_PUBLISH,
        KERNEL_EXEC,
        KERNEL_STOP,
        JOB_START,
        JOB_CANCEL,
        SHUTDOWN,
    )
}
