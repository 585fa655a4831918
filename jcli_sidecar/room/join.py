"""Finding a notebook's collaboration room on a Jupyter Server, and joining it as JupyterLab's front end does.

jupyter-collaboration (its server part, jupyter-server-ydoc) answers two
routes: ``PUT /api/collaboration/session/<path>`` with ``{"format": "json",
"type": "notebook"}`` gives the notebook's ``fileId`` and the server's
``sessionId``; the room is then the websocket
``/api/collaboration/room/json:notebook:<fileId>?sessionId=<sessionId>``.
Both take the token as every other route does (the ``Authorization``
header, as the kernel's channels do).

:func:`join_room` never raises for a room it cannot have: a server without
collaboration (404 on the session route), a notebook the server does not see
(outside its root, or absent), a refused token, a room that closes or does not
answer its first sync within ``JCLI_ROOM_SECONDS``, a first sync over
``JCLI_ROOM_MAX_MB``: each is a :class:`RoomJoin` with ``live`` false and the
reason, so the caller takes the file path and says why. pycrdt and
jupyter-ydoc are imported only once the server has answered the session
route: a server without collaboration costs neither.
"""

from __future__ import annotations

import re
import time
from urllib.parse import quote

from ..base import JcliError, setting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..kernel import JupyterServer
    from .connection import Room

__all__ = ["RoomJoin", "join_room", "room_api_path"]

#: What a file id the server hands out may be (jupyter-server-fileid's are UUIDs); anything else is not used in a URL.
_FILE_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")
_SESSION_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")


class RoomJoin:
    """What joining gave: ``room`` (a synced :class:`~jcli_sidecar.room.connection.Room`) when ``live``, else
    ``reason`` says why there is none; :meth:`summary` is what a result reports (``live``, ``live_reason``)."""

    __slots__ = ("room", "reason")

    def __init__(self, room: Room | None, reason: str) -> None:
        self.room = room
        self.reason = reason

    @property
    def live(self) -> bool:
        return self.room is not None

    def summary(self) -> dict[str, Any]:
        return {"live": self.live, "live_reason": self.reason}


def room_api_path(path: str) -> str | None:
    """``path`` (the notebook's path under the server's root, ``/`` separated) as the session route names it; None
    for a path that leaves the root (absolute, ``..``, empty) or that a URL cannot carry.

    Example:
        >>> room_api_path("work/a b.ipynb"), room_api_path("../x.ipynb"), room_api_path("/etc/x.ipynb")
        ('work/a%20b.ipynb', None, None)
    """
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return None
    if any(ord(ch) < 0x20 or ch == "\x7f" for ch in path):
        return None
    return quote(path, safe="/")


def join_room(
    server: JupyterServer, path: str, *, session: str | None = None, env: Mapping[str, str] | None = None, timeout: float | None = None
) -> RoomJoin:
    """Join the collaboration room of notebook ``path`` (under ``server``'s root) as j-cli (``session`` in its name).

    ``timeout`` (default ``JCLI_ROOM_SECONDS``) bounds the whole join; one
    message from the room may be at most ``JCLI_ROOM_MAX_MB``.
    """
    budget = float(setting("JCLI_ROOM_SECONDS", env)) if timeout is None else timeout
    max_message = int(float(setting("JCLI_ROOM_MAX_MB", env)) * 1024 * 1024)
    deadline = time.monotonic() + budget
    api_path = room_api_path(path)
    if api_path is None:
        return RoomJoin(None, f"{path!r} is not a path under the server's root, so it has no room")
    found = _session(server, path, api_path, budget)
    if isinstance(found, str):
        return RoomJoin(None, found)
    file_id, session_id = found
    try:
        import jupyter_ydoc  # noqa: F401  # both before the websocket: a missing one is a reason, not a half-open room
        import pycrdt  # noqa: F401
    except ImportError as exc:
        return RoomJoin(None, f"the server has a room, but {exc.name} is not installed here (pip install 'j-cli[live]')")
    room_path = f"collaboration/room/json:notebook:{quote(file_id, safe='')}?sessionId={quote(session_id, safe='')}"
    return _connect(server, path, room_path, file_id, session, max_message, deadline)


def _session(server: JupyterServer, path: str, api_path: str, timeout: float) -> tuple[str, str] | str:
    """The room's ``(fileId, sessionId)`` from the session route, or the reason there is none."""
    from ..kernel import HttpError

    try:
        answer = server.request(
            "PUT", f"collaboration/session/{api_path}", {"format": "json", "type": "notebook"}, timeout=timeout, raw_errors=True
        )
    except HttpError as exc:
        if exc.status == 404:
            if _says_missing(exc.body):
                return f"the server does not see {path} under its root (404 on the collaboration session route)"
            return "the server has no collaboration (jupyter-collaboration is not enabled: 404 on its session route)"
        if exc.status in (401, 403):
            return f"the server refused the collaboration session (HTTP {exc.status})"
        return f"the collaboration session route failed (HTTP {exc.status})"
    except JcliError as exc:  # unreachable, no JSON: the run will say so itself if it matters
        return f"the collaboration session route did not answer ({exc.code}: {exc.message})"
    if not isinstance(answer, dict):
        return "the collaboration session route answered something other than a session"
    file_id, session_id = answer.get("fileId"), answer.get("sessionId")
    if not (isinstance(file_id, str) and _FILE_ID.fullmatch(file_id) and isinstance(session_id, str) and _SESSION_ID.fullmatch(session_id)):
        return "the collaboration session route answered without a usable fileId and sessionId"
    return file_id, session_id


def _says_missing(body: bytes) -> bool:
    """Whether a 404's body is the session handler's own (the file is not there), not the server's unknown route."""
    import json

    try:
        answer = json.loads(body[:65536])
    except ValueError:
        return False
    return isinstance(answer, dict) and "does not exist" in str(answer.get("message", ""))


def _connect(
    server: JupyterServer, path: str, room_path: str, file_id: str, session: str | None, max_message: int, deadline: float
) -> RoomJoin:
    from ..kernel import HttpError
    from .connection import Room

    left = deadline - time.monotonic()
    if left <= 0:
        return RoomJoin(None, "the room did not answer in time (JCLI_ROOM_SECONDS)")
    try:
        socket = server.websocket(room_path, max_message=max_message, timeout=left)
    except HttpError as exc:
        return RoomJoin(None, f"the server refused the room's websocket (HTTP {exc.status})")
    except JcliError as exc:
        return RoomJoin(None, f"the room's websocket could not be opened ({exc.code}: {exc.message})")
    room = Room(socket, path, file_id, session)
    try:
        room.start(max(deadline - time.monotonic(), 0.001))
    except JcliError:
        reason = room.lost or "the room did not answer"
        room.close()
        if "closed the websocket (4404" in reason:
            reason = f"the server does not see {path} under its root (it closed the room: 4404)"
        elif "too large" in reason:
            reason = f"the room's document is larger than JCLI_ROOM_MAX_MB ({max_message // (1024 * 1024)} MiB) allows: {reason}"
        elif "did not answer" in reason:
            reason = f"{reason} (JCLI_ROOM_SECONDS)"
        return RoomJoin(None, reason)
    return RoomJoin(room, f"joined the collaboration room of {path} as {_awareness_name(session)}")


def _awareness_name(session: str | None) -> str:
    from .connection import awareness_state

    return str(awareness_state(session)["user"]["name"])
