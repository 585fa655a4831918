"""Entry point of ``j-cli``: the lean read path first, then the click app."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run j-cli with ``argv`` (default: the process arguments).

    Ctrl-C outside a command's own handling (``exec`` interrupts its kernel
    itself) ends with the coded ``INTERRUPTED`` and status 130, never a traceback.
    """
    args = sys.argv[1:] if argv is None else argv
    try:
        code = _run(args)
    except KeyboardInterrupt:
        from jcli_sidecar.base import Interrupted

        from . import emit

        return emit.error(Interrupted("stopped by SIGINT", signal="SIGINT"), any(arg in ("-j", "--json") for arg in args))
    _offer_written_indexes()
    return code


def _run(args: list[str]) -> int:
    from .fastpath import try_run

    code = try_run(args)
    if code is not None:
        return code
    from .cli import run_click

    return run_click(args)


def _offer_written_indexes() -> None:
    """Hand the sidecar the offset index of each notebook the command wrote, so its next read builds none.

    Free for a command that wrote none: nothing is imported (the index module
    is not even loaded by most commands, and a read leaves no offers).
    """
    if "jcli_sidecar.ipynb.nbindex" not in sys.modules:  # no index was built or read: nothing to offer
        return
    from jcli_sidecar.ipynb import take_offers

    offers = take_offers()
    if offers:
        from .transport import hand_over

        for path, index in offers:
            hand_over(path, index)


def hook_main() -> int:
    """``j-cli-hook NAME ...``: the same as ``j-cli _hooks NAME ...``.

    Upstream jupyter-jcli installed hook entries that call ``j-cli-hook``;
    this keeps them working (never blocking by accident) until ``j-cli
    setup`` replaces them.
    """
    return main(["_hooks", *sys.argv[1:]])


def notebook_text_main() -> int:
    """``j-cli-notebook-text FILE``: the same as ``j-cli notebook text FILE``.

    ripgrep's ``--pre`` runs a program with the file's path as its only
    argument (it takes no arguments of its own), so the command is also
    one program: ``rg --pre j-cli-notebook-text --pre-glob '*.ipynb' PATTERN``.
    """
    return main(["notebook", "text", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
