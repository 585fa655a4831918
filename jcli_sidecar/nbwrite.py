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

import copy
import json
import os
import re

from .fileio import write_text_atomic
from .notebook import RawNumber, parse_notebook, read_file_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["dumps_notebook", "new_cell", "new_notebook", "read_for_update", "write_notebook"]

#: MIME values nbformat stores as lists of lines (besides every text/*).
_SPLIT_MIMES = frozenset({"application/javascript", "image/svg+xml"})
#: A surrogate code point left alone in a str (the JSON decoder pairs the valid ones).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _lines(value: Any) -> Any:
    if isinstance(value, str):
        return value.splitlines(True)
    return value


def _split(nb: dict[str, Any]) -> dict[str, Any]:
    nb = copy.deepcopy(nb)
    for cell in nb.get("cells", []):
        if not isinstance(cell, dict):
            continue
        if "source" in cell:
            cell["source"] = _lines(cell["source"])
        for output in cell.get("outputs", []) or []:
            if not isinstance(output, dict):
                continue
            if output.get("output_type") == "stream" and "text" in output:
                output["text"] = _lines(output["text"])
            data = output.get("data")
            if isinstance(data, dict):
                for mime, value in data.items():
                    if (mime.startswith("text/") or mime in _SPLIT_MIMES) and isinstance(value, str):
                        data[mime] = _lines(value)
    return nb


def dumps_notebook(nb: dict[str, Any]) -> str:
    """The notebook as nbformat would write it (trailing newline included).

    A :class:`~jcli_sidecar.notebook.RawNumber` is written back exactly as it
    was read, so a number no float holds never turns into ``Infinity``,
    which strict JSON parsers reject. A lone surrogate is escaped as JSON
    does, so a notebook holding one (valid JSON) can be written back.

    Example:
        >>> dumps_notebook({"cells": [], "metadata": {"odd": "a\\ud800b"}}).splitlines()[3]
        '  "odd": "a\\\\ud800b"'
    """
    raw: list[str] = []
    nonce = os.urandom(8).hex()

    def placeholder(value: Any) -> str:
        if isinstance(value, RawNumber):
            raw.append(value.text)
            return f"jcli-raw-number-{nonce}-{len(raw) - 1}"
        raise TypeError(f"{type(value).__name__} is not JSON serialisable")

    text = json.dumps(_split(nb), sort_keys=True, indent=1, ensure_ascii=False, default=placeholder)
    for index, number in enumerate(raw):
        text = text.replace(f'"jcli-raw-number-{nonce}-{index}"', number, 1)
    # Outside strings JSON is ASCII, so a surrogate here sits inside a string: escape it as JSON does.
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text + "\n")


def new_cell(cell_type: str, source: str, cell_id: str | None) -> dict[str, Any]:
    """A fresh v4 cell; ``cell_id`` None leaves it without an id (pre-4.5)."""
    cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {}, "source": source}
    if cell_id is not None:
        cell["id"] = cell_id
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def new_notebook(cells: list[dict[str, Any]], kernel_name: str | None = None) -> dict[str, Any]:
    """An empty nbformat 4.5 notebook holding ``cells``."""
    metadata: dict[str, Any] = {}
    if kernel_name:
        metadata["kernelspec"] = {"name": kernel_name, "display_name": kernel_name, "language": "python"}
        metadata["language_info"] = {"name": "python"}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def read_for_update(path: str) -> dict[str, Any]:
    """Fully parse a notebook that is about to be rewritten (coded errors), numbers exact."""
    return parse_notebook(read_file_bytes(path), path, exact_numbers=True)


def write_notebook(path: str, nb: dict[str, Any]) -> None:
    """Replace ``path`` atomically with ``nb``, keeping the file's mode.

    Raises:
        OSError: the directory cannot be written.
    """
    write_text_atomic(path, dumps_notebook(nb))
