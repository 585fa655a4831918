"""One temporary OpenCode world for the real-host tests: a HOME, a project, j-cli's plugin, a scripted model.

:class:`OpenCode` installs the plugin with the real ``j-cli setup opencode``
(project or user scope) and seeds the dependency OpenCode would fetch into
each config dir. :meth:`OpenCode.run_tool` runs one tool with no model
(``opencode debug agent build --tool``, which skips plugin hooks);
:meth:`OpenCode.turn` runs a whole ``opencode run`` turn whose model is
``tests/hosts/model_server.py`` on loopback, reached through a custom provider of
the given provider package.

The provider packages a turn uses (``@ai-sdk/openai-compatible``,
``@ai-sdk/openai``, ``@ai-sdk/anthropic``) are bundled in OpenCode's binary:
OpenCode installs a provider package into its cache only when it is not one
of its bundled ones, so a turn needs nothing but the seeded plugin
dependency. A turn runs in a network namespace of its own whose only
interface is its loopback, shared with the model server (:class:`LoopbackOnly`),
and with a registry address on a closed port there: nothing it tried could
reach beyond it.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

from helpers import BIN, FIXTURES, run_cli
from hostbins import host_env, offline_prefix, seed_opencode_dir
from model_server import Say, ScriptedModel, Step

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


class OpenCode:
    """One temporary OpenCode world: a HOME, a project, and the j-cli plugin in it."""

    def __init__(self, host_bin, tmp_path, scope="project"):
        self.bin = host_bin / "opencode"
        self.home = tmp_path / "home"
        self.project = tmp_path / "project"
        self.project.mkdir()
        shutil.copyfile(FIXTURES / NOTEBOOK, self.project / NOTEBOOK)
        self.path = f"{BIN}{os.pathsep}{os.environ['PATH']}"  # a project file names plain j-cli: PATH finds it
        self.user_config = self.home / ".config" / "opencode"
        env = host_env(self.home, PATH=self.path)
        setup = run_cli("-j", "setup", "opencode", f"--{scope}", cwd=self.project, env=env)
        assert setup.returncode == 0, setup.stderr
        self.setup = setup.json()
        seed_opencode_dir(self.user_config)
        seed_opencode_dir(self.project / ".opencode")

    def run_tool(
        self, params: dict, path: str | None = None, sidecar: bool = False, tool: str = "read_notebook_output"
    ) -> subprocess.CompletedProcess:
        """``opencode debug agent build --tool TOOL`` (the read by default): OpenCode runs the tool, no model."""
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

    def read(self, params: dict, path: str | None = None, sidecar: bool = False) -> dict:
        """The tool result ``run_tool`` printed, for a call that succeeded."""
        proc = self.run_tool(params, path, sidecar)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)["result"]

    def turn(
        self,
        script: list[Step],
        npm: str = "@ai-sdk/openai-compatible",
        images: bool | None = True,
        env: dict[str, str] | None = None,
        offline: bool = True,
    ) -> ScriptedModel:
        """One ``opencode run`` turn whose model plays ``script``; returns the model with what it received.

        ``offline``: OpenCode and the model server share a network namespace
        whose only interface is its own loopback (:class:`LoopbackOnly`), so
        the turn cannot reach anything else; a turn whose tools need this
        machine's loopback (a Jupyter Server) passes False. The turn must end
        well: OpenCode exits 0, loads the plugin, and every step of the
        script was answered by a tool result.
        """
        with LoopbackOnly(offline) as net:
            model = net.bound(lambda: ScriptedModel(script))
            with model:
                (self.user_config / "opencode.json").write_text(json.dumps(provider_config(model.url, npm, images)))
                # OpenCode takes the session directory from PWD, not from the process's cwd.
                extra = {"PATH": self.path, "PWD": str(self.project), "JCLI_SIDECAR": "off", **NO_REGISTRY, **(env or {}), **QUIET}
                proc = subprocess.run(
                    [*net.prefix, str(self.bin), "run", "--print-logs", "go"],
                    cwd=self.project,
                    env=host_env(self.home, **extra),
                    capture_output=True,
                    text=True,
                    timeout=100,
                )
        for failure in LOAD_FAILURES:
            assert failure not in proc.stderr
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert {seen.dialect for seen in model.requests} == {PROVIDER_PACKAGES[npm]}
        assert not list((self.home / ".cache").rglob("@ai-sdk")), "OpenCode installed a provider package it bundles"
        calls = sum(1 for step in script if not isinstance(step, Say))
        assert model.turn and len(model.turn[-1].tool_results) == calls, proc.stderr[-2000:]
        return model


def tool_texts(seen) -> list[str]:
    """The text of each tool result in one request, in order (a result's text parts joined)."""
    return ["".join(part.text for part in result if part.kind == "text") for result in seen.tool_results]
