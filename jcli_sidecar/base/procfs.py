"""Whether this system has Linux's ``/proc``, asked in one place.

Linux says what a process is (start time, uid, state, sockets, memory) in
``/proc``; macOS and the BSDs have no such tree, and there the same facts
come from ``psutil`` (a dependency), which asks the kernel its own way.
Every reader of ``/proc`` in the core builds its paths from
:func:`proc_root` and takes its other branch when it is None.

:data:`PROC_ROOT` is also the one seam the tests turn: pointed at a
directory without ``self/stat``, every caller runs the branch a system
without ``/proc`` runs, here on Linux.
"""

from __future__ import annotations

import os

__all__ = ["PROC_ROOT", "proc_root"]

#: Where ``/proc`` is mounted.
PROC_ROOT = "/proc"


def proc_root() -> str | None:
    """The ``/proc`` to read (Linux), or None where there is none (macOS, the BSDs): ask ``psutil`` then.

    Example:
        >>> proc_root()
        '/proc'
    """
    root = PROC_ROOT
    return root if os.path.exists(f"{root}/self/stat") else None
