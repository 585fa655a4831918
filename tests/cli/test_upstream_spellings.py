"""Upstream jupyter-jcli 0.9.7's spellings work, hidden from ``--help`` where j-cli's name is the one to use.

Each test runs ``j-cli`` (``helpers.run_cli``: the spellings are the parser's) with the line as upstream's README, skill or
``--help`` spells it (see ``docs/migration.md``).
"""

from __future__ import annotations

import json
import os
import subprocess

import jupytext
import nbformat
import pytest
from helpers import run_cli

PY = '# %%\nx = 1\n\n# %% [markdown]\n# hi\n\n# %% id="abc"\ny = 2\n'


def _ok(result):
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result


def test_convert_takes_the_output_as_a_second_positional(tmp_path):
    (tmp_path / "a.py").write_text(PY)
    _ok(run_cli("convert", "py-to-ipynb", "a.py", "made.ipynb", cwd=tmp_path))
    nb = nbformat.read(tmp_path / "made.ipynb", as_version=4)
    assert [c.source for c in nb.cells] == ["x = 1", "hi", "y = 2"]
    _ok(run_cli("convert", "ipynb-to-py", "made.ipynb", "back.py", cwd=tmp_path))
    assert [c.source for c in jupytext.read(tmp_path / "back.py").cells] == ["x = 1", "hi", "y = 2"]
    assert not (tmp_path / "a.ipynb").exists() and not (tmp_path / "made.py").exists()


def test_convert_refuses_two_different_outputs(tmp_path):
    (tmp_path / "a.py").write_text(PY)
    result = run_cli("convert", "py-to-ipynb", "a.py", "one.ipynb", "-o", "two.ipynb", cwd=tmp_path)
    assert result.returncode == 2 and b"two outputs given" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["a.py"]
    same = run_cli("convert", "py-to-ipynb", "a.py", "one.ipynb", "-o", "one.ipynb", cwd=tmp_path)
    assert same.returncode == 0 and (tmp_path / "one.ipynb").exists()


def test_py_to_ipynb_accepts_allow_mixed_cell_ids_and_keeps_the_given_id(tmp_path):
    (tmp_path / "a.py").write_text(PY)
    _ok(run_cli("convert", "py-to-ipynb", "a.py", "--allow-mixed-cell-ids", cwd=tmp_path))
    ids = [c["id"] for c in nbformat.read(tmp_path / "a.ipynb", as_version=4).cells]
    assert ids[2] == "abc" and len(set(ids)) == 3


def test_assign_ids_on_a_py_writes_ids_on_the_markers_only(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(PY)
    doc = _ok(run_cli("-j", "convert", "assign-ids", "a.py", cwd=tmp_path)).json()
    assert (doc["ids_assigned"], doc["assigned_cells"], doc["written"]) == (2, [0, 1], True)
    cells = jupytext.read(path).cells
    assert [c.source for c in cells] == ["x = 1", "hi", "y = 2"]
    lines = path.read_text().splitlines()
    assert lines[0].startswith('# %% id="') and lines[3].startswith('# %% [markdown] id="') and lines[6] == '# %% id="abc"'
    before = path.stat().st_mtime_ns
    again = _ok(run_cli("-j", "convert", "assign-ids", "a.py", cwd=tmp_path)).json()
    assert again["written"] is False and path.stat().st_mtime_ns == before


def test_assign_ids_on_a_py_gives_code_before_the_first_marker_a_marker(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("import os\n\n# %%\nx = 1\n")
    _ok(run_cli("convert", "assign-ids", "a.py", cwd=tmp_path))
    text = path.read_text()
    assert text.startswith('# %% id="') and text.count("# %% id=") == 2
    assert [c.source for c in jupytext.read(path).cells] == ["import os", "x = 1"]


def test_assign_ids_on_a_py_leaves_a_marker_it_cannot_extend_alone(tmp_path):
    path = tmp_path / "a.py"
    original = '# %% {"tags": ["a"]}\nx = 1\n'
    path.write_text(original)
    result = run_cli("-j", "convert", "assign-ids", "a.py", cwd=tmp_path)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"
    assert path.read_text() == original


def test_session_list_takes_no_vars(tmp_path, use_jupyter):
    result = _ok(run_cli("-j", "session", "list", "--no-vars", cwd=tmp_path))
    assert all("vars" not in row for row in result.json()["sessions"])


def test_output_clean_takes_days(tmp_path):
    doc = _ok(run_cli("-j", "output", "clean", "--days", "3", "--dry-run", cwd=tmp_path)).json()
    assert doc["policy"]["max_age_days"] == 3
    bad = run_cli("-j", "output", "clean", "--days", "3", "--max-age-days", "4", cwd=tmp_path)
    assert bad.returncode == 2


def test_output_retention_days_counts_when_max_age_days_is_unset(tmp_path):
    env = {**os.environ, "JCLI_OUTPUT_RETENTION_DAYS": "0"}
    env.pop("JCLI_OUTPUT_MAX_AGE_DAYS", None)
    bad = run_cli("-j", "output", "clean", "--dry-run", cwd=tmp_path, env=env)
    assert bad.returncode == 2 and bad.error()["variable"] == "JCLI_OUTPUT_RETENTION_DAYS"
    used = _ok(run_cli("-j", "output", "clean", "--dry-run", cwd=tmp_path, env={**env, "JCLI_OUTPUT_RETENTION_DAYS": "2"})).json()
    assert used["policy"]["max_age_days"] == 2
    ours_wins = _ok(run_cli("-j", "output", "clean", "--dry-run", cwd=tmp_path, env={**env, "JCLI_OUTPUT_MAX_AGE_DAYS": "4"})).json()
    assert ours_wins["policy"]["max_age_days"] == 4


def test_setup_git_local_installs_the_hook_as_upstream_did(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _ok(run_cli("setup", "git", "--local", cwd=tmp_path))
    assert (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    _ok(run_cli("setup", "git", "--project", "--force", cwd=tmp_path))
    _ok(run_cli("setup", "git", "--local", "--remove", cwd=tmp_path))
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize(
    ("host", "flag", "scope"), [("codex", "--local", "project"), ("dsh", "--proj", "project"), ("opencode", "--local", "project")]
)
def test_setup_takes_upstreams_scope_names(tmp_path, host, flag, scope):
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "DSH_HOME": str(home / ".dsh"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    work = tmp_path / "w"
    work.mkdir()
    upstream = run_cli("-j", "setup", host, flag, "--force", cwd=work, env=env)
    assert upstream.returncode == 0, upstream.stderr
    ours = run_cli("-j", "setup", host, f"--{scope}", cwd=work, env=env)
    assert ours.returncode == 0 and ours.json()["changed"] is False


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("setup", "opencode", "--only", "skill"), "j-cli setup opencode --only hook --only tool"),
        (("setup", "opencode", "--skill-dir", "skills"), "run `j-cli setup opencode` without --skill-dir"),
        (("setup", "dsh", "--only", "hook"), "j-cli setup dsh --only hook --only tool"),
        (("setup", "codex", "--only", "hook", "--skill-dir", "skills"), "add `--only skill`"),
    ],
)
def test_setup_parts_it_cannot_choose_say_what_to_type_and_write_nothing(tmp_path, argv, says):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex"), "XDG_CONFIG_HOME": str(home / ".config")}
    result = run_cli(*argv, cwd=tmp_path, env=env)
    assert result.returncode == 2 and says.encode() in result.stderr, result.stderr
    assert sorted(os.listdir(home)) == [] and sorted(os.listdir(tmp_path)) == ["home"]


@pytest.mark.parametrize(
    ("argv", "hidden"),
    [
        (("exec", "--help"), "--stream"),
        (("output", "clean", "--help"), "--days"),
        (("session", "list", "--help"), "--no-vars"),
        (("convert", "py-to-ipynb", "--help"), "--allow-mixed-cell-ids"),
        (("notebook", "output", "--help"), "--supported-mime"),
        (("setup", "opencode", "--help"), "--skill-dir"),
        (("setup", "opencode", "--help"), "--only"),
        (("setup", "git", "--help"), "--local"),
    ],
)
def test_upstream_spellings_stay_out_of_help(argv, hidden):
    assert hidden.encode() not in _ok(run_cli(*argv)).stdout


def test_supported_mime_picks_the_first_representation_the_output_has(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("f")])
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<b>x</b>", "text/plain": "x"})]
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    args = ("-j", "notebook", "output", "n.ipynb", "--cell", "0", "--output", "0")
    doc = _ok(run_cli(*args, "--supported-mime", "image/png", "--supported-mime", "text/plain", cwd=tmp_path)).json()
    assert doc["selected"]["mime_type"] == "text/plain" and doc["selected"]["data"] == "x"
    none = run_cli(*args, "--supported-mime", "image/png", cwd=tmp_path)
    assert none.returncode != 0 and none.error()["code"] == "MIME_NOT_FOUND"
    no_output = run_cli("-j", "notebook", "output", "n.ipynb", "--cell", "0", "--supported-mime", "text/plain", cwd=tmp_path)
    assert no_output.returncode == 2
