"""The shared protocol fixtures: every request gives exactly the recorded answer.

``fixtures/protocol/cases.json`` holds each request and its exact envelope
(or error code). The core, the CLI's flags and the CLI's ``--request -``
must all agree with it; the MCP and JS adapters reuse the same file.
"""

from __future__ import annotations

import json
import re

import pytest
from helpers import load_cases, relative_source, run_cli

from jcli_sidecar.base.errors import JcliError, UsageError, error_from_code
from jcli_sidecar.read.requests import handle_read

CASES = load_cases()
BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}")
IDS = [case["name"] for case in CASES]

FLAG_FOR = {
    "cell_index": "--cell",
    "output_index": "--output",
    "mime_type": "--mime",
    "offset": "--offset",
    "limit": "--limit",
    "max_response_bytes": "--max-response-bytes",
}


def test_every_error_code_of_the_reader_is_covered():
    codes = {c["expect"]["error"]["code"] for c in CASES if "error" in c["expect"]}
    assert codes >= {
        "FILE_NOT_FOUND",
        "NOTEBOOK_READ_FAILED",
        "CELL_NOT_FOUND",
        "CELL_MAPPING_UNRELIABLE",
        "OUTPUT_NOT_FOUND",
        "MIME_NOT_FOUND",
        "INVALID_WINDOW",
        "OUTPUT_TOO_LARGE",
        "OUTPUT_DATA_INVALID",
    }


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_core_answers_match_the_fixture(case, fixture_dir, monkeypatch):
    monkeypatch.chdir(fixture_dir)
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(JcliError) as info:
            handle_read(case["request"])
        assert info.value.code == expect["error"]["code"]
        assert not BASE64_RUN.search(info.value.message), "payload data leaked into an error"
    else:
        assert relative_source(handle_read(case["request"]), fixture_dir) == expect["envelope"]


def _flags(request: dict) -> list[str]:
    args = [request["file_path"]]
    for field, flag in FLAG_FOR.items():
        if request.get(field) is not None:
            args += [flag, str(request[field])]
    return args


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cli_flags_and_stdin_request_match_the_fixture(case, fixture_dir):
    request = case["request"]
    command = "output" if "output_index" in request else "outputs"
    by_flags = run_cli("-j", "notebook", command, *_flags(request), cwd=fixture_dir)
    by_stdin = run_cli("-j", "notebook", "output", "--request", "-", cwd=fixture_dir, stdin=json.dumps(request).encode())
    for result in (by_flags, by_stdin):
        expect = case["expect"]
        if "error" in expect:
            usage = isinstance(error_from_code(expect["error"]["code"], ""), UsageError)
            assert result.returncode == (2 if usage else 1), result.stderr
            assert result.stdout == b""
            err = result.error()
            assert err["schema_version"] == 1 and err["status"] == "error"
            assert err["code"] == expect["error"]["code"]
            assert b"Traceback" not in result.stderr
            assert not BASE64_RUN.search(err["message"])
        else:
            assert result.returncode == 0, result.stderr
            assert result.stderr == b""
            assert result.stdout.count(b"\n") == 1  # one compact document
            assert relative_source(result.json(), fixture_dir) == expect["envelope"]
