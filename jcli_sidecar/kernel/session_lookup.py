"""Which session a command means: one resolver for every command that takes SESSION.

A full id (a UUID) is looked up directly, with no listing: first as a
session id, then as a kernel id (a kernel no session holds is usable too).
Gateways forbid listing by default, so this is how a session is reached on
them. A name or an id prefix needs the server's session list; where the
server forbids listing, that is ``FORBIDDEN`` naming the setting that
allows it (:func:`~jcli_sidecar.kernel.server_probe.listing_forbidden`).
"""

from __future__ import annotations

import re

from ..base.errors import Forbidden, SessionNotFound
from .jupyter_api import kernel_summary, select_session, session_summary

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .jupyter_api import JupyterServer

__all__ = ["find_session", "find_sessions", "is_full_id", "listed_sessions"]

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def is_full_id(key: str) -> bool:
    """Whether ``key`` is a whole session or kernel id (a UUID), which needs no listing.

    Example:
        >>> is_full_id("a9fe24a1-eee4-4e83-9c84-e2f5736940c6"), is_full_id("a9fe24a1"), is_full_id("eg1")
        (True, False, False)
    """
    return bool(_UUID.match(key))


def listed_sessions(server: JupyterServer, wanted: str) -> list[dict[str, Any]]:
    """Every session on ``server``, as summaries.

    Raises:
        Forbidden: the server does not list sessions (a gateway's default);
            the message names the setting, and ``wanted`` says what needed it.
    """
    try:
        return [session_summary(row) for row in server.sessions()]
    except Forbidden as err:
        from .server_probe import listing_forbidden

        raise listing_forbidden(server, err, wanted) from None


def find_session(server: JupyterServer, key: str) -> dict[str, Any]:
    """The session ``key`` names (a summary): by full id without listing, else by name or id prefix.

    Raises:
        SessionNotFound: nothing matches, or the key is ambiguous.
        Forbidden: a name or prefix on a server that does not list sessions.
    """
    return find_sessions(server, [key])[0]


def find_sessions(server: JupyterServer, keys: list[str]) -> list[dict[str, Any]]:
    """Resolve every key (as :func:`find_session`) before anything is done; each session once, in order.

    The session list is fetched at most once, and only when a key is not a full id.

    Raises:
        SessionNotFound: a key matches nothing or is ambiguous (``selector`` names it).
        Forbidden: as :func:`find_session`.
    """
    listed: list[dict[str, Any]] | None = None
    chosen: dict[str, dict[str, Any]] = {}
    for key in keys:
        row = _by_full_id(server, key) if is_full_id(key) else None
        if row is None:
            if listed is None:
                what = (
                    "look up a session by a full id it cannot fetch"
                    if is_full_id(key)
                    else f"find the session {key!r} by name or id prefix"
                )
                listed = listed_sessions(server, what)
            try:
                row = select_session(listed, key)
            except SessionNotFound as err:
                err.details["selector"] = key
                raise
        chosen.setdefault(str(row["id"] or row["kernel_id"]), row)
    return list(chosen.values())


def _by_full_id(server: JupyterServer, key: str) -> dict[str, Any] | None:
    """The session with id ``key``, else a session-less view of the kernel with id ``key``, else None."""
    found = server.session(key)
    if found is not None:
        return session_summary(found)
    kernel = server.kernel(key)
    if kernel is not None:
        return _holder_of(server, key) or kernel_summary(kernel)
    if not server.info.is_gateway:
        raise SessionNotFound(f"no session or kernel has the id {key}; see j-cli session list", selector=key)
    return None  # a gateway may know the session id without letting j-cli fetch it: its list decides


def _holder_of(server: JupyterServer, kernel_id: str) -> dict[str, Any] | None:
    """The session that holds kernel ``kernel_id``, where the server lists sessions."""
    try:
        rows = server.sessions()
    except Forbidden:
        return None
    return next((session_summary(row) for row in rows if (row.get("kernel") or {}).get("id") == kernel_id), None)
