"""Read saved notebook outputs: the catalog of a cell, or one output.

Both functions are plain, synchronous and side-effect free: they read the
notebook (and, for a ``.py``, its pair) and write nothing anywhere. Which
cell is meant comes from :mod:`jcli_sidecar.cells`; the document from
:mod:`jcli_sidecar.envelope`.
"""

from __future__ import annotations

import os

from .cells import ResolvedCell, resolve_cell
from .envelope import DEFAULT_QUERY, OutputQuery, catalog_envelope, fit_response, output_envelope
from .errors import NotebookReadFailed, OutputNotFound, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .notebook import NotebookFile

    Loader = Callable[[str], NotebookFile]

__all__ = ["OutputQuery", "list_outputs", "read_output"]


def _cell_outputs(resolved: ResolvedCell) -> list[Any]:
    if resolved.cell["cell_type"] != "code":
        return []
    outputs = resolved.cell.get("outputs", [])
    if not isinstance(outputs, list):
        raise NotebookReadFailed(
            f"{resolved.notebook_path}: cell {resolved.cell_index} outputs is not a list",
            path=resolved.notebook_path,
        )
    return outputs


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
    return _catalog(resolve_cell(path, cell_index, load))


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
            (see :class:`~jcli_sidecar.envelope.OutputQuery`).
        load: how to open a notebook (see :func:`~jcli_sidecar.cells.resolve_cell`).

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
    resolved = resolve_cell(path, cell_index, load)
    if output_index is None:
        return fit_response(_catalog(resolved), query.max_response_bytes)
    outputs = _cell_outputs(resolved)
    if not isinstance(output_index, int) or isinstance(output_index, bool) or output_index < 0:
        raise UsageError(f"output index must be an integer >= 0, got {output_index!r}")
    if output_index >= len(outputs):
        kind = resolved.cell["cell_type"]
        what = f"a {kind} cell has no outputs" if kind != "code" else f"it has {len(outputs)}"
        raise OutputNotFound(
            f"cell {resolved.requested_cell_index} has no output {output_index} ({what})",
            output_count=len(outputs),
        )
    source = resolved.source()
    source["output_index"] = output_index
    memo = (resolved.notebook, (resolved.cell_index, output_index))
    return fit_response(output_envelope(outputs[output_index], output_index, source, query, memo), query.max_response_bytes)
