"""Read saved notebook outputs: the catalog of a cell, or one output.

Both functions are plain, synchronous and side-effect free: they read the
notebook (and, for a ``.py``, its pair) and write nothing anywhere. Which
cell is meant comes from :mod:`jcli_sidecar.read.cells`; the document from
:mod:`jcli_sidecar.read.envelope`.
"""

from __future__ import annotations

import os

from ..base import NotebookReadFailed, OutputNotFound, UsageError
from ..ipynb import stable_read
from .cells import ResolvedCell, resolve_cell
from .envelope import DEFAULT_QUERY, OutputQuery, catalog_envelope, fit_response, output_envelope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..ipynb import NotebookFile

    Loader = Callable[[str], NotebookFile]

__all__ = ["OutputQuery", "list_outputs", "read_output"]


def _not_a_list(resolved: ResolvedCell) -> NotebookReadFailed:
    return NotebookReadFailed(
        f"{resolved.notebook_path}: cell {resolved.cell_index} outputs is not a list",
        path=resolved.notebook_path,
    )


def _cell_outputs(resolved: ResolvedCell) -> list[Any]:
    if resolved.cell["cell_type"] != "code":
        return []
    assert resolved.notebook is not None
    outputs = resolved.notebook.outputs(resolved.cell_index)
    if not isinstance(outputs, list):
        raise _not_a_list(resolved)
    return outputs


def _output_count(resolved: ResolvedCell) -> int:
    if resolved.cell["cell_type"] != "code":
        return 0
    assert resolved.notebook is not None
    count = resolved.notebook.output_count(resolved.cell_index)
    if count is None:
        raise _not_a_list(resolved)
    return count


def list_outputs(path: str | os.PathLike[str], cell_index: int, *, load: Loader | None = None) -> dict[str, Any]:
    """The catalog of one cell's saved outputs, without payloads.

    A markdown or raw cell has an empty catalog that names its
    ``cell_type``; an empty code cell too. Malformed outputs are listed with
    their own ``error`` and keep their index.

    Returns:
        ``{schema_version, status, source, cell_type, output_count, outputs}``.

    Raises:
        FileNotFound, NotebookReadFailed, CellNotFound,
        CellMappingUnreliable, UsageError.

    Example:
        >>> cat = list_outputs("examples/demo.ipynb", 9)
        >>> [(o["output_type"], o["available_mime_types"]) for o in cat["outputs"]]
        [('display_data', ['image/jpeg', 'image/png', 'text/plain']), ('stream', ['text/plain'])]
    """
    return stable_read(lambda: _catalog(resolve_cell(path, cell_index, load)), path)


def _catalog(resolved: ResolvedCell) -> dict[str, Any]:
    return catalog_envelope(_cell_outputs(resolved), resolved.source(), resolved.cell["cell_type"])


def read_output(
    path: str | os.PathLike[str],
    cell_index: int,
    output_index: int | None = None,
    query: OutputQuery = DEFAULT_QUERY,
    *,
    load: Loader | None = None,
) -> dict[str, Any]:
    """Read one saved output as a schema-v1 envelope.

    Args:
        path: an ``.ipynb``, or a py:percent ``.py`` with a paired notebook.
        cell_index: 0-based physical cell index in ``path``.
        output_index: 0-based index in ``cell.outputs``; None gives the catalog.
        query: the MIME, text window, response cap and image view asked for
            (see :class:`~jcli_sidecar.read.envelope.OutputQuery`).
        load: how to open a notebook (see :func:`~jcli_sidecar.read.cells.resolve_cell`).

    Returns:
        ``{schema_version, status, source, output_type,
        available_mime_types, ...}`` and then, by output type:
        ``metadata`` and ``selected{mime_type, encoding, bytes, data, ...}``
        for display_data and execute_result; ``stream{name, encoding,
        bytes, data, ...}`` for a stream; ``error{ename, evalue,
        traceback}`` for an error. Text carries its window: ``offset``,
        ``returned_characters``, ``total_characters``, ``truncated`` and
        ``next_offset``.

    Raises:
        FileNotFound, NotebookReadFailed, CellNotFound,
        CellMappingUnreliable, OutputNotFound, MimeNotFound, InvalidWindow,
        OutputDataInvalid, OutputTooLarge, UsageError, and with a view
        ImageTooLarge, RenderFailed, RendererUnavailable.

    Example:
        >>> env = read_output("examples/demo.ipynb", 1, 1)
        >>> env["output_type"], env["stream"]["name"], env["stream"]["data"]
        ('stream', 'stderr', 'warned\\n')
    """
    return stable_read(lambda: _read_output(path, cell_index, output_index, query, load), path)


def _read_output(
    path: str | os.PathLike[str],
    cell_index: int,
    output_index: int | None,
    query: OutputQuery,
    load: Loader | None,
) -> dict[str, Any]:
    resolved = resolve_cell(path, cell_index, load)
    if output_index is None:
        return fit_response(_catalog(resolved), query)
    count = _output_count(resolved)
    if not isinstance(output_index, int) or isinstance(output_index, bool) or output_index < 0:
        raise UsageError(f"output index must be an integer >= 0, got {output_index!r}")
    if output_index >= count:
        kind = resolved.cell["cell_type"]
        what = f"a {kind} cell has no outputs" if kind != "code" else f"it has {count}"
        raise OutputNotFound(
            f"cell {resolved.requested_cell_index} has no output {output_index} ({what})",
            output_count=count,
        )
    source = resolved.source()
    source["output_index"] = output_index
    assert resolved.notebook is not None
    raw = resolved.notebook.output(resolved.cell_index, output_index)
    memo = (resolved.notebook, (resolved.cell_index, output_index))
    return fit_response(output_envelope(raw, output_index, source, query, memo), query)
