"""The image types and size limits of each agent host j-cli serves, in one table.

``--host NAME`` (a read's ``host`` field, ``mcp serve --host``) fits an image
to the row of that name (:mod:`jcli_sidecar.read.imageview`). The table's
names are the hosts j-cli knows; how ``j-cli setup NAME`` presents each is
the client's (``jcli.setup.hosts``, in the same order; a test holds them equal).
"""

from __future__ import annotations

from .mime import RASTER_IMAGE_TYPES

__all__ = ["HOST_NAMES", "HOST_PROFILES", "HostProfile", "MiB"]

MiB = 1024 * 1024


class HostProfile:
    """The image types and size limits one agent host accepts."""

    __slots__ = ("name", "types", "max_edge", "max_pixels", "max_bytes", "why")

    def __init__(self, name: str, types: tuple[str, ...], max_edge: int, max_pixels: int, max_bytes: int, why: str):
        self.name = name
        self.types = types
        self.max_edge = max_edge
        self.max_pixels = max_pixels
        self.max_bytes = max_bytes
        self.why = why


_RASTER = RASTER_IMAGE_TYPES  # every host takes every raster type j-cli reads

#: ``--host NAME`` -> what that host takes, for every host j-cli serves.
HOST_PROFILES: dict[str, HostProfile] = {
    p.name: p
    for p in (
        HostProfile(
            "dsh",
            _RASTER,
            2000,
            2000 * 2000,
            3 * MiB + MiB // 2,
            "DSH's attachment store (dsh-attachment-local 0.1.0-rc.8 defaults) admits at most 2000 px per side and 3.5 MiB",
        ),
        HostProfile(
            "claude",
            _RASTER,
            1568,
            1568 * 1568,
            3 * MiB + 3 * MiB // 4,
            "Claude takes png/jpeg/gif/webp up to 5 MB of base64 (3.75 MiB of bytes) and downscales past a 1568 px long edge",
        ),
        HostProfile(
            "codex",
            _RASTER,
            2048,
            2048 * 2048,
            10 * MiB,
            "Codex rejects SVG; OpenAI vision scales images into a 2048 px square",
        ),
        HostProfile(
            "opencode",
            _RASTER,
            1568,
            1568 * 1568,
            3 * MiB + 3 * MiB // 4,
            "OpenCode forwards attachments to the model provider; these are the strictest common limits (Claude's)",
        ),
    )
}

#: The names, for help texts: "dsh, claude, codex or opencode".
HOST_NAMES = ", ".join(list(HOST_PROFILES)[:-1]) + " or " + list(HOST_PROFILES)[-1]
