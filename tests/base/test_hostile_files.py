"""Hostile files on every read path: FIFOs, devices, sockets, directories, huge files.

Every read refuses what is not a regular file, without blocking on it and
without streaming from it, and caps what it reads (``JCLI_MAX_FILE_MB``).
The ways in: a notebook read in-process, through a running sidecar and
through MCP; a ``.py`` pair (either side); a run's manifest and its
payloads (``output show``, ``output list``, MCP); ``--request -`` on a
stdin that never ends; ``exec --file``; a config read. A hang on today's
code shows up as the bounded wait of :func:`run_bounded` failing, never as
a stuck test.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import subprocess
import threading

import pytest
from helpers import FIXTURES, JCLI, CliResult, run_cli

from jcli_sidecar.base.errors import NotebookReadFailed, OutputDataInvalid, RunNotFound
from jcli_sidecar.base.fileio import read_text_or_none
from jcli_sidecar.base.readfile import FileTooLarge, NotARegularFile, read_regular

NOTEBOOK = FIXTURES / "kernel_v4.5.ipynb"
#: Generous bounds on waits for something that must not hang (never a timing assert).
BOUND = 30


def run_bounded(*args, cwd=None, env=None, stdin=b"", stdin_file=None) -> CliResult:
    """``j-cli args``; a hang fails the test with a clear message instead of blocking it."""
    try:
        proc = subprocess.run(
            [JCLI, *args],
            cwd=cwd,
            env=env,
            input=None if stdin_file is not None else stdin,
            stdin=stdin_file,
            capture_output=True,
            timeout=BOUND,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"j-cli {' '.join(map(str, args))} hung (no answer within {BOUND} s)")
    return CliResult(proc)


def bounded(fn, *args):
    """``fn(*args)`` in a thread; a call that blocks fails the test (the thread is left behind)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND)
    if thread.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} blocked on a non-regular file")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _fifo(path):
    os.mkfifo(path)
    return path


def _socket_file(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    os.chdir(path.parent)  # a socket path is limited to ~108 bytes: bind the bare name
    try:
        sock.bind(path.name)
    finally:
        os.chdir(here)
        sock.close()
    return path


def _zero_device(path):
    """A character device node (the one /dev/zero is) right inside the workspace: no link to follow."""
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    return path


def _dev_zero_link(path):
    os.symlink("/dev/zero", path)
    return path


def _dev_null_link(path):
    os.symlink("/dev/null", path)
    return path


def _fifo_link(path):
    target = _fifo(path.parent / (path.name + ".target"))
    os.symlink(target, path)
    return path


#: Every kind of non-regular file a read may be pointed at, and what its message says.
KINDS = {
    "fifo": (_fifo, "FIFO"),
    "link-to-fifo": (_fifo_link, "FIFO"),
    "link-to-dev-zero": (_dev_zero_link, "character device"),
    "link-to-dev-null": (_dev_null_link, "character device"),
    "zero-device-node": (_zero_device, "character device"),
    "socket": (_socket_file, "socket"),
}


@pytest.fixture(params=sorted(KINDS))
def hostile(request, tmp_path):
    """``(maker, words)``: a function making a non-regular file at a path, and what the error names."""
    return KINDS[request.param]


def _coded(result: CliResult, code: str, words: str | None = None) -> dict:
    assert result.returncode == 1, (result.returncode, result.stdout[:300], result.stderr[:300])
    error = result.error()
    assert error["code"] == code, error
    if words is not None:
        assert words in error["message"], error
    assert b"Traceback" not in result.stderr
    return error


# -- the primitive ----------------------------------------------------------------


def test_read_regular_refuses_every_non_regular_file_without_blocking(tmp_path, hostile):
    maker, words = hostile
    path = maker(tmp_path / "x.ipynb")
    with pytest.raises(NotARegularFile) as info:
        bounded(read_regular, str(path))
    assert words in info.value.strerror


def test_a_config_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = _fifo(tmp_path / "config.toml")
    with pytest.raises(NotARegularFile):
        bounded(read_text_or_none, str(fifo))
    assert bounded(read_text_or_none, str(tmp_path / "absent.toml")) is None


def test_a_file_over_the_read_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    big = tmp_path / "big.ipynb"
    with open(big, "wb") as fh:
        fh.truncate(3 * 1024 * 1024)  # sparse: nothing is written, nothing must be read
    monkeypatch.setenv("JCLI_MAX_FILE_MB", "2")
    with pytest.raises(FileTooLarge) as info:
        read_regular(str(big))
    assert "JCLI_MAX_FILE_MB" in info.value.strerror
    assert read_regular(str(big), limit=4 * 1024 * 1024)[0] == bytes(3 * 1024 * 1024)


def test_a_default_limit_is_documented_and_refuses_a_huge_sparse_notebook(tmp_path):
    huge = tmp_path / "huge.ipynb"
    with open(huge, "wb") as fh:
        fh.truncate(600 * 1024 * 1024)  # sparse, over the 512 MiB default
    result = run_bounded("-j", "notebook", "outputs", str(huge), "--cell", "0")
    _coded(result, "NOTEBOOK_READ_FAILED", "read limit")


# -- notebooks, in-process ------------------------------------------------------------


@pytest.mark.parametrize("command", [["outputs"], ["output", "--output", "0"]], ids=["catalog", "output"])
def test_a_notebook_that_is_not_a_regular_file_is_a_coded_error_in_process(tmp_path, hostile, command):
    maker, words = hostile
    path = maker(tmp_path / "nb.ipynb")
    result = run_bounded("-j", "notebook", command[0], str(path), "--cell", "0", *command[1:])
    _coded(result, "NOTEBOOK_READ_FAILED", words)


def test_dev_zero_named_directly_is_refused_too(tmp_path):
    _coded(run_bounded("-j", "notebook", "outputs", "/dev/zero", "--cell", "0"), "NOTEBOOK_READ_FAILED", "character device")


def test_the_read_limit_applies_to_notebooks(tmp_path):
    path = tmp_path / "nb.ipynb"
    shutil.copy(NOTEBOOK, path)
    env = {**os.environ, "JCLI_MAX_FILE_MB": "0.001"}  # about 1 KB: the fixture is larger
    error = _coded(run_bounded("-j", "notebook", "outputs", str(path), "--cell", "0", env=env), "NOTEBOOK_READ_FAILED")
    assert "read limit" in error["message"] and "JCLI_MAX_FILE_MB" in error["message"]


def test_a_directory_is_still_a_coded_error(tmp_path):
    (tmp_path / "dir.ipynb").mkdir()
    _coded(run_bounded("-j", "notebook", "outputs", str(tmp_path / "dir.ipynb"), "--cell", "0"), "NOTEBOOK_READ_FAILED", "directory")


def test_a_py_pair_whose_py_is_a_fifo_is_refused(tmp_path):
    shutil.copy(FIXTURES / "pair_ids.ipynb", tmp_path / "pair.ipynb")
    _fifo(tmp_path / "pair.py")
    _coded(run_bounded("-j", "notebook", "outputs", str(tmp_path / "pair.py"), "--cell", "0"), "NOTEBOOK_READ_FAILED", "FIFO")


def test_a_py_pair_whose_notebook_is_a_fifo_is_refused(tmp_path):
    shutil.copy(FIXTURES / "pair_ids.py", tmp_path / "pair.py")
    _fifo(tmp_path / "pair.ipynb")
    _coded(run_bounded("-j", "notebook", "outputs", str(tmp_path / "pair.py"), "--cell", "0"), "NOTEBOOK_READ_FAILED", "FIFO")


def test_a_request_on_a_stdin_that_never_ends_is_refused_at_its_cap(tmp_path):
    with open("/dev/zero", "rb") as zero:
        result = run_bounded("-j", "notebook", "output", "--request", "-", stdin_file=zero)
    error = result.error()
    assert result.returncode == 2 and error["code"] == "USAGE_ERROR" and "over" in error["message"], error


# -- notebooks, through the sidecar ---------------------------------------------------


def _start_sidecar(cwd) -> dict:
    started = run_cli("-j", "sidecar", "start", cwd=cwd)
    assert started.returncode == 0, started.stderr
    return started.json()


def _sidecar_stats(cwd) -> dict:
    return run_cli("-j", "sidecar", "status", cwd=cwd).json()


def test_the_sidecar_refuses_non_regular_files_and_stays_free(fixture_dir, sidecar_on):
    doc = _start_sidecar(fixture_dir)
    paths = {
        "fifo": _fifo(fixture_dir / "fifo.ipynb"),
        "zero": _dev_zero_link(fixture_dir / "zero.ipynb"),
        "device": _zero_device(fixture_dir / "device.ipynb"),
        "socket": _socket_file(fixture_dir / "sock.ipynb"),
    }
    for path in paths.values():
        for _ in range(2):  # the second time too: nothing was cached, nothing is pinned
            result = run_bounded("-j", "notebook", "outputs", path.name, "--cell", "0", cwd=fixture_dir)
            _coded(result, "NOTEBOOK_READ_FAILED")
    stats = _sidecar_stats(fixture_dir)
    assert stats["pid"] == doc["pid"], "the sidecar died on a hostile file"
    assert stats["requests_in_flight"] == 1, "a worker is still pinned"  # 1: this stats request itself
    assert stats["requests_served"] >= 2 * len(paths)
    assert stats["cache"]["entries"] == 0
    ok = run_bounded("-j", "notebook", "outputs", "kernel_v4.5.ipynb", "--cell", "0", cwd=fixture_dir)
    assert ok.returncode == 0 and _sidecar_stats(fixture_dir)["pid"] == doc["pid"]


def test_a_notebook_swapped_for_a_fifo_after_it_was_cached_is_refused(fixture_dir, sidecar_on):
    _start_sidecar(fixture_dir)
    args = ("-j", "notebook", "outputs", "kernel_v4.5.ipynb", "--cell", "0")
    assert run_bounded(*args, cwd=fixture_dir).returncode == 0
    os.unlink(fixture_dir / "kernel_v4.5.ipynb")
    _fifo(fixture_dir / "kernel_v4.5.ipynb")
    _coded(run_bounded(*args, cwd=fixture_dir), "NOTEBOOK_READ_FAILED", "FIFO")


# -- runs: manifests and payloads -----------------------------------------------------


def _published_run(workspace, outputs) -> str:
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
    from jcli_sidecar.runs.store import publish_run, stage_run

    staged = stage_run(str(workspace), outputs, source={}, status="ok", created_ns=1)
    return os.path.dirname(publish_run(ensure_outputs_dir(str(workspace)), staged.run_id)["manifest"])


@pytest.fixture
def run_dir(tmp_path):
    """A real published run whose output 0 is kept in a payload file."""
    return _published_run(tmp_path, [{"output_type": "stream", "name": "stdout", "text": "x" * 5000}])


def _payload(run_dir) -> str:
    with open(os.path.join(run_dir, "manifest.json"), encoding="utf-8") as fh:
        return os.path.join(run_dir, json.load(fh)["outputs"][0]["text"]["file"])


def test_a_payload_that_is_not_a_regular_file_is_refused_by_output_show(tmp_path, run_dir, hostile):
    maker, words = hostile
    payload = _payload(run_dir)
    os.unlink(payload)
    maker(type(tmp_path)(payload))
    run_id = os.path.basename(run_dir)
    for ref in (run_id, os.path.join(run_dir, "manifest.json")):
        for extra in ([], ["--output", "0"]):
            error = _coded(run_bounded("-j", "output", "show", ref, *extra, cwd=tmp_path), "OUTPUT_DATA_INVALID")
            # a link to a device leaves the run (refused as such); the rest are named for what they are
            assert words in error["message"] or "outside its run" in error["message"], error


def test_a_manifest_that_is_a_fifo_is_refused_by_show_and_list(tmp_path, run_dir, hostile):
    maker, _words = hostile
    manifest = os.path.join(run_dir, "manifest.json")
    os.unlink(manifest)
    maker(type(tmp_path)(manifest))
    run_id = os.path.basename(run_dir)
    _coded(run_bounded("-j", "output", "show", run_id, cwd=tmp_path), "RUN_NOT_FOUND")
    _coded(run_bounded("-j", "output", "show", manifest, cwd=tmp_path), "RUN_NOT_FOUND")
    listed = run_bounded("-j", "output", "list", cwd=tmp_path)
    assert listed.returncode == 0
    (entry,) = listed.json()["runs"]
    assert entry["error"]["code"] == "RUN_NOT_FOUND"


def test_run_reads_in_process_refuse_a_fifo_payload(tmp_path, run_dir):
    from jcli_sidecar.runs.runs import read_run

    os.unlink(_payload(run_dir))
    _fifo(_payload(run_dir))
    with pytest.raises(OutputDataInvalid):
        bounded(read_run, str(tmp_path), os.path.basename(run_dir), 0)
    os.unlink(os.path.join(run_dir, "manifest.json"))
    _fifo(os.path.join(run_dir, "manifest.json"))
    with pytest.raises(RunNotFound):
        bounded(read_run, str(tmp_path), os.path.join(run_dir, "manifest.json"))


# -- exec --file ----------------------------------------------------------------------


def test_exec_of_a_py_fifo_is_refused_before_any_server_is_asked(tmp_path):
    fifo = _fifo(tmp_path / "script.py")
    env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": "http://127.0.0.1:9", "JCLI_JUPYTER_SERVER_TOKEN": "x"}
    _coded(run_bounded("-j", "exec", "main", "-f", str(fifo), cwd=tmp_path, env=env), "NOTEBOOK_READ_FAILED", "FIFO")


def test_exec_of_a_notebook_fifo_is_refused(tmp_path, use_jupyter, kernel_session):
    fifo = _fifo(tmp_path / "nb.ipynb")
    result = run_bounded("-j", "exec", kernel_session, "-f", str(fifo), cwd=tmp_path)
    assert result.returncode == 1
    text = result.stdout.decode() + result.stderr.decode()
    assert "NOTEBOOK_READ_FAILED" in text and "FIFO" in text and "Traceback" not in text


# -- MCP --------------------------------------------------------------------------------


def _mcp(root, calls, env=None):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def main():
        params = StdioServerParameters(command=JCLI, args=["mcp", "serve", "--root", str(root)], cwd=str(root), env=env or dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await asyncio.wait_for(calls(session), BOUND)

    try:
        return asyncio.run(main())
    except TimeoutError:
        pytest.fail("the MCP server never answered")


def test_mcp_refuses_a_fifo_notebook_and_a_fifo_payload(tmp_path, run_dir):
    _fifo(tmp_path / "nb.ipynb")
    _zero_device(tmp_path / "zero.ipynb")  # inside the root (a link to /dev/zero would be PATH_NOT_ALLOWED)
    os.unlink(_payload(run_dir))
    _fifo(_payload(run_dir))

    async def calls(session):
        return [
            await session.call_tool("read_notebook_output", {"file_path": "nb.ipynb", "cell_index": 0}),
            await session.call_tool("read_notebook_output", {"file_path": "zero.ipynb", "cell_index": 0}),
            await session.call_tool("read_run_output", {"run": os.path.basename(run_dir), "output_index": 0}),
        ]

    fifo, zero, payload = _mcp(tmp_path, calls)
    assert fifo.is_error and fifo.content[0].text.startswith("NOTEBOOK_READ_FAILED") and "FIFO" in fifo.content[0].text
    assert zero.is_error and zero.content[0].text.startswith("NOTEBOOK_READ_FAILED") and "character device" in zero.content[0].text
    assert payload.is_error and payload.content[0].text.startswith("OUTPUT_DATA_INVALID")


def test_in_process_readers_raise_coded_errors_for_non_regular_files(tmp_path, hostile):
    from jcli_sidecar.ipynb.notebook import NotebookFile, load_notebook
    from jcli_sidecar.read.reader import list_outputs

    maker, _ = hostile
    path = str(maker(tmp_path / "nb.ipynb"))
    for call in (NotebookFile.load, load_notebook, lambda p: list_outputs(p, 0)):
        with pytest.raises(NotebookReadFailed):
            bounded(call, path)
