"""Every JCLI_* variable is declared once (base/settings.py), read by one rule, and listed in docs/reference/settings.md."""

from __future__ import annotations

import os
import re

import pytest
from helpers import REPO, run_cli

from jcli_sidecar.base.errors import UsageError
from jcli_sidecar.base.settings import SETTINGS, setting

#: Names that look like settings and are not: a layout constant and a plugin error code.
NOT_SETTINGS = {"JCLI_DIR", "JCLI_UNAVAILABLE"}
PLUGINS = REPO / "client" / "plugins"
SOURCES = [*(REPO / "jcli_sidecar").rglob("*.py"), *(REPO / "client" / "jcli").rglob("*.py")]
SOURCES += [PLUGINS / "opencode" / "jcli.js", PLUGINS / "dsh" / "jcli.ts", PLUGINS / "sidecar-client.mjs"]


def reference_rows() -> list[tuple[str, str, str]]:
    text = (REPO / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(JCLI_[A-Z_]+)` \| `(.+?)` \| .+? \| .+? \| (.+?) \|$", text, re.M)
    return [(name, default, doc) for name, default, doc in rows]


def test_every_variable_the_code_names_is_declared():
    named = {m for path in SOURCES for m in re.findall(r"\bJCLI_[A-Z][A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8"))}
    assert len(named) > 15  # the scan sees them
    assert named - NOT_SETTINGS - {"JCLI_OUTPUT_MAX"} <= set(SETTINGS), sorted(named - NOT_SETTINGS - set(SETTINGS))


def test_the_settings_reference_lists_every_setting_as_declared():
    from jcli.reference_docs import shown_default

    expected = sorted((row.name, shown_default(row), row.doc) for row in SETTINGS.values() if not row.internal)
    assert reference_rows() == expected, "run `make docs`"


NUMBER_ROWS = [name for name, row in SETTINGS.items() if row.kind in ("number", "integer")]


@pytest.mark.parametrize("name", NUMBER_ROWS)
@pytest.mark.parametrize("raw", ["inf", "nan", "-inf", "-1", "1_0", "x", "\uff11", "0x10", "1e999", "  "])
def test_a_bad_number_is_the_default_or_a_usage_error_never_a_crash(name, raw):
    row = SETTINGS[name]
    env = {name: raw}
    if raw.strip() == "":
        assert setting(name, env) == row.default  # blank is unset
    elif row.on_bad == "error":
        with pytest.raises(UsageError) as info:
            setting(name, env)
        assert info.value.details["variable"] == name and name in info.value.message
    else:
        assert setting(name, env) == row.default


@pytest.mark.parametrize(
    "name, raw, value",
    [
        ("JCLI_EXEC_TIMEOUT", " 2.5 ", 2.5),
        ("JCLI_EXEC_TIMEOUT", "none", None),
        ("JCLI_EXEC_TIMEOUT", "0", None),
        ("JCLI_OUTPUT_MAX_RUNS", " 4 ", 4),
        ("JCLI_SIDECAR_CACHE_MB", "0", 0.0),
        ("JCLI_SIDECAR_RACY_MS", "2500", 2500.0),
        ("JCLI_MAX_FILE_MB", "1e-3", 0.001),
        ("JCLI_SIDECAR", " OFF ", False),
        ("JCLI_SIDECAR", "auto", True),
        ("JCLI_DEBUG", "1", True),
    ],
)
def test_good_values(name, raw, value):
    assert setting(name, {name: raw}) == value


@pytest.mark.parametrize(
    ("name", "raw"), [("JCLI_MAX_FILE_MB", "0"), ("JCLI_SIDECAR_IDLE_SECONDS", "0"), ("JCLI_OUTPUT_MAX_AGE_DAYS", "0")]
)
def test_zero_is_refused_where_it_would_mean_nothing_or_everything(name, raw):
    row = SETTINGS[name]
    if row.on_bad == "error":
        with pytest.raises(UsageError):
            setting(name, {name: raw})
    else:
        assert setting(name, {name: raw}) == row.default


def test_a_bad_fallback_value_is_one_warning_and_the_command_still_answers(fixture_dir):
    env = {**os.environ, "JCLI_MAX_FILE_MB": "inf"}
    result = run_cli("-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0", cwd=fixture_dir, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode().count("ignoring JCLI_MAX_FILE_MB='inf'") == 1


@pytest.mark.parametrize("raw", ["inf", "nan", "-5", "1e999"])
def test_a_sidecar_with_a_bad_cache_budget_starts_answers_and_says_why(fixture_dir, sidecar_on, monkeypatch, raw):
    """JCLI_SIDECAR_CACHE_MB=inf crashed the sidecar with OverflowError, nan with ValueError."""
    from jcli_sidecar.base.runtime import SidecarPaths

    monkeypatch.setenv("JCLI_SIDECAR_CACHE_MB", raw)
    started = run_cli("-j", "sidecar", "start", cwd=fixture_dir)
    assert started.returncode == 0, started.stderr
    assert started.json()["cache"]["budget_bytes"] == 256 * 1024 * 1024
    read = run_cli("-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0", cwd=fixture_dir)
    assert read.returncode == 0, read.stderr
    assert run_cli("-j", "sidecar", "status", cwd=fixture_dir).json()["requests_served"] >= 2
    with open(SidecarPaths(os.path.realpath(fixture_dir)).log, encoding="utf-8") as fh:
        assert f"ignoring JCLI_SIDECAR_CACHE_MB={raw!r}" in fh.read()
    assert run_cli("-j", "sidecar", "stop", cwd=fixture_dir).returncode == 0
