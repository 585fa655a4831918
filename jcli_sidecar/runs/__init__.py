"""Inline runs on disk: staging and publishing a run, reading runs back, retention and staged runs left behind;
background job records.

This face re-exports the public names of the modules below; each module is imported on first use.
"""

from ..base.face import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "job_retention": ("clean_jobs",),
        "job_wait": (
            "DEFAULT_WAIT_SECONDS",
            "poll_interval",
            "wait_jobs",
        ),
        "jobs": (
            "ENDED_STATES",
            "JOB_STATES",
            "JobRecord",
            "check_kernel_free",
            "is_job_id",
            "job_on_kernel",
            "job_view",
            "list_jobs",
            "new_job_id",
            "read_job",
            "read_job_output",
            "resolve_job",
        ),
        "lost_jobs": (
            "RUNNING_MARK",
            "clear_running_mark",
            "settle_lost_jobs",
        ),
        "retention": (
            "clean",
            "clean_in",
            "clean_workspace",
            "owner_alive",
        ),
        "retention_policy": (
            "DEFAULT_MAX_AGE_DAYS",
            "DEFAULT_MAX_RUNS",
            "DEFAULT_STAGING_GRACE_SECONDS",
            "Policy",
            "resolve_policy",
        ),
        "runs": (
            "join_within",
            "list_runs",
            "read_run",
            "resolve_run",
        ),
        "staged_runs": (
            "judge_staging",
            "writer_of",
        ),
        "store": (
            "INLINE_TEXT_LIMIT",
            "StagedRun",
            "new_run_id",
            "publish_run",
            "stage_run",
        ),
    },
)
