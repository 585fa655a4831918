"""Printing results and errors, the same way for every command.

JSON mode: one compact document on stdout, exit 0; a failure is an error
envelope on stderr, exit 1; a usage error (``UsageError`` and every error
class under it, such as ``INVALID_WINDOW``) exits 2; ``INTERRUPTED`` exits
128 plus the signal's number (130 for SIGINT, 143 for SIGTERM). Human mode
prints readable text and never base64.
"""

from __future__ import annotations

import sys

from jcli_sidecar.base import JcliError, UsageError, dump_json, error_envelope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "document", "error", "exit_code", "live_output", "show_outputs", "unexpected"]

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


def live_output(event: str, output: dict[str, Any], index: int, outputs: list[dict[str, Any]], chunk: str | None = None) -> None:
    """Human mode's ``on_output`` hook: show outputs as they arrive (stream text chunk by chunk).

    A reader that went away (``| head``) stops the showing, never the run.
    """
    from jcli_sidecar.kernel import output_text

    kind = output.get("output_type")
    if chunk is not None:
        _write(sys.stdout, chunk.encode("utf-8", "backslashreplace"))
        return
    if event != "append":
        return
    if kind == "error":
        _write(sys.stderr, ("\n".join(output.get("traceback") or []) + "\n").encode("utf-8", "backslashreplace"))
    else:
        text = output_text(output) or f"[{', '.join(output.get('data') or {})}]"
        _write(sys.stdout, (text if text.endswith("\n") else text + "\n").encode("utf-8", "backslashreplace"))


def show_outputs(outputs: list[dict[str, Any]]) -> None:
    """Human mode with ``--no-stream``: finished outputs, shown as :func:`live_output` shows them live."""
    for index, output in enumerate(outputs):
        live_output("append", output, index, outputs)
