"""Creating a workspace's ``.j-cli`` and ``outputs`` directories, safely.

``.j-cli/`` is created the way pytest creates its cache directory: filled
in a temporary sibling and renamed into place, with a README, a
``.gitignore`` of ``*`` and a ``CACHEDIR.TAG``, so it never shows up in git.
A symlink or a file where a directory belongs is refused, never followed.
"""

from __future__ import annotations

import os
import stat
import tempfile

from .errors import OutputSaveFailed
from .layout import JCLI_DIR, Outputs

__all__ = ["CACHEDIR_FILES", "ensure_outputs_dir"]

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


def _refuse_symlink(path: str) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OutputSaveFailed(f"{path} is not a plain directory (a symlink or a file); refusing to use it", path=path)


def _make_jcli_dir(cwd: str) -> str:
    """Create ``.j-cli`` atomically with its boilerplate; tolerate a lost race."""
    path = os.path.join(cwd, JCLI_DIR)
    _refuse_symlink(path)
    if os.path.isdir(path):
        return path
    umask = os.umask(0)
    os.umask(umask)
    tmp = tempfile.mkdtemp(prefix=".j-cli-", dir=cwd)
    try:
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; use the normal default
        for name, content in CACHEDIR_FILES.items():
            with open(os.path.join(tmp, name), "xb") as fh:
                fh.write(content)
        try:
            os.rename(tmp, path)
        except OSError as exc:
            if not os.path.isdir(path):  # not a lost race: a real failure
                raise exc
    finally:
        if os.path.isdir(tmp):
            for name in CACHEDIR_FILES:
                try:
                    os.unlink(os.path.join(tmp, name))
                except FileNotFoundError:
                    pass
            os.rmdir(tmp)
    _refuse_symlink(path)
    return path


def ensure_outputs_dir(cwd: str) -> str:
    """``<cwd>/.j-cli/outputs`` with its ``.staging``, created on demand.

    Raises:
        OutputSaveFailed: the workspace cannot be written, or a path on the
            way is a symlink.
    """
    try:
        _make_jcli_dir(cwd)
        layout = Outputs.of_workspace(cwd)
        outputs = layout.root
        for directory in (outputs, layout.staging):
            _refuse_symlink(directory)
            try:
                os.mkdir(directory)
            except FileExistsError:
                pass
            _refuse_symlink(directory)
        return outputs
    except OSError as exc:
        raise OutputSaveFailed(f"cannot create {Outputs.of_workspace(cwd).root}: {exc.strerror or exc}", path=cwd) from None
