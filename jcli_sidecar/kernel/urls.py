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

from ..base import UsageError

__all__ = ["check_server_url", "redact_text", "redact_url", "split_server_url"]

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


#: Path segments where a Jupyter web UI's own routes start (JupyterLab, Notebook 7, classic, Voila).
UI_ROUTES = frozenset({"lab", "tree", "notebooks", "doc", "edit", "view", "nbclassic", "voila", "terminals", "consoles"})


def split_server_url(url: str) -> tuple[str, str]:
    """``(base URL, token)`` from a URL as a server prints it, e.g. ``http://host:8888/lab?token=abc``.

    The web UI's route is cut off (the path from its first segment in
    :data:`UI_ROUTES`; under JupyterHub's ``/user/NAME/`` the search starts
    after NAME), the ``token`` query value is returned (``""`` when none),
    and the other query values and the fragment are dropped. The base is
    then checked by :func:`check_server_url`.

    Raises:
        UsageError: the URL is malformed (its message shows it redacted).

    Example:
        >>> split_server_url("http://127.0.0.1:8888/lab?token=abc")
        ('http://127.0.0.1:8888', 'abc')
        >>> split_server_url("https://hub.example/user/lab/lab/tree/a.ipynb?token=t#x")
        ('https://hub.example/user/lab', 't')
        >>> split_server_url("http://127.0.0.1:8888/base/")
        ('http://127.0.0.1:8888/base', '')
    """
    from urllib.parse import parse_qs

    # A password may hold "?", "#" or "/": the query and the path start after the last "@".
    scheme_end = url.find("://")
    authority_start = url.rfind("@") + 1 if url.rfind("@") > scheme_end else max(scheme_end + 3, 0)
    head, tail = url[:authority_start], url[authority_start:]
    tail, _, _fragment = tail.partition("#")
    tail, _, query = tail.partition("?")
    rest = head + tail
    token = ""
    if query:
        try:
            values = parse_qs(query, keep_blank_values=True, strict_parsing=False).get("token") or [""]
        except ValueError:
            values = [""]
        token = values[-1]
    if scheme_end > 0:
        scheme, host_and_path = rest[:scheme_end], rest[scheme_end + 3 :]
        at = host_and_path.rfind("@") + 1
        slash_at = host_and_path.find("/", at)
        host, path = (host_and_path, "") if slash_at < 0 else (host_and_path[:slash_at], host_and_path[slash_at + 1 :])
        slash = slash_at >= 0
        segments = path.split("/") if slash else []
        start = 2 if segments[:1] == ["user"] and len(segments) > 1 else 0
        for index in range(start, len(segments)):
            if segments[index] in UI_ROUTES:
                segments = segments[:index]
                break
        rest = f"{scheme}://{host}" + ("/" + "/".join(segments) if segments else "")
    return check_server_url(rest), token


def check_server_url(url: str) -> str:
    """The base URL of a Jupyter Server, checked; no trailing slash.

    It must be ``http`` or ``https`` with a host, an optional port in
    1..65535 and an optional path; spaces, control characters, a query and
    a fragment are refused (:func:`split_server_url` takes them off a URL
    as a server prints it).

    Raises:
        UsageError: the URL is malformed (its message shows it redacted).

    Example:
        >>> check_server_url("http://127.0.0.1:8888/user/me/")
        'http://127.0.0.1:8888/user/me'
        >>> check_server_url("http://me:pw@host:99999")
        Traceback (most recent call last):
        ...
        jcli_sidecar.base.errors.UsageError: the server URL http://***@host:99999 has an invalid port (1 to 65535)
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
        raise UsageError(
            f"the server URL {shown} may not carry a query or fragment here; give the token with -t or JCLI_JUPYTER_SERVER_TOKEN"
        )
    return url.rstrip("/")
