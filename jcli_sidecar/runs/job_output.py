"""A job's captured text on disk: appended in segments, a bounded tail kept, read as a window by byte offset.

The text a job prints is one stream of UTF-8 bytes, counted from the job's
first byte (the *offset*). It is written only by appending: segment files in
the job directory, ``output.txt`` for the one that starts at offset 0 and
``output.<offset>.txt`` for each later one, each at most half the bound
(:data:`DEFAULT_MAX_BYTES`, ``JCLI_JOB_OUTPUT_MAX_BYTES``). When a new
segment starts, the segments before the one it follows are deleted, so
what is kept is the last one or two segments: at most the bound, and the
offsets of what is kept never change. What fell off the front is *dropped*:
a reader is told how many bytes (``dropped_bytes``), never shown a gap.

Text waiting to be written is held in memory up to the bound too (a writer
whose disk is full keeps the newest text, counts the rest as dropped, and
writes it when space comes back); every write that failed part-way is
resumed where it stopped, so a byte is written once.

A reader opens the segments it lists (an open segment stays readable after
the writer deletes it), keeps the contiguous run that ends with the newest,
seeks to the window and reads only it: memory follows ``--limit``, never
the file. A window is cut on whole characters: its start moves forward past
a character's continuation bytes, its end back before an incomplete one.
"""

from __future__ import annotations

import os
import re
import stat
import threading

from ..base import SETTINGS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..base import Dir

__all__ = ["DEFAULT_MAX_BYTES", "MIN_MAX_BYTES", "OutputLog", "output_max_bytes", "read_window", "segment_name"]

#: What is kept of a job's text by default (``JCLI_JOB_OUTPUT_MAX_BYTES``).
DEFAULT_MAX_BYTES: int = SETTINGS["JCLI_JOB_OUTPUT_MAX_BYTES"].default
#: The least bound accepted (two segments of 2 KiB).
MIN_MAX_BYTES = int(SETTINGS["JCLI_JOB_OUTPUT_MAX_BYTES"].minimum or 4096)
_SEGMENT = re.compile(r"^output(?:\.(\d{1,19}))?\.txt$")


def segment_name(start: int) -> str:
    """The file holding the text from byte ``start`` on.

    Example:
        >>> segment_name(0), segment_name(4096)
        ('output.txt', 'output.4096.txt')
    """
    return "output.txt" if start == 0 else f"output.{start}.txt"


def output_max_bytes(value: Any = None) -> int:
    """The bound on a job's kept text: ``value`` (the client's setting, sent with the job) when valid, else the default."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= MIN_MAX_BYTES:
        return value
    return DEFAULT_MAX_BYTES


class OutputLog:
    """The writer of one job's text (thread-safe): :meth:`add` from the run, :meth:`flush` from the flusher."""

    def __init__(self, directory: Dir, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.dir = directory
        self.max_bytes = max(MIN_MAX_BYTES, max_bytes)
        self.segment_bytes = self.max_bytes // 2
        self.total = 0  # bytes printed so far (the offset of the next one)
        self.end = 0  # the offset just past the last byte on disk
        self.segments: list[int] = []  # the starts of the segments on disk, oldest first
        self.pending: list[tuple[int, bytes]] = []  # (offset, bytes) queued, oldest first
        self.pending_bytes = 0
        self.dropped_unwritten = 0  # bytes dropped from the queue, never written
        self.error: OSError | None = None  # the last write that failed (cleared by one that succeeds)
        self._lock = threading.Lock()  # guards the queue
        self._write_lock = threading.Lock()  # one flush at a time

    def add(self, text: str) -> None:
        """Queue ``text`` for the next flush (the oldest queued text is dropped past the bound)."""
        if not text:
            return
        data = text.encode("utf-8", "replace")
        with self._lock:
            self.pending.append((self.total, data))
            self.pending_bytes += len(data)
            self.total += len(data)
            self._bound()

    def _bound(self) -> None:
        """Drop the oldest queued bytes past the bound (the caller holds the queue's lock)."""
        over = self.pending_bytes - self.max_bytes
        while over > 0 and self.pending:
            offset, head = self.pending[0]
            cut = min(over, len(head))
            if cut == len(head):
                self.pending.pop(0)
            else:
                self.pending[0] = (offset + cut, head[cut:])
            over -= cut
            self.pending_bytes -= cut
            self.dropped_unwritten += cut

    def unwritten(self) -> int:
        """Bytes queued and not yet on disk."""
        with self._lock:
            return self.pending_bytes

    def flush(self) -> None:
        """Append what is queued; on a failure what was not written stays queued.

        Raises:
            OSError: a write failed (full disk, no permission...): the rest stays queued for the next flush.
        """
        with self._write_lock:
            with self._lock:
                chunks, self.pending, self.pending_bytes = self.pending, [], 0
            index, done = 0, 0
            try:
                while index < len(chunks):
                    offset, data = chunks[index]
                    if offset + done != self.end or not self.segments:  # the first text, or text dropped before this
                        self._new_segment(offset + done, drop_all=bool(self.segments))
                    done += self._append(offset + done, memoryview(data)[done:])
                    if done == len(data):
                        index, done = index + 1, 0
                self.error = None
            except OSError as exc:
                self.error = exc
                raise
            finally:
                if index < len(chunks):
                    left = [(chunks[index][0] + done, chunks[index][1][done:]), *chunks[index + 1 :]]
                    with self._lock:  # what was not written goes back to the front of the queue
                        self.pending[:0] = left
                        self.pending_bytes += sum(len(d) for _, d in left)
                        self._bound()

    def _append(self, offset: int, data: memoryview) -> int:
        """Append at ``offset`` (== :attr:`end`) to the last segment, starting a new one when it is full; bytes written."""
        room = self.segments[-1] + self.segment_bytes - offset
        if room <= 0:
            self._new_segment(offset)
            room = self.segment_bytes
        current = self.segments[-1]
        fd = self.dir.open_fd(segment_name(current), os.O_WRONLY | os.O_APPEND)
        try:
            if os.fstat(fd).st_size != offset - current:  # never more than what is counted: cut what is not
                os.ftruncate(fd, offset - current)
            written = os.write(fd, data[: min(room, len(data))])
        finally:
            os.close(fd)
        self.end = offset + written
        return written

    def _new_segment(self, start: int, *, drop_all: bool = False) -> None:
        """Start the segment from ``start``; delete those it leaves more than one segment behind (all, after a gap)."""
        name = segment_name(start)
        try:
            fd = self.dir.open_fd(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # made by a flush that failed right after: empty it
            fd = self.dir.open_fd(name, os.O_WRONLY | os.O_TRUNC)
        os.close(fd)
        if not self.segments or self.segments[-1] != start:
            self.segments.append(start)
        self.end = start
        keep = 1 if drop_all else 2
        while len(self.segments) > keep:
            old = self.segments.pop(0)
            try:
                self.dir.unlink(segment_name(old))
            except FileNotFoundError:
                pass


def _segments(directory: Dir) -> list[tuple[int, int, int]]:
    """The job's segments, opened: ``(start, size, fd)``, oldest first, only the contiguous run ending with the newest."""
    found = sorted((int(m.group(1) or 0), name) for name in directory.names() if (m := _SEGMENT.match(name)))
    opened: list[tuple[int, int, int]] = []
    try:
        for start, name in found:
            try:
                fd = directory.open_fd(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
            except FileNotFoundError:  # deleted by the writer meanwhile: dropped
                continue
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                continue
            opened.append((start, info.st_size, fd))
    except BaseException:
        for _, _, fd in opened:
            os.close(fd)
        raise
    first = len(opened) - 1
    while first > 0 and opened[first - 1][0] + opened[first - 1][1] == opened[first][0]:
        first -= 1
    for _, _, fd in opened[:first]:
        os.close(fd)
    return opened[max(first, 0) :]


def _continuation(byte: int) -> bool:
    return 0x80 <= byte < 0xC0


def read_window(directory: Dir, offset: int, limit: int) -> tuple[str, dict[str, Any]]:
    """The text from byte ``offset``, at most ``limit`` bytes of it, cut on whole characters.

    Returns:
        The text and ``{offset, returned_bytes, total_bytes, dropped_bytes,
        truncated, next_offset}``: ``offset`` is where the window starts (moved
        up to the first kept byte when ``offset`` was dropped, or past a
        character's continuation bytes), ``total_bytes`` every byte the job
        printed, ``dropped_bytes`` those no longer kept (all before the
        first kept one), ``next_offset`` where the next window starts (None
        at the end).

    Raises:
        InvalidWindow: ``offset`` is past the end of the text.
        OSError: a segment cannot be read.
    """
    from ..base import InvalidWindow

    segments = _segments(directory)
    try:
        dropped = segments[0][0] if segments else 0
        total = segments[-1][0] + segments[-1][1] if segments else 0
        if offset > total:
            raise InvalidWindow(f"offset {offset} is past the end of the job's text ({total} bytes)", total_bytes=total)
        start = max(offset, dropped)
        end = min(total, start + limit + 3)  # up to 3 more bytes: the rest of a character the limit cuts
        raw = bytearray()
        for seg_start, size, fd in segments:
            lo, hi = max(start, seg_start), min(end, seg_start + size)
            if lo < hi:
                raw += os.pread(fd, hi - lo, lo - seg_start)
    finally:
        for _, _, fd in segments:
            os.close(fd)
    skip = 0
    while skip < len(raw) and skip < 3 and _continuation(raw[skip]):
        skip += 1
    start += skip
    body = raw[skip:]
    cut = min(limit, len(body))
    if cut < len(body):  # never end inside a character
        back = cut
        while back > 0 and _continuation(body[back]):
            back -= 1
        cut = back if back > 0 else _char_end(body)
    piece = bytes(body[:cut])
    stop = start + len(piece)
    return piece.decode("utf-8", "replace"), {
        "offset": start,
        "returned_bytes": len(piece),
        "total_bytes": total,
        "dropped_bytes": dropped,
        "truncated": len(piece) < total - dropped,
        "next_offset": stop if stop < total else None,
    }


def _char_end(body: bytearray) -> int:
    """The end of the first character of ``body`` (a window never returns nothing while text remains)."""
    end = 1
    while end < len(body) and _continuation(body[end]):
        end += 1
    return end
