"""The agent guards through the real ``j-cli _hooks NAME``: payload on stdin, decision out.

Every case runs ``j-cli`` as a host would (a process of its own, the host's
JSON on stdin; ``helpers.run_cli``, as the payload matrix is about what the
guards decide: the entry points hosts call, ``j-cli-hook`` and ``j-cli
_hooks``, run as installed scripts in their own test below) in a workspace with real files: a paired py:percent
``analysis.py``/``analysis.ipynb`` (also one in ``sub/``), a plain script
``plain.py`` beside an unrelated ``plain.ipynb``, a ``.py`` with markers but
no notebook, and an unpaired ``lonely.ipynb``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import warnings

import click
import pytest
from helpers import JCLI, run_cli

from jcli_sidecar.guards.hook_decision import render_decision
from jcli_sidecar.guards.hook_payload import PLATFORMS

PERCENT = "# %%\nimport math\n\n# %%\nx = math.pi\n\n# %% [markdown]\n# Notes\n\n# %%\nprint(x)\n"
UPSTREAM_NAMES = [
    "notebook-exec-guard",
    "python-run-guard",
    "notebook-edit-guard",
    "pair-drift-guard-pre",
    "pair-drift-guard-post",
    "gc-pair-sync-refs",
]


@pytest.fixture(scope="session")
def work_template(tmp_path_factory):
    """The workspace described in the module docstring, its notebooks made by ``j-cli convert``: made once."""
    root = tmp_path_factory.mktemp("guards-work")
    for folder in (root, root / "sub"):
        folder.mkdir(exist_ok=True)
        (folder / "analysis.py").write_text(PERCENT)
        assert run_cli("convert", "py-to-ipynb", "analysis.py", cwd=folder).returncode == 0
    (root / "plain.py").write_text("print('a plain script')\n")
    (root / "plain.ipynb").write_bytes((root / "analysis.ipynb").read_bytes())
    (root / "markers_only.py").write_text(PERCENT)
    (root / "lonely.ipynb").write_bytes((root / "analysis.ipynb").read_bytes())
    (root / "scripts").mkdir()
    return root


@pytest.fixture
def work(tmp_path, work_template):
    """A test's own copy of the workspace (a pair's state is its content: a copy is paired as the original)."""
    shutil.copytree(work_template, tmp_path, dirs_exist_ok=True)
    return tmp_path


def hook(name: str, payload, *, platform: str | None = "claude", raw: bytes | None = None):
    """Run ``j-cli _hooks NAME`` with ``payload`` (a dict, as JSON) or ``raw`` bytes on stdin."""
    args = ["_hooks", name] + (["--platform", platform] if platform else [])
    data = raw if raw is not None else json.dumps(payload).encode()
    return run_cli(*args, stdin=data)


def shell(command, cwd, host: str = "claude") -> dict:
    """A shell tool call as ``host`` sends it."""
    if host == "codex":
        return {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "cwd": str(cwd),
            "turn_id": "t",
            "model": "m",
        }
    if host == "codex-argv":  # older Codex builds: an argv list through a login shell
        return {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": ["bash", "-lc", command]}, "cwd": str(cwd)}
    if host in ("dsh", "opencode"):
        return {"tool_name": "bash", "tool_input": {"command": command}, "cwd": str(cwd)}
    if host == "opencode-native":
        return {"tool": "bash", "args": {"command": command}, "cwd": str(cwd)}
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(cwd), "session_id": "s"}


HOST_SHAPES = [
    ("claude", "claude"),
    ("codex", "codex"),
    ("codex-argv", "codex"),
    ("dsh", "dsh"),
    ("opencode", "opencode"),
    ("opencode-native", "opencode"),
]


def assert_denied(result, *words: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    reason = out["permissionDecisionReason"]
    assert reason in result.stderr.decode()  # exit 2: the hosts show stderr to the model
    for word in words:
        assert word in reason, (word, reason)
    return reason


def assert_allowed(result) -> None:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == b"", result.stdout


# -- notebook-exec ----------------------------------------------------------------------------

EXEC_BYPASSES = [
    ("jupyter nbconvert --execute analysis.ipynb", "analysis.ipynb"),
    ("jupyter nbconvert --to notebook --execute --inplace analysis.ipynb", "analysis.ipynb"),
    ("jupyter-nbconvert --execute analysis.ipynb", "analysis.ipynb"),
    ("jupyter execute analysis.ipynb", "analysis.ipynb"),
    ("python -m nbconvert --execute --to notebook analysis.ipynb", "analysis.ipynb"),
    ("python3 -m nbconvert --execute analysis.ipynb", "analysis.ipynb"),
    ("python -m jupyter nbconvert --execute analysis.ipynb", "analysis.ipynb"),
    ("papermill analysis.ipynb out.ipynb -p alpha 0.1", "analysis.ipynb"),
    ("/usr/bin/papermill analysis.ipynb out.ipynb", "analysis.ipynb"),
    ("runipy analysis.ipynb", "analysis.ipynb"),
    ("ipython analysis.ipynb", "analysis.ipynb"),
    ("jupytext --execute --to notebook analysis.py", "analysis.py"),
    ('bash -c "papermill analysis.ipynb out.ipynb"', "analysis.ipynb"),
    ("sh -lc 'cd sub && jupyter execute analysis.ipynb'", "sub/analysis.ipynb"),
    ("x=$(papermill analysis.ipynb out.ipynb)", "analysis.ipynb"),
    ("echo `papermill analysis.ipynb out.ipynb`", "analysis.ipynb"),
    ("sudo papermill analysis.ipynb out.ipynb", "analysis.ipynb"),
    ("sudo -u nobody papermill analysis.ipynb o.ipynb", "analysis.ipynb"),
    ("ls *.ipynb | xargs -n 1 papermill", "NOTEBOOK.ipynb"),
    ("uv run --with papermill papermill analysis.ipynb o.ipynb", "analysis.ipynb"),
    ("pixi run -e dev jupyter execute analysis.ipynb", "analysis.ipynb"),
    ("conda run -n base jupyter nbconvert --execute analysis.ipynb", "analysis.ipynb"),
    ("poetry run papermill analysis.ipynb o.ipynb", "analysis.ipynb"),
    ("env -i PATH=/usr/bin papermill analysis.ipynb o.ipynb", "analysis.ipynb"),
    ("VAR=1 nohup papermill analysis.ipynb o.ipynb &", "analysis.ipynb"),
    ("time papermill analysis.ipynb o.ipynb", "analysis.ipynb"),
    ("nice -n 10 papermill analysis.ipynb o.ipynb", "analysis.ipynb"),
    ("timeout 5 papermill analysis.ipynb o.ipynb", "analysis.ipynb"),
    ("make build && (cd sub; papermill analysis.ipynb o.ipynb) | tee log", "sub/analysis.ipynb"),
    ("git pull; papermill analysis.ipynb o.ipynb || true", "analysis.ipynb"),
    ("find . -name '*.ipynb' -exec papermill {} out/{} \\;", "NOTEBOOK.ipynb"),
    ("if [[ -f analysis.ipynb ]]; then papermill analysis.ipynb o.ipynb; fi", "analysis.ipynb"),  # the parser refuses [[: token scan
    ("echo $((1+1)) && jupyter execute analysis.ipynb", "analysis.ipynb"),  # arithmetic: token scan
]

ORDINARY = [
    "ls -la",
    "make -j4 build",
    "npm test",
    "cargo build --release",
    "git status && git commit -m 'papermill notes'",
    "python -m pytest -q tests",
    "python -c 'print(1)'",
    "python plain.py",
    "python markers_only.py",
    "python3 scripts/missing.py",
    'echo "papermill"',
    "grep nbconvert notes.md",
    "grep -r 'jupyter execute' docs/",
    "jupyter nbconvert --to html analysis.ipynb",
    "jupyter lab --no-browser",
    "pip install papermill",
    "cat analysis.ipynb | head",
    "j-cli exec main -f analysis.ipynb",
    "papermill --help",
]


@pytest.mark.parametrize(("command", "target"), EXEC_BYPASSES)
def test_notebook_exec_denies_running_a_notebook_outside_jcli(work, command, target):
    reason = assert_denied(hook("notebook-exec-guard", shell(command, work)), f"j-cli exec SESSION -f {target}")
    assert "outside j-cli" in reason


@pytest.mark.parametrize(("host", "platform"), HOST_SHAPES)
def test_notebook_exec_reads_every_hosts_shape(work, host, platform):
    assert_denied(hook("notebook-exec-guard", shell("python3 -m nbconvert --execute analysis.ipynb", work, host), platform=platform))
    assert_allowed(hook("notebook-exec-guard", shell("git status", work, host), platform=platform))


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_commands_pass_every_shell_guard(work, command):
    for name in ("notebook-exec-guard", "python-run-guard"):
        assert_allowed(hook(name, shell(command, work)))


def test_the_denial_names_a_command_our_cli_accepts(work):
    """Every ``j-cli …`` line a reason names parses with the click app (every flag exists)."""
    reasons = [
        assert_denied(hook("notebook-exec-guard", shell("papermill analysis.ipynb o.ipynb", work))),
        assert_denied(hook("python-run-guard", shell("python analysis.py", work))),
        assert_denied(
            hook(
                "notebook-edit-guard",
                {"tool_name": "NotebookEdit", "tool_input": {"notebook_path": str(work / "analysis.ipynb")}, "cwd": str(work)},
            )
        ),
    ]
    assert sum(assert_jcli_lines_parse(reason) for reason in reasons) >= 3


@pytest.mark.parametrize(
    ("guard", "command", "file"),
    [
        ("notebook-exec-guard", "papermill analysis.ipynb o.ipynb", "analysis.ipynb"),
        ("notebook-exec-guard", "timeout 7200 jupyter nbconvert --to notebook --execute analysis.ipynb", "analysis.ipynb"),
        ("notebook-exec-guard", "nohup jupyter execute analysis.ipynb &", "analysis.ipynb"),
        ("python-run-guard", "python analysis.py", "analysis.py"),
        ("python-run-guard", "nohup python3 analysis.py > log.txt 2>&1 &", "analysis.py"),
    ],
    ids=["papermill", "timeout-wrapped", "nohup-backgrounded", "paired-py", "nohup-paired-py"],
)
def test_a_notebook_run_denial_teaches_the_background_run_and_its_wait(work, guard, command, file):
    """A long run the shell call would cut short (or one an agent tried to detach with nohup/&): ``--background``, then ``job wait``."""
    reason = assert_denied(hook(guard, shell(command, work)))
    lines = [line.strip() for line in reason.splitlines()]
    assert f"j-cli exec SESSION -f {file}" in lines  # the plain run stays first
    assert f"j-cli exec SESSION -f {file} --background" in lines and "j-cli job wait JOB_ID" in lines
    assert lines.index(f"j-cli exec SESSION -f {file} --background") < lines.index("j-cli job wait JOB_ID")
    assert "timed_out: true" in reason  # how the agent knows to wait again
    assert assert_jcli_lines_parse(reason) == 4  # session list, exec, exec --background, job wait: each flag exists


def assert_jcli_lines_parse(reason: str) -> int:
    """Every ``j-cli …`` line of ``reason`` parses with the click app (every flag exists); returns how many there were."""
    from jcli.cli import app

    lines = [line.strip() for line in reason.splitlines() if line.strip().startswith("j-cli ")]
    for line in lines:
        for part in line.split("&&"):
            words = shlex.split(part)
            assert words[0] == "j-cli"
            with warnings.catch_warnings():  # click 8.2 deprecates protected_args, where a group keeps its subcommand
                warnings.simplefilter("ignore", DeprecationWarning)
                ctx = app.make_context("j-cli", words[1:])
                command: click.Command = app
                while isinstance(command, click.Group):
                    name, sub, rest = command.resolve_command(ctx, [*ctx.protected_args, *ctx.args])
                    assert sub is not None and name is not None
                    ctx = sub.make_context(name, rest, parent=ctx)  # raises on an unknown flag or a missing value
                    command = sub
    return len(lines)


# -- python-run -----------------------------------------------------------------------------

RUN_BYPASSES = [
    "python analysis.py",
    "python3 analysis.py --flag",
    "python3.11 -u analysis.py",
    "python -W ignore analysis.py",
    "python -X dev -B analysis.py",
    "/usr/bin/python3 ./analysis.py",
    "cd sub && python ../analysis.py",
    "cd sub; python analysis.py",
    "uv run python analysis.py",
    "ipython analysis.py",
    "./analysis.py",
    "bash -c 'python analysis.py'",
]


@pytest.mark.parametrize("command", RUN_BYPASSES)
def test_python_run_denies_a_paired_percent_script(work, command):
    assert_denied(hook("python-run-guard", shell(command, work)), "py:percent", "j-cli exec SESSION -f")


def test_python_run_resolves_the_script_against_the_payload_cwd(work):
    assert_denied(hook("python-run-guard", shell("python analysis.py", work / "sub")), "paired with analysis.ipynb")
    assert_allowed(hook("python-run-guard", shell("python analysis.py", work / "scripts")))  # nothing there


@pytest.mark.parametrize(("host", "platform"), HOST_SHAPES)
def test_python_run_reads_every_hosts_shape(work, host, platform):
    assert_denied(hook("python-run-guard", shell("python -W ignore analysis.py", work, host), platform=platform))


# -- notebook-edit ------------------------------------------------------------------------------


def edit_payload(tool: str, path, work) -> dict:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": {key: str(path), "new_source": "x"}, "cwd": str(work)}


@pytest.mark.parametrize("tool", ["NotebookEdit", "Edit", "Write", "MultiEdit"])
def test_notebook_edit_denies_hand_edits_of_a_paired_notebook(work, tool):
    assert_denied(
        hook("notebook-edit-guard", edit_payload(tool, work / "analysis.ipynb", work)),
        "edit analysis.py instead",
        "j-cli convert py-to-ipynb analysis.py",
    )


@pytest.mark.parametrize("tool", ["NotebookEdit", "Edit", "Write"])
def test_notebook_edit_allows_a_notebook_without_a_pair_and_other_files(work, tool):
    assert_allowed(hook("notebook-edit-guard", edit_payload(tool, work / "lonely.ipynb", work)))
    assert_allowed(hook("notebook-edit-guard", edit_payload(tool, work / "analysis.py", work)))


@pytest.mark.parametrize("platform", ["codex", "opencode"])
def test_notebook_edit_denies_an_apply_patch_touching_a_paired_notebook(work, platform):
    body = '*** Begin Patch\n*** Update File: sub/analysis.ipynb\n@@\n-  "x"\n+  "y"\n*** End Patch\n'
    payload = {"hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_input": {"command": body}, "cwd": str(work)}
    assert_denied(hook("notebook-edit-guard", payload, platform=platform), "sub/analysis.py")
    plain = body.replace("sub/analysis.ipynb", "lonely.ipynb")
    assert_allowed(hook("notebook-edit-guard", {**payload, "tool_input": {"command": plain}}, platform=platform))


# -- failures never block ---------------------------------------------------------------------


@pytest.mark.parametrize("name", UPSTREAM_NAMES + ["some-future-hook"])
@pytest.mark.parametrize(
    "stdin",
    [b"", b"garbage", b"[1, 2]", b'{"tool_name": 5}', b"\xff\xfe", b'{"tool_name": "Bash", "tool_input": {"command": ["bash", 1]}}'],
)
def test_every_hook_name_answers_without_blocking_whatever_the_stdin(work, name, stdin):
    result = hook(name, None, raw=stdin)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    assert b"Traceback" not in result.stderr


def test_json_mode_gives_the_same_answer(work):
    payload = json.dumps(shell("papermill analysis.ipynb o.ipynb", work)).encode()
    plain, json_mode = (
        run_cli("_hooks", "notebook-exec-guard", stdin=payload),
        run_cli("-j", "_hooks", "notebook-exec-guard", stdin=payload),
    )
    assert (plain.returncode, plain.stdout) == (json_mode.returncode, json_mode.stdout) and json_mode.returncode == 2
    assert_allowed(run_cli("-j", "_hooks", "notebook-exec-guard", stdin=json.dumps(shell("ls", work)).encode()))


@pytest.mark.parametrize("platform", [*PLATFORMS, "vscode", None])
def test_every_platform_value_is_accepted(work, platform):
    assert_denied(hook("notebook-exec-guard", shell("papermill analysis.ipynb o.ipynb", work), platform=platform))


def test_a_file_that_cannot_be_read_allows_without_blocking(work):
    """A FIFO named like a pair's .py is never opened for a blocking read: the guard cannot tell, so it allows."""
    os.mkfifo(work / "fifo.py")
    (work / "fifo.ipynb").write_bytes((work / "analysis.ipynb").read_bytes())
    assert_allowed(hook("python-run-guard", shell("python fifo.py", work)))
    (work / "analysis.ipynb").write_text("{ not json")  # a broken notebook: the post sync says so, writes nothing
    result = drift("pair-drift-guard-post", work)
    assert result.returncode == 0 and "could not sync" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert (work / "analysis.ipynb").read_text() == "{ not json"


def test_render_is_the_one_place_that_words_a_decision():
    from jcli_sidecar.guards.hook_decision import Decision

    status, out, err = render_decision(Decision.context("synced"), "pair-drift-guard-post")
    assert (status, json.loads(out), err) == (
        0,
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "synced"}},
        "",
    )


# -- pair drift, end to end ------------------------------------------------------------------------


def notebook(work) -> dict:
    return json.loads((work / "analysis.ipynb").read_text())


def sources(nb: dict) -> list[str]:
    return ["".join(c["source"]).strip() for c in nb["cells"]]


def save(work, nb: dict) -> None:
    (work / "analysis.ipynb").write_text(json.dumps(nb, indent=1))


def give_outputs(work) -> None:
    nb = notebook(work)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": [f"out {i}\n"]}]
            cell["execution_count"] = i + 1
    save(work, nb)


def drift(name: str, work, tool: str = "Edit") -> object:
    event = "PreToolUse" if name.endswith("pre") else "PostToolUse"
    payload = {"hook_event_name": event, "tool_name": tool, "tool_input": {"file_path": str(work / "analysis.py")}, "cwd": str(work)}
    return hook(name, payload)


def edit_py(work, old: str, new: str) -> None:
    path = work / "analysis.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_an_agent_edit_of_the_py_syncs_the_notebook_keeping_outputs_of_unchanged_cells(work):
    give_outputs(work)
    assert_allowed(drift("pair-drift-guard-pre", work))
    edit_py(work, "print(x)", "print(2 * x)")
    result = drift("pair-drift-guard-post", work)
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUse" and "1 edited" in context["additionalContext"]
    nb = notebook(work)
    assert sources(nb)[-1] == "print(2 * x)" and nb["cells"][-1]["outputs"] == []
    assert nb["cells"][0]["outputs"][0]["text"] == ["out 0\n"] and nb["cells"][1]["outputs"][0]["text"] == ["out 1\n"]
    assert_allowed(drift("pair-drift-guard-post", work))  # nothing left to do: silent


def test_a_persons_notebook_edit_is_detected_and_merged_with_the_agents_edit(work):
    give_outputs(work)
    nb = notebook(work)
    nb["cells"][1]["source"] = ["x = math.tau\n"]  # a person, in JupyterLab
    save(work, nb)
    snapshot = {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()}
    assert_allowed(drift("pair-drift-guard-pre", work))  # different cells: mergeable
    assert {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()} == snapshot  # the pre check wrote nothing
    edit_py(work, "print(x)", "print(x / 2)")
    result = drift("pair-drift-guard-post", work)
    assert "merged" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert sources(notebook(work)) == ["import math", "x = math.tau", "Notes", "print(x / 2)"]
    assert notebook(work)["cells"][0]["outputs"][0]["text"] == ["out 0\n"]
    py = (work / "analysis.py").read_text()
    assert "x = math.tau" in py and "print(x / 2)" in py
    assert_allowed(drift("pair-drift-guard-pre", work))  # in agreement again
    assert_allowed(drift("pair-drift-guard-post", work))


def test_both_sides_editing_the_same_cell_is_reported_with_the_cells_and_nothing_is_overwritten(work):
    give_outputs(work)
    nb = notebook(work)
    nb["cells"][3]["source"] = ["print('person', x)\n"]
    save(work, nb)
    edit_py(work, "print(x)", "print('agent', x)")  # an edit made without the pre hook
    before = {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()}
    reason = assert_denied(drift("pair-drift-guard-pre", work), "notebook cells 3", ".py cells 3", "j-cli convert py-to-ipynb")
    assert "nothing was changed" in reason
    result = drift("pair-drift-guard-post", work)
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "did not sync" in context and "notebook cells 3" in context
    assert {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()} == before


def test_a_codex_apply_patch_of_the_py_syncs_the_notebook(work):
    edit_py(work, "import math", "import math, os")
    body = "*** Begin Patch\n*** Update File: analysis.py\n@@\n-import math\n+import math, os\n*** End Patch\n"
    payload = {
        "hook_event_name": "PostToolUse",
        "tool_name": "apply_patch",
        "tool_input": {"command": body},
        "tool_response": "",
        "cwd": str(work),
    }
    result = hook("pair-drift-guard-post", payload, platform="codex")
    assert "synced" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert sources(notebook(work))[0] == "import math, os"


def test_pair_drift_leaves_unpaired_files_alone(work):
    payload = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(work / "markers_only.py")},
        "cwd": str(work),
    }
    assert_allowed(hook("pair-drift-guard-post", payload))
    assert not (work / "markers_only.ipynb").exists()


# -- speed: what the unrelated path imports ---------------------------------------------------------

HEAVY = {"click", "nbformat", "mcp", "bashlex", "asyncio", "psutil"}


def imported(name: str, payload: dict) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", JCLI, "_hooks", name],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
    )
    lines = [line for line in proc.stderr.decode().splitlines() if line.startswith("import time:")]
    assert lines
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in lines}


def test_an_unrelated_or_plain_command_is_decided_without_the_parser_click_or_nbformat(work):
    for name, command in [
        ("notebook-exec-guard", "make -j4 && git status"),
        ("notebook-exec-guard", "python -m pytest -q"),
        ("python-run-guard", "python -m pytest -q"),
        ("python-run-guard", "ls *.txt && rm -rf build/* && grep -r foo src/{a,b}"),
        ("python-run-guard", "python -c 'import json, os'"),
    ]:
        modules = imported(name, shell(command, work))
        assert not modules & HEAVY, (name, command, modules & HEAVY)
        assert "jcli_sidecar" in modules  # the hook really ran in this process
    plain = imported("notebook-exec-guard", shell("papermill analysis.ipynb o.ipynb", work))
    assert not plain & HEAVY, "one simple command of plain words is read without the parser"
    quoted = imported("notebook-exec-guard", shell("cd sub && papermill 'analysis.ipynb' o.ipynb", work))
    assert "bashlex" in quoted and not quoted & (HEAVY - {"bashlex"})


def test_upstreams_second_entry_point_j_cli_hook_is_j_cli_hooks(tmp_path):
    """``j-cli-hook NAME ...`` (the program upstream's pair-drift entries call) answers as ``j-cli _hooks NAME ...``."""
    import subprocess

    from helpers import BIN

    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "papermill a.ipynb b.ipynb"}, "cwd": str(tmp_path)}).encode()
    via_entry = subprocess.run([str(BIN / "j-cli-hook"), "notebook-exec-guard"], input=payload, capture_output=True)
    via_jcli = subprocess.run([str(BIN / "j-cli"), "_hooks", "notebook-exec-guard"], input=payload, capture_output=True)
    assert via_entry.returncode == via_jcli.returncode == 2
    assert via_entry.stdout == via_jcli.stdout and b"j-cli exec" in via_entry.stdout
    for name in ("pair-drift-guard-pre", "pair-drift-guard-post", "nosuch"):
        quiet = subprocess.run([str(BIN / "j-cli-hook"), name, "--platform", "codex"], input=b"{}", capture_output=True)
        assert quiet.returncode == 0 and quiet.stdout == b"", (name, quiet.stderr)


# -- one registry: the entry point, setup's hook entries and both plugins follow it ------------


def _plugin_table(source: str) -> dict[str, dict[str, list[str]]]:
    """The guard lists a plugin keeps, read from its hooksBefore/hooksAfter."""
    import re

    def names(text: str) -> list[str]:
        return re.findall(r"""['"]([a-z-]+-guard[a-z-]*)['"]""", text)

    before = source[source.index("function hooksBefore") :]
    before = before[: before.index("\n}\n")]
    after = source[source.index("function hooksAfter") :]
    after = after[: after.index("\n}\n")]
    shell = re.search(r"SHELL_TOOLS\.has\(\w+\)\) return (\[.*?\])", before)
    edit = re.search(r"EDIT_TOOLS\.has\(\w+\)\) return (\[.*?\])", before)
    assert shell and edit and "SHELL_TOOLS" not in after, "the plugin's guard lists changed shape"
    return {"before": {"shell": names(shell.group(1)), "edit": names(edit.group(1))}, "after": {"shell": [], "edit": names(after)}}


@pytest.mark.parametrize("host", ["opencode", "dsh"])
def test_each_plugin_runs_the_guards_the_registry_lists(host):
    from jcli.plugins import plugin_path
    from jcli_sidecar.guards.registry import guard_table

    with open(plugin_path(host), encoding="utf-8") as fh:
        assert _plugin_table(fh.read()) == guard_table()


def test_setup_installs_the_registrys_guards_for_each_event():
    from jcli.setup.hook_entries import groups
    from jcli_sidecar.guards.registry import GUARDS

    for host in ("claude", "codex"):
        installed = groups(host, "--project")
        names = [h["_jcli_guard"].split(" ")[0] for event in installed.values() for g in event for h in g["hooks"]]
        assert names == [name for name, g in GUARDS.items() if g.event is not None]
        assert {h["_jcli_guard"].split(" ")[0] for g in installed["PostToolUse"] for h in g["hooks"]} == {
            name for name, g in GUARDS.items() if g.event == "after"
        }


def test_every_registered_name_answers_and_its_help_is_its_doc():
    from jcli_sidecar.guards.registry import GUARDS

    for name, entry in GUARDS.items():
        result = run_cli("_hooks", name, "--help")
        assert result.returncode == 0 and entry.doc in result.stdout.decode()
