"""Printing results and errors, the same way for every command.

JSON mode: one compact document on stdout, exit 0; a failure is an error
envelope on stderr, exit 1; a usage error (``UsageError`` and every error
class under it, such as ``INVALID_WINDOW``) exits 2; ``INTERRUPTED`` exits
128 plus the signal's number (130 for SIGINT, 143 for SIGTERM). Human mode
prints readable text and never base64.
"""

from __future__ import annotations

import os
import sys

from jcli_sidecar.base import JcliError, UsageError, dump_json, error_envelope, human_size

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "document",
    "error",
    "exit_code",
    "human_size",
    "live_output",
    "rich_output",
    "say",
    "show_outputs",
    "show_stored_outputs",
    "shown_path",
    "stored_output_lines",
    "unexpected",
    "warn",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def unexpected(exc: BaseException, json_mode: bool) -> int:
    """A bug, not bad input: one coded line (a traceback only with JCLI_DEBUG=1)."""
    from jcli_sidecar.base import internal_error

    return error(internal_error(exc), json_mode)


def _debug_traceback(err: JcliError) -> None:
    """With JCLI_DEBUG=1, the traceback of the bug behind an ``INTERNAL_ERROR``."""

    from jcli_sidecar.base import InternalError, setting

    if isinstance(err, InternalError) and err.__cause__ is not None and setting("JCLI_DEBUG"):
        import traceback

        traceback.print_exception(err.__cause__)


def exit_code(err: JcliError) -> int:
    """By error class: 2 for a usage error (any ``UsageError``), 128 + N for ``INTERRUPTED`` by signal N, else 1.

    Example:
        >>> from jcli_sidecar.base import Interrupted, InvalidWindow, OutputNotFound
        >>> exit_code(InvalidWindow("limit must be >= 1")), exit_code(OutputNotFound("no output 3"))
        (2, 1)
        >>> exit_code(Interrupted("stopped", signal="SIGINT")), exit_code(Interrupted("stopped", signal="SIGTERM"))
        (130, 143)
    """
    if isinstance(err, UsageError):
        return EXIT_USAGE
    if err.code == "INTERRUPTED":
        import signal

        try:
            return 128 + signal.Signals[str(err.details.get("signal"))].value
        except KeyError:
            return 128 + signal.SIGINT.value
    return EXIT_FAILURE


def _write(stream, data: bytes) -> None:
    try:
        stream.buffer.write(data)
        stream.flush()
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); nothing left to tell it.
        pass


def document(doc: dict[str, Any], json_mode: bool) -> int:
    """Print a successful result; returns the exit code."""
    if json_mode:
        _write(sys.stdout, dump_json(doc) + b"\n")
    else:
        from .render import render_human

        body, note = render_human(doc)
        _write(sys.stdout, body.encode("utf-8", "backslashreplace"))
        if note:
            _write(sys.stderr, (note + "\n").encode("utf-8", "backslashreplace"))
    return EXIT_OK


def error(err: JcliError, json_mode: bool) -> int:
    """Print a failure on stderr; returns the exit code."""
    _debug_traceback(err)
    if json_mode:
        _write(sys.stderr, dump_json(error_envelope(err)) + b"\n")
    else:
        line = f"j-cli: error [{err.code}]: {err.message}\n"
        _write(sys.stderr, line.encode("utf-8", "backslashreplace"))
    return exit_code(err)


def live_output(
    event: str,
    output: dict[str, Any],
    index: int,
    outputs: list[dict[str, Any]],
    chunk: str | None = None,
    *,
    rich: Callable[[int, str, int], None] | None = None,
) -> None:
    """Human mode's ``on_output`` hook: show outputs as they arrive (stream text chunk by chunk).

    A traceback loses its terminal colours. An output with more than plain
    text (:func:`rich_output`) shows its plain text, if any, then
    ``rich(index, mime, size)`` tells where to get it (inline runs print
    that line when their outputs are stored). A reader that went away
    (``| head``) stops the showing, never the run.
    """
    from jcli_sidecar.base import strip_ansi_lines
    from jcli_sidecar.kernel import output_text

    kind = output.get("output_type")
    if chunk is not None:
        _write(sys.stdout, chunk.encode("utf-8", "backslashreplace"))
        return
    if event != "append":
        return
    if kind == "error":
        _write(sys.stderr, ("\n".join(strip_ansi_lines(output.get("traceback") or [])) + "\n").encode("utf-8", "backslashreplace"))
        return
    found = rich_output(output)
    text = output_text(output) or ("" if found else f"[{', '.join(output.get('data') or {})}]")
    if text:
        _write(sys.stdout, (text if text.endswith("\n") else text + "\n").encode("utf-8", "backslashreplace"))
    if found is not None and rich is not None:
        rich(index, *found)


def rich_output(output: dict[str, Any]) -> tuple[str, int] | None:
    """``(MIME, bytes)`` of what ``notebook output`` shows for a display output with more than plain text; else None.

    Example:
        >>> rich_output({"output_type": "display_data", "data": {"text/plain": "<Figure>", "image/png": "iVBORw0KGgo="}})
        ('image/png', 8)
        >>> rich_output({"output_type": "execute_result", "data": {"text/plain": "42"}}) is None
        True
    """
    from jcli_sidecar.read import auto_select, decoded_size, is_raster_image, render_hint

    data = output.get("data")
    if output.get("output_type") not in ("display_data", "execute_result") or not isinstance(data, dict):
        return None
    others = [mime for mime in data if isinstance(mime, str) and mime != "text/plain"]
    if not others:
        return None
    mime = auto_select(others) or others[0]
    if not is_raster_image(mime):  # a chart is named over its HTML: it can be read as an image
        mime = next((m for m in others if render_hint([m])), mime)
    value = data[mime]
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        value = "".join(value)
    if isinstance(value, str) and is_raster_image(mime):
        try:
            return mime, decoded_size(value)
        except JcliError:
            return mime, len(value)
    if isinstance(value, str):
        return mime, len(value.encode("utf-8", "surrogatepass"))
    return mime, len(dump_json(value))


def shown_path(path: str) -> str:
    """``path`` relative to the current directory when it is under it, else as it is."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def say(line: str) -> None:
    """Human mode: one line on stdout (a reader that went away is not an error)."""
    _write(sys.stdout, (line + "\n").encode("utf-8", "backslashreplace"))


def warn(line: str) -> None:
    """Human mode: ``warning: line`` on stderr."""
    _write(sys.stderr, f"warning: {line}\n".encode("utf-8", "backslashreplace"))


def show_stored_outputs(doc: dict[str, Any]) -> None:
    """Human mode, after an inline run: one line per stored rich output (:func:`stored_output_lines`)."""
    lines = stored_output_lines(doc)
    if lines:
        _write(sys.stdout, ("\n".join(lines) + "\n").encode("utf-8", "backslashreplace"))


def stored_output_lines(doc: dict[str, Any]) -> list[str]:
    """Plain lines for an inline run's stored rich outputs: ``image/png 10.7 KiB -> .j-cli/outputs/RUN/output-0001-0.png``.

    A chart's line names the read that renders it as an image.
    """
    from jcli_sidecar.read import render_hint

    lines = []
    for item in doc.get("outputs") or ():
        if item.get("type") in ("stream", "error") or not isinstance(item.get("path"), str):
            continue
        size = item.get("bytes")
        what = f"{item.get('mime')} {human_size(size)}" if isinstance(size, int) else str(item.get("mime"))
        line = f"{what} -> {shown_path(item['path'])}"
        hint = render_hint([item["mime"]]) if isinstance(item.get("mime"), str) else None
        run_id = (doc.get("run") or {}).get("run_id")
        if hint and isinstance(run_id, str) and isinstance(item.get("output_index"), int):
            line += f" (as an image: j-cli output show {run_id} --output {item['output_index']} {hint})"
        lines.append(line)
    return lines


def show_outputs(outputs: list[dict[str, Any]], rich: Callable[[int, str, int], None] | None = None) -> None:
    """Human mode with ``--no-stream``: finished outputs, shown as :func:`live_output` shows them live."""
    for index, output in enumerate(outputs):
        live_output("append", output, index, outputs, rich=rich)
