"""No link is followed where j-cli writes, locks or deletes inside a workspace's ``.j-cli``.

Each way in is a symlink planted at one step of the path (``.j-cli``,
``outputs``, ``.staging``, ``.lock``, a run dir, a manifest, a staged run),
pointing into another workspace that must come out untouched.
"""

from __future__ import annotations

import os

import pytest
from helpers import run_cli

from jcli_sidecar.base.errors import OutputSaveFailed, UsageError
from jcli_sidecar.runs.retention import DAY_NS, Policy, clean, clean_workspace
from jcli_sidecar.runs.store import publish_run, stage_run

NOW = 1_800_000_000 * 1_000_000_000


def make_run(ws, completed_ns):
    outputs = [{"output_type": "stream", "name": "stdout", "text": "x"}]
    staged = stage_run(str(ws), outputs, source={"kind": "inline"}, status="ok", created_ns=completed_ns, completed_ns=completed_ns)
    publish_run(staged.outputs_dir, staged.run_id)
    return staged.run_id


def snapshot(root):
    """Every path under ``root`` with its kind and bytes: what must not change."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                seen[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                seen[rel] = ("dir", None)
            else:
                with open(path, "rb") as fh:
                    seen[rel] = ("file", fh.read())
    return seen


@pytest.fixture
def victim(tmp_path):
    """Another workspace with three old runs, which no command here may touch."""
    other = tmp_path / "other"
    other.mkdir()
    for i in range(3):
        make_run(other, NOW - 30 * DAY_NS + i)
    return other


@pytest.fixture
def ws(tmp_path):
    here = tmp_path / "ws"
    here.mkdir()
    return here


def test_output_clean_refuses_a_symlinked_j_cli_dir(ws, victim):
    (ws / ".j-cli").symlink_to(victim / ".j-cli")
    before = snapshot(victim)
    result = run_cli("-j", "output", "clean", "--max-runs", "1", cwd=ws)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR", result.stderr
    assert "symlink" in result.error()["message"]
    assert snapshot(victim) == before


def test_output_clean_refuses_a_symlinked_outputs_dir(ws, victim):
    (ws / ".j-cli").mkdir()
    (ws / ".j-cli" / "outputs").symlink_to(victim / ".j-cli" / "outputs")
    before = snapshot(victim)
    for args in (["--max-runs", "1"], ["--max-runs", "1", "--dry-run"]):
        result = run_cli("-j", "output", "clean", *args, cwd=ws)
        assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR", result.stderr
    assert snapshot(victim) == before


def test_a_symlinked_lock_file_is_never_created_through_or_locked(ws, victim):
    make_run(ws, NOW - 30 * DAY_NS)
    lock = ws / ".j-cli" / "outputs" / ".lock"
    lock.unlink()
    planted = victim / "planted.lock"
    lock.symlink_to(planted)  # a dangling link: O_CREAT through it would create planted.lock
    with pytest.raises(UsageError):
        clean_workspace(str(ws), Policy(1, 1))
    with pytest.raises(OutputSaveFailed):
        make_run(ws, NOW)
    assert not planted.exists() and lock.is_symlink()


def test_a_symlinked_staging_dir_is_refused_when_writing_a_run(ws, victim):
    make_run(ws, NOW - DAY_NS)
    staging = ws / ".j-cli" / "outputs" / ".staging"
    staging.rmdir()
    staging.symlink_to(victim / ".j-cli" / "outputs")
    before = snapshot(victim)
    with pytest.raises(OutputSaveFailed):
        make_run(ws, NOW)
    assert snapshot(victim) == before
    report = clean(str(ws / ".j-cli" / "outputs"), Policy(1, 1), now_ns=NOW)
    assert report["status"] == "ok" and snapshot(victim) == before


def test_symlinked_runs_manifests_and_staged_runs_are_kept_not_followed(ws, victim):
    keep = make_run(ws, NOW - 30 * DAY_NS)
    root = ws / ".j-cli" / "outputs"
    victim_runs = sorted(n for n in os.listdir(victim / ".j-cli" / "outputs") if not n.startswith("."))
    (root / "linked-run").symlink_to(victim / ".j-cli" / "outputs" / victim_runs[0])
    manifest = root / keep / "manifest.json"
    manifest.rename(victim / "moved-manifest.json")
    manifest.symlink_to(victim / "moved-manifest.json")
    (root / ".staging" / "linked-stage").symlink_to(victim / ".j-cli" / "outputs" / victim_runs[1])
    before = snapshot(victim)
    report = clean(str(root), Policy(1, 1), now_ns=NOW, alive=lambda owner: False)
    kept = {k["run_id"]: k["reason"] for k in report["kept"]}
    assert kept == {"linked-run": "symlink", keep: "symlink", "linked-stage": "symlink"}
    assert report["deleted"] == [] and snapshot(victim) == before


def test_publishing_refuses_a_symlinked_run_dir_in_place_of_the_run(ws, victim):
    outputs = [{"output_type": "stream", "name": "stdout", "text": "x"}]
    staged = stage_run(str(ws), outputs, source={"kind": "inline"}, status="ok", created_ns=NOW, completed_ns=NOW)
    victim_runs = sorted(n for n in os.listdir(victim / ".j-cli" / "outputs") if not n.startswith("."))
    (ws / ".j-cli" / "outputs" / staged.run_id).symlink_to(victim / ".j-cli" / "outputs" / victim_runs[0])
    before = snapshot(victim)
    with pytest.raises(OutputSaveFailed):
        publish_run(staged.outputs_dir, staged.run_id)
    assert snapshot(victim) == before


def test_a_j_cli_that_is_a_file_is_refused_and_kept(ws):
    (ws / ".j-cli").write_text("mine")
    with pytest.raises(OutputSaveFailed):
        make_run(ws, NOW)
    result = run_cli("-j", "output", "clean", cwd=ws)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"
    assert (ws / ".j-cli").read_text() == "mine"


def shadowing_packages(ws):
    """Packages named like ours in the workspace: importing one would be loud."""
    for name in ("jcli_sidecar", "jcli", "jupyter_server"):
        package = ws / name
        package.mkdir()
        (package / "__init__.py").write_text("raise SystemExit('a workspace package was imported')\n")


def test_a_workspace_package_never_shadows_the_sidecar(ws, sidecar_on, fixture_dir):
    shadowing_packages(ws)
    started = run_cli("-j", "sidecar", "start", cwd=ws)  # returns once the sidecar answers
    try:
        assert started.returncode == 0, started.stderr
        notebook = fixture_dir / "kernel_v4.5.ipynb"
        result = run_cli("-j", "notebook", "output", str(notebook), "--cell", "1", "--output", "0", cwd=ws)
        assert result.returncode == 0, result.stderr
        assert run_cli("-j", "sidecar", "status", cwd=ws).json()["running"] is True
    finally:
        run_cli("sidecar", "stop", cwd=ws)


def test_a_workspace_package_never_shadows_the_embedded_server(ws, starts_jupyter):
    shadowing_packages(ws)
    started = run_cli("-j", "server", "start", cwd=ws)
    try:
        assert started.returncode == 0, started.stderr
    finally:
        run_cli("server", "stop", cwd=ws)


def test_a_fifo_manifest_never_hangs_clean_and_a_stale_stage_holding_one_is_removed(ws):
    planted = make_run(ws, NOW - 30 * DAY_NS)
    root = ws / ".j-cli" / "outputs"
    (root / planted / "manifest.json").unlink()
    os.mkfifo(root / planted / "manifest.json")  # no writer will ever come
    staged = root / ".staging" / "stuck"
    staged.mkdir()
    os.mkfifo(staged / "manifest.json")
    report = clean(str(root), Policy(1, 1), alive=lambda owner: False)  # now: the stage is young
    kept = {k["run_id"]: k["reason"] for k in report["kept"]}
    assert kept == {planted: "unreadable_manifest", "stuck": "unknown_writer"} and report["deleted"] == []
    assert (root / planted / "manifest.json").exists() and (staged / "manifest.json").exists()
    result = run_cli("-j", "output", "clean", "--max-runs", "1", cwd=ws)
    assert result.returncode == 0, result.stderr
    # Past the grace period the stage (writer unknown) goes, its FIFO unlinked, never opened.
    report = clean(str(root), Policy(1, 1), now_ns=NOW, alive=lambda owner: False)
    assert [(d["run_id"], d["reason"]) for d in report["deleted"]] == [("stuck", "grace_expired")]
    assert not staged.exists() and (root / planted / "manifest.json").exists()


def _plant(path, kind, elsewhere):
    """Put a ``kind`` of file where a directory of ours belongs."""
    import socket

    if kind == "a regular file":
        path.write_text("mine")
    elif kind == "a symlink":
        path.symlink_to(elsewhere)
    elif kind == "a dangling symlink":
        path.symlink_to(elsewhere / "nowhere")
    elif kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "a socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()


@pytest.mark.parametrize("where", [".j-cli", "outputs"])
@pytest.mark.parametrize("kind", ["a regular file", "a symlink", "a dangling symlink", "a FIFO", "a socket"])
def test_clean_and_store_name_what_is_there_instead_of_a_directory(ws, victim, where, kind):
    if where == "outputs":
        (ws / ".j-cli").mkdir()
    path = ws / ".j-cli" if where == ".j-cli" else ws / ".j-cli" / "outputs"
    _plant(path, kind, victim)
    said = "a symlink" if "symlink" in kind else kind
    result = run_cli("-j", "output", "clean", cwd=ws)  # never blocks on the FIFO
    error = result.error()
    assert result.returncode == 2 and error["code"] == "USAGE_ERROR" and error["path"] == str(path), result.stderr
    assert f"{path} is {said}" in error["message"] and "(a symlink?)" not in error["message"] and error["kind"] == said
    with pytest.raises(OutputSaveFailed) as caught:
        make_run(ws, NOW)
    assert f"{path} is {said}" in caught.value.message
    assert os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path))  # left as it was
