"""One connection to a notebook's collaboration room: the Y document kept in sync, j-cli shown as a collaborator.

The room speaks the Y sync and awareness protocols over a websocket, as
JupyterLab's front end does; every message is made and read by pycrdt's own
helpers (``create_sync_message``, ``handle_sync_message``,
``create_update_message``, :class:`~pycrdt.Awareness`), the notebook's shape
by jupyter-ydoc's :class:`~jupyter_ydoc.YNotebook`: nothing of either
protocol is written here.

A reader thread takes every message the room sends (the person's edits,
their awareness) and applies it under the room's lock; a write takes the
same lock, changes the document in one transaction and sends the update it
made (the difference from the state before it). A renewal thread resends
j-cli's awareness state every 15 s, as y-protocols' awareness does, so the
server never drops j-cli as gone. :meth:`Room.flush` asks the room for its
state and waits for the answer: the server handles one connection's
messages in order, so every write sent before it has been applied there.

A connection that drops, or a message that cannot be applied, leaves the
room ``lost`` with the reason; a write after that raises ``ROOM_LOST``, so
a caller falls back to the file and says why.
"""

from __future__ import annotations

import threading

from ..base import RoomLost

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from jupyter_ydoc import YNotebook
    from pycrdt import Awareness, Doc

    from ..kernel import WebSocket

    T = TypeVar("T")

__all__ = ["AWARENESS_RENEW_SECONDS", "Room", "awareness_state"]

#: How often j-cli's awareness state is sent again: y-protocols renews at half its 30 s timeout.
AWARENESS_RENEW_SECONDS = 15.0

#: jupyter-collaboration's message type for its own JSON messages (a save request and its answer), beside Y's SYNC and AWARENESS.
_RAW = 2

#: The colour JupyterLab's front end gives a collaborator, from its palette (``--jp-collaborator-color1`` … ``7``).
_COLOR = "var(--jp-collaborator-color7)"


def awareness_state(session: str | None) -> dict[str, Any]:
    """The awareness state j-cli sets in a room: JupyterLab's front end's shape (``user``: the identity
    Jupyter Server hands a user; ``autosave``: whether the server saves the document after each change).

    Example:
        >>> awareness_state("nb1")["user"]["name"], awareness_state(None)["user"]["initials"]
        ('j-cli (nb1)', 'JC')
    """
    name = f"j-cli ({session})" if session else "j-cli"
    user = {"username": "j-cli", "name": name, "display_name": name, "initials": "JC", "avatar_url": None, "color": _COLOR}
    return {"user": user, "autosave": True}


class Room:
    """A joined room: ``notebook`` (the shared :class:`~jupyter_ydoc.YNotebook`), its writes and reads.

    Made by :func:`~jcli_sidecar.room.join.join_room`, already synced. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, socket: WebSocket, path: str, file_id: str, session: str | None) -> None:
        from jupyter_ydoc import YNotebook
        from pycrdt import Awareness, Doc

        self.path = path
        self.file_id = file_id
        self.doc: Doc = Doc()
        self.awareness: Awareness = Awareness(self.doc)
        self.notebook: YNotebook = YNotebook(self.doc, self.awareness)
        self.lost: str | None = None
        self._socket = socket
        self._session = session
        self._lock = threading.RLock()
        self._answers = threading.Condition(self._lock)
        self._step2 = 0  # SYNC_STEP2 messages received: each answers one of our SYNC_STEP1s, in order
        self._save_id = 0  # the last save request's number
        self._saved: dict[int, str] = {}  # the server's answers to save requests, by number
        self._unawaited: set[int] = set()  # save requests nobody waits for: their answers are dropped
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._read, name="jcli-room-reader", daemon=True)
        self._renewer = threading.Thread(target=self._renew, name="jcli-room-awareness", daemon=True)

    # -- the connection ----------------------------------------------------

    def start(self, timeout: float) -> None:
        """Sync with the room (our state asked for, the room's received) and show j-cli in it.

        Raises:
            RoomLost: the room closed, broke, or did not answer within ``timeout``.
        """
        self._reader.start()
        self.flush(timeout, what="the room's first sync")
        from pycrdt import create_awareness_message

        with self._lock:
            self.awareness.set_local_state(awareness_state(self._session))
            self._send(create_awareness_message(self.awareness.encode_awareness_update([self.awareness.client_id])))
        self._renewer.start()

    def flush(self, timeout: float, *, what: str = "the room") -> None:
        """Wait until the room has applied every write sent so far: ask for its state, wait for the answer.

        Raises:
            RoomLost: the room is lost, or did not answer within ``timeout``.
        """
        from pycrdt import create_sync_message

        with self._answers:
            self._check()
            wanted = self._step2 + 1
            self._send(create_sync_message(self.doc))
            if not self._answers.wait_for(lambda: self._step2 >= wanted or self.lost is not None, timeout):
                self._lose(f"{what} did not answer within {timeout:g} s")
            self._check()

    def close(self) -> None:
        """Leave the room: j-cli's awareness state cleared (the person sees j-cli go), then the connection closed."""
        if self._closing.is_set():
            return
        self._closing.set()
        from pycrdt import create_awareness_message

        with self._lock:
            if self.lost is None:
                try:
                    self.awareness.set_local_state(None)
                    self._send(create_awareness_message(self.awareness.encode_awareness_update([self.awareness.client_id])))
                except RoomLost:
                    pass
                self.lost = "j-cli left the room"
            self._answers.notify_all()
        self._socket.close()
        if self._reader.is_alive() and self._reader is not threading.current_thread():
            self._reader.join(5.0)

    def __enter__(self) -> Room:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def live(self) -> bool:
        """True while the connection holds."""
        return self.lost is None

    def _check(self) -> None:
        if self.lost is not None:
            raise RoomLost(f"the collaboration room of {self.path} is lost: {self.lost}", path=self.path, reason=self.lost)

    def _lose(self, reason: str) -> None:
        with self._answers:
            if self.lost is None:
                self.lost = reason
            self._answers.notify_all()
        self._closing.set()
        self._socket.close()

    def _send(self, message: bytes) -> None:
        from ..kernel import WireError

        try:
            self._socket.send_bytes(message)
        except WireError as exc:
            self._lose(f"the connection dropped ({exc})")
            self._check()

    def _read(self) -> None:
        """The reader thread: every message the room sends, applied in order, until the connection ends."""
        from ..kernel import WireError

        while True:
            try:
                message = self._socket.recv(None)
            except WireError as exc:
                self._lose("j-cli left the room" if self._closing.is_set() else f"the connection dropped ({exc})")
                return
            if isinstance(message, bytes) and message:
                try:
                    self._handle(message)
                except RoomLost:
                    return
                except Exception as exc:  # a message pycrdt cannot read: the document can no longer be trusted to match the room's
                    self._lose(f"the room sent a message that could not be applied ({type(exc).__name__})")
                    return

    def _handle(self, message: bytes) -> None:
        from pycrdt import YMessageType, YSyncMessageType, handle_sync_message, read_message

        if message[0] == YMessageType.SYNC and len(message) > 1:
            with self._answers:
                reply = handle_sync_message(message[1:], self.doc)
                if reply is not None:
                    self._send(reply)
                if message[1] == YSyncMessageType.SYNC_STEP2:
                    self._step2 += 1
                    self._answers.notify_all()
        elif message[0] == _RAW:
            self._raw(message)
        elif message[0] == YMessageType.AWARENESS:
            with self._lock:
                try:
                    self.awareness.apply_awareness_update(read_message(message[1:]), "room")
                except (ValueError, IndexError, RuntimeError, TypeError, AssertionError):
                    pass  # a peer's malformed awareness: it shows no one, and the document is untouched

    def _raw(self, message: bytes) -> None:
        """A JSON message of jupyter-collaboration's own (``RAW``): the answer to a save request is kept for :meth:`save`."""
        import json

        from pycrdt import Decoder

        try:
            decoder = Decoder(message)
            decoder.read_var_uint()
            said = json.loads(decoder.read_var_string())
        except (ValueError, IndexError, RuntimeError, TypeError):
            return  # not one of the messages j-cli asks for
        if isinstance(said, dict) and said.get("type") == "save" and isinstance(said.get("responseTo"), int):
            with self._answers:
                if said["responseTo"] in self._unawaited:
                    self._unawaited.discard(said["responseTo"])
                    return
                self._saved[said["responseTo"]] = str(said.get("status"))
                self._answers.notify_all()

    def _renew(self) -> None:
        """The renewal thread: j-cli's awareness state sent again every :data:`AWARENESS_RENEW_SECONDS`."""
        from pycrdt import create_awareness_message

        while not self._closing.wait(AWARENESS_RENEW_SECONDS):
            with self._lock:
                if self.lost is not None:
                    return
                self.awareness.set_local_state(self.awareness.get_local_state())
                try:
                    self._send(create_awareness_message(self.awareness.encode_awareness_update([self.awareness.client_id])))
                except RoomLost:
                    return

    # -- reads and writes --------------------------------------------------

    def write(self, change: Any, *args: Any) -> None:
        """Run ``change(notebook, *args)`` in one transaction and send the update it made.

        Raises:
            RoomLost: the room is lost (nothing is changed), or the update could not be sent.
            CellNotFound: ``change`` names a cell the document does not have (nothing is sent).
        """
        from pycrdt import create_update_message

        with self._lock:
            self._check()
            before = self.doc.get_state()
            with self.doc.transaction(origin="j-cli"):
                change(self.notebook, *args)
            update = self.doc.get_update(before)
            self._send(create_update_message(update))

    def append_output(self, cell_id: str, output: dict[str, Any]) -> None:
        """Append ``output`` to cell ``cell_id`` (a stream joins the last output of the same stream)."""
        from .document import append_output

        self.write(append_output, cell_id, output)

    def clear_outputs(self, cell_id: str) -> None:
        from .document import clear_outputs

        self.write(clear_outputs, cell_id)

    def set_execution_count(self, cell_id: str, count: int | None) -> None:
        from .document import set_execution_count

        self.write(set_execution_count, cell_id, count)

    def set_running(self, cell_id: str, running: bool) -> None:
        from .document import set_running

        self.write(set_running, cell_id, running)

    def edit(self, change: Callable[[dict[str, Any]], T]) -> T:
        """Change the shared notebook as a dict: ``change(notebook)`` edits a copy of the document as it is now (every
        cell with its id, :func:`~jcli_sidecar.room.document.notebook_dict`), and what it changed, only that, is
        made in the room in one transaction (:func:`~jcli_sidecar.room.document.apply_notebook`); returns what
        ``change`` returns. Nothing is sent when ``change`` raises.

        Raises:
            RoomLost: the room is lost, or the update could not be sent.
        """
        import copy

        from .document import apply_notebook, notebook_dict

        with self._lock:
            self._check()
            before = notebook_dict(self.notebook)
            after = copy.deepcopy(before)
            answer = change(after)
            self.write(apply_notebook, before, after)
            return answer

    def edit_cell(self, cell_id: str, change: Callable[[dict[str, Any]], T]) -> T:
        """As :meth:`edit`, for one cell: ``change(cell)`` edits a copy of cell ``cell_id``; what it changed is made.

        Raises:
            RoomLost: the room is lost, or the update could not be sent.
            CellNotFound: no cell has that id (nothing is sent).
        """
        import copy

        from .document import apply_cell, cell_dict, find_cell

        with self._lock:
            self._check()
            before = cell_dict(find_cell(self.notebook, cell_id))
            after = copy.deepcopy(before)
            answer = change(after)

            def apply(notebook: YNotebook) -> None:
                apply_cell(find_cell(notebook, cell_id), before, after)

            self.write(apply)
            return answer

    def save(self, timeout: float) -> str:
        """Ask the server to save the shared document now, as JupyterLab's save does (a ``save`` request in the room),
        once every write sent so far is applied there (:meth:`flush`); returns the server's answer:
        ``"success"`` (the file holds the document as it was then), ``"skipped"`` (a save of the server's own
        was under way, and still was when asked again once it could be done), ``"failed"``, or ``"unanswered"``
        within ``timeout``.

        Raises:
            RoomLost: the room is lost.
        """
        import time

        deadline = time.monotonic() + timeout
        self.flush(timeout, what="the room, before its save")
        answer = self._save_once(deadline)
        if answer == "skipped":  # a save of the server's own was under way: asked for again, once
            answer = self._save_once(deadline)
        return answer

    def _save_once(self, deadline: float) -> str:
        """One save request, and the server's answer by ``deadline`` (a :func:`time.monotonic` time)."""
        import time

        with self._answers:
            asked = self._ask_save()
            self._answers.wait_for(lambda: asked in self._saved or self.lost is not None, max(deadline - time.monotonic(), 0))
            self._check()
            return self._saved.pop(asked, "unanswered")

    def request_save(self) -> None:
        """Ask the server to save the shared document now, without waiting for its answer (a running cell's checkpoint).

        Raises:
            RoomLost: the room is lost.
        """
        with self._answers:
            self._check()
            self._unawaited.add(self._ask_save())

    def _ask_save(self) -> int:
        """Send a save request (jupyter-collaboration's ``RAW`` ``save`` with a number), under the lock; its number."""
        from pycrdt import Encoder

        self._save_id += 1
        encoder = Encoder()
        encoder.write_var_uint(_RAW)
        encoder.write_var_string("save")
        encoder.write_var_uint(self._save_id)
        self._send(encoder.to_bytes())
        return self._save_id

    def document(self) -> dict[str, Any]:
        """The shared notebook now, every cell with the room's id (:func:`~jcli_sidecar.room.document.notebook_dict`)."""
        from .document import notebook_dict

        with self._lock:
            return notebook_dict(self.notebook)

    def read(self) -> dict[str, Any]:
        """The shared notebook now, as an nbformat dict (what the server would save)."""
        with self._lock:
            return self.notebook.get()

    def cell(self, cell_id: str) -> dict[str, Any]:
        from .document import cell_of

        with self._lock:
            return cell_of(self.notebook, cell_id)

    def collaborators(self) -> list[dict[str, Any]]:
        """The others in the room: each one's awareness ``user`` (JupyterLab's identity shape)."""
        with self._lock:
            states = dict(self.awareness.states)
        me = self.awareness.client_id
        return [
            state["user"]
            for client, state in states.items()
            if client != me and isinstance(state, dict) and isinstance(state.get("user"), dict)
        ]
