"""What a Jupyter server's error reply means: the one rule from HTTP status to coded error.

Jupyter Server, Kernel Gateway and Enterprise Gateway answer errors with a
JSON body holding ``message`` (and ``reason``, sometimes ``short_message``).
:func:`server_message` keeps that text, bounded and cleaned, and
:func:`reply_error` turns the status into a code:

=======  ==========================================================
401      ``NOT_AUTHORIZED`` (no token, or the wrong one)
403      ``FORBIDDEN`` (the token is good; the server refuses the request)
404      ``SERVER_UNAVAILABLE`` by default (a wrong base URL gives 404s);
         callers that expect a 404 (a session id) handle it themselves
424      ``SERVER_NOT_RUNNING`` (JupyterHub's answer at ``/hub/user/NAME/``
         for a user's server that is not running)
501      ``KERNELSPEC_NOT_FOUND`` when a kernel was asked for, else ``SERVER_ERROR``
5xx      ``SERVER_ERROR``
other    ``SERVER_UNAVAILABLE``
=======  ==========================================================

A redirect (3xx) is read by :mod:`~jcli_sidecar.kernel.hub_servers`, which
may ask the hub. A gateway that wraps another status in a 500 (Enterprise Gateway reports a
refused kernel user as ``500`` with the message ``"HTTP 403: ..."``) is read
by the wrapped status. The server's message is never the whole body and
never holds control characters; URLs in it are redacted.
"""

from __future__ import annotations

import json
import re

from ..base import Forbidden, JcliError, KernelspecNotFound, NotAuthorized, ServerError, ServerNotRunning, ServerUnavailable
from .urls import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .wire import HttpError

__all__ = ["MESSAGE_CHARS", "reply_error", "reply_status", "server_message"]

#: At most this many characters of a server's message are kept.
MESSAGE_CHARS = 500
_WRAPPED = re.compile(r"^HTTP (\d{3}): ")
_STANDARD_REASONS = {"", "Not Found", "Forbidden", "Unauthorized", "Internal Server Error", "Bad Request", "Not Implemented"}


def server_message(exc: HttpError) -> str:
    """The server's own words about ``exc``: its JSON ``message`` (else a non-standard ``reason``), cleaned; "" if none.

    Example:
        >>> from jcli_sidecar.kernel.wire import HttpError
        >>> server_message(HttpError(501, "Not Implemented", b'{"message": "The nosuch kernel is not available."}'))
        'The nosuch kernel is not available.'
        >>> server_message(HttpError(403, "Forbidden", b'{"reason": "User root may not", "message": ""}'))
        'User root may not'
        >>> server_message(HttpError(404, "Not Found", b"<html>...</html>"))
        ''
    """
    try:
        body = json.loads(exc.body)
    except (ValueError, UnicodeDecodeError):
        return ""
    if not isinstance(body, dict):
        return ""
    text = body.get("message")
    if not isinstance(text, str) or not text.strip():
        reason = body.get("reason")
        text = reason if isinstance(reason, str) and reason not in _STANDARD_REASONS else ""
    text = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    text = redact_text(text)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def reply_status(exc: HttpError) -> int:
    """The status that counts: a gateway's wrapped ``HTTP NNN:`` inside a 500, else the reply's own.

    Example:
        >>> from jcli_sidecar.kernel.wire import HttpError
        >>> reply_status(HttpError(500, "Internal Server Error", b'{"message": "HTTP 403: User root is not authorized"}'))
        403
    """
    wrapped = _WRAPPED.match(server_message(exc)) if exc.status == 500 else None
    return int(wrapped.group(1)) if wrapped else exc.status


def reply_error(exc: HttpError, shown_url: str, path: str, *, kernel: str | None = None) -> JcliError:
    """The coded error for a non-2xx reply to ``/api/<path>`` (see the module's table).

    Args:
        shown_url: the server's URL as it may be printed (redacted).
        kernel: the kernel spec the request asked for, if any (a 501 then means it does not exist).
    """
    status = reply_status(exc)
    said = server_message(exc)
    facts = {"url": shown_url, "http_status": exc.status}
    if said:
        facts["server_message"] = said
    told = f": {_WRAPPED.sub('', said).rstrip('.')}" if said else ""
    if status == 401:
        return NotAuthorized(
            f"Jupyter Server at {shown_url} refused the token (HTTP 401){told}; "
            "give the server's token with -t or JCLI_JUPYTER_SERVER_TOKEN",
            **facts,
        )
    if status == 403:
        return Forbidden(f"Jupyter Server at {shown_url} refused /api/{path} (HTTP 403){told}", **facts)
    if exc.status == 424:
        return ServerNotRunning(
            f"{shown_url} answered /api/{path} with HTTP 424{told}: JupyterHub's answer for a user's server "
            "that is not running; start it from the hub, then run this again",
            state="unknown",
            **facts,
        )
    if exc.status == 501 and kernel:
        return KernelspecNotFound(f"the server has no kernel spec {kernel!r}{told}; see j-cli kernelspec list", kernel=kernel, **facts)
    if exc.status >= 500:
        return ServerError(
            f"Jupyter Server at {shown_url} failed on /api/{path} (HTTP {exc.status}){told or ' and gave no reason'}", **facts
        )
    if exc.status == 404:
        return ServerUnavailable(f"{shown_url} answered HTTP 404 for /api/{path}; is this the server's base URL?", **facts)
    return ServerUnavailable(f"{shown_url} answered HTTP {exc.status} for /api/{path}{told}", **facts)
