"""Thin clients of j-cli: the command line and its transport."""

from jcli_sidecar import __version__

__all__ = ["__version__"]
