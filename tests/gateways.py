"""Real Jupyter gateway servers for the remote-server tests, each from a venv of its own.

The fixtures (in conftest.py, module-scoped, started only when a test asks):

- ``enterprise_gateway``: Enterprise Gateway with its default settings, run as
  ``nobody``. EG refuses to start kernels for root (its default
  ``unauthorized_users``), so this is the one that really starts kernels.
- ``enterprise_gateway_root``: the same, run as root: shows EG's refusal
  (``POST /api/sessions`` answers 500 "User 'root' is not authorized").
- ``enterprise_gateway_listing``: as ``enterprise_gateway``, with listing on
  (``GET /api/kernels`` and ``/api/sessions`` answer instead of 403).
- ``kernel_gateway``: Kernel Gateway with its default settings (no listing).
- ``kernel_gateway_listing``: Kernel Gateway with listing on.

Each yields ``{"url", "token", "kind", "listing"}`` (``kind`` is ``"eg"`` or
``"kg"``). On teardown the gateway gets SIGTERM (both shut their kernels down
on it); anything of its (found by its private ``JUPYTER_RUNTIME_DIR``) still
alive afterwards is killed and fails the test.

The gateways cannot share the test venv (EG pins jupyter_server 1.x and
jupyter_client 6.x), so each is installed into ``tests/.gateways/<kind>`` from
the pinned ``tests/gateway-pins/<kind>-requirements.txt``, once, and again only
when that file changes (``make test`` builds both before pytest). Neither venv
has ipykernel: the kernelspec each gateway sees runs the test venv's own
interpreter. The venv of a gateway that runs as ``nobody`` is built from an
interpreter ``nobody`` can run (the test venv's base interpreter may live in a
home that other users cannot enter), and its kernels run the test venv's
packages through that interpreter when they must.

One setting is not EG's default: its kernels' ports come from a window
below the system's ephemeral range (:func:`kernel_port_range`). EG picks a
kernel's ports by binding and releasing them, and restarts a kernel that
died on the same ports. On a machine busy with a whole test run, a client
connection can take such a port in between; the kernel then died with
"Address already in use" five times over, and EG dropped it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from places import TESTS

PINS = TESTS / "gateway-pins"
VENVS = TESTS / ".gateways"
_STAMP_NAME = ".jcli-requirements-sha256"
DROP = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
NOBODY_UID = 65534
NOBODY_GID = 65534
START_DEADLINE = 120.0
STOP_DEADLINE = 30.0


class GatewayUnavailable(RuntimeError):
    """A gateway venv could not be built, or a gateway would not start."""


@dataclass(frozen=True)
class Gateway:
    kind: str
    subcommand: str
    token_option: str
    listing_option: str
    as_nobody: bool  # its venv must be runnable by nobody


GATEWAYS = {
    "eg": Gateway("eg", "enterprisegateway", "--EnterpriseGatewayApp.auth_token", "--EnterpriseGatewayApp.list_kernels=True", True),
    "kg": Gateway("kg", "kernelgateway", "--KernelGatewayApp.auth_token", "--JupyterWebsocketPersonality.list_kernels=True", False),
}


def kernel_port_range() -> str:
    """A 2000-port window for one EG's kernels (its ``EG_PORT_RANGE``), below the ephemeral range, chosen by process id.

    Below that range only explicit binds take ports (a bind to port 0 never
    gets one), so a port EG picks there stays free until its kernel binds
    it. Gateways of different workers mostly get different windows, and EG
    checks that a port is free when it picks one.
    """
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ranges:
        first_ephemeral = int(ranges.read().split()[0])
    windows = max(1, (first_ephemeral - 12000) // 2000)
    low = 12000 + (os.getpid() % windows) * 2000
    return f"{low}..{low + 1999}"


# -- running as nobody --------------------------------------------------------------------


def _as_nobody(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    if shutil.which("setpriv") is None:
        raise GatewayUnavailable("setpriv is needed to run a gateway as nobody")
    return subprocess.run([*DROP, *argv], env=env or {"PATH": os.defpath}, capture_output=True, text=True, timeout=120)


def _nobody_runs(python: str, code: str = "import sys", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # Through env: setpriv itself may exec a program in a dir nobody cannot
    # enter (seen with a base interpreter under a 0700 home), which a gateway
    # running as nobody then cannot; env execs it as nobody really would.
    return _as_nobody(["env", python, "-c", code], {"PATH": os.defpath, **(env or {})})


def _interpreters() -> list[str]:
    """This interpreter, then the system's of the same version, then the system's python3."""
    found = [sys.executable]
    for name in (f"python3.{sys.version_info.minor}", "python3"):
        path = shutil.which(name, path=os.defpath)
        if path and path not in found:
            found.append(path)
    return found


def _base_python(as_nobody: bool) -> str:
    """The interpreter to build a venv from (one ``nobody`` can run, when the venv is ``nobody``'s)."""
    if not as_nobody:
        return sys.executable
    tried = []
    for python in _interpreters():
        probe = _nobody_runs(python, "import venv, sys; assert sys.version_info >= (3, 9)")
        if probe.returncode == 0:
            return python
        tried.append(f"{python}: rc={probe.returncode} {probe.stderr[-200:]}")
    raise GatewayUnavailable("found no interpreter that nobody can run to build the gateway venv from:\n" + "\n".join(tried))


# -- the venvs ---------------------------------------------------------------------------


def _digest(kind: str, base: str) -> str:
    requirements = (PINS / f"{kind}-requirements.txt").read_bytes()
    return hashlib.sha256(requirements + b"\0" + os.path.realpath(base).encode()).hexdigest()


def _uv() -> str:
    """The uv beside this interpreter (``make test`` installs it into .venv): it installs a pinned venv in seconds."""
    uv = Path(sys.executable).with_name("uv")
    if not uv.exists():
        raise GatewayUnavailable(f"{uv} is missing: `make test` installs it (or: {Path(sys.executable).parent}/pip install uv)")
    return str(uv)


def pinned_venv(kind: str, *, as_nobody: bool = False) -> Path:
    """The venv ``tests/.gateways/<kind>`` installed from ``tests/gateway-pins/<kind>-requirements.txt``, built when the pins changed.

    Args:
        as_nobody: the venv must be runnable by ``nobody`` (it is built from an interpreter nobody can run).

    Raises:
        GatewayUnavailable: the build failed (the tail of uv's output is in the message).
    """
    venv = VENVS / kind
    base = _base_python(as_nobody)
    digest = _digest(kind, base)
    stamp = venv / _STAMP_NAME
    if not (stamp.exists() and stamp.read_text() == digest):
        shutil.rmtree(venv, ignore_errors=True)
        VENVS.mkdir(exist_ok=True)
        steps = (
            [base, "-m", "venv", str(venv)],
            [_uv(), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "-r", str(PINS / f"{kind}-requirements.txt")],
        )
        for argv in steps:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise GatewayUnavailable(f"building the {kind} venv failed at {argv[1:4]}:\n{proc.stderr[-3000:]}")
        stamp.write_text(digest)
    if as_nobody:
        probe = _nobody_runs(str(venv / "bin" / "python"), "import jupyter_core, jupyter_client")
        if probe.returncode != 0:
            raise GatewayUnavailable(
                f"nobody cannot run the {kind} venv (every parent dir of the repository needs o+x):\n{probe.stderr[-500:]}"
            )
    return venv


def gateway_venv(kind: str) -> Path:
    """The venv of gateway ``kind`` (``"eg"`` or ``"kg"``), built when its pins changed.

    Raises:
        GatewayUnavailable: the build failed (the tail of uv's output is in the message).
    """
    return pinned_venv(kind, as_nobody=GATEWAYS[kind].as_nobody)


# -- the kernels -------------------------------------------------------------------------

_KERNEL_CHECK = "import ipykernel_launcher, matplotlib"


def kernel_command(as_nobody: bool) -> tuple[str, dict[str, str]]:
    """(interpreter, extra env) that runs the test venv's ipykernel, for root or for nobody."""
    if not as_nobody:
        return sys.executable, {}
    site_packages = sysconfig.get_paths()["purelib"]
    tried = []
    for python in _interpreters():
        for env in ({}, {"PYTHONPATH": site_packages}):
            if env and python == sys.executable:
                continue
            probe = _nobody_runs(python, f"import sys; assert sys.version_info[:2] == {sys.version_info[:2]!r}; {_KERNEL_CHECK}", env)
            if probe.returncode == 0:
                return python, env
            tried.append(f"{python} {env}: rc={probe.returncode} {probe.stderr[-200:]}")
    raise GatewayUnavailable("nobody cannot run the test venv's ipykernel:\n" + "\n".join(tried))


def write_kernelspec(folder: Path, python: str, env: dict[str, str]) -> None:
    """A ``python3`` kernelspec under ``folder/kernels`` (a ``JUPYTER_PATH`` entry) that runs ``python``'s ipykernel."""
    spec = {"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Python 3", "language": "python"}
    if env:
        spec["env"] = env
    target = folder / "kernels" / "python3"
    target.mkdir(parents=True)
    (target / "kernel.json").write_text(json.dumps(spec, indent=1))


# -- one running gateway -----------------------------------------------------------------


def _listening_port(pid: int) -> int | None:
    import psutil

    try:
        for conn in psutil.Process(pid).net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN:
                return conn.laddr.port
    except psutil.Error:
        return None
    return None


def _api_answers(url: str, token: str) -> bool:
    request = urllib.request.Request(f"{url}/api", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status == 200 and isinstance(json.loads(resp.read()), dict)
    except (OSError, ValueError):
        return False


def processes_of(runtime: Path) -> list:
    """Live processes (gateway and kernels) whose JUPYTER_RUNTIME_DIR is ``runtime``."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("JUPYTER_RUNTIME_DIR") == str(runtime) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


class RunningGateway:
    """A gateway process in a private tree of dirs; ``start()``, then ``stop()``."""

    def __init__(self, kind: str, *, as_nobody: bool, listing: bool):
        self.gateway = GATEWAYS[kind]
        self.as_nobody = as_nobody
        self.listing = listing
        self.token = secrets.token_hex(16)
        self.base = Path(tempfile.mkdtemp(prefix=f"jcli-{kind}-"))
        self.runtime = self.base / "runtime"
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def _prepare(self) -> dict[str, str]:
        self.base.chmod(0o755)  # nobody must reach the kernelspec and its own dirs
        owned = {name: self.base / name for name in ("runtime", "data", "config", "home")}
        for path in owned.values():
            path.mkdir(mode=0o700)
            if self.as_nobody:
                os.chown(path, NOBODY_UID, NOBODY_GID)
        specs = self.base / "kernelspecs"
        python, kernel_env = kernel_command(self.as_nobody)
        write_kernelspec(specs, python, kernel_env)
        for path in [specs, *specs.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        home = str(owned["home"])
        return {
            "PATH": os.defpath,
            "LANG": "C.UTF-8",
            "HOME": home,
            "XDG_RUNTIME_DIR": str(self.runtime),
            "JUPYTER_RUNTIME_DIR": str(self.runtime),
            "JUPYTER_DATA_DIR": str(owned["data"]),
            "JUPYTER_CONFIG_DIR": str(owned["config"]),
            "JUPYTER_PATH": str(specs),
            "IPYTHONDIR": os.path.join(home, ".ipython"),
            "MPLCONFIGDIR": os.path.join(home, ".matplotlib"),
        }

    def start(self) -> dict:
        venv = gateway_venv(self.gateway.kind)
        env = self._prepare()
        if self.gateway.kind == "eg":
            env["EG_PORT_RANGE"] = kernel_port_range()
        argv = [
            str(venv / "bin" / f"jupyter-{self.gateway.subcommand}"),
            "--ip=127.0.0.1",
            "--port=0",
            f"{self.gateway.token_option}={self.token}",
            *([self.gateway.listing_option] if self.listing else []),
        ]
        if self.as_nobody:
            argv = [*DROP, *argv]
        log = open(self.base / "gateway.log", "wb")  # noqa: SIM115 - the child writes it for its whole life
        try:
            self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=env["HOME"])
        finally:
            log.close()
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            port = _listening_port(self.proc.pid)
            if port and _api_answers(f"http://127.0.0.1:{port}", self.token):
                self.url = f"http://127.0.0.1:{port}"
                return {"url": self.url, "token": self.token, "kind": self.gateway.kind, "listing": self.listing}
            try:
                self.proc.wait(timeout=0.1)  # returns at once if the gateway died
            except subprocess.TimeoutExpired:
                continue
            break
        tail = (self.base / "gateway.log").read_text(errors="replace")[-3000:]
        self.stop()
        raise GatewayUnavailable(f"the {self.gateway.kind} gateway did not answer GET /api (exit code {self.proc.returncode}):\n{tail}")

    def stop(self) -> None:
        """SIGTERM the gateway; fail (after killing them) if it or a kernel of it survives."""
        import psutil

        survivors = []
        if self.proc is not None:
            watched = processes_of(self.runtime)
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=STOP_DEADLINE)
                except subprocess.TimeoutExpired:
                    pass
            _, alive = psutil.wait_procs(watched, timeout=STOP_DEADLINE)
            survivors = [p for p in {*alive, *processes_of(self.runtime)} if p.is_running()]
            for proc in survivors:
                proc.kill()
            psutil.wait_procs(survivors, timeout=10)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.base, ignore_errors=True)
        assert not survivors, f"the {self.gateway.kind} gateway left processes behind: {[p.pid for p in survivors]}"


if __name__ == "__main__":  # `make test` builds each pinned venv before pytest, side by side: `gateways.py eg|kg|hub`
    (_kind,) = sys.argv[1:]
    if _kind in GATEWAYS:
        gateway_venv(_kind)
    else:
        pinned_venv(_kind)
