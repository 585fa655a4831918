"""click options built from the shared option tables (``read_options``, ``exec_cmd``).

The tables stay free of click, so the fast path can use them too.
"""

from __future__ import annotations

import click

__all__ = ["table_options"]

_TYPES = {"int": int, "float": float, "str": str}


def table_options(options) -> list[click.Parameter]:
    """One click option per table entry: its flags, the request field it fills, its type and help.

    A ``"flag"`` entry takes no value and is true when given.
    """
    return [
        click.Option([*opt.flags, opt.field], is_flag=True, help=opt.help)
        if opt.kind == "flag"
        else click.Option([*opt.flags, opt.field], type=_TYPES[opt.kind], metavar=opt.metavar, help=opt.help)
        for opt in options
    ]
