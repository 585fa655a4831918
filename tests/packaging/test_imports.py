"""What imports what: subpackages in layers, faces for the client, no circles, and nothing heavy on a read.

The graph is read from the installed ``jcli_sidecar`` sources with ``ast``:
every import counts, at module level, inside a function (the lazy ones) and
under ``TYPE_CHECKING``. A module is named by its place in the core
(``sidecar.server``), a subpackage's face by the subpackage (``read``). The
read rule is checked on the real ``j-cli`` process with ``-X importtime``,
with the sidecar off, cold (the read starts one) and warm (one answers).
"""

from __future__ import annotations

import ast
import functools
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import JCLI, run_cli, sidecars_under

import jcli
import jcli_sidecar
from jcli.face_stubs import face_stub, face_table, stale_stubs
from jcli_sidecar.base.locks import wait_for_lock
from jcli_sidecar.base.runtime import SidecarPaths

PACKAGE = Path(jcli_sidecar.__file__).parent
CLIENT = Path(jcli.__file__).parent

#: The subpackages from the bottom up: each may import only those before it (and itself).
LAYERS = ["base", "ipynb", "pair", "read", "runs", "kernel", "room", "guards", "sidecar"]
TOP = ["__init__", "__main__"]


def core_files() -> dict[str, Path]:
    """Every source file of the core by name: ``__init__``, ``__main__``, each face (``read``) and module (``read.reader``)."""
    files = {name: PACKAGE / f"{name}.py" for name in TOP}
    for layer in LAYERS:
        files[layer] = PACKAGE / layer / "__init__.py"
        for path in sorted((PACKAGE / layer).glob("*.py")):
            if path.stem != "__init__":
                files[f"{layer}.{path.stem}"] = path
    return files


FILES = core_files()


@functools.cache
def face_modules(layer: str) -> dict[str, str]:
    """Each name the face of ``layer`` exports, to the module it comes from (the face's one table)."""
    table = face_table(FILES[layer].read_text(encoding="utf-8"))
    return {name: module for module, names in table.items() for name in names}


def _package_of(name: str) -> list[str]:
    """The package a file's relative imports start from, as dotted parts."""
    if name in TOP:
        return ["jcli_sidecar"]
    return ["jcli_sidecar", name.split(".")[0]]


def _key(dotted: str, imported: tuple[str, ...]) -> set[str]:
    """The names of :data:`FILES` that ``from dotted import imported`` (or ``import dotted``) reaches."""
    parts = dotted.split(".")
    if parts[0] != "jcli_sidecar":
        return set()
    rest = ".".join(parts[1:])
    if not rest:  # `from jcli_sidecar import x`: a subpackage, or a name of the top __init__
        return {name if name in FILES else "__init__" for name in imported or ("__init__",)}
    if rest in FILES and rest in LAYERS:  # a face: the names may be its modules, or names its modules define
        table = face_modules(rest)
        found = {f"{rest}.{name}" for name in imported if f"{rest}.{name}" in FILES}
        found |= {f"{rest}.{table[name]}" for name in imported if name in table}
        found.add(rest)  # the face itself runs first
        return found
    assert rest in FILES, f"an import of {dotted}, which the core does not have"
    return {rest}


@functools.cache  # the sources do not change during a run; the rules below read each file many times
def import_statements(name: str, path: Path | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """Every import in the file ``name``, anywhere in it: (the dotted module, the names taken from it; none for ``import``)."""
    path = path or FILES[name]
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(name)
                assert node.level <= len(base), f"{name}: an import reaches above the package"
                parts = base[: len(base) - node.level + 1] + ([node.module] if node.module else [])
                dotted = ".".join(parts)
            else:
                dotted = node.module or ""
            found.append((dotted, tuple(alias.name for alias in node.names)))
    return found


def imported_by(name: str, path: Path | None = None) -> set[str]:
    """The names of :data:`FILES` that the file ``name`` imports, anywhere in it (a name taken from a face: its module too)."""
    found: set[str] = set()
    for dotted, names in import_statements(name, path):
        found |= _key(dotted, names)
    return found - {name}


def import_graph() -> dict[str, set[str]]:
    return {name: imported_by(name) for name in FILES}


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

    for name in graph:
        if name not in state and (cycle := visit(name)):
            return cycle
    return None


def test_the_graph_reader_sees_every_kind_of_import():
    graph = import_graph()
    assert "sidecar.ops" in graph["sidecar.server"]  # module level, same subpackage
    assert "base.errors" in graph["sidecar.server"]  # a lower subpackage
    assert "sidecar.daemon" in graph["__main__"]  # inside a function
    assert "base.runtime" in graph["sidecar.client"]  # under TYPE_CHECKING only
    assert "__init__" in graph["sidecar.server"]  # `from .. import __version__`
    assert "read.mime" in graph["read.envelope"]  # `from . import mime as mimes`
    assert "base.face" in graph["read"]  # a face


def test_the_core_has_no_import_circles():
    assert find_cycle(import_graph()) is None


def test_find_cycle_reports_a_circle():
    graph = {**dict.fromkeys(FILES, set()), "sidecar.ops": {"sidecar.server"}, "sidecar.server": {"sidecar.ops"}}
    assert find_cycle(graph) == ["sidecar.ops", "sidecar.server", "sidecar.ops"]


def test_every_core_module_lives_in_a_subpackage():
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == TOP
    assert sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS)


def _layer(name: str) -> int:
    return LAYERS.index(name.split(".")[0])


def test_each_subpackage_imports_only_those_below_it():
    """The tree shows the concerns: base, the notebook format, pairs, reads, runs, kernels, guards, the sidecar."""
    upward = [
        f"{name} -> {target}"
        for name, targets in import_graph().items()
        if name not in TOP
        for target in targets
        if target != "__init__" and _layer(target) > _layer(name)
    ]
    assert upward == []


def test_the_layer_rule_catches_an_upward_import(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("from ..sidecar.server import SidecarServer\nfrom .mime import AUTO_ORDER\n")
    found = imported_by("read.probe", path)
    assert found == {"sidecar.server", "read.mime"}
    assert [t for t in found if _layer(t) > _layer("read.probe")] == ["sidecar.server"]


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _public(path: Path) -> set[str]:
    """The names a module lists in ``__all__`` and defines itself (re-exports belong to their own module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (listed,) = [n.value for n in tree.body if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)]
    return {e.value for e in listed.elts} & _defined(tree)


def _layer_of(name: str) -> str | None:
    """The subpackage a file of :data:`FILES` belongs to (a face to its own), None for the top modules."""
    return None if name in TOP else name.split(".")[0]


def faces_reached(name: str, path: Path | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """The imports of another subpackage (its layer, the names taken) in the file ``name``; a module named through a face counts as a module."""
    found = []
    for dotted, names in import_statements(name, path):
        parts = dotted.split(".")
        if parts[0] == "jcli_sidecar" and len(parts) > 1 and parts[1] in LAYERS and parts[1] != _layer_of(name):
            found.append((".".join(parts[1:]), names))
    return found


def _is_module(layer: str, name: str) -> bool:
    """Whether ``name`` is a module of ``layer``: a source file, or a compiled one (``ipynb._nbwalk``)."""
    return f"{layer}.{name}" in FILES or any((PACKAGE / layer).glob(f"{name}.*.so"))


def bypassing_imports(name: str, path: Path | None = None) -> list[str]:
    """The imports in the file ``name`` that reach past a face: into another subpackage's module, or a module's own face."""
    wrong = []
    for dotted, names in faces_reached(name, path):
        modules = [n for n in names if "." not in dotted and _is_module(dotted, n)]
        if "." in dotted or modules:
            wrong.append(f"{name}: {dotted} {modules or list(names)}")
    layer = _layer_of(name)
    if layer is not None and name != layer:  # a module of a subpackage: its siblings directly, never its own face
        for dotted, names in import_statements(name, path):
            if dotted == f"jcli_sidecar.{layer}" and not all(_is_module(layer, n) for n in names):
                wrong.append(f"{name}: its own face, for {list(names)}")
    return wrong


def test_every_import_of_another_subpackage_goes_through_its_face():
    """A subpackage's modules are its own: the other concerns (and the top modules) name only its face."""
    assert sum(len(faces_reached(name)) for name in FILES) > 200  # the reader sees them
    assert [wrong for name in FILES for wrong in bypassing_imports(name)] == []


def test_the_face_rule_catches_a_bypass(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(
        "from ..base.errors import JcliError\n"
        "from ..base import errors, UsageError\n"
        "from ..base import JcliError\n"
        "from . import mime\n"
        "from . import read_output\n"
    )
    assert bypassing_imports("read.probe", path) == [
        "read.probe: base.errors ['JcliError']",
        "read.probe: base ['errors']",
        "read.probe: its own face, for ['read_output']",
    ]


def names_used_from_outside() -> dict[str, set[str]]:
    """Each subpackage's names that the other concerns take from its face: the other subpackages, the top modules, the clients."""
    used: dict[str, set[str]] = {layer: set() for layer in LAYERS}
    for name in FILES:
        for dotted, names in faces_reached(name):
            if dotted in used:  # a face (an import of a module is the bypass test's)
                used[dotted] |= {n for n in names if not _is_module(dotted, n)}
    for _file, module, names in client_imports():
        layer = module.removeprefix("jcli_sidecar.")
        if layer in used:
            used[layer] |= set(names)
    for layer, name in op_cores():
        if layer in used:
            used[layer].add(name)
    return used


def op_cores() -> list[tuple[str, str]]:
    """The core functions the op declarations name in another subpackage: (what they name it through, the name there)."""
    from jcli_sidecar.sidecar import op_table

    found = []
    for op in op_table.OPS.values():
        if op.core and not op.core.startswith("jcli_sidecar.sidecar."):
            module, _, name = op.core.partition(":")
            found.append((module.removeprefix("jcli_sidecar."), name.split(".")[0]))
    return found


def test_an_op_names_another_subpackages_core_function_through_its_face():
    """An op's core function is imported by name when it runs (in the sidecar, or in a client in-process): an import like any other."""
    cores = op_cores()
    assert ("read", "handle_read") in cores
    assert [layer for layer, _name in cores if layer not in LAYERS] == []


@pytest.mark.parametrize("layer", LAYERS)
def test_a_face_exports_exactly_the_names_other_concerns_use(layer):
    """A face is a boundary: what the rest of j-cli uses, each name a public one of the module its table names."""
    face = importlib.import_module(f"jcli_sidecar.{layer}")
    assert set(face.__all__) == names_used_from_outside()[layer]
    modules = {name.split(".")[1] for name in FILES if name.startswith(f"{layer}.")}
    assert not set(face.__all__) & modules, "a face name that is also a module name is shadowed once the module is imported"
    for name, module in face_modules(layer).items():
        assert name in _public(FILES[f"{layer}.{module}"]), f"{layer}.{name} is no public name of {layer}.{module}"
    for name in face.__all__:
        value = getattr(face, name)
        owner = getattr(value, "__module__", None)
        if isinstance(value, type) or callable(value):
            assert owner and owner.startswith(f"jcli_sidecar.{layer}."), f"{layer}.{name} comes from {owner}"
    with pytest.raises(AttributeError):
        face.no_such_name  # noqa: B018


#: The core's sources in this checkout, where the faces' stubs live (they are the type checker's, not shipped).
SOURCE_CORE = Path(__file__).resolve().parents[2] / "jcli_sidecar"


def test_each_face_has_its_stub_written_from_its_table():
    """mypy types a face's names from ``__init__.pyi``, which ``make docs`` writes from the face's one table."""
    assert stale_stubs(SOURCE_CORE) == [], "run `make docs` to rewrite the faces' stubs"
    for layer in LAYERS:
        face = importlib.import_module(f"jcli_sidecar.{layer}")
        stub = face_stub((SOURCE_CORE / layer / "__init__.py").read_text(encoding="utf-8"))
        assert {line.rsplit(" as ", 1)[1] for line in stub.splitlines() if line.startswith("from ")} == set(face.__all__)


def test_a_face_imports_no_module_until_a_name_is_asked_for():
    script = (
        "import sys, jcli_sidecar.kernel as k\n"
        "before = sorted(m for m in sys.modules if m.startswith('jcli_sidecar.kernel.'))\n"
        "k.redact_url\n"
        "after = sorted(m for m in sys.modules if m.startswith('jcli_sidecar.kernel.'))\n"
        "print(before, after)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] ['jcli_sidecar.kernel.urls']"


@functools.cache
def client_imports() -> list[tuple[str, str, tuple[str, ...]]]:
    """Every import of the core in ``client/jcli``: (file, module, names)."""
    found = []
    for path in sorted(CLIENT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [(path.name, a.name, ()) for a in node.names if a.name.split(".")[0] == "jcli_sidecar"]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "jcli_sidecar":
                found.append((path.name, node.module, tuple(a.name for a in node.names)))
    return found


def test_the_client_imports_only_the_faces_of_subpackages():
    imports = client_imports()
    assert len(imports) > 50  # the reader sees them
    wrong = []
    for file, module, names in imports:
        if module == "jcli_sidecar":
            if set(names) - {"__version__"}:
                wrong.append(f"{file}: from jcli_sidecar import {names}")
            continue
        layer = module.removeprefix("jcli_sidecar.")
        if layer not in LAYERS:
            wrong.append(f"{file}: {module} is not a face")
            continue
        face = importlib.import_module(module)
        wrong += [f"{file}: {module} has no public {name}" for name in names if name not in face.__all__]
    assert wrong == []


def test_the_wire_client_and_the_spawner_stay_clear_of_the_server():
    """The client and the spawn primitives run in every client process; the server's asyncio may not come with them."""
    graph = import_graph()
    sidecar_side = {"sidecar.server", "sidecar.daemon", "sidecar.ops", "sidecar.cache"}
    assert not reachable(graph, "sidecar.client") & (sidecar_side | {"sidecar.spawn", "sidecar.control"})
    assert not reachable(graph, "sidecar.spawn") & (sidecar_side | {"sidecar.client", "sidecar.control"})
    assert not reachable(graph, "sidecar.control") & sidecar_side
    lean = ("sidecar.client", "sidecar.spawn", "sidecar.control", "sidecar.pidfile")
    for name in lean:
        roots = {module.split(".")[0] for node in ast.walk(ast.parse(FILES[name].read_text())) for module in _names(node)}
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
    proc, modules = _importtime(READ, workspace)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout, modules


def _importtime(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``j-cli ARGS`` under ``-X importtime``: the finished process and every module it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", JCLI, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=60
    )
    lines = [line for line in proc.stderr.decode().splitlines() if line.startswith("import time:")]
    assert lines, "no -X importtime output"
    return proc, {line.rsplit("|", 1)[1].strip() for line in lines} - {"imported package"}  # minus the header


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
            assert "jcli_sidecar.sidecar.client" in modules and "jcli_sidecar.read.reader" not in modules  # the sidecar answered
        else:
            assert "jcli_sidecar.read.reader" in modules  # read in-process
        if mode == "cold":
            assert "jcli_sidecar.sidecar.spawn" in modules
            assert wait_for_lock(paths.spawn_lock, 30)  # the sidecar it started listens (or died)
            assert run_cli("-j", "sidecar", "status", cwd=fixture_dir).json()["running"]
        if mode == "off":
            assert "jcli_sidecar.sidecar.spawn" not in modules and not sidecars_under(isolated_runtime)
    finally:
        if mode != "off":
            stopped = run_cli("-j", "sidecar", "stop", cwd=fixture_dir)
            assert stopped.returncode == 0, stopped.stderr
    assert not sidecars_under(isolated_runtime)


def test_the_architecture_doc_names_every_core_module_in_its_subpackage():
    """docs/architecture.md lists each subpackage's modules; a module added, moved or removed must show there."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = doc[doc.index("jcli_sidecar/        the core") :]
    block = block[: block.index("```")]
    listed: dict[str, set[str]] = {}
    section = None
    for line in block.splitlines():
        if heading := re.match(r"  (\w+)/ ", line):
            section = heading.group(1)
            listed[section] = set()
        if section is not None:
            listed[section] |= set(re.findall(r"\b(\w+)\.py\b", line))
    actual = {layer: {name.split(".")[1] for name in FILES if name.startswith(f"{layer}.")} for layer in LAYERS}
    assert list(listed) == LAYERS  # in the layer order
    assert listed == actual


#: The modules that hold top-level click commands, each loaded only by the command that needs it (jcli.lazy_group).
COMMAND_MODULES = {
    "jcli.kernel_cmd",
    "jcli.exec_cmd",
    "jcli.output_cmd",
    "jcli.convert_cmd",
    "jcli.sidecar_cmd",
    "jcli.vars_cmd",
    "jcli.job_cmd",
}


def _imported_by(args: list[str], cwd: Path) -> set[str]:
    proc, modules = _importtime(args, cwd)
    assert "Traceback" not in proc.stderr.decode(), proc.stderr.decode()[-2000:]
    return modules


@pytest.mark.parametrize(
    ("args", "needs"),
    [
        (["-j", "setup", "git"], set()),
        (["-j", "convert", "nosuch.py"], {"jcli.convert_cmd"}),
        (["-j", "session", "list", "-h"], {"jcli.kernel_cmd"}),
        (["-j", "exec", "-h"], {"jcli.exec_cmd"}),
        (["-j", "job", "list"], {"jcli.job_cmd"}),
    ],
    ids=["setup", "convert", "session", "exec", "job"],
)
def test_a_click_command_imports_its_own_module_and_no_other_commands(args, needs, tmp_path):
    modules = _imported_by(args, tmp_path)
    assert "click" in modules  # the click path, not the fast one
    assert modules & COMMAND_MODULES == needs
    assert not {name.split(".")[0] for name in modules} & MCP_SDK  # only mcp serve pays for the SDK


#: The MCP SDK and what it brings: about 1.4 s of imports, paid by ``mcp serve`` alone.
MCP_SDK = {"mcp", "mcp_types", "anyio", "pydantic", "starlette"}


@pytest.mark.parametrize(
    "args",
    [
        ["-j", "notebook", "grep", "stream", "."],
        ["mcp", "serve", "--help"],
    ],
    ids=["grep", "mcp-help"],
)
def test_only_mcp_serve_imports_the_mcp_sdk(args, fixture_dir):
    """The click commands' own import test holds them (setup, job, exec, ...) to no SDK as well."""
    modules = _imported_by(args, fixture_dir)
    assert modules  # the listing is real
    assert not {name.split(".")[0] for name in modules} & MCP_SDK


def test_mcp_serve_imports_the_mcp_sdk(tmp_path):
    modules = _imported_by(["mcp", "serve", "--root", str(tmp_path)], tmp_path)  # stdin is empty: it serves, then ends
    assert {"mcp.server.lowlevel", "mcp.server.stdio", "jcli.mcp_server"} <= modules
    assert "jcli.cli" not in modules  # a host starts it at every session: the fast path (the SDK brings click itself)


@pytest.mark.parametrize(
    ("args", "fast"),
    [
        (["-j", "setup", "codex", "--project"], True),
        (["setup", "claude", "--user", "--remove"], True),
        (["-j", "setup", "codex", "--project", "--only", "tool"], False),
        (["-j", "setup", "codex", "--project", "--project"], False),
        (["mcp", "serve", "--root", "notebook.ipynb"], False),
    ],
    ids=["setup", "setup-remove", "setup-only", "setup-scope-twice", "mcp-root-a-file"],
)
def test_setup_host_takes_the_fast_path_and_what_it_does_not_parse_goes_to_click(args, fast, tmp_path):
    (tmp_path / "notebook.ipynb").write_text("{}")
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", JCLI, *args],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    modules = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")}
    assert "Traceback" not in proc.stderr.decode()
    assert ("jcli.cli" not in modules) is fast
    if fast and args[:2] != ["mcp", "serve"]:
        assert "click" not in modules


@pytest.mark.parametrize("json_flag", [["-j"], []], ids=["json", "human"])
def test_setup_prints_the_same_on_the_fast_path_and_through_click(json_flag, tmp_path):
    """The hidden ``--force`` (upstream's, a no-op) sends the same setup through click."""
    results = []
    for way, extra in (("fast", []), ("click", ["--force"])):
        home = tmp_path / way / "home"
        project = tmp_path / way / "project"
        home.mkdir(parents=True)
        project.mkdir()
        env = {**os.environ, "HOME": str(home)}
        runs = [run_cli(*json_flag, "setup", "codex", "--user", *extra, cwd=project, env=env) for _ in range(2)]
        runs.append(run_cli(*json_flag, "setup", "codex", "--user", "--remove", *extra, cwd=project, env=env))
        here = str(tmp_path / way).encode()
        results.append([(r.returncode, r.stdout.replace(here, b"ROOT"), r.stderr.replace(here, b"ROOT")) for r in runs])
    assert results[0] == results[1]
    assert [code for code, _, _ in results[0]] == [0, 0, 0]


def test_help_still_lists_every_command_a_lazy_group_holds():
    listed = run_cli("--help").stdout.decode()
    for name in (
        "convert",
        "exec",
        "healthcheck",
        "job",
        "kernel",
        "kernelspec",
        "mcp",
        "notebook",
        "output",
        "server",
        "session",
        "setup",
        "sidecar",
        "vars",
    ):
        assert f"\n  {name} " in listed, name
