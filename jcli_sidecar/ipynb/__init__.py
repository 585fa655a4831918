"""The notebook file format: loading ``.ipynb`` as plain JSON, the offset index, nbformat's layout when writing,
and splicing one cell back into a file.

This face re-exports the public names of the modules below; each module is imported on first use.
"""

from ..base.face import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "cell_spec": ("parse_cell_spec",),
        "multiline": ("join_text",),
        "jsonscan": (
            "CHUNK",
            "JsonWindow",
            "NATIVE_MAX",
            "key_text",
        ),
        "nbindex": (
            "ADOPTED_MAX",
            "CellSpan",
            "Changed",
            "MemberReader",
            "NotebookIndex",
            "adopt",
            "adopted",
            "adopted_uses",
            "build_index",
            "cell_span",
            "index_bytes",
            "index_from_wire",
            "index_to_wire",
            "pread_span",
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
            "dumps_cell_parts",
            "dumps_notebook",
            "new_cell",
            "new_notebook",
            "read_for_update",
            "write_notebook",
        ),
        "notebook": (
            "NotebookFile",
            "RawNumber",
            "cell_at",
            "coded_read_error",
            "exact_float",
            "load_notebook",
            "parse_notebook",
            "read_file_bytes",
            "read_file_with_stat",
            "read_text_file",
        ),
    },
)
