"""A real JupyterHub for the JupyterHub tests, from a venv of its own, all on loopback.

The fixture ``jupyterhub`` (in conftest.py, module-scoped, started only when
a test asks) yields a :class:`RunningHub`:

- JupyterHub 6 from ``tests/.gateways/hub``, installed from the pinned
  ``tests/gateway-pins/hub-requirements.txt`` like the gateway venvs
  (tests/gateways.py), once, and again only when that file changes
  (``make test`` builds it before pytest);
- its proxy, ``configurable-http-proxy`` from ``tests/hosts/hub`` (installed
  by tests/hostbins.py like the agent hosts);
- the hub, its proxy's API and its public URL on random free loopback ports;
  its database, cookie secret, pid files, logs and users' homes in a private
  dir under the test run's tmp dir;
- two users, ``alice`` and ``bob`` (the dummy authenticator: nobody logs in,
  tokens are made through the REST API with an admin service token), named
  servers allowed;
- a local-process spawner that needs no system user (JupyterHub's
  ``SimpleLocalProcessSpawner``), running ``jupyterhub-singleuser --allow-root``
  from the hub's venv, whose only kernelspec runs ipykernel from the test venv
  (``sys.executable``), as the gateways' do.

A spawn can be held at a gate (:meth:`RunningHub.hold`): the spawner's command
is a small launcher that waits while a hold file for that user and server
exists, so a test sees a server that is still starting for as long as it
needs, with no timing guess.

The hub never polls its servers on its own (within a test run): a server a
test kills stays running for the hub, as one that died a moment ago is,
until the test stops it (:meth:`RunningHub.kill_server`).

On teardown the hub gets SIGTERM (it stops every single-user server and its
proxy on it); anything of its (found by its private ``JUPYTER_RUNTIME_DIR``)
still alive afterwards is killed and fails the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

from gateways import GatewayUnavailable, pinned_venv, processes_of, write_kernelspec
from hostbins import hub_proxy

START_DEADLINE = 120.0
SPAWN_DEADLINE = 120.0
STOP_DEADLINE = 30.0
USER = "alice"
#: The hub's users: alice's servers run; bob's never start.
USERS = (USER, "bob")

_GATE = """\
import os, sys, time
hold = os.path.join({holds!r}, os.environ.get("JUPYTERHUB_USER", "") + "--" + os.environ.get("JUPYTERHUB_SERVER_NAME", ""))
deadline = time.monotonic() + {deadline!r}
while os.path.exists(hold) and time.monotonic() < deadline:
    time.sleep(0.05)
os.execv(sys.argv[1], sys.argv[1:])
"""

_CONFIG = """\
# One test module's JupyterHub (tests/hubs.py): everything on loopback, everything in {base!r}.
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {public_port!r}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port!r}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
c.ConfigurableHTTPProxy.pid_file = {state!r} + "/proxy.pid"
c.JupyterHub.db_url = "sqlite:///" + {state!r} + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {state!r} + "/cookie_secret"
c.JupyterHub.pid_file = {state!r} + "/hub.pid"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.allow_named_servers = True
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.services = [{{"name": "jcli-tests", "api_token": {admin_token!r}}}]
c.JupyterHub.load_roles = [
    {{"name": "jcli-tests", "scopes": ["admin:users", "admin:servers", "tokens"], "services": ["jcli-tests"]}},
]
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.Spawner.cmd = [{python!r}, {gate!r}, {singleuser!r}]
c.Spawner.args = ["--allow-root"]
c.Spawner.environment = {spawner_env!r}
c.Spawner.start_timeout = {spawn_deadline!r}
c.Spawner.http_timeout = {spawn_deadline!r}
c.Spawner.poll_interval = 86400  # a server a test kills stays "running" for the hub until the test stops it
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a 3xx comes back as an HTTPError, as it is


_OPENER = urllib.request.build_opener(_NoRedirect)


def call(url: str, method: str = "GET", body: object = None, token: str | None = None, timeout: float = 60) -> tuple[int, dict, bytes]:
    """(status, headers by lower-case name, body) of one HTTP request; redirects are not followed."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"token {token}"
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method, headers=headers)
    try:
        with _OPENER.open(request, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


class RunningHub:
    """A JupyterHub and its proxy in a private dir; ``start()``, then ``stop()``.

    Attributes:
        url: the hub's public URL (the proxy's), ending in ``/``.
        admin_token: the admin service's API token.
    """

    def __init__(self, base: Path):
        self.base = base
        self.runtime = base / "runtime"
        self.holds = base / "holds"
        self.admin_token = secrets.token_hex(16)
        self.proc: subprocess.Popen | None = None
        self.url = ""

    # -- the REST API -------------------------------------------------------------------

    def api(self, method: str, path: str, body: object = None, token: str | None = None) -> tuple[int, object]:
        """(status, JSON or None) of ``/hub/api/<path>``, with the admin token unless ``token`` is given."""
        status, _, raw = call(f"{self.url}hub/api/{path}", method, body, token or self.admin_token)
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, None

    def new_token(self, user: str = USER, **fields) -> tuple[str, str]:
        """(token, token id) of a new API token for ``user``, made by the admin (``fields``: ``expires_in``, ``scopes``, ...)."""
        status, made = self.api("POST", f"users/{quote(user)}/tokens", {"note": "j-cli tests", **fields})
        assert status == 201 and isinstance(made, dict), (status, made)
        return made["token"], made["id"]

    @staticmethod
    def _server_path(user: str, server: str) -> str:
        return f"users/{quote(user)}/" + (f"servers/{quote(server)}" if server else "server")

    def server_url(self, user: str = USER, server: str = "") -> str:
        """The public URL of ``user``'s server (``/user/NAME/`` or ``/user/NAME/SERVER/``)."""
        return f"{self.url}user/{quote(user)}/" + (f"{quote(server)}/" if server else "")

    def server_model(self, user: str = USER, server: str = "") -> dict | None:
        """The hub's model of one of ``user``'s servers, or None when it has none."""
        status, model = self.api("GET", f"users/{quote(user)}")
        assert status == 200 and isinstance(model, dict), (status, model)
        return model["servers"].get(server)

    def start_server(self, user: str = USER, server: str = "", token: str | None = None, wait: bool = True) -> int:
        """Ask the hub to start a server (with ``token``: as that user); with ``wait``, until it is ready. Returns the status."""
        status, answer = self.api("POST", self._server_path(user, server), token=token)
        assert status in (201, 202), (status, answer)
        if wait:
            self.wait_ready(user, server)
        return status

    def wait_ready(self, user: str = USER, server: str = "") -> None:
        """Follow the spawn's progress stream (the hub's server-sent events) until it says ready."""
        request = urllib.request.Request(
            f"{self.url}hub/api/{self._server_path(user, server)}/progress", headers={"Authorization": f"token {self.admin_token}"}
        )
        events = []
        with urllib.request.urlopen(request, timeout=SPAWN_DEADLINE) as stream:
            for raw in stream:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:])
                events.append(event.get("message"))
                if event.get("ready"):
                    return
                assert not event.get("failed"), f"the spawn failed: {events}\n{self.log_tail()}"
        raise AssertionError(f"the progress stream ended before the server was ready: {events}\n{self.log_tail()}")

    def stop_server(self, user: str = USER, server: str = "") -> None:
        """Ask the hub to stop a server, and wait until the hub has no such server running."""
        status, answer = self.api("DELETE", self._server_path(user, server))
        assert status in (202, 204), (status, answer)
        self.wait_until(lambda: (self.server_model(user, server) or {"stopped": True}).get("stopped"), f"the hub stops {user}/{server}")

    def wait_until(self, condition, what: str, deadline: float = STOP_DEADLINE) -> None:
        """Check ``condition()`` until it holds, between checks waiting on the hub's exit (which fails at once)."""
        end = time.monotonic() + deadline
        while not condition():
            assert time.monotonic() < end, f"timed out waiting until {what}\n{self.log_tail()}"
            self._still_running(0.1)

    def kill_server(self, user: str = USER, server: str = "") -> None:
        """SIGKILL a running server's process, as a crash would, and wait until it is gone (the hub is not told)."""
        import psutil

        status, model = self.api("GET", f"users/{quote(user)}")
        assert status == 200 and isinstance(model, dict), (status, model)
        process = psutil.Process(model["servers"][server]["state"]["pid"])
        assert process.environ().get("JUPYTERHUB_SERVER_NAME") == server, "not the server's process"
        process.kill()

        def dead() -> bool:  # a zombie until the hub reaps it
            try:
                return process.status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return True

        self.wait_until(dead, f"{user}/{server} dies")

    @contextlib.contextmanager
    def hold(self, user: str = USER, server: str = ""):
        """While in this block, a spawn of ``user``'s ``server`` waits at its gate (the server stays "starting")."""
        hold = self.holds / f"{user}--{server}"
        hold.touch()
        try:
            yield
        finally:
            hold.unlink()

    # -- the processes ------------------------------------------------------------------

    def log_tail(self) -> str:
        log = self.base / "hub.log"
        return log.read_text(errors="replace")[-3000:] if log.exists() else ""

    def _still_running(self, seconds: float) -> None:
        """Wait up to ``seconds`` on the hub's own exit: returns at once (failing) if it died."""
        assert self.proc is not None
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return
        raise AssertionError(f"the hub exited (code {self.proc.returncode}):\n{self.log_tail()}")

    def _prepare(self) -> tuple[Path, dict[str, str]]:
        venv = pinned_venv("hub")
        proxy = hub_proxy()
        node = shutil.which("node")
        if node is None:
            raise GatewayUnavailable("node is not installed; JupyterHub's proxy needs Node.js")
        dirs = {name: self.base / name for name in ("runtime", "data", "config", "home", "homes", "state", "holds")}
        for path in dirs.values():
            path.mkdir(mode=0o700)
        specs = self.base / "kernelspecs"
        write_kernelspec(specs, sys.executable, {})
        home = str(dirs["home"])
        env = {
            "PATH": os.pathsep.join([os.path.dirname(node), os.defpath]),
            "LANG": "C.UTF-8",
            "HOME": home,
            "XDG_RUNTIME_DIR": str(self.runtime),
            "JUPYTER_RUNTIME_DIR": str(self.runtime),
            "JUPYTER_DATA_DIR": str(dirs["data"]),
            "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        }
        spawner_env = {
            **{k: env[k] for k in ("XDG_RUNTIME_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR")},
            "JUPYTER_PATH": str(specs),
            "IPYTHONDIR": os.path.join(home, ".ipython"),
            "MPLCONFIGDIR": os.path.join(home, ".matplotlib"),
        }
        self.public_port = _free_port()
        gate = self.base / "gate.py"
        gate.write_text(_GATE.format(holds=str(self.holds), deadline=SPAWN_DEADLINE))
        config = self.base / "jupyterhub_config.py"
        config.write_text(
            _CONFIG.format(
                base=str(self.base),
                public_port=self.public_port,
                hub_port=_free_port(),
                proxy_api_port=_free_port(),
                proxy=str(proxy),
                proxy_token=secrets.token_hex(16),
                state=str(dirs["state"]),
                users=set(USERS),
                admin_token=self.admin_token,
                homes=str(dirs["homes"]),
                python=str(venv / "bin" / "python"),
                gate=str(gate),
                singleuser=str(venv / "bin" / "jupyterhub-singleuser"),
                spawner_env=spawner_env,
                spawn_deadline=SPAWN_DEADLINE,
            )
        )
        return venv, env

    def _answers(self) -> bool:
        try:
            status, _, raw = call(f"{self.url}hub/api/", timeout=5)
        except OSError:
            return False
        return status == 200 and "version" in json.loads(raw or b"{}")

    def start(self) -> RunningHub:
        venv, env = self._prepare()
        log = open(self.base / "hub.log", "wb")  # noqa: SIM115 - the child writes it for its whole life
        try:
            self.proc = subprocess.Popen(
                [str(venv / "bin" / "jupyterhub"), "-f", str(self.base / "jupyterhub_config.py")],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.base,
            )
        finally:
            log.close()
        self.url = f"http://127.0.0.1:{self.public_port}/"
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            if self._answers():
                return self
            try:
                self.proc.wait(timeout=0.2)  # returns at once if the hub died
            except subprocess.TimeoutExpired:
                continue
            break
        tail = self.log_tail()
        self.stop()
        raise GatewayUnavailable(f"JupyterHub did not answer GET /hub/api/ (exit code {self.proc.returncode}):\n{tail}")

    def stop(self) -> None:
        """SIGTERM the hub (it stops its servers and its proxy); fail (after killing them) if anything of it survives."""
        import psutil

        survivors = []
        if self.proc is not None:
            for hold in self.holds.glob("*"):
                hold.unlink()  # a held spawn goes on, and the hub stops it
            watched = processes_of(self.runtime)
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=STOP_DEADLINE)
                except subprocess.TimeoutExpired:
                    pass
            _, alive = psutil.wait_procs(watched, timeout=STOP_DEADLINE)
            for proc in {*alive, *processes_of(self.runtime)}:
                with contextlib.suppress(psutil.Error):
                    if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                        survivors.append(f"{proc.pid} {' '.join(proc.cmdline())[:200]}")
                        proc.kill()
            psutil.wait_procs(processes_of(self.runtime), timeout=10)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
        assert not survivors, f"JupyterHub left processes behind: {survivors}\n{self.log_tail()}"
