"""The py:percent codec against the real jupytext: both read a file as the same cells.

Two directions, on real notebooks (``tests/fixtures/real_notebooks``, from
jupytext's MIT test corpus, which collects notebooks of several projects)
and on generated cells full of magics:

- a ``.py`` written by jupytext reads in j-cli as the cells jupytext reads;
- a ``.py`` written by j-cli reads in jupytext as the notebook's cells.

Cells are compared by type, source (blank lines at both ends dropped: j-cli
compares sources that way everywhere), id and the metadata that goes on a
marker. ``MAGIC_LINES`` is every magic form jupytext knows for Python.
"""

from __future__ import annotations

import json

import jupytext
import nbformat
import pytest
from helpers import TESTS, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jcli_sidecar.base.errors import UsageError
from jcli_sidecar.pair.percent import PercentCell, normalize_source, parse_percent, read_percent
from jcli_sidecar.pair.percent_magics import comment_magics
from jcli_sidecar.pair.percent_write import NOTEBOOK_ONLY_METADATA, write_percent

REAL = TESTS / "fixtures" / "real_notebooks"
NOTEBOOKS = sorted(REAL.glob("*.ipynb"))
SCRIPTS = sorted(REAL.glob("*.py"))
JUPYTEXT_ONLY = {"lines_to_next_cell", "lines_to_end_of_cell_marker", "cell_marker"}

#: Every magic form jupytext comments in a Python percent file, and lines that look close but are code.
MAGIC_LINES = [
    "%time f()",
    "%matplotlib inline",
    "%%time",
    "%%timeit -n 3",
    "%%%metakernel",
    "!echo hi",
    "!ls -la | head",
    "  !pip install x",
    "?print",
    "??print",
    "print?",
    "np.sum??",
    "x = !ls",
    "files = %sx ls",
    "ls",
    "ls -l",
    "cat file.txt",
    "cd ..",
    "rm -rf build",
    "mkdir out",
    "echo hello",
    "%load_ext autoreload  # noescape",
    "%autoreload 2 # escape",
    "%env A=1 \\",
    "    B=2",
    "# %time already a comment",
    "# !ls commented",
    "## %%bash double",
    "#%who",
]
CODE_LINES = [
    "x = 1",
    "ls = 3",
    "cat(1, 2)",
    "echo = 'e'",
    "print('%s' % x)",
    "a = 5 % 2",
    "# a plain comment",
    "# %",
    "'''",
    '"""',
    "s = '!not a magic'",
    "def f():",
    "    return 1",
    "# +",
    "# # +",
    "",
]
#: Lines that cannot be a cell on their own: jupytext reads '# # +' as '# +'; a lone triple quote opens a string.
UNWRITABLE_ALONE = ("# # +", "'''", '"""')
TEXT_LINES = [
    "# A title",
    "Some *text*",
    "",
    "- item",
    "```",
    "```python",
    "~~~",
    "%time in prose",
    "!bang",
    "ls the files",
    "# cd into it",
    "x?",
]


def _jupytext_cells(text: str) -> list[tuple]:
    nb = jupytext.reads(text, "py:percent")
    out = []
    for cell in nb.cells:
        meta = {k: v for k, v in cell.metadata.items() if k not in JUPYTEXT_ONLY}
        cell_id = meta.pop("id", None)
        out.append((cell.cell_type, normalize_source(cell.source), cell_id, meta))
    return out


def _our_cells(text: str) -> list[tuple]:
    return [(c.cell_type, c.source, c.cell_id, c.metadata or {}) for c in parse_percent(text)]


def _notebook_cells(nb) -> list[tuple]:
    out = []
    for cell in nb["cells"]:
        meta = {k: v for k, v in cell.get("metadata", {}).items() if k not in NOTEBOOK_ONLY_METADATA}
        meta.pop("id", None)
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        out.append((cell["cell_type"], normalize_source(source), cell.get("id"), meta))
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_py_jupytext_writes_reads_the_same_in_j_cli(path):
    nb = jupytext.read(path)
    text = jupytext.writes(nb, "py:percent")
    assert _our_cells(text) == _jupytext_cells(text)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_a_hand_written_py_reads_the_same_in_both(path):
    text = path.read_text()
    assert _our_cells(text) == _jupytext_cells(text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_py_j_cli_writes_reads_in_jupytext_as_the_notebook(path):
    nb = json.loads(path.read_text())
    text = write_percent(nb["cells"], nb["metadata"])
    assert _jupytext_cells(text) == _notebook_cells(nb)
    assert _our_cells(text) == _notebook_cells(nb)
    if "kernelspec" in nb["metadata"]:
        assert jupytext.reads(text, "py:percent").metadata["kernelspec"] == nb["metadata"]["kernelspec"]
        assert read_percent(text).metadata["kernelspec"] == nb["metadata"]["kernelspec"]


def test_every_magic_form_is_commented_as_jupytext_comments_it():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(line) for line in MAGIC_LINES + CODE_LINES if line and line not in UNWRITABLE_ALONE]
    ours = [c.source for c in parse_percent(write_percent(nb.cells))]
    theirs = jupytext.writes(nb, "py:percent")
    assert _our_cells(theirs) == _jupytext_cells(theirs)
    assert ours == [c.source for c in nb.cells]
    for line in MAGIC_LINES:
        if "escape" in line and "noescape" not in line:
            continue
        commented = comment_magics([line])[0]
        assert (commented != line) == (line not in ("??print", "    B=2") and "noescape" not in line), line  # jupytext leaves "??x" alone
    # the marker's title and cell ids of real files stay out of the way
    assert parse_percent('# %% id="x1" tags=["a"]\n!ls\n') == [PercentCell("code", "!ls", "x1", 1, 2, {"tags": ["a"]})]


def test_the_issue_case_reads_as_the_notebook_holds_it():
    text = "# %%\n# !echo hi\n\n# %%\n# %time f()\n"
    assert [c.source for c in parse_percent(text)] == ["!echo hi", "%time f()"]
    assert _our_cells(text) == _jupytext_cells(text)


def test_language_cell_magics_go_on_the_marker_like_jupytext():
    cells = [PercentCell("code", "%%bash -e\necho hi"), PercentCell("code", "%%html\n<b>x</b>"), PercentCell("code", "%%python\nx = 1")]
    text = write_percent(cells)
    assert '# %% magic_args="-e" language="bash"\n# echo hi' in text
    assert "# %%python" in text  # jupytext's language form would drop a '%%python' line
    assert [c[1] for c in _jupytext_cells(text)] == [c.source for c in cells]


def test_markdown_jupytext_would_mangle_is_written_triple_quoted():
    cells = [PercentCell("markdown", "# cd into the folder\nthen %time it"), PercentCell("raw", "# %% not a marker")]
    text = write_percent(cells)
    assert '"""' in text
    assert [(c[0], c[1]) for c in _jupytext_cells(text)] == [(c.cell_type, c.source) for c in cells]


def test_the_header_and_a_cell_before_the_first_marker():
    text = "#!/usr/bin/env python\n# ---\n# jupyter:\n#   kernelspec:\n#     name: python3\n#     display_name: P\n# title: x\n# ---\n\nimport os\n\n# %%\nx = 1\n"
    assert _our_cells(text) == _jupytext_cells(text)
    doc = read_percent(text)
    assert doc.metadata["kernelspec"] == {"name": "python3", "display_name": "P"}
    assert doc.metadata["jupytext"]["executable"] == "/usr/bin/env python"


def test_comment_magics_false_in_the_header_turns_the_escaping_off():
    text = "# ---\n# jupyter:\n#   jupytext:\n#     comment_magics: false\n# ---\n\n# %%\n# %time x\n"
    assert _our_cells(text) == _jupytext_cells(text) == [("code", "# %time x", None, {})]


_code_line = st.sampled_from(MAGIC_LINES + CODE_LINES) | st.text(st.sampled_from("abx =%!?#'\"()"), max_size=12)
_text_line = st.sampled_from(TEXT_LINES) | st.text(st.sampled_from("ab #%!?`*"), max_size=10)


@st.composite
def _cells(draw):
    kind = draw(st.sampled_from(["code", "code", "markdown", "raw"]))
    lines = draw(st.lists(_code_line if kind == "code" else _text_line, min_size=1, max_size=6))
    cell = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell, "raw": nbformat.v4.new_raw_cell}[kind](
        "\n".join(lines)
    )
    if draw(st.booleans()):
        cell.metadata["tags"] = draw(st.lists(st.sampled_from(["a", "b c", "parameters"]), max_size=2, unique=True))
    return cell


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_cells(), min_size=1, max_size=5))
def test_generated_cells_read_the_same_in_both_tools(cells):
    nb = nbformat.v4.new_notebook(cells=cells)
    theirs = jupytext.writes(nb, "py:percent")
    assert _our_cells(theirs) == _jupytext_cells(theirs)
    try:
        ours = write_percent(cells)
    except UsageError as exc:  # a marker-like line or an open triple quote is refused, never written wrong
        assert "back the same" in str(exc)
        return
    assert _jupytext_cells(ours) == _our_cells(ours) == _notebook_cells(nb)


def test_jupytext_cli_writes_a_file_j_cli_maps(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(line) for line in ["!echo hi", "%time x = 1", "x?", "y = !ls", "print(1)"]]
    path = tmp_path / "m.ipynb"
    nbformat.write(nb, path)
    from jupytext.cli import jupytext as jupytext_cli  # the console script's own entry, in this process

    assert jupytext_cli(["--quiet", "--to", "py:percent", str(path)]) in (None, 0)
    from jcli_sidecar.pair.pairing import map_cell

    cells = parse_percent((tmp_path / "m.py").read_text())
    heads = json.loads(path.read_text())["cells"]
    assert [map_cell(cells, k, heads, "m.py") for k in range(len(cells))] == [(k, "content") for k in range(5)]
