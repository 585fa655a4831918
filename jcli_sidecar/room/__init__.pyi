"""Written by `make docs` (jcli.face_stubs) from the table in __init__.py: the face's names with their types."""

from .cell_edit import edit_notebook_cell as edit_notebook_cell
from .cell_edit import read_source_file as read_source_file
from .join import LIVE_OFF as LIVE_OFF
from .live_run import open_live_run as open_live_run
