"""Notebook parameters against papermill's own code, without a kernel (quick tier).

papermill is the reference (a test dependency only): for the same values,
j-cli's injected cell is byte for byte what papermill's Python translator
writes, ``-p`` values get the types papermill's CLI gives them, YAML loads as
papermill loads it, and the cell lands where papermill's
``parameterize_notebook`` puts it. Bad input is a coded error that writes
nothing; a kernel that is not Python is refused by name before anything is
written; a py:percent pair's sync treats the injected cell as j-cli's own.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys

import nbformat
import pytest
import yaml
from helpers import examples, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from papermill.cli import _resolve_type
from papermill.iorw import NoDatesSafeLoader
from papermill.parameterize import parameterize_notebook
from papermill.translators import PythonTranslator, Translator

from jcli_sidecar.base import JcliError
from jcli_sidecar.kernel import NotebookRun, RunOptions
from jcli_sidecar.kernel.parameters import inject_parameters, python_source, resolve_parameters, resolve_value
from jcli_sidecar.pair import PercentCell, sync_cells


def papermill_source(values: dict) -> str:
    """papermill's Python translator's cell (as papermill writes it when black is not installed)."""
    return Translator.codify.__func__(PythonTranslator, values, "Parameters")


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4),
    max_leaves=12,
)
names = st.sampled_from(["a", "n", "_x", "name2", "Ratio", "éa"])


@settings(max_examples=examples(120), deadline=None)
@given(st.dictionaries(names, values, max_size=4))
def test_the_cell_is_papermills_byte_for_byte(params):
    assert python_source(params) == papermill_source(params)


@pytest.mark.parametrize(
    "value",
    ["é€", 'q"uote', "back\\slash", "new\nline\ttab", "\x00\x7f", "'single'", "😀", "", float("nan"), -math.inf, 1e300, 10**30],
)
def test_awkward_values_translate_as_papermill_does(value):
    assert python_source({"v": value, "m": {value if isinstance(value, str) else 1: [value]}}) == papermill_source(
        {"v": value, "m": {value if isinstance(value, str) else 1: [value]}}
    )


@settings(max_examples=examples(150), deadline=None)
@given(st.text() | st.from_regex(r"[+-]?[0-9_]*\.?[0-9]*(e[+-]?[0-9]+)?", fullmatch=True))
def test_p_values_get_papermills_cli_types(text):
    ours, theirs = resolve_value(text), _resolve_type(text)
    assert type(ours) is type(theirs)
    assert ours == theirs or (isinstance(ours, float) and math.isnan(ours) and math.isnan(theirs))


@pytest.mark.parametrize(
    "text",
    [
        "a: 2024-01-02\nb: yes\nc: [1, 2.5, ~]\nd: {x: .inf, y: 0x1F}\ne: '007'\nf: 1e3\ng: 1_000",
        "when: 2024-01-02T03:04:05Z\nempty: ''\nnested: {a: {b: [true, off]}}",
    ],
)
def test_yaml_loads_as_papermill_loads_it(text):
    expected = yaml.load(text, Loader=NoDatesSafeLoader)
    got = resolve_parameters(yaml_texts=[text])
    assert got.source == papermill_source(expected)
    assert got.values == json.loads(json.dumps(expected))


def test_p_wins_over_y_which_wins_over_a_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("a: 1\nb: 1\nc: 1\n")
    got = resolve_parameters([("c", "3")], ["b: 2\nc: 2"], [str(path)])
    assert got.values == {"a": 1, "b": 2, "c": 3}
    assert got.source == "# Parameters\na = 1\nb = 2\nc = 3\n"


def notebook(tmp_path, tagged: int | None, cells: int = 3):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(f"x{i} = {i}") for i in range(cells)]
    if tagged is not None:
        nb.cells[tagged].metadata["tags"] = ["parameters"]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    return path, nb


@pytest.mark.parametrize("tagged", [None, 0, 1, 2])
def test_the_cell_lands_where_papermill_puts_it_and_a_second_injection_replaces_it(tmp_path, tagged):
    path, nb = notebook(tmp_path, tagged)
    for params in ({"a": 1, "b": "x"}, {"c": [1, {"d": None}]}):
        given = copy.deepcopy(nb)
        given.metadata.setdefault("papermill", {})  # what papermill's execute_notebook sets up before parameterizing
        for cell in given.cells:
            cell.metadata.setdefault("tags", [])
        theirs = parameterize_notebook(given, params, kernel_name="python3", language="python")
        inject_parameters(str(path), resolve_parameters(yaml_texts=[json.dumps(params)]))
        ours = nbformat.read(str(path), as_version=4)
        shown = [(c.source, c.metadata.get("tags", [])) for c in ours.cells]
        assert shown == [(c.source, c.metadata.get("tags", [])) for c in theirs.cells]
        assert ours.metadata["papermill"]["parameters"] == params
        nb = theirs


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["-f", "nb.ipynb", "-p", "1x", "2"], "PARAMETERS_INVALID", "'1x' is not a Python identifier"),
        (["-f", "nb.ipynb", "-p", "class", "2"], "PARAMETERS_INVALID", "'class' is not a Python identifier"),
        (["-f", "nb.ipynb", "-y", "[1, 2]"], "PARAMETERS_INVALID", "must be a YAML mapping"),
        (["-f", "nb.ipynb", "-y", "a: [1"], "PARAMETERS_INVALID", "not valid YAML"),
        (["-f", "nb.ipynb", "-y", "a b: 1"], "PARAMETERS_INVALID", "'a b' is not a Python identifier"),
        (["-f", "nb.ipynb", "-y", "a: !!binary aGk="], "PARAMETERS_INVALID", "type bytes"),
        (["-f", "nb.ipynb", "-y", "a: &a [*a]"], "PARAMETERS_INVALID", "deeper than"),
        (["-f", "nb.ipynb", "--parameters-file", "missing.yaml"], "FILE_NOT_FOUND", "missing.yaml"),
        (["-c", "1 + 1", "-p", "a", "1"], "PARAMETERS_INVALID", "apply to notebook runs"),
        (["-f", "nb.ipynb", "-p", "a"], "USAGE_ERROR", "-p"),
        (["-f", "nb.ipynb", "-p", "a", "1", "--cell", "1"], "PARAMETERS_INVALID", "--cell"),
    ],
)
def test_bad_parameters_are_coded_errors_and_nothing_is_written(tmp_path, argv, code, says):
    path, _ = notebook(tmp_path, 0)
    before = path.read_bytes()
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("JCLI_JUPYTER")}
    env["JCLI_JUPYTER_SERVER_URL"] = "http://127.0.0.1:9"  # nothing listens: only a check that runs before any server may answer
    env["JCLI_JUPYTER_SERVER_TOKEN"] = "t"
    if "--cell" in argv:
        options = RunOptions(cells="1", kernel_language="python", parameters=resolve_parameters([("a", "1")]))
        with pytest.raises(JcliError) as caught:
            NotebookRun(str(path), options).prepare()
        err = caught.value.to_dict()
    else:
        result = run_cli("-j", "exec", "s", *argv, cwd=tmp_path, env=env)
        assert result.returncode in (1, 2), result.stderr
        err = json.loads(result.stderr)
    assert err["code"] == code and says in err["message"], err
    assert code == "USAGE_ERROR" or "--cell" in argv or err["executed"] is False
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["nb.ipynb"]


def test_aliases_that_expand_without_end_are_refused_quickly():
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    )
    with pytest.raises(JcliError) as caught:
        resolve_parameters(yaml_texts=[laughs])
    assert caught.value.code == "PARAMETERS_INVALID" and "characters" in caught.value.message


@pytest.mark.parametrize(("name", "language"), [("ir", "R"), ("julia-1.10", "julia"), ("mystery", None)])
def test_a_kernel_that_is_not_python_is_refused_by_name_before_anything_is_written(tmp_path, name, language):
    path, _ = notebook(tmp_path, 0)
    before = path.read_bytes()
    options = RunOptions(kernel_name=name, kernel_language=language, any_kernel=True, parameters=resolve_parameters([("a", "1")]))
    with pytest.raises(JcliError) as caught:
        NotebookRun(str(path), options).prepare()
    assert caught.value.code == "PARAMETERS_UNSUPPORTED_KERNEL" and repr(name) in caught.value.message
    assert path.read_bytes() == before


def test_a_pairs_sync_treats_the_injected_cell_as_jclis_own():
    py_cells = [PercentCell("code", "import math"), PercentCell("code", "alpha = 1"), PercentCell("code", "print(alpha)")]
    synced = sync_cells(py_cells, None).notebook
    with_cell = copy.deepcopy(synced)
    cell = nbformat.v4.new_code_cell("# Parameters\nalpha = 2\n")
    cell.metadata["tags"] = ["injected-parameters"]
    with_cell["cells"].insert(2, dict(cell))
    with_cell["metadata"]["papermill"] = {"parameters": {"alpha": 2}, "other": "kept"}
    raised = []

    def check(plan):
        from jcli_sidecar.pair.pairguard import check_sync

        try:
            check_sync(plan, "/nonexistent.py", "/nonexistent.ipynb")
        except JcliError as err:
            raised.append(err)

    again = sync_cells(py_cells, with_cell, check=check)
    assert raised == [] and again.plan.removed == [] and again.plan.injected == [2]
    assert [c["source"] for c in again.notebook["cells"]] == ["import math", "alpha = 1", "print(alpha)"]
    assert again.notebook["metadata"]["papermill"] == {"other": "kept"}
    assert again.py_to_nb == [0, 1, 2]


def test_the_exec_hot_path_does_not_import_yaml():
    code = "import sys; from jcli import fastpath, exec_cmd; from jcli_sidecar.kernel import parameters; print('yaml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_notebook_older_than_cell_ids_gets_a_cell_without_one(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = 4
    nb.cells = [nbformat.v4.new_code_cell("a = 1")]
    del nb.cells[0]["id"]
    path = tmp_path / "old.ipynb"
    nbformat.write(nb, str(path))
    inject_parameters(str(path), resolve_parameters([("a", "2")]))
    written = json.loads(path.read_text())
    assert [cell.get("id") for cell in written["cells"]] == [None, None] and written["nbformat_minor"] == 4
    nbformat.validate(nbformat.read(str(path), as_version=4))


def test_the_fast_path_and_click_read_p_alike_values_that_look_like_options_included():
    from jcli.cli import _make_exec_command
    from jcli.fastpath import parse_exec

    argv = ["-f", "x.ipynb", "-p", "n", "-5", "-p", "flag", "--x", "-y", "a: 1", "-y", "b: 2", "--parameters-file", "f.yaml"]
    fast = parse_exec(["exec", "s", *argv])
    slow = _make_exec_command().make_context("exec", ["s", *argv]).params
    assert [tuple(pair) for pair in fast["parameters"]] == list(slow["parameters"]) == [("n", "-5"), ("flag", "--x")]
    assert list(fast["parameters_yaml"]) == list(slow["parameters_yaml"]) == ["a: 1", "b: 2"]
    assert list(fast["parameters_file"]) == list(slow["parameters_file"]) == ["f.yaml"]
