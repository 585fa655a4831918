"""Inline runs stored in <cwd>/.j-cli/outputs, with a real kernel and real files."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import run_cli
from PIL import Image

from jcli_sidecar.base.errors import OutputDataInvalid, OutputSaveFailed, RunNotFound
from jcli_sidecar.base.locks import wait_for_lock
from jcli_sidecar.base.workspace_dir import CACHEDIR_FILES
from jcli_sidecar.runs.runs import read_run
from jcli_sidecar.runs.store import publish_run

RICH = (
    "import io, json\n"
    "import matplotlib.pyplot as plt\n"
    "from IPython.display import HTML, JSON, Markdown, Image, display\n"
    "print('start')\n"
    "plt.plot([1, 3, 2]); plt.show()\n"
    "buf = io.BytesIO(); plt.figure(figsize=(2, 1)); plt.plot([1, 2]); plt.savefig(buf, format='jpg'); plt.close('all')\n"
    "display(Image(data=buf.getvalue(), format='jpeg'))\n"
    "display(HTML('<table><tr><td>1</td></tr></table>'))\n"
    "display(Markdown('**bold**'))\n"
    "display(JSON({'a': [1, 2, 3]}))\n"
)


def open_text(path) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def read_bytes(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def exec_json(session, code, cwd, **kwargs):
    result = run_cli("-j", "exec", session, "-c", code, cwd=cwd, **kwargs)
    return result, (json.loads(result.stdout) if result.stdout else None)


def test_rich_outputs_are_kept_as_real_files_described_by_a_manifest(ws, kernel_session):
    result, doc = exec_json(kernel_session, RICH, ws)
    assert result.returncode == 0, result.stderr
    run = doc["run"]
    manifest = json.loads(open_text(run["manifest"]))
    run_dir = os.path.dirname(run["manifest"])
    assert os.path.dirname(run_dir) == str(ws.resolve() / ".j-cli" / "outputs")
    types = {(i["type"], i["mime"]) for i in doc["outputs"] if "path" in i}
    assert types == {("image", "image/png"), ("image", "image/jpeg"), ("html", "text/html"), ("markdown", "text/markdown")}
    for item in doc["outputs"]:
        if "path" in item:
            assert os.path.isfile(item["path"]) and os.path.getsize(item["path"]) == item["bytes"]
            if item["type"] == "image":
                with Image.open(item["path"]) as img:
                    assert img.format in ("PNG", "JPEG")
    assert manifest["managed_by"] == "j-cli" and manifest["run_id"] == run["run_id"]
    assert manifest["status"] == "ok" and manifest["source"]["kind"] == "inline"
    assert manifest["owner"]["pid"] > 0 and manifest["completed_ns"] >= manifest["created_ns"]
    assert sorted(os.listdir(run_dir)) == sorted(manifest["files"] + ["manifest.json"])
    assert "iVBOR" not in json.dumps(manifest)  # binary data lives only in files
    assert manifest["outputs"][5]["data"]["application/json"] == {"inline": {"a": [1, 2, 3]}}
    jcli = ws / ".j-cli"
    for name, content in CACHEDIR_FILES.items():
        assert (jcli / name).read_bytes() == content


def test_j_cli_dir_stays_out_of_git(ws, kernel_session):
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    result, doc = exec_json(kernel_session, RICH, ws)
    assert result.returncode == 0, result.stderr
    manifest = Path(doc["run"]["manifest"])
    assert manifest.is_file() and manifest.is_relative_to(
        Path(os.path.realpath(ws)) / ".j-cli" / "outputs"
    )  # a run was kept in the workspace
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ws, capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert status.stdout == ""
    ignored = subprocess.run(["git", "check-ignore", "-q", str(manifest)], cwd=ws)
    assert ignored.returncode == 0  # git sees the run and ignores it, through .j-cli/.gitignore


def test_a_short_text_result_creates_nothing_on_disk(ws, kernel_session):
    result, doc = exec_json(kernel_session, "print('tiny'); 1 + 1", ws)
    assert result.returncode == 0 and "run" not in doc
    assert list(ws.iterdir()) == []


def test_long_text_is_stored_and_the_notice_points_to_the_full_record(ws, kernel_session):
    _, doc = exec_json(kernel_session, "print('y' * 9000)", ws)
    assert doc["truncated"] and f"j-cli output show {doc['run']['run_id']}" in doc["truncation_notice"]
    full = run_cli("-j", "output", "show", doc["run"]["run_id"], "--output", "0", cwd=ws).json()
    assert full["stream"]["data"] == "y" * 9000 + "\n" and full["source"]["kind"] == "run"


def test_sixty_images_in_one_run_are_all_kept(ws, kernel_session):
    code = "import matplotlib.pyplot as plt\nfor i in range(60):\n    plt.figure(figsize=(1, 1), dpi=30); plt.plot([0, i]); plt.show()"
    _, doc = exec_json(kernel_session, code, ws)
    assert len(doc["outputs"]) == 20 and "40 more outputs" in doc["truncation_notice"]
    catalog = run_cli("-j", "output", "show", doc["run"]["run_id"], cwd=ws).json()
    assert catalog["output_count"] == 60
    assert all("image/png" in o["available_mime_types"] for o in catalog["outputs"])
    png = run_cli("-j", "output", "show", doc["run"]["run_id"], "--output", "59", cwd=ws).json()
    import base64

    with Image.open(io.BytesIO(base64.b64decode(png["selected"]["data"]))) as img:
        assert png["selected"]["mime_type"] == "image/png" and img.size == (png["selected"]["width"], png["selected"]["height"])


def test_output_show_uses_the_notebook_envelope(ws, kernel_session):
    _, doc = exec_json(kernel_session, RICH, ws)
    run_id = doc["run"]["run_id"]
    image_item = next(i for i in doc["outputs"] if i["type"] == "image" and i["mime"] == "image/png")
    env = run_cli("-j", "output", "show", doc["run"]["manifest"], "--output", str(image_item["output_index"]), cwd=ws).json()
    import base64

    assert base64.b64decode(env["selected"]["data"]) == read_bytes(image_item["path"])
    assert env["source"] == {**env["source"], "kind": "run", "run_id": run_id}
    html = run_cli("-j", "output", "show", run_id, "--output", "3", "--limit", "5", cwd=ws).json()
    assert html["selected"]["data"] == "<tabl" and html["selected"]["truncated"]
    listed = run_cli("-j", "output", "list", cwd=ws).json()["runs"]
    assert listed[0]["run_id"] == run_id
    missing = run_cli("-j", "output", "show", "20200101T000000.000000000Z-00000000", cwd=ws)
    assert missing.returncode == 1 and missing.error()["code"] == "RUN_NOT_FOUND"
    assert "may have been cleaned" in missing.error()["message"]


def test_two_execs_in_one_cwd_publish_distinct_complete_runs(ws, jupyter, kernel_session):
    env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": jupyter["url"], "JCLI_JUPYTER_SERVER_TOKEN": jupyter["token"]}
    other = f"par-{os.urandom(2).hex()}"  # two kernels, so the two runs overlap: the module's and one of its own
    assert run_cli("session", "create", "-n", other, env=env).returncode == 0
    try:
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda n: exec_json(n, RICH, ws), [kernel_session, other]))
        runs = {doc["run"]["run_id"] for _, doc in results}
        assert len(runs) == 2
        for run_id in runs:
            manifest = json.loads((ws / ".j-cli" / "outputs" / run_id / "manifest.json").read_text())
            assert sorted(os.listdir(ws / ".j-cli" / "outputs" / run_id)) == sorted(manifest["files"] + ["manifest.json"])
        assert os.listdir(ws / ".j-cli" / "outputs" / ".staging") == []
    finally:
        run_cli("session", "kill", other, env=env)


@pytest.mark.parametrize("step", ["run.publish:before-rename", "run.publish:after-rename"])
def test_a_sidecar_killed_mid_store_never_costs_the_run(ws, kernel_session, sidecar_on, monkeypatch, tmp_path, step):
    fifo = tmp_path / "stall.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("JCLI_SIDECAR_TEST_STALL_FIFO", str(fifo))
    monkeypatch.setenv("JCLI_SIDECAR_TEST_STALL_AT", step)
    pid = run_cli("-j", "sidecar", "start", cwd=ws).json()["pid"]
    monkeypatch.delenv("JCLI_SIDECAR_TEST_STALL_FIFO")
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", exec_json(kernel_session, RICH, ws)))
    worker.start()
    with open(fifo, encoding="utf-8") as fh:
        assert fh.readline().startswith(f"stalled {step}")
    os.kill(pid, signal.SIGKILL)
    worker.join(120)
    result, doc = box["r"]
    assert result.returncode == 0, result.stderr
    assert os.path.isfile(doc["run"]["manifest"])
    assert all(os.path.isfile(i["path"]) for i in doc["outputs"] if "path" in i)
    assert os.listdir(ws / ".j-cli" / "outputs" / ".staging") == []
    from jcli_sidecar.base.runtime import SidecarPaths

    wait_for_lock(SidecarPaths(str(ws.resolve())).spawn_lock, 30)  # the respawned one, if any, is up


def test_publish_is_idempotent_and_refuses_unknown_runs(tmp_path):
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
    from jcli_sidecar.runs.store import stage_run

    staged = stage_run(str(tmp_path), [{"output_type": "stream", "name": "stdout", "text": "x"}], source={}, status="ok", created_ns=1)
    outputs = ensure_outputs_dir(str(tmp_path))
    first = publish_run(outputs, staged.run_id)
    assert publish_run(outputs, staged.run_id) == first and os.path.isfile(first["manifest"])
    for bad in ("nope", "../escape", ".staging"):
        with pytest.raises(OutputSaveFailed):
            publish_run(outputs, bad)


def test_a_symlinked_j_cli_dir_is_refused(tmp_path):
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".j-cli").symlink_to(elsewhere)
    with pytest.raises(OutputSaveFailed):
        ensure_outputs_dir(str(ws))
    assert list(elsewhere.iterdir()) == []


def test_a_manifest_cannot_point_outside_its_run(tmp_path):
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
    from jcli_sidecar.runs.store import stage_run

    staged = stage_run(
        str(tmp_path), [{"output_type": "stream", "name": "stdout", "text": "x" * 5000}], source={}, status="ok", created_ns=1
    )
    manifest_path = publish_run(ensure_outputs_dir(str(tmp_path)), staged.run_id)["manifest"]
    manifest = json.loads(open_text(manifest_path))
    manifest["outputs"][0]["text"]["file"] = "../../../../etc/hostname"
    with open(manifest_path, "w") as fh:
        json.dump(manifest, fh)
    with pytest.raises(OutputDataInvalid):
        read_run(str(tmp_path), staged.run_id, 0)
    with pytest.raises(RunNotFound):
        read_run(str(tmp_path), "not-a-run", 0)
