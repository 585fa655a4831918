"""Which Jupyter Server to use, and the embedded default.

An explicit server (``-s/-t``, or ``JCLI_JUPYTER_SERVER_URL`` and
``JCLI_JUPYTER_SERVER_TOKEN``) always wins. Otherwise j-cli uses the
embedded server started for the nearest ancestor of the cwd (the cwd
included) whose server is alive, and starts one for the cwd when none is.

The embedded server binds 127.0.0.1 on a free port with a random token
(passed through the environment, never on the command line). Its state
(url, token, pid, workspace) is a mode-0600 file in the runtime dir, keyed
by the workspace hash, so even a read-only workspace can run code.
"""

from __future__ import annotations

import json
import os
import sys

from jcli_sidecar.errors import JcliError, ServerUnavailable
from jcli_sidecar.jupyter_api import JupyterServer
from jcli_sidecar.runtime import RUNTIME_FILES, ensure_runtime_dir, workspace_hash, workspace_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EmbeddedServer", "resolve_server"]

START_TIMEOUT = 90.0
PROBE_TIMEOUT = 3.0


class EmbeddedServer:
    """The embedded server files of one workspace."""

    def __init__(self, workspace: str, directory: str) -> None:
        self.workspace = workspace
        base = os.path.join(directory, workspace_hash(workspace))
        self.state_path = base + RUNTIME_FILES["server_state"]
        self.lock_path = base + RUNTIME_FILES["server_lock"]
        self.log_path = base + RUNTIME_FILES["server_log"]
        self.jupyter_runtime = base + RUNTIME_FILES["jupyter_runtime"]

    def state(self) -> dict[str, Any] | None:
        try:
            with open(self.state_path, encoding="utf-8") as fh:
                state = json.load(fh)
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) and isinstance(state.get("url"), str) else None

    def alive(self, state: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The state if its server answers, else None."""
        state = state or self.state()
        if state is None:
            return None
        try:
            JupyterServer(state["url"], state.get("token", "")).status(timeout=PROBE_TIMEOUT)
        except (JcliError, OSError):
            return None
        return state

    def start(self) -> dict[str, Any]:
        """Start the server (single-flight under a lock) and wait until it answers.

        Raises:
            ServerUnavailable: it did not come up (the log tail says why).
        """
        import fcntl

        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # a racing starter waits here, then reuses ours
            live = self.alive()
            if live is not None:
                return live
            return self._launch()
        finally:
            os.close(fd)

    def _launch(self) -> dict[str, Any]:
        import secrets
        import socket
        import time

        from jcli_sidecar.spawn import launch_detached

        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        token = secrets.token_hex(24)
        os.makedirs(self.jupyter_runtime, mode=0o700, exist_ok=True)
        env = dict(os.environ, JUPYTER_TOKEN=token, JUPYTER_RUNTIME_DIR=self.jupyter_runtime)
        cmd = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.workspace}",
            "--ServerApp.terminals_enabled=False",
        ]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        proc = launch_detached(cmd, cwd=self.workspace, env=env, log_path=self.log_path)
        url = f"http://127.0.0.1:{port}"
        server = JupyterServer(url, token)
        deadline = time.monotonic() + START_TIMEOUT
        delay = 0.02
        while True:
            if proc.poll() is not None:
                raise ServerUnavailable(f"the embedded Jupyter Server exited at start: {_tail(self.log_path)}")
            try:
                server.status(timeout=PROBE_TIMEOUT)
                break
            except ServerUnavailable:
                if time.monotonic() > deadline:
                    proc.kill()
                    raise ServerUnavailable(f"the embedded Jupyter Server did not answer in {START_TIMEOUT:g} s") from None
                time.sleep(delay)  # a server starting up: back off gently
                delay = min(delay * 1.5, 0.25)
        from jcli_sidecar.process_record import ProcessRecord

        state = {"url": url, "token": token, **ProcessRecord.of_pid(proc.pid).to_dict(), "workspace": self.workspace, "log": self.log_path}
        _write_private_json(self.state_path, state)
        return state

    def stop(self) -> bool:
        """Stop this workspace's server; True when one was running."""
        import signal

        state = self.state()
        if state is None:
            return False
        from jcli_sidecar.process_record import ProcessRecord

        stopped = False
        record = ProcessRecord.from_dict(state)
        server = None if record is None else record.process()  # never a stranger that reused the pid
        if server is not None:
            server.send_signal(signal.SIGTERM)
            _wait_gone(server, 15.0)
            stopped = True
        try:
            os.unlink(self.state_path)
        except FileNotFoundError:
            pass
        return stopped


def _wait_gone(proc, timeout: float) -> None:
    import psutil

    try:
        proc.wait(timeout)
    except psutil.TimeoutExpired:
        proc.kill()
    except psutil.Error:
        pass


def _write_private_json(path: str, document: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(document, fh)
    os.replace(tmp, path)


def _tail(path: str, lines: int = 6) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return " | ".join(line.strip() for line in fh.read().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _ancestors(path: str):
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def nearest_embedded(directory: str, workspace: str) -> tuple[EmbeddedServer, dict[str, Any] | None]:
    """The embedded server of the nearest ancestor that has a live one.

    Returns the cwd's own :class:`EmbeddedServer` and None when none is alive.
    """
    for candidate in _ancestors(workspace):
        embedded = EmbeddedServer(candidate, directory)
        if not os.path.exists(embedded.state_path):
            continue
        live = embedded.alive()
        if live is not None:
            return embedded, live
    return EmbeddedServer(workspace, directory), None


def resolve_server(url: str | None = None, token: str | None = None, *, start: bool = True) -> JupyterServer:
    """The server for this call: explicit, else the nearest live embedded one.

    Args:
        url, token: from ``-s/-t``; the environment is consulted when None.
        start: start an embedded server for the cwd when none is alive.

    Raises:
        ServerUnavailable: none configured or running, and ``start`` is false
            or starting failed.
    """
    url = url or os.environ.get("JCLI_JUPYTER_SERVER_URL")
    token = token if token is not None else os.environ.get("JCLI_JUPYTER_SERVER_TOKEN", "")
    if url:
        return JupyterServer(url, token or "")
    directory = ensure_runtime_dir(create=True)
    embedded, live = nearest_embedded(directory, workspace_of())
    if live is None:
        if not start:
            raise ServerUnavailable("no Jupyter Server is running for this directory; run j-cli server start")
        live = embedded.start()
    return JupyterServer(live["url"], live.get("token", ""))
