"""The websocket reader of ``jcli_sidecar.kernel.wire`` on a real socket pair.

The far end of a loopback TCP connection plays the server: it writes frames (unmasked, as a server
must) in small pieces from a thread, so every message arrives split across
many reads. These tests check what arrives, never how fast.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading

import pytest

from jcli_sidecar.kernel.wire import WebSocket, WireError, _Reader

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


def tcp_pair() -> tuple[socket.socket, socket.socket]:
    """Two connected TCP sockets on the loopback (the reader sets TCP options a Unix socket lacks)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        ours = socket.create_connection(listener.getsockname())
        theirs, _ = listener.accept()
    return ours, theirs


@pytest.fixture
def pair():
    ours, theirs = tcp_pair()
    yield WebSocket(ours, _Reader(ours)), theirs
    ours.close()
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
    ours, theirs = tcp_pair()
    cut_off = WebSocket(ours, _Reader(ours))
    theirs.sendall(frame(TEXT, b"x" * 100_000)[:50_000])
    theirs.close()
    with pytest.raises(WireError, match="closed the connection"):
        cut_off.recv(None)
    ours.close()


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
