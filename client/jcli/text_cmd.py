"""``j-cli notebook text FILE``: a notebook as plain text; any other file's bytes unchanged.

Made to be ripgrep's preprocessor (``rg --pre j-cli-notebook-text``, the
same command as one program, :func:`jcli.__main__.notebook_text_main`),
which runs it for every file it searches: a file whose name does not end in
``.ipynb``, or one that is not a notebook (not JSON, no cells), is copied to
stdout byte for byte and the exit status is 0, importing nothing but the
standard library on the way. A notebook is rendered by
:func:`jcli_sidecar.read.notebook_text.render_notebook_text`. The fast path
(:mod:`jcli.fastpath`) and the click command both call :func:`run_text`.
"""

from __future__ import annotations

import os
import sys

__all__ = ["run_text"]

_CHUNK = 1 << 20


def _copy(fd: int) -> None:
    out = sys.stdout.buffer
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        out.write(chunk)
    out.flush()


def _render(path: str) -> bool:
    """Print ``path`` as text if it is a notebook; False when it is not one (nothing printed)."""
    from jcli_sidecar.base import NotebookReadFailed
    from jcli_sidecar.ipynb import NotebookFile
    from jcli_sidecar.read import render_notebook_text

    try:
        nb = NotebookFile.load(path)
    except NotebookReadFailed:
        return False
    out = sys.stdout.buffer
    for piece in render_notebook_text(nb, path):
        out.write(piece.encode("utf-8", "surrogateescape"))
    out.flush()
    return True


def run_text(path: str, json_mode: bool = False) -> int:
    """Print the text of the notebook at ``path``, or the bytes of any other file; returns the exit code."""
    try:
        from jcli_sidecar.base import open_regular  # a FIFO, a device or a directory is refused, never waited on

        fd, _ = open_regular(path)
        try:
            if not path.endswith(".ipynb") or not _render(path):
                _copy(fd)
        finally:
            os.close(fd)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the reader went away: nothing more to say
        return 0
    except Exception as exc:  # every failure is one coded line, never a traceback
        return _failed(exc, path, json_mode)
    return 0


def _failed(exc: Exception, path: str, json_mode: bool) -> int:
    from jcli_sidecar.base import JcliError, NotebookReadFailed, UsageError
    from jcli_sidecar.ipynb import Changed, coded_read_error

    from . import emit

    if isinstance(exc, JcliError):
        return emit.error(exc, json_mode)
    if isinstance(exc, Changed):
        return emit.error(NotebookReadFailed(f"{path}: changed while it was being read; try again", path=path), json_mode)
    if isinstance(exc, OSError):
        return emit.error(coded_read_error(exc, path), json_mode)
    if isinstance(exc, ValueError):  # a NUL byte or a lone surrogate
        return emit.error(UsageError(f"{path!r} is not a usable file name"), json_mode)
    return emit.unexpected(exc, json_mode)
