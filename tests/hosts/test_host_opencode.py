"""The real OpenCode binary (pinned in tests/hosts) loads the plugin ``j-cli setup opencode`` placed.

Each test installs the plugin with the real ``j-cli setup opencode`` into a
fresh project (or the user config dir of its scope's HOME) and has OpenCode
call a tool in a turn on a running ``opencode serve`` (tests/hosts/opencode_world.py):
OpenCode's own loader imports the file, and the scripted model calls the
tool once; the test checks the tool part OpenCode recorded, which the model
received verbatim. The tests that only call a tool and change nothing in the
project share one such project (``opencode_reader``): OpenCode bootstraps
each directory it serves once, which costs more than a call. The server runs
in a network namespace with nothing but its loopback, its fetches switched
off: the dependency it would install into each config dir is seeded from the
pinned ``tests/hosts/opencode-deps``.

The tests about OpenCode's own start (no j-cli on PATH, no plugin package
offline) run ``opencode debug agent build --tool read_notebook_output
--params JSON`` in a process of their own, with no network at all
(``unshare -n`` where the machine allows it) and no model.

The guard tests at the end script several calls in one turn, through
OpenCode's plugin hooks.

Every turn fails the test if the server logged a plugin load failure.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess

import pytest
from helpers import BIN, FIXTURES, load_cases, run_cli
from hostbins import host_env, offline_prefix
from model_server import ToolCall
from opencode_world import NO_REGISTRY, NOTEBOOK, QUIET, OpenCode, tool_texts


def _case(name: str) -> dict:
    return next(c for c in load_cases() if c["name"] == name)


def _notebook_bytes(cell: int, output: int, mime: str) -> bytes:
    with open(FIXTURES / NOTEBOOK, encoding="utf-8") as fh:
        data = json.load(fh)["cells"][cell]["outputs"][output]["data"][mime]
    return base64.b64decode("".join(data) if isinstance(data, list) else data)


def test_project_plugin_loads_and_reads_an_image_as_one_attachment_with_the_notebooks_bytes(opencode_reader):
    world = opencode_reader
    result = world.read({"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0})
    (attachment,) = result["attachments"]
    assert attachment["type"] == "file" and attachment["mime"] == "image/png"
    head, data = attachment["url"].split(",", 1)
    assert head == "data:image/png;base64"
    assert base64.b64decode(data, validate=True) == _notebook_bytes(2, 0, "image/png")
    for text in (result["output"], result["title"], json.dumps(result.get("metadata"))):
        assert data[:60] not in text  # the base64 is only in the attachment


# HTML and a stream also reach the model verbatim in a whole turn, through each provider
# package (tests/hosts/test_host_opencode_turn.py); here the other text kinds, one call each.
@pytest.mark.parametrize("name", ["html_as_plain", "markdown"])
def test_text_and_html_arrive_verbatim(opencode_reader, name):
    case = _case(name)
    assert case["request"]["file_path"] == NOTEBOOK
    world = opencode_reader
    result = world.read(case["request"])
    envelope = case["expect"]["envelope"]
    expected = envelope["stream"]["data"] if "stream" in envelope else envelope["selected"]["data"]
    assert result["output"].encode("utf-8") == expected.encode("utf-8")
    assert "attachments" not in result


def test_the_catalog_lists_outputs_and_attaches_nothing(opencode_reader):
    world = opencode_reader
    result = world.read({"file_path": NOTEBOOK, "cell_index": 2})
    catalog = json.loads(result["output"])
    assert [o["available_mime_types"] for o in catalog["outputs"]] == [["image/png", "text/plain"]]
    assert "attachments" not in result


def test_a_missing_cell_is_a_coded_error_from_the_tool(opencode_reader):
    world = opencode_reader
    state = world.call("read_notebook_output", {"file_path": NOTEBOOK, "cell_index": 999})
    assert state["status"] == "error"
    assert "CELL_NOT_FOUND: cell 999 is outside" in state["error"]


def test_a_project_plugin_without_j_cli_on_path_says_what_to_set(opencode_reader, tmp_path):
    world = opencode_reader
    bare = tmp_path / "bare-bin"  # a PATH with a shell but no j-cli
    bare.mkdir()
    for tool in ("sh", "bash", "env"):
        if shutil.which(tool):
            (bare / tool).symlink_to(shutil.which(tool))
    proc = world.run_tool({"file_path": NOTEBOOK, "cell_index": 2}, path=str(bare))
    assert proc.returncode != 0
    assert "JCLI_UNAVAILABLE: cannot run j-cli (j-cli: ENOENT)" in proc.stderr and "set JCLI_BIN" in proc.stderr


def test_user_plugin_loads_and_finds_this_j_cli_without_path(opencode_hosts, tmp_path):
    world = OpenCode(opencode_hosts, tmp_path, scope="user")
    assert world.setup["plugin"] == str(world.user_config / "plugins" / "jcli.js")
    assert not (world.project / ".opencode" / "plugins" / "jcli.js").exists()
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    proc = world.run_tool({"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0}, path=str(bare))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (attachment,) = json.loads(proc.stdout)["result"]["attachments"]
    assert base64.b64decode(attachment["url"].split(",", 1)[1]) == _notebook_bytes(2, 0, "image/png")


def _returned(state: dict) -> dict:
    """What a tool returned, without the ids OpenCode gives each attachment in its session."""
    if state["status"] != "completed":
        return {"status": state["status"]}
    attachments = [{k: v for k, v in a.items() if k in ("type", "mime", "url")} for a in state.get("attachments") or []]
    return {"output": state["output"], "title": state["title"], "metadata": state["metadata"], "attachments": attachments}


def test_with_a_sidecar_running_the_plugin_reads_through_its_socket_and_gets_what_spawning_gets(opencode_hosts, tmp_path, sidecar_on):
    world = OpenCode(opencode_hosts, tmp_path)
    cases = [
        {"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0},
        _case("html")["request"],
        {"file_path": NOTEBOOK, "cell_index": 99},
    ]
    spawned = [world.call("read_notebook_output", params) for params in cases]  # JCLI_SIDECAR=off: the plugin spawns j-cli
    counting = tmp_path / "counting-bin"
    counting.mkdir()
    log = tmp_path / "spawns.log"
    (counting / "j-cli").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {BIN / "j-cli"} "$@"\n')
    (counting / "j-cli").chmod(0o755)
    path = f"{counting}{os.pathsep}{os.environ['PATH']}"
    env = host_env(world.home, PATH=path)
    # This test's own server: its PATH counts spawns, and it finds the sidecar in this test's runtime dir.
    own = {"PATH": path, "JCLI_SIDECAR": "on", "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]}
    assert run_cli("sidecar", "start", cwd=world.project, env=env).returncode == 0
    try:
        before = run_cli("-j", "sidecar", "status", cwd=world.project, env=env).json()["requests_served"]
        socketed = [world.call("read_notebook_output", params, env=own) for params in cases]
        after = run_cli("-j", "sidecar", "status", cwd=world.project, env=env).json()["requests_served"]
    finally:
        world.stop_server(env=own)
        run_cli("sidecar", "stop", cwd=world.project, env=env)
    reads = [line for line in log.read_text().splitlines() if line != "--version"]
    assert reads == [], "OpenCode's plugin spawned j-cli for a read"
    assert after - before == len(cases) + 1, "the sidecar served every read (and one status call)"
    for got, want in zip(socketed, spawned, strict=True):
        assert got["status"] == want["status"]
        assert _returned(got) == _returned(want)
        if want["status"] == "error":
            assert "CELL_NOT_FOUND: cell 99 is outside" in got["error"] and "CELL_NOT_FOUND: cell 99 is outside" in want["error"]


# ---- wait_notebook_job: the plugin's `j-cli -j job wait`, on a real background job.


def test_wait_notebook_job_answers_a_timed_out_snapshot_then_the_ended_job(
    opencode_hosts, tmp_path, use_jupyter, sidecar_on, kernel_session
):
    """A real job held at a kernel-side barrier: a 1 s wait is ``timed_out`` (running), and once released the next wait is ``ok``."""
    from test_jobs_run import Barrier

    world = OpenCode(opencode_hosts, tmp_path)
    barrier = Barrier(tmp_path, "opencode")
    started = run_cli(
        "-j", "exec", kernel_session, "-c", "print('held')\n" + barrier.code() + "print('done')\n", "--background", cwd=world.project
    )
    assert started.returncode == 0, started.stderr
    job_id = started.json()["job_id"]
    barrier.reached()

    held = world.call("wait_notebook_job", {"job_ids": [job_id], "timeout_seconds": 1})
    assert held["status"] == "completed", held
    assert held["title"] == f"still running after 1 s: {job_id}; wait again"
    mine = {key: held["metadata"][key] for key in ("timed_out", "stopped", "ended", "pending", "failed")}  # OpenCode adds its own keys
    assert mine == {"timed_out": True, "stopped": False, "ended": [], "pending": [job_id], "failed": None}
    assert json.loads(held["output"])["jobs"][0]["state"] == "running"

    barrier.release()
    result = world.call("wait_notebook_job", {"job_ids": [job_id[:12]], "timeout_seconds": 30})  # a unique prefix names it too
    assert result["status"] == "completed", result
    assert result["title"] == f"ended: {job_id} ok" and result["metadata"]["ended"] == [job_id]
    (job,) = json.loads(result["output"])["jobs"]
    assert job["state"] == "ok" and job["result"]["text"] == "held\ndone\n"


def test_wait_notebook_job_on_an_unknown_id_is_j_clis_coded_error(opencode_reader):
    world = opencode_reader
    state = world.call("wait_notebook_job", {"job_ids": ["nosuch"]})
    assert state["status"] == "error"
    assert "JOB_NOT_FOUND: no job nosuch" in state["error"]


# ---- The guards: a real OpenCode turn, its model scripted on loopback.
#
# A turn on the running server against a provider whose "model" is
# tests/hosts/model_server.py on loopback, answering with the scripted tool calls,
# one per step, then "done". Everything else is OpenCode's own: its session
# loop, its bash/read/edit tools, its plugin hooks (which `opencode debug
# agent --tool` would skip). OpenCode and the model share a network namespace
# whose only interface is its loopback, and OpenCode's own fetches stay
# switched off.


def _turn(world: OpenCode, calls: list[tuple[str, dict]], extra_env: dict[str, str] | None = None) -> list[str]:
    """One turn whose model makes `calls`; returns what each tool answered the model."""
    model = world.turn([ToolCall(name, args) for name, args in calls], env=extra_env)
    return tool_texts(model.turn[-1])


def _paired(world: OpenCode) -> None:
    (world.project / "a.py").write_text("# %%\nx = 1\n\n# %%\nprint(x)\n")
    done = run_cli("convert", "py-to-ipynb", "a.py", cwd=world.project)
    assert done.returncode == 0, done.stderr


def test_guards_refuse_papermill_and_a_paired_py_before_bash_runs_and_let_an_ordinary_command_run(opencode_hosts, tmp_path):
    world = OpenCode(opencode_hosts, tmp_path)
    _paired(world)
    answers = _turn(
        world,
        [
            ("bash", {"command": "touch denied-ran && papermill a.ipynb b.ipynb", "description": "Run the notebook"}),
            ("bash", {"command": "touch denied-ran; python a.py", "description": "Run the script"}),
            ("bash", {"command": "echo ordinary && touch ordinary-ran", "description": "Say something"}),
        ],
    )
    assert answers[0].startswith("j-cli notebook-exec-guard: `papermill` runs a notebook outside j-cli (a.ipynb)"), answers[0]
    assert "j-cli exec SESSION -f a.ipynb" in answers[0]
    assert answers[1].startswith("j-cli python-run-guard: "), answers[1]
    assert not (world.project / "denied-ran").exists()
    assert "ordinary" in answers[2]
    assert (world.project / "ordinary-ran").exists()


def test_guards_refuse_an_edit_of_a_paired_notebook_and_sync_it_after_an_edit_of_the_py(opencode_hosts, tmp_path):
    world = OpenCode(opencode_hosts, tmp_path)
    _paired(world)
    notebook = world.project / "a.ipynb"
    before = notebook.read_bytes()
    (refused,) = _turn(world, [("edit", {"filePath": str(notebook), "oldString": "x = 1", "newString": "x = 3"})])
    assert refused.startswith("j-cli notebook-edit-guard: a.ipynb is paired with the py:percent a.py; edit a.py instead"), refused
    assert notebook.read_bytes() == before

    py = str(world.project / "a.py")
    answers = _turn(world, [("read", {"filePath": py}), ("edit", {"filePath": py, "oldString": "x = 1", "newString": "x = 2"})])
    assert "[j-cli] j-cli synced" in answers[1] and "1 cells kept" in answers[1], answers[1]
    cells = json.loads(notebook.read_text())["cells"]
    assert "".join(cells[0]["source"]) == "x = 2"


# ---- Offline, without the read tool's package: the guards still load.
#
# OpenCode installs `@opencode-ai/plugin` into each config dir it loads
# plugins from when it loads a directory; these runs leave the project's
# `.opencode` unseeded and give OpenCode no registry (no network at all under
# `unshare -n`; for the scripted turn, whose server needs loopback, a
# registry address on a closed loopback port), so that install fails as it
# does offline.


def _unseeded_project(world: OpenCode) -> None:
    for name in ("node_modules", "package.json", "package-lock.json"):
        path = world.project / ".opencode" / name
        if path.is_symlink() or path.is_file():
            path.unlink()


def test_offline_without_the_plugin_package_the_read_tool_loads_and_says_why(opencode_hosts, tmp_path):
    world = OpenCode(opencode_hosts, tmp_path)
    _unseeded_project(world)
    env = host_env(world.home, PATH=world.path, JCLI_SIDECAR="off", **NO_REGISTRY, **QUIET)
    params = json.dumps({"file_path": NOTEBOOK, "cell_index": 2})
    argv = [
        *offline_prefix(),
        str(world.bin),
        "debug",
        "agent",
        "build",
        "--print-logs",
        "--tool",
        "read_notebook_output",
        "--params",
        params,
    ]
    proc = subprocess.run(argv, cwd=world.project, env=env, capture_output=True, text=True, timeout=100)
    assert "background dependency install failed" in proc.stderr, proc.stderr[-2000:]  # the failure this is about happened
    assert "Tool read_notebook_output not found" not in proc.stderr, proc.stderr[-2000:]
    assert "[j-cli] read_notebook_output is unavailable: @opencode-ai/plugin cannot be loaded" in proc.stderr
    assert "READ_TOOL_UNAVAILABLE: read_notebook_output cannot load: @opencode-ai/plugin cannot be loaded" in proc.stderr
    assert not (world.project / ".opencode" / "node_modules").exists()


def test_offline_without_the_plugin_package_the_guards_still_refuse(opencode_hosts, tmp_path):
    world = OpenCode(opencode_hosts, tmp_path)
    _unseeded_project(world)
    _paired(world)
    answers = _turn(
        world,
        [
            ("bash", {"command": "touch denied-ran && papermill a.ipynb b.ipynb", "description": "Run the notebook"}),
            ("edit", {"filePath": str(world.project / "a.ipynb"), "oldString": "x = 1", "newString": "x = 3"}),
        ],
        extra_env=NO_REGISTRY,
    )
    assert answers[0].startswith("j-cli notebook-exec-guard: `papermill` runs a notebook outside j-cli (a.ipynb)"), answers[0]
    assert answers[1].startswith("j-cli notebook-edit-guard: a.ipynb is paired with the py:percent a.py"), answers[1]
    assert not (world.project / "denied-ran").exists() and not (world.project / ".opencode" / "node_modules").exists()
