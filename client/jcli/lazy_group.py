"""A click group that imports a command only when that command is asked for.

``j-cli setup claude`` or ``j-cli convert`` then never loads the kernel
client, the job views or the exec options: each command's module is
imported by the one run that needs it (about a third of the click path's
import time). ``--help``, which lists every command, loads each once.
"""

from __future__ import annotations

import click

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["LazyGroup"]


class LazyGroup(click.Group):
    """A :class:`click.Group` whose commands may be given as loaders: name to a function returning the command.

    Example:
        >>> group = LazyGroup("g")
        >>> group.loaders["hi"] = lambda: click.Command("hi")
        >>> group.list_commands(click.Context(group)), group.get_command(click.Context(group), "hi").name
        (['hi'], 'hi')
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.loaders: dict[str, Callable[[], click.Command]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.loaders})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        load = self.loaders.pop(cmd_name, None)
        if load is not None:
            self.add_command(load(), cmd_name)
        return super().get_command(ctx, cmd_name)
