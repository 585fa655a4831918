"""Plain output an agent reads without a terminal: no colour codes, a header per cell, and a way to read every rich output.

Real kernel, real plots; stdout is a pipe, as it is for an agent.
"""

from __future__ import annotations

import json
import os
import re
import shlex

import pytest
from helpers import run_cli

ESC = b"\x1b"
PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
HTML = 'from IPython.display import HTML\nHTML("<b>hi</b>")'
#: A message that carries a terminal title (OSC) and a colour of its own, besides IPython's colours.
HOSTILE = 'raise ValueError("\\x1b]0;owned\\x07 red \\x1b[1;31mtext\\x1b[0m")'


@pytest.fixture
def ws(tmp_path, use_jupyter, exec_path):
    work = tmp_path / "ws"
    work.mkdir()
    exec_path(work)
    return work


def test_an_inline_plot_names_its_image_file(kernel_session, ws):
    result = run_cli("exec", kernel_session, "-c", PLOT, cwd=ws)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.decode().splitlines() if line.startswith("image/png ")]
    assert len(lines) == 1
    match = re.fullmatch(r"image/png (\d+\.\d) KiB -> (\.j-cli/outputs/[^/]+/output-\d{4}-\d\.png)", lines[0])
    assert match, lines
    png = ws / match.group(2)
    assert png.read_bytes().startswith(b"\x89PNG") and f"{png.stat().st_size / 1024:.1f}" == match.group(1)


def test_inline_html_and_image_each_get_a_line_and_json_is_unchanged(kernel_session, ws):
    code = 'from IPython.display import HTML, display\ndisplay(HTML("<i>x</i>"))\nprint("between")\n' + PLOT
    plain = run_cli("exec", kernel_session, "-c", code, cwd=ws)
    text = plain.stdout.decode()
    assert re.search(r"^text/html 8 B -> \.j-cli/outputs/.+\.html$", text, re.M) and "between\n" in text
    assert re.search(r"^image/png .+ -> \.j-cli/outputs/.+\.png$", text, re.M)
    doc = run_cli("-j", "exec", kernel_session, "-c", code, cwd=ws).json()
    assert "image/png" not in json.dumps(doc.get("text")) and all(" -> " not in str(o.get("text", "")) for o in doc["outputs"])


def test_a_coloured_traceback_loses_its_escapes_in_plain_and_json(kernel_session, ws):
    plain = run_cli("exec", kernel_session, "-c", "1/0", cwd=ws)
    assert plain.returncode == 1 and b"ZeroDivisionError: division by zero" in plain.stderr
    assert ESC not in plain.stdout + plain.stderr
    result = run_cli("-j", "exec", kernel_session, "-c", "1/0", cwd=ws)
    assert result.returncode == 1 and ESC not in result.stdout
    doc = result.json()
    assert "ZeroDivisionError" in doc["error"]["traceback"][-1]
    assert any("----> 1 1/0" in line for line in doc["outputs"][0]["traceback"])


def test_escapes_inside_an_error_message_are_removed_too(kernel_session, ws):
    for args in (("exec", kernel_session, "-c", HOSTILE), ("-j", "exec", kernel_session, "-c", HOSTILE)):
        result = run_cli(*args, cwd=ws)
        assert result.returncode == 1 and ESC not in result.stdout + result.stderr
        assert b"red text" in result.stdout + result.stderr


def test_a_notebook_run_prints_a_header_per_cell_and_a_read_command_per_rich_output(kernel_session, ws):
    (ws / "nb.py").write_text(f"# %% [markdown]\n# title\n\n# %%\nx = 41\nx + 1\n\n# %%\n{PLOT}\n\n# %%\n{HTML}\n")
    result = run_cli("exec", kernel_session, "-f", "nb.py", cwd=ws)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert [line for line in lines if line.startswith("[cell ")] == ["[cell 1] 1/3", "[cell 2] 2/3", "[cell 3] 3/3"]
    assert lines[1] == "42"
    reads = [line.split(" -> ", 1) for line in lines if " -> " in line]
    assert [what.split()[0] for what, _ in reads] == ["image/png", "text/html"]
    assert [command for _, command in reads] == [
        "j-cli notebook output nb.ipynb --cell 2 --output 0",
        "j-cli notebook output nb.ipynb --cell 3 --output 0",
    ]
    image = run_cli("-j", *shlex.split(reads[0][1])[1:], cwd=ws).json()
    assert image["selected"]["mime_type"] == "image/png"
    html = run_cli(*shlex.split(reads[1][1])[1:], cwd=ws)
    assert html.returncode == 0 and b"<b>hi</b>" in html.stdout


def test_a_notebook_in_another_directory_gets_a_command_that_works_from_here(kernel_session, ws):
    sub = ws / "my notebooks"
    sub.mkdir()
    (sub / "p.py").write_text(f"# %%\n{PLOT}\n")
    result = run_cli("exec", kernel_session, "-f", "my notebooks/p.py", "--no-stream", cwd=ws)
    command = next(line.split(" -> ", 1)[1] for line in result.stdout.decode().splitlines() if " -> " in line)
    assert command == "j-cli notebook output 'my notebooks/p.ipynb' --cell 0 --output 0"
    assert run_cli(*shlex.split(command)[1:], "--text-only", cwd=ws).returncode == 0


def test_a_notebook_run_error_has_no_escapes_but_the_notebook_keeps_them(kernel_session, ws):
    (ws / "bad.py").write_text("# %%\nprint('ok')\n\n# %%\n1/0\n")
    plain = run_cli("exec", kernel_session, "-f", "bad.py", cwd=ws)
    assert plain.returncode == 1 and ESC not in plain.stdout + plain.stderr
    assert plain.stdout.decode().splitlines() == ["[cell 0] 1/2", "ok", "[cell 1] 2/2"]
    lines = run_cli("-j", "exec", kernel_session, "-f", "bad.py", cwd=ws)
    assert lines.returncode == 1 and ESC not in lines.stdout + lines.stderr
    failed = [json.loads(line) for line in lines.stdout.splitlines()][1]
    assert "ZeroDivisionError" in json.dumps(failed)
    stored = json.loads((ws / "bad.ipynb").read_text())["cells"][1]["outputs"][0]["traceback"]
    assert any("\x1b[" in line for line in stored)
    read = run_cli("-j", "notebook", "output", "bad.ipynb", "--cell", "1", "--output", "0", cwd=ws)
    assert read.returncode == 0 and ESC not in read.stdout


def test_json_lines_of_a_notebook_run_carry_no_read_lines(kernel_session, ws):
    (ws / "nb.py").write_text(f"# %%\n{PLOT}\n")
    result = run_cli("-j", "exec", kernel_session, "-f", "nb.py", cwd=ws)
    assert result.returncode == 0 and b" -> " not in result.stdout and b"[cell " not in result.stdout
    assert all(json.loads(line) for line in result.stdout.splitlines())
    assert os.path.exists(ws / "nb.ipynb")
