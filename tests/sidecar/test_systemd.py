"""The systemd examples: the units verify, and socket inheritance works.

The inheritance test passes a real listening socket as fd 3 with
LISTEN_FDS/LISTEN_PID, exactly as systemd does; it does not need systemd.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import psutil
import pytest
from helpers import REPO, run_cli

from jcli_sidecar import __version__
from jcli_sidecar.base.framing import pack_frame, read_frame
from jcli_sidecar.base.protocol import PROTOCOL_VERSION
from jcli_sidecar.base.runtime import SidecarPaths

UNITS = REPO / "systemd-examples"
INSTANCE = "0123456789abcdef"


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    for name in ("jcli-sidecar@.socket", "jcli-sidecar@.service"):
        shutil.copy(UNITS / name, tmp_path / name)
        (tmp_path / name.replace("@.", f"@{INSTANCE}.")).symlink_to(name)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    proc = subprocess.run(
        [analyze, "verify", "--user", f"jcli-sidecar@{INSTANCE}.socket", f"jcli-sidecar@{INSTANCE}.service"],
        cwd=tmp_path,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_socket_unit_listens_where_j_cli_looks(fixture_dir):
    text = (UNITS / "jcli-sidecar@.socket").read_text()
    assert "ListenStream=%t/jcli/%i.sock" in text and "SocketMode=0600" in text and "DirectoryMode=0700" in text
    unit = run_cli("-j", "sidecar", "unit-name", cwd=fixture_dir).json()
    assert unit["instance"] == SidecarPaths(os.path.realpath(fixture_dir)).hash


ACTIVATE = """
import os, sys
fd = int(sys.argv[1])
os.dup2(fd, 3)
if fd != 3:
    os.close(fd)
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())
os.execv(sys.executable, [sys.executable, "-m", "jcli_sidecar", "serve", "--instance", sys.argv[2]])
"""


@pytest.mark.slow
def test_a_socket_activated_sidecar_serves_its_workspace_only(fixture_dir, sidecar_on, tmp_path):
    paths = SidecarPaths(os.path.realpath(fixture_dir))
    os.mkdir(paths.dir, 0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(paths.socket)
    os.chmod(paths.socket, 0o600)
    listener.listen(16)
    proc = subprocess.Popen(
        [sys.executable, "-c", ACTIVATE, str(listener.fileno()), paths.hash],
        pass_fds=(listener.fileno(),),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    listener.close()  # like systemd, which keeps it; here the sidecar's copy is enough
    try:
        # A stranger workspace is refused: its hash is not the instance name.
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        sock.connect(paths.socket)
        args = {"protocol": PROTOCOL_VERSION, "version": __version__, "workspace": str(tmp_path)}
        sock.sendall(pack_frame({"id": 0, "op": "hello", "args": args}))
        assert read_frame(sock)["error"]["code"] == "PROTOCOL_ERROR"
        sock.close()
        # The real workspace is served (the read goes through the inherited socket).
        read = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0"]
        via = run_cli(*read, cwd=fixture_dir)
        off = run_cli(*read, cwd=fixture_dir, env={**os.environ, "JCLI_SIDECAR": "off"})
        assert via.returncode == 0 and via.stdout == off.stdout
        status = run_cli("-j", "sidecar", "status", cwd=fixture_dir).json()
        assert status["running"] and status["pid"] == proc.pid
        assert status["workspace"] == paths.workspace and status["requests_served"] >= 1
        assert run_cli("sidecar", "stop", cwd=fixture_dir).returncode == 0
        assert proc.wait(30) == 0
        assert os.path.exists(paths.socket)  # systemd's socket is not ours to remove
    finally:
        if proc.poll() is None:
            psutil.Process(proc.pid).kill()
            proc.wait()
