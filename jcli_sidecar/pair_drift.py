"""Pair drift for agents (placeholder while the rest lands)."""

from __future__ import annotations

__all__ = ["after_edit", "before_edit"]


def before_edit(call) -> str | None:
    return None


def after_edit(call) -> str | None:
    return None
