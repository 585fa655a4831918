"""Written by `make docs` (jcli.face_stubs) from the table in __init__.py: the face's names with their types."""

from .hook_decision import Decision as Decision
from .hook_decision import render_decision as render_decision
from .hook_payload import MAX_PAYLOAD as MAX_PAYLOAD
from .hook_payload import PLATFORMS as PLATFORMS
from .hook_payload import PayloadError as PayloadError
from .hook_payload import call_from_fields as call_from_fields
from .hook_payload import parse_payload as parse_payload
from .hook_payload import scan_fields as scan_fields
from .registry import EVENTS as EVENTS
from .registry import GUARDS as GUARDS
from .registry import guard_table as guard_table
from .registry import guards_for as guards_for
