"""The embedded Jupyter Server's kernels: an IPython kernel keeps its history in memory, as nbclient starts one.

IPython writes every cell a kernel runs to one SQLite file per profile
(``~/.ipython/profile_default/history.sqlite``) unless told otherwise. Kernels
that run notebooks side by side then share that file and its lock (and a
slow or locked file can stall a kernel's start). nbclient starts its kernels
with ``--HistoryManager.hist_file=:memory:``; the embedded server starts
every IPython kernel the same way: ``%history`` and ``_ih`` work within the
kernel's life, and nothing is written to, or read from, the profile's file.
A kernelspec that names a history file itself keeps it. Kernels of a server
j-cli did not start are that server's business.

Imported only by the embedded server's process (:mod:`jcli.embedded_server`,
which names :class:`HistoryInMemoryKernelManager` in its configuration).
"""

from __future__ import annotations

import os

from jupyter_server.services.kernels.kernelmanager import ServerKernelManager

__all__ = ["HISTORY_IN_MEMORY", "HistoryInMemoryKernelManager", "runs_ipykernel"]

#: The argument nbclient gives an IPython kernel (its ``ipython_hist_file`` default).
HISTORY_IN_MEMORY = "--HistoryManager.hist_file=:memory:"

#: The kernel names jupyter_client takes for IPython (``KernelManager.ipykernel``, nbclient's test).
_IPYTHON_NAMES = frozenset({"python", "python2", "python3"})


def runs_ipykernel(kernel_name: str, argv: list[str]) -> bool:
    """Whether a kernel is IPython's: nbclient's names, or a kernelspec whose command runs ``-m ipykernel_launcher`` (or ``ipykernel``)."""
    if kernel_name in _IPYTHON_NAMES:
        return True
    return any(a == "-m" and b in ("ipykernel_launcher", "ipykernel") for a, b in zip(argv, argv[1:], strict=False)) or any(
        os.path.basename(arg) == "ipykernel_launcher.py" for arg in argv
    )


class HistoryInMemoryKernelManager(ServerKernelManager):
    """Jupyter Server's kernel manager, starting an IPython kernel with its history in memory (:data:`HISTORY_IN_MEMORY`)."""

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd: list[str] = super().format_kernel_cmd(extra_arguments)
        if runs_ipykernel(self.kernel_name, list(self.kernel_spec.argv)) and not any(
            arg.startswith("--HistoryManager.hist_file") for arg in cmd
        ):
            cmd.append(HISTORY_IN_MEMORY)
        return cmd
