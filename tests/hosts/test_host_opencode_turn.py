"""What the model receives in a real OpenCode turn, per provider package OpenCode routes differently.

Each test runs a turn on ``opencode serve`` (the pinned 1.18.33, one server
per configuration: tests/hosts/opencode_world.py) in a fresh project with j-cli's
plugin installed by the real ``j-cli setup opencode``, against a custom
provider whose model is tests/hosts/model_server.py on loopback, and asserts on the
model requests OpenCode sent: which content parts, where, with which bytes.

Where OpenCode puts an image a tool returned depends on the provider package:

- ``@ai-sdk/openai-compatible`` (chat completions): the tool message is text
  only (the plugin's caption) and the image follows in a user message of its
  own, after a text part "Attached media from tool result:";
- ``@ai-sdk/openai`` (Responses) and ``@ai-sdk/anthropic`` (Messages): the
  image is inside the tool result, beside the caption.

The three packages are bundled in OpenCode's binary (nothing is installed for
them); every turn but the one that reaches the test's Jupyter Server runs in a
network namespace with nothing but its own loopback.
"""

from __future__ import annotations

import base64
import json
import shlex

import pytest
from helpers import CHART_RENDERED_FROM, FIXTURES, load_cases, requires_charts_extra, run_cli, shows_the_chart_bars, write_chart_notebook
from model_server import Say, ToolCall, base64_leaks
from opencode_world import NOTEBOOK, PROVIDER_PACKAGES, OpenCode, tool_texts

PACKAGES = list(PROVIDER_PACKAGES)
READ_PNG = ToolCall("read_notebook_output", {"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0})


def _bundle(cell: int, output: int) -> dict:
    with open(FIXTURES / NOTEBOOK, encoding="utf-8") as fh:
        return json.load(fh)["cells"][cell]["outputs"][output]["data"]


def _png() -> bytes:
    return base64.b64decode(_bundle(2, 0)["image/png"])


def _notebook_text(cell: int, output: int) -> str:
    text = _bundle(cell, output)["text/plain"]
    return "".join(text) if isinstance(text, list) else text


def _expected_text(name: str) -> str:
    envelope = next(c for c in load_cases() if c["name"] == name)["expect"]["envelope"]
    return envelope["stream"]["data"] if "stream" in envelope else envelope["selected"]["data"]


def _image_arrives_as_the_package_puts_it(npm: str, seen) -> None:
    (image,) = seen.images()
    (result,) = seen.tool_results
    if npm == "@ai-sdk/openai-compatible":
        assert [p.kind for p in result] == ["text"]
        assert image.role == "user"
        at = seen.parts.index(image)
        assert seen.parts[at - 1].role == "user" and seen.parts[at - 1].text == "Attached media from tool result:"
    else:
        assert [p.kind for p in result] == ["text", "image"] and result[1] is image
        assert image.role == "tool"


@pytest.mark.parametrize("npm", PACKAGES)
def test_a_notebook_png_reaches_the_model_as_one_image_part_with_the_notebooks_bytes(opencode_hosts, tmp_path, npm):
    world = OpenCode(opencode_hosts, tmp_path)
    model = world.turn([READ_PNG, Say("seen")], npm=npm)
    seen = model.turn[-1]
    (image,) = seen.images()
    assert image.data == _png() and image.mime == "image/png"
    assert base64_leaks(seen, _png()) == []
    (caption,) = tool_texts(seen)
    assert caption.startswith("[image/png from ") and "3630 bytes, 150x100 px" in caption, caption
    _image_arrives_as_the_package_puts_it(npm, seen)
    assert [len(s.images()) for s in model.requests] == [0] * (len(model.requests) - 1) + [1]


@requires_charts_extra
def test_a_chart_read_with_as_reaches_the_model_as_one_rendered_image_part(opencode_hosts, tmp_path):
    """One provider package: where each package puts an image the tool returned is the PNG test's, per package."""
    npm = "@ai-sdk/openai-compatible"
    world = OpenCode(opencode_hosts, tmp_path)
    write_chart_notebook(world.project / "chart.ipynb")
    chart = {"file_path": "chart.ipynb", "cell_index": 0, "output_index": 0, "as_mime_type": "image/png"}
    model = world.turn([ToolCall("read_notebook_output", chart), Say("seen")], npm=npm)
    seen = model.turn[-1]
    (image,) = seen.images()
    assert image.mime == "image/png" and shows_the_chart_bars(image.data)
    assert base64_leaks(seen, image.data) == []
    (caption,) = tool_texts(seen)
    assert caption.startswith("[image/png from ") and CHART_RENDERED_FROM in caption, caption
    _image_arrives_as_the_package_puts_it(npm, seen)
    assert [len(s.images()) for s in model.requests] == [0] * (len(model.requests) - 1) + [1]


# The plugin in the user config dir reads the PNG to the model in
# test_jcli_text_only_off_sends_the_png_even_to_a_model_opencode_says_takes_none (user scope, the
# exact bytes, one image, no base64 elsewhere); where each provider package puts it does not depend
# on where the plugin was found (the test above, per package).


def _paired(world: OpenCode, stem: str = "x") -> None:
    (world.project / f"{stem}.py").write_text("# %%\nx = 1\n\n# %%\nprint(x)\n")
    done = run_cli("convert", "py-to-ipynb", f"{stem}.py", cwd=world.project)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("npm", PACKAGES)
def test_html_and_a_stream_arrive_verbatim_and_nbconvert_on_a_paired_notebook_is_refused_before_bash_runs(opencode_hosts, tmp_path, npm):
    """One turn, three tool calls, every result text: two reads, then a notebook run the guard refuses (the model reads j-cli exec)."""
    world = OpenCode(opencode_hosts, tmp_path)
    _paired(world)
    notebook = (world.project / "x.ipynb").read_bytes()
    cases = ["html", "stream_stdout"]
    script = [ToolCall("read_notebook_output", next(c for c in load_cases() if c["name"] == n)["request"]) for n in cases]
    command = "touch ran-marker && jupyter nbconvert --execute x.ipynb"
    script.append(ToolCall("bash", {"command": command, "description": "Run the notebook"}))
    seen = world.turn([*script, Say()], npm=npm).turn[-1]
    *reads, refusal = tool_texts(seen)
    assert [text.encode() for text in reads] == [_expected_text(n).encode() for n in cases]
    assert seen.images() == []
    assert refusal.startswith("j-cli notebook-exec-guard: `jupyter nbconvert` runs a notebook outside j-cli (x.ipynb)"), refusal
    assert "j-cli exec SESSION -f x.ipynb" in refusal
    assert not (world.project / "ran-marker").exists()
    assert (world.project / "x.ipynb").read_bytes() == notebook


PLOT = "import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); plt.show(); print('plotted')"


@pytest.mark.parametrize("npm", ["@ai-sdk/openai-compatible", "@ai-sdk/anthropic"])
def test_a_plot_run_through_bash_with_j_cli_exec_reaches_the_model_as_the_runs_paths_and_no_image(
    opencode_hosts, tmp_path, use_jupyter, kernel_session, npm
):
    world = OpenCode(opencode_hosts, tmp_path)
    command = f"j-cli exec {kernel_session} -c {shlex.quote(PLOT)}"
    script = [ToolCall("bash", {"command": command, "description": "Plot"}), Say()]
    seen = world.turn(script, npm=npm, offline=False).turn[-1]  # j-cli exec reaches the test's Jupyter Server on loopback
    (answer,) = tool_texts(seen)
    runs = sorted((world.project / ".j-cli").rglob("*.png"))
    assert len(runs) == 1, answer
    assert answer.startswith("<Figure size 640x480 with 1 Axes>\nplotted\n"), answer
    assert f"[outputs kept in {runs[0].parent}]" in answer, answer  # where the image is, for a read
    assert seen.images() == [] and base64_leaks(seen, runs[0].read_bytes()) == []
    assert "iVBOR" not in answer


# ---- A model that takes no images.
#
# OpenCode tells the plugin each request's model in `chat.params`; for a
# model whose config declares no image input the plugin asks j-cli for
# `text_only`, and the model receives j-cli's description of the image instead
# of it: the session goes on, and the model can read a text form. Without
# that, OpenCode 1.18.33 turns the image into "ERROR: Cannot read image ...
# Inform the user." on the chat-completions route, and sends it anyway inside
# the tool result on the Responses and Anthropic routes.

READ_TEXT_FORM = ToolCall("read_notebook_output", {"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0, "mime_type": "text/plain"})


def _told_as_text(seen) -> str:
    (caption, *_) = tool_texts(seen)
    assert seen.images() == [] and base64_leaks(seen, _png()) == []
    assert not any("Cannot read image" in part.text for part in seen.parts)
    return caption


@pytest.mark.parametrize("npm", PACKAGES)
def test_a_model_without_image_input_receives_j_clis_description_of_the_png_and_goes_on_to_its_text_form(opencode_hosts, tmp_path, npm):
    world = OpenCode(opencode_hosts, tmp_path)
    model = world.turn([READ_PNG, READ_TEXT_FORM, Say("read it")], npm=npm, images=False)
    after_read, last = model.turn[1], model.turn[-1]
    caption = _told_as_text(after_read)
    label = f"{world.project / NOTEBOOK} cell 2 output 0"
    assert caption == (
        f"[image/png from {label}; 3630 bytes, 150x100 px; not sent: the model takes no image input; "
        "its text forms: text/plain (35 bytes); read one with mime_type='text/plain']"
    ), caption
    assert tool_texts(last)[1] == _notebook_text(2, 0)  # the text form, as the caption said to read it
    assert last.images() == []


def test_a_model_with_no_modalities_in_its_config_is_text_only_to_opencode_and_gets_the_description(opencode_hosts, tmp_path):
    world = OpenCode(opencode_hosts, tmp_path)
    seen = world.turn([READ_PNG, Say()], images=None).turn[-1]
    assert "not sent: the model takes no image input" in _told_as_text(seen)


def test_jcli_text_only_on_tells_the_png_as_text_even_to_a_model_that_takes_images(opencode_hosts, tmp_path):
    world = OpenCode(opencode_hosts, tmp_path)
    seen = world.turn([READ_PNG, Say()], npm="@ai-sdk/anthropic", env={"JCLI_TEXT_ONLY": "1"}).turn[-1]
    assert "not sent: the model takes no image input" in _told_as_text(seen)


def test_jcli_text_only_off_sends_the_png_even_to_a_model_opencode_says_takes_none(opencode_hosts, tmp_path):
    world = OpenCode(opencode_hosts, tmp_path, scope="user")  # the plugin in the user config dir, none in the project
    assert not (world.project / ".opencode" / "plugins" / "jcli.js").exists()
    seen = world.turn([READ_PNG, Say()], npm="@ai-sdk/anthropic", images=False, env={"JCLI_TEXT_ONLY": "off"}).turn[-1]
    (image,) = seen.images()
    assert image.data == _png() and image.role == "tool"
    assert base64_leaks(seen, _png()) == []
    _image_arrives_as_the_package_puts_it("@ai-sdk/anthropic", seen)
