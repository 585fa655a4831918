"""How a thin client reaches the core.

Today every request is answered in-process by ``jcli_sidecar``; the sidecar
transport plugs in here, with this direct path kept as its fallback.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["read"]


def read(request: dict[str, Any]) -> dict[str, Any]:
    """Answer a read request (see ``jcli_sidecar.requests``).

    Raises:
        jcli_sidecar.errors.JcliError: a coded error.
    """
    from jcli_sidecar.requests import handle_read

    return handle_read(request)
