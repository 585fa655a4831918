"""The git pre-commit pair check and its hook, in real repositories through real ``git commit``."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest
from helpers import BIN, run_cli

PY_V1 = "# %%\nx = 1\n\n# %%\ny = 2\n"
PY_V2 = "# %%\nx = 10\n\n# %%\ny = 2\n"
PY_V3 = "# %%\nx = 10\n\n# %%\ny = 2\n\n# %%\nz = 3\n"
HOOK_NAME = "pre-commit"
CHAINED = "pre-commit.jcli-chained"
UPSTREAM_SHIM = "#!/usr/bin/env bash\nset -euo pipefail\nexec j-cli _hooks pre-commit-pair-sync --include 'src/*.py'\n"


def git(repo, *args, check=True, env=None, stdin=None):
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False, env=env, input=stdin)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {args} failed: {proc.stderr}")
    return proc


def committed(repo, path, rev="HEAD"):
    return git(repo, "show", f"{rev}:{path}").stdout


def staged(repo, path):
    return git(repo, "show", f":{path}").stdout


def cells_of(notebook_text):
    return [(c["cell_type"], "".join(c["source"])) for c in json.loads(notebook_text)["cells"]]


@pytest.fixture
def repo(tmp_path):
    """A repository with one in-line pair committed (the notebook made by j-cli) and the hook installed."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "t")
    (root / "a.py").write_text(PY_V1)
    assert run_cli("convert", "py-to-ipynb", "a.py", cwd=root).returncode == 0
    git(root, "add", "a.py", "a.ipynb")
    git(root, "commit", "-q", "-m", "pair")
    return root


def install(root, *extra):
    result = run_cli("-j", "setup", "git", "--hooks", *extra, cwd=root)
    assert result.returncode == 0, result.stderr
    return result.json()


def commit(root, message="change"):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    return git(root, "commit", "-q", "-m", message, check=False, env=env)


def snapshot(root, *names):
    return {name: (root / name).read_bytes() for name in names}


def test_in_line_pair_passes_and_drift_is_blocked_with_the_files_cells_and_fix(repo):
    install(repo)
    (repo / "a.py").write_text(PY_V3)
    git(repo, "add", "a.py")
    before = snapshot(repo, "a.py", "a.ipynb")
    index_before = git(repo, "ls-files", "--stage").stdout
    blocked = commit(repo)
    assert blocked.returncode == 1
    assert "NOTEBOOK_OUT_OF_SYNC" in blocked.stderr and "a.py and a.ipynb" in blocked.stderr
    assert "edited: .py cell 0 (notebook cell 0); only in the .py: cell 2" in blocked.stderr
    assert "j-cli convert py-to-ipynb a.py\n      git add -- a.ipynb" in blocked.stderr
    assert "git commit --no-verify" in blocked.stderr
    # Nothing was written: not the working tree, not the index, no ref.
    assert snapshot(repo, "a.py", "a.ipynb") == before and git(repo, "ls-files", "--stage").stdout == index_before
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"
    assert git(repo, "for-each-ref").stdout.count("\n") == 1
    # -j: the envelope on stderr, exit 1, the pair's details.
    as_json = run_cli("-j", "_hooks", "pre-commit-pair-sync", cwd=repo)
    assert as_json.returncode == 1 and as_json.stdout == b""
    error = as_json.error()
    assert error["code"] == "NOTEBOOK_OUT_OF_SYNC"
    (pair,) = error["pairs"]
    assert pair["status"] == "out_of_line" and pair["side"] == "py"
    assert pair["drift"] == {"edited": [[0, 0]], "only_in_py": [2], "only_in_notebook": [], "reordered": False}
    assert pair["commands"] == ["j-cli convert py-to-ipynb a.py", "git add -- a.ipynb"]
    # The fix the message gives works, and then the commit passes.
    for command in pair["commands"]:
        argv = command.split()
        subprocess.run([str(BIN / "j-cli"), *argv[1:]] if argv[0] == "j-cli" else argv, cwd=repo, check=True, capture_output=True)
    done = commit(repo)
    assert done.returncode == 0, done.stderr
    assert cells_of(committed(repo, "a.ipynb")) == [("code", "x = 10"), ("code", "y = 2"), ("code", "z = 3")]
    passing = run_cli("-j", "_hooks", "pre-commit-pair-sync", cwd=repo)
    assert passing.returncode == 0 and passing.json() == {"status": "pass", "pairs": []}


def test_a_passing_check_prints_its_pairs_in_both_modes(repo):
    (repo / "a.py").write_text(PY_V2)
    assert run_cli("convert", "py-to-ipynb", "a.py", cwd=repo).returncode == 0
    git(repo, "add", "a.py", "a.ipynb")
    human = run_cli("_hooks", "pre-commit-pair-sync", cwd=repo)
    assert human.returncode == 0 and human.stdout.decode() == "j-cli pre-commit: in line: a.py\n"
    doc = run_cli("-j", "_hooks", "pre-commit-pair-sync", cwd=repo).json()
    assert doc == {"status": "pass", "pairs": [{"py": "a.py", "notebook": "a.ipynb", "status": "in_line"}]}


def test_a_working_tree_notebook_in_line_is_named_not_staged(repo):
    install(repo)
    (repo / "a.py").write_text(PY_V2)
    assert run_cli("convert", "py-to-ipynb", "a.py", cwd=repo).returncode == 0  # in line in the working tree only
    git(repo, "add", "a.py")
    blocked = commit(repo)
    assert blocked.returncode == 1
    assert "the working tree's a.ipynb is in line with the staged a.py: stage it:\n      git add -- a.ipynb" in blocked.stderr
    assert git(repo, "diff", "--cached", "--name-only").stdout == "a.py\n"  # the hook staged nothing
    git(repo, "add", "a.ipynb")
    assert commit(repo).returncode == 0


def test_partial_staging_is_checked_as_staged_and_never_commits_unstaged_content(repo):
    install(repo)
    # The working tree: two edits to a.py, and a notebook in line with the working tree (not with what is staged).
    (repo / "a.py").write_text("# %%\nx = 10\n\n# %%\ny = 20\n")
    assert run_cli("convert", "py-to-ipynb", "a.py", cwd=repo).returncode == 0
    # Stage only the first edit of a.py, as `git add -p` would.
    patch = git(repo, "diff", "-U0", "--", "a.py").stdout
    first_hunk = patch.split("\n@@")[0] + "\n@@" + patch.split("\n@@")[1].rstrip("\n") + "\n"
    git(repo, "apply", "--cached", "--unidiff-zero", "-", stdin=first_hunk)
    assert staged(repo, "a.py") == PY_V2
    worktree = snapshot(repo, "a.py", "a.ipynb")
    blocked = commit(repo)
    assert blocked.returncode == 1
    assert "j-cli _hooks pre-commit-pair-sync --stage-synced" in blocked.stderr
    assert "convert" not in blocked.stderr  # converting the working tree would pull the unstaged edit in
    fixed = run_cli("-j", "_hooks", "pre-commit-pair-sync", "--stage-synced", cwd=repo).json()
    assert fixed["staged"] == [{"py": "a.py", "notebook": "a.ipynb", "sync": {"kept": 1, "edited": 1, "added": 0, "removed": 0}}]
    assert snapshot(repo, "a.py", "a.ipynb") == worktree  # the working tree was not touched
    assert commit(repo).returncode == 0
    assert committed(repo, "a.py") == PY_V2  # the staged part only
    assert cells_of(committed(repo, "a.ipynb")) == [("code", "x = 10"), ("code", "y = 2")]
    assert snapshot(repo, "a.py", "a.ipynb") == worktree
    assert git(repo, "diff", "--name-only").stdout.split() == ["a.ipynb", "a.py"]  # the rest stays unstaged


def test_outputs_of_unchanged_cells_survive_stage_synced(repo):
    nb = json.loads((repo / "a.ipynb").read_text())
    nb["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["kept\n"]}]
    nb["cells"][1]["execution_count"] = 2
    (repo / "a.ipynb").write_text(json.dumps(nb))
    git(repo, "add", "a.ipynb")
    git(repo, "commit", "-q", "-m", "outputs")
    (repo / "a.py").write_text(PY_V2)
    git(repo, "add", "a.py")
    (repo / "a.py").write_text(PY_V3)  # an unstaged edit on top
    human = run_cli("_hooks", "pre-commit-pair-sync", "--stage-synced", cwd=repo)
    assert human.returncode == 0 and human.stdout.decode().startswith("staged a.ipynb, in line with the staged a.py")
    cells = json.loads(staged(repo, "a.ipynb"))["cells"]
    assert cells[0]["outputs"] == [] and cells[1]["outputs"][0]["text"] == ["kept\n"]


def test_each_kind_of_pair_change_has_a_defined_outcome(repo):
    def check():
        result = run_cli("-j", "_hooks", "pre-commit-pair-sync", cwd=repo)
        return result.returncode, (result.json() if result.returncode == 0 else result.error())

    (repo / "solo.ipynb").write_text((repo / "a.ipynb").read_text())
    (repo / "plain.py").write_text("print('no markers')\n")
    (repo / "plain.ipynb").write_text((repo / "a.ipynb").read_text())
    git(repo, "add", "solo.ipynb", "plain.py", "plain.ipynb")
    code, doc = check()
    assert code == 0
    assert {p["py"]: p["status"] for p in doc["pairs"]} == {"solo.py": "not_paired", "plain.py": "skipped"}
    git(repo, "commit", "-q", "-m", "more", "--no-verify")

    git(repo, "mv", "a.py", "b.py")  # the .py renamed, the notebook left behind
    code, doc = check()
    assert code == 0
    statuses = {p["py"]: (p["status"], p.get("note", "")) for p in doc["pairs"]}
    assert statuses["a.py"][0] == "not_paired" and "no longer a pair" in statuses["a.py"][1]
    assert statuses["b.py"] == ("not_paired", "")
    git(repo, "mv", "a.ipynb", "b.ipynb")  # the pair renamed together: checked under its new name
    code, doc = check()
    assert code == 0 and {"py": "b.py", "notebook": "b.ipynb", "status": "in_line"} in doc["pairs"]

    (repo / "b.ipynb").write_bytes(b"\x89PNG not a notebook")
    git(repo, "add", "b.ipynb")
    code, err = check()
    assert code == 1 and err["code"] == "NOTEBOOK_OUT_OF_SYNC"
    assert "the staged b.ipynb is not a readable notebook" in err["message"]
    assert [p["status"] for p in err["pairs"] if p["py"] == "b.py"] == ["unreadable"]

    git(repo, "rm", "-q", "--cached", "b.ipynb")  # a notebook leaving the index: the .py stays, unpaired
    code, doc = check()
    assert code == 0 and [p["status"] for p in doc["pairs"] if p["py"] == "b.py"] == ["not_paired"]


def test_include_limits_the_check_to_matching_pairs(repo):
    (repo / "a.py").write_text(PY_V2)
    git(repo, "add", "a.py")
    assert run_cli("_hooks", "pre-commit-pair-sync", "--include", "src/*.py", cwd=repo).returncode == 0
    assert run_cli("_hooks", "pre-commit-pair-sync", "--include", "*.py", cwd=repo).returncode == 1


def test_a_check_that_cannot_run_stops_the_commit_and_names_the_escape(tmp_path):
    human = run_cli("_hooks", "pre-commit-pair-sync", cwd=tmp_path)
    assert human.returncode == 2
    assert "not inside a git work tree" in human.stderr.decode() and "git commit --no-verify" in human.stderr.decode()
    as_json = run_cli("-j", "_hooks", "pre-commit-pair-sync", cwd=tmp_path)
    assert as_json.returncode == 2 and as_json.error()["code"] == "USAGE_ERROR"
    no_git = run_cli("-j", "_hooks", "pre-commit-pair-sync", cwd=tmp_path, env={**os.environ, "PATH": "/nonexistent"})
    assert no_git.returncode == 1 and no_git.error()["code"] == "GIT_FAILED"
    assert "git commit --no-verify" in no_git.error()["message"]


USER_HOOK = """#!/bin/sh
# the user's own hook
echo user >> "$(git rev-parse --git-dir)/hook-order"
[ ! -e fail-user-hook ]
"""


def test_setup_hooks_chains_an_existing_hook_and_removal_is_byte_identical(repo):
    hooks = repo / ".git" / "hooks"
    (hooks / HOOK_NAME).write_text(USER_HOOK)
    (hooks / HOOK_NAME).chmod(0o750)
    first = install(repo)
    assert first["changed"] and first["chained"] == str(hooks / CHAINED) and first["hook"] == str(hooks / HOOK_NAME)
    assert (hooks / CHAINED).read_text() == USER_HOOK and stat.S_IMODE((hooks / CHAINED).stat().st_mode) == 0o750
    hook_bytes = (hooks / HOOK_NAME).read_bytes()
    again = install(repo)
    assert again["changed"] is False and (hooks / HOOK_NAME).read_bytes() == hook_bytes and again["chained"] == str(hooks / CHAINED)
    # Both run on a commit, the user's hook first; drift still blocks.
    (repo / "a.py").write_text(PY_V2)
    git(repo, "add", "a.py")
    blocked = commit(repo)
    assert blocked.returncode == 1 and "NOTEBOOK_OUT_OF_SYNC" in blocked.stderr
    assert (repo / ".git" / "hook-order").read_text() == "user\n"
    # A failing user hook fails the commit even when the pair is in line.
    assert run_cli("convert", "py-to-ipynb", "a.py", cwd=repo).returncode == 0
    git(repo, "add", "a.ipynb")
    (repo / "fail-user-hook").write_text("")
    failed = commit(repo)
    assert failed.returncode == 1 and "NOTEBOOK_OUT_OF_SYNC" not in failed.stderr
    (repo / "fail-user-hook").unlink()
    ok = commit(repo)
    assert ok.returncode == 0, ok.stderr
    removed = run_cli("-j", "setup", "git", "--hooks", "--remove", cwd=repo).json()
    assert removed["removed"] and removed["hook_removed"] and removed["restored"] == str(hooks / HOOK_NAME)
    assert (hooks / HOOK_NAME).read_text() == USER_HOOK and stat.S_IMODE((hooks / HOOK_NAME).stat().st_mode) == 0o750
    assert not (hooks / CHAINED).exists() and not (repo / ".gitignore").exists()
    human = run_cli("setup", "git", "--hooks", "--remove", cwd=repo)
    assert human.returncode == 0 and human.stdout.decode().endswith("nothing to remove\n")
    assert (hooks / HOOK_NAME).read_text() == USER_HOOK


def test_a_symlinked_hook_is_chained_and_put_back_as_the_same_link(repo):
    shared = repo / "tools" / "pre-commit.sh"
    shared.parent.mkdir()
    shared.write_text(USER_HOOK)
    shared.chmod(0o755)
    link = repo / ".git" / "hooks" / HOOK_NAME
    link.symlink_to(shared)
    install(repo)
    assert (repo / ".git" / "hooks" / CHAINED).is_symlink() and not link.is_symlink()
    assert shared.read_text() == USER_HOOK  # the link's target is never written
    run_cli("setup", "git", "--hooks", "--remove", cwd=repo)
    assert link.is_symlink() and os.readlink(link) == str(shared)


def test_core_hooks_path_inside_the_work_tree_gets_a_portable_hook(repo):
    git(repo, "config", "core.hooksPath", "ci-hooks")
    human = run_cli("setup", "git", "--hooks", cwd=repo)
    assert human.returncode == 0, human.stderr
    assert f"hook: {repo / 'ci-hooks' / HOOK_NAME}" in human.stdout.decode()
    hook = (repo / "ci-hooks" / HOOK_NAME).read_text()
    assert hook.splitlines()[-1] == "exec j-cli _hooks pre-commit-pair-sync"  # shared: j-cli from PATH
    assert not (repo / ".git" / "hooks" / HOOK_NAME).exists()
    (repo / "a.py").write_text(PY_V2)
    git(repo, "add", "a.py")
    assert commit(repo).returncode == 1
    # Without j-cli on PATH the hook still stops the commit, and says how to get past it.
    env = dict(os.environ, PATH=os.path.dirname(subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()))
    no_jcli = git(repo, "commit", "-q", "-m", "x", check=False, env=env)
    assert no_jcli.returncode == 1 and "git commit --no-verify" in no_jcli.stderr
    run_cli("setup", "git", "--hooks", "--remove", cwd=repo)
    assert not (repo / "ci-hooks").exists()  # setup created the directory, and took it away again


def test_upstream_shim_is_replaced_and_the_users_other_hooks_stay(repo):
    githooks = repo / ".githooks"
    githooks.mkdir()
    (githooks / HOOK_NAME).write_text(UPSTREAM_SHIM)
    (githooks / HOOK_NAME).chmod(0o755)
    (githooks / "commit-msg").write_text("#!/bin/sh\nexit 0\n")
    git(repo, "config", "core.hooksPath", ".githooks")
    (repo / ".gitignore").write_text("# >>> jcli managed (git hooks) >>>\n*.ipynb\n**/.j-cli/\n# <<< jcli managed (git hooks) <<<\n")
    result = run_cli("-j", "setup", "git", "--hooks", cwd=repo)
    doc = result.json()
    assert doc["replaced_upstream"] is True and doc["chained"] is None and doc["hooks_path"] == ".githooks"
    assert any("ignores *.ipynb" in w for w in doc["warnings"])
    hook = (githooks / HOOK_NAME).read_text()
    assert "set -euo pipefail" not in hook and hook.splitlines()[-1] == "exec j-cli _hooks pre-commit-pair-sync --include 'src/*.py'"
    assert not (githooks / CHAINED).exists()  # upstream's shim is replaced, not chained (it would check twice)
    assert (githooks / "commit-msg").read_text() == "#!/bin/sh\nexit 0\n"
    human = run_cli("setup", "git", "--hooks", cwd=repo)
    assert "replaced upstream" not in human.stdout.decode() and "already up to date" in human.stdout.decode()


def test_include_without_hooks_is_a_usage_error(repo):
    result = run_cli("-j", "setup", "git", "--include", "*.py", cwd=repo)
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"


def test_commit_all_and_commit_path_are_checked_in_their_own_index(repo):
    install(repo)
    (repo / "a.py").write_text(PY_V2)  # nothing staged: `commit -a` and `commit a.py` stage into a temporary index
    for args in (("-a",), ("--", "a.py")):
        env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
        blocked = git(repo, "commit", "-q", "-m", "x", *args, check=False, env=env)
        assert blocked.returncode == 1 and "a.py and a.ipynb: edited: .py cell 0 (notebook cell 0)" in blocked.stderr
    assert git(repo, "diff", "--cached", "--name-only").stdout == ""  # the real index was never touched


def test_a_staged_py_whose_markers_repeat_an_id_is_blocked_naming_the_cells_and_lines(repo):
    install(repo)
    (repo / "a.py").write_text('# %% id="k"\nx = 1\n\n# %% id="k"\ny = 2\n')
    git(repo, "add", "a.py")
    before = snapshot(repo, "a.py", "a.ipynb")
    blocked = commit(repo)
    assert blocked.returncode == 1 and "NOTEBOOK_OUT_OF_SYNC" in blocked.stderr
    assert 'id="k" on cells 0 (line 1) and 1 (line 4)' in blocked.stderr and "delete the copied id" in blocked.stderr
    assert snapshot(repo, "a.py", "a.ipynb") == before and git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"
    (pair,) = run_cli("-j", "_hooks", "pre-commit-pair-sync", cwd=repo).error()["pairs"]
    assert pair["status"] == "duplicate_ids" and pair["commands"] == []
    stage = run_cli("-j", "_hooks", "pre-commit-pair-sync", "--stage-synced", cwd=repo).json()  # never stages a notebook from it
    assert stage["staged"] == [] and [p["py"] for p in stage["left"]] == ["a.py"] and 'id="k"' in stage["left"][0]["reason"]
    assert git(repo, "diff", "--cached", "--name-only").stdout.split() == ["a.py"]
