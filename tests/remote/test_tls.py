"""A Jupyter Server reached over ``https://``: TLS with the server's own name, the REST calls and the kernel's ``wss://``.

The test Jupyter Server sits behind a TLS front on loopback (:class:`TlsFront`:
it ends TLS with a certificate made for ``127.0.0.1`` and relays the bytes),
so every request j-cli makes, the kernel's websocket included, crosses a
real handshake. The certificate is trusted only through ``SSL_CERT_FILE``,
as a user with a private CA would trust it; without it the handshake fails
at once, naming the reason. (A plain-HTTP server behind an ``https://`` URL,
which never answers a handshake, is tests/cli/test_hostile_trust.py's.)
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest
from helpers import run_cli


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``127.0.0.1`` and its key, made by openssl."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2"]
        + ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        capture_output=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    return cert, key


class TlsFront:
    """Ends TLS on a loopback port and relays each connection's bytes to ``backend_port``; counts the handshakes."""

    def __init__(self, backend_port: int, cert: Path, key: Path) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.backend_port = backend_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.handshakes = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed: the front is done
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            front = self.context.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):  # a client that refused our certificate
            conn.close()
            return
        self.handshakes += 1
        back = socket.create_connection(("127.0.0.1", self.backend_port))
        threading.Thread(target=self._pump, args=(back, front), daemon=True).start()
        self._pump(front, back)

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass  # either side went away: the other is closed below
        finally:
            for end in (source, sink):
                end.close()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture(scope="module")
def tls_front(jupyter, tmp_path_factory):
    cert, key = _certificate(tmp_path_factory.mktemp("tls"))
    front = TlsFront(int(jupyter["url"].rsplit(":", 1)[1].split("/")[0]), cert, key)
    yield {"url": f"https://127.0.0.1:{front.port}", "token": jupyter["token"], "cert": cert, "front": front}
    front.close()


def test_a_server_behind_tls_answers_every_call_and_runs_code_over_wss(tls_front, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_front["cert"]))
    server = ["-s", tls_front["url"], "-t", tls_front["token"]]
    health = run_cli("-j", *server, "healthcheck", cwd=tmp_path)
    assert health.returncode == 0, health.stderr
    created = run_cli("-j", *server, "session", "create", "-n", "over-tls", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    try:
        ran = run_cli("-j", *server, "exec", "over-tls", "-c", "print(6 * 7)", cwd=tmp_path)
        assert ran.returncode == 0 and ran.json()["text"] == "42\n", ran.stderr
    finally:
        killed = run_cli("-j", *server, "session", "kill", "over-tls", cwd=tmp_path)
        assert killed.returncode == 0, killed.stderr
    assert tls_front["front"].handshakes >= 4  # every call made its own: none went around the front


def test_a_certificate_nobody_trusts_fails_the_handshake_at_once_saying_why(tls_front, tmp_path, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    result = run_cli("-j", "-s", tls_front["url"], "-t", tls_front["token"], "healthcheck", cwd=tmp_path)
    err = result.error()
    assert result.returncode == 1 and err["code"] == "SERVER_UNAVAILABLE", err
    assert "the TLS handshake with 127.0.0.1" in err["message"] and "CERTIFICATE_VERIFY_FAILED" in err["message"], err
    assert tls_front["token"] not in (result.stdout + result.stderr).decode()


def test_past_the_handshake_bound_a_connection_waits_the_requests_whole_timeout(tls_front, monkeypatch):
    """The handshake alone is bounded (10 s): the connection it leaves keeps the request's own timeout."""
    from jcli_sidecar.kernel.wire import _connection, _Target

    monkeypatch.setenv("SSL_CERT_FILE", str(tls_front["cert"]))
    conn = _connection(_Target(tls_front["url"] + "/api"), 45.0, None)
    try:
        assert conn.sock.version() is not None  # TLS is up
        assert conn.sock.gettimeout() == 45.0
    finally:
        conn.close()
