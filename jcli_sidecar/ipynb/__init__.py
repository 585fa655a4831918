"""The notebook file format: loading ``.ipynb`` as plain JSON, the offset index, nbformat's layout when writing,
and splicing one cell back into a file.

This face exports the names the other concerns use, each from its module below, imported on first use.
"""

from ..base import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "cell_spec": ("parse_cell_spec",),
        "multiline": ("join_text",),
        "nbindex": (
            "Changed",
            "MemberReader",
            "NotebookIndex",
            "adopt",
            "adopted_uses",
            "index_from_wire",
            "index_to_wire",
            "stable_read",
            "stat_key",
            "take_offers",
        ),
        "nbsplice": (
            "CellWriter",
            "format_changes",
            "notebook_heads",
        ),
        "nbwrite": (
            "dumps_cell",
            "dumps_notebook",
            "new_cell",
            "new_notebook",
            "read_for_update",
            "write_notebook",
        ),
        "notebook": (
            "NotebookFile",
            "metadata_tags",
            "cell_at",
            "coded_read_error",
            "load_notebook",
            "parse_notebook",
            "read_file_bytes",
            "read_file_with_stat",
            "read_text_file",
        ),
    },
)
