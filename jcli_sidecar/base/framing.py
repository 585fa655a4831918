"""Length-prefixed msgpack frames: a 4-byte big-endian length, then one map.

A request is ``{id, op, args}``; a response is ``{id, ok, result}`` or
``{id, ok: false, error: {code, message, ...}}``. Bytes travel as msgpack
``bin``; text may hold lone surrogates (JSON allows them), so both sides
pack and unpack with ``surrogatepass``.
"""

from __future__ import annotations

import socket
import struct

import msgpack

from .errors import ProtocolError, SidecarUnavailable
from .os_errors import os_error

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from typing import Any

__all__ = [
    "HEADER",
    "MAX_REQUEST_FRAME",
    "MAX_RESPONSE_FRAME",
    "pack_frame",
    "read_frame",
    "read_frame_async",
    "unpack_payload",
]

HEADER = struct.Struct(">I")

#: Largest frame a sidecar accepts (requests are small maps).
MAX_REQUEST_FRAME = 1024 * 1024

#: Largest frame a client accepts. A 32 MiB JSON response is smaller as msgpack.
MAX_RESPONSE_FRAME = 64 * 1024 * 1024


def pack_frame(message: dict[str, Any]) -> bytes:
    """One frame holding ``message``.

    Raises:
        ProtocolError: the message cannot be packed (e.g. an integer wider
            than 64 bits from a notebook's JSON).
    """
    try:
        payload = msgpack.packb(message, use_bin_type=True, unicode_errors="surrogatepass")
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode the message ({type(exc).__name__})") from None
    return HEADER.pack(len(payload)) + payload


def unpack_payload(payload: bytes) -> dict[str, Any]:
    """Decode one frame's payload into a map.

    Raises:
        ProtocolError: not msgpack, or not a map.
    """
    try:
        message = msgpack.unpackb(payload, raw=False, unicode_errors="surrogatepass", strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types for garbage
        raise ProtocolError(f"frame is not msgpack ({type(exc).__name__})") from None
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a map")
    return message


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    remaining = size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise SidecarUnavailable("the sidecar closed the connection mid-frame")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket, cap: int = MAX_RESPONSE_FRAME) -> dict[str, Any]:
    """Read one frame from a blocking socket.

    Raises:
        SidecarUnavailable: the connection closed or failed.
        ProtocolError: a frame over ``cap``, or garbage.
    """
    try:
        (size,) = HEADER.unpack(_recv_exact(sock, HEADER.size))
        if size > cap:
            raise ProtocolError(f"frame of {size} bytes is over the {cap}-byte cap")
        return unpack_payload(_recv_exact(sock, size))
    except OSError as exc:
        raise os_error(exc, "sidecar-connect") from None


async def read_frame_async(reader: asyncio.StreamReader, cap: int = MAX_REQUEST_FRAME) -> bytes | None:
    """Read one frame's payload, or None at a clean end of stream.

    Raises:
        ProtocolError: a frame over ``cap`` (the stream cannot be resynced).
        asyncio.IncompleteReadError: the peer closed mid-frame.
    """
    import asyncio

    try:
        header = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise
    (size,) = HEADER.unpack(header)
    if size > cap:
        raise ProtocolError(f"frame of {size} bytes is over the {cap}-byte cap")
    return await reader.readexactly(size)
