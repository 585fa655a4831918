"""The real Codex CLI (pinned in tests/hosts) loads what ``j-cli setup codex`` writes.

Codex runs offline against a temporary HOME and CODEX_HOME. Nothing is mocked.
Besides ``codex mcp list/get``, the tests drive ``codex app-server`` (Codex's
own JSON-RPC interface for its IDE clients) over stdio, through
``tests/hosts/codex_app_server.py``:

- ``initialize`` (+ ``initialized``): ``{userAgent, codexHome, platformFamily, platformOs}``;
- ``thread/start`` (ephemeral, read-only sandbox, approvals ``never``):
  ``{thread: {id, cwd, ...}, ...}``; the thread's MCP servers start and report
  ``mcpServer/startupStatus/updated`` ``{threadId, name, status: starting|ready|failed}``;
- ``mcpServerStatus/list`` (optionally ``threadId``): ``{data: [{name, serverInfo,
  runtimeStatus, tools: {name: Tool}, ...}], nextCursor}``. Without a thread it
  reads the user config only; project config (``.codex/config.toml``) counts only
  for a thread whose cwd is in a trusted project;
- ``mcpServer/tool/call`` ``{threadId, server, tool, arguments}``: Codex calls the
  MCP tool itself and returns the MCP result ``{content, structuredContent?, isError?}``.
  With this method no model is needed, so no turn is ever started.

What keeps it offline (checked with strace on 0.171.0: no DNS query, no
non-loopback connect): ``codex_app_server.OFFLINE_CONFIG`` in the user config,
i.e. a model provider on 127.0.0.1 that is never contacted (without it,
``thread/start`` resolves api.openai.com) and ``features.plugins = false``
(else the plugin marketplace sync resolves api.github.com and chatgpt.com).

Codex starts stdio MCP servers with a fixed environment (HOME, LANG, PATH,
SHELL, TERM and the CA bundle variables), so ``setup codex`` names the
variables j-cli reads in the table's ``env_vars`` (Codex's own pass-through
setting). Without it ``XDG_RUNTIME_DIR`` and ``JCLI_SIDECAR`` would not reach
``j-cli mcp serve``, and a read through Codex would start a second sidecar in
``/tmp/jcli-<uid>``, outliving the test; the tests that call a tool rely on it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest
from codex_app_server import OFFLINE_CONFIG, AppServer, AppServerError
from codex_world import notebook_png, protocol_case
from helpers import BIN, run_cli
from hostbins import host_env

SERVER = "jcli"
TOOLS = {"read_notebook_output", "read_run_output", "notebook_grep", "job_status", "job_wait"}


def codex(bin_dir, home, *args, cwd=None):
    env = host_env(home, CODEX_HOME=home / ".codex")
    return subprocess.run([str(bin_dir / "codex"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


#: A config whose servers are an inline table: setup puts its table inside it (a [mcp_servers.jcli] header may not extend it).
INLINE_SERVERS = "mcp_servers = { docs = { command = 'docs-mcp', args = ['--stdio'] } }  # mine\n"


@pytest.mark.parametrize("before", [None, INLINE_SERVERS], ids=["no-config", "inline-servers"])
def test_codex_lists_our_server_exactly_as_configured(host_bin, tmp_path, monkeypatch, before):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    config = home / ".codex" / "config.toml"
    if before is not None:
        config.write_text(before)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    assert run_cli("setup", "codex", cwd=tmp_path).returncode == 0
    listed = json.loads(codex(host_bin, home, "mcp", "list", "--json").stdout)
    ours = [entry for entry in listed if entry["name"] == "jcli"]
    assert len(ours) == 1, listed
    if before is not None:  # Codex still sees the user's own server beside ours
        assert [entry["transport"]["command"] for entry in listed if entry["name"] == "docs"] == ["docs-mcp"], listed
    transport = ours[0]["transport"]
    configured = run_cli("-j", "setup", "codex", cwd=tmp_path).json()["server"]
    assert transport["command"] == configured["command"] and transport["args"] == configured["args"]
    got = codex(host_bin, home, "mcp", "get", "jcli", "--json")
    assert got.returncode == 0 and json.loads(got.stdout)["transport"]["args"] == configured["args"]
    assert run_cli("setup", "codex", "--remove", cwd=tmp_path).returncode == 0
    after = json.loads(codex(host_bin, home, "mcp", "list", "--json").stdout)
    assert all(entry["name"] != "jcli" for entry in after)
    assert (config.read_text() if config.exists() else None) == before


# -- codex app-server --------------------------------------------------------


@pytest.fixture
def host(codex_world, monkeypatch):
    """The Codex world (``tests/hosts/conftest.py``) with the offline user config, its HOME and CODEX_HOME this test's too."""
    codex_world.user_config.write_text(OFFLINE_CONFIG)
    monkeypatch.setenv("HOME", str(codex_world.home))
    monkeypatch.setenv("CODEX_HOME", str(codex_world.codex_home))
    return codex_world


def _no_jcli(server: AppServer, thread_id: str) -> None:
    assert SERVER not in server.mcp_status()
    assert SERVER not in server.mcp_status(thread_id)
    with pytest.raises(AppServerError, match="unknown MCP server 'jcli'"):
        server.call_tool(thread_id, SERVER, "read_notebook_output", {"file_path": "kernel_v4.5.ipynb", "cell_index": 0})


def test_app_server_starts_our_server_with_both_tools_and_forgets_it_after_remove(host):
    host.setup()
    with host.app_server() as server:
        listed = server.mcp_status()  # the user config alone: Codex starts the server to list its tools
        assert SERVER in listed, listed.keys()
        assert listed[SERVER]["serverInfo"]["name"] == "j-cli"
        assert set(listed[SERVER]["tools"]) == TOOLS
        thread = server.start_thread()
        server.wait_mcp_ready(thread, SERVER)
        ours = server.mcp_status(thread)[SERVER]
        assert ours["runtimeStatus"] == "connected"
        assert set(ours["tools"]) == TOOLS and ours["toolsError"] is None
        assert ours["tools"]["read_notebook_output"]["annotations"]["readOnlyHint"] is True
    removed = host.setup("--remove")
    assert removed["removed"] is True
    assert host.user_config.read_text() == OFFLINE_CONFIG  # only j-cli's block went
    with host.app_server() as server:
        _no_jcli(server, server.start_thread())


def test_a_tool_call_through_codex_returns_the_png_bytes_and_the_html_verbatim(host):
    host.setup()
    with host.app_server() as server:
        thread = server.start_thread()
        server.wait_mcp_ready(thread, SERVER)
        notebook = os.path.realpath(host.project / "kernel_v4.5.ipynb")

        png = protocol_case("png")
        got = server.call_tool(thread, SERVER, "read_notebook_output", {**png["request"], "file_path": notebook})
        assert not got.get("isError") and "structuredContent" not in got, got
        image, note = got["content"]
        assert image["type"] == "image" and image["mimeType"] == "image/png", {k: v for k, v in image.items() if k != "data"}
        expected = notebook_png(notebook)
        assert base64.b64decode(image["data"], validate=True) == expected
        assert len(expected) == png["expect"]["envelope"]["selected"]["bytes"]
        assert note["type"] == "text", note
        assert note["text"].startswith(f"[image/png from {notebook} cell 2 output 0; {len(expected)} bytes"), note
        assert image["data"] not in note["text"]

        html = protocol_case("html")
        got = server.call_tool(thread, SERVER, "read_notebook_output", {**html["request"], "file_path": notebook})
        assert not got.get("isError"), got
        body, note = got["content"]
        assert body == {"type": "text", "text": html["expect"]["envelope"]["selected"]["data"]}
        assert note == {"type": "text", "text": f"[text/html from {notebook} cell 5 output 0]"}


def test_project_scope_is_ignored_by_codex_until_trusted_and_setup_says_so(host):
    result = host.setup("--project")
    assert result["server"]["command"] == "j-cli"
    assert result["server"]["args"] == ["mcp", "serve", "--host", "codex"]
    assert result["project_trusted"] is False
    warning, hooks = result["warnings"]
    assert "open /hooks" in hooks and str(host.project / ".codex" / "hooks.json") in hooks
    assert json.dumps(os.path.realpath(host.project)) in warning and 'trust_level = "trusted"' in warning
    assert str(host.user_config) in warning
    before = host.user_config.read_text()
    with host.app_server() as server:
        ignored = server.wait_for("configWarning", lambda p: str(host.project / ".codex") in (p.get("summary") or ""))
        assert "trusted" in ignored["summary"]
        _no_jcli(server, server.start_thread())
    assert host.user_config.read_text() == before  # Codex trusted nothing by itself


def test_trusted_project_scope_runs_plain_jcli_rooted_at_the_project(host):
    host.trust_project()
    result = host.setup("--project")
    assert result["project_trusted"] is True and [w for w in result["warnings"] if "open /hooks" not in w] == []
    assert "--root" not in result["server"]["args"]
    with host.app_server() as server:
        thread = server.start_thread()
        server.wait_mcp_ready(thread, SERVER)
        ours = server.mcp_status(thread)[SERVER]
        assert ours["runtimeStatus"] == "connected" and set(ours["tools"]) == TOOLS
        # Codex may have started the server more than once (one per thread or status call, one may be
        # leaving): each is plain `j-cli mcp serve --host codex`, the script Codex found on PATH.
        argv = [cmdline for cmdline in server.descendants() if "mcp" in cmdline]
        assert argv and all(a[-4:] == ["mcp", "serve", "--host", "codex"] for a in argv), argv
        assert all(a[-5] == str(BIN / "j-cli") for a in argv), argv

        html = protocol_case("html")  # file_path relative: the root is the project dir, with no --root
        got = server.call_tool(thread, SERVER, "read_notebook_output", html["request"])
        assert not got.get("isError"), got
        body, note = got["content"]
        assert body == {"type": "text", "text": html["expect"]["envelope"]["selected"]["data"]}
        notebook = os.path.realpath(host.project / html["request"]["file_path"])
        assert note["text"] == f"[text/html from {notebook} cell 5 output 0]"
