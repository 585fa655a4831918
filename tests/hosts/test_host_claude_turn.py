"""A whole Claude Code turn, driven by a scripted model: what the model receives.

The real ``claude`` (pinned in tests/hosts) runs ``claude -p`` against the
scripted model server (``tests/hosts/model_server.py``, Anthropic Messages) through
``ANTHROPIC_BASE_URL``, in a project ``j-cli setup claude`` prepared, with the
approval an interactive ``claude`` records (``test_host_claude.approve``).
The tests assert on the requests the model server received.

What Claude Code 2.1.332 does (found by running it):

- MCP tools are deferred: the first request names ``mcp__jcli__...`` in the
  system text but does not offer them; the model calls ``ToolSearch`` with
  ``select:<name>``, whose result is a ``tool_reference`` block, and the next
  request offers the tool;
- an MCP image comes back inside the ``tool_result`` as an ``image`` block
  (base64 source, the exact bytes), followed by a text block Claude Code adds,
  ``[Image: source: ~/.claude/projects/<project>/<session>/tool-results/<name>]``
  (the copy it keeps on disk), then j-cli's caption;
- a PreToolUse hook that denies (exit 2, the decision on stdout) refuses the
  call: the ``tool_result`` is an error whose one text is
  ``PreToolUse:Bash hook error: `` and the decision's reason;
- ``claude -p`` runs only the tools a turn allows (``--allowedTools``); any
  other is refused with a text the model reads. As root,
  ``--permission-mode bypassPermissions`` is refused.

Offline: ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` switches off updates,
telemetry, error reports and the other fetches, and
``test_a_claude_turn_connects_to_nothing_but_loopback`` traces every
``connect``/``sendto`` of the host (``strace``) to prove it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from claude_world import FINAL, claude_turn, project_setup, run_claude, setup_claude
from helpers import CHART_RENDERED_FROM, load_cases, requires_charts_extra, run_cli, shows_the_chart_bars, write_chart_notebook
from model_server import Say, ScriptedModel, Seen, ToolCall, base64_leaks

READ = "mcp__jcli__read_notebook_output"
LOAD = ToolCall("ToolSearch", {"query": f"select:{READ}"})
CASES = {case["name"]: case for case in load_cases()}
#: Claude Code's own text block after an MCP image: where it saved its copy.
CLAUDE_IMAGE_NOTE = re.compile(r"\[Image: source: (?P<path>/.+/tool-results/[^/\]]+)\]")


def stored_image(notebook: Path, cell: int, output: int, mime: str) -> bytes:
    with open(notebook, encoding="utf-8") as fh:
        data = json.load(fh)["cells"][cell]["outputs"][output]["data"][mime]
    return base64.b64decode("".join(data) if isinstance(data, list) else data)


def no_base64_anywhere(model: ScriptedModel, data: bytes) -> None:
    for seen in model.requests:
        assert base64_leaks(seen, data) == []


def offered(seen: Seen) -> set[str]:
    return {tool["name"] for tool in seen.body.get("tools", [])}


def raw_tool_result(seen: Seen, tool_use_id: str) -> dict:
    blocks = [b for m in seen.body["messages"] if isinstance(m.get("content"), list) for b in m["content"]]
    return next(b for b in blocks if b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id)


def read_script(*requests: dict) -> list:
    return [LOAD, *(ToolCall(READ, request) for request in requests), Say(FINAL)]


# ---- an image read: one image part, the notebook's exact bytes ------------------------------


# A PNG stored wrapped at 76 columns is not repeated here: j-cli reads it to the same envelope
# (tests/read/test_reader.py), and it reaches an MCP host's model as the exact bytes
# (tests/hosts/test_host_mcp_inspector.py); past the read, Claude Code sees the same bytes as "png".
@pytest.mark.parametrize("case", ["png", "jpeg"])
def test_the_model_receives_the_notebook_image_as_one_image_part_with_its_exact_bytes(host_bin, home, project, case):
    project_setup(home, project)
    request = CASES[case]["request"]
    selected = CASES[case]["expect"]["envelope"]["selected"]
    notebook = project / request["file_path"]
    expected = stored_image(notebook, request["cell_index"], request["output_index"], selected["mime_type"])
    assert len(expected) == selected["bytes"]

    model, shown = run_claude(host_bin, home, project, read_script(request), [READ], "--output-format", "stream-json", "--verbose")

    first, loaded, after = model.turn
    assert READ not in offered(first) and any(READ in p.text for p in first.texts())  # deferred: named, not offered
    assert READ in offered(loaded) and [p.text for p in loaded.tool_results[0]] == [READ]  # ToolSearch loaded it
    assert [p.kind for p in first.parts + loaded.parts if p.kind == "image"] == []
    images = after.images()
    assert len(images) == 1, [(p.role, p.mime) for p in images]
    image = images[0]
    assert image.data == expected and image.mime == selected["mime_type"]
    assert image.role == "tool" and image.tool_call_id == "toolu_1"  # inside the read's tool_result
    result = after.tool_results[-1]
    assert [p.kind for p in result] == ["image", "text", "text"]
    saved = CLAUDE_IMAGE_NOTE.fullmatch(result[1].text)
    assert saved is not None, result[1].text
    assert Path(saved["path"]).read_bytes() == expected
    assert list(home.glob(".claude/projects/*/*/tool-results/*")) == [Path(saved["path"])]  # Claude Code's own copy
    label = f"{os.path.realpath(notebook)} cell {request['cell_index']} output 0"
    assert result[2].text.startswith(f"[{selected['mime_type']} from {label}; {len(expected)} bytes"), result[2].text
    no_base64_anywhere(model, expected)
    events = [json.loads(line) for line in shown.splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["result"] == FINAL  # what `claude -p` prints: the model's last words
    streamed = [b for e in events if e["type"] == "user" for b in e["message"]["content"] if b.get("tool_use_id") == "toolu_1"]
    assert [b["content"] for b in streamed] == [raw_tool_result(after, "toolu_1")["content"]]  # the stream shows what the model got


@requires_charts_extra
def test_a_chart_read_with_as_reaches_the_model_as_one_rendered_image_part(host_bin, home, project):
    project_setup(home, project)
    write_chart_notebook(project / "chart.ipynb")
    request = {"file_path": "chart.ipynb", "cell_index": 0, "output_index": 0, "as_mime_type": "image/png"}

    model, _ = run_claude(host_bin, home, project, read_script(request), [READ])

    after = model.turn[-1]
    images = after.images()
    assert len(images) == 1 and images[0].mime == "image/png" and images[0].role == "tool"
    assert shows_the_chart_bars(images[0].data)
    result = after.tool_results[-1]
    assert [p.kind for p in result][0] == "image" and CHART_RENDERED_FROM in result[-1].text


def test_without_an_allow_rule_claude_p_does_not_run_the_read_and_the_model_is_told_why(host_bin, home, project):
    """``claude -p`` asks no one: a tool the turn does not allow is refused, and the model reads that, not an image."""
    project_setup(home, project)
    model = claude_turn(host_bin, home, project, read_script(CASES["png"]["request"]), "Bash")

    refused = model.turn[-1].tool_results[-1]
    assert [p.text for p in refused] == [f"Claude requested permissions to use {READ}, but you haven't granted it yet."]
    assert all(seen.images() == [] for seen in model.requests)


# ---- offline: the host reaches nothing but loopback ----------------------------------------

#: An address in strace's rendering of a connect/sendto/sendmsg: IPv4 ``inet_addr("A")``, IPv6 ``inet_pton(AF_INET6, "A"``.
TRACED_ADDRESS = re.compile(r'inet_addr\("(?P<v4>[^"]+)"\)|inet_pton\(AF_INET6, "(?P<v6>[^"]+)"')


def test_a_claude_turn_connects_to_nothing_but_loopback(host_bin, home, project, tmp_path):
    """Every socket address the host and its children send to during an image read is loopback (or a Unix socket)."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed: the loopback-only proof needs it")
    project_setup(home, project)
    trace = tmp_path / "trace"
    prefix = [strace, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(trace)]
    model = claude_turn(host_bin, home, project, read_script(CASES["png"]["request"]), READ, prefix=prefix)

    assert len(model.turn) == 3  # the whole turn was traced
    found = [m["v4"] or m["v6"] for m in TRACED_ADDRESS.finditer(trace.read_text())]
    port = model.url.rsplit(":", 1)[1]
    assert "127.0.0.1" in found and f"sin_port=htons({port})" in trace.read_text()  # the control: the model server is seen
    assert all(address in ("127.0.0.1", "::1") for address in found), sorted(set(found))


# ---- text outputs come back verbatim ------------------------------------------------------


def expected_text(case: str) -> str:
    envelope = CASES[case]["expect"]["envelope"]
    return (envelope.get("selected") or envelope["stream"])["data"]


def test_html_and_stream_outputs_reach_the_model_verbatim_through_user_scope(host_bin, home, project):
    """``setup claude --user`` (``~/.claude.json``, no approval needed): each read's first text part is the output itself."""
    server = setup_claude(project, "--user")["server"]
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["jcli"]["command"] == server["command"]
    cases = ["html", "stream_stdout", "stream_stderr"]
    model = claude_turn(host_bin, home, project, read_script(*(CASES[c]["request"] for c in cases)), READ)

    last = model.turn[-1]
    results = last.tool_results[1:]  # after ToolSearch's
    assert len(results) == len(cases)
    for case, result in zip(cases, results, strict=True):
        assert [p.kind for p in result] == ["text", "text"], case
        assert result[0].text == expected_text(case), case
        request = CASES[case]["request"]
        label = f"{os.path.realpath(project / request['file_path'])} cell {request['cell_index']} output {request['output_index']}"
        assert label in result[1].text, result[1].text
    assert last.images() == []


# ---- the guard refuses a notebook run through Claude's Bash tool -------------------------


def guard_reason(guard: str, command: str, project: Path) -> str:
    """The reason j-cli's guard gives for ``command`` (its decision on stdout), asked directly."""
    payload = {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(project)}
    asked = run_cli("_hooks", guard, "--platform", "claude", cwd=project, stdin=json.dumps(payload).encode())
    assert asked.returncode == 2, asked.stderr
    return json.loads(asked.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("command", "guard", "instead"),
    [
        ("touch ran-marker && jupyter nbconvert --execute a.ipynb", "notebook-exec-guard", "j-cli exec SESSION -f a.ipynb"),
        ("touch ran-marker && python a.py", "python-run-guard", "j-cli exec SESSION -f a.py"),
        ("bash -c 'touch ran-marker; jupyter nbconvert --to notebook --execute a.ipynb'", "notebook-exec-guard", "-f a.ipynb"),
    ],
    ids=["nbconvert", "paired-py", "nested-shell"],
)
def test_the_guard_refuses_a_notebook_run_in_bash_and_the_model_reads_why(host_bin, home, project, command, guard, instead):
    project_setup(home, project)
    (project / "a.py").write_text('# %%\nprint("ran")\n')
    assert run_cli("convert", "py-to-ipynb", "a.py", cwd=project).returncode == 0
    script = [ToolCall("Bash", {"command": command}), ToolCall("Bash", {"command": "touch control-marker"}), Say(FINAL)]

    model = claude_turn(host_bin, home, project, script, "Bash")

    assert not (project / "ran-marker").exists()  # refused before any of it ran
    assert (project / "control-marker").exists()  # the same Bash tool runs what no guard refuses
    after = model.turn[-1]
    refusal = after.tool_results[0]
    reason = guard_reason(guard, command, project)
    assert instead in reason and "j-cli session create" in reason
    assert [p.text for p in refusal] == [f"PreToolUse:Bash hook error: {reason}"]  # the decision's reason, as j-cli wrote it
    assert raw_tool_result(after, "toolu_0").get("is_error") is True
    assert raw_tool_result(after, "toolu_1").get("is_error") in (None, False)


# ---- an inline run through Bash: the model reads its paths, never an image -------------------

PLOT = "import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); plt.show()"


def saved_pngs(text: str, project: Path, json_form: bool) -> list[Path]:
    """The PNG files the run's answer names: each output's path (``-j``), else those in the outputs dir it names."""
    outputs = Path(os.path.realpath(project)) / ".j-cli" / "outputs"
    if json_form:
        doc = json.loads(text)
        assert doc["status"] == "ok" and Path(doc["run"]["manifest"]).is_file(), doc
        images = [o for o in doc["outputs"] if o["type"] == "image"]
        assert [o["mime"] for o in images] == ["image/png"] and all(o["bytes"] == Path(o["path"]).stat().st_size for o in images)
        paths = [Path(o["path"]) for o in images]
    else:
        kept = re.search(r"^\[outputs kept in (?P<dir>/.+)\]$", text, re.M)
        assert kept is not None, text
        paths = sorted(Path(kept["dir"]).glob("*.png"))
    assert len(paths) == 1 and paths[0].parent.parent == outputs, paths
    return paths


@pytest.mark.parametrize("json_form", [True, False], ids=["json", "human"])
def test_an_inline_plot_run_through_bash_gives_the_model_its_paths_and_no_image(
    host_bin, home, project, use_jupyter, kernel_session, json_form
):
    """The skill's ``j-cli -j exec S -c <plot>`` (and the human form): the PNG stays on disk, its path reaches the model."""
    setup_claude(project, "--user")
    command = f'j-cli {"-j " if json_form else ""}exec {kernel_session} -c "{PLOT}"'
    model = claude_turn(host_bin, home, project, [ToolCall("Bash", {"command": command}), Say(FINAL)], "Bash")

    after = model.turn[-1]
    (result,) = after.tool_results
    assert [p.kind for p in result] == ["text"] and all(seen.images() == [] for seen in model.requests)
    text = result[0].text
    (png,) = saved_pngs(text, project, json_form)
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert "iVBOR" not in text
    no_base64_anywhere(model, data)


# ---- a model that takes no images: `mcp serve --text-only` ------------------------------------


def serve_text_only(home, project, scope: str) -> None:
    """Set up ``scope``, then add ``--text-only`` to the server's args in the file setup wrote, as a user edits it."""
    if scope == "--project":
        project_setup(home, project)
        config = project / ".mcp.json"
    else:
        setup_claude(project, scope)
        config = home / ".claude.json"
    doc = json.loads(config.read_text())
    doc["mcpServers"]["jcli"]["args"].append("--text-only")
    config.write_text(json.dumps(doc, indent=2))


# The local scope is not repeated: its entry is the user scope's, under the project's key in the
# same ~/.claude.json, and Claude Code loading it from there is
# tests/hosts/test_host_claude.py::test_claude_lists_and_gets_our_server_and_its_health_check_connects[--local].
@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_a_text_only_server_tells_the_model_what_the_image_is_and_how_to_read_its_text(host_bin, home, project, scope):
    serve_text_only(home, project, scope)
    request = CASES["png"]["request"]
    notebook = project / request["file_path"]
    png = stored_image(notebook, 2, 0, "image/png")
    plain = "".join(json.loads(notebook.read_text())["cells"][2]["outputs"][0]["data"]["text/plain"])
    script = read_script(request, {**request, "mime_type": "text/plain"})  # the model follows the caption

    model = claude_turn(host_bin, home, project, script, READ)

    assert all(seen.images() == [] for seen in model.requests)
    told, text_form = model.turn[-1].tool_results[1:]
    assert [p.kind for p in told] == ["text"]  # the caption alone: no image, and nothing Claude Code adds for one
    caption = told[0].text
    label = f"{os.path.realpath(notebook)} cell 2 output 0"
    assert caption.startswith(f"[image/png from {label}; {len(png)} bytes, 150x100 px; ")  # what, its size, where
    assert "not sent: the model takes no image input" in caption  # why
    assert f"its text forms: text/plain ({len(plain.encode())} bytes); read one with mime_type='text/plain'" in caption  # how
    assert text_form[0].text == plain
    no_base64_anywhere(model, png)
    assert not list(home.glob(".claude/projects/*/*/tool-results/*"))  # Claude Code kept no image copy either
