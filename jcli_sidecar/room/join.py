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

__all__ = ["LIVE_OFF", "RoomJoin", "join_notebook_room", "join_room", "room_api_path", "server_path_of"]

#: Why there is no room when ``JCLI_LIVE`` is off (a run's or an edit's ``live_reason``).
LIVE_OFF = "JCLI_LIVE=off: j-cli writes the file, not the collaboration room"

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


def join_notebook_room(
    server: JupyterServer, nb_path: str, *, session: str | None = None, env: Mapping[str, str] | None = None, timeout: float | None = None
) -> RoomJoin:
    """Join the room of the notebook at local path ``nb_path``, wherever it sits under ``server``'s root.

    The server's path of the notebook is found by :func:`server_path_of`;
    a notebook the server does not serve is ``live`` false with the reason.
    ``JCLI_LIVE=off`` keeps every run and edit on the file (``live`` false, said so).
    """
    if not setting("JCLI_LIVE", env):
        return RoomJoin(None, LIVE_OFF)
    import os

    budget = float(setting("JCLI_ROOM_SECONDS", env)) if timeout is None else timeout
    deadline = time.monotonic() + budget
    name = os.path.basename(nb_path)
    api_name = room_api_path(name)
    if api_name is not None:  # one request tells a server without collaboration, or one that refuses it
        first = _session(server, name, api_name, budget)
        if isinstance(first, str) and not first.startswith("the server does not see"):
            return RoomJoin(None, first)
    found = server_path_of(server, nb_path, timeout=max(deadline - time.monotonic(), 0.001))
    if found is None:
        return RoomJoin(None, f"the server does not serve {nb_path} (no path under its root is this file)")
    return join_room(server, found, session=session, env=env, timeout=max(deadline - time.monotonic(), 0.001))


#: How many folders up a notebook's server path is looked for.
_DEPTH = 32


def server_path_of(server: JupyterServer, nb_path: str, *, timeout: float = 10.0) -> str | None:
    """The path under ``server``'s root of the local notebook ``nb_path`` (``/`` separated), or None when it serves no such file.

    Jupyter Server does not tell its root, so each tail of the notebook's
    real path is asked of its contents route, shortest first
    (``x.ipynb``, ``work/x.ipynb``, …), without content; the first whose
    size and modification time are the local file's is the notebook (a
    like-named file elsewhere, or on another machine, is not taken).
    """
    import os

    from ..kernel import HttpError

    real = os.path.realpath(nb_path)
    try:
        here = os.stat(real)
    except OSError:  # gone, or not ours to look at: no room
        return None
    parts = real.strip(os.sep).split(os.sep)
    deadline = time.monotonic() + timeout
    for depth in range(1, min(len(parts), _DEPTH) + 1):
        candidate = "/".join(parts[-depth:])
        api_path = room_api_path(candidate)
        left = deadline - time.monotonic()
        if api_path is None or left <= 0:
            return None
        try:
            model = server.request("GET", f"contents/{api_path}?content=0", timeout=left, raw_errors=True)
        except HttpError:
            continue
        except JcliError:  # the server does not answer: no room
            return None
        if isinstance(model, dict) and _same_file(model, here):
            return candidate
    return None


def _same_file(model: dict[str, Any], here: Any) -> bool:
    """Whether a contents model (without content) describes the file ``here`` (an ``os.stat`` result): its size and mtime."""
    from datetime import datetime

    stamp = model.get("last_modified")
    if model.get("size") != here.st_size or not isinstance(stamp, str):
        return False
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return False
    return abs(when - here.st_mtime) < 0.002


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
