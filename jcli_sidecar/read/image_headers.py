"""What an image's own bytes say about it: pixel size and animation, read from headers.

No decoding: these read a few header fields or walk chunk structure, so they
are safe on any input and cost microseconds. MIME policy lives in
:mod:`jcli_sidecar.read.mime`.
"""

from __future__ import annotations

import struct

__all__ = ["image_size", "is_animated"]


def image_size(mime: str, data: bytes) -> tuple[int, int] | None:
    """Pixel ``(width, height)`` read from the image header, or None."""
    try:
        if mime == "image/png" and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if mime == "image/gif":
            return struct.unpack("<HH", data[6:10])
        if mime == "image/jpeg":
            return _jpeg_size(data)
        if mime == "image/webp":
            return _webp_size(data)
    except struct.error:
        return None
    return None


_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    n = len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in _JPEG_SOF:
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    return None


def is_animated(mime: str, data: bytes) -> bool:
    """Whether a GIF, WebP or PNG holds more than one frame (read from its structure).

    Example:
        >>> is_animated("image/jpeg", b"\\xff\\xd8\\xff")
        False
    """
    try:
        if mime == "image/gif":
            return _gif_frames(data, stop_at=2) > 1
        if mime == "image/webp":
            return data[12:16] == b"VP8X" and bool(data[20] & 0x02)
        if mime == "image/png":
            return _png_frames(data) > 1
    except IndexError:
        return False
    return False


def _gif_frames(data: bytes, stop_at: int) -> int:
    """Image descriptors in a GIF, counted up to ``stop_at``."""
    packed = data[10]
    i = 13 + (3 * 2 ** ((packed & 7) + 1) if packed & 0x80 else 0)
    frames = 0
    while i < len(data) and frames < stop_at:
        kind = data[i]
        if kind == 0x3B:  # trailer
            break
        if kind == 0x21:  # extension: label, then sub-blocks
            i += 2
        elif kind == 0x2C:  # image descriptor (+ local colour table), LZW size, sub-blocks
            frames += 1
            local = data[i + 9]
            i += 10 + (3 * 2 ** ((local & 7) + 1) if local & 0x80 else 0) + 1
        else:
            break
        while i < len(data) and data[i]:
            i += data[i] + 1
        i += 1
    return frames


def _png_frames(data: bytes) -> int:
    """``num_frames`` of an APNG's acTL chunk, else 1."""
    i = 8
    while i + 8 <= len(data):
        (length,) = struct.unpack(">I", data[i : i + 4])
        kind = data[i + 4 : i + 8]
        if kind == b"acTL":
            return struct.unpack(">I", data[i + 8 : i + 12])[0]
        if kind == b"IDAT":
            return 1
        i += 12 + length
    return 1
