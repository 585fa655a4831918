"""Half-written runs never hold the disk for ever.

- A stage that fails (a real ENOSPC, on a small tmpfs mounted as the
  workspace) removes its own staging directory, and says so when it cannot.
- A staging directory records its writer first; cleaning (``output clean``
  and the one after each publish) removes it at once when the writer is
  provably gone (a real ``kill -9`` at a stall point, a dead pid, a reused
  pid), keeps it while the writer lives, and keeps one of unknown state (no
  record, a garbled or forged record, another host) for the grace period
  only.
- Removal never follows a link planted in staging.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import JCLI, run_cli

from jcli_sidecar.base.errors import OutputSaveFailed
from jcli_sidecar.base.nofollow import Dir
from jcli_sidecar.base.process_record import ProcessRecord
from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
from jcli_sidecar.runs.retention import Policy, clean
from jcli_sidecar.runs.store import publish_run, stage_run

GRACE = 3600
MB = 1024 * 1024


def png_output(size: int) -> dict:
    """A display_data output holding a PNG payload of about ``size`` bytes."""
    data = b"\x89PNG\r\n\x1a\n" + os.urandom(size)
    return {"output_type": "display_data", "data": {"image/png": base64.b64encode(data).decode()}, "metadata": {}}


def staging_of(ws: Path) -> Path:
    return ws / ".j-cli" / "outputs" / ".staging"


def staged_names(ws: Path) -> list[str]:
    return sorted(os.listdir(staging_of(ws)))


def plant_stage(ws: Path, name: str, record: bytes | None, payload: bytes = b"x" * 4096) -> Path:
    """A staged run as a writer leaves it mid-way: its record (raw bytes, or none) and one payload, no manifest."""
    ensure_outputs_dir(str(ws))
    stage = staging_of(ws) / name
    stage.mkdir(mode=0o755)
    if record is not None:
        (stage / ".writer.json").write_bytes(record)
    (stage / "output-0000-0.png").write_bytes(payload)
    return stage


def record_bytes(record: dict) -> bytes:
    return json.dumps({"managed_by": "j-cli", "writer": record}).encode()


def age(path: Path, seconds: float) -> None:
    """Date a staged run (and its entries) ``seconds`` back."""
    when = time.time_ns() - int(seconds * 1e9)
    for entry in [*path.iterdir(), path]:
        os.utime(entry, ns=(when, when), follow_symlinks=False)


@pytest.fixture
def dead_writer() -> dict:
    """The record of a process that really ran on this host and has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    record = ProcessRecord.of_pid(proc.pid).to_dict()  # a zombie until reaped: its start time is still there
    proc.wait()
    return record


@pytest.fixture
def live_writer():
    """The record of a process that runs on this host for the whole test."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        yield ProcessRecord.of_pid(proc.pid).to_dict()
    finally:
        proc.stdin.close()
        proc.wait(30)


@pytest.fixture
def tmpfs_ws(tmp_path):
    """A workspace on its own 1 MiB tmpfs: writes past that fail with a real ENOSPC."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mount)], capture_output=True)
    assert done.returncode == 0, f"cannot mount a tmpfs (the tests run as root): {done.stderr!r}"
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def cleaned(ws: Path, **kwargs) -> dict:
    report = clean(str(ws / ".j-cli" / "outputs"), Policy(7, 50, GRACE), **kwargs)
    return {
        "kept": {k["run_id"]: k["reason"] for k in report["kept"] if k.get("staging")},
        "deleted": {d["run_id"]: d["reason"] for d in report["deleted"] if d.get("staging")},
        "report": report,
    }


# -- a failed stage cleans up after itself --------------------------------------------


def test_a_stage_that_hits_a_full_disk_removes_its_own_staging_dir(tmpfs_ws):
    with pytest.raises(OutputSaveFailed) as caught:
        stage_run(str(tmpfs_ws), [png_output(64 * 1024), png_output(2 * MB)], source={}, status="ok", created_ns=1)
    assert "No space left on device" in caught.value.message and "staging_left" not in caught.value.details
    assert staged_names(tmpfs_ws) == []
    # The disk is not left full: the next rich run is stored whole.
    staged = stage_run(str(tmpfs_ws), [png_output(300 * 1024)], source={}, status="ok", created_ns=2)
    assert os.path.isfile(publish_run(staged.outputs_dir, staged.run_id)["manifest"])
    assert staged_names(tmpfs_ws) == []


@pytest.mark.parametrize("free_kib", [0, 4, 8, 12, 16])
def test_a_full_disk_at_any_step_of_a_stage_leaves_no_staging(tmpfs_ws, free_kib):
    # Nearly everything is taken first, so the record, a payload or the manifest is what fails.
    ensure_outputs_dir(str(tmpfs_ws))
    filler = tmpfs_ws / "filler"
    with pytest.raises(OSError), open(filler, "wb") as fh:
        while True:
            fh.write(b"\0" * 4096)
            fh.flush()
    os.truncate(filler, max(0, os.path.getsize(filler) - free_kib * 1024))
    outputs = [{"output_type": "stream", "name": "stdout", "text": "y" * 6000}, png_output(3000)]
    with pytest.raises(OutputSaveFailed):
        stage_run(str(tmpfs_ws), outputs, source={"code": "z" * 40000}, status="ok", created_ns=1)
    assert staged_names(tmpfs_ws) == []


def test_a_stage_that_cannot_remove_its_leftovers_says_where_they_are(tmp_path, monkeypatch):
    # Removal failing after a failed write cannot be caused on demand; the failing write is real (a name taken by a directory).
    def refuse(self, name, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Dir, "remove_tree", refuse)
    with pytest.raises(OutputSaveFailed) as caught:
        stage_run(
            str(tmp_path), [png_output(10)], source={}, status="ok", created_ns=1, stall=lambda step: os.mkdir(_manifest_tmp(tmp_path))
        )
    left = caught.value.details["staging_left"]
    assert os.path.isdir(left) and left in caught.value.message and "output clean" in caught.value.message


def _manifest_tmp(ws: Path) -> str:
    (stage,) = staging_of(ws).iterdir()
    return str(stage / ".manifest.json.tmp")


# -- a writer recorded first, judged by cleaning ---------------------------------------


def test_the_writer_record_is_written_before_any_payload_and_dropped_once_the_manifest_is_in(tmp_path):
    seen = {}

    def at_first_payload(step):
        (stage,) = staging_of(tmp_path).iterdir()
        seen["names"] = sorted(os.listdir(stage))
        seen["record"] = json.loads((stage / ".writer.json").read_bytes())["writer"]

    staged = stage_run(str(tmp_path), [png_output(10), png_output(10)], source={}, status="ok", created_ns=1, stall=at_first_payload)
    assert seen["names"] == [".writer.json", "output-0000-0.png"]
    assert seen["record"] == ProcessRecord.current().to_dict()
    assert ".writer.json" not in os.listdir(staged.staging)  # the manifest's owner speaks now
    assert (os.stat(staged.staging).st_mode & 0o777, os.stat(os.path.join(staged.staging, "manifest.json")).st_mode & 0o777) == (
        0o755,
        0o644,
    )


def test_a_dead_writers_stage_is_removed_at_once_and_reported(tmp_path, dead_writer):
    stage = plant_stage(tmp_path, "20260101T000000.000000000Z-dead", record_bytes(dead_writer))
    result = cleaned(tmp_path)
    assert result["deleted"] == {stage.name: "writer_gone"} and not stage.exists()
    (entry,) = [d for d in result["report"]["deleted"] if d.get("staging")]
    assert entry["bytes"] >= 4096 and str(dead_writer["pid"]) in entry["writer"]


def test_a_reused_pid_does_not_keep_a_stage_alive(tmp_path):
    reused = {**ProcessRecord.current().to_dict(), "create_time": ProcessRecord.current().create_time - 1000}
    stage = plant_stage(tmp_path, "reused", record_bytes(reused))
    assert cleaned(tmp_path)["deleted"] == {"reused": "writer_gone"} and not stage.exists()


def test_a_live_writers_stage_is_kept_however_old(tmp_path, live_writer):
    stage = plant_stage(tmp_path, "live", record_bytes(live_writer))
    age(stage, 400 * 86400)
    result = cleaned(tmp_path)
    assert result["kept"] == {"live": "active_writer"} and result["deleted"] == {} and stage.is_dir()
    result = run_cli("-j", "output", "clean", cwd=tmp_path)
    assert {k["run_id"]: k["reason"] for k in result.json()["kept"]} == {"live": "active_writer"}


@pytest.mark.parametrize(
    "record",
    [
        None,  # the leftover: a truncated payload and nothing else
        b"",
        b"\xff\xfe not json",
        b"[1, 2]",
        b'{"managed_by": "someone-else", "writer": {"pid": 1, "create_time": 1.0}}',
        json.dumps({"managed_by": "j-cli", "writer": {"pid": "1", "create_time": 1.0}}).encode(),
        json.dumps({"managed_by": "j-cli", "writer": {"pid": -5, "create_time": 1.0}}).encode(),
        json.dumps({"managed_by": "j-cli"}).encode(),
        b"[" * 100000,
    ],
    ids=["none", "empty", "not-utf8", "a-list", "not-ours", "pid-string", "pid-negative", "no-writer", "deep-and-big"],
)
def test_a_stage_of_unknown_state_is_kept_for_the_grace_period_then_removed(tmp_path, record):
    stage = plant_stage(tmp_path, "unknown", record)
    age(stage, GRACE - 120)
    assert cleaned(tmp_path)["kept"] == {"unknown": "unknown_writer"} and stage.is_dir()
    age(stage, GRACE + 120)
    assert cleaned(tmp_path)["deleted"] == {"unknown": "grace_expired"} and not stage.exists()


def test_a_writer_on_another_host_is_unknown_not_dead(tmp_path, dead_writer):
    stage = plant_stage(tmp_path, "elsewhere", record_bytes({**dead_writer, "host": "another-host.invalid"}))
    assert cleaned(tmp_path)["kept"] == {"elsewhere": "unknown_writer"}
    age(stage, GRACE + 120)
    assert cleaned(tmp_path)["deleted"] == {"elsewhere": "grace_expired"}


def test_a_recent_write_restarts_the_grace_period(tmp_path):
    stage = plant_stage(tmp_path, "busy", None)
    age(stage, GRACE + 120)
    (stage / "output-0001-0.png").write_bytes(b"more")  # a writer we cannot check is still writing
    assert cleaned(tmp_path)["kept"] == {"busy": "unknown_writer"}


def test_a_legacy_stage_with_a_dead_owner_in_its_manifest_is_removed(tmp_path, dead_writer):
    stage = plant_stage(tmp_path, "legacy", None)
    (stage / "manifest.json").write_text(json.dumps({"managed_by": "j-cli", "owner": dead_writer, "files": []}))
    assert cleaned(tmp_path)["deleted"] == {"legacy": "writer_gone"}
    assert not stage.exists() and list(staging_of(tmp_path).iterdir()) == []


def test_the_grace_period_comes_from_the_environment(tmp_path):
    stage = plant_stage(tmp_path, "stale", None)
    age(stage, 7200)
    env = {**os.environ}
    kept = run_cli("-j", "output", "clean", cwd=tmp_path, env=env).json()  # default: one day
    assert [(k["run_id"], k["reason"]) for k in kept["kept"]] == [("stale", "unknown_writer")]
    assert kept["policy"]["staging_grace_seconds"] == 86400
    dry = run_cli("-j", "output", "clean", "--dry-run", cwd=tmp_path, env={**env, "JCLI_STAGING_GRACE_SECONDS": "3600"}).json()
    assert [(d["run_id"], d["reason"]) for d in dry["deleted"]] == [("stale", "grace_expired")] and stage.is_dir()
    assert dry["totals"]["bytes_freed"] == 4096
    done = run_cli("-j", "output", "clean", cwd=tmp_path, env={**env, "JCLI_STAGING_GRACE_SECONDS": "3600"}).json()
    assert [(d["run_id"], d["reason"]) for d in done["deleted"]] == [("stale", "grace_expired")] and not stage.exists()
    bad = run_cli("-j", "output", "clean", cwd=tmp_path, env={**env, "JCLI_STAGING_GRACE_SECONDS": "10"})
    assert bad.returncode == 2 and bad.error()["code"] == "USAGE_ERROR" and "JCLI_STAGING_GRACE_SECONDS" in bad.error()["message"]


def test_each_publish_clears_dead_writers_stages(tmp_path, dead_writer, live_writer):
    dead = plant_stage(tmp_path, "dead", record_bytes(dead_writer))
    live = plant_stage(tmp_path, "live", record_bytes(live_writer))
    staged = stage_run(str(tmp_path), [png_output(10)], source={}, status="ok", created_ns=time.time_ns())
    result = publish_run(staged.outputs_dir, staged.run_id, Policy())
    assert result["cleaned"] == 1 and not dead.exists() and live.is_dir()


# -- links planted in staging -----------------------------------------------------------


@pytest.fixture
def victim(tmp_path) -> Path:
    other = tmp_path / "victim"
    (other / "deep").mkdir(parents=True)
    (other / "precious.txt").write_text("keep me")
    (other / "deep" / "more.txt").write_text("me too")
    return other


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.is_dir(), p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def test_links_planted_in_a_dead_writers_stage_are_unlinked_never_followed(tmp_path, dead_writer, victim):
    ws = tmp_path / "ws"
    ws.mkdir()
    stage = plant_stage(ws, "dead", record_bytes(dead_writer))
    (stage / "to-dir").symlink_to(victim)
    (stage / "to-file").symlink_to(victim / "precious.txt")
    (stage / "sub").mkdir()
    (stage / "sub" / "to-deep").symlink_to(victim / "deep")
    os.mkfifo(stage / "fifo")
    before = snapshot(victim)
    assert cleaned(ws)["deleted"] == {"dead": "writer_gone"}
    assert not stage.exists() and snapshot(victim) == before


def test_a_symlinked_writer_record_is_not_believed(tmp_path, live_writer, victim):
    ws = tmp_path / "ws"
    ws.mkdir()
    (victim / "record.json").write_bytes(record_bytes(live_writer))  # a live writer, but not this stage's
    stage = plant_stage(ws, "linked", None)
    (stage / ".writer.json").symlink_to(victim / "record.json")
    age(stage, GRACE + 120)
    assert cleaned(ws)["deleted"] == {"linked": "grace_expired"}
    assert (victim / "record.json").read_bytes() == record_bytes(live_writer)


def test_a_symlink_in_place_of_a_stage_is_kept_and_its_target_untouched(tmp_path, victim):
    ws = tmp_path / "ws"
    ws.mkdir()
    ensure_outputs_dir(str(ws))
    (staging_of(ws) / "planted").symlink_to(victim)
    before = snapshot(victim)
    assert cleaned(ws, now_ns=time.time_ns() + 400 * 86400 * 10**9)["kept"] == {"planted": "symlink"}
    assert snapshot(victim) == before


# -- the real thing: exec -c on a full disk, and a writer killed mid-stage ------------


RICH = "from IPython.display import Image, display\nfor i in range(3):\n    display(Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + bytes(300_000) + bytes([i]), format='png'))\n"
HUGE = "import os\nfrom IPython.display import Image, display\ndisplay(Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom(2_000_000), format='png'))\n"


def test_exec_on_a_full_disk_says_executed_and_leaves_no_staging(tmpfs_ws, use_jupyter, kernel_session):
    failed = run_cli("-j", "exec", kernel_session, "-c", HUGE, cwd=tmpfs_ws)
    error = failed.error()
    assert failed.returncode == 1 and error["code"] == "OUTPUT_SAVE_FAILED" and error["executed"] is True
    assert staged_names(tmpfs_ws) == []
    later = run_cli("-j", "exec", kernel_session, "-c", RICH.replace("300_000", "30_000"), cwd=tmpfs_ws)
    assert later.returncode == 0, later.stderr
    assert os.path.isfile(later.json()["run"]["manifest"]) and staged_names(tmpfs_ws) == []


def _unblock_when_done(writer: subprocess.Popen, fifo: Path) -> None:
    """If the writer ends without stalling, open the FIFO's other end, so the test's read ends (and fails) instead of hanging."""
    writer.wait()
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader left: nothing to unblock
        pass


def test_a_writer_killed_mid_stage_is_kept_while_alive_and_removed_once_gone(tmp_path, use_jupyter, kernel_session):
    ws = tmp_path / "ws"
    ws.mkdir()
    fifo = tmp_path / "stall.fifo"
    os.mkfifo(fifo)
    env = {**os.environ, "JCLI_EXEC_TEST_STALL_FIFO": str(fifo), "JCLI_EXEC_TEST_STALL_AT": "inline:staging"}
    writer = subprocess.Popen(
        [JCLI, "-j", "exec", kernel_session, "-c", RICH], cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    threading.Thread(target=_unblock_when_done, args=(writer, fifo), daemon=True).start()
    try:
        with open(fifo, encoding="utf-8") as fh:
            assert fh.readline() == "stalled inline:staging\n"
        (stage,) = staging_of(ws).iterdir()
        assert sorted(os.listdir(stage)) == [".writer.json", "output-0000-0.png"]
        alive = run_cli("-j", "output", "clean", cwd=ws).json()
        assert [(k["run_id"], k["reason"]) for k in alive["kept"]] == [(stage.name, "active_writer")]
        os.kill(writer.pid, signal.SIGKILL)
        writer.communicate(timeout=60)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate(timeout=60)
    gone = run_cli("-j", "output", "clean", cwd=ws).json()
    assert [(d["run_id"], d["reason"]) for d in gone["deleted"]] == [(stage.name, "writer_gone")]
    assert gone["totals"]["bytes_freed"] > 300_000 and staged_names(ws) == []
