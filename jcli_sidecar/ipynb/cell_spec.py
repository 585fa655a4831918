"""Cell specs: which cells of a file ``--cell`` names (``N``, ``A:B``, ``A:``, ``:B``)."""

from __future__ import annotations

from ..base import CellNotFound, UsageError

__all__ = ["parse_cell_spec"]


def parse_cell_spec(spec: str | None, count: int, *, strict: bool = False) -> list[int]:
    """Cell indexes for ``N``, ``A:B`` (B excluded, as in Python), ``A:`` or ``:B``; None is all.

    A range past the end is cut at the end, unless ``strict``: then a range
    that reaches past the end or selects no cell is refused too.

    Raises:
        UsageError: not one of those forms.
        CellNotFound: ``N`` outside the file (with ``strict``, any range
            outside it or empty).

    Example:
        >>> parse_cell_spec("1:3", 5), parse_cell_spec(":2", 5), parse_cell_spec("4", 5)
        ([1, 2], [0, 1], [4])
    """
    if spec is None:
        return list(range(count))
    text = spec.strip()
    try:
        if ":" not in text:
            index = int(text)
            if index < 0:
                raise ValueError
            if index >= count:
                raise CellNotFound(f"cell {index} is outside the file ({count} cells)", cell_count=count)
            return [index]
        first, _, last = text.partition(":")
        start = int(first) if first.strip() else 0
        stop = int(last) if last.strip() else count
        if start < 0 or stop < 0 or ":" in last:
            raise ValueError
    except ValueError:
        raise UsageError(f"bad cell spec {spec!r}: use N, A:B, A: or :B with indexes >= 0") from None
    if strict and (stop > count or start >= stop):
        what = "reach outside the file" if max(start, stop) > count or start == count else "select no cell of the file"
        raise CellNotFound(f"cells {text} {what} ({count} cells)", cell_count=count)
    return list(range(start, min(stop, count)))
