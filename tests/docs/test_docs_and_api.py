"""Docstring examples run, every error code is defined once, and exports are tidy."""

from __future__ import annotations

import doctest
import importlib
import json
import pickle
import pkgutil
import re

import pytest
from helpers import REPO

import jcli
import jcli_sidecar
from jcli_sidecar.base import errors, os_error
from jcli_sidecar.base.os_errors import PLACES

CORE = REPO / "jcli_sidecar"
CLIENT = REPO / "client" / "jcli"

#: Every module and subpackage of both packages, at any depth.
MODULES = sorted(
    info.name
    for pkg in (jcli_sidecar, jcli)
    for info in pkgutil.walk_packages(pkg.__path__, f"{pkg.__name__}.")
    if not info.name.endswith(".__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, monkeypatch):
    monkeypatch.chdir(REPO)  # examples refer to examples/demo.ipynb
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_complete(name):
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert list(exported) == sorted(exported)
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr}"


def test_every_code_is_upper_snake_and_unique():
    classes = [getattr(errors, n) for n in errors.__all__ if isinstance(getattr(errors, n), type)]
    codes = [c.code for c in classes if c is not errors.JcliError]
    assert len(codes) == len(set(codes))
    assert all(code.isupper() and " " not in code for code in codes)
    assert errors.ERROR_CODES == set(codes)


def test_the_host_plugins_throw_only_known_codes_and_use_their_own():
    from jcli.plugins import plugin_path

    thrown = set()
    for host in ("opencode", "dsh"):
        with open(plugin_path(host), encoding="utf-8") as fh:
            source = fh.read()
        thrown |= set(re.findall(r"""JcliToolError\(\s*'([A-Z][A-Z_]+)'""", source))
        thrown |= set(re.findall(r"""Error\(\s*[`"']([A-Z][A-Z_]+): """, source))
    assert thrown <= errors.ERROR_CODES | errors.HOST_PLUGIN_CODES, thrown - errors.ERROR_CODES
    assert errors.HOST_PLUGIN_CODES <= thrown
    assert not errors.HOST_PLUGIN_CODES & errors.ERROR_CODES


@pytest.mark.parametrize("code", sorted(errors.ERROR_CODES))
def test_errors_survive_pickling_and_the_wire(code):
    err = errors.error_from_code(code, "a message", extra=1)
    assert err.code == code and err.details == {"extra": 1}
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), again.code, again.message, again.details) == (type(err), code, "a message", {"extra": 1})
    aliases = {"code_aliases": list(err.code_aliases)} if err.code_aliases else {}
    assert err.to_dict() == {"code": code, "message": "a message", **aliases, "extra": 1}


def test_unknown_codes_from_a_newer_peer_are_kept():
    err = errors.error_from_code("SOMETHING_NEW", "from the future")
    assert isinstance(err, errors.JcliError) and err.code == "SOMETHING_NEW"


def test_errors_are_also_the_matching_builtins():
    assert issubclass(errors.FileNotFound, FileNotFoundError)
    assert issubclass(errors.Timeout, TimeoutError)
    assert issubclass(errors.OutputDataInvalid, ValueError)
    assert str(errors.MimeNotFound("no such mime")) == "no such mime"


def test_the_cli_read_options_and_the_mcp_tools_come_from_the_request_spec():
    from jcli.mcp_tools import tool_definitions
    from jcli.read_options import READ_COMMANDS
    from jcli_sidecar.read.request_spec import READ_SPEC, RUN_SPEC, tool_schema

    kinds = {"int": "integer", "str": "string", "flag": "boolean"}
    spec = {f.name: f for f in READ_SPEC}
    options = {opt.field: opt for _help, opts in READ_COMMANDS.values() for opt in opts if opt.field != "request"}
    for field, option in options.items():
        if field in spec:
            assert kinds[option.kind] == spec[field].type, field
    assert {f.name for f in READ_SPEC} - {"file_path"} <= set(options)  # every field has a flag (FILE is positional)
    (_, _, read_schema), (_, _, run_schema), *others = tool_definitions()
    assert read_schema["properties"].keys() == tool_schema(READ_SPEC)["properties"].keys()
    assert run_schema == tool_schema(RUN_SPEC)
    for schema in (read_schema, run_schema, *(other for _, _, other in others)):
        assert all(isinstance(p["type"], str) for p in schema["properties"].values())  # one type each: portable


def test_output_show_has_one_flag_per_run_request_field_of_the_same_type():
    from jcli.output_cmd import output_show
    from jcli_sidecar.read.request_spec import RUN_SPEC

    kinds = {"integer": "integer", "text": "string", "boolean": "boolean"}
    flags = {p.name: kinds[p.type.name] for p in output_show.params if p.name != "ref"}
    assert flags == {f.name: f.type for f in RUN_SPEC if f.name != "run"}  # RUN is the positional argument


def test_the_error_reference_lists_every_error_code_and_no_other():
    text = (REPO / "docs" / "reference" / "errors.md").read_text(encoding="utf-8")
    section = text[: text.index("## Upstream codes")] + text[text.index("## Codes only the host plugins raise") :]
    listed = re.findall(r"^\| `([A-Z_]+)` \|", section, re.M)
    assert len(listed) == len(set(listed))
    assert set(listed) == errors.ERROR_CODES | errors.HOST_PLUGIN_CODES, "run `make docs`"


@pytest.mark.parametrize("place", sorted(PLACES))
def test_an_os_error_becomes_one_coded_error_per_place_and_keeps_its_reason(place):
    import errno

    err = os_error(OSError(errno.EIO, "Input/output error", "/x/config.toml"), place)
    assert type(err) is PLACES[place][0] and err.code in errors.ERROR_CODES
    assert "Input/output error" in err.message
    assert "{" not in err.message  # every field of the sentence was filled


@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [
        (FileNotFoundError(2, "No such file or directory"), "FILE_NOT_FOUND", "nb.ipynb: no such file"),
        (NotADirectoryError(20, "Not a directory"), "FILE_NOT_FOUND", "nb.ipynb: no such file"),
        (IsADirectoryError(21, "Is a directory"), "NOTEBOOK_READ_FAILED", "nb.ipynb: is a directory, not a notebook"),
        (PermissionError(13, "Permission denied"), "NOTEBOOK_READ_FAILED", "nb.ipynb: permission denied"),
    ],
)
def test_a_few_errnos_mean_the_same_wherever_a_file_is_read(exc, code, message):
    err = os_error(exc, "read", "nb.ipynb", path="nb.ipynb")
    assert (err.code, err.message, err.details) == (code, message, {"path": "nb.ipynb"})
    written = os_error(exc, "write", "nb.ipynb")  # writing, the place's own code stands
    assert written.code == "OUTPUT_SAVE_FAILED" and exc.strerror in written.message


def test_the_reason_is_the_system_text_never_what_the_exception_carries():
    secret = OSError("token=abc123 in /home/someone/.jupyter")  # no errno: its text is not a system reason
    err = os_error(secret, "write", "nb.ipynb")
    assert err.message == "cannot write nb.ipynb: OSError" and "abc123" not in err.message


def test_no_module_formats_an_os_error_itself():
    """Every ``strerror`` is read through the one table (os_errors), so no error text is written twice."""
    offenders = []
    for path in [*CORE.rglob("*.py"), *CLIENT.rglob("*.py")]:
        if path.name == "os_errors.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "strerror" in line and "OSError(" not in line:  # building a new OSError names its strerror
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, offenders


def test_every_host_row_has_its_setup_module_command_and_profile():
    import importlib

    from jcli.cli import setup
    from jcli.setup.hosts import HOSTS
    from jcli_sidecar.guards.hook_payload import PLATFORMS
    from jcli_sidecar.read.host_profiles import HOST_NAMES
    from jcli_sidecar.read.imageview import HOST_PROFILES

    assert list(HOSTS) == list(HOST_PROFILES) and all(name in HOST_NAMES for name in HOSTS)
    assert PLATFORMS == tuple(sorted(HOST_PROFILES))  # the hooks' --platform names are the host table's
    for name, host in HOSTS.items():
        assert callable(getattr(importlib.import_module(f"jcli.setup.{name}"), f"setup_{name}"))
        assert callable(getattr(importlib.import_module(f"jcli.setup.{name}"), f"status_{name}"))
        command = setup.commands[name]
        flags = {opt for param in command.params if not getattr(param, "hidden", False) for opt in param.opts}
        parts = {"--only"} if len(host.part_groups) > 1 else set()  # a choice of parts to offer
        skill = {"--skill-dir"} if "skill" in host.parts else set()
        assert flags == {f"--{scope.name}" for scope in host.scopes} | {"--remove"} | parts | skill


def test_what_the_model_receives_names_each_hosts_pinned_version_and_its_turn_suite():
    text = (REPO / "docs" / "hosts.md").read_text(encoding="utf-8")
    section = text[text.index("## What the model receives") :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    rows = re.findall(r"^\| (Claude Code|Codex|OpenCode|DSH) ([0-9][^ |]*)[^|]*\| [^|]+ \| .+ \| (`tests/[^|]+`) \|$", section, re.M)
    hosts = json.loads((REPO / "tests" / "hosts" / "package.json").read_text())["dependencies"]
    dsh = json.loads((REPO / "tests" / "hosts" / "dsh" / "package.json").read_text())["devDependencies"]
    pinned = {
        "Claude Code": hosts["@anthropic-ai/claude-code"],
        "Codex": hosts["@openai/codex"],
        "OpenCode": hosts["opencode-ai"],
        "DSH": dsh["@deepseek-ai/dsh-agent-loop"],
    }
    assert {host for host, _, _ in rows} == set(pinned)  # every host has its turn, and only those
    for host, version, suites in rows:
        assert version == pinned[host], (host, version)
        for suite in re.findall(r"`([^`]+)`", suites):
            assert (REPO / suite).is_file(), suite
    turn_suites = {f"tests/hosts/{p.name}" for p in (REPO / "tests" / "hosts").glob("test_host_*_turn.py")}
    assert turn_suites == {s for _, _, suites in rows for s in re.findall(r"`([^`]+)`", suites)}
