"""Written by `make docs` (jcli.face_stubs) from the table in __init__.py: the face's names with their types."""

from .client import FALLBACK_CODES as FALLBACK_CODES
from .client import call as call
from .control import sidecar_status as sidecar_status
from .control import start_sidecar as start_sidecar
from .control import stop_sidecar as stop_sidecar
from .daemon import serve as serve
from .exec_client import exec_through as exec_through
from .op_table import IN_PROCESS as IN_PROCESS
from .op_table import JOB_CANCEL as JOB_CANCEL
from .op_table import JOB_START as JOB_START
from .op_table import KERNEL_EXEC as KERNEL_EXEC
from .op_table import NOTEBOOK_ADOPT as NOTEBOOK_ADOPT
from .op_table import NOTEBOOK_GREP as NOTEBOOK_GREP
from .op_table import NOTEBOOK_LIST as NOTEBOOK_LIST
from .op_table import NOTEBOOK_LOOK as NOTEBOOK_LOOK
from .op_table import NOTEBOOK_READ as NOTEBOOK_READ
from .op_table import OPS as OPS
from .op_table import RUN_PUBLISH as RUN_PUBLISH
from .op_table import SKIP as SKIP
from .op_table import START as START
from .op_table import WITHOUT_SIDECAR as WITHOUT_SIDECAR
from .op_table import Op as Op
from .spawn import launch_detached as launch_detached
from .spawn import spawn_detached as spawn_detached
