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
A tool we do not know is kind ``other`` (never an error: the guards allow it).
Imports nothing heavy: it runs before every tool call.

**Bytes that are not UTF-8** never make a payload unreadable: they are
decoded with ``surrogateescape``, so a path holding them still names the
real file (:func:`fs_spellings`). A payload that is not valid JSON (a stray
byte between tokens, a truncated document) or is too large to load
(:data:`MAX_PAYLOAD`) is read by :func:`scan_fields`: the fields the guards
use (tool, cwd, paths, command, the patch's file lines) are picked out of
the text, so the guards still decide on what can be read. Only a payload
where nothing can be found raises :class:`PayloadError`.
"""

from __future__ import annotations

import json
import os
import re

__all__ = [
    "KINDS",
    "MAX_PAYLOAD",
    "PLATFORMS",
    "PayloadError",
    "ToolCall",
    "call_from_fields",
    "fs_spellings",
    "parse_payload",
    "patch_paths",
    "scan_fields",
]

#: What a tool call does, as the guards see it.
KINDS = ("shell", "edit", "write", "notebook_edit", "patch", "other")
#: The hosts ``--platform`` names (upstream's three, and OpenCode by its own name): the
#: client's host table's names (``jcli.setup.hosts``; a test holds them equal, so a hook stays lean).
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
#: A payload larger than this is not loaded as JSON; its fields are scanned (:func:`scan_fields`) as it streams by.
MAX_PAYLOAD = 32 * 1024 * 1024
#: A field's value longer than this is read up to here (a command that long is decided on its start).
_VALUE_LIMIT = 256 * 1024
# The scanning patterns are compiled at their first use (``re``'s own cache keeps them),
# not at import: a plain JSON payload without a patch, the usual case, never pays.
_FIELD = (
    r'(?<!\\)"(tool_name|toolName|tool|cwd|hook_event_name|command|cmd|workdir|file_path|filePath|notebook_path|notebookPath|path|filename'
    r'|patch|patchText|patch_text|input)"\s*:\s*"((?:[^"\\]|\\.){0,' + str(_VALUE_LIMIT) + "})"
)
_ESCAPED_PATCH_LINE = r"\*\*\* (Update|Add|Delete) File: ((?:[^\\\n\"]|\\[^n])+)|\*\*\* Move to: ((?:[^\\\n\"]|\\[^n])+)"
_SURROGATE = re.compile("[\ud800-\udfff]")
_PATCH_LINE = r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"


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
    """Read a hook payload of any supported host (bytes that are not UTF-8 included).

    Raises:
        PayloadError: neither JSON nor text holding a tool call's fields, or a JSON value that is not an object.

    Example:
        >>> call = parse_payload('{"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/w"}')
        >>> call.kind, call.command, call.cwd
        ('shell', 'ls', '/w')
        >>> parse_payload('{"tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\\\\n*** Update File: a.ipynb\\\\n"}, "cwd": "/w"}').paths
        ('/w/a.ipynb',)
        >>> parse_payload(b'{"tool_name": "Bash", \\xff "tool_input": {"command": "python a.py"}}').command
        'python a.py'
    """
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    text = text.removeprefix("\ufeff")
    try:
        doc = json.loads(text, strict=False)
    except (ValueError, RecursionError) as exc:
        fields = scan_fields(text)
        if not fields:
            raise PayloadError(f"the payload is not JSON ({type(exc).__name__})") from None
        return call_from_fields(fields)
    if not isinstance(doc, dict):
        raise PayloadError(f"the payload is a JSON {type(doc).__name__}, not an object")
    return _call(doc)


def scan_fields(text: str, fields: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Pick a tool call's fields out of text that does not load as JSON (or a slice of a huge payload).

    Returns ``{key: [values…]}`` (added to ``fields`` when given): string values of the keys the
    guards read, each up to 256 KiB, and, under ``*patch``, the patch body's file lines.

    Example:
        >>> scan_fields('{"tool_name": "Write", "tool_input": {"file_path": "a.ipynb", \\x01 "content": "x"}')
        {'tool_name': ['Write'], 'file_path': ['a.ipynb']}
    """
    found: dict[str, list[str]] = {} if fields is None else fields
    for match in re.finditer(_FIELD, text, re.DOTALL):
        value = _json_string(match.group(2))
        values = found.setdefault(match.group(1), [])
        if value not in values and len(values) < 64:
            values.append(value)
    lines = found.setdefault("*patch", [])
    for match in re.finditer(_ESCAPED_PATCH_LINE, text):
        line = (
            f"*** {match.group(1)} File: {_json_string(match.group(2))}"
            if match.group(1)
            else f"*** Move to: {_json_string(match.group(3))}"
        )
        if line not in lines and len(lines) < 1024:
            lines.append(line)
    if not lines:
        del found["*patch"]
    return found


def call_from_fields(fields: dict[str, list[str]]) -> ToolCall:
    """The :class:`ToolCall` of fields :func:`scan_fields` found (the first value of each; every path).

    Raises:
        PayloadError: no tool name among them.
    """
    tool = next((fields[key][0] for key in ("tool_name", "tool", "toolName") if fields.get(key)), None)
    if tool is None:
        raise PayloadError("the payload is not JSON, and no tool name can be read in it")
    args: dict[str, object] = {key: values[0] for key, values in fields.items() if key in _PATH_KEYS + ("command", "cmd", "workdir")}
    if "*patch" in fields:
        args = {**args, "command": "\n".join(fields["*patch"])}
    doc: dict[str, object] = {"tool_name": tool, "tool_input": args, "cwd": (fields.get("cwd") or [""])[0]}
    call = _call(doc)
    if call.kind in ("edit", "write", "notebook_edit"):  # every path named: which one is the call's own cannot be told
        cwd = call.cwd
        call.paths = tuple(dict.fromkeys(_absolute(p, cwd) for key in _PATH_KEYS for p in fields.get(key, []) if p))
    return call


def _json_string(body: str) -> str:
    """A JSON string's content (a value cut short loses its unfinished escape at the end)."""
    for cut in range(0, 7):
        try:
            value = json.loads(f'"{body[: len(body) - cut]}"', strict=False)
            return value if isinstance(value, str) else ""
        except ValueError:
            continue
    return body


def fs_spellings(path: str) -> list[str]:
    """The spellings of ``path`` the file system can be asked about, in order.

    A lone surrogate in a path is either a raw byte that is not UTF-8 (how
    this module decodes one, ``surrogateescape``: the path names that exact
    file) or a JSON ``\\udXXX`` escape from a host whose string held a broken
    character, which a JavaScript host writes to disk as U+FFFD. Both are
    tried; a spelling the file system cannot take is left out.

    Example:
        >>> fs_spellings("a.py"), fs_spellings("a\\udcff.py"), fs_spellings("a\\ud800.py")
        (['a.py'], ['a\\udcff.py', 'a\\ufffd.py'], ['a\\ufffd.py'])
    """
    if not _SURROGATE.search(path):
        return [path]
    out: list[str] = []
    try:
        os.fsencode(path)
        out.append(path)
    except UnicodeError:
        pass
    out.append(_SURROGATE.sub("\ufffd", path))
    return out


def _fs_path(path: str) -> str:
    """The spelling of ``path`` that exists (:func:`fs_spellings`), else the first the file system can take."""
    spellings = fs_spellings(path)
    return next((s for s in spellings if os.path.lexists(s)), spellings[0])


def _call(doc: dict[str, object]) -> ToolCall:
    tool = doc.get("tool_name", doc.get("tool", doc.get("toolName")))
    args = doc.get("tool_input", doc.get("args", doc.get("toolArgs", doc.get("input"))))
    tool = tool if isinstance(tool, str) else ""
    args = args if isinstance(args, dict) else {}
    given = doc.get("cwd")
    base = given if isinstance(given, str) and given else os.getcwd()
    cwd = os.path.abspath(base)
    workdir = args.get("workdir", args.get("cwd"))
    if isinstance(workdir, str) and workdir:
        cwd = os.path.normpath(os.path.join(cwd, os.path.expanduser(workdir)))
    cwd = _fs_path(cwd)
    event = doc.get("hook_event_name")
    event = event if isinstance(event, str) else None
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
    for match in re.finditer(_PATCH_LINE, body, re.MULTILINE):
        path = _absolute(match.group(1) or match.group(2), cwd)
        if path not in found:
            found.append(path)
    return tuple(found)


def _absolute(path: str, cwd: str) -> str:
    return _fs_path(os.path.normpath(os.path.join(cwd, os.path.expanduser(path))))
