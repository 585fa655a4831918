"""Every ``j-cli`` command that README.md, docs/**/*.md and the installed skill show really works.

``doc_commands.extract`` finds the commands: each shell line of a fenced
block that runs ``j-cli`` and each inline code span starting with
``j-cli `` (its docstring says how continuations, prompts, pipes and the
``[optional]`` / ``a|b`` notation of spans are read). Each one is then:

- **run** for real, the installed ``j-cli`` in a fixture workspace served by
  one embedded Jupyter Server (started with ``j-cli server start``, as a
  user would) and a real ipykernel, and must exit 0 without any usage error
  (exit 2, ``USAGE_ERROR``, "No such option", "No such command"). ``setup``
  runs too, with ``HOME`` and the host config dirs inside the fixture, and
  ``mcp serve`` starts and ends at the end of its (empty) stdin;
- a **mention** when it is a span that only names a command (``j-cli
  exec``): ``--help`` on that command path must exit 0;
- **parse-only** when listed in :data:`PARSE_ONLY` with its reason: the
  installed click app parses it (command path, flags, values) without
  invoking anything; ``test_the_checks_catch_a_renamed_flag`` shows that a
  renamed flag fails this check as it fails a real run.

Placeholders the docs use (``RUN_ID``, ``FILE``, ``N``, ...) are replaced,
word for word, from :data:`PLACEHOLDERS`. The workspace holds what the docs
name: ``analysis.py`` (tests/fixtures/docs_workspace, whose first cells are
the skill's example) with ``analysis.ipynb`` made from it by a real run,
``a.ipynb``, ``script.py``, ``report.ipynb`` (a cell tagged ``parameters``)
with ``params.yaml`` for the parameters examples, and a kept inline run with two outputs.

Order: one test per document, and inside it the commands in document order,
because a command relies on the ones before it (``session create`` before
``exec``, a notebook run before reading it). Documents may run in any order:
each starts from the same contract, the files and the kept run present, and
session ``main`` absent when the document creates it itself, present
otherwise. A command that breaks what later ones need is followed by the
step in :data:`RESTORE` (``session kill main`` by ``session create -n
main``).
"""

from __future__ import annotations

import doctest
import glob
import json
import os
import shutil
from pathlib import Path

import click
import doc_commands
import pytest
from doc_commands import Shown, extract
from helpers import REPO, TESTS, run_cli, servers_under, sidecars_under

from jcli.setup.skill import render_skill

WORKSPACE_FILES = TESTS / "fixtures" / "docs_workspace"
SESSION = "main"

#: Words of the docs that stand for a value, and the fixture's value.
#: ``{run_id}`` and ``{manifest}`` are the kept run the fixture made.
PLACEHOLDERS = {
    "RUN_ID": "{run_id}",
    "MANIFEST": "{manifest}",
    "DIR": ".",
    "NAME": "claude",
    "slow()": "sum(range(10**6))",  # docs/usage.md's stand-in for code that takes long
}

#: Commands checked by parsing only, and why they are not run.
PARSE_ONLY = {
    ("inline", ("server", "stop")): "stops the server every later command uses; the fixture's teardown runs it and asserts it succeeds",
    **{
        (kind, argv): "needs a git repository and changes its hooks; tests/pair/test_git_precommit.py runs it in real ones"
        for kind, argv in (
            ("block", ("setup", "git", "--hooks")),
            ("block", ("setup", "git", "--hooks", "--include", "notebooks/*.py")),
            ("block", ("setup", "git", "--hooks", "--remove")),
            ("block", ("_hooks", "pre-commit-pair-sync", "--stage-synced")),
            ("inline", ("_hooks", "pre-commit-pair-sync", "--stage-synced")),
        )
    },
    ("inline", ("-j", "notebook", "output", "--request", "-")): (
        "a plugin sends the request on stdin; docs/reading-outputs.md's `echo ... | j-cli -j notebook output --request -` runs it with one"
    ),
}

#: Background jobs need the sidecar, which the docs' workspace runs without; tests/runs/test_jobs_run.py runs each for real.
_JOBS = "needs the workspace's sidecar to hold a job (the docs' workspace runs with JCLI_SIDECAR=off); tests/runs/test_jobs_run.py runs it"
PARSE_ONLY.update(
    {
        (kind, argv): _JOBS
        for kind, argv in (
            ("block", ("-j", "exec", "main", "-f", "analysis.py", "--background")),
            ("block", ("-j", "job", "wait", "JOB_ID")),
            ("block", ("-j", "job", "status", "JOB_ID")),
            ("block", ("-j", "job", "output", "JOB_ID", "--offset", "0", "--limit", "4000")),
            ("block", ("-j", "job", "cancel", "JOB_ID")),
            ("inline", ("-j", "job", "status", "JOB_ID")),
            ("inline", ("-j", "job", "output", "JOB_ID")),
            ("inline", ("-j", "job", "cancel", "JOB_ID")),
        )
    }
)

#: What to run after a command that takes away what later commands need.
RESTORE = {
    ("session", "kill", SESSION): ("session", "create", "-n", SESSION),
    ("session", "kill", "scratch", SESSION): ("session", "create", "-n", SESSION),
}

#: The least each document must show; a parser that stopped finding commands fails here.
FLOORS = {"README.md": 12, "docs/usage.md": 25, "docs/notebook-runs.md": 8, "docs/hosts.md": 40, "SKILL.md": 15}
TOTAL_FLOOR = 150


def documents() -> dict[str, str]:
    docs = {"README.md": (REPO / "README.md").read_text(encoding="utf-8")}
    for path in sorted(glob.glob(str(REPO / "docs" / "**" / "*.md"), recursive=True)):
        docs[os.path.relpath(path, REPO)] = Path(path).read_text(encoding="utf-8")
    docs["SKILL.md"] = render_skill()  # the text setup installs
    return docs


DOCS = documents()
SHOWN = {name: extract(name, text) for name, text in DOCS.items()}


# -- the workspace ----------------------------------------------------------------


class Workspace:
    def __init__(self, root: Path, env: dict[str, str]):
        self.root = root
        self.env = env
        self.run_id = ""
        self.manifest = ""

    def cli(self, *argv: str, env=(), stdin: str | None = None):
        return run_cli(*argv, cwd=self.root, env={**self.env, **dict(env)}, stdin=None if stdin is None else stdin.encode())

    def ok(self, *argv: str):
        result = self.cli(*argv)
        assert result.returncode == 0, (argv, result.stdout, result.stderr)
        return result

    def has_session(self) -> bool:
        listed = self.ok("-j", "session", "list").json()
        rows = listed["sessions"] if isinstance(listed, dict) else listed
        return any(row.get("name") == SESSION for row in rows)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, starts_jupyter):
    base = tmp_path_factory.mktemp("doc-commands")
    root, home, runtime = base / "work", base / "home", base / "runtime"
    shutil.copytree(WORKSPACE_FILES, root)
    home.mkdir()
    runtime.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JCLI_", "CODEX_", "DSH_", "XDG_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_RUNTIME_DIR=str(runtime), JCLI_SIDECAR="off")
    ws = Workspace(root, env)
    try:
        ws.ok("server", "start")
        ws.ok("session", "create", "-n", "fixture")
        ws.ok("exec", "fixture", "-f", "analysis.py")  # analysis.ipynb, with outputs
        shutil.copyfile(root / "analysis.ipynb", root / "a.ipynb")
        kept = ws.ok(
            "-j", "exec", "fixture", "-c", 'print("kept"); from IPython.display import HTML, display; display(HTML("<i>kept</i>"))'
        )
        ws.run_id, ws.manifest = kept.json()["run"]["run_id"], kept.json()["run"]["manifest"]
        ws.ok("session", "kill", "fixture")
        yield ws
    finally:
        stopped = ws.cli("server", "stop")
        for proc in sidecars_under(runtime):
            proc.terminate()
            proc.wait(10)
        survivors = servers_under(runtime)
        for proc in survivors:
            proc.kill()
    assert stopped.returncode == 0, stopped.stderr
    assert not survivors, f"the docs' Jupyter Server survived `j-cli server stop`: {[p.pid for p in survivors]}"


# -- checking one command ---------------------------------------------------------------


def resolve(shown: Shown, ws: Workspace) -> tuple[str, ...]:
    values = {"run_id": ws.run_id, "manifest": ws.manifest}
    return tuple(PLACEHOLDERS[word].format(**values) if word in PLACEHOLDERS else word for word in shown.argv)


def click_parse(argv) -> click.Context:
    """Parse ``argv`` as the installed click app would, down to the leaf command, invoking nothing.

    Raises click's ``UsageError`` (``NoSuchOption``, ``BadParameter``, ...) as a run would.
    """
    from jcli.cli import app

    command: click.Command = app
    args, name, parent = list(argv), "j-cli", None
    while True:
        ctx = command.make_context(name, list(args), parent=parent)
        if not isinstance(command, click.Group):
            return ctx
        rest = ctx.args  # what follows the subcommand's name, which is the word before it
        name = args[len(args) - len(rest) - 1]
        sub = command.get_command(ctx, name)
        if sub is None:
            raise click.UsageError(f"No such command {name!r}", ctx)
        command, args, parent = sub, rest, ctx


def command_path(argv) -> list[str] | None:
    """The words of ``argv`` when they only name a command that needs more (a mention), else None."""
    from jcli.cli import app

    words = [w for w in argv if w not in ("-j", "--json")]
    command: click.Command = app
    for word in words:
        sub = command.get_command(click.Context(command), word) if isinstance(command, click.Group) else None
        if sub is None:
            return None
        command = sub
    needs_more = isinstance(command, click.Group) or any(p.required for p in command.params)
    return words if needs_more else None


def misuse(result) -> str | None:
    """Why ``result`` is a usage error, or None."""
    text = (result.stdout + result.stderr).decode("utf-8", "replace")
    if result.returncode == 2:
        return "exit 2"
    for sign in ("USAGE_ERROR", "No such option", "No such command", "Traceback"):
        if sign in text:
            return sign
    return None


def check(shown: Shown, ws: Workspace) -> tuple[str, str | None]:
    """Run or parse one shown command: (how it was checked, the problem or None)."""
    argv = resolve(shown, ws)
    if (shown.kind, shown.argv) in PARSE_ONLY:
        try:
            click_parse(argv)
        except click.ClickException as exc:
            return "parse-only", exc.format_message()
        return "parse-only", None
    if shown.kind == "inline" and (path := command_path(argv)) is not None:
        result = ws.cli(*path, "--help")
        return "mention", misuse(result) or (None if result.returncode == 0 else f"exit {result.returncode}")
    result = ws.cli(*argv, env=shown.env, stdin=shown.stdin)
    problem = misuse(result) or (None if result.returncode == 0 else f"exit {result.returncode}")
    if problem:
        problem += ": " + result.stderr.decode("utf-8", "replace")[-400:]
    restore = RESTORE.get(argv)
    if restore and not problem:
        ws.ok(*restore)
    return "run", problem


# -- the tests ----------------------------------------------------------------------------


@pytest.mark.timeout(600)
@pytest.mark.parametrize("doc", sorted(DOCS))
def test_every_command_a_document_shows_works(doc, workspace):
    creates = any(s.argv[:3] == ("session", "create", "-n") and s.argv[3:4] == (SESSION,) for s in SHOWN[doc])
    if workspace.has_session():
        if creates:
            workspace.ok("session", "kill", SESSION)
    elif not creates:
        workspace.ok("session", "create", "-n", SESSION)
    failures, kinds = [], []
    for shown in SHOWN[doc]:
        kind, problem = check(shown, workspace)
        kinds.append(kind)
        if problem:
            failures.append(f"{shown.label()}: {problem}")
    assert not failures, "\n".join(failures)
    assert len(kinds) == len(SHOWN[doc])  # every command was run, parsed or resolved
    if doc == "README.md":
        assert "parse-only" in kinds and "mention" in kinds and kinds.count("run") >= 10
    if doc == "docs/usage.md":
        assert kinds.count("run") > 20


def test_enough_commands_are_found_and_the_allowlist_is_used():
    counts = {doc: len(found) for doc, found in SHOWN.items()}
    for doc, floor in FLOORS.items():
        assert counts[doc] >= floor, counts
    assert sum(counts.values()) >= TOTAL_FLOOR, counts
    used = {(s.kind, s.argv) for found in SHOWN.values() for s in found}
    assert set(PARSE_ONLY) <= used, set(PARSE_ONLY) - used  # no stale entry
    placeholders = {w for found in SHOWN.values() for s in found for w in s.argv if w in PLACEHOLDERS}
    assert placeholders == set(PLACEHOLDERS)  # every entry stands for a word some document uses


def test_the_checks_catch_a_renamed_flag(workspace):
    """A wrong flag or command fails every kind of check, in human mode and with -j."""

    def shown(kind, *argv):
        return Shown("test", 1, kind, "", tuple(argv))

    for argv in (
        ("exec", SESSION, "-c", "1", "--timout", "30"),
        ("-j", "exec", SESSION, "-c", "1", "--timout", "30"),
        ("notebook", "output", "analysis.ipynb", "--cel", "2", "--output", "0"),  # the read fast path hands it to click
        ("-j", "notebook", "output", "analysis.ipynb", "--cell", "2", "--outptu", "0"),
        ("setup", "claude", "--projekt"),
        ("output", "shwo", "RUN_ID"),
    ):
        kind, problem = check(shown("block", *argv), workspace)
        assert kind == "run" and problem, argv
    for argv in (("server", "stopp"), ("-j", "notebook", "output", "--requestt", "-"), ("notebook", "output", "a.ipynb", "--cell", "x")):
        with pytest.raises(click.UsageError):
            click_parse(argv)
    for (_, argv), _reason in PARSE_ONLY.items():
        click_parse(argv)  # what the allowlist holds does parse
        with pytest.raises(click.UsageError):
            click_parse((*argv, "--no-such-flag"))
    assert command_path(("exec",)) == ["exec"] and command_path(("exek",)) is None
    kind, problem = check(shown("inline", "exec"), workspace)
    assert kind == "mention" and problem is None


def test_the_skill_shows_the_notebook_the_test_runs():
    skill = render_skill()
    example = skill[skill.index("```python\n") + len("```python\n") :]
    example = example[: example.index("```")]
    assert (WORKSPACE_FILES / "analysis.py").read_text(encoding="utf-8").startswith(example)
    for word in (
        "exec main -f analysis.py",
        "--cell",
        "notebook outputs",
        "notebook output",
        "output show",
        "kernel interrupt",
        "session kill",
    ):
        assert word in skill, word


def test_the_extractor_reads_blocks_spans_and_their_notation():
    text = "\n".join(
        [
            "Run `j-cli exec main -c 1` or `j-cli server",
            "start|status`; `j-cli` alone is the program.",
            "",
            "| a | `j-cli setup claude [--user\\|--project]` |",
            "",
            "```sh",
            "$ j-cli -j output list   # newest first",
            "X=1 j-cli sidecar status ; j-cli sidecar stop",
            "echo '{\"a\": 1}' \\",
            "  | j-cli -j notebook output --request -",
            "```",
            "```json",
            '{"message": "j-cli exec said \'no"}',
            "```",
        ]
    )
    found = [(s.line, s.kind, s.argv, s.env, s.stdin) for s in extract("t.md", text)]
    assert found == [
        (1, "inline", ("exec", "main", "-c", "1"), (), None),
        (1, "inline", ("server", "start"), (), None),
        (1, "inline", ("server", "status"), (), None),
        (4, "inline", ("setup", "claude"), (), None),
        (4, "inline", ("setup", "claude", "--user"), (), None),
        (4, "inline", ("setup", "claude", "--project"), (), None),
        (7, "block", ("-j", "output", "list"), (), None),
        (8, "block", ("sidecar", "status"), (("X", "1"),), None),
        (8, "block", ("sidecar", "stop"), (), None),
        (9, "block", ("-j", "notebook", "output", "--request", "-"), (), '{"a": 1}\n'),
    ]
    assert doctest.testmod(doc_commands).failed == 0


def test_the_kept_run_has_the_outputs_the_docs_read(workspace):
    shown = workspace.ok("-j", "output", "show", workspace.run_id).json()
    assert [o["output_index"] for o in shown["outputs"]] == [0, 1]
    assert json.loads(workspace.ok("-j", "notebook", "outputs", "a.ipynb", "--cell", "2").stdout)["output_count"] == 1
