"""Shared test plumbing: isolation, the fixture notebooks, running the CLI.

Every test gets its own ``XDG_RUNTIME_DIR`` and ``JCLI_SIDECAR=off``; the
CLI is run as the installed ``j-cli`` console script, exactly as users do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES, sidecars_under


@pytest.fixture(autouse=True)
def isolated_runtime(tmp_path_factory, monkeypatch):
    """A private runtime dir per test, and no sidecar unless a test asks.

    Teardown stops every sidecar started under this runtime dir, and fails
    the test if any was still alive.
    """
    runtime = tmp_path_factory.mktemp("xdg-runtime")
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JCLI_SIDECAR", "off")
    yield runtime
    survivors = sidecars_under(runtime)
    for proc in survivors:
        proc.kill()
    for proc in survivors:
        proc.wait(10)
    assert not survivors, f"sidecars survived the test: {[p.pid for p in survivors]}"


@pytest.fixture
def sidecar_on(monkeypatch, isolated_runtime):
    """Enable the sidecar for this test; stop (politely) whatever it started."""
    monkeypatch.delenv("JCLI_SIDECAR")
    yield isolated_runtime
    for proc in sidecars_under(isolated_runtime):
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def fixture_dir(tmp_path) -> Path:
    """A private copy of tests/fixtures/protocol (tests may not touch the originals)."""
    target = tmp_path / "protocol"
    shutil.copytree(FIXTURES, target)
    return target
