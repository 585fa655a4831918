"""A host's hook payload (JSON on stdin) as one neutral tool call.

Every host j-cli guards sends a tool call before (and after) it runs, as a
JSON object on the hook's stdin. The shapes differ a little:

- **Claude Code** (``PreToolUse``/``PostToolUse``): ``tool_name`` (``Bash``,
  ``Edit``, ``MultiEdit``, ``Write``, ``NotebookEdit`` …), ``tool_input``
  (``command``; ``file_path``; ``notebook_path``), ``cwd``,
  ``hook_event_name``.
- **Codex** (``hooks.json``): the same envelope; ``Bash`` carries the command
  line in ``tool_input.command`` (older builds an argv list such as
  ``["bash", "-lc", "…"]``, and ``workdir``), ``apply_patch`` the patch body
  in ``tool_input.command`` (``*** Update File: PATH`` lines).
- **OpenCode** and **DSH** (through j-cli's plugins): the same envelope with
  their own tool names (``bash``, ``edit``, ``write``, ``apply_patch`` …) and
  ``filePath``/``path`` for files; OpenCode's own ``{"tool", "args"}`` is
  read too.

:func:`parse_payload` turns any of them into a :class:`ToolCall`: its kind
(:data:`KINDS`), the shell text, the absolute paths it touches and its cwd.
A payload that is not a JSON object raises :class:`PayloadError`; a tool we
do not know is kind ``other`` (never an error: the guards allow it).
Imports nothing heavy: it runs before every tool call.
"""

from __future__ import annotations

import json
import os
import re

__all__ = ["KINDS", "PLATFORMS", "PayloadError", "ToolCall", "parse_payload", "patch_paths"]

#: What a tool call does, as the guards see it.
KINDS = ("shell", "edit", "write", "notebook_edit", "patch", "other")
#: The hosts ``--platform`` names (upstream's three, and OpenCode by its own name): the
#: host table's names (``read.host_profiles``; a test holds them equal, so a hook stays lean).
PLATFORMS = ("claude", "codex", "dsh", "opencode")

_TOOL_KINDS = {
    "bash": "shell",
    "shell": "shell",
    "exec_command": "shell",
    "local_shell": "shell",
    "container.exec": "shell",
    "shell_command": "shell",
    "run_shell_command": "shell",
    "edit": "edit",
    "multiedit": "edit",
    "multi_edit": "edit",
    "edit_file": "edit",
    "str_replace_based_edit_tool": "edit",
    "write": "write",
    "write_file": "write",
    "create_file": "write",
    "notebookedit": "notebook_edit",
    "notebook_edit": "notebook_edit",
    "apply_patch": "patch",
    "applypatch": "patch",
    "patch": "patch",
}
_PATH_KEYS = ("file_path", "filePath", "notebook_path", "notebookPath", "path", "filename")
_PATCH_KEYS = ("command", "patch", "patchText", "patch_text", "input")
_PATCH_LINE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)


class PayloadError(ValueError):
    """The hook's stdin is not a JSON object of a tool call."""


class ToolCall:
    """One tool call, host-neutral.

    Attributes:
        kind: one of :data:`KINDS`.
        tool: the host's tool name as sent.
        command: the shell text (``shell``), else None.
        paths: absolute paths the call writes (edit, write, notebook_edit, patch).
        cwd: the directory the call runs in (absolute).
        event: ``hook_event_name`` when the host sends one.
    """

    __slots__ = ("kind", "tool", "command", "paths", "cwd", "event")

    def __init__(self, kind: str, tool: str, command: str | None, paths: tuple[str, ...], cwd: str, event: str | None) -> None:
        self.kind = kind
        self.tool = tool
        self.command = command
        self.paths = paths
        self.cwd = cwd
        self.event = event

    def __repr__(self) -> str:
        return f"ToolCall({self.kind!r}, tool={self.tool!r}, command={self.command!r}, paths={self.paths!r}, cwd={self.cwd!r})"


def parse_payload(raw: bytes | str) -> ToolCall:
    """Read a hook payload of any supported host.

    Raises:
        PayloadError: not JSON, or not an object.

    Example:
        >>> call = parse_payload('{"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/w"}')
        >>> call.kind, call.command, call.cwd
        ('shell', 'ls', '/w')
        >>> parse_payload('{"tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\\\\n*** Update File: a.ipynb\\\\n"}, "cwd": "/w"}').paths
        ('/w/a.ipynb',)
    """
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise PayloadError(f"the payload is not JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise PayloadError(f"the payload is a JSON {type(doc).__name__}, not an object")
    tool = doc.get("tool_name", doc.get("tool", doc.get("toolName")))
    args = doc.get("tool_input", doc.get("args", doc.get("toolArgs", doc.get("input"))))
    tool = tool if isinstance(tool, str) else ""
    args = args if isinstance(args, dict) else {}
    base = doc.get("cwd") if isinstance(doc.get("cwd"), str) and doc.get("cwd") else os.getcwd()
    cwd = os.path.abspath(base)
    workdir = args.get("workdir", args.get("cwd"))
    if isinstance(workdir, str) and workdir:
        cwd = os.path.normpath(os.path.join(cwd, os.path.expanduser(workdir)))
    event = doc.get("hook_event_name") if isinstance(doc.get("hook_event_name"), str) else None
    kind = _TOOL_KINDS.get(tool.lower(), "other")
    if kind == "other" and tool.startswith("mcp__"):
        return ToolCall("other", tool, None, (), cwd, event)
    if kind == "shell":
        return ToolCall(kind, tool, _command_text(args.get("command", args.get("cmd"))), (), cwd, event)
    if kind == "patch":
        body = next((_patch_body(args[key]) for key in _PATCH_KEYS if key in args), "")
        return ToolCall(kind, tool, None, patch_paths(body, cwd), cwd, event)
    paths = tuple(_absolute(args[key], cwd) for key in _PATH_KEYS if isinstance(args.get(key), str) and args[key])
    return ToolCall(kind, tool, None, paths[:1], cwd, event)


def _command_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        import shlex

        return shlex.join(value)  # ["bash", "-lc", "…"] reads back as that argv, and the shell parser recurses into it
    return None


def _patch_body(value: object) -> str:
    if isinstance(value, list):  # ["apply_patch", "*** Begin Patch …"]
        return "\n".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def patch_paths(body: str, cwd: str) -> tuple[str, ...]:
    """The files an ``apply_patch`` body adds, updates, deletes or moves to, absolute.

    Example:
        >>> patch_paths("*** Begin Patch\\n*** Update File: a.py\\n*** Move to: b.py\\n*** End Patch", "/w")
        ('/w/a.py', '/w/b.py')
    """
    found: list[str] = []
    for match in _PATCH_LINE.finditer(body):
        path = _absolute(match.group(1) or match.group(2), cwd)
        if path not in found:
            found.append(path)
    return tuple(found)


def _absolute(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
