"""Shared test plumbing: isolation, the fixture notebooks, running the CLI.

Every test gets its own ``XDG_RUNTIME_DIR`` and ``JCLI_SIDECAR=off``; the
CLI is run as the installed ``j-cli`` console script, exactly as users do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES


@pytest.fixture(autouse=True)
def isolated_runtime(tmp_path_factory, monkeypatch):
    """A private runtime dir per test, and no sidecar unless a test asks."""
    runtime = tmp_path_factory.mktemp("xdg-runtime")
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JCLI_SIDECAR", "off")
    yield runtime


@pytest.fixture
def fixture_dir(tmp_path) -> Path:
    """A private copy of tests/fixtures/protocol (tests may not touch the originals)."""
    target = tmp_path / "protocol"
    shutil.copytree(FIXTURES, target)
    return target
