"""Writing notebooks: nbformat's on-disk layout, without importing nbformat.

nbformat costs seconds to import next to jupyter_server, so j-cli writes the
same bytes itself: ``json.dumps(indent=1, sort_keys=True,
ensure_ascii=False)`` with multi-line strings split into lists of lines, as
nbformat's v4 writer does. Tests validate the results with nbformat. A
lone surrogate (valid JSON as ``\\ud800``, not encodable as UTF-8) is
written back as that escape, so every notebook j-cli can read it can write.

Every write is a temp file in the same directory plus a rename, keeping the
notebook's file mode, so a reader never sees half a notebook.
"""

from __future__ import annotations

import json
import os
import re

from ..base import write_pieces_atomic
from .notebook import RawNumber, parse_notebook, read_file_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "dumps_cell",
    "dumps_cell_parts",
    "dumps_notebook",
    "new_cell",
    "new_notebook",
    "read_for_update",
    "write_notebook",
]

#: MIME values nbformat stores as lists of lines (besides every text/*).
_SPLIT_MIMES = frozenset({"application/javascript", "image/svg+xml"})
#: A surrogate code point left alone in a str (the JSON decoder pairs the valid ones).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _lines(value: Any) -> Any:
    if isinstance(value, str):
        return value.splitlines(True)
    return value


def _split_cell(cell: Any) -> Any:
    """The cell with its multi-line values as lists of lines; the cell itself is left as it is.

    Only the dicts on the way to a split value are copied, so a big output
    is never copied whole.
    """
    if not isinstance(cell, dict):
        return cell
    cell = dict(cell)
    if "source" in cell:
        cell["source"] = _lines(cell["source"])
    outputs = cell.get("outputs")
    if isinstance(outputs, list):
        cell["outputs"] = [_split_output(output) for output in outputs]
    return cell


def _split_output(output: Any) -> Any:
    if not isinstance(output, dict):
        return output
    output = dict(output)
    if output.get("output_type") == "stream" and "text" in output:
        output["text"] = _lines(output["text"])
    data = output.get("data")
    if isinstance(data, dict):
        output["data"] = {
            mime: _lines(value) if (mime.startswith("text/") or mime in _SPLIT_MIMES) and isinstance(value, str) else value
            for mime, value in data.items()
        }
    return output


def _split(nb: dict[str, Any]) -> dict[str, Any]:
    nb = dict(nb)
    if isinstance(nb.get("cells"), list):
        nb["cells"] = [_split_cell(cell) for cell in nb["cells"]]
    return nb


def _dumps(value: Any) -> str:
    """``value`` as nbformat's writer lays it out at the top level (no trailing newline).

    A :class:`~jcli_sidecar.ipynb.notebook.RawNumber` is written back exactly as it
    was read, so a number no float holds never turns into ``Infinity``,
    which strict JSON parsers reject. A lone surrogate is escaped as JSON
    does, so a value holding one (valid JSON) can be written back.
    """
    raw: list[str] = []
    nonce = os.urandom(8).hex()

    def placeholder(value: Any) -> str:
        if isinstance(value, RawNumber):
            raw.append(value.text)
            return f"jcli-raw-number-{nonce}-{len(raw) - 1}"
        raise TypeError(f"{type(value).__name__} is not JSON serialisable")

    text = json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False, default=placeholder)
    for index, number in enumerate(raw):
        text = text.replace(f'"jcli-raw-number-{nonce}-{index}"', number, 1)
    # Outside strings JSON is ASCII, so a surrogate here sits inside a string: escape it as JSON does.
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps_notebook(nb: dict[str, Any]) -> str:
    """The notebook as nbformat would write it (trailing newline included).

    Numbers no float holds and lone surrogates are written back as read (see :func:`_dumps`).

    Example:
        >>> dumps_notebook({"cells": [], "metadata": {"odd": "a\\ud800b"}}).splitlines()[3]
        '  "odd": "a\\\\ud800b"'
    """
    return _dumps(_split(nb)) + "\n"


def dumps_cell(cell: dict[str, Any]) -> str:
    """The cell as :func:`dumps_notebook` writes it inside ``"cells"``, from its ``{`` to its ``}``.

    A cell sits two levels deep, so every line after its first is indented
    by two more spaces; JSON escapes every newline inside a string, so each
    newline of the text is a line break of the layout.

    Example:
        >>> cell = new_cell("code", "x = 1", "a1")
        >>> dumps_cell(cell) in dumps_notebook(new_notebook([cell]))
        True
    """
    return "".join(dumps_cell_parts(cell))


def dumps_cell_parts(cell: dict[str, Any]) -> tuple[str, str, str]:
    """:func:`dumps_cell` cut in three: before the ``outputs`` array, the array, after it.

    A cell without an ``outputs`` list gives ``(text, "", "")``. The writer
    keeps where the array lies, so the next write of the cell reads what
    precedes and follows it, never its outputs.
    """
    split = _split_cell(cell)
    outputs = split.get("outputs") if isinstance(split, dict) else None
    if not isinstance(outputs, list):
        return _dumps(split).replace("\n", "\n  "), "", ""
    marker = f"jcli-outputs-{os.urandom(8).hex()}"
    head = _dumps({**split, "outputs": marker}).replace("\n", "\n  ")
    before, _, after = head.partition(f'"{marker}"')
    # The array is the value of a key of the cell: three levels deep.
    return before, _dumps(outputs).replace("\n", "\n   "), after


def new_cell(cell_type: str, source: str, cell_id: str | None) -> dict[str, Any]:
    """A fresh v4 cell; ``cell_id`` None leaves it without an id (pre-4.5)."""
    cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {}, "source": source}
    if cell_id is not None:
        cell["id"] = cell_id
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def new_notebook(cells: list[dict[str, Any]], kernel_name: str | dict[str, Any] | None = None) -> dict[str, Any]:
    """An nbformat 4.5 notebook holding ``cells``.

    ``kernel_name``: the kernelspec it records, as a name (a Python kernel)
    or as the kernelspec itself (``name``, ``display_name``, ``language``:
    written as given, its language also as ``language_info.name``).
    """
    metadata: dict[str, Any] = {}
    if isinstance(kernel_name, dict):
        spec = {k: v for k, v in kernel_name.items() if isinstance(v, str)}
        if spec.get("name"):
            spec.setdefault("display_name", spec["name"])
            metadata["kernelspec"] = spec
            if spec.get("language"):
                metadata["language_info"] = {"name": spec["language"]}
    elif kernel_name:
        metadata["kernelspec"] = {"name": kernel_name, "display_name": kernel_name, "language": "python"}
        metadata["language_info"] = {"name": "python"}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def read_for_update(path: str) -> dict[str, Any]:
    """Fully parse a notebook that is about to be rewritten (coded errors), numbers exact."""
    return parse_notebook(read_file_bytes(path), path, exact_numbers=True)


def write_notebook(
    path: str, nb: dict[str, Any], *, expect: tuple[int, int, int, int, int] | None = None, stall: str | None = None
) -> None:
    """Replace ``path`` atomically with ``nb``, keeping the file's mode.

    ``expect`` and ``stall`` as :func:`~jcli_sidecar.base.fileio.write_text_atomic`
    (only the file that was read is replaced).

    Raises:
        OSError: the directory cannot be written.
        NotebookChanged: another program saved or deleted it since it was read (``expect``).
    """
    data = dumps_notebook(nb).encode("utf-8")
    written = write_pieces_atomic(path, [data], expect=expect, stall=stall)
    _hand_over(path, data, written)


def _hand_over(path: str, data: bytes, written: os.stat_result) -> None:
    """Keep the index of the notebook just written for this process's next reads and writes (a splice after a sync builds none), and its sidecar."""
    from ..base import Bail, TooDeep
    from .nbindex import adopt, index_bytes, stat_key

    if written.st_size != len(data):
        return  # not what we wrote: someone else's by now
    try:
        adopt(index_bytes(data, stat_key(written)), path)
    except (Bail, TooDeep):
        pass  # a notebook the pass does not index: its reads parse it whole
