"""Whose directories j-cli trusts under ``.j-cli``: the owner and mode rule, once.

Runs are served as j-cli's own, so whoever can write ``.j-cli``,
``outputs``, ``.staging``, a run directory or a manifest can make j-cli say
anything. As OpenSSH does with ``~/.ssh``, a path there is used only when

- its owner is the current user or root (for root: root only, since a
  directory another user owns is exactly the threat), and
- others may not write it (mode ``& 0o002``; a sticky bit does not help,
  because planting a new run needs no one else's file), and
- its group may not write it, unless that group is its owner's private
  group: the owner is the group's one member, as its primary group or its
  only listed member (the user-private-group scheme, where a umask of 002
  is the default; Debian's OpenSSH accepts the same).

Anything else is refused with ``WORKSPACE_UNSAFE``, naming the path, its
owner and mode and the fix. j-cli creates its own directories ``0755`` and
files ``0644`` (less what the umask takes), so this never refuses what it
made itself. The workspace (the current directory) is the user's and is not
judged here.
"""

from __future__ import annotations

import os
import stat

from .errors import WorkspaceUnsafe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .nofollow import Dir

__all__ = ["DIR_MODE", "FILE_MODE", "check_dir", "check_stat", "trusted_stat", "untrusted_reason"]

#: The modes j-cli creates directories and files with under ``.j-cli`` (the umask may take more).
DIR_MODE = 0o755
FILE_MODE = 0o644


def untrusted_reason(info: os.stat_result, uid: int | None = None) -> str | None:
    """Why ``info`` (of a path under ``.j-cli``) cannot be trusted, or None when it can.

    ``uid`` is the current user (default: the effective uid).

    Example:
        >>> import os
        >>> me = os.stat_result((0o40755, 0, 0, 1, os.geteuid(), 0, 0, 0, 0, 0))
        >>> untrusted_reason(me) is None
        True
        >>> open_to_all = os.stat_result((0o40777, 0, 0, 1, os.geteuid(), 4242424, 0, 0, 0, 0))  # no such group
        >>> untrusted_reason(open_to_all)
        'writable by its group and others (mode 0777)'
    """
    uid = os.geteuid() if uid is None else uid
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid not in (uid, 0):
        who = "you (root)" if uid == 0 else f"you ({_name(uid)}, uid {uid}) or root"
        return f"owned by {_name(info.st_uid)} (uid {info.st_uid}), not by {who}"
    if mode & stat.S_IWGRP and not _private_group(info.st_gid, info.st_uid):
        whom = "its group and others" if mode & stat.S_IWOTH else f"its group {_group_name(info.st_gid)}"
        return f"writable by {whom} (mode {mode:04o})"
    if mode & stat.S_IWOTH:
        return f"writable by others (mode {mode:04o})"
    return None


_PRIVATE: dict[tuple[int, int], bool] = {}


def _private_group(gid: int, owner: int) -> bool:
    """Is ``gid`` the private group of ``owner``: the owner its only member, primary or listed?

    Asked only of group-writable paths (it reads the user database once per
    group and owner in a process).
    """
    key = (gid, owner)
    if key not in _PRIVATE:
        _PRIVATE[key] = _only_member(gid, owner)
    return _PRIVATE[key]


def _only_member(gid: int, owner: int) -> bool:
    try:
        import grp
        import pwd

        group = grp.getgrgid(gid)
        owner_name = pwd.getpwuid(owner).pw_name
        primary = [user.pw_uid for user in pwd.getpwall() if user.pw_gid == gid]
    except (KeyError, ImportError, OSError):  # the user or group database cannot be read: not proven private, so not trusted
        return False
    listed = list(group.gr_mem)
    if any(uid != owner for uid in primary) or listed not in ([], [owner_name]):
        return False
    return bool(primary or listed)


def _group_name(gid: int) -> str:
    try:
        import grp

        return grp.getgrgid(gid).gr_name
    except (KeyError, ImportError):
        return str(gid)


def check_stat(info: os.stat_result, path: str, what: str) -> None:
    """Refuse ``path`` (``what``: ``.j-cli``, ``outputs``, ``run directory``, ...) unless :func:`untrusted_reason` is None.

    Raises:
        WorkspaceUnsafe: with ``path``, ``owner_uid``, ``owner``, ``mode`` and ``fix`` in its details.
    """
    reason = untrusted_reason(info)
    if reason is None:
        return
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid not in (os.geteuid(), 0):
        fix = f"if you did not make it, have its owner or root remove it; if it is yours: chown -R {_name(os.geteuid())} {path}"
    else:
        fix = f"chmod go-w {path}" + (" (and what is in it)" if stat.S_ISDIR(info.st_mode) else "")
    raise WorkspaceUnsafe(
        f"{path} ({what}) is {reason}; another user could plant runs there, so j-cli does not use it. Fix: {fix}",
        path=path,
        owner_uid=info.st_uid,
        owner=_name(info.st_uid),
        mode=f"{mode:04o}",
        fix=fix,
    )


def check_dir(directory: Dir, what: str) -> Dir:
    """The open directory itself (``fstat``, so what was checked is what is used), refused unless trusted.

    Raises:
        WorkspaceUnsafe: see :func:`check_stat`.
    """
    check_stat(os.fstat(directory.fd), directory.path, what)
    return directory


def trusted_stat(path: str, what: str) -> os.stat_result:
    """``os.stat(path)`` (links followed: for reads), refused unless trusted.

    Raises:
        WorkspaceUnsafe: see :func:`check_stat`. OSError: it cannot be stat'ed.
    """
    info = os.stat(path)
    check_stat(info, path, what)
    return info


def _name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return str(uid)
