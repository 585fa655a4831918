"""Which session a command means: one resolver for every command that takes SESSION.

A full id (a UUID) is looked up directly, with no listing: first as a
session id, then as a kernel id (a kernel no session holds is usable too).
Gateways forbid listing by default, so this is how a session is reached on
them. A name or an id prefix needs the server's session list. Where the
server forbids listing, the names j-cli remembers for the sessions it
created there answer instead (:mod:`~jcli_sidecar.kernel.session_names`);
any other key is ``FORBIDDEN`` naming the setting that allows listing
(:func:`~jcli_sidecar.kernel.server_probe.listing_forbidden`).
"""

from __future__ import annotations

from ..base import Forbidden, SessionNotFound
from .jupyter_api import kernel_summary, select_session, session_summary
from .session_names import is_full_id, remembered_session, remembered_sessions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .jupyter_api import JupyterServer

__all__ = ["find_session", "find_sessions", "listed_sessions", "visible_sessions"]


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
        SessionNotFound: nothing matches, or the key is ambiguous, or it names
            a remembered session whose kernel is gone.
        Forbidden: a name or prefix on a server that does not list sessions,
            which j-cli does not remember.
    """
    return find_sessions(server, [key])[0]


def find_sessions(server: JupyterServer, keys: list[str]) -> list[dict[str, Any]]:
    """Resolve every key (as :func:`find_session`) before anything is done; each session once, in order.

    The session list is fetched at most once, and only when a key is not a
    full id; where it is refused, each such key is looked up among the
    remembered names (:func:`~jcli_sidecar.kernel.session_names.remembered_session`).

    Raises:
        SessionNotFound: a key matches nothing or is ambiguous (``selector`` names it).
        Forbidden: as :func:`find_session`.
    """
    listed: list[dict[str, Any]] | None = None
    refused: Forbidden | None = None
    chosen: dict[str, dict[str, Any]] = {}
    for key in keys:
        row = _by_full_id(server, key) if is_full_id(key) else None
        if row is None and listed is None and refused is None:
            try:
                listed = [session_summary(found) for found in server.sessions()]
            except Forbidden as err:
                refused = err
        if row is None and refused is not None:
            from .server_probe import listing_forbidden

            row = remembered_session(server, key)
            if row is None:
                wanted = (
                    "look up a session by a full id it cannot fetch"
                    if is_full_id(key)
                    else f"find the session {key!r} by name or id prefix"
                )
                raise listing_forbidden(server, refused, wanted) from None
        elif row is None:
            try:
                row = select_session(listed or [], key)
            except SessionNotFound as err:
                err.details["selector"] = key
                raise
        chosen.setdefault(str(row["id"] or row["kernel_id"]), row)
    return list(chosen.values())


def visible_sessions(server: JupyterServer) -> tuple[list[dict[str, Any]], bool]:
    """``(sessions, listed)``: the server's list; where it lists none, the remembered sessions it still has.

    Raises:
        JcliError: the server cannot be asked.
    """
    try:
        return listed_sessions(server, "list its sessions"), True
    except Forbidden:
        return remembered_sessions(server), False


def _by_full_id(server: JupyterServer, key: str) -> dict[str, Any] | None:
    """The session with id ``key``, else a session-less view of the kernel with id ``key``, else None."""
    found = server.session(key)
    if found is not None:
        return session_summary(found)
    kernel = server.kernel(key)
    if kernel is not None:
        return _holder_of(server, key) or _remembered_holder(server, key, kernel) or kernel_summary(kernel)
    if not server.info.is_gateway:
        raise SessionNotFound(f"no session or kernel has the id {key}; see j-cli session list", selector=key)
    return None  # a gateway may know the session id without letting j-cli fetch it: its list decides


def _remembered_holder(server: JupyterServer, kernel_id: str, kernel: dict[str, Any]) -> dict[str, Any] | None:
    """The remembered session of kernel ``kernel_id`` (found on the server), where the server lists none."""
    if not server.info.is_gateway:
        return None
    return remembered_session(server, kernel_id, kernel=kernel)


def _holder_of(server: JupyterServer, kernel_id: str) -> dict[str, Any] | None:
    """The session that holds kernel ``kernel_id``, where the server lists sessions."""
    try:
        rows = server.sessions()
    except Forbidden:
        return None
    return next((session_summary(row) for row in rows if (row.get("kernel") or {}).get("id") == kernel_id), None)
