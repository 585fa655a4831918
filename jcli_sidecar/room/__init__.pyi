"""Written by `make docs` (jcli.face_stubs) from the table in __init__.py: the face's names with their types."""

from .cell_edit import edit_notebook_cell as edit_notebook_cell
from .cell_edit import read_source_file as read_source_file
from .join import RoomJoin as RoomJoin
from .join import join_notebook_room as join_notebook_room
from .join import join_room as join_room
from .join import server_path_of as server_path_of
from .live_run import LiveRoom as LiveRoom
from .live_run import open_live_run as open_live_run
