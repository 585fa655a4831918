"""Reads have no side effects and work where nothing can be written.

Root ignores file modes, so the reader runs as ``nobody`` (via setpriv) on a
directory that ``nobody`` cannot write. The fixture first proves that
``nobody`` can start an interpreter and import the package; it never skips.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import click
import pytest
from helpers import DROP, FIXTURES, nobody_interpreter

import jcli
import jcli_sidecar


@pytest.fixture(scope="module")
def nobody_python():
    """(interpreter, PYTHONPATH) that ``nobody`` can run, proven by an import."""
    yield from nobody_interpreter([jcli_sidecar, jcli, click], "jcli_sidecar.read.reader, jcli.fastpath")


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_mode, p.stat().st_size, p.stat().st_mtime_ns) for p in [root, *root.rglob("*")]}


@pytest.fixture
def readonly_workspace():
    base = Path(tempfile.mkdtemp(prefix="jcli-ro-", dir="/tmp"))
    ws = base / "ws"
    runtime = base / "runtime"
    try:
        ws.mkdir()
        for name in ("kernel_v4.5.ipynb", "pair_ids.py", "pair_ids.ipynb"):
            shutil.copy(FIXTURES / name, ws / name)
            (ws / name).chmod(0o444)
        ws.chmod(0o555)
        base.chmod(0o755)
        runtime.mkdir(mode=0o700)
        os.chown(runtime, 65534, 65534)
        yield ws, runtime
    finally:
        ws.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(nobody_python, cwd, runtime, *args, **extra_env):
    """Run ``python -m jcli ARGS`` as nobody, with a minimal environment."""
    python, libs = nobody_python
    env = {
        "PYTHONPATH": libs,
        "PATH": os.environ["PATH"],
        "HOME": "/nonexistent",
        "XDG_RUNTIME_DIR": str(runtime),
        "JCLI_SIDECAR": "off",
        **extra_env,
    }
    return subprocess.run([*DROP, python, "-m", "jcli", *args], cwd=cwd, env=env, capture_output=True, timeout=120)


def test_nobody_really_cannot_write_the_workspace(nobody_python, readonly_workspace):
    ws, _ = readonly_workspace
    proc = subprocess.run([*DROP, "touch", str(ws / "probe")], capture_output=True, timeout=30)
    assert proc.returncode != 0 and not (ws / "probe").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0"],
        ["-j", "notebook", "outputs", "kernel_v4.5.ipynb", "--cell", "9"],
        ["-j", "notebook", "output", "pair_ids.py", "--cell", "1", "--output", "0"],
        ["notebook", "output", "kernel_v4.5.ipynb", "--cell", "5", "--output", "0"],
        ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "99", "--output", "0"],
    ],
)
def test_reads_as_nobody_in_a_readonly_workspace_change_nothing(nobody_python, readonly_workspace, args):
    ws, runtime = readonly_workspace
    before, runtime_before = _snapshot(ws), _snapshot(runtime)
    proc = _as_nobody(nobody_python, ws, runtime, *args)
    assert b"Traceback" not in proc.stderr
    if "99" in args:
        assert proc.returncode == 1 and json.loads(proc.stderr)["code"] == "CELL_NOT_FOUND"
    else:
        assert proc.returncode == 0, proc.stderr
    if args[:3] == ["-j", "notebook", "output"] and "99" not in args:
        png = base64.b64decode(json.loads(proc.stdout)["selected"]["data"])
        assert png.startswith(b"\x89PNG")
    assert _snapshot(ws) == before
    assert _snapshot(runtime) == runtime_before
    assert not (ws / ".j-cli").exists()


def _exec_as_nobody(nobody_python, ws, runtime, jupyter, session, code):
    return _as_nobody(
        nobody_python,
        ws,
        runtime,
        "-j",
        "exec",
        session,
        "-c",
        code,
        JCLI_JUPYTER_SERVER_URL=jupyter["url"],
        JCLI_JUPYTER_SERVER_TOKEN=jupyter["token"],
    )


def test_text_only_exec_works_in_a_readonly_workspace(nobody_python, readonly_workspace, jupyter, kernel_session):
    ws, runtime = readonly_workspace
    before, runtime_before = _snapshot(ws), _snapshot(runtime)
    proc = _exec_as_nobody(nobody_python, ws, runtime, jupyter, kernel_session, "print('read-only ok'); 40 + 2")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"] == "read-only ok\n42\n"
    assert _snapshot(ws) == before and _snapshot(runtime) == runtime_before


def test_rich_exec_in_a_readonly_workspace_says_it_ran_but_could_not_save(nobody_python, readonly_workspace, jupyter, kernel_session):
    ws, runtime = readonly_workspace
    before, runtime_before = _snapshot(ws), _snapshot(runtime)
    code = "from IPython.display import HTML, display\nprint('ran')\ndisplay(HTML('<b>x</b>'))"
    proc = _exec_as_nobody(nobody_python, ws, runtime, jupyter, kernel_session, code)
    assert proc.returncode == 1 and proc.stdout == b""
    err = json.loads(proc.stderr)
    assert err["code"] == "OUTPUT_SAVE_FAILED" and err["executed"] is True
    assert err["result"]["text"].startswith("ran\n") and "run" not in err["result"]
    assert _snapshot(ws) == before and _snapshot(runtime) == runtime_before


def test_a_clean_that_cannot_delete_reports_partial(nobody_python, tmp_path):
    """nobody may read root's runs but not delete them: the clean is partial, per run."""
    from jcli_sidecar.runs.retention import DAY_NS
    from jcli_sidecar.runs.store import publish_run, stage_run

    base = Path(tempfile.mkdtemp(prefix="jcli-clean-", dir="/tmp"))
    try:
        ws = base / "ws"
        ws.mkdir()
        old = 1_000_000_000 * 1_000_000_000
        ids = []
        for i in range(2):
            staged = stage_run(
                str(ws),
                [{"output_type": "stream", "name": "stdout", "text": "x"}],
                source={},
                status="ok",
                created_ns=old + i,
                completed_ns=old + i,
            )
            publish_run(staged.outputs_dir, staged.run_id)
            ids.append(staged.run_id)
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        lock = ws / ".j-cli" / "outputs" / ".lock"
        locked_out = _as_nobody(nobody_python, ws, base, "-j", "output", "clean", "--max-age-days", "1")
        assert locked_out.returncode == 1 and json.loads(locked_out.stderr)["code"] == "PATH_NOT_ALLOWED"
        lock.chmod(0o666)  # now nobody may lock, but still not delete root's runs
        runtime = base / "runtime"
        runtime.mkdir(mode=0o700)
        os.chown(runtime, 65534, 65534)
        before = _snapshot(ws)
        proc = _as_nobody(nobody_python, ws, runtime, "-j", "output", "clean", "--max-age-days", "1")
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout, proc.stderr
        report = json.loads(proc.stdout)
        # The newer run belongs to a live process (this test) and is not even tried.
        assert report["status"] == "partial" and [e["run_id"] for e in report["errors"]] == [ids[0]]
        assert report["deleted"] == [] and _snapshot(ws) == before
        assert DAY_NS > 0
    finally:
        shutil.rmtree(base, ignore_errors=True)
