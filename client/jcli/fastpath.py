"""The lean entry path for the read commands: no click, nothing heavy.

It understands exactly the read commands of ``read_options`` and nothing
else; anything it does not recognise (help, other commands, odd input)
goes to the click app, which is built from the same table and reports
usage errors properly.
"""

from __future__ import annotations


from .read_options import READ_COMMANDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse", "try_run"]

JSON_FLAGS = ("-j", "--json")


def parse(argv: list[str]) -> tuple[str, bool, str | None, dict[str, Any]] | None:
    """Parse ``[-j] notebook outputs|output ...``, or None to defer to click.

    Example:
        >>> parse(["-j", "notebook", "output", "a.ipynb", "--cell", "2", "--output=0"])
        ('output', True, 'a.ipynb', {'cell_index': 2, 'output_index': 0})
        >>> parse(["notebook", "output", "--help"]) is None
        True
    """
    i = 0
    json_mode = False
    while i < len(argv) and argv[i] in JSON_FLAGS:
        json_mode = True
        i += 1
    if argv[i : i + 1] != ["notebook"] or i + 1 >= len(argv) or argv[i + 1] not in READ_COMMANDS:
        return None
    command = argv[i + 1]
    by_flag = {flag: opt for opt in READ_COMMANDS[command][1] for flag in opt.flags}
    values: dict[str, Any] = {}
    positional: list[str] = []
    rest = argv[i + 2 :]
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
        if opt is None or opt.field in values:
            return None
        if not eq:
            if k >= len(rest):
                return None
            value = rest[k]
            k += 1
        if opt.kind == "int":
            try:
                value = int(value)
            except ValueError:
                return None
        values[opt.field] = value
    if len(positional) > 1:
        return None
    return command, json_mode, (positional[0] if positional else None), values


def try_run(argv: list[str]) -> int | None:
    """Run a read command if ``argv`` is one; None means "use click"."""
    parsed = parse(argv)
    if parsed is None:
        return None
    from .read_command import run_read

    return run_read(*parsed)
