"""The retention policy of inline runs: how long and how many completed runs to keep.

A flag wins over the environment (``JCLI_OUTPUT_MAX_AGE_DAYS``,
``JCLI_OUTPUT_MAX_RUNS``), which wins over the defaults 7 and 50. The grace
period of a half-written run whose writer cannot be checked comes from
``JCLI_STAGING_GRACE_SECONDS`` (default one day, at least 60 s). Resolved by
the client before any code runs, and sent with every store or clean request
(:mod:`jcli_sidecar.runs.retention` applies it). Kept apart from the cleaner so
that resolving it imports nothing else.
"""

from __future__ import annotations

import os

from ..base import SETTINGS, UsageError, setting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["DEFAULT_MAX_AGE_DAYS", "DEFAULT_MAX_RUNS", "DEFAULT_STAGING_GRACE_SECONDS", "Policy", "resolve_policy"]

DEFAULT_MAX_AGE_DAYS = SETTINGS["JCLI_OUTPUT_MAX_AGE_DAYS"].default
DEFAULT_MAX_RUNS = SETTINGS["JCLI_OUTPUT_MAX_RUNS"].default
DEFAULT_STAGING_GRACE_SECONDS = SETTINGS["JCLI_STAGING_GRACE_SECONDS"].default
_MIN_GRACE = SETTINGS["JCLI_STAGING_GRACE_SECONDS"].minimum


class Policy:
    """How long and how many completed runs to keep (positive integers), and the staging grace period (seconds >= 60)."""

    __slots__ = ("max_age_days", "max_runs", "staging_grace_seconds")

    def __init__(
        self,
        max_age_days: int = DEFAULT_MAX_AGE_DAYS,
        max_runs: int = DEFAULT_MAX_RUNS,
        staging_grace_seconds: int = DEFAULT_STAGING_GRACE_SECONDS,
    ) -> None:
        self.max_age_days = _positive("max_age_days", max_age_days)
        self.max_runs = _positive("max_runs", max_runs)
        grace = staging_grace_seconds
        if isinstance(grace, bool) or not isinstance(grace, int) or grace < _MIN_GRACE:
            raise UsageError(f"staging_grace_seconds must be whole seconds >= {_MIN_GRACE:g}, got {grace!r}")
        self.staging_grace_seconds = grace

    def to_wire(self) -> dict[str, int]:
        return {"max_age_days": self.max_age_days, "max_runs": self.max_runs, "staging_grace_seconds": self.staging_grace_seconds}

    @classmethod
    def from_wire(cls, value: Any) -> Policy:
        """Rebuild from a request's ``policy`` map (validated again).

        Raises:
            UsageError: missing or bad values.
        """
        if not isinstance(value, dict):
            raise UsageError("a retention policy {max_age_days, max_runs} is required")
        return cls(value.get("max_age_days"), value.get("max_runs"), value.get("staging_grace_seconds", DEFAULT_STAGING_GRACE_SECONDS))


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} must be a positive integer, got {value!r} (0 and negatives never mean 'delete all')")
    return value


def resolve_policy(max_age_days: int | None = None, max_runs: int | None = None, env: Mapping[str, str] | None = None) -> Policy:
    """The policy: a flag wins over the environment, which wins over the default.

    ``JCLI_OUTPUT_RETENTION_DAYS`` (upstream jupyter-jcli's name) counts when
    ``JCLI_OUTPUT_MAX_AGE_DAYS`` is unset.

    Raises:
        UsageError: a zero, negative or non-integer value anywhere.

    Example:
        >>> resolve_policy(max_runs=3, env={"JCLI_OUTPUT_MAX_RUNS": "9", "JCLI_OUTPUT_MAX_AGE_DAYS": "2"}).to_wire()
        {'max_age_days': 2, 'max_runs': 3, 'staging_grace_seconds': 86400}
    """
    if max_age_days is not None:
        age = max_age_days
    elif (os.environ if env is None else env).get("JCLI_OUTPUT_MAX_AGE_DAYS", "").strip():
        age = setting("JCLI_OUTPUT_MAX_AGE_DAYS", env)
    else:  # upstream jupyter-jcli's name, when ours is unset
        age = setting("JCLI_OUTPUT_RETENTION_DAYS", env)
    runs = max_runs if max_runs is not None else setting("JCLI_OUTPUT_MAX_RUNS", env)
    return Policy(age, runs, setting("JCLI_STAGING_GRACE_SECONDS", env))
