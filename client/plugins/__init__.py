"""The JS host plugins shipped with j-cli (copied into place by ``j-cli setup``)."""

import os

__all__ = ["plugin_path", "shared_module_path"]


def plugin_path(host: str) -> str:
    """The shipped plugin file for ``host``, as its :class:`~jcli.setup.hosts.Host` names it."""
    from jcli.setup.hosts import HOSTS

    plugin = HOSTS[host].plugin
    if plugin is None:
        raise KeyError(f"{host} has no plugin")
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), *plugin.file.split("/"))


def shared_module_path() -> str:
    """The sidecar client both plugins share, inlined into each by ``j-cli setup``."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "sidecar-client.mjs")
