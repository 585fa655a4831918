"""The embedded Jupyter Server's process: ``python -m jcli.embedded_server TOKEN_FD [server options]``.

:mod:`jcli.embedded` starts this instead of ``python -m jupyter_server`` so
that the token reaches the server on a pipe (the file descriptor
``TOKEN_FD``, read to its end and closed) and from there only the server's
configuration (``IdentityProvider.token``). It is never in an environment
variable, on a command line or in a file of its own, so kernels, which
inherit the server's environment, never see it. Its IPython kernels keep
their history in memory, as nbclient's do (:mod:`jcli.embedded_kernels`).
Its application (:mod:`jcli.embedded_app`) is Jupyter Server's own
``ServerApp``, with the options given, whose info file also says whether
collaboration is on, and whose notebook checkpoints stay in its private
runtime dir.
"""

from __future__ import annotations

import os
import sys

__all__ = ["UNUSED_IMPORTS", "main", "read_token", "skip_unused_imports"]

_MAX_TOKEN = 4096

#: Optional modules Jupyter Server's dependencies import if present, which nothing the server
#: runs uses. ``rfc3987_syntax`` gives jsonschema its ``iri`` format check and builds a parser
#: grammar at import: about 1 s of CPU, most of the server's start. No schema Jupyter Server
#: validates (its events' and jupyter_events' own) has an ``iri`` format.
UNUSED_IMPORTS = ("rfc3987_syntax",)


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


def skip_unused_imports() -> None:
    """Make each of :data:`UNUSED_IMPORTS` fail to import (its importer's ``ImportError`` fallback runs), unless already loaded."""
    for name in UNUSED_IMPORTS:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None in sys.modules: import raises ImportError


def main(argv: list[str] | None = None) -> None:
    """Read the token, then run Jupyter Server with the remaining options."""
    args = sys.argv[1:] if argv is None else argv
    token = read_token(int(args[0]))
    skip_unused_imports()
    from traitlets.config import Config

    from jcli.embedded_app import EmbeddedServerApp

    config = Config()
    config.IdentityProvider.token = token
    config.AsyncMappingKernelManager.kernel_manager_class = "jcli.embedded_kernels.HistoryInMemoryKernelManager"
    config.ContentsManager.checkpoints_class = "jcli.embedded_app.PrivateCheckpoints"
    EmbeddedServerApp.launch_instance(argv=args[1:], config=config)


if __name__ == "__main__":
    main()
