"""What a guard's answer looks like to its host: exit status, stdout and stderr.

One contract for every host (see ``docs/guards.md``):

- **allow**: exit 0, nothing on stdout.
- **deny** (before a tool runs): exit 2, the reason on stderr, and on stdout
  ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "permissionDecision": "deny", "permissionDecisionReason": REASON}}``.
  Claude Code and Codex both document exit 2 with the reason on stderr as a
  block that shows the reason to the model; the JSON is the same decision
  for a plugin (OpenCode, DSH) that reads stdout, and is what upstream's
  hook entries printed, so their plugins keep working.
- **context** (after a tool ran): exit 0 and
  ``{"hookSpecificOutput": {"hookEventName": "PostToolUse",
  "additionalContext": TEXT}}``, which Claude Code and Codex add to the
  model's context.
- **a failure inside the guard** (bad JSON, a shape we do not know, a parser
  error, an unreadable file, a crash): allow, with one line on stderr. Exit
  status 0, never 2: a guard that cannot decide must not block the agent.
"""

from __future__ import annotations

import json
import re

__all__ = ["Decision", "render_decision"]


class Decision:
    """A guard's answer: ``allow``, ``deny`` (with a reason) or ``context`` (with text for the model)."""

    __slots__ = ("kind", "text", "note")

    def __init__(self, kind: str, text: str = "", note: str = "") -> None:
        self.kind = kind
        self.text = text
        self.note = note

    @classmethod
    def allow(cls, note: str = "") -> Decision:
        return cls("allow", "", note)

    @classmethod
    def deny(cls, reason: str) -> Decision:
        return cls("deny", reason)

    @classmethod
    def context(cls, text: str) -> Decision:
        return cls("context", text)

    def __repr__(self) -> str:
        return f"Decision({self.kind!r}, {self.text!r})"


def render_decision(decision: Decision, name: str) -> tuple[int, str, str]:
    """``(exit status, stdout, stderr)`` for ``decision`` of hook ``name``.

    Example:
        >>> render_decision(Decision.allow(), "notebook-exec-guard")
        (0, '', '')
        >>> status, out, err = render_decision(Decision.deny("use j-cli exec"), "notebook-exec-guard")
        >>> status, json.loads(out)["hookSpecificOutput"]["permissionDecision"], err
        (2, 'deny', 'notebook-exec-guard: use j-cli exec\\n')
    """
    note = f"{name}: {_printable(decision.note)}\n" if decision.note else ""
    if decision.kind == "deny":
        decision = Decision.deny(_printable(decision.text))
        body = {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": decision.text}
        return 2, json.dumps({"hookSpecificOutput": body}, ensure_ascii=False) + "\n", f"{name}: {decision.text}\n"
    if decision.kind == "context":
        body = {"hookEventName": "PostToolUse", "additionalContext": _printable(decision.text)}
        return 0, json.dumps({"hookSpecificOutput": body}, ensure_ascii=False) + "\n", note
    return 0, "", note


_SURROGATE = re.compile("[\ud800-\udfff]")


def _printable(text: str) -> str:
    """``text`` as UTF-8 can carry it: a path's byte that is not UTF-8 (a ``surrogateescape``) as ``\\xNN``, any other
    lone surrogate as U+FFFD; the same on stdout and stderr."""

    def spell(match: re.Match[str]) -> str:
        code = ord(match.group(0))
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"

    return _SURROGATE.sub(spell, text)
