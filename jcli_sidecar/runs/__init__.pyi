"""Written by `make docs` (jcli.face_stubs) from the table in __init__.py: the face's names with their types."""

from .job_retention import clean_jobs as clean_jobs
from .job_wait import DEFAULT_WAIT_SECONDS as DEFAULT_WAIT_SECONDS
from .job_wait import wait_jobs as wait_jobs
from .jobs import JobRecord as JobRecord
from .jobs import check_kernel_free as check_kernel_free
from .jobs import jobs_lock as jobs_lock
from .jobs import jobs_on_kernel as jobs_on_kernel
from .jobs import list_jobs as list_jobs
from .jobs import new_job_id as new_job_id
from .jobs import note_read as note_read
from .jobs import read_job as read_job
from .jobs import read_job_output as read_job_output
from .jobs import resolve_job as resolve_job
from .lost_jobs import settle_lost_jobs as settle_lost_jobs
from .retention import clean_workspace as clean_workspace
from .retention_policy import Policy as Policy
from .retention_policy import resolve_policy as resolve_policy
from .runs import list_runs as list_runs
from .runs import read_run as read_run
from .store import publish_run as publish_run
from .store import stage_run as stage_run
