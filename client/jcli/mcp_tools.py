"""The MCP tools of ``j-cli mcp serve``, without the MCP SDK (:mod:`jcli.mcp_server` speaks it): what each tool
is, how its arguments reach the core, and how a result becomes content.
Every tool only reads.

- ``read_notebook_output``: a notebook cell's catalog, or one output;
- ``read_run_output``: the same for an inline run (run id or manifest path);
- ``notebook_grep``: ``j-cli notebook grep`` (the same request, through the
  transport); its ``next`` carries the next page's arguments;
- ``job_status``: one background job's state (``job status``), or every job's;
- ``job_wait``: ``job wait`` for one job, bounded by ``JOB_WAIT_MAX_SECONDS``
  (well below the hosts' tool-call limits: Codex stops a tool call after
  60 s by default); it returns the job as it stands, marked
  ``timed_out``, when the wait ends first, and sends progress while it waits.

The job tools read the jobs of a workspace: the ``workspace`` argument
(a directory under a root), else the single root. notebook_grep and the job
tools answer one JSON document (also their ``structuredContent``).

Images become MCP image content, text and HTML come verbatim as text
content, JSON as its reversible serialisation; each is followed by the
envelope's caption as a separate text line (what it is, where it came from,
a cut window's offset to continue at: :mod:`jcli_sidecar.read.agent_text`,
the line every client shows). Base64 appears nowhere but in image content.

Paths: a relative path needs exactly one root (else ``PATH_AMBIGUOUS``); a
path (or symlink) leading outside every root is ``PATH_NOT_ALLOWED``.
"""

from __future__ import annotations

import os

from jcli_sidecar.base import PathAmbiguous, PathNotAllowed, UsageError, check_file_name, json_text
from jcli_sidecar.read import caption, kind_of_selected

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CODE_MODE_IMAGE",
    "JOB_STATUS",
    "JOB_WAIT",
    "JOB_WAIT_DEFAULT_SECONDS",
    "JOB_WAIT_MAX_SECONDS",
    "NOTEBOOK_GREP",
    "READ_NOTEBOOK_OUTPUT",
    "READ_RUN_OUTPUT",
    "STRUCTURED_TOOLS",
    "TEXT_ONLY_IMAGE",
    "TOOL_NAMES",
    "call_tool",
    "resolve_path",
    "tool_definitions",
    "tool_result_parts",
]


#: How a model that calls tools from a script (Codex's code mode) gets to see an image: the host shows
#: the model only what the script hands on, and an image block turned into text is just base64.
CODE_MODE_IMAGE = "Calling it from a script (code mode)? Pass the image block to image() to see it: image(result.content[0])."
#: What the tools say instead when the server tells images as text (``mcp serve --text-only``).
TEXT_ONLY_IMAGE = "Here images come back as text instead (what, size, where, how to read a text form): the model takes no image input."

#: The tools' names.
READ_NOTEBOOK_OUTPUT = "read_notebook_output"
READ_RUN_OUTPUT = "read_run_output"
NOTEBOOK_GREP = "notebook_grep"
JOB_STATUS = "job_status"
JOB_WAIT = "job_wait"
TOOL_NAMES = (READ_NOTEBOOK_OUTPUT, READ_RUN_OUTPUT, NOTEBOOK_GREP, JOB_STATUS, JOB_WAIT)
#: The tools whose result is one JSON document (no image), also given as ``structuredContent``.
STRUCTURED_TOOLS = frozenset({NOTEBOOK_GREP, JOB_STATUS, JOB_WAIT})

#: ``job_wait``'s default and longest wait, in seconds: below Codex's 60 s default tool timeout, and Claude Code's.
JOB_WAIT_DEFAULT_SECONDS = 30.0
JOB_WAIT_MAX_SECONDS = 50.0

#: ``notebook_grep``'s arguments: the options of ``j-cli notebook grep``, spelled as its long flags.
_GREP_ARGUMENTS = ("pattern", "paths", "fixed_strings", "ignore_case", "sources_only", "outputs_only", "max_hits", "skip")
_WORKSPACE = {"type": "string", "description": "The workspace directory whose jobs to read (default: the single root)."}


def tool_definitions(text_only: bool = False) -> list[tuple[str, str, dict[str, Any]]]:
    """``(name, description, input schema)`` of each tool, from the one request spec.

    Each description ends with how the model sees an image: from a script
    (code mode) by passing it to ``image()``; with ``text_only``, that images
    come back as text.
    """
    from jcli_sidecar.read import READ_SPEC, RUN_SPEC, tool_schema

    images = TEXT_ONLY_IMAGE if text_only else CODE_MODE_IMAGE
    path_rule = "An .ipynb, or a py:percent .py paired with one (absolute, or relative to the single root)."
    return [
        (
            READ_NOTEBOOK_OUTPUT,
            "Read a saved notebook output in one call: without output_index, the cell's catalog "
            "(outputs and MIME types); with it, that output - images as images, text and HTML verbatim. " + images,
            tool_schema(READ_SPEC, file_path=path_rule),
        ),
        (
            READ_RUN_OUTPUT,
            "Read an output kept from an inline j-cli exec run (by run id or manifest path); same rules. " + images,
            tool_schema(RUN_SPEC),
        ),
        (
            NOTEBOOK_GREP,
            "Find a Python regex in the cell sources and text outputs of notebooks (and py:percent files), as "
            "j-cli notebook grep: each hit names its file, cell and output as read_notebook_output takes them. "
            "Images are never decoded. When there are more hits, next.arguments are the next page's arguments.",
            _grep_schema(),
        ),
        (
            JOB_STATUS,
            "A background job's state, progress and, once it ended, its result (exec --background); "
            "without job_id, every job of the workspace.",
            _object({"job_id": {"type": "string", "description": "The job's id, or a unique prefix of it."}, "workspace": _WORKSPACE}),
        ),
        (
            JOB_WAIT,
            f"Wait until a background job ends, for at most timeout seconds (default {JOB_WAIT_DEFAULT_SECONDS:g}, "
            f"at most {JOB_WAIT_MAX_SECONDS:g}); sends progress while it waits. When the job still runs, the answer "
            "is the job as it stands with timed_out true: call again to wait on. Waiting never stops the job.",
            _object(
                {
                    "job_id": {"type": "string", "description": "The job's id, or a unique prefix of it."},
                    "timeout": {"type": "number", "minimum": 0, "maximum": JOB_WAIT_MAX_SECONDS, "description": "Seconds to wait at most."},
                    "workspace": _WORKSPACE,
                },
                ["job_id"],
            ),
        ),
    ]


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or [], "additionalProperties": False}


def _grep_schema() -> dict[str, Any]:
    from jcli_sidecar.read import DEFAULT_MAX_HITS, MAX_HITS_LIMIT

    flag = {"type": "boolean"}
    return _object(
        {
            "pattern": {"type": "string", "description": "A Python regular expression (or literal text with fixed_strings)."},
            "paths": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Notebooks, py:percent files or directories (absolute, or relative to the single root; default: every root).",
            },
            "fixed_strings": {**flag, "description": "pattern is literal text."},
            "ignore_case": {**flag, "description": "Match letters in either case."},
            "sources_only": {**flag, "description": "Search cell sources only."},
            "outputs_only": {**flag, "description": "Search saved outputs only."},
            "max_hits": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_HITS_LIMIT,
                "description": f"Hits per page (default {DEFAULT_MAX_HITS}).",
            },
            "skip": {"type": "integer", "minimum": 0, "description": "Leave out the first skip hits (the next page)."},
        },
        ["pattern"],
    )


def resolve_path(path: Any, roots: list[str], field: str = "file_path") -> str:
    """The real path of ``path``, if it lies under one of ``roots``.

    Raises:
        UsageError: not a string, or a name no file can have (a NUL byte,
            a lone surrogate).
        PathAmbiguous: relative, with several roots.
        PathNotAllowed: outside every root (symlinks followed).

    Example:
        >>> resolve_path("a.ipynb", ["/srv/project"])
        '/srv/project/a.ipynb'
    """
    check_file_name(path, field)
    if not os.path.isabs(path):
        if len(roots) != 1:
            raise PathAmbiguous(f"{path!r} is relative and there are {len(roots)} roots; give an absolute path", roots=roots)
        path = os.path.join(roots[0], path)
    real = os.path.realpath(path)
    for root in roots:
        if real == root or os.path.commonpath([root, real]) == root:
            return real
    raise PathNotAllowed(f"{path} is outside the allowed roots", roots=roots)


def tool_result_parts(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """Translate a read envelope into MCP content parts: ``("text", str)`` or ``("image", (b64, mime))``.

    Example:
        >>> tool_result_parts({"source": {"kind": "run", "run_id": "r", "output_index": 0, "label": "run r output 0"},
        ...     "stream": {"name": "stdout", "data": "hi", "truncated": False}})
        [('text', 'hi'), ('text', '[stdout stream from run r output 0]')]
    """
    if "outputs" in doc:
        return [("text", json_text(doc))]
    note = ("text", caption(doc))
    if "stream" in doc:
        return [("text", doc["stream"]["data"]), note]
    if "error" in doc:
        block = doc["error"]
        return [("text", block["data"] if "data" in block else json_text(block)), note]
    selected = doc["selected"]
    if "withheld" in selected:  # an image told as text (text_only): the caption says it all
        return [note]
    text = kind_of_selected(selected).as_text(selected["data"])
    if text is None:  # an image
        data = selected["data"]
        if isinstance(data, (bytes, bytearray)):
            import base64

            data = base64.b64encode(data).decode("ascii")
        return [("image", (data, selected["mime_type"])), note]
    return [("text", text), note]


def call_tool(
    tool: str, args: dict[str, Any], roots: list[str], host: str | None = None, text_only: bool = False, progress: Any = None
) -> dict[str, Any]:
    """Run one tool call against the core (through the sidecar when one answers).

    ``host`` (from ``mcp serve --host``) fits images to that host's limits;
    ``text_only`` (``mcp serve --text-only``) tells images as text;
    ``progress`` (``report(progress, total, message)`` and ``sleep(seconds) -> stop``) serves ``job_wait``.

    Raises:
        UsageError, PathAmbiguous, PathNotAllowed, and every read error.
    """
    if tool == NOTEBOOK_GREP:
        return _grep(args, roots)
    if tool in (JOB_STATUS, JOB_WAIT):
        return _job_tool(tool, args, roots, progress)
    args = {k: v for k, v in (args or {}).items() if k not in ("host", "text_only")}
    if host is not None:
        args["host"] = host
    if text_only:
        args["text_only"] = True
    if tool == READ_NOTEBOOK_OUTPUT:
        from .transport import read

        args["file_path"] = resolve_path(args.get("file_path"), roots)
        if args["file_path"].endswith(".py"):
            from jcli_sidecar.pair import paired_notebook_path

            resolve_path(paired_notebook_path(args["file_path"]), roots)  # its pair may not escape either
        return read({k: v for k, v in args.items() if v is not None})
    if tool == READ_RUN_OUTPUT:
        from jcli_sidecar.read import RUN_SPEC, check_request, query_of
        from jcli_sidecar.runs import read_run

        ref = args.get("run")
        if not isinstance(ref, str) or not ref:
            raise UsageError("run must be a run id or a manifest path")
        checked = check_request(args, RUN_SPEC)
        if os.sep in ref or ref.endswith(".json"):
            ref = resolve_path(ref, roots, "run")
            cwd = os.path.dirname(ref)  # a path names its run itself; cwd only resolves run ids
        elif len(roots) == 1:
            cwd = roots[0]
        else:
            raise PathAmbiguous(f"run id {ref!r} with {len(roots)} roots; give the manifest path", roots=roots)
        return read_run(cwd, ref, checked.get("output_index"), query_of(checked), roots=roots)
    raise UsageError(f"unknown tool {tool!r}")


def _grep(args: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    """``notebook_grep``: the CLI's grep request, every path under the roots; ``next`` gains the next call's arguments.

    Raises:
        UsageError: an unknown argument or a value of the wrong type. PathAmbiguous, PathNotAllowed, and as grep.
    """
    from jcli_sidecar.read import grep_request
    from jcli_sidecar.sidecar import NOTEBOOK_GREP as GREP_OP

    from .transport import read

    _check_known(args, _GREP_ARGUMENTS)
    paths = args.get("paths")
    if paths is not None and not isinstance(paths, list):
        raise UsageError("paths must be a list of strings")
    flags = {name: args.get(name) for name in ("fixed_strings", "ignore_case", "sources_only", "outputs_only")}
    for name, value in flags.items():
        if value is not None and not isinstance(value, bool):
            raise UsageError(f"{name} must be a boolean")
    request = grep_request(
        args.get("pattern"),
        [resolve_path(path, roots, "paths") for path in paths] if paths else list(roots),
        fixed=bool(flags["fixed_strings"]),
        ignore_case=bool(flags["ignore_case"]),
        sources_only=bool(flags["sources_only"]),
        outputs_only=bool(flags["outputs_only"]),
        max_hits=args.get("max_hits"),
        skip=args.get("skip"),
    )
    doc = read(request, GREP_OP)
    if doc.get("next") is not None:
        doc["next"]["arguments"] = {**args, "skip": doc["next"]["skip"]}
    return doc


def _check_known(args: dict[str, Any], known: tuple[str, ...]) -> None:
    """Raises UsageError naming the arguments not in ``known``."""
    unknown = sorted(set(args) - set(known), key=str)
    if unknown:
        raise UsageError(f"unknown argument(s): {', '.join(map(str, unknown))} (known: {', '.join(known)})")


def _workspace(args: dict[str, Any], roots: list[str]) -> str:
    if args.get("workspace") is not None:
        return resolve_path(args["workspace"], roots, "workspace")
    if len(roots) != 1:
        raise PathAmbiguous(f"there are {len(roots)} roots; give workspace", roots=roots)
    return roots[0]


def _job_tool(tool: str, args: dict[str, Any], roots: list[str], progress: Any = None) -> dict[str, Any]:
    """``job_status`` and ``job_wait``: the job records of a workspace under the roots, read as ``job status|list|wait`` read them.

    Raises:
        UsageError: a bad argument. JobNotFound, JobAmbiguous, PathAmbiguous, PathNotAllowed, and as the job readers.
    """
    from jcli_sidecar.runs import list_jobs, note_read, read_job, resolve_job, wait_jobs

    _check_known(args, ("job_id", "workspace", "timeout") if tool == JOB_WAIT else ("job_id", "workspace"))
    name = args.get("job_id")
    if name is not None and not isinstance(name, str):
        raise UsageError("job_id must be a string")
    cwd = _workspace(args, roots)
    if tool == JOB_STATUS:
        if name is None:
            return {"schema_version": 1, "jobs": list_jobs(cwd)}
        view = read_job(cwd, resolve_job(cwd, name))
        note_read(cwd, [view])  # its end was given: retention may age it from now
        return {"schema_version": 1, **view}
    timeout = args.get("timeout", JOB_WAIT_DEFAULT_SECONDS)
    if not isinstance(name, str):
        raise UsageError("job_wait needs job_id, a string")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= JOB_WAIT_MAX_SECONDS:
        raise UsageError(f"timeout must be a number of seconds above 0 and at most {JOB_WAIT_MAX_SECONDS:g}, got {timeout!r}")
    job_id = resolve_job(cwd, name)
    sleep = None
    if progress is not None:
        import time

        started = time.monotonic()

        def sleep(seconds: float) -> bool:
            progress.report(round(time.monotonic() - started, 3), float(timeout), f"job {job_id} still running")
            return bool(progress.sleep(seconds))

    doc = {"schema_version": 1, **wait_jobs(cwd, [job_id], timeout=float(timeout), sleep=sleep)}
    note_read(cwd, doc["jobs"])
    if doc["timed_out"] or doc["stopped"]:
        doc["note"] = f"job {job_id} still runs (this answer is its snapshot): call job_wait again to wait on"
    return doc
