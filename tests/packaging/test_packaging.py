"""The distribution as pip builds it: no setuptools warnings, every core subpackage and every plugin file inside."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

PLUGIN_FILES = ["jcli/plugins/sidecar-client.mjs", "jcli/plugins/opencode/jcli.js", "jcli/plugins/dsh/jcli.ts"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The wheel of this checkout, built by pip from a copy of the sources (the build writes beside them); and what the build printed."""
    import shutil

    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "jcli_sidecar", "client"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, source / name, ignore=shutil.ignore_patterns("node_modules", "__pycache__"))
        else:
            shutil.copy2(src, source / name)
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("*.whl")
    return built, proc.stdout + proc.stderr


@pytest.mark.slow
def test_building_prints_no_setuptools_warning(wheel):
    _, output = wheel
    assert "would be ignored" not in output and "SetuptoolsDeprecationWarning" not in output, output


@pytest.mark.slow
def test_the_wheel_holds_every_plugin_file_and_every_core_module(wheel):
    built, _ = wheel
    names = set(zipfile.ZipFile(built).namelist())
    assert set(PLUGIN_FILES) <= names
    core = {str(p.relative_to(REPO)) for p in (REPO / "jcli_sidecar").rglob("*.py") if "__pycache__" not in p.parts}
    assert core and core <= names
    assert not [n for n in names if "node_modules" in n or n.endswith(".test.mjs")]
