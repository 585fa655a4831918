"""Stale cells, statically: what a cell reads and writes, its providers, and staleness over generated notebooks.

The property tests build random notebooks of cells that read and write names
from a small pool (some of them opaque), then edit, delete, insert and run
cells as a notebook run does (:class:`RunLedger`, the run records in the cells'
metadata). An oracle computes, independently of j-cli's graph, what each cell's
output was made from (its source and, recursively, its providers' runs) and
what a fresh run would make; j-cli must call every cell stale whose output
differs from a fresh run's (never the other way round), exactly those cells
when no cell was run out of turn, and nothing once the stale cells have run.
"""

from __future__ import annotations

import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jcli_sidecar.read.cell_deps import cell_uses
from jcli_sidecar.read.staleness import RAN_KEY, RunLedger, StaleInput, dependency_graph, stale_states

# -- what a cell uses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("exec(code)", "exec()"),
        ("y = eval('x + 1')", "eval()"),
        ("globals()['x'] = 1", "globals()"),
        ("print(locals())", "locals()"),
        ("vars()['z'] = 2", "vars()"),
        ("from math import *", "star-imports"),
        ("%run other.py", "%run"),
        ("%time y = f(x)", "%time"),
        ("%%capture out\nprint(x)", "%%capture"),
        ("get_ipython().run_cell('x = 1')", "get_ipython()"),
        ("ip = get_ipython()\nip.user_ns['x'] = 1", "get_ipython()"),
        ("!echo {x}", "expands or binds names"),
        ("%%bash --out listing\nls", "expands or binds names"),
        ("def f(:\n    pass", "does not parse"),
    ],
)
def test_a_cell_whose_names_cannot_be_known_says_why(source, why):
    uses = cell_uses(source)
    assert uses.opaque is not None and why in uses.opaque


@pytest.mark.parametrize("source", ["%matplotlib inline\nimport numpy as np", "!pip list", "files = !ls", "%%bash\necho ${HOME}\n"])
def test_quiet_magics_and_shell_lines_keep_a_cell_known(source):
    assert cell_uses(source).opaque is None


def test_common_magics_are_read_without_importing_ipython():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from jcli_sidecar.read.cell_deps import cell_uses\n"
        "u = cell_uses('%matplotlib inline\\nfiles = !ls\\nif files:\\n    !echo hi\\nn = len(files)')\n"
        "assert u.opaque is None and u.writes == {'files', 'n'}, u\n"
        "assert cell_uses('%time f()').opaque == 'it runs the magic %time'\n"
        "print('IPython' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_reads_and_writes_follow_python_scopes():
    uses = cell_uses(
        "import pandas as pd\n"
        "total = 0\n"
        "for row in rows:\n"
        "    total += row\n"
        "squares = [i * i for i in data if i > limit]\n"
        "def scale(v, k=factor):\n"
        "    local = v * k\n"
        "    return local + offset\n"
        "class Model(Base):\n"
        "    size = width\n"
        "def setter():\n"
        "    global shared\n"
        "    shared = 1\n"
        "frame['col'] = total\n"
        "items.append(total)\n"
        "pd.set_option('x', 1)\n"
        "try:\n"
        "    pass\n"
        "except KeyError as err:\n"
        "    pass\n"
    )
    assert uses.opaque is None
    assert uses.reads == {"rows", "data", "limit", "factor", "offset", "Base", "width", "frame", "items", "KeyError"}
    assert uses.writes == {"pd", "total", "row", "squares", "scale", "Model", "setter", "shared", "err"}
    assert {"frame", "items", "pd"} <= uses.mutates
    assert uses.imported == {"pd"}


def test_a_name_bound_by_the_cell_before_its_use_is_not_a_read_but_one_bound_in_a_branch_is():
    assert "x" not in cell_uses("x = 1\nprint(x)").reads
    assert "x" in cell_uses("if c:\n    x = 1\nprint(x)").reads
    assert "x" in cell_uses("x = x + 1").reads


def test_providers_by_notebook_order_mutation_and_opaque_cells():
    sources = ["x = 1", "import numpy as np", "x.append(2)", "np.mean(x)", "y = x", "exec(s)", "print(y)", "x = 3", "z = x"]
    graph = dependency_graph([cell_uses(s) for s in sources])
    assert graph[2] == {0: ("x",)}
    assert graph[3] == {0: ("x",), 1: ("np",), 2: ("x",)}  # the mutator counts; np.mean is no change of np
    assert graph[4] == {0: ("x",), 2: ("x",)}
    assert graph[5] == {j: () for j in range(5)}  # opaque: every code cell before it
    assert graph[6] == {4: ("y",), 5: ("print", "y")}
    assert graph[8] == {7: ("x",)}  # the last writer; the opaque cell before it does not count


def test_the_reason_of_an_opaque_cell_names_why_and_the_cell():
    cells = [StaleInput("x = 1", "a"), StaleInput("exec(s)", "b")]
    states, metadata = _after_running(cells)
    assert states == [False, False]
    cells[0] = StaleInput("x = 2", "a", metadata[0])
    reason = stale_states(cells)[1]
    assert reason["stale"] and reason["stale_cause"] == "dependency_stale" and reason["stale_cell"] == 0
    assert reason["stale_reason"].startswith("its dependencies cannot be known (it calls exec())")


def test_a_malformed_run_record_is_stale_and_never_fails():
    for bad in (
        {RAN_KEY: "x"},
        {RAN_KEY: {"src": 1}},
        {RAN_KEY: {"src": "a", "run": "b", "deps": {"k": 3}}},
        {RAN_KEY: {"src": "a", "run": "b"}},
    ):
        state = stale_states([StaleInput("x = 1", "a", bad, ran=True)])[0]
        assert state["stale"] and state["stale_cause"] == "no_record"


def test_an_empty_cell_is_never_stale():
    assert stale_states([StaleInput("  \n", "a")])[0]["stale"] is False


# -- a notebook simulated as runs record it ---------------------------------------------------

NAMES = ("a", "b", "c", "d", "e")


class Sim:
    """Cells as a notebook holds them (dicts), run as a notebook run runs them, and the oracle's view of each run."""

    def __init__(self, specs):
        self.next_id = 0
        self.cells = []
        self.made = {}  # cell id -> what its output was made from (the oracle's)
        for spec in specs:
            self.cells.append(self._cell(*spec))

    def _cell(self, reads, writes, opaque, const):
        cell_id = f"c{self.next_id}"
        self.next_id += 1
        return {
            "cell_type": "code",
            "id": cell_id,
            "metadata": {},
            "source": _source(reads, writes, opaque, const),
            "spec": (reads, writes, opaque),
        }

    # the oracle: providers by scanning back, independently of dependency_graph
    def providers(self, i):
        reads, _writes, opaque = self.cells[i]["spec"]
        if opaque:
            return list(range(i))
        found = set()
        for name in (*reads, "g"):
            for j in range(i - 1, -1, -1):
                _r, w, o = self.cells[j]["spec"]
                if o:
                    found.add(j)
                    continue
                if name in w:
                    found.add(j)
                    break
        return sorted(found)

    def fresh(self):
        values = []
        for i, cell in enumerate(self.cells):
            values.append((cell["source"], frozenset((self.cells[j]["id"], values[j]) for j in self.providers(i))))
        return values

    def oracle_stale(self):
        fresh = self.fresh()
        return {i for i, cell in enumerate(self.cells) if self.made.get(cell["id"]) != fresh[i]}

    def stale(self):
        return {i for i, state in enumerate(stale_states(self.inputs())) if state["stale"]}

    def inputs(self):
        return [StaleInput(c["source"], c["id"], c["metadata"], bool(c["metadata"])) for c in self.cells]

    def run(self, chosen):
        ledger = RunLedger(self.cells)
        for i in chosen:
            record = ledger.record_for(i)
            ledger.ran(i, record)
            self.cells[i]["metadata"] = {RAN_KEY: record}
            cell_made = (
                self.cells[i]["source"],
                frozenset((self.cells[j]["id"], self.made.get(self.cells[j]["id"])) for j in self.providers(i)),
            )
            self.made[self.cells[i]["id"]] = cell_made

    def run_stale(self):
        chosen = [i for i in range(len(self.cells)) if i in self.stale()]
        self.run(chosen)
        return set(chosen)


def _source(reads, writes, opaque, const):
    lines = [f"g({', '.join(reads)})"]  # read first: a name the cell writes after is still read
    lines += [f"{name} = {const}" for name in writes]
    if opaque:
        lines.append("exec('')")
    return "\n".join(lines) + "\n"


def _after_running(cells):
    """Run every cell in order as a notebook run records it: ``(each cell's stale, each cell's metadata)``."""
    ledger = RunLedger([{"cell_type": "code", "id": c.key, "source": c.source, "metadata": {}} for c in cells])
    metadata = []
    for i, cell in enumerate(cells):
        record = ledger.record_for(i)
        ledger.ran(i, record)
        metadata.append({RAN_KEY: record})
        cell.record = record
    return [state["stale"] for state in stale_states(cells)], metadata


_names = st.lists(st.sampled_from(NAMES), unique=True, max_size=3)
_cell = st.tuples(_names, _names, st.integers(0, 9).map(lambda n: n == 0), st.integers(0, 3))
_op = st.one_of(
    st.tuples(st.just("edit"), st.integers(0, 30), _cell),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("insert"), st.integers(0, 30), _cell),
    st.tuples(st.just("rerun"), st.integers(0, 30)),
    st.tuples(
        st.just("stale"),
    ),
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_cell, min_size=1, max_size=10), st.lists(_op, max_size=8))
def test_stale_cells_on_generated_notebooks(specs, ops):
    sim = Sim(specs)
    assert sim.stale() == set(range(len(sim.cells)))  # nothing ran yet
    assert sim.run_stale() == set(range(len(sim.cells)))
    assert sim.stale() == set() == sim.oracle_stale()
    out_of_turn = False
    for op in ops:
        kind = op[0]
        if kind == "edit" and sim.cells:
            i = op[1] % len(sim.cells)
            reads, writes, opaque, const = op[2]
            sim.cells[i]["source"] = _source(reads, writes, opaque, const)
            sim.cells[i]["spec"] = (reads, writes, opaque)
        elif kind == "delete" and sim.cells:
            del sim.cells[op[1] % len(sim.cells)]
        elif kind == "insert":
            sim.cells.insert(op[1] % (len(sim.cells) + 1), sim._cell(*op[2]))
        elif kind == "rerun" and sim.cells:
            sim.run([op[1] % len(sim.cells)])
            out_of_turn = True
        stale, oracle = sim.stale(), sim.oracle_stale()
        assert oracle <= stale  # never fresh when a fresh run would make something else
        if not out_of_turn:
            assert stale == oracle  # and exactly those, when every run went in notebook order
        if kind == "stale":
            assert sim.run_stale() == stale
            assert sim.stale() == set() == sim.oracle_stale()
            out_of_turn = False
    before = sim.stale()
    assert sim.run_stale() == before
    assert sim.stale() == set() == sim.oracle_stale()


@given(st.lists(_cell, min_size=1, max_size=12))
def test_the_analysis_reads_what_a_generated_cell_says(specs):
    for reads, writes, opaque, const in specs:
        uses = cell_uses(_source(reads, writes, opaque, const))
        if opaque:
            assert uses.opaque == "it calls exec()"
        else:
            assert uses.reads == {*reads, "g"} and uses.writes == set(writes) and uses.opaque is None


def test_a_cell_tagged_skip_execution_is_never_stale_and_provides_no_names():
    """No run runs a ``skip-execution`` cell (nbclient's rule), so it never gets a record: it is left out, not stale for ever."""
    cells = [
        {"cell_type": "code", "id": "a", "source": "x = 1", "metadata": {}},
        {"cell_type": "code", "id": "b", "source": "x = 2", "metadata": {"tags": ["skip-execution"]}},
        {"cell_type": "code", "id": "c", "source": "print(x)", "metadata": {}},
    ]
    ledger = RunLedger(cells)
    assert ledger.stale() == [0, 2] and ledger.inputs[1] is None
    assert 0 in ledger.graph[2]  # x comes from cell 0: the skipped cell never binds it
    for index in ledger.stale():
        record = ledger.record_for(index)
        ledger.ran(index, record)
        cells[index]["metadata"] = {RAN_KEY: record}
    assert RunLedger(cells).stale() == []
