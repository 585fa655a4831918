"""Read requests as plain maps, checked against the one spec (``request_spec``).

A request is ``{file_path, cell_index, output_index?, mime_type?, offset?,
limit?, max_response_bytes?}`` plus the view fields ``{host?,
as_mime_type?, max_edge?, max_pixels?, max_bytes?}``, the same names as
the MCP tool arguments and the plugins' parameters.
"""

from __future__ import annotations

from .errors import UsageError
from .reader import OutputQuery, read_output
from .request_spec import READ_SPEC, VIEW_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .reader import Loader

__all__ = ["HANDLERS", "READ_FIELDS", "VIEW_FIELDS", "check_read_request", "handle_list", "handle_read", "view_of"]

#: field -> (accepted JSON type, required), from the spec.
READ_FIELDS: dict[str, tuple[str, bool]] = {f.name: (f.type, f.required) for f in READ_SPEC}


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    return isinstance(value, int) and not isinstance(value, bool)


def check_read_request(request: Any) -> dict[str, Any]:
    """Validate a request map; None values count as absent.

    Raises:
        UsageError: not a map, an unknown field, a missing field, or a value
            of the wrong JSON type.

    Example:
        >>> check_read_request({"file_path": "a.ipynb", "cell_index": 0, "limit": None})
        {'file_path': 'a.ipynb', 'cell_index': 0}
    """
    if not isinstance(request, dict):
        raise UsageError("the request must be a JSON object")
    unknown = sorted(set(request) - set(READ_FIELDS))
    if unknown:
        raise UsageError(f"unknown request field(s): {', '.join(map(str, unknown))} (known: {', '.join(READ_FIELDS)})")
    clean: dict[str, Any] = {}
    for name, (kind, required) in READ_FIELDS.items():
        value = request.get(name)
        if value is None:
            if required:
                raise UsageError(f"the request needs {name}")
            continue
        if not _type_ok(kind, value):
            raise UsageError(f"{name} must be a JSON {kind}, got {type(value).__name__}")
        clean[name] = value
    return clean


def view_of(args: dict[str, Any]):
    """The :class:`~jcli_sidecar.imageview.ViewSpec` a checked request asks for, or None."""
    if not any(name in args for name in VIEW_FIELDS):
        return None
    from .imageview import view_spec

    return view_spec(**{name: args.get(name) for name in VIEW_FIELDS})


def handle_read(request: Any, *, binary: bool = False, load: Loader | None = None) -> dict[str, Any]:
    """Answer a read request: the catalog without ``output_index``, else one output.

    ``binary`` and ``load`` are passed to :func:`jcli_sidecar.reader.read_output`.

    Raises:
        UsageError, and every error of :func:`jcli_sidecar.reader.read_output`.
    """
    args = check_read_request(request)
    query = OutputQuery(
        mime_type=args.get("mime_type"),
        offset=args.get("offset", 0),
        limit=args.get("limit"),
        max_response_bytes=args.get("max_response_bytes"),
        binary=binary,
        view=view_of(args),
    )
    return read_output(args["file_path"], args["cell_index"], args.get("output_index"), query, load=load)


def handle_list(request: Any, *, binary: bool = False, load: Loader | None = None) -> dict[str, Any]:
    """Answer a catalog request: a read request without ``output_index``.

    Raises:
        UsageError: the request names an output.
    """
    if isinstance(request, dict) and request.get("output_index") is not None:
        raise UsageError("listing a cell takes no output_index; read one output with notebook.read")
    return handle_read(request, binary=binary, load=load)


#: The read ops every transport offers, by name.
HANDLERS = {"notebook.list": handle_list, "notebook.read": handle_read}
