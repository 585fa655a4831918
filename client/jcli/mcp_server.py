"""``j-cli mcp serve``: an MCP server over stdio around the tools of :mod:`jcli.mcp_tools`.

It speaks exactly the MCP surface j-cli uses, over :mod:`jcli.jsonrpc_stdio`
(no MCP SDK, so it starts fast), in the era the client's first request
opens:

- the handshake era: ``initialize`` (a version of ``PROTOCOL_VERSIONS`` is
  granted as asked, any other gets the newest), ``ping``, ``tools/list``,
  ``tools/call``, and ``roots/list`` asked of the client;
- the 2026-07-28 era (``MODERN_VERSIONS``, opened by a request carrying
  the ``_meta`` envelope, as ``server/discover`` does): ``server/discover``,
  ``tools/list``, ``tools/call``, each request checked for its envelope,
  each result stamped with ``resultType`` and the server's info; the server
  asks the client nothing.

Notifications: ``initialized``, ``cancelled`` (the call's answer is then
never sent) and ``roots/list_changed``. A batch, a line that is not JSON, an
unknown method or tool, or malformed params get JSON-RPC's error codes; a
line over ``MAX_MESSAGE_BYTES`` is refused without being held.

The tools are read-only. Image results carry no ``structuredContent``
(hosts drop the images when they see one). Errors are tool results with
``isError`` and the coded message.

Roots: reads are allowed only under the ``--root`` directories, else under
the client's roots (asked once with ``roots/list`` when the client declares
roots, with a bounded wait, and again after it says they changed), else
under the launch cwd. stdout carries only protocol frames (anything else
written to it goes to stderr); logs go to stderr.

Lifetime (:mod:`jcli.mcp_lifetime`): when its client closes stdin, the
server answers every call it has already received, then exits. A call runs
on a worker thread, which cannot be stopped: one still running
``JCLI_MCP_DRAIN_SECONDS`` (default 10) after stdin closed is answered
``TIMEOUT`` and abandoned, and the process exits without waiting for it.
"""

from __future__ import annotations

import os
import sys
import threading

from jcli_sidecar.base import JcliError, display_name, valid_names

from . import jsonrpc_stdio as rpc
from . import mcp_lifetime, mcp_tools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["MODERN_VERSIONS", "PROTOCOL_VERSIONS", "ROOTS_TIMEOUT", "serve"]

#: How long to wait for a client's answer to roots/list (some never answer).
ROOTS_TIMEOUT = 2.0

#: The MCP revisions the initialize handshake grants, oldest to newest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

#: The revisions without a handshake, where every request carries its own ``_meta`` envelope.
MODERN_VERSIONS = ("2026-07-28",)

#: The error code for a protocol revision not served (MCP 2026-07-28).
UNSUPPORTED_PROTOCOL_VERSION = -32022

_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
_CACHE_HINTS = {"cacheScope": "private", "ttlMs": 0}  # modern era: nothing listed may be cached across sessions

_READ_ONLY = {"destructiveHint": False, "idempotentHint": True, "openWorldHint": False, "readOnlyHint": True}


def serve(roots: list[str], host: str | None = None, text_only: bool = False) -> int:
    """Serve MCP over stdio until the client goes away; images fit ``host`` when given, or are told as text (``text_only``)."""
    if host is not None:
        from jcli_sidecar.read import view_spec

        view_spec(host=host)  # an unknown host fails here, before serving
    out = _protocol_stdout()
    session = McpSession(rpc.FrameWriter(out), [os.path.realpath(r) for r in roots], host, text_only)
    try:
        for line in rpc.read_lines(0):
            try:
                session.receive(line)
            except OSError:
                raise
            except Exception:  # a bug: logged, and the next line is served
                import traceback

                _log(f"a message could not be handled\n{traceback.format_exc()}")
    except OSError:  # stdout is gone: nobody is listening any more
        mcp_lifetime.exit_if_calls_remain(session)
        return 0
    session.input_closed()
    mcp_lifetime.answer_calls_in_flight(session, _error_result)
    mcp_lifetime.exit_if_calls_remain(session)
    return 0


def _protocol_stdout() -> int:
    """A private descriptor for the frames; fd 1 and ``sys.stdout`` then lead to stderr.

    Whatever else writes to stdout (a library, a child process) can then
    never break a frame.
    """
    sys.stdout.flush()
    out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _log(text: str) -> None:
    try:
        sys.stderr.write(f"j-cli mcp: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
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


def _tools(modern: bool | None) -> list[dict[str, Any]]:
    """tools/list's tools, byte for byte as j-cli has always listed them in each era."""
    return [
        {
            "annotations": dict(_READ_ONLY),
            "description": description,
            "inputSchema": schema if modern else _schema_order(schema),
            "name": name,
        }
        for name, description, schema in mcp_tools.tool_definitions()
    ]


def _server_info() -> dict[str, str]:
    from jcli_sidecar import __version__

    return {"name": "j-cli", "version": __version__}


def _has_envelope(params: dict[str, Any]) -> bool:
    """True when a request carries the modern era's per-request ``_meta`` envelope."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and _VERSION_KEY in meta


def _legacy_refusal(method: str, params: dict[str, Any]) -> tuple[int, str] | None:
    if method != "initialize" and _has_envelope(params):
        return (
            rpc.INVALID_REQUEST,
            "this connection serves the handshake protocol era; requests carrying the 2026-07-28 envelope are not accepted on it",
        )
    return None


def _modern_refusal(method: str, params: dict[str, Any]) -> tuple[int, str, Any] | tuple[int, str] | None:
    """Why a modern-era request cannot be served: its ``(code, message[, data])``, or None."""
    supported = list(MODERN_VERSIONS)
    if method == "initialize":
        asked = params.get("protocolVersion")
        data = {"supported": supported, "requested": asked} if isinstance(asked, str) else {"supported": supported}
        return UNSUPPORTED_PROTOCOL_VERSION, "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted", data
    meta = params.get("_meta")
    if not isinstance(meta, dict) or _VERSION_KEY not in meta or _CAPABILITIES_KEY not in meta:
        return (
            rpc.INVALID_PARAMS,
            f"params._meta must be an object carrying the required {_VERSION_KEY!r} and {_CAPABILITIES_KEY!r} envelope keys",
        )
    version = meta[_VERSION_KEY]
    if not isinstance(version, str):
        return rpc.INVALID_PARAMS, f"params._meta[{_VERSION_KEY!r}] must be a string"
    if version not in MODERN_VERSIONS:
        return UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", {"supported": supported, "requested": version}
    return None


def _schema_order(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``properties``, ``required`` and ``type`` first.

    Example:
        >>> list(_schema_order({"type": "object", "properties": {}, "additionalProperties": False}))
        ['properties', 'type', 'additionalProperties']
    """
    first: dict[str, Any] = {key: schema[key] for key in ("properties", "required", "type") if key in schema}
    return {**first, **schema}


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class McpSession:
    """One client's session: routes each message, answers requests, runs calls on worker threads."""

    def __init__(self, writer: rpc.FrameWriter, roots: list[str], host: str | None, text_only: bool = False) -> None:
        self._writer = writer
        self._host = host
        self._text_only = text_only
        self._fixed_roots = bool(roots)
        self._roots: list[str] | None = roots or None
        self._client_has_roots = False
        self._modern: bool | None = None  # the protocol era, once the first request has told
        self._tools: list[dict[str, Any]] | None = None
        self._lock = threading.Lock()  # guards the tables below
        self._roots_lock = threading.Lock()  # one roots/list at a time
        self._in_flight: dict[Any, threading.Thread] = {}
        self._workers: list[threading.Thread] = []  # every call's thread not known to be done (it answers after leaving _in_flight)
        self._cancelled: set[Any] = set()
        self._waiting: dict[int, tuple[threading.Event, dict[str, Any]]] = {}
        self._next_id = 0
        self._roots_changes = 0  # how many roots/list_changed the client has sent
        self._roots_asked_at = 0  # ... when the roots were last asked
        self._closed = False  # stdin ended: the client answers nothing more

    # -- routing ------------------------------------------------------------------

    def receive(self, line: bytes) -> None:
        """Handle one line from the client."""
        if line is rpc.TOO_LONG or not line:
            self._send(rpc.error_response(None, rpc.INVALID_REQUEST, f"message longer than {rpc.MAX_MESSAGE_BYTES} bytes"))
            return
        import json

        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            self._send(rpc.error_response(None, rpc.PARSE_ERROR, "Parse error: not a JSON text"))
            return
        if isinstance(message, list):
            self._send(rpc.error_response(None, rpc.INVALID_REQUEST, "batches are not supported: send one message per line"))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._send(rpc.error_response(None, rpc.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"))
            return
        method = message.get("method")
        if method is None:
            self._answered(message)
        elif "id" not in message:
            self._notified(method, message.get("params"))
        elif not _is_id(message["id"]) or not isinstance(method, str):
            self._send(rpc.error_response(None, rpc.INVALID_REQUEST, "Invalid Request: id must be a string or an integer"))
        else:
            self._requested(message["id"], method, message.get("params"))

    def _send(self, message: dict[str, Any]) -> None:
        self._writer.send(message)

    def _requested(self, request_id: Any, method: str, params: Any) -> None:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self._send(rpc.error_response(request_id, rpc.INVALID_PARAMS, "Invalid params: params must be an object"))
            return
        if self._modern is None:  # the first request decides the protocol era, once
            self._modern = method != "initialize" and _has_envelope(params)
        refusal = _modern_refusal(method, params) if self._modern else _legacy_refusal(method, params)
        if refusal is not None:
            self._send(rpc.error_response(request_id, *refusal))
        elif method == "tools/call":
            self._start_call(request_id, params)
        elif method in self._methods():
            self._send(self._result(request_id, self._methods()[method](params)))
        else:
            self._send(rpc.error_response(request_id, rpc.METHOD_NOT_FOUND, "Method not found", method))

    def _methods(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any] | tuple[int, str]]]:
        """The requests answered at once, by method, in this session's era."""
        if self._modern:
            return {"server/discover": self._discover, "tools/list": self._list_tools}
        return {"initialize": self._initialize, "ping": lambda params: {}, "tools/list": self._list_tools}

    def _result(self, request_id: Any, result: dict[str, Any] | tuple[int, str]) -> dict[str, Any]:
        """The response carrying ``result`` (an ``(code, message)`` is an error), shaped for the era."""
        if isinstance(result, tuple):
            return rpc.error_response(request_id, *result)
        if self._modern:  # keys in order, resultType required, the serverInfo stamp last
            result = {**dict(sorted({**result, "resultType": "complete"}.items())), "_meta": {_SERVER_INFO_KEY: _server_info()}}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _notified(self, method: Any, params: Any) -> None:
        if not isinstance(params, dict):
            params = {}
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            with self._lock:
                if _is_id(request_id) and request_id in self._in_flight:
                    self._cancelled.add(request_id)
        elif method == "notifications/roots/list_changed":
            with self._lock:  # not the roots lock: a call may hold it while it waits for this very reader
                self._roots_changes += 1  # asked again at the next call
        # notifications/initialized, and any other notification: nothing to do

    def _answered(self, message: dict[str, Any]) -> None:
        """A response to one of our requests (roots/list); any other is ignored."""
        request_id = message.get("id")
        with self._lock:
            waiting = self._waiting.get(request_id) if _is_id(request_id) else None  # type: ignore[arg-type]
        if waiting is not None:
            event, slot = waiting
            slot.update(message)
            event.set()

    # -- the methods -----------------------------------------------------------------

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
        asked = params.get("protocolVersion")
        if not isinstance(asked, str):
            return rpc.INVALID_PARAMS, "Invalid params: protocolVersion must be a string"
        capabilities = params.get("capabilities")
        self._client_has_roots = isinstance(capabilities, dict) and isinstance(capabilities.get("roots"), dict)
        return {
            "capabilities": {"tools": {"listChanged": False}},
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
            "serverInfo": _server_info(),
        }

    def _discover(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"capabilities": {"tools": {"listChanged": False}}, "supportedVersions": list(MODERN_VERSIONS), **_CACHE_HINTS}

    def _list_tools(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._tools is None:
            self._tools = _tools(self._modern)
        return {"tools": self._tools, **_CACHE_HINTS} if self._modern else {"tools": self._tools}

    def _start_call(self, request_id: Any, params: dict[str, Any]) -> None:
        name, arguments = params.get("name"), params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            self._send(rpc.error_response(request_id, rpc.INVALID_PARAMS, "Invalid params: name must be a string, arguments an object"))
            return
        if name not in (mcp_tools.READ_NOTEBOOK_OUTPUT, mcp_tools.READ_RUN_OUTPUT):
            self._send(rpc.error_response(request_id, rpc.INVALID_PARAMS, f"Unknown tool: {_valid_text(name)}"))
            return
        worker = threading.Thread(target=self._run_call, args=(request_id, name, arguments), name=f"mcp-call-{request_id}", daemon=True)
        with self._lock:
            self._in_flight[request_id] = worker
            self._workers = [*(other for other in self._workers if other.is_alive()), worker]
        worker.start()

    def _run_call(self, request_id: Any, name: str, arguments: dict[str, Any]) -> None:
        result = self._call_result(name, arguments)
        with self._lock:
            if self._in_flight.pop(request_id, None) is None:
                return  # abandoned at exit, and answered then
            cancelled = request_id in self._cancelled
            self._cancelled.discard(request_id)
        if cancelled:
            return
        try:
            self._send(self._result(request_id, result))
        except OSError:
            pass  # the client is gone; the reading thread sees it too

    def calls_in_flight(self) -> bool:
        """True while a tool call's thread runs (one still writing its answer, or abandoned, included)."""
        with self._lock:
            return any(worker.is_alive() for worker in self._workers)

    def workers(self) -> list[threading.Thread]:
        """The threads of the calls still running or still writing their answers."""
        with self._lock:
            return [worker for worker in self._workers if worker.is_alive()]

    def input_closed(self) -> None:
        """The client closed stdin: nothing it would answer can come any more; wake every wait for it."""
        with self._lock:
            self._closed = True
            waiting = list(self._waiting.values())
        for event, _ in waiting:
            event.set()

    def abandon_calls(self) -> list[Any]:
        """Take the calls still running off the table (their workers will answer nothing) and return their ids, less the cancelled."""
        with self._lock:
            late = [request_id for request_id in self._in_flight if request_id not in self._cancelled]
            self._in_flight.clear()
        return late

    def answer_all(self, request_ids: list[Any], result: dict[str, Any]) -> None:
        """Answer each of ``request_ids`` with ``result`` (until the client is gone)."""
        for request_id in request_ids:
            try:
                self._send(self._result(request_id, result))
            except OSError:
                return

    def _call_result(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            doc = mcp_tools.call_tool(name, arguments, self._allowed_roots(), self._host, self._text_only)
        except JcliError as err:
            return _error_result(f"{err.code}: {display_name(err.message)}")  # a file name that is not UTF-8 comes out valid
        except Exception as exc:  # a bug: still a coded tool error, never a protocol crash
            import traceback

            _log(f"tool {name} failed\n{traceback.format_exc()}")
            return _error_result(f"INTERNAL_ERROR: j-cli failed ({type(exc).__name__})")
        content: list[dict[str, Any]] = []
        for kind, value in mcp_tools.tool_result_parts(valid_names(doc)):
            if kind == "image":
                data, mime = value
                content.append({"data": data, "mimeType": mime, "type": "image"})
            else:
                content.append({"text": _valid_text(value), "type": "text"})
        return {"content": content, "isError": False}

    # -- roots ------------------------------------------------------------------------

    def _allowed_roots(self) -> list[str]:
        with self._roots_lock:
            with self._lock:
                changes = self._roots_changes
            if self._roots is None or (not self._fixed_roots and changes != self._roots_asked_at):
                self._roots_asked_at = changes
                asked = self._client_has_roots and not self._modern  # the modern era has no server-to-client requests
                self._roots = (self._client_roots() if asked else []) or [os.path.realpath(os.getcwd())]
            return self._roots

    def _client_roots(self) -> list[str]:
        """The client's file roots, if it answers roots/list in time."""
        event: threading.Event = threading.Event()
        slot: dict[str, Any] = {}
        with self._lock:
            if self._closed:
                return []  # it can no longer answer: the launch cwd
            self._next_id += 1
            request_id = self._next_id
            self._waiting[request_id] = (event, slot)
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, "method": "roots/list"})
            event.wait(ROOTS_TIMEOUT)
        except OSError:
            return []
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)
        listed = slot.get("result")
        roots = listed.get("roots") if isinstance(listed, dict) else None
        return _file_roots(roots) if isinstance(roots, list) else []  # no answer or an error: the launch cwd


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


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"text": text, "type": "text"}], "isError": True}
