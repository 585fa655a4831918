"""Retention of inline runs: age and count, whole runs only, never what is needed."""

from __future__ import annotations

import os
import time

import pytest
from helpers import run_cli

from jcli_sidecar.base.errors import UsageError
from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
from jcli_sidecar.runs.retention import DAY_NS, Policy, clean, resolve_policy
from jcli_sidecar.runs.store import publish_run, stage_run

NOW = 1_800_000_000 * 1_000_000_000


def make_run(ws, completed_ns, *, images=0, text="x"):
    outputs = [{"output_type": "stream", "name": "stdout", "text": text}]
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    outputs += [{"output_type": "display_data", "metadata": {}, "data": {"image/png": png}} for _ in range(images)]
    staged = stage_run(str(ws), outputs, source={"kind": "inline"}, status="ok", created_ns=completed_ns, completed_ns=completed_ns)
    publish_run(staged.outputs_dir, staged.run_id)
    return staged.run_id


def runs_in(ws):
    return sorted(n for n in os.listdir(ws / ".j-cli" / "outputs") if not n.startswith("."))


def outputs(ws):
    return str(ws / ".j-cli" / "outputs")


def test_the_seven_day_fifty_run_example(tmp_path):
    old = [make_run(tmp_path, NOW - 8 * DAY_NS + i) for i in range(10)]
    fresh = [make_run(tmp_path, NOW - DAY_NS + i) for i in range(55)]
    report = clean(outputs(tmp_path), Policy(7, 50), now_ns=NOW, alive=lambda o: False)
    reasons = {d["run_id"]: d["reason"] for d in report["deleted"]}
    assert {r for r, why in reasons.items() if why == "expired"} == set(old)
    assert {r for r, why in reasons.items() if why == "over_count"} == set(fresh[:5])  # the oldest five
    assert runs_in(tmp_path) == sorted(fresh[5:])
    assert report["status"] == "ok" and report["totals"]["deleted"] == 15 and report["totals"]["bytes_freed"] > 0


def test_one_run_with_sixty_images_is_kept_whole(tmp_path):
    make_run(tmp_path, NOW - 2)
    big = make_run(tmp_path, NOW - 1, images=60)
    clean(outputs(tmp_path), Policy(7, 1), now_ns=NOW, alive=lambda o: False)
    assert runs_in(tmp_path) == [big]
    assert len(os.listdir(tmp_path / ".j-cli" / "outputs" / big)) == 61


def test_runs_that_cannot_be_vouched_for_are_kept_and_reported(tmp_path):
    extra, linked, truncated, plain = (make_run(tmp_path, NOW - 10 * DAY_NS + i) for i in range(4))
    root = tmp_path / ".j-cli" / "outputs"
    (root / extra / "notes.txt").write_text("mine")
    outside = tmp_path / "precious.txt"
    outside.write_text("do not touch")
    (root / linked / "link").symlink_to(outside)
    manifest = root / truncated / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:40])
    report = clean(str(root), Policy(7, 50), now_ns=NOW, alive=lambda o: False)
    kept = {k["run_id"]: k["reason"] for k in report["kept"]}
    assert kept == {extra: "unlisted_files", linked: "symlink", truncated: "unreadable_manifest"}
    assert [d["run_id"] for d in report["deleted"]] == [plain]
    assert (root / extra / "notes.txt").read_text() == "mine"
    assert outside.read_text() == "do not touch" and (root / linked / "link").is_symlink()


def test_a_symlinked_outputs_dir_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    make_run(real, NOW - 10 * DAY_NS)
    link = tmp_path / "link"
    link.symlink_to(real / ".j-cli" / "outputs")
    with pytest.raises(UsageError):
        clean(str(link), Policy(7, 50), now_ns=NOW)
    assert len(runs_in(real)) == 1


def test_the_newest_run_of_a_live_owner_and_the_just_published_run_survive(tmp_path):
    ids = [make_run(tmp_path, NOW - 10 * DAY_NS + i) for i in range(3)]  # owned by this live process
    report = clean(outputs(tmp_path), Policy(7, 50), now_ns=NOW)  # the real liveness check
    assert runs_in(tmp_path) == [ids[2]]
    assert {"run_id": ids[2], "reason": "live_owner"} in report["kept"]
    kept = clean(outputs(tmp_path), Policy(7, 50), now_ns=NOW, keep={ids[2]}, alive=lambda o: False)
    assert runs_in(tmp_path) == [ids[2]] and kept["totals"]["deleted"] == 0


def test_a_live_writers_staging_is_kept_however_old_and_the_age_limit_does_not_apply(tmp_path):
    ensure_outputs_dir(str(tmp_path))
    young = stage_run(str(tmp_path), [], source={}, status="ok", created_ns=NOW)
    old = stage_run(str(tmp_path), [], source={}, status="ok", created_ns=NOW)
    os.utime(old.staging, ns=(NOW - 90 * DAY_NS, NOW - 90 * DAY_NS))
    os.utime(young.staging, ns=(NOW - DAY_NS, NOW - DAY_NS))
    # Their writer (this process) is alive: neither is touched, whatever its age or the policy.
    for alive in (None, lambda owner: False):  # ``alive`` judges published runs' owners, not writers
        report = clean(outputs(tmp_path), Policy(1, 1, 60), now_ns=NOW, **({} if alive is None else {"alive": alive}))
        assert os.path.isdir(old.staging) and os.path.isdir(young.staging)
        assert {(k["run_id"], k["reason"]) for k in report["kept"]} == {(old.run_id, "active_writer"), (young.run_id, "active_writer")}


def test_policy_resolution_and_bad_values():
    assert resolve_policy(env={}).to_wire() == {"max_age_days": 7, "max_runs": 50, "staging_grace_seconds": 86400}
    assert resolve_policy(env={"JCLI_STAGING_GRACE_SECONDS": " 3600 "}).staging_grace_seconds == 3600
    assert resolve_policy(max_age_days=1, env={"JCLI_OUTPUT_MAX_AGE_DAYS": "3"}).max_age_days == 1
    assert resolve_policy(env={"JCLI_OUTPUT_MAX_RUNS": " 4 "}).max_runs == 4
    for env in (
        {"JCLI_OUTPUT_MAX_RUNS": "0"},
        {"JCLI_OUTPUT_MAX_AGE_DAYS": "-1"},
        {"JCLI_OUTPUT_MAX_RUNS": "2.5"},
        {"JCLI_STAGING_GRACE_SECONDS": "0"},
        {"JCLI_STAGING_GRACE_SECONDS": "59"},
        {"JCLI_STAGING_GRACE_SECONDS": "1.5e3"},
        {"JCLI_STAGING_GRACE_SECONDS": "none"},
    ):
        with pytest.raises(UsageError):
            resolve_policy(env=env)
    for bad in (0, -3, 1.5, True, "2"):
        with pytest.raises(UsageError):
            Policy(7, bad)


@pytest.mark.parametrize("args", [["--max-runs", "0"], ["--max-age-days", "-2"], ["--max-runs", "x"]])
def test_the_cli_refuses_bad_limits_and_deletes_nothing(tmp_path, args):
    make_run(tmp_path, time.time_ns() - 30 * DAY_NS)
    result = run_cli("-j", "output", "clean", *args, cwd=tmp_path)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"
    assert len(runs_in(tmp_path)) == 1


def _snapshot(root):
    out = {}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(base, name)
            info = os.lstat(path)
            out[path] = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)
    info = os.lstat(root)
    out[str(root)] = (info.st_mtime_ns, info.st_ctime_ns)
    return out


def test_dry_run_changes_nothing_and_a_real_clean_is_reported(tmp_path):
    now = time.time_ns()
    ids = [make_run(tmp_path, now - 30 * DAY_NS + i) for i in range(3)]
    (tmp_path / ".j-cli" / "outputs" / ".lock").unlink()
    before = _snapshot(tmp_path / ".j-cli")
    dry = run_cli("-j", "output", "clean", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert _snapshot(tmp_path / ".j-cli") == before
    doc = dry.json()
    # The newest run belongs to a live process (this test): it stays, as a returned path must.
    assert doc["dry_run"] and {d["run_id"] for d in doc["deleted"]} == set(ids[:2])
    assert {"run_id": ids[2], "reason": "live_owner"} in doc["kept"]
    real = run_cli("-j", "output", "clean", cwd=tmp_path).json()
    assert {d["run_id"]: d["reason"] for d in real["deleted"]} == dict.fromkeys(ids[:2], "expired")
    assert runs_in(tmp_path) == [ids[2]]
    gone = run_cli("-j", "output", "show", ids[0], cwd=tmp_path)
    assert gone.returncode == 1 and gone.error()["code"] == "RUN_NOT_FOUND" and "cleaned" in gone.error()["message"]


def test_the_clients_limit_wins_over_a_sidecar_started_with_other_limits(tmp_path, sidecar_on, monkeypatch):
    from jcli.transport import publish
    from jcli_sidecar.base.runtime import SidecarPaths

    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("JCLI_OUTPUT_MAX_RUNS", "100")
    start = run_cli("-j", "sidecar", "start", cwd=ws)
    assert start.returncode == 0
    monkeypatch.delenv("JCLI_OUTPUT_MAX_RUNS")
    monkeypatch.chdir(ws)
    served = run_cli("-j", "sidecar", "status", cwd=ws).json()["requests_served"]
    for i in range(6):
        staged = stage_run(
            str(ws.resolve()),
            [{"output_type": "stream", "name": "stdout", "text": str(i)}],
            source={},
            status="ok",
            created_ns=time.time_ns(),
        )
        result = publish(str(ws.resolve()), staged.run_id, Policy(7, 2))
        assert os.path.isfile(result["manifest"])
    assert len(runs_in(ws)) == 2
    assert run_cli("-j", "sidecar", "status", cwd=ws).json()["requests_served"] >= served + 6  # it went through the sidecar
    assert run_cli("-j", "sidecar", "status", cwd=ws).json()["workspace"] == SidecarPaths(str(ws.resolve())).workspace
