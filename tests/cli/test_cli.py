"""The CLI as users and adapters run it: the installed ``j-cli`` script."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from helpers import FIXTURES, REPO, run_cli, sidecars_under

DEMO = str(REPO / "examples" / "demo.ipynb")
BASE64_RUN = re.compile(rb"[A-Za-z0-9+/]{40,}")


def test_human_catalog_lists_outputs_with_sizes():
    result = run_cli("notebook", "outputs", DEMO, "--cell", "9")
    assert result.returncode == 0
    text = result.stdout.decode()
    assert "2 output(s)" in text
    assert "[0] display_data" in text and "image/png*" in text and "image/jpeg" in text
    assert "[1] stream stdout" in text


def test_human_image_read_describes_the_image_without_base64():
    result = run_cli("notebook", "output", DEMO, "--cell", "2", "--output", "0")
    assert result.returncode == 0
    assert result.stdout.decode() == f"[image/png from {os.path.realpath(DEMO)} cell 2 output 0; 3630 bytes, 150x100 px]\n"
    assert result.stderr.decode() == "[use -j to get the image data]\n"
    assert not BASE64_RUN.search(result.stdout + result.stderr)


def test_human_text_is_printed_verbatim_with_provenance_on_stderr():
    with open(DEMO, encoding="utf-8") as fh:
        html = json.load(fh)["cells"][5]["outputs"][0]["data"]["text/html"]
    html = "".join(html) if isinstance(html, list) else html
    result = run_cli("notebook", "output", DEMO, "--cell", "5", "--output", "0")
    assert result.stdout.decode() == html + "\n"
    assert b"text/html from" in result.stderr


def test_human_window_says_how_to_continue():
    result = run_cli("notebook", "output", DEMO, "--cell", "14", "--output", "0", "--limit", "10")
    assert result.stdout == b"x" * 10 + b"\n"
    assert re.search(rb"; characters 0-10 of \d+; continue at offset 10\]$", result.stderr.strip())


def test_human_errors_are_one_coded_line():
    result = run_cli("notebook", "output", DEMO, "--cell", "99", "--output", "0")
    assert result.returncode == 1
    assert result.stdout == b""
    assert result.stderr.decode().startswith("j-cli: error [CELL_NOT_FOUND]: cell 99 is outside")
    assert result.stderr.count(b"\n") == 1


@pytest.mark.parametrize(
    "args, stdin",
    [
        (["notebook", "output"], b""),
        (["notebook", "output", DEMO], b""),
        (["notebook", "output", DEMO, "--cell", "x"], b""),
        (["notebook", "output", DEMO, "--cell", "1", "--bogus", "1"], b""),
        (["notebook", "output", "--request", "-"], b"{not json"),
        (["notebook", "output", "--request", "-"], b"[1, 2]"),
        (["notebook", "output", "--request", "-"], b'{"file_path": "a.ipynb"}'),
        (["notebook", "output", "--request", "-"], b'{"file_path": "a.ipynb", "cell_index": "1"}'),
        (["notebook", "output", "--request", "-"], b'{"file_path": "a.ipynb", "cell_index": 1, "extra": 2}'),
        (["notebook", "output", "--request", "request.json"], b""),
        (["notebook", "output", DEMO, "--request", "-"], b'{"file_path": "a.ipynb", "cell_index": 1}'),
        (["notebook", "outputs", "--request", "-"], b'{"file_path": "a.ipynb", "cell_index": 1, "output_index": 0}'),
    ],
)
def test_usage_errors_exit_2_with_a_json_envelope(args, stdin):
    result = run_cli("-j", *args, stdin=stdin)
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    err = result.error()
    assert err["code"] == "USAGE_ERROR" and err["schema_version"] == 1 and err["message"]
    plain = run_cli(*args, stdin=stdin)
    assert plain.returncode == 2 and b"Traceback" not in plain.stderr and plain.stderr


def test_help_is_available_for_the_read_commands():
    result = run_cli("notebook", "output", "--help")
    assert result.returncode == 0
    for flag in (b"--cell", b"--output", b"--mime", b"--offset", b"--limit", b"--max-response-bytes", b"--request"):
        assert flag in result.stdout


CLICK_RUNNER = "import sys; from jcli.cli import run_click; sys.exit(run_click(sys.argv[1:]))"


@pytest.mark.parametrize(
    "args",
    [
        ["-j", "notebook", "output", DEMO, "--cell", "9", "--output", "0", "--mime", "image/jpeg"],
        ["-j", "notebook", "outputs", DEMO, "--cell=9"],
        ["notebook", "output", DEMO, "--cell", "1", "--output", "0", "--offset", "3", "--limit", "4"],
        ["-j", "notebook", "output", DEMO, "--cell", "1", "--output", "7"],
    ],
)
def test_the_fast_path_and_click_give_identical_results(args):
    fast = run_cli(*args)
    via_click = subprocess.run([sys.executable, "-c", CLICK_RUNNER, *args], capture_output=True, timeout=60)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        via_click.returncode,
        via_click.stdout,
        via_click.stderr,
    )


IMPORT_PROBE = """
import sys
from jcli.__main__ import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    fh.write("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["-j", "notebook", "output", "DEMO", "--cell", "2", "--output", "0"],
        ["notebook", "outputs", "DEMO", "--cell", "9"],
        ["-j", "notebook", "output", "PAIR", "--cell", "1", "--output", "0"],
    ],
)
@pytest.mark.parametrize("sidecar", ["off", "cold"])
def test_a_read_does_not_import_heavy_modules(args, sidecar, tmp_path, request):
    """Also with the sidecar on and none running: the read is in-process and starts one for next time."""
    if sidecar == "cold":
        runtime = request.getfixturevalue("sidecar_on")
    args = [a.replace("DEMO", DEMO).replace("PAIR", str(FIXTURES / "pair_ids.py")) for a in args]
    listing = tmp_path / "modules.txt"
    proc = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(listing), *args], cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = set(listing.read_text().split())
    roots = {name.split(".")[0] for name in loaded}
    assert not roots & {"click", "nbformat", "psutil", "watchfiles", "mcp", "jsonschema", "typing_extensions", "asyncio"}
    if sidecar == "cold":
        assert "jcli_sidecar.sidecar.spawn" in loaded and sidecars_under(runtime)  # the background start did happen
    assert "jcli_sidecar.read.reader" in loaded


@pytest.mark.parametrize(
    "args, stdin",
    [
        (["notebook", "output", DEMO, "--cell", "14", "--output", "0", "--limit", "0"], b""),
        (["notebook", "output", DEMO, "--cell", "14", "--output", "0", "--offset", "-1"], b""),
        (["notebook", "output", DEMO, "--cell", "9", "--output", "0", "--limit", "5"], b""),
        (["notebook", "output", "--request", "-"], b'{"file_path": "%s", "cell_index": 14, "output_index": 0, "limit": 0}' % DEMO.encode()),
    ],
)
def test_a_bad_window_is_a_usage_error_on_every_path(args, stdin):
    """``INVALID_WINDOW`` is a usage error: exit 2, as ``--cell x`` is, by flags or by request."""
    result = run_cli("-j", *args, stdin=stdin)
    assert result.returncode == 2, result.stderr
    assert result.stdout == b"" and result.error()["code"] == "INVALID_WINDOW"
    plain = run_cli(*args, stdin=stdin)
    assert plain.returncode == 2 and plain.stderr.startswith(b"j-cli: error [INVALID_WINDOW]")
