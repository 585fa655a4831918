"""The Jupyter Server REST API, as j-cli uses it.

Works against any Jupyter Server, JupyterHub single-user server or
Enterprise Gateway URL (the base URL may carry a path prefix). A malformed
URL or token is a ``USAGE_ERROR`` before anything is sent; transport errors
become ``SERVER_UNAVAILABLE``; a rejected token says so. Messages show the
URL through :func:`~jcli_sidecar.kernel.urls.redact_url`, never its credentials.
"""

from __future__ import annotations

from urllib.parse import quote

from ..base import Forbidden, JcliError, ProxyAuthRequired, ServerUnavailable, SessionNotFound, UsageError
from .proxy_route import proxy_environment, proxy_for
from .server_replies import reply_error
from .urls import redact_url, split_server_url
from .wire import HttpError, ProxyRefused, WireError, http_request, open_websocket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from .server_probe import ServerInfo
    from .wire import WebSocket

__all__ = ["JupyterServer", "kernel_summary", "select_session", "session_summary"]


class JupyterServer:
    """One Jupyter Server: its base URL and token.

    ``shown_url`` is the URL to print: its credentials redacted. ``url``
    may be one as a server prints it (``/lab?token=...``): its UI route is
    cut off, and its token used when ``token`` is empty
    (:func:`~jcli_sidecar.kernel.urls.split_server_url`).

    ``proxy_env`` holds the proxy variables to decide the route from
    (:func:`~jcli_sidecar.kernel.proxy_route.proxy_for`): a sidecar
    passes the ones its client had; None reads this process's environment.

    Raises:
        UsageError: a malformed URL (see :func:`~jcli_sidecar.kernel.urls.check_server_url`),
            a token that an HTTP header cannot carry, or a malformed or unsupported proxy variable.

    Example:
        >>> JupyterServer("http://127.0.0.1:8888/user/me/", "t").api("kernels")
        'http://127.0.0.1:8888/user/me/api/kernels'
        >>> JupyterServer("https://me:pw@hub.example/user/me").shown_url
        'https://***@hub.example/user/me'
    """

    def __init__(self, url: str, token: str = "", timeout: float = 30.0, *, proxy_env: Mapping[str, str] | None = None) -> None:
        self.url, url_token = split_server_url(url)
        token = token or url_token  # a token given on its own wins over one in the URL
        self.shown_url = redact_url(self.url)
        if any(not " " <= ch <= "~" for ch in token):
            raise UsageError("the token holds characters an HTTP header cannot carry (it must be printable ASCII)")
        self.token = token
        self.timeout = timeout
        #: The proxy variables the route was decided from (what a client hands its sidecar).
        self.proxy_env = proxy_environment(proxy_env)
        self.proxy = proxy_for(self.url, self.proxy_env)
        self._info: ServerInfo | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """What tells two servers' connections apart: URL, token and the route (connections are reused within one key)."""
        route = self.proxy
        return (self.url, self.token, "" if route is None else f"{route.host}:{route.port}:{route.authorization or ''}")

    def _unreachable(self, what: str, exc: WireError) -> JcliError:
        """``what`` (the failure's first words) as a coded error for a connection that failed: ``PROXY_AUTH_REQUIRED`` for a 407, else ``SERVER_UNAVAILABLE``."""
        details: dict[str, Any] = {"url": self.shown_url}
        if self.proxy is not None:
            details.update(proxy=self.proxy.shown, proxy_variable=self.proxy.variable)
        if isinstance(exc, ProxyRefused):
            details["proxy_status"] = exc.status
            if exc.status == 407:
                return ProxyAuthRequired(f"{what}: {exc}", **details)
        return ServerUnavailable(f"{what}: {exc}", **details)

    def api(self, path: str) -> str:
        return f"{self.url}/api/{path}" if path else f"{self.url}/api"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}

    def request(
        self, method: str, path: str, body: Any = None, timeout: float | None = None, *, raw_errors: bool = False, kernel: str | None = None
    ) -> Any:
        """Call ``/api/<path>`` and return its JSON.

        Args:
            raw_errors: raise the server's :class:`HttpError` itself (the caller maps it).
            kernel: the kernel spec this request asks for (names a 501 as ``KERNELSPEC_NOT_FOUND``).

        Raises:
            ServerUnavailable: no connection, a wrong base URL, or no JSON.
            JcliError: any other non-2xx answer, coded by :meth:`reply_error`
                (``NOT_AUTHORIZED``, ``FORBIDDEN``, ``KERNELSPEC_NOT_FOUND``, ``SERVER_ERROR``,
                ``SERVER_NOT_RUNNING`` for JupyterHub's answer about a server that is not running).
        """
        try:
            response = http_request(
                method, self.api(path), headers=self._headers(), body=body, timeout=timeout or self.timeout, proxy=self.proxy
            )
        except WireError as exc:
            raise self._unreachable(f"Jupyter Server at {self.shown_url} is unreachable", exc) from None
        except HttpError as exc:
            if raw_errors:
                raise
            raise self._refusal(self.reply_error(exc, path, kernel=kernel), path) from None
        try:
            return response.json()
        except ValueError:
            raise ServerUnavailable(f"{self.shown_url} did not answer JSON; is it a Jupyter Server?", url=self.shown_url) from None

    def reply_error(self, exc: HttpError, path: str, *, kernel: str | None = None) -> JcliError:
        """The coded error for a non-2xx answer to ``/api/<path>``: a redirect read by
        :func:`~jcli_sidecar.kernel.hub_servers.redirect_error` (JupyterHub's for a server that is
        not running), a 404 on a named JupyterHub server's URL or a 502/503 on any checked with the hub, any other by :func:`~jcli_sidecar.kernel.server_replies.reply_error`."""
        if 300 <= exc.status < 400:
            from .hub_servers import redirect_error

            return redirect_error(self.url, self.shown_url, self._headers(), exc, path)
        if exc.status in (404, 502, 503):
            from .hub_servers import server_state_error

            told = server_state_error(self.url, self.shown_url, self._headers(), exc.status)
            if told is not None:
                return told
        return reply_error(exc, self.shown_url, path, kernel=kernel)

    def _refusal(self, err: JcliError, path: str) -> JcliError:
        """A 403 told apart: Jupyter Server refuses a bad token with 403 (not 401), so a 403 is first checked
        against the probe (which sees ``/api/status``, open to every accepted token) before it counts as ``FORBIDDEN``."""
        if isinstance(err, Forbidden) and path not in ("", "status"):
            _ = self.info  # raises NotAuthorized when the token itself is refused
        return err

    def optional(self, method: str, path: str) -> Any:
        """As :meth:`request`, but None where the server answers 404 (an API it does not have, an id it does not know)."""
        try:
            return self.request(method, path, raw_errors=True)
        except HttpError as exc:
            if exc.status == 404:
                return None
            raise self._refusal(self.reply_error(exc, path), path) from None

    @property
    def info(self) -> ServerInfo:
        """What this server is and offers (:func:`~jcli_sidecar.kernel.server_probe.probe`), asked at most once."""
        if self._info is None:
            from .server_probe import probe

            self._info = probe(self)
        return self._info

    # -- endpoints ---------------------------------------------------------

    def status(self, timeout: float | None = None) -> dict[str, Any]:
        return self.request("GET", "status", timeout=timeout)

    def kernelspecs(self) -> dict[str, Any]:
        return self.request("GET", "kernelspecs")

    def sessions(self) -> list[dict[str, Any]]:
        return self.request("GET", "sessions")

    def session(self, session_id: str) -> dict[str, Any] | None:
        """One session by its full id, or None where the server does not know it (or cannot look it up)."""
        try:
            return self.request("GET", f"sessions/{quote(session_id)}", raw_errors=True)
        except HttpError as exc:
            if exc.status == 404 or exc.status >= 500:  # Kernel Gateway answers a lookup by id with a 500
                return None
            raise self.reply_error(exc, "sessions/…") from None

    def create_session(self, path: str, name: str, kernel: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"path": path, "name": name, "type": "console", "kernel": {}}
        if kernel:
            body["kernel"]["name"] = kernel
        return self.request("POST", "sessions", body, timeout=max(self.timeout, 60.0), kernel=kernel or "the default")

    def delete_session(self, session_id: str) -> None:
        try:
            self.request("DELETE", f"sessions/{quote(session_id)}", raw_errors=True)
        except HttpError as exc:
            if exc.status == 404:
                raise SessionNotFound(f"session {session_id} could not be killed: it is gone") from None
            raise self.reply_error(exc, "sessions/…") from None

    def delete_kernel(self, kernel_id: str) -> None:
        try:
            self.request("DELETE", f"kernels/{quote(kernel_id)}", raw_errors=True)
        except HttpError as exc:
            if exc.status == 404:
                raise SessionNotFound(f"kernel {kernel_id} could not be shut down: it is gone") from None
            raise self.reply_error(exc, "kernels/…") from None

    def interrupt(self, kernel_id: str) -> None:
        self.request("POST", f"kernels/{quote(kernel_id)}/interrupt")

    def restart(self, kernel_id: str) -> dict[str, Any]:
        return self.request("POST", f"kernels/{quote(kernel_id)}/restart", timeout=max(self.timeout, 60.0))

    def kernel(self, kernel_id: str) -> dict[str, Any] | None:
        """One kernel by its full id, or None where the server has no such kernel."""
        return self.optional("GET", f"kernels/{quote(kernel_id)}")

    def websocket(self, api_path: str, *, max_message: int, timeout: float | None = None) -> WebSocket:
        """Open the websocket at ``/api/<api_path>`` (its query included) with this server's token and route.

        Raises:
            ServerUnavailable: no connection (``PROXY_AUTH_REQUIRED`` for a proxy's 407).
            HttpError: the server refused the upgrade (the caller reads its status).
        """
        base = self.url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        try:
            return open_websocket(
                f"{base}/api/{api_path}",
                headers=self._headers(),
                timeout=timeout or self.timeout,
                proxy=self.proxy,
                max_message=max_message,
            )
        except WireError as exc:
            raise self._unreachable(f"the websocket at {self.shown_url} is unreachable", exc) from None

    def channels(self, kernel_id: str, session_id: str) -> WebSocket:
        """Open the kernel's websocket (all channels multiplexed as JSON)."""
        base = self.url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        url = f"{base}/api/kernels/{quote(kernel_id)}/channels?session_id={quote(session_id)}"
        try:
            return open_websocket(url, headers=self._headers(), timeout=self.timeout, proxy=self.proxy)
        except WireError as exc:
            raise self._unreachable(f"kernel channels at {self.shown_url} are unreachable", exc) from None
        except HttpError as exc:
            if exc.status == 404:
                raise SessionNotFound(f"kernel {kernel_id} is gone (was it shut down?)") from None
            raise self.reply_error(exc, "kernels/…/channels") from None


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


def session_summary(row: dict[str, Any]) -> dict[str, Any]:
    """The fields j-cli shows for a session: ids, names, path and kernel state.

    Gateways keep no ``name``/``path`` of their own: they keep the path under
    ``notebook`` (j-cli creates sessions there with the name as the path), so
    the name is found there.

    Example:
        >>> row = {"id": "s1", "notebook": {"path": "eg1"}, "kernel": {"id": "k1", "name": "python3"}}
        >>> session_summary(row)["name"], session_summary(row)["path"]
        ('eg1', 'eg1')
    """
    kernel = row.get("kernel") or {}
    notebook = row.get("notebook") if isinstance(row.get("notebook"), dict) else {}
    path = row.get("path") or notebook.get("path")
    return {
        "id": row.get("id"),
        "name": row.get("name") or notebook.get("name") or path,
        "path": path,
        "kernel_id": kernel.get("id"),
        "kernel_name": kernel.get("name"),
        "execution_state": kernel.get("execution_state"),
    }


def kernel_summary(kernel: dict[str, Any]) -> dict[str, Any]:
    """A kernel that no session holds, shown as a session (no session id, no name)."""
    return {
        "id": None,
        "name": None,
        "path": None,
        "kernel_id": kernel.get("id"),
        "kernel_name": kernel.get("name"),
        "execution_state": kernel.get("execution_state"),
    }
