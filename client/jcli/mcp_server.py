"""``j-cli mcp serve``: a read-only stdio MCP server for saved outputs.

Two tools, both thin translations of the core's read requests:

- ``read_notebook_output``: a notebook cell's catalog, or one output;
- ``read_run_output``: the same for an inline run (run id or manifest path).

Images come back as MCP image content plus one short provenance line; text
and HTML verbatim as text content, with the MIME stated in a separate line;
JSON as its reversible serialisation. Image results carry no
``structuredContent`` (hosts drop the images when they see one), and base64
appears nowhere but in image content. Errors are tool results with
``isError`` and the coded message.

Paths: reads are allowed only under the ``--root`` directories, else under
the client's roots (asked once, with a bounded wait), else under the launch
cwd. A relative path needs exactly one root (else ``PATH_AMBIGUOUS``); a
path (or symlink) leading outside every root is ``PATH_NOT_ALLOWED``.
stdout carries only protocol frames; logs go to stderr.
"""

from __future__ import annotations

import logging
import os
import sys

from jcli_sidecar import representations
from jcli_sidecar.errors import JcliError, PathAmbiguous, PathNotAllowed, UsageError
from jcli_sidecar.protocol import json_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ROOTS_TIMEOUT", "resolve_path", "serve", "tool_result_parts"]

log = logging.getLogger("jcli.mcp")

#: How long to wait for a client's answer to roots/list (some never answer).
ROOTS_TIMEOUT = 2.0


def _schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """The two tools' input schemas, from the one request spec."""
    from jcli_sidecar.request_spec import READ_SPEC, RUN_SPEC, tool_schema

    path_rule = "An .ipynb, or a py:percent .py paired with one (absolute, or relative to the single root)."
    return tool_schema(READ_SPEC, file_path=path_rule), tool_schema(RUN_SPEC)


def resolve_path(path: Any, roots: list[str]) -> str:
    """The real path of ``path``, if it lies under one of ``roots``.

    Raises:
        UsageError: not a string.
        PathAmbiguous: relative, with several roots.
        PathNotAllowed: outside every root (symlinks followed).

    Example:
        >>> resolve_path("a.ipynb", ["/srv/project"])
        '/srv/project/a.ipynb'
    """
    if not isinstance(path, str) or not path:
        raise UsageError("file_path must be a non-empty string")
    if not os.path.isabs(path):
        if len(roots) != 1:
            raise PathAmbiguous(f"{path!r} is relative and there are {len(roots)} roots; give an absolute path", roots=roots)
        path = os.path.join(roots[0], path)
    real = os.path.realpath(path)
    for root in roots:
        if real == root or os.path.commonpath([root, real]) == root:
            return real
    raise PathNotAllowed(f"{path} is outside the allowed roots", roots=roots)


def _window(block: dict[str, Any]) -> str:
    if not block.get("truncated"):
        return ""
    start = block["offset"]
    text = f"; characters {start}-{start + block['returned_characters']} of {block['total_characters']}"
    if block.get("next_offset") is not None:
        text += f", continue with offset={block['next_offset']}"
    return text


def tool_result_parts(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """Translate a read envelope into MCP content parts: ``("text", str)`` or ``("image", (b64, mime))``.

    Example:
        >>> tool_result_parts({"source": {"kind": "run", "run_id": "r", "output_index": 0, "label": "run r output 0"},
        ...     "stream": {"name": "stdout", "data": "hi", "truncated": False}})
        [('text', 'hi'), ('text', '[stdout stream from run r output 0]')]
    """
    where = doc["source"]["label"]
    if "outputs" in doc:
        return [("text", json_text(doc))]
    if "stream" in doc:
        block = doc["stream"]
        return [("text", block["data"]), ("text", f"[{block['name']} stream from {where}{_window(block)}]")]
    if "error" in doc:
        block = doc["error"]
        text = block["data"] if "data" in block else json_text(block)
        return [("text", text), ("text", f"[error output (ename {block.get('ename')}) from {where}{_window(block)}]")]
    selected = doc["selected"]
    mime = selected["mime_type"]
    text = representations.of_selected(selected).as_text(selected["data"])
    if text is None:  # an image
        data = selected["data"]
        if isinstance(data, (bytes, bytearray)):
            import base64

            data = base64.b64encode(data).decode("ascii")
        dims = f", {selected['width']}x{selected['height']} px" if "width" in selected else ""
        note = f"; {selected['note']}" if selected.get("note") else ""
        return [("image", (data, mime)), ("text", f"[{mime}, {selected['bytes']} bytes{dims}, from {where}{note}]")]
    return [("text", text), ("text", f"[{mime} from {where}{_window(selected)}]")]


def _read(tool: str, args: dict[str, Any], roots: list[str], host: str | None = None) -> dict[str, Any]:
    """Run one tool call against the core (through the sidecar when one answers).

    ``host`` (from ``mcp serve --host``) fits images to that host's limits.
    """
    from .transport import read

    args = {k: v for k, v in (args or {}).items() if k != "host"}
    if host is not None:
        args["host"] = host
    if tool == "read_notebook_output":
        args["file_path"] = resolve_path(args.get("file_path"), roots)
        if args["file_path"].endswith(".py"):
            from jcli_sidecar.pairing import paired_notebook_path

            resolve_path(paired_notebook_path(args["file_path"]), roots)  # its pair may not escape either
        op = "notebook.read"
        return read({k: v for k, v in args.items() if v is not None}, op)
    if tool == "read_run_output":
        from jcli_sidecar.envelope import OutputQuery
        from jcli_sidecar.runs import read_run

        ref = args.pop("run", None)
        if not isinstance(ref, str) or not ref:
            raise UsageError("run must be a run id or a manifest path")
        if os.sep in ref or ref.endswith(".json"):
            ref = resolve_path(ref, roots)
            cwd = os.path.dirname(ref)  # a path names its run itself; cwd only resolves run ids
        elif len(roots) == 1:
            cwd = roots[0]
        else:
            raise PathAmbiguous(f"run id {ref!r} with {len(roots)} roots; give the manifest path", roots=roots)
        from jcli_sidecar.request_spec import RUN_SPEC
        from jcli_sidecar.requests import VIEW_FIELDS, view_of

        unknown = set(args) - {f.name for f in RUN_SPEC} - {"host"}
        if unknown:
            raise UsageError(f"unknown argument(s): {', '.join(sorted(unknown))}")
        query = OutputQuery(
            mime_type=args.get("mime_type"),
            offset=args.get("offset") or 0,
            limit=args.get("limit"),
            view=view_of({k: args[k] for k in VIEW_FIELDS if args.get(k) is not None}),
        )
        return read_run(cwd, ref, args.get("output_index"), query)
    raise UsageError(f"unknown tool {tool!r}")


def serve(roots: list[str], host: str | None = None) -> int:
    """Serve MCP over stdio until the client goes away; images fit ``host`` when given."""
    import anyio

    if host is not None:
        from jcli_sidecar.imageview import view_spec

        view_spec(host=host)  # an unknown host fails here, before serving
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="j-cli mcp: %(levelname)s %(message)s")
    anyio.run(_serve, [os.path.realpath(r) for r in roots], host)
    return 0


async def _serve(roots: list[str], host: str | None = None) -> None:
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from jcli_sidecar import __version__

    state: dict[str, Any] = {"roots": roots or None}
    read_only = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    read_schema, run_schema = _schemas()
    tools = [
        types.Tool(
            name="read_notebook_output",
            description=(
                "Read a saved notebook output in one call: without output_index, the cell's catalog "
                "(outputs and MIME types); with it, that output - images as images, text and HTML verbatim."
            ),
            input_schema=read_schema,
            annotations=read_only,
        ),
        types.Tool(
            name="read_run_output",
            description="Read an output kept from an inline j-cli exec run (by run id or manifest path); same rules.",
            input_schema=run_schema,
            annotations=read_only,
        ),
    ]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def allowed_roots(ctx) -> list[str]:
        if state["roots"] is None:
            state["roots"] = await _client_roots(ctx) or [os.path.realpath(os.getcwd())]
        return state["roots"]

    async def call_tool(ctx, params) -> types.CallToolResult:
        try:
            doc = await anyio.to_thread.run_sync(_read, params.name, params.arguments or {}, await allowed_roots(ctx), host)
        except JcliError as err:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"{err.code}: {err.message}")], is_error=True)
        except Exception as exc:  # a bug: still a coded tool error, never a protocol crash
            log.exception("tool %s failed", params.name)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"INTERNAL_ERROR: j-cli failed ({type(exc).__name__})")],
                is_error=True,
            )
        content = []
        for kind, value in tool_result_parts(doc):
            if kind == "image":
                data, mime = value
                content.append(types.ImageContent(type="image", data=data, mime_type=mime))
            else:
                content.append(types.TextContent(type="text", text=value))
        return types.CallToolResult(content=content)

    server = Server("j-cli", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _client_roots(ctx) -> list[str]:
    """The client's file roots, if it answers roots/list in time."""
    import warnings

    import anyio

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in newer protocol revisions
            with anyio.fail_after(ROOTS_TIMEOUT):
                listed = await ctx.session.list_roots()
    except Exception:  # no roots capability, no answer, or an error: use the launch cwd
        return []
    out = []
    for root in listed.roots:
        uri = str(root.uri)
        if uri.startswith("file://"):
            from urllib.parse import unquote, urlsplit

            out.append(os.path.realpath(unquote(urlsplit(uri).path)))
    return out
