"""The Codex world both Codex suites run in, and what they share: the fixture notebook's PNG, the protocol cases, and the check that no process outlives a test.

``tests/hosts/test_host_codex.py`` drives Codex's app server and
``tests/hosts/test_host_codex_turn.py`` whole ``codex exec`` turns; both run
in a :class:`CodexWorld` (the ``codex_world`` fixture of
``tests/hosts/conftest.py``), read the same fixture image and end by proving
that nothing Codex started in the test's directories is still running.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess

from codex_app_server import AppServer
from helpers import BIN, FIXTURES, load_cases, run_cli
from hostbins import host_env
from model_server import ScriptedModel

#: ``codex exec``'s limit for one whole turn.
TURN_TIMEOUT = 50


def protocol_case(name: str) -> dict:
    """One case of ``tests/fixtures/protocol`` by name."""
    return next(case for case in load_cases() if case["name"] == name)


def notebook_png(path) -> bytes:
    """The PNG bytes the notebook stores for cell 2, output 0 (its base64, decoded here)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)["cells"][2]["outputs"][0]["data"]["image/png"]
    return base64.b64decode("".join(data) if isinstance(data, list) else data)


def processes_in(tmp_path) -> list:
    """Live processes (not this one) whose cwd or command line is under ``tmp_path``."""
    import psutil

    root = os.path.realpath(tmp_path)
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cwd = proc.info["cwd"] or ""
        if cwd == root or cwd.startswith(root + os.sep) or any(root in part for part in proc.info["cmdline"] or []):
            found.append(proc)
    return found


def no_process_outlives(tmp_path, what: str) -> None:
    """Kill whatever still works in ``tmp_path``, then fail the test if anything did."""
    import psutil

    leaked = processes_in(tmp_path)
    for proc in leaked:
        proc.kill()
    psutil.wait_procs(leaked, timeout=10)
    assert not leaked, f"{what}: {[(p.pid, p.info['cmdline']) for p in leaked]}"


class CodexWorld:
    """A HOME and CODEX_HOME of their own, a project holding the fixture notebooks, and Codex run in it.

    The app server (:meth:`app_server`, with the user config the test
    writes) and whole turns (:meth:`configure` the scripted model, then
    :meth:`exec`) both run here; setup writes into it, so every test has its own.
    """

    def __init__(self, host_bin, tmp_path):
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(parents=True)
        self.user_config = self.codex_home / "config.toml"
        self.project = tmp_path / "project"
        shutil.copytree(FIXTURES, self.project)
        self.codex = str(host_bin / "codex")
        # j-cli first on PATH: a project-scope config names plain `j-cli`, and so does the model's shell.
        self.env = host_env(self.home, CODEX_HOME=self.codex_home, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
        self._started = 0

    def setup(self, *args: str) -> dict:
        """``j-cli -j setup codex ARGS`` in the project, as its JSON result."""
        done = run_cli("-j", "setup", "codex", *args, cwd=self.project, env=self.env)
        assert done.returncode == 0, done.stderr
        return done.json()

    def trust_project(self):
        """What a user writes (or Codex's trust prompt does) to trust the project."""
        with open(self.user_config, "a", encoding="utf-8") as fh:
            fh.write(f'\n[projects.{json.dumps(os.path.realpath(self.project))}]\ntrust_level = "trusted"\n')

    def app_server(self, *overrides) -> AppServer:
        """``codex app-server`` in the project dir (initialized); use it as a context manager."""
        self._started += 1
        server = AppServer(self.codex, self.env, self.project, self.tmp / f"app-server-{self._started}.stderr", overrides)
        try:
            info = server.initialize()
            assert os.path.realpath(info["codexHome"]) == os.path.realpath(self.codex_home), info
        except BaseException:
            server.close()
            raise
        return server

    def configure(self, model: ScriptedModel, model_name: str, extra: str = "") -> None:
        """The user config: the scripted model as provider, nothing that goes out, the project trusted."""
        self.user_config.write_text(
            f'model_provider = "jcli_test_model"\nmodel = "{model_name}"\n{extra}\n'
            "[analytics]\nenabled = false\n\n[features]\nplugins = false\n\n"
            f'[model_providers.jcli_test_model]\nname = "scripted model on loopback"\nbase_url = "{model.url}/v1"\n'
            'wire_api = "responses"\n\n'
            f'[projects.{json.dumps(os.path.realpath(self.project))}]\ntrust_level = "trusted"\n'
        )

    def trust_hooks(self) -> list[dict]:
        """Trust every hook as ``/hooks`` does: its current hash, from Codex's own ``hooks/list``, into the user config."""
        with AppServer(self.codex, self.env, self.project, self.tmp / "hooks-list.stderr") as server:
            server.initialize()
            listed = server.request("hooks/list", {"cwds": [str(self.project)]})
        hooks = [hook for entry in listed["data"] for hook in entry["hooks"]]
        with open(self.user_config, "a", encoding="utf-8") as fh:
            for hook in hooks:
                fh.write(f"\n[hooks.state.{json.dumps(hook['key'])}]\ntrusted_hash = {json.dumps(hook['currentHash'])}\n")
        return hooks

    def exec(self, *args: str, prompt: str = "Do the task.") -> subprocess.CompletedProcess:
        """``codex exec`` in the project, to the end of its turn."""
        argv = [self.codex, "exec", "--skip-git-repo-check", "--ephemeral", *args, prompt]
        done = subprocess.run(
            argv, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=TURN_TIMEOUT, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done
