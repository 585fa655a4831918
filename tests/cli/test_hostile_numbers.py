"""Strict numbers: ``--cell 1_0``, ``--cell ١`` and friends are USAGE_ERROR on the fast path and in click alike.

Python's ``int()`` takes underscores, surrounding spaces and any Unicode
digit; a typo must not silently become a cell index. The fast path defers
anything it cannot parse to click, which reports it, so both give the same
usage error.
"""

from __future__ import annotations

import json
import os

import pytest
from helpers import FIXTURES, run_cli


def coded(result, code: str, exit_code: int) -> dict:
    assert b"Traceback" not in result.stderr
    error = json.loads(result.stderr)
    assert (result.returncode, error["code"]) == (exit_code, code), error
    return error


READ = ["-j", "notebook", "output", str(FIXTURES / "kernel_v4.5.ipynb"), "--cell", "1", "--output", "0"]


@pytest.mark.parametrize("value", ["1_0", "\u0661", "\u00b2", "\uff11", " 1", "1 ", "0x1", "1.0", "", "+-1"])
@pytest.mark.parametrize("flag", ["--cell", "--output", "--offset", "--limit", "--max-edge"])
def test_the_fast_path_refuses_what_is_not_a_plain_integer(flag, value):
    from jcli.fastpath import parse

    args = list(READ)
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    assert parse(args) is None  # deferred to click, which reports it
    error = coded(run_cli(*args), "USAGE_ERROR", 2)  # 50 cases of parsing
    assert flag in error["message"]


def test_plain_integers_still_take_the_fast_path():
    from jcli.fastpath import parse

    assert parse(["-j", "notebook", "output", "a.ipynb", "--cell", "+2", "--output=0", "--offset", "-0"]) == (
        "output",
        True,
        "a.ipynb",
        {"cell_index": 2, "output_index": 0, "offset": 0},
    )


def test_output_show_and_exec_numbers_are_strict_too(tmp_path):
    coded(run_cli("-j", "output", "show", "some-run", "--output", "1_0", cwd=tmp_path), "USAGE_ERROR", 2)
    env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": "http://127.0.0.1:9", "JCLI_JUPYTER_SERVER_TOKEN": "x"}
    error = coded(run_cli("-j", "exec", "main", "-c", "1", "--timeout", "1_0", env=env), "USAGE_ERROR", 2)
    assert "--timeout" in error["message"]
