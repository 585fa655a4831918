"""A script written for upstream jupyter-jcli 0.9.7 runs unchanged against j-cli.

``tests/fixtures/upstream/upstream_script.sh`` holds command lines of
upstream's README and skill (their placeholders filled in), including the
spellings j-cli accepts for upstream's sake (``docs/migration.md``). It runs
with ``set -euo pipefail`` in a git work tree holding ``analysis.py``, on the
shared Jupyter Server, with this install's ``j-cli`` first on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from helpers import JCLI, TESTS

UPSTREAM = TESTS / "fixtures" / "upstream"


@pytest.mark.timeout(600)
def test_an_upstream_script_runs_unchanged(tmp_path, use_jupyter, exec_path):
    work = tmp_path / "work"
    home = tmp_path / "home"
    work.mkdir()
    home.mkdir()
    exec_path(work)
    shutil.copy(UPSTREAM / "analysis.py", work)
    script = UPSTREAM / "upstream_script.sh"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "DSH_HOME": str(home / ".dsh"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATH": f"{os.path.dirname(JCLI)}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    proc = subprocess.run(["bash", "-x", str(script)], cwd=work, env=env, capture_output=True, timeout=540)
    shown = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 0, shown[-3000:]
    assert "Traceback (most recent call last):\n  File" not in shown and "\x1b[" not in shown
    ran = [line for line in proc.stderr.decode().splitlines() if line.startswith("+ j-cli ")]
    listed = [line for line in script.read_text().splitlines() if line.startswith("j-cli ")]
    assert len(ran) >= len(listed) > 40  # every line ran, none skipped
    assert (work / "analysis.ipynb").exists() and (work / "copy.ipynb").exists()
