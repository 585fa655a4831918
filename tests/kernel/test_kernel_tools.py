"""``kernelspec inspect-file`` (no server) and ``session kill A B ...`` (against a real Jupyter Server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import run_cli

from jcli_sidecar.pair.percent import read_header

HEADER_PY = """\
# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %%
x = 1
"""
NOTEBOOK = {
    "cells": [],
    "metadata": {
        "kernelspec": {"name": "ir", "display_name": "R", "language": "R"},
        "language_info": {"name": "R", "version": "4.3.1", "codemirror_mode": "r", "file_extension": ".r"},
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}
NO_SERVER = {"JCLI_JUPYTER_SERVER_URL": "http://127.0.0.1:9", "JCLI_JUPYTER_SERVER_TOKEN": "unused"}


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No server to reach: the URL points at a closed port (a command that tried would fail)."""
    for name, value in NO_SERVER.items():
        monkeypatch.setenv(name, value)
    return tmp_path


def inspect(path, cwd, *flags):
    result = run_cli(*flags, "kernelspec", "inspect-file", str(path), cwd=cwd)
    return result, (result.json() if flags and result.returncode == 0 else None)


def test_a_notebook_asks_through_its_metadata(offline):
    (offline / "r.ipynb").write_text(json.dumps(NOTEBOOK))
    before = (offline / "r.ipynb").stat()
    result, doc = inspect("r.ipynb", offline, "-j")
    assert result.returncode == 0, result.stderr
    assert doc["requested"] is True and doc["source"] == "notebook" and doc["source_path"] == str(offline / "r.ipynb")
    assert doc["kernelspec"] == NOTEBOOK["metadata"]["kernelspec"] and doc["language_info"] == NOTEBOOK["metadata"]["language_info"]
    # upstream jupyter-jcli's names, as its inspect-file prints them
    assert (doc["path"], doc["kernel_name"], doc["kernel_display_name"], doc["kernel_language"]) == ("r.ipynb", "ir", "R", "R")
    assert doc["extension_language"] is None
    human, _ = inspect("r.ipynb", offline)
    assert human.returncode == 0 and human.stdout.decode().splitlines() == [
        "ir  R  R",
        f"from the notebook's metadata: {offline / 'r.ipynb'}",
    ]
    after = (offline / "r.ipynb").stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)  # a read changes nothing


def test_a_py_asks_through_its_jupytext_header_even_beside_a_pair(offline):
    (offline / "a.py").write_text(HEADER_PY)
    (offline / "a.ipynb").write_text(json.dumps(NOTEBOOK))  # the header wins over the pair
    result, doc = inspect("a.py", offline, "-j")
    assert result.returncode == 0
    assert doc["source"] == "py_header" and doc["kernelspec"] == {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    assert doc["extension_language"] == "python" and doc["language_info"] is None
    human, _ = inspect("a.py", offline)
    assert human.stdout.decode().splitlines()[0] == "python3  Python 3 (ipykernel)  python"
    assert "jupytext header" in human.stdout.decode()


@pytest.mark.slow
def test_the_header_jupytext_writes_is_read(offline):
    nb = {**NOTEBOOK, "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": "1", "outputs": [], "execution_count": None}]}
    (offline / "made.ipynb").write_text(json.dumps(nb))
    made = subprocess.run([sys.executable, "-m", "jupytext", "--to", "py:percent", "made.ipynb"], cwd=offline, capture_output=True)
    assert made.returncode == 0, made.stderr
    os.unlink(offline / "made.ipynb")  # only the header can answer now
    result, doc = inspect("made.py", offline, "-j")
    assert result.returncode == 0 and doc["source"] == "py_header" and doc["kernel_name"] == "ir"


def test_a_py_without_a_header_asks_through_its_pair(offline):
    (offline / "b.py").write_text("# %%\nx = 1\n")
    (offline / "b.ipynb").write_text(json.dumps(NOTEBOOK))
    result, doc = inspect("b.py", offline, "-j")
    assert result.returncode == 0 and doc["source"] == "paired_notebook" and doc["source_path"] == str(offline / "b.ipynb")
    assert doc["kernel_name"] == "ir" and doc["extension_language"] == "python"


@pytest.mark.parametrize(
    ("name", "text"),
    [("plain.py", "print(1)\n"), ("lone.py", "# %%\nx = 1\n"), ("empty.ipynb", json.dumps({**NOTEBOOK, "metadata": {}}))],
)
def test_a_file_that_asks_for_nothing_says_so(offline, name, text):
    (offline / name).write_text(text)
    result, doc = inspect(name, offline, "-j")
    assert result.returncode == 0
    assert doc["requested"] is False and doc["kernelspec"] is None and doc["source"] is None and doc["kernel_name"] is None
    human, _ = inspect(name, offline)
    assert human.returncode == 0 and human.stdout.decode().startswith(f"none requested by {name}")
    assert ("(language: python)" in human.stdout.decode()) == name.endswith(".py")


def test_a_jupyter_section_that_is_not_yaml_is_a_coded_read_error(offline):
    (offline / "bad.py").write_text("# ---\n# jupyter:\n#   kernelspec: [unclosed\n# ---\n\n# %%\nx = 1\n")
    for flags in (["-j"], []):
        result, _ = inspect("bad.py", offline, *flags)
        assert result.returncode == 1 and b"NOTEBOOK_READ_FAILED" in result.stderr and b"YAML" in result.stderr
        assert b"Traceback" not in result.stderr


def test_header_parsing_is_yaml_not_patterns():
    quoted = "# ---\n# jupyter:\n#   kernelspec: {name: 'py # 3', display_name: \"x: y\"}\n# ---\n"
    assert read_header(quoted, "q.py") == {"kernelspec": {"name": "py # 3", "display_name": "x: y"}}
    assert read_header("# ---\n# jupyter: 1\n", "open.py") is None  # never closed: no header
    assert read_header("x = 1\n# ---\n", "late.py") is None
    assert read_header("# ---\n# jupyter: [unclosed\n# ---\n", "front.py") == {}  # not a jupyter: section: a raw cell, as in jupytext


@pytest.mark.parametrize("kind", ["missing", "fifo", "directory", "other-extension"])
def test_hostile_paths_get_coded_errors_without_blocking(offline, kind):
    target = offline / ("x.txt" if kind == "other-extension" else "x.ipynb")
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "other-extension":
        target.write_text("{}")
    expected = {
        "missing": "FILE_NOT_FOUND",
        "fifo": "NOTEBOOK_READ_FAILED",
        "directory": "NOTEBOOK_READ_FAILED",
        "other-extension": "USAGE_ERROR",
    }
    result, _ = inspect(target.name, offline, "-j")
    assert result.returncode == (2 if kind == "other-extension" else 1)
    assert result.error()["code"] == expected[kind]


# -- session kill A B ... -------------------------------------------------------------


@pytest.fixture
def two_sessions(use_jupyter, tmp_path):
    names = [f"kill-{i}-{os.urandom(3).hex()}" for i in range(2)]
    rows = [run_cli("-j", "session", "create", "-n", name, cwd=tmp_path).json() for name in names]
    yield rows
    for row in rows:
        run_cli("session", "kill", row["id"], cwd=tmp_path)


def live_ids(cwd) -> set[str]:
    return {row["id"] for row in run_cli("-j", "session", "list", cwd=cwd).json()["sessions"]}


def test_one_bad_selector_kills_nothing_and_is_named(two_sessions, tmp_path):
    first, second = two_sessions
    for flags in (["-j"], []):
        result = run_cli(*flags, "session", "kill", first["name"], "no-such-session", second["id"], cwd=tmp_path)
        assert result.returncode == 1 and b"SESSION_NOT_FOUND" in result.stderr and b"no-such-session" in result.stderr
        assert {first["id"], second["id"]} <= live_ids(tmp_path)
    error = run_cli("-j", "session", "kill", first["name"], "no-such-session", cwd=tmp_path).error()
    assert error["selector"] == "no-such-session" and "killed" not in error


def test_several_selectors_are_each_killed_once(two_sessions, tmp_path):
    first, second = two_sessions
    result = run_cli("-j", "session", "kill", first["name"], second["id"][:8], first["id"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert doc["session_ids"] == [first["id"], second["id"]]
    assert [row["name"] for row in doc["killed"]] == [first["name"], second["name"]]
    assert not {first["id"], second["id"]} & live_ids(tmp_path)


def test_kill_in_human_mode_names_each_session(two_sessions, tmp_path):
    first, second = two_sessions
    result = run_cli("session", "kill", second["name"], first["name"], second["name"], cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.decode().splitlines() == [f"killed {second['id']} ({second['name']})", f"killed {first['id']} ({first['name']})"]
    usage = run_cli("session", "kill", cwd=tmp_path)
    assert usage.returncode == 2
