"""Which user is at the other end of a Unix socket, asked the way this system offers.

The sidecar serves only its owner, and a client talks only to a sidecar of
its own user; both ask the kernel who the peer is, in the first way the
system has:

- ``SO_PEERCRED`` (Linux): a ``struct ucred`` (pid, uid, gid);
- ``LOCAL_PEERCRED`` at level ``SOL_LOCAL`` (macOS, FreeBSD), where Python's
  ``socket`` module names it: a ``struct xucred`` (version, uid, groups);
- ``getpeereid(3)`` from the C library (macOS and the BSDs have it, as does
  musl; on glibc, libbsd's, which is how the tests here run this branch for
  real, with ``SO_PEERCRED`` hidden).

Each is chosen by what the platform offers (``hasattr(socket, ...)``, the C
library's symbols), never by its name. Where none is there, or the kernel
refuses to say, :func:`peer_uid` gives None and the caller treats the peer
as a stranger: the sidecar refuses the connection (``PEER_REFUSED``) and a
client goes on without the sidecar (in-process), so nothing is served to
anyone unchecked and nothing is lost. On a system with none of the three
(:func:`can_check` False) no sidecar is started at all.
"""

from __future__ import annotations

import os
import socket
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["can_check", "peer_uid", "xucred_uid"]

_UCRED = struct.Struct("3i")  # Linux's struct ucred: pid, uid, gid
#: macOS's and FreeBSD's struct xucred: cr_version (u_int), cr_uid (uid_t), cr_ngroups (short), cr_groups[16] (gid_t).
_XUCRED = struct.Struct("=IIh2x16I")
_XUCRED_VERSION = 0
_SOL_LOCAL = 0  # macOS's and FreeBSD's level for LOCAL_PEERCRED (Python does not name it)
_LIBBSD = "libbsd.so.0"
_NO_UID = 0xFFFFFFFF  # (uid_t)-1
_GETPEEREID: list[Any] = []  # getpeereid from the C library (or libbsd), once looked up; None: not there


def can_check() -> bool:
    """Whether this system offers a way to name a Unix socket's peer (else the sidecar is never started)."""
    return hasattr(socket, "SO_PEERCRED") or hasattr(socket, "LOCAL_PEERCRED") or _lookup_getpeereid() is not None


def peer_uid(sock: socket.socket) -> int | None:
    """The effective uid of the process at the other end of the Unix socket ``sock``, or None when this system cannot tell.

    Example:
        >>> import os, socket
        >>> one, other = socket.socketpair(socket.AF_UNIX)
        >>> with one, other:
        ...     peer_uid(one) == os.geteuid()
        True
    """
    try:
        if hasattr(socket, "SO_PEERCRED"):
            uid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))[1]
        elif hasattr(socket, "LOCAL_PEERCRED"):
            uid = xucred_uid(sock.getsockopt(_SOL_LOCAL, socket.LOCAL_PEERCRED, _XUCRED.size))
        else:
            uid = _getpeereid(sock.fileno())
    except OSError:  # the kernel would not say (not a Unix socket, the peer gone before it was asked): unknown
        return None
    return None if uid is None or uid < 0 or uid == _NO_UID else uid  # (uid_t)-1: the kernel knows no peer


def xucred_uid(raw: bytes) -> int | None:
    """The uid in a ``struct xucred`` as ``LOCAL_PEERCRED`` returns it, or None when it is not one of the version known.

    Example:
        >>> xucred_uid(_XUCRED.pack(0, 501, 1, *([20] + [0] * 15)))
        501
    """
    if len(raw) < 8:
        return None
    version, uid = struct.unpack_from("=II", raw)
    return uid if version == _XUCRED_VERSION else None


def _getpeereid(fd: int) -> int | None:
    """``getpeereid(3)``'s uid for the socket ``fd``; None where there is no such call."""
    call = _lookup_getpeereid()
    if call is None:
        return None
    import ctypes

    uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
    if call(fd, ctypes.byref(uid), ctypes.byref(gid)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"getpeereid: {os.strerror(code)}")
    return uid.value


def _lookup_getpeereid() -> Any:
    if not _GETPEEREID:
        call = None
        try:
            import ctypes

            for name in (None, _LIBBSD):
                try:
                    call = ctypes.CDLL(name, use_errno=True).getpeereid
                    break
                except (AttributeError, OSError):  # not in this library, or no such library
                    continue
            if call is not None:
                call.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32)]
                call.restype = ctypes.c_int
        except ImportError:  # no ctypes: no way to ask
            call = None
        _GETPEEREID.append(call)
    return _GETPEEREID[0]
