"""py:percent pairs: the codec, which notebook pairs with a ``.py``, syncing and guarding a pair, git's view of it,
and ``convert``.

This face re-exports the public names of the modules below; each module is imported on first use.
"""

from ..base.face import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "cell_ids": (
            "ambiguous_ids",
            "check_py_ids",
            "describe_duplicates",
            "duplicate_ids",
            "fresh_cell_id",
            "renew_duplicate_ids",
        ),
        "convert": (
            "OUTPUT_POLICIES",
            "assign_ids",
            "ipynb_to_py",
            "py_to_ipynb",
        ),
        "git_index": (
            "IndexEntry",
            "Repository",
            "changed_in_worktree",
            "read_blobs",
            "repository",
            "stage_blob",
            "staged_changes",
            "staged_entries",
        ),
        "git_precommit": (
            "ESCAPE",
            "STAGE_SYNCED",
            "check_commit",
            "main",
            "render_commit_check",
            "stage_synced",
        ),
        "pair_update": (
            "describe_drift",
            "in_line",
            "synced_notebook",
        ),
        "pairguard": (
            "agreed_cells",
            "cell_digests",
            "changes_since_agreement",
            "check_sync",
            "fingerprint",
            "notebook_cells",
            "notebook_fingerprint",
            "record_agreement",
        ),
        "pairing": (
            "LockedPair",
            "Pair",
            "PairSync",
            "carries_id",
            "is_percent",
            "is_percent_file",
            "map_cell",
            "notebook_write_lock",
            "pair_paths",
            "paired_notebook_path",
            "paired_py_path",
            "percent_cells",
            "sync_cells",
        ),
        "pairsync": (
            "EDIT_SIMILARITY",
            "SyncPlan",
            "apply_plan",
            "plan_sync",
            "sync_notebook",
        ),
        "percent": (
            "LANGUAGE_MAGICS",
            "METADATA_KEY",
            "PercentCell",
            "PercentNotebook",
            "is_active",
            "normalize_source",
            "parse_percent",
            "read_header",
            "read_percent",
        ),
        "percent_magics": (
            "PythonStrings",
            "comment_magics",
            "is_magic",
            "uncomment_lines",
            "uncomment_magics",
            "unescape_code_start",
        ),
        "percent_write": (
            "NOTEBOOK_ONLY_METADATA",
            "write_percent",
        ),
        "py_ids": ("assign_py_ids",),
    },
)
