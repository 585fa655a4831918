"""jupytext's own golden files for the percent format, as a test suite for j-cli's codec.

``tests/fixtures/jupytext/`` (see its ``SOURCE.md``) holds jupytext's 24
Python notebooks (``ipynb_py/``) and, for each, the py:percent file jupytext
expects to write from it (``ipynb_to_percent/``). Both directions, every file:

- **(a) notebook → j-cli's .py → jupytext.** ``j-cli convert ipynb-to-py``
  (the real CLI) writes the notebook as a ``.py``; ``jupytext.reads(text,
  fmt="py:percent")`` reads from it the cells the notebook holds, and its
  kernelspec.
- **(b) jupytext's .py → j-cli.** j-cli's reader (:func:`read_percent`, which
  also reads the header) gives the cells jupytext reads from the same text,
  and the same kernelspec; nothing is refused. ``j-cli convert py-to-ipynb``
  (the real CLI) writes a notebook with those cells.

**How cells are compared.** A cell is ``(cell_type, source, id, metadata)``:

- ``source`` exactly, character for character: no whitespace is stripped on
  either side (jupytext and j-cli both drop blank lines at the ends of a
  cell when they read a ``.py``, and none of these notebooks has any, so no
  normalisation is needed and none is applied);
- ``id``: the notebook cell's ``id``; jupytext reads a marker's ``id="…"``
  as cell metadata ``id``, so on its side the id is taken out of the
  metadata; j-cli's is the cell's ``cell_id``;
- ``metadata``: jupytext's layout keys (``lines_to_next_cell``,
  ``lines_to_end_of_cell_marker``, ``cell_marker``) are dropped from what
  jupytext reads, and the keys that stay in a notebook and never go on a
  marker (:data:`NOTEBOOK_ONLY_METADATA`: ``collapsed``, ``ExecuteTime`` …)
  from the notebook's cells. Everything else must be equal.

Three of jupytext's files start with a ``# ---`` block that is not a YAML
mapping (``title: Exception: Test``, prose, ``Content.``) besides its
``jupyter:`` section: jupytext reads that block as a raw cell, and so does
j-cli; a notebook j-cli writes from it keeps the raw cell byte for byte.
"""

from __future__ import annotations

import json
import shutil

import jupytext
import pytest
import yaml
from helpers import TESTS, run_cli

from jcli_sidecar.pair.percent import read_percent
from jcli_sidecar.pair.percent_write import NOTEBOOK_ONLY_METADATA, write_percent

GOLDEN = TESTS / "fixtures" / "jupytext"
NOTEBOOKS = sorted((GOLDEN / "ipynb_py").glob("*.ipynb"))
SCRIPTS = sorted((GOLDEN / "ipynb_to_percent").glob("*.py"))
JUPYTEXT_LAYOUT = frozenset({"lines_to_next_cell", "lines_to_end_of_cell_marker", "cell_marker"})
#: jupytext's files whose leading '# ---' block is not a YAML mapping (j-cli refused them once).
FRONT_MATTER_NOT_A_MAPPING = [
    "jupyter_with_raw_cell_with_invalid_yaml",
    "raw_cell_with_complex_yaml_like_content",
    "raw_cell_with_non_dict_yaml_content",
]


def _source(value) -> str:
    return value if isinstance(value, str) else "".join(value)


def _notebook_cells(nb: dict) -> list[tuple]:
    out = []
    for cell in nb["cells"]:
        metadata = {k: v for k, v in cell.get("metadata", {}).items() if k not in NOTEBOOK_ONLY_METADATA}
        out.append((cell["cell_type"], _source(cell["source"]), cell.get("id"), metadata))
    return out


def _cells_as_read(nb: dict) -> list[tuple]:
    """Each cell's type, source and metadata: what a notebook holds, less its generated ids and outputs."""
    return [(c["cell_type"], _source(c["source"]), c.get("metadata", {})) for c in nb["cells"]]


def _jupytext_read(text: str) -> tuple[list[tuple], dict | None]:
    nb = jupytext.reads(text, fmt="py:percent")
    cells = []
    for cell in nb.cells:
        metadata = {k: v for k, v in cell.metadata.items() if k not in JUPYTEXT_LAYOUT}
        cell_id = metadata.pop("id", None)
        cells.append((cell.cell_type, cell.source, cell_id, metadata))
    return cells, nb.metadata.get("kernelspec")


def _j_cli_read(text: str, name: str) -> tuple[list[tuple], dict | None]:
    doc = read_percent(text, name)
    return [(c.cell_type, c.source, c.cell_id, c.metadata or {}) for c in doc.cells], doc.metadata.get("kernelspec")


def test_the_golden_files_are_all_here():
    assert len(NOTEBOOKS) == len(SCRIPTS) == 24
    assert [p.stem for p in NOTEBOOKS] == [p.stem for p in SCRIPTS]
    assert (GOLDEN / "LICENSE-jupytext").read_text().startswith("MIT License")
    assert set(FRONT_MATTER_NOT_A_MAPPING) <= {p.stem for p in SCRIPTS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_j_cli_converts_reads_in_jupytext_as_the_notebook(path, tmp_path):
    """``j-cli convert`` over the golden files, read back by jupytext."""
    nb_path = tmp_path / "nb.ipynb"
    shutil.copyfile(path, nb_path)
    result = run_cli("-j", "convert", "ipynb-to-py", str(nb_path), "-o", str(tmp_path / "nb.py"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    nb = json.loads(path.read_text())
    cells, kernelspec = _jupytext_read((tmp_path / "nb.py").read_text())
    assert cells == _notebook_cells(nb)
    assert kernelspec == nb["metadata"].get("kernelspec")


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_a_py_jupytext_writes_reads_in_j_cli_as_in_jupytext(path, tmp_path):
    text = path.read_text()
    ours, our_kernelspec = _j_cli_read(text, path.name)
    theirs, their_kernelspec = _jupytext_read(text)
    assert ours == theirs
    assert our_kernelspec == their_kernelspec
    py = tmp_path / "nb.py"
    shutil.copyfile(path, py)
    result = run_cli("-j", "convert", "py-to-ipynb", str(py), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = json.loads((tmp_path / "nb.ipynb").read_text())
    assert [(c["cell_type"], _source(c["source"])) for c in written["cells"]] == [(c[0], c[1]) for c in theirs]
    assert written["metadata"].get("kernelspec") == their_kernelspec


@pytest.mark.parametrize("stem", FRONT_MATTER_NOT_A_MAPPING)
def test_front_matter_that_is_not_a_mapping_round_trips_as_a_raw_cell(stem, tmp_path):
    """jupytext's .py → a notebook (the raw cell as jupytext's own notebook holds it, byte for byte) → a .py → the same notebook."""
    original = json.loads((GOLDEN / "ipynb_py" / f"{stem}.ipynb").read_text())
    raw = _source(original["cells"][0]["source"])
    assert original["cells"][0]["cell_type"] == "raw" and raw.startswith("---\n")
    shutil.copyfile(GOLDEN / "ipynb_to_percent" / f"{stem}.py", tmp_path / "nb.py")

    assert run_cli("convert", "py-to-ipynb", "nb.py", cwd=tmp_path).returncode == 0
    first = json.loads((tmp_path / "nb.ipynb").read_text())
    assert first["cells"][0]["cell_type"] == "raw"
    assert _source(first["cells"][0]["source"]).encode() == raw.encode()
    assert first["metadata"]["kernelspec"] == original["metadata"]["kernelspec"]

    assert run_cli("convert", "ipynb-to-py", "nb.ipynb", "-o", "again.py", cwd=tmp_path).returncode == 0
    again = (tmp_path / "again.py").read_text()
    assert _jupytext_read(again)[0][0][:2] == ("raw", raw)
    assert [cell[:2] for cell in _jupytext_read(again)[0]] == [cell[:2] for cell in _notebook_cells(first)], (
        "jupytext reads the .py as the notebook"
    )
    assert run_cli("convert", "py-to-ipynb", "again.py", "-o", "again.ipynb", cwd=tmp_path).returncode == 0
    second = json.loads((tmp_path / "again.ipynb").read_text())
    assert second["metadata"] == first["metadata"] and second["nbformat"] == first["nbformat"]
    assert _cells_as_read(second) == _cells_as_read(first), "the same notebook: every cell's type, source and metadata"
    assert [c["cell_type"] for c in first["cells"]] == [c["cell_type"] for c in original["cells"]]
    assert [_source(c["source"]) for c in first["cells"]] == [_source(c["source"]) for c in original["cells"]]
    assert run_cli("convert", "ipynb-to-py", "again.ipynb", "-o", "third.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "third.py").read_bytes() == (tmp_path / "again.py").read_bytes()


@pytest.mark.parametrize("stem", FRONT_MATTER_NOT_A_MAPPING)
def test_writing_back_what_j_cli_read_keeps_the_raw_cell_bytes(stem):
    text = (GOLDEN / "ipynb_to_percent" / f"{stem}.py").read_text()
    doc = read_percent(text, f"{stem}.py")
    written = write_percent(doc.cells, doc.metadata)
    back = read_percent(written, "written.py")
    assert back.cells[0].cell_type == "raw" and back.cells[0].source.encode() == doc.cells[0].source.encode()
    assert [(c.cell_type, c.source) for c in back.cells] == [(c.cell_type, c.source) for c in doc.cells]
    assert write_percent(back.cells, back.metadata).encode() == written.encode()


def test_a_jupytext_pair_with_such_front_matter_names_its_kernel(tmp_path):
    """``kernelspec inspect-file`` reads the header's ``jupyter:`` section and leaves the front matter to the raw cell."""
    py = tmp_path / "front.py"
    shutil.copyfile(GOLDEN / "ipynb_to_percent" / "jupyter_with_raw_cell_with_invalid_yaml.py", py)
    result = run_cli("-j", "kernelspec", "inspect-file", str(py), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert doc["kernel_name"] == "python3" and doc["kernelspec"]["display_name"] == "Python 3 (ipykernel)"


@pytest.mark.parametrize(
    ("header", "what"),
    [
        ("# jupyter:\n#   kernelspec: [unclosed\n", "is not valid YAML (line 3)"),
        ("# jupyter:\n#   - a list\n", "is not a YAML mapping"),
    ],
)
def test_a_jupyter_section_jupytext_cannot_read_is_still_refused(header, what, tmp_path):
    """jupytext raises on these too: the notebook metadata would be lost, so j-cli says which line is wrong."""
    py = tmp_path / "bad.py"
    py.write_text(f"# ---\n{header}# ---\n\n# %%\nx = 1\n")
    result = run_cli("-j", "convert", "py-to-ipynb", str(py), cwd=tmp_path)
    assert result.returncode == 1 and b"Traceback" not in result.stderr
    error = result.error()
    assert error["code"] == "NOTEBOOK_READ_FAILED" and f"'jupyter:' section of its '# ---' header {what}" in error["message"]
    assert not (tmp_path / "bad.ipynb").exists()
    with pytest.raises((yaml.YAMLError, AttributeError)):  # jupytext's own failures: a YAML error, a list taken for a dict
        jupytext.reads(py.read_text(), fmt="py:percent")


def test_a_repeated_jupyter_section_replaces_the_earlier_one_as_in_jupytext():
    spec = "{name: %s, display_name: %s, language: python}"
    text = f"# ---\n# jupyter:\n#   kernelspec: {spec % ('a', 'A')}\n# title: t\n# jupyter:\n#   kernelspec: {spec % ('b', 'B')}\n# ---\n\n# %%\nx = 1\n"
    ours, kernelspec = _j_cli_read(text, "twice.py")
    assert (ours, kernelspec) == _jupytext_read(text) and kernelspec == {"name": "b", "display_name": "B", "language": "python"}
    assert ours[0][:2] == ("raw", "---\ntitle: t\n---")


def test_exec_runs_a_jupytext_pair_with_such_front_matter(tmp_path, use_jupyter, kernel_session):
    """The run a user makes: ``exec -f`` on jupytext's .py syncs the raw cell into the notebook and runs the code."""
    stem = "jupyter_with_raw_cell_with_invalid_yaml"
    shutil.copyfile(GOLDEN / "ipynb_to_percent" / f"{stem}.py", tmp_path / "nb.py")
    result = run_cli("-j", "exec", kernel_session, "-f", "nb.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    *cells, summary = [json.loads(line) for line in result.stdout.splitlines()]
    assert summary["status"] == "ok" and summary["cells_run"] == 1
    assert [c["cell_index"] for c in cells] == [1]
    written = json.loads((tmp_path / "nb.ipynb").read_text())
    original = json.loads((GOLDEN / "ipynb_py" / f"{stem}.ipynb").read_text())
    assert _source(written["cells"][0]["source"]).encode() == _source(original["cells"][0]["source"]).encode()
    assert written["cells"][1]["outputs"][0]["data"]["text/plain"] in ("6", ["6"])
