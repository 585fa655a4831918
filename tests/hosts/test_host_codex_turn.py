"""A whole Codex turn: ``codex exec`` (pinned 0.171.0) talks to a scripted model, and the test reads what the model received.

The model is ``tests/hosts/model_server.py`` on loopback, reached through a custom
``model_providers`` entry (``wire_api = "responses"``). Nothing else goes
out: ``analytics.enabled = false`` (else Codex resolves its analytics host),
``features.plugins = false`` (else the plugin marketplace sync starts), and
the custom provider needs no login. j-cli comes in through setup's real
files: ``j-cli setup codex --project`` in a project the user config trusts,
or ``j-cli setup codex`` (user scope, ``$CODEX_HOME/config.toml``).

Which tools the model gets depends on the model's entry in Codex's bundled
catalog, not on any j-cli setting:

- a catalog model whose ``tool_mode`` is null (``gpt-5.5``) gets ordinary
  function tools, with MCP tools deferred: the model calls ``tool_search``,
  Codex answers a ``tool_search_output`` holding the ``mcp__jcli``
  namespace, and the model then calls ``read_notebook_output`` in that
  namespace (a ``function_call`` with ``namespace``);
- a catalog model whose ``tool_mode`` is ``code_mode_only`` (``gpt-5.6-*``,
  every ``gpt-6*``, Codex's default model) gets no ``tools`` at all: an
  ``additional_tools`` input item offers a freeform ``exec`` tool that runs
  the model's JavaScript, where MCP tools are ``tools.mcp__jcli__*``. An
  image reaches the model only when the script passes it to ``image()``;
- a model missing from the catalog (fallback metadata) gets the
  ``mcp__jcli`` namespace directly in ``tools``.

Codex runs a hook only once the user has trusted that hook's exact
definition (``/hooks`` records ``[hooks.state."<key>"] trusted_hash`` in the
user config); until then it skips the hook without a word. The guard tests
trust them as ``/hooks`` does, with the hash Codex's own ``hooks/list``
reports.
"""

from __future__ import annotations

import json
import os

import pytest
from codex_world import CodexWorld, notebook_png, protocol_case
from helpers import CHART_RENDERED_FROM, requires_charts_extra, run_cli, shows_the_chart_bars, write_chart_notebook
from model_server import Say, ScriptedModel, Seen, ToolCall, base64_leaks

from jcli.mcp_tools import CODE_MODE_IMAGE, TEXT_ONLY_IMAGE

#: A catalog model with ordinary tools: MCP tools are found through tool_search.
DIRECT_MODEL = "gpt-5.5"
#: A catalog model in code mode only: every tool is reached from the exec tool's JavaScript.
CODE_MODEL = "gpt-6.2-sol"
NAMESPACE = "mcp__jcli"
READ_TOOLS = {"read_notebook_output", "read_run_output"}  # the tools that may answer an image
TOOLS = READ_TOOLS | {"notebook_grep", "job_status", "job_wait"}

PNG_READ = {"file_path": "kernel_v4.5.ipynb", "cell_index": 2, "output_index": 0}


def _search() -> ToolCall:
    return ToolCall("tool_search", {"query": "read notebook output", "limit": 8}, {"type": "tool_search_call"})


def _read(arguments: dict) -> ToolCall:
    return ToolCall("read_notebook_output", arguments, {"namespace": NAMESPACE})


def _shell(command: str, **options) -> ToolCall:
    return ToolCall("exec_command", {"cmd": command, **options})


def _script(source: str) -> ToolCall:
    """Code mode: the model runs ``source`` with Codex's freeform ``exec`` tool."""
    return ToolCall("exec", {"input": source}, {"type": "custom_tool_call"})


@pytest.fixture
def codex(codex_world):
    """The Codex world (``tests/hosts/conftest.py``), configured by each test for its scripted model."""
    return codex_world


def _tool_result(seen: Seen, index: int = -1):
    """The parts of one tool result in the request (the last one by default)."""
    return seen.tool_results[index]


def _only_image(seen: Seen, expected: bytes):
    (image,) = seen.images()
    assert image.role == "tool" and image.mime == "image/png"
    assert image.data == expected
    assert base64_leaks(seen, expected) == []
    return image


# -- (a) an image read reaches the model as one image part ------------------------------------


@pytest.mark.parametrize("scope", [("--project",), ()], ids=["project", "user"])
def test_a_direct_tool_read_gives_the_model_one_image_part_with_the_notebook_bytes(codex, scope):
    with ScriptedModel([_search(), _read(PNG_READ), Say("seen")]) as model:
        codex.configure(model, DIRECT_MODEL)
        codex.setup(*scope)
        codex.exec()
    first, found, after = model.turn
    assert not any(t.get("type") == "namespace" for t in first.body["tools"])  # deferred: only tool_search finds it
    assert any(t.get("type") == "tool_search" for t in first.body["tools"])
    (listing,) = _tool_result(found)
    namespaces = json.loads(listing.text)
    assert [ns["name"] for ns in namespaces] == [NAMESPACE]
    assert READ_TOOLS <= {t["name"] for t in namespaces[0]["tools"]} <= TOOLS  # what matches the search's query
    expected = notebook_png(codex.project / "kernel_v4.5.ipynb")
    image = _only_image(after, expected)
    result = _tool_result(after)
    assert image in result
    assert [p.kind for p in result] == ["text", "image", "text"]  # Codex's "Wall time" line, the image, j-cli's note
    notebook = os.path.realpath(codex.project / "kernel_v4.5.ipynb")
    assert result[2].text == f"[image/png from {notebook} cell 2 output 0; {len(expected)} bytes, 150x100 px]"


@requires_charts_extra
def test_a_direct_tool_read_of_a_chart_with_as_gives_the_model_one_rendered_image_part(codex):
    write_chart_notebook(codex.project / "chart.ipynb")
    chart = {"file_path": "chart.ipynb", "cell_index": 0, "output_index": 0, "as_mime_type": "image/png"}
    with ScriptedModel([_search(), _read(chart), Say("seen")]) as model:
        codex.configure(model, DIRECT_MODEL)
        codex.setup("--project")
        codex.exec()
    after = model.turn[-1]
    (image,) = after.images()
    assert image.role == "tool" and image.mime == "image/png"
    assert shows_the_chart_bars(image.data)
    assert base64_leaks(after, image.data) == []
    result = _tool_result(after)
    assert image in result
    assert [p.kind for p in result] == ["text", "image", "text"]  # Codex's "Wall time" line, the image, j-cli's note
    notebook = os.path.realpath(codex.project / "chart.ipynb")
    assert result[2].text.startswith(f"[image/png from {notebook} cell 0 output 0; ") and CHART_RENDERED_FROM in result[2].text, result[
        2
    ].text


def test_a_model_outside_codex_catalog_gets_the_namespace_at_once_and_the_same_image(codex):
    """No catalog entry (fallback metadata): no tool_search, the mcp__jcli namespace is in ``tools`` from the start."""
    with ScriptedModel([_read(PNG_READ), Say("seen")]) as model:
        codex.configure(model, "jcli-test-model")
        codex.setup("--project")
        codex.exec()
    first, after = model.turn
    (namespace,) = [t for t in first.body["tools"] if t.get("type") == "namespace" and t["name"] == NAMESPACE]
    assert {t["name"] for t in namespace["tools"]} == TOOLS
    _only_image(after, notebook_png(codex.project / "kernel_v4.5.ipynb"))


# -- (b) HTML and a stream come back verbatim ----------------------------------------------------


def test_b_html_and_a_stream_reach_the_model_verbatim(codex):
    html, stream = protocol_case("html"), protocol_case("stream_stdout")
    with ScriptedModel([_search(), _read(html["request"]), _read(stream["request"]), Say("seen")]) as model:
        codex.configure(model, DIRECT_MODEL)
        codex.setup("--project")
        codex.exec()
    last = model.turn[-1]
    assert last.images() == []
    notebook = os.path.realpath(codex.project / "kernel_v4.5.ipynb")
    got_html, got_stream = last.tool_results[1], last.tool_results[2]
    assert [p.text for p in got_html[1:]] == [
        html["expect"]["envelope"]["selected"]["data"],
        f"[text/html from {notebook} cell 5 output 0]",
    ]
    assert [p.text for p in got_stream[1:]] == [
        stream["expect"]["envelope"]["stream"]["data"],
        f"[stdout stream from {notebook} cell 1 output 0]",
    ]
    assert got_html[0].text.startswith("Wall time: ") and got_stream[0].text.startswith("Wall time: ")


# -- (c) the guard refuses a notebook run outside j-cli ------------------------------------------


def _paired_notebook(codex: CodexWorld) -> None:
    (codex.project / "a.py").write_text("# %%\nprint(1)\n")
    made = run_cli("convert", "py-to-ipynb", "a.py", cwd=codex.project, env=codex.env)
    assert made.returncode == 0, made.stderr


@pytest.mark.parametrize(
    ("command", "guard"),
    [
        ("touch ran-marker && jupyter nbconvert --execute a.ipynb", "notebook-exec-guard"),
        ("touch ran-marker && bash -c 'jupyter nbconvert --to notebook --execute a.ipynb'", "notebook-exec-guard"),
        ("touch ran-marker && python a.py", "python-run-guard"),
    ],
    ids=["nbconvert", "nested-shell", "paired-py"],
)
def test_c_a_trusted_guard_refuses_the_shell_command_and_the_model_reads_why(codex, command, guard):
    with ScriptedModel([_shell(command), Say("seen")]) as model:
        codex.configure(model, DIRECT_MODEL)
        codex.setup("--project")
        _paired_notebook(codex)
        trusted = codex.trust_hooks()
        assert {h["command"].split()[2] for h in trusted} >= {"notebook-exec-guard", "python-run-guard"}
        codex.exec()
    assert not (codex.project / "ran-marker").exists()
    (refusal,) = _tool_result(model.turn[-1])
    assert refusal.text.startswith(f"Command blocked by PreToolUse hook: {guard}: "), refusal.text
    assert "j-cli exec SESSION -f a." in refusal.text


def test_c_an_untrusted_guard_is_skipped_by_codex_and_the_command_runs(codex):
    """Codex 0.171.0 runs no hook the user has not trusted, and says nothing: setup alone does not guard."""
    with ScriptedModel([_shell("touch ran-marker && jupyter nbconvert --execute a.ipynb"), Say("seen")]) as model:
        codex.configure(model, DIRECT_MODEL)
        codex.setup("--project")
        _paired_notebook(codex)
        codex.exec()
    assert (codex.project / "ran-marker").exists()
    (result,) = _tool_result(model.turn[-1])
    assert "blocked" not in result.text and "j-cli exec" not in result.text


# -- (d) an inline run through the shell: the model gets paths, not an image -----------------------

PLOT = "import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); plt.show()"

#: What lets the model's shell reach a kernel: Codex's default sandbox (workspace-write) refuses every connect.
SANDBOXES = {
    "workspace-write+network": "[sandbox_workspace_write]\nnetwork_access = true\n",
    "danger-full-access": 'sandbox_mode = "danger-full-access"\napproval_policy = "never"\n',
}


def _inline_run(codex: CodexWorld, jupyter, session: str, sandbox: str):
    codex.env.update(JCLI_JUPYTER_SERVER_URL=jupyter["url"], JCLI_JUPYTER_SERVER_TOKEN=jupyter["token"])
    # login=False: a login shell re-reads /etc/profile, whose PATH has no j-cli in this test's HOME
    with ScriptedModel([_shell(f"j-cli exec {session} -c {json.dumps(PLOT)}", login=False), Say("seen")]) as model:
        codex.configure(model, DIRECT_MODEL, sandbox)
        codex.setup("--project")
        codex.exec()
    last = model.turn[-1]
    (result,) = _tool_result(last)
    return last, result.text


@pytest.mark.parametrize("sandbox", list(SANDBOXES))
def test_d_an_inline_run_through_the_shell_gives_the_model_the_run_paths_and_no_image(codex, jupyter, kernel_session, sandbox):
    last, text = _inline_run(codex, jupyter, kernel_session, SANDBOXES[sandbox])
    outputs = codex.project / ".j-cli" / "outputs"
    (run,) = [entry for entry in outputs.iterdir() if not entry.name.startswith(".")]
    assert f"[outputs kept in {os.path.realpath(run)}]" in text, text
    assert "<Figure size 640x480 with 1 Axes>" in text and "Process exited with code 0" in text
    manifest = json.loads((run / "manifest.json").read_text())
    (png,) = [run / f for f in manifest["files"] if f.endswith(".png")]
    assert last.images() == []
    assert base64_leaks(last, png.read_bytes()) == []


def test_d_codex_default_sandbox_refuses_the_kernel_connection(codex, jupyter, kernel_session):
    """Codex's workspace-write sandbox without network: the run never starts, and the model reads why."""
    last, text = _inline_run(codex, jupyter, kernel_session, "")
    assert "[SERVER_UNAVAILABLE]" in text and "Operation not permitted" in text, text
    assert not (codex.project / ".j-cli" / "outputs").exists()
    assert last.images() == []


# -- (e) code mode: the model sees an image only through image(); a text-only model sees none ----------

READ_JS = f"const r = await tools.{NAMESPACE}__read_notebook_output({json.dumps(PNG_READ)});\n"


def test_e_in_code_mode_a_script_passing_the_image_to_image_gives_the_model_the_notebook_bytes(codex):
    with ScriptedModel([_script(READ_JS + "image(r.content[0]);\ntext(r.content[1].text);\n"), Say("seen")]) as model:
        codex.configure(model, CODE_MODEL)
        codex.setup("--project")
        codex.exec()
    first, after = model.turn
    assert "tools" not in first.body  # code mode: the tools come in an additional_tools item
    expected = notebook_png(codex.project / "kernel_v4.5.ipynb")
    _only_image(after, expected)
    result = _tool_result(after)
    assert [p.kind for p in result] == ["text", "image", "text"]
    assert result[0].text.startswith("Script completed")
    assert result[2].text.startswith("[image/png from ")


def test_e_in_code_mode_a_script_that_does_not_pass_the_image_on_gives_the_model_base64_text(codex):
    """Codex 0.171.0's structural limit: a tool result the script prints is JSON text, its image base64 in it."""
    with ScriptedModel([_script(READ_JS + "text(r);\n"), Say("seen")]) as model:
        codex.configure(model, CODE_MODEL)
        codex.setup("--project")
        codex.exec()
    after = model.turn[-1]
    assert after.images() == []
    assert base64_leaks(after, notebook_png(codex.project / "kernel_v4.5.ipynb")) != []


def test_e_in_code_mode_the_tool_description_tells_the_model_to_pass_the_image_to_image(codex):
    listing = "text(JSON.stringify(ALL_TOOLS.filter((t) => t.name.includes('jcli'))));\n"
    with ScriptedModel([_script(listing), Say("seen")]) as model:
        codex.configure(model, CODE_MODEL)
        codex.setup("--project")
        codex.exec()
    (_, described) = _tool_result(model.turn[-1])
    tools = {t["name"]: t["description"].split("\n\n")[0] for t in json.loads(described.text)}
    assert set(tools) == {f"{NAMESPACE}__{name}" for name in TOOLS}
    assert all(tools[f"{NAMESPACE}__{name}"].endswith(CODE_MODE_IMAGE) for name in READ_TOOLS), tools


def _text_only(codex: CodexWorld) -> None:
    """What a user writes for a model that takes no image input: ``--text-only`` on setup's server command."""
    config = codex.project / ".codex" / "config.toml"
    text = config.read_text()
    assert '"--host", "codex"]' in text, text
    config.write_text(text.replace('"--host", "codex"]', '"--host", "codex", "--text-only"]'))


def test_e_a_text_only_server_gives_the_model_no_image_and_says_what_the_image_is(codex):
    with ScriptedModel([_search(), _read(PNG_READ), Say("seen")]) as model:
        codex.configure(model, DIRECT_MODEL)
        codex.setup("--project")
        _text_only(codex)
        codex.exec()
    _, found, after = model.turn
    described = {t["name"]: t["description"] for t in json.loads(_tool_result(found)[0].text)[0]["tools"]}
    assert all(described[name].endswith(TEXT_ONLY_IMAGE) for name in READ_TOOLS), described
    assert after.images() == []
    expected = notebook_png(codex.project / "kernel_v4.5.ipynb")
    assert base64_leaks(after, expected) == []
    wall, caption = _tool_result(after)
    notebook = os.path.realpath(codex.project / "kernel_v4.5.ipynb")
    assert wall.text.startswith("Wall time: ")
    assert caption.text.startswith(f"[image/png from {notebook} cell 2 output 0; {len(expected)} bytes, 150x100 px; not sent: "), (
        caption.text
    )
    assert "text/plain" in caption.text and "mime_type='text/plain'" in caption.text


def test_e_a_text_only_server_in_code_mode_gives_the_script_only_the_caption(codex):
    with ScriptedModel([_script(READ_JS + "text(r);\n"), Say("seen")]) as model:
        codex.configure(model, CODE_MODEL)
        codex.setup("--project")
        _text_only(codex)
        codex.exec()
    after = model.turn[-1]
    assert after.images() == []
    assert base64_leaks(after, notebook_png(codex.project / "kernel_v4.5.ipynb")) == []
    (_, printed) = _tool_result(after)
    (block,) = json.loads(printed.text)["content"]
    assert block["type"] == "text" and "; not sent: " in block["text"]
