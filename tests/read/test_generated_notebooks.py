"""Hypothesis: any notebook-like file gives an envelope or a coded error.

A coded error must be one a reader documents (``INTERNAL_ERROR`` fails the
test), and a well-formed notebook must read back exactly what it holds, so
a reader that always raised could not pass. Also proves that the lazy cell
index (``NotebookFile``) decodes exactly the cells a full ``json.loads``
would.
"""

from __future__ import annotations

import base64
import io
import json
import sys

import pytest
from helpers import examples
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from PIL import Image

from jcli_sidecar.base.errors import InternalError, JcliError, NotebookReadFailed
from jcli_sidecar.base.plain_text import strip_ansi_lines
from jcli_sidecar.ipynb.notebook import NotebookFile
from jcli_sidecar.read.reader import OutputQuery, list_outputs, read_output


def _png() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (3, 2)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


PNG = _png()
text = st.text(max_size=30)
multiline = st.one_of(text, st.lists(text, max_size=4))
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=8,
)
mime_value = st.one_of(
    st.tuples(st.sampled_from(["image/png", "image/jpeg", "image/gif"]), st.sampled_from([PNG, PNG[:-4], "@@", ""])),
    st.tuples(st.sampled_from(["text/plain", "text/html", "text/markdown", "image/svg+xml", "text/x-odd"]), multiline),
    st.tuples(st.sampled_from(["application/json", "application/vnd.x+json"]), json_value),
    st.tuples(text, st.one_of(multiline, json_value)),
)
bundle = st.lists(mime_value, max_size=4).map(dict)
good_output = st.one_of(
    st.fixed_dictionaries({"output_type": st.just("stream"), "name": st.sampled_from(["stdout", "stderr"]), "text": multiline}),
    st.fixed_dictionaries({"output_type": st.just("display_data"), "data": bundle, "metadata": st.just({})}),
    st.fixed_dictionaries(
        {"output_type": st.just("execute_result"), "data": bundle, "metadata": st.just({}), "execution_count": st.integers(0, 99)}
    ),
    st.fixed_dictionaries({"output_type": st.just("error"), "ename": text, "evalue": text, "traceback": st.lists(text, max_size=3)}),
)
odd_output = st.one_of(json_value, st.dictionaries(st.sampled_from(["output_type", "data", "text", "name"]), json_value))
cell = st.one_of(
    st.fixed_dictionaries(
        {
            "cell_type": st.just("code"),
            "source": multiline,
            "metadata": st.just({}),
            "execution_count": st.one_of(st.none(), st.integers(0, 99)),
            "outputs": st.lists(st.one_of(good_output, good_output, odd_output), max_size=4),
        }
    ),
    st.fixed_dictionaries({"cell_type": st.sampled_from(["markdown", "raw"]), "source": multiline, "metadata": st.just({})}),
    json_value,
)
notebook = st.fixed_dictionaries(
    {
        "nbformat": st.one_of(st.just(4), st.just(4), st.integers(-1, 6), json_value),
        "nbformat_minor": st.integers(0, 5),
        "metadata": st.just({}),
        "cells": st.one_of(st.lists(cell, max_size=5), json_value),
    }
)
layout = st.sampled_from([None, 0, 1, 2])


def _write(tmp_path, doc, indent) -> str:
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(doc, indent=indent, ensure_ascii=bool(indent)), encoding="utf-8")
    return str(path)


#: What a read may answer with besides an envelope; anything else (INTERNAL_ERROR above all) is a bug.
READ_CODES = frozenset(
    {
        "FILE_NOT_FOUND",
        "NOTEBOOK_READ_FAILED",
        "CELL_NOT_FOUND",
        "OUTPUT_NOT_FOUND",
        "MIME_NOT_FOUND",
        "OUTPUT_DATA_INVALID",
        "OUTPUT_TOO_LARGE",
        "INVALID_WINDOW",
        "USAGE_ERROR",
    }
)


def _call(fn, *args, ok: bool = False, code: str | None = None, **kwargs):
    """The envelope, or None for a documented coded error.

    ``ok``: the input is well formed, so any error fails the test;
    ``code``: exactly this error is the right answer.
    """
    try:
        result = fn(*args, **kwargs)
    except JcliError as err:
        assert err.code in READ_CODES, f"{err.code}: {err.message}"
        assert err.message and "Traceback" not in err.message
        assert not ok, f"a well-formed read failed: {err.code}: {err.message}"
        assert code in (None, err.code), f"expected {code}, got {err.code}: {err.message}"
        return None
    assert code is None, f"expected {code}, got an envelope"
    assert result["schema_version"] == 1 and result["status"] == "ok"
    json.dumps(result)  # always serialisable
    return result


@pytest.mark.slow
@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(doc=notebook, indent=layout, mime=st.one_of(st.none(), st.sampled_from(["text/plain", "image/png", "x/y"])))
def test_any_notebook_gives_an_envelope_or_a_coded_error(tmp_path, doc, indent, mime):
    path = _write(tmp_path, doc, indent)
    cells = doc["cells"] if isinstance(doc.get("cells"), list) else []
    for ci in range(len(cells) + 1):
        _call(list_outputs, path, ci)
        outputs = cells[ci].get("outputs") if ci < len(cells) and isinstance(cells[ci], dict) else None
        count = len(outputs) if isinstance(outputs, list) else 0
        for oi in range(count + 1):
            _call(read_output, path, ci, oi, OutputQuery(mime_type=mime))
            _call(read_output, path, ci, oi, OutputQuery(offset=1, limit=3))


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(doc=notebook.filter(lambda d: d["nbformat"] == 4 and isinstance(d["cells"], list)), indent=layout)
def test_the_lazy_index_decodes_the_same_cells_as_a_full_parse(tmp_path, doc, indent):
    path = _write(tmp_path, doc, indent)
    nb = NotebookFile.load(path)
    with open(path, "rb") as fh:
        full = json.loads(fh.read())
    assert nb.cell_count == len(full["cells"])
    for i, expected in enumerate(full["cells"]):
        assert nb.cell(i) == expected
        head = nb.cell_head(i)
        if isinstance(expected, dict):
            assert head == {k: v for k, v in expected.items() if k in ("cell_type", "id", "metadata", "source")}
            assert nb.head(i) == {k: v for k, v in expected.items() if k != "outputs"}
            outputs = expected.get("outputs", [])
            assert nb.outputs(i) == outputs
            if isinstance(outputs, list):
                assert nb.output_count(i) == len(outputs)
                assert [nb.output(i, k) for k in range(len(outputs))] == outputs


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(doc=notebook.filter(lambda d: d["nbformat"] == 4 and isinstance(d["cells"], list)), indent=layout)
def test_the_offset_index_is_the_same_when_read_a_few_bytes_at_a_time(tmp_path, doc, indent):
    """Every value, string and escape run cut by a window boundary somewhere."""
    from unittest import mock

    from jcli_sidecar.ipynb import jsonscan

    path = _write(tmp_path, doc, indent)
    with open(path, "rb") as fh:
        full = json.loads(fh.read())
    wide = NotebookFile.load(path)
    for chunk in (1, 3, 7):
        with mock.patch.object(jsonscan, "CHUNK", chunk):
            narrow = NotebookFile.load(path)
        assert (narrow.index is None) == (wide.index is None)
        assert [narrow.cell(i) for i in range(narrow.cell_count)] == full["cells"]
        if wide.index is not None:
            assert [(c.start, c.end, c.outputs, c.items) for c in narrow.index.cells] == [
                (c.start, c.end, c.outputs, c.items) for c in wide.index.cells
            ]


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(doc=notebook, cut=st.floats(0, 1), junk=st.binary(max_size=4), at=st.floats(0, 1))
def test_damaged_bytes_never_raise_anything_but_coded_errors(tmp_path, doc, cut, junk, at):
    raw = json.dumps(doc, indent=1).encode()
    pos = int(len(raw) * at)
    damaged = (raw[:pos] + junk + raw[pos:])[: max(1, int(len(raw) * cut))]
    path = tmp_path / "broken.ipynb"
    path.write_bytes(damaged)
    for ci in range(3):
        _call(list_outputs, str(path), ci)
        _call(read_output, str(path), ci, 0)


# -- well-formed notebooks: every read succeeds and returns what the file holds --------

good_bundle = st.dictionaries(
    st.sampled_from(
        ["image/png", "text/plain", "text/html", "text/markdown", "image/svg+xml", "application/json", "application/vnd.x+json"]
    ),
    st.none(),  # values drawn per MIME below
    min_size=1,
    max_size=4,
).flatmap(
    lambda mimes: st.fixed_dictionaries(
        {mime: (st.just(PNG) if mime == "image/png" else json_value if mime.endswith("json") else multiline) for mime in mimes}
    )
)
valid_output = st.one_of(
    st.fixed_dictionaries({"output_type": st.just("stream"), "name": st.sampled_from(["stdout", "stderr"]), "text": multiline}),
    st.fixed_dictionaries({"output_type": st.just("display_data"), "data": good_bundle, "metadata": st.just({})}),
    st.fixed_dictionaries(
        {"output_type": st.just("execute_result"), "data": good_bundle, "metadata": st.just({}), "execution_count": st.integers(0, 99)}
    ),
    st.fixed_dictionaries({"output_type": st.just("error"), "ename": text, "evalue": text, "traceback": st.lists(text, max_size=3)}),
)
valid_cell = st.one_of(
    st.fixed_dictionaries(
        {
            "cell_type": st.just("code"),
            "source": multiline,
            "metadata": st.just({}),
            "execution_count": st.one_of(st.none(), st.integers(0, 99)),
            "outputs": st.lists(valid_output, max_size=4),
        }
    ),
    st.fixed_dictionaries({"cell_type": st.sampled_from(["markdown", "raw"]), "source": multiline, "metadata": st.just({})}),
)
valid_notebook = st.fixed_dictionaries(
    {"nbformat": st.just(4), "nbformat_minor": st.integers(0, 5), "metadata": st.just({}), "cells": st.lists(valid_cell, max_size=4)}
)


def _joined(value) -> str:
    return value if isinstance(value, str) else "".join(value)


def _expected_data(mime: str, value):
    if mime == "image/png":
        return PNG
    if mime.endswith("json"):
        return value
    return _joined(value)


_ESCAPED_TRACEBACK = {
    "nbformat": 4,
    "nbformat_minor": 0,
    "metadata": {},
    "cells": [
        {
            "cell_type": "code",
            "source": "",
            "metadata": {},
            "execution_count": None,
            "outputs": [{"output_type": "error", "ename": "", "evalue": "\x1b@", "traceback": ["\x1b@", "\x1b[31mE\x1b[0m"]}],
        }
    ],
}


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(doc=valid_notebook, indent=layout)
@example(doc=_ESCAPED_TRACEBACK, indent=1)  # once found here: a two-byte escape (ESC @) in a traceback line
def test_a_well_formed_notebook_reads_back_exactly_what_it_holds(tmp_path, doc, indent):
    path = _write(tmp_path, doc, indent)
    cells = doc["cells"]
    for ci, cell in enumerate(cells):
        outputs = cell.get("outputs", [])
        catalog = _call(list_outputs, path, ci, ok=True)
        assert catalog["cell_type"] == cell["cell_type"] and catalog["output_count"] == len(outputs)
        for oi, output in enumerate(outputs):
            entry = catalog["outputs"][oi]
            assert "error" not in entry, entry
            envelope = _call(read_output, path, ci, oi, ok=True)
            kind = output["output_type"]
            assert envelope["output_type"] == kind
            if kind == "stream":
                assert envelope["stream"] == {**envelope["stream"], "name": output["name"], "data": _joined(output["text"])}
            elif kind == "error":
                # a traceback's lines read back without terminal escapes (docs/reading-outputs.md); all else exactly
                assert envelope["error"] == {
                    "ename": output["ename"],
                    "evalue": output["evalue"],
                    "traceback": strip_ansi_lines(output["traceback"]),
                }
            else:
                assert entry["available_mime_types"] == list(output["data"])
                for mime, value in output["data"].items():
                    assert entry["bytes"][mime] is not None, (mime, entry)
                    one = _call(read_output, path, ci, oi, OutputQuery(mime_type=mime), ok=True)
                    assert one["selected"]["mime_type"] == mime
                    assert one["selected"]["data"] == _expected_data(mime, value)
        _call(read_output, path, ci, len(outputs), code="OUTPUT_NOT_FOUND")
    _call(list_outputs, path, len(cells), code="CELL_NOT_FOUND")


@pytest.mark.slow
@pytest.mark.parametrize("error", [InternalError("a bug"), NotebookReadFailed("always")], ids=["internal-error", "coded-error"])
def test_the_properties_catch_a_reader_that_always_raises(tmp_path, monkeypatch, error):
    """The tests above are not vacuous: a reader that always raised, even a coded error, fails them."""

    def broken(*args, **kwargs):
        raise error

    here = sys.modules[__name__]
    monkeypatch.setattr(here, "list_outputs", broken)
    monkeypatch.setattr(here, "read_output", broken)
    well_formed = _until_it_fails(test_a_well_formed_notebook_reads_back_exactly_what_it_holds, doc=valid_notebook, indent=layout)
    _fails_an_assertion(lambda: well_formed(tmp_path))
    if error.code == "INTERNAL_ERROR":
        mime = st.one_of(st.none(), st.sampled_from(["text/plain", "image/png", "x/y"]))
        any_notebook = _until_it_fails(test_any_notebook_gives_an_envelope_or_a_coded_error, doc=notebook, indent=layout, mime=mime)
        _fails_an_assertion(lambda: any_notebook(tmp_path))


def _until_it_fails(test, **strategies):
    """``test``'s body on the same strategies, searched until its first failing example and no further.

    That one example is the proof: with a reader that always raises, every
    example fails (each reads at least the catalog one past the last cell,
    which must be ``CELL_NOT_FOUND``), so the first one drawn fails. What
    Hypothesis does after a failure (shrinking it, explaining it) is left
    out: on a fresh clone, with no example database to replay, that took
    tens of seconds of CPU. Nor is the database used, so every run searches
    afresh rather than replaying what a previous run stored.
    """
    first_failure = settings(
        max_examples=examples(150),
        phases=[Phase.generate],
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
        deadline=None,
    )
    return first_failure(given(**strategies)(test.hypothesis.inner_test))


def _fails_an_assertion(run) -> None:
    """``run`` fails by assertion: one, or a group of them (Hypothesis reports distinct failures together)."""
    with pytest.raises((AssertionError, ExceptionGroup)) as info:
        run()
    if isinstance(info.value, ExceptionGroup):
        assert info.value.split(AssertionError)[1] is None, info.value  # nothing but assertion failures
