"""A small client for ``codex app-server`` over stdio, for the Codex host tests.

The app-server speaks JSON-RPC 2.0 without the ``"jsonrpc"`` member, one
JSON message per line: requests carry ``id`` and ``method``, responses
``id`` and ``result`` or ``error``, notifications only ``method``. The
client sends ``initialize`` and then the ``initialized`` notification, as
the protocol requires before any other request.

Every read has a deadline (``select`` on the pipe, never a sleep). Requests
the server sends to us (approvals, elicitations) are answered with a JSON-RPC
error, so nothing waits on a human. ``close()`` ends stdin, then terminates
and at last kills the app-server, and waits for the processes it had
started (the MCP servers) to go too.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time

__all__ = ["OFFLINE_CONFIG", "AppServer", "AppServerError"]

#: What keeps the app-server offline; written into CODEX_HOME/config.toml before ``j-cli setup``.
#: A model provider on loopback that is never contacted (no turn is started; without it Codex
#: resolves api.openai.com at thread start), and no plugins (the plugin marketplace sync
#: resolves api.github.com and chatgpt.com).
OFFLINE_CONFIG = """\
model_provider = "jcli_test_loopback"
model = "jcli-test-model"

[features]
plugins = false

[model_providers.jcli_test_loopback]
name = "j-cli tests (loopback, never contacted)"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
"""


class AppServerError(RuntimeError):
    """The app-server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, error: dict):
        super().__init__(f"{method}: {error.get('message')} (code {error.get('code')})")
        self.error = error


class AppServer:
    """One ``codex app-server`` child process, driven over its stdin and stdout."""

    def __init__(self, codex: str, env: dict[str, str], cwd, stderr_path, overrides: tuple[str, ...] = ()):
        argv = [codex, "app-server"]
        for override in overrides:
            argv += ["-c", override]
        self._stderr = open(stderr_path, "wb")
        self._stderr_path = stderr_path
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)
        self._buffer = b""
        self._next_id = 0
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []

    # -- wire ---------------------------------------------------------------

    def _send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _read_message(self, deadline: float) -> dict:
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no message from codex app-server in time; stderr tail:\n{self.stderr_tail()}")
            if self._selector.select(left):
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise EOFError(f"codex app-server closed stdout (exit {self.proc.poll()}); stderr tail:\n{self.stderr_tail()}")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _dispatch(self, message: dict) -> None:
        """File a message that is not the response being waited for."""
        if "method" in message and "id" in message:  # the server asks us something: nobody here answers
            self.server_requests.append(message)
            self._send({"id": message["id"], "error": {"code": -32601, "message": "the j-cli tests answer no requests"}})
        elif "method" in message:
            self.notifications.append(message)

    def request(self, method: str, params: dict | None = None, timeout: float = 30.0):
        """Send one request; return its ``result`` (or raise ``AppServerError``)."""
        self._next_id += 1
        rid = self._next_id
        self._send({"id": rid, "method": method, "params": params if params is not None else {}})
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == rid and "method" not in message:
                if "error" in message:
                    raise AppServerError(method, message["error"])
                return message["result"]
            self._dispatch(message)

    def wait_for(self, method: str, predicate=lambda params: True, timeout: float = 30.0) -> dict:
        """The first notification ``method`` whose params satisfy ``predicate`` (already received or coming)."""
        for note in self.notifications:
            if note["method"] == method and predicate(note.get("params") or {}):
                return note["params"]
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            self._dispatch(message)
            if message.get("method") == method and "id" not in message and predicate(message.get("params") or {}):
                return message["params"]

    # -- protocol -----------------------------------------------------------

    def initialize(self) -> dict:
        result = self.request(
            "initialize", {"clientInfo": {"name": "jcli_tests", "title": "j-cli tests", "version": "0"}, "capabilities": None}
        )
        self._send({"method": "initialized"})
        return result

    def start_thread(self) -> str:
        """An ephemeral thread in the app-server's cwd: read-only sandbox, never ask for approval."""
        result = self.request("thread/start", {"ephemeral": True, "approvalPolicy": "never", "sandbox": "read-only"})
        return result["thread"]["id"]

    def mcp_status(self, thread_id: str | None = None) -> dict[str, dict]:
        """``mcpServerStatus/list`` (all pages), by server name."""
        servers: dict[str, dict] = {}
        params: dict = {"threadId": thread_id} if thread_id else {}
        for _ in range(20):  # pages; a handful of servers fit in one
            page = self.request("mcpServerStatus/list", params, timeout=60)
            servers.update({entry["name"]: entry for entry in page["data"]})
            if not page.get("nextCursor"):
                return servers
            params = {**params, "cursor": page["nextCursor"]}
        raise AssertionError("mcpServerStatus/list did not stop paging")

    def wait_mcp_ready(self, thread_id: str, name: str, timeout: float = 45.0) -> dict:
        """Wait for ``mcpServer/startupStatus/updated`` to say ``name`` is ready (fail fast on failed)."""
        params = self.wait_for(
            "mcpServer/startupStatus/updated",
            lambda p: p.get("threadId") == thread_id and p.get("name") == name and p.get("status") in ("ready", "failed", "cancelled"),
            timeout,
        )
        assert params["status"] == "ready", params
        return params

    def call_tool(self, thread_id: str, server: str, tool: str, arguments: dict, timeout: float = 60.0) -> dict:
        return self.request("mcpServer/tool/call", {"threadId": thread_id, "server": server, "tool": tool, "arguments": arguments}, timeout)

    # -- lifetime -----------------------------------------------------------

    def descendants(self) -> list[list[str]]:
        """The command lines of the live processes this app-server started (MCP servers among them).

        Codex also runs short-lived helpers; one that exits (or is a zombie) while
        we look is skipped.
        """
        import psutil

        found = []
        for child in self._children():
            try:
                found.append(child.cmdline())
            except psutil.Error:  # gone, or a zombie, since we listed it
                continue
        return found

    def _children(self) -> list:
        import psutil

        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stderr_tail(self, limit: int = 3000) -> str:
        self._stderr.flush()
        with open(self._stderr_path, "rb") as fh:
            return fh.read()[-limit:].decode(errors="replace")

    def close(self) -> list[int]:
        """Stop the app-server and what it started; return the pids that had to be killed."""
        import psutil

        started = self._children()
        try:
            self.proc.stdin.close()  # the app-server exits when its client goes away
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        finally:
            self._selector.close()
            self.proc.stdout.close()
            self._stderr.close()
        _, alive = psutil.wait_procs(started, timeout=10)
        killed = []
        for proc in alive:
            try:
                proc.kill()
                killed.append(proc.pid)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=5)
        return killed

    def __enter__(self) -> AppServer:
        return self

    def __exit__(self, *exc) -> None:
        killed = self.close()
        if exc[0] is None:
            assert not killed, f"processes started by codex app-server outlived it: {killed}"
