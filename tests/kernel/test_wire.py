"""The websocket of ``jcli_sidecar.kernel.wire`` (``websocket-client`` under j-cli's checks) on a real socket pair.

The far end of a loopback TCP connection plays the server: it answers the
opening handshake, then writes frames (unmasked, as a server must) in small
pieces from a thread, so every message arrives split across many reads.
These tests check what arrives, never how fast.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import struct
import threading

import pytest

from jcli_sidecar.kernel.wire import HttpError, WebSocket, WireError, open_websocket

TEXT, BINARY, CONTINUATION, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


def frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    n = len(payload)
    first = (0x80 if fin else 0) | opcode
    if n < 126:
        head = struct.pack("!BB", first, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", first, 126, n)
    else:
        head = struct.pack("!BBQ", first, 127, n)
    return head + payload


def unmasked(data: bytes) -> tuple[int, bytes]:
    """Opcode and payload of one client frame (clients must mask)."""
    b1, b2 = data[0], data[1]
    assert b2 & 0x80, "a client frame is masked"
    n, at = b2 & 0x7F, 2
    if n == 126:
        (n,), at = struct.unpack_from("!H", data, 2), 4
    elif n == 127:
        (n,), at = struct.unpack_from("!Q", data, 2), 10
    mask, body = data[at : at + 4], data[at + 4 : at + 4 + n]
    return b1 & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(body))


def _upgrade(request: bytes) -> bytes:
    """The answer of a server that accepts the opening handshake ``request`` (RFC 6455 4.2.2)."""
    key = next(line.split(b":", 1)[1].strip() for line in request.split(b"\r\n") if line.lower().startswith(b"sec-websocket-key:"))
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    return b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"


def _serve_one(listener: socket.socket, answer, accepted: list[tuple[socket.socket, bytes]]) -> None:
    """Accept one client, read its request and send ``answer(request)``."""
    theirs, _ = listener.accept()
    request = b""
    while b"\r\n\r\n" not in request:
        request += theirs.recv(4096)
    theirs.sendall(answer(request))
    accepted.append((theirs, request))


def ws_pair(answer=_upgrade) -> tuple[WebSocket, socket.socket]:
    """Our websocket, opened through the real handshake, and the server's end of its TCP connection."""
    accepted: list[tuple[socket.socket, bytes]] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = threading.Thread(target=_serve_one, args=(listener, answer, accepted), daemon=True)
        server.start()
        try:
            ws = open_websocket(
                f"ws://127.0.0.1:{listener.getsockname()[1]}/api/kernels/k/channels", headers={"Authorization": "token t"}, timeout=10
            )
        except BaseException:
            server.join()
            for theirs, _ in accepted:
                theirs.close()
            raise
        server.join()
    return ws, accepted[0][0]


@pytest.fixture
def pair():
    ws, theirs = ws_pair()
    yield ws, theirs
    ws.close()
    theirs.close()


def send_in_pieces(sock: socket.socket, data: bytes, piece: int) -> threading.Thread:
    def write() -> None:
        view = memoryview(data)
        for at in range(0, len(data), piece):
            sock.sendall(view[at : at + piece])

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_20_mb_text_message_written_in_small_pieces_arrives_whole(pair):
    ws, server = pair
    message = json.dumps({"content": {"text": "x" * 20_000_000 + "é\n"}, "channel": "iopub"})
    writer = send_in_pieces(server, frame(TEXT, message.encode("utf-8")), 4093)  # odd size: pieces straddle every boundary
    received = ws.recv(None)
    writer.join()
    assert received == message
    assert not ws.buffered()


def test_a_large_binary_message_in_fragments_with_a_ping_between_arrives_whole(pair):
    ws, server = pair
    payload = os.urandom(3 * (1 << 20) + 7)
    third = len(payload) // 3
    stream = (
        frame(BINARY, payload[:third], fin=False)
        + frame(PING, b"are you there")
        + frame(CONTINUATION, payload[third : 2 * third], fin=False)
        + frame(CONTINUATION, payload[2 * third :])
        + frame(TEXT, b"next")
    )
    writer = send_in_pieces(server, stream, 1000)
    assert ws.recv(None) == payload
    assert ws.recv(None) == "next"  # the bytes after a message stay for the next one
    writer.join()
    server.settimeout(10)
    opcode, body = unmasked(server.recv(1 << 16))
    assert (opcode, body) == (PONG, b"are you there")


@pytest.mark.parametrize("cut", [1, 5, 9, 70_000], ids=["in-the-head", "in-the-length", "after-the-head", "in-the-payload"])
def test_a_timeout_in_the_middle_of_a_frame_loses_nothing(pair, cut):
    """The rest of the frame is written only after the timeout fired: the next call resumes."""
    ws, server = pair
    message = "y" * 200_000
    data = frame(TEXT, message.encode()) + frame(TEXT, b"after")
    server.sendall(data[:cut])
    with pytest.raises(TimeoutError):
        ws.recv(0.05)  # nothing complete can arrive: the rest is not written yet
    server.sendall(data[cut:])
    assert ws.recv(None) == message
    assert ws.recv(None) == "after"


def test_small_messages_back_to_back_each_arrive_once(pair):
    ws, server = pair
    messages = [f"message {i} " + "z" * (i * 37) for i in range(300)]
    writer = send_in_pieces(server, b"".join(frame(TEXT, m.encode()) for m in messages), 777)
    assert [ws.recv(None) for _ in messages] == messages
    writer.join()


def test_a_close_frame_and_a_dropped_connection_are_wire_errors(pair):
    ws, server = pair
    server.sendall(frame(CLOSE, struct.pack("!H", 1000)))
    with pytest.raises(WireError, match="closed the websocket"):
        ws.recv(None)
    cut_off, theirs = ws_pair()
    theirs.sendall(frame(TEXT, b"x" * 100_000)[:50_000])
    theirs.close()
    with pytest.raises(WireError, match="closed the connection"):
        cut_off.recv(None)
    cut_off.close()


def test_a_frame_over_the_size_limit_is_refused_before_it_is_read(pair):
    ws, server = pair
    server.sendall(struct.pack("!BBQ", 0x81, 127, 1 << 40))
    with pytest.raises(WireError, match="too large"):
        ws.recv(None)


def test_a_masked_frame_from_the_server_is_a_wire_error(pair):
    ws, server = pair
    server.sendall(struct.pack("!BB", 0x81, 0x80 | 4) + b"\x01\x02\x03\x04" + b"abcd")
    with pytest.raises(WireError, match="masked"):
        ws.recv(None)


def test_a_refused_upgrade_is_an_http_error_with_the_servers_status_body_and_headers():
    with pytest.raises(HttpError) as refused:
        ws_pair(lambda request: b"HTTP/1.1 403 Forbidden\r\nContent-Length: 12\r\nX-Why: token\r\n\r\nnot for you.")
    assert (refused.value.status, refused.value.body, refused.value.headers["x-why"]) == (403, b"not for you.", "token")


def test_a_redirect_is_not_followed_but_handed_back_with_its_location():
    with pytest.raises(HttpError) as moved:
        ws_pair(lambda request: b"HTTP/1.1 302 Found\r\nLocation: /hub/user/me/\r\nContent-Length: 0\r\n\r\n")
    assert moved.value.status == 302 and moved.value.headers["location"] == "/hub/user/me/"


def test_the_handshake_sends_the_callers_headers_and_no_origin():
    seen: list[bytes] = []

    def answer(request: bytes) -> bytes:
        seen.append(request)
        return _upgrade(request)

    ws, server = ws_pair(answer)
    ws.close()
    server.close()
    head = seen[0].lower()
    assert b"\r\nauthorization: token t\r\n" in head and b"\r\norigin:" not in head


def test_close_sends_a_close_frame_and_drops_the_connection(pair):
    ws, server = pair
    ws.close()
    server.settimeout(10)
    received = b""
    while chunk := server.recv(1 << 16):  # ends when our side has closed the connection
        received += chunk
    assert unmasked(received)[0] == CLOSE
    assert ws.closed
