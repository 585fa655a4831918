"""What imports what: no circles in the core, and nothing heavy on a read.

The graph is read from the installed ``jcli_sidecar`` sources with ``ast``:
every import counts, at module level, inside a function (the lazy ones) and
under ``TYPE_CHECKING``. The read rule is checked on the real ``j-cli``
process with ``-X importtime``, with the sidecar off, cold (the read starts
one) and warm (one answers).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import JCLI, run_cli, sidecars_under

import jcli_sidecar
from jcli_sidecar.locks import wait_for_lock
from jcli_sidecar.runtime import SidecarPaths

PACKAGE = Path(jcli_sidecar.__file__).parent
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """The ``jcli_sidecar`` modules that the file at ``path`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level <= 1, f"{path.name}: an import reaches above the package"
            module = node.module or ""
            if node.level == 1:
                module = f"jcli_sidecar.{module}" if module else "jcli_sidecar"
            targets = [(module, tuple(alias.name for alias in node.names))]
        else:
            continue
        for module, names in targets:
            parts = module.split(".")
            if parts[0] != "jcli_sidecar":
                continue
            if len(parts) > 1:
                found.add(parts[1])
            else:  # `from jcli_sidecar import x`: a submodule, or a name from __init__
                found.update(name if name in MODULES else "__init__" for name in names or ("__init__",))
    return found


def import_graph() -> dict[str, set[str]]:
    return {name: imported_modules(PACKAGE / f"{name}.py") - {name} for name in MODULES}


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path (first module repeated at the end), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = "open"
        stack.append(name)
        for nxt in sorted(graph[name]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[name] = "done"
        return None

    for name in MODULES:
        if name not in state and (cycle := visit(name)):
            return cycle
    return None


def test_the_graph_reader_sees_every_kind_of_import():
    graph = import_graph()
    assert "ops" in graph["server"]  # module level
    assert "daemon" in graph["__main__"]  # inside a function
    assert "runtime" in graph["client"]  # under TYPE_CHECKING only
    assert "__init__" in graph["server"]  # `from . import __version__`


def test_the_core_has_no_import_circles():
    assert find_cycle(import_graph()) is None


def test_find_cycle_reports_a_circle():
    graph = {**dict.fromkeys(MODULES, set()), "ops": {"server"}, "server": {"ops"}}
    assert find_cycle(graph) == ["ops", "server", "ops"]


def test_the_wire_client_and_the_spawner_stay_clear_of_the_server():
    """The client and the spawn primitives run in every client process; the server's asyncio may not come with them."""
    graph = import_graph()
    sidecar_side = {"server", "daemon", "ops", "cache"}
    assert not reachable(graph, "client") & (sidecar_side | {"spawn", "control"})
    assert not reachable(graph, "spawn") & (sidecar_side | {"client", "control"})
    assert not reachable(graph, "control") & sidecar_side
    lean = ("client", "spawn", "control", "pidfile")
    for name in lean:
        roots = {module.split(".")[0] for node in ast.walk(ast.parse((PACKAGE / f"{name}.py").read_text())) for module in _names(node)}
        assert "asyncio" not in roots, name


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


# -- what a read imports, in the real process ------------------------------------

HEAVY = {"asyncio", "click", "nbformat", "psutil", "watchfiles", "mcp"}
READ = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0"]


def read_with_importtime(workspace: Path) -> tuple[bytes, set[str]]:
    """Run the installed ``j-cli`` once under ``-X importtime``: its stdout and every module it imported.

    The flag is given to this interpreter (the one ``j-cli`` is installed
    for), not through the environment, so a sidecar the read starts does
    not inherit it.
    """
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", JCLI, *READ],
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    lines = [line for line in proc.stderr.decode().splitlines() if line.startswith("import time:")]
    assert lines, "no -X importtime output"
    modules = {line.rsplit("|", 1)[1].strip() for line in lines} - {"imported package"}  # minus the header
    return proc.stdout, modules


@pytest.mark.parametrize("mode", ["off", "cold", "warm"])
def test_a_read_imports_nothing_heavy_with_the_sidecar_off_cold_or_warm(mode, fixture_dir, isolated_runtime, request):
    """off: JCLI_SIDECAR=off. cold: the default (auto) with no sidecar running,
    so the read is in-process and starts one. warm: a sidecar answers."""
    paths = SidecarPaths(os.path.realpath(fixture_dir))
    expected = run_cli(*READ, cwd=fixture_dir).stdout  # in-process (JCLI_SIDECAR=off)
    if mode != "off":
        request.getfixturevalue("sidecar_on")  # JCLI_SIDECAR unset: auto
    if mode == "warm":
        started = run_cli("-j", "sidecar", "start", cwd=fixture_dir)
        assert started.returncode == 0, started.stderr
    try:
        stdout, modules = read_with_importtime(fixture_dir)
        assert stdout == expected
        assert not {name.split(".")[0] for name in modules} & HEAVY
        if mode == "warm":
            assert "jcli_sidecar.client" in modules and "jcli_sidecar.reader" not in modules  # the sidecar answered
        else:
            assert "jcli_sidecar.reader" in modules  # read in-process
        if mode == "cold":
            assert "jcli_sidecar.spawn" in modules
            assert wait_for_lock(paths.spawn_lock, 30)  # the sidecar it started listens (or died)
            assert run_cli("-j", "sidecar", "status", cwd=fixture_dir).json()["running"]
        if mode == "off":
            assert "jcli_sidecar.spawn" not in modules and not sidecars_under(isolated_runtime)
    finally:
        if mode != "off":
            stopped = run_cli("-j", "sidecar", "stop", cwd=fixture_dir)
            assert stopped.returncode == 0, stopped.stderr
    assert not sidecars_under(isolated_runtime)
