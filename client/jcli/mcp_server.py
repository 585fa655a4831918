"""``j-cli mcp serve``: the MCP SDK's stdio server around the tools of :mod:`jcli.mcp_tools`.

The tools are read-only. Image results carry no ``structuredContent``
(hosts drop the images when they see one). Errors are tool results with
``isError`` and the coded message.

Roots: reads are allowed only under the ``--root`` directories, else under
the client's roots (asked once, with a bounded wait), else under the launch
cwd. stdout carries only protocol frames; logs go to stderr.

Lifetime: the server exits when its client closes stdin, even with a tool
call in flight. A call runs on a worker thread, which cannot be stopped; it
is abandoned, and the process exits without waiting for it.
"""

from __future__ import annotations

import logging
import os
import sys

from jcli_sidecar.errors import JcliError
from jcli_sidecar.protocol import display_name, valid_names

from . import mcp_tools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ROOTS_TIMEOUT", "serve"]

log = logging.getLogger("jcli.mcp")

#: How long to wait for a client's answer to roots/list (some never answer).
ROOTS_TIMEOUT = 2.0


def serve(roots: list[str], host: str | None = None) -> int:
    """Serve MCP over stdio until the client goes away; images fit ``host`` when given."""
    import anyio

    if host is not None:
        from jcli_sidecar.imageview import view_spec

        view_spec(host=host)  # an unknown host fails here, before serving
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="j-cli mcp: %(levelname)s %(message)s")
    anyio.run(_serve, [os.path.realpath(r) for r in roots], host)
    _exit_if_calls_remain()
    return 0


def _valid_text(text: str) -> str:
    """``text`` with each lone surrogate (which a notebook's JSON may hold, but no
    JSON-RPC message can carry) replaced by U+FFFD.

    Example:
        >>> _valid_text("a\\ud800b") == "a\\ufffdb"
        True
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        import re

        return re.sub("[\\ud800-\\udfff]", "\ufffd", text)
    return text


def _exit_if_calls_remain() -> None:
    """The client is gone: exit now if a tool call is still running on a worker thread.

    Python would otherwise join that thread before exiting, and a call
    stuck on a hung file system or a stalled sidecar would keep the
    process alive with nobody to answer.
    """
    import threading

    main = threading.main_thread()
    if not any(t.is_alive() and not t.daemon and t is not main for t in threading.enumerate()):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(0)


async def _serve(roots: list[str], host: str | None = None) -> None:
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from jcli_sidecar import __version__

    state: dict[str, Any] = {"roots": roots or None}
    read_only = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    tools = [
        types.Tool(name=name, description=description, input_schema=schema, annotations=read_only)
        for name, description, schema in mcp_tools.tool_definitions()
    ]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def allowed_roots(ctx) -> list[str]:
        if state["roots"] is None:
            state["roots"] = await _client_roots(ctx) or [os.path.realpath(os.getcwd())]
        return state["roots"]

    async def call_tool(ctx, params) -> types.CallToolResult:
        try:
            roots = await allowed_roots(ctx)
            # abandon_on_cancel: when the client goes, the server stops without waiting for the call
            doc = await anyio.to_thread.run_sync(
                mcp_tools.call_tool, params.name, params.arguments or {}, roots, host, abandon_on_cancel=True
            )
        except JcliError as err:
            text = f"{err.code}: {display_name(err.message)}"  # a file name that is not UTF-8 comes out valid
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        except Exception as exc:  # a bug: still a coded tool error, never a protocol crash
            log.exception("tool %s failed", params.name)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"INTERNAL_ERROR: j-cli failed ({type(exc).__name__})")],
                is_error=True,
            )
        content = []
        for kind, value in mcp_tools.tool_result_parts(valid_names(doc)):
            if kind == "image":
                data, mime = value
                content.append(types.ImageContent(type="image", data=data, mime_type=mime))
            else:
                content.append(types.TextContent(type="text", text=_valid_text(value)))
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
            from urllib.parse import unquote_to_bytes, urlsplit

            raw = unquote_to_bytes(urlsplit(uri).path)  # the exact bytes, UTF-8 or not
            if raw and b"\0" not in raw:  # no file has a NUL in its name: such a root allows nothing
                out.append(os.path.realpath(os.fsdecode(raw)))
    return out
