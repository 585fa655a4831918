"""A real forward proxy for the proxy tests: proxy.py on loopback, with a host name only it resolves.

:class:`MapProxiedHosts` is a proxy.py plugin: names under ``.proxied.test``
resolve to 127.0.0.1 inside the proxy (and nowhere else), and every
upstream connection the proxy opens is written to the file named by
``JCLI_TEST_PROXY_LOG`` (``CONNECT host:port`` per line). A j-cli that
reaches ``http://jupyter.proxied.test:PORT`` therefore went through the
proxy. :class:`LocalProxy` runs one as a process group of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

try:
    from proxy.http.proxy import HttpProxyBasePlugin
except ImportError:  # imported by the tests themselves, where only LocalProxy is used
    HttpProxyBasePlugin = object

#: Names the proxy (and only the proxy) resolves, to 127.0.0.1.
PROXIED_SUFFIX = ".proxied.test"
START_DEADLINE = 60.0
STOP_DEADLINE = 10.0


class MapProxiedHosts(HttpProxyBasePlugin):  # type: ignore[misc,valid-type]
    def resolve_dns(self, host, port):
        if host.endswith(PROXIED_SUFFIX):
            return "127.0.0.1", None
        return None, None

    def before_upstream_connection(self, request):
        log = os.environ.get("JCLI_TEST_PROXY_LOG")
        if log:
            method = (request.method or b"").decode("latin-1")
            host = (request.host or b"").decode("latin-1")
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{method} {host}:{request.port}\n")
        return request


class LocalProxy:
    """proxy.py listening on 127.0.0.1 (a port of its own), optionally requiring ``user:password``."""

    def __init__(self, folder: Path, basic_auth: str | None = None) -> None:
        self.folder = folder
        self.basic_auth = basic_auth
        self.port_file = folder / "port"
        self.log = folder / "connects.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self) -> LocalProxy:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PYTHONPATH": str(Path(__file__).parent),
            "JCLI_TEST_PROXY_LOG": str(self.log),
        }
        argv = [
            sys.executable,
            "-m",
            "proxy",
            "--hostname",
            "127.0.0.1",
            "--port",
            "0",
            "--port-file",
            str(self.port_file),
            "--num-acceptors",
            "1",
            "--num-workers",
            "1",
            "--plugins",
            "proxy_hosts.MapProxiedHosts",
        ]
        if self.basic_auth:
            argv += ["--basic-auth", self.basic_auth]
        out = open(self.folder / "proxy.out", "wb")  # noqa: SIM115 - the child writes it for its whole life
        try:
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.folder)
        finally:
            out.close()
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            text = self.port_file.read_text().strip() if self.port_file.exists() else ""
            if text.isdigit() and self._listening(int(text)):
                self.port = int(text)
                return self
            try:
                self.proc.wait(timeout=0.1)  # returns at once if the proxy died
            except subprocess.TimeoutExpired:
                continue
            break
        tail = (self.folder / "proxy.out").read_text(errors="replace")[-3000:]
        self.stop()
        raise AssertionError(f"proxy.py did not start:\n{tail}")

    @staticmethod
    def _listening(port: int) -> bool:
        import socket

        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return True
        except OSError:
            return False

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}"

    def connects(self) -> list[str]:
        """The upstream connections the proxy opened so far (``CONNECT host:port``)."""
        return self.log.read_text().splitlines() if self.log.exists() else []

    def stop(self) -> None:
        """SIGTERM the proxy's process group; fail (after killing it) if it survives."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_DEADLINE)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise AssertionError("proxy.py ignored SIGTERM") from None
