"""Helpers for the tests: fixture paths, cases.json, running the installed CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures" / "protocol"
REPO = TESTS.parent
BIN = Path(sys.executable).parent
JCLI = str(BIN / "j-cli")


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


def run_cli(*args: str, cwd: Path | str | None = None, stdin: bytes | None = None, env=None) -> CliResult:
    """Run the installed ``j-cli`` with ``args``; stdout and stderr as bytes."""
    proc = subprocess.run(
        [JCLI, *args],
        cwd=cwd,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=env,
        timeout=60,
    )
    return CliResult(proc)


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


def sidecars_under(runtime: Path, markers=("jcli_sidecar", "jcli-sidecar")) -> list:
    """Live processes (sidecars by default) whose XDG_RUNTIME_DIR is ``runtime``."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if not any(marker in part for part in cmdline for marker in markers):
            continue
        try:
            if proc.environ().get("XDG_RUNTIME_DIR") == str(runtime) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def servers_under(runtime: Path) -> list:
    """Live embedded Jupyter Servers started under the runtime dir ``runtime``."""
    return sidecars_under(runtime, markers=("jupyter_server", "jcli.embedded_server"))


def sidecars_for_workspaces_in(folder: Path) -> list:
    """Live sidecars (whatever their runtime dir) serving a workspace inside ``folder``."""
    import psutil

    prefix = os.path.realpath(folder) + os.sep
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] == psutil.STATUS_ZOMBIE or not any("jcli_sidecar" in part for part in cmdline):
            continue
        if "--workspace" in cmdline[:-1] and (os.path.realpath(cmdline[cmdline.index("--workspace") + 1]) + os.sep).startswith(prefix):
            found.append(proc)
    return found
