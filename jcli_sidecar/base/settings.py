"""Every ``JCLI_*`` environment variable j-cli reads, declared once, and the one rule that reads it.

A setting is a row of :data:`SETTINGS`: its name, what it holds, its bounds,
its default and what it does (``make docs`` writes
``docs/reference/settings.md`` from these rows). :func:`setting` reads one, from the environment or a given mapping:

- A number is plain ASCII decimal (``2``, ``0.5``, ``1e3``; surrounding
  blanks are ignored), finite, and within the row's bounds; where the row
  allows it, ``none`` means no limit (read as None). An integer is digits.
- A bad value never crashes a command. A setting that decides what a
  command does for its caller (``on_bad="error"``: the exec timeout, the
  retention limits) refuses it with a ``UsageError`` that names the variable,
  before anything runs. Any other keeps its default and says so once per
  process, as a warning (on stderr, or in the sidecar's log).

Rows marked ``internal`` are switches for j-cli's own tests and its spawner;
they are declared here so that every name is, and the reference only names them.
"""

from __future__ import annotations

import math
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["OFF_VALUES", "SETTINGS", "Setting", "setting"]

#: What turns ``JCLI_SIDECAR`` off (any case).
OFF_VALUES = frozenset({"off", "0", "false", "no", "disabled"})

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_BLANKS = " \t\r\n"
_warned: set[tuple[str, str]] = set()


class Setting:
    """One environment variable.

    Attributes:
        kind: ``number`` (a float), ``integer``, ``switch`` (on unless one of
            :data:`OFF_VALUES`), ``flag`` (set or not), ``text`` or ``secret``
            (text never shown in a message).
        minimum, maximum: inclusive bounds of a number or integer;
            ``above_minimum`` makes the lower bound exclusive (``> 0``).
        none_ok: ``none`` (and a value equal to ``minimum`` when it is 0) means no limit.
        on_bad: ``error`` (a ``UsageError``) or ``default`` (a warning).
        expect: what a good value is, in the words of an error or warning.
    """

    __slots__ = ("name", "kind", "default", "doc", "minimum", "maximum", "above_minimum", "none_ok", "on_bad", "expect", "internal")

    def __init__(
        self,
        name: str,
        kind: str,
        default: Any,
        doc: str,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        above_minimum: bool = False,
        none_ok: bool = False,
        on_bad: str = "default",
        expect: str = "",
        internal: bool = False,
    ) -> None:
        self.name, self.kind, self.default, self.doc = name, kind, default, doc
        self.minimum, self.maximum, self.above_minimum, self.none_ok = minimum, maximum, above_minimum, none_ok
        self.on_bad, self.expect, self.internal = on_bad, expect, internal

    def parse(self, raw: str) -> Any:
        """The value ``raw`` stands for; ValueError when it is not one."""
        if self.kind in ("text", "secret"):
            return raw
        if self.kind == "flag":
            return bool(raw)
        text = raw.strip(_BLANKS)
        if self.kind == "switch":
            return text.lower() not in OFF_VALUES
        if self.none_ok and text.lower() == "none":
            return None
        pattern = _INTEGER if self.kind == "integer" else _NUMBER
        if not pattern.fullmatch(text):
            raise ValueError(raw)
        value: float | int = int(text) if self.kind == "integer" else float(text)
        if not math.isfinite(value):
            raise ValueError(raw)
        if self.minimum is not None and (value < self.minimum or (self.above_minimum and value == self.minimum)):
            if not (self.none_ok and value == 0 == self.minimum):
                raise ValueError(raw)
        if self.maximum is not None and value > self.maximum:
            raise ValueError(raw)
        if self.none_ok and value == 0:
            return None
        return value


def _number(name: str, default: float, doc: str, **bounds: Any) -> Setting:
    return Setting(name, "number", default, doc, **bounds)


#: Every ``JCLI_*`` variable, by name.
SETTINGS: dict[str, Setting] = {
    row.name: row
    for row in (
        Setting("JCLI_JUPYTER_SERVER_URL", "text", "", "the Jupyter Server to use (like -s); unset: the embedded one"),
        Setting("JCLI_JUPYTER_SERVER_TOKEN", "secret", "", "its token (like -t); never printed"),
        _number(
            "JCLI_EXEC_TIMEOUT",
            600.0,
            "seconds each cell of an exec may run when --timeout is not given; 0 or none: no limit",
            minimum=0,
            maximum=30 * 24 * 3600.0,
            none_ok=True,
            on_bad="error",
            expect="give seconds > 0 (at most 30 days), or 0 or none for no limit",
        ),
        Setting(
            "JCLI_OUTPUT_MAX_AGE_DAYS",
            "integer",
            7,
            "days an inline run is kept (after --max-age-days)",
            minimum=1,
            on_bad="error",
            expect="a positive integer (0 never means 'delete all')",
        ),
        Setting(
            "JCLI_OUTPUT_RETENTION_DAYS",
            "integer",
            7,
            "upstream jupyter-jcli's name for JCLI_OUTPUT_MAX_AGE_DAYS, used when that one is unset",
            minimum=1,
            on_bad="error",
            expect="a positive integer (0 never means 'delete all')",
        ),
        Setting(
            "JCLI_OUTPUT_MAX_RUNS",
            "integer",
            50,
            "completed inline runs kept per directory (after --max-runs)",
            minimum=1,
            on_bad="error",
            expect="a positive integer (0 never means 'delete all')",
        ),
        Setting(
            "JCLI_STAGING_GRACE_SECONDS",
            "integer",
            86400,
            "seconds a half-written run whose writer cannot be checked (no record, another host) is kept before cleaning removes it",
            minimum=60,
            on_bad="error",
            expect="whole seconds >= 60",
        ),
        Setting(
            "JCLI_JOB_OUTPUT_MAX_BYTES",
            "integer",
            64 * 1024 * 1024,
            "bytes of a background job's printed text kept on disk (the newest; what is older is dropped and counted)",
            minimum=4096,
            on_bad="error",
            expect="whole bytes >= 4096",
        ),
        _number(
            "JCLI_CHECKPOINT_SECONDS",
            10.0,
            "how often a long cell's partial outputs are saved into its notebook; 0: at every output",
            minimum=0,
            expect="seconds >= 0",
        ),
        _number(
            "JCLI_WRITEBACK_PACE",
            4.0,
            "how long finished cells of a big notebook may wait to be written together, in last write-backs; 0: each at once",
            minimum=0,
            expect="a number >= 0",
        ),
        _number("JCLI_MAX_FILE_MB", 512.0, "the largest file j-cli reads, in MiB", minimum=0, above_minimum=True, expect="MiB > 0"),
        Setting("JCLI_SIDECAR", "switch", True, "off (or 0, false, no, disabled): never use or start a sidecar"),
        _number(
            "JCLI_SIDECAR_IDLE_SECONDS",
            600.0,
            "a sidecar exits after this long without a request",
            minimum=0,
            above_minimum=True,
            expect="seconds > 0",
        ),
        _number("JCLI_SIDECAR_CACHE_MB", 256.0, "the sidecar's notebook cache, in MiB; 0: no cache", minimum=0, expect="MiB >= 0"),
        _number(
            "JCLI_SIDECAR_RACY_MS",
            1000.0,
            "how long after its timestamps a cached file is checked in full (raise it on coarse file systems)",
            minimum=0,
            expect="milliseconds >= 0",
        ),
        _number(
            "JCLI_SIDECAR_REQUEST_SECONDS",
            60.0,
            "a sidecar request past this deadline is a TIMEOUT, and the sidecar retires",
            minimum=0,
            above_minimum=True,
            expect="seconds > 0",
        ),
        _number(
            "JCLI_GREP_SEARCH_SECONDS",
            20.0,
            "how long the pattern matching of one notebook grep may take (in a worker process) before it is a SEARCH_TOO_COSTLY",
            minimum=0,
            above_minimum=True,
            expect="seconds > 0",
        ),
        _number(
            "JCLI_SIDECAR_HELLO_SECONDS",
            1.0,
            "how long a client waits for a sidecar's hello before reading in-process and leaving that sidecar alone",
            minimum=0,
            above_minimum=True,
            maximum=120.0,
            expect="seconds > 0 (at most 120)",
        ),
        _number(
            "JCLI_MCP_DRAIN_SECONDS",
            10.0,
            "after its client closes stdin, how long j-cli mcp serve waits for calls in flight before answering them TIMEOUT",
            minimum=0,
            maximum=3600.0,
            expect="seconds >= 0 (at most 3600)",
        ),
        Setting(
            "JCLI_LIVE",
            "switch",
            True,
            "whether notebook runs and cell edits write through the notebook's collaboration room when its server has one (off: the file)",
        ),
        _number(
            "JCLI_ROOM_MAX_MB",
            1024.0,
            "the largest message j-cli takes from a notebook's collaboration room (its first sync carries the whole document), in MiB",
            minimum=0,
            above_minimum=True,
            maximum=4096.0,
            expect="MiB > 0 (at most 4096)",
        ),
        _number(
            "JCLI_ROOM_SECONDS",
            20.0,
            "how long joining a notebook's collaboration room may take (the session route, the websocket, the first sync) before the run goes by the file",
            minimum=0,
            above_minimum=True,
            maximum=600.0,
            expect="seconds > 0 (at most 600)",
        ),
        _number(
            "JCLI_CHART_SECONDS",
            30.0,
            "how long rendering one chart (--as image/png on a Vega, Vega-Lite or Plotly output) may take before it is ended: RENDER_TIMEOUT",
            minimum=0,
            above_minimum=True,
            maximum=600.0,
            expect="seconds > 0 (at most 600)",
        ),
        Setting("JCLI_DEBUG", "flag", False, "any value: an INTERNAL_ERROR shows its traceback"),
        Setting("JCLI_BIN", "text", "", "the OpenCode and DSH plugins: the j-cli to run (default: j-cli on PATH)"),
        Setting(
            "JCLI_TEXT_ONLY",
            "text",
            "",
            "the OpenCode plugin: on (or 1, true, yes) tells every image as text (text_only); off (or 0, false, no, disabled) "
            "always sends images; unset: as OpenCode says the session's model takes (images until it has said)",
        ),
        Setting("JCLI_SIDECAR_SPAWN_LOCK_FD", "text", "", "the spawner hands its held spawn lock to the sidecar", internal=True),
        Setting("JCLI_SIDECAR_TEST_STALL_AT", "text", "", "tests: the sidecar step to stall at", internal=True),
        Setting("JCLI_SIDECAR_TEST_STALL_FIFO", "text", "", "tests: the FIFO a stalled sidecar waits on", internal=True),
        Setting("JCLI_SIDECAR_TEST_FLIGHT_SIZE", "text", "", "tests: readers that board one index build", internal=True),
        Setting("JCLI_EXEC_TEST_STALL_AT", "text", "", "tests: the exec step to stall at", internal=True),
        Setting("JCLI_EXEC_TEST_STALL_FIFO", "text", "", "tests: the FIFO a stalled exec waits on", internal=True),
    )
}


def setting(name: str, env: Mapping[str, str] | None = None) -> Any:
    """The value of the setting ``name`` in ``env`` (default: the process environment).

    Unset, empty or blank is the default. A bad value is a ``UsageError`` naming the
    variable for an ``on_bad="error"`` row; for any other row it is the
    default, with one warning per process.

    Raises:
        UsageError: a bad value of an ``on_bad="error"`` row.

    Example:
        >>> setting("JCLI_EXEC_TIMEOUT", {"JCLI_EXEC_TIMEOUT": " 2.5 "}), setting("JCLI_EXEC_TIMEOUT", {"JCLI_EXEC_TIMEOUT": "none"})
        (2.5, None)
        >>> setting("JCLI_SIDECAR_CACHE_MB", {"JCLI_SIDECAR_CACHE_MB": "inf"})
        256.0
    """
    row = SETTINGS[name]
    raw = (os.environ if env is None else env).get(name, "")
    if raw.strip(_BLANKS) == "":
        return row.default
    try:
        return row.parse(raw)
    except ValueError:
        pass
    shown = "(hidden)" if row.kind == "secret" else repr(raw if len(raw) <= 40 else raw[:40] + "...")
    if row.on_bad == "error":
        from .errors import UsageError

        raise UsageError(f"{name}={shown} is not usable: {row.expect}", variable=name) from None
    if (name, raw) not in _warned:
        _warned.add((name, raw))
        import logging

        logging.getLogger("jcli_sidecar").warning("ignoring %s=%s (%s); using %g", name, shown, row.expect, row.default)
    return row.default
