"""``j-cli notebook grep`` and ``j-cli notebook text``: searching notebooks as text.

Thin: the options and help of both; the work is :func:`jcli.grep_run.run_grep`
and :func:`jcli.text_cmd.run_text`, which the fast path calls too.
"""

from __future__ import annotations

import click

from .grep_run import run_grep
from .outcome import json_mode

__all__ = ["GREP_COMMANDS"]


@click.command("grep")
@click.argument("pattern")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("-F", "--fixed-strings", "fixed", is_flag=True, help="PATTERN is literal text, not a regular expression.")
@click.option("-i", "--ignore-case", is_flag=True, help="Match letters in either case.")
@click.option("--sources-only", is_flag=True, help="Search cell sources only.")
@click.option("--outputs-only", is_flag=True, help="Search saved outputs only.")
@click.option("--max-hits", type=click.IntRange(1, 1000), metavar="N", help="Hits per page (default 50).")
@click.option("--skip", type=click.IntRange(0), metavar="N", help="Leave out the first N hits (the next page).")
@click.pass_context
def grep(
    ctx: click.Context,
    pattern: str,
    paths: tuple[str, ...],
    fixed: bool,
    ignore_case: bool,
    sources_only: bool,
    outputs_only: bool,
    max_hits: int | None,
    skip: int | None,
) -> None:
    """Find PATTERN (a Python regex) in the cell sources and text outputs of notebooks.

    PATH is a notebook, a py:percent .py or a directory (default: the
    current one, walked without hidden directories or node_modules). Each
    hit is FILE cell N: LINE, or FILE cell N output K: LINE, the numbers
    notebook show and notebook output take. Images are never decoded.
    Exit status 0 when a line matched, 1 when none did.
    """
    ctx.exit(
        run_grep(
            json_mode(ctx),
            pattern,
            paths,
            fixed=fixed,
            ignore_case=ignore_case,
            sources_only=sources_only,
            outputs_only=outputs_only,
            max_hits=max_hits,
            skip=skip,
        )
    )


@click.command("text")
@click.argument("file_path", metavar="FILE")
@click.pass_context
def text(ctx: click.Context, file_path: str) -> None:
    """Print a notebook as plain text: cells, text outputs, a size line per image.

    Any other file is printed unchanged, so it works as ripgrep's
    preprocessor (as the program j-cli-notebook-text, the same command):
    rg --pre j-cli-notebook-text --pre-glob '*.ipynb' PATTERN.
    """
    from .text_cmd import run_text

    ctx.exit(run_text(file_path, json_mode(ctx)))


#: The commands this module adds to ``j-cli notebook``.
GREP_COMMANDS = (grep, text)
