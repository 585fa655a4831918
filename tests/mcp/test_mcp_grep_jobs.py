"""``notebook_grep``, ``job_status`` and ``job_wait``: the MCP SDK's own client against the real ``j-cli mcp serve``.

Each answers what the CLI answers for the same request (``notebook grep
-j``, ``job status -j``, ``job wait -j``), reads only under the roots, and
refuses bad arguments with a coded tool error. The jobs are real: started
with ``exec --background`` on a real kernel, held by a real sidecar, and
timed from the kernel side (tests/runs/test_jobs_run.py's barriers).

The tests that only read the two notebooks, or whose arguments are refused
before anything is read, share one server and client session for the
module (``shared``, test_mcp.py's :class:`SharedSession`); a test that
plants links, needs other roots or a real job starts its own.
"""

from __future__ import annotations

import json
import os

import nbformat
import pytest
from helpers import run_cli
from test_jobs_run import Barrier, start, status, ws  # noqa: F401  (ws is a fixture)
from test_mcp import SharedSession, call, tool, tree_state


def _notebook(path, sources, outputs=()) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    for index, text in outputs:
        nb.cells[index].outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    nbformat.write(nb, str(path))


def _project(root) -> None:
    root.mkdir()
    _notebook(root / "a.ipynb", ["needle = 1", "print(needle)", "haystack"], outputs=[(1, "needle 1\n")])
    _notebook(root / "b.ipynb", ["NEEDLE", "x = 'needle'"])


@pytest.fixture
def notebooks(tmp_path):
    root = tmp_path / "project"
    _project(root)
    return root


@pytest.fixture(scope="module")
def shared_notebooks(tmp_path_factory):
    """This module's project of two notebooks, which its tests only read: after the module, every file is as it was."""
    root = tmp_path_factory.mktemp("grep-shared") / "project"
    _project(root)
    before = tree_state(root.parent)
    yield root
    assert tree_state(root.parent) == before, "a test wrote to the shared project"


@pytest.fixture(scope="module")
def shared(shared_notebooks):
    """One server with ``--root shared_notebooks`` and one client session on it."""
    session = SharedSession(["--root", str(shared_notebooks)])
    try:
        yield session
    finally:
        session.close()


def _document(result) -> dict:
    """A document tool's answer: one text block, the same as its structuredContent."""
    assert not result.is_error, result.content
    assert len(result.content) == 1 and result.content[0].type == "text"
    doc = json.loads(result.content[0].text)
    assert result.structured_content == doc
    return doc


def _error(result) -> str:
    assert result.is_error, result.content
    return result.content[0].text


# -- notebook_grep ----------------------------------------------------------------------


def test_grep_answers_the_clis_hits_and_its_next_arguments_fetch_the_next_page(shared, shared_notebooks):
    notebooks = shared_notebooks
    cli = run_cli("-j", "notebook", "grep", "-i", "--max-hits", "2", "needle", str(notebooks), cwd=notebooks).json()

    async def pages(session):
        first = await session.call_tool("notebook_grep", {"pattern": "needle", "ignore_case": True, "max_hits": 2})
        doc = _document(first)
        second = await session.call_tool("notebook_grep", doc["next"]["arguments"])
        return doc, _document(second)

    first, second = shared.call(pages)
    assert first["hits"] == cli["hits"] and first["next"]["skip"] == cli["next"]["skip"] == 2
    assert first["next"]["arguments"] == {"pattern": "needle", "ignore_case": True, "max_hits": 2, "skip": 2}
    rest = run_cli("-j", "notebook", "grep", "-i", "--max-hits", "2", "--skip", "2", "needle", str(notebooks), cwd=notebooks).json()
    assert second["hits"] == rest["hits"] and len(second["hits"]) == 2
    everything = run_cli("-j", "notebook", "grep", "-i", "needle", str(notebooks), cwd=notebooks).json()["hits"]
    assert first["hits"] + second["hits"] == everything[:4]


def test_grep_takes_the_clis_options(shared):
    def grep(**arguments):
        return _document(shared.call(tool("notebook_grep", **arguments)))

    sources = grep(pattern="needle", sources_only=True, paths=["a.ipynb"])
    assert [(h["cell"], "output" in h) for h in sources["hits"]] == [(0, False), (1, False)]
    outputs = grep(pattern="needle", outputs_only=True, paths=["a.ipynb"])
    assert [(h["cell"], h["output"], h["text"]) for h in outputs["hits"]] == [(1, 0, "needle 1")]
    assert grep(pattern="NEEDLE", fixed_strings=True)["hits"][0]["text"] == "NEEDLE"
    assert [h["text"] for h in grep(pattern="t(n", fixed_strings=True)["hits"]] == ["print(needle)"]  # literal: no regex error
    assert grep(pattern="nothing like it")["hits"] == [] and grep(pattern="nothing like it")["next"] is None


def test_grep_reads_nothing_outside_the_roots(notebooks, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    _notebook(outside / "secret.ipynb", ["needle = 'secret'"])
    (notebooks / "link").symlink_to(outside)
    (notebooks / "link.ipynb").symlink_to(outside / "secret.ipynb")

    every_paths = ([str(outside)], [str(outside / "secret.ipynb")], ["link"], ["link.ipynb"], ["../outside"])

    async def greps(session):
        refused = [await session.call_tool("notebook_grep", {"pattern": "needle", "paths": paths}) for paths in every_paths]
        return refused, await session.call_tool("notebook_grep", {"pattern": "secret"})

    refused, walked = call(["--root", str(notebooks)], greps)
    for paths, result in zip(every_paths, refused, strict=True):
        assert _error(result).startswith("PATH_NOT_ALLOWED:"), paths
    assert _document(walked)["hits"] == []  # the walk follows no link out of the root


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"pattern": 3},
        {"pattern": "("},
        {"pattern": "x", "max_hits": 0},
        {"pattern": "x", "max_hits": 1001},
        {"pattern": "x", "skip": -1},
        {"pattern": "x", "sources_only": True, "outputs_only": True},
        {"pattern": "x", "ignore_case": "yes"},
        {"pattern": "x", "paths": "a.ipynb"},
        {"pattern": "x", "paths": [3]},
        {"pattern": "x", "context": 2},
    ],
    ids=[
        "no-pattern",
        "pattern-number",
        "bad-regex",
        "max-hits-0",
        "max-hits-big",
        "skip-negative",
        "both-only",
        "flag-string",
        "paths-string",
        "path-number",
        "unknown",
    ],
)
def test_grep_refuses_bad_arguments_with_a_usage_error(shared, arguments):
    assert _error(shared.call(tool("notebook_grep", **arguments))).startswith("USAGE_ERROR:")


def test_a_catastrophic_pattern_is_a_coded_tool_error_and_the_server_answers_the_next_call(tmp_path):
    """``(a+)+$`` over 34 ``a`` backtracks for minutes in ``re``: the search's worker is ended at the bound."""
    root = tmp_path / "project"
    root.mkdir()
    _notebook(root / "evil.ipynb", ["a" * 34 + "!", "needle"], outputs=[(0, "a" * 34 + "!\n")])
    env = {**os.environ, "JCLI_GREP_SEARCH_SECONDS": "0.5"}

    async def calls(session):
        bad = await session.call_tool("notebook_grep", {"pattern": "(a+)+$"})
        worse = await session.call_tool("notebook_grep", {"pattern": "(a|aa)+$", "outputs_only": True})
        return bad, worse, await session.call_tool("notebook_grep", {"pattern": "needle"})

    bad, worse, good = call(["--root", str(root)], calls, env=env)
    for result in (bad, worse):
        assert _error(result).startswith("SEARCH_TOO_COSTLY:") and "JCLI_GREP_SEARCH_SECONDS" in _error(result)
    assert [(h["cell"], h["text"]) for h in _document(good)["hits"]] == [(1, "needle")]


# -- job_status and job_wait, no job needed ---------------------------------------------------


def test_job_tools_without_jobs_and_outside_the_roots(shared, shared_notebooks):
    outside = shared_notebooks.parent

    async def calls(session):
        return [
            await session.call_tool("job_status", {}),
            await session.call_tool("job_status", {"job_id": "20990101T000000.000000000Z-00000000"}),
            await session.call_tool("job_wait", {"job_id": "2099"}),
            await session.call_tool("job_status", {"workspace": str(outside)}),
            await session.call_tool("job_wait", {"job_id": "x", "workspace": "/"}),
        ]

    listed, unknown, waited, elsewhere, elsewhere_wait = shared.call(calls)
    assert _document(listed) == {"schema_version": 1, "jobs": []}
    assert _error(unknown).startswith("JOB_NOT_FOUND:") and _error(waited).startswith("JOB_NOT_FOUND:")
    assert _error(elsewhere).startswith("PATH_NOT_ALLOWED:") and _error(elsewhere_wait).startswith("PATH_NOT_ALLOWED:")


@pytest.mark.parametrize(
    "tool_name, arguments",
    [
        ("job_wait", {}),
        ("job_wait", {"job_id": "x", "timeout": 0}),
        ("job_wait", {"job_id": "x", "timeout": 51}),
        ("job_wait", {"job_id": "x", "timeout": "5"}),
        ("job_wait", {"job_id": "x", "timeout": True}),
        ("job_wait", {"job_id": 7}),
        ("job_status", {"job_id": "../x"}),
        ("job_status", {"job_id": "x", "timeout": 1}),
        ("job_status", {"workspace": 3}),
    ],
    ids=[
        "wait-no-id",
        "timeout-0",
        "timeout-over-max",
        "timeout-string",
        "timeout-bool",
        "id-number",
        "id-path",
        "status-timeout",
        "workspace-number",
    ],
)
def test_job_tools_refuse_bad_arguments_with_a_usage_error(shared, tool_name, arguments):
    assert _error(shared.call(tool(tool_name, **arguments))).startswith("USAGE_ERROR:")


def test_job_tools_with_several_roots_need_the_workspace(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    async def both(session):
        return await session.call_tool("job_status", {}), await session.call_tool("job_status", {"workspace": str(tmp_path / "b")})

    ambiguous, chosen = call(["--root", str(tmp_path / "a"), "--root", str(tmp_path / "b")], both)
    assert _error(ambiguous).startswith("PATH_AMBIGUOUS:")
    assert _document(chosen)["jobs"] == []


# -- a real background job ------------------------------------------------------------------


def test_job_status_and_job_wait_follow_a_real_background_job(ws, kernel_session, tmp_path):  # noqa: F811
    barrier = Barrier(tmp_path, "held")
    job = start(ws, kernel_session, "-c", "print('before')\n" + barrier.code() + "print('after')\n")
    barrier.reached()
    progress: list[tuple[float, float | None, str | None]] = []

    async def while_held(session):
        async def noted(value, total, message):
            progress.append((value, total, message))

        listed = _document(await session.call_tool("job_status", {}))
        one = _document(await session.call_tool("job_status", {"job_id": job["job_id"][:20]}))
        held = _document(await session.call_tool("job_wait", {"job_id": job["job_id"], "timeout": 1.5}, progress_callback=noted))
        return listed, one, held

    listed, one, held = call(["--root", str(ws)], while_held, cwd=ws)
    assert [j["job_id"] for j in listed["jobs"]] == [job["job_id"]] and listed["jobs"][0]["state"] == "running"
    cli = status(ws, job["job_id"])
    assert one["job_id"] == cli["job_id"] and one["state"] == cli["state"] == "running"
    assert held["timed_out"] is True and held["jobs"][0]["state"] == "running" and held["pending"] == [job["job_id"]]
    assert "call job_wait again" in held["note"]
    assert progress and all(total == 1.5 and job["job_id"] in message for _, total, message in progress)
    assert [value for value, _, _ in progress] == sorted(value for value, _, _ in progress)
    mark = ws / ".j-cli" / "jobs" / job["job_id"] / "read"
    assert not mark.exists()  # a running job's snapshot is no read of its end

    barrier.release()

    async def after(session):
        waited = _document(await session.call_tool("job_wait", {"job_id": job["job_id"], "timeout": 50}))
        return waited, _document(await session.call_tool("job_status", {"job_id": job["job_id"]}))

    waited, ended = call(["--root", str(ws)], after, cwd=ws)
    assert waited["timed_out"] is False and waited["ended"] == [job["job_id"]] and "note" not in waited
    assert waited["jobs"][0]["state"] == "ok"
    assert mark.is_file()  # the MCP server gave its end: retention may age it from now
    assert ended == status(ws, job["job_id"])  # the CLI's document, field for field


def test_job_wait_sends_its_progress_while_reads_fill_the_pool(ws, kernel_session, tmp_path):  # noqa: F811
    """job_wait runs on a lane of its own: reads queued in the pool hold up neither its progress nor its answer."""
    import asyncio

    big = {"cell_type": "code", "id": "big", "metadata": {}, "execution_count": 1, "source": "x", "outputs": []}
    big["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "y" * 2_000_000}]
    (ws / "big.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [big]}))
    barrier = Barrier(tmp_path, "held")
    job = start(ws, kernel_session, "-c", barrier.code() + "print('after')\n")
    barrier.reached()
    progress: list[float] = []

    async def busy(session):
        async def noted(value, total, message):
            progress.append(value)

        read = {"file_path": "big.ipynb", "cell_index": 0, "output_index": 0}
        reads = [session.call_tool("read_notebook_output", read) for _ in range(16)]
        waited = session.call_tool("job_wait", {"job_id": job["job_id"], "timeout": 1.5}, progress_callback=noted)
        return await asyncio.gather(waited, *reads)

    try:
        waited, *reads = call(["--root", str(ws)], busy, cwd=ws)
    finally:
        barrier.release()
    held = _document(waited)
    assert held["timed_out"] is True and held["jobs"][0]["state"] == "running"
    assert progress, "no progress while the reads filled the pool"
    assert len(reads) == 16 and not any(result.is_error for result in reads)
