"""A file setup writes whole (a plugin, the skill) carries a digest of itself, so edits are seen.

The digest goes on the file's marker line as `` [sha256:<16 hex>]``, taken
over the file's text without that token. A later ``setup`` (which rewrites
the file) or ``--remove`` (which deletes it) compares: a file that no
longer matches its digest was edited since setup wrote it, and the result
says that those edits were replaced or dropped. A file from an earlier
j-cli has no digest: nothing is known, nothing is said.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["edited", "seal"]

_TOKEN = re.compile(r" \[sha256:([0-9a-f]{16})\]")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def seal(text: str, marker: str) -> str:
    """``text`` with its digest at the end of the first line holding ``marker``.

    Example:
        >>> seal("// mine: x\\nbody\\n", "// mine")
        '// mine: x [sha256:...]\\nbody\\n'
        >>> edited(seal("// mine: x\\nbody\\n", "// mine"))
        False
    """
    start = text.index(marker)
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    return text[:end] + f" [sha256:{_digest(text)}]" + text[end:]


def edited(text: str) -> bool | None:
    """Whether ``text`` changed since it was sealed (None: it carries no digest)."""
    match = _TOKEN.search(text)
    if match is None:
        return None
    return _digest(text[: match.start()] + text[match.end() :]) != match.group(1)
