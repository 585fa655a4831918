"""The lines of a text that a pattern matches, as ``notebook grep`` finds them; and the search worker's loop.

Standard library only and nothing of j-cli: :mod:`jcli_sidecar.read.bounded_search` runs this
very file as the worker process (``python -I -S linematch.py``), so a search there is the
in-process one exactly. The worker reads length-prefixed ``marshal`` frames on stdin, each
``(pattern, flags, text, want, width, seconds)``, and answers each with the list of up to ``want``
``(line number, column, clipped line)`` of :func:`line_hits`; it ends at end of input.
"""

from __future__ import annotations

import marshal
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["LINE_CHARS", "clip_line", "first_hits", "line_hits", "serve"]

#: A hit's line is clipped to about this many characters around the match.
LINE_CHARS = 200
_BEFORE = 60  # characters kept before the match in a clipped line


def line_hits(regex: re.Pattern[str], text: str) -> Iterator[tuple[int, str, int, int]]:
    """``(line number from 1, line, match start, match end)`` of each line of ``text`` that matches.

    Example:
        >>> list(line_hits(re.compile("b+", re.M), "abb\\nc\\nb"))
        [(1, 'abb', 1, 3), (3, 'b', 0, 1)]
    """
    pos = 0
    line_no = 1
    counted = 0  # line_no is the number of the line that starts at counted
    size = len(text)
    while pos < size:  # a final newline ends the last line; it starts none
        found = regex.search(text, pos)
        if found is None or found.start() >= size:
            return
        start = text.rfind("\n", pos, found.start()) + 1 if found.start() > pos else pos
        start = max(start, pos)
        end = text.find("\n", start)
        end = size if end < 0 else end
        line_no += text.count("\n", counted, start)
        counted = start
        line = text[start:end]
        own = found if found.end() <= end else regex.search(line)  # a match that ran past the line: the line alone decides
        if own is not None:
            offset = start if own is found else 0
            yield line_no, line.removesuffix("\r"), own.start() - offset, own.end() - offset
        pos = end + 1


def clip_line(line: str, start: int, end: int, width: int = LINE_CHARS) -> str:
    """``line``, or ``width`` characters of it from a little before the match (cuts marked ``…``).

    Example:
        >>> clip_line("x" * 100 + "HIT" + "y" * 300, 100, 103, width=20)
        '…xxxxxxxxxxxHITyyyyyy…'
    """
    if len(line) <= width:
        return line
    first = max(0, start - min(_BEFORE, max(width - (end - start), 0) // 2 + 3))
    last = min(len(line), first + width)
    first = max(0, min(first, last - width))
    return ("…" if first > 0 else "") + line[first:last] + ("…" if last < len(line) else "")


def first_hits(regex: re.Pattern[str], text: str, want: int, width: int = LINE_CHARS) -> list[tuple[int, int, str]]:
    """``(line number, column, clipped line)`` of the first ``want`` lines of ``text`` that ``regex`` matches.

    Example:
        >>> first_hits(re.compile("b+", re.M), "abb\\nc\\nb", 1)
        [(1, 1, 'abb')]
    """
    found: list[tuple[int, int, str]] = []
    if want <= 0:
        return found
    for line_no, line, start, end in line_hits(regex, text):
        found.append((line_no, start, clip_line(line, start, end, width)))
        if len(found) >= want:
            break
    return found


def _frame(stream) -> bytes | None:
    head = stream.read(8)
    if len(head) < 8:
        return None
    size = int.from_bytes(head, "little")
    body = stream.read(size)
    return body if len(body) == size else None


def _cpu_bound(seconds: float) -> None:
    """End this process (SIGXCPU) once this search has used ``seconds`` of CPU and a little more.

    The parent kills the worker at its bound; this ends it too if the parent is gone (killed
    mid-search, it can no longer end its worker), so no search runs on for minutes unowned.
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - no such limit here
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime + seconds) + 2
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard != resource.RLIM_INFINITY and soft > hard:
        soft = hard
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):  # pragma: no cover - the limit stays as it was
        pass


def serve() -> None:
    """The worker's loop: a frame in, its hits out, until end of input."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        body = _frame(inp)
        if body is None:
            return
        pattern, flags, text, want, width, seconds = marshal.loads(body)
        _cpu_bound(seconds)
        reply = marshal.dumps(first_hits(re.compile(pattern, flags), text, want, width))
        out.write(len(reply).to_bytes(8, "little") + reply)
        out.flush()


if __name__ == "__main__":
    serve()
