"""Where a new kernel runs: moved into the client's directory when it can see that very directory.

The embedded server starts kernels in the client's directory by itself (the
session path does it). Any other server starts them in its own root, or
somewhere of its own on another machine. :func:`place_kernel` asks a new
Python kernel, in one silent request that leaves no trace, whether the
client's directory exists on its side *as the same directory* (same device
and inode, so a like-named folder on another machine never counts); if so
the kernel moves there, else it stays where the server put it. Either way
the result says where the kernel runs, so relative paths in code are never
a guess.
"""

from __future__ import annotations

import ast
import os

from ..base import JcliError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .jupyter_api import JupyterServer

__all__ = ["PLACE_TIMEOUT", "place_kernel"]

#: How long a new kernel may take to start and answer (a gateway may launch it remotely).
PLACE_TIMEOUT = 60.0


def _expression(directory: str, device: int, inode: int) -> str:
    """One Python expression: move into ``directory`` if it is the client's own; ``(moved, cwd)``."""
    same = f"(__import__('os').path.isdir({directory!r}) and (lambda s: (s.st_dev, s.st_ino) == ({device}, {inode}))(__import__('os').stat({directory!r})))"
    return f"(lambda os, same: ((os.chdir({directory!r}) if same else None), bool(same), os.getcwd())[1:])(__import__('os'), {same})"


def place_kernel(server: JupyterServer, kernel_id: str, directory: str | None = None, *, timeout: float = PLACE_TIMEOUT) -> dict[str, Any]:
    """Move kernel ``kernel_id`` into ``directory`` (default: the cwd) where it can reach that same directory.

    Returns:
        ``{"kernel_cwd": where the kernel runs (None if it would not say), "kernel_in_cwd": bool}``
        and, when it stayed elsewhere, ``"kernel_cwd_note"`` saying why.
    """
    from .kernel_client import KernelConnection

    directory = os.path.realpath(directory or os.getcwd())
    here = os.stat(directory)
    try:
        with KernelConnection(server, kernel_id) as kernel:
            info = kernel.request("kernel_info_request", {}, timeout=timeout)
            language = (info.get("language_info") or {}).get("name")
            if language != "python":
                return _elsewhere(None, f"a {language or 'non-Python'} kernel is not moved; it runs where the server started it")
            content = {
                "code": "",
                "silent": True,
                "store_history": False,
                "user_expressions": {"jcli_cwd": _expression(directory, here.st_dev, here.st_ino)},
                "allow_stdin": False,
                "stop_on_error": False,
            }
            reply = kernel.request("execute_request", content, timeout=timeout)
    except JcliError as err:
        return _elsewhere(None, f"the kernel could not be asked where it runs ({err.code})")
    answer = (reply.get("user_expressions") or {}).get("jcli_cwd") or {}
    try:
        moved, cwd = ast.literal_eval(answer["data"]["text/plain"])
    except (KeyError, ValueError, SyntaxError, TypeError):
        return _elsewhere(None, "the kernel could not tell where it runs")
    if moved:
        return {"kernel_cwd": cwd, "kernel_in_cwd": True}
    return _elsewhere(cwd, "this directory is not on the kernel's machine (or not reachable by its user): relative paths resolve there")


def _elsewhere(cwd: str | None, why: str) -> dict[str, Any]:
    return {"kernel_cwd": cwd, "kernel_in_cwd": False, "kernel_cwd_note": why}
