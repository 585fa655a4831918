"""Which proxy, if any, a connection to a Jupyter Server goes through, decided from the environment.

The variables are the ones curl, ``requests`` and ``urllib`` read:

- ``http_proxy`` for an ``http://`` (and ``ws://``) server, ``https_proxy``
  for ``https://`` (and ``wss://``); else ``all_proxy``.
- Each may be spelled in lower or upper case. Where both are set, the
  lower-case one wins, and a lower-case one set empty means "none" even
  when the upper-case one holds a proxy (as ``urllib`` reads them).
- ``no_proxy`` (or ``NO_PROXY``): a comma- or space-separated list of
  hosts that are reached directly. ``*`` alone means every host. A name
  matches itself and every name under it (``example.com`` and
  ``.example.com`` and ``*.example.com`` all match ``example.com`` and
  ``a.example.com``, never ``badexample.com``); an IP address matches
  that address and a CIDR block (``10.0.0.0/8``, ``fd00::/8``) the
  addresses in it, when the server URL names an address (names are never
  resolved to decide); an entry with ``:PORT`` matches that port only.

**Loopback is never proxied**, whatever the variables say: ``localhost``
and names under ``.localhost``, ``127.0.0.0/8`` and ``::1`` are always
reached directly, and so is the embedded server (which binds 127.0.0.1).

A proxy URL is ``http://[user:password@]host[:port]`` (a bare
``host:port`` is read as ``http://``; the port defaults to 80, the ``http``
scheme's, where curl would assume 1080). Its credentials go out as
``Proxy-Authorization: Basic`` and are never shown: a route names the
proxy through :func:`~jcli_sidecar.kernel.urls.redact_url`. TLS to the
proxy itself (``https://`` proxies) and SOCKS proxies are refused with a
``USAGE_ERROR`` that names the variable.

Nothing here touches the network: :mod:`jcli_sidecar.kernel.wire` has
``http.client`` open the tunnel (an HTTP ``CONNECT``) a route describes.
"""

from __future__ import annotations

import os
import socket

from ..base import UsageError
from .urls import redact_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["PROXY_VARIABLES", "ProxyRoute", "bypassed", "is_loopback", "proxy_environment", "proxy_for"]

#: Every variable a route is decided from (each in both cases).
PROXY_VARIABLES = tuple(spelling for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy") for spelling in (name, name.upper()))


class ProxyRoute:
    """A proxy to tunnel through: where it listens, what to send it, and how to name it.

    Attributes:
        host, port: the proxy's address.
        authorization: the ``Proxy-Authorization`` header's value, or None.
        shown: the proxy URL with its credentials redacted (for messages).
        variable: the environment variable it came from.
    """

    __slots__ = ("host", "port", "authorization", "shown", "variable")

    def __init__(self, host: str, port: int, authorization: str | None, shown: str, variable: str) -> None:
        self.host = host
        self.port = port
        self.authorization = authorization
        self.shown = shown
        self.variable = variable

    def __repr__(self) -> str:  # never the credentials
        return f"ProxyRoute({self.shown!r} from {self.variable})"

    def named(self) -> str:
        """How messages name it: ``the proxy http://***@host:port (from HTTPS_PROXY)``."""
        return f"the proxy {self.shown} (from {self.variable})"


def proxy_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The proxy variables set in ``environ`` (default: this process's), as a client passes them on.

    Example:
        >>> proxy_environment({"HTTPS_PROXY": "http://p:3128", "PATH": "/bin"})
        {'HTTPS_PROXY': 'http://p:3128'}
    """
    env = os.environ if environ is None else environ
    return {name: env[name] for name in PROXY_VARIABLES if name in env}


def _variable(env: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """``(variable, value)`` for ``name``: the lower-case spelling when set (empty: None), else the upper-case one."""
    if name in env:
        return (name, env[name].strip()) if env[name].strip() else None
    upper = name.upper()
    value = env.get(upper, "").strip()
    return (upper, value) if value else None


def proxy_for(url: str, env: Mapping[str, str] | None = None) -> ProxyRoute | None:
    """The proxy a connection to ``url`` goes through, or None for a direct connection.

    Args:
        url: a server URL (``http``, ``https``, ``ws`` or ``wss``).
        env: the environment to decide from (default: this process's).

    Raises:
        UsageError: the proxy variable that applies is malformed, or names
            a proxy j-cli cannot speak to (``https://``, SOCKS).

    Example:
        >>> env = {"https_proxy": "http://me:pw@proxy.corp:3128", "no_proxy": ".internal"}
        >>> route = proxy_for("https://hub.example/user/me", env)
        >>> route.host, route.port, route.named()
        ('proxy.corp', 3128, 'the proxy http://***@proxy.corp:3128 (from https_proxy)')
        >>> proxy_for("https://jupyter.internal", env), proxy_for("http://127.0.0.1:8888", {"http_proxy": "p:1"})
        (None, None)
    """
    env = os.environ if env is None else env
    if not any(name in env for name in PROXY_VARIABLES):
        return None  # the common case, decided without parsing anything
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    secure = parts.scheme in ("https", "wss")
    host = (parts.hostname or "").rstrip(".")
    try:
        port = parts.port or (443 if secure else 80)
    except ValueError:
        return None  # the connection itself reports the bad port
    if not host or is_loopback(host):
        return None
    found = _variable(env, "https_proxy" if secure else "http_proxy") or _variable(env, "all_proxy")
    if found is None:
        return None
    no_proxy = _variable(env, "no_proxy")
    if no_proxy is not None and bypassed(host, port, no_proxy[1]):
        return None
    return _parse_proxy(*found)


def _parse_proxy(variable: str, value: str) -> ProxyRoute:
    from urllib.parse import unquote, urlsplit

    raw = value if "://" in value else "http://" + value
    shown = redact_url(raw)
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        raise UsageError(f"the proxy {shown} in {variable} is malformed (check its host and port)") from None
    scheme = parts.scheme.lower()
    if scheme == "https":
        raise UsageError(
            f"the proxy {shown} in {variable} is an https:// proxy; j-cli speaks to proxies in plain HTTP only "
            "(give its http:// address, or set no_proxy for this server)"
        )
    if scheme != "http":
        raise UsageError(f"the proxy {shown} in {variable} is a {scheme}:// proxy; j-cli supports http:// proxies only")
    if not parts.hostname:
        raise UsageError(f"the proxy {shown} in {variable} names no host")
    authorization = None
    if parts.username is not None or parts.password is not None:
        import base64

        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode("ascii")
    return ProxyRoute(parts.hostname, port or 80, authorization, f"http://{_authority(shown)}", variable)


def _authority(shown: str) -> str:
    """The redacted ``[***@]host[:port]`` of a proxy URL (its path, if any, dropped)."""
    rest = shown.split("://", 1)[1]
    at = rest.rfind("@")
    cut = min((i for i in (rest.find("/", at + 1), rest.find("?", at + 1)) if i >= 0), default=len(rest))
    return rest[:cut]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` (and names under it), ``127.0.0.0/8``, ``::1`` and ``::ffff:127.x.y.z``.

    Example:
        >>> [is_loopback(h) for h in ("localhost", "api.localhost", "127.3.2.1", "::1", "10.0.0.1", "localhost.example")]
        [True, True, True, True, False, False]
    """
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    packed = _address(host)
    if packed is None:
        return False
    if len(packed) == 16:
        if packed == bytes(15) + b"\x01":
            return True
        if packed[:12] != bytes(10) + b"\xff\xff":
            return False
        packed = packed[12:]
    return packed[0] == 127


def _address(host: str) -> bytes | None:
    """The packed IPv4 or IPv6 address ``host`` spells, or None for a name."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            return socket.inet_pton(family, host.strip("[]").split("%", 1)[0])
        except (OSError, ValueError):  # not an address of this family: the next, or a name
            continue
    return None


def bypassed(host: str, port: int, no_proxy: str) -> bool:
    """True when ``no_proxy`` (a list, as the variable holds it) says ``host:port`` is reached directly.

    Example:
        >>> [bypassed(h, 8888, ".corp, 10.0.0.0/8, gw:9999") for h in ("a.corp", "corp", "xcorp", "10.2.3.4", "gw")]
        [True, True, False, True, False]
    """
    host = host.lower().rstrip(".")
    address = _address(host)
    for entry in no_proxy.replace(",", " ").split():
        entry = entry.lower()
        if entry == "*":
            return True
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if "/" in name:
            if address is not None and _in_block(address, name):
                return True
            continue
        name = name.strip("[]").rstrip(".")
        if name.startswith("*."):
            name = name[1:]
        name = name.lstrip(".")
        if not name:
            continue
        entry_address = _address(name)
        if entry_address is not None or address is not None:
            if entry_address == address:
                return True
            continue
        if host == name or host.endswith("." + name):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``(host, port)`` of a ``no_proxy`` entry: ``host:port``, ``[v6]:port``; a bare IPv6 address has no port."""
    if entry.startswith("["):
        end = entry.find("]")
        if end > 0 and entry[end + 1 : end + 2] == ":" and entry[end + 2 :].isdigit():
            return entry[: end + 1], int(entry[end + 2 :])
        return entry, None
    head, sep, tail = entry.rpartition(":")
    if sep and tail.isdigit() and ":" not in head and "/" not in tail:
        return head, int(tail)
    return entry, None


def _in_block(address: bytes, block: str) -> bool:
    """True when ``address`` is inside ``block`` (``a.b.c.d/n`` or ``v6/n``); a malformed block matches nothing."""
    network, _, bits_text = block.partition("/")
    network_address = _address(network)
    if network_address is None or len(network_address) != len(address) or not bits_text.isdigit():
        return False
    bits = int(bits_text)
    width = len(address) * 8
    if bits > width:
        return False
    shift = width - bits
    return int.from_bytes(address, "big") >> shift == int.from_bytes(network_address, "big") >> shift
