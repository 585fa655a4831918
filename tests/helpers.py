"""Helpers for the tests: fixture paths, cases.json, running the installed CLI."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from places import REPO as REPO  # re-exported: the tests import the paths from here
from places import TESTS as TESTS

FIXTURES = TESTS / "fixtures" / "protocol"
BIN = Path(sys.executable).parent
JCLI = str(BIN / "j-cli")
#: The environment pytest started with, before any test changed it: the warm parent's (tests/warm_cli.py).
_START_ENV = dict(os.environ)


def examples(full: int) -> int:
    """A property test's example count: ``full`` in the full tier, scaled like the loaded profile's default (the quick tier's: conftest.QUICK_EXAMPLES of 100)."""
    from hypothesis import settings

    return max(10, full * settings.default.max_examples // 100)


def _svg_extra_missing() -> bool:
    from importlib.util import find_spec

    try:
        return find_spec("pyvips") is None
    except (ImportError, ValueError):
        return True


#: For a test that renders SVG: it needs the ``[svg]`` extra, which ``make test`` installs; without it the
#: test is reported as skipped with this reason (the missing-extra behaviour has its own test).
requires_svg_extra = pytest.mark.skipif(
    _svg_extra_missing(), reason="renders SVG: needs the [svg] extra (pip install '.[svg]'), which is not installed"
)


def _charts_extra_missing() -> bool:
    from importlib.util import find_spec

    return any(find_spec(name) is None for name in ("vl_convert", "kaleido", "plotly"))


#: For a test that renders a chart: it needs the ``[charts]`` extra, which ``make test`` installs.
requires_charts_extra = pytest.mark.skipif(
    _charts_extra_missing(), reason="renders charts: needs the [charts] extra (pip install '.[charts]'), which is not installed"
)

#: For a test that renders a Plotly figure: it needs a system Chrome or Chromium, which .ci/run installs with apt.
requires_browser = pytest.mark.skipif(
    not any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")),
    reason="renders Plotly: needs Chrome or Chromium on PATH (Debian: apt-get install chromium; .ci/run does it where apt is there)",
)


#: The bar colour of :func:`write_chart_notebook`'s chart (``#2ca02c``): a rendering of it holds pixels of this colour.
CHART_BAR_RGB = (44, 160, 44)
#: What the caption of a read with ``as_mime_type: image/png`` on that chart names.
CHART_RENDERED_FROM = "rendered from application/vnd.vegalite.v5+json"


def write_chart_notebook(path: Path) -> Path:
    """Write a notebook at ``path`` whose one cell has one output: a Vega-Lite bar chart (as Altair shows one), and its text form."""
    import nbformat

    spec = {
        "data": {"values": [{"k": "x", "v": 4}, {"k": "y", "v": 7}]},
        "mark": {"type": "bar", "color": "#2ca02c"},
        "encoding": {"x": {"field": "k", "type": "nominal"}, "y": {"field": "v", "type": "quantitative"}},
    }
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("chart")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"application/vnd.vegalite.v5+json": spec, "text/plain": "alt.Chart(...)"})]
    nb.cells = [cell]
    nbformat.write(nb, str(path))
    return path


def shows_the_chart_bars(png: bytes) -> bool:
    """Whether the image ``png`` holds a pixel of :data:`CHART_BAR_RGB` (never pixel-exact against a stored file)."""
    import io

    from PIL import Image

    shown = Image.open(io.BytesIO(png)).convert("RGB")
    return CHART_BAR_RGB in {shown.getpixel((x, y)) for x in range(shown.width) for y in range(shown.height)}


def load_cases() -> list[dict]:
    with open(FIXTURES / "cases.json", encoding="utf-8") as fh:
        return json.load(fh)


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def json(self):
        return json.loads(self.stdout)

    def error(self):
        return json.loads(self.stderr)


#: What the interpreter reads from the environment as it starts (its flags and paths, the locale
#: and so stdio's encoding, the time zone): a call that sets any of them otherwise runs cold.
_READ_AT_START = ("PYTHON", "LANG", "LC_", "TZ")


def _starts_alike(env: dict[str, str]) -> bool:
    """Whether an interpreter started with ``env`` would start as the warm parent did."""

    def at_start(names: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in names.items() if k.startswith(_READ_AT_START)}

    return at_start(env) == at_start(_START_ENV)


def run_cli(*args: str, cwd: Path | str | None = None, stdin: bytes | None = None, env=None, cold: bool = False) -> CliResult:
    """Run the installed ``j-cli`` with ``args``, a process of its own; stdout and stderr as bytes.

    The process is forked from this pytest process's warm parent (tests/warm_cli.py
    says what that skips: the interpreter's start and j-cli's entry imports) unless

    - ``cold`` is set: the test is about how ``j-cli`` starts (the console script,
      what a command imports, the process's own command line);
    - ``env`` sets what the interpreter reads at its start (:data:`_READ_AT_START`)
      otherwise than pytest's environment did;
    - another thread of this process has a call in flight: calls at once stay at once.

    In each of those cases it starts the script, as a user's shell would.
    """
    full = dict(os.environ) if env is None else dict(env)
    stdin = stdin if stdin is not None else b""
    if not cold and _starts_alike(full):
        from warm_cli import run_warm_if_free

        warm = run_warm_if_free(JCLI, args, cwd, stdin, full, _START_ENV, timeout=60)
        if warm is not None:
            return CliResult(warm)
    proc = subprocess.run([JCLI, *args], cwd=cwd, input=stdin, capture_output=True, env=env, timeout=60)
    return CliResult(proc)


#: Runs argv[1:] and prints its peak RSS in KiB last on stderr (Linux reports ru_maxrss in KiB).
_PEAK_RSS_PROBE = (
    "import resource, subprocess, sys\n"
    "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
    "sys.stderr.buffer.write(r.stderr)\n"
    "sys.stdout.buffer.write(r.stdout)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(r.returncode)\n"
)


def run_cli_with_peak_rss(*args: str, cwd: Path | str) -> tuple[subprocess.CompletedProcess, float]:
    """Run the installed ``j-cli`` with ``args`` under a parent that measures it: the process and its peak RSS in MiB.

    The peak is the child's own (``RUSAGE_CHILDREN`` of a parent that ran
    nothing else), not this test process's.
    """
    proc = subprocess.run([sys.executable, "-c", _PEAK_RSS_PROBE, JCLI, *args], capture_output=True, cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc, int(proc.stderr.decode().split()[-1]) / 1024


def start_sidecar_by_hand(workspace: str, *, code: str | None = None, env: dict | None = None) -> subprocess.Popen:
    """A sidecar for ``workspace`` started the way spawn starts one (``code`` runs it, in ``env``).

    It holds the spawn lock until it listens; returns once it does.
    """
    import fcntl

    from jcli_sidecar.base.locks import wait_for_lock
    from jcli_sidecar.base.runtime import SidecarPaths

    paths = SidecarPaths(workspace)
    os.makedirs(paths.dir, mode=0o700, exist_ok=True)
    lock = os.open(paths.spawn_lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    code = code or "import sys; from jcli_sidecar.sidecar.daemon import serve; sys.exit(serve(workspace=sys.argv[1]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, paths.workspace],
        env={**(os.environ if env is None else env), "JCLI_SIDECAR_SPAWN_LOCK_FD": str(lock)},
        pass_fds=(lock,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(lock)
    if not wait_for_lock(paths.spawn_lock, 30):
        proc.kill()
        proc.wait()
        raise AssertionError("the sidecar never listened")
    return proc


def start_old_sidecar(workspace: str) -> subprocess.Popen:
    """A sidecar that says it is version ``0.0.0-old``, started for ``workspace`` the way spawn starts one."""
    return start_sidecar_by_hand(
        workspace,
        code="import sys, jcli_sidecar; jcli_sidecar.__version__ = '0.0.0-old'; "
        "from jcli_sidecar.sidecar.daemon import serve; sys.exit(serve(workspace=sys.argv[1]))",
    )


def relative_source(envelope: dict, root: Path) -> dict:
    """The envelope with ``source.path`` (and the path in its label) relative to ``root``, as in cases.json."""
    out = json.loads(json.dumps(envelope))
    if "source" in out:
        source = out["source"]
        path = source["path"]
        source["path"] = os.path.relpath(path, root)
        if "label" in source:
            source["label"] = source["label"].replace(path, source["path"], 1)
    return out


SIDECAR_MARKERS = ("jcli_sidecar", "jcli-sidecar")
SERVER_MARKERS = ("jupyter_server", "jcli.embedded_server")


def survivors_of_a_test(runtime: Path, test_dir: Path | None) -> list:
    """The sidecars and servers under ``runtime``, and the sidecars for a workspace in ``test_dir``: one look at ``/proc``."""
    named = _processes_naming(SIDECAR_MARKERS + SERVER_MARKERS)
    survivors = sidecars_under(runtime, named=named) + servers_under(runtime, named=named)
    if test_dir is not None:
        survivors += [p for p in sidecars_for_workspaces_in(test_dir, named=named) if p not in survivors]
    return survivors


def _processes_naming(markers: tuple[str, ...]) -> list:
    """Live processes whose command line holds one of ``markers``, as :class:`psutil.Process`.

    Every test's teardown asks this three times, so the command lines are read
    straight from ``/proc`` first (a marker is a substring of one argument, so
    of the raw line) and only the few that hold a marker become processes.
    """
    import psutil

    wanted = [marker.encode() for marker in markers]
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if not any(marker in raw for marker in wanted):
            continue
        try:
            proc = psutil.Process(int(name))
            cmdline = proc.cmdline()
        except psutil.Error:
            continue
        if any(marker in part for part in cmdline for marker in markers):
            found.append((proc, cmdline))
    return found


def sidecars_under(runtime: Path, markers=SIDECAR_MARKERS, named: list | None = None) -> list:
    """Live processes (sidecars by default) whose XDG_RUNTIME_DIR is ``runtime``.

    ``named``: what :func:`_processes_naming` found already (for several questions from one look).
    """
    import psutil

    found = []
    for proc, cmdline in _processes_naming(markers) if named is None else named:
        if not any(marker in part for part in cmdline for marker in markers):
            continue
        try:
            if proc.environ().get("XDG_RUNTIME_DIR") == str(runtime) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def servers_under(runtime: Path, named: list | None = None) -> list:
    """Live embedded Jupyter Servers started under the runtime dir ``runtime``."""
    return sidecars_under(runtime, markers=SERVER_MARKERS, named=named)


def sidecars_for_workspaces_in(folder: Path, named: list | None = None) -> list:
    """Live sidecars (whatever their runtime dir) serving a workspace inside ``folder``."""
    import psutil

    prefix = os.path.realpath(folder) + os.sep
    found = []
    for proc, cmdline in _processes_naming(("jcli_sidecar",)) if named is None else named:
        if not any("jcli_sidecar" in part for part in cmdline):
            continue
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        if "--workspace" in cmdline[:-1] and (os.path.realpath(cmdline[cmdline.index("--workspace") + 1]) + os.sep).startswith(prefix):
            found.append(proc)
    return found


@contextlib.contextmanager
def environ_set(**values: str):
    """This process's environment with ``values`` set, restored as it was afterwards (an embedded server reads it at start)."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def jupyter_server_process(root: Path, *options: str, env: dict[str, str] | None = None):
    """A real Jupyter Server started as a process of its own on a free loopback port: yields ``(port, token)``.

    ``options`` are added to its command line (limits, a ``base_url``); its
    runtime dir is ``root/runtime`` (``XDG_RUNTIME_DIR`` too). The port is a
    free one probed just before; another process may take it first, and the
    server, told not to look further, then exits. That is seen (it ends
    before writing its ``jpserver-*.json``) and it is started again on
    another port, three times at most. It is stopped on the way out.
    """
    import socket

    from watchfiles import watch

    runtime = root / "runtime"
    runtime.mkdir()
    token = os.urandom(12).hex()
    env = {**os.environ, **(env or {}), "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": str(runtime), "XDG_RUNTIME_DIR": str(runtime)}

    def started() -> bool:
        return any(p.name.startswith("jpserver-") and p.suffix == ".json" for p in runtime.iterdir())

    for _attempt in range(3):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        cmd = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={root}",
            *options,
        ] + (["--allow-root"] if os.geteuid() == 0 else [])
        server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Each wait ends at a change in the runtime dir, or after a second, to see whether the server is still there.
        for _ in watch(runtime, rust_timeout=1_000, yield_on_timeout=True, raise_interrupt=False):
            if started() or server.poll() is not None:
                break
        if started():
            break
        server.terminate()
        server.wait(30)
    else:
        raise AssertionError("the Jupyter Server did not start on any of three ports")
    try:
        yield port, token
    finally:
        server.terminate()
        server.wait(30)


def embedded_server_with_kernels(tmp_path_factory, kernels: dict):
    """A real embedded Jupyter Server of its own whose kernelspecs also include ``kernels``.

    ``kernels`` maps a kernelspec name to its ``kernel.json`` document. A
    generator for a module fixture: yields the server's state (``url``,
    ``token``, ...), and on teardown stops it and fails if it survived.
    """
    from jcli.embedded import EmbeddedServer

    data = tmp_path_factory.mktemp("jupyter-data")
    for name, spec in kernels.items():
        folder = data / "kernels" / name
        folder.mkdir(parents=True)
        (folder / "kernel.json").write_text(json.dumps(spec))
    runtime = tmp_path_factory.mktemp("kernels-runtime")
    runtime.chmod(0o700)
    root = tmp_path_factory.mktemp("kernels-root")
    with environ_set(XDG_RUNTIME_DIR=str(runtime), JUPYTER_PATH=str(data)):
        server = EmbeddedServer(os.path.realpath(root), str(runtime))
        state = server.start()
    try:
        yield {**state, "data_dir": str(data)}
    finally:
        server.stop()
        for proc in servers_under(runtime):
            proc.kill()
            raise AssertionError(f"the Jupyter Server {proc.pid} survived its stop")


#: Runs a command as ``nobody`` (root ignores file modes, so permission tests drop to another user).
DROP = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


def nobody_interpreter(packages: list, probe: str, prefix: str = "jcli-nobody-"):
    """Yield ``(interpreter, PYTHONPATH)`` that ``nobody`` can run ``probe`` with; a generator for a fixture.

    ``packages`` (imported modules) are copied world-readable into a fresh
    dir under ``/tmp``; the venv's base interpreter may be out of nobody's
    reach, so the system one is tried next. Neither working is a failure,
    never a skip. The dir is removed afterwards.
    """
    import shutil
    import tempfile

    import pytest

    if shutil.which("setpriv") is None:
        pytest.fail("setpriv is needed to drop privileges for the permission tests")
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        libs = base / "lib"
        libs.mkdir()
        for package in packages:
            src = Path(package.__file__).parent
            dest = libs / Path(*src.parts[-2:]) if package.__name__.count(".") == 1 else libs / src.name
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        tried = []
        for python in (sys.executable, "/usr/bin/python3"):
            checked = subprocess.run(
                [*DROP, python, "-c", f"import sys, {probe}; assert sys.version_info >= (3, 11)"],
                env={"PYTHONPATH": str(libs), "PATH": os.environ["PATH"]},
                capture_output=True,
                timeout=60,
            )
            tried.append(f"{python}: rc={checked.returncode} {checked.stderr.decode()[-300:]}")
            if checked.returncode == 0:
                yield python, str(libs)
                return
        pytest.fail("nobody cannot run any interpreter with the package:\n" + "\n".join(tried))
    finally:
        shutil.rmtree(base, ignore_errors=True)
