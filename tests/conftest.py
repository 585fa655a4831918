"""Shared test plumbing: isolation, the fixture notebooks, running the CLI.

Every test gets its own ``XDG_RUNTIME_DIR`` and ``JCLI_SIDECAR=off``; the
CLI is run as the installed ``j-cli`` console script, exactly as users do.
Module- and session-scoped fixtures, which are set up before any test's
own isolation, run under a runtime dir of the whole run, also with the
sidecar off.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES, REPO, servers_under, sidecars_for_workspaces_in, sidecars_under

from jcli_sidecar.base.process_record import wait_for_exit

# -- the two tiers: `make quick` runs what needs no kernel, server, gateway or host ------------

#: Fixtures that bring a real Jupyter Server, a kernel, a gateway or an agent host. A test
#: that uses one, directly or through another fixture, is marked ``kernel`` at collection;
#: ``starts_jupyter`` is how a test (or a fixture) that starts a server itself says so.
KERNEL_FIXTURES = frozenset(
    {
        "jupyter",
        "kernel_session",
        "exec_path",
        "host_bin",
        "dsh_node",
        "starts_jupyter",
        "gateway",
        "on_gateway",
        "enterprise_gateway",
        "enterprise_gateway_root",
        "enterprise_gateway_listing",
        "kernel_gateway",
        "kernel_gateway_listing",
        "jupyterhub",
    }
)

#: What an embedded Jupyter Server leaves in the runtime dir it started under, even once stopped.
SERVER_TRACE = "*.server.log"


def pytest_addoption(parser):
    parser.addoption("--quick", action="store_true", help="run only the fast tier: no kernel, server, gateway or host, nothing slow")


def pytest_collection_modifyitems(config, items):
    kernel = pytest.mark.kernel
    for item in items:
        if KERNEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(kernel)
    if config.getoption("--quick"):
        keep = [item for item in items if not (item.get_closest_marker("kernel") or item.get_closest_marker("slow"))]
        deselected = [item for item in items if item not in set(keep)]
        config.hook.pytest_deselected(items=deselected)
        items[:] = keep


@pytest.fixture(scope="session")
def starts_jupyter():
    """Marks its user as starting a real Jupyter Server (and kernels) itself: the full tier only."""


def _server_traces(*folders: Path | None) -> list[Path]:
    return [trace for folder in folders if folder is not None and folder.exists() for trace in folder.rglob(SERVER_TRACE)]


@pytest.fixture(scope="session", autouse=True)
def isolated_run(tmp_path_factory, request):
    """The whole run's own runtime dir and ``JCLI_SIDECAR=off``, for fixtures wider than one test.

    A module fixture that runs ``j-cli exec`` before its first test's
    isolation would otherwise start a sidecar in the user's runtime dir, for
    the directory pytest runs in. At the end, any sidecar or server left
    under this dir fails the run.
    """
    runtime = tmp_path_factory.mktemp("xdg-runtime-run")
    runtime.chmod(0o700)
    saved = {name: os.environ.get(name) for name in ("XDG_RUNTIME_DIR", "JCLI_SIDECAR")}
    os.environ.update(XDG_RUNTIME_DIR=str(runtime), JCLI_SIDECAR="off")
    try:
        yield runtime
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    survivors = sidecars_under(runtime) + servers_under(runtime)
    for proc in survivors:
        proc.kill()
    assert not survivors, f"sidecars or servers outlived the fixtures that started them: {[p.pid for p in survivors]}"
    if request.config.getoption("--quick"):  # fixtures wider than a test included
        traces = _server_traces(tmp_path_factory.getbasetemp())
        assert not traces, f"the quick tier started a Jupyter Server (a fixture should request `starts_jupyter`): {traces}"


@pytest.fixture(autouse=True)
def isolated_runtime(tmp_path_factory, monkeypatch, request):
    """A private runtime dir per test, and no sidecar unless a test asks.

    Teardown stops every sidecar started under this runtime dir, or for a
    workspace in this test's tmp_path (a host that drops the environment
    would start one elsewhere), and fails the test if any was still alive.
    """
    runtime = tmp_path_factory.mktemp("xdg-runtime")
    runtime.chmod(0o700)
    test_dir = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JCLI_SIDECAR", "off")
    yield runtime
    survivors = sidecars_under(runtime) + servers_under(runtime)
    if test_dir is not None:
        survivors += [p for p in sidecars_for_workspaces_in(test_dir) if p not in survivors]
    for proc in survivors:
        proc.kill()
    for proc in survivors:
        wait_for_exit(proc, 10)
    assert not survivors, f"sidecars or servers survived the test: {[p.pid for p in survivors]}"
    assert not (REPO / ".j-cli").exists(), "a test wrote runs into the repository"
    if not request.node.get_closest_marker("kernel"):
        traces = _server_traces(runtime, test_dir)
        assert not traces, f"this test started a Jupyter Server without saying so (request `starts_jupyter`): {traces}"


@pytest.fixture
def sidecar_on(monkeypatch, isolated_runtime):
    """Enable the sidecar for this test; stop (politely) whatever it started."""
    monkeypatch.delenv("JCLI_SIDECAR")
    yield isolated_runtime
    for proc in sidecars_under(isolated_runtime):
        proc.terminate()
        assert wait_for_exit(proc, 10), f"the sidecar {proc.pid} ignored SIGTERM"


def pytest_generate_tests(metafunc):
    """``exec_path``: both ways for a test marked ``transport``, in-process for every other.

    The in-process path and the sidecar compose an inline exec the same way
    (``jcli_sidecar.kernel.inline_run``); only what crosses the socket (events,
    signals, failures, arguments) needs the run through a sidecar too.
    """
    if "exec_path" in metafunc.fixturenames:
        paths = ["in-process", "sidecar"] if metafunc.definition.get_closest_marker("transport") else ["in-process"]
        metafunc.parametrize("exec_path", paths, indirect=True)


@pytest.fixture
def exec_path(request):
    """How a test's execs run: in-process, or through a sidecar that already serves the workspace.

    Call the value with the workspace the test runs ``j-cli`` in; in the
    sidecar case that starts the workspace's sidecar there (so the very first
    exec goes through it), and the sidecar is stopped after the test. Which
    tests get which: :func:`pytest_generate_tests`.
    """
    if request.param == "in-process":
        return lambda workspace: None
    request.getfixturevalue("sidecar_on")

    def start(workspace) -> None:
        from helpers import run_cli

        started = run_cli("-j", "sidecar", "start", cwd=workspace)
        assert started.returncode == 0, started.stderr

    return start


@pytest.fixture(scope="session")
def host_bin():
    """The pinned real agent hosts' ``node_modules/.bin`` (installed on first use).

    A failed install fails the tests that need a host: it is never a skip.
    """
    from hostbins import host_bin_dir

    return host_bin_dir()


@pytest.fixture(scope="session")
def opencode_hosts(host_bin, tmp_path_factory):
    """This worker's ``opencode serve`` processes, one per configuration, started on first use (tests/opencode_world.py)."""
    from opencode_world import OpenCodeHosts

    with OpenCodeHosts(host_bin, tmp_path_factory.mktemp("opencode")) as hosts:
        yield hosts


@pytest.fixture(scope="session")
def dsh_node():
    """The Node 22 pinned beside the DSH runtime (tests/hosts/dsh), which DSH's agent loop needs."""
    from hostbins import dsh_node

    return dsh_node()


@pytest.fixture
def fixture_dir(tmp_path) -> Path:
    """A private copy of tests/fixtures/protocol (tests may not touch the originals)."""
    target = tmp_path / "protocol"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture(scope="session")
def jupyter(tmp_path_factory):
    """One real Jupyter Server (with ipykernel) for the whole run, on loopback.

    Started through j-cli's own embedded-server code, in a runtime dir of its
    own; tests reach it as an explicit server (JCLI_JUPYTER_SERVER_URL/TOKEN).
    """
    from jcli.embedded import EmbeddedServer

    runtime = tmp_path_factory.mktemp("jupyter-runtime")
    runtime.chmod(0o700)
    root = tmp_path_factory.mktemp("jupyter-root")
    server = EmbeddedServer(os.path.realpath(root), str(runtime))
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # not the first test's own dir
    try:
        state = server.start()
    finally:
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved
    try:
        yield {"url": state["url"], "token": state["token"], "root": root}
    finally:
        server.stop()
        for proc in servers_under(runtime):  # a server that outlived its stop is a failure
            proc.kill()
            raise AssertionError(f"the test Jupyter Server {proc.pid} survived its stop")


@pytest.fixture
def use_jupyter(jupyter, monkeypatch):
    """Point j-cli at the shared server for this test."""
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", jupyter["url"])
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_TOKEN", jupyter["token"])
    return jupyter


@pytest.fixture(scope="module")
def kernel_session(jupyter):
    """A kernel session on the shared server for one test module; killed afterwards."""
    from helpers import run_cli

    env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": jupyter["url"], "JCLI_JUPYTER_SERVER_TOKEN": jupyter["token"]}
    name = f"test-{os.urandom(3).hex()}"
    created = run_cli("session", "create", "-n", name, env=env)
    assert created.returncode == 0, created.stderr
    yield name
    run_cli("session", "kill", name, env=env)


# -- real gateway servers (tests/gateways.py says what each is for) ------------------------

# Each is started once per pytest worker and shared by the three modules that use it
# (tests/test_remote_*.py): every test makes, names and removes sessions of its own.


def _gateway(kind: str, *, as_nobody: bool, listing: bool):
    from gateways import RunningGateway

    gateway = RunningGateway(kind, as_nobody=as_nobody, listing=listing)
    info = gateway.start()
    try:
        yield info
    finally:
        gateway.stop()


@pytest.fixture(scope="session")
def enterprise_gateway():
    """Enterprise Gateway, default settings, run as nobody (so it starts kernels)."""
    yield from _gateway("eg", as_nobody=True, listing=False)


@pytest.fixture(scope="session")
def enterprise_gateway_root():
    """Enterprise Gateway, default settings, run as root (so it refuses to start kernels)."""
    yield from _gateway("eg", as_nobody=False, listing=False)


@pytest.fixture(scope="session")
def enterprise_gateway_listing():
    """Enterprise Gateway run as nobody, with kernel and session listing on."""
    yield from _gateway("eg", as_nobody=True, listing=True)


@pytest.fixture(scope="session")
def kernel_gateway():
    """Kernel Gateway, default settings (no listing)."""
    yield from _gateway("kg", as_nobody=False, listing=False)


@pytest.fixture(scope="session")
def kernel_gateway_listing():
    """Kernel Gateway with kernel and session listing on."""
    yield from _gateway("kg", as_nobody=False, listing=True)


# -- a real JupyterHub (tests/hubs.py says what it is) -----------------------------------


@pytest.fixture(scope="module")
def jupyterhub(tmp_path_factory):
    """A real JupyterHub with its proxy, user alice and named servers allowed; no server runs yet."""
    from hubs import RunningHub

    hub = RunningHub(tmp_path_factory.mktemp("hub")).start()
    try:
        yield hub
    finally:
        hub.stop()
