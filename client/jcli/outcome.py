"""How every click command ends: the CLI's one error boundary.

A command runs its core call through :func:`attempt` (or a block of calls
under :func:`failing`), which passes a coded error through and translates
an ``OSError`` by the one table :data:`OS_ERRORS`; it ends with
:func:`finish` (the document in ``-j`` mode, else a human text) or
:func:`fail`. Exit codes and printing are
:mod:`jcli.emit`'s, which the lean fast path uses too.
"""

from __future__ import annotations

import contextlib

import click

from jcli_sidecar.base import JcliError, NotebookReadFailed, OutputSaveFailed, RunNotFound, SidecarUnavailable

from . import emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, NoReturn

__all__ = ["OS_ERRORS", "attempt", "fail", "failing", "finish", "json_mode", "translate"]

#: What an ``OSError`` means, by where the command met it: (error class, message template).
OS_ERRORS: dict[str, tuple[type[JcliError], str]] = {
    "setup": (OutputSaveFailed, "cannot write {path}: {reason}"),
    "sidecar": (SidecarUnavailable, "sidecar files unusable: {reason}"),
    "output": (RunNotFound, "the outputs directory cannot be read: {reason}"),
    "notebook": (NotebookReadFailed, "{path} cannot be read: {reason}"),
}


def json_mode(ctx: click.Context) -> bool:
    """Whether ``-j`` was given."""
    return bool(ctx.find_root().obj["json"])


def translate(exc: OSError, where: str) -> JcliError:
    """The coded error an ``OSError`` met in ``where`` (a key of :data:`OS_ERRORS`) stands for."""
    cls, template = OS_ERRORS[where]
    return cls(template.format(path=getattr(exc, "filename", None) or "the config", reason=exc.strerror or str(exc)))


def fail(ctx: click.Context, err: JcliError) -> NoReturn:
    """Print ``err`` (its envelope with ``-j``) and exit with its code."""
    ctx.exit(emit.error(err, json_mode(ctx)))


@contextlib.contextmanager
def failing(ctx: click.Context, where: str | None = None) -> Iterator[None]:
    """Run the block; a coded error it raises ends the command (:func:`fail`), as does an
    ``OSError`` when ``where`` says how to translate it (else the ``OSError`` goes on up)."""
    try:
        yield
    except JcliError as err:
        fail(ctx, err)
    except OSError as exc:
        if where is None:
            raise
        fail(ctx, translate(exc, where))


def attempt(ctx: click.Context, action: Callable[[], Any], where: str) -> Any:
    """``action()``, or :func:`fail` with its coded error (an ``OSError`` translated for ``where``)."""
    with failing(ctx, where):
        return action()


def finish(ctx: click.Context, doc: dict[str, Any], human: str | None = None, code: int = emit.EXIT_OK) -> NoReturn:
    """Print the result (the document with ``-j``; else ``human``, or the document's own rendering) and exit."""
    if json_mode(ctx) or human is None:
        emit.document(doc, json_mode(ctx))
    else:
        click.echo(human)
    ctx.exit(code)
