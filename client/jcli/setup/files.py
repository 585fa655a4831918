"""The files ``setup`` edits: read safely, planned, then written or deleted.

Every ``setup`` (and ``--remove``) reads all the files it will touch and
checks every change before the first one is made, so a refusal leaves every
file as it was:

- **Only regular files.** A config is opened without blocking and must be a
  regular file of at most :data:`MAX_CONFIG_BYTES` in UTF-8; a FIFO, device,
  socket or directory in its place is ``CONFIG_INVALID``.
- **Through symlinks.** A config that is a symlink (a dotfiles repo) is read
  and written at its target, so the link stays a link; a file that must be
  deleted is deleted at the target too, never the link.
- **Read-only means no.** A file (or the directory that holds it) with no
  write bit in its mode, or that this user cannot write, is refused with
  ``OUTPUT_SAVE_FAILED``, also for root, which the kernel would let through.
  So is a file with several hard links, which a replace would split.
- **Atomic.** A write is a temp file plus a rename in the target's directory,
  keeping the file's mode (:func:`jcli_sidecar.base.fileio.write_text_atomic`).
- **Moved aside, moved back.** A file j-cli must wrap (a git hook) is
  renamed, never copied, so moving it back restores it byte for byte, its
  mode and a symlink included.
- **What setup created, it records.** A file setup created carries a mark
  (a block's ``[+file]``; for Claude's JSON, the compact one-line form only
  setup writes), and the directories it had to create are counted in the
  file's own marker (``[+N dirs]``: the file's directory and N-1 of its
  parents). ``--remove`` deletes a file only when it is j-cli's and empty
  again, and then those directories, each only while it is empty.
"""

from __future__ import annotations

import os
import re
import stat

from jcli_sidecar.base import (
    ConfigConflict,
    ConfigInvalid,
    FileTooLarge,
    NotARegularFile,
    OutputSaveFailed,
    os_error,
    read_text_or_none,
    write_text_atomic,
)

__all__ = ["Current", "MAX_CONFIG_BYTES", "Plan", "dirs_mark", "dirs_recorded", "read"]

#: The largest config ``setup`` reads (Claude Code's ``~/.claude.json`` grows with history).
MAX_CONFIG_BYTES = 64 * 1024 * 1024

_DIRS_MARK = re.compile(r" \[\+(\d+) dirs?\]")


def dirs_mark(count: int, always: bool = False) -> str:
    """The marker token recording ``count`` directories setup created (empty for none unless ``always``)."""
    return f" [+{count} dir{'' if count == 1 else 's'}]" if count or always else ""


def dirs_recorded(text: str) -> int | None:
    """The directory count recorded in ``text`` (a marker line), None when there is none."""
    match = _DIRS_MARK.search(text)
    return int(match.group(1)) if match else None


class Current:
    """A file as setup found it: the name it was given, where its bytes live, its text."""

    __slots__ = ("path", "target", "text")

    def __init__(self, path: str, target: str, text: str | None) -> None:
        #: The path setup names to the user (it may be a symlink).
        self.path = path
        #: ``path`` with every symlink resolved: what is read, written or deleted.
        self.target = target
        #: The text, or None when there is no file (a dangling symlink included).
        self.text = text

    def missing_dirs(self) -> int:
        """How many of the target's ancestor directories do not exist yet."""
        count = 0
        here = os.path.dirname(self.target)
        while not os.path.isdir(here):
            count += 1
            parent = os.path.dirname(here)
            if parent == here:
                break
            here = parent
        return count


def read(path: str) -> Current:
    """Read ``path`` as a config file (see the module notes).

    Raises:
        ConfigInvalid: not a regular file, too large, not UTF-8, or unreadable.
    """
    target = os.path.realpath(path)
    try:
        text = read_text_or_none(target, MAX_CONFIG_BYTES)
    except (NotARegularFile, IsADirectoryError):
        raise ConfigInvalid(f"{path} is not a regular file; it was left untouched", path=path) from None
    except FileTooLarge:
        raise ConfigInvalid(f"{path} is larger than {MAX_CONFIG_BYTES >> 20} MiB; it was left untouched", path=path) from None
    except UnicodeDecodeError:
        raise ConfigInvalid(f"{path} is not UTF-8 text; it was left untouched", path=path) from None
    except OSError as exc:
        raise os_error(exc, "config", path, path=path) from None
    return Current(path, target, text)


def _read_only(path: str, st: os.stat_result, access: int) -> bool:
    return not st.st_mode & 0o222 or not os.access(path, access)


def _check_dir(cur: Current) -> None:
    here = os.path.dirname(cur.target)
    while not os.path.isdir(here):  # a new directory goes into the nearest existing one
        if os.path.lexists(here):
            raise OutputSaveFailed(f"cannot write {cur.path}: {here} is not a directory; nothing was changed", path=cur.path)
        here = os.path.dirname(here)
    if _read_only(here, os.stat(here), os.W_OK | os.X_OK):
        raise OutputSaveFailed(f"cannot write {cur.path}: the directory {here} is read-only; nothing was changed", path=cur.path)


def _check_file(cur: Current, replacing: bool = True) -> None:
    try:
        st = os.stat(cur.target)
    except FileNotFoundError:
        return
    if _read_only(cur.target, st, os.W_OK):
        raise OutputSaveFailed(
            f"cannot write {cur.path}: it is read-only (mode {stat.S_IMODE(st.st_mode):04o}); nothing was changed", path=cur.path
        )
    if replacing and st.st_nlink > 1:
        raise OutputSaveFailed(
            f"cannot write {cur.path}: it has {st.st_nlink} hard links, which replacing it would split; nothing was changed",
            path=cur.path,
        )


class Plan:
    """The changes one setup run makes, checked as they are added, made by :meth:`apply`."""

    def __init__(self) -> None:
        self._steps: list[tuple[Current, str | None, int]] = []
        self._executable: set[str] = set()
        #: Paths an earlier step moves away or deletes: free for a later step.
        self._freed: set[str] = set()

    def __len__(self) -> int:
        """How many changes are planned so far (a caller tells whether a step added any)."""
        return len(self._steps)

    def write(self, cur: Current, text: str, executable: bool = False) -> bool:
        """Plan ``text`` as the new content of ``cur``; False (and nothing planned) when it is unchanged.

        Raises:
            OutputSaveFailed: the file or its directory is read-only, the file
                has hard links, or ``text`` cannot be written as UTF-8.
        """
        if text == cur.text:
            return False
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise OutputSaveFailed(
                f"cannot write {cur.path}: a path that is not valid UTF-8 would go into it; nothing was changed", path=cur.path
            ) from None
        if cur.target not in self._freed:
            _check_file(cur)
        _check_dir(cur)
        self._steps.append((cur, text, 0))
        if executable:
            self._executable.add(cur.target)
        return True

    def rename(self, cur: Current, to: str) -> None:
        """Plan moving ``cur.path`` itself (a symlink stays a link) to ``to``, in the same directory.

        Raises:
            ConfigConflict: something already is at ``to``.
            OutputSaveFailed: the directory is read-only.
        """
        if os.path.lexists(to) and to not in self._freed:
            raise ConfigConflict(f"cannot move {cur.path} to {to}: {to} is in the way; nothing was changed", path=to)
        _check_dir(Current(cur.path, cur.path, None))
        self._freed.add(cur.path)
        self._steps.append((cur, to, -1))  # a rename: "text" holds where to

    def delete(self, cur: Current, dirs: int = 0) -> None:
        """Plan deleting ``cur``'s target, then up to ``dirs`` of its directories while they are empty.

        Raises:
            OutputSaveFailed: the file or its directory is read-only.
        """
        _check_file(cur, replacing=False)
        _check_dir(cur)
        self._freed.add(cur.target)
        self._steps.append((cur, None, dirs))

    def apply(self) -> None:
        """Make every planned change, in order.

        Raises:
            OSError: a write or delete failed after every check passed.
        """
        for cur, text, dirs in self._steps:
            if dirs < 0 and text is not None:
                os.rename(cur.path, text)
                continue
            if text is not None:
                os.makedirs(os.path.dirname(cur.target), exist_ok=True)
                write_text_atomic(cur.target, text)
                if cur.target in self._executable:
                    mode = stat.S_IMODE(os.stat(cur.target).st_mode)
                    os.chmod(cur.target, mode | (mode & 0o444) >> 2)
                continue
            os.unlink(cur.target)
            here = os.path.dirname(cur.target)
            for _ in range(dirs):
                try:
                    os.rmdir(here)
                except OSError:  # not empty (someone else's files), or already gone
                    break
                here = os.path.dirname(here)
