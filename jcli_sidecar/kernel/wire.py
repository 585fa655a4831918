"""A lean HTTP/1.1 and WebSocket client for talking to a Jupyter Server.

Why not http.client and websocket-client: together they cost ~80 ms of
imports on every ``j-cli exec``, which is most of the budget of a whole
call. This module needs only ``socket`` (plus ``ssl`` for https/wss, imported
then). Every connection sets ``TCP_NODELAY``, so small websocket frames are
never held back by Nagle's algorithm against the peer's delayed ACK, and
closing never waits on a timeout.

Only what the Jupyter Server REST and kernel-channel APIs need is here:
request/response with Content-Length or chunked bodies, and text/binary
WebSocket frames with ping/pong and close.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from urllib.parse import urlsplit

from ..base.os_errors import os_reason

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .proxy_route import ProxyRoute

__all__ = ["HttpError", "ProxyRefused", "Response", "WebSocket", "WireError", "http_request", "open_websocket"]

_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)  # Linux only
_MAX_BODY = 256 * 1024 * 1024
_CHUNK = 1 << 16


class WireError(OSError):
    """The connection failed or the peer broke the protocol."""


class ProxyRefused(WireError):
    """The proxy answered the ``CONNECT`` with a status other than 2xx (``status``; 407: it wants credentials)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class HttpError(Exception):
    """A non-2xx HTTP answer (``headers`` by lower-case name: a redirect's ``location``, say)."""

    def __init__(self, status: int, reason: str, body: bytes, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status} {reason}")
        self.status = status
        self.reason = reason
        self.body = body
        self.headers = headers or {}


class Response:
    __slots__ = ("status", "reason", "headers", "body")

    def __init__(self, status: int, reason: str, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def _connect(url: str, timeout: float, proxy: ProxyRoute | None = None) -> tuple[socket.socket, str, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss"):
        raise WireError(f"unsupported URL scheme {parts.scheme!r}")
    secure = parts.scheme in ("https", "wss")
    host = parts.hostname or "localhost"
    try:
        port = parts.port or (443 if secure else 80)
    except ValueError:
        raise WireError("the URL has an invalid port") from None
    if proxy is not None:
        sock = _tunnel(proxy, host, port, timeout)
    else:
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise WireError(f"cannot connect to {host}:{port} ({os_reason(exc)})") from None
        except ValueError:  # UnicodeError included: a host name with an empty or overlong label
            raise WireError(f"cannot connect to {host}:{port} (the host name is invalid)") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if secure:
        import ssl

        try:  # through a tunnel too: the server's own name for SNI and the certificate check
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            sock.close()
            raise WireError(f"the TLS handshake with {host}:{port} failed ({getattr(exc, 'reason', None) or exc})") from None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    named = f"[{host}]" if ":" in host else host
    netloc = named if parts.port is None else f"{named}:{parts.port}"
    return sock, netloc, path


def _tunnel(proxy: ProxyRoute, host: str, port: int, timeout: float) -> socket.socket:
    """A connection to ``host:port`` through ``proxy``'s ``CONNECT`` tunnel (RFC 9110 9.3.6).

    Raises:
        ProxyRefused: the proxy answered other than 2xx.
        WireError: the proxy cannot be reached, broke the exchange, or did not answer in time.
    """
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        sock = socket.create_connection((proxy.host, proxy.port), timeout=timeout)
    except OSError as exc:
        raise WireError(f"cannot connect to {proxy.named()}: {os_reason(exc)}") from None
    except ValueError:
        raise WireError(f"cannot connect to {proxy.named()}: its host name is invalid") from None
    head = {"Proxy-Authorization": proxy.authorization} if proxy.authorization else {}
    try:
        sock.sendall(_head_lines("CONNECT", target, target, head))
        reader = _Reader(sock)
        status, reason, _headers = _read_head(reader)
        if not 200 <= status < 300:
            reason = "".join(ch for ch in reason[:80] if " " <= ch <= "~")
            hint = "; it wants credentials (http://USER:PASSWORD@host:port) or refused the ones given" if status == 407 else ""
            raise ProxyRefused(f"{proxy.named()} answered {status} {reason} to CONNECT {target}{hint}".replace("  ", " "), status)
    except TimeoutError:
        sock.close()
        raise WireError(f"no answer from {proxy.named()} within {timeout:g} s") from None
    except ProxyRefused:
        sock.close()
        raise
    except (OSError, ValueError) as exc:  # WireError included
        sock.close()
        raise WireError(f"{proxy.named()} broke the CONNECT to {target} ({exc})") from None
    if reader.pending():  # the server speaks only after our request (or TLS hello): these bytes are the proxy's
        sock.close()
        raise WireError(f"{proxy.named()} sent bytes before the tunnel to {target} opened")
    return sock


class _Reader:
    """Buffered reads from a socket, in time linear in the bytes read.

    Unread bytes are ``buf[pos:]``; the consumed front is dropped only once
    it is at least half the buffer, so each byte is moved a bounded number
    of times. A read of more than :data:`_CHUNK` bytes goes straight into
    a buffer of its own size (``recv_into``), with no copy per chunk; if it
    times out, what arrived is kept and the next call for the same read
    resumes it, so a slow frame never loses its place.
    """

    __slots__ = ("sock", "buf", "pos", "_big", "_big_filled")

    def __init__(self, sock: socket.socket, buf: bytes = b"") -> None:
        self.sock = sock
        self.buf = bytearray(buf)
        self.pos = 0
        self._big: bytearray | None = None
        self._big_filled = 0

    def pending(self) -> int:
        """How many bytes were read from the socket and not yet consumed."""
        return len(self.buf) - self.pos

    def _recv_into(self, view: memoryview) -> int:
        try:
            if _QUICKACK is not None:
                # Acknowledge at once: the server's Nagle would otherwise hold its
                # next small frame until our delayed ACK (up to 40 ms) goes out.
                self.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            got = self.sock.recv_into(view)
        except TimeoutError:
            raise
        except OSError as exc:
            raise WireError(f"connection failed ({os_reason(exc)})") from None
        if not got:
            raise WireError("the server closed the connection")
        return got

    def _fill(self) -> None:
        if self.pos and self.pos * 2 >= len(self.buf):
            del self.buf[: self.pos]  # moves no more bytes than were consumed since the last time
            self.pos = 0
        chunk = bytearray(_CHUNK)
        got = self._recv_into(memoryview(chunk))
        self.buf += memoryview(chunk)[:got]

    def ensure(self, n: int) -> None:
        """Read until ``n`` unconsumed bytes wait; consumes nothing (a timeout loses nothing)."""
        while len(self.buf) - self.pos < n:
            self._fill()

    def peek(self, n: int) -> bytes:
        """The next ``n`` bytes, not consumed; call :meth:`ensure` first."""
        return bytes(self.buf[self.pos : self.pos + n])

    def skip(self, n: int) -> None:
        self.pos += n

    def line(self) -> bytes:
        while (end := self.buf.find(b"\r\n", self.pos)) < 0:
            if len(self.buf) - self.pos > 65536:
                raise WireError("header line too long")
            self._fill()
        line = bytes(self.buf[self.pos : end])
        self.pos = end + 2
        return line

    def exactly(self, n: int) -> bytearray:
        """The next ``n`` bytes, consumed.

        After a timeout in a read over :data:`_CHUNK` bytes, the next call
        must ask for the same ``n``: it resumes that read.
        """
        if self._big is None and (n <= _CHUNK or n <= len(self.buf) - self.pos):
            self.ensure(n)
            data = self.buf[self.pos : self.pos + n]
            self.pos += n
            return data
        if self._big is None:
            big = bytearray(n)
            have = len(self.buf) - self.pos
            big[:have] = memoryview(self.buf)[self.pos :]
            self.buf = bytearray()
            self.pos = 0
            self._big, self._big_filled = big, have
        view = memoryview(self._big)
        while self._big_filled < n:
            self._big_filled += self._recv_into(view[self._big_filled :])
        data, self._big = self._big, None
        return data


def _read_head(reader: _Reader) -> tuple[int, str, dict[str, str]]:
    status_line = reader.line().decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise WireError("not an HTTP response")
    headers: dict[str, str] = {}
    while True:
        line = reader.line()
        if not line:
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), parts[2] if len(parts) > 2 else "", headers


def _read_body(reader: _Reader, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks: list[bytearray] = []
        while True:
            size = int(reader.line().split(b";")[0], 16)
            if size == 0:
                while reader.line():
                    pass
                return b"".join(chunks)
            chunks.append(reader.exactly(size))
            reader.exactly(2)
    length = int(headers.get("content-length", "0") or 0)
    if length > _MAX_BODY:
        raise WireError("response body too large")
    return bytes(reader.exactly(length))


def _head_lines(method: str, netloc: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {netloc}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def http_request(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: Any = None,
    timeout: float = 30.0,
    proxy: ProxyRoute | None = None,
) -> Response:
    """One HTTP request on its own connection; JSON ``body`` is encoded.

    Args:
        proxy: tunnel through this proxy (:func:`~jcli_sidecar.kernel.proxy_route.proxy_for`); None connects directly.

    Raises:
        WireError: the connection failed or the answer is not HTTP (:class:`ProxyRefused`: the proxy said no).
        HttpError: a non-2xx status.
    """
    sock, netloc, path = _connect(url, timeout, proxy)
    try:
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        head = {"Connection": "close", "Accept": "application/json", **(headers or {})}
        if body is not None:
            head["Content-Type"] = "application/json"
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head["Content-Length"] = str(len(data))
        sock.sendall(_head_lines(method, netloc, path, head) + data)
        reader = _Reader(sock)
        status, reason, resp_headers = _read_head(reader)
        payload = b"" if method == "HEAD" or status in (204, 304) else _read_body(reader, resp_headers)
    except TimeoutError:
        raise WireError(f"no answer from {netloc} within {timeout:g} s") from None
    finally:
        sock.close()
    if not 200 <= status < 300:
        raise HttpError(status, reason, payload, resp_headers)
    return Response(status, reason, resp_headers, payload)


class WebSocket:
    """A client WebSocket (RFC 6455): text and binary messages."""

    def __init__(self, sock: socket.socket, reader: _Reader) -> None:
        self.sock = sock
        self._reader = reader
        self.closed = False
        self._frame: tuple[int, bool, int] | None = None  # (opcode, fin, length) of the frame being read
        self._parts: list[bytearray] = []  # the fragments of the message being read
        self._kind = 0

    def fileno(self) -> int:
        """The socket's descriptor (for ``select``; see :meth:`buffered`)."""
        return self.sock.fileno()

    def buffered(self) -> bool:
        """True when bytes already read (or decrypted) wait here: ``select`` on the socket would not see them."""
        pending = getattr(self.sock, "pending", None)  # an SSL socket's decrypted bytes
        return self._reader.pending() > 0 or bool(pending is not None and pending())

    def send_text(self, text: str) -> None:
        self._send(0x1, text.encode("utf-8"))

    def _send(self, opcode: int, payload: bytes | bytearray) -> None:
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        try:
            self.sock.sendall(head + mask + _mask(payload, mask))
        except OSError as exc:
            raise WireError(f"websocket send failed ({os_reason(exc)})") from None

    def recv(self, timeout: float | None) -> str | bytes:
        """The next whole message (text as str, binary as bytes).

        Each payload byte is copied once from the socket into its frame's
        buffer (one per frame, sized from the frame's length), and a message
        of one frame is decoded from that buffer: time linear in its size.
        A timeout loses nothing: the next call goes on where this one stopped.

        Raises:
            TimeoutError: nothing complete arrived within ``timeout``.
            WireError: the connection closed or broke.
        """
        self.sock.settimeout(timeout)
        try:
            while True:
                if self._frame is None:
                    self._frame = self._read_frame_head()
                opcode, fin, n = self._frame
                payload = self._reader.exactly(n)
                self._frame = None
                if opcode == 0x8:
                    self.closed = True
                    raise WireError("the server closed the websocket")
                if opcode == 0x9:
                    self._send(0xA, payload)
                    continue
                if opcode == 0xA:
                    continue
                if opcode in (0x1, 0x2):
                    self._kind = opcode
                self._parts.append(payload)
                if fin:
                    parts, self._parts = self._parts, []
                    data = parts[0] if len(parts) == 1 else bytearray().join(parts)
                    return data.decode("utf-8") if self._kind == 0x1 else bytes(data)
        except TimeoutError:
            raise TimeoutError("no websocket message in time") from None

    def _read_frame_head(self) -> tuple[int, bool, int]:
        """A frame's opcode, FIN bit and payload length; consumed only once whole."""
        reader = self._reader
        reader.ensure(2)
        b1, b2 = reader.peek(2)
        if b2 & 0x80:  # RFC 6455 5.1: a server never masks; its bytes would be misread as payload
            raise WireError("the server sent a masked websocket frame")
        n = b2 & 0x7F
        size = {126: 4, 127: 10}.get(n, 2)
        reader.ensure(size)
        head = reader.peek(size)
        if n == 126:
            (n,) = struct.unpack_from("!H", head, 2)
        elif n == 127:
            (n,) = struct.unpack_from("!Q", head, 2)
        if n > _MAX_BODY - sum(len(part) for part in self._parts):  # the whole message, fragments included
            raise WireError("websocket message too large")
        reader.skip(size)
        return b1 & 0x0F, bool(b1 & 0x80), n

    def close(self) -> None:
        """Send a close frame and drop the connection; never waits."""
        if not self.closed:
            self.closed = True
            try:
                self._send(0x8, struct.pack("!H", 1000))
            except OSError:
                pass
        try:
            self.sock.close()
        except OSError:
            pass


def _mask(payload: bytes | bytearray, mask: bytes) -> bytes:
    """XOR ``payload`` with the repeated 4-byte ``mask`` (one big-int XOR)."""
    n = len(payload)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(n, "little")


def open_websocket(url: str, *, headers: dict[str, str] | None = None, timeout: float = 30.0, proxy: ProxyRoute | None = None) -> WebSocket:
    """Open a client WebSocket to ``ws://`` or ``wss://`` ``url`` (through ``proxy``'s tunnel when given).

    Raises:
        WireError: connection or handshake failure (:class:`ProxyRefused`: the proxy said no).
        HttpError: the server refused the upgrade.
    """
    sock, netloc, path = _connect(url, timeout, proxy)
    key = base64.b64encode(os.urandom(16)).decode("ascii")
    head = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": key,
        "Sec-WebSocket-Version": "13",
        **(headers or {}),
    }
    try:
        sock.sendall(_head_lines("GET", netloc, path, head))
        reader = _Reader(sock)
        status, reason, resp_headers = _read_head(reader)
        if status != 101:
            body = _read_body(reader, resp_headers) if "content-length" in resp_headers else b""
            raise HttpError(status, reason, body, resp_headers)
        expected = base64.b64encode(_sha1(key.encode("ascii") + _WS_GUID)).decode("ascii")
        if resp_headers.get("sec-websocket-accept") != expected:
            raise WireError("bad websocket handshake")
    except BaseException:
        sock.close()
        raise
    return WebSocket(sock, reader)


def _sha1(data: bytes) -> bytes:
    try:
        from _sha1 import sha1  # the C module: hashlib would load OpenSSL
    except ImportError:  # pragma: no cover
        from hashlib import sha1
    return sha1(data).digest()
