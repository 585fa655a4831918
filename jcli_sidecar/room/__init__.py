"""Live rooms: a notebook's collaboration room on its Jupyter Server, found and joined as JupyterLab's front end
joins it, and the shared document read and written there.

This face exports the names the other concerns use, each from its module below, imported on first use.
"""

from ..base import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "cell_edit": ("edit_notebook_cell", "read_source_file"),
        "join": ("LIVE_OFF",),
        "live_run": ("open_live_run",),
    },
)
