"""What a server offers, asked once per command: the server-capability probe.

Jupyter Server, JupyterHub's single-user servers, Kernel Gateway and
Enterprise Gateway share the kernels API but not the rest:

==================  ===========  ===========  ==================
server              /api/status  listing      names kept as
==================  ===========  ===========  ==================
Jupyter Server      yes          always       ``name``
Kernel Gateway      no           off by       ``notebook.path``
                                 default
Enterprise Gateway  no           off by       ``notebook.path``
                                 default
==================  ===========  ===========  ==================

:func:`probe` tells them apart with two cheap GETs (``/api`` and
``/api/status``); whether listing is allowed is asked only where a command
needs a list (:func:`listing_allowed`). ``JupyterServer.info`` runs the probe
at most once per command.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base import Forbidden, JcliError, NotAuthorized

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    class JupyterServer(Protocol):
        """What the probe uses of :class:`~jcli_sidecar.kernel.jupyter_api.JupyterServer` (which imports this module)."""

        shown_url: str

        def request(self, method: str, path: str) -> Any: ...

        def optional(self, method: str, path: str) -> Any: ...

        @property
        def info(self) -> ServerInfo: ...


__all__ = ["EG_USER_SETTING", "LISTING_SETTINGS", "ServerInfo", "listing_forbidden", "probe", "refused_kernel_user"]

JUPYTER_SERVER = "jupyter_server"
KERNEL_GATEWAY = "kernel_gateway"
ENTERPRISE_GATEWAY = "enterprise_gateway"

#: The server setting that allows listing sessions and kernels, by server kind.
LISTING_SETTINGS = {
    KERNEL_GATEWAY: "--JupyterWebsocketPersonality.list_kernels=True (or KG_LIST_KERNELS=True)",
    ENTERPRISE_GATEWAY: "--EnterpriseGatewayApp.list_kernels=True (or EG_LIST_KERNELS=True)",
}


@dataclass(frozen=True)
class ServerInfo:
    """What one server is and offers.

    Attributes:
        kind: ``jupyter_server``, ``kernel_gateway`` or ``enterprise_gateway``.
        version: the Jupyter Server version it reports (a gateway's underlying one).
        gateway_version: Enterprise Gateway's own version, else None.
        status: ``/api/status``'s answer, or None where the server has none.
    """

    kind: str
    version: str | None
    gateway_version: str | None
    status: dict[str, Any] | None

    @property
    def is_gateway(self) -> bool:
        return self.kind != JUPYTER_SERVER

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "version": self.version, "gateway_version": self.gateway_version}


def probe(server: JupyterServer) -> ServerInfo:
    """Ask ``server`` what it is (two GETs).

    Raises:
        JcliError: the server cannot be reached, refuses the token, or is no
            Jupyter server at this base URL (``/api`` itself is missing).
    """
    root = server.request("GET", "")
    if not isinstance(root, dict):
        root = {}
    gateway_version = root.get("gateway_version")
    try:
        status = server.optional("GET", "status")
    except Forbidden as err:  # /api/status is open to every token the server accepts: this one is refused
        raise NotAuthorized(
            f"Jupyter Server at {server.shown_url} refused the token (HTTP 403); give the server's token with -t or JCLI_JUPYTER_SERVER_TOKEN",
            **err.details,
        ) from None
    if gateway_version:
        kind = ENTERPRISE_GATEWAY
    elif status is None:
        kind = KERNEL_GATEWAY  # the kernels API without /api/status: Kernel Gateway's jupyter-websocket personality
    else:
        kind = JUPYTER_SERVER
    return ServerInfo(kind, root.get("version"), gateway_version, status if isinstance(status, dict) else None)


def listing_forbidden(server: JupyterServer, err: Forbidden, wanted: str) -> JcliError:
    """``err`` (a 403 on a listing) told as what it means: this server does not list, and the switch that makes it.

    Args:
        wanted: what needed the listing, for the message ("look sessions up by name", ...).
    """
    kind = server.info.kind
    setting = LISTING_SETTINGS.get(kind)
    label = {KERNEL_GATEWAY: "Kernel Gateway", ENTERPRISE_GATEWAY: "Enterprise Gateway"}.get(kind, "The server")
    message = f"{label} at {server.shown_url} does not list sessions (HTTP 403), so j-cli cannot {wanted}"
    if wanted.startswith(("find", "look")):
        message += (
            "; select the session by its full kernel id (session create prints it);"
            " a name selects only a session this user created here through j-cli, which remembers it"
        )
    if setting:
        message += f"; to allow listing, start the server with {setting}"
    return Forbidden(message, **{**err.details, "server_kind": kind, "needs": "listing", "setting": setting})


#: Enterprise Gateway refuses kernels for the users in this setting (root by default).
EG_USER_SETTING = "--EnterpriseGatewayApp.unauthorized_users (or EG_UNAUTHORIZED_USERS)"


def refused_kernel_user(server: JupyterServer, err: Forbidden) -> JcliError:
    """``err`` (a 403 on starting a kernel) with the switch named, where the server is Enterprise Gateway."""
    if server.info.kind != ENTERPRISE_GATEWAY:
        return err
    hint = (
        "; Enterprise Gateway refuses kernels for the users in its unauthorized_users (root by default): "
        f"run the gateway as another user, or change {EG_USER_SETTING}"
    )
    return Forbidden(err.message + hint, **{**err.details, "server_kind": ENTERPRISE_GATEWAY, "setting": EG_USER_SETTING})
