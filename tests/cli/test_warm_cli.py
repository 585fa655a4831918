"""The warm runner (tests/warm_cli.py) is only faster: what a call prints, reads and returns is the installed script's."""

from __future__ import annotations

import json
import os

import pytest
from helpers import run_cli, run_cli_warm

PAYLOAD = {"tool_name": "Bash", "tool_input": {"command": "jupyter nbconvert --execute --to notebook a.ipynb"}, "cwd": "."}


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (("--help",), b""),
        (("-j", "no-such-command"), b""),
        (("-j", "_hooks", "notebook-exec-guard"), json.dumps(PAYLOAD).encode()),
        (("-j", "_hooks", "notebook-exec-guard"), b"not json"),
        (("notebook", "text", "/dev/stdin"), b"{}"),
        (("-j", "notebook", "text", os.fsdecode(b"caf\xe9.ipynb")), b""),
    ],
    ids=["help", "usage-error", "hook-deny", "hook-bad-payload", "stdin-not-a-file", "name-not-utf8"],
)
def test_each_call_prints_and_returns_what_the_installed_script_does(tmp_path, args, stdin):
    cold = run_cli(*args, cwd=tmp_path, stdin=stdin)
    warm = run_cli_warm(*args, cwd=tmp_path, stdin=stdin)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)


def test_a_call_has_its_own_cwd_and_environment_and_leaves_the_next_none(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    first = run_cli_warm("-j", "setup", "codex", "--user", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert first.json()["config"] == str(home / ".codex" / "config.toml")
    assert (home / ".codex" / "config.toml").is_file()
    other = tmp_path / "other-home"
    other.mkdir()
    second = run_cli_warm("-j", "setup", "codex", "--user", cwd=tmp_path, env={**os.environ, "HOME": str(other)})
    assert second.json()["config"] == str(other / ".codex" / "config.toml") and second.json()["changed"] is True


def test_a_big_stdin_and_a_big_stdout_do_not_block_each_other(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "source": "x" * 4_000_000, "metadata": {}, "outputs": [], "execution_count": None}]}
    path = tmp_path / "big.ipynb"
    path.write_text(json.dumps({**notebook, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    cold = run_cli("notebook", "text", str(path), stdin=b"y" * 2_000_000)
    warm = run_cli_warm("notebook", "text", str(path), stdin=b"y" * 2_000_000)
    assert warm.returncode == cold.returncode == 0 and len(warm.stdout) > 4_000_000 and warm.stdout == cold.stdout
