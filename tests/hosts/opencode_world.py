"""The OpenCode worlds of the real-host tests: a HOME, a project, j-cli's plugin, a scripted model, a running OpenCode.

:class:`OpenCodeHosts` (one per test run and pytest worker, the session
fixture ``opencode_hosts``) keeps one ``opencode serve`` per configuration:
plugin scope (its HOME), network (a loopback-only namespace, or this
machine's loopback) and environment (``JCLI_*``, ``PATH``). Each is started
on first use and kept for every test of that configuration; at most
:attr:`OpenCodeHosts.KEEP` run at once. :class:`OpenCode` is one test's
world: a fresh project (OpenCode's server takes the directory per request,
so each project gets an instance of its own: its config, its plugins), the
plugin installed by the real ``j-cli setup opencode`` (project or user
scope), and the dependency OpenCode would fetch seeded into each config dir.

:meth:`OpenCode.turn` drives one turn over OpenCode's HTTP API: a new
session in the project, one prompt, whose model is ``tests/hosts/model_server.py``
reached through a custom provider of the given provider package (named in
the project's ``opencode.json``, under a URL prefix of that project's own, so
every turn plays its own script on the one model server of its network).
:meth:`OpenCode.call` is a one-step turn that returns the tool part OpenCode
recorded (what the tool returned, which the model received verbatim).
:meth:`OpenCode.run_tool` still starts a whole process (``opencode debug
agent build --tool``, no model, no plugin hooks), for the tests about what
OpenCode does at its own start.

The provider packages a turn uses (``@ai-sdk/openai-compatible``,
``@ai-sdk/openai``, ``@ai-sdk/anthropic``) are bundled in OpenCode's binary:
OpenCode installs a provider package into its cache only when it is not one
of its bundled ones, so a turn needs nothing but the seeded plugin
dependency. An offline server runs in a network namespace whose only
interface is its loopback, shared with the model server (:class:`LoopbackOnly`),
with a registry address on a closed port there: nothing it tried could reach
beyond it. The test reaches it from a thread that joined the namespace.
"""

from __future__ import annotations

import ctypes
import http.client
import itertools
import json
import os
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from helpers import BIN, FIXTURES, run_cli, servers_under, sidecars_under
from hostbins import host_env, offline_prefix, seed_opencode_dir
from model_server import Say, ScriptedModel, Step, ToolCall

NOTEBOOK = "kernel_v4.5.ipynb"
#: Switches for everything OpenCode would otherwise fetch or start on its own.
QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
}
LOAD_FAILURES = ("failed to load plugin", "Plugin export is not a function")
T = TypeVar("T")
_CLONE_NEWNET = 0x40000000
#: A registry that refuses every connection, asked once (npm's retries would wait a minute).
NO_REGISTRY = {"npm_config_registry": "http://127.0.0.1:9/", "npm_config_fetch_retries": "0"}

#: The provider packages OpenCode routes differently, and the wire dialect each speaks.
PROVIDER_PACKAGES = {"@ai-sdk/openai-compatible": "chat", "@ai-sdk/openai": "responses", "@ai-sdk/anthropic": "anthropic"}


def provider_config(url: str, npm: str = "@ai-sdk/openai-compatible", images: bool | None = True) -> dict:
    """An OpenCode config whose only model is the scripted one at ``url``, through provider package ``npm``.

    ``images``: the model declares image input (True), text only (False), or
    no modalities at all (None: OpenCode then takes the model for text only).
    """
    model: dict = {"name": "m", "tool_call": True}
    if images is not None:
        model["modalities"] = {"input": ["text", "image"] if images else ["text"], "output": ["text"]}
    provider = {"npm": npm, "name": "scripted", "options": {"baseURL": f"{url}/v1", "apiKey": "none"}, "models": {"m": model}}
    return {
        "model": "scripted/m",
        "small_model": "scripted/m",
        "permission": {"bash": "allow", "edit": "allow"},
        # OpenCode's undo snapshots (a git copy of the project at each step), language
        # servers and formatters cost a turn a second of CPU and touch nothing of j-cli's.
        "snapshot": False,
        "lsp": False,
        "formatter": False,
        "provider": {"scripted": provider},
    }


class LoopbackOnly:
    """A network namespace whose only interface is its own loopback, up: a context manager.

    A holder process (``unshare -n``) keeps the namespace; :meth:`bound`
    creates a listening socket inside it (from a thread that joined it, so
    this process's own network is untouched), and :attr:`prefix` runs a
    command inside it (``nsenter``). Where the machine cannot make one (no
    ``unshare``, ``nsenter`` or ``ip``, no privilege), or with ``enabled``
    False, it is a no-op: the machine's own loopback.
    """

    def __init__(self, enabled: bool = True):
        tools = [shutil.which(name) for name in ("nsenter", "ip")]
        self.enabled = enabled and bool(offline_prefix()) and all(tools)
        self.prefix: list[str] = []
        self._holder: subprocess.Popen | None = None

    def __enter__(self) -> LoopbackOnly:
        if self.enabled:
            holder = subprocess.Popen(
                [*offline_prefix(), "sh", "-c", "ip link set lo up && echo up && exec cat"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            self._holder = holder
            assert holder.stdout is not None and holder.stdout.readline() == b"up\n", "no loopback in a new network namespace"
            self.prefix = [shutil.which("nsenter") or "nsenter", f"--net=/proc/{holder.pid}/ns/net", "--"]
        return self

    def __exit__(self, *exc) -> None:
        if self._holder is not None:
            self._holder.communicate(timeout=30)  # closes its stdin: the holder ends, and the namespace with it

    def bound(self, make: Callable[[], T]) -> T:
        """``make()``, run in a thread inside the namespace: a socket it binds listens there."""
        if self._holder is None:
            return make()
        result: list = []

        def inside() -> None:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/proc/{self._holder.pid}/ns/net", os.O_RDONLY)  # type: ignore[union-attr]
            try:
                if libc.setns(fd, _CLONE_NEWNET) != 0:
                    result.append(OSError(ctypes.get_errno(), "setns"))
                    return
            finally:
                os.close(fd)
            try:
                result.append(make())
            except BaseException as exc:  # handed to the caller's thread
                result.append(exc)

        thread = threading.Thread(target=inside)  # its namespace ends with it; the socket keeps the namespace's
        thread.start()
        thread.join()
        if isinstance(result[0], BaseException):
            raise result[0]
        return result[0]


class OpenCodeServer:
    """One ``opencode serve`` with its HOME and environment, in ``net``; stopped by :meth:`close`.

    Its log (``--print-logs``) goes to a file: a plugin load failure logged
    there fails the turn it was logged in (or the first after it).
    """

    def __init__(self, bin_path: Path, home: Path, folder: Path, net: LoopbackOnly, env: dict[str, str]):
        self.net = net
        self.log = folder / "opencode.log"
        self._seen = 0  # how far into the log turns have looked for load failures
        folder.mkdir(parents=True)
        with open(self.log, "wb") as stderr:
            self.proc = subprocess.Popen(
                [*net.prefix, str(bin_path), "serve", "--print-logs", "--hostname", "127.0.0.1", "--port", "0"],
                cwd=folder,
                env=host_env(home, PWD=str(folder), **env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        ports: queue.Queue[int | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read_stdout, args=(ports,), daemon=True)
        self._reader.start()
        try:
            port = ports.get(timeout=120)
        except queue.Empty:
            port = None
        if port is None:
            self.close()
            raise AssertionError(f"opencode serve never listened (exit {self.proc.returncode}): {self.log.read_text()[-2000:]}")
        self.port = port

    def _read_stdout(self, ports: queue.Queue) -> None:
        """Hands on the port OpenCode says it listens on (None if it ends first), and drains the rest."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            found = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", line)
            if found:
                ports.put(int(found.group(1)))
        ports.put(None)

    def request(self, method: str, path: str, directory: Path, body: dict | None = None, timeout: float = 100):
        """One request to the server for ``directory`` (from inside its network namespace); the decoded JSON answer."""

        def send():
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            try:
                headers = {"Content-Type": "application/json", "x-opencode-directory": str(directory)}
                conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
                answer = conn.getresponse()
                return answer.status, answer.read()
            finally:
                conn.close()

        status, data = self.net.bound(send)
        assert status == 200, f"{method} {path}: {status} {data[:2000]!r}"
        return json.loads(data)

    def prompt(self, directory: Path, text: str = "go") -> list[dict]:
        """A new session in ``directory``, one prompt, the turn to its end: the session's messages."""
        session = self.request("POST", "/session", directory, {})["id"]
        done = self.request("POST", f"/session/{session}/message", directory, {"parts": [{"type": "text", "text": text}]})
        with open(self.log, "rb") as fh:  # what the server logged since the last turn looked (its start, for the first)
            fh.seek(self._seen)
            log = fh.read().decode(errors="replace")
            self._seen = fh.tell()
        for failure in LOAD_FAILURES:
            assert failure not in log, [ln for ln in log.splitlines() if failure in ln]
        assert not done["info"].get("error"), (done["info"]["error"], log[-2000:])
        return self.request("GET", f"/session/{session}/message", directory)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class OpenCodeHosts:
    """The OpenCode servers of one test run, one per configuration, each started on first use; a context manager.

    A configuration is the plugin scope (one HOME per scope, which every
    server of that scope shares as OpenCode's processes share a user's), the
    network (offline: one loopback-only namespace for every offline server
    and its model server; else this machine's loopback) and the environment.
    The servers' runtime dir is this run's own: a sidecar or Jupyter Server
    left under it fails :meth:`close`.
    """

    #: Servers kept running at once; starting one more stops the one used longest ago.
    KEEP = 4

    def __init__(self, host_bin: Path, root: Path):
        self.bin = host_bin / "opencode"
        self.root = root
        self.runtime = root / "runtime"
        self.runtime.mkdir(mode=0o700)
        self._servers: dict[tuple, OpenCodeServer] = {}
        self._nets: dict[bool, tuple[LoopbackOnly, ScriptedModel]] = {}
        self._count = itertools.count()
        self._reader: OpenCode | None = None

    def __enter__(self) -> OpenCodeHosts:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def home(self, scope: str) -> Path:
        """The HOME of ``scope``'s servers, its config dir seeded (``j-cli setup opencode --user`` installs the plugin there)."""
        home = self.root / f"home-{scope}"
        if not home.exists():
            seed_opencode_dir(home / ".config" / "opencode")
        return home

    def network(self, offline: bool) -> tuple[LoopbackOnly, ScriptedModel]:
        """The network namespace (offline) or this machine's loopback, and the model server listening there."""
        if offline not in self._nets:
            net = LoopbackOnly(offline).__enter__()
            model = net.bound(lambda: ScriptedModel([]))
            self._nets[offline] = (net, model.__enter__())
        return self._nets[offline]

    def server(self, scope: str, offline: bool, env: dict[str, str]) -> OpenCodeServer:
        """The running server of this configuration, started now if it is not."""
        key = (scope, offline, tuple(sorted(env.items())))
        if key in self._servers:
            self._servers[key] = self._servers.pop(key)  # the most recently used last
            return self._servers[key]
        while len(self._servers) >= self.KEEP:
            self._servers.pop(next(iter(self._servers))).close()
        net, _ = self.network(offline)
        full = {"XDG_RUNTIME_DIR": str(self.runtime), **env, **QUIET}
        server = OpenCodeServer(self.bin, self.home(scope), self.root / f"server-{next(self._count)}", net, full)
        self._servers[key] = server
        return server

    def reader(self) -> OpenCode:
        """A project-scope world kept for the run, for the tests that only call a tool in it and change nothing there.

        OpenCode bootstraps each directory it serves once (its config, its
        plugins: about 2 s of CPU, three times what a turn in a known
        directory costs), so those tests share one project. Each call is a
        session of its own; what a test checks is its own call's tool part.
        """
        if self._reader is None:
            folder = self.root / "reader"
            folder.mkdir()
            self._reader = OpenCode(self, folder)
        return self._reader

    def stop(self, scope: str, offline: bool, env: dict[str, str]) -> None:
        """Stop the server of this configuration, if one runs (for one a single test started for itself)."""
        server = self._servers.pop((scope, offline, tuple(sorted(env.items()))), None)
        if server is not None:
            server.close()

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()
        for net, model in self._nets.values():
            model.__exit__(None, None, None)
            net.__exit__(None, None, None)
        self._nets.clear()
        survivors = sidecars_under(self.runtime) + servers_under(self.runtime)
        for proc in survivors:
            proc.kill()
        assert not survivors, f"OpenCode's turns left sidecars or servers running: {[p.pid for p in survivors]}"


class OpenCode:
    """One test's OpenCode world: a fresh project with the j-cli plugin (or the plugin in its scope's HOME)."""

    def __init__(self, hosts: OpenCodeHosts, tmp_path: Path, scope: str = "project"):
        self.hosts = hosts
        self.scope = scope
        self.bin = hosts.bin
        self.home = hosts.home(scope)
        self.project = tmp_path / "project"
        self.project.mkdir()
        shutil.copyfile(FIXTURES / NOTEBOOK, self.project / NOTEBOOK)
        self.path = f"{BIN}{os.pathsep}{os.environ['PATH']}"  # a project file names plain j-cli: PATH finds it
        self.user_config = self.home / ".config" / "opencode"
        env = host_env(self.home, PATH=self.path)
        setup = run_cli("-j", "setup", "opencode", f"--{scope}", cwd=self.project, env=env)
        assert setup.returncode == 0, setup.stderr
        self.setup = setup.json()
        seed_opencode_dir(self.project / ".opencode")
        #: The URL prefix of this world's model on its network's model server.
        self.key = f"world-{os.urandom(6).hex()}"
        self._provider: tuple | None = None
        #: The messages of the last turn's session, as OpenCode's API gives them.
        self.messages: list[dict] = []

    def run_tool(
        self, params: dict, path: str | None = None, sidecar: bool = False, tool: str = "read_notebook_output"
    ) -> subprocess.CompletedProcess:
        """``opencode debug agent build --tool TOOL`` (the read by default): a whole OpenCode process runs the tool, no model."""
        env = host_env(self.home, PATH=path or self.path, JCLI_SIDECAR="on" if sidecar else "off", **QUIET)
        argv = [
            *offline_prefix(),
            str(self.bin),
            "debug",
            "agent",
            "build",
            "--print-logs",
            "--tool",
            tool,
            "--params",
            json.dumps(params),
        ]
        proc = subprocess.run(argv, cwd=self.project, env=env, capture_output=True, text=True, timeout=100)
        for failure in LOAD_FAILURES:
            assert failure not in proc.stderr, [ln for ln in proc.stderr.splitlines() if failure in ln]
        assert f"Tool {tool} not found" not in proc.stderr, proc.stderr[-2000:]
        return proc

    def read(self, params: dict, **turn) -> dict:
        """What ``read_notebook_output`` returned for a call that succeeded (:meth:`call`)."""
        state = self.call("read_notebook_output", params, **turn)
        assert state["status"] == "completed", state
        return state

    def turn(
        self,
        script: list[Step],
        npm: str = "@ai-sdk/openai-compatible",
        images: bool | None = True,
        env: dict[str, str] | None = None,
        offline: bool = True,
    ) -> ScriptedModel:
        """One turn in a new session of this project whose model plays ``script``; returns the model with what it received.

        ``offline``: the server and the model server share a network
        namespace whose only interface is its own loopback
        (:class:`LoopbackOnly`), so the turn cannot reach anything else; a
        turn whose tools need this machine's loopback (a Jupyter Server)
        passes False. ``env`` (with every ``JCLI_*`` variable of this
        process) is part of the server's configuration. The turn must end
        well: no error on OpenCode's answer, no plugin load failure in the
        server's log, and every step of the script answered by a tool result.
        """
        server = self.hosts.server(self.scope, offline, self._env(env))
        _, models = self.hosts.network(offline)
        provider = (offline, npm, images)
        if self._provider is None:
            config = provider_config(f"{models.url}/{self.key}", npm, images)
            (self.project / "opencode.json").write_text(json.dumps(config))
            self._provider = provider
        # OpenCode keeps a directory's config for as long as it serves the directory.
        assert self._provider == provider, "a world keeps the provider and network of its first turn"
        model = models.mount(self.key, script)
        self.messages = server.prompt(self.project)
        assert model.requests, "the turn never reached the model"
        assert {seen.dialect for seen in model.requests} == {PROVIDER_PACKAGES[npm]}
        assert not list((self.home / ".cache").rglob("@ai-sdk")), "OpenCode installed a provider package it bundles"
        calls = sum(1 for step in script if not isinstance(step, Say))
        assert model.turn and len(model.turn[-1].tool_results) == calls, server.log.read_text(errors="replace")[-2000:]
        return model

    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        """A server's environment beyond HOME: this process's ``JCLI_*``, PATH, no sidecar, no registry, then ``env``."""
        mine = {k: v for k, v in os.environ.items() if k.startswith("JCLI_")}
        return {**mine, "PATH": self.path, "JCLI_SIDECAR": "off", **NO_REGISTRY, **(env or {})}

    def stop_server(self, env: dict[str, str] | None = None, offline: bool = True) -> None:
        """Stop the server :meth:`turn` with ``env`` and ``offline`` used (one this test alone needs)."""
        self.hosts.stop(self.scope, offline, self._env(env))

    def tool_parts(self) -> list[dict]:
        """The tool parts of the last turn's session, in order: each call's tool, input and state (what it returned)."""
        return [part for message in self.messages for part in message["parts"] if part["type"] == "tool"]

    def call(self, tool: str, params: dict, **turn) -> dict:
        """A one-step turn that calls ``tool`` with ``params``: the state OpenCode recorded of the call.

        ``status`` ``completed`` with the ``output``, ``title``, ``metadata``
        and ``attachments`` the tool returned, or ``error`` with the
        ``error``; the model received the output (or the error) verbatim.
        """
        model = self.turn([ToolCall(tool, params), Say()], **turn)
        (part,) = self.tool_parts()
        assert part["tool"] == tool and part["state"]["input"] == params, part
        state = part["state"]
        (received,) = tool_texts(model.turn[-1])
        if state["status"] == "completed":
            assert received == state["output"], (received, state["output"])
        else:
            assert state["status"] == "error" and state["error"] in received, (received, state)
        return state


def tool_texts(seen) -> list[str]:
    """The text of each tool result in one request, in order (a result's text parts joined)."""
    return ["".join(part.text for part in result if part.kind == "text") for result in seen.tool_results]
