"""The warm runner (tests/warm_cli.py) is only faster: what a call prints, reads and returns is the installed script's.

``helpers.run_cli`` forks most calls from it; these hold each forked call (``warm``) to
the same call of the installed script (``run_cli(..., cold=True)``).
"""

from __future__ import annotations

import json
import os

import pytest
from helpers import _START_ENV, JCLI, CliResult, run_cli
from warm_cli import run_warm


def warm(*args: str, cwd, stdin: bytes = b"", env=None) -> CliResult:
    """One call forked from the warm parent, whatever its environment."""
    return CliResult(run_warm(JCLI, args, cwd, stdin, env, _START_ENV, timeout=60))


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
    cold = run_cli(*args, cwd=tmp_path, stdin=stdin, cold=True)
    forked = warm(*args, cwd=tmp_path, stdin=stdin)
    assert (forked.returncode, forked.stdout, forked.stderr) == (cold.returncode, cold.stdout, cold.stderr)


def test_a_call_has_its_own_cwd_and_environment_and_leaves_the_next_none(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    first = warm("-j", "setup", "codex", "--user", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert first.json()["config"] == str(home / ".codex" / "config.toml")
    assert (home / ".codex" / "config.toml").is_file()
    other = tmp_path / "other-home"
    other.mkdir()
    second = warm("-j", "setup", "codex", "--user", cwd=tmp_path, env={**os.environ, "HOME": str(other)})
    assert second.json()["config"] == str(other / ".codex" / "config.toml") and second.json()["changed"] is True


def test_a_big_stdin_and_a_big_stdout_do_not_block_each_other(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "source": "x" * 4_000_000, "metadata": {}, "outputs": [], "execution_count": None}]}
    path = tmp_path / "big.ipynb"
    path.write_text(json.dumps({**notebook, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    cold = run_cli("notebook", "text", str(path), stdin=b"y" * 2_000_000, cold=True)
    forked = warm("notebook", "text", str(path), cwd=tmp_path, stdin=b"y" * 2_000_000)
    assert forked.returncode == cold.returncode == 0 and len(forked.stdout) > 4_000_000 and forked.stdout == cold.stdout


def test_a_call_that_changes_what_the_interpreter_reads_at_start_starts_the_script(tmp_path):
    """``PYTHONPATH`` (like the locale or ``PYTHON*`` flags) is read as an interpreter starts: a fork would not see it."""
    site = tmp_path / "site"
    site.mkdir()
    starts = tmp_path / "starts"
    (site / "sitecustomize.py").write_text(f"open({str(starts)!r}, 'a').write('started\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    assert warm("--help", cwd=tmp_path, env=env).returncode == 0
    assert not starts.exists()  # forked: the new PYTHONPATH never ran
    assert run_cli("--help", cwd=tmp_path, env=env).returncode == 0
    assert starts.read_text() == "started\n"  # run_cli started the script, as a shell would


def test_a_call_while_another_holds_the_warm_parent_starts_the_script(tmp_path):
    """Calls made at once from threads stay at once: the warm parent takes one at a time, the others start the script."""
    import warm_cli

    with warm_cli._one_at_a_time:
        assert warm_cli.run_warm_if_free(JCLI, ("--help",), tmp_path, b"", dict(os.environ), _START_ENV, timeout=60) is None
        done = run_cli("-j", "no-such-command", cwd=tmp_path)
    assert done.returncode == 2 and done.error()["code"] == "USAGE_ERROR"


_ENV_READS_AT_IMPORT = """
import json, os, sys
read = set()
get, walk = os._Environ.__getitem__, os._Environ.__iter__
os._Environ.__getitem__ = lambda self, key: (read.add(key), get(self, key))[1]
os._Environ.__iter__ = lambda self: (read.add("*"), walk(self))[1]
for name in sys.argv[1:]:
    __import__(name)
print(json.dumps(sorted(read)))
"""


def test_what_the_warm_parent_imports_reads_from_the_environment_only_what_sends_a_call_to_the_script():
    """A module that read, say, ``HOME`` at import would keep the parent's value in every forked call.

    The warm parent's imports may read only variables that make ``run_cli`` start the
    script when a call sets them otherwise (click's gettext reads the locale's).
    """
    import subprocess
    import sys

    from helpers import _READ_AT_START
    from warm_cli import WARM_MODULES

    done = subprocess.run([sys.executable, "-c", _ENV_READS_AT_IMPORT, *WARM_MODULES], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert [name for name in read if not name.startswith(_READ_AT_START)] == []
