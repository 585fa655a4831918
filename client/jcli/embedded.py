"""Which Jupyter Server to use, and the embedded default.

An explicit server (``-s/-t``, or ``JCLI_JUPYTER_SERVER_URL`` and
``JCLI_JUPYTER_SERVER_TOKEN``) always wins. Otherwise j-cli uses the
embedded server started for the nearest ancestor of the cwd (the cwd
included) whose server is alive, and starts one for the cwd when none is.

The embedded server runs without the IOPub rate limit (j-cli reads every
message; the limit would drop output). It binds 127.0.0.1 on a port it picks itself (port 0),
which j-cli reads back from the server's own info file
(``jpserver-<pid>.json`` in its private Jupyter runtime dir); no port is
chosen ahead and left open for someone else to take. Its random token
reaches it on a pipe (:mod:`jcli.embedded_server`), never through the
environment or the command line, and the secrets of :data:`SCRUBBED_ENV`
are left out of its environment, so its kernels see none of them.
Its state (url, token, pid, start time, uid, workspace, whether
collaboration is on) is a mode-0600 file in the runtime dir, keyed by the
workspace hash, so even a read-only workspace can run code.

Collaboration: where the server part of jupyter-collaboration
(``jupyter_server_ydoc``, the ``[live]`` extra) is installed, Jupyter Server
turns it on by itself, and a person's JupyterLab on the embedded server
shares each notebook's room with j-cli. Its stores (the file-id database,
the Y updates, the collaboration sessions), like the notebook checkpoints
and the notebook-signing secret and database of any Jupyter Server, are
told to live in the server's private runtime dir (:func:`private_options`):
nothing of the server's lands in the workspace or the user's Jupyter data
dir. The server itself says whether collaboration loaded
(:mod:`jcli.embedded_app`), and the state records it (``collaboration``).

A recorded server is trusted only once proven (:meth:`EmbeddedServer.proven`):
its process runs, is ours (same uid, same start time) and itself holds the
socket listening on the recorded port. Until then nothing is sent to that
port, the token least of all; a record that fails the proof is stale, and
the command starts a new server as if there were none.
"""

from __future__ import annotations

import json
import os
import sys

from jcli_sidecar.base import RUNTIME_FILES, JcliError, ServerUnavailable, ensure_runtime_dir, setting, workspace_hash, workspace_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jcli_sidecar.kernel import JupyterServer

__all__ = ["EmbeddedServer", "ROOM_SAVE_DELAY", "SCRUBBED_ENV", "private_options", "resolve_server", "server_address"]

START_TIMEOUT = 90.0
PROBE_TIMEOUT = 3.0
HOST = "127.0.0.1"

#: Secrets that never pass into the embedded server's environment (which its kernels inherit).
SCRUBBED_ENV = ("JUPYTER_TOKEN", "JUPYTER_TOKEN_FILE", "JCLI_JUPYTER_SERVER_TOKEN")

#: Seconds the embedded server's collaboration room waits after a change to the shared notebook before it saves the
#: file (jupyter-collaboration's ``YDocExtension.document_save_delay``, whose default this is). Changes within the delay
#: are saved together, so a run's stream of outputs costs a save a second, not one per output; a reader of the file
#: sees a change at most about this long after the room has it.
ROOM_SAVE_DELAY = 1.0

#: The Jupyter Server extensions whose stores :func:`private_options` places, by the module that is each.
FILE_ID_EXTENSION = "jupyter_server_fileid"
COLLABORATION_EXTENSION = "jupyter_server_ydoc"


def private_options(private: str, installed: frozenset[str] | None = None) -> list[str]:
    """The server options that keep its stores in ``private`` (its own runtime dir), not in the workspace or ``$HOME``.

    Always: notebook checkpoints (:class:`jcli.embedded_app.PrivateCheckpoints`)
    and the notebook-signing secret and database (``NotebookNotary.data_dir``;
    signatures then hold for this server only, as for notebooks j-cli writes
    itself). For each of the two collaboration extensions that is installed
    (``installed``: the importable ones of :data:`FILE_ID_EXTENSION` and
    :data:`COLLABORATION_EXTENSION`, found when None): the file-id database,
    and the Y store, the session store and the explicit save delay
    (:data:`ROOM_SAVE_DELAY`). A server without an extension gets none of its
    options.

    Example:
        >>> private_options("/run/p", frozenset())
        ['--NotebookNotary.data_dir=/run/p', '--PrivateCheckpoints.directory=/run/p/checkpoints']
    """
    if installed is None:
        from importlib.util import find_spec

        installed = frozenset(name for name in (FILE_ID_EXTENSION, COLLABORATION_EXTENSION) if find_spec(name) is not None)
    options = [f"--NotebookNotary.data_dir={private}", f"--PrivateCheckpoints.directory={os.path.join(private, 'checkpoints')}"]
    if FILE_ID_EXTENSION in installed:
        options.append(f"--BaseFileIdManager.db_path={os.path.join(private, 'file_id_manager.db')}")
    if COLLABORATION_EXTENSION in installed:
        options += [
            f"--SQLiteYStore.db_path={os.path.join(private, 'ystore.db')}",
            f"--YDocExtension.session_store_path={os.path.join(private, 'collaboration_sessions.json')}",
            f"--YDocExtension.document_save_delay={ROOM_SAVE_DELAY:g}",
        ]
    return options


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
        except (OSError, ValueError):  # no state, or unreadable: no recorded server
            return None
        return state if isinstance(state, dict) and isinstance(state.get("url"), str) else None

    def alive(self, state: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The state if its server is proven ours (:meth:`proven`) and answers, else None."""
        state = state or self.state()
        if state is None or not self.proven(state):
            return None
        try:
            from jcli_sidecar.kernel import JupyterServer

            JupyterServer(state["url"], state.get("token", "")).status(timeout=PROBE_TIMEOUT)
        except (JcliError, OSError):  # it does not answer: not used
            return None
        return state

    @staticmethod
    def proven(state: dict[str, Any]) -> bool:
        """True when the recorded server is the one we started, listening where recorded.

        Its process runs with the recorded start time and our uid, and holds
        the socket listening on the URL's port itself; whoever else listens
        there (another user, after our server died) fails, and nothing was
        sent to them.
        """
        from jcli_sidecar.base import ProcessRecord

        record = ProcessRecord.from_dict(state)
        port = _loopback_port(state.get("url"))
        if record is None or port is None or record.uid != os.getuid():
            return False
        return record.listens_on(HOST, port)

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
        import time

        import psutil

        from jcli_sidecar.base import ProcessRecord
        from jcli_sidecar.sidecar import launch_detached

        token = secrets.token_hex(24)
        os.makedirs(self.jupyter_runtime, mode=0o700, exist_ok=True)
        env = {name: value for name, value in os.environ.items() if name not in SCRUBBED_ENV}
        env["JUPYTER_RUNTIME_DIR"] = self.jupyter_runtime
        token_read, token_write = os.pipe()
        os.write(token_write, token.encode("ascii"))  # far below a pipe's buffer: never blocks
        os.close(token_write)
        cmd = [
            sys.executable,
            "-P",  # the workspace (its cwd) never shadows an installed package
            "-m",
            "jcli.embedded_server",
            str(token_read),
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            "--ServerApp.port=0",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.workspace}",
            "--ServerApp.terminals_enabled=False",
            # Our own client reads every message: no IOPub rate limit dropping a run's output.
            "--ZMQChannelsWebsocketConnection.limit_rate=False",
            *private_options(self.jupyter_runtime),
        ]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        try:
            proc = launch_detached(cmd, cwd=self.workspace, env=env, log_path=self.log_path, pass_fds=(token_read,))
        finally:
            os.close(token_read)
        try:
            record = ProcessRecord.of_pid(proc.pid)
        except psutil.Error:
            raise ServerUnavailable(f"the embedded Jupyter Server exited at start: {_tail(self.log_path)}") from None
        info_path = os.path.join(self.jupyter_runtime, f"jpserver-{proc.pid}.json")
        deadline = time.monotonic() + START_TIMEOUT
        delay = 0.01
        while True:
            if proc.poll() is not None:
                raise ServerUnavailable(f"the embedded Jupyter Server exited at start: {_tail(self.log_path)}")
            info = _server_info(info_path)
            port = _info_port(info)
            # The token goes only to a port that the server's own process listens on.
            if port is not None and record.listens_on(HOST, port):
                url = f"http://{HOST}:{port}"
                try:
                    from jcli_sidecar.kernel import JupyterServer

                    JupyterServer(url, token).status(timeout=PROBE_TIMEOUT)
                    break
                except ServerUnavailable:
                    pass
            if time.monotonic() > deadline:
                proc.kill()
                raise ServerUnavailable(f"the embedded Jupyter Server did not answer in {START_TIMEOUT:g} s")
            time.sleep(delay)  # a server starting up (about half a second): back off gently
            delay = min(delay * 1.5, 0.05)
        state = {
            "url": url,
            "token": token,
            **record.to_dict(),
            "workspace": self.workspace,
            "log": self.log_path,
            "collaboration": info.get("collaboration") is True,  # the server says whether its rooms loaded
        }
        _write_private_json(self.state_path, state)
        return state

    def stop(self) -> bool:
        """Stop this workspace's server; True when one was running."""
        import signal

        state = self.state()
        if state is None:
            return False
        from jcli_sidecar.base import ProcessRecord, wait_for_exit

        stopped = False
        record = ProcessRecord.from_dict(state)
        server = None if record is None else record.process()  # never a stranger that reused the pid
        if server is not None:
            server.send_signal(signal.SIGTERM)
            if not wait_for_exit(server, 15.0):
                server.kill()
            stopped = True
        try:
            os.unlink(self.state_path)
        except FileNotFoundError:
            pass
        return stopped


def _loopback_port(url: Any) -> int | None:
    """The port of a recorded ``http://127.0.0.1:PORT`` URL, else None."""
    if not isinstance(url, str) or not url.startswith(f"http://{HOST}:"):
        return None
    port = url[len(f"http://{HOST}:") :]
    return int(port) if port.isdigit() and port.isascii() and 0 < int(port) < 65536 else None


def _server_info(path: str) -> dict[str, Any]:
    """The server's own info file, once it wrote one (else empty)."""
    try:
        with open(path, encoding="utf-8") as fh:
            info = json.load(fh)
    except (OSError, ValueError):  # not written yet, or garbled: nothing yet
        return {}
    return info if isinstance(info, dict) else {}


def _info_port(info: dict[str, Any]) -> int | None:
    """The port in the server's info, once it wrote one."""
    port = info.get("port")
    return port if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536 else None


def _write_private_json(path: str, document: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(document, fh)
    os.replace(tmp, path)


def _tail(path: str, lines: int = 6) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            tail = " | ".join(line.strip() for line in fh.read().splitlines()[-lines:])
    except OSError:  # the log is only quoted in an error message
        return "(no log)"
    from jcli_sidecar.kernel import redact_text

    return redact_text(tail)


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


def server_address(url: str | None = None, token: str | None = None) -> tuple[str, str] | None:
    """The explicit server's ``(url, token)``: ``-s/-t``, else the environment; None means the embedded one.

    Unchecked (:class:`~jcli_sidecar.kernel.jupyter_api.JupyterServer` checks them
    when it is made), so a caller that only passes them on imports nothing more.
    """
    if url is None:
        url = setting("JCLI_JUPYTER_SERVER_URL") or None  # set but empty: not set
    token = token if token is not None else setting("JCLI_JUPYTER_SERVER_TOKEN")
    return None if url is None else (url, token or "")


def resolve_server(url: str | None = None, token: str | None = None, *, start: bool = True) -> JupyterServer:
    """The server for this call: explicit, else the nearest live embedded one.

    Args:
        url, token: from ``-s/-t``; the environment is consulted when None.
        start: start an embedded server for the cwd when none is alive.

    Raises:
        UsageError: a malformed URL (an empty ``-s`` included) or token.
        ServerUnavailable: none configured or running, and ``start`` is false
            or starting failed.
    """
    from jcli_sidecar.kernel import JupyterServer

    explicit = server_address(url, token)
    if explicit is not None:
        return JupyterServer(*explicit)
    directory = ensure_runtime_dir(create=True)
    embedded, live = nearest_embedded(directory, workspace_of())
    if live is None:
        if not start:
            raise ServerUnavailable("no Jupyter Server is running for this directory; run j-cli server start")
        live = embedded.start()
    return JupyterServer(live["url"], live.get("token", ""))
