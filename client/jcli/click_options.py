"""click options built from the shared option tables (``read_options``, ``exec_cmd``).

The tables stay free of click, so the fast path can use them too.
"""

from __future__ import annotations

import click

from .read_options import parse_value

__all__ = ["table_options"]


class _Strict(click.ParamType):
    """A number parsed by :func:`jcli.read_options.parse_value`, as the fast path parses it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = {"int": "integer", "float": "float", "timeout": "seconds"}[kind]

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        try:
            return parse_value(self.kind, value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_TYPES = {"int": _Strict("int"), "float": _Strict("float"), "timeout": _Strict("timeout"), "str": click.STRING}


def table_options(options) -> list[click.Parameter]:
    """One click option per table entry: its flags, the request field it fills, its type and help.

    A ``"flag"`` entry takes no value and is true when given; a ``"pair"``
    entry takes two (``NAME VALUE``) and a ``"multi"`` one a string, each as
    often as given.
    """
    return [_option(opt) for opt in options]


def _option(opt) -> click.Option:
    if opt.kind == "flag":
        return click.Option([*opt.flags, opt.field], is_flag=True, help=opt.help, hidden=opt.hidden)
    if opt.kind == "pair":
        return click.Option(
            [*opt.flags, opt.field], nargs=2, multiple=True, type=click.STRING, metavar=opt.metavar, help=opt.help, hidden=opt.hidden
        )
    if opt.kind == "multi":
        return click.Option(
            [*opt.flags, opt.field], multiple=True, type=click.STRING, metavar=opt.metavar, help=opt.help, hidden=opt.hidden
        )
    return click.Option([*opt.flags, opt.field], type=_TYPES[opt.kind], metavar=opt.metavar, help=opt.help, hidden=opt.hidden)
