"""The lean entry path: reads, ``exec``, ``notebook grep``, ``notebook text FILE``, the agent hooks, ``setup HOST`` and ``mcp serve`` without importing click.

It understands exactly the commands of the option tables in ``read_options``
and ``exec_cmd`` (plus the global ``-j``, ``-s`` and ``-t``) and nothing
else (``_hooks NAME`` goes to :mod:`jcli.hooks_entry`); anything it does not recognise (help, other commands, odd input) goes
to the click app, which is built from the same tables and reports usage
errors properly.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["JSON_FLAGS", "parse", "parse_exec", "parse_grep_command", "parse_mcp_serve", "parse_setup", "try_run"]

JSON_FLAGS = ("-j", "--json")
_GLOBAL_VALUES = {"-s": "server_url", "--server-url": "server_url", "-t": "token", "--token": "token"}


def _globals(argv: list[str]) -> tuple[dict[str, Any], list[str]] | None:
    found: dict[str, Any] = {"json": False, "server_url": None, "token": None}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name, eq, value = argv[i].partition("=")
        if name in JSON_FLAGS and not eq:
            found["json"] = True
            i += 1
            continue
        field = _GLOBAL_VALUES.get(name)
        if field is None:
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 1
        found[field] = value
        i += 1
    return found, argv[i:]


def _options(rest: list[str], options) -> tuple[list[str], dict[str, Any]] | None:
    from .read_options import parse_value

    by_flag = {flag: opt for opt in options for flag in opt.flags}
    values: dict[str, Any] = {}
    positional: list[str] = []
    k = 0
    while k < len(rest):
        token = rest[k]
        k += 1
        if token == "--":
            positional.extend(rest[k:])
            break
        if not token.startswith("-") or token == "-":
            positional.append(token)
            continue
        name, eq, value = token.partition("=")
        opt = by_flag.get(name)
        if opt is None or (opt.field in values and opt.kind not in ("pair", "multi")):
            return None
        if opt.kind == "pair":  # NAME VALUE, repeatable, each taken as it is
            if eq or k + 2 > len(rest):
                return None  # let click say what is wrong
            values.setdefault(opt.field, []).append((rest[k], rest[k + 1]))
            k += 2
            continue
        if opt.kind == "flag":
            if eq:
                return None  # let click say what is wrong
            values[opt.field] = True
            continue
        if not eq:
            if k >= len(rest):
                return None
            value = rest[k]
            k += 1
        if opt.kind == "multi":
            values.setdefault(opt.field, []).append(value)
            continue
        try:
            values[opt.field] = parse_value(opt.kind, value)
        except ValueError:
            return None  # click reports it as a usage error
    return positional, values


def parse(argv: list[str]) -> tuple[str, bool, str | None, dict[str, Any]] | None:
    """Parse ``[globals] notebook outputs|output ...``, or None to defer to click.

    Example:
        >>> parse(["-j", "notebook", "output", "a.ipynb", "--cell", "2", "--output=0"])
        ('output', True, 'a.ipynb', {'cell_index': 2, 'output_index': 0})
        >>> parse(["notebook", "output", "--help"]) is None
        True
    """
    split = _globals(argv)
    if split is None:
        return None
    found, rest = split
    if rest[:1] != ["notebook"] or len(rest) < 2:
        return None
    from .read_options import READ_COMMANDS  # here: a command other than notebook's never loads the read tables

    if rest[1] not in READ_COMMANDS:
        return None
    parsed = _options(rest[2:], READ_COMMANDS[rest[1]][1])
    if parsed is None or len(parsed[0]) > 1:
        return None
    positional, values = parsed
    return rest[1], found["json"], (positional[0] if positional else None), values


def parse_exec(argv: list[str]) -> dict[str, Any] | None:
    """Parse ``[globals] exec SESSION [options]`` into ``run_exec`` keywords, or None.

    Example:
        >>> parse_exec(["-j", "-s", "http://h:8888", "exec", "main", "-c", "1+1"])["code"]
        '1+1'
    """
    from .exec_cmd import EXEC_OPTIONS

    split = _globals(argv)
    if split is None:
        return None
    found, rest = split
    if rest[:1] != ["exec"]:
        return None
    parsed = _options(rest[1:], EXEC_OPTIONS)
    if parsed is None or len(parsed[0]) != 1:
        return None
    positional, values = parsed
    return {
        "json_mode": found["json"],
        "server_url": found["server_url"],
        "token": found["token"],
        "session_key": positional[0],
        **values,
    }


def parse_grep_command(argv: list[str]) -> dict[str, Any] | None:
    """Parse ``[-j] notebook grep ...`` into ``run_grep`` keywords (plus ``json_mode``), or None.

    Example:
        >>> parse_grep_command(["-j", "notebook", "grep", "-F", "a(b", "nb"])
        {'fixed': True, 'pattern': 'a(b', 'paths': ['nb'], 'json_mode': True}
    """
    split = _globals(argv)
    if split is None or split[1][:2] != ["notebook", "grep"]:
        return None
    from .grep_run import parse_grep

    found = parse_grep(split[1][2:])
    return None if found is None else {**found, "json_mode": split[0]["json"]}


def parse_setup(argv: list[str]) -> tuple[bool, str, str, bool] | None:
    """Parse ``[globals] setup HOST [--SCOPE] [--remove]`` into (json, host, scope, remove), or None.

    The host's first scope is the default, as in the click command; any other
    option (``--only``, ``--skill-dir``, upstream's spellings, ``--help``) goes to click.

    Example:
        >>> parse_setup(["-j", "setup", "codex", "--remove"])
        (True, 'codex', 'user', True)
        >>> parse_setup(["setup", "claude", "--only", "skill"]) is None
        True
    """
    split = _globals(argv)
    if split is None or split[1][:1] != ["setup"] or len(split[1]) < 2:
        return None
    from .setup.hosts import HOSTS

    host = HOSTS.get(split[1][1])
    if host is None:
        return None
    flags = {f"--{scope.name}": scope.name for scope in host.scopes}
    scope: str | None = None
    remove = False
    for token in split[1][2:]:
        if token == "--remove" and not remove:
            remove = True
        elif token in flags and scope is None:
            scope = flags[token]
        else:
            return None
    return split[0]["json"], host.name, scope or host.scopes[0].name, remove


def parse_mcp_serve(argv: list[str]) -> dict[str, Any] | None:
    """Parse ``[globals] mcp serve [--root DIR]... [--host NAME] [--text-only]`` into ``serve`` keywords (plus ``json_mode``), or None.

    A root that names a regular file goes to click, which says so.

    Example:
        >>> parse_mcp_serve(["mcp", "serve", "--root", "/nb", "--root=/x", "--host", "codex"])
        {'roots': ['/nb', '/x'], 'host': 'codex', 'text_only': False, 'json_mode': False}
    """
    split = _globals(argv)
    if split is None or split[1][:2] != ["mcp", "serve"]:
        return None
    found: dict[str, Any] = {"roots": [], "host": None, "text_only": False}
    rest = split[1][2:]
    k = 0
    while k < len(rest):
        name, eq, value = rest[k].partition("=")
        k += 1
        if name == "--text-only" and not eq and not found["text_only"]:
            found["text_only"] = True
            continue
        if name not in ("--root", "--host") or (name == "--host" and found["host"] is not None):
            return None
        if not eq:
            if k >= len(rest):
                return None
            value = rest[k]
            k += 1
        if name == "--host":
            found["host"] = value
        else:
            found["roots"].append(value)
    import os

    if any(os.path.isfile(root) for root in found["roots"]):
        return None
    return {**found, "json_mode": split[0]["json"]}


def try_run(argv: list[str]) -> int | None:
    """Run a read, exec or hook command if ``argv`` is one; None means "use click"."""
    hooks = argv[1:2] == ["_hooks"] and argv[0] in JSON_FLAGS  # a hook's answer is JSON in either mode
    if argv[:1] == ["_hooks"] or hooks:
        from .hooks_entry import run_hook

        return run_hook(argv[2:] if hooks else argv[1:])
    if len(argv) == 3 and argv[:2] == ["notebook", "text"] and not argv[2].startswith("-"):
        from .text_cmd import run_text  # ripgrep's preprocessor: run for every file it searches

        return run_text(argv[2])
    grep = parse_grep_command(argv)
    if grep is not None:
        from .grep_run import run_grep

        return run_grep(grep.pop("json_mode"), grep.pop("pattern"), grep.pop("paths"), **grep)
    parsed = parse(argv)
    if parsed is not None:
        from .read_command import run_read

        return run_read(*parsed)
    if "exec" in argv:
        request = parse_exec(argv)
        if request is not None:
            from .exec_cmd import run_exec

            return run_exec(**request)
    if "setup" in argv:
        setup = parse_setup(argv)
        if setup is not None:
            from .setup.report import run_host_setup

            json_mode, name, scope, remove = setup
            return run_host_setup(name, scope, remove, json_mode)
    if "serve" in argv:
        serving = parse_mcp_serve(argv)
        if serving is not None:
            from .mcp_server import run_mcp_serve

            return run_mcp_serve(**serving)
    return None
