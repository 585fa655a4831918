"""The embedded Jupyter Server's application: Jupyter Server's own, which also says whether collaboration is on.

:class:`EmbeddedServerApp` is ``ServerApp`` with one more field in the info
file it writes once it listens (``jpserver-<pid>.json``, in its private
runtime dir): ``collaboration``, true when the server part of
jupyter-collaboration (jupyter-server-ydoc) and the file-id service it needs
both loaded. A server only knows that after loading its extensions (an
installed extension may be turned off by configuration, or fail to load), so
the server says it and j-cli records what it said.

:class:`PrivateCheckpoints` keeps a notebook's checkpoint (the copy Jupyter
Server makes at a notebook's first save through it, as a room's save is) in
the server's private runtime dir, under the notebook's path relative to the
root, instead of an ``.ipynb_checkpoints`` folder beside the notebook in the
workspace.

Imported only by the embedded server's process (:mod:`jcli.embedded_server`).
"""

from __future__ import annotations

import os

from jupyter_core.utils import ensure_dir_exists
from jupyter_server.serverapp import ServerApp
from jupyter_server.services.contents.filecheckpoints import AsyncFileCheckpoints
from traitlets import Unicode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EmbeddedServerApp", "PrivateCheckpoints", "collaboration_loaded"]

#: What each of the two extensions leaves in the server's settings once it loaded: the file-id service
#: (``jupyter_server_fileid``) its manager, the collaboration extension (``jupyter_server_ydoc``) its save delay.
_LOADED_MARKS = ("file_id_manager", "collaborative_document_save_delay")


def collaboration_loaded(app: ServerApp) -> bool:
    """Whether the server's collaboration rooms work: both extensions loaded (a failed load is only logged)."""
    settings = app.web_app.settings
    return all(mark in settings for mark in _LOADED_MARKS)


class EmbeddedServerApp(ServerApp):
    """Jupyter Server's ``ServerApp``; its info file also says whether collaboration is on (``collaboration``)."""

    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = super().server_info()
        info["collaboration"] = collaboration_loaded(self)
        return info


class PrivateCheckpoints(AsyncFileCheckpoints):
    """Jupyter Server's file checkpoints, kept under :attr:`directory` by the file's path under the root."""

    directory = Unicode("", config=True, help="Where checkpoints are kept (the server's private runtime dir); required.")

    def checkpoint_path(self, checkpoint_id: str, path: str) -> str:
        if not self.directory:
            raise ValueError("PrivateCheckpoints.directory is not set")
        parent, name = ("/" + path.strip("/")).rsplit("/", 1)
        os_parent = self._get_os_path(path=parent.strip("/"))  # refuses a path that leaves the root, as the original does
        relative = os.path.relpath(os_parent, start=self.root_dir)
        basename, ext = os.path.splitext(name)
        folder = os.path.normpath(os.path.join(self.directory, relative))
        with self.perm_to_403():
            ensure_dir_exists(folder, mode=0o700)
        return os.path.join(folder, f"{basename}-{checkpoint_id}{ext}")
