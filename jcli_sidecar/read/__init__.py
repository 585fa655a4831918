"""Reading saved outputs: which cell a read means, MIME rules, representations, the envelope, text windows,
images fitted per host, and the notebook views (summary, show, map).

This face re-exports the public names of the modules below; each module is imported on first use.
"""

from ..base.face import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "agent_text": (
            "agent_strings",
            "caption",
            "window_notice",
        ),
        "cell_analysis": (
            "ANALYSE_MAX_CHARS",
            "NAME_CHARS",
            "NAME_LIMIT",
            "analyse_code",
        ),
        "cells": (
            "ResolvedCell",
            "resolve_cell",
        ),
        "envelope": (
            "DEFAULT_QUERY",
            "OutputQuery",
            "STREAM_MIME",
            "catalog_envelope",
            "fit_response",
            "output_envelope",
            "source_label",
        ),
        "host_profiles": (
            "HOST_NAMES",
            "HOST_PROFILES",
            "HostProfile",
            "MiB",
        ),
        "image_headers": (
            "image_size",
            "is_animated",
        ),
        "imageview": (
            "CAPS",
            "SVG_INSTALL_HINT",
            "ViewSpec",
            "render_svg",
            "view_image",
            "view_note",
            "view_spec",
            "worker_command",
        ),
        "imagework": (
            "OPS",
            "main",
        ),
        "mime": (
            "AUTO_ORDER",
            "RASTER_IMAGE_TYPES",
            "auto_rank",
            "auto_select",
            "check_image",
            "decode_image",
            "decoded_size",
            "is_json_mime",
            "is_raster_image",
            "mime_kind",
        ),
        "notebook_summary": (
            "ERROR_CHARS",
            "PREVIEW_CHARS",
            "PREVIEW_LINES",
            "SUMMARY_CELL_LIMIT",
            "show_cells",
            "summarise",
        ),
        "notebook_view": (
            "NotebookView",
            "cell_source",
            "open_view",
            "select_cells",
        ),
        "pair_map": ("map_pair",),
        "reader": (
            "list_outputs",
            "read_output",
        ),
        "representations": (
            "IMAGE",
            "JSON",
            "KINDS",
            "Representation",
            "TEXT",
            "checked",
            "of",
            "of_manifest_ref",
            "of_selected",
        ),
        "request_spec": (
            "AS_MIME_TYPES",
            "Field",
            "READ_SPEC",
            "RUN_SPEC",
            "VIEW_FIELDS",
            "tool_schema",
        ),
        "requests": (
            "HANDLERS",
            "check_read_request",
            "check_request",
            "handle_list",
            "handle_read",
            "query_of",
            "view_of",
        ),
        "svgcheck": ("check_svg",),
        "textwindow": (
            "check_window",
            "is_whole",
            "window",
        ),
        "withheld": (
            "WITHHELD_ENCODING",
            "WITHHELD_WHY",
            "text_forms",
            "withheld_image",
        ),
    },
)
