"""Notebooks that are not UTF-8: refused on every path that reads one, with the encoding named, and never rewritten.

nbformat reads and writes a notebook as JSON in UTF-8 only. ``json.loads``
would guess UTF-16 or UTF-32 from the first bytes while every byte-level
walk (the depth check, the offset index) reads UTF-8: on main a UTF-16
notebook was read (a 960-deep value behind a character whose UTF-16 bytes
hold a quote passed the 256-level check) and ``exec -f`` wrote it back as
UTF-8. A UTF-8 byte order mark stays what it was: read, and written back
without the mark, which the run's notes say
(tests/kernel/test_hostile_writeback.py).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from helpers import run_cli

NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "cells": [
        {
            "cell_type": "code",
            "id": "a1",
            "metadata": {},
            "execution_count": 1,
            "source": "print('hi ∀')",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "hi ∀\n"}],
        }
    ],
}

#: Python's codec, and the name j-cli's message gives it.
ENCODINGS = {
    "utf-16": "UTF-16 (with a byte order mark)",
    "utf-16-le": "UTF-16-LE",
    "utf-16-be": "UTF-16-BE",
    "utf-32": "UTF-32 (with a byte order mark)",
    "utf-32-le": "UTF-32-LE",
    "utf-32-be": "UTF-32-BE",
}


def _deep(codec: str) -> bytes:
    """A notebook with a value 960 levels deep, after a character whose UTF-16 bytes hold a quote (U+2200: ``00 22``)."""
    text = json.dumps({**NOTEBOOK, "metadata": {"x": "∀", "deep": "@"}}, ensure_ascii=False)
    return text.replace('"@"', "[" * 960 + "]" * 960).encode(codec)


#: Each path that reads a notebook: its arguments (``{nb}`` the notebook, ``{py}`` a pair's .py) and where its error is.
PATHS = {
    "read": ("notebook", "output", "{nb}", "--cell", "0", "--output", "0"),
    "summary": ("notebook", "summary", "{nb}"),
    "show": ("notebook", "show", "{nb}", "--cell", "0"),
    "map": ("notebook", "map", "{nb}"),
    "grep": ("notebook", "grep", "hi", "{nb}"),
    "read-through-pair": ("notebook", "output", "{py}", "--cell", "0", "--output", "0"),
    "convert-ipynb-to-py": ("convert", "ipynb-to-py", "{nb}"),
    "convert-assign-ids": ("convert", "assign-ids", "{nb}"),
    "convert-py-to-ipynb": ("convert", "py-to-ipynb", "{py}"),
}


def _digests(folder) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-32-be", "utf-16", "deep-utf-16-le"])
@pytest.mark.parametrize("path", list(PATHS))
def test_every_path_refuses_a_notebook_that_is_not_utf8_naming_its_encoding_and_changes_nothing(tmp_path, codec, path):
    raw = _deep("utf-16-le") if codec == "deep-utf-16-le" else json.dumps(NOTEBOOK, indent=1, ensure_ascii=False).encode(codec)
    name = ENCODINGS[codec.removeprefix("deep-")]
    (tmp_path / "nb.ipynb").write_bytes(raw)
    (tmp_path / "nb.py").write_text("# %%\nprint('hi ∀')\n", encoding="utf-8")
    before = _digests(tmp_path)
    args = [arg.replace("{nb}", "nb.ipynb").replace("{py}", "nb.py") for arg in PATHS[path]]
    done = run_cli("-j", *args, cwd=tmp_path)
    if path == "grep":  # a search goes on past a file it cannot read, and lists it among its problems
        assert done.returncode == 1, done.stderr  # grep's exit status: no hit
        problems = json.loads(done.stdout)["problems"]
        assert [(p["code"], name in p["message"]) for p in problems] == [("NOTEBOOK_READ_FAILED", True)], problems
    else:
        assert done.returncode != 0
        error = json.loads(done.stderr or done.stdout)
        assert error["code"] == "NOTEBOOK_READ_FAILED" and f"{name} text, not UTF-8" in error["message"], error
        assert error["encoding"] == name
    assert _digests(tmp_path) == before, "a notebook that is not UTF-8 is never rewritten, nor its pair"


@pytest.mark.parametrize("codec", list(ENCODINGS))
def test_the_bounded_reader_refuses_bytes_in_any_other_encoding_before_their_depth_is_scanned(codec):
    from jcli_sidecar.base.boundedjson import NotUtf8, loads

    with pytest.raises(NotUtf8) as caught:
        loads(_deep(codec))
    assert caught.value.encoding == ENCODINGS[codec]
    assert loads(b"\xef\xbb\xbf" + b'{"a": "\xe2\x88\x80"}') == {"a": "∀"}  # a UTF-8 byte order mark is UTF-8
