"""Entry point of ``j-cli``: the lean read path first, then the click app."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run j-cli with ``argv`` (default: the process arguments)."""
    args = sys.argv[1:] if argv is None else argv
    from .fastpath import try_run

    code = try_run(args)
    if code is not None:
        return code
    from .cli import run_click

    return run_click(args)


if __name__ == "__main__":
    sys.exit(main())
