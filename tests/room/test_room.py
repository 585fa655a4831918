"""Joining a notebook's collaboration room: a real Jupyter Server with jupyter-collaboration, a person as a real Y client.

j-cli joins as JupyterLab's front end does, reads the shared document,
writes outputs, counts and the running mark into it, and the person's
concurrent edit of another cell survives in the document and on disk once the
server saves. A 25 MB notebook's room syncs, and a dropped connection leaves the room lost, its writes refused; a server without collaboration,
a path outside the root, a missing notebook, a refused token or a room too
large for ``JCLI_ROOM_MAX_MB`` is ``live: false`` with the reason.
"""

from __future__ import annotations

import base64
import os
import socket
import time

import pytest
from room_world import code_cell, collaboration_server, notebook_file, person_in_room, wait_on_file

from jcli_sidecar.base import CellNotFound, RoomLost
from jcli_sidecar.kernel import JupyterServer
from jcli_sidecar.room.join import join_room


@pytest.fixture(scope="module")
def collab(tmp_path_factory, starts_jupyter):
    """One real Jupyter Server with collaboration for this module: ``(url, token, root)``."""
    root = tmp_path_factory.mktemp("collab-root")
    with collaboration_server(root) as (url, token):
        yield url, token, root


def _wait(condition, what: str, bound: float = 30.0):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"never {what} within {bound:g} s")


def _joined(url: str, token: str, path: str, **kwargs):
    joined = join_room(JupyterServer(url, token), path, **kwargs)
    assert joined.live, joined.reason
    return joined.room


def test_join_read_write_and_the_persons_edit_survives(collab):
    url, token, root = collab
    nb = notebook_file(
        root / "shared.ipynb",
        [
            code_cell("run-me", "print('x'); print('y')"),
            code_cell("theirs", "total = 1"),
            {"cell_type": "markdown", "id": "words", "metadata": {}, "source": "# Notes"},
        ],
    )
    with person_in_room(url, token, "shared.ipynb") as person:
        joined = join_room(JupyterServer(url, token), "shared.ipynb", session="analysis")
        assert joined.summary() == {"live": True, "live_reason": "joined the collaboration room of shared.ipynb as j-cli (analysis)"}
        room = joined.room
        with room:
            # It reads the document as the room holds it.
            shown = room.read()
            assert [cell["id"] for cell in shown["cells"]] == ["run-me", "theirs", "words"]
            assert shown["cells"][1]["source"] == "total = 1"

            # The person sees j-cli as a collaborator, in JupyterLab's awareness shape; j-cli sees the person.
            person.wait_for(lambda: any(s.get("user", {}).get("name") == "j-cli (analysis)" for s in person.others()), "j-cli listed")
            me = next(s for s in person.others() if s.get("user", {}).get("username") == "j-cli")
            assert (
                me["autosave"] is True and me["user"]["initials"] == "JC" and me["user"]["color"].startswith("var(--jp-collaborator-color")
            )
            person.renew_awareness()
            _wait(lambda: [u["name"] for u in room.collaborators()] == ["Ada"], "saw the person")

            # j-cli writes a run into the document while the person types in another cell.
            room.set_running("run-me", True)
            person.wait_for(lambda: person.notebook.ycells[0].get("execution_state") == "running", "the running mark")

            def type_note(notebook):
                source = notebook.ycells[1]["source"]
                source += "  # checked by Ada"

            person.edit(type_note)
            room.append_output("run-me", {"output_type": "stream", "name": "stdout", "text": "x\n"})
            room.append_output("run-me", {"output_type": "stream", "name": "stdout", "text": "y\n"})
            room.append_output("run-me", {"output_type": "display_data", "data": {"text/plain": "42"}, "metadata": {}})
            room.set_execution_count("run-me", 1)
            room.set_running("run-me", False)
            room.flush(30)

            # The person's document has j-cli's writes: streams joined as JupyterLab joins them.
            person.wait_for(lambda: person.cell("run-me")["execution_count"] == 1, "the execution count")
            outputs = person.cell("run-me")["outputs"]
            assert outputs == [
                {"output_type": "stream", "name": "stdout", "text": "x\ny\n"},
                {"output_type": "display_data", "data": {"text/plain": "42"}, "metadata": {}},
            ]
            person.wait_for(lambda: person.notebook.ycells[0].get("execution_state") == "idle", "the running mark cleared")

            # j-cli's document has the person's edit, merged.
            _wait(lambda: room.cell("theirs")["source"] == "total = 1  # checked by Ada", "merged the person's edit")

            # The server saves the merged document: both edits are on disk.
            saved = wait_on_file(
                nb,
                lambda doc: doc["cells"][0]["outputs"] == outputs and doc["cells"][1]["source"] == "total = 1  # checked by Ada",
                "j-cli's outputs and the person's edit",
            )
            assert saved["cells"][0]["execution_count"] == 1 and saved["cells"][2]["source"] == "# Notes"

            # Clearing outputs; a cell the document does not have is refused and sends nothing.
            room.clear_outputs("run-me")
            person.wait_for(lambda: person.cell("run-me")["outputs"] == [], "the outputs cleared")
            with pytest.raises(CellNotFound):
                room.append_output("no-such-cell", {"output_type": "stream", "name": "stdout", "text": "lost?\n"})
            with pytest.raises(CellNotFound):
                room.append_output("words", {"output_type": "stream", "name": "stdout", "text": "a markdown cell has none\n"})
        # Leaving: the person sees j-cli go; a write after it is refused, coded.
        person.wait_for(lambda: not any(s.get("user", {}).get("username") == "j-cli" for s in person.others()), "j-cli leave")
        assert not room.live
        with pytest.raises(RoomLost):
            room.set_execution_count("run-me", 2)
        assert person.cell("run-me")["execution_count"] == 1


def test_a_25_mb_notebook_room_syncs_within_its_bound(collab):
    url, token, root = collab
    image = base64.b64encode(os.urandom(19 * 1024 * 1024)).decode("ascii")  # about 25 MiB as base64
    output = {"output_type": "display_data", "data": {"image/png": image, "text/plain": "<Figure>"}, "metadata": {}}
    nb = notebook_file(root / "big.ipynb", [code_cell("plot", "plot()", [output]), code_cell("after", "x = 1")])
    assert nb.stat().st_size > 25 * 1024 * 1024
    room = _joined(url, token, "big.ipynb")
    with room:
        assert room.cell("plot")["outputs"][0]["data"]["image/png"] == image
        room.set_execution_count("after", 7)
        room.flush(60)
        # The connection drops (its socket shut down under it): the room is lost, with the reason, and a write is refused, coded.
        room._socket._ws.sock.shutdown(socket.SHUT_RDWR)
        _wait(lambda: room.lost is not None, "saw the connection drop")
        assert room.lost.startswith("the connection dropped") and not room.live
        with pytest.raises(RoomLost, match="the connection dropped"):
            room.set_execution_count("after", 8)
    # The same room, with a bound below its first sync's size: no room, and the reason names the setting.
    small = join_room(JupyterServer(url, token), "big.ipynb", env={"JCLI_ROOM_MAX_MB": "4"})
    assert small.summary()["live"] is False
    assert "JCLI_ROOM_MAX_MB (4 MiB)" in small.reason and "too large" in small.reason


def test_no_room_is_a_reason_never_an_error(collab, tmp_path):
    url, token, root = collab
    notebook_file(root / "here.ipynb", [code_cell("a", "1")])
    server = JupyterServer(url, token)
    outside = join_room(server, "../elsewhere.ipynb")
    assert outside.summary() == {
        "live": False,
        "live_reason": "'../elsewhere.ipynb' is not a path under the server's root, so it has no room",
    }
    missing = join_room(server, "not-there.ipynb")
    assert not missing.live and "does not see not-there.ipynb under its root" in missing.reason
    refused = join_room(JupyterServer(url, "not-the-token"), "here.ipynb")
    assert not refused.live and "refused" in refused.reason
    hurried = join_room(server, "here.ipynb", timeout=0.001)
    assert not hurried.live and "did not answer" in hurried.reason

    plain_root = tmp_path / "plain"
    plain_root.mkdir()
    notebook_file(plain_root / "here.ipynb", [code_cell("a", "1")])
    with collaboration_server(plain_root, collaboration=False) as (plain_url, plain_token):
        plain = join_room(JupyterServer(plain_url, plain_token), "here.ipynb", timeout=120)  # a fresh server on a busy machine
    assert plain.summary() == {
        "live": False,
        "live_reason": "the server has no collaboration (jupyter-collaboration is not enabled: 404 on its session route)",
    }, plain.reason


def test_an_edit_through_the_room_and_a_save_keep_the_persons_typing(collab):
    url, token, root = collab
    nb = notebook_file(root / "edited.ipynb", [code_cell("one", "a = 1"), code_cell("two", "b = 2")])
    with person_in_room(url, token, "edited.ipynb") as person, _joined(url, token, "edited.ipynb") as room:

        def type_in_two(notebook):
            text = notebook.ycells[1]["source"]
            text += "  # Ada"

        person.edit(type_in_two)

        def insert_and_change(doc):
            doc["cells"].insert(1, code_cell("new", "c = 3"))
            doc["cells"][0]["source"] = "a = 10"
            return len(doc["cells"])

        assert room.edit(insert_and_change) == 3
        assert room.edit_cell("one", lambda cell: cell["metadata"].update(tags=["checked"])) is None
        person.wait_for(lambda: [c.get("id") for c in person.notebook.ycells] == ["one", "new", "two"], "the inserted cell")
        person.wait_for(lambda: person.cell("one")["metadata"].get("tags") == ["checked"], "the new tag")
        _wait(lambda: room.cell("two")["source"] == "b = 2  # Ada", "merged the person's typing")
        # Saved at once, as JupyterLab's save: the file holds both edits when the answer comes.
        assert room.save(30) == "success"
        saved = wait_on_file(nb, lambda doc: True, "the notebook", bound=1)
        assert [(c["id"], c["source"]) for c in saved["cells"]] == [("one", "a = 10"), ("new", "c = 3"), ("two", "b = 2  # Ada")]
        assert saved["cells"][0]["metadata"]["tags"] == ["checked"]
        assert person.cell("one")["source"] == "a = 10"
