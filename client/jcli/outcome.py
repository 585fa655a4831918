"""How every click command ends: the CLI's one error boundary.

A command runs its core call through :func:`attempt` (or a block of calls
under :func:`failing`), which passes a coded error through and translates
an ``OSError`` by the core's one table (:mod:`jcli_sidecar.base.os_errors`,
named by the place the command met it); it ends with
:func:`finish` (the document in ``-j`` mode, else a human text) or
:func:`fail`. Exit codes and printing are
:mod:`jcli.emit`'s, which the lean fast path uses too.
"""

from __future__ import annotations

import contextlib

import click

from jcli_sidecar.base import JcliError, os_error

from . import emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, NoReturn

__all__ = ["attempt", "fail", "failing", "finish", "json_mode"]


def json_mode(ctx: click.Context) -> bool:
    """Whether ``-j`` was given."""
    return bool(ctx.find_root().obj["json"])


def fail(ctx: click.Context, err: JcliError) -> NoReturn:
    """Print ``err`` (its envelope with ``-j``) and exit with its code."""
    ctx.exit(emit.error(err, json_mode(ctx)))


@contextlib.contextmanager
def failing(ctx: click.Context, where: str | None = None) -> Iterator[None]:
    """Run the block; a coded error it raises ends the command (:func:`fail`), as does an
    ``OSError`` when ``where`` names its place (a key of ``jcli_sidecar.base.PLACES``;
    else the ``OSError`` goes on up)."""
    try:
        yield
    except JcliError as err:
        fail(ctx, err)
    except OSError as exc:
        if where is None:
            raise
        fail(ctx, os_error(exc, where))


def attempt(ctx: click.Context, action: Callable[[], Any], where: str) -> Any:
    """``action()``, or :func:`fail` with its coded error (an ``OSError`` as met at the place ``where``)."""
    with failing(ctx, where):
        return action()


def finish(ctx: click.Context, doc: dict[str, Any], human: str | None = None, code: int = emit.EXIT_OK) -> NoReturn:
    """Print the result (the document with ``-j``; else ``human``, or the document's own rendering) and exit."""
    if json_mode(ctx) or human is None:
        emit.document(doc, json_mode(ctx))
    else:
        click.echo(human)
    ctx.exit(code)
