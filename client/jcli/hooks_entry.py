"""``j-cli _hooks NAME [--platform P] [--debug]``: the agent guards, without click.

A host runs one of these before (or after) every tool call, with the call
as JSON on stdin, so this path stays lean: it imports the payload reader
and the rule it needs, and the shell parser only when the command's text
could matter. The names are upstream's (``jupyter-jcli`` 0.9.7), so hook
entries it installed keep working unchanged; ``pre-commit-pair-sync`` is a
git hook with a command of its own in the click app (None here: click runs
it). An unknown name, odd arguments, unreadable stdin or any failure
inside a guard allows the call with one line on stderr: a guard never
blocks by accident. The contract per host is in ``docs/guards.md``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jcli_sidecar.guards import Decision

__all__ = ["PASS_THROUGH", "run_hook"]

#: Names the click app runs (a git hook, not an agent guard).
PASS_THROUGH = frozenset({"pre-commit-pair-sync"})
#: The most of stdin a guard reads (an apply_patch body can be large).
MAX_PAYLOAD = 32 * 1024 * 1024


def run_hook(argv: list[str]) -> int | None:
    """Run hook ``argv[0]`` with the payload on stdin; None hands the command to click.

    Returns the exit status (0 allow or context, 2 deny).
    """
    if not argv or argv[0].startswith("-") or argv[0] in PASS_THROUGH:
        return None
    name, options = argv[0], argv[1:]
    from jcli_sidecar.guards import GUARDS

    if "--help" in options or "-h" in options:
        known = GUARDS.get(name)
        print(
            f"Usage: j-cli _hooks {name} [--platform claude|codex|dsh|opencode] [--debug]\n\n  {known.doc if known else 'not a j-cli hook'}"
        )
        return 0
    debug = "--debug" in options
    from jcli_sidecar.guards import Decision, render_decision

    try:
        if name not in GUARDS:
            decision = Decision.allow(f"not a j-cli hook name; allowed (known: {', '.join(GUARDS)})")
        else:
            platform = _platform(options)
            decision = _decide(name, _stdin(), debug)
            if platform is None:
                decision.note = (decision.note + "; " if decision.note else "") + "unknown --platform, read as claude"
    except Exception as exc:  # a guard that cannot decide allows: never an accidental block
        decision = Decision.allow(f"allowed: the guard failed ({type(exc).__name__}: {_short(exc)})")
    status, out, err = render_decision(decision, name)
    _write(sys.stdout, out)
    _write(sys.stderr, err)
    return status


def _platform(options: list[str]) -> str | None:
    from jcli_sidecar.guards import PLATFORMS

    value = "claude"
    for i, opt in enumerate(options):
        if opt == "--platform" and i + 1 < len(options):
            value = options[i + 1]
        elif opt.startswith("--platform="):
            value = opt.split("=", 1)[1]
    return value if value in PLATFORMS else None


def _stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None or sys.stdin.isatty():
        return b""
    return stream.read(MAX_PAYLOAD + 1)


def _decide(name: str, raw: bytes, debug: bool) -> Decision:
    from jcli_sidecar.guards import GUARDS, Decision, PayloadError, parse_payload

    guard = GUARDS[name]
    if guard.event is None:
        return Decision.allow()
    if len(raw) > MAX_PAYLOAD:
        return Decision.allow(f"allowed: the payload is larger than {MAX_PAYLOAD >> 20} MiB")
    if not raw.strip():
        return Decision.allow("allowed: no payload on stdin")
    try:
        call = parse_payload(raw)
    except PayloadError as exc:
        return Decision.allow(f"allowed: {exc}")
    if debug:
        print(f"{name}: {call!r}", file=sys.stderr)
    return guard.decide(call)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] + ("…" if len(text) > 200 else "")


def _write(stream, text: str) -> None:
    if not text:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # a closed pipe: the host went away; nothing left to tell
        pass
