"""Read requests as plain maps, checked against the one spec (``request_spec``).

A notebook read is ``{file_path, cell_index, output_index?, mime_type?,
offset?, limit?, max_response_bytes?, agent_text?, text_only?}`` plus the view fields
``{host?, as_mime_type?, max_edge?, max_pixels?, max_bytes?}``, the same
names as the MCP tool arguments and the plugins' parameters; a run read has
``run`` in place of ``file_path`` and ``cell_index`` (and no ``agent_text``). Every read becomes one
:class:`~jcli_sidecar.read.envelope.OutputQuery` through :func:`query_of`.
"""

from __future__ import annotations

from ..base import UsageError
from .reader import OutputQuery, read_output
from .request_spec import READ_SPEC, VIEW_FIELDS, check_request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .reader import Loader

__all__ = [
    "VIEW_FIELDS",
    "answer_read",
    "check_list_request",
    "check_read_request",
    "handle_list",
    "handle_read",
    "query_of",
    "view_of",
]


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
    return answer_read(check_read_request(request), binary=binary, load=load)


def answer_read(args: dict[str, Any], *, binary: bool = False, load: Loader | None = None) -> dict[str, Any]:
    """:func:`handle_read` of a request already checked against :data:`READ_SPEC` (the sidecar checks each one as it arrives)."""
    return read_output(args["file_path"], args["cell_index"], args.get("output_index"), query_of(args, binary=binary), load=load)


def handle_list(request: Any, *, binary: bool = False, load: Loader | None = None) -> dict[str, Any]:
    """Answer a catalog request: a read request without ``output_index``.

    Raises:
        UsageError: the request names an output.
    """
    return answer_read(check_list_request(request), binary=binary, load=load)


def check_list_request(request: Any) -> dict[str, Any]:
    """:func:`check_read_request` for a catalog: a read request without ``output_index``.

    Raises:
        UsageError: the request names an output, or as :func:`check_read_request`.
    """
    if isinstance(request, dict) and request.get("output_index") is not None:
        raise UsageError("listing a cell takes no output_index; read one output with notebook.read")
    return check_read_request(request)
