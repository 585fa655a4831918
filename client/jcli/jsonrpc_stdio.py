"""Newline-delimited JSON-RPC 2.0 over stdio, with the standard library alone.

One message is one line of UTF-8 JSON (MCP's stdio transport). Lines are
read from a file descriptor in bounded chunks: a line longer than
``MAX_MESSAGE_BYTES`` is dropped as it streams by (never held whole) and
reported once as :data:`TOO_LONG`. Frames are written whole, one writer at
a time, so threads may answer concurrently.
"""

from __future__ import annotations

import json
import os
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = [
    "FrameWriter",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_MESSAGE_BYTES",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "TOO_LONG",
    "error_response",
    "read_lines",
]

#: JSON-RPC 2.0's error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

#: The longest message accepted; a tool call's arguments are a few hundred bytes.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024

#: Yielded by :func:`read_lines` in place of a line that was too long (no real line is empty).
TOO_LONG = b""

_CHUNK = 64 * 1024


def read_lines(fd: int, limit: int = MAX_MESSAGE_BYTES) -> Iterator[bytes]:
    """Each non-empty line read from ``fd`` (without its newline) until end of file.

    A line over ``limit`` bytes is discarded as it arrives and yields
    :data:`TOO_LONG` once, so memory stays within ``limit`` plus one chunk.
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
                    yield TOO_LONG
            if last:
                break
            if not discarding:  # a complete line
                line = b"".join(partial)
                if line.strip():
                    yield line
            partial, size, discarding = [], 0, False


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response (``request_id`` None when it could not be read)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _encode(message: dict[str, Any]) -> bytes:
    """``message`` as one line of strict UTF-8 JSON; a lone surrogate becomes U+FFFD.

    Example:
        >>> _encode({"a": "\\ud800é"}) == '{"a":"\\ufffdé"}\\n'.encode()
        True
    """
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        import re

        return re.sub("[\\ud800-\\udfff]", "\ufffd", text).encode("utf-8") + b"\n"


class FrameWriter:
    """Writes whole frames to one file descriptor, one thread at a time."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        """Write ``message`` as one line.

        Raises:
            OSError: the reader is gone (``BrokenPipeError``) or the write failed.
        """
        view = memoryview(_encode(message))
        with self._lock:
            while view:
                view = view[os.write(self._fd, view) :]
