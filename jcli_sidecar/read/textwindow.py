"""Text windows: a slice of text counted in Unicode code points."""

from __future__ import annotations

from ..base import InvalidWindow

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["check_window", "is_whole", "window"]


def check_window(offset: Any, limit: Any) -> None:
    """Refuse a window that is not ``offset >= 0`` and ``limit >= 1`` (or None).

    Raises:
        InvalidWindow: with the offending value named.
    """
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise InvalidWindow(f"offset must be an integer >= 0, got {offset!r}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise InvalidWindow(f"limit must be an integer >= 1, got {limit!r}")


def is_whole(text_length: int, offset: int, limit: int | None) -> bool:
    """True when the window covers the whole text."""
    return offset == 0 and (limit is None or limit >= text_length)


def window(text: str, offset: int = 0, limit: int | None = None) -> tuple[str, dict[str, Any]]:
    """Cut ``text[offset:offset+limit]`` and describe the cut.

    Returns:
        The slice, and ``{offset, returned_characters, total_characters,
        truncated, next_offset}``. ``truncated`` is True
        whenever the slice is not the whole text; ``next_offset`` is where
        the next window starts, or None at the end.

    Raises:
        InvalidWindow: a bad window, or an offset past the end.

    Example:
        >>> window("héllo wörld", 6, 3)
        ('wör', {'offset': 6, 'returned_characters': 3, 'total_characters': 11, 'truncated': True, 'next_offset': 9})
    """
    check_window(offset, limit)
    total = len(text)
    if offset > total:
        raise InvalidWindow(
            f"offset {offset} is past the end of the text ({total} characters)",
            total_characters=total,
        )
    end = total if limit is None else min(total, offset + limit)
    piece = text[offset:end] if (offset or end != total) else text
    return piece, {
        "offset": offset,
        "returned_characters": end - offset,
        "total_characters": total,
        "truncated": end - offset < total,
        "next_offset": end if end < total else None,
    }
