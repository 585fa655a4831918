"""Stale cells: what a code cell's outputs were computed from, and whether that still holds.

The model (docs/notebook-runs.md, "Stale cells"):

- **Providers.** A code cell reads a name from the last code cell before it
  (in notebook order) that writes the name, and from every cell between
  that one and it that may change the name in place (``mutates``, see
  :mod:`~jcli_sidecar.read.cell_deps`; a method called on a name an import
  bound is no change) or whose names cannot be known (an *opaque* cell,
  which may write anything). A name no cell before writes has no provider
  (a builtin, or something made outside the notebook). An opaque cell reads
  from every code cell before it. Empty cells read and write nothing.
- **Run record.** When j-cli runs a cell (foreground or background), the
  cell's ``metadata.jcli_ran`` becomes ``{"src", "run", "deps"}``: a digest of
  the source that ran, a fresh run token, and for each provider (by cell id,
  ``#N`` for a cell without one) the provider's run token at that moment
  (None when it had none). A cell cut short (timeout, interrupt, kernel
  death) keeps no record.
- **Stale.** A code cell is stale when it never ran (or has no record: its
  outputs were not made by a j-cli run, or the record is unreadable), when
  its source differs from the one recorded, when a provider is stale, when
  a provider ran after it (its token differs from the one recorded), when a
  cell it reads from now was not a provider when it ran, or when a cell it
  read from is gone or provides nothing to it any more. Empty code cells
  are never stale. Staleness is transitive, in notebook order.

Everything here is static: no kernel is asked; the kernel's state (a
restart, code run with ``exec -c``) is not seen.
"""

from __future__ import annotations

import bisect
import hashlib
import secrets

from ..ipynb import join_text, metadata_tags
from ..pair import normalize_source
from .cell_deps import CellUses, cell_uses

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEPENDS_LIMIT",
    "RAN_KEY",
    "RunLedger",
    "SKIP_EXECUTION_TAG",
    "StaleInput",
    "cell_key",
    "dependency_graph",
    "read_record",
    "run_record",
    "skips_execution",
    "source_digest",
    "stale_states",
]

#: ``metadata[RAN_KEY]`` holds a cell's run record (beside ``metadata.jcli``, the running mark, which a finished cell loses).
RAN_KEY = "jcli_ran"
#: At most this many names of a provider are told in a reason.
_REASON_NAMES = 3
#: ``depends_on`` lists at most this many cells.
DEPENDS_LIMIT = 20

_BAD = object()


#: The cell tag that keeps a cell from running (nbclient's ``skip_cells_with_tag``): such a cell is never stale.
SKIP_EXECUTION_TAG = "skip-execution"


def skips_execution(metadata: Any) -> bool:
    """Whether a cell's metadata tags it ``skip-execution``: no run runs it, so it is left out of the analysis."""
    return SKIP_EXECUTION_TAG in metadata_tags(metadata)


def source_digest(source: str) -> str:
    """A short digest of a cell's source, as the pair sync compares sources (line ends and a final newline aside).

    Example:
        >>> source_digest("x = 1\\n") == source_digest("x = 1")
        True
    """
    return hashlib.sha256(normalize_source(source).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def cell_key(cell_id: Any, index: int) -> str:
    """How a run record names a cell: its id, else ``#index``."""
    return cell_id if isinstance(cell_id, str) and cell_id else f"#{index}"


def read_record(metadata: Any) -> Any:
    """A cell's run record from its metadata: the dict, None when there is none, ``_BAD`` when it is malformed."""
    if not isinstance(metadata, dict) or RAN_KEY not in metadata:
        return None
    rec = metadata[RAN_KEY]
    if not (isinstance(rec, dict) and isinstance(rec.get("src"), str) and isinstance(rec.get("run"), str)):
        return _BAD
    deps = rec.get("deps")
    if not isinstance(deps, dict) or not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in deps.items()):
        return _BAD
    return rec


class StaleInput:
    """One code cell as staleness sees it: its source, key, run record (from its metadata) and whether it shows a run."""

    __slots__ = ("source", "key", "record", "ran")

    def __init__(self, source: str, key: str, metadata: Any = None, ran: bool = False) -> None:
        self.source = source
        self.key = key
        self.record = read_record(metadata)
        self.ran = ran

    @property
    def token(self) -> str | None:
        return self.record["run"] if isinstance(self.record, dict) else None


def dependency_graph(uses: list[CellUses | None]) -> list[dict[int, tuple[str, ...]] | None]:
    """For each code cell (None: not a code cell), its providers: ``{cell index: names read from it}`` (see the module's model).

    Example:
        >>> graph = dependency_graph([cell_uses("x = 1"), None, cell_uses("y = x + 1"), cell_uses("exec(s)"), cell_uses("print(x, y)")])
        >>> graph[2], graph[3], graph[4]
        ({0: ('x',)}, {0: (), 2: ()}, {0: ('x',), 2: ('y',), 3: ('print', 'x', 'y')})
    """
    last: dict[str, int] = {}
    since: dict[str, list[int]] = {}
    by_import: dict[str, bool] = {}
    opaque: list[int] = []
    code: list[int] = []
    graph: list[dict[int, tuple[str, ...]] | None] = []
    for index, use in enumerate(uses):
        if use is None:
            graph.append(None)
            continue
        found: dict[int, list[str]] = {}
        if use.opaque is not None:
            found = {j: [] for j in code}
        else:
            for name in sorted(use.reads):
                writer = last.get(name)
                chosen = [] if writer is None else [writer]
                chosen.extend(since.get(name, ()))
                chosen.extend(opaque[bisect.bisect_right(opaque, -1 if writer is None else writer) :])
                for j in chosen:
                    names = found.setdefault(j, [])
                    if name not in names:
                        names.append(name)
        graph.append({j: tuple(names) for j, names in sorted(found.items())})
        if use.opaque is not None:
            opaque.append(index)
        else:
            for name in use.writes:
                last[name] = index
                since[name] = []
                by_import[name] = name in use.imported
            for name in use.mutates - use.writes:
                if not by_import.get(name, False):
                    since.setdefault(name, []).append(index)
        if use.opaque is not None or use.reads or use.writes or use.mutates:
            code.append(index)
    return graph


def _names(names: tuple[str, ...]) -> str:
    if not names:
        return "what it may use"
    shown = ", ".join(names[:_REASON_NAMES]) + (", …" if len(names) > _REASON_NAMES else "")
    return shown


def stale_states(cells: list[StaleInput | None]) -> list[dict[str, Any] | None]:
    """Each code cell's ``{stale, stale_reason, stale_cause, stale_cell, depends_on[, dependencies_unknown]}``; None for other cells.

    ``stale_cause`` is one of ``never_ran``, ``no_record``, ``source_changed``,
    ``dependency_stale``, ``dependency_ran``, ``dependency_changed``,
    ``dependency_gone`` (None when not stale); ``stale_cell`` the index of the
    cell the reason names; ``depends_on`` the cells it reads from (at most
    :data:`DEPENDS_LIMIT`); ``dependencies_unknown`` why an opaque cell's
    names cannot be known.

    Example:
        >>> cells = [StaleInput("x = 1", "a"), StaleInput("y = x", "b")]
        >>> [(s["stale"], s["stale_cause"]) for s in stale_states(cells)]
        [(True, 'never_ran'), (True, 'never_ran')]
    """
    uses = [cell_uses(cell.source) if cell is not None else None for cell in cells]
    graph = dependency_graph(uses)
    states: list[dict[str, Any] | None] = []
    for index, cell in enumerate(cells):
        use, providers = uses[index], graph[index]
        if cell is None or use is None or providers is None:
            states.append(None)
            continue
        state: dict[str, Any] = {"stale": False, "stale_reason": None, "stale_cause": None, "stale_cell": None}
        state["depends_on"] = list(providers)[:DEPENDS_LIMIT]
        if use.opaque is not None:
            state["dependencies_unknown"] = use.opaque
        if cell.source.strip():
            cause, reason, named = _why(index, cell, providers, cells, states)
            if cause is not None:
                if use.opaque is not None and cause.startswith("dependency"):
                    reason = f"its dependencies cannot be known ({use.opaque}), so it depends on every cell before it: {reason}"
                state.update(stale=True, stale_reason=reason, stale_cause=cause, stale_cell=named)
        states.append(state)
    return states


def _why(
    index: int, cell: StaleInput, providers: dict[int, tuple[str, ...]], cells: list[StaleInput | None], states: list[dict[str, Any] | None]
) -> tuple[str | None, str | None, int | None]:
    """``(cause, reason, cell named)`` of a stale cell, or ``(None, None, None)``."""
    record = cell.record
    if record is None:
        if cell.ran:
            return "no_record", "no run record: its outputs were not made by a j-cli run", None
        return "never_ran", "it never ran", None
    if record is _BAD:
        return "no_record", "its run record (metadata.jcli_ran) is unreadable", None
    if record["src"] != source_digest(cell.source):
        return "source_changed", "its source changed since its outputs were made", None
    deps: dict[str, str | None] = record["deps"]
    keys = set()
    for j, names in providers.items():
        provider = cells[j]
        state = states[j]
        assert provider is not None and state is not None
        keys.add(provider.key)
        what = _names(names)
        if state["stale"]:
            return "dependency_stale", f"it reads {what} from cell {j}, which is stale", j
        if provider.key not in deps:
            return "dependency_changed", f"it reads {what} from cell {j}, which it did not read from when it ran", j
        if deps[provider.key] != provider.token:
            return "dependency_ran", f"it reads {what} from cell {j}, which ran after it", j
    gone = sorted(set(deps) - keys)
    if gone:
        return "dependency_gone", f"a cell it read from when it ran ({gone[0]}) is gone or no longer provides what it reads", None
    return None, None, None


def run_record(source: str, deps: dict[str, str | None]) -> dict[str, Any]:
    """A new run record for a cell about to run ``source`` with these providers' tokens."""
    return {"src": source_digest(source), "run": secrets.token_hex(6), "deps": deps}


class RunLedger:
    """A notebook run's view of its cells' run records: which cells are stale, and the record each cell run gets.

    ``cells`` are the notebook's cells (dicts, as a run reads them). The
    providers are fixed at the start (the sources do not change during a
    run); tokens change as cells run (:meth:`ran`).
    """

    __slots__ = ("inputs", "graph")

    def __init__(self, cells: list[Any]) -> None:
        self.inputs: list[StaleInput | None] = []
        for index, cell in enumerate(cells):
            if not (isinstance(cell, dict) and cell.get("cell_type") == "code") or skips_execution(cell.get("metadata")):
                self.inputs.append(None)
                continue
            try:
                source = join_text(cell.get("source", ""), "source")
            except Exception:  # a source that is no text: the run itself refuses it
                source = ""
            ran = cell.get("execution_count") is not None or bool(cell.get("outputs"))
            self.inputs.append(StaleInput(source, cell_key(cell.get("id"), index), cell.get("metadata"), ran))
        self.graph = dependency_graph([cell_uses(c.source) if c is not None else None for c in self.inputs])

    def stale(self) -> list[int]:
        """The indexes of the stale code cells, in order."""
        return [i for i, state in enumerate(stale_states(self.inputs)) if state is not None and state["stale"]]

    def record_for(self, index: int) -> dict[str, Any] | None:
        """The run record cell ``index`` gets when it runs now (None: not a code cell)."""
        cell, providers = self.inputs[index], self.graph[index]
        if cell is None or providers is None:
            return None
        deps = {}
        for j in providers:
            provider = self.inputs[j]
            assert provider is not None
            deps[provider.key] = provider.token
        return run_record(cell.source, deps)

    def ran(self, index: int, record: dict[str, Any]) -> None:
        """Cell ``index`` ran to its end with ``record``: later cells read from this run."""
        cell = self.inputs[index]
        if cell is not None:
            cell.record = record
