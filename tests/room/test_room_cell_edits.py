"""Cell edits through the collaboration room: the installed ``j-cli notebook cell ...`` while a person has the notebook open.

A real Jupyter Server with jupyter-collaboration and a person as a real Y
client (room_world.Person). While the person types in one cell, j-cli
replaces, inserts, moves and deletes others: each edit lands in the
person's document, the person's typing survives there and on disk, the
result says ``live`` and the file holds j-cli's edit when the command
returns (the server saved it; j-cli never wrote the file). A ``--if-source``
taken before the person changed that very cell is refused with the
person's source and nothing changes; an index names the cell it named
when j-cli looked, whatever the person inserts. The workspace's embedded
server, once started, is the one an edit goes through when no server is
named. No room (a server without collaboration) is the file path, said so.
"""

from __future__ import annotations

import os

import nbformat
import pytest
from helpers import run_cli
from room_world import code_cell, collaboration_server, notebook_file, person_in_room, wait_on_file

from jcli_sidecar.read.staleness import source_digest


@pytest.fixture(scope="module")
def collab(tmp_path_factory, starts_jupyter):
    """A collaboration server for this module: ``(root, env, url, token)``; env points j-cli at it."""
    root = tmp_path_factory.mktemp("edit-root")
    with collaboration_server(root) as (url, token):
        env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": url, "JCLI_JUPYTER_SERVER_TOKEN": token}
        env.pop("JCLI_LIVE", None)
        yield root, env, url, token


def cell_cli(root, env, *args):
    return run_cli("-j", "notebook", "cell", *args, cwd=root, env=env)


def on_disk(path) -> list[dict]:
    return [dict(cell) for cell in nbformat.read(str(path), as_version=4).cells]


def ids(cells) -> list[str]:
    return [cell["id"] for cell in cells]


def source_of(person, cell_id: str) -> str:
    source = person.cell(cell_id)["source"]
    return "".join(source) if isinstance(source, list) else source


def test_edits_land_in_the_persons_document_while_they_type_and_both_reach_the_file(collab, live_on):
    root, env, url, token = collab
    nb = notebook_file(
        root / "shared.ipynb",
        [
            code_cell("mine", "x = 1", [{"output_type": "stream", "name": "stdout", "text": "1\n"}]),
            code_cell("theirs", "total = 1"),
            code_cell("gone", "old = 0"),
        ],
    )
    sha = source_digest("x = 1")
    with person_in_room(url, token, "shared.ipynb") as person:
        person.edit(lambda notebook: notebook.ycells[1]["source"].insert(len("total = 1"), "\ntotal += 1  # Ada"))

        replaced = cell_cli(root, env, "replace", "shared.ipynb", "mine", "--source", "x = 2", "--if-source", sha)
        assert replaced.returncode == 0, replaced.stderr
        doc = replaced.json()
        assert doc["live"] is True and "joined the collaboration room of shared.ipynb" in doc["live_reason"]
        assert doc["saved"] is True and doc["source_sha"] == source_digest("x = 2") and doc["cell_index"] == 0
        person.wait_for(lambda: source_of(person, "mine") == "x = 2" and person.cell("mine")["outputs"] == [], "j-cli's replace")
        assert on_disk(nb)[0]["source"] == "x = 2"  # the server saved it before j-cli returned

        person.edit(lambda notebook: notebook.ycells[1]["source"].insert(0, "# typed while j-cli inserts\n"))
        inserted = cell_cli(root, env, "insert", "shared.ipynb", "--after", "theirs", "--type", "markdown", "--source", "## From j-cli")
        assert inserted.returncode == 0, inserted.stderr
        new_id = inserted.json()["cell_id"]
        deleted = cell_cli(root, env, "delete", "shared.ipynb", "gone", "--if-source", source_digest("old = 0"))
        assert deleted.returncode == 0 and deleted.json()["live"] is True, deleted.stderr
        moved = cell_cli(root, env, "move", "shared.ipynb", new_id, "--to", "0")
        assert moved.returncode == 0, moved.stderr

        expected_theirs = "# typed while j-cli inserts\ntotal = 1\ntotal += 1  # Ada"
        person.wait_for(lambda: [c.get("id") for c in person.notebook.get()["cells"]] == [new_id, "mine", "theirs"], "j-cli's edits")
        assert source_of(person, "theirs") == expected_theirs  # the person's typing survives in the document
        assert source_of(person, new_id) == "## From j-cli"

        def holds_all(saved):
            cells = saved["cells"]
            return ids(cells) == [new_id, "mine", "theirs"] and cells[2]["source"] == expected_theirs

        saved = wait_on_file(nb, holds_all, "j-cli's edits and the person's typing")
        assert saved["cells"][1]["source"] == "x = 2" and saved["cells"][0]["cell_type"] == "markdown"


def test_a_stale_if_source_is_refused_with_the_persons_source_and_nothing_changes(collab, live_on):
    root, env, url, token = collab
    nb = notebook_file(root / "stale.ipynb", [code_cell("a", "x = 1"), code_cell("b", "y = 2")])
    shown = run_cli("-j", "notebook", "show", "stale.ipynb", "--cell", "1", cwd=root, env=env).json()["cells"][0]
    assert shown["source_sha"] == source_digest("y = 2")
    with person_in_room(url, token, "stale.ipynb") as person:
        person.edit(lambda notebook: notebook.ycells[1]["source"].insert(0, "# Ada was here\n"))
        # The person's change may not be saved yet: the file still shows the old source, the room has the new one.
        before_doc = person.notebook.get()
        for op_args in (
            ["replace", "stale.ipynb", "b", "--source", "y = 3"],
            ["delete", "stale.ipynb", "b"],
            ["move", "stale.ipynb", "b", "--to", "0"],
        ):
            result = cell_cli(root, env, *op_args, "--if-source", shown["source_sha"])
            assert result.returncode == 1 and result.stdout == b"", result.stderr
            error = result.error()
            assert error["code"] == "CELL_CHANGED", error
            assert error["source"] == "# Ada was here\ny = 2" and error["source_sha"] == source_digest("# Ada was here\ny = 2")
            assert person.notebook.get() == before_doc
        assert [c["id"] for c in before_doc["cells"]] == ["a", "b"] and source_of(person, "b") == "# Ada was here\ny = 2"
        wait_on_file(nb, lambda saved: saved["cells"][1]["source"] == "# Ada was here\ny = 2", "the person's edit, alone")


def test_an_index_names_the_cell_it_named_when_j_cli_looked(collab, live_on):
    root, env, url, token = collab
    notebook_file(root / "index.ipynb", [code_cell("a", "a = 1"), code_cell("b", "b = 1")])
    with person_in_room(url, token, "index.ipynb") as person:
        done = cell_cli(root, env, "replace", "index.ipynb", "1", "--source", "b = 2")
        assert done.returncode == 0 and done.json()["cell_id"] == "b" and done.json()["live"] is True, done.stderr
        person.wait_for(lambda: source_of(person, "b") == "b = 2", "the replace by index")
        assert source_of(person, "a") == "a = 1"


def test_a_server_without_collaboration_is_the_file_path_said_so(tmp_path_factory, starts_jupyter):
    root = tmp_path_factory.mktemp("plain-root")
    nb = notebook_file(root / "plain.ipynb", [code_cell("a", "x = 1")])
    with collaboration_server(root, collaboration=False) as (url, token):
        env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": url, "JCLI_JUPYTER_SERVER_TOKEN": token}
        env.pop("JCLI_LIVE", None)
        done = cell_cli(root, env, "replace", "plain.ipynb", "a", "--source", "x = 5")
    assert done.returncode == 0, done.stderr
    doc = done.json()
    assert doc["live"] is False and "no collaboration" in doc["live_reason"] and "saved" not in doc
    assert on_disk(nb)[0]["source"] == "x = 5"


def test_a_notebook_without_ids_is_edited_by_index_through_the_room_and_saved_without_ids(collab, live_on):
    root, env, url, token = collab
    nb = root / "old.ipynb"
    nb.write_text(
        '{"cells": [{"cell_type": "code", "metadata": {}, "source": "a = 1", "execution_count": null, "outputs": []},'
        ' {"cell_type": "code", "metadata": {}, "source": "b = 1", "execution_count": null, "outputs": []}],'
        ' "metadata": {}, "nbformat": 4, "nbformat_minor": 4}'
    )
    with person_in_room(url, token, "old.ipynb") as person:
        refused = cell_cli(root, env, "delete", "old.ipynb", person.notebook.get()["cells"][0].get("id") or "x")
        assert refused.returncode == 1 and "by index" in refused.error()["message"]
        done = cell_cli(root, env, "replace", "old.ipynb", "1", "--source", "b = 2", "--if-source", source_digest("b = 1"))
        assert done.returncode == 0, done.stderr
        assert done.json()["live"] is True and done.json()["cell_id"] is None
        person.wait_for(lambda: [c["source"] for c in person.notebook.get()["cells"]] == ["a = 1", "b = 2"], "the replace by index")
    saved = wait_on_file(nb, lambda saved: [c["source"] for c in saved["cells"]] == ["a = 1", "b = 2"], "the edit")
    assert saved["nbformat_minor"] == 4 and all("id" not in cell for cell in saved["cells"])


def test_the_running_embedded_server_is_used_when_no_server_is_named(tmp_path, isolated_runtime, starts_jupyter, monkeypatch):
    monkeypatch.delenv("JCLI_LIVE", raising=False)
    monkeypatch.delenv("JCLI_JUPYTER_SERVER_URL", raising=False)
    monkeypatch.delenv("JCLI_JUPYTER_SERVER_TOKEN", raising=False)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    nb = notebook_file(workspace / "x.ipynb", [code_cell("first", "x = 1"), code_cell("second", "total = 1")])
    started = run_cli("-j", "server", "start", cwd=workspace)
    assert started.returncode == 0, started.stderr
    state = started.json()
    try:
        with person_in_room(state["url"], state["token"], "x.ipynb") as person:
            person.edit(lambda notebook: notebook.ycells[1]["source"].insert(0, "# Ada\n"))
            done = run_cli("-j", "notebook", "cell", "replace", "x.ipynb", "first", "--source", "x = 2", cwd=workspace)
            assert done.returncode == 0, done.stderr
            assert done.json()["live"] is True and done.json()["saved"] is True
            person.wait_for(lambda: source_of(person, "first") == "x = 2", "j-cli's replace")
            wait_on_file(nb, lambda saved: [c["source"] for c in saved["cells"]] == ["x = 2", "# Ada\ntotal = 1"], "both edits")
    finally:
        stopped = run_cli("-j", "server", "stop", cwd=workspace)
    assert stopped.json()["stopped"] is True
