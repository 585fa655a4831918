"""Creating a workspace's ``.j-cli`` and ``outputs`` directories, safely.

``.j-cli/`` is created the way pytest creates its cache directory: filled
in a temporary sibling and renamed into place, with a README, a
``.gitignore`` of ``*`` and a ``CACHEDIR.TAG``, so it never shows up in git.
A symlink or a file where a directory belongs is refused, never followed:
every step is opened relative to the one before (:mod:`jcli_sidecar.base.nofollow`).
"""

from __future__ import annotations

import os

from .errors import OutputSaveFailed
from .layout import JCLI_DIR, OUTPUTS_DIR, STAGING_DIR, Outputs
from .nofollow import Dir, LinkRefused
from .os_errors import os_error

__all__ = ["CACHEDIR_FILES", "ensure_outputs_dir", "open_outputs", "open_outputs_root", "opened_for_writing"]

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
    top.mkdir(tmp)  # the umask applies, as for any directory the user makes
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


def open_outputs(cwd: str, *, create: bool = False) -> Dir:
    """``<cwd>/.j-cli/outputs``, opened without following a link on the way.

    With ``create``, ``.j-cli`` (with its boilerplate), ``outputs`` and
    ``.staging`` are made when missing.

    Raises:
        LinkRefused: ``.j-cli`` or ``outputs`` is a symlink or a file.
        FileNotFoundError: missing (without ``create``).
    """
    with Dir.open(cwd) as top:
        if create and not top.is_dir(JCLI_DIR):
            try:
                top.lstat(JCLI_DIR)
            except FileNotFoundError:
                _make_jcli_dir(top)
        with top.sub(JCLI_DIR) as jcli:
            outputs = jcli.sub(OUTPUTS_DIR, create=create)
    if create:
        try:
            outputs.sub(STAGING_DIR, create=True).close()
        except BaseException:
            outputs.close()
            raise
    return outputs


def open_outputs_root(root: str) -> Dir:
    """An outputs directory given by path (``<workspace>/.j-cli/outputs``), its last two steps not followed.

    Raises:
        LinkRefused, FileNotFoundError: as :func:`open_outputs`.
    """
    parent = os.path.dirname(root)
    return Dir.walk(os.path.dirname(parent), os.path.basename(parent), os.path.basename(root))


def ensure_outputs_dir(cwd: str) -> str:
    """``<cwd>/.j-cli/outputs`` with its ``.staging``, created on demand; returns its path.

    Raises:
        OutputSaveFailed: the workspace cannot be written, or a directory on
            the way is a symlink or a file.
    """
    with opened_for_writing(cwd):
        return Outputs.of_workspace(cwd).root


def opened_for_writing(cwd: str) -> Dir:
    """:func:`open_outputs` with ``create``, its failures as ``OUTPUT_SAVE_FAILED``."""
    try:
        return open_outputs(cwd, create=True)
    except LinkRefused as exc:
        raise OutputSaveFailed(
            f"{exc.filename} is not a plain directory (a symlink or a file); refusing to use it", path=exc.filename
        ) from None
    except OSError as exc:
        raise os_error(exc, "create", Outputs.of_workspace(cwd).root, path=cwd) from None
