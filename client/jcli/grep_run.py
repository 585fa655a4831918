"""``j-cli notebook grep`` end to end without click: parse, ask the transport, print.

The fast path (:mod:`jcli.fastpath`) parses the plain spellings with
:func:`parse_grep` and the click command (:mod:`jcli.grep_cmd`) everything
else; both call :func:`run_grep`, so an agent searching in a loop pays for
neither click nor nbformat. The request goes through the transport: the
sidecar's cached indexes when one answers (op ``notebook.grep``), else
:func:`jcli_sidecar.read.nbgrep.handle_grep` in-process.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GREP_FLAGS", "GREP_VALUES", "clean_text", "next_command", "parse_grep", "run_grep"]

#: The flags the fast path takes (each sets a keyword of :func:`run_grep`); click offers the same.
GREP_FLAGS = {
    "-F": "fixed",
    "--fixed-strings": "fixed",
    "-i": "ignore_case",
    "--ignore-case": "ignore_case",
    "--sources-only": "sources_only",
    "--outputs-only": "outputs_only",
}
#: The options with a number, and their bounds.
GREP_VALUES = {"--max-hits": ("max_hits", 1, 1000), "--skip": ("skip", 0, None)}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean_text(text: str) -> str:
    """``text`` with terminal control characters shown as escapes (a notebook may hold anything).

    Example:
        >>> clean_text("a\\x1b[31mb")
        'a\\\\x1b[31mb'
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def parse_grep(rest: list[str]) -> dict[str, Any] | None:
    """The keywords of :func:`run_grep` from the words after ``notebook grep``, or None to leave them to click.

    Example:
        >>> parse_grep(["-i", "--max-hits", "5", "sales", "nb"])
        {'ignore_case': True, 'max_hits': 5, 'pattern': 'sales', 'paths': ['nb']}
        >>> parse_grep(["-Fi", "x"]) is None
        True
    """
    from .read_options import parse_value

    found: dict[str, Any] = {}
    words: list[str] = []
    k = 0
    while k < len(rest):
        token = rest[k]
        k += 1
        if token == "--":
            words.extend(rest[k:])
            break
        if not token.startswith("-") or token == "-":
            words.append(token)
            continue
        name, eq, value = token.partition("=")
        if name in GREP_FLAGS and not eq and GREP_FLAGS[name] not in found:
            found[GREP_FLAGS[name]] = True
            continue
        if name not in GREP_VALUES or GREP_VALUES[name][0] in found:
            return None  # --help, a combined -Fi, a repeat: click says what it means
        if not eq:
            if k >= len(rest):
                return None
            value = rest[k]
            k += 1
        field, low, high = GREP_VALUES[name]
        try:
            number = parse_value("int", value)
        except ValueError:
            return None
        if number < low or (high is not None and number > high):
            return None
        found[field] = number
    if not words:
        return None
    return {**found, "pattern": words[0], "paths": words[1:]}


def next_command(request: dict[str, Any], skip: int) -> str:
    """The command line that prints the page after this one."""
    import shlex

    words = ["j-cli", "notebook", "grep"]
    for field, flag in (("fixed", "-F"), ("ignore_case", "-i")):
        if request.get(field):
            words.append(flag)
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


def _say(text: str, stream) -> None:
    stream.buffer.write((text + "\n").encode("utf-8", "backslashreplace"))


def run_grep(
    json_mode: bool,
    pattern: str,
    paths: list[str] | tuple[str, ...] = (),
    *,
    fixed: bool = False,
    ignore_case: bool = False,
    sources_only: bool = False,
    outputs_only: bool = False,
    max_hits: int | None = None,
    skip: int | None = None,
) -> int:
    """Search, print the hits (and the next page's command), and return the exit status: 0 hits, 1 none."""
    import sys

    from jcli_sidecar.base import JcliError, os_error
    from jcli_sidecar.read import grep_request
    from jcli_sidecar.sidecar import NOTEBOOK_GREP

    from . import emit
    from .transport import read

    try:
        request = grep_request(
            pattern,
            list(paths),
            fixed=fixed,
            ignore_case=ignore_case,
            sources_only=sources_only,
            outputs_only=outputs_only,
            max_hits=max_hits,
            skip=skip,
        )
        doc = read(request, NOTEBOOK_GREP)
    except JcliError as err:
        return emit.error(err, json_mode)
    except OSError as exc:
        return emit.error(os_error(exc, "read"), json_mode)
    except Exception as exc:  # a bug: still one coded line, never a traceback
        return emit.unexpected(exc, json_mode)
    code = emit.EXIT_OK if doc["hits"] else emit.EXIT_FAILURE
    if doc.get("next") is not None:
        doc["next"]["command"] = next_command(request, doc["next"]["skip"])
    if json_mode:
        emit.document(doc, True)
        return code
    try:
        for hit in doc["hits"]:
            where = f"cell {hit['cell']}" + (f" output {hit['output']}" if "output" in hit else "")
            _say(f"{clean_text(hit['path'])} {where}: {clean_text(hit['text'])}", sys.stdout)
        for problem in doc.get("problems", ()):
            _say(f"j-cli: {clean_text(problem['message'])} [{problem['code']}]", sys.stderr)
        if doc.get("problems_omitted"):
            _say(f"j-cli: {doc['problems_omitted']} more files could not be searched", sys.stderr)
        if doc.get("next") is not None:
            _say(f"… more hits: {doc['next']['command']}", sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader went away
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code
