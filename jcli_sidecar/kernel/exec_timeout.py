"""The per-cell timeout of ``j-cli exec``: ``--timeout``, else ``JCLI_EXEC_TIMEOUT``, else 600 s.

One settings order, resolved in :func:`resolve_timeout`: the flag wins, then
the environment variable, then :data:`DEFAULT_TIMEOUT`. ``0`` or ``none``
(either place) means no limit. A value that is not a timeout is a usage
error before any code runs; from the environment, it names the variable.
"""

from __future__ import annotations

from ..base.settings import SETTINGS, setting
from .kernel_client import check_timeout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_TIMEOUT", "TIMEOUT_ENV", "parse_timeout", "resolve_timeout"]

#: The environment variable holding the default per-cell timeout.
TIMEOUT_ENV = "JCLI_EXEC_TIMEOUT"
#: Seconds a cell may run when neither ``--timeout`` nor :data:`TIMEOUT_ENV` says otherwise.
DEFAULT_TIMEOUT = SETTINGS[TIMEOUT_ENV].default


def parse_timeout(text: str) -> float:
    """A timeout as written: plain ASCII seconds, or ``none`` (0.0: no limit).

    Raises:
        ValueError: neither.

    Example:
        >>> parse_timeout("2.5"), parse_timeout("none"), parse_timeout("0")
        (2.5, 0.0, 0.0)
    """
    if text.lower() == "none":
        return 0.0
    if not text or not text.isascii() or "_" in text or text != text.strip():
        raise ValueError(f"{text!r} is not a number of seconds or none")
    return float(text)


def resolve_timeout(flag: float | None, env: Mapping[str, str] | None = None) -> float | None:
    """Seconds per cell, or None for no limit: ``flag`` (0 is no limit), else the environment, else the default.

    Raises:
        UsageError: the flag or the variable is not a usable timeout (see
            ``kernel_client.check_timeout``).

    Example:
        >>> resolve_timeout(None, {}), resolve_timeout(5, {"JCLI_EXEC_TIMEOUT": "none"}), resolve_timeout(None, {"JCLI_EXEC_TIMEOUT": "0"})
        (600.0, 5, None)
    """
    if flag is not None:
        return None if flag == 0 else check_timeout(flag)
    return setting(TIMEOUT_ENV, env)
