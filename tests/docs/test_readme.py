"""README.md stays a newcomer's guide: short, linked to every docs page, and its quick start prints what it shows.

The quick start is run for real: the README's own shell blocks, in order,
with its ``analysis.py`` written into a fresh workspace, on the embedded
Jupyter Server that its ``j-cli server start`` starts, with a real ipykernel
and matplotlib. Each shell block followed by a ``text`` block must print
(stdout then stderr, merged as a non-terminal run shows them) what that
block shows, after :data:`NORMALISE`.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from doc_commands import shell_commands
from helpers import JCLI, REPO, TESTS, servers_under

README = (REPO / "README.md").read_text(encoding="utf-8")
#: The most words README.md may have (``wc -w``); the reference lives in docs/.
MAX_WORDS = 1500
#: Where the README's shown output says it ran; the test's workspace path becomes this.
SHOWN_WORKSPACE = "/home/me/project"
#: What may differ between the README's output and a real run, and what both sides become. Nothing else may differ.
NORMALISE = (
    (re.compile(r"\b\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{8}\b"), "RUN_ID"),  # a run id: its UTC time and random bits
    (re.compile(r"\b\d+(?:\.\d+)? (?:B|KiB|MiB)\b|\b\d+ bytes\b"), "SIZE"),  # a PNG's size follows matplotlib and its fonts
)


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else len(README)]


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of each fenced block of ``text``, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)


def normalise(text: str) -> str:
    for pattern, word in NORMALISE:
        text = pattern.sub(word, text)
    return text


def quick_start() -> tuple[str, list[tuple[str, str | None]]]:
    """The quick start's ``analysis.py`` and its shell blocks, each with the output shown after it (or None)."""
    program, steps = "", []
    for language, body in fenced_blocks(section("Quick start")):
        if language == "python":
            program = body
        elif language == "sh":
            steps.append((body, None))
        elif language == "text":
            assert steps and steps[-1][1] is None, "an output block follows one shell block"
            steps[-1] = (steps[-1][0], body)
        else:
            raise AssertionError(f"a {language!r} block in the quick start")
    return program, steps


def test_the_readme_is_a_short_guide():
    words = len(README.split())  # what `wc -w` counts
    assert words < MAX_WORDS, f"README.md has {words} words; move reference text into docs/ (the limit is {MAX_WORDS})"


def test_the_readme_links_every_docs_page():
    pages = sorted(os.path.relpath(p, REPO) for p in (REPO / "docs").rglob("*.md"))
    assert len(pages) > 10
    missing = [page for page in pages if f"]({page})" not in README]
    assert not missing, f"README.md does not link {missing}"


def test_every_relative_link_of_the_readme_and_docs_leads_to_a_file():
    broken = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = re.sub(r"^```.*?^```$", "", doc.read_text(encoding="utf-8"), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            if not (doc.parent / target.split("#")[0]).exists():
                broken.append(f"{os.path.relpath(doc, REPO)}: {target}")
    assert not broken, broken


def test_a_fresh_clone_is_set_up_by_make_demo_and_make_test():
    (block,) = [body for language, body in fenced_blocks(section("Set up a fresh clone")) if language == "sh"]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
    assert commands == ["make demo", "make test"]
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo: \$\(VENV\)/\.installed", makefile, re.M)
    # make test builds the venv among what it prepares side by side, before pytest
    assert re.search(r"^test:\n\t\$\(MAKE\) [^\n]* test-prep\n", makefile, re.M)
    assert re.search(r"^test-prep: \$\(TEST_PREP\)$", makefile, re.M)
    assert re.search(r"^TEST_PREP := \$\(VENV\)/\.installed ", makefile, re.M)


def test_the_quick_start_notebook_is_the_one_the_docs_workspace_runs():
    program, steps = quick_start()
    assert (TESTS / "fixtures" / "docs_workspace" / "analysis.py").read_text(encoding="utf-8").startswith(program)
    assert len(steps) >= 4 and sum(shown is not None for _, shown in steps) >= 3


@pytest.mark.timeout(300)
def test_the_quick_start_prints_what_the_readme_shows(tmp_path, starts_jupyter):
    program, steps = quick_start()
    work = tmp_path / "work"
    work.mkdir()
    (work / "analysis.py").write_text(program, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JCLI_JUPYTER_", "JCLI_EXEC_"))}
    runtime = Path(env["XDG_RUNTIME_DIR"])
    run_ids: list[str] = []
    mismatches = []
    try:
        for block, shown in steps:
            printed = ""
            for line in block.splitlines():
                for assignments, argv, stdin in shell_commands(line):
                    argv = [run_ids[-1] if word == "RUN_ID" else word for word in argv]
                    proc = subprocess.run(
                        [JCLI, *argv],
                        cwd=work,
                        env={**env, **dict(assignments)},
                        input=(stdin or "").encode(),
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        timeout=240,
                    )
                    text = proc.stdout.decode("utf-8", "replace")
                    assert proc.returncode == 0, (argv, text)
                    run_ids += NORMALISE[0][0].findall(text)
                    printed += text.replace(str(work), SHOWN_WORKSPACE)
            if shown is not None and normalise(printed) != normalise(shown):
                mismatches.append(f"{block.strip()}\n--- README.md shows:\n{shown}--- it prints:\n{printed}")
    finally:
        stopped = subprocess.run([JCLI, "server", "stop"], cwd=work, env=env, capture_output=True, timeout=60)
        survivors = servers_under(runtime)
        for proc in survivors:
            proc.kill()
    assert not mismatches, "\n\n".join(mismatches)
    assert stopped.returncode == 0 and not survivors, stopped.stderr
