"""Inline runs on disk: staging and publishing a run, reading runs back, retention and staged runs left behind;
background job records.

This face exports the names the other concerns use, each from its module below, imported on first use.
"""

from ..base import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "job_retention": ("clean_jobs",),
        "job_wait": (
            "DEFAULT_WAIT_SECONDS",
            "wait_jobs",
        ),
        "jobs": (
            "JobRecord",
            "check_kernel_free",
            "jobs_lock",
            "jobs_on_kernel",
            "list_jobs",
            "new_job_id",
            "note_read",
            "read_job",
            "read_job_output",
            "resolve_job",
        ),
        "lost_jobs": ("settle_lost_jobs",),
        "retention": ("clean_workspace",),
        "retention_policy": (
            "Policy",
            "resolve_policy",
        ),
        "runs": (
            "list_runs",
            "read_run",
        ),
        "store": (
            "publish_run",
            "stage_run",
        ),
    },
)
