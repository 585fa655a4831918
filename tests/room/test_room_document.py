"""The shared notebook's writes on a real YNotebook, and joins that end before any room: no server needed.

The writes are checked on a document of their own, then merged into a
second document as the room would merge them: a stream joins the last
output of its stream, a markdown cell or an unknown id is refused with
nothing changed, and a concurrent edit of another cell survives the merge.
"""

from __future__ import annotations

import socket

import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Doc

from jcli_sidecar.base import CellNotFound
from jcli_sidecar.kernel import JupyterServer
from jcli_sidecar.room.connection import awareness_state
from jcli_sidecar.room.document import append_output, cell_of, clear_outputs, set_execution_count, set_running
from jcli_sidecar.room.join import join_room, room_api_path

CELLS = {
    "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "source": "print(1)", "execution_count": None, "outputs": []},
        {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# title"},
        {"cell_type": "code", "id": "b", "metadata": {}, "source": "x = 1", "execution_count": None, "outputs": []},
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _pair() -> tuple[YNotebook, YNotebook]:
    """Two documents holding the same notebook, as j-cli and the person hold the room's."""
    mine = YNotebook(Doc())
    mine.set(CELLS)
    theirs = YNotebook(Doc())
    theirs.ydoc.apply_update(mine.ydoc.get_update())
    return mine, theirs


def test_writes_by_cell_id_merge_with_a_concurrent_edit():
    mine, theirs = _pair()
    with mine.ydoc.transaction():
        set_running(mine, "a", True)
        append_output(mine, "a", {"output_type": "stream", "name": "stdout", "text": "1\n"})
        append_output(mine, "a", {"output_type": "stream", "name": "stdout", "text": ["2\n", "3\n"]})
        append_output(mine, "a", {"output_type": "stream", "name": "stderr", "text": "warn\n"})
        append_output(mine, "a", {"output_type": "execute_result", "data": {"text/plain": "4"}, "metadata": {}, "execution_count": 1})
        set_execution_count(mine, "a", 1)
    source = theirs.ycells[2]["source"]
    source += "  # theirs"
    mine.ydoc.apply_update(theirs.ydoc.get_update(mine.ydoc.get_state()))
    theirs.ydoc.apply_update(mine.ydoc.get_update(theirs.ydoc.get_state()))
    for doc in (mine, theirs):
        assert cell_of(doc, "a")["outputs"] == [
            {"output_type": "stream", "name": "stdout", "text": "1\n2\n3\n"},
            {"output_type": "stream", "name": "stderr", "text": "warn\n"},
            {"output_type": "execute_result", "data": {"text/plain": "4"}, "metadata": {}, "execution_count": 1},
        ]
        assert cell_of(doc, "a")["execution_count"] == 1 and doc.ycells[0]["execution_state"] == "running"
        assert cell_of(doc, "b")["source"] == "x = 1  # theirs"
    set_running(mine, "a", False)
    clear_outputs(mine, "a")
    assert cell_of(mine, "a")["outputs"] == [] and mine.ycells[0]["execution_state"] == "idle"


def test_a_cell_that_cannot_take_the_write_is_refused_and_nothing_changes():
    mine, _ = _pair()
    before = mine.ydoc.get_state()
    with pytest.raises(CellNotFound, match="no cell of the shared notebook has the id 'gone'"):
        append_output(mine, "gone", {"output_type": "stream", "name": "stdout", "text": "x"})
    with pytest.raises(CellNotFound, match="not a code cell"):
        append_output(mine, "m", {"output_type": "stream", "name": "stdout", "text": "x"})
    assert mine.ydoc.get_state() == before


def test_paths_that_leave_the_root_have_no_room():
    assert room_api_path("a/b c.ipynb") == "a/b%20c.ipynb"
    for path in ("", "/abs.ipynb", "../up.ipynb", "a/../../up.ipynb", "a//b.ipynb", "./a.ipynb", "a\nb.ipynb"):
        assert room_api_path(path) is None, path
    joined = join_room(JupyterServer("http://127.0.0.1:9", "t"), "../up.ipynb")
    assert joined.summary() == {"live": False, "live_reason": "'../up.ipynb' is not a path under the server's root, so it has no room"}


def test_a_server_that_is_not_there_is_a_reason():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now: the connection is refused
    joined = join_room(JupyterServer(f"http://127.0.0.1:{port}", "t"), "a.ipynb", timeout=5)
    assert not joined.live and joined.room is None
    assert joined.reason.startswith("the collaboration session route did not answer (SERVER_UNAVAILABLE")


def test_the_awareness_state_is_the_front_ends_shape():
    state = awareness_state("report")
    assert state == {
        "user": {
            "username": "j-cli",
            "name": "j-cli (report)",
            "display_name": "j-cli (report)",
            "initials": "JC",
            "avatar_url": None,
            "color": "var(--jp-collaborator-color7)",
        },
        "autosave": True,
    }
