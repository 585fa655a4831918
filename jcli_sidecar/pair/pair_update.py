"""A pair's drift, seen and mended in memory: nothing here reads or writes a file.

Callers that hold a ``.py``'s cells and a notebook from somewhere other
than the files on disk (the git index, say) ask here whether the two are in
line and, if not, which cells differ, and get the notebook brought in line
by the one pair sync in memory (:func:`jcli_sidecar.pair.pairing.sync_cells`:
matched cells keep their outputs, edited or new ones have none, the
agreement recorded), exactly as a run's sync would write it.

"In line" means the same cells: the same types and the same sources
(normalised as the codec does), in the same order. Outputs, ids and
metadata do not count.
"""

from __future__ import annotations

from .pairguard import fingerprint, notebook_fingerprint
from .pairing import sync_cells
from .pairsync import plan_sync

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .percent import PercentCell

__all__ = ["describe_drift", "in_line", "synced_notebook"]


def in_line(py_cells: list[PercentCell], nb: dict[str, Any]) -> bool:
    """Whether ``nb`` holds exactly the ``.py``'s cells (types and sources, in order).

    Example:
        >>> from jcli_sidecar.ipynb.nbwrite import new_cell, new_notebook
        >>> from jcli_sidecar.pair.percent import parse_percent
        >>> cells = parse_percent("# %%\\nx = 1\\n")
        >>> in_line(cells, new_notebook([new_cell("code", "x = 1", "a")])), in_line(cells, new_notebook([]))
        (True, False)
    """
    return fingerprint([(pc.cell_type, pc.source) for pc in py_cells]) == notebook_fingerprint(nb)


def describe_drift(py_cells: list[PercentCell], nb: dict[str, Any]) -> dict[str, Any]:
    """Which cells differ, as the pair sync would match them.

    Returns:
        ``edited``: ``[py_index, notebook_index]`` pairs whose sources differ;
        ``only_in_py``: ``.py`` cells the notebook lacks; ``only_in_notebook``:
        notebook cells the ``.py`` lacks; ``reordered``: the matched cells
        stand in another order.
    """
    plan = plan_sync(py_cells, nb)
    edited = [[k, plan.match[k]] for k in sorted(plan.edited)]
    matched = [i for i in plan.match if i is not None]
    return {
        "edited": edited,
        "only_in_py": [k for k, i in enumerate(plan.match) if i is None],
        "only_in_notebook": list(plan.removed),
        "reordered": matched != sorted(matched),
    }


def synced_notebook(py_cells: list[PercentCell], nb: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, int]]:
    """``nb`` brought in line with the ``.py`` (the ``.py`` wins), and the sync's counts.

    Returns:
        ``(notebook, report)``: the notebook with the agreement recorded, and
        the counts of kept, edited, added and removed cells.
    """
    done = sync_cells(py_cells, nb)
    return done.notebook, done.report
