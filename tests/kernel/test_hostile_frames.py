"""A broken or hostile Jupyter Server's kernel messages: each is a coded error in bounded time and memory.

A real Jupyter Server cannot be made to send these frames, so a server on
loopback stands in for it: it answers the websocket upgrade and the REST
interrupt as Jupyter Server does, reads the client's ``execute_request``,
then sends the frames a test scripts. Everything on the client's side is
the real code: :class:`~jcli_sidecar.kernel.JupyterServer`, the websocket,
:class:`~jcli_sidecar.kernel.kernel_client.KernelConnection`.

Memory is read from ``/proc/self/status`` (``VmHWM``, the peak): on main a
12-byte frame that claims 4,294,967,295 parts built a list of 4.3 billion
offsets (2.6 GB, then ``MemoryError``).
"""

from __future__ import annotations

import json
import socket
import struct
import threading

import pytest
from test_wire import BINARY, TEXT, _upgrade, frame

from jcli_sidecar.base.errors import ServerMessageInvalid
from jcli_sidecar.kernel import JupyterServer
from jcli_sidecar.kernel.kernel_client import KernelConnection, decode_message

MIB = 1024 * 1024


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        piece = sock.recv(n - len(data))
        if not piece:
            raise ConnectionError("the client went away")
        data += piece
    return data


def _client_frame(sock: socket.socket) -> bytes:
    """One masked frame from the client: its payload."""
    b1, b2 = _read_exactly(sock, 2)
    n = b2 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", _read_exactly(sock, 2))
    elif n == 127:
        (n,) = struct.unpack("!Q", _read_exactly(sock, 8))
    mask = _read_exactly(sock, 4)
    return bytes(b ^ mask[i % 4] for i, b in enumerate(_read_exactly(sock, n)))


class HostileServer:
    """A Jupyter Server on loopback whose kernel answers an execute_request with the frames ``script(msg_id)`` builds."""

    def __init__(self, script) -> None:
        self.script = script
        self.interrupts: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.sockets: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                theirs, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            self.sockets.append(theirs)
            request = b""
            while b"\r\n\r\n" not in request:
                piece = theirs.recv(4096)
                if not piece:
                    break
                request += piece
            if b"upgrade: websocket" in request.lower():
                theirs.sendall(_upgrade(request))
                threading.Thread(target=self._kernel, args=(theirs,), daemon=True).start()
            else:  # the REST API: the interrupt j-cli sends once it cannot follow the run
                self.interrupts.append(request.split(b" ")[1].decode())
                theirs.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                theirs.close()

    def _kernel(self, theirs: socket.socket) -> None:
        try:
            request = json.loads(_client_frame(theirs))
            theirs.sendall(b"".join(self.script(request["header"]["msg_id"])))
        except (OSError, ValueError):  # the client dropped the connection
            pass

    def close(self) -> None:
        self.listener.close()
        for sock in self.sockets:
            sock.close()


def _message(parent: str, channel: str = "iopub", msg_type: str = "status", content: dict | None = None) -> dict:
    header = {"msg_id": f"{channel}-{msg_type}", "msg_type": msg_type, "session": "k", "date": "2026-01-01T00:00:00.000000Z"}
    return {"channel": channel, "header": header, "parent_header": {"msg_id": parent}, "metadata": {}, "content": content or {}}


def _busy_print(parent: str) -> list[bytes]:
    """The first messages of a run that printed: busy, then a stream output."""
    busy = _message(parent, content={"execution_state": "busy"})
    stream = _message(parent, msg_type="stream", content={"name": "stdout", "text": "before\n"})
    return [frame(TEXT, json.dumps(busy).encode()), frame(TEXT, json.dumps(stream).encode())]


def _binary(count: int, offsets: list[int], rest: bytes) -> bytes:
    return struct.pack(f"!I{len(offsets)}I", count, *offsets) + rest


_JSON = json.dumps(_message("x")).encode()

#: Each bad frame: its name and its bytes (the whole websocket frame).
BAD_FRAMES = {
    "count-ffffffff-12-bytes": frame(BINARY, b"\xff\xff\xff\xff" + bytes(8)),
    "count-ffffffff-1-mib": frame(BINARY, b"\xff\xff\xff\xff" + bytes(MIB)),
    "count-zero": frame(BINARY, bytes(12)),
    "truncated-head": frame(BINARY, b"\x00\x00"),
    "empty-binary": frame(BINARY, b""),
    "count-past-the-frame": frame(BINARY, _binary(1000, [4004], _JSON)),
    "offset-past-the-end": frame(BINARY, _binary(2, [12, 1 << 30], _JSON)),
    "offsets-out-of-order": frame(BINARY, _binary(3, [16, 200, 100], _JSON + bytes(300))),
    "first-offset-inside-the-head": frame(BINARY, _binary(2, [0, 12], _JSON)),
    "binary-part-not-json": frame(BINARY, _binary(1, [8], b"\x89PNG not json")),
    "binary-part-an-array": frame(BINARY, _binary(1, [8], b"[1, 2, 3]")),
    "binary-little-endian-framing": frame(BINARY, struct.pack("<II", 1, 8) + _JSON),
    "text-not-json": frame(TEXT, b"<html>502 Bad Gateway</html>"),
    "text-an-array": frame(TEXT, b'[{"channel": "iopub"}]'),
    "text-a-string": frame(TEXT, b'"idle"'),
    "text-null": frame(TEXT, b"null"),
    "text-100k-brackets": frame(TEXT, b"[" * 100_000 + b"]" * 100_000),
    "text-100k-objects": frame(TEXT, b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
    "text-deep-inside-content": frame(
        TEXT, json.dumps({**_message("x"), "content": "@"}).encode().replace(b'"@"', b"[" * 5000 + b"]" * 5000)
    ),
    "text-header-a-list": frame(TEXT, json.dumps({**_message("x"), "header": ["status"]}).encode()),
    "text-content-a-string": frame(TEXT, json.dumps({**_message("x"), "content": "idle"}).encode()),
    "text-no-channel": frame(TEXT, json.dumps({k: v for k, v in _message("x").items() if k != "channel"}).encode()),
    "text-parent-header-null": frame(TEXT, json.dumps({**_message("x"), "parent_header": None}).encode()),
}


def _peak_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


@pytest.mark.parametrize("bad", list(BAD_FRAMES), ids=list(BAD_FRAMES))
def test_a_bad_frame_mid_run_is_a_coded_error_that_keeps_the_output_and_stops_the_kernel(bad):
    server = HostileServer(lambda mine: [*_busy_print(mine), BAD_FRAMES[bad]])
    try:
        before = _peak_kib()
        with KernelConnection(JupyterServer(server.url, "t"), "k-1") as kernel:
            with pytest.raises(ServerMessageInvalid) as caught:
                kernel.execute("print('before')", timeout=30)
            assert kernel.ws.closed, "the connection that spoke garbage is dropped"
            assert kernel.drain_idle() is False, "a held connection that spoke garbage is never used again"
        grown = _peak_kib() - before
    finally:
        server.close()
    err = caught.value
    assert err.code == "SERVER_MESSAGE_INVALID" and "the server sent a" in err.message
    assert err.details["executed"] is True and err.details["outputs"] == 1  # what it printed before is counted, not lost
    assert server.interrupts == ["/api/kernels/k-1/interrupt"], "the code may still run: the kernel is interrupted"
    assert grown < 32 * 1024, f"a bad frame cost {grown} KiB"


@pytest.mark.parametrize("bad", ["count-ffffffff-12-bytes", "text-an-array", "text-100k-brackets"])
def test_a_bad_reply_to_a_request_is_the_same_coded_error(bad):
    server = HostileServer(lambda mine: [BAD_FRAMES[bad]])
    try:
        with KernelConnection(JupyterServer(server.url, "t"), "k-1") as kernel:
            with pytest.raises(ServerMessageInvalid) as caught:
                kernel.request("kernel_info_request", {}, timeout=30)
            assert kernel.ws.closed
    finally:
        server.close()
    assert caught.value.code == "SERVER_MESSAGE_INVALID"


def test_the_servers_own_binary_framing_decodes_with_its_buffers_skipped():
    """The frames Jupyter Server really sends (its serializer, big-endian offsets) read as the message they carry."""
    from jupyter_server.services.kernels.connection.base import serialize_binary_message

    for buffers in ([b"\x00\x01"], [b"", b"abc"], [b"x" * 70_000, b"", b"y"]):
        msg = {**_message("p", msg_type="comm_msg", content={"data": {"n": 1}}), "buffers": buffers}
        decoded = decode_message(serialize_binary_message(msg))
        assert decoded["content"] == {"data": {"n": 1}} and decoded["parent_header"] == {"msg_id": "p"}


def test_a_run_whose_reply_comes_in_the_servers_binary_framing_completes():
    """A message with buffers mid-run (a widget's comm message) is read, not dropped, and the run ends ok."""
    from jupyter_server.services.kernels.connection.base import serialize_binary_message

    def script(mine):
        comm = {**_message(mine, msg_type="comm_msg", content={"comm_id": "c", "data": {}}), "buffers": [b"\xff" * 10]}
        idle = _message(mine, content={"execution_state": "idle"})
        reply = _message(mine, channel="shell", msg_type="execute_reply", content={"status": "ok", "execution_count": 3})
        return [
            *_busy_print(mine),
            frame(BINARY, serialize_binary_message(comm)),
            frame(TEXT, json.dumps(idle).encode()),
            frame(BINARY, serialize_binary_message({**reply, "buffers": []})),
        ]

    server = HostileServer(script)
    try:
        with KernelConnection(JupyterServer(server.url, "t"), "k-1") as kernel:
            result = kernel.execute("print('before')", timeout=30)
    finally:
        server.close()
    assert result.status == "ok" and result.execution_count == 3
    assert [o.get("text") for o in result.outputs] == ["before\n"]
    assert server.interrupts == []
