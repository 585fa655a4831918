"""Creating a workspace's ``.j-cli`` and ``outputs`` directories, safely.

``.j-cli/`` is created the way pytest creates its cache directory: filled
in a temporary sibling and renamed into place, with a README, a
``.gitignore`` of ``*`` and a ``CACHEDIR.TAG``, so it never shows up in git.
A symlink or a file where a directory belongs is refused, never followed:
every step is opened relative to the one before (:mod:`jcli_sidecar.base.nofollow`).
Every directory opened here is checked as it is opened (``fstat`` of the
open directory) by the trust rule of :mod:`jcli_sidecar.base.trust`: one
that another user owns or can write is refused with ``WORKSPACE_UNSAFE``.
"""

from __future__ import annotations

import os

from .errors import OutputSaveFailed
from .layout import JCLI_DIR, JOBS_DIR, OUTPUTS_DIR, STAGING_DIR, Outputs
from .nofollow import Dir, LinkRefused
from .os_errors import os_error
from .trust import DIR_MODE, check_dir

__all__ = ["CACHEDIR_FILES", "ensure_outputs_dir", "open_jobs", "open_outputs", "open_outputs_root", "open_staging", "opened_for_writing"]

CACHEDIR_FILES: dict[str, bytes] = {
    "README.md": (
        b"# j-cli outputs\n\n"
        b"This directory holds outputs of inline `j-cli exec` runs. It is a scratch\n"
        b"area: runs are deleted by age and count (`j-cli output clean`).\n"
        b"Copy anything you want to keep. Do not commit this directory.\n"
    ),
    ".gitignore": b"# Created by j-cli automatically.\n*\n",
    "CACHEDIR.TAG": (
        b"Signature: 8a477f597d28d172789f06886806bc55\n"
        b"# This file is a cache directory tag created by j-cli.\n"
        b"# For information about cache directory tags, see:\n"
        b"#\thttps://bford.info/cachedir/spec.html\n"
    ),
}


def _make_jcli_dir(top: Dir) -> None:
    """Create ``.j-cli`` atomically with its boilerplate; tolerate a lost race."""
    tmp = f"{JCLI_DIR}-{os.urandom(6).hex()}"
    top.mkdir(tmp, DIR_MODE)  # never writable by group or others (the umask may take more)
    try:
        with top.sub(tmp) as staging:
            for name, content in CACHEDIR_FILES.items():
                staging.write_new(name, content)
        try:
            top.rename(tmp, top, JCLI_DIR)
        except OSError:
            if not top.is_dir(JCLI_DIR):  # not a lost race: a real failure
                raise
    finally:
        try:
            with top.sub(tmp) as leftover:
                for name in leftover.names():
                    leftover.unlink(name)
            top.rmdir(tmp)
        except FileNotFoundError:
            pass


def _open_in_jcli(cwd: str, name: str, *, create: bool) -> Dir:
    """``<cwd>/.j-cli/<name>``, opened and checked step by step (made with ``.j-cli`` when ``create``).

    The one walk behind :func:`open_outputs` and :func:`open_jobs`.
    """
    with Dir.open(cwd) as top:
        if create and not top.is_dir(JCLI_DIR):
            try:
                top.lstat(JCLI_DIR)
            except FileNotFoundError:
                _make_jcli_dir(top)
        with top.sub(JCLI_DIR) as jcli:
            check_dir(jcli, ".j-cli")
            sub = jcli.sub(name, create=create, mode=DIR_MODE)
    try:
        return check_dir(sub, name)
    except BaseException:
        sub.close()
        raise


def open_outputs(cwd: str, *, create: bool = False) -> Dir:
    """``<cwd>/.j-cli/outputs``, opened without following a link on the way.

    With ``create``, ``.j-cli`` (with its boilerplate), ``outputs`` and
    ``.staging`` are made when missing.

    Raises:
        LinkRefused: ``.j-cli`` or ``outputs`` is a symlink or a file.
        WorkspaceUnsafe: ``.j-cli``, ``outputs`` (or, with ``create``,
            ``.staging``) is owned or writable by another user.
        FileNotFoundError: missing (without ``create``).
    """
    outputs = _open_in_jcli(cwd, OUTPUTS_DIR, create=create)
    if create:
        try:
            open_staging(outputs, create=True).close()
        except BaseException:
            outputs.close()
            raise
    return outputs


def open_jobs(cwd: str, *, create: bool = False) -> Dir:
    """``<cwd>/.j-cli/jobs``, opened without following a link on the way (made with ``.j-cli`` when ``create``).

    Raises:
        LinkRefused: ``.j-cli`` or ``jobs`` is a symlink or a file.
        WorkspaceUnsafe: ``.j-cli`` or ``jobs`` is owned or writable by another user.
        FileNotFoundError: missing (without ``create``).
    """
    return _open_in_jcli(cwd, JOBS_DIR, create=create)


def open_staging(outputs: Dir, *, create: bool = False) -> Dir:
    """``outputs/.staging``, opened without following a link and checked like the rest.

    Raises:
        LinkRefused, FileNotFoundError: as :func:`open_outputs`.
        WorkspaceUnsafe: another user owns or can write it.
    """
    staging = outputs.sub(STAGING_DIR, create=create, mode=DIR_MODE)
    try:
        return check_dir(staging, "outputs/.staging")
    except BaseException:
        staging.close()
        raise


def open_outputs_root(root: str) -> Dir:
    """An outputs directory given by path (``<workspace>/.j-cli/outputs``), its last two steps not followed.

    Raises:
        LinkRefused, FileNotFoundError, WorkspaceUnsafe: as :func:`open_outputs`.
    """
    parent = os.path.dirname(root)
    with Dir.walk(os.path.dirname(parent), os.path.basename(parent)) as jcli:
        check_dir(jcli, ".j-cli")
        outputs = jcli.sub(os.path.basename(root))
    try:
        return check_dir(outputs, "outputs")
    except BaseException:
        outputs.close()
        raise


def ensure_outputs_dir(cwd: str) -> str:
    """``<cwd>/.j-cli/outputs`` with its ``.staging``, created on demand; returns its path.

    Raises:
        OutputSaveFailed: the workspace cannot be written, or a directory on
            the way is a symlink or a file.
        WorkspaceUnsafe: a directory on the way is owned or writable by another user.
    """
    with opened_for_writing(cwd):
        return Outputs.of_workspace(cwd).root


def opened_for_writing(cwd: str) -> Dir:
    """:func:`open_outputs` with ``create``, its failures as ``OUTPUT_SAVE_FAILED``."""
    try:
        return open_outputs(cwd, create=True)
    except LinkRefused as exc:
        raise OutputSaveFailed(f"{exc.describe()}; refusing to use it", path=exc.filename) from None
    except OSError as exc:
        raise os_error(exc, "create", Outputs.of_workspace(cwd).root, path=cwd) from None
