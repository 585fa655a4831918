"""Shared test plumbing: isolation, the fixture notebooks, running the CLI.

Every test gets its own ``XDG_RUNTIME_DIR``, ``JCLI_SIDECAR=off`` and
``JCLI_LIVE=off`` (every test server has jupyter-collaboration: runs and
edits go through its rooms only in the tests that ask, ``live_on``); the
CLI is run as the installed ``j-cli`` console script, exactly as users do.
Module- and session-scoped fixtures, which are set up before any test's
own isolation, run under a runtime dir of the whole run, also with the
sidecar off.

The tests live in folders that mirror the code (docs/development.md), none
of them a package: every folder is on ``sys.path``, so a module of one
(``helpers``, ``claude_world``, a test module another imports) is imported
by its bare name from any other, and no two modules may share a name
(:func:`module_folders` refuses the run when two do).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import FIXTURES, REPO, servers_under, sidecars_under, survivors_of_a_test

from jcli_sidecar.base.process_record import wait_for_exit

TESTS_ROOT = Path(__file__).resolve().parent
#: Folders under tests/ that hold no modules of ours: data, the pinned host installs, caches.
NOT_OURS = frozenset({"fixtures", "node_modules", "__pycache__"})


def module_folders(root: Path = TESTS_ROOT) -> list[Path]:
    """The folders of ``root`` that hold Python modules of ours, after checking that no two modules share a name.

    pytest imports a folder's modules by their bare names (no ``__init__.py``
    anywhere), so a second ``helpers.py`` would be shadowed by the first on
    ``sys.path`` without a word; a name used twice is a usage error instead.
    """
    seen: dict[str, Path] = {}
    clashes: list[str] = []
    folders: list[Path] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in NOT_OURS and not d.startswith("."))
        modules = sorted(name for name in files if name.endswith(".py") and name != "conftest.py")
        if modules:
            folders.append(Path(folder))
        for name in modules:
            path = Path(folder) / name
            if name in seen:
                clashes.append(f"{seen[name].relative_to(root)} and {path.relative_to(root)}")
            seen.setdefault(name, path)
    if clashes:
        raise pytest.UsageError(f"test modules share a name, so one would shadow the other on sys.path: {'; '.join(clashes)}")
    return folders


for _folder in module_folders():
    if str(_folder) not in sys.path:
        sys.path.insert(1, str(_folder))  # after the folder pytest put first


# -- the two tiers: `make quick` runs what needs no kernel, server, gateway or host ------------

#: Fixtures that bring a real Jupyter Server, a kernel, a gateway or an agent host. A test
#: that uses one, directly or through another fixture, is marked ``kernel`` at collection;
#: ``starts_jupyter`` is how a test (or a fixture) that starts a server itself says so.
KERNEL_FIXTURES = frozenset(
    {
        "jupyter",
        "kernel_session",
        "worker_kernel",
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


#: Hypothesis examples per property in the quick tier (the full tier keeps hypothesis's 100, or a test's own count).
QUICK_EXAMPLES = 20


def pytest_configure(config):
    import cpu_account  # opt-in: JCLI_CPU_ACCOUNT names the folder it writes to (tests/cpu_account.py)

    cpu_account.register(config)
    if config.getoption("--quick"):  # before collection, so a test's own count scales too (helpers.examples)
        from hypothesis import settings

        settings.register_profile("quick", max_examples=QUICK_EXAMPLES)
        settings.load_profile("quick")


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
    saved = {name: os.environ.get(name) for name in ("XDG_RUNTIME_DIR", "JCLI_SIDECAR", "JCLI_LIVE")}
    os.environ.update(XDG_RUNTIME_DIR=str(runtime), JCLI_SIDECAR="off", JCLI_LIVE="off")
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
    # mkdtemp (0700) rather than mktemp: no scan of the numbered dirs, no "current" link per test,
    # and a short name (a socket path under it must stay within 108 bytes)
    runtime = Path(tempfile.mkdtemp(prefix="rt-", dir=tmp_path_factory.getbasetemp()))
    test_dir = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JCLI_SIDECAR", "off")
    monkeypatch.setenv("JCLI_LIVE", "off")
    yield runtime
    survivors = survivors_of_a_test(runtime, test_dir)
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


@pytest.fixture
def live_on(monkeypatch, isolated_runtime):
    """Runs and cell edits of this test go through a notebook's collaboration room when its server has one."""
    monkeypatch.delenv("JCLI_LIVE")


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


class WorkerKernel:
    """One kernel session on the shared server per pytest worker, lent to one test module at a time.

    A kernel costs seconds of CPU to start; most modules only run code in
    theirs. Each lending starts from what a module's own new kernel would
    have: an idle, live kernel in its first directory (where pytest runs),
    with an empty namespace and no open figures; execution counts go on
    from where they were, so a test compares counts, never assumes one.
    A kernel given back busy, dead or failing the reset is killed and the
    next module gets a new one. A test that kills its kernel or leaves it
    busy on purpose makes a session of its own instead; one restarted
    leaves it idle, and the reset moves it back to its first directory.
    """

    #: Run silently (no history, no execution count) on every return.
    RESET = (
        "import os as _os, sys as _sys\n"
        "_os.chdir({cwd!r})\n"
        "if 'matplotlib.pyplot' in _sys.modules:\n"
        "    _sys.modules['matplotlib.pyplot'].close('all')\n"
        "get_ipython().run_line_magic('reset', '-f')\n"
    )

    def __init__(self, jupyter: dict) -> None:
        self.env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": jupyter["url"], "JCLI_JUPYTER_SERVER_TOKEN": jupyter["token"]}
        self.url, self.token = jupyter["url"], jupyter["token"]
        self.row: dict | None = None

    def lend(self) -> str:
        from helpers import run_cli

        if self.row is None:
            created = run_cli("-j", "session", "create", "-n", f"test-{os.urandom(3).hex()}", env=self.env)
            assert created.returncode == 0, created.stderr
            self.row = created.json()
        return self.row["name"]

    def give_back(self) -> None:
        """Reset the kernel for the next module, or kill it when it cannot be."""
        if self.row is not None and not self._reset(self.row):
            self.kill()

    def _reset(self, row: dict) -> bool:
        from jcli_sidecar.base import JcliError
        from jcli_sidecar.kernel import JupyterServer, KernelConnection

        server = JupyterServer(self.url, self.token)
        kernel = server.kernel(row["kernel_id"])
        if kernel is None or kernel.get("execution_state") != "idle":
            return False
        content = {
            "code": self.RESET.format(cwd=row["kernel_cwd"]),
            "silent": True,
            "store_history": False,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        try:
            with KernelConnection(server, row["kernel_id"]) as connection:
                reply = connection.request("execute_request", content, timeout=30)
        except JcliError:
            return False
        return reply.get("status") == "ok"

    def kill(self) -> None:
        from helpers import run_cli

        if self.row is not None:
            run_cli("session", "kill", self.row["id"], env=self.env)
            self.row = None


@pytest.fixture(scope="session")
def worker_kernel(jupyter):
    """This worker's :class:`WorkerKernel`; its kernel is killed at the end of the run."""
    kernels = WorkerKernel(jupyter)
    yield kernels
    kernels.kill()


@pytest.fixture(scope="module")
def kernel_session(worker_kernel):
    """The name of a kernel session on the shared server for one test module: the worker's, reset for it."""
    yield worker_kernel.lend()
    worker_kernel.give_back()


# -- real gateway servers (tests/gateways.py says what each is for) ------------------------

# Each is started once per pytest worker and shared by the three modules that use it
# (tests/remote/test_remote_*.py): every test makes, names and removes sessions of its own.


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
