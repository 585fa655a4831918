"""``notebook grep``: lines of notebook sources and text outputs that match, with their coordinates.

The files come from :mod:`jcli_sidecar.read.notebook_walk`, the text from
:mod:`jcli_sidecar.read.text_parts` (through the offset index: images are
never decoded). A line matches as in grep: the pattern is searched line by
line (``^`` and ``$`` anchor at each line). Each hit names its file, cell
and output exactly as ``notebook show`` and ``notebook output`` take them.

Results are bounded: at most ``max_hits`` hits after the first ``skip``
ones, in a fixed order (files as walked, cells in order, a cell's source
before its outputs, lines in order); ``next`` gives the ``skip`` of the
following page, or None when this page holds the last hit. A file that
cannot be read is a problem of the result, never the end of the search.
Plain and synchronous: the sidecar and the in-process path call
:func:`handle_grep` alike.
"""

from __future__ import annotations

import contextlib
import re
import time

from ..base import SCHEMA_VERSION, InternalError, JcliError, NotebookReadFailed, SearchTooCostly, Timeout, UsageError
from ..ipynb import stable_read
from .bounded_search import Searcher
from .linematch import LINE_CHARS, clip_line, first_hits, line_hits
from .notebook_walk import search_units
from .text_parts import notebook_parts, percent_parts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Generator
    from typing import Any

    from ..ipynb import NotebookFile
    from .notebook_walk import SearchUnit
    from .text_parts import Part

__all__ = [
    "DEFAULT_MAX_HITS",
    "LINE_CHARS",
    "MAX_HITS_LIMIT",
    "MAX_PROBLEMS",
    "clip_line",
    "compile_pattern",
    "grep_notebooks",
    "handle_grep",
    "line_hits",
]

#: Hits per page unless ``max_hits`` says otherwise, and the most one page may hold.
DEFAULT_MAX_HITS = 50
MAX_HITS_LIMIT = 1000
#: Files with problems listed in full; the rest are counted.
MAX_PROBLEMS = 20


def compile_pattern(pattern: str, fixed: bool, ignore_case: bool) -> re.Pattern[str]:
    """The regex for ``pattern`` (literal text with ``fixed``).

    Raises:
        UsageError: an empty pattern, or not a Python regular expression.
    """
    if not pattern:
        raise UsageError("the pattern is empty (it would match every line)")
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    try:
        return re.compile(re.escape(pattern) if fixed else pattern, flags)
    except re.error as exc:
        raise UsageError(f"the pattern is not a Python regular expression: {exc} (use -F for literal text)") from None


def _parts(unit: SearchUnit, load: Callable[[str], NotebookFile], outputs: bool) -> Generator[Part, None, None]:
    if unit.kind == "py":
        from ..ipynb import read_text_file
        from ..pair import percent_cells

        cells = percent_cells(read_text_file(unit.real))
        if cells is None:
            if unit.named:
                raise NotebookReadFailed(f"{unit.path}: a plain script (no '# %%' cell markers), not a notebook", path=unit.path)
            return
        yield from percent_parts(cells)
        return
    yield from notebook_parts(load(unit.real), outputs=outputs and unit.outputs)


def _hit(unit: SearchUnit, part: Part, line_no: int, column: int, clipped: str) -> dict[str, Any]:
    hit: dict[str, Any] = {"path": unit.path, "cell": part.cell}
    if part.output is None:
        hit["cell_type"] = part.kind
    else:
        hit["output"] = part.output
        hit["kind"] = part.kind
        if part.name is not None:
            hit["name"] = part.name
    hit.update(line=line_no, column=column, text=clipped)
    return hit


def _lines(
    regex: re.Pattern[str], fixed: bool, searcher: Searcher, text: str, want: int, deadline: float | None
) -> list[tuple[int, int, str]]:
    """``(line number, column, clipped line)`` of up to ``want`` matching lines of ``text``.

    A literal pattern (``fixed``) cannot backtrack: it is searched here. Any other runs in the
    searcher's worker, bounded (:mod:`jcli_sidecar.read.bounded_search`).
    """
    if fixed:
        return first_hits(regex, text, want)
    try:
        return searcher.hits(regex, text, want, LINE_CHARS, until=deadline)
    except TimeoutError:
        raise _past_budget() from None


def _unit_hits(
    unit: SearchUnit,
    regex: re.Pattern[str],
    fixed: bool,
    searcher: Searcher,
    want: int,
    sources: bool,
    outputs: bool,
    load,
    deadline: float | None,
) -> list[dict[str, Any]]:
    """Up to ``want`` hits of one file, read again from the start when it changes meanwhile."""

    def search() -> list[dict[str, Any]]:
        hits: list[dict[str, Any]] = []
        with contextlib.closing(_parts(unit, load, outputs)) as parts:
            for part in parts:
                _check(deadline)
                if part.text is None or not (sources and unit.sources if part.output is None else outputs):
                    continue
                for found in _lines(regex, fixed, searcher, part.text, want - len(hits), deadline):
                    hits.append(_hit(unit, part, *found))
                if len(hits) >= want:
                    return hits
        return hits

    return stable_read(search, unit.path)


def _check(deadline: float | None) -> None:
    """Raise the budget's :class:`~jcli_sidecar.base.errors.Timeout` once ``deadline`` (``time.monotonic``) has passed."""
    if deadline is not None and time.monotonic() >= deadline:
        raise _past_budget()


def _past_budget() -> Timeout:
    return Timeout("the search ran past its time budget here; it goes on in-process", grep_budget=True)


def grep_notebooks(
    pattern: str,
    paths: list[str] | None = None,
    *,
    fixed: bool = False,
    ignore_case: bool = False,
    sources: bool = True,
    outputs: bool = True,
    max_hits: int = DEFAULT_MAX_HITS,
    skip: int = 0,
    load: Callable[[str], NotebookFile] | None = None,
    budget: float | None = None,
) -> dict[str, Any]:
    """Search notebook sources and text outputs under ``paths`` (default ``["."]``).

    ``budget`` (seconds; the sidecar's, kept under its request deadline) ends
    a search that runs longer with a :class:`~jcli_sidecar.base.errors.Timeout`
    whose ``grep_budget`` detail the sidecar answers as ``{"grep_budget": true}``,
    which tells the client to search in-process.

    Returns:
        ``{schema_version, status, hits, next, files_searched, problems}``:
        each hit ``{path, cell, line, column, text}`` plus ``cell_type`` for
        a source line, or ``output``, ``kind`` (``stream``, ``error`` or the
        MIME) and a stream's ``name`` for an output line; ``next`` is
        ``{"skip": N}`` for the next page, or None.

    Raises:
        UsageError: a bad pattern or bound. FileNotFound: a path given does not exist.
        Timeout: past ``budget`` (``details["grep_budget"]``).
        SearchTooCostly: the pattern's matching ran past ``JCLI_GREP_SEARCH_SECONDS`` (it runs in a worker
            process, ended then: see :mod:`jcli_sidecar.read.bounded_search`).

    Example:
        >>> doc = grep_notebooks("warned", ["examples/demo.ipynb"])
        >>> [(h["cell"], h.get("output"), h["text"]) for h in doc["hits"]]
        [(1, None, 'import sys; print("warned", file=sys.stderr)'), (1, 1, 'warned')]
    """
    if load is None:
        from ..ipynb import NotebookFile

        load = NotebookFile.load
    if not sources and not outputs:
        raise UsageError("sources only and outputs only (--sources-only, --outputs-only) exclude each other")
    regex = compile_pattern(pattern, fixed, ignore_case)
    deadline = None if budget is None else time.monotonic() + budget
    units, problems = search_units(paths or ["."])
    hits: list[dict[str, Any]] = []
    want = skip + max_hits + 1  # one more than the page: is there a next one?
    searched = 0
    with Searcher() as searcher:
        if not fixed and units:
            searcher.start()  # the worker starts while the first file is read
        for unit in units:
            searched += 1
            _check(deadline)
            try:
                hits += _unit_hits(unit, regex, fixed, searcher, want - len(hits), sources, outputs, load, deadline)
            except (SearchTooCostly, InternalError):
                raise  # the search itself, not this file
            except JcliError as err:
                problems.append({"path": unit.path, "code": err.code, "message": err.message.replace(unit.real, unit.path)})
            except OSError as exc:
                from ..ipynb import coded_read_error

                coded = coded_read_error(exc, unit.path)
                problems.append({"path": unit.path, "code": coded.code, "message": coded.message})
            if len(hits) >= want:
                break
    page = hits[skip : skip + max_hits]
    more = len(hits) > skip + max_hits
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "hits": page,
        "next": {"skip": skip + max_hits} if more else None,
        "files_searched": searched,
        "problems": problems[:MAX_PROBLEMS],
        "problems_omitted": max(len(problems) - MAX_PROBLEMS, 0),
    }


def _count(request: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = request.get(name)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise UsageError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return value


def handle_grep(
    request: Any, *, binary: bool = False, load: Callable[[str], NotebookFile] | None = None, budget: float | None = None
) -> dict[str, Any]:
    """Answer a grep request ``{pattern, paths?, fixed?, ignore_case?, sources?, outputs?, max_hits?, skip?}`` (:data:`~jcli_sidecar.read.request_spec.GREP_SPEC`).

    Raises:
        UsageError: an unknown field or a value of the wrong type, a count out of bounds, and as :func:`grep_notebooks`.
    """
    from .request_spec import GREP_SPEC, check_request

    request = check_request(request, GREP_SPEC)
    return grep_notebooks(
        request["pattern"],
        request.get("paths"),
        fixed=request.get("fixed", False),
        ignore_case=request.get("ignore_case", False),
        sources=request.get("sources", True),
        outputs=request.get("outputs", True),
        max_hits=_count(request, "max_hits", DEFAULT_MAX_HITS, 1, MAX_HITS_LIMIT),
        skip=_count(request, "skip", 0, 0, 1 << 40),
        load=load,
        budget=budget,
    )
