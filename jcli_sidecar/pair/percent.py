"""The py:percent format, read and written the way jupytext (1.19) does.

A py:percent file is a Python script cut into cells by ``# %%`` markers.
This module is the one codec j-cli has for it: reading a ``.py`` for a read,
pair sync before a run, ``convert`` and the pair guards all go through it,
so a ``.py`` means the same cells everywhere, and the same cells jupytext
sees in it. The rules below are jupytext's percent format for Python,
restated (see ``docs/py-percent.md``):

- **Markers.** A line ``# %%`` (any indentation, any spaces after ``#``),
  ``# %%%`` … (Spyder sub-cells: ``cell_depth``), ``# In[3]:`` or
  ``# <codecell>`` starts a cell, unless it sits inside a triple-quoted
  string, or inside a fenced block of a markdown or raw cell. After ``%%``
  come an optional title, ``[markdown]``/``[md]``/``[raw]``, and cell
  metadata as ``key=value`` (JSON values) or one JSON object. ``id="…"``
  is the cell's id (jupytext itself reads it as metadata ``id``).
- **Header.** A leading commented block between ``# ---`` lines (after an
  optional ``#!`` line and coding line) is the header. Its ``jupyter:``
  section (a line ``jupyter:`` and the indented lines under it) is the
  notebook metadata, read as YAML; everything else in the block becomes a
  raw cell ``---`` … ``---``, verbatim, and is never parsed, so front
  matter that is not YAML, or not a mapping, is a raw cell like any other.
  One blank line after the header belongs to it.
- **Code before the first marker** is a code cell, as are code cells at all.
- **Magics.** In a code cell, a line that reads as an IPython magic is
  commented in the file (``# %time f()``, ``# !ls``, ``# x?``, ``# %%time``,
  ``# y = !ls``, ``# ls -l``) and uncommented in the notebook, and a
  comment that already looks like a magic gains one more ``# `` (and loses
  it again when read). Continuation lines of a magic follow it. Lines
  inside triple-quoted strings are left alone. A trailing ``# escape`` /
  ``# noescape`` comment forces the choice; ``comment_magics: false`` in the
  header turns the escaping off.
- **Other-language cells.** A cell starting with a language cell magic
  (``%%bash``, ``%%html``, ``%%R`` …) is written as ``# %% language="bash"``
  (plus ``magic_args``) with its body commented out.
- **Markdown and raw cells** are commented lines (``# text``; ``#`` for an
  empty line), or a triple-quoted string when that is the only faithful
  form.

Reading is here; the magics rules are :mod:`~jcli_sidecar.pair.percent_magics`
and writing is :mod:`~jcli_sidecar.pair.percent_write`.

A cell's ``source`` here is always the notebook's form (magics uncommented),
with blank lines at both ends dropped (:func:`normalize_source`), so pair
sync and mapping compare a notebook's sources with the notebook's sources.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple

from ..base import NotebookReadFailed
from .percent_magics import PythonStrings, uncomment_lines, uncomment_magics, unescape_code_start

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "LANGUAGE_MAGICS",
    "METADATA_KEY",
    "PercentCell",
    "PercentNotebook",
    "is_active",
    "normalize_source",
    "parse_percent",
    "read_header",
    "read_percent",
]


class PercentCell(namedtuple("PercentCell", "cell_type source cell_id start_line end_line metadata", defaults=(None, 1, 1, None))):
    """One cell of a py:percent file.

    ``(cell_type, source, cell_id, start_line, end_line, metadata)``:
    ``source`` is the notebook form, normalised (:func:`normalize_source`);
    ``cell_id`` comes from ``id="…"`` on the marker; ``start_line`` is the
    1-based line of the marker (or of the first line, for code before any
    marker) and ``end_line`` the last non-blank line of the cell;
    ``metadata`` is the rest of the marker's metadata (None when empty), in
    jupytext's terms (``tags``, ``title``, ``language`` …).
    """

    __slots__ = ()


class PercentNotebook:
    """A whole py:percent file: its cells and the notebook metadata of its header."""

    __slots__ = ("cells", "metadata")

    def __init__(self, cells: list[PercentCell], metadata: dict[str, Any]) -> None:
        self.cells = cells
        self.metadata = metadata


# --- lines ---------------------------------------------------------------

_MARKER = re.compile(r"^\s*#\s*%%(%*)\s(.*)$")  # with options (or sub-cell depth)
_BARE_MARKER = re.compile(r"^\s*#\s*(?:%%|<codecell>|In\[[0-9 ]*\]:?)\s*$")
_BLANK = re.compile(r"^\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _is_marker(line: str) -> bool:
    return bool(_MARKER.match(line) or _BARE_MARKER.match(line))


def normalize_source(source: str) -> str:
    """Drop blank lines at both ends; the rest is compared exactly.

    Example:
        >>> normalize_source("\\n\\nx = 1\\n\\n")
        'x = 1'
    """
    lines = source.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


METADATA_KEY = re.compile(r"^[a-zA-Z0-9_.@/-]+$")
_IDENTIFIER = re.compile(r"^[a-zA-Z_.]+[a-zA-Z0-9_.]*$")


def _loads(text: str) -> Any:
    """A JSON value, else a Python literal (jupytext accepts both); ValueError when neither."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    import ast

    try:
        return ast.literal_eval(text)
    except Exception:  # noqa: BLE001 - any failure means: not a value
        raise ValueError(text) from None


def _key_values(text: str) -> dict[str, Any]:
    """``key=value key2 key3=value`` into a dict, read from the right as jupytext does."""
    text = text.strip()
    if not text:
        return {}
    space = text.rfind(" ")
    if not text.startswith("--") and _IDENTIFIER.match(text[space + 1 :]):
        found: dict[str, Any] = {text[space + 1 :]: None}
        if space > 0:
            found.update(_key_values(text[:space]))
        return found
    equal = len(text)
    while True:
        equal = text.rfind("=", 0, equal)
        if equal < 0:
            return {"incorrectly_encoded_metadata": text}
        before = text[:equal].rstrip().rfind(" ")
        key = text[before + 1 : equal].strip()
        if not METADATA_KEY.match(key):
            continue
        try:
            value = _loads(text[equal + 1 :])
        except ValueError:
            continue
        found = _key_values(text[:before]) if before > 0 else {}
        found[key] = value
        return found


def _marker_metadata(options: str) -> dict[str, Any]:
    """What follows ``%%`` on a marker: title, cell type, depth and metadata, as one dict."""
    text = options.strip()
    curly, equal = text.find("{"), text.find("=")
    if curly < 0 or 0 <= equal < curly:
        words = (text[:equal] if equal >= 0 else text).split(" ")
        if equal >= 0:
            while words and not words[-1]:
                words.pop()
            if words:
                words.pop()  # the key before the first '='
        while words and (not words[-1].strip() or words[-1].startswith(".")):
            words.pop()
        title = " ".join(words)
        metadata = _key_values(text[len(title) :])
    else:
        title = text[:curly].strip()
        try:
            metadata = _loads(text[curly:])
        except ValueError:
            metadata = None
        if not isinstance(metadata, dict):
            metadata = {"incorrectly_encoded_metadata": text[curly:].strip()}
    for kind in ("markdown", "raw", "md"):
        if f"[{kind}]" in title:
            title = title.replace(f"[{kind}]", "").strip()
            metadata["cell_type"] = "raw" if kind == "raw" else "markdown"
            if kind == "md":
                metadata["region_name"] = "md"
            break
    depth = len(title) - len(title.lstrip("%"))
    if depth:
        metadata["cell_depth"] = depth
        title = title[depth:].strip()
    if title:
        metadata["title"] = title
    return metadata


def is_active(metadata: dict[str, Any], ext: str) -> bool | None:
    """jupytext's ``active`` rule: is the cell live in ``ext`` ('py' or 'ipynb')? None: not said."""
    run_control = metadata.get("run_control")
    if isinstance(run_control, dict) and run_control.get("frozen") is True:
        return ext == "ipynb"
    tags = metadata.get("tags")
    for tag in tags if isinstance(tags, list) else []:
        if isinstance(tag, str) and tag.startswith("active-"):
            return ext in tag.split("-")
    active = metadata.get("active")
    if active is None:
        return None
    return isinstance(active, str) and ext in re.split(r"[.,]", active)


# --- languages -----------------------------------------------------------

#: Cell magics that switch a cell to another language (jupytext's list).
LANGUAGE_MAGICS = frozenset(
    "R bash sh python python2 python3 coconut javascript js perl html latex markdown pypy ruby script svg matlab "
    "octave idl robotframework sas spark sql cython haskell tcl gnuplot julia c++ scheme clojure powershell q "
    "typescript scala rust csharp fsharp sos java groovy ocaml maxima stata jenner xonsh logtalk lua go sage c# f# cs fs".split()
    + ["wolfram language"]
)


def _usual_language(name: str) -> str:
    lower = name.lower()
    aliases = {"r": "R", "octave": "matlab", "cs": "csharp", "c#": "csharp", "fs": "fsharp", "f#": "fsharp", "sas": "SAS"}
    if lower.startswith("c++"):
        return "c++"
    return aliases.get(lower, lower)


# --- reading -------------------------------------------------------------

_HEADER_FENCE = re.compile(r"^---\s*$")
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-_.a-zA-Z0-9]+)")


def _header(lines: list[str]) -> tuple[int, list[str], list[str], dict[str, Any], list[int]]:
    """``(first line after the header, its jupyter: lines, its other lines, shebang/coding metadata, where each jupyter: line is)``."""
    start, extra = 0, {}
    jupyter: list[str] = []
    at: list[int] = []
    other: list[str] = []
    started = in_jupyter = False
    for i, line in enumerate(lines):
        if i == 0 and line.startswith("#!"):
            extra["executable"], start = line[2:], 1
            continue
        if (i == 0 or (i == 1 and not _CODING.match(lines[0]))) and _CODING.match(line):
            extra["encoding"], start = line, i + 1
            continue
        if not line.startswith("#"):
            break
        text = line[2:] if line.startswith("# ") else line[1:]
        if _HEADER_FENCE.match(text):
            if not started:
                started = True
                continue
            end = i + 1
            if end < len(lines) and _BLANK.match(uncomment_lines([lines[end]])[0]):
                end += 1
            return end, jupyter, other, extra, at
        if not started:
            if text.strip():
                break
            continue
        if re.match(r"^jupyter\s*:\s*$", text):
            in_jupyter = True
        elif text and not text[0].isspace():
            in_jupyter = False
        if in_jupyter:
            jupyter.append(text)
            at.append(i)
        else:
            other.append(text)
    return start, [], [], extra, []


def _comment_magics_flag(jupyter: list[str]) -> bool:
    """The header's ``jupytext: comment_magics`` (true unless it says false)."""
    return not any(re.match(r"^\s+comment_magics\s*:\s*(?:false|False|FALSE|no)\s*$", line) for line in jupyter)


def _split(lines: list[str], start: int) -> list[tuple[int, int, int, dict[str, Any] | None]]:
    """Cells as ``(first line, first body line, end of body, marker metadata or None)``, indexes into ``lines``."""
    cells = []
    pos = start
    while pos < len(lines):
        first = lines[pos]
        options = _MARKER.match(first)
        explicit = bool(options or _BARE_MARKER.match(first))
        if options:
            metadata: dict[str, Any] | None = _marker_metadata(
                options.group(1) + " " + options.group(2) if options.group(1) else options.group(2)
            )
        else:
            metadata = {} if explicit else None
        kind = _cell_kind(metadata or {})
        strings, fence, nxt = PythonStrings(), None, len(lines)
        for i in range(pos, len(lines)):
            line = lines[i]
            if strings.inside():
                strings.feed(line)
                continue
            strings.feed(line)
            if kind != "code":
                text = uncomment_lines([line])[0]
                if fence is not None:
                    if _closes(text, fence):
                        fence = None
                    continue
                opening = _opening(text)
                if opening and any(_closes(uncomment_lines([later])[0], opening) for later in lines[i + 1 :]):
                    fence = opening
                    continue
            if i > pos and _is_marker(line):
                nxt = i
                break
        body = lines[pos:nxt]
        end = nxt
        if len(body) >= 3 and not _BLANK.match(body[-3]) and _BLANK.match(body[-2]) and _BLANK.match(body[-1]):
            end = nxt - 2
        elif nxt > pos and lines[nxt - 1] == "":
            end = nxt - 1
        cells.append((pos, pos + 1 if explicit else pos, end, metadata))
        pos = nxt
    return cells


def _opening(text: str) -> tuple[str, int] | None:
    match = _FENCE.match(text)
    if not match or (match.group(1)[0] == "`" and "`" in match.group(2)):
        return None
    return match.group(1)[0], len(match.group(1))


def _closes(text: str, fence: tuple[str, int]) -> bool:
    match = _FENCE.match(text)
    return bool(match) and match.group(1)[0] == fence[0] and len(match.group(1)) >= fence[1] and not match.group(2).strip()


def _cell_kind(metadata: dict[str, Any]) -> str:
    kind = metadata.get("cell_type")
    if kind in ("markdown", "raw"):
        return kind
    return "raw" if is_active(metadata, "ipynb") is False else "code"


def _triple_quoted(lines: list[str]) -> list[str] | None:
    """The inside of a markdown/raw cell written as one triple-quoted string, else None."""
    content = "\n".join(lines).strip()
    for prefix in ("", "r", "R"):
        for quotes in ('"""', "'''"):
            left = prefix + quotes
            if content.startswith(left) and content.endswith(quotes) and len(content) >= len(left) + 3:
                inner = content[len(left) : -3]
                inner = inner[1:] if inner.startswith("\n") else inner
                inner = inner[:-1] if inner.endswith("\n") else inner
                return inner.splitlines()
    return None


def _cell(lines: list[str], span: tuple[int, int, int, dict[str, Any] | None], escape: bool) -> PercentCell:
    first, body_start, end, marker = span
    metadata = dict(marker or {})
    kind = _cell_kind(metadata)
    metadata.pop("cell_type", None)
    if kind == "raw" and metadata.get("active") == "":
        del metadata["active"]
    body = lines[body_start:end]
    language = metadata.pop("language", None)
    active_py = is_active(metadata, "py")
    live_py = active_py if active_py is not None else True
    quoted = _triple_quoted(body) if (active_py if active_py is not None else kind == "code") is False else None
    if quoted is not None:
        body = quoted
    elif not live_py or ("active" not in metadata and isinstance(language, str) and language != "python"):
        body = body if kind == "raw" and active_py else uncomment_lines(body)  # inactive code, or another language
    else:
        body = uncomment_magics(body, escape)
        body = unescape_code_start(body) if kind == "code" else uncomment_lines(body)
    source = "\n".join(body)
    if isinstance(language, str) and language != "python":
        if _usual_language(language) != "python" and language in LANGUAGE_MAGICS:
            args = metadata.pop("magic_args", None)
            source = f"%%{language}" + (f" {args}" if args is not None else "") + "\n" + source
        else:
            metadata["language"] = language
    cell_id = metadata.pop("id", None)
    if cell_id is not None and not isinstance(cell_id, str):
        metadata["id"], cell_id = cell_id, None
    last = max([first + 1] + [body_start + k + 1 for k, line in enumerate(lines[body_start:end]) if line.strip()])
    return PercentCell(kind, normalize_source(source), cell_id, first + 1, last, metadata or None)


def _lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse_percent(text: str) -> list[PercentCell]:
    """Split py:percent text into cells (see the module for the rules).

    Example:
        >>> cells = parse_percent('# %% id="a1"\\n# !ls\\n\\n# %% [markdown]\\n# Hi\\n')
        >>> [(c.cell_type, c.source, c.cell_id) for c in cells]
        [('code', '!ls', 'a1'), ('markdown', 'Hi', None)]
    """
    lines = _lines(text)
    start, jupyter, other, _, _ = _header(lines)
    escape = _comment_magics_flag(jupyter)
    cells = [_cell(lines, span, escape) for span in _split(lines, start)]
    if other:
        cells.insert(0, PercentCell("raw", "\n".join(["---", *other, "---"]), None, 1, start))
    return cells


def _jupyter_section(lines: list[str], at: list[int], path: str) -> dict[str, Any] | None:
    """One ``jupyter:`` section of a header, read as YAML (``at``: the file line of each of its lines)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        loaded = YAML(typ="safe", pure=True).load("\n".join(lines))
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {at[min(mark.line, len(at) - 1)] + 1})" if mark is not None else ""
        raise NotebookReadFailed(f"{path}: the 'jupyter:' section of its '# ---' header is not valid YAML{where}", path=path) from None
    section = loaded.get("jupyter") if isinstance(loaded, dict) else None
    if section is not None and not isinstance(section, dict):
        raise NotebookReadFailed(f"{path}: the 'jupyter:' section of its '# ---' header is not a YAML mapping", path=path)
    return section


def read_header(text: str, path: str = "the .py") -> dict[str, Any] | None:
    """The notebook metadata a py:percent text's ``# ---`` header gives; None when it has no header.

    The header's ``jupyter:`` section, read with a YAML parser, plus the
    ``#!`` and coding lines (under ``jupytext``). The rest of the header is
    not metadata but a raw cell (:func:`parse_percent`), whatever it holds,
    as jupytext reads it.

    Raises:
        NotebookReadFailed: the ``jupyter:`` section is not valid YAML, or
            not a mapping (jupytext cannot read such a file either).

    Example:
        >>> read_header("# ---\\n# jupyter:\\n#   kernelspec: {name: 'py # 3'}\\n# ---\\n")
        {'kernelspec': {'name': 'py # 3'}}
        >>> read_header("# ---\\n# title: Exception: not YAML\\n# ---\\n")
        {}
        >>> read_header("x = 1\\n") is None
        True
    """
    lines = _lines(text)
    end, jupyter, other, extra, at = _header(lines)
    if not (jupyter or other or extra) and end == 0:
        return None
    metadata: dict[str, Any] = {}
    starts = [k for k, line in enumerate(jupyter) if not line[:1].isspace() and line.strip()] + [len(jupyter)]
    for first, stop in zip(starts, starts[1:], strict=False):  # a repeated 'jupyter:' replaces the earlier one, as in jupytext
        section = _jupyter_section(jupyter[first:stop], at[first:stop], path)
        metadata = section if section is not None else {}
    if extra:
        jupytext = metadata.setdefault("jupytext", {})
        if isinstance(jupytext, dict):
            jupytext.update(extra)
    return metadata


def read_percent(text: str, path: str = "the .py") -> PercentNotebook:
    """The cells and the header's notebook metadata (see :func:`read_header`).

    Raises:
        NotebookReadFailed: the header's ``jupyter:`` section is not valid YAML.
    """
    return PercentNotebook(parse_percent(text), read_header(text, path) or {})
