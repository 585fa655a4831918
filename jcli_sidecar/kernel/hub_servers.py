"""What a redirect from a server URL means, above all JupyterHub's for a user's server that is not running.

Through JupyterHub's proxy, ``/user/NAME/`` (or ``/user/NAME/SERVER/`` for a
named server) reaches the user's single-user server while it runs. When it
does not (stopped, or still starting), the proxy hands the request to the
hub, which answers ``302`` to ``/hub/user/NAME/...``; there the hub answers
``424`` with a JSON message (JupyterHub 4 and later). Neither is a Jupyter
Server's answer, and neither says whether the server is stopped or still
starting, so j-cli asks the hub (``GET /hub/api/users/NAME``, with the same
token) and says which:

===============================  ==================================================
the hub's user model             ``SERVER_NOT_RUNNING`` with ``state``
===============================  ==================================================
no such server                   ``stopped``: start it at ``spawn_url`` (or ``start_api``)
``pending: "spawn"``             ``starting``: run the command again once it is ready
``pending: "stop"``              ``stopping``
``ready: true``                  ``ready``: it started meanwhile; run the command again
``ready: true``, and a 502/503   ``unresponsive``: it died before the hub noticed
not readable                     ``unknown`` (a token without ``read:servers``)
401, 403                         ``NOT_AUTHORIZED``: the hub refused the token
===============================  ==================================================

Two more answers are checked with the hub the same way
(:func:`server_state_error`); where the hub says nothing more, they stay
what they were:

- a named server (``/user/NAME/SERVER/``) that is not running, while the
  user's default server runs: the proxy hands the request to the default
  server, which answers ``404``;
- a server that died (crashed, killed) before the hub noticed: the proxy
  still routes to it and answers ``503`` (or ``502``) with an HTML page;
  the hub still counts it as running, and j-cli says ``unresponsive``.

j-cli never waits for a server to start and never starts one: starting a
server is the user's (or the hub admin's) decision. Any other redirect is
``SERVER_UNAVAILABLE`` naming where it points (redacted). Redirects are
never followed for a request itself; the one extra request goes to the same
origin as the server URL, so the token never travels anywhere new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from ..base import JcliError, NotAuthorized, ServerNotRunning, ServerUnavailable
from .server_replies import MESSAGE_CHARS, server_message
from .urls import redact_url
from .wire import HttpError, WireError, http_request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HubRoute", "hub_route", "not_running", "redirect_error", "server_state", "server_state_error"]

#: How long the one question to the hub may take.
HUB_TIMEOUT = 10.0
_USER_PATH = re.compile(r"^(?P<prefix>/(?:.*/)?)user/(?P<user>[^/]+)(?:/(?P<server>[^/]+))?/?$")
_STATE_WORDS = {
    "stopped": "is not running",
    "starting": "is still starting",
    "stopping": "is stopping",
    "ready": "was not running when asked and is ready now",
    "unresponsive": "does not answer though the hub counts it as running (it may have died)",
    "unknown": "is not running (or still starting)",
}


@dataclass(frozen=True)
class HubRoute:
    """A JupyterHub single-user server URL taken apart.

    Attributes:
        origin: ``scheme://host[:port]`` of the hub's public URL.
        prefix: the hub's base path (``/`` by default), ending in ``/``.
        user: the user's name (unquoted).
        server: the named server's name, ``""`` for the default server.
    """

    origin: str
    prefix: str
    user: str
    server: str

    @property
    def hub(self) -> str:
        """The hub's own URL (``.../hub/``)."""
        return f"{self.origin}{self.prefix}hub/"

    def _user_part(self) -> str:
        return quote(self.user, safe="") + (f"/{quote(self.server, safe='')}" if self.server else "")

    @property
    def spawn_url(self) -> str:
        """The hub page that starts this server."""
        return f"{self.hub}spawn/{self._user_part()}"

    @property
    def start_api(self) -> str:
        """The REST call that starts this server (a ``POST`` with the user's token)."""
        where = f"servers/{quote(self.server, safe='')}" if self.server else "server"
        return f"POST {self.hub}api/users/{quote(self.user, safe='')}/{where}"

    @property
    def label(self) -> str:
        """How messages name this server: ``alice's server`` or ``alice's server 'lab2'``."""
        return f"{self.user}'s server" + (f" {self.server!r}" if self.server else "")

    def is_hub_redirect(self, location: str) -> bool:
        """Whether ``location`` is the hub's own page for this server (``{prefix}hub/user/NAME[/SERVER]``)."""
        parts = urlsplit(location)
        if parts.scheme and f"{parts.scheme}://{parts.netloc}" != self.origin:
            return False
        mine = f"{self.prefix}hub/user/{self._user_part()}"
        path = parts.path
        return path == mine or path.startswith(mine + "/") or unquote(path).startswith(unquote(mine) + "/")


def hub_route(url: str) -> HubRoute | None:
    """The hub route in a base URL ``.../user/NAME[/SERVER]``, else None.

    Example:
        >>> route = hub_route("http://127.0.0.1:8000/user/alice/lab2")
        >>> route.hub, route.user, route.server, route.spawn_url
        ('http://127.0.0.1:8000/hub/', 'alice', 'lab2', 'http://127.0.0.1:8000/hub/spawn/alice/lab2')
        >>> hub_route("https://hub.example/jhub/user/bob").start_api
        'POST https://hub.example/jhub/hub/api/users/bob/server'
        >>> hub_route("http://127.0.0.1:8888") is None
        True
    """
    parts = urlsplit(url)
    found = _USER_PATH.match(parts.path)
    if not found or not parts.netloc:
        return None
    origin = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
    return HubRoute(origin, found["prefix"], unquote(found["user"]), unquote(found["server"] or ""))


def server_state(model: Any, server: str) -> str:
    """``stopped``, ``starting``, ``stopping``, ``ready`` or ``unknown``: the hub's user model read for one server.

    Example:
        >>> server_state({"servers": {"lab2": {"pending": "spawn", "ready": False}}}, "lab2")
        'starting'
        >>> server_state({"servers": {}}, ""), server_state({"name": "alice"}, "")
        ('stopped', 'unknown')
    """
    servers = model.get("servers") if isinstance(model, dict) else None
    if not isinstance(servers, dict):
        return "unknown"  # a token that may not read servers
    spawner = servers.get(server)
    if not isinstance(spawner, dict):
        return "stopped"
    pending = spawner.get("pending")
    if pending == "spawn":
        return "starting"
    if pending == "stop":
        return "stopping"
    return "ready" if spawner.get("ready") else "stopped"


#: The header every JupyterHub answer carries.
HUB_HEADER = "x-jupyterhub-version"


def _ask_hub(route: HubRoute, headers: dict[str, str]) -> tuple[str, bool]:
    """(the server's state as the hub tells it, whether a JupyterHub answered): one GET, same origin, same token.

    Raises:
        NotAuthorized: a JupyterHub refused the token.
    """
    url = f"{route.hub}api/users/{quote(route.user, safe='')}"
    try:
        response = http_request("GET", url, headers=headers, timeout=HUB_TIMEOUT)
    except HttpError as exc:
        is_hub = HUB_HEADER in exc.headers
        if exc.status in (401, 403) and is_hub:
            said = server_message(exc)
            raise NotAuthorized(
                f"JupyterHub at {redact_url(route.hub)} refused the token (HTTP {exc.status}"
                f"{': ' + said.rstrip('.') if said else ''}); give an API token of the hub "
                f"({redact_url(route.hub)}token) with -t or JCLI_JUPYTER_SERVER_TOKEN",
                url=redact_url(route.hub),
                http_status=exc.status,
            ) from None
        return "unknown", is_hub
    except WireError:
        return "unknown", False
    try:
        model = response.json()
    except ValueError:
        model = None
    return server_state(model, route.server), HUB_HEADER in response.headers


def not_running(route: HubRoute, state: str, shown_url: str, http_status: int, said: str = "") -> ServerNotRunning:
    """The ``SERVER_NOT_RUNNING`` error for ``route`` in ``state``, saying how to start it."""
    if state in ("starting", "ready"):
        how = "run this again once it is ready"
    elif state == "unresponsive":
        how = f"stop it and start it again from the hub ({redact_url(route.hub)}home), then run this again"
    else:
        how = f"start it at {redact_url(route.spawn_url)} (or {redact_url(route.start_api)} with the user's token), then run this again"
    facts: dict[str, Any] = {
        "url": shown_url,
        "http_status": http_status,
        "state": state,
        "hub_url": redact_url(route.hub),
        "user": route.user,
        "server_name": route.server,
        "spawn_url": redact_url(route.spawn_url),
        "start_api": redact_url(route.start_api),
    }
    if said:
        facts["server_message"] = said
    return ServerNotRunning(f"JupyterHub: {route.label} at {shown_url} {_STATE_WORDS[state]}; {how}", **facts)


def redirect_error(url: str, shown_url: str, headers: dict[str, str], exc: HttpError, path: str) -> JcliError:
    """The coded error for a redirect (3xx) in answer to ``/api/<path>`` on the server at ``url``.

    Args:
        url: the server's base URL (credentials included: it is never printed).
        shown_url: the same, redacted, for messages.
        headers: the request's headers (its token), for the one question to the hub.

    Returns:
        ``SERVER_NOT_RUNNING`` for the hub's redirect about this server, ``NOT_AUTHORIZED`` where
        the hub then refused the token, else ``SERVER_UNAVAILABLE`` naming where the redirect points.
    """
    location = "".join(ch if ch.isprintable() else " " for ch in exc.headers.get("location", "")[:MESSAGE_CHARS]).strip()
    route = hub_route(url)
    if route is not None and location and route.is_hub_redirect(location):
        try:
            state, _ = _ask_hub(route, headers)
        except NotAuthorized as err:
            return err
        return not_running(route, state, shown_url, exc.status)
    where = f" to {redact_url(location)}" if location else ""
    return ServerUnavailable(
        f"{shown_url} answered /api/{path} with a redirect (HTTP {exc.status}){where}; give the URL of the Jupyter Server itself",
        url=shown_url,
        http_status=exc.status,
        **({"location": redact_url(location)} if location else {}),
    )


def server_state_error(url: str, shown_url: str, headers: dict[str, str], http_status: int) -> JcliError | None:
    """What a 404 on a named server's URL, or a 502/503 on any server's URL, stands for by the hub; else None.

    ``SERVER_NOT_RUNNING`` where the hub says the server is stopped,
    starting or stopping, or (for a 502/503) counts a server as running that
    does not answer; ``NOT_AUTHORIZED`` where the hub refused the token; None
    where the URL is no hub route, the answer lacks JupyterHub's header, or
    the hub says nothing more (the reply then says the rest).

    Args:
        url: the server's base URL (credentials included: it is never printed).
        shown_url: the same, redacted, for messages.
        headers: the request's headers (its token), for the one question to the hub.
    """
    route = hub_route(url)
    if route is None or (http_status == 404 and not route.server):
        return None
    try:
        state, is_hub = _ask_hub(route, headers)
    except NotAuthorized as err:
        return err  # a JupyterHub (its header says so) refused the token
    if not is_hub:
        return None
    if state in ("stopped", "starting", "stopping"):
        return not_running(route, state, shown_url, http_status)
    if state == "ready" and http_status in (502, 503):
        return not_running(route, "unresponsive", shown_url, http_status)
    return None
