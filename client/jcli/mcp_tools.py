"""The MCP tools of ``j-cli mcp serve``, without the MCP SDK: what each tool
is, how its arguments reach the core, and how an envelope becomes content.

- ``read_notebook_output``: a notebook cell's catalog, or one output;
- ``read_run_output``: the same for an inline run (run id or manifest path).

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
from jcli_sidecar.read import caption, of_selected

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CODE_MODE_IMAGE",
    "READ_NOTEBOOK_OUTPUT",
    "READ_RUN_OUTPUT",
    "TEXT_ONLY_IMAGE",
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

#: The two tools' names.
READ_NOTEBOOK_OUTPUT = "read_notebook_output"
READ_RUN_OUTPUT = "read_run_output"


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
    ]


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
    text = of_selected(selected).as_text(selected["data"])
    if text is None:  # an image
        data = selected["data"]
        if isinstance(data, (bytes, bytearray)):
            import base64

            data = base64.b64encode(data).decode("ascii")
        return [("image", (data, selected["mime_type"])), note]
    return [("text", text), note]


def call_tool(tool: str, args: dict[str, Any], roots: list[str], host: str | None = None, text_only: bool = False) -> dict[str, Any]:
    """Run one tool call against the core (through the sidecar when one answers).

    ``host`` (from ``mcp serve --host``) fits images to that host's limits;
    ``text_only`` (``mcp serve --text-only``) tells images as text.

    Raises:
        UsageError, PathAmbiguous, PathNotAllowed, and every read error.
    """
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
