"""Latency of the agent guard a host runs before every shell call: ``j-cli _hooks notebook-exec-guard``.

A host such as Claude Code starts the hook as a new process for every Bash
call, the call as JSON on stdin, so its whole-process time is what the agent
pays each time. Five commands run interleaved, round-robin, in one loop,
each fed its payload on stdin:

* ours unrelated -- our hook on ``make -j4 && git status`` (nothing to do
                    with notebooks: decided on the raw text, without the
                    shell parser, click or nbformat);
* ours notebook  -- our hook on ``uv run papermill analysis.ipynb out.ipynb``
                    (plain words: split without the parser, and denied: exit 2);
* ours notebook, parsed -- our hook on ``cd sub && uv run papermill 'analysis.ipynb' out.ipynb``
                    (read by the shell parser, and denied: exit 2);
* upstream       -- ``jupyter-jcli`` 0.9.7's same hook on the unrelated
                    payload, in its scratch venv;
* floor          -- the project interpreter importing what a lean client
                    needs (``socket, msgpack, json, base64``): starting
                    Python at all.

The targets compare medians from the same run: ours unrelated / floor <= 1.3,
and ours notebook / floor <= 1.5, parsed or not: a line that names a notebook
runner and is more than plain words is parsed with bashlex, whose parse
tables ship ready (``jcli_sidecar.guards.shell_tables``) instead of being
built at its import.
Nothing is asserted; the script exits non-zero only if our hook answers
wrongly (not 0 on the unrelated payload, not 2 on the notebook ones).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from harness import (
    FLOOR_ARGV,
    J_CLI,
    WORK,
    BenchError,
    bare_env,
    ensure_upstream,
    medians,
    print_targets,
    rotated,
    stats_header,
    stats_row,
    timed,
)

UNRELATED, NOTEBOOK, PARSED, UPSTREAM, FLOOR = "ours unrelated", "ours notebook", "ours notebook, parsed", "upstream", "floor"
TARGETS = [(UNRELATED, FLOOR, "<=", 1.3), (NOTEBOOK, FLOOR, "<=", 1.5), (PARSED, FLOOR, "<=", 1.5), (UPSTREAM, UNRELATED, ">=", 1.0)]
WARMUP = 2


def payload(command: str) -> bytes:
    """A Claude Code PreToolUse payload for a Bash call of ``command``."""
    doc = {
        "session_id": "bench",
        "transcript_path": str(WORK / "transcript.jsonl"),
        "cwd": str(WORK),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "bench"},
        "tool_use_id": "toolu_bench",
    }
    return json.dumps(doc).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed rounds (each runs every command once)")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    env = bare_env(WORK / "runtime-hooks")
    unrelated = payload("make -j4 && git status")
    notebook = payload("uv run papermill analysis.ipynb out.ipynb")
    parsed = payload("cd sub && uv run papermill 'analysis.ipynb' out.ipynb")
    hook = [str(J_CLI), "_hooks", "notebook-exec-guard", "--platform", "claude"]
    commands: dict[str, tuple[list[str], bytes, int]] = {
        UNRELATED: (hook, unrelated, 0),
        NOTEBOOK: (hook, notebook, 2),
        PARSED: (hook, parsed, 2),
        FLOOR: (FLOOR_ARGV, b"", 0),
    }
    upstream = ensure_upstream()
    if upstream is not None:
        commands[UPSTREAM] = ([str(upstream), "_hooks", "notebook-exec-guard", "--platform", "claude"], unrelated, 0)
    else:
        print("note: upstream unavailable; its line is skipped")

    def once(name: str) -> float:
        argv, stdin, expected = commands[name]
        ms, proc = timed(subprocess.run, argv, input=stdin, capture_output=True, cwd=WORK, env=env)
        if name != UPSTREAM and proc.returncode != expected:
            raise BenchError(f"{name}: exit {proc.returncode}, expected {expected}: {proc.stderr.decode()[-300:]}")
        return ms

    names = list(commands)
    for _ in range(WARMUP):
        for name in names:
            once(name)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(args.runs):
        for name in rotated(names, i):
            samples[name].append(once(name))
    width = 24
    print(f"j-cli _hooks notebook-exec-guard, whole process, {args.runs} rounds")
    print(stats_header("command", width))
    for name in names:
        print(stats_row(name, samples[name], width, 1))
    values = medians(samples)
    print_targets(values, TARGETS, 34)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
