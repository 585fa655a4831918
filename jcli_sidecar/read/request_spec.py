"""The read request, defined once: its fields, their JSON types, bounds and meaning.

Everything else is derived from :data:`READ_SPEC` or checked against it:
``check_read_request`` validates with it, the MCP tools' input schemas are
built from it (:func:`tool_schema`), and the tests fail when the CLI's option
table, the DSH plugin's ``PARAMETERS`` or the OpenCode plugin's zod
arguments drift from it. Imports nothing heavy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AS_MIME_TYPES", "Field", "READ_SPEC", "RUN_SPEC", "VIEW_FIELDS", "tool_schema"]

#: What an image may be converted (or an SVG rendered) to.
AS_MIME_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/webp")


class Field:
    """One request field.

    Args:
        name: the field's name, the same in every client.
        type: ``"string"``, ``"integer"`` or ``"boolean"`` (JSON types).
        description: one line for a model or a person.
        required: a request without it is a usage error.
        minimum: the smallest integer a schema admits (the reader checks the real bounds).
        enum: the only strings a schema admits.
        model: offered to models by the tools (False: set by the adapter itself).
        path: the string names a file (it must be one a file could have).
    """

    __slots__ = ("name", "type", "description", "required", "minimum", "enum", "model", "path")

    def __init__(self, name, type, description, *, required=False, minimum=None, enum=None, model=True, path=False):
        self.path = path
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
        "Convert the selected image to this type, or render an SVG (mime_type image/svg+xml) as an image.",
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
