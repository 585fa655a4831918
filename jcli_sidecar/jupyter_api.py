"""The Jupyter Server REST API, as j-cli uses it.

Works against any Jupyter Server, JupyterHub single-user server or
Enterprise Gateway URL (the base URL may carry a path prefix). A malformed
URL or token is a ``USAGE_ERROR`` before anything is sent; transport errors
become ``SERVER_UNAVAILABLE``; a rejected token says so. Messages show the
URL through :func:`~jcli_sidecar.urls.redact_url`, never its credentials.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from .errors import ServerUnavailable, SessionNotFound, UsageError
from .urls import redact_url, split_server_url
from .wire import HttpError, WireError, http_request, open_websocket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .wire import WebSocket

__all__ = ["JupyterServer", "select_session", "select_sessions", "session_summary"]


class JupyterServer:
    """One Jupyter Server: its base URL and token.

    ``shown_url`` is the URL to print: its credentials redacted. ``url``
    may be one as a server prints it (``/lab?token=...``): its UI route is
    cut off, and its token used when ``token`` is empty
    (:func:`~jcli_sidecar.urls.split_server_url`).

    Raises:
        UsageError: a malformed URL (see :func:`~jcli_sidecar.urls.check_server_url`),
            or a token that an HTTP header cannot carry.

    Example:
        >>> JupyterServer("http://127.0.0.1:8888/user/me/", "t").api("kernels")
        'http://127.0.0.1:8888/user/me/api/kernels'
        >>> JupyterServer("https://me:pw@hub.example/user/me").shown_url
        'https://***@hub.example/user/me'
    """

    def __init__(self, url: str, token: str = "", timeout: float = 30.0) -> None:
        self.url, url_token = split_server_url(url)
        token = token or url_token  # a token given on its own wins over one in the URL
        self.shown_url = redact_url(self.url)
        if any(not " " <= ch <= "~" for ch in token):
            raise UsageError("the token holds characters an HTTP header cannot carry (it must be printable ASCII)")
        self.token = token
        self.timeout = timeout

    def api(self, path: str) -> str:
        return f"{self.url}/api/{path}"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}

    def request(self, method: str, path: str, body: Any = None, timeout: float | None = None, *, raw_errors: bool = False) -> Any:
        """Call ``/api/<path>`` and return its JSON.

        Raises:
            ServerUnavailable: no connection, a rejected token, a 5xx, or any
                other non-2xx answer (a wrong base URL gives 404s).
            HttpError: other non-2xx answers, when ``raw_errors`` (the caller maps them).
        """
        try:
            response = http_request(method, self.api(path), headers=self._headers(), body=body, timeout=timeout or self.timeout)
        except WireError as exc:
            raise ServerUnavailable(f"Jupyter Server at {self.shown_url} is unreachable: {exc}", url=self.shown_url) from None
        except HttpError as exc:
            if exc.status in (401, 403):
                raise ServerUnavailable(
                    f"Jupyter Server at {self.shown_url} refused the token (HTTP {exc.status})", url=self.shown_url
                ) from None
            if exc.status >= 500:
                raise ServerUnavailable(f"Jupyter Server at {self.shown_url} failed: HTTP {exc.status}", url=self.shown_url) from None
            if raw_errors:
                raise
            raise ServerUnavailable(
                f"{self.shown_url} answered HTTP {exc.status} for /api/{path}; is this the server's base URL?", url=self.shown_url
            ) from None
        try:
            return response.json()
        except ValueError:
            raise ServerUnavailable(f"{self.shown_url} did not answer JSON; is it a Jupyter Server?", url=self.shown_url) from None

    # -- endpoints ---------------------------------------------------------

    def status(self, timeout: float | None = None) -> dict[str, Any]:
        return self.request("GET", "status", timeout=timeout)

    def kernelspecs(self) -> dict[str, Any]:
        return self.request("GET", "kernelspecs")

    def sessions(self) -> list[dict[str, Any]]:
        return self.request("GET", "sessions")

    def create_session(self, path: str, name: str, kernel: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"path": path, "name": name, "type": "console", "kernel": {}}
        if kernel:
            body["kernel"]["name"] = kernel
        try:
            return self.request("POST", "sessions", body, timeout=max(self.timeout, 60.0), raw_errors=True)
        except HttpError as exc:
            raise UsageError(f"cannot create the session: {_reason(exc)}") from None

    def delete_session(self, session_id: str) -> None:
        try:
            self.request("DELETE", f"sessions/{quote(session_id)}", raw_errors=True)
        except HttpError as exc:
            raise SessionNotFound(f"session {session_id} could not be killed: {_reason(exc)}") from None

    def interrupt(self, kernel_id: str) -> None:
        self.request("POST", f"kernels/{quote(kernel_id)}/interrupt")

    def restart(self, kernel_id: str) -> dict[str, Any]:
        return self.request("POST", f"kernels/{quote(kernel_id)}/restart", timeout=max(self.timeout, 60.0))

    def kernel(self, kernel_id: str) -> dict[str, Any]:
        return self.request("GET", f"kernels/{quote(kernel_id)}")

    def channels(self, kernel_id: str, session_id: str) -> WebSocket:
        """Open the kernel's websocket (all channels multiplexed as JSON)."""
        base = self.url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        url = f"{base}/api/kernels/{quote(kernel_id)}/channels?session_id={quote(session_id)}"
        try:
            return open_websocket(url, headers=self._headers(), timeout=self.timeout)
        except WireError as exc:
            raise ServerUnavailable(f"kernel channels at {self.shown_url} are unreachable: {exc}", url=self.shown_url) from None
        except HttpError as exc:
            if exc.status == 404:
                raise SessionNotFound(f"kernel {kernel_id} is gone (was it shut down?)") from None
            raise ServerUnavailable(f"kernel channels refused: HTTP {exc.status}", url=self.shown_url) from None


def _reason(exc: HttpError) -> str:
    try:
        message = json.loads(exc.body).get("message")
    except (ValueError, AttributeError):
        message = None
    return message or f"HTTP {exc.status} {exc.reason}"


def select_session(sessions: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Pick a session by id, by a unique name, or by a unique id prefix (3+ chars).

    Raises:
        SessionNotFound: nothing matches, or the key is ambiguous.

    Example:
        >>> rows = [{"id": "abc123", "name": "a"}, {"id": "abd456", "name": "b"}]
        >>> select_session(rows, "abd")["name"], select_session(rows, "a")["id"]
        ('b', 'abc123')
    """
    for row in sessions:
        if row.get("id") == key:
            return row
    named = [row for row in sessions if row.get("name") == key]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise SessionNotFound(f"{len(named)} sessions are named {key!r}; use an id", candidates=[r["id"] for r in named])
    prefixed = [row for row in sessions if len(key) >= 3 and str(row.get("id", "")).startswith(key)]
    if len(prefixed) == 1:
        return prefixed[0]
    if prefixed:
        raise SessionNotFound(f"{len(prefixed)} sessions start with {key!r}; give more of the id", candidates=[r["id"] for r in prefixed])
    known = ", ".join(f"{r.get('name') or '-'} ({str(r.get('id'))[:8]})" for r in sessions) or "none"
    raise SessionNotFound(f"no session matches {key!r} (sessions: {known}); see j-cli session list")


def select_sessions(sessions: list[dict[str, Any]], keys: list[str]) -> list[dict[str, Any]]:
    """Resolve every key (as :func:`select_session`) before anything is done; each session once, in order.

    Raises:
        SessionNotFound: a key matches nothing or is ambiguous (``selector`` names it).

    Example:
        >>> rows = [{"id": "abc123", "name": "a"}, {"id": "abd456", "name": "b"}]
        >>> [r["id"] for r in select_sessions(rows, ["b", "abc", "abd456"])]
        ['abd456', 'abc123']
    """
    chosen: dict[str, dict[str, Any]] = {}
    for key in keys:
        try:
            row = select_session(sessions, key)
        except SessionNotFound as err:
            err.details["selector"] = key
            raise
        chosen.setdefault(str(row.get("id")), row)
    return list(chosen.values())


def session_summary(row: dict[str, Any]) -> dict[str, Any]:
    """The fields j-cli shows for a session: ids, names, path and kernel state."""
    kernel = row.get("kernel") or {}
    return {
        "id": row.get("id"),
        "name": row.get("name"),
        "path": row.get("path"),
        "kernel_id": kernel.get("id"),
        "kernel_name": kernel.get("name"),
        "execution_state": kernel.get("execution_state"),
    }
