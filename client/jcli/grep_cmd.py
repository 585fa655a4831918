"""``j-cli notebook grep`` and ``j-cli notebook text``: searching notebooks as text.

Thin: grep builds a request for :func:`jcli_sidecar.read.nbgrep.handle_grep`
and sends it through the transport (the sidecar's cached indexes when one
answers, in-process otherwise), then prints one line per hit and, when
there are more, the exact command for the next page. ``text`` is
:func:`jcli.text_cmd.run_text`, which the fast path calls too.
"""

from __future__ import annotations

import shlex

import click

from jcli_sidecar.base import JcliError

from . import emit
from .notebook_cmd import _clean
from .outcome import attempt, fail, json_mode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GREP_COMMANDS"]


def _hit_line(hit: dict[str, Any]) -> str:
    where = f"cell {hit['cell']}" + (f" output {hit['output']}" if "output" in hit else "")
    return f"{_clean(hit['path'])} {where}: {_clean(hit['text'])}"


def _next_command(request: dict[str, Any], skip: int) -> str:
    """The command line that prints the page after this one."""
    words = ["j-cli", "notebook", "grep"]
    if request.get("fixed"):
        words.append("-F")
    if request.get("ignore_case"):
        words.append("-i")
    if request.get("sources") is False:
        words.append("--outputs-only")
    if request.get("outputs") is False:
        words.append("--sources-only")
    if request.get("max_hits") is not None:
        words += ["--max-hits", str(request["max_hits"])]
    words += ["--skip", str(skip)]
    rest = [request["pattern"], *(request.get("paths") or ())]
    if any(word.startswith("-") for word in rest):
        words.append("--")  # a pattern or a path that looks like an option
    return shlex.join(words + rest)


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
    from .transport import read

    if sources_only and outputs_only:
        fail(ctx, _usage("--sources-only and --outputs-only exclude each other"))
    request: dict[str, Any] = {"pattern": pattern, "paths": list(paths) or None, "fixed": fixed, "ignore_case": ignore_case}
    if sources_only:
        request["outputs"] = False
    if outputs_only:
        request["sources"] = False
    if max_hits is not None:
        request["max_hits"] = max_hits
    if skip:
        request["skip"] = skip
    doc = attempt(ctx, lambda: read({k: v for k, v in request.items() if v is not None}, "notebook.grep"), "read")
    code = emit.EXIT_OK if doc["hits"] else emit.EXIT_FAILURE
    if doc.get("next") is not None:
        doc["next"]["command"] = _next_command(request, doc["next"]["skip"])
    if json_mode(ctx):
        emit.document(doc, True)
        ctx.exit(code)
    for hit in doc["hits"]:
        emit.say(_hit_line(hit))
    for problem in doc.get("problems", ()):
        click.echo(f"j-cli: {_clean(problem['message'])} [{problem['code']}]", err=True)
    if doc.get("problems_omitted"):
        click.echo(f"j-cli: {doc['problems_omitted']} more files could not be searched", err=True)
    if doc.get("next") is not None:
        emit.say(f"… more hits: {doc['next']['command']}")
    ctx.exit(code)


def _usage(message: str) -> JcliError:
    from jcli_sidecar.base import UsageError

    return UsageError(message)


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
