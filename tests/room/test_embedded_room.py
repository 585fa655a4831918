"""The embedded Jupyter Server has collaboration rooms wherever jupyter-collaboration is installed, and keeps its stores private.

The server is started through j-cli's own code (``j-cli server start`` in a
workspace), with ``HOME`` a fresh directory of the test's: j-cli joins the
room of a notebook there, a person (a real Y client) in the same room sees
j-cli's write, and the room saves it to the file. Afterwards the workspace
holds only the notebook and ``HOME`` nothing at all: the file-id database,
the Y store, the session store, the notebook's checkpoint and the signing
secret are in the server's private runtime dir. With the extension turned
off by the user's Jupyter configuration, the same server (given the same
options) starts, and says collaboration is off. Without the extensions
installed, the server gets none of their options; a notebook's checkpoint is
kept under the private dir by its path, and never outside the root.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_cli
from room_world import code_cell, notebook_file, person_in_room, wait_on_file

from jcli_sidecar.base import workspace_hash
from jcli_sidecar.kernel import JupyterServer
from jcli_sidecar.room.join import join_room


def _files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def _private_dir(runtime: Path, workspace: Path) -> Path:
    return runtime / "jcli" / f"{workspace_hash(str(workspace.resolve()))}.jupyter"


def _fresh_home(tmp_path: Path, monkeypatch) -> Path:
    """An empty ``HOME``, with nothing else naming where Jupyter's user files go: all of them would land in it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_PATH"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_the_embedded_server_shares_the_notebooks_room_and_leaves_nothing_in_the_workspace(
    tmp_path, isolated_runtime, starts_jupyter, monkeypatch
):
    home = _fresh_home(tmp_path, monkeypatch)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    nb = notebook_file(workspace / "x.ipynb", [code_cell("first", "print('hi')"), code_cell("second", "total = 1")])
    started = run_cli("-j", "server", "start", cwd=workspace)
    assert started.returncode == 0, started.stderr
    state = started.json()
    try:
        assert state["collaboration"] is True
        status = run_cli("-j", "server", "status", cwd=workspace).json()
        assert status["running"] and status["collaboration"] is True and status["pid"] == state["pid"]
        assert b"collaboration on" in run_cli("server", "status", cwd=workspace).stdout

        with person_in_room(state["url"], state["token"], "x.ipynb") as person:
            joined = join_room(JupyterServer(state["url"], state["token"]), "x.ipynb")
            assert joined.live, joined.reason
            with joined.room as room:
                room.append_output("first", {"output_type": "stream", "name": "stdout", "text": "hi\n"})
                room.set_execution_count("first", 1)
                room.flush(30)
                person.wait_for(lambda: person.cell("first")["execution_count"] == 1, "j-cli's execution count")
                assert person.cell("first")["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
                # The room saves the notebook (after its save delay): j-cli's write is in the file.
                saved = wait_on_file(nb, lambda doc: doc["cells"][0]["execution_count"] == 1, "j-cli's write")
                assert saved["cells"][0]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
    finally:
        stopped = run_cli("-j", "server", "stop", cwd=workspace)
    assert stopped.json()["stopped"] is True

    # Nothing of the server's is in the workspace or in HOME; its stores are in its private runtime dir.
    assert _files(workspace) == ["x.ipynb"]
    assert _files(home) == []
    private = _private_dir(isolated_runtime, workspace)
    kept = set(_files(private))
    assert {"file_id_manager.db", "ystore.db", "collaboration_sessions.json", "checkpoints/x-checkpoint.ipynb", "notebook_secret"} <= kept


def test_with_collaboration_turned_off_the_embedded_server_starts_and_says_so(tmp_path, isolated_runtime, starts_jupyter, monkeypatch):
    home = _fresh_home(tmp_path, monkeypatch)
    config = tmp_path / "jupyter-config"
    config.mkdir()
    # Both collaboration extensions off in the user's configuration; j-cli still gives the server their options.
    off = {"ServerApp": {"jpserver_extensions": {"jupyter_server_ydoc": False, "jupyter_server_fileid": False}}}
    (config / "jupyter_server_config.json").write_text(json.dumps(off))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    notebook_file(workspace / "x.ipynb", [code_cell("first", "1")])
    started = run_cli("-j", "server", "start", cwd=workspace)
    assert started.returncode == 0, started.stderr
    state = started.json()
    try:
        assert state["collaboration"] is False
        assert run_cli("-j", "server", "status", cwd=workspace).json()["collaboration"] is False
        assert b"collaboration off" in run_cli("server", "status", cwd=workspace).stdout
        joined = join_room(JupyterServer(state["url"], state["token"]), "x.ipynb")
        assert not joined.live and joined.reason
        assert JupyterServer(state["url"], state["token"]).status(timeout=30)  # the server answers as ever
    finally:
        stopped = run_cli("-j", "server", "stop", cwd=workspace)
    assert stopped.json()["stopped"] is True
    assert _files(workspace) == ["x.ipynb"] and _files(home) == []


def test_a_server_without_the_collaboration_extensions_gets_none_of_their_options():
    from jcli.embedded import COLLABORATION_EXTENSION, FILE_ID_EXTENSION, ROOM_SAVE_DELAY, private_options

    bare = private_options("/private", frozenset())
    assert bare == ["--NotebookNotary.data_dir=/private", "--PrivateCheckpoints.directory=/private/checkpoints"]
    full = private_options("/private", frozenset({FILE_ID_EXTENSION, COLLABORATION_EXTENSION}))
    assert full[: len(bare)] == bare
    assert full[len(bare) :] == [
        "--BaseFileIdManager.db_path=/private/file_id_manager.db",
        "--SQLiteYStore.db_path=/private/ystore.db",
        "--YDocExtension.session_store_path=/private/collaboration_sessions.json",
        f"--YDocExtension.document_save_delay={ROOM_SAVE_DELAY:g}",
    ]
    assert ROOM_SAVE_DELAY == 1.0  # jupyter-collaboration's own default, kept


def test_checkpoints_are_kept_under_the_private_dir_by_the_notebooks_path_and_never_outside_the_root(tmp_path):
    from tornado.web import HTTPError

    from jcli.embedded_app import PrivateCheckpoints

    root, private = tmp_path / "workspace", tmp_path / "private"
    (root / "sub").mkdir(parents=True)
    checkpoints = PrivateCheckpoints(root_dir=str(root), directory=str(private / "checkpoints"))
    assert checkpoints.checkpoint_path("checkpoint", "x.ipynb") == str(private / "checkpoints" / "x-checkpoint.ipynb")
    assert checkpoints.checkpoint_path("checkpoint", "/sub/y.ipynb") == str(private / "checkpoints" / "sub" / "y-checkpoint.ipynb")
    with pytest.raises(HTTPError):
        checkpoints.checkpoint_path("checkpoint", "../outside.ipynb")
    assert _files(root) == ["sub"]
