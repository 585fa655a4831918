"""The real OpenCode binary (pinned in tests/hosts) loads the plugin ``j-cli setup opencode`` placed.

Each test installs the plugin with the real ``j-cli setup opencode`` into a
temporary project (or a temporary user config dir), then runs ``opencode
debug agent build --tool read_notebook_output --params JSON``: OpenCode's own
loader imports the file and runs the tool, with no model. OpenCode runs with
no network at all (``unshare -n`` where the machine allows it, and its
fetches switched off): the dependency it would install into each config dir
is seeded from the pinned ``tests/hosts/opencode-deps``.

Every run fails the test if OpenCode logged a plugin load failure.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess

import pytest
from helpers import BIN, FIXTURES, load_cases, run_cli
from hostbins import host_env, offline_prefix, seed_opencode_dir

NOTEBOOK = "kernel_v4.5.ipynb"
#: Switches for everything OpenCode would otherwise fetch or start on its own.
_QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
}
_LOAD_FAILURES = ("failed to load plugin", "Plugin export is not a function")


class OpenCode:
    """One temporary OpenCode world: a HOME, a project, and the j-cli plugin in it."""

    def __init__(self, host_bin, tmp_path, scope="project"):
        self.bin = host_bin / "opencode"
        self.home = tmp_path / "home"
        self.project = tmp_path / "project"
        self.project.mkdir()
        shutil.copyfile(FIXTURES / NOTEBOOK, self.project / NOTEBOOK)
        self.path = f"{BIN}{os.pathsep}{os.environ['PATH']}"  # a project file names plain j-cli: PATH finds it
        self.user_config = self.home / ".config" / "opencode"
        env = host_env(self.home, PATH=self.path)
        setup = run_cli("-j", "setup", "opencode", f"--{scope}", cwd=self.project, env=env)
        assert setup.returncode == 0, setup.stderr
        self.setup = setup.json()
        seed_opencode_dir(self.user_config)
        seed_opencode_dir(self.project / ".opencode")

    def run_tool(self, params: dict, path: str | None = None) -> subprocess.CompletedProcess:
        env = host_env(self.home, PATH=path or self.path, JCLI_SIDECAR="off", **_QUIET)
        argv = [
            *offline_prefix(),
            str(self.bin),
            "debug",
            "agent",
            "build",
            "--print-logs",
            "--tool",
            "read_notebook_output",
            "--params",
            json.dumps(params),
        ]
        proc = subprocess.run(argv, cwd=self.project, env=env, capture_output=True, text=True, timeout=100)
        for failure in _LOAD_FAILURES:
            assert failure not in proc.stderr, [ln for ln in proc.stderr.splitlines() if failure in ln]
        assert "Tool read_notebook_output not found" not in proc.stderr, proc.stderr[-2000:]
        return proc

    def read(self, params: dict, path: str | None = None) -> dict:
        proc = self.run_tool(params, path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)["result"]


def _case(name: str) -> dict:
    return next(c for c in load_cases() if c["name"] == name)


def _notebook_bytes(cell: int, output: int, mime: str) -> bytes:
    with open(FIXTURES / NOTEBOOK, encoding="utf-8") as fh:
        data = json.load(fh)["cells"][cell]["outputs"][output]["data"][mime]
    return base64.b64decode("".join(data) if isinstance(data, list) else data)


def test_project_plugin_loads_and_reads_an_image_as_one_attachment_with_the_notebooks_bytes(host_bin, tmp_path):
    world = OpenCode(host_bin, tmp_path)
    result = world.read({"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0})
    (attachment,) = result["attachments"]
    assert attachment["type"] == "file" and attachment["mime"] == "image/png"
    head, data = attachment["url"].split(",", 1)
    assert head == "data:image/png;base64"
    assert base64.b64decode(data, validate=True) == _notebook_bytes(2, 0, "image/png")
    for text in (result["output"], result["title"], json.dumps(result.get("metadata"))):
        assert data[:60] not in text  # the base64 is only in the attachment


@pytest.mark.parametrize("name", ["html", "html_as_plain", "markdown", "stream_stdout"])
def test_text_and_html_arrive_verbatim(host_bin, tmp_path, name):
    case = _case(name)
    assert case["request"]["file_path"] == NOTEBOOK
    world = OpenCode(host_bin, tmp_path)
    result = world.read(case["request"])
    envelope = case["expect"]["envelope"]
    expected = envelope["stream"]["data"] if "stream" in envelope else envelope["selected"]["data"]
    assert result["output"].encode("utf-8") == expected.encode("utf-8")
    assert "attachments" not in result


def test_the_catalog_lists_outputs_and_attaches_nothing(host_bin, tmp_path):
    world = OpenCode(host_bin, tmp_path)
    result = world.read({"file_path": NOTEBOOK, "cell_index": 2})
    catalog = json.loads(result["output"])
    assert [o["available_mime_types"] for o in catalog["outputs"]] == [["image/png", "text/plain"]]
    assert "attachments" not in result


def test_a_missing_cell_is_a_coded_error_from_the_tool(host_bin, tmp_path):
    world = OpenCode(host_bin, tmp_path)
    proc = world.run_tool({"file_path": NOTEBOOK, "cell_index": 999})
    assert proc.returncode != 0
    assert "CELL_NOT_FOUND: cell 999 is outside" in proc.stderr


def test_a_project_plugin_without_j_cli_on_path_says_what_to_set(host_bin, tmp_path):
    world = OpenCode(host_bin, tmp_path)
    bare = tmp_path / "bare-bin"  # a PATH with a shell but no j-cli
    bare.mkdir()
    for tool in ("sh", "bash", "env"):
        if shutil.which(tool):
            (bare / tool).symlink_to(shutil.which(tool))
    proc = world.run_tool({"file_path": NOTEBOOK, "cell_index": 2}, path=str(bare))
    assert proc.returncode != 0
    assert "JCLI_UNAVAILABLE: cannot run j-cli (j-cli: ENOENT)" in proc.stderr and "set JCLI_BIN" in proc.stderr


def test_user_plugin_loads_and_finds_this_j_cli_without_path(host_bin, tmp_path):
    world = OpenCode(host_bin, tmp_path, scope="user")
    assert world.setup["plugin"] == str(world.user_config / "plugins" / "jcli.js")
    assert not (world.project / ".opencode" / "plugins" / "jcli.js").exists()
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    result = world.read({"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0}, path=str(bare))
    (attachment,) = result["attachments"]
    assert base64.b64decode(attachment["url"].split(",", 1)[1]) == _notebook_bytes(2, 0, "image/png")
