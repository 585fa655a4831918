"""A cell edit made where the notebook lives now: its collaboration room when one is open, else its file.

:func:`edit_notebook_cell` takes one :class:`~jcli_sidecar.read.cell_edits.CellEdit`
(the pure op) and the notebook's Jupyter Server, if one is known:

- **The room** (the server has a collaboration room for the notebook,
  :func:`~jcli_sidecar.room.join.join_notebook_room`): the edit's indexes
  are resolved to ids on the shared document as it is now, the op is made
  through :meth:`~jcli_sidecar.room.connection.Room.edit` (only what it
  changed is sent, so the person's edits elsewhere stay), the server is
  asked to save, and the room is left: the file holds the edit when this
  returns. The file is never written (a write would make the server reload
  the document and wipe what the person typed since its last save).
- **The file** otherwise: under the notebook's write lock, read (a regular
  file only, capped), the op made, written by the checked swap: a save by
  another program between the read and the write is detected
  (``NOTEBOOK_CHANGED``: theirs stays, j-cli's is kept beside it).

Before either, the notebook is checked: an ``.ipynb`` (a py:percent ``.py``
is edited as text), not a symlink leading out of the workspace, and not
paired with a ``.py`` (``NOTEBOOK_PAIRED``: the ``.py`` is the truth for
its cells; edit it). The result says which path was taken (``live``,
``live_reason``).
"""

from __future__ import annotations

import os
import sys

from ..base import PathNotAllowed, RoomLost, UsageError, setting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..kernel import JupyterServer
    from ..read import CellEdit

__all__ = ["check_inside_workspace", "edit_notebook_cell", "read_source_file"]

#: The exec stall hook's step (``JCLI_EXEC_TEST_STALL_*``) between a file edit's new copy and its swap.
SWAP_STEP = "cell-edit:swap"


def check_inside_workspace(path: str, what: str, workspace: str | None = None) -> None:
    """Refuse ``path`` when a symlink on its way leads out of the workspace (default: the cwd's real path).

    A path that names a file outside the workspace directly is the user's
    own choice; a link inside it that points out is refused, so a link
    planted in a project never makes an edit read or write elsewhere.

    Raises:
        PathNotAllowed: a link leads out.
    """
    from ..base import workspace_of

    workspace = workspace or workspace_of()
    spelt = os.path.abspath(path)
    real = os.path.realpath(path)
    if real == spelt or real == workspace or real.startswith(workspace.rstrip(os.sep) + os.sep):
        return
    raise PathNotAllowed(f"{what} {path} is a symlink that leads out of the workspace (to {real}); nothing was changed", path=path)


def read_source_file(path: str) -> str:
    """The text of ``--source-file PATH``: a regular file within ``JCLI_MAX_FILE_MB``, UTF-8, no link out of the workspace;
    ``-`` reads standard input, within the same limit.

    Raises:
        PathNotAllowed: a symlink leading out of the workspace.
        FileNotFound, NotebookReadFailed, UsageError: as :func:`~jcli_sidecar.ipynb.read_text_file`
            (a FIFO, a device, too large, not UTF-8); stdin over the limit, or not UTF-8.
    """
    if path == "-":
        from ..base import read_limit

        limit = read_limit()
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise UsageError(f"the source on stdin is over the read limit (JCLI_MAX_FILE_MB, {limit} bytes)")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError("the source on stdin is not UTF-8 text") from None
    from ..ipynb import read_text_file

    check_inside_workspace(path, "--source-file")
    return read_text_file(path)


def _check_notebook(nb_path: str) -> None:
    """Refuse what is not a notebook to edit, before any room is joined or lock taken (nothing is changed).

    The file is read as the file path reads it (a regular file only, never
    blocking, capped; a notebook), so a FIFO or a device never reaches a server either.
    """
    from ..base import NotebookPaired
    from ..ipynb import parse_notebook, read_file_bytes
    from ..pair import Pair

    if not nb_path.endswith(".ipynb"):
        raise UsageError(f"{nb_path}: cell edits take an .ipynb notebook (a .py is edited as text)")
    check_inside_workspace(nb_path, "the notebook")
    parse_notebook(read_file_bytes(nb_path), nb_path)
    pair = Pair.on_disk(nb_path)
    if pair is not None:
        raise NotebookPaired(
            f"{nb_path} is paired with {pair.py}: edit the .py (exec -f {pair.py} syncs the notebook); nothing was changed",
            path=nb_path,
            py_path=pair.py,
        )


def edit_notebook_cell(
    nb_path: str,
    edit: CellEdit,
    *,
    server: JupyterServer | None = None,
    no_server: str = "no Jupyter Server is known for this notebook",
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Make ``edit`` in the notebook at ``nb_path``: through its room on ``server`` when it has one, else in the file.

    ``no_server``: the reason the result gives when ``server`` is None.

    Returns:
        :func:`~jcli_sidecar.read.cell_edits.apply_cell_edit`'s result with
        ``schema_version``, ``status``, ``path``, ``live``, ``live_reason``
        (and ``saved`` on the room path).

    Raises:
        UsageError, PathNotAllowed, NotebookPaired: the notebook is not one to edit (nothing changed).
        FileNotFound, NotebookReadFailed: it cannot be read as a notebook.
        CellNotFound, CellChanged: as :func:`~jcli_sidecar.read.cell_edits.apply_cell_edit` (nothing changed).
        NotebookChanged: another program saved the file while j-cli wrote it (theirs stays; j-cli's is kept beside).
        OutputSaveFailed: the file cannot be written.
        RoomLost: the room was lost during the edit or its save (``sent`` says whether the edit reached the room).
    """
    from ..base import SCHEMA_VERSION

    _check_notebook(nb_path)
    reason = no_server
    done = None
    if server is not None:
        from .join import join_notebook_room

        joined = join_notebook_room(server, nb_path, env=env)
        reason = joined.reason
        if joined.room is not None:
            done = _through_room(joined.room, edit, env)
    if done is None:
        done = _through_file(nb_path, edit)
    return {"schema_version": SCHEMA_VERSION, "status": "ok", "path": nb_path, **done, "live": "saved" in done, "live_reason": reason}


def _through_room(room: Any, edit: CellEdit, env: Mapping[str, str] | None) -> dict[str, Any]:
    """The edit in the shared document, then the server's save; the room left in every case."""
    from ..read import apply_cell_edit

    budget = float(setting("JCLI_ROOM_SECONDS", env))
    try:
        pinned = edit.pinned(room.document())  # indexes to ids once, on the document as it is now
        done = room.edit(lambda nb: apply_cell_edit(nb, pinned))
        try:
            saved = room.save(budget)
        except RoomLost as err:
            err.details["sent"] = True
            raise
        if saved not in ("success", "skipped"):
            raise RoomLost(
                f"the edit is in the collaboration room of {room.path}, but the server did not save it ({saved})",
                path=room.path,
                reason=f"its save was {saved}",
                sent=True,
            )
        return {**done, "saved": saved == "success"}
    finally:
        room.close()


def _through_file(nb_path: str, edit: CellEdit) -> dict[str, Any]:
    """The edit in the file, under its write lock, written by the checked swap."""
    from ..base import os_error
    from ..ipynb import parse_notebook, read_file_with_stat, stat_key, write_notebook
    from ..pair import notebook_write_lock
    from ..read import apply_cell_edit

    with notebook_write_lock(nb_path):
        data, info = read_file_with_stat(nb_path)
        nb = parse_notebook(data, nb_path, exact_numbers=True)
        done = apply_cell_edit(nb, edit.pinned(nb))
        try:
            write_notebook(nb_path, nb, expect=stat_key(info), stall=SWAP_STEP)
        except OSError as exc:
            raise os_error(exc, "write", nb_path, note="; nothing was changed") from None
    return done
