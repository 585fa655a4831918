"""The connections to a Jupyter Server: REST over ``http.client``, the kernel channels over ``websocket-client``.

Both are kept libraries; j-cli writes no HTTP or WebSocket protocol of its
own. ``http.client`` opens every connection, the websocket's too: directly,
or through the proxy's ``CONNECT`` tunnel (``set_tunnel``) when
:func:`~jcli_sidecar.kernel.proxy_route.proxy_for` names one, and then TLS
with the server's own name (SNI and the certificate check). It sets
``TCP_NODELAY`` on every connection, so small websocket frames are never held
back by Nagle's algorithm against the peer's delayed ACK. ``websocket-client``
then does the handshake and the frames (ping/pong, fragments, close) on that
socket; it is never given a proxy option, so it never reads the proxy
variables itself (the route is j-cli's: loopback never proxied, the
sidecar's client's variables, not the sidecar's own). Before Python 3.13,
``http.client``'s ``CONNECT`` line leaves an IPv6 address unbracketed, so a
server named by one is not reached through a proxy there (docs/remote.md).

Why ``websocket-client``: measured side by side in one run (the same
Jupyter Server and kernel on loopback, Python 3.11, ``1+1`` executed over
one held websocket), the three candidates' round trips were alike (about
50 ms each, on a busy machine: each waited out the client's delayed ACK),
while their imports on top of what ``j-cli exec`` loads anyway were not:
``websocket-client`` about 25 ms, ``websockets.sync.client`` about 55 ms,
tornado's websocket client about 65 ms. ``websocket-client`` reads a plain
blocking socket in the caller's thread, so ``select`` on it works beside
the stop switch's pipe, and its reads can be wrapped: each sets
``TCP_QUICKACK`` (Linux) first, which brings the round trip back to the
hand-written client's (about 12 ms there); ``websockets``' sync client
reads in a thread of its own, and tornado's is asynchronous. It comes with
the Jupyter stack. ``http.client`` adds about 15 ms. Both are imported only
where a connection is opened: a client that goes through the sidecar loads
neither.

What stays here is j-cli's policy on top of them: closing sends a close frame
and drops the socket, never waiting for the server's answer (the library's
own ``close`` waits up to seconds); a message may be at most 256 MiB and a
server frame may not be masked (RFC 6455 5.1), checked from a frame's head
before its payload is read; failures become :class:`WireError` (the proxy's
refusal :class:`ProxyRefused`, with its status) and non-2xx answers
:class:`HttpError`.
"""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

from ..base import os_reason

TYPE_CHECKING = False
if TYPE_CHECKING:
    import http.client
    from typing import Any

    import websocket

    from .proxy_route import ProxyRoute

__all__ = ["HttpError", "ProxyRefused", "Response", "WebSocket", "WireError", "http_request", "open_websocket"]

_MAX_BODY = 256 * 1024 * 1024
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)  # Linux only
_TUNNEL_FAILED = "Tunnel connection failed: "  # how http.client words a proxy's non-200 answer to the CONNECT
#: Seconds a TLS handshake may take (at most the request's timeout). It is two round trips: one not done by
#: then will not be, and the likely cause (a plain-HTTP server, which never answers a ClientHello) is said
#: sooner than after the whole request timeout.
_TLS_HANDSHAKE_SECONDS = 10.0


class WireError(OSError):
    """The connection failed or the peer broke the protocol."""


class ProxyRefused(WireError):
    """The proxy answered the ``CONNECT`` with a status other than 200 (``status``; 407: it wants credentials)."""

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


class _Target:
    """Where a URL points: ``host``, ``port``, ``netloc`` (as the URL names it, for messages) and ``path`` (with its query)."""

    __slots__ = ("secure", "host", "port", "netloc", "path")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https", "ws", "wss"):
            raise WireError(f"unsupported URL scheme {parts.scheme!r}")
        self.secure = parts.scheme in ("https", "wss")
        self.host = parts.hostname or "localhost"
        try:
            self.port = parts.port or (443 if self.secure else 80)
        except ValueError:
            raise WireError("the URL has an invalid port") from None
        named = f"[{self.host}]" if ":" in self.host else self.host
        self.netloc = named if parts.port is None else f"{named}:{parts.port}"
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _connection(target: _Target, timeout: float, proxy: ProxyRoute | None) -> http.client.HTTPConnection:
    """A connected ``http.client`` connection to ``target``: through ``proxy``'s tunnel when given, TLS for https/wss.

    Raises:
        ProxyRefused: the proxy answered the ``CONNECT`` other than 200.
        WireError: no connection (the proxy's or the server's), a broken tunnel, or a failed TLS handshake.
    """
    import http.client

    conn: http.client.HTTPConnection | None = None
    where = (proxy.host, proxy.port) if proxy is not None else (target.host, target.port)
    try:
        conn = http.client.HTTPConnection(*where, timeout=timeout)  # TCP_NODELAY set on connect
        if proxy is not None:
            conn.set_tunnel(target.host, target.port, {"Proxy-Authorization": proxy.authorization} if proxy.authorization else None)
        conn.connect()  # the tunnel first, when there is one
    except Exception as exc:
        if conn is not None:
            conn.close()
        raise _connect_error(exc, target, timeout, proxy) from None
    if target.secure:
        _start_tls(conn, target)
    return conn


def _start_tls(conn: http.client.HTTPConnection, target: _Target) -> None:
    """TLS over ``conn``'s socket with the server's own name (SNI and the certificate check): any failure, a timeout
    included (a plain HTTP server never answers a ClientHello), is the TLS handshake's."""
    import ssl

    bound = min(conn.timeout or _TLS_HANDSHAKE_SECONDS, _TLS_HANDSHAKE_SECONDS)
    try:
        conn.sock.settimeout(bound)
        conn.sock = ssl.create_default_context().wrap_socket(conn.sock, server_hostname=target.host)
        conn.sock.settimeout(conn.timeout)
    except Exception as exc:
        conn.close()
        reason = exc.reason if isinstance(exc, ssl.SSLError) and exc.reason else _reason(exc)
        if isinstance(exc, TimeoutError):
            reason += f" after {bound:g} s: a plain http:// server never answers one"
        raise WireError(f"the TLS handshake with {target.host}:{target.port} failed ({reason})") from None


def _connect_error(exc: Exception, target: _Target, timeout: float, proxy: ProxyRoute | None) -> WireError:
    """What a failed ``connect`` says, naming the proxy (redacted) when there is one."""
    import http.client

    server = f"{target.host}:{target.port}"
    tunnel = f"[{target.host}]:{target.port}" if ":" in target.host else server
    if proxy is None:
        if isinstance(exc, ValueError):  # UnicodeError included: a host name with an empty or overlong label
            return WireError(f"cannot connect to {server} (the host name is invalid)")
        return WireError(f"cannot connect to {server} ({_reason(exc)})")
    if str(exc).startswith(_TUNNEL_FAILED):
        status_text, _, reason = str(exc).removeprefix(_TUNNEL_FAILED).partition(" ")
        status = int(status_text) if status_text.isdigit() else 0
        reason = _shown(reason)
        hint = "; it wants credentials (http://USER:PASSWORD@host:port) or refused the ones given" if status == 407 else ""
        return ProxyRefused(f"{proxy.named()} answered {status} {reason} to CONNECT {tunnel}{hint}".replace("  ", " "), status)
    if isinstance(exc, TimeoutError):
        return WireError(f"no answer from {proxy.named()} within {timeout:g} s")
    if isinstance(exc, (http.client.HTTPException, UnicodeError)):  # a garbled answer, or one cut short
        return WireError(f"{proxy.named()} broke the CONNECT to {tunnel} ({_reason(exc)})")
    if isinstance(exc, ValueError):
        return WireError(f"cannot connect to {proxy.named()}: its host name is invalid")
    return WireError(f"cannot connect to {proxy.named()}: {_reason(exc)}")


def _reason(exc: Exception) -> str:
    """Why ``exc`` failed, for a message: an ``OSError``'s own short text, else the library's words (see :func:`_shown`)."""
    import http.client

    if isinstance(exc, OSError) and exc.errno is not None or isinstance(exc, http.client.HTTPException):
        return os_reason(exc)  # http.client's words repeat what the peer sent: its type's name says enough
    return _shown(str(exc)) or type(exc).__name__


def _shown(text: str) -> str:
    r"""Peer-influenced ``text`` as a message may carry it: printable ASCII only, at most 80 characters.

    Example:
        >>> _shown(" Bad\x00 Gateway\r\n"), len(_shown("y" * 100))
        ('Bad Gateway', 80)
    """
    return "".join(ch for ch in text[:80] if " " <= ch <= "~").strip()


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
    import http.client

    target = _Target(url)
    conn = _connection(target, timeout, proxy)
    try:
        data = None if body is None else json.dumps(body).encode("utf-8")
        head = {"Connection": "close", "Accept": "application/json", **(headers or {})}
        if data is not None:
            head["Content-Type"] = "application/json"
        conn.request(method, target.path, body=data, headers=head)
        response = conn.getresponse()
        resp_headers = {name.lower(): value for name, value in response.getheaders()}
        if response.length is not None and response.length > _MAX_BODY:
            raise WireError("response body too large")
        payload = response.read() if response.length is not None else response.read(_MAX_BODY + 1)  # a short body: IncompleteRead
        if len(payload) > _MAX_BODY:
            raise WireError("response body too large")
    except TimeoutError:
        raise WireError(f"no answer from {target.netloc} within {timeout:g} s") from None
    except (OSError, http.client.HTTPException, ValueError) as exc:  # WireError passes through unchanged
        if isinstance(exc, WireError):
            raise
        raise WireError(f"the exchange with {target.netloc} broke ({_reason(exc)})") from None
    finally:
        conn.close()
    if not 200 <= response.status < 300:
        raise HttpError(response.status, response.reason, payload, resp_headers)
    return Response(response.status, response.reason, resp_headers, payload)


def _close_status(data: bytes) -> str:
    """A close frame's status code and reason (RFC 6455 5.5.1), as words for a message; empty when it has none.

    Example:
        >>> _close_status(b"\\x11\\x94Error initializing: a.ipynb."), _close_status(b"")
        (' (4500: Error initializing: a.ipynb.)', '')
    """
    if len(data) < 2:
        return ""
    reason = _shown(data[2:].decode("utf-8", "replace"))
    return f" ({int.from_bytes(data[:2], 'big')}{': ' + reason if reason else ''})"


class WebSocket:
    """A client WebSocket on ``websocket-client``: text and binary messages, as the kernel client reads them."""

    def __init__(self, ws: websocket.WebSocket) -> None:
        self._ws = ws
        self.closed = False

    def fileno(self) -> int:
        """The socket's descriptor (for ``select``; see :meth:`buffered`)."""
        return self._socket().fileno()

    def _socket(self) -> socket.socket:
        sock = self._ws.sock
        if sock is None:
            raise WireError("the websocket is closed")
        return sock

    def buffered(self) -> bool:
        """True when bytes already read (or decrypted) wait here: ``select`` on the socket would not see them.

        The library reads no further than the frame it is reading, so only
        a TLS socket's decrypted bytes can wait unseen.
        """
        pending = getattr(self._ws.sock, "pending", None)
        return bool(pending is not None and pending())

    def send_text(self, text: str) -> None:
        import websocket

        try:
            self._ws.send(text)
        except (OSError, websocket.WebSocketException) as exc:
            raise WireError(f"websocket send failed ({_reason(exc)})") from None

    def send_bytes(self, data: bytes) -> None:
        """Send one binary message (the library's send lock lets one thread send while another reads)."""
        import websocket

        try:
            self._ws.send_bytes(data)
        except (OSError, websocket.WebSocketException) as exc:
            raise WireError(f"websocket send failed ({_reason(exc)})") from None

    def recv(self, timeout: float | None) -> str | bytes:
        """The next whole message (text as str, binary as bytes); pings are answered on the way.

        A timeout loses nothing: the next call goes on where this one stopped.

        Raises:
            TimeoutError: nothing complete arrived within ``timeout``.
            WireError: the connection closed or broke, or the server broke the protocol.
        """
        import websocket

        try:
            self._socket().settimeout(timeout)
            opcode, data = self._ws.recv_data()
        except websocket.WebSocketTimeoutException:
            raise TimeoutError("no websocket message in time") from None
        except websocket.WebSocketConnectionClosedException:
            self.closed = True
            raise WireError("the server closed the connection") from None
        except (OSError, websocket.WebSocketException) as exc:  # WireError from the frame checks passes through
            if isinstance(exc, WireError):
                raise
            raise WireError(f"the websocket broke ({_reason(exc)})") from None
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            self.closed = True
            raise WireError("the server closed the websocket" + _close_status(bytes(data)))
        if opcode == websocket.ABNF.OPCODE_TEXT:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                raise WireError("the server sent a text message that is not UTF-8") from None
        return bytes(data)

    def close(self) -> None:
        """Send a close frame and drop the connection; never waits."""
        import websocket

        if not self.closed:
            self.closed = True
            try:
                self._ws.send_close()
            except (OSError, websocket.WebSocketException):  # the peer is gone: nothing to tell it, and the socket is dropped below
                pass
        self._ws.shutdown()


def _checked_frames(ws: websocket.WebSocket, max_message: int = _MAX_BODY) -> None:
    """Make ``ws`` check each frame's head before its payload is read: no masked frame, no message over ``max_message`` bytes."""
    import websocket

    class Frames(websocket.frame_buffer):
        message = 0  # the bytes of the message being read, its fragments so far included

        def recv_header(self) -> None:
            super().recv_header()
            if self.has_mask():  # RFC 6455 5.1: a server never masks
                raise WireError("the server sent a masked websocket frame")

        def recv_length(self) -> None:
            super().recv_length()
            assert self.header is not None and self.length is not None
            fin, opcode = self.header[0], self.header[4]
            if opcode >= 0x8:  # a control frame: at most 125 bytes, between a message's fragments
                return
            if self.length > max_message - self.message:
                raise WireError(f"websocket message too large (over {max_message} bytes)")
            self.message = 0 if fin else self.message + self.length

    def recv(bufsize: int) -> bytes:
        if _QUICKACK is not None and ws.sock is not None:
            # Acknowledge at once: the server's Nagle would otherwise hold its
            # next small frame until our delayed ACK (up to 40 ms) goes out.
            ws.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        return ws._recv(bufsize)

    ws.frame_buffer = Frames(recv, True)  # UTF-8 is checked once, when a text message is decoded


def open_websocket(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
    proxy: ProxyRoute | None = None,
    max_message: int = _MAX_BODY,
) -> WebSocket:
    """Open a client WebSocket to ``ws://`` or ``wss://`` ``url`` (through ``proxy``'s tunnel when given).

    ``max_message`` bounds one message from the server, in bytes (default 256 MiB), checked from each frame's head.

    Raises:
        WireError: connection or handshake failure (:class:`ProxyRefused`: the proxy said no).
        HttpError: the server refused the upgrade (a redirect is not followed: the caller reads its location).
    """
    import websocket

    target = _Target(url)
    conn = _connection(target, timeout, proxy)
    sock, conn.sock = conn.sock, None  # the websocket owns the socket from here on
    ws = websocket.WebSocket(skip_utf8_validation=True)
    _checked_frames(ws, max_message)
    header = [f"{name}: {value}" for name, value in (headers or {}).items()]
    try:
        ws.connect(url, socket=sock, header=header, suppress_origin=True, redirect_limit=0)
    except websocket.WebSocketBadStatusException as exc:
        found = {str(k).lower(): str(v) for k, v in (exc.resp_headers or {}).items()}
        raise HttpError(exc.status_code, exc.status_message or "", exc.resp_body or b"", found) from None
    except websocket.WebSocketTimeoutException:
        raise WireError(f"no answer from {target.netloc} within {timeout:g} s") from None
    except (OSError, websocket.WebSocketException) as exc:
        answer = ws.handshake_response
        if answer is not None and 300 <= answer.status < 400:
            raise HttpError(answer.status, "", b"", {str(k).lower(): str(v) for k, v in answer.headers.items()}) from None
        raise WireError(f"bad websocket handshake with {target.netloc} ({_reason(exc)})") from None
    finally:
        if not ws.connected and sock is not None:
            sock.close()
    return WebSocket(ws)
