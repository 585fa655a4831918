"""The world the live-room tests need: a real Jupyter Server with jupyter-collaboration, and a person in the room.

The server is Jupyter Server with the server part of jupyter-collaboration
(jupyter-server-ydoc), started as a process of its own (its file-id and Y
stores under the test's directory); a server without it is the same server
with that extension turned off.

The person is a real Y client, written apart from j-cli's: its own
websocket (``websocket-client`` used directly, not j-cli's wire), pycrdt's
sync and awareness helpers and jupyter-ydoc's ``YNotebook``, as JupyterLab's
front end speaks to the room. A thread reads what the room sends; the
person's edits are sent as the front end sends them (one update per change),
and :meth:`Person.wait_for` polls a real condition of its document with a
bound (no sleeps).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from helpers import jupyter_server_process

__all__ = ["Person", "collaboration_server", "notebook_file", "person_in_room"]


def server_options(root: Path, collaboration: bool) -> list[str]:
    """The command-line options of a test server with jupyter-collaboration on (or off), its stores under ``root``."""
    state = root / "runtime"
    return [
        f"--ServerApp.jpserver_extensions=jupyter_server_ydoc={collaboration}",
        f"--BaseFileIdManager.db_path={state / 'file_id_manager.db'}",
        f"--SQLiteYStore.db_path={state / 'ystore.db'}",
        f"--YDocExtension.session_store_path={state / 'collaboration_sessions.json'}",
    ]


@contextlib.contextmanager
def collaboration_server(root: Path, *, collaboration: bool = True):
    """A real Jupyter Server on ``root`` (with collaboration unless told otherwise): yields ``(url, token)``."""
    with jupyter_server_process(root, *server_options(root, collaboration)) as (port, token):
        yield f"http://127.0.0.1:{port}", token


def notebook_file(path: Path, cells: list[dict[str, Any]]) -> Path:
    """Write a notebook (nbformat 4.5, cells with ids) at ``path``."""
    doc = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(doc, indent=1))
    return path


def code_cell(cell_id: str, source: str, outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"cell_type": "code", "id": cell_id, "metadata": {}, "source": source, "execution_count": None, "outputs": outputs or []}


class Person:
    """A person in the room: a Y client of their own, editing the shared notebook as JupyterLab's front end does."""

    def __init__(self, url: str, token: str, path: str, name: str = "Ada") -> None:
        import urllib.request

        import websocket
        from jupyter_ydoc import YNotebook
        from pycrdt import Awareness, Doc

        request = urllib.request.Request(
            f"{url}/api/collaboration/session/{quote(path)}",
            data=json.dumps({"format": "json", "type": "notebook"}).encode(),
            method="PUT",
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            session = json.loads(answer.read())
        room = f"json:notebook:{session['fileId']}?sessionId={session['sessionId']}"
        self.doc = Doc()
        self.awareness = Awareness(self.doc)
        self.notebook = YNotebook(self.doc, self.awareness)
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # notified at every message the room sends
        self.synced = threading.Event()
        self.ws = websocket.create_connection(
            f"{url.replace('http://', 'ws://')}/api/collaboration/room/{room}",
            header=[f"Authorization: token {token}"],
            timeout=60,
        )
        self.ws.settimeout(None)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        from pycrdt import create_awareness_message, create_sync_message

        with self.lock:
            self.ws.send_bytes(create_sync_message(self.doc))
        assert self.synced.wait(60), "the person's first sync did not complete"
        with self.lock:
            user = {"username": name.lower(), "name": name, "display_name": name, "initials": name[:1], "avatar_url": None, "color": None}
            self.awareness.set_local_state({"user": user, "autosave": True})
            self.ws.send_bytes(create_awareness_message(self.awareness.encode_awareness_update([self.awareness.client_id])))

    def renew_awareness(self) -> None:
        """Send the person's awareness state again, as the front end does every 15 s (the room relays a state only
        when it is sent: one who joins later learns of the person at the next renewal)."""
        from pycrdt import create_awareness_message

        with self.lock:
            self.awareness.set_local_state(self.awareness.get_local_state())
            self.ws.send_bytes(create_awareness_message(self.awareness.encode_awareness_update([self.awareness.client_id])))

    def _read(self) -> None:
        import websocket
        from pycrdt import YMessageType, YSyncMessageType, handle_sync_message, read_message

        while True:
            try:
                opcode, message = self.ws.recv_data()
            except (OSError, websocket.WebSocketException):
                return
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                return
            if not message or opcode != websocket.ABNF.OPCODE_BINARY:
                continue
            with self.lock:
                if message[0] == YMessageType.SYNC:
                    reply = handle_sync_message(message[1:], self.doc)
                    if reply is not None:
                        self.ws.send_bytes(reply)
                    if message[1] == YSyncMessageType.SYNC_STEP2:
                        self.synced.set()
                elif message[0] == YMessageType.AWARENESS:
                    self.awareness.apply_awareness_update(read_message(message[1:]), "room")
                self.changed.notify_all()

    def edit(self, change) -> None:
        """Make ``change(notebook)`` in one transaction and send its update, as the front end sends a keystroke's."""
        from pycrdt import create_update_message

        with self.lock:
            before = self.doc.get_state()
            with self.doc.transaction():
                change(self.notebook)
            self.ws.send_bytes(create_update_message(self.doc.get_update(before)))

    def cell(self, cell_id: str) -> dict[str, Any]:
        with self.lock:
            for ycell in self.notebook.ycells:
                if ycell.get("id") == cell_id:
                    return self.notebook._cell_to_py(ycell)
        raise KeyError(cell_id)

    def others(self) -> list[dict[str, Any]]:
        """The awareness states of everyone else in the room."""
        with self.lock:
            return [state for client, state in self.awareness.states.items() if client != self.awareness.client_id and state]

    def wait_for(self, condition, what: str, bound: float = 30.0) -> None:
        """Wait until ``condition()`` holds in the person's document, checked at each message the room sends, at most ``bound`` seconds."""
        with self.changed:
            if not self.changed.wait_for(condition, bound):
                raise AssertionError(f"the person never saw {what} within {bound:g} s")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close(timeout=1)
        self.reader.join(5)


@contextlib.contextmanager
def person_in_room(url: str, token: str, path: str, name: str = "Ada"):
    person = Person(url, token, path, name)
    try:
        yield person
    finally:
        person.close()


def wait_on_file(path: Path, condition, what: str, bound: float = 30.0) -> Any:
    """Poll the notebook file at ``path`` until ``condition(its JSON)`` holds, at most ``bound`` seconds; returns the JSON
    (as nbformat reads it: a text saved as a list of lines joined)."""
    import nbformat

    deadline = time.monotonic() + bound
    last = None
    while time.monotonic() < deadline:
        try:
            last = json.loads(json.dumps(nbformat.reads(path.read_text(), as_version=4)))
        except (OSError, ValueError, nbformat.reader.NotJSONError):
            last = None
        if last is not None and condition(last):
            return last
        time.sleep(0.05)
    raise AssertionError(f"{path.name} never held {what} within {bound:g} s")
