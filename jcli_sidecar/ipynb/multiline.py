"""Notebook multi-line values: a string, or a list of strings, joined one way everywhere.

Kept apart from :mod:`jcli_sidecar.ipynb.notebook` so that code which only needs
the join (the exec result's text budget) does not import the notebook reader.
"""

from __future__ import annotations

from ..base import OutputDataInvalid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["join_text"]


def join_text(value: Any, what: str) -> str:
    """Join a notebook multi-line value: a string, or a list of strings.

    Raises:
        OutputDataInvalid: anything else.

    Example:
        >>> join_text(["a\\n", "b"], "source")
        'a\\nb'
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return "".join(value)
    raise OutputDataInvalid(f"{what} is neither a string nor a list of strings")
