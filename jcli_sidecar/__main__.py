"""``jcli-sidecar`` (also ``python -m jcli_sidecar``): run a workspace sidecar.

Clients start it lazily; run it by hand only to debug, or from the systemd
units in ``systemd-examples/``.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jcli-sidecar", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"jcli-sidecar {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve one workspace until idle, shutdown or SIGTERM")
    where = serve.add_mutually_exclusive_group()
    where.add_argument("--workspace", help="the workspace directory (default: the cwd)")
    where.add_argument(
        "--instance",
        help="socket activation: the workspace hash (systemd %%i); the workspace comes from the first hello",
    )
    args = parser.parse_args(argv)
    from .sidecar import serve as run

    if args.instance:
        return run(instance=args.instance)
    return run(workspace=os.path.realpath(args.workspace or os.getcwd()))


if __name__ == "__main__":
    sys.exit(main())
