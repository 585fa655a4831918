"""Programs that run another program: ``sudo x``, ``env -S 'x y'``, ``xargs x``, ``uv run x`` and the like.

:func:`unwrap` peels them off a simple command's words, one at a time, and
says which wrapper gave each program: a guard needs to know that the words
``xargs`` appends, or the ``{}`` of ``find -exec``, come from elsewhere
(see ``Command.arg_feed`` in :mod:`.shell_commands`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["RUNNERS", "WRAPPERS", "skip_assignments", "unwrap"]

#: Programs that run the command after their own options: ``name -> (options taking a value, options moving the cwd)``.
WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "env": (frozenset({"-u", "--unset"}), frozenset({"-C", "--chdir"})),
    "sudo": (
        frozenset(
            {
                "-u",
                "--user",
                "-g",
                "--group",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-r",
                "--role",
                "-t",
                "--type",
                "-U",
                "--other-user",
                "-C",
                "--close-from",
                "-T",
                "--command-timeout",
            }
        ),
        frozenset({"-D", "--chdir"}),
    ),
    "doas": (frozenset({"-u", "-C"}), frozenset()),
    "nohup": (frozenset(), frozenset()),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), frozenset()),
    "nice": (frozenset({"-n", "--adjustment"}), frozenset()),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid"}), frozenset()),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), frozenset()),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), frozenset()),
    "xargs": (
        frozenset(
            {
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-I",
                "-L",
                "-n",
                "--max-args",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
                "--process-slot-var",
            }
        ),
        frozenset(),
    ),
    "exec": (frozenset({"-a"}), frozenset()),
    "command": (frozenset(), frozenset()),
    "builtin": (frozenset(), frozenset()),
    "chronic": (frozenset(), frozenset()),
    "caffeinate": (frozenset({"-t", "-w"}), frozenset()),
    "setsid": (frozenset(), frozenset()),
    "strace": (frozenset({"-e", "-o", "-p", "-s", "-u", "-E"}), frozenset()),
    "watch": (frozenset({"-n", "--interval", "-d"}), frozenset()),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), frozenset()),
    "parallel": (
        frozenset({"-j", "--jobs", "-S", "--sshlogin", "--joblog", "-a", "--arg-file", "--colsep", "-d", "--delimiter", "-I"})
        | frozenset({"--results", "--tmpdir", "--timeout", "-n", "--max-args", "-N", "-L", "--max-lines", "--sshloginfile"}),
        frozenset({"--workdir", "--wd"}),
    ),
}
#: ``timeout DURATION cmd``, ``flock FILE cmd``: one positional before the command.
_ONE_POSITIONAL = frozenset({"timeout", "flock"})

#: ``TOOL run [options] cmd``: ``tool -> (options taking a value, options moving the cwd)``.
RUNNERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "uv": (
        frozenset(
            {
                "--with",
                "--with-editable",
                "--with-requirements",
                "-p",
                "--python",
                "--project",
                "--package",
                "--env-file",
                "--extra",
                "--group",
                "--only-group",
                "--no-group",
                "--index",
                "--default-index",
                "--index-url",
                "--extra-index-url",
                "-f",
                "--find-links",
                "--index-strategy",
                "--keyring-provider",
                "--config-file",
                "--cache-dir",
                "--color",
                "--no-extra",
                "-C",
                "--config-setting",
                "--exclude-newer",
                "--prerelease",
                "--resolution",
                "--link-mode",
                "--refresh-package",
                "--reinstall-package",
                "--upgrade-package",
                "-P",
                "--no-binary-package",
                "--no-build-package",
                "-m",
                "--module",
            }
        ),
        frozenset({"--directory"}),
    ),
    "uvx": (frozenset({"--with", "--from", "-p", "--python", "--index", "--index-url", "--extra-index-url"}), frozenset()),
    "pixi": (frozenset({"-e", "--environment", "--manifest-path", "--color"}), frozenset()),
    "conda": (frozenset({"-n", "--name", "-p", "--prefix"}), frozenset({"--cwd"})),
    "mamba": (frozenset({"-n", "--name", "-p", "--prefix"}), frozenset({"--cwd"})),
    "micromamba": (frozenset({"-n", "--name", "-p", "--prefix", "-r", "--root-prefix"}), frozenset({"--cwd"})),
    "poetry": (frozenset({"-P", "--project", "-C", "--directory"}), frozenset()),
    "pipenv": (frozenset(), frozenset()),
    "pdm": (frozenset({"-p", "--project"}), frozenset()),
    "hatch": (frozenset({"-e", "--env"}), frozenset()),
    "rye": (frozenset(), frozenset()),
    "pipx": (frozenset({"--spec", "--python", "--pip-args", "--index-url"}), frozenset()),
}


_FIND_EXEC = ("-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch")
_SPLITS = ("-S", "--split-string")


def skip_assignments(words: list[str]) -> list[str]:
    """``words`` without the leading ``VAR=value`` assignments."""
    i = 0
    while i < len(words) and "=" in words[i] and words[i].split("=", 1)[0].isidentifier():
        i += 1
    return words[i:]


def unwrap(words: list[str], cwd: str) -> Iterator[tuple[list[str], str, str | None]]:
    """The command itself, then each program it runs through a wrapper, with its directory and the wrapper's name.

    Example:
        >>> [(argv, via) for argv, _, via in unwrap(["sudo", "env", "-S", "python -u x.py"], "/w")][1:]
        [(['env', '-S', 'python -u x.py'], 'sudo'), (['python', '-u', 'x.py'], 'env')]
    """
    via: str | None = None
    seen = 0
    while words and seen < 16:
        seen += 1
        yield words, cwd, via
        name = os.path.basename(words[0])
        via = name
        if name == "env":
            words, cwd = _env(words[1:], cwd)
        elif name in WRAPPERS:
            words, cwd = _after_options(words[1:], *WRAPPERS[name], cwd, name in _ONE_POSITIONAL)
            if name == "parallel":
                words = words[: next((i for i, w in enumerate(words) if w.startswith("::::") or w in (":::", ":::+")), len(words))]
        elif name in RUNNERS and len(words) > 1:
            rest = words[1:]
            values, moves = RUNNERS[name]
            rest, cwd = _leading_options(rest, values, moves, cwd)  # `uv --directory d run x`
            if not rest or rest[0] not in ("run", "exec", "x", "tool"):
                return
            if name == "uvx" or rest[0] == "tool":
                rest = rest[1:] if rest[:1] == ["tool"] and rest[1:2] == ["run"] else rest
            module = _module_option(rest[1:]) if name == "uv" else None
            words, cwd = _after_options(rest[1:], values, moves, cwd, False)
            if module is not None:  # `uv run -m mod`: the project's python runs the module
                words = ["python", "-m", module, *words]
        elif name == "uvx":
            words, cwd = _after_options(words[1:], *RUNNERS["uvx"], cwd, False)
        elif name in ("find", "fd") and any(w in _FIND_EXEC for w in words):
            flag = next(w for w in words if w in _FIND_EXEC)
            rest = words[words.index(flag) + 1 :]
            words = rest[: next((i for i, w in enumerate(rest) if w in (";", "+", "\\;")), len(rest))]
        else:
            return


def _env(words: list[str], cwd: str) -> tuple[list[str], str]:
    """``env``'s options (``-S 'cmd args'`` splits its value into words, read again), then its assignments."""
    values, moves = WRAPPERS["env"]
    i = rounds = 0
    while i < len(words) and words[i].startswith("-") and words[i] not in ("-", "--") and rounds < 64:
        rounds += 1
        word = words[i]
        flag, eq, value = word.partition("=")
        if flag == "--split-string" or word.startswith("-S"):
            attached = bool(eq) if word.startswith("--") else len(word) > 2
            text = (value if word.startswith("--") else word[2:]) if attached else (words[i + 1] if i + 1 < len(words) else "")
            words = [*words[:i], *_split(text), *words[i + (1 if attached else 2) :]]
            continue  # the split words may hold options and assignments again
        i, cwd = _past_option(words, i, values, moves, cwd)
    words = words[i:]
    if words[:1] == ["--"]:
        words = words[1:]
    return skip_assignments(words), cwd


def _split(text: str) -> list[str]:
    import shlex

    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: as the whitespace cuts it
        return text.split()


def _module_option(words: list[str]) -> str | None:
    for i, word in enumerate(words):
        if not word.startswith("-"):
            return None
        if word in ("-m", "--module"):
            return words[i + 1] if i + 1 < len(words) else None
        if word.startswith("--module="):
            return word.split("=", 1)[1]
    return None


def _leading_options(words: list[str], values: frozenset[str], moves: frozenset[str], cwd: str) -> tuple[list[str], str]:
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        i, cwd = _past_option(words, i, values, moves, cwd)
    return words[i:], cwd


def _past_option(words: list[str], i: int, values: frozenset[str], moves: frozenset[str], cwd: str) -> tuple[int, str]:
    """The index after the option at ``words[i]`` (and its value, when it takes one); an option in ``moves`` changes ``cwd``."""
    flag, eq, value = words[i].partition("=")
    if flag in values or flag in moves:
        if not eq:
            i += 1
            value = words[i] if i < len(words) else ""
        if flag in moves and value:
            cwd = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
    return i + 1, cwd


def _after_options(
    words: list[str], values: frozenset[str], moves: frozenset[str], cwd: str, one_positional: bool
) -> tuple[list[str], str]:
    """Skip a wrapper's options (``--`` ends them) and, for ``timeout``/``flock``, its one positional."""
    words, cwd = _leading_options(words, values, moves, cwd)
    if words[:1] == ["--"]:
        words = words[1:]
    if one_positional and words:
        words = words[1:]
    return words, cwd
