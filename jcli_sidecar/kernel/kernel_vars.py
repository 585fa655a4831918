"""A kernel's variables: what ``j-cli vars`` and the ``session list --vars`` preview show.

Two sources, chosen per call (``source`` in the answer):

- ``snippet``, whenever the kernel is idle: one ``execute_request`` with
  ``silent: true``, ``store_history: false``, no code, and one user
  expression that runs :mod:`jcli_sidecar.kernel.vars_rules` in a private
  namespace. It lists every user variable, functions and classes included,
  in **definition order** (the namespace's insertion order: the order names
  were first assigned; reassigning keeps a name's place, ``del`` and
  assigning again moves it to the end), with values bounded inside the
  kernel. It leaves no trace: no new names, ``In``/``Out``/``_`` and the
  execution count unchanged.
- ``debugger``, when the kernel is busy and its debugger is available
  (``kernel_info``: ``supported_features`` holds ``"debugger"``): DAP
  ``inspectVariables`` (and ``richInspectVariables`` for ``--rich``) as a
  ``debug_request`` on the control channel, which answers while code runs.
  No ``initialize`` is sent: ipykernel answers these two requests without
  starting debugpy, whereas starting it imports ``debugpy`` into the user's
  namespace and waits behind the running code. Without debugpy started the
  debugger shows plain variables only, sorted by name: functions and classes
  are missing from its rows (``order: "name"``, and a note says so).

A busy kernel without a debugger is ``KERNEL_BUSY`` at once: a request on
its shell channel would wait behind the user's code. Nothing here ever
interrupts the kernel.
"""

from __future__ import annotations

import json

from ..base import KernelBusy, Timeout, UsageError, VariableNotFound
from . import vars_rules
from .exec_timeout import check_timeout
from .kernel_client import KernelConnection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .jupyter_api import JupyterServer

__all__ = [
    "MAX_ROWS",
    "NAMED_VALUE_CHARS",
    "PREVIEW_NAMES",
    "PREVIEW_TIMEOUT",
    "RICH_CHARS",
    "VALUE_CHARS",
    "VARS_TIMEOUT",
    "preview_variables",
    "read_variables",
]

#: Seconds ``vars`` waits for the kernel's answer (``--timeout``).
VARS_TIMEOUT = 10.0
#: Seconds the ``session list --vars`` preview waits for each kernel.
PREVIEW_TIMEOUT = 5.0
#: Characters of each value's repr in a listing, and with ``--name``.
VALUE_CHARS = 200
NAMED_VALUE_CHARS = 4000
#: Characters of each text MIME value with ``--rich`` (other MIME values over it are left out).
RICH_CHARS = 20_000
#: Rows in a listing; ``total`` says how many there were.
MAX_ROWS = 500
#: Names in a ``session list --vars`` preview.
PREVIEW_NAMES = 8

DEBUGGER_NOTE = (
    "the kernel is busy: these rows come from its debugger, which lists plain variables only, "
    "sorted by name (no functions or classes); run vars again when the kernel is idle for all of them in definition order"
)


def read_variables(
    server: JupyterServer,
    session: dict[str, Any],
    *,
    name: str | None = None,
    rich: bool = False,
    modules: bool = False,
    timeout: float = VARS_TIMEOUT,
) -> dict[str, Any]:
    """The variables of ``session``'s kernel, or the one called ``name``.

    Args:
        session: a :func:`~jcli_sidecar.kernel.jupyter_api.session_summary` row.
        name: one variable (modules included); its value is bounded by
            :data:`NAMED_VALUE_CHARS` instead of :data:`VALUE_CHARS`.
        rich: with ``name``, also its rich representation (``rich.data``, each
            text MIME cut to :data:`RICH_CHARS`).
        modules: list imported modules too (hidden by default).
        timeout: seconds to wait for the kernel (:func:`check_timeout`).

    Returns:
        ``{session_id, kernel_id, source, order, variables, count, total,
        modules_hidden, notes}``; with ``name``, ``{session_id, kernel_id,
        source, variable}`` (and ``rich``).

    Raises:
        UsageError: ``rich`` without ``name``, a ``name`` that is not an
            identifier, a bad timeout, or a kernel that is not Python.
        VariableNotFound: no variable ``name``.
        KernelBusy: the kernel is busy and has no debugger.
        Timeout: no answer within ``timeout``.
        KernelDied, ServerUnavailable, SessionNotFound: the kernel or server failed.

    Example:
        >>> doc = read_variables(server, row)  # doctest: +SKIP
        >>> [v["name"] for v in doc["variables"]]  # doctest: +SKIP
        ['x', 'df', 'f']
    """
    if rich and name is None:
        raise UsageError("--rich needs --name: the rich representation is of one variable")
    if name is not None and not name.isidentifier():
        raise UsageError(f"--name takes a variable name, got {name!r}")
    wait = check_timeout(timeout) or VARS_TIMEOUT
    with KernelConnection(server, session["kernel_id"]) as kernel:
        info = kernel.request("kernel_info_request", {}, channel="control", timeout=wait)
        _require_python(info)
        head = {"session_id": session["id"], "kernel_id": session["kernel_id"]}
        if session.get("execution_state") == "busy":
            if not _has_debugger(info):
                raise KernelBusy(
                    "the kernel is busy running code and has no debugger to ask beside it; "
                    "run vars again when it is idle (or: j-cli kernel interrupt)"
                )
            return {**head, "source": "debugger", **_from_debugger(kernel, name, rich, modules, wait)}
        return {**head, "source": "snippet", **_from_snippet(kernel, name, rich, modules, wait)}


def preview_variables(server: JupyterServer, session: dict[str, Any], *, timeout: float = PREVIEW_TIMEOUT) -> dict[str, Any]:
    """The first :data:`PREVIEW_NAMES` variable names of an idle kernel, in definition order: ``{names, total}``.

    Raises what :func:`read_variables` raises (``session list`` reports it per row).
    """
    with KernelConnection(server, session["kernel_id"]) as kernel:
        params = {"name": None, "cap": 0, "modules": False, "max_rows": PREVIEW_NAMES, "names_only": True}
        found = _run_snippet(kernel, params, timeout)
    return {"names": [row["name"] for row in found["variables"]], "total": found["total"]}


# -- the snippet ----------------------------------------------------------------


def _snippet_expression(params: dict[str, Any]) -> str:
    """One expression that runs the rules' source in a fresh namespace and returns :func:`vars_rules.run`'s JSON."""
    from pathlib import Path

    source = Path(vars_rules.__file__).read_text(encoding="utf-8")
    return f"(lambda g: __import__('builtins').exec({source!r}, g) or g['run']({json.dumps(params)!r}))({{'__name__': 'jcli_vars'}})"


def _run_snippet(kernel: KernelConnection, params: dict[str, Any], timeout: float, extra: dict[str, str] | None = None) -> Any:
    """Run the snippet silently; its parsed JSON, and the extra user expressions' results under ``_extra``."""
    import ast

    content = {
        "code": "",
        "silent": True,
        "store_history": False,
        "user_expressions": {"jcli_vars": _snippet_expression(params), **(extra or {})},
        "allow_stdin": False,
        "stop_on_error": False,
    }
    try:
        reply = kernel.request("execute_request", content, timeout=timeout)
    except Timeout:
        raise Timeout(f"the kernel did not answer within {timeout:g} s (is it busy?); nothing was interrupted") from None
    results = reply.get("user_expressions") or {}
    mine = results.get("jcli_vars") or {}
    if mine.get("status") != "ok":
        raise UsageError(f"the kernel could not list its variables ({mine.get('ename') or reply.get('status')}: {mine.get('evalue', '')})")
    found = json.loads(ast.literal_eval(mine["data"]["text/plain"]))
    found["_extra"] = {key: results.get(key) or {} for key in extra or {}}
    return found


def _from_snippet(kernel: KernelConnection, name: str | None, rich: bool, modules: bool, timeout: float) -> dict[str, Any]:
    params: dict[str, Any]
    if name is None:
        params = {"name": None, "cap": VALUE_CHARS, "modules": modules, "max_rows": MAX_ROWS, "names_only": False}
        found = _run_snippet(kernel, params, timeout)
        return _listing(found, "definition", [])
    params = {"name": name, "cap": NAMED_VALUE_CHARS, "modules": True, "max_rows": 1, "names_only": False}
    found = _run_snippet(kernel, params, timeout, {"rich": name} if rich else None)
    if found["variable"] is None:
        raise VariableNotFound(f"no variable {name!r} in the kernel; see j-cli vars SESSION", name=name)
    doc: dict[str, Any] = {"variable": found["variable"]}
    if rich:
        doc["rich"] = _bounded_rich(found["_extra"]["rich"].get("data") or {})
    return doc


# -- the debugger ---------------------------------------------------------------


def _debug(kernel: KernelConnection, command: str, arguments: dict[str, Any], timeout: float) -> dict[str, Any]:
    request = {"seq": 1, "type": "request", "command": command, "arguments": arguments}
    reply = kernel.request("debug_request", request, channel="control", timeout=timeout)
    if not reply.get("success"):
        raise KernelBusy(f"the kernel is busy and its debugger refused {command} ({reply.get('message') or 'no reason given'})")
    return reply.get("body") or {}


def _from_debugger(kernel: KernelConnection, name: str | None, rich: bool, modules: bool, timeout: float) -> dict[str, Any]:
    rows = []
    for var in _debug(kernel, "inspectVariables", {}, timeout).get("variables") or []:
        if not var.get("type"):  # the debugger's group rows ("special variables", ...)
            continue
        kind = "module" if var["type"] == "module" else "value"
        cap = VALUE_CHARS if name is None else NAMED_VALUE_CHARS
        rows.append({"name": var["name"], "type": var["type"], "kind": kind, **vars_rules.bounded(str(var.get("value", "")), cap)})
    if name is None:
        return _listing(vars_rules.select(rows, modules=modules, max_rows=MAX_ROWS), "name", [DEBUGGER_NOTE])
    match = [row for row in rows if row["name"] == name and not vars_rules.is_hidden(name)]
    if not match:
        raise VariableNotFound(
            f"no variable {name!r} among those the busy kernel's debugger lists (plain variables only: "
            "not functions or classes); run vars again when the kernel is idle",
            name=name,
        )
    doc: dict[str, Any] = {"variable": match[0], "notes": [DEBUGGER_NOTE]}
    if rich:
        doc["rich"] = _bounded_rich(_debug(kernel, "richInspectVariables", {"variableName": name}, timeout).get("data") or {})
    return doc


# -- shared ---------------------------------------------------------------------


def _listing(found: dict[str, Any], order: str, notes: list[str]) -> dict[str, Any]:
    rows = found["variables"]
    if found["total"] > len(rows):
        notes = [*notes, f"showing the first {len(rows)} of {found['total']} variables"]
    return {
        "order": order,
        "variables": rows,
        "count": len(rows),
        "total": found["total"],
        "modules_hidden": found["modules_hidden"],
        "notes": notes,
    }


def _bounded_rich(data: dict[str, Any]) -> dict[str, Any]:
    """A MIME bundle bounded: text MIME values cut to :data:`RICH_CHARS`, any other value over it left out."""
    kept: dict[str, Any] = {}
    lengths: dict[str, int] = {}
    truncated: list[str] = []
    omitted: list[str] = []
    for mime, value in data.items():
        text = value if isinstance(value, str) else json.dumps(value)
        lengths[mime] = len(text)
        if len(text) <= RICH_CHARS:
            kept[mime] = value
        elif mime.startswith("text/") and isinstance(value, str):
            kept[mime] = value[:RICH_CHARS]
            truncated.append(mime)
        else:
            omitted.append(mime)
    return {"data": kept, "lengths": lengths, "truncated": truncated, "omitted": omitted}


def _has_debugger(info: dict[str, Any]) -> bool:
    """What ``kernel_info_reply`` says: ``supported_features`` (protocol 5.5), or the older ``debugger: true``."""
    return "debugger" in (info.get("supported_features") or []) or info.get("debugger") is True


def _require_python(info: dict[str, Any]) -> None:
    language = ((info.get("language_info") or {}).get("name") or "").lower()
    if language != "python":
        raise UsageError(f"vars reads Python kernels; this kernel's language is {language or 'unknown'}")
