"""The caption beside a read's data: one wording, built in the core, shown as is by every client.

The CLI's human mode and the MCP tools call the core for it; the OpenCode
and DSH plugins ask for it with ``agent_text: true`` and show what comes
back (their node tests hold them to what the CLI and MCP show here).
"""

from __future__ import annotations

import json

import pytest
from helpers import REPO, load_cases, relative_source, run_cli

from jcli.mcp_tools import tool_result_parts
from jcli.render import render_human
from jcli_sidecar.base.errors import OutputTooLarge
from jcli_sidecar.base.protocol import json_size
from jcli_sidecar.read import caption
from jcli_sidecar.read.agent_text import agent_strings, window_notice
from jcli_sidecar.read.requests import handle_read

CASES = load_cases()
ONE_OUTPUT = [c for c in CASES if "envelope" in c["expect"] and "outputs" not in c["expect"]["envelope"]]
CATALOGS = [c for c in CASES if "envelope" in c["expect"] and "outputs" in c["expect"]["envelope"]]
LABEL = "a.ipynb cell 3 output 0"


def _window(offset, returned, total, next_offset):
    return {"truncated": True, "offset": offset, "returned_characters": returned, "total_characters": total, "next_offset": next_offset}


@pytest.mark.parametrize(
    "envelope, expected",
    [
        ({"stream": {"name": "stdout", "truncated": False}}, f"[stdout stream from {LABEL}]"),
        (
            {"stream": {"name": "stderr", **_window(17, 11, 40, 28)}},
            f"[stderr stream from {LABEL}; characters 17-28 of 40; continue at offset 28]",
        ),
        ({"stream": {"name": "stdout", **_window(30, 10, 40, None)}}, f"[stdout stream from {LABEL}; characters 30-40 of 40]"),
        ({"error": {"ename": "ZeroDivisionError", "evalue": "x", "traceback": []}}, f"[error ZeroDivisionError from {LABEL}]"),
        (
            {"error": {"ename": "KeyError", "serialization": "json", **_window(0, 40, 90, 40)}},
            f"[error KeyError from {LABEL}; characters 0-40 of 90; continue at offset 40]",
        ),
        ({"selected": {"mime_type": "text/html", "encoding": "utf-8", "truncated": False}}, f"[text/html from {LABEL}]"),
        (
            {"selected": {"mime_type": "application/json", "serialization": "json", **_window(0, 20, 64, 20)}},
            f"[application/json from {LABEL}; characters 0-20 of 64; continue at offset 20]",
        ),
        ({"selected": {"mime_type": "application/json", "encoding": "json", "data": {}}}, f"[application/json from {LABEL}]"),
        (
            {"selected": {"mime_type": "image/gif", "encoding": "base64", "bytes": 812, "width": 4, "height": 3, "animated": True}},
            f"[image/gif from {LABEL}; 812 bytes, 4x3 px, animated]",
        ),
        (
            {
                "selected": {
                    "mime_type": "image/png",
                    "encoding": "base64",
                    "bytes": 9000,
                    "width": 2000,
                    "height": 400,
                    "note": "fitted from 5000x1000 px image/png",
                }
            },
            f"[image/png from {LABEL}; 9000 bytes, 2000x400 px; fitted from 5000x1000 px image/png]",
        ),
        ({"selected": {"mime_type": "image/x-odd", "encoding": "base64", "bytes": 5}}, f"[image/x-odd from {LABEL}; 5 bytes]"),
    ],
)
def test_the_caption_says_what_it_is_where_from_and_where_to_continue(envelope, expected):
    assert caption({"source": {"label": LABEL}, **envelope}) == expected


def test_a_catalog_caption_counts_its_outputs():
    assert caption({"source": {"label": "a.ipynb cell 2"}, "output_count": 3, "outputs": [{}, {}, {}]}) == "[3 output(s) of a.ipynb cell 2]"


def test_the_window_notice_is_the_part_of_the_caption_a_cut_window_adds():
    block = _window(4990, 10, 5000, None)
    assert window_notice(block) == "characters 4990-5000 of 5000"
    assert window_notice({"truncated": False, "offset": 0}) is None
    whole = {"source": {"label": LABEL}, "stream": {"name": "stdout", "truncated": False}}
    assert agent_strings(whole) == {"caption": f"[stdout stream from {LABEL}]"}
    cut = {"source": {"label": LABEL}, "stream": {"name": "stdout", **_window(0, 3, 9, 3)}}
    strings = agent_strings(cut)
    assert strings == {
        "caption": f"[stdout stream from {LABEL}; characters 0-3 of 9; continue at offset 3]",
        "window": "characters 0-3 of 9; continue at offset 3",
    }
    assert strings["window"] in strings["caption"]


@pytest.mark.parametrize("case", ONE_OUTPUT, ids=[c["name"] for c in ONE_OUTPUT])
def test_the_cli_and_the_mcp_tools_show_the_core_caption_of_every_fixture(case, fixture_dir, monkeypatch):
    monkeypatch.chdir(fixture_dir)
    doc = handle_read(case["request"])
    shown = caption(doc)
    assert shown.startswith("[") and shown.endswith("]") and doc["source"]["label"] in shown
    body, note = render_human(doc)
    if doc.get("selected", {}).get("encoding") == "base64":
        assert (body, note) == (shown + "\n", "[use -j to get the image data]")  # an image has no printable body
    else:
        assert note == shown
    parts = tool_result_parts(doc)
    assert parts[-1] == ("text", shown)
    assert all(kind == "image" or shown not in text for kind, text in parts[:-1])  # shown once, beside the data


@pytest.mark.parametrize("case", ONE_OUTPUT + CATALOGS, ids=[c["name"] for c in ONE_OUTPUT + CATALOGS])
def test_asking_for_agent_text_adds_it_and_changes_no_other_field(case, fixture_dir, monkeypatch):
    monkeypatch.chdir(fixture_dir)
    doc = handle_read({**case["request"], "agent_text": True})
    strings = doc.pop("agent_text")
    assert relative_source(doc, fixture_dir) == case["expect"]["envelope"]
    assert strings == agent_strings(doc)
    assert strings["caption"] == caption(doc)
    assert "agent_text" not in handle_read(case["request"])
    assert "agent_text" not in handle_read({**case["request"], "agent_text": False})


def test_the_cap_measures_the_agent_text_too(fixture_dir, monkeypatch):
    monkeypatch.chdir(fixture_dir)
    request = {"file_path": "kernel_v4.5.ipynb", "cell_index": 1, "output_index": 0}
    size = json_size(handle_read(request))
    assert handle_read({**request, "max_response_bytes": size})
    with pytest.raises(OutputTooLarge):
        handle_read({**request, "max_response_bytes": size, "agent_text": True})


def test_agent_text_must_be_a_boolean(fixture_dir, monkeypatch):
    from jcli_sidecar.base.errors import UsageError

    monkeypatch.chdir(fixture_dir)
    with pytest.raises(UsageError, match="agent_text must be a JSON boolean"):
        handle_read({"file_path": "kernel_v4.5.ipynb", "cell_index": 1, "agent_text": 1})


def test_the_cli_flag_and_the_stdin_request_carry_the_same_agent_text(fixture_dir):
    request = {"file_path": "kernel_v4.5.ipynb", "cell_index": 1, "output_index": 0, "offset": 17, "limit": 11}
    by_stdin = run_cli(
        "-j", "notebook", "output", "--request", "-", cwd=fixture_dir, stdin=json.dumps({**request, "agent_text": True}).encode()
    )
    flags = ["kernel_v4.5.ipynb", "--cell", "1", "--output", "0", "--offset", "17", "--limit", "11", "--agent-text"]
    by_flag = run_cli("-j", "notebook", "output", *flags, cwd=fixture_dir)
    assert by_stdin.returncode == by_flag.returncode == 0, by_stdin.stderr + by_flag.stderr
    got = json.loads(by_stdin.stdout)
    assert got == json.loads(by_flag.stdout)
    assert got["agent_text"]["window"] == "characters 17-28 of 40; continue at offset 28"
    human = run_cli("notebook", "output", *flags[:-1], cwd=fixture_dir)
    assert human.stderr.decode().strip() == got["agent_text"]["caption"]


def test_click_builds_the_same_request_as_the_fast_path_with_the_flag_left_off(fixture_dir, monkeypatch):
    from click.testing import CliRunner

    from jcli.cli import app

    monkeypatch.chdir(fixture_dir)
    request = {"file_path": "kernel_v4.5.ipynb", "cell_index": 1, "output_index": 0}
    runner = CliRunner()
    plain = runner.invoke(app, ["-j", "notebook", "output", "--request", "-"], input=json.dumps(request))
    asked = runner.invoke(app, ["-j", "notebook", "output", "--request", "-"], input=json.dumps({**request, "agent_text": True}))
    flagged = runner.invoke(app, ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "1", "--output", "0", "--agent-text"])
    assert plain.exit_code == asked.exit_code == flagged.exit_code == 0, plain.output + asked.output + flagged.output
    assert json.loads(plain.stdout) == handle_read(request)
    assert json.loads(asked.stdout) == json.loads(flagged.stdout) == handle_read({**request, "agent_text": True})


@pytest.mark.parametrize("plugin", ["opencode/jcli.js", "dsh/jcli.ts"])
def test_the_plugins_word_no_caption_of_their_own(plugin):
    source = (REPO / "client" / "plugins" / plugin).read_text(encoding="utf-8")
    assert "agent_text: true" in source or "agent_text = true" in source  # they ask j-cli for it
    assert "agent_text" in source and ".caption" in source
    for wording in ("continue", "characters ${", " from ${", "bytes${", " px"):
        assert wording not in source, f"{plugin} words {wording!r} itself"
