"""A ``.j-cli`` that another user owns or can write is never used: no forged run is served as j-cli's own.

The rule (as OpenSSH's for ``~/.ssh``): ``.j-cli``, ``outputs``,
``.staging``, a run directory, its manifest and payloads must be owned by
the current user or root (for root: root) and not writable by group or
others. Every path that uses them answers ``WORKSPACE_UNSAFE`` otherwise:
storing a run, ``output list|show``, MCP ``read_run_output``, ``output
clean``. The forger here is real: ``nobody`` plants the run itself in a
shared directory; the reader is root, and, for the rule as a non-root user
sees it, ``nobody`` (via setpriv).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers import run_cli
from test_readonly import DROP, nobody_python  # noqa: F401 - a fixture used below

from jcli_sidecar.base.errors import WorkspaceUnsafe
from jcli_sidecar.runs.retention import DAY_NS, Policy, clean
from jcli_sidecar.runs.store import publish_run, stage_run

NOBODY = 65534
FORGED_ID = "20991231T235959.000000000Z-f0f0f0f0"

# Run by nobody in a shared workspace: a complete, well-formed run, with a payload that lies.
PLANT = r"""
import json, os, sys
root = os.path.join(sys.argv[1], ".j-cli", "outputs", sys.argv[2])
os.makedirs(root)
with open(os.path.join(root, "output-0000-0.html"), "w") as fh:
    fh.write("<b>forged by nobody</b>")
manifest = {
    "managed_by": "j-cli", "schema_version": 1, "run_id": sys.argv[2], "created_ns": 1, "completed_ns": 1, "status": "ok",
    "owner": {"pid": 1, "create_time": 0.0, "uid": 65534, "host": "x"}, "cwd": sys.argv[1], "source": {"kind": "inline"},
    "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"text/html": {"file": "output-0000-0.html", "bytes": 24, "encoding": "utf-8"}}}],
    "files": ["output-0000-0.html"],
}
with open(os.path.join(root, "manifest.json"), "w") as fh:
    json.dump(manifest, fh)
"""


def make_run(ws: Path, completed_ns: int = 1) -> str:
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {"text/html": "<b>mine</b>" * 300}}]
    staged = stage_run(str(ws), outputs, source={"kind": "inline"}, status="ok", created_ns=completed_ns, completed_ns=completed_ns)
    publish_run(staged.outputs_dir, staged.run_id)
    return staged.run_id


def refused(result, path: Path) -> dict:
    """The CLI answered WORKSPACE_UNSAFE about ``path``; returns the error."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    error = result.error()
    assert error["code"] == "WORKSPACE_UNSAFE" and error["path"] == str(path), error
    assert str(path) in error["message"] and error["fix"] in error["message"] and b"Traceback" not in result.stderr
    return error


@pytest.fixture
def shared_ws():
    """A workspace every user may write (like a shared /tmp folder), outside pytest's private dirs."""
    base = Path(tempfile.mkdtemp(prefix="jcli-trust-", dir="/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir()
    ws.chmod(0o1777)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def planted(shared_ws):
    """``nobody`` made ``.j-cli`` and planted a forged run in it (as itself, for real)."""
    done = subprocess.run([*DROP, "/usr/bin/python3", "-c", PLANT, str(shared_ws), FORGED_ID], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (shared_ws / ".j-cli").stat().st_uid == NOBODY
    return shared_ws


def test_a_run_planted_by_another_user_is_refused_on_every_read(planted):
    jcli = planted / ".j-cli"
    manifest = jcli / "outputs" / FORGED_ID / "manifest.json"
    error = refused(run_cli("-j", "output", "show", FORGED_ID, "--output", "0", cwd=planted), jcli)
    assert error["owner"] == "nobody" and error["owner_uid"] == NOBODY and "root" in error["message"]
    refused(run_cli("-j", "output", "show", str(manifest), cwd=planted), jcli)
    refused(run_cli("-j", "output", "show", str(manifest.parent), cwd="/"), jcli)
    refused(run_cli("-j", "output", "list", cwd=planted), jcli)
    from jcli.mcp_tools import call_tool

    for ref in (FORGED_ID, str(manifest)):
        with pytest.raises(WorkspaceUnsafe):
            call_tool("read_run_output", {"run": ref, "output_index": 0}, [str(planted)])


def test_a_planted_j_cli_is_neither_cleaned_nor_written(planted):
    before = sorted(str(p) for p in planted.rglob("*"))
    refused(run_cli("-j", "output", "clean", "--max-runs", "1", "--max-age-days", "1", cwd=planted), planted / ".j-cli")
    with pytest.raises(WorkspaceUnsafe):
        stage_run(str(planted), [{"output_type": "stream", "name": "stdout", "text": "x"}], source={}, status="ok", created_ns=1)
    with pytest.raises(WorkspaceUnsafe):
        publish_run(str(planted / ".j-cli" / "outputs"), FORGED_ID)
    assert sorted(str(p) for p in planted.rglob("*")) == before


NOGROUP = 65534  # a group others (nobody, ...) belong to


@pytest.mark.parametrize(
    ("where", "mode"),
    [(".j-cli", 0o775), (".j-cli", 0o1777), ("outputs", 0o775), ("outputs", 0o757), ("outputs", 0o1777), (".staging", 0o770)],
)
def test_a_directory_group_or_others_can_write_is_refused(tmp_path, where, mode):
    run_id = make_run(tmp_path)
    path = {".j-cli": tmp_path / ".j-cli", "outputs": tmp_path / ".j-cli" / "outputs"}.get(where)
    path = path or tmp_path / ".j-cli" / "outputs" / ".staging"
    os.chown(path, -1, NOGROUP)
    path.chmod(mode)
    error = refused(run_cli("-j", "output", "clean", "--max-runs", "1", cwd=tmp_path), path)
    assert error["mode"] == f"{mode:04o}" and error["fix"] == f"chmod go-w {path} (and what is in it)"
    with pytest.raises(WorkspaceUnsafe):
        stage_run(str(tmp_path), [{"output_type": "stream", "name": "stdout", "text": "x"}], source={}, status="ok", created_ns=2)
    if where != ".staging":  # reading runs never looks at .staging
        refused(run_cli("-j", "output", "show", run_id, cwd=tmp_path), path)
        refused(run_cli("-j", "output", "list", cwd=tmp_path), path)
    path.chmod(0o755)
    assert run_cli("-j", "output", "show", run_id, cwd=tmp_path).returncode == 0


def test_group_write_for_the_owners_private_group_is_accepted(tmp_path):
    # root's group has root as its one member: the user-private-group scheme, where umask 002 is the default.
    run_id = make_run(tmp_path)
    jcli = tmp_path / ".j-cli"
    for path in [jcli, *jcli.rglob("*")]:
        os.chown(path, 0, 0)
        path.chmod(0o775 if path.is_dir() else 0o664)
    assert run_cli("-j", "output", "show", run_id, "--output", "0", cwd=tmp_path).returncode == 0
    assert run_cli("-j", "output", "clean", cwd=tmp_path).returncode == 0
    os.chown(jcli / "outputs" / run_id, 0, NOGROUP)  # the same mode for a group others are in
    refused(run_cli("-j", "output", "show", run_id, cwd=tmp_path), jcli / "outputs" / run_id)


@pytest.mark.parametrize(
    "change",
    ["run-dir-owner", "run-dir-mode", "manifest-owner", "manifest-mode", "payload-owner", "payload-mode"],
)
def test_a_run_another_user_could_have_written_is_refused_listed_as_such_and_kept(tmp_path, change):
    run_id = make_run(tmp_path, 1)
    mine = make_run(tmp_path, 2)
    run_dir = tmp_path / ".j-cli" / "outputs" / run_id
    target = {"run-dir": run_dir, "manifest": run_dir / "manifest.json", "payload": next(run_dir.glob("output-*"))}[
        change.rsplit("-", 1)[0]
    ]
    if change.endswith("owner"):
        os.chown(target, NOBODY, -1)
    else:
        os.chown(target, -1, NOGROUP)
        target.chmod(0o664 if target.is_file() else 0o775)
    result = run_cli("-j", "output", "show", run_id, "--output", "0", cwd=tmp_path)
    refused(result, target)
    assert run_cli("-j", "output", "show", mine, "--output", "0", cwd=tmp_path).returncode == 0
    listed = {r["run_id"]: r for r in run_cli("-j", "output", "list", cwd=tmp_path).json()["runs"]}
    if change.startswith("payload"):  # listing reads manifests, not payloads
        assert "error" not in listed[run_id]
    else:
        assert listed[run_id]["error"]["code"] == "WORKSPACE_UNSAFE" and "error" not in listed[mine]
        report = clean(str(tmp_path / ".j-cli" / "outputs"), Policy(1, 1), now_ns=400 * DAY_NS, alive=lambda owner: False)
        assert {"run_id": run_id, "reason": "unsafe"} in report["kept"] and run_dir.is_dir()
        assert [d["run_id"] for d in report["deleted"]] == [mine]  # the run that is ours still goes


def test_own_private_directories_work_and_new_ones_are_never_group_writable(tmp_path):
    old = os.umask(0o002)  # a umask that would make group-writable directories and files
    try:
        run_id = make_run(tmp_path)
    finally:
        os.umask(old)
    jcli = tmp_path / ".j-cli"
    made = [jcli, jcli / "outputs", jcli / "outputs" / ".staging", jcli / "outputs" / run_id, *(jcli / "outputs" / run_id).iterdir()]
    assert [oct(p.stat().st_mode & 0o022) for p in made] == ["0o0"] * len(made)
    jcli.chmod(0o700)
    (jcli / "outputs").chmod(0o700)
    shown = run_cli("-j", "output", "show", run_id, "--output", "0", cwd=tmp_path)
    assert shown.returncode == 0 and "mine" in shown.json()["selected"]["data"]
    assert run_cli("-j", "output", "clean", cwd=tmp_path).returncode == 0


def test_another_users_staging_dir_refuses_the_store_and_is_not_written(tmp_path):
    make_run(tmp_path)
    staging = tmp_path / ".j-cli" / "outputs" / ".staging"
    os.chown(staging, NOBODY, -1)
    with pytest.raises(WorkspaceUnsafe) as caught:
        stage_run(str(tmp_path), [{"output_type": "stream", "name": "stdout", "text": "x"}], source={}, status="ok", created_ns=2)
    assert caught.value.details["path"] == str(staging) and os.listdir(staging) == []


def test_exec_into_a_planted_j_cli_says_the_code_ran_and_stores_nothing(planted, use_jupyter, kernel_session):
    before = sorted(str(p) for p in planted.rglob("*"))
    result = run_cli("-j", "exec", kernel_session, "-c", "from IPython.display import HTML; HTML('<i>x</i>')", cwd=planted)
    error = refused(result, planted / ".j-cli")
    assert error["executed"] is True and error["result"]["status"] == "ok"
    assert sorted(str(p) for p in planted.rglob("*")) == before


# -- as a user other than root ---------------------------------------------------------


def _as_nobody(nobody_python, cwd: Path, *args: str):  # noqa: F811 - the fixture's value
    python, libs = nobody_python
    env = {"PYTHONPATH": libs, "PATH": os.environ["PATH"], "HOME": "/nonexistent", "JCLI_SIDECAR": "off", "XDG_RUNTIME_DIR": "/nonexistent"}
    proc = subprocess.run([*DROP, python, "-m", "jcli", *args], cwd=cwd, env=env, capture_output=True, timeout=120)
    return proc


def test_for_another_user_roots_directories_are_trusted_and_a_third_users_are_not(nobody_python, shared_ws):  # noqa: F811
    run_id = make_run(shared_ws)  # root's .j-cli, 0755: root can already do anything to nobody
    for path in [shared_ws / ".j-cli", *(shared_ws / ".j-cli").rglob("*")]:
        path.chmod(path.stat().st_mode | 0o444 | (0o111 if path.is_dir() else 0))
    shown = _as_nobody(nobody_python, shared_ws, "-j", "output", "show", run_id, "--output", "0")
    assert shown.returncode == 0, shown.stderr
    run_dir = shared_ws / ".j-cli" / "outputs" / run_id
    os.chown(run_dir, 1, -1)  # daemon: neither nobody nor root
    refusal = _as_nobody(nobody_python, shared_ws, "-j", "output", "show", run_id, "--output", "0")
    error = json.loads(refusal.stderr)
    assert refusal.returncode == 1 and error["code"] == "WORKSPACE_UNSAFE" and error["path"] == str(run_dir)
    assert "or root" in error["message"] and error["owner_uid"] == 1


def test_a_link_to_another_users_j_cli_is_judged_by_what_it_leads_to(planted, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".j-cli").symlink_to(planted / ".j-cli")  # reads follow links: the target's owner decides
    refused(run_cli("-j", "output", "show", FORGED_ID, cwd=ws), planted / ".j-cli")
    refused(run_cli("-j", "output", "list", cwd=ws), ws / ".j-cli")
    linked_run = ws / "run-link"
    linked_run.symlink_to(planted / ".j-cli" / "outputs" / FORGED_ID)
    refused(run_cli("-j", "output", "show", str(linked_run / "manifest.json"), cwd=ws), planted / ".j-cli")
