"""The embedded Jupyter Server's process: ``python -m jcli.embedded_server TOKEN_FD [server options]``.

:mod:`jcli.embedded` starts this instead of ``python -m jupyter_server`` so
that the token reaches the server on a pipe (the file descriptor
``TOKEN_FD``, read to its end and closed) and from there only the server's
configuration (``IdentityProvider.token``). It is never in an environment
variable, on a command line or in a file of its own, so kernels, which
inherit the server's environment, never see it. Everything else is Jupyter
Server's own ``ServerApp``, with the options given.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main", "read_token"]

_MAX_TOKEN = 4096


def read_token(fd: int) -> str:
    """Everything on the pipe ``fd`` (up to 4 KiB) as text; closes it."""
    chunks: list[bytes] = []
    try:
        while sum(map(len, chunks)) < _MAX_TOKEN:
            chunk = os.read(fd, _MAX_TOKEN)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii")


def main(argv: list[str] | None = None) -> None:
    """Read the token, then run Jupyter Server with the remaining options."""
    args = sys.argv[1:] if argv is None else argv
    token = read_token(int(args[0]))
    from jupyter_server.serverapp import ServerApp
    from traitlets.config import Config

    config = Config()
    config.IdentityProvider.token = token
    ServerApp.launch_instance(argv=args[1:], config=config)


if __name__ == "__main__":
    main()
