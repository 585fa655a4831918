"""Every error j-cli reports, each with one stable code.

The tree's branches (every other class is a leaf right under ``JcliError``)::

    JcliError                         base; ``code`` goes out unchanged
    ├── UsageError                    USAGE_ERROR (bad arguments, exit 2)
    │   ├── InvalidWindow             INVALID_WINDOW
    │   ├── KernelspecNotFound        KERNELSPEC_NOT_FOUND
    │   └── ParametersInvalid         PARAMETERS_INVALID
    ├── NotebookOutOfSync             NOTEBOOK_OUT_OF_SYNC
    │   └── NotebookChanged           NOTEBOOK_CHANGED
    ├── ServerUnavailable             SERVER_UNAVAILABLE
    │   ├── KernelDied                KERNEL_DIED
    │   │   └── ServerMessageInvalid  SERVER_MESSAGE_INVALID
    │   └── ServerNotRunning          SERVER_NOT_RUNNING
    ├── SidecarError                  SIDECAR_ERROR: the sidecar transport (clients fall back)
    │   ├── ProtocolError             PROTOCOL_ERROR
    │   ├── PeerRefused               PEER_REFUSED (also a PermissionError)
    │   ├── RuntimeDirUnsafe          RUNTIME_DIR_UNSAFE (also a PermissionError)
    │   └── SidecarUnavailable        SIDECAR_UNAVAILABLE
    └── InternalError                 INTERNAL_ERROR (a bug; never bad input)

Leaves that mean what a built-in means subclass it too (``FileNotFound`` is a
``FileNotFoundError``). Each class's docstring's first paragraph says when it
is raised: ``make docs`` writes it in ``docs/reference/errors.md``, with the
whole tree, every code and its exit status.

Messages never carry payload data (base64 above all): they name files,
indexes and sizes only. Extra machine-readable facts go in ``details``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BackgroundUnavailable",
    "BrowserNotFound",
    "CellChanged",
    "CellIdDuplicate",
    "CellMappingUnreliable",
    "CellNotFound",
    "ConfigConflict",
    "ConfigInvalid",
    "ERROR_CODES",
    "EXECUTION_ERROR_ALIASES",
    "FileNotFound",
    "Forbidden",
    "GitFailed",
    "HOST_PLUGIN_CODES",
    "HOST_PLUGIN_ERRORS",
    "INTERRUPT_FAILED_ALIASES",
    "ImageTooLarge",
    "InternalError",
    "Interrupted",
    "InvalidWindow",
    "JcliError",
    "JobAmbiguous",
    "JobNotFound",
    "KernelBusy",
    "KernelDied",
    "KernelMismatch",
    "KernelspecNotFound",
    "MimeNotFound",
    "NotAuthorized",
    "NotebookChanged",
    "NotebookOutOfSync",
    "NotebookPaired",
    "NotebookReadFailed",
    "OutputDataInvalid",
    "OutputNotFound",
    "OutputSaveFailed",
    "OutputTooLarge",
    "PairConflict",
    "ParametersInvalid",
    "ParametersUnsupportedKernel",
    "PathAmbiguous",
    "PathNotAllowed",
    "PeerRefused",
    "ProtocolError",
    "ProxyAuthRequired",
    "RemoteDataRefused",
    "RenderFailed",
    "RenderTimedOut",
    "RendererUnavailable",
    "RoomLost",
    "RunNotFound",
    "RuntimeDirUnsafe",
    "RuntimeDirUnusable",
    "SearchTooCostly",
    "ServerError",
    "ServerMessageInvalid",
    "ServerNotRunning",
    "ServerUnavailable",
    "SessionNotFound",
    "SidecarError",
    "SidecarUnavailable",
    "Timeout",
    "UPSTREAM_CODES",
    "UsageError",
    "VariableNotFound",
    "WorkspaceUnsafe",
    "error_from_code",
    "internal_error",
]


class JcliError(Exception):
    """Base of every coded j-cli error.

    Args:
        message: one human sentence; never payload data.
        **details: JSON-safe facts that travel beside the message.

    Example:
        >>> err = CellNotFound("cell 9 is outside the notebook (3 cells)", cells=3)
        >>> (err.code, err.details)
        ('CELL_NOT_FOUND', {'cells': 3})
    """

    code = "INTERNAL_ERROR"
    #: Upstream jupyter-jcli 0.9.7's codes for this condition (:data:`UPSTREAM_CODES`); one error may add its own.
    code_aliases: tuple[str, ...] = ()

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __reduce__(self):  # keep code and details across pickling
        return (_rebuild, (self.code, self.message, self.details))

    def to_dict(self) -> dict[str, Any]:
        """The ``error{code, message, ...}`` map that goes on the wire."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.code_aliases:
            out["code_aliases"] = list(self.code_aliases)
        out.update(self.details)
        return out


class UsageError(JcliError):
    """Bad flags or request fields."""

    code = "USAGE_ERROR"


class InvalidWindow(UsageError):
    """A bad text window: offset/limit out of range, or a window on an image."""

    code = "INVALID_WINDOW"


class FileNotFound(JcliError, FileNotFoundError):
    """The file, or a ``.py`` file's paired notebook, does not exist."""

    code = "FILE_NOT_FOUND"


class NotebookReadFailed(JcliError):
    """Not a readable notebook (not JSON, nbformat > 4, nested too deeply, a FIFO or device, over ``JCLI_MAX_FILE_MB``, no permission, ...)."""

    code = "NOTEBOOK_READ_FAILED"


class CellNotFound(JcliError, IndexError):
    """The cell index, or a ``--cell`` range of ``notebook summary`` or ``show``, is outside the file."""

    code = "CELL_NOT_FOUND"


class CellMappingUnreliable(JcliError):
    """A ``.py`` cell maps to no single notebook cell."""

    code = "CELL_MAPPING_UNRELIABLE"


class CellChanged(JcliError):
    """A cell edit's ``--if-source`` no longer holds: the cell's source changed since j-cli showed it. Nothing was changed;
    ``source`` and ``source_sha`` are the cell's now (``cell_id``, ``cell_index``), to decide the edit again from."""

    code = "CELL_CHANGED"


class CellIdDuplicate(JcliError):
    """A ``.py``'s ``# %%`` markers repeat an ``id="…"`` (a copied cell): nothing run or written; ``duplicates`` names the cells and lines."""

    code = "CELL_ID_DUPLICATE"


class OutputNotFound(JcliError, IndexError):
    """The output index is outside the cell or run."""

    code = "OUTPUT_NOT_FOUND"


class MimeNotFound(JcliError, KeyError):
    """The asked MIME is not in the output."""

    code = "MIME_NOT_FOUND"

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class OutputTooLarge(JcliError):
    """The answer is over the response cap."""

    code = "OUTPUT_TOO_LARGE"


class OutputDataInvalid(JcliError, ValueError):
    """A malformed output or run manifest, a bundle value of the wrong type (``{"image/png": null}``), image data that fails its checks, or a damaged run payload."""

    code = "OUTPUT_DATA_INVALID"


class PathNotAllowed(JcliError, PermissionError):
    """An MCP read outside the allowed roots, a lock that cannot be taken, or a cell edit's notebook or ``--source-file`` that is a symlink leading out of the workspace."""

    code = "PATH_NOT_ALLOWED"


class PathAmbiguous(JcliError):
    """A relative path or run id with several MCP roots."""

    code = "PATH_AMBIGUOUS"


class RunNotFound(JcliError):
    """No such kept run (it may have been cleaned)."""

    code = "RUN_NOT_FOUND"


class JobNotFound(JcliError):
    """No background job of that id or id prefix in this workspace (it may have been cleaned)."""

    code = "JOB_NOT_FOUND"


class JobAmbiguous(JcliError):
    """A job id prefix that names several jobs (``matches`` lists them)."""

    code = "JOB_AMBIGUOUS"


class BackgroundUnavailable(JcliError):
    """``exec --background`` with no sidecar to hold the job (``JCLI_SIDECAR=off``, an unusable runtime dir, a sidecar that does not start; ``reason`` says which): nothing ran."""

    code = "BACKGROUND_UNAVAILABLE"


class OutputSaveFailed(JcliError):
    """The code ran, but its outputs could not be saved (``executed: true``); a notebook that could not be written back, found before anything ran (``executed: false``); or a setup file could not be written."""

    code = "OUTPUT_SAVE_FAILED"


class WorkspaceUnsafe(JcliError):
    """``.j-cli``, its ``outputs``, ``.staging``, a run directory, manifest or payload is owned by another user (for root: by anyone but root), or writable by others or by a group that is not its owner's private group; ``path``, ``owner``, ``mode`` and ``fix`` say which and how to mend it. Nothing there is read, written or deleted."""

    code = "WORKSPACE_UNSAFE"


class NotebookOutOfSync(JcliError):
    """The notebook changed on disk while a cell ran; or a commit would hold a ``.py`` and its notebook out of line (the git pre-commit check, exit 1)."""

    code = "NOTEBOOK_OUT_OF_SYNC"


class NotebookChanged(NotebookOutOfSync):
    """Another program saved or deleted the notebook while j-cli wrote it back: its version stays, j-cli's is kept beside it (``kept``)."""

    code = "NOTEBOOK_CHANGED"


class NotebookPaired(JcliError):
    """A cell edit of a notebook paired with a py:percent ``.py`` (``py_path``): the ``.py`` is the truth for its cells, so edit
    the ``.py`` (``exec -f`` syncs the notebook from it). Nothing was changed."""

    code = "NOTEBOOK_PAIRED"


class PairConflict(JcliError):
    """Running (or ``convert py-to-ipynb`` of) a ``.py`` would overwrite notebook cells or outputs it never knew about (``--py-wins`` overrides)."""

    code = "PAIR_CONFLICT"


class SessionNotFound(JcliError):
    """No such kernel session."""

    code = "SESSION_NOT_FOUND"


class ServerUnavailable(JcliError):
    """The Jupyter Server cannot be reached, or is not one at that base URL."""

    code = "SERVER_UNAVAILABLE"


class KernelDied(ServerUnavailable):
    """The kernel died or restarted mid-run."""

    code = "KERNEL_DIED"


class ServerMessageInvalid(KernelDied):
    """The server sent a kernel message j-cli cannot read (a binary frame whose offsets do not fit it, a text that is no JSON object with a message's fields, nesting too deep); the connection is dropped."""

    code = "SERVER_MESSAGE_INVALID"


class ServerNotRunning(ServerUnavailable):
    """JupyterHub answered for a user's server that is not running, or still starting (``state``; ``spawn_url`` starts it)."""

    code = "SERVER_NOT_RUNNING"


class NotAuthorized(JcliError):
    """The server refused the token (HTTP 401: missing or wrong)."""

    code = "NOT_AUTHORIZED"


class ProxyAuthRequired(JcliError):
    """The proxy the environment names answered 407: no credentials in its URL, or not the right ones (``proxy``, redacted)."""

    code = "PROXY_AUTH_REQUIRED"


class Forbidden(JcliError):
    """The token is good, but the server refuses the request (HTTP 403): a gateway that does not list sessions, a kernel user it refuses; ``setting`` names the switch when j-cli knows it."""

    code = "FORBIDDEN"


class KernelspecNotFound(UsageError):
    """``session create -k`` names a kernel spec the server does not have (exit 2)."""

    code = "KERNELSPEC_NOT_FOUND"


class KernelMismatch(JcliError):
    """``exec -f`` of a file that asks for another kernel (and language) than the session's: nothing run (``--any-kernel`` overrides)."""

    code = "KERNEL_MISMATCH"


class ParametersInvalid(UsageError):
    """``exec -p/-y/--parameters-file`` given a name that is not an identifier, YAML that is not a mapping, or parameters a run cannot take: nothing written or run."""

    code = "PARAMETERS_INVALID"


class ParametersUnsupportedKernel(JcliError):
    """``exec -p/-y`` for a kernel whose language j-cli does not translate parameters for (Python only): the kernel is named; nothing written or run."""

    code = "PARAMETERS_UNSUPPORTED_KERNEL"


class ServerError(JcliError):
    """The server failed (HTTP 5xx); ``server_message`` is what it said."""

    code = "SERVER_ERROR"


class KernelBusy(JcliError):
    """``vars`` on a busy kernel that has no debugger to ask beside the running code; or an exec on a kernel that runs a background job (``job_id`` names it; ``--background --queue`` runs after it)."""

    code = "KERNEL_BUSY"


class VariableNotFound(JcliError):
    """``vars --name N``: no such variable (exit 1)."""

    code = "VARIABLE_NOT_FOUND"


class Timeout(JcliError, TimeoutError):
    """A run or read went past its deadline (for the sidecar: ``JCLI_SIDECAR_REQUEST_SECONDS``)."""

    code = "TIMEOUT"


class SearchTooCostly(JcliError):
    """``notebook grep``: the pattern's search ran past its bound (``JCLI_GREP_SEARCH_SECONDS``; ``seconds``), as one that backtracks without end does (``(a+)+$``); the search is ended, nothing else waits on it."""

    code = "SEARCH_TOO_COSTLY"


class Interrupted(JcliError):
    """SIGINT or SIGTERM stopped an exec (``signal``; exit 130 or 143)."""

    code = "INTERRUPTED"


class RendererUnavailable(JcliError):
    """An SVG render without the ``[svg]`` extra, or a chart render without the ``[charts]`` extra."""

    code = "RENDERER_UNAVAILABLE"


class RenderFailed(JcliError):
    """A render or image fit failed or hit a cap."""

    code = "RENDER_FAILED"


class RenderTimedOut(JcliError):
    """A chart render that did not finish within its time limit (``JCLI_CHART_SECONDS``): it was ended."""

    code = "RENDER_TIMEOUT"


class RemoteDataRefused(JcliError):
    """A chart that asks for data or resources from outside itself (a URL), refused before rendering."""

    code = "REMOTE_DATA_REFUSED"


class BrowserNotFound(JcliError):
    """A Plotly render with no Chrome or Chromium on the system (none is ever downloaded)."""

    code = "BROWSER_NOT_FOUND"


class ImageTooLarge(JcliError):
    """An image over the pixel cap, or one that cannot meet ``max_bytes``."""

    code = "IMAGE_TOO_LARGE"


class ConfigInvalid(JcliError):
    """A host config j-cli cannot parse, or one that is not a regular file (left untouched)."""

    code = "CONFIG_INVALID"


class ConfigConflict(JcliError):
    """An entry or file j-cli did not write is in the way."""

    code = "CONFIG_CONFLICT"


class GitFailed(JcliError):
    """``git`` is missing, or a git command failed (not inside a repository, say)."""

    code = "GIT_FAILED"


class SidecarError(JcliError):
    """The sidecar transport failed (reads fall back to in-process; an exec it already sent to the kernel is reported, with what it printed, never re-run)."""

    code = "SIDECAR_ERROR"


class ProtocolError(SidecarError):
    """A bad frame or handshake, or an answer that is not complete JSON."""

    code = "PROTOCOL_ERROR"


class PeerRefused(SidecarError, PermissionError):
    """Another user on the sidecar socket."""

    code = "PEER_REFUSED"


class RuntimeDirUnsafe(SidecarError, PermissionError):
    """The runtime dir has the wrong owner or mode."""

    code = "RUNTIME_DIR_UNSAFE"


class SidecarUnavailable(SidecarError):
    """No sidecar runs, or it died or is too old."""

    code = "SIDECAR_UNAVAILABLE"


class RoomLost(JcliError):
    """The notebook's collaboration room was left or its connection dropped (``reason``): a write through it did not reach the shared document."""

    code = "ROOM_LOST"


class RuntimeDirUnusable(JcliError):
    """The runtime dir cannot be created or written, or is too long for the sidecar's socket (``path``, ``reason``); set ``XDG_RUNTIME_DIR`` to a short directory you can write."""

    code = "RUNTIME_DIR_UNUSABLE"


class InternalError(JcliError):
    """A bug (never bad input); ``JCLI_DEBUG=1`` shows the traceback."""

    code = "INTERNAL_ERROR"


def internal_error(exc: BaseException) -> InternalError:
    """The coded stand-in for an unexpected exception (a bug): its type only, the exception kept as the cause.

    Example:
        >>> err = internal_error(OverflowError("timeout too large"))
        >>> err.code, err.message, type(err.__cause__).__name__
        ('INTERNAL_ERROR', 'j-cli failed unexpectedly (OverflowError); please report it', 'OverflowError')
    """
    err = InternalError(f"j-cli failed unexpectedly ({type(exc).__name__}); please report it")
    err.__cause__ = exc
    return err


def _all_leaves(cls: type[JcliError]) -> list[type[JcliError]]:
    return [cls, *(leaf for sub in cls.__subclasses__() for leaf in _all_leaves(sub))]


_BY_CODE: dict[str, type[JcliError]] = {c.code: c for c in _all_leaves(JcliError)}
ERROR_CODES: frozenset[str] = frozenset(_BY_CODE)

#: Upstream jupyter-jcli 0.9.7's error codes, each with j-cli's code for the same condition (listed in that error's
#: ``code_aliases``). ``EXECUTION_ERROR`` (code raised) is a result's ``status: "error"``, whose ``error`` lists the
#: alias; ``INTERRUPT_FAILED`` is an ``INTERRUPTED`` whose kernel could not be interrupted: that error alone lists it.
UPSTREAM_CODES: dict[str, str | None] = {
    "CONNECTION_FAILED": "SERVER_UNAVAILABLE",
    "EXECUTION_ERROR": None,
    "INTERRUPT_FAILED": None,
    "KERNEL_NOT_FOUND": "KERNELSPEC_NOT_FOUND",
    "MIME_NOT_SUPPORTED": "MIME_NOT_FOUND",
}
#: The upstream code of code that raised (see :data:`UPSTREAM_CODES`).
EXECUTION_ERROR_ALIASES: tuple[str, ...] = ("EXECUTION_ERROR",)
#: The upstream code of a kernel that could not be interrupted (see :data:`UPSTREAM_CODES`).
INTERRUPT_FAILED_ALIASES: tuple[str, ...] = ("INTERRUPT_FAILED",)
for _code, _cls in _BY_CODE.items():
    _cls.code_aliases = tuple(upstream for upstream, ours in UPSTREAM_CODES.items() if ours == _code)
#: Codes only the host plugins raise, about running j-cli itself (j-cli never reports them), and what each means.
HOST_PLUGIN_ERRORS: dict[str, str] = {
    "ABORTED": "Plugins only: the tool call was stopped.",
    "JCLI_UNAVAILABLE": "Plugins only: the j-cli command cannot be run.",
    "JOB_WAIT_STOPPED": "DSH plugin only: ``wait_notebook_job`` was stopped; the jobs run on (wait again).",
    "READ_TOOL_UNAVAILABLE": (
        "OpenCode plugin only: the package its read tool needs (``@opencode-ai/plugin``) cannot be loaded; the guards still run."
    ),
}
HOST_PLUGIN_CODES: frozenset[str] = frozenset(HOST_PLUGIN_ERRORS)


def error_from_code(code: str, message: str, **details: Any) -> JcliError:
    """Rebuild the matching error class from a wire ``error{code, message}``.

    Unknown codes (a newer peer) come back as a plain :class:`JcliError`
    that still carries the peer's code.

    Example:
        >>> type(error_from_code("OUTPUT_NOT_FOUND", "no output 4")).__name__
        'OutputNotFound'
    """
    aliases = details.pop("code_aliases", None)
    cls = _BY_CODE.get(code)
    if cls is None:
        err = JcliError(message, **details)
        err.code = code
    else:
        err = cls(message, **details)
    if isinstance(aliases, list) and all(isinstance(a, str) for a in aliases):
        err.code_aliases = tuple(aliases)  # as the peer said: one error may add its own
    return err


def _rebuild(code: str, message: str, details: dict[str, Any]) -> JcliError:
    return error_from_code(code, message, **details)
