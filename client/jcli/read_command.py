"""Run a read command: build the request, ask the transport, print.

Shared by the fast path and the click app, so both behave the same.
"""

from __future__ import annotations

import sys

from jcli_sidecar.base import JcliError, UsageError

from . import emit
from .read_options import FILE_ARGUMENT, READ_COMMANDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_REQUEST_BYTES", "build_request", "run_read"]

#: The largest request ``--request -`` reads from stdin (a request is a small map).
MAX_REQUEST_BYTES = 1024 * 1024


def _stdin_request() -> Any:
    from jcli_sidecar.base import TooDeep, loads

    raw = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
    if len(raw) > MAX_REQUEST_BYTES:
        raise UsageError(f"--request -: the request on stdin is over {MAX_REQUEST_BYTES} bytes")
    try:
        return loads(raw)
    except TooDeep as exc:
        raise UsageError(f"--request -: {exc}") from None
    except ValueError:  # not JSON, not UTF-8
        raise UsageError("--request -: stdin is not a JSON object") from None


def build_request(command: str, file_path: str | None, values: dict[str, Any]) -> dict[str, Any]:
    """The request map for ``command`` from FILE, flag values or stdin.

    Raises:
        UsageError: a missing FILE or --cell, ``--request`` other than ``-``,
            or ``--request`` mixed with FILE or flags.
    """
    # A flag left off is absent (click says False), as on the fast path.
    given = {k: v for k, v in values.items() if v is not None and v is not False and k != "request"}
    if values.get("request") is not None:
        if values["request"] != "-":
            raise UsageError("--request takes '-' (the JSON request is read from stdin)")
        if file_path is not None or given:
            raise UsageError("--request - replaces FILE and the other options; use one or the other")
        request = _stdin_request()
        if not isinstance(request, dict):
            raise UsageError("--request -: stdin is not a JSON object")
        return request
    if file_path is None:
        raise UsageError("missing FILE (or use --request -)")
    allowed = {opt.field for opt in READ_COMMANDS[command][1]}
    for opt in READ_COMMANDS[command][1]:
        if opt.required and opt.field not in given:
            raise UsageError(f"missing option {opt.flags[0]}")
    return {FILE_ARGUMENT: file_path, **{k: v for k, v in given.items() if k in allowed}}


def run_read(command: str, json_mode: bool, file_path: str | None, values: dict[str, Any]) -> int:
    """Do one read command end to end; returns the process exit code."""
    from jcli_sidecar.sidecar import NOTEBOOK_LIST, NOTEBOOK_READ

    from .transport import read

    op = NOTEBOOK_LIST if command == "outputs" else NOTEBOOK_READ
    supported = values.pop("supported_mime", None) or ()
    try:
        request = build_request(command, file_path, values)
        if supported and request.get("mime_type") is None:
            request["mime_type"] = _first_supported(request, supported)
        envelope = read(request, op)
    except JcliError as err:
        return emit.error(err, json_mode)
    except Exception as exc:  # a bug: still one coded line, never a traceback
        return emit.unexpected(exc, json_mode)
    return emit.document(envelope, json_mode)


def _first_supported(request: dict[str, Any], supported: tuple[str, ...]) -> str:
    """``--supported-mime`` (upstream jupyter-jcli's): the output's first representation that is one of ``supported``.

    Raises:
        UsageError: no ``--output`` was given.
        MimeNotFound: the output has none of them.
    """
    from jcli_sidecar.base import MimeNotFound
    from jcli_sidecar.sidecar import NOTEBOOK_LIST

    from .transport import read

    index = request.get("output_index")
    if index is None:
        raise UsageError("--supported-mime needs --output K")
    catalog = read({k: v for k, v in request.items() if k in (FILE_ARGUMENT, "cell_index", "max_response_bytes")}, NOTEBOOK_LIST)
    outputs = [o for o in catalog.get("outputs", ()) if o.get("output_index") == index]
    available = outputs[0].get("available_mime_types", []) if outputs else []
    for mime in available:
        if mime in supported:
            return mime
    if not outputs:
        return supported[0]  # the read names the missing output
    raise MimeNotFound(
        f"output {index} of cell {request.get('cell_index')} has none of {', '.join(supported)} (it has {', '.join(available) or 'none'})",
        available_mime_types=available,
    )
