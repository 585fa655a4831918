"""A search's cost is bounded where it runs: a pattern that backtracks without end is ended, coded, and nothing else waits.

The pattern matching of ``notebook grep`` runs in a worker process
(``jcli_sidecar.read.bounded_search``) that is killed at the bound
``JCLI_GREP_SEARCH_SECONDS``; the search is then a ``SEARCH_TOO_COSTLY``. The
worker runs the very ``re`` of this interpreter, so every hit is the one an
in-process search finds (checked here against ``line_hits`` run in-process).
"""

from __future__ import annotations

import marshal
import os
import re
import signal
import time

import psutil
import pytest
from helpers import run_cli
from nbformat.v4 import new_code_cell, new_output
from notebook_world import write_nb

from jcli_sidecar.base import SearchTooCostly
from jcli_sidecar.read import bounded_search
from jcli_sidecar.read.linematch import clip_line, line_hits
from jcli_sidecar.read.nbgrep import compile_pattern, grep_notebooks

EVIL = "a" * 34 + "!"  # (a+)+$ tries every split of the a's before it fails: minutes in re


def _workers() -> list[psutil.Process]:
    return [p for p in psutil.Process().children() if any("linematch" in part for part in p.cmdline())]


@pytest.fixture
def bound(monkeypatch):
    monkeypatch.setenv("JCLI_GREP_SEARCH_SECONDS", "0.5")


@pytest.mark.parametrize(
    ("where", "pattern", "flags"),
    [
        ("source", "(a+)+$", {}),
        ("stream", "(a|aa)+$", {}),
        ("json", "(a|a)*!x", {"ignore_case": True}),
        ("error", "(?:a*)*b", {}),
    ],
)
def test_a_catastrophic_pattern_is_a_coded_error_at_the_bound_and_its_worker_is_ended(tmp_path, bound, where, pattern, flags):
    outputs = {
        "source": [],
        "stream": [new_output("stream", name="stdout", text=f"x\n{EVIL}\n")],
        "json": [new_output("display_data", data={"application/json": {"k": [EVIL]}, "text/plain": "j"})],
        "error": [new_output("error", ename="E", evalue="v", traceback=[EVIL])],
    }[where]
    write_nb(tmp_path / "nb.ipynb", [new_code_cell(EVIL if where == "source" else "ok = 1", outputs=outputs), new_code_cell("needle")])
    with pytest.raises(SearchTooCostly) as stopped:
        grep_notebooks(pattern, [str(tmp_path)], **flags)
    assert stopped.value.code == "SEARCH_TOO_COSTLY" and stopped.value.details == {"seconds": 0.5}
    assert "JCLI_GREP_SEARCH_SECONDS" in stopped.value.message
    for worker in _workers():  # the one that ran it was killed and reaped; what is left idles, asleep
        assert worker.status() != psutil.STATUS_RUNNING
    # the next search (a worker started afresh) answers, and the literal text of the same pattern is searched at once
    assert [h["cell"] for h in grep_notebooks("needle", [str(tmp_path)])["hits"]] == [1]
    assert grep_notebooks(pattern, [str(tmp_path)], fixed=True)["hits"] == []


def test_an_idle_worker_serves_the_next_search_and_a_killed_one_is_replaced(tmp_path, bound):
    write_nb(tmp_path / "nb.ipynb", [new_code_cell(EVIL), new_code_cell("needle")])
    grep_notebooks("needle", [str(tmp_path)])
    before = bounded_search.workers_started()
    for _ in range(3):
        assert grep_notebooks("needle", [str(tmp_path)])["hits"]
    assert bounded_search.workers_started() == before  # reused, none started
    with pytest.raises(SearchTooCostly):
        grep_notebooks("(a+)+$", [str(tmp_path)])
    assert grep_notebooks("needle", [str(tmp_path)])["hits"]
    assert bounded_search.workers_started() == before + 1
    assert len(_workers()) <= bounded_search.IDLE_MAX


TEXTS = [
    "plain line\nsecond Line\r\nthird\n",
    "caf\u00e9 \u00c9t\u00e9 \U0001f600 emoji\n\u00df\u1e9e\n",
    "lone \ud800 surrogate\nand \udfff too",
    "x" * 500 + "HIT" + "y" * 500 + "\nHIT at start\nend HIT",
    "\n\n\nblank lines then\nab\nabab\n",
    "a\tb\x0bc\x0cd\x1c e\x1df\x85g\u2028h\u2029i\n",
]
PATTERNS = [
    "hit",
    "^",
    "$",
    r"^\w+$",
    r"(?<=a)b",
    "a|b",
    r"\bline\b",
    r"[^\n]*HIT",
    r"\s+",
    "caf\u00e9",
    "(?i)\u00e9t\u00e9",
    "x{3,}?",
    r"\Z",
    ".",
]


@pytest.mark.parametrize("ignore_case", [False, True])
def test_the_worker_finds_exactly_what_the_search_in_process_finds(ignore_case):
    with bounded_search.Searcher(seconds=30) as searcher:
        for pattern in PATTERNS:
            regex = compile_pattern(pattern, False, ignore_case)
            for text in TEXTS:
                expected = [(n, s, clip_line(line, s, e)) for n, line, s, e in line_hits(regex, text)]
                assert searcher.hits(regex, text, 10_000, 200) == expected, (pattern, text)
                assert searcher.hits(regex, text, 1, 200) == expected[:1]


def test_the_cli_reports_the_code_and_the_setting(tmp_path):
    write_nb(tmp_path / "nb.ipynb", [new_code_cell(EVIL)])
    env = {"JCLI_GREP_SEARCH_SECONDS": "0.5", "JCLI_SIDECAR": "off"}
    plain = run_cli("notebook", "grep", "(a+)+$", "nb.ipynb", cwd=tmp_path, env={**os.environ, **env})
    assert plain.returncode == 1 and "[SEARCH_TOO_COSTLY]" in plain.stderr.decode() and not plain.stdout
    coded = run_cli("-j", "notebook", "grep", "(a+)+$", "nb.ipynb", cwd=tmp_path, env={**os.environ, **env})
    assert coded.returncode == 1 and coded.error()["code"] == "SEARCH_TOO_COSTLY"
    assert "(a+)+$" in coded.error()["message"]


def test_a_worker_whose_parent_cannot_end_it_ends_itself_past_its_cpu_bound():
    """The worker caps its own CPU time at the search's bound and a little more, so an orphan never runs on."""
    worker = bounded_search._Worker()
    try:
        body = marshal.dumps(("(a+)+$", int(re.M | re.U), EVIL, 1, 200, 0.5))
        assert worker.ask(body, time.monotonic() + 120) is None  # no answer: it ended itself
        assert worker.proc.wait(120) == -signal.SIGXCPU
    finally:
        worker.end()


def test_a_process_ending_with_idle_workers_ends_and_reaps_them():
    """Kept idle for the next search, a worker is ended with the process that kept it: reaped, and no warning left."""
    import subprocess
    import sys

    code = (
        "import re, sys\n"
        "from jcli_sidecar.read import bounded_search\n"
        "assert bounded_search.search_lines(re.compile('b'), 'a\\nb\\n', 5, 80) == [(2, 0, 'b')]\n"
        "print(bounded_search._idle[0].proc.pid, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert not psutil.pid_exists(int(done.stdout))  # reaped by its parent, not left to the system
