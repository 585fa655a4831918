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
#: The scan of an oversized payload stops after this much; the guard decides on the fields found so far.
MAX_SCAN = 512 * 1024 * 1024
_CHUNK = 1024 * 1024
_OVERLAP = 300 * 1024  # more than one field's value (256 KiB): a field cut by a chunk's end is whole in the next


def run_hook(argv: list[str]) -> int | None:
    """Run hook ``argv[0]`` with the payload on stdin; None hands the command to click.

    Returns the exit status (0 allow or context, 2 deny).
    """
    if not argv or argv[0].startswith("-") or argv[0] in PASS_THROUGH:
        return None
    name, options = argv[0], argv[1:]
    from jcli_sidecar.guards import GUARDS, PLATFORMS

    if "--help" in options or "-h" in options:
        known = GUARDS.get(name)
        print(f"Usage: j-cli _hooks {name} [--platform {'|'.join(PLATFORMS)}] [--debug]\n\n  {known.doc if known else 'not a j-cli hook'}")
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


def _stdin() -> tuple[bytes, object]:
    """The payload (up to ``MAX_PAYLOAD`` + 1 bytes) and the stream, for the rest of an oversized one."""
    from jcli_sidecar.guards import MAX_PAYLOAD

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None or sys.stdin.isatty():
        return b"", None
    return stream.read(MAX_PAYLOAD + 1), stream


def _decide(name: str, stdin: tuple[bytes, object], debug: bool) -> Decision:
    from jcli_sidecar.guards import GUARDS, MAX_PAYLOAD, Decision, PayloadError, call_from_fields, parse_payload

    guard = GUARDS[name]
    if guard.event is None:
        return Decision.allow()
    raw, stream = stdin
    note = ""
    if not raw.strip():
        return Decision.allow("allowed: no payload on stdin")
    try:
        if len(raw) > MAX_PAYLOAD:
            size, fields = _scan_oversized(raw, stream)
            note = f"the payload is larger than {MAX_PAYLOAD >> 20} MiB: decided on the fields read from its first {size >> 20} MiB"
            call = call_from_fields(fields)
        else:
            call = parse_payload(raw)
    except PayloadError as exc:
        return Decision.allow(f"allowed: {exc}" + (f" ({note})" if note else ""))
    if debug:
        print(f"{name}: {call!r}", file=sys.stderr)
    decision = guard.decide(call)
    if note and decision.kind != "deny":
        decision.note = (decision.note + "; " if decision.note else "") + note
    return decision


def _scan_oversized(head: bytes, stream: object) -> tuple[int, dict[str, list[str]]]:
    """Scan an oversized payload chunk by chunk (bounded memory, at most :data:`MAX_SCAN`) for the fields the guards read."""
    from jcli_sidecar.guards import scan_fields

    fields: dict[str, list[str]] = {}
    size = len(head)
    tail = b""
    chunks = [head[i : i + _CHUNK] for i in range(0, len(head), _CHUNK)]
    del head
    while True:
        for chunk in chunks:
            window = tail + chunk
            scan_fields(window.decode("utf-8", "surrogateescape"), fields)
            tail = window[-_OVERLAP:]
        if size >= MAX_SCAN or stream is None:
            break
        more = stream.read(_CHUNK)  # type: ignore[attr-defined]
        if not more:
            break
        size += len(more)
        chunks = [more]
    return size, fields


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] + ("…" if len(text) > 200 else "")


def _write(stream, text: str) -> None:
    """Write ``text`` as UTF-8; a lone surrogate (a path's byte that is not UTF-8) becomes its ``\\udcXX`` escape,
    which is that same character in the JSON on stdout, and readable on stderr."""
    if not text:
        return
    data = text.encode("utf-8", "backslashreplace")
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(data.decode("utf-8"))
            stream.flush()
            return
        stream.flush()
        buffer.write(data)
        buffer.flush()
    except (OSError, ValueError):  # a closed pipe: the host went away; nothing left to tell
        pass
