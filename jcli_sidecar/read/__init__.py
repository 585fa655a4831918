"""Reading saved outputs: which cell a read means, MIME rules, representations, the envelope, text windows,
images fitted per host, and the notebook views (summary, show, map).

This face exports the names the other concerns use, each from its module below, imported on first use.
"""

from ..base import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "agent_text": ("caption",),
        "cell_edits": (
            "CellEdit",
            "apply_cell_edit",
            "parse_cell_ref",
        ),
        "envelope": (
            "DEFAULT_QUERY",
            "OutputQuery",
            "catalog_envelope",
            "fit_response",
            "output_envelope",
        ),
        "host_profiles": (
            "HOST_NAMES",
            "HOST_PROFILES",
            "HostProfile",
            "MiB",
        ),
        "imageview": ("view_spec",),
        "mime": (
            "auto_select",
            "decoded_size",
            "is_raster_image",
            "render_hint",
        ),
        "nbgrep": (
            "DEFAULT_MAX_HITS",
            "MAX_HITS_LIMIT",
            "handle_grep",
        ),
        "notebook_summary": (
            "handle_look",
            "show_cells",
            "summarise",
        ),
        "notebook_text": ("render_notebook_text",),
        "pair_map": ("map_pair",),
        "staleness": (
            "RAN_KEY",
            "RunLedger",
            "SKIP_EXECUTION_TAG",
        ),
        "representations": (
            "JSON_KIND",
            "TEXT_KIND",
            "kind_of",
            "kind_of_manifest_ref",
            "kind_of_selected",
        ),
        "request_spec": (
            "Field",
            "READ_SPEC",
            "RUN_SPEC",
            "check_request",
            "grep_request",
            "spec_named",
            "tool_schema",
        ),
        "requests": (
            "answer_read",
            "check_list_request",
            "handle_list",
            "handle_read",
            "query_of",
        ),
        "textwindow": ("check_window",),
    },
)
