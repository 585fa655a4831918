"""docs/reference/ is what the code writes: every command's help, every error code, every setting.

``make docs`` (``python -m jcli.reference_docs docs/reference``) writes the
pages; these tests write them again into a temporary directory and fail
when a committed page differs, naming the command that fixes it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers import REPO

from jcli import reference_docs
from jcli_sidecar.base import errors
from jcli_sidecar.base.settings import SETTINGS

COMMITTED = REPO / "docs" / "reference"


@pytest.mark.parametrize("page", sorted(reference_docs.PAGES))
def test_the_committed_page_is_what_the_code_writes(page, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "jcli.reference_docs", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / page).read_text(encoding="utf-8")
    committed = (COMMITTED / page).read_text(encoding="utf-8") if (COMMITTED / page).exists() else ""
    assert committed == written, f"docs/reference/{page} is stale: run `{reference_docs.REGENERATE}` and commit the result"


def test_the_pages_are_the_same_every_time():
    assert {name: render() for name, render in reference_docs.PAGES.items()} == {
        name: render() for name, render in reference_docs.PAGES.items()
    }


def test_check_mode_names_a_stale_page_and_the_command(tmp_path):
    assert reference_docs.main([str(tmp_path)]) == 0
    (tmp_path / "errors.md").write_text("old\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "jcli.reference_docs", "--check", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and "errors.md is stale: run `make docs`" in proc.stderr
    assert "commands.md" not in proc.stderr and "settings.md" not in proc.stderr


def test_the_error_page_lists_every_code_with_its_exit_status_and_meaning_and_no_other():
    text = reference_docs.render_errors()
    rows = re.findall(r"^\| `([A-Z_]+)` \| ([^|]+) \| (.+?) \| (.*?) \|$", text, re.M)
    assert [code for code, *_ in rows] == sorted(errors.ERROR_CODES)
    status = {code: exit_status.strip() for code, exit_status, *_ in rows}
    assert status["USAGE_ERROR"] == status["INVALID_WINDOW"] == status["KERNELSPEC_NOT_FOUND"] == "2"
    assert status["INTERRUPTED"] == "130 (SIGINT), 143 (SIGTERM)" and status["RUN_NOT_FOUND"] == "1"
    assert all(meaning.strip() for _, _, meaning, _ in rows)
    aliases = {code: alias for code, _, _, alias in rows}
    assert aliases["SERVER_UNAVAILABLE"] == "`CONNECTION_FAILED`" and aliases["MIME_NOT_FOUND"] == "`MIME_NOT_SUPPORTED`"
    for upstream in errors.UPSTREAM_CODES:
        assert f"| `{upstream}` |" in text
    plugin_rows = re.findall(r"^\| `([A-Z_]+)` \| [^|]+ \|$", text.split("## Codes only the host plugins raise")[1], re.M)
    assert set(plugin_rows) == errors.HOST_PLUGIN_CODES


def test_an_error_class_without_a_docstring_stops_the_generator():
    class Undocumented(errors.JcliError):
        code = "UNDOCUMENTED_FOR_THIS_TEST"

    with pytest.raises(ValueError, match="Undocumented has no docstring"):
        reference_docs.meaning(Undocumented)
    assert reference_docs.meaning(errors.CellNotFound).startswith("The cell index, or a `--cell` range")


def test_the_settings_page_lists_every_user_setting_with_its_default():
    rows = re.findall(r"^\| `(JCLI_[A-Z_]+)` \| `([^`]+)` \|", reference_docs.render_settings(), re.M)
    expected = sorted((name, reference_docs.shown_default(row)) for name, row in SETTINGS.items() if not row.internal)
    assert rows == expected
    assert ("JCLI_EXEC_TIMEOUT", "600") in rows and ("JCLI_SIDECAR", "on") in rows


def test_the_commands_page_holds_every_visible_commands_help():
    import click

    from jcli.cli import app

    text = reference_docs.render_commands()
    titles = re.findall(r"^## (j-cli.*)$", text, re.M)
    assert titles[0] == "j-cli" and "j-cli notebook output" in titles and "j-cli setup claude" in titles
    assert not any("_hooks" in title for title in titles)  # hidden
    assert len(titles) == len(set(titles))
    for name in app.list_commands(click.Context(app)):
        if not app.get_command(click.Context(app), name).hidden:
            assert f"j-cli {name}" in titles
    assert "Usage: j-cli exec [OPTIONS] SESSION" in text and "-h, --help" in text


def test_each_help_on_the_commands_page_is_what_that_command_prints():
    """The installed ``j-cli ... --help`` (the read fast path included), run off a terminal, prints each section's block.

    The top level and ``output show`` (a read) run as the installed script; every other
    section's help runs through :func:`helpers.run_cli` (forked warm: the same ``main``).
    """
    from helpers import JCLI, run_cli

    sections = re.findall(
        r"^## (j-cli[^\n]*)\n\n```text\n(.*?)\n```$", (COMMITTED / "commands.md").read_text(encoding="utf-8"), re.M | re.S
    )
    assert len(sections) > 40
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}

    real_process = {"j-cli", "j-cli output show"}
    assert real_process <= {title for title, _ in sections}

    def printed(title: str) -> str:
        if title in real_process:
            proc = subprocess.run([JCLI, *title.split()[1:], "--help"], capture_output=True, text=True, env=env, timeout=60)
            assert proc.returncode == 0, (title, proc.stderr)
            return proc.stdout.rstrip()
        warm = run_cli(*title.split()[1:], "--help", env=env)
        assert warm.returncode == 0, (title, warm.stderr)
        return warm.stdout.decode().rstrip()

    real = [printed(title) for title, _ in sections]
    differ = [title for (title, shown), text in zip(sections, real, strict=True) if shown != text]
    assert not differ, f"{differ}: run `{reference_docs.REGENERATE}`"
