"""Every request, defined once: its fields, their JSON types, bounds and meaning.

The read requests (:data:`READ_SPEC`, :data:`RUN_SPEC`) come from users and
their tools: ``check_read_request`` validates with them, the MCP tools'
input schemas are built from them (:func:`tool_schema`), and the tests fail
when the CLI's option table, the DSH plugin's ``PARAMETERS`` or the OpenCode
plugin's zod arguments drift from them. The other sidecar requests
(:data:`GREP_SPEC`, :data:`EXEC_SPEC`, :data:`JOB_SPEC`, ...) are what the
client sends; the op table (``jcli_sidecar.sidecar.op_table``) names each
op's spec and the server checks every request against it. Imports nothing heavy.
"""

from __future__ import annotations

from ..base import JcliError, UsageError, check_file_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ADOPT_SPEC",
    "AS_MIME_TYPES",
    "CANCEL_SPEC",
    "EXEC_SPEC",
    "Field",
    "GREP_SPEC",
    "JOB_SPEC",
    "LOOK_SPEC",
    "NO_ARGS",
    "PUBLISH_SPEC",
    "READ_SPEC",
    "RUN_SPEC",
    "STOP_SPEC",
    "VIEW_FIELDS",
    "check_request",
    "grep_request",
    "spec_named",
    "tool_schema",
]

#: What an image may be converted (or an SVG rendered) to.
AS_MIME_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/webp")


class Field:
    """One request field.

    Args:
        name: the field's name, the same in every client.
        type: ``"string"``, ``"integer"``, ``"number"``, ``"boolean"``, ``"object"``,
            ``"array"`` (JSON types) or ``"any"`` (the op's core judges it).
        description: one line for a model or a person.
        required: a request without it is a usage error.
        minimum: the smallest integer a schema admits (the reader checks the real bounds).
        enum: the only strings a schema admits.
        model: offered to models by the tools (False: set by the adapter itself).
        path: the string names a file (it must be one a file could have).
        items: an array's element type.
        fields: an object's own spec (its fields are checked as a request's).
    """

    __slots__ = ("name", "type", "description", "required", "minimum", "enum", "model", "path", "items", "fields")

    def __init__(
        self, name, type, description, *, required=False, minimum=None, enum=None, model=True, path=False, items=None, fields=None
    ):
        self.path = path
        self.items = items
        self.fields = fields
        self.name = name
        self.type = type
        self.description = description
        self.required = required
        self.minimum = minimum
        self.enum = enum
        self.model = model

    def schema(self, description: str | None = None) -> dict[str, Any]:
        """This field as a JSON Schema property."""
        out: dict[str, Any] = {"type": self.type}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.enum is not None:
            out["enum"] = list(self.enum)
        out["description"] = description or self.description
        return out


_MIME = Field("mime_type", "string", "Exactly this representation (default: image, HTML, Markdown, text, JSON, SVG).")
_WINDOW = (
    Field("offset", "integer", "Text window start, in characters (default 0).", minimum=0),
    Field("limit", "integer", "Text window length, in characters.", minimum=1),
)
_VIEW = (
    Field(
        "as_mime_type",
        "string",
        "Convert the selected image to this type, or render an SVG or a chart (Vega, Vega-Lite, Plotly) as an image.",
        enum=AS_MIME_TYPES,
    ),
    Field("max_edge", "integer", "Downscale an image whose long edge is over this many pixels.", minimum=1),
    Field("max_pixels", "integer", "Downscale an image of more pixels than this.", minimum=1),
    Field("max_bytes", "integer", "Shrink an image larger than this many bytes.", minimum=1),
)
#: The request fields that ask for a converted view of the selected image.
VIEW_FIELDS: tuple[str, ...] = ("host", *(f.name for f in _VIEW))
_ADAPTER = (
    Field("max_response_bytes", "integer", "Refuse responses larger than this many bytes.", minimum=1, model=False),
    Field("host", "string", "Fit images to this host's types and limits.", model=False),
    Field(
        "text_only",
        "boolean",
        "The model takes no image input: tell an image as text (what, size, where, its text forms) instead of sending it.",
        model=False,
    ),
)

#: Asked by the plugins, which show the envelope they get as JSON (``jcli_sidecar.read.agent_text``).
_AGENT_TEXT = Field(
    "agent_text",
    "boolean",
    "Add agent_text: the caption (and cut window) every client shows beside the data.",
    model=False,
)

#: ``read_notebook_output`` / ``j-cli notebook output``.
READ_SPEC: tuple[Field, ...] = (
    Field("file_path", "string", "An .ipynb, or a py:percent .py paired with one.", required=True, path=True),
    Field("cell_index", "integer", "0-based cell index in file_path.", required=True, minimum=0),
    Field("output_index", "integer", "0-based index in the cell's outputs; omit to list them.", minimum=0),
    _MIME,
    *_WINDOW,
    *_ADAPTER,
    _AGENT_TEXT,
    *_VIEW,
)

#: ``read_run_output`` / ``j-cli output show``.
RUN_SPEC: tuple[Field, ...] = (
    Field("run", "string", "A run id (from j-cli exec) or the path of its manifest.json.", required=True, path=True),
    Field("output_index", "integer", "0-based output index; omit to list the run's outputs.", minimum=0),
    _MIME,
    *_WINDOW,
    *_ADAPTER,
    *_VIEW,
)


#: ``notebook.grep`` / ``j-cli notebook grep`` (bounds are checked by the search).
GREP_SPEC: tuple[Field, ...] = (
    Field("pattern", "string", "A regular expression (a literal string with fixed).", required=True),
    Field("paths", "array", "Notebooks, .py pairs or directories to search (default: the workspace).", items="string"),
    Field("fixed", "boolean", "The pattern is a literal string."),
    Field("ignore_case", "boolean", "Match without regard to case."),
    Field("sources", "boolean", "Search cell sources (default true)."),
    Field("outputs", "boolean", "Search text outputs (default true)."),
    Field("max_hits", "integer", "Hits per page (1 to 1000, default 50).", minimum=1),
    Field("skip", "integer", "Hits to skip: the next page.", minimum=0),
)


def grep_request(
    pattern: Any,
    paths: list[Any] | None = None,
    *,
    fixed: Any = False,
    ignore_case: Any = False,
    sources_only: Any = False,
    outputs_only: Any = False,
    max_hits: Any = None,
    skip: Any = None,
) -> dict[str, Any]:
    """The :data:`GREP_SPEC` request for a search as ``j-cli notebook grep`` and the MCP ``notebook_grep`` tool put it.

    Values are passed as given: the search checks them against the spec (and refuses
    ``sources_only`` with ``outputs_only``).

    Example:
        >>> grep_request("x", ["a.ipynb"], sources_only=True, skip=0)
        {'pattern': 'x', 'fixed': False, 'ignore_case': False, 'paths': ['a.ipynb'], 'outputs': False}
    """
    request: dict[str, Any] = {"pattern": pattern, "fixed": fixed, "ignore_case": ignore_case}
    if paths:
        request["paths"] = list(paths)
    if sources_only is True:
        request["outputs"] = False
    if outputs_only is True:
        request["sources"] = False
    if max_hits is not None:
        request["max_hits"] = max_hits
    if skip:
        request["skip"] = skip
    return request


#: The Jupyter Server a kernel request goes to, and the client's proxy variables.
_SERVER = Field(
    "server",
    "object",
    "The Jupyter Server, as the client resolved it, and the client's proxy variables.",
    required=True,
    fields=(
        Field("url", "string", "The server's base URL.", required=True),
        Field("token", "string", "Its token.", required=True),
        Field("proxy_env", "object", "The client's proxy variables (the route is decided from them)."),
    ),
)
_SESSION = Field("session", "string", "The session's name, id or kernel id.", required=True)
_TIMEOUT = Field("timeout", "number", "Seconds per cell before the kernel is interrupted; nil: no limit.")
_DISPLAY_MODE = Field("display_mode", "string", "IPython's ast_node_interactivity for this run; nil: the kernel's own.")
_POLICY = Field("policy", "object", "The client's retention policy {max_age_days, max_runs, staging_grace_seconds}.")

#: ``kernel.exec``: inline code run by the sidecar, outputs streamed back.
EXEC_SPEC: tuple[Field, ...] = (
    Field("run_id", "string", "The client's random name for the run (kernel.stop names it).", required=True),
    _SERVER,
    _SESSION,
    Field("code", "string", "The code.", required=True),
    _TIMEOUT,
    _DISPLAY_MODE,
)

#: ``job.start``: a background run (``exec --background``), checked by the client as a foreground one would be.
JOB_SPEC: tuple[Field, ...] = (
    Field("cwd", "string", "The workspace (the sidecar's own).", required=True),
    Field("kind", "string", "inline or notebook.", required=True, enum=("inline", "notebook")),
    _SERVER,
    _SESSION,
    _TIMEOUT,
    _DISPLAY_MODE,
    _POLICY,
    Field("queue", "boolean", "Run after the kernel's current job (otherwise KERNEL_BUSY)."),
    Field("output_max_bytes", "integer", "Bytes of the job's printed text kept (JCLI_JOB_OUTPUT_MAX_BYTES).", minimum=4096),
    Field("code", "string", "Inline: the code."),
    Field("file", "string", "Notebook: its absolute path."),
    Field("cells", "integer", "Notebook: how many code cells run.", minimum=0),
    Field("cell_spec", "string", "Notebook: --cell."),
    Field("py_wins", "boolean", "Notebook: --py-wins."),
    Field("any_kernel", "boolean", "Notebook: --any-kernel."),
    Field("kernel_name", "string", "Notebook: the kernel it asks for."),
    Field("kernel_language", "string", "Notebook: its kernel's language."),
    Field("checkpoint_seconds", "number", "Notebook: how often a running cell's outputs are saved."),
    Field("writeback_pace", "number", "Notebook: the least time between write-backs."),
    Field("allow_errors", "boolean", "Notebook: --allow-errors."),
    Field("run_timeout", "number", "Notebook: --run-timeout."),
    Field("timeout_given", "boolean", "Notebook: --timeout was given."),
    Field("parameters", "string", "Notebook: the parameters (-p, -y, --parameters-file) as resolved, as JSON text."),
    Field("parameters_source", "string", "Notebook: the injected-parameters cell's source for them."),
    Field("stale", "boolean", "Notebook: --stale."),
)

#: ``kernel.stop``: a client's signal for its run.
STOP_SPEC: tuple[Field, ...] = (
    Field("run_id", "string", "The run's name from kernel.exec.", required=True),
    Field("signal", "integer", "SIGINT or SIGTERM, as a number.", required=True),
)
#: ``job.cancel``.
CANCEL_SPEC: tuple[Field, ...] = (Field("job_id", "string", "The job's full id.", required=True),)
#: ``run.publish``: a run the client staged.
PUBLISH_SPEC: tuple[Field, ...] = (
    Field("cwd", "string", "The workspace (the sidecar's own).", required=True),
    Field("run_id", "string", "The staged run's id.", required=True),
    _POLICY,
)
#: ``notebook.adopt``: the offset index a j-cli write left (a malformed one is answered ``{adopted: false}``).
ADOPT_SPEC: tuple[Field, ...] = (
    Field("file_path", "string", "The notebook's absolute path.", required=True),
    Field("index", "any", "The offset index, [key, cells]."),
)
#: ``notebook.look``: ``notebook summary`` or ``show`` of a notebook a held collaboration room has (``{here: true}`` otherwise).
LOOK_SPEC: tuple[Field, ...] = (
    Field("file_path", "string", "The .ipynb or py:percent .py, an absolute path.", required=True, path=True),
    Field("what", "string", "Which view: the summary, or the cells' whole sources.", required=True, enum=("summary", "show")),
    Field("cells", "string", "Which cells: N, A:B (B excluded), A: or :B (show needs it)."),
)
#: An op that takes no arguments.
NO_ARGS: tuple[Field, ...] = ()


def spec_named(name: str) -> tuple[Field, ...]:
    """The spec defined here as ``name`` (``"READ_SPEC"``): how an op declaration names its spec without importing this module.

    Raises:
        AttributeError: no spec has that name.
    """
    spec = globals().get(name)
    if not name.isupper() or not isinstance(spec, tuple) or not all(isinstance(field, Field) for field in spec):
        raise AttributeError(f"{__name__} has no spec {name!r}")
    return spec


def tool_schema(spec: tuple[Field, ...] = READ_SPEC, **descriptions: str) -> dict[str, Any]:
    """The JSON Schema a tool offers models: the spec's model-facing fields.

    ``descriptions`` replaces a field's description (a client's own path rule).

    Example:
        >>> schema = tool_schema()
        >>> schema["required"], schema["properties"]["cell_index"]["minimum"]
        (['file_path', 'cell_index'], 0)
    """
    fields = [f for f in spec if f.model]
    return {
        "type": "object",
        "properties": {f.name: f.schema(descriptions.get(f.name)) for f in fields},
        "required": [f.name for f in fields if f.required],
        "additionalProperties": False,
    }


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    return kind == "any"


def check_request(request: Any, spec: tuple[Field, ...], *, error: type[JcliError] = UsageError) -> dict[str, Any]:
    """Validate a request map against ``spec``; None values count as absent.

    ``error`` is what a bad request raises: a user's request is a
    ``USAGE_ERROR``; one only j-cli's client builds is a ``PROTOCOL_ERROR``.

    Raises:
        UsageError: not a map, an unknown field, a missing field, a value
            of the wrong JSON type (an array's items too; an object's
            fields by its own spec), or a file name no file can have.
    """
    if not isinstance(request, dict):
        raise error("the request must be a JSON object")
    names = [f.name for f in spec]
    unknown = sorted(set(request) - set(names), key=str)
    if unknown:
        raise error(f"unknown request field(s): {', '.join(map(str, unknown))} (known: {', '.join(names)})")
    clean: dict[str, Any] = {}
    for field in spec:
        value = request.get(field.name)
        if value is None:
            if field.required:
                raise error(f"the request needs {field.name}")
            continue
        if not _type_ok(field.type, value):
            raise error(f"{field.name} must be a JSON {field.type}, got {type(value).__name__}")
        if field.items is not None and not all(_type_ok(field.items, item) for item in value):
            raise error(f"{field.name} must be a list of JSON {field.items}s")
        if field.fields is not None:
            try:
                value = check_request(value, field.fields, error=error)
            except JcliError as exc:
                raise error(f"{field.name}: {exc.message}") from None
        if field.path:
            try:
                check_file_name(value, field.name)
            except UsageError as exc:
                raise error(exc.message) from None
        clean[field.name] = value
    return clean
