"""Trust nothing recorded without proof, and leak no secret.

- A recorded embedded server is used only once proven ours: its process
  runs with the recorded start time and our uid, and holds the listening
  socket itself. The squatter here is real: another user (``nobody``)
  listening on the recorded port, recording every byte it receives.
- The embedded server picks its own port, so none is chosen ahead and left
  free for someone else to take.
- Kernels never see the embedded server's token (nor another secret of ours)
  in their environment.
- Credentials in a server URL never reach a message, a result or a log tail;
  a malformed server URL or token is a coded usage error.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest
from helpers import DROP, run_cli

from jcli_sidecar.base.process_record import ProcessRecord
from jcli_sidecar.base.runtime import RUNTIME_FILES, ensure_runtime_dir, workspace_hash
from jcli_sidecar.kernel.urls import redact_text, redact_url

NOBODY = 65534

# A listener that answers like a Jupyter Server (one session named "main") and
# appends every connection's bytes to its log: whatever reaches it is in there.
SQUATTER = r"""
import json, socket, sys
port, log_path = int(sys.argv[1]), sys.argv[2]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(16)
print("listening", flush=True)
session = {"id": "5e55-squat", "name": "main", "path": "main", "kernel": {"id": "k-squat", "name": "python3", "execution_state": "idle"}}
answers = {
    "/api/status": {"started": "now", "kernels": 7, "connections": 0, "last_activity": "now"},
    "/api/kernelspecs": {"default": "squat", "kernelspecs": {"squat": {"spec": {"display_name": "Squat", "language": "python"}}}},
    "/api/sessions": [session],
}
while True:
    conn, _ = server.accept()
    conn.settimeout(5)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    with open(log_path, "ab") as log:
        log.write(b"<connection>" + data)
    path = data.split(b" ")[1].decode("latin-1").split("?")[0] if data.count(b" ") > 1 else "/"
    body = json.dumps(answers.get(path, {})).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    conn.close()
"""


@pytest.fixture(scope="module")
def squat_dir():
    """A directory ``nobody`` can read (the script) and write (its log)."""
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv is needed to act as another user")
    base = Path(tempfile.mkdtemp(prefix="jcli-squat-", dir=tempfile.gettempdir()))  # not under pytest's 0700 dirs
    base.chmod(0o777)
    (base / "squatter.py").write_text(SQUATTER, encoding="utf-8")
    (base / "squatter.py").chmod(0o644)
    yield base
    shutil.rmtree(base, ignore_errors=True)


class Squatter:
    """``nobody`` listening on 127.0.0.1:``port``; ``received()`` is every byte sent to it."""

    def __init__(self, squat_dir: Path, port: int) -> None:
        self.port = port
        self.log = squat_dir / f"received-{port}-{os.urandom(4).hex()}.log"
        self.proc = None
        for python in filter(None, (sys.executable, shutil.which("python3"))):
            proc = subprocess.Popen(
                [*DROP, python, str(squat_dir / "squatter.py"), str(port), str(self.log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            if proc.stdout.readline() == b"listening\n":  # the event: it listens now
                self.proc = proc
                break
            _, err = proc.communicate(timeout=10)
        assert self.proc is not None, f"nobody could not listen on port {port}: {err[-300:]!r}"
        assert psutil.Process(self.proc.pid).uids().real == NOBODY

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def received(self) -> bytes:
        return self.log.read_bytes() if self.log.exists() else b""

    def stop(self) -> None:
        self.proc.kill()
        self.proc.communicate(timeout=10)


@pytest.fixture(scope="module")
def dead_server_state(tmp_path_factory, starts_jupyter):
    """The state j-cli recorded for an embedded server that then died (SIGKILL): its port is free again."""
    runtime = tmp_path_factory.mktemp("dead-runtime")
    runtime.chmod(0o700)
    workspace = tmp_path_factory.mktemp("dead-ws")
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    started = run_cli("-j", "server", "start", cwd=workspace, env=env)
    assert started.returncode == 0, started.stderr
    state_file = runtime / "jcli" / (workspace_hash(os.path.realpath(workspace)) + RUNTIME_FILES["server_state"])
    state = json.loads(state_file.read_text(encoding="utf-8"))
    server = psutil.Process(state["pid"])
    server.send_signal(signal.SIGKILL)
    server.wait(30)
    return state


def _record(tmp_path: Path, state: dict) -> Path:
    """Write ``state`` as this test workspace's embedded-server record (in the test's runtime dir)."""
    directory = ensure_runtime_dir(create=True)
    path = Path(directory) / (workspace_hash(os.path.realpath(tmp_path)) + RUNTIME_FILES["server_state"])
    path.write_text(json.dumps(state), encoding="utf-8")
    path.chmod(0o600)
    return path


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _listens(pid: int, port: int) -> bool:
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in psutil.Process(pid).net_connections(kind="tcp"))


@pytest.fixture
def squatter(squat_dir, dead_server_state):
    """``nobody`` on the dead server's recorded port."""
    squat = Squatter(squat_dir, _port(dead_server_state["url"]))
    yield squat
    squat.stop()


# -- item 9: a stale record is never trusted ----------------------------------------------


def test_the_whole_story_kill_squat_and_use(tmp_path, squat_dir, starts_jupyter):
    """The server dies, nobody listens on its port: healthcheck, session list and exec go to a new server of ours."""
    started = run_cli("-j", "server", "start", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    first = started.json()
    psutil.Process(first["pid"]).kill()
    psutil.Process(first["pid"]).wait(30)
    squat = Squatter(squat_dir, _port(first["url"]))
    try:
        health = run_cli("-j", "healthcheck", cwd=tmp_path)
        assert health.returncode == 0, health.stderr
        assert health.json()["server"] != squat.url and health.json()["kernelspecs"] != ["squat"]
        listed = run_cli("-j", "session", "list", cwd=tmp_path)
        assert listed.returncode == 0 and listed.json() == {"sessions": []}
        ran = run_cli("-j", "exec", "main", "-c", "print('for the squatter')", cwd=tmp_path)
        assert ran.returncode == 1 and ran.error()["code"] == "SESSION_NOT_FOUND"
        status = run_cli("-j", "server", "status", cwd=tmp_path).json()
        assert status["running"] and status["pid"] != first["pid"] and _listens(status["pid"], _port(status["url"]))
        assert squat.received() == b""  # not one connection: neither the token nor the code
    finally:
        squat.stop()
        run_cli("server", "stop", cwd=tmp_path)


@pytest.mark.parametrize(
    "args, check",
    [
        (["healthcheck"], lambda r: r.returncode == 0 and r.json()["kernelspecs"] != ["squat"]),
        (["server", "start"], lambda r: r.returncode == 0 and r.json()["running"]),
        (["session", "list"], lambda r: r.returncode == 0 and r.json() == {"sessions": []}),
        (["kernelspec", "list"], lambda r: r.returncode == 0 and r.json()["default"] != "squat"),
        (["session", "create", "-n", "mine"], lambda r: r.returncode == 0 and r.json()["name"] == "mine"),
        (["exec", "main", "-c", "print(1)"], lambda r: r.returncode == 1 and r.error()["code"] == "SESSION_NOT_FOUND"),
        (["kernel", "interrupt", "main"], lambda r: r.returncode == 1 and r.error()["code"] == "SESSION_NOT_FOUND"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_every_command_on_a_dead_servers_record_starts_its_own(tmp_path, dead_server_state, squatter, args, check):
    _record(tmp_path, dead_server_state)
    try:
        result = run_cli("-j", *args, cwd=tmp_path)
        assert check(result), (result.stdout, result.stderr)
        assert dead_server_state["token"].encode() not in result.stdout + result.stderr
        status = run_cli("-j", "server", "status", cwd=tmp_path).json()
        assert status["running"] and status["url"] != squatter.url and _listens(status["pid"], _port(status["url"]))
    finally:
        run_cli("server", "stop", cwd=tmp_path)
    assert squatter.received() == b""


@pytest.fixture
def live_child():
    """A live process of ours that listens on nothing."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    yield proc
    proc.stdin.close()
    proc.wait(10)


#: The stale record past which the test also starts a server of ours. Every kind is judged by the one proof
#: (``EmbeddedServer.proven``), which ``server status`` shows for each, and a start then replaces the record
#: whatever made it stale; a start past every kind of dead record is the test above's.
STARTS_PAST = "the squatter's pid with our uid and a forged start time"


@pytest.mark.parametrize(
    "kind",
    [
        "dead server",
        "a live process of ours that does not listen",
        "the squatter's own record",
        "the squatter's pid with our uid",
        STARTS_PAST,
        "no process record at all",
    ],
)
def test_a_record_that_fails_any_part_of_the_proof_is_stale(tmp_path, dead_server_state, squatter, live_child, kind):
    state = dict(dead_server_state)
    squat = ProcessRecord.of_pid(squatter.proc.pid).to_dict()
    if kind == "a live process of ours that does not listen":
        state.update(ProcessRecord.of_pid(live_child.pid).to_dict())
    elif kind == "the squatter's own record":
        state.update(squat)
        assert squat["uid"] == NOBODY
    elif kind == "the squatter's pid with our uid":
        state.update(squat, uid=os.getuid())
    elif kind == "the squatter's pid with our uid and a forged start time":
        state.update(squat, uid=os.getuid(), create_time=squat["create_time"] + 5)
    elif kind == "no process record at all":
        state = {"url": squatter.url, "token": state["token"], "workspace": str(tmp_path)}
    _record(tmp_path, state)
    status = run_cli("-j", "server", "status", cwd=tmp_path)
    assert status.returncode == 0 and status.json() == {"running": False, "workspace": str(tmp_path.resolve())}
    shown = status.stdout + status.stderr
    if kind == STARTS_PAST:
        session = run_cli("-j", "session", "list", cwd=tmp_path)  # needs a server, so it starts one of ours
        try:
            assert session.returncode == 0 and session.json() == {"sessions": []}
        finally:
            run_cli("server", "stop", cwd=tmp_path)
        shown += session.stdout + session.stderr
    assert squatter.received() == b""
    assert state["token"].encode() not in shown


@pytest.mark.parametrize("url", ["http://localhost:{port}", "http://127.0.0.1:{port}/", "https://127.0.0.1:{port}"])
def test_a_record_of_ours_behind_any_other_url_is_stale(tmp_path, url):
    """Only the exact ``http://127.0.0.1:PORT`` j-cli writes is checked against the socket: nothing else is spoken to."""
    with socket.socket() as mine:
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        mine.setblocking(False)
        port = mine.getsockname()[1]
        _record(tmp_path, {"url": url.format(port=port), "token": "t0ken", **ProcessRecord.current().to_dict()})
        status = run_cli("-j", "server", "status", cwd=tmp_path)
        assert status.returncode == 0 and status.json()["running"] is False
        with pytest.raises(BlockingIOError):
            mine.accept()  # nobody connected


def test_a_record_of_ours_on_its_exact_url_is_trusted(tmp_path):
    """The other side of the proof: the same record and socket, on the URL j-cli writes, is spoken to."""
    with socket.socket() as mine:
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        mine.settimeout(60)
        port = mine.getsockname()[1]
        _record(tmp_path, {"url": f"http://127.0.0.1:{port}", "token": "t0ken", **ProcessRecord.current().to_dict()})
        client = subprocess.Popen(
            [sys.executable, "-m", "jcli", "-j", "server", "status"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        conn, _ = mine.accept()
        with conn:
            assert b"Authorization: token t0ken" in conn.recv(65536)
        client.communicate(timeout=60)


def test_the_server_binds_a_port_of_its_own_choosing(tmp_path, starts_jupyter):
    """No port is picked ahead and freed for the server to bind later (a window for a squatter)."""
    started = run_cli("-j", "server", "start", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    state = started.json()
    try:
        cmdline = psutil.Process(state["pid"]).cmdline()
        assert "--ServerApp.port=0" in cmdline and not any(a.startswith("--ServerApp.port=") and a != "--ServerApp.port=0" for a in cmdline)
        assert _listens(state["pid"], _port(state["url"]))
        record = ProcessRecord.from_dict(
            state | {"create_time": psutil.Process(state["pid"]).create_time(), "uid": os.getuid(), "host": None}
        )
        assert record.listens_on("127.0.0.1", _port(state["url"]))
        assert not record.listens_on("127.0.0.1", _port(state["url"]) + 1 if _port(state["url"]) < 65535 else 1)
    finally:
        run_cli("server", "stop", cwd=tmp_path)


def test_listens_on_needs_the_process_itself_to_hold_the_socket(squat_dir, live_child):
    me = ProcessRecord.current()
    with socket.socket() as mine:
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        port = mine.getsockname()[1]
        assert me.listens_on("127.0.0.1", port)
        assert not ProcessRecord.of_pid(live_child.pid).listens_on("127.0.0.1", port)  # ours, alive, but not the holder
        assert not me.listens_on("127.0.0.2", port)  # another address
    assert not me.listens_on("127.0.0.1", port)  # closed
    with socket.socket(socket.AF_INET6) as wildcard:  # a dual-stack wildcard listener serves 127.0.0.1 too
        wildcard.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        wildcard.bind(("::", 0))
        wildcard.listen()
        assert me.listens_on("127.0.0.1", wildcard.getsockname()[1])
    squat = Squatter(squat_dir, port)
    try:
        theirs = ProcessRecord.of_pid(squat.proc.pid)
        assert theirs.listens_on("127.0.0.1", port) and not me.listens_on("127.0.0.1", port)
    finally:
        squat.stop()


def test_the_lean_check_agrees_with_psutil(live_child):
    record = ProcessRecord.of_pid(live_child.pid)
    assert record.state() == "alive" and record.process().pid == live_child.pid
    assert ProcessRecord.from_dict(dict(record.to_dict(), create_time=record.create_time + 0.5)).state() == "gone"


# -- item 10: kernels never see the server's token ---------------------------------------------


def test_kernels_never_see_the_embedded_servers_token(tmp_path, monkeypatch, isolated_runtime, starts_jupyter):
    monkeypatch.setenv("JUPYTER_TOKEN", "user-jupyter-token-1")  # a user's own, for another server
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_TOKEN", "user-jcli-token-2")  # set, but no URL: the embedded server is used
    monkeypatch.setenv("JUPYTER_TOKEN_FILE", str(tmp_path / "no-such-token-file"))
    started = run_cli("-j", "server", "start", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    state = started.json()
    token = state["token"]
    try:
        assert run_cli("session", "create", "-n", "k", cwd=tmp_path).returncode == 0
        code = "import json, os; print(json.dumps(dict(os.environ)))"
        ran = run_cli("-j", "exec", "k", "-c", code, cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr
        kernel_env = json.loads(ran.json()["text"])
        secrets = (token, "user-jupyter-token-1", "user-jcli-token-2")
        leaked = {k: v for k, v in kernel_env.items() if any(s in v for s in secrets)}
        assert leaked == {} and "JUPYTER_TOKEN" not in kernel_env and "JUPYTER_TOKEN_FILE" not in kernel_env
        assert token not in ran.stdout.decode()
        server = psutil.Process(state["pid"])
        assert not any(token in value for value in server.environ().values())
        assert token not in " ".join(server.cmdline())
        logs = list((isolated_runtime / "jcli").glob("*.server.log"))
        assert logs and all(token not in log.read_text(encoding="utf-8", errors="replace") for log in logs)
        # The token still works for whoever joins with it (JupyterLab, -s/-t).
        joined = run_cli("-j", "-s", state["url"], "-t", token, "healthcheck", cwd=tmp_path)
        assert joined.returncode == 0, joined.stderr
        refused = run_cli("-j", "-s", state["url"], "-t", "wrong", "healthcheck", cwd=tmp_path)
        assert refused.returncode == 1 and "refused the token" in refused.error()["message"]
    finally:
        run_cli("server", "stop", cwd=tmp_path)


# -- item 12 and the small ones: credentials in URLs, malformed URLs ----------------------------

SECRET = "Pa55-s3cret"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nobody listens once it is closed


COMMANDS = [
    ["healthcheck"],
    ["session", "list"],
    ["kernelspec", "list"],
    ["session", "create", "-n", "x"],
    ["session", "kill", "x"],
    ["kernel", "interrupt", "x"],
    ["kernel", "restart", "x"],
    ["exec", "x", "-c", "1"],
    ["exec", "x", "-f", "nb.ipynb"],
]


@pytest.fixture
def notebook_here(tmp_path):
    (tmp_path / "nb.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
        encoding="utf-8",
    )
    return tmp_path


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("json_mode", [True, False], ids=["json", "human"])
@pytest.mark.parametrize("via", ["flag", "env"])
def test_credentials_in_an_unreachable_url_are_never_echoed(notebook_here, monkeypatch, args, json_mode, via):
    port = _closed_port()
    url = f"http://admin:{SECRET}@127.0.0.1:{port}/base"
    if via == "env":
        monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", url)
        opts = []
    else:
        opts = ["-s", url]
    result = run_cli(*(["-j"] if json_mode else []), *opts, *args, cwd=notebook_here)
    out = (result.stdout + result.stderr).decode()
    assert result.returncode == 1 and SECRET not in out and "Traceback" not in out
    if json_mode:
        err = result.error()
        assert err["code"] == "SERVER_UNAVAILABLE" and err["url"] == f"http://***@127.0.0.1:{port}/base"
    else:
        assert "[SERVER_UNAVAILABLE]" in out and "http://***@127.0.0.1:" in out


def _with_userinfo(url: str, userinfo: str) -> str:
    return url.replace("http://", f"http://{userinfo}@", 1)


def test_a_real_server_refusing_the_token_or_the_path_never_sees_the_password_echoed(jupyter, tmp_path):
    url = _with_userinfo(jupyter["url"], f"me:{SECRET}")
    cases = [
        (["-s", url, "-t", "wrong"], "NOT_AUTHORIZED", "refused the token"),
        (["-s", url + "/not/the/base", "-t", jupyter["token"]], "SERVER_UNAVAILABLE", "base URL"),
        (["-s", url.replace("http://", "https://"), "-t", jupyter["token"]], "SERVER_UNAVAILABLE", "after 10 s: a plain http:// server"),
    ]
    for opts, code, words in cases:
        result = run_cli("-j", *opts, "session", "list", cwd=tmp_path)
        err = result.error()
        assert result.returncode == 1 and err["code"] == code and words in err["message"], err
        assert SECRET not in (result.stdout + result.stderr).decode()


def test_a_successful_result_shows_the_url_redacted(jupyter, tmp_path):
    url = _with_userinfo(jupyter["url"], f"me:{SECRET}")
    result = run_cli("-j", "-s", url, "-t", jupyter["token"], "healthcheck", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.json()["server"] == _with_userinfo(jupyter["url"], "***")
    human = run_cli("-s", url, "-t", jupyter["token"], "healthcheck", cwd=tmp_path)
    assert human.returncode == 0 and SECRET not in human.stdout.decode() and "http://***@" in human.stdout.decode()


MALFORMED = [
    "http://me:{s}@[::1",
    "ftp://me:{s}@host",
    "http://me:{s}@host:99999",
    "http://me:{s}@host:0",
    "http://me:{s}@host:port",
    "",
    "http://",
    "http:///nohost",
    "http:host",
    "me:{s}@localhost:8888",
    "localhost:8888",
    "http://me:{s} @host",
    "http://me:{s}@ho\tst",
    "http://me:p/a@ss{s}@host:1:2",
    "javascript:alert(1)",
]


@pytest.mark.parametrize("template", MALFORMED)
@pytest.mark.parametrize("args", [["healthcheck"], ["exec", "x", "-c", "1"], ["session", "list"]], ids=" ".join)
def test_a_malformed_server_url_is_a_usage_error_with_the_url_redacted(tmp_path, template, args):
    url = template.format(s=SECRET)
    result = run_cli("-j", "-s", url, *args, cwd=tmp_path)
    err = result.error()
    assert result.returncode == 2 and err["code"] == "USAGE_ERROR", err
    assert SECRET not in (result.stdout + result.stderr).decode()
    assert not list((tmp_path).iterdir())  # no embedded server was started for an empty -s


def test_a_malformed_url_from_the_environment_is_a_usage_error_too(tmp_path, monkeypatch):
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", f"http://me:{SECRET}@host:99999")
    result = run_cli("-j", "exec", "x", "-c", "1", cwd=tmp_path)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR" and SECRET not in result.stderr.decode()


@pytest.mark.parametrize("url", ["http://a..b:8888", "http://" + "x" * 70 + ".example:8888"])
def test_a_host_name_that_cannot_be_resolved_is_server_unavailable(tmp_path, url):
    result = run_cli("-j", "-s", url, "healthcheck", cwd=tmp_path)
    assert result.returncode == 1 and result.error()["code"] == "SERVER_UNAVAILABLE"


@pytest.mark.parametrize("token", ["tök€n", "line\nbreak", "nul\x01"])
def test_a_token_an_http_header_cannot_carry_is_a_usage_error_never_echoed(tmp_path, token):
    result = run_cli("-j", "-s", f"http://127.0.0.1:{_closed_port()}", "-t", token, "exec", "x", "-c", "1", cwd=tmp_path)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"
    assert token.encode() not in result.stderr


def test_a_failed_start_shows_the_server_log_redacted(tmp_path, monkeypatch, starts_jupyter):
    """The log tail in the error is redacted: a startup that logs a URL with credentials, then dies."""
    config = tmp_path / "jupyter-config"
    config.mkdir()
    (config / "jupyter_server_config.py").write_text(
        f"print('see http://me:{SECRET}@127.0.0.1:1/?token={SECRET}', flush=True)\nraise SystemExit(3)\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    ws = tmp_path / "ws"
    ws.mkdir()
    result = run_cli("-j", "healthcheck", cwd=ws)
    err = result.error()
    assert result.returncode == 1 and err["code"] == "SERVER_UNAVAILABLE" and "exited at start" in err["message"]
    assert "http://***@127.0.0.1:1/?token=***" in err["message"] and SECRET not in result.stderr.decode()


@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://u:p@h:1/x", "http://***@h:1/x"),
        ("http://tok3n@h", "http://***@h"),
        ("https://u:p@ss:w/rd@h/", "https://***@h/"),
        ("http://h/?a=1&token=xyz&b=2", "http://h/?a=1&token=***&b=2"),
        ("http://h/?Access_Token=xyz#api_key=abc", "http://h/?Access_Token=***#api_key=***"),
        ("http://h:8888/user/me", "http://h:8888/user/me"),
        ("u:p@h:1", "***@h:1"),
    ],
)
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_redact_text_finds_every_url():
    text = f"a http://u:{SECRET}@h/ b https://h2/?token={SECRET} c token={SECRET}"
    assert SECRET not in redact_text(text) and redact_text(text).count("***") == 3


def test_a_password_of_any_characters_is_hidden():
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=30))
    def check(password):
        marked = "Zq" + password + "Zq"
        assert marked not in redact_url(f"http://user:{marked}@host:8888/base")
        assert marked not in redact_text(f"see http://user:{marked}@host:8888/base")

    check()


IMPORT_PROBE = """
import sys
from jcli.__main__ import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    fh.write("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""


def test_proving_the_embedded_server_keeps_exec_lean(tmp_path, starts_jupyter):
    """The proof reads /proc itself: an exec on the embedded server imports no psutil (nor click)."""
    started = run_cli("-j", "server", "start", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    try:
        assert run_cli("session", "create", "-n", "lean", cwd=tmp_path).returncode == 0
        listing = tmp_path / "modules.txt"
        proc = subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE, str(listing), "-j", "exec", "lean", "-c", "40 + 2"],
            cwd=tmp_path,
            capture_output=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        roots = {name.split(".")[0] for name in listing.read_text().split()}
        assert not roots & {"psutil", "click"}
    finally:
        run_cli("server", "stop", cwd=tmp_path)
