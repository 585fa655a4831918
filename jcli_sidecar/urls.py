"""Server URLs: checking the one a user gave, and hiding credentials in any we print.

Every place that prints a URL (error messages, the ``url`` and ``server``
fields of results, ``server status``, a log tail) passes it through
:func:`redact_url`, or a text that may hold URLs through
:func:`redact_text`: a userinfo part (``user:password@``) and the value of
any query parameter that names a secret (``token=``, ``password=``, ...)
become ``***``. Malformed text is redacted too, so an error about a bad
URL never shows the password inside it.
"""

from __future__ import annotations

import re

from .errors import UsageError

__all__ = ["check_server_url", "redact_text", "redact_url"]

_HIDDEN = "***"
_SECRET_PARAM = re.compile(r"(?i)([?&;#][^=&;#\s]*(?:token|password|passwd|secret|key|auth)[^=&;#\s]*=)[^&;#\s]*")
_SECRET_IN_TEXT = re.compile(r"(?i)((?:^|[\s?&;#,(\"'])[^=&;#\s]*(?:token|password|passwd|secret|key|auth)[^=&;#\s]*=)[^&;#\s]*")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")


def redact_url(url: str) -> str:
    """``url`` with its userinfo and secret query values replaced by ``***``.

    Everything up to the last ``@`` of the URL is taken for userinfo, so a
    password holding ``/``, ``@`` or ``#`` is hidden whole.

    Example:
        >>> redact_url("https://me:s3cret@hub.example/user/me/?token=abc&x=1")
        'https://***@hub.example/user/me/?token=***&x=1'
        >>> redact_url("http://127.0.0.1:8888")
        'http://127.0.0.1:8888'
        >>> redact_url("http://me:p/a@ss@[::1")
        'http://***@[::1'
    """
    start = url.find("//")
    start = 0 if start < 0 else start + 2
    at = url.rfind("@")
    if at >= start:
        url = url[:start] + _HIDDEN + url[at:]
    return _SECRET_PARAM.sub(lambda m: m.group(1) + _HIDDEN, url)


def redact_text(text: str) -> str:
    """``text`` with :func:`redact_url` applied to every ``scheme://...`` in it, and bare ``token=...`` hidden too.

    Example:
        >>> redact_text("open http://127.0.0.1:8888/?token=abc or http://u:p@host/; token=abc")
        'open http://127.0.0.1:8888/?token=*** or http://***@host/; token=***'
    """
    return _SECRET_IN_TEXT.sub(lambda m: m.group(1) + _HIDDEN, _URL_IN_TEXT.sub(lambda m: redact_url(m.group()), text))


def check_server_url(url: str) -> str:
    """The base URL of a Jupyter Server as given by a user, checked; no trailing slash.

    It must be ``http`` or ``https`` with a host, an optional port in
    1..65535 and an optional path; spaces, control characters, a query and
    a fragment are refused (the token goes in ``-t``, never in the URL).

    Raises:
        UsageError: the URL is malformed (its message shows it redacted).

    Example:
        >>> check_server_url("http://127.0.0.1:8888/user/me/")
        'http://127.0.0.1:8888/user/me'
        >>> check_server_url("http://me:pw@host:99999")
        Traceback (most recent call last):
        ...
        jcli_sidecar.errors.UsageError: the server URL http://***@host:99999 has an invalid port (1 to 65535)
    """
    from urllib.parse import urlsplit

    shown = redact_url(url)
    if not url:
        raise UsageError("the server URL is empty; give one such as http://127.0.0.1:8888")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise UsageError(f"the server URL {shown!r} holds spaces or control characters")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise UsageError(f"the server URL {shown} is malformed (check its host)") from None
    try:
        port = parts.port
    except ValueError:
        port = 0
    if parts.scheme.lower() not in ("http", "https") or not url.lower().startswith(f"{parts.scheme.lower()}://"):
        raise UsageError(f"the server URL {shown} must start with http:// or https://")
    if not parts.hostname:
        raise UsageError(f"the server URL {shown} names no host")
    if port == 0:
        raise UsageError(f"the server URL {shown} has an invalid port (1 to 65535)")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise UsageError(f"the server URL {shown} may not carry a query or fragment; give the token with -t or JCLI_JUPYTER_SERVER_TOKEN")
    return url.rstrip("/")
