"""The op tables of docs/protocol.md and docs/sidecar.md, written from the op declarations (``jcli_sidecar.sidecar.op_table``).

Each page holds its table between two marker lines; ``make docs``
(``python -m jcli.op_docs docs``) rewrites what lies between them, and
``--check`` only compares (a test does the same).

Example:
    >>> "| `notebook.read` |" in render_protocol_table()
    True
"""

from __future__ import annotations

import os
import sys

from jcli_sidecar.sidecar import OPS, WITHOUT_SIDECAR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["BEGIN", "END", "TABLES", "main", "render_protocol_table", "render_sidecar_table", "rewrite", "stale_pages"]

BEGIN = "<!-- op table: written by `make docs` from jcli_sidecar/sidecar/op_table.py; edit the declarations, not this table -->"
END = "<!-- end of op table -->"
#: The handshake belongs to the connection, not to an op; both tables show it first.
_HELLO_ARGS = "`{protocol, version, workspace}`"
_HELLO_RESULT = "`{protocol, version, pid, workspace}` (first frame only)"


def _how(op) -> str:
    if op.streaming:
        return "streams events, on a thread of its own"
    return "on a worker, within the request deadline" if op.blocking else "on the event loop"


def _without(op) -> str:
    said = WITHOUT_SIDECAR[op.without_sidecar]
    return said.replace("the op's code", f"`{op.refuse}`") if op.refuse else said


def render_protocol_table() -> str:
    """docs/protocol.md's table: each op's args and result."""
    rows = ["| op | args | result |", "|---|---|---|", f"| `hello` | {_HELLO_ARGS} | {_HELLO_RESULT} |"]
    rows += [f"| `{op.name}` | {op.args_text()} | {op.result} |" for op in OPS.values()]
    return "\n".join(rows) + "\n"


def render_sidecar_table() -> str:
    """docs/sidecar.md's table: each op's result, how the sidecar runs it, and what a client does without a sidecar."""
    rows = [
        "| op | result | runs | without a sidecar |",
        "|---|---|---|---|",
        f"| `hello` | the handshake, {_HELLO_RESULT} | on the event loop | – |",
    ]
    rows += [f"| `{op.name}` | {op.result} | {_how(op)} | {_without(op)} |" for op in OPS.values()]
    return "\n".join(rows) + "\n"


#: page (relative to the docs directory) -> its table.
TABLES: dict[str, Callable[[], str]] = {"protocol.md": render_protocol_table, "sidecar.md": render_sidecar_table}


def rewrite(text: str, table: str, page: str) -> str:
    """``text`` with the lines between :data:`BEGIN` and :data:`END` replaced by ``table``.

    Raises:
        ValueError: the page lacks a marker (or has them out of order).
    """
    start, end = text.find(BEGIN + "\n"), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{page} has no op table markers ({BEGIN!r} ... {END!r})")
    return text[: start + len(BEGIN) + 1] + "\n" + table + "\n" + text[end:]


def stale_pages(directory: str) -> list[str]:
    """The pages in ``directory`` whose op table differs from what the declarations write now."""
    stale = []
    for page, render in TABLES.items():
        with open(os.path.join(directory, page), encoding="utf-8") as f:
            text = f.read()
        if rewrite(text, render(), page) != text:
            stale.append(page)
    return stale


def main(argv: list[str] | None = None) -> int:
    """``python -m jcli.op_docs [--check] [DIR]``: rewrite (or only compare) the op tables of the pages in DIR (default docs)."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    directory = args[0] if args else "docs"
    if check:
        stale = stale_pages(directory)
        for page in stale:
            print(f"{os.path.join(directory, page)}: its op table is stale: run `make docs`", file=sys.stderr)
        return 1 if stale else 0
    for page, render in TABLES.items():
        path = os.path.join(directory, page)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = rewrite(text, render(), page)
        if new != text:
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                f.write(new)
            os.replace(tmp, path)
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
