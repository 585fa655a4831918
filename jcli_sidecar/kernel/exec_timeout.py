"""The per-cell timeout of ``j-cli exec``: ``--timeout``, else ``JCLI_EXEC_TIMEOUT``, else 600 s.

One settings order, resolved in :func:`resolve_timeout`: the flag wins, then
the environment variable, then :data:`DEFAULT_TIMEOUT`. ``0`` or ``none``
(either place) means no limit. A value that is not a timeout is a usage
error before any code runs; from the environment, it names the variable.
"""

from __future__ import annotations

import math

from ..base import SETTINGS, UsageError, setting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_TIMEOUT", "MAX_TIMEOUT", "TIMEOUT_ENV", "check_timeout", "parse_timeout", "resolve_timeout"]

#: The environment variable holding the default per-cell timeout.
TIMEOUT_ENV = "JCLI_EXEC_TIMEOUT"
#: Seconds a cell may run when neither ``--timeout`` nor :data:`TIMEOUT_ENV` says otherwise.
DEFAULT_TIMEOUT = SETTINGS[TIMEOUT_ENV].default
#: The longest ``timeout`` a run takes, in seconds (30 days); no timeout waits forever.
MAX_TIMEOUT = SETTINGS[TIMEOUT_ENV].maximum


def check_timeout(value: float | None, flag: str = "--timeout") -> float | None:
    """``value`` if it is a usable timeout (finite, > 0, at most :data:`MAX_TIMEOUT`); None is no timeout.

    ``flag`` names the option in the message (``--run-timeout`` for a whole run's budget).

    Raises:
        UsageError: anything else (zero, negative, NaN, infinity, too large).

    Example:
        >>> check_timeout(30), check_timeout(None)
        (30, None)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
        raise UsageError(
            f"{flag} must be a number of seconds > 0 and at most {MAX_TIMEOUT:.0f} (30 days), or 0 or none for no limit; got {value!r}"
        )
    return value


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
            check_timeout).

    Example:
        >>> resolve_timeout(None, {}), resolve_timeout(5, {"JCLI_EXEC_TIMEOUT": "none"}), resolve_timeout(None, {"JCLI_EXEC_TIMEOUT": "0"})
        (600.0, 5, None)
    """
    if flag is not None:
        return None if flag == 0 else check_timeout(flag)
    return setting(TIMEOUT_ENV, env)
