"""A model's turn in the real DSH runtime, with j-cli's plugin: what the model receives.

The published DSH agent loop (``dsh-agent-loop``, pinned in tests/hosts/dsh)
drives a session whose model is the scripted model server
(tests/hosts/model_server.py) on loopback, through one of DSH's own LLM adapters:

- ``deepseek``: ``dsh-llm-deepseek``, DeepSeek's chat-completions route;
- ``responses`` and ``anthropic``: ``dsh-llm-pi-ai`` routes speaking OpenAI
  Responses and Anthropic Messages.

``tests/hosts/dsh/dsh-turn.mjs`` boots DSH (Node 22, pinned there) with
``boot()`` from the layers ``dsh`` reads, the plugin coming from the files the
real ``j-cli setup dsh`` wrote, then plays one prompt per turn and prints the
session's events. The tests assert on the requests the model server recorded:
exactly what DSH sent the model after each tool result.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess

import pytest
from helpers import (
    BIN,
    CHART_RENDERED_FROM,
    FIXTURES,
    load_cases,
    requires_charts_extra,
    run_cli,
    shows_the_chart_bars,
    write_chart_notebook,
)
from hostbins import DSH_DIR, host_env
from model_server import Say, ScriptedModel, Seen, ToolCall, base64_leaks

NOTEBOOK = "kernel_v4.5.ipynb"
CASES = {case["name"]: case for case in load_cases()}
#: The model id a route declares for the scripted model (taking images unless a test says not).
MODEL = "scripted"
#: DSH's default model: text only in dsh-llm-deepseek's default catalog.
DEFAULT_MODEL = "deepseek-v4-flash"
ROUTES = ["deepseek", "responses", "anthropic"]
PLOT = "import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); plt.show()"


def notebook_bytes(name: str) -> bytes:
    return base64.b64decode(CASES[name]["expect"]["envelope"]["selected"]["data"])


def verbatim(name: str) -> str:
    envelope = CASES[name]["expect"]["envelope"]
    return envelope["selected"]["data"] if "selected" in envelope else envelope["stream"]["data"]


class Dsh:
    """One DSH world: a project with the fixture notebook, $HOME, $DSH_HOME, and j-cli set up in it."""

    def __init__(self, node, tmp_path, scope: str = "project", env: dict | None = None):
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.node = node
        self.root = tmp_path
        self.project = tmp_path / "project"
        self.dsh_home = tmp_path / "dsh-home"
        self.home = tmp_path / "home"
        for folder in (self.project, self.dsh_home, self.home):
            folder.mkdir()
        shutil.copyfile(FIXTURES / NOTEBOOK, self.project / NOTEBOOK)
        # No JCLI_BIN: a project row names plain `j-cli`, found on PATH as a teammate's would be.
        self.env = {
            k: v for k, v in host_env(self.home, DSH_HOME=self.dsh_home, JCLI_SIDECAR="off", **(env or {})).items() if k != "JCLI_BIN"
        }
        self.env["PATH"] = f"{BIN}{os.pathsep}{os.environ['PATH']}"
        # The routes' API keys: any value does, the scripted model checks none.
        self.env.update(DEEPSEEK_API_KEY="scripted", SCRIPTED_MODEL_KEY="scripted")
        setup = run_cli("-j", "setup", "dsh", f"--{scope}", cwd=self.project, env=self.env)
        assert setup.returncode == 0, setup.stderr
        self.setup = setup.json()
        if scope == "project":
            # What the setup warning says to do: paste its include row into $DSH_HOME/cordis.patch.yml.
            rows = [m.group(1) for w in self.setup["warnings"] for m in [re.search(r"`(- insert: \[.*\])`", w)] if m]
            assert len(rows) == 1, self.setup["warnings"]
            (self.dsh_home / "cordis.patch.yml").write_text(rows[0] + "\n")

    def configure_plugin(self, config: dict) -> None:
        """Give the j-cli row setup wrote a ``config``, as a user would: a line under its ``name``."""
        composition = self.project / ".dsh" / "cordis.yml" if "project" in str(self.setup["config"]) else self.dsh_home / "cordis.patch.yml"
        assert str(composition) == self.setup["config"], self.setup
        lines = composition.read_text().splitlines(keepends=True)
        [at] = [i for i, line in enumerate(lines) if line.strip() == "- id: j-cli"]
        name = lines[at + 1]
        assert name.lstrip().startswith("name: "), lines
        indent = name[: len(name) - len(name.lstrip())]
        lines.insert(at + 2, f"{indent}config: {json.dumps(config)}\n")
        composition.write_text("".join(lines))

    def turns(
        self,
        model: ScriptedModel,
        route: str,
        prompts: list[str],
        *,
        model_id: str = MODEL,
        images: bool = True,
        catalog: str | None = None,
    ) -> list[list[dict]]:
        """Run one DSH session, one turn per prompt; the session events of each turn."""
        base = model.url + "/v1" if route == "responses" else model.url
        spec = {"project": str(self.project), "route": route, "baseURL": base, "model": model_id, "imageModel": images, "prompts": prompts}
        if catalog:
            spec["catalog"] = catalog
        spec_file = self.root / "turn.json"
        spec_file.write_text(json.dumps(spec))
        argv = [str(self.node), "--import", "tsx", "dsh-turn.mjs", str(spec_file)]
        proc = subprocess.run(argv, cwd=DSH_DIR, env=self.env, capture_output=True, text=True, timeout=90)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout)
        assert out["problems"] == [], out["problems"]
        return out["turns"]


@pytest.fixture
def dsh(dsh_node, tmp_path):
    return Dsh(dsh_node, tmp_path)


def request_errors(events: list[dict]) -> list[str]:
    """What went wrong in a turn, as the session logged it: a model request's error finish, a turn ended by an error."""
    found = []
    for event in events:
        reason = (event["data"].get("chunk") or {}).get("reason") if event["type"] == "assistant/chunk" else event["data"].get("reason")
        if event["type"] in ("assistant/chunk", "turn/end") and isinstance(reason, dict) and reason.get("kind") != "completed":
            if reason.get("kind") in ("error", "aborted"):
                found.append(f"{event['type']}: {json.dumps(reason)[:300]}")
    ends = [e for e in events if e["type"] == "turn/end"]
    if len(ends) != 1:
        found.append(f"{len(ends)} turn/end events")
    return found


def tool_result(seen: Seen, index: int = -1):
    """The parts of one tool result the model received, and the parts DSH added after it (up to the next tool result)."""
    results = seen.tool_results
    call_id = results[index][0].tool_call_id
    start = max(i for i, p in enumerate(seen.parts) if p.role == "tool" and p.tool_call_id == call_id)
    after = []
    for part in seen.parts[start + 1 :]:
        if part.role in ("tool", "assistant"):
            break
        after.append(part)
    return results[index], after


def content_parts(seen: Seen) -> list[str]:
    """The content parts after the last assistant turn, base64 elided: what a report quotes."""
    last = max(i for i, p in enumerate(seen.parts) if p.role == "assistant")
    return [
        f"{p.role}:{p.kind}" + (f"[{p.mime}, {len(p.data)} bytes]" if p.kind == "image" else f"[{p.text[:60]!r}]")
        for p in seen.parts[last + 1 :]
    ]


# ---- (a) and (b): images as images, text verbatim, on each route.


@pytest.mark.parametrize(("route", "scope"), [*((route, "project") for route in ROUTES), ("deepseek", "user")])
def test_the_model_receives_the_notebook_png_as_one_image_and_html_and_stream_verbatim(dsh_node, tmp_path, route, scope):
    dsh = Dsh(dsh_node, tmp_path, scope)
    script = [
        ToolCall("read_notebook_output", CASES["png"]["request"]),
        ToolCall("read_notebook_output", CASES["html"]["request"]),
        ToolCall("read_notebook_output", CASES["stream_stdout"]["request"]),
        Say("done"),
    ]
    with ScriptedModel(script) as model:
        [events] = dsh.turns(model, route, ["Show me the plot, the table and the log."])
    assert request_errors(events) == []
    turn = model.turn
    assert len(turn) == 4, [s.path for s in model.requests]
    after_png = turn[1]
    print(route, "image request:", content_parts(after_png))
    expected = notebook_bytes("png")
    images = after_png.images()
    assert len(images) == 1, content_parts(after_png)
    assert images[0].data == expected
    assert images[0].mime == "image/png"
    assert base64_leaks(after_png, expected) == []
    # Every later request carries that image once more (it is history) and nothing else of it as text.
    for later in turn[2:]:
        assert [p.data for p in later.images()] == [expected]
        assert base64_leaks(later, expected) == []
    for seen, name in ((turn[2], "html"), (turn[3], "stream_stdout")):
        result, _ = tool_result(seen)
        texts = [p.text for p in result if p.kind == "text"]
        assert any(t.encode() == verbatim(name).encode() for t in texts), (name, texts)


@requires_charts_extra
@pytest.mark.parametrize("route", ROUTES)
def test_a_chart_read_with_as_reaches_the_model_as_one_rendered_image_part(dsh, route):
    write_chart_notebook(dsh.project / "chart.ipynb")
    chart = {"file_path": "chart.ipynb", "cell_index": 0, "output_index": 0, "as_mime_type": "image/png"}
    with ScriptedModel([ToolCall("read_notebook_output", chart), Say("done")]) as model:
        [events] = dsh.turns(model, route, ["Show me the chart."])
    assert request_errors(events) == []
    seen = model.turn[1]
    print(route, "chart request:", content_parts(seen))
    (image,) = seen.images()
    assert image.mime == "image/png" and shows_the_chart_bars(image.data)
    assert base64_leaks(seen, image.data) == []
    result, _ = tool_result(seen)
    [caption] = [p.text for p in result if p.kind == "text"]
    assert caption.startswith(f"[image/png from {dsh.project / 'chart.ipynb'} cell 0 output 0; ") and CHART_RENDERED_FROM in caption, (
        caption
    )


# ---- (c) the guards around DSH's own bash tool; (d) a plot run through j-cli exec.


def pair(dsh: Dsh) -> None:
    (dsh.project / "a.py").write_text("# %%\nx = 1\n\n# %%\nprint(x)\n")
    converted = run_cli("convert", "py-to-ipynb", "a.py", cwd=dsh.project, env=dsh.env)
    assert converted.returncode == 0, converted.stderr


PLAIN_NBCONVERT = "touch ran-marker && jupyter nbconvert --execute a.ipynb"
NBCONVERT_THROUGH_ENV = "touch ran-marker; env PYTHONUNBUFFERED=1 jupyter nbconvert --to notebook --execute --inplace a.ipynb"


# The plain command on every route (each delivers the refusal its own way); the command through
# `env` on one: the guard's decision is the plugin's, whatever the route, and the ``plain`` case of
# the other routes holds how they deliver it.
@pytest.mark.parametrize(
    ("route", "command"),
    [
        *(pytest.param(route, PLAIN_NBCONVERT, id=f"{route}-plain") for route in ROUTES),
        pytest.param("deepseek", NBCONVERT_THROUGH_ENV, id="deepseek-through-env"),
    ],
)
def test_the_guard_refuses_nbconvert_of_a_paired_notebook_before_it_runs_and_the_model_reads_why(dsh, route, command):
    pair(dsh)
    before = (dsh.project / "a.ipynb").read_bytes()
    script = [ToolCall("bash", {"command": command, "description": "Run the notebook"}), Say("ok")]
    with ScriptedModel(script) as model:
        [events] = dsh.turns(model, route, ["Run a.ipynb."])
    assert request_errors(events) == []
    assert not (dsh.project / "ran-marker").exists(), "the refused command ran"
    assert (dsh.project / "a.ipynb").read_bytes() == before
    result, after = tool_result(model.turn[1])
    text = "\n".join(p.text for p in result + after if p.kind == "text")
    print(route, "refusal:", content_parts(model.turn[1]))
    assert "Error: j-cli notebook-exec-guard: `jupyter nbconvert` runs a notebook outside j-cli (a.ipynb)" in text, text
    assert "j-cli exec SESSION -f a.ipynb" in text, text


def test_a_plot_run_with_j_cli_exec_through_bash_gives_the_model_the_paths_and_no_image(dsh, starts_jupyter):
    # The project's own embedded server and kernel session, as a user's would be. (DSH hands its
    # subprocesses no variable named like a secret, *TOKEN* included, so an explicit server's
    # JCLI_JUPYTER_SERVER_TOKEN would never reach the j-cli its bash runs.)
    created = run_cli("session", "create", "-n", "plots", cwd=dsh.project, env=dsh.env)
    assert created.returncode == 0, created.stderr
    try:
        for route in ("deepseek", "responses"):
            outputs = dsh.project / ".j-cli" / "outputs"
            before = set(outputs.rglob("*.png")) if outputs.exists() else set()
            command = f"j-cli exec plots -c {shlex.quote(PLOT)}"
            script = [ToolCall("bash", {"command": command, "description": "Plot"}), Say("ok")]
            with ScriptedModel(script) as model:
                [events] = dsh.turns(model, route, ["Plot it."])
            assert request_errors(events) == []
            seen = model.turn[1]
            result, _ = tool_result(seen)
            print(route, "exec:", content_parts(seen), [p.text for p in result])
            assert seen.images() == []
            text = "\n".join(p.text for p in result if p.kind == "text")
            saved = sorted(set(outputs.rglob("*.png")) - before)
            assert len(saved) == 1, saved
            run_dir = outputs / saved[0].relative_to(outputs).parts[0]
            assert f"[outputs kept in {run_dir}]" in text, text  # the run's folder, where the plot's file is
            assert base64_leaks(seen, saved[0].read_bytes()) == []
    finally:
        stopped = run_cli("server", "stop", cwd=dsh.project, env=dsh.env)
        assert stopped.returncode == 0, stopped.stderr


# ---- (e) a model that takes no image: reading one never breaks the session.


@pytest.mark.parametrize("route", ["deepseek", "responses", "anthropic"])
def test_a_text_only_model_reading_a_png_gets_its_description_and_the_turn_and_the_next_one_go_on(dsh, route):
    script = [ToolCall("read_notebook_output", CASES["png"]["request"]), Say("seen")]
    # DSH's default model on the DeepSeek route (its default catalog says text only); a route
    # declaring text only for the pi-ai ones.
    deepseek = route == "deepseek"
    with ScriptedModel(script) as model:
        turns = dsh.turns(
            model,
            route,
            ["Show me the plot.", "And now?"],
            model_id=DEFAULT_MODEL if deepseek else MODEL,
            images=False,
            catalog="default" if deepseek else None,
        )
    assert [request_errors(events) for events in turns] == [[], []]
    assert len(model.turn) == 3, "the next request of the turn and the second turn's did not reach the model"
    after_png, second_turn = model.turn[1], model.turn[2]
    print(route, "text-only request:", content_parts(after_png))
    png = notebook_bytes("png")
    for seen in (after_png, second_turn):
        assert seen.images() == []
        assert base64_leaks(seen, png) == []
    result, after = tool_result(after_png)
    assert after == [], "DSH added something after the tool result"
    [text] = [p.text for p in result]
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert f"{width}x{height}" in text, text
    assert str(dsh.project / NOTEBOOK) in text and "cell 2 output 0" in text, text
    assert "not sent: the model takes no image input" in text, text
    assert "its text forms: text/plain" in text and "read one with mime_type='text/plain'" in text, text


def test_a_text_only_model_is_sent_no_image_however_it_asks_for_one(dsh):
    # A JPEG, a PNG converted, downscaled or shrunk, a bundle's JPEG: all told as text; an SVG asked as an image is its source.
    png = CASES["png"]["request"]
    svg = {"file_path": NOTEBOOK, "cell_index": 8, "output_index": 0, "mime_type": "image/svg+xml", "as_mime_type": "image/png"}
    asks = [
        CASES["jpeg"]["request"],
        {**png, "as_mime_type": "image/webp", "max_edge": 10},
        {**png, "max_bytes": 1},
        svg,
        CASES["bundle_jpeg"]["request"],
    ]
    script = [*(ToolCall("read_notebook_output", ask) for ask in asks), Say("seen")]
    with ScriptedModel(script) as model:
        [events] = dsh.turns(model, "deepseek", ["Show me every picture."], model_id=DEFAULT_MODEL, images=False, catalog="default")
    assert request_errors(events) == []
    assert len(model.turn) == len(asks) + 1
    last = model.turn[-1]
    assert last.images() == []
    captions = [part.text for result in last.tool_results for part in result]
    assert len(captions) == len(asks), captions
    for ask, caption in zip(asks, captions, strict=True):
        if ask is svg:  # an SVG is text already: its source, verbatim, not an image
            assert caption.startswith("<svg ") and caption.rstrip().endswith("</svg>"), caption[:200]
            continue
        assert caption.startswith("[image/") and "not sent: the model takes no image input" in caption, (ask, caption)
    assert not any(re.search(r"[A-Za-z0-9+/]{60,}", part.text) for part in last.texts()), "base64 in a text part"


def test_config_text_only_false_sends_the_image_and_dsh_then_refuses_every_request_of_the_session(dsh):
    # What the plugin's choice prevents, pinned: DSH itself refuses a text-only model's request
    # once an image sits in the session's history, on this turn and every later one.
    dsh.configure_plugin({"textOnly": False})
    script = [ToolCall("read_notebook_output", CASES["png"]["request"]), Say("seen")]
    with ScriptedModel(script) as model:
        turns = dsh.turns(model, "deepseek", ["Show me the plot.", "And now?"], model_id=DEFAULT_MODEL, images=False, catalog="default")
    assert len(model.turn) == 1, "a request holding the image reached the model"
    for events in turns:
        errors = request_errors(events)
        assert any(
            "UNSUPPORTED_CONTENT" in e and f'DeepSeek model \\"{DEFAULT_MODEL}\\" does not accept image input' in e for e in errors
        ), errors


@pytest.mark.parametrize("route", ["deepseek", "anthropic"])
def test_config_text_only_true_tells_the_image_as_text_even_to_a_model_that_takes_images(dsh, route):
    dsh.configure_plugin({"textOnly": True})
    again = run_cli("-j", "setup", "dsh", "--project", cwd=dsh.project, env=dsh.env)  # an update keeps the row's config
    assert again.returncode == 0 and again.json()["row"]["config"] == {"textOnly": True}, again.stdout + again.stderr
    script = [ToolCall("read_notebook_output", CASES["png"]["request"]), Say("seen")]
    with ScriptedModel(script) as model:
        [events] = dsh.turns(model, route, ["Show me the plot."])
    assert request_errors(events) == []
    seen = model.turn[1]
    assert seen.images() == []
    [text] = [p.text for p in tool_result(seen)[0]]
    assert "not sent: the model takes no image input" in text, text
