"""A blocking client for the workspace sidecar (the warm path).

It imports only what a lean client needs (socket, msgpack, json via the
protocol module). The hello has its own short deadline
(``JCLI_SIDECAR_HELLO_SECONDS``); a sidecar that misses it is left alone
by the next calls until it proves alive (:mod:`.liveness`). Anything
wrong with the transport — no sidecar, a dead
or stalled one, another version, a bad frame — is raised as
:class:`SidecarUnavailable`, so callers fall back to reading in-process.
Coded errors about the request itself (a missing cell, ...) are raised as
the matching :class:`JcliError`.
"""

from __future__ import annotations

import os
import socket

from .. import __version__
from ..base import PROTOCOL_VERSION, JcliError, SidecarError, SidecarUnavailable, error_from_code, os_error, pack_frame, read_frame
from .liveness import clear_unresponsive, hello_seconds, mark_unresponsive, why_not_ask
from .op_table import SHUTDOWN
from .peercred import peer_uid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..base import SidecarPaths

__all__ = ["CONNECT_TIMEOUT", "FALLBACK_CODES", "REQUEST_TIMEOUT", "call", "error_of", "greeted", "request_shutdown", "transport_failed"]

CONNECT_TIMEOUT = 2.0
#: A sidecar that answers nothing for this long is treated as dead.
REQUEST_TIMEOUT = 120.0
#: Codes that say "the transport failed", not "your request is wrong".
FALLBACK_CODES = frozenset({"PROTOCOL_ERROR", "PEER_REFUSED", "INTERNAL_ERROR", "SIDECAR_UNAVAILABLE", "SIDECAR_ERROR"})


def _connect(paths: SidecarPaths) -> tuple[socket.socket, bool]:
    """A connection to a sidecar of this user, and whether it was recorded as unresponsive.

    Raises:
        SidecarUnavailable: none, another user's, or one that missed a hello
            and has not proved alive since (:mod:`.liveness`): not even connected.
    """
    reason, recorded = why_not_ask(paths)
    if reason is not None:
        raise SidecarUnavailable(reason, unresponsive=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(paths.socket)
    except OSError as exc:
        sock.close()
        raise os_error(exc, "sidecar-socket", paths.socket) from None
    uid = peer_uid(sock)
    if uid != os.geteuid():
        sock.close()
        whom = "a process this system cannot name" if uid is None else f"uid {uid}"
        raise SidecarUnavailable(f"{paths.socket} is served by {whom}, not by this user")
    return sock, recorded


def _await_hello(sock: socket.socket, paths: SidecarPaths) -> None:
    """Wait (at most ``JCLI_SIDECAR_HELLO_SECONDS``) until the hello's answer starts to arrive.

    A live sidecar answers it from its event loop at once. One that does
    not is recorded as unresponsive, so the next calls leave it alone.

    Raises:
        SidecarUnavailable: no answer in time.
    """
    import select

    seconds = hello_seconds()
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
    if not poller.poll(seconds * 1000):
        mark_unresponsive(paths)
        raise SidecarUnavailable(
            f"the sidecar did not answer its hello within {seconds:g} s (JCLI_SIDECAR_HELLO_SECONDS); going on without it",
            unresponsive=True,
        )


def error_of(error: Any, **extra: Any) -> JcliError:
    """The coded error an error map ``{code, message, ...details}`` from the sidecar stands for, with ``extra`` details.

    A map that is not one (no text code or message) stands for a ``PROTOCOL_ERROR``.

    Example:
        >>> err = error_of({"code": "CELL_NOT_FOUND", "message": "no cell 9", "cell_index": 9}, executed=False)
        >>> err.code, err.details
        ('CELL_NOT_FOUND', {'cell_index': 9, 'executed': False})
    """
    error = error if isinstance(error, dict) else {}
    code = error.get("code") if isinstance(error.get("code"), str) else "PROTOCOL_ERROR"
    message = error.get("message") if isinstance(error.get("message"), str) else "no message"
    details = {k: v for k, v in error.items() if k not in ("code", "message") and isinstance(k, str)}
    return error_from_code(code, message, **{**details, **extra})


def transport_failed(err: JcliError) -> SidecarUnavailable | None:
    """The :class:`SidecarUnavailable` a sidecar's answer ``err`` stands for when its code says the transport failed (:data:`FALLBACK_CODES`), else None."""
    return SidecarUnavailable(f"sidecar: {err.code}: {err.message}") if err.code in FALLBACK_CODES else None


def _result(reply: dict[str, Any]) -> Any:
    if reply.get("ok") is True:
        return reply.get("result")
    err = error_of(reply.get("error"))
    raise transport_failed(err) or err


def call(paths: SidecarPaths, op: str, args: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> Any:
    """Ask the workspace's sidecar to run ``op`` and return its result.

    The handshake and the request go out together; the hello answer is
    checked before the result is trusted. A sidecar of another version is
    asked to exit, and the call raises :class:`SidecarUnavailable`.

    Raises:
        SidecarUnavailable: any transport problem (fall back in-process).
        JcliError: the request itself failed with that code.
    """
    sock, recorded = _connect(paths)
    try:
        sock.settimeout(timeout)
        hello = {"protocol": PROTOCOL_VERSION, "version": __version__, "workspace": paths.workspace}
        sock.sendall(pack_frame({"id": 0, "op": "hello", "args": hello}) + pack_frame({"id": 1, "op": op, "args": args}))
        _await_hello(sock, paths)
        greeting = _result(read_frame(sock))
        if recorded:
            clear_unresponsive(paths)  # it answered: alive again
        if not isinstance(greeting, dict) or (greeting.get("protocol"), greeting.get("version")) != (
            PROTOCOL_VERSION,
            __version__,
        ):
            _ask_to_exit(sock)
            sock.close()
            _wait_until_gone(paths)
            raise SidecarUnavailable("the running sidecar is another version; it was asked to exit")
        reply = read_frame(sock)
        if reply.get("id") != 1:
            raise SidecarUnavailable("the sidecar answered out of turn")
        return _result(reply)
    except SidecarUnavailable:
        raise
    except SidecarError as exc:
        raise SidecarUnavailable(f"sidecar call failed ({exc.message})") from None
    except JcliError:  # first: TIMEOUT, FILE_NOT_FOUND, PATH_NOT_ALLOWED are OSErrors too, but answers
        raise
    except OSError as exc:
        raise SidecarUnavailable(f"sidecar call failed ({exc})") from None
    finally:
        sock.close()


def greeted(paths: SidecarPaths, timeout: float = REQUEST_TIMEOUT) -> socket.socket:
    """A connection on which the hello was answered by a sidecar of this very version.

    Unlike :func:`call`, nothing else goes out before the answer is
    checked: for a request that must never run twice (``kernel.exec``), a
    sidecar of another version must not see it at all.

    Raises:
        SidecarUnavailable: no usable sidecar (another version is asked to exit).
    """
    sock, recorded = _connect(paths)
    try:
        sock.settimeout(timeout)
        hello = {"protocol": PROTOCOL_VERSION, "version": __version__, "workspace": paths.workspace}
        sock.sendall(pack_frame({"id": 0, "op": "hello", "args": hello}))
        _await_hello(sock, paths)
        greeting = _result(read_frame(sock))
        if recorded:
            clear_unresponsive(paths)
        if not isinstance(greeting, dict) or (greeting.get("protocol"), greeting.get("version")) != (PROTOCOL_VERSION, __version__):
            _ask_to_exit(sock)
            sock.close()
            _wait_until_gone(paths)
            raise SidecarUnavailable("the running sidecar is another version; it was asked to exit")
        return sock
    except SidecarUnavailable:
        sock.close()
        raise
    except (JcliError, OSError) as exc:
        sock.close()
        raise SidecarUnavailable(f"sidecar handshake failed ({getattr(exc, 'message', None) or exc})") from None


def _wait_until_gone(paths: SidecarPaths, timeout: float = 5.0) -> None:
    """Wait (bounded) for an old sidecar to release its lifetime lock, so a new one can start."""
    from ..base import wait_for_lock

    wait_for_lock(paths.lock, timeout)


def _ask_to_exit(sock: socket.socket) -> None:
    """Send ``shutdown`` and read up to its answer, for at most :data:`CONNECT_TIMEOUT` seconds.

    The answers to earlier requests are read and dropped on the way: a
    socket closed with unread data resets the connection, and the reset can
    reach the sidecar before it has read the shutdown, which is then lost.
    An old sidecar that does not answer within the bound is left running
    (the call falls back all the same, and the next one asks it again): it
    never holds the caller for a request's whole timeout.
    """
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.sendall(pack_frame({"id": 2, "op": SHUTDOWN.name, "args": {}}))
        while read_frame(sock).get("id") != 2:
            pass
    except (JcliError, OSError):  # best effort and bounded (above): the call falls back all the same
        pass


def request_shutdown(paths: SidecarPaths, timeout: float = CONNECT_TIMEOUT) -> bool:
    """Ask the sidecar to stop; True when it acknowledged."""
    try:
        return bool(call(paths, SHUTDOWN.name, {}, timeout=timeout))
    except JcliError:
        return False
