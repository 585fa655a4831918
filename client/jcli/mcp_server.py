"""``j-cli mcp serve``: the MCP SDK's low-level server over its stdio transport, around :mod:`jcli.mcp_tools`.

The SDK (``mcp``, imported here only: ``mcp serve`` is its one user) speaks
the protocol: both eras (the ``initialize`` handshake, and 2026-07-28's
per-request ``_meta`` envelope with ``server/discover``), ``ping``,
``tools/list`` and ``tools/call``, cancellation, progress notifications,
``roots/list`` asked of the client, and stdout kept for frames (fd 1 leads
to stderr while it serves). j-cli keeps its own parts only where the SDK
has none:

- :mod:`jcli.mcp_stdin`: lines read in bounded chunks, and an answer for a
  line the SDK would drop unanswered (not JSON, a batch, a bad id, too long);
- :mod:`jcli.mcp_lifetime`: when stdin closes, every call received is
  answered before the SDK is told (the SDK would cancel them and answer
  "Connection closed");
- the roots rule: reads are allowed only under the ``--root`` directories,
  else under the client's roots (asked once, bounded by ``ROOTS_TIMEOUT``,
  and again after ``notifications/roots/list_changed``; the modern era has
  no server-to-client requests), else under the launch cwd;
- tool calls run on a bounded pool of worker threads (the core is
  synchronous), in two lanes: ``job_wait`` (a thread that mostly sleeps and
  sends progress) on its own, so a wait never holds up a read nor a read a
  wait; a call takes a place in its lane, first come first served, and
  keeps it until its answer is written, so the answers held at once are
  bounded too (:class:`_Lane`); a tool error is a tool result with
  ``isError`` and the coded message.
"""

from __future__ import annotations

import os
import threading

from jcli_sidecar.base import JcliError, display_name, json_text, valid_names

from . import mcp_lifetime, mcp_tools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["CALLS_AT_ONCE", "ROOTS_TIMEOUT", "WAITS_AT_ONCE", "run_mcp_serve", "serve"]

#: How long to wait for a client's answer to roots/list (some never answer).
ROOTS_TIMEOUT = 2.0
#: Tool calls (reads, searches, job_status) at work or answered and not yet written at once; more wait in line.
CALLS_AT_ONCE = 4
#: ``job_wait`` calls waiting at once, on their own lane; more wait in line.
WAITS_AT_ONCE = 4

_READ_ONLY = {"destructiveHint": False, "idempotentHint": True, "openWorldHint": False, "readOnlyHint": True}


def run_mcp_serve(roots: list[str], host: str | None, text_only: bool, json_mode: bool) -> int:
    """``j-cli mcp serve``: :func:`serve`, or its coded error printed (an unknown host, say); the exit code.

    The click command and the fast path both end here.
    """
    from jcli_sidecar.base import JcliError

    from . import emit

    try:
        return serve(roots, host, text_only)
    except JcliError as err:
        return emit.error(err, json_mode)


def serve(roots: list[str], host: str | None = None, text_only: bool = False) -> int:
    """Serve MCP over stdio until the client goes away; images fit ``host`` when given, or are told as text (``text_only``)."""
    if host is not None:
        from jcli_sidecar.read import view_spec

        view_spec(host=host)  # an unknown host fails here, before serving
    _import_sdk()
    import anyio

    session = McpSession([os.path.realpath(r) for r in roots], host, text_only)
    try:
        anyio.run(session.run)
    except BaseException as exc:  # stdout gone (nobody listens), or a bug: logged; a call may still hold a thread
        if not isinstance(exc, (OSError, KeyboardInterrupt)) and not _only_os_errors(exc):
            import traceback

            _log(f"the server stopped\n{traceback.format_exc()}")
    mcp_lifetime.exit_if_threads_remain(session)
    return 0


def _import_sdk() -> None:
    """Import the parts of the SDK the server uses (most of the start-up: thousands of pydantic models).

    Two savings, each measured in ``bench/mcp_latency.py``'s start line:

    - the cyclic GC is off meanwhile: nothing imported is garbage, so the
      collections an import would trigger only cost time (a quarter of the
      start here); the objects are then frozen out of every later collection;
    - the packages ``mcp`` and ``mcp.server`` are entered without running
      their ``__init__``: those load the SDK's client, its high-level server
      and its HTTP transports (uvicorn, starlette, httpx), a third of the
      start, none of which a stdio low-level server uses. Should a version of
      the SDK need what they define, the lean import fails, and the SDK is
      imported whole instead.
    """
    import gc
    import sys

    gc.disable()
    try:
        try:
            _import_lean()
        except ImportError:
            for name in [name for name in sys.modules if name == "mcp" or name.startswith("mcp.")]:
                del sys.modules[name]
            _import_server_parts()
    finally:
        gc.freeze()
        gc.enable()


def _import_lean() -> None:
    """:func:`_import_server_parts` with ``mcp`` and ``mcp.server`` as packages whose ``__init__`` never ran."""
    import importlib.util
    import sys

    parent = None
    for name in ("mcp", "mcp.server"):
        if name in sys.modules:
            return _import_server_parts()  # already imported whole (a test, say): nothing to save
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(f"no package {name}")
        package = importlib.util.module_from_spec(spec)  # its submodules import from its path; its __init__ is not run
        sys.modules[name] = package
        if parent is not None:
            parent.server = package
        parent = package
    _import_server_parts()


def _import_server_parts() -> None:
    import anyio  # noqa: F401
    import mcp.server.caching  # noqa: F401
    import mcp.server.lowlevel  # noqa: F401
    import mcp.server.stdio  # noqa: F401
    import mcp.shared.exceptions  # noqa: F401
    import mcp.shared.message  # noqa: F401


def _only_os_errors(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_os_errors(inner) for inner in exc.exceptions)
    return isinstance(exc, OSError)


def _log(text: str) -> None:
    import sys

    try:
        sys.stderr.write(f"j-cli mcp: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr is gone: the log line is lost, never the call
        pass


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


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"text": text, "type": "text"}], "isError": True}


def _file_roots(roots: list[Any]) -> list[str]:
    """The real paths of the ``file://`` roots; a root with a NUL allows nothing.

    Example:
        >>> _file_roots([{"uri": "file:///"}, {"uri": "https://x"}, {"uri": "file:///a%00b"}, "junk"])
        ['/']
    """
    from urllib.parse import unquote_to_bytes, urlsplit

    out = []
    for root in roots:
        uri = root.get("uri") if isinstance(root, dict) else None
        if isinstance(uri, str) and uri.startswith("file://"):
            raw = unquote_to_bytes(urlsplit(uri).path)  # the exact bytes, UTF-8 or not
            if raw and b"\0" not in raw:  # no file has a NUL in its name
                out.append(os.path.realpath(os.fsdecode(raw)))
    return out


class McpSession:
    """One client's session: the SDK's server, its handlers, the roots, and the calls in flight."""

    def __init__(self, roots: list[str], host: str | None, text_only: bool = False) -> None:
        self._host = host
        self._text_only = text_only
        self._fixed_roots = bool(roots)
        self._roots: list[str] | None = roots or None
        self._roots_changes = 0  # how many roots/list_changed the client has sent
        self._roots_asked_at = 0  # ... when the roots were last asked
        self._lock = threading.Lock()  # guards _running
        self._running = 0  # the calls whose work still runs on a worker thread (an abandoned one included)
        self.closed = threading.Event()  # stdin ended: the client answers nothing more
        self._lines: Any = None
        self._calls: _Lane | None = None  # made in run(): anyio's primitives belong to its loop
        self._waits: _Lane | None = None
        self._held: dict[Any, list[_Lane]] = {}  # request id: the lanes whose places its answers free once written

    async def run(self) -> None:
        """Serve until stdin closes and every call received is answered."""
        import anyio
        import mcp_types as types
        from mcp.server.caching import CacheHint
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
        from mcp.shared.message import SessionMessage

        from jcli_sidecar import __version__

        from .mcp_stdin import AnswerWatch, ClientLines

        self._calls, self._waits = _Lane(CALLS_AT_ONCE), _Lane(WAITS_AT_ONCE)
        self._roots_lock = anyio.Lock()  # one roots/list at a time
        self._drain_over = anyio.Event()  # the drain time passed: calls still running answer TIMEOUT
        server: Server[Any] = Server(
            "j-cli",
            version=__version__,
            cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, self._roots_changed)
        lines = self._lines = ClientLines(0, self._drain)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]

            async def refuse(request_id: Any, code: int, message: str) -> None:
                error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
                await write_stream.send(SessionMessage(error))

            lines.refuse = refuse
            lines.forget = self._free
            watched = AnswerWatch(write_stream, self._answered)
            await server.run(read_stream, watched, server.create_initialization_options())  # type: ignore[arg-type]

    # -- the tools -----------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        annotations = types.ToolAnnotations.model_validate(_READ_ONLY)
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=description, input_schema=schema, annotations=annotations)
                for name, description, schema in mcp_tools.tool_definitions(self._text_only)
            ]
        )

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        name, arguments = params.name, params.arguments or {}
        if name not in mcp_tools.TOOL_NAMES:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {_valid_text(name)}")
        roots = await self._allowed_roots(ctx)
        progress = _Progress(ctx, self.closed)
        lane = self._waits if name == mcp_tools.JOB_WAIT else self._calls
        assert lane is not None
        try:
            result = await self._in_thread(lambda: self._call_result(name, arguments, roots, progress), lane, ctx.request_id)
        finally:
            progress.stop.set()
        return types.CallToolResult.model_validate(result)

    def _answered(self, request_id: Any) -> None:
        """An answer to ``request_id`` was written: its place in its lane is free (AnswerWatch calls this)."""
        self._lines.answered(request_id)
        self._free(request_id)

    def _free(self, request_id: Any) -> None:
        """Free one place held for ``request_id`` (answered, or cancelled by the client: no answer will be written)."""
        held = self._held.get(request_id)
        if held:
            held.pop().places.release()
            if not held:
                del self._held[request_id]

    async def _in_thread(self, work: Callable[[], dict[str, Any]], lane: _Lane, request_id: Any) -> dict[str, Any]:
        """``work()`` on a worker thread of ``lane``, once a place in it is free; a TIMEOUT result once the drain time passed.

        The place is kept until the answer is written (:meth:`_answered`), or
        given back at once when the call ends without one (cancelled).
        A thread still at work after the drain time is abandoned.
        """
        import anyio
        import anyio.to_thread

        def tracked() -> dict[str, Any]:
            with self._lock:
                self._running += 1
            try:
                return work()
            finally:
                with self._lock:
                    self._running -= 1

        slot: list[dict[str, Any]] = []
        placed = False
        try:
            async with anyio.create_task_group() as tg:

                async def drain_over() -> None:
                    await self._drain_over.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(drain_over)
                await lane.places.acquire()  # in line, first come first served
                placed = True
                slot.append(await anyio.to_thread.run_sync(tracked, abandon_on_cancel=True, limiter=lane.threads))
                tg.cancel_scope.cancel()
        except BaseException:  # cancelled: no answer will be written
            if placed:
                lane.places.release()
            raise
        if placed:
            self._held.setdefault(request_id, []).append(lane)
        if slot:
            return slot[0]
        seconds = mcp_lifetime.drain_seconds()
        return _error_result(
            f"TIMEOUT: the client closed its input and this call was still running {seconds:g} s later "
            "(JCLI_MCP_DRAIN_SECONDS); it was abandoned"
        )

    def _call_result(self, name: str, arguments: dict[str, Any], roots: list[str], progress: _Progress) -> dict[str, Any]:
        try:
            doc = mcp_tools.call_tool(name, arguments, roots, self._host, self._text_only, progress=progress)
        except JcliError as err:
            return _error_result(f"{err.code}: {display_name(err.message)}")  # a file name that is not UTF-8 comes out valid
        except Exception as exc:  # a bug: still a coded tool error, never a protocol crash
            import traceback

            _log(f"tool {name} failed\n{traceback.format_exc()}")
            return _error_result(f"INTERNAL_ERROR: j-cli failed ({type(exc).__name__})")
        doc = valid_names(doc)
        if name in mcp_tools.STRUCTURED_TOOLS:  # one JSON document (no image, so no base64), also as structuredContent
            import json

            text = _valid_text(json_text(doc))
            return {"content": [{"text": text, "type": "text"}], "isError": False, "structuredContent": json.loads(text)}
        content: list[dict[str, Any]] = []
        for kind, value in mcp_tools.tool_result_parts(doc):
            if kind == "image":
                data, mime = value
                content.append({"data": data, "mimeType": mime, "type": "image"})
            else:
                content.append({"text": _valid_text(value), "type": "text"})
        return {"content": content, "isError": False}

    # -- lifetime --------------------------------------------------------------------------

    def threads_remain(self) -> bool:
        """True while a tool call's worker thread runs (an abandoned one included), or stdin's reader may still block."""
        with self._lock:
            running = self._running > 0
        return running or (self._lines is not None and not self._lines.ended)

    async def _drain(self) -> None:
        """stdin closed: answer every call received before the SDK hears of it (:mod:`jcli.mcp_lifetime`)."""
        self.closed.set()
        await mcp_lifetime.answer_calls_received(self._lines.pending, self._drain_over)

    # -- roots -----------------------------------------------------------------------------

    async def _roots_changed(self, ctx: Any, params: Any) -> None:
        self._roots_changes += 1  # asked again at the next call

    async def _allowed_roots(self, ctx: Any) -> list[str]:
        import anyio

        async with self._roots_lock:
            changes = self._roots_changes
            if self._roots is None or (not self._fixed_roots and changes != self._roots_asked_at):
                self._roots_asked_at = changes
                capabilities = ctx.session.client_capabilities
                asked = capabilities is not None and capabilities.roots is not None and ctx.session.can_send_request
                roots: list[str] = []
                if asked and not self.closed.is_set():
                    with anyio.CancelScope(shield=True):  # a cancelled call still takes the answer, for the next
                        roots = await self._client_roots(ctx)
                self._roots = roots or [os.path.realpath(os.getcwd())]
            return self._roots

    async def _client_roots(self, ctx: Any) -> list[str]:
        """The client's file roots, if it answers roots/list in time (else none: the launch cwd)."""
        import anyio

        with anyio.move_on_after(ROOTS_TIMEOUT):
            try:
                result = await ctx.session.list_roots()
            except Exception:  # an error answer, or the connection closed
                return []
            return _file_roots([root.model_dump(mode="json", by_alias=True) for root in result.roots])
        return []


class _Lane:
    """A line of tool calls: ``places`` (calls at work or answered and not yet written) and the worker ``threads`` they run on.

    A call holds a place from the start of its work until its answer is
    written, so at most ``size`` answers are ever held here, however many
    calls the client sends or however slowly it reads; anyio wakes the calls
    in line in the order they came.
    """

    def __init__(self, size: int) -> None:
        import anyio

        self.places = anyio.Semaphore(size)
        self.threads = anyio.CapacityLimiter(size)


class _Progress:
    """How a long tool call (``job_wait``) reports and sleeps: progress notifications when the client gave a token."""

    def __init__(self, ctx: Any, closed: threading.Event) -> None:
        import anyio.lowlevel

        self._ctx = ctx
        self._closed = closed
        self.stop = threading.Event()
        self._token = anyio.lowlevel.current_token()

    def report(self, progress: float, total: float | None, message: str) -> None:
        """Send one ``notifications/progress`` (a no-op without a progressToken); from a worker thread."""
        from anyio.from_thread import run

        try:
            run(self._ctx.session.report_progress, progress, total, message, token=self._token)
        except Exception:  # the call ended or the server is closing: nobody to tell
            pass

    def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds``; True when the wait should stop now (the call ended, or stdin closed)."""
        return self.stop.wait(seconds) or self._closed.is_set()
