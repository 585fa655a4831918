"""``j-cli notebook grep``: hits whose coordinates the next command takes, pages, the walk, hostile paths."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from helpers import REPO, run_cli, run_cli_with_peak_rss
from nbformat.v4 import new_code_cell
from notebook_world import build_world, write_nb

from jcli_sidecar.base import strip_ansi

_HIT = re.compile(r"^(?P<path>\S+) cell (?P<cell>\d+)(?: output (?P<output>\d+))?: (?P<text>.*)$")


@pytest.fixture
def world(tmp_path):
    return build_world(tmp_path / "ws")


def grep(*args, cwd):
    return run_cli("notebook", "grep", *args, cwd=cwd)


def grep_json(*args, cwd) -> dict:
    result = run_cli("-j", "notebook", "grep", *args, cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return result.json()


def hit_lines(result) -> list[re.Match]:
    lines = result.stdout.decode().splitlines()
    return [m for m in map(_HIT.match, lines) if m]


def output_text(envelope: dict) -> str:
    if "stream" in envelope:
        return envelope["stream"]["data"]
    if "error" in envelope:
        return "\n".join(envelope["error"]["traceback"])
    data = envelope["selected"]["data"]
    return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)


def test_every_hit_names_a_cell_and_output_that_show_and_output_read_back(world):
    result = grep("needle", cwd=world)
    assert result.returncode == 0, result.stderr
    hits = hit_lines(result)
    assert len(hits) == len(result.stdout.decode().splitlines())  # every line is a hit: no page note
    seen = set()
    for hit in hits:
        path, cell, output, text = hit["path"], hit["cell"], hit["output"], hit["text"]
        if output is None:
            shown = run_cli("-j", "notebook", "show", path, "--cell", cell, cwd=world)
            assert shown.returncode == 0, shown.stderr
            assert text in shown.json()["cells"][0]["source"]
        else:
            mime = re.search(r"in (html|plain|json|markdown)", text)
            wanted = {"html": "text/html", "plain": "text/plain", "json": "application/json", "markdown": "text/markdown"}
            extra = ["--mime", wanted[mime.group(1)]] if mime else []
            read = run_cli("-j", "notebook", "output", path, "--cell", cell, "--output", output, *extra, cwd=world)
            assert read.returncode == 0, read.stderr
            assert text in strip_ansi(output_text(read.json()))
        seen.add(text)
    for expected in (
        "# A needle heading",
        "print('needle in source')",
        "needle in stdout",
        "needle in stderr",  # its colour codes removed
        "<b>needle in html</b>",
        "needle in plain",
        '{"key": "needle in json"}',
        "*needle* in markdown",
        "NeedleError: needle in traceback",
        "needle = 3",
        "value = 'needle in pair'",
        "needle printed by the pair",
        "needle in a percent markdown cell",  # the markdown cell as read: its comment marks gone
    ):
        assert expected in seen, (expected, sorted(seen))


def test_the_walk_skips_hidden_and_vendored_directories_and_plain_files(world):
    paths = {hit["path"] for hit in grep_json("needle", cwd=world)["hits"]}
    assert paths == {"rich.ipynb", "sub/deeper/plain.ipynb", "pair.py", "pair.ipynb", "percent.py"}
    named = grep_json("needle", str(world), cwd=world.parent)["hits"]
    assert {hit["path"] for hit in named} == {os.path.join(str(world), p) for p in paths}


def test_a_pair_gives_sources_from_the_py_and_outputs_from_the_notebook(world):
    hits = grep_json("pair", cwd=world)["hits"]
    assert [(h["path"], h["cell"], h.get("output")) for h in hits] == [("pair.ipynb", 0, 0), ("pair.py", 0, None)]
    alone = grep_json("pair", "pair.ipynb", cwd=world)["hits"]  # named alone: the notebook's own source too
    assert [(h["path"], h.get("output")) for h in alone] == [("pair.ipynb", None), ("pair.ipynb", 0)]


def test_pages_cover_every_hit_exactly_once_by_the_command_each_page_prints(world):
    every = grep_json("needle", "--max-hits", "1000", cwd=world)
    assert every["next"] is None
    wanted = [(h["path"], h["cell"], h.get("output"), h["line"], h["text"]) for h in every["hits"]]
    got = []
    args = ["needle", "--max-hits", "3"]
    pages = 0
    while True:
        result = grep(*args, cwd=world)
        assert result.returncode == 0, result.stderr
        pages += 1
        lines = result.stdout.decode().splitlines()
        got += [(m["path"], int(m["cell"]), int(m["output"]) if m["output"] else None, m["text"]) for m in hit_lines(result)]
        if not lines[-1].startswith("… more hits: "):
            break
        command = shlex.split(lines[-1].removeprefix("… more hits: "))
        assert command[:3] == ["j-cli", "notebook", "grep"]
        args = command[3:]
    assert pages == -(-len(wanted) // 3)
    assert got == [(p, c, o, t) for p, c, o, _line, t in wanted]
    page = grep_json("needle", "--max-hits", "3", cwd=world)
    assert page["next"]["skip"] == 3 and page["next"]["command"].endswith("--skip 3 needle")
    assert grep("needle", "--skip", str(len(wanted)), cwd=world).returncode == 1  # past the last hit: none


def test_json_hits_carry_coordinates_kind_and_line(world):
    doc = grep_json("needle in (stderr|html)", "rich.ipynb", cwd=world)
    assert doc["status"] == "ok" and doc["next"] is None and doc["problems"] == []
    assert doc["hits"] == [
        {
            "path": "rich.ipynb",
            "cell": 1,
            "output": 1,
            "kind": "stream",
            "name": "stderr",
            "line": 1,
            "column": 0,
            "text": "needle in stderr",
        },
        {"path": "rich.ipynb", "cell": 1, "output": 2, "kind": "text/html", "line": 1, "column": 3, "text": "<b>needle in html</b>"},
    ]
    sources = grep_json("needle", "rich.ipynb", "--sources-only", cwd=world)["hits"]
    assert {h["cell_type"] for h in sources} == {"markdown", "code"} and all("output" not in h for h in sources)
    outputs = grep_json("needle", "rich.ipynb", "--outputs-only", cwd=world)["hits"]
    assert outputs and all("output" in h for h in outputs)


def test_fixed_strings_ignore_case_and_clipped_long_lines(tmp_path):
    long_line = "x" * 5000 + "Needle(1)" + "y" * 5000
    write_nb(tmp_path / "long.ipynb", [new_code_cell(f"s = '{long_line}'")])
    assert grep("Needle(1)", cwd=tmp_path).returncode == 1  # a regex: the parentheses group
    doc = grep_json("-F", "-i", "needle(1)", cwd=tmp_path)
    (hit,) = doc["hits"]
    assert "Needle(1)" in hit["text"] and len(hit["text"]) <= 202 and hit["text"].startswith("…") and hit["text"].endswith("…")
    assert hit["column"] == len("s = '") + 5000


def test_exit_status_and_coded_errors(world):
    assert grep("needle", cwd=world).returncode == 0
    none = grep("no such words anywhere", cwd=world)
    assert none.returncode == 1 and none.stdout == b""
    bad = run_cli("-j", "notebook", "grep", "(unclosed", cwd=world)
    assert bad.returncode == 2 and bad.error()["code"] == "USAGE_ERROR" and "-F" in bad.error()["message"]
    missing = run_cli("-j", "notebook", "grep", "needle", "nowhere", cwd=world)
    assert missing.returncode == 1 and missing.error()["code"] == "FILE_NOT_FOUND"
    both = grep("needle", "--sources-only", "--outputs-only", cwd=world)
    assert both.returncode == 2


def test_a_corrupt_notebook_is_reported_and_the_search_goes_on(world):
    (world / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (world / "zz.ipynb").write_bytes(b"\xff\xfe not json")
    result = grep("needle", cwd=world)
    assert result.returncode == 0
    assert {m["path"] for m in hit_lines(result)} >= {"rich.ipynb", "sub/deeper/plain.ipynb"}
    errors = result.stderr.decode()
    assert "broken.ipynb" in errors and "zz.ipynb" in errors and "NOTEBOOK_READ_FAILED" in errors
    doc = grep_json("needle", cwd=world)
    assert {p["path"] for p in doc["problems"]} == {"broken.ipynb", "zz.ipynb"}
    assert {p["code"] for p in doc["problems"]} == {"NOTEBOOK_READ_FAILED"}


def test_fifos_and_devices_are_refused_or_skipped_without_blocking(world):
    os.mkfifo(world / "pipe.ipynb")
    os.mkfifo(world / "sub" / "pipe.py")
    walked = grep_json("needle", cwd=world)  # found by the walk: not a regular file, skipped
    assert walked["problems"] == [] and "pipe" not in str(walked["hits"])
    named = grep_json("needle", "pipe.ipynb", "/dev/zero", "rich.ipynb", cwd=world)
    assert {p["path"]: p["code"] for p in named["problems"]} == {"pipe.ipynb": "NOTEBOOK_READ_FAILED", "/dev/zero": "NOTEBOOK_READ_FAILED"}
    assert {h["path"] for h in named["hits"]} == {"rich.ipynb"}


def test_links_out_of_the_directory_searched_are_not_followed(world, tmp_path):
    outside = tmp_path / "outside"
    write_nb(outside / "secret.ipynb", [new_code_cell("needle = 'outside'")])
    (world / "link.ipynb").symlink_to(outside / "secret.ipynb")
    (world / "linkdir").symlink_to(outside)
    (world / "inside.ipynb").symlink_to(world / "sub" / "deeper" / "plain.ipynb")
    (world / "loop").symlink_to(world)
    doc = grep_json("needle", cwd=world)
    texts = {h["text"] for h in doc["hits"]}
    assert "needle = 'outside'" not in texts
    paths = {h["path"] for h in doc["hits"]}
    assert "link.ipynb" not in paths and not any(p.startswith(("linkdir", "loop")) for p in paths)
    assert "inside.ipynb" not in paths or "sub/deeper/plain.ipynb" not in paths  # one file, searched once
    named = grep_json("needle", "link.ipynb", cwd=world)  # named by the user: read, as every read does
    assert {h["text"] for h in named["hits"]} == {"needle = 'outside'"}


def test_a_grep_imports_neither_click_nor_nbformat_unless_it_needs_help(world):
    probe = (
        "import sys\n"
        "from jcli.__main__ import main\n"
        "code = main(sys.argv[1:])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'click', 'nbformat', 'mcp', 'psutil', 'watchfiles'})\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    for args, expected in (
        (["notebook", "grep", "-i", "--max-hits", "3", "NEEDLE"], "0 []"),
        (["-j", "notebook", "grep", "--outputs-only", "-F", "--", "-nothing-"], "1 []"),
        (["notebook", "grep", "-Fi", "needle"], "0 ['click']"),  # combined short flags: click parses them
    ):
        proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=world, capture_output=True, timeout=60)
        assert proc.stderr.decode().splitlines()[-1] == expected, (args, proc.stderr)


def test_the_sidecar_answers_the_same_hits_from_its_cached_indexes(world, sidecar_on):
    direct = run_cli("-j", "notebook", "grep", "needle", cwd=world, env={**os.environ, "JCLI_SIDECAR": "off"}).json()
    started = run_cli("-j", "sidecar", "start", cwd=world)
    assert started.returncode == 0, started.stderr
    first = grep_json("needle", cwd=world)
    again = grep_json("needle", cwd=world)
    assert first == direct == again
    cache = run_cli("-j", "sidecar", "status", cwd=world).json()["cache"]
    assert cache["entries"] == 3 and cache["hits"] >= 3  # rich, plain and pair: indexed once, then served from the cache


def test_a_search_past_its_budget_stops_with_a_timeout_the_client_answers_in_process(world, monkeypatch):
    from jcli_sidecar.base import Timeout
    from jcli_sidecar.read.nbgrep import grep_notebooks

    monkeypatch.chdir(world)
    with pytest.raises(Timeout) as stopped:
        grep_notebooks("needle", budget=0)
    assert stopped.value.details == {"grep_budget": True}
    assert grep_notebooks("needle", budget=60)["hits"] == grep_notebooks("needle")["hits"]


def test_a_sidecar_whose_budget_runs_out_leaves_the_search_to_the_client(tmp_path, sidecar_on, monkeypatch):
    """Half the sidecar's request deadline (1 s here) is the grep's budget; 3000 notebooks take longer.

    Each file takes a millisecond or so, so the budget stops the search long
    before the deadline would make the sidecar retire.
    """
    one = write_nb(tmp_path / "nb" / "0000.ipynb", [new_code_cell("needle = 1")]).read_bytes()
    for i in range(1, 3000):
        (tmp_path / "nb" / f"{i:04d}.ipynb").write_bytes(one)
    monkeypatch.setenv("JCLI_SIDECAR_REQUEST_SECONDS", "1")
    args = ("-j", "notebook", "grep", "--max-hits", "1000", "--skip", "1990", "needle")
    direct = run_cli(*args, cwd=tmp_path, env={**os.environ, "JCLI_SIDECAR": "off"}).json()
    started = run_cli("-j", "sidecar", "start", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    through = run_cli(*args, cwd=tmp_path)
    assert through.returncode == 0, through.stderr
    assert through.json() == direct and len(direct["hits"]) == 1000
    status = run_cli("-j", "sidecar", "status", cwd=tmp_path)
    assert status.returncode == 0 and status.json()["pid"] == started.json()["pid"]  # it did not retire


SIZE = 400 * 1024 * 1024
PEAK_MIB = 96


@pytest.mark.slow
def test_grep_through_a_400_mb_notebook_stays_under_96_mib_and_decodes_no_image(tmp_path):
    sys.path.insert(0, str(REPO / "bench"))
    from realistic_notebook import write_notebook

    path = tmp_path / "huge.ipynb"
    cells = write_notebook(path, SIZE)
    try:
        tables = [i for i in range(cells) if i % 10 in (3, 7)]
        skip = 2 * len(tables) - 50  # the last page: the whole file is walked to know there is no next one
        proc, peak_mib = run_cli_with_peak_rss(
            "-j", "notebook", "grep", "--outputs-only", "--skip", str(skip), "row(<|&lt;)39\\b", str(path), cwd=tmp_path
        )
        doc = json.loads(proc.stdout)
        assert doc["next"] is None and len(doc["hits"]) == 50  # the plain and the HTML form of each table, each once
        assert [h["cell"] for h in doc["hits"]] == [c for c in tables[-25:] for _form in (0, 1)]
        assert {h["kind"] for h in doc["hits"]} == {"text/plain", "text/html"}
        print(f"grep of a {path.stat().st_size >> 20} MiB notebook: peak RSS {peak_mib:.1f} MiB")
        assert peak_mib < PEAK_MIB, f"peak RSS {peak_mib:.1f} MiB searching a {path.stat().st_size >> 20} MiB notebook"
    finally:
        path.unlink(missing_ok=True)
