"""Every error j-cli reports, each with one stable code.

The tree::

    JcliError                         base; ``code`` goes out unchanged
    ├── UsageError                    USAGE_ERROR (bad arguments, exit 2)
    │   └── InvalidWindow             INVALID_WINDOW
    ├── FileNotFound                  FILE_NOT_FOUND (also a FileNotFoundError)
    ├── NotebookReadFailed            NOTEBOOK_READ_FAILED
    ├── CellNotFound                  CELL_NOT_FOUND (also an IndexError)
    ├── CellMappingUnreliable         CELL_MAPPING_UNRELIABLE
    ├── CellIdDuplicate               CELL_ID_DUPLICATE (a .py's markers repeat an id)
    ├── OutputNotFound                OUTPUT_NOT_FOUND (also an IndexError)
    ├── MimeNotFound                  MIME_NOT_FOUND (also a KeyError)
    ├── OutputTooLarge                OUTPUT_TOO_LARGE
    ├── OutputDataInvalid             OUTPUT_DATA_INVALID (also a ValueError)
    ├── PathNotAllowed                PATH_NOT_ALLOWED (also a PermissionError)
    ├── PathAmbiguous                 PATH_AMBIGUOUS
    ├── RunNotFound                   RUN_NOT_FOUND
    ├── JobNotFound                   JOB_NOT_FOUND (no job of that id or prefix)
    ├── JobAmbiguous                  JOB_AMBIGUOUS (a prefix that names several jobs)
    ├── BackgroundUnavailable         BACKGROUND_UNAVAILABLE (exec --background with no sidecar to hold the job)
    ├── OutputSaveFailed              OUTPUT_SAVE_FAILED
    ├── WorkspaceUnsafe               WORKSPACE_UNSAFE (.j-cli, outputs or a run another user owns or can write)
    ├── NotebookOutOfSync             NOTEBOOK_OUT_OF_SYNC
    ├── SessionNotFound               SESSION_NOT_FOUND
    ├── ServerUnavailable             SERVER_UNAVAILABLE
    │   └── KernelDied                KERNEL_DIED (the kernel died or restarted mid-run)
    ├── NotAuthorized                 NOT_AUTHORIZED (HTTP 401: the token is missing or wrong)
    ├── ProxyAuthRequired             PROXY_AUTH_REQUIRED (HTTP 407: the proxy wants credentials, or refused them)
    ├── Forbidden                     FORBIDDEN (HTTP 403: the server refuses this request)
    ├── KernelspecNotFound            KERNELSPEC_NOT_FOUND (no such kernel spec; a UsageError)
    ├── KernelMismatch                KERNEL_MISMATCH (the file asks for another kernel than the session's)
    ├── ServerError                   SERVER_ERROR (the server failed: HTTP 5xx, its own message kept)
    ├── KernelBusy                    KERNEL_BUSY (vars: busy, and no debugger to ask)
    ├── VariableNotFound              VARIABLE_NOT_FOUND (vars --name: no such variable)
    ├── Timeout                       TIMEOUT (also a TimeoutError)
    ├── Interrupted                   INTERRUPTED (SIGINT or SIGTERM stopped an exec)
    ├── RendererUnavailable           RENDERER_UNAVAILABLE (the [svg] extra is not installed)
    ├── RenderFailed                  RENDER_FAILED (rendering or fitting failed or hit a cap)
    ├── ImageTooLarge                 IMAGE_TOO_LARGE (over the pixel cap, or cannot fit the limits)
    ├── ConfigInvalid                 CONFIG_INVALID (a host config j-cli cannot parse)
    ├── ConfigConflict                CONFIG_CONFLICT (an entry j-cli does not manage)
    ├── GitFailed                     GIT_FAILED (git missing, or a git command failed)
    ├── SidecarError                  the sidecar transport (clients fall back)
    │   ├── ProtocolError             PROTOCOL_ERROR (bad frame, bad handshake)
    │   ├── PeerRefused               PEER_REFUSED (another uid on the socket)
    │   ├── RuntimeDirUnsafe          RUNTIME_DIR_UNSAFE (wrong owner or mode)
    │   └── SidecarUnavailable        SIDECAR_UNAVAILABLE (none running, died, too old)
    ├── RuntimeDirUnusable            RUNTIME_DIR_UNUSABLE (cannot be made or written, or too long for a socket)
    └── InternalError                 INTERNAL_ERROR (a bug; never bad input)

Messages never carry payload data (base64 above all): they name files,
indexes and sizes only. Extra machine-readable facts go in ``details``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BackgroundUnavailable",
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
    "NotebookReadFailed",
    "OutputDataInvalid",
    "OutputNotFound",
    "OutputSaveFailed",
    "OutputTooLarge",
    "PairConflict",
    "PathAmbiguous",
    "PathNotAllowed",
    "PeerRefused",
    "ProtocolError",
    "ProxyAuthRequired",
    "RenderFailed",
    "RendererUnavailable",
    "RunNotFound",
    "RuntimeDirUnsafe",
    "RuntimeDirUnusable",
    "ServerError",
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
    code = "USAGE_ERROR"


class InvalidWindow(UsageError):
    code = "INVALID_WINDOW"


class FileNotFound(JcliError, FileNotFoundError):
    code = "FILE_NOT_FOUND"


class NotebookReadFailed(JcliError):
    code = "NOTEBOOK_READ_FAILED"


class CellNotFound(JcliError, IndexError):
    code = "CELL_NOT_FOUND"


class CellMappingUnreliable(JcliError):
    code = "CELL_MAPPING_UNRELIABLE"


class CellIdDuplicate(JcliError):
    """A py:percent file's markers carry one ``id`` on several cells (a copied cell): refused before anything runs."""

    code = "CELL_ID_DUPLICATE"


class OutputNotFound(JcliError, IndexError):
    code = "OUTPUT_NOT_FOUND"


class MimeNotFound(JcliError, KeyError):
    code = "MIME_NOT_FOUND"

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class OutputTooLarge(JcliError):
    code = "OUTPUT_TOO_LARGE"


class OutputDataInvalid(JcliError, ValueError):
    code = "OUTPUT_DATA_INVALID"


class PathNotAllowed(JcliError, PermissionError):
    code = "PATH_NOT_ALLOWED"


class PathAmbiguous(JcliError):
    code = "PATH_AMBIGUOUS"


class RunNotFound(JcliError):
    code = "RUN_NOT_FOUND"


class JobNotFound(JcliError):
    """No job has that id or id prefix (it may have been cleaned)."""

    code = "JOB_NOT_FOUND"


class JobAmbiguous(JcliError):
    """A job id prefix that names several jobs (``matches`` lists them)."""

    code = "JOB_AMBIGUOUS"


class BackgroundUnavailable(JcliError):
    """``exec --background`` needs the workspace's sidecar to hold the job, and there can be none (``reason``)."""

    code = "BACKGROUND_UNAVAILABLE"


class OutputSaveFailed(JcliError):
    code = "OUTPUT_SAVE_FAILED"


class WorkspaceUnsafe(JcliError):
    """A ``.j-cli``, ``outputs``, staging or run path that another user owns or can write (it is not used)."""

    code = "WORKSPACE_UNSAFE"


class NotebookOutOfSync(JcliError):
    code = "NOTEBOOK_OUT_OF_SYNC"


class NotebookChanged(NotebookOutOfSync):
    """Another program saved (or deleted) the file while j-cli wrote it: theirs stays, j-cli's is kept aside (``kept``)."""

    code = "NOTEBOOK_CHANGED"


class PairConflict(JcliError):
    """Running a ``.py`` would overwrite notebook content it never knew about."""

    code = "PAIR_CONFLICT"


class SessionNotFound(JcliError):
    code = "SESSION_NOT_FOUND"


class ServerUnavailable(JcliError):
    code = "SERVER_UNAVAILABLE"


class KernelDied(ServerUnavailable):
    code = "KERNEL_DIED"


class NotAuthorized(JcliError):
    """The server answered 401: no token, or not the right one."""

    code = "NOT_AUTHORIZED"


class ProxyAuthRequired(JcliError):
    """The proxy the environment names answered 407: no credentials in its URL, or not the right ones (``proxy``, redacted)."""

    code = "PROXY_AUTH_REQUIRED"


class Forbidden(JcliError):
    """The server answered 403: the token is good, the request is not allowed (``setting`` may name the switch)."""

    code = "FORBIDDEN"


class KernelspecNotFound(UsageError):
    code = "KERNELSPEC_NOT_FOUND"


class KernelMismatch(JcliError):
    """A file asks for another kernel than the session runs: refused before any code is sent."""

    code = "KERNEL_MISMATCH"


class ServerError(JcliError):
    """The server failed (HTTP 5xx); ``server_message`` is what it said."""

    code = "SERVER_ERROR"


class KernelBusy(JcliError):
    """The kernel runs code and has no debugger to answer beside it, or runs a background job (``job_id``)."""

    code = "KERNEL_BUSY"


class VariableNotFound(JcliError):
    code = "VARIABLE_NOT_FOUND"


class Timeout(JcliError, TimeoutError):
    code = "TIMEOUT"


class Interrupted(JcliError):
    """A signal (SIGINT, SIGTERM) stopped ``j-cli exec``; ``details["signal"]`` names it."""

    code = "INTERRUPTED"


class RendererUnavailable(JcliError):
    code = "RENDERER_UNAVAILABLE"


class RenderFailed(JcliError):
    code = "RENDER_FAILED"


class ImageTooLarge(JcliError):
    code = "IMAGE_TOO_LARGE"


class ConfigInvalid(JcliError):
    code = "CONFIG_INVALID"


class ConfigConflict(JcliError):
    code = "CONFIG_CONFLICT"


class GitFailed(JcliError):
    """git is not installed, or a git command j-cli needs failed (outside a repository, say)."""

    code = "GIT_FAILED"


class SidecarError(JcliError):
    code = "SIDECAR_ERROR"


class ProtocolError(SidecarError):
    code = "PROTOCOL_ERROR"


class PeerRefused(SidecarError, PermissionError):
    code = "PEER_REFUSED"


class RuntimeDirUnsafe(SidecarError, PermissionError):
    code = "RUNTIME_DIR_UNSAFE"


class SidecarUnavailable(SidecarError):
    code = "SIDECAR_UNAVAILABLE"


class RuntimeDirUnusable(JcliError):
    """The runtime dir cannot be created or written, or its socket path is too long (``path``, ``reason``)."""

    code = "RUNTIME_DIR_UNUSABLE"


class InternalError(JcliError):
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
    found = [cls]
    for sub in cls.__subclasses__():
        found.extend(_all_leaves(sub))
    return found


_BY_CODE: dict[str, type[JcliError]] = {c.code: c for c in _all_leaves(JcliError)}
ERROR_CODES: frozenset[str] = frozenset(_BY_CODE)

#: Upstream jupyter-jcli 0.9.7's error codes, each with j-cli's code for the same condition; the
#: error of that code lists it in ``code_aliases``. ``EXECUTION_ERROR`` (the code raised) is no
#: j-cli error: a result with ``status: "error"`` says it, and its ``error`` object (and a notebook
#: run's summary) lists the alias. ``INTERRUPT_FAILED`` is an ``INTERRUPTED`` whose kernel could not
#: be interrupted: that error alone lists it.
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
#: Codes only the host plugins raise, about running j-cli itself (j-cli never
#: reports them): the call was stopped (a stopped DSH wait is JOB_WAIT_STOPPED:
#: the jobs run on), j-cli could not be run at all, or the read tool's host
#: package could not be loaded (the guards run regardless).
HOST_PLUGIN_CODES: frozenset[str] = frozenset({"ABORTED", "JCLI_UNAVAILABLE", "JOB_WAIT_STOPPED", "READ_TOOL_UNAVAILABLE"})


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
