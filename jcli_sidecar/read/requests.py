"""Read requests as plain maps, checked against the one spec (``request_spec``).

A notebook read is ``{file_path, cell_index, output_index?, mime_type?,
offset?, limit?, max_response_bytes?, agent_text?, text_only?}`` plus the view fields
``{host?, as_mime_type?, max_edge?, max_pixels?, max_bytes?}``, the same
names as the MCP tool arguments and the plugins' parameters; a run read has
``run`` in place of ``file_path`` and ``cell_index`` (and no ``agent_text``). Every read becomes one
:class:`~jcli_sidecar.read.envelope.OutputQuery` through :func:`query_of`.
"""

from __future__ import annotations

from ..base.errors import UsageError
from ..base.protocol import check_file_name
from .reader import OutputQuery, read_output
from .request_spec import READ_SPEC, VIEW_FIELDS, Field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .reader import Loader

__all__ = [
    "HANDLERS",
    "VIEW_FIELDS",
    "check_read_request",
    "check_request",
    "handle_list",
    "handle_read",
    "query_of",
    "view_of",
]


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    return isinstance(value, int) and not isinstance(value, bool)


def check_request(request: Any, spec: tuple[Field, ...]) -> dict[str, Any]:
    """Validate a request map against ``spec``; None values count as absent.

    Raises:
        UsageError: not a map, an unknown field, a missing field, a value
            of the wrong JSON type, or a file name no file can have.
    """
    if not isinstance(request, dict):
        raise UsageError("the request must be a JSON object")
    names = [f.name for f in spec]
    unknown = sorted(set(request) - set(names), key=str)
    if unknown:
        raise UsageError(f"unknown request field(s): {', '.join(map(str, unknown))} (known: {', '.join(names)})")
    clean: dict[str, Any] = {}
    for field in spec:
        value = request.get(field.name)
        if value is None:
            if field.required:
                raise UsageError(f"the request needs {field.name}")
            continue
        if not _type_ok(field.type, value):
            raise UsageError(f"{field.name} must be a JSON {field.type}, got {type(value).__name__}")
        if field.path:
            check_file_name(value, field.name)
        clean[field.name] = value
    return clean


def check_read_request(request: Any) -> dict[str, Any]:
    """:func:`check_request` against the notebook read spec.

    Example:
        >>> check_read_request({"file_path": "a.ipynb", "cell_index": 0, "limit": None})
        {'file_path': 'a.ipynb', 'cell_index': 0}
    """
    return check_request(request, READ_SPEC)


def query_of(args: dict[str, Any], *, binary: bool = False) -> OutputQuery:
    """The :class:`~jcli_sidecar.read.envelope.OutputQuery` of a checked request.

    Raises:
        InvalidWindow, UsageError: a bad window, cap or view.
    """
    return OutputQuery(
        mime_type=args.get("mime_type"),
        offset=args.get("offset", 0),
        limit=args.get("limit"),
        max_response_bytes=args.get("max_response_bytes"),
        binary=binary,
        view=view_of(args),
        agent_text=args.get("agent_text", False),
        text_only=args.get("text_only", False),
    )


def view_of(args: dict[str, Any]):
    """The :class:`~jcli_sidecar.read.imageview.ViewSpec` a checked request asks for, or None."""
    if not any(name in args for name in VIEW_FIELDS):
        return None
    from .imageview import view_spec

    return view_spec(**{name: args.get(name) for name in VIEW_FIELDS})


def handle_read(request: Any, *, binary: bool = False, load: Loader | None = None) -> dict[str, Any]:
    """Answer a read request: the catalog without ``output_index``, else one output.

    ``binary`` and ``load`` are passed to :func:`jcli_sidecar.read.reader.read_output`.

    Raises:
        UsageError, and every error of :func:`jcli_sidecar.read.reader.read_output`.
    """
    args = check_read_request(request)
    return read_output(args["file_path"], args["cell_index"], args.get("output_index"), query_of(args, binary=binary), load=load)


def handle_list(request: Any, *, binary: bool = False, load: Loader | None = None) -> dict[str, Any]:
    """Answer a catalog request: a read request without ``output_index``.

    Raises:
        UsageError: the request names an output.
    """
    if isinstance(request, dict) and request.get("output_index") is not None:
        raise UsageError("listing a cell takes no output_index; read one output with notebook.read")
    return handle_read(request, binary=binary, load=load)


def _handle_grep(request: Any, *, binary: bool = False, load: Loader | None = None) -> dict[str, Any]:
    from .nbgrep import handle_grep  # only a grep pays for its imports

    return handle_grep(request, binary=binary, load=load)


#: The read ops every transport offers, by name.
HANDLERS = {"notebook.grep": _handle_grep, "notebook.list": handle_list, "notebook.read": handle_read}
