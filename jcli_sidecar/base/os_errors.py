"""One table from an ``OSError`` and the place it was met to the coded error a user sees.

An ``OSError`` by itself says what the system refused (its errno), not what
j-cli was doing. A *place* says that: reading a notebook, writing a file,
taking a write lock, talking to the sidecar. :data:`PLACES` gives each place
its error class and its sentence; :data:`ERRNO_RULES` refines a few errnos
wherever they are met (a file that is not there is ``FILE_NOT_FOUND`` when
j-cli was reading it, whatever else the place says). :func:`os_error` is the
only way an ``OSError`` becomes a coded error, in every command and in the
sidecar.

The reason printed is the system's own short text (``strerror``), else the
exception's type name: never ``str(exc)``, which repeats the path and
whatever the exception carried.
"""

from __future__ import annotations

import errno

from .errors import (
    ConfigInvalid,
    FileNotFound,
    GitFailed,
    JcliError,
    NotebookReadFailed,
    OutputDataInvalid,
    OutputSaveFailed,
    OutputTooLarge,
    PathNotAllowed,
    RunNotFound,
    RuntimeDirUnusable,
    SidecarError,
    SidecarUnavailable,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ERRNO_RULES", "PLACES", "RUNTIME_DIR_FIX", "os_error", "os_reason"]

#: What a user does about a runtime dir j-cli cannot use (every such error ends with it).
RUNTIME_DIR_FIX = "set XDG_RUNTIME_DIR to a short directory you own and can write"

#: Where an ``OSError`` was met: (error class, sentence). ``{path}`` is the file
#: concerned and ``{reason}`` the system's text (:func:`os_reason`).
PLACES: dict[str, tuple[type[JcliError], str]] = {
    "read": (NotebookReadFailed, "{path}: cannot be read ({reason})"),
    "resolve": (FileNotFound, "{path}: cannot be resolved ({reason}); is the current directory gone?"),
    "create": (OutputSaveFailed, "cannot create {path}: {reason}"),
    "write": (OutputSaveFailed, "cannot write {path}: {reason}"),
    "write-into": (OutputSaveFailed, "cannot write into {path}: {reason}"),
    "write-lock": (OutputSaveFailed, "cannot take the write-back lock of {path}: {reason}"),
    "outputs": (RunNotFound, "the outputs directory cannot be read: {reason}"),
    "outputs-lock": (PathNotAllowed, "cannot take the outputs lock in {path} ({reason}); nothing was deleted"),
    "run": (RunNotFound, "{path}: not a readable run manifest ({reason})"),
    "payload": (OutputDataInvalid, "{path}: the payload cannot be read ({reason})"),
    "payload-size": (OutputTooLarge, "{path}: the payload is {reason}"),
    "job-output": (OutputDataInvalid, "{path} cannot be read ({reason})"),
    "publish": (OutputSaveFailed, "cannot publish run {path}: {reason}"),
    "config": (ConfigInvalid, "{path} cannot be read ({reason}); it was left untouched"),
    "git": (GitFailed, "git cannot be run: {reason}"),
    "runtime-dir": (RuntimeDirUnusable, "the runtime dir {path} cannot be used ({reason}); " + RUNTIME_DIR_FIX),
    "sidecar": (SidecarUnavailable, "sidecar files unusable: {reason}"),
    "sidecar-connect": (SidecarUnavailable, "sidecar connection failed ({reason})"),
    "sidecar-socket": (SidecarUnavailable, "no sidecar at {path} ({reason})"),
    "sidecar-publish": (OutputSaveFailed, "the sidecar may not publish here: {reason}"),
    "sidecar-op": (SidecarError, "the sidecar could not finish {path}: {reason}"),
}

#: Errnos that mean the same wherever they are met, by the places they apply to:
#: errno -> (places, error class, sentence).
ERRNO_RULES: dict[int, tuple[frozenset[str], type[JcliError], str]] = {
    errno.ENOENT: (frozenset({"read"}), FileNotFound, "{path}: no such file"),
    errno.ENOTDIR: (frozenset({"read"}), FileNotFound, "{path}: no such file"),
    errno.EISDIR: (frozenset({"read"}), NotebookReadFailed, "{path}: is a directory, not a notebook"),
    errno.EACCES: (frozenset({"read"}), NotebookReadFailed, "{path}: permission denied"),
    errno.EPERM: (frozenset({"read"}), NotebookReadFailed, "{path}: permission denied"),
}


def os_reason(exc: BaseException) -> str:
    """The system's short text for ``exc`` (``strerror``), else its type name.

    Example:
        >>> os_reason(PermissionError(13, "Permission denied", "/x")), os_reason(OSError("no errno"))
        ('Permission denied', 'OSError')
    """
    return getattr(exc, "strerror", None) or type(exc).__name__


def os_error(exc: OSError, place: str, target: Any = None, *, note: str = "", **details: Any) -> JcliError:
    """The coded error ``exc``, met at ``place`` (a key of :data:`PLACES`), stands for.

    Args:
        target: the file (or run) the sentence names, its ``{path}`` (default: the exception's own ``filename``).
        note: a clause appended to the sentence (for example ``"; nothing was run"``).
        **details: facts that travel beside the message (``executed``, ``path``, ...).

    Example:
        >>> err = os_error(FileNotFoundError(2, "No such file or directory"), "read", "nb.ipynb")
        >>> err.code, err.message
        ('FILE_NOT_FOUND', 'nb.ipynb: no such file')
        >>> os_error(PermissionError(13, "Permission denied"), "write", "nb.ipynb", note="; nothing was run").message
        'cannot write nb.ipynb: Permission denied; nothing was run'
    """
    cls, template = PLACES[place]
    rule = ERRNO_RULES.get(exc.errno) if exc.errno is not None else None
    if rule is not None and place in rule[0]:
        cls, template = rule[1], rule[2]
    if target is None:
        target = getattr(exc, "filename", None) or "the file"
    return cls(template.format(path=target, reason=os_reason(exc)) + note, **details)
