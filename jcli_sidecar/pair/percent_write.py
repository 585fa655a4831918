"""Writing cells as a py:percent file, the way jupytext (1.19) writes them.

The inverse of :func:`~jcli_sidecar.pair.percent.parse_percent`: each cell
becomes a ``# %%`` marker (with its kind, id and metadata) and its lines;
code keeps its magics commented (:mod:`~jcli_sidecar.pair.percent_magics`),
markdown and raw cells are commented lines or a triple-quoted string, a
cell in another language is a ``language=`` marker over a commented body,
and the notebook's metadata is the commented YAML header.
"""

from __future__ import annotations

import json

from ..base import UsageError
from .percent import LANGUAGE_MAGICS, METADATA_KEY, PercentCell, is_active, normalize_source, parse_percent
from .percent_magics import comment_magics

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NOTEBOOK_ONLY_METADATA", "write_percent"]


NOTEBOOK_ONLY_METADATA = frozenset(
    ["autoscroll", "collapsed", "scrolled", "trusted", "execution", "ExecuteTime", "jcli", "jcli_ran"]
    + ["skipline", "noskipline", "cell_marker", "lines_to_next_cell", "lines_to_end_of_cell_marker"]
)


def _language_magic(lines: list[str]) -> tuple[str, str | None] | None:
    """``(language, magic args)`` when the cell starts with a cell magic for another language."""
    if not lines or not lines[0].startswith("%%"):
        return None
    name, _, args = lines[0][2:].partition(" ")
    if name not in LANGUAGE_MAGICS or name == "python":
        return None  # '%%python' stays an ordinary commented magic: jupytext's language form would drop it
    return name, (args if args else None)


def _options(kind: str, cell_id: str | None, metadata: dict[str, Any]) -> str:
    """What follows ``%%`` on the marker: depth, title, type, then ``key=value`` (or one JSON object)."""
    metadata = {k: v for k, v in metadata.items() if k not in NOTEBOOK_ONLY_METADATA and k not in ("id", "cell_type")}
    title = metadata.pop("title", None)
    depth = metadata.pop("cell_depth", None)
    region = metadata.pop("region_name", None)
    words = []
    if isinstance(depth, int) and not isinstance(depth, bool) and depth > 0:
        words.append("%" * depth)
    if isinstance(title, str) and title and title.strip() == title and not any(c in title for c in "{}=[]%\"'.#"):
        words.append(title)
    elif title is not None:
        metadata["title"] = title
    if kind != "code":
        words.append("[md]" if kind == "markdown" and region == "md" else f"[{kind}]")
    if cell_id is not None:
        metadata = {"id": cell_id, **metadata}
    if all(METADATA_KEY.match(k) and k != "incorrectly_encoded_metadata" for k in metadata):
        words += [f"{k}={json.dumps(v)}" if v is not None else k for k, v in metadata.items()]
    elif metadata:
        words.append(json.dumps(metadata))
    return " ".join(words)


def _cell_lines(kind: str, source: str, cell_id: str | None, metadata: dict[str, Any], form: str) -> list[str]:
    """The cell's lines in one form: ``plain`` (magics commented; markdown/raw commented),
    ``language`` (an other-language cell magic on the marker, body commented) or ``quoted``
    (markdown/raw as one triple-quoted string)."""
    lines = source.split("\n") if source else []
    metadata = {k: v for k, v in metadata.items() if k not in ("language", "magic_args")}
    if form == "language":
        magic = _language_magic(lines)
        assert magic is not None
        lines = lines[1:]
        if magic[1] is not None:
            metadata["magic_args"] = magic[1]
        metadata["language"] = magic[0]
    live = kind == "code" and is_active(metadata, "py") is not False
    if live and form == "plain":
        lines = comment_magics(lines)
    options = _options(kind, cell_id, metadata)
    indent = ""
    if form == "plain" and live and lines and lines[0].strip():
        indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
    marker = indent + "# %%" + (("" if options.startswith("%") else " ") + options if options else "")
    if form == "quoted":
        quotes = "'''" if '"""' in source else '"""'
        return [marker, quotes, *lines, quotes]
    if not live or form == "language":  # markdown, raw, another language, or code inactive in a script
        lines = ["# " + line if line else "#" for line in lines]
    return [marker, *lines]


def _forms(kind: str, source: str) -> list[str]:
    if kind != "code":
        return ["plain", "quoted"]
    return ["language", "plain"] if _language_magic(source.split("\n")) else ["plain"]


def _as_cell(index: int, cell: Any) -> tuple[str, str, str | None, dict[str, Any]]:
    from ..ipynb import join_text

    if isinstance(cell, PercentCell):
        return cell.cell_type, cell.source, cell.cell_id, dict(cell.metadata or {})
    if not isinstance(cell, dict):
        raise UsageError(f"cell {index} is not a cell")
    kind = cell.get("cell_type", "code")
    if kind not in ("code", "markdown", "raw"):
        raise UsageError(f"cell {index} has cell_type {kind!r}, which py:percent cannot hold")
    metadata = cell.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    cell_id = cell.get("id")
    if not isinstance(cell_id, str):
        cell_id = metadata.get("id") if isinstance(metadata.get("id"), str) else None
    return kind, join_text(cell.get("source", ""), f"cell {index} source"), cell_id, metadata


def _header_lines(metadata: dict[str, Any]) -> list[str]:
    """The ``# ---`` header jupytext writes: the notebook's kernelspec and jupytext settings."""
    import io

    from ruamel.yaml import YAML

    jupytext = metadata.get("jupytext")
    jupytext = {k: v for k, v in jupytext.items() if k not in ("executable", "encoding")} if isinstance(jupytext, dict) else {}
    jupytext.setdefault("text_representation", {"extension": ".py", "format_name": "percent", "format_version": "1.3"})
    kept: dict[str, Any] = {"jupytext": jupytext}
    if isinstance(metadata.get("kernelspec"), dict):
        kept["kernelspec"] = metadata["kernelspec"]
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    buffer = io.StringIO()
    yaml.dump({"jupyter": kept}, buffer)
    lines = ["# " + line if line else "#" for line in buffer.getvalue().rstrip("\n").split("\n")]
    before = []
    original = metadata.get("jupytext")
    if isinstance(original, dict):
        if isinstance(original.get("executable"), str):
            before.append("#!" + original["executable"])
        if isinstance(original.get("encoding"), str):
            before.append(original["encoding"])
    return [*before, "# ---", *lines, "# ---"]


def write_percent(cells: list[dict[str, Any]] | list[PercentCell] | list[Any], metadata: dict[str, Any] | None = None) -> str:
    """Write cells as py:percent text that :func:`parse_percent` (and jupytext) read back the same.

    Each cell is a :class:`PercentCell` or a notebook cell dict (``cell_type``,
    ``source``, ``id``, ``metadata``). Code cells get their magics
    commented; a markdown or raw cell the commented form would change is
    written as a triple-quoted string. With ``metadata`` (the notebook's),
    a ``# ---`` header carries its kernelspec and jupytext settings. Every
    cell is read back before it is accepted.

    Raises:
        UsageError: a cell that cannot be written so that it reads back the
            same (a code line that reads as a ``# %%`` marker, say).

    Example:
        >>> print(write_percent([PercentCell("markdown", "# Title", "m1"), PercentCell("code", "!ls")]), end="")
        # %% [markdown] id="m1"
        # # Title
        <BLANKLINE>
        # %%
        # !ls
    """
    chunks = []
    for index, cell in enumerate(cells):
        kind, source, cell_id, meta = _as_cell(index, cell)
        source = normalize_source(source)
        for form in _forms(kind, source):
            lines = _cell_lines(kind, source, cell_id, meta, form)
            back = parse_percent("\n".join(lines) + "\n")
            if len(back) == 1 and (back[0].cell_type, back[0].source, back[0].cell_id) == (kind, source, cell_id):
                break
        else:
            raise UsageError(
                f"cell {index} cannot be written as py:percent so that it reads back the same: a line of it reads as a '# %%' marker "
                "(or, like '# # +', as something jupytext unescapes)"
            )
        chunks.append("\n".join(lines) + "\n")
    head = "\n".join(_header_lines(metadata)) + "\n\n" if metadata is not None else ""
    text = head + "\n".join(chunks)
    back = parse_percent(text)
    for index, (cell, written) in enumerate(zip(cells, back, strict=False)):
        kind, source, cell_id, _ = _as_cell(index, cell)
        if (written.cell_type, written.source, written.cell_id) != (kind, normalize_source(source), cell_id):
            break
    else:
        if len(back) == len(cells):
            return text
        index = min(len(back), len(cells))
    raise UsageError(
        f"the cells cannot be written as py:percent so that they read back the same: from cell {index} on they read differently "
        "(a triple-quoted string left open, say)"
    )
