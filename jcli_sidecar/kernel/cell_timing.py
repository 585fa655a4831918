"""When a cell ran, as nbclient's ``record_timing`` keeps it: ``metadata.execution`` in the notebook.

The kernel stamps every message's header with its ``date``; four of them,
for one ``execute_request``, say when the cell ran (:data:`TIMING_KEYS`, in
the order the kernel sends them): the kernel went busy, it broadcast the
input, it replied, it went idle. :func:`message_time` writes a header's date
as nbclient does (UTC, microseconds, ``Z``); a message without a usable
date gets the local clock's time. :func:`timing_fields` is what a notebook
run's JSON line says of it: ``started``, ``ended`` and ``duration_s``.

The keys are notebook-only metadata: a ``.py`` written from the notebook
never carries them (:data:`~jcli_sidecar.pair.percent_write.NOTEBOOK_ONLY_METADATA`).
"""

from __future__ import annotations

import re
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime
    from typing import Any

__all__ = ["EXECUTION_METADATA", "TIMING_KEYS", "message_time", "timing_fields"]

#: The cell metadata key that holds a cell's timing (nbclient's).
EXECUTION_METADATA = "execution"
#: The timing keys, in the order the kernel's messages come.
TIMING_KEYS = ("iopub.status.busy", "iopub.execute_input", "shell.execute_reply", "iopub.status.idle")

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
#: A date already written as :data:`_FORMAT` (what jupyter_client sends): kept as it is, without importing datetime.
_WRITTEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


def message_time(msg: dict[str, Any]) -> str:
    """The ``date`` of ``msg``'s header as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (UTC); now, when it has none.

    Example:
        >>> message_time({"header": {"date": "2026-01-02T03:04:05.5+01:00"}})
        '2026-01-02T02:04:05.500000Z'
    """
    header = msg.get("header")
    date = header.get("date") if isinstance(header, dict) else None
    if isinstance(date, str):
        if _WRITTEN.fullmatch(date):
            return date
        parsed = _parse(date)
        if parsed is not None:
            return parsed.strftime(_FORMAT)
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1_000_000):06d}Z"


def _parse(text: str) -> datetime.datetime | None:
    import datetime  # here: an inline exec whose kernel sends canonical dates never needs it

    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:  # the protocol's dates are UTC
        return moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC)


def timing_fields(timing: dict[str, str]) -> dict[str, Any] | None:
    """``{started, ended, duration_s}`` of a cell's timing (busy or input, then idle or reply); None when it has neither end.

    Example:
        >>> timing_fields({"iopub.status.busy": "2026-01-02T03:04:05.000000Z", "iopub.status.idle": "2026-01-02T03:04:06.250000Z"})
        {'started': '2026-01-02T03:04:05.000000Z', 'ended': '2026-01-02T03:04:06.250000Z', 'duration_s': 1.25}
    """
    started = timing.get("iopub.status.busy") or timing.get("iopub.execute_input")
    ended = timing.get("iopub.status.idle") or timing.get("shell.execute_reply")
    if started is None or ended is None:
        return None
    begin, end = _parse(started), _parse(ended)
    duration = None if begin is None or end is None else round((end - begin).total_seconds(), 6)
    return {"started": started, "ended": ended, "duration_s": duration}
