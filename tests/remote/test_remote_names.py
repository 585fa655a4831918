"""Session names on gateways that do not list sessions: the names j-cli remembers, on real gateways.

Enterprise Gateway and Kernel Gateway at their default settings answer 403
to ``GET /api/sessions``; j-cli remembers the names of the sessions it
creates there, per server, in the runtime dir
(``jcli_sidecar/kernel/session_names.py``). Here, against the real
gateways (tests/gateways.py): a kernel shut down behind j-cli's back is
forgotten and its name is ``SESSION_NOT_FOUND``; a name is refused while
its session lives, also to two creates at once, and two creates at once
keep both names; a planted names file (a symlink, garbage, a FIFO, another
user's) is ignored and never followed; and where the server lists
sessions, its list wins and nothing is remembered.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import click
import pytest
from helpers import DROP, JCLI, nobody_interpreter, run_cli

import jcli
import jcli_sidecar
from jcli_sidecar.kernel import JupyterServer
from jcli_sidecar.kernel.session_names import NameMemory


@pytest.fixture
def on_gateway(request, monkeypatch):
    gateway = request.getfixturevalue(request.param)
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", gateway["url"])
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_TOKEN", gateway["token"])
    return gateway


def _call(gateway: dict, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
    request = urllib.request.Request(
        gateway["url"] + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"token {gateway['token']}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    return status, json.loads(raw) if raw else None


def _memory(gateway: dict, xdg_runtime: Path) -> NameMemory:
    """The names memory of ``gateway`` for a j-cli whose ``XDG_RUNTIME_DIR`` is ``xdg_runtime`` (its runtime dir made, 0700)."""
    runtime = xdg_runtime / "jcli"
    runtime.mkdir(mode=0o700, exist_ok=True)
    server = JupyterServer(gateway["url"], gateway["token"])
    return NameMemory(server.url, server.shown_url, str(runtime))


def _ok(*args: str, cwd) -> dict:
    result = run_cli("-j", *args, cwd=cwd)
    assert result.returncode == 0, (args, result.stderr)
    return result.json()


def _kill_all(gateway: dict, kernel_ids) -> None:
    for kernel_id in kernel_ids:
        _call(gateway, "DELETE", f"/api/kernels/{kernel_id}")


def _names_doc(name: str, kernel_id: str) -> bytes:
    """A names file as j-cli writes one, naming ``kernel_id`` ``name``."""
    entry = {"kernel_id": kernel_id, "session_id": None, "path": name, "kernel_name": "python3", "created": "2026-01-01T00:00:00Z"}
    return json.dumps({"schema_version": 1, "server": "planted", "sessions": {name: entry}}).encode()


@pytest.mark.parametrize("on_gateway", ["enterprise_gateway", "kernel_gateway"], indirect=True)
def test_a_kernel_shut_down_behind_j_clis_back_is_forgotten_and_its_name_not_found(on_gateway, tmp_path, isolated_runtime):
    gateway = on_gateway
    created = _ok("session", "create", "-n", "gone", cwd=tmp_path)
    kernel_id = created["kernel_id"]
    memory = _memory(gateway, isolated_runtime)
    try:
        assert list(memory.entries()) == ["gone"] and memory.entries()["gone"]["kernel_id"] == kernel_id
        info = os.lstat(memory.path)
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        assert gateway["token"] not in Path(memory.path).read_text() and gateway["token"] not in memory.path
        assert _call(gateway, "DELETE", f"/api/kernels/{kernel_id}")[0] == 204  # not through j-cli

        lost = run_cli("-j", "exec", "gone", "-c", "1", cwd=tmp_path)
        err = lost.error()
        assert lost.returncode == 1 and err["code"] == "SESSION_NOT_FOUND" and err["remembered"] is True, err
        assert "was created here through j-cli" in err["message"] and "no longer has its kernel" in err["message"]
        assert memory.entries() == {}
        again = run_cli("-j", "exec", "gone", "-c", "1", cwd=tmp_path)
        assert again.returncode == 1 and again.error()["code"] == "FORBIDDEN"  # forgotten: nothing to remember it by
    finally:
        _kill_all(gateway, [kernel_id])


@pytest.mark.parametrize("on_gateway", ["kernel_gateway"], indirect=True)
def test_session_list_forgets_kernels_the_gateway_no_longer_has(on_gateway, tmp_path, isolated_runtime):
    gateway = on_gateway
    kept = _ok("session", "create", "-n", "kept", cwd=tmp_path)["kernel_id"]
    dropped = _ok("session", "create", "-n", "dropped", cwd=tmp_path)["kernel_id"]
    try:
        assert _call(gateway, "DELETE", f"/api/kernels/{dropped}")[0] == 204
        listed = _ok("session", "list", cwd=tmp_path)
        assert [(row["name"], row["kernel_id"], row["remembered"]) for row in listed["sessions"]] == [("kept", kept, True)]
        assert listed["listing"] is False
        assert list(_memory(gateway, isolated_runtime).entries()) == ["kept"]
        human = run_cli("session", "list", cwd=tmp_path)
        assert human.returncode == 0 and b"kept" in human.stdout and b"(remembered)" in human.stdout
        assert b"only the sessions this user created here through j-cli" in human.stdout
    finally:
        _kill_all(gateway, [kept, dropped])


@pytest.mark.parametrize("on_gateway", ["enterprise_gateway", "kernel_gateway"], indirect=True)
def test_a_live_remembered_name_is_refused_and_a_dead_ones_is_given_again(on_gateway, tmp_path):
    gateway = on_gateway
    first = _ok("session", "create", "-n", "twice", cwd=tmp_path)["kernel_id"]
    ids = [first]
    try:
        refused = run_cli("-j", "session", "create", "-n", "twice", cwd=tmp_path)
        err = refused.error()
        assert refused.returncode == 2 and err["code"] == "USAGE_ERROR" and "exists already" in err["message"] and first in err["message"]
        assert _call(gateway, "DELETE", f"/api/kernels/{first}")[0] == 204
        second = _ok("session", "create", "-n", "twice", cwd=tmp_path)["kernel_id"]
        ids.append(second)
        assert _ok("exec", "twice", "-c", "6 * 7", cwd=tmp_path)["kernel_id"] == second
    finally:
        _kill_all(gateway, ids)


def _create_at_once(names: list[str], cwd: Path) -> list[subprocess.CompletedProcess]:
    procs = [
        subprocess.Popen([JCLI, "-j", "session", "create", "-n", name], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for name in names
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


@pytest.mark.parametrize("on_gateway", ["enterprise_gateway", "kernel_gateway"], indirect=True)
def test_two_creates_at_once_keep_both_names(on_gateway, tmp_path, isolated_runtime):
    gateway = on_gateway
    results = _create_at_once(["left", "right"], tmp_path)
    ids = [json.loads(r.stdout)["kernel_id"] for r in results if r.returncode == 0]
    try:
        assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
        remembered = _memory(gateway, isolated_runtime).entries()
        assert sorted(remembered) == ["left", "right"] and sorted(e["kernel_id"] for e in remembered.values()) == sorted(ids)
        assert sorted(row["name"] for row in _ok("session", "list", cwd=tmp_path)["sessions"]) == ["left", "right"]
        killed = _ok("session", "kill", "left", "right", cwd=tmp_path)
        assert sorted(row["kernel_id"] for row in killed["killed"]) == sorted(ids)
        assert not os.path.lexists(_memory(gateway, isolated_runtime).path)  # nothing left to remember
    finally:
        _kill_all(gateway, ids)


@pytest.mark.parametrize("on_gateway", ["kernel_gateway"], indirect=True)
def test_two_creates_of_one_name_at_once_start_one_kernel(on_gateway, tmp_path, isolated_runtime):
    gateway = on_gateway
    results = _create_at_once(["same", "same"], tmp_path)
    ids = [json.loads(r.stdout)["kernel_id"] for r in results if r.returncode == 0]
    try:
        assert sorted(r.returncode for r in results) == [0, 2], [r.stderr for r in results]
        loser = next(r for r in results if r.returncode == 2)
        assert json.loads(loser.stderr)["code"] == "USAGE_ERROR"
        assert [e["kernel_id"] for e in _memory(gateway, isolated_runtime).entries().values()] == ids
    finally:
        _kill_all(gateway, ids)


# -- planted names files: ignored, never followed -------------------------------------------


@pytest.fixture
def live_kernel(on_gateway):
    """A kernel started on the gateway without j-cli: what a planted file would point j-cli at."""
    status, kernel = _call(on_gateway, "POST", "/api/kernels", {"name": "python3"})
    assert status == 201 and isinstance(kernel, dict), kernel
    yield kernel["id"]
    _kill_all(on_gateway, [kernel["id"]])


def _plant(path: str, kind: str, kernel_id: str, elsewhere: Path) -> None:
    if kind == "symlink":
        elsewhere.write_bytes(_names_doc("planted", kernel_id))
        os.symlink(elsewhere, path)
    elif kind == "garbage":
        Path(path).write_bytes(b'{"schema_version": 1, "sessions": {"planted": [' * 500 + b"\x00\xff")
        os.chmod(path, 0o600)
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "wrong_shape":
        Path(path).write_bytes(json.dumps({"schema_version": 1, "sessions": {"planted": {"kernel_id": "../../etc"}}}).encode())
        os.chmod(path, 0o600)
    elif kind == "others_can_write":
        Path(path).write_bytes(_names_doc("planted", kernel_id))
        os.chmod(path, 0o666)


@pytest.mark.parametrize("kind", ["symlink", "garbage", "fifo", "wrong_shape", "others_can_write"])
@pytest.mark.parametrize("on_gateway", ["kernel_gateway"], indirect=True)
def test_a_planted_names_file_is_ignored_and_replaced_on_the_next_create(on_gateway, live_kernel, kind, tmp_path, isolated_runtime):
    gateway = on_gateway
    memory = _memory(gateway, isolated_runtime)
    elsewhere = tmp_path / "elsewhere.json"
    _plant(memory.path, kind, live_kernel, elsewhere)
    target = elsewhere.read_bytes() if kind == "symlink" else None

    by_name = run_cli("-j", "exec", "planted", "-c", "1", cwd=tmp_path)
    assert by_name.returncode == 1 and by_name.error()["code"] == "FORBIDDEN", by_name.stderr
    listed = _ok("session", "list", cwd=tmp_path)
    assert listed["sessions"] == []

    created = _ok("session", "create", "-n", f"fresh-{kind}", cwd=tmp_path)  # one gateway for the module: a name each
    try:
        info = os.lstat(memory.path)
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
        assert list(memory.entries()) == [f"fresh-{kind}"]
        if target is not None:
            assert elsewhere.read_bytes() == target  # the link was replaced, never written through
    finally:
        _kill_all(gateway, [created["kernel_id"]])


@pytest.mark.parametrize("on_gateway", ["kernel_gateway"], indirect=True)
def test_a_link_where_the_lock_belongs_creates_the_session_without_remembering_it(on_gateway, tmp_path, isolated_runtime):
    gateway = on_gateway
    memory = _memory(gateway, isolated_runtime)
    elsewhere = tmp_path / "elsewhere.lock"
    os.symlink(elsewhere, memory.lock_path)
    created = _ok("session", "create", "-n", "unkept", cwd=tmp_path)
    try:
        assert "could not remember the name" in created["notes"][0] and created["kernel_id"] in created["notes"][0]
        assert not elsewhere.exists() and not os.path.lexists(memory.path)
        assert _ok("exec", created["kernel_id"], "-c", "1 + 1", cwd=tmp_path)["text"] == "2\n"
    finally:
        _kill_all(gateway, [created["kernel_id"]])


@pytest.fixture(scope="module")
def nobody_python():
    """(interpreter, PYTHONPATH) that ``nobody`` can run j-cli with, proven by an import."""
    yield from nobody_interpreter([jcli_sidecar, jcli, click], "jcli_sidecar.kernel.session_names, jcli.cli", "jcli-nobody-names-")


@pytest.mark.parametrize("on_gateway", ["kernel_gateway"], indirect=True)
def test_another_users_names_file_is_ignored(on_gateway, live_kernel, nobody_python):
    """As nobody, with nobody's runtime dir: a names file root put there (readable) is not nobody's, so it names nothing."""
    gateway = on_gateway
    base = Path(tempfile.mkdtemp(prefix="jcli-names-"))
    try:
        base.chmod(0o755)
        runtime, work = base / "runtime", base / "work"
        runtime.mkdir(mode=0o700)
        work.mkdir()
        memory = _memory(gateway, runtime)
        for path in (runtime, runtime / "jcli", work):
            os.chown(path, 65534, 65534)
        Path(memory.path).write_bytes(_names_doc("planted", live_kernel))
        os.chmod(memory.path, 0o644)  # root's, readable by nobody

        python, libs = nobody_python
        env = {
            "PYTHONPATH": libs,
            "PATH": os.environ["PATH"],
            "HOME": "/nonexistent",
            "JCLI_SIDECAR": "off",
            "XDG_RUNTIME_DIR": str(runtime),
            "JCLI_JUPYTER_SERVER_URL": gateway["url"],
            "JCLI_JUPYTER_SERVER_TOKEN": gateway["token"],
        }

        def as_nobody(*args: str) -> subprocess.CompletedProcess:
            proc = subprocess.run([*DROP, python, "-m", "jcli", "-j", *args], cwd=work, env=env, capture_output=True, timeout=120)
            assert b"Traceback" not in proc.stderr, proc.stderr
            return proc

        refused = as_nobody("exec", "planted", "-c", "1")
        assert refused.returncode == 1 and json.loads(refused.stderr)["code"] == "FORBIDDEN", refused.stderr
        assert json.loads(as_nobody("session", "list").stdout)["sessions"] == []

        os.chown(memory.path, 65534, 65534)  # the same file as nobody's own: now it counts (the test can fail)
        os.chmod(memory.path, 0o600)
        rows = json.loads(as_nobody("session", "list").stdout)["sessions"]
        assert [(row["name"], row["kernel_id"], row["remembered"]) for row in rows] == [("planted", live_kernel, True)]
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- where the server lists sessions, its list wins ------------------------------------------


@pytest.mark.parametrize("on_gateway", ["kernel_gateway_listing", "enterprise_gateway_listing"], indirect=True)
def test_where_the_server_lists_sessions_its_list_wins_over_a_remembered_name(on_gateway, tmp_path, isolated_runtime):
    gateway = on_gateway
    memory = _memory(gateway, isolated_runtime)
    status, other = _call(gateway, "POST", "/api/kernels", {"name": "python3"})
    assert status == 201 and isinstance(other, dict)
    ids = [other["id"]]
    try:
        planted = _names_doc("listed", other["id"])
        Path(memory.path).write_bytes(planted)
        os.chmod(memory.path, 0o600)
        created = _ok("session", "create", "-n", "listed", cwd=tmp_path)
        ids.append(created["kernel_id"])
        assert "notes" not in created
        assert Path(memory.path).read_bytes() == planted  # neither read for the name check nor written
        ran = _ok("exec", "listed", "-c", "1", cwd=tmp_path)
        assert ran["kernel_id"] == created["kernel_id"] != other["id"]
        listed = _ok("session", "list", cwd=tmp_path)
        assert "listing" not in listed and not any(row.get("remembered") for row in listed["sessions"])
    finally:
        _kill_all(gateway, ids)


@pytest.mark.parametrize("on_gateway", ["kernel_gateway"], indirect=True)
def test_a_background_run_finds_the_remembered_name_through_the_sidecar(on_gateway, tmp_path, sidecar_on):
    """The sidecar holds a background run and resolves SESSION itself: it reads the same memory."""
    gateway = on_gateway
    created = _ok("session", "create", "-n", "bg", cwd=tmp_path)
    try:
        started = _ok("exec", "bg", "-c", "print(6 * 7)", "--background", cwd=tmp_path)
        assert started["status"] == "running" and started["session"] == "bg"
        job = _ok("job", "wait", started["job_id"], cwd=tmp_path)["jobs"][0]
        assert job["state"] == "ok" and job["result"]["text"] == "42\n" and job["result"]["kernel_id"] == created["kernel_id"]
    finally:
        _kill_all(gateway, [created["kernel_id"]])
