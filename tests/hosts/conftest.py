"""The worlds the real-host suites run in, one fixture each (tests/conftest.py has the hosts' installs: ``host_bin``).

Each world is per test: the suites run ``j-cli setup`` into it, so no test
may see another's. The OpenCode suites build theirs with
``opencode_world.OpenCode`` on this worker's running OpenCode servers
(``opencode_hosts``, one per configuration, kept for the whole run); the one
exception is ``opencode_reader``, a project shared by the tests that only
call a tool and change nothing there, each in a session of its own.
"""

from __future__ import annotations

import shutil

import pytest
from codex_world import CodexWorld, no_process_outlives
from helpers import FIXTURES

# -- Claude Code (claude_world.py): a HOME and a project ---------------------------------------


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The Claude world's HOME: empty, and this test's ``HOME`` too."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path):
    """The Claude world's project: a copy of the fixture notebooks (tests/fixtures/protocol)."""
    folder = tmp_path / "project"
    shutil.copytree(FIXTURES, folder)
    return folder


# -- Codex (codex_world.py) ----------------------------------------------------------------------


@pytest.fixture
def codex_world(host_bin, tmp_path):
    """A :class:`~codex_world.CodexWorld` in this test's directory; afterwards nothing Codex started may still run there."""
    world = CodexWorld(host_bin, tmp_path)
    yield world
    no_process_outlives(tmp_path, "processes Codex started in the test's directories outlived it")


# -- OpenCode (opencode_world.py): one running server per configuration ----------------------


@pytest.fixture(scope="session")
def opencode_hosts(host_bin, tmp_path_factory):
    """This worker's ``opencode serve`` processes, one per configuration, started on first use (tests/hosts/opencode_world.py)."""
    from opencode_world import OpenCodeHosts

    with OpenCodeHosts(host_bin, tmp_path_factory.mktemp("opencode")) as hosts:
        yield hosts


@pytest.fixture
def opencode_reader(opencode_hosts):
    """The project-scope OpenCode world shared by the tests that only call a tool and change nothing in it (``OpenCodeHosts.reader``)."""
    return opencode_hosts.reader()
