"""``j-cli -j exec -f`` also speaks upstream jupyter-jcli 0.9.7's JSON lines, so its scripts keep working.

The upstream lines below are data: what upstream's ``j-cli -j exec S -f
compat.py`` printed for :data:`COMPAT_PY` (a fresh kernel, the notebook not
yet there), then for ``--cell 1:3`` (the run that ends in a summary). They
were recorded by running upstream once; the test does not need it
installed. Every field a script could read there must be in our lines, with
the same type and value (execution counts aside: they depend on the kernel).
"""

from __future__ import annotations

import json

import pytest
from helpers import run_cli

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

COMPAT_PY = f"""\
# %% [markdown]
# Upstream's JSON lines, field by field

# %%
print("hello")
x = 41
x + 1

# %%
from IPython.display import HTML, display
display(HTML("<b>bold</b>"))
display({{"image/png": "{PNG}", "text/plain": "<Figure>"}}, raw=True)
display({{"application/vnd.custom+json": {{"a": 1}}}}, raw=True)

# %%
raise ValueError("boom")
"""

CELL_1 = {
    "cell_index": 1,
    "source_preview": 'print("hello") x = 41 x + 1',
    "outputs": [{"type": "stream", "name": "stdout", "text": "hello\n"}, {"type": "execute_result", "text": "42"}],
    "execution_count": 1,
}
CELL_2 = {
    "cell_index": 2,
    "source_preview": 'from IPython.display import HTML, display display(HTML("<b>bold</b>")) display({',
    "outputs": [
        {"type": "html", "html": "<b>bold</b>"},
        {"type": "image", "mime": "image/png"},
        {"type": "display_data", "keys": ["application/vnd.custom+json"]},
    ],
    "execution_count": 2,
}
CELL_3 = {
    "cell_index": 3,
    "source_preview": 'raise ValueError("boom")',
    "outputs": [
        {
            "type": "error",
            "ename": "ValueError",
            "evalue": "boom",
            "traceback": [
                "---------------------------------------------------------------------------",
                "ValueError                                Traceback (most recent call last)",
                'Cell In[3], line 1\n----> 1 raise ValueError("boom")\n',
                "ValueError: boom",
            ],
        }
    ],
    "execution_count": 3,
}
#: Upstream's lines for the whole file: the run stops at the error (upstream then prints no summary).
UPSTREAM_FULL_RUN = [
    {"status": "ok", "cell": CELL_1, "notebook_created": "compat.ipynb", "notebook_updated": True},
    {"status": "ok", "cell": CELL_2, "notebook_updated": True},
    {"status": "error", "cell": CELL_3, "notebook_updated": True},
]
#: Upstream's lines for ``--cell 1:3`` afterwards, ending in its summary.
UPSTREAM_RANGE_RUN = [
    {"status": "ok", "cell": {**CELL_1, "execution_count": 4}, "notebook_updated": True},
    {"status": "ok", "cell": {**CELL_2, "execution_count": 5}, "notebook_updated": True},
    {"status": "ok", "summary": {"cells_executed": 2, "notebook_updated": True}},
]


def fields(value, prefix=""):
    """Every field path a script could read (``cell.outputs[].type``), with its JSON type."""
    found = {}
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            found[path] = type(item).__name__
            found.update(fields(item, path))
    elif isinstance(value, list):
        for item in value:
            found.update(fields(item, f"{prefix}[]"))
    return found


def without_counts(value):
    """``value`` with every ``execution_count`` left out (they count the kernel's runs, not ours)."""
    if isinstance(value, dict):
        return {k: without_counts(v) for k, v in value.items() if k != "execution_count"}
    if isinstance(value, list):
        return [without_counts(v) for v in value]
    return value


def upstream_view(ours, theirs):
    """Our line cut down to the fields upstream's line has (recursively, lists item by item)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), (ours, theirs)
        missing = set(theirs) - set(ours)
        assert not missing, f"upstream fields missing: {missing}"
        return {key: upstream_view(ours[key], theirs[key]) for key in theirs}
    if isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), (ours, theirs)
        return [upstream_view(o, t) for o, t in zip(ours, theirs, strict=True)]
    return ours


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    (work / "compat.py").write_text(COMPAT_PY)
    return work


@pytest.fixture
def fresh_session(use_jupyter, tmp_path):
    """A kernel of its own, so execution counts start at 1 as upstream's did."""
    name = f"compat-{tmp_path.name[-12:]}"
    assert run_cli("session", "create", "-n", name, cwd=tmp_path).returncode == 0
    yield name
    run_cli("session", "kill", name, cwd=tmp_path)


def test_every_upstream_field_is_there_with_its_type_and_meaning(ws, fresh_session):
    full = run_cli("-j", "exec", fresh_session, "-f", "compat.py", cwd=ws)
    assert full.returncode == 1
    *lines, summary = [json.loads(line) for line in full.stdout.splitlines()]
    assert summary["status"] == "error" and summary["summary"] == {"cells_executed": 3, "notebook_updated": True}
    ranged = run_cli("-j", "exec", fresh_session, "-f", "compat.py", "--cell", "1:3", cwd=ws)
    assert ranged.returncode == 0, ranged.stderr
    range_lines = [json.loads(line) for line in ranged.stdout.splitlines()]
    for ours, theirs in zip(lines + range_lines, UPSTREAM_FULL_RUN + UPSTREAM_RANGE_RUN, strict=True):
        missing = set(fields(theirs).items()) - set(fields(ours).items())
        assert not missing, f"upstream fields missing or of another type: {sorted(missing)}"
        assert upstream_view(ours, theirs) == theirs  # the same values: the same meaning
    # execution counts mean the same too: ours match the kernel's, as upstream's did
    assert [line["cell"]["execution_count"] for line in lines + range_lines[:2]] == [1, 2, 3, 4, 5]
    assert all(line["cell"]["execution_count"] == line["execution_count"] for line in lines + range_lines[:2])
    # and ours stay: j-cli's own fields are all still there
    assert {"cell_index", "notebook_cell_index", "cell_id", "text", "outputs", "session_id"} <= set(lines[0])
    assert {"notebook", "cells_run", "cells_failed"} <= set(range_lines[-1])
    assert "notebook_created" not in lines[1] and "notebook_created" not in range_lines[0]


def test_an_absolute_path_names_the_created_notebook_absolutely(ws, kernel_session):
    result = run_cli("-j", "exec", kernel_session, "-f", str(ws / "compat.py"), "--cell", "1", cwd=ws.parent)
    first = json.loads(result.stdout.splitlines()[0])
    assert result.returncode == 0 and first["notebook_created"] == str(ws / "compat.ipynb")


def test_a_cell_cut_short_carries_upstreams_fields_too(ws, kernel_session):
    (ws / "slow.py").write_text("# %%\nprint('a', flush=True)\nimport time\ntime.sleep(600)\n")
    result = run_cli("-j", "exec", kernel_session, "-f", "slow.py", "--timeout", "1", cwd=ws)
    line, summary = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 1 and line["code"] == "TIMEOUT" and line["status"] == "error"
    assert line["notebook_created"] == "slow.ipynb" and line["notebook_updated"] is True
    assert line["cell"]["outputs"][0] == {"type": "stream", "name": "stdout", "text": "a\n"}
    assert line["cell"]["outputs"][1]["ename"] == "KeyboardInterrupt"
    assert summary["summary"] == {"cells_executed": 0, "notebook_updated": True}


def test_human_mode_is_unchanged(ws, fresh_session):
    result = run_cli("exec", fresh_session, "-f", "compat.py", "--cell", "1", cwd=ws)
    assert result.returncode == 0 and result.stdout == b"[cell 1] 1/1\nhello\n42\n"
    assert b"source_preview" not in result.stdout + result.stderr
