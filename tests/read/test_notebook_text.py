"""``j-cli notebook text``: a notebook as plain text, any other file unchanged (ripgrep's ``--pre`` contract)."""

from __future__ import annotations

import base64
import glob
import os
import shlex
import shutil
import subprocess
import sys

import pytest
from helpers import BIN, JCLI, REPO, run_cli
from notebook_world import build_world


@pytest.fixture
def world(tmp_path):
    return build_world(tmp_path / "ws")


def _ripgrep() -> str | None:
    """``rg`` on PATH, else the one the pinned Codex package ships (tests/hosts)."""
    found = shutil.which("rg")
    if found:
        return found
    vendored = sorted(glob.glob(str(REPO / "tests/hosts/node_modules/@openai/codex-linux-*/vendor/*/codex-path/rg")))
    return vendored[0] if vendored else None


def test_a_notebook_prints_its_cells_text_outputs_and_a_line_per_image(world):
    result = run_cli("notebook", "text", "rich.ipynb", cwd=world)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert text.startswith("# %% [cell 0] [markdown]\n# A needle heading\n")
    assert (
        "# %% [cell 1]\nx = 1\nprint('needle in source')\n# [cell 1 output 0: stream stdout]\n    first line\n    needle in stdout\n"
        in text
    )
    assert "# [cell 1 output 1: stream stderr]\n    needle in stderr\n" in text  # colour codes removed
    assert "# [cell 1 output 2: text/html]\n    <b>needle in html</b>\n" in text
    assert '# [cell 1 output 4: application/json]\n    {"key": "needle in json"}\n' in text
    assert "# [cell 1 output 5: error]\n    ---------\n    NeedleError: needle in traceback\n" in text
    assert text.endswith("# %% [cell 2]\ny = 2\n")
    assert "\x1b" not in text and "iVBOR" not in text  # no escapes, no base64
    (image,) = [line for line in text.splitlines() if "image/png" in line]
    assert image.startswith("# [cell 1 output 3: image/png ") and " KiB: " in image
    command = shlex.split(image.split(": ", 2)[2].rstrip("]"))
    assert command[:3] == ["j-cli", "notebook", "output"]
    read = run_cli("-j", *command[1:], cwd=world)
    assert read.returncode == 0, read.stderr
    png = base64.b64decode(read.json()["selected"]["data"])
    assert png.startswith(b"\x89PNG") and f"{len(png) / 1024:.1f} KiB" in image


@pytest.mark.parametrize(
    "name, data",
    [
        ("notes.txt", b"needle\r\nin a text file\n"),
        ("blob.bin", bytes(range(256)) * 64),
        ("percent.py", b"# %%\nx = 1\n"),
        ("broken.ipynb", b'{"cells": [ not json'),
        ("v5.ipynb", b'{"nbformat": 5, "cells": []}'),
        ("empty.ipynb", b""),
    ],
)
def test_any_other_file_is_printed_byte_for_byte(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    result = run_cli("notebook", "text", name, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, data, b"")


def test_fifos_devices_and_missing_files_are_coded_errors_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.ipynb")
    os.mkfifo(tmp_path / "pipe.txt")
    for name in ("pipe.ipynb", "pipe.txt", "/dev/zero"):
        result = run_cli("-j", "notebook", "text", name, cwd=tmp_path)
        assert result.returncode == 1 and result.error()["code"] == "NOTEBOOK_READ_FAILED", (name, result.stderr)
    missing = run_cli("-j", "notebook", "text", "nowhere.ipynb", cwd=tmp_path)
    assert missing.returncode == 1 and missing.error()["code"] == "FILE_NOT_FOUND"


def test_the_preprocessor_path_imports_neither_click_nor_nbformat(world):
    probe = (
        "import sys\n"
        "from jcli.__main__ import main\n"
        "code = main(['notebook', 'text', sys.argv[1]])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'nbformat', 'mcp', 'psutil', 'watchfiles'))\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    for name in ("notes.txt", "rich.ipynb"):
        proc = subprocess.run([sys.executable, "-c", probe, name], cwd=world, capture_output=True, timeout=60)
        assert proc.stderr.decode().splitlines()[-1] == "0 []", proc.stderr


def test_ripgrep_searches_notebooks_as_text_through_the_preprocessor(world):
    rg = _ripgrep()
    if rg is None:
        pytest.skip("no ripgrep here (nor in the pinned Codex package): the contract tests above still hold")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    assert shutil.which("j-cli-notebook-text", path=env["PATH"]) == JCLI + "-notebook-text"
    for pre in (["--pre-glob", "*.ipynb"], []):  # the efficient form, and the preprocessor run for every file
        proc = subprocess.run(
            [rg, "--pre", "j-cli-notebook-text", *pre, "--sort", "path", "--no-heading", "-n", "needle in (stderr|json|a text file)"],
            cwd=world,
            capture_output=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.decode().splitlines()
        assert lines == [
            "notes.txt:1:needle in a text file",
            "rich.ipynb:12:    needle in stderr",
            'rich.ipynb:21:    {"key": "needle in json"}',
        ], lines
    base64 = [rg, "-c", "iVBOR", "rich.ipynb"]  # the PNG's base64: in the file, never in its text
    assert subprocess.run(base64, cwd=world, capture_output=True, timeout=60).stdout == b"1\n"
    through = subprocess.run([rg, "--pre", "j-cli-notebook-text", *base64[1:]], cwd=world, capture_output=True, timeout=60, env=env)
    assert through.returncode == 1, through.stderr
