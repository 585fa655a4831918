"""py:percent pairs: the codec, which notebook pairs with a ``.py``, syncing and guarding a pair, git's view of it,
and ``convert``.

This face exports the names the other concerns use, each from its module below, imported on first use.
"""

from ..base import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "cell_ids": (
            "check_py_ids",
            "duplicate_ids",
            "fresh_cell_id",
            "renew_duplicate_ids",
        ),
        "convert": (
            "assign_ids",
            "ipynb_to_py",
            "py_to_ipynb",
        ),
        "git_index": (
            "Repository",
            "repository",
        ),
        "git_precommit": (
            "check_commit",
            "render_commit_check",
            "stage_synced",
        ),
        "pairguard": (
            "agreed_cells",
            "cell_digests",
            "changes_since_agreement",
            "check_sync",
            "keep_notebook_edits",
            "notebook_cells",
            "record_agreement",
        ),
        "pairing": (
            "LockedPair",
            "Pair",
            "is_percent",
            "is_percent_file",
            "map_cell",
            "notebook_write_lock",
            "paired_notebook_path",
            "paired_py_path",
            "percent_cells",
            "sync_cells",
        ),
        "pairsync": (
            "INJECTED_TAG",
            "SyncPlan",
            "is_injected",
            "plan_sync",
        ),
        "percent": (
            "PercentCell",
            "normalize_source",
            "parse_percent",
            "read_header",
            "read_percent",
        ),
        "percent_write": ("write_percent",),
        "py_ids": ("assign_py_ids",),
    },
)
