"""The client's side of ``j-cli mcp serve``'s stdio: the lines handed to the MCP SDK, and what it leaves out.

The SDK's stdio transport (:func:`mcp.server.stdio.stdio_server`) reads
whole lines of any length and drops, unanswered, a line it cannot read. It
takes its input from any async iterator of lines, so j-cli gives it
:class:`ClientLines`, which adds what the SDK has no equivalent for:

- a line is read in bounded chunks: one over ``MAX_MESSAGE_BYTES`` is
  dropped as it streams by (never held whole) and refused once;
- a line that is no JSON-RPC 2.0 message gets JSON-RPC's error (parse
  error, invalid request, or invalid params for a request the SDK's types
  refuse), as JSON-RPC asks, instead of silence;
- it knows every request received, and which the server answered
  (:class:`AnswerWatch` sees each frame written), so when stdin closes it
  holds the end of input back until each is answered: that is
  :mod:`jcli.mcp_lifetime`'s drain.
"""

from __future__ import annotations

import json
import os

from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR  # JSON-RPC's codes, as the SDK names them

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
    from typing import Any

__all__ = ["AnswerWatch", "ClientLines", "MAX_MESSAGE_BYTES", "read_lines"]

#: The longest message accepted; a tool call's arguments are a few hundred bytes.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024

_TOO_LONG = b""  # yielded by read_lines in place of a line that was too long (no real line is empty)
_CHUNK = 64 * 1024


def read_lines(fd: int, limit: int = MAX_MESSAGE_BYTES) -> Iterator[bytes]:
    """Each non-empty line read from ``fd`` (without its newline) until end of file.

    A line over ``limit`` bytes is discarded as it arrives and yields an
    empty line once, so memory stays within ``limit`` plus one chunk.
    """
    partial: list[bytes] = []
    size = 0
    discarding = False
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            line = b"" if discarding else b"".join(partial)
            if line.strip():  # a last line without its newline
                yield line
            return
        pieces = chunk.split(b"\n")
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            if not discarding:
                partial.append(piece)
                size += len(piece)
                if size > limit:
                    partial, size, discarding = [], 0, True
                    yield _TOO_LONG
            if last:
                break
            if not discarding:  # a complete line
                line = b"".join(partial)
                if line.strip():
                    yield line
            partial, size, discarding = [], 0, False


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _refusal(line: bytes) -> tuple[Any, int, str] | dict[str, Any]:
    """``line``'s message, or why it is none: ``(id or None, code, message)``.

    Example:
        >>> _refusal(b"[]")[1:]
        (-32600, 'batches are not supported: send one message per line')
        >>> _refusal(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        {'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}
    """
    if line is _TOO_LONG:
        return None, INVALID_REQUEST, f"message longer than {MAX_MESSAGE_BYTES} bytes"
    try:
        message = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return None, PARSE_ERROR, "Parse error: not a JSON text"
    if isinstance(message, list):
        return None, INVALID_REQUEST, "batches are not supported: send one message per line"
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
    if "method" in message and "id" in message and (not _is_id(message["id"]) or not isinstance(message["method"], str)):
        return None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
    return message


class AnswerWatch:
    """The write stream handed to the SDK's server: each frame goes on to stdout, and each answer is noted."""

    def __init__(self, inner: Any, answered: Callable[[Any], None]) -> None:
        self._inner = inner
        self._answered = answered

    async def send(self, item: Any, /) -> None:
        await self._inner.send(item)
        message = item.message
        if getattr(message, "method", None) is None and hasattr(message, "id"):  # a response or an error
            self._answered(message.id)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnswerWatch:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class ClientLines:
    """The client's lines for the SDK's stdio transport (``stdio_server(stdin=...)``).

    ``refuse(id, code, message)`` answers a line the SDK could not;
    ``on_close()`` runs when stdin ends, before the SDK is told.
    """

    def __init__(self, fd: int, on_close: Callable[[], Awaitable[None]]) -> None:
        self._fd = fd
        self._on_close = on_close
        self.refuse: Callable[[Any, int, str], Awaitable[None]] | None = None
        self.forget: Callable[[Any], None] | None = None  # told of each request the client cancelled
        self.pending: set[Any] = set()  # the requests received and not answered (nor cancelled)
        self.ended = False  # stdin reached its end (else a thread may still block reading it)

    def answered(self, request_id: Any) -> None:
        self.pending.discard(request_id)

    async def __aiter__(self) -> AsyncIterator[str]:
        import anyio.to_thread
        import mcp_types

        lines = read_lines(self._fd)
        while True:
            line = await anyio.to_thread.run_sync(next, lines, None, abandon_on_cancel=True)
            if line is None:
                self.ended = True
                break
            message = _refusal(line)
            if not isinstance(message, dict):
                await self._refused(*message)
                continue
            request_id = message.get("id")
            if "method" in message and "id" in message:
                try:
                    mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
                except ValueError:  # a request the SDK's types refuse: its params are wrong
                    await self._refused(request_id, INVALID_PARAMS, "Invalid params")
                    continue
                self.pending.add(request_id)
            elif message.get("method") == "notifications/cancelled" and isinstance(message.get("params"), dict):
                cancelled = message["params"].get("requestId")
                if _is_id(cancelled):
                    self.pending.discard(cancelled)  # never answered
                    if self.forget is not None:
                        self.forget(cancelled)
            yield line.decode("utf-8")
        await self._on_close()

    async def _refused(self, request_id: Any, code: int, text: str) -> None:
        if self.refuse is not None:
            await self.refuse(request_id, code, text)
