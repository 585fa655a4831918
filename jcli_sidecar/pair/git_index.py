"""What git holds, asked of git itself: the repository, the staged paths, the index's blobs.

Every question runs the ``git`` on PATH in the repository, with the
environment git gave a hook (``GIT_INDEX_FILE`` among it: ``git commit -a``
and ``git commit PATH`` stage into a temporary index, and this reads that
one). Nothing here writes to the repository. Paths are repository-relative
with ``/`` separators, exactly as git spells them (``-z`` output, never
quoted).
"""

from __future__ import annotations

import os
import subprocess

from ..base import GitFailed, UsageError, os_error

__all__ = ["IndexEntry", "Repository", "changed_in_worktree", "read_blobs", "repository", "stage_blob", "staged_changes", "staged_entries"]

#: Index modes of a file git stores as bytes (a symlink is 120000, a submodule 160000).
REGULAR_MODES = ("100644", "100755")


def _git(cwd: str, *args: str, input_bytes: bytes | None = None, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, input=input_bytes, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitFailed("git is not installed (or not on PATH)") from None
    except OSError as exc:
        raise os_error(exc, "git") from None
    if proc.returncode not in ok:
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitFailed(f"git {args[0]} failed (exit {proc.returncode}): {said[0] if said else 'no message'}")
    return proc


class Repository:
    """A work tree: its top directory and its git directories (all absolute)."""

    __slots__ = ("top", "git_dir", "common_dir")

    def __init__(self, top: str, git_dir: str, common_dir: str) -> None:
        self.top = top
        self.git_dir = git_dir
        self.common_dir = common_dir

    def hooks_dir(self) -> str:
        """Where git looks for hooks: ``core.hooksPath`` when set, else the common ``hooks`` directory."""
        out = _git(self.top, "rev-parse", "--git-path", "hooks").stdout.decode("utf-8", "surrogateescape").strip()
        return os.path.normpath(os.path.join(self.top, out))

    def hooks_path_setting(self) -> str | None:
        """``core.hooksPath`` as configured, or None."""
        proc = _git(self.top, "config", "--get", "core.hooksPath", ok=(0, 1))
        return proc.stdout.decode("utf-8", "surrogateescape").strip() or None if proc.returncode == 0 else None


def repository(cwd: str) -> Repository:
    """The work tree ``cwd`` is in.

    Raises:
        UsageError: ``cwd`` is not inside a git work tree (or the repository is bare).
        GitFailed: git is missing.
    """
    proc = _git(cwd, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir", ok=(0, 128))
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) != 3:
        raise UsageError(f"{cwd} is not inside a git work tree")
    return Repository(*(os.path.normpath(line) for line in lines))


class IndexEntry:
    """One stage-0 index entry: mode and blob id."""

    __slots__ = ("mode", "sha")

    def __init__(self, mode: str, sha: str) -> None:
        self.mode = mode
        self.sha = sha

    @property
    def regular(self) -> bool:
        return self.mode in REGULAR_MODES


def staged_changes(repo: Repository) -> list[str]:
    """Paths the commit changes against ``HEAD`` (added, modified, deleted; renames as a delete plus an add)."""
    proc = _git(repo.top, "diff", "--cached", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--ignore-submodules=all")
    return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def staged_entries(repo: Repository) -> dict[str, IndexEntry]:
    """Every stage-0 entry of the index, by path (merge conflicts' other stages left out)."""
    proc = _git(repo.top, "ls-files", "--stage", "-z")
    entries = {}
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, sha, stage = meta.split(" ")
        if stage == "0":
            entries[path] = IndexEntry(mode, sha)
    return entries


def read_blobs(repo: Repository, shas: list[str]) -> dict[str, bytes]:
    """The bytes of each blob, read with one ``git cat-file --batch``."""
    if not shas:
        return {}
    wanted = list(dict.fromkeys(shas))
    out = _git(repo.top, "cat-file", "--batch", input_bytes="".join(s + "\n" for s in wanted).encode()).stdout
    blobs, at = {}, 0
    for sha in wanted:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split(b" ")
        if len(header) != 3:
            raise GitFailed(f"git cat-file has no blob {sha}")
        size = int(header[2])
        blobs[sha] = out[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
    return blobs


def changed_in_worktree(repo: Repository, path: str) -> bool:
    """Whether the working tree's ``path`` differs from the index (git's own filters applied)."""
    proc = _git(repo.top, "--literal-pathspecs", "diff", "--quiet", "--no-ext-diff", "--", path, ok=(0, 1))
    return proc.returncode == 1


def stage_blob(repo: Repository, path: str, mode: str, data: bytes) -> None:
    """Put ``data`` into the index as ``path`` (git's filters not applied: ``data`` is what the index holds); the working tree is not touched."""
    sha = _git(repo.top, "hash-object", "-w", "--no-filters", "--stdin", input_bytes=data).stdout.decode().strip()
    _git(repo.top, "update-index", "--cacheinfo", f"{mode},{sha},{path}")
