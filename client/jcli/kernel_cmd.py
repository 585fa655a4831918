"""Kernel commands: server, healthcheck, kernelspec, session, kernel and exec.

Thin: each command resolves the server (explicit or embedded), calls
the core's ``jupyter_api`` / ``kernel_client``, and prints through ``emit``.
"""

from __future__ import annotations

import os

import click

from jcli_sidecar.base import JcliError, UsageError, setting
from jcli_sidecar.kernel import session_summary

from .outcome import fail, failing, finish
from .upstream_fields import with_health, with_session

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["healthcheck", "kernel", "kernelspec", "server", "session"]


def _server(ctx: click.Context, start: bool = True):
    from .embedded import resolve_server

    obj = ctx.find_root().obj
    return resolve_server(obj.get("server_url"), obj.get("token"), start=start)


# -- server ---------------------------------------------------------------------


@click.group()
def server() -> None:
    """The embedded Jupyter Server (used when no -s/JCLI_JUPYTER_SERVER_URL is given)."""


def _embedded():
    from jcli_sidecar.base import ensure_runtime_dir, workspace_of

    from .embedded import EmbeddedServer, nearest_embedded

    directory = ensure_runtime_dir(create=True)
    return directory, workspace_of(), EmbeddedServer, nearest_embedded


@server.command("start")
@click.pass_context
def server_start(ctx: click.Context) -> None:
    """Start the embedded server for this directory (or reuse an ancestor's live one)."""
    with failing(ctx):
        directory, workspace, EmbeddedServer, nearest = _embedded()
        embedded, live = nearest(directory, workspace)
        state = live or embedded.start()
    doc = {"running": True, **_public(state)}
    finish(ctx, doc, f"Jupyter Server running at {doc['url']} (pid {doc['pid']}) for {doc['workspace']}\n{_collaboration_line(doc)}")


@server.command("stop")
@click.pass_context
def server_stop(ctx: click.Context) -> None:
    """Stop the embedded server started for this directory."""
    with failing(ctx):
        directory, workspace, EmbeddedServer, _ = _embedded()
        stopped = EmbeddedServer(workspace, directory).stop()
    finish(ctx, {"stopped": stopped, "workspace": workspace}, "server stopped" if stopped else "no server was running here")


@server.command("status")
@click.pass_context
def server_status(ctx: click.Context) -> None:
    """Show the server this directory uses: url, token, pid, workspace and whether collaboration is on (-j for JSON)."""
    with failing(ctx):
        directory, workspace, _, nearest = _embedded()
        _, live = nearest(directory, workspace)
    if live is None:
        finish(ctx, {"running": False, "workspace": workspace}, f"no embedded Jupyter Server for {workspace}")
    doc = {"running": True, **_public(live)}
    human = f"Jupyter Server at {doc['url']} (pid {doc['pid']}) for {doc['workspace']}\n{_collaboration_line(doc)}\ntoken {doc['token']}"
    finish(ctx, doc, human)


def _public(state: dict[str, Any]) -> dict[str, Any]:
    """What ``server start|status`` show: the url (redacted, as every printed URL), token, pid, workspace and
    ``collaboration`` (whether the server's notebooks have collaboration rooms; null for a server that did not say)."""
    from jcli_sidecar.kernel import redact_url

    return {k: redact_url(state["url"]) if k == "url" else state.get(k) for k in ("url", "token", "pid", "workspace", "collaboration")}


def _collaboration_line(doc: dict[str, Any]) -> str:
    """The human line for ``collaboration``."""
    on = doc.get("collaboration")
    if on is None:
        return "collaboration unknown (a server started by an earlier j-cli)"
    return "collaboration on: a notebook open in JupyterLab here shares its room" if on else "collaboration off"


# -- healthcheck and kernelspecs ---------------------------------------------------


@click.command()
@click.pass_context
def healthcheck(ctx: click.Context) -> None:
    """Check that the Jupyter Server answers (starting the embedded one if needed), and what it offers."""
    from jcli_sidecar.kernel import LISTING_SETTINGS

    with failing(ctx):
        srv = _server(ctx)
        info = srv.info
        specs = srv.kernelspecs()
        listing = _listing_allowed(srv)
    kernels = (info.status or {}).get("kernels") if info.status else (len(listing) if listing is not None else None)
    notes = []
    if listing is None:
        notes.append(
            "this server does not list sessions: select them by full kernel id, or by name those this user created here "
            f"through j-cli (it remembers their names); or start it with {LISTING_SETTINGS[info.kind]}"
        )
    doc = {
        "status": "ok",
        "server": srv.shown_url,
        "server_kind": info.kind,
        "version": info.version,
        "gateway_version": info.gateway_version,
        "listing": listing is not None,
        "kernels": kernels,
        "default_kernel": specs.get("default"),
        "kernelspecs": sorted((specs.get("kernelspecs") or {}).keys()),
        "notes": notes,
        # through which proxy (redacted) and from which variable; null: reached directly
        "proxy": None if srv.proxy is None else {"url": srv.proxy.shown, "variable": srv.proxy.variable},
    }
    counted = f"{kernels} kernel(s)" if kernels is not None else "kernels not listed"
    human = f"ok: {srv.shown_url} ({info.kind.replace('_', ' ')} {info.gateway_version or info.version}), {counted}, default kernel {doc['default_kernel']}"
    if srv.proxy is not None:
        human += f", through {srv.proxy.named()}"
    finish(ctx, with_health(doc), "\n".join([human, *notes]))


def _listing_allowed(srv) -> list[dict[str, Any]] | None:
    """The server's kernels, or None where it does not list them (a gateway's default)."""
    from jcli_sidecar.base import Forbidden

    try:
        return srv.request("GET", "kernels")
    except Forbidden:
        return None


@click.group()
def kernelspec() -> None:
    """Kernel specs available on the server."""


@kernelspec.command("list")
@click.pass_context
def kernelspec_list(ctx: click.Context) -> None:
    """List kernel specs."""
    with failing(ctx):
        specs = _server(ctx).kernelspecs()
    rows = [
        {"name": name, "display_name": (spec.get("spec") or {}).get("display_name"), "language": (spec.get("spec") or {}).get("language")}
        for name, spec in sorted((specs.get("kernelspecs") or {}).items())
    ]
    doc = {"default": specs.get("default"), "kernelspecs": rows}
    finish(ctx, doc, "\n".join(f"{r['name']}\t{r['display_name']}" + ("  (default)" if r["name"] == doc["default"] else "") for r in rows))


@kernelspec.command("inspect-file")
@click.argument("file_path", metavar="FILE")
@click.pass_context
def kernelspec_inspect_file(ctx: click.Context, file_path: str) -> None:
    """The kernel an .ipynb or .py asks for (its metadata, a .py's jupytext header or its pair), without a server."""
    from jcli_sidecar.kernel import inspect_kernel_request

    from .outcome import attempt

    doc = attempt(ctx, lambda: inspect_kernel_request(file_path), "read")
    finish(ctx, doc, _kernel_request_text(doc))


def _kernel_request_text(doc: dict[str, Any]) -> str:
    """``inspect-file`` for people: the kernel and where it was found, or that none was requested."""
    where = {"notebook": "the notebook's metadata", "py_header": "the .py's jupytext header", "paired_notebook": "its paired notebook"}
    language = doc["kernel_language"] or (doc["language_info"] or {}).get("name") or doc["extension_language"]
    if not doc["requested"]:
        return f"none requested by {doc['path']}" + (f" (language: {language})" if language else "")
    spec = doc["kernelspec"]
    lines = [
        f"{spec['name'] or '-'}  {spec['display_name'] or '-'}  {language or '-'}",
        f"from {where[doc['source']]}: {doc['source_path']}",
    ]
    return "\n".join(lines)


# -- sessions and kernels ---------------------------------------------------------


@click.group()
def session() -> None:
    """Kernel sessions (select one by id, a unique 3+ character id prefix, or a unique name)."""


@session.command("create")
@click.option("-n", "--name", help="A name to select the session by (default: generated).")
@click.option("-k", "--kernel", help="Kernel spec name (default: the server's default).")
@click.pass_context
def session_create(ctx: click.Context, name: str | None, kernel: str | None) -> None:
    """Start a kernel session; its kernel runs in the current directory where the server can reach it.

    The embedded server always can. Another server's Python kernel is moved
    here when this very directory exists on its side; else it stays where the
    server put it, and the result says where (kernel_cwd, kernel_in_cwd).
    """
    from jcli_sidecar.base import Forbidden
    from jcli_sidecar.kernel import create_remembered, listed_sessions

    notes: list[str] = []
    with failing(ctx):
        srv = _server(ctx)
        chosen: str = name or f"jcli-{os.urandom(3).hex()}"

        def create() -> dict[str, Any]:
            try:
                return session_summary(srv.create_session(_session_path(ctx, chosen), chosen, kernel))
            except Forbidden as err:
                from jcli_sidecar.kernel import refused_kernel_user

                raise refused_kernel_user(srv, err) from None

        try:
            taken = [row for row in listed_sessions(srv, "check that the name is free") if row["name"] == chosen]
        except Forbidden:  # no listing (a gateway's default): the name is checked against, and kept in, j-cli's memory
            row, not_kept = create_remembered(srv, chosen, create)
            notes.append(
                f"this server does not list sessions: j-cli remembers the name {chosen!r} for this user and selects the session by it; "
                f"other clients need the kernel id {row['kernel_id']}"
                if not_kept is None
                else f"this server does not list sessions and {not_kept}: only the kernel id {row['kernel_id']} selects the session"
            )
        else:
            if taken:
                raise UsageError(f"a session named {chosen!r} exists already ({taken[0]['id']})")
            row = create()
        row.update(_placed(ctx, srv, row))
    if notes:
        row["notes"] = notes
    where = (
        ""
        if row["kernel_in_cwd"]
        else f"\nkernel runs in {row['kernel_cwd'] or 'a directory the server chose'}, not here: {row['kernel_cwd_note']}"
    )
    finish(ctx, with_session(row), f"{row['id']}  {row['name']}  ({row['kernel_name']})" + where + "".join(f"\nnote: {n}" for n in notes))


def _placed(ctx: click.Context, srv, row: dict[str, Any]) -> dict[str, Any]:
    """Where the new session's kernel runs: the embedded server put it here; another server's kernel is asked to move."""
    from jcli_sidecar.kernel import place_kernel

    if not _explicit_server(ctx):
        return {"kernel_cwd": os.getcwd(), "kernel_in_cwd": True}
    return place_kernel(srv, row["kernel_id"])


def _explicit_server(ctx: click.Context) -> bool:
    obj = ctx.find_root().obj
    return bool(obj.get("server_url") or setting("JCLI_JUPYTER_SERVER_URL"))


def _session_path(ctx: click.Context, name: str) -> str:
    """A session path that puts the kernel's cwd in our cwd, when the server is ours."""
    from jcli_sidecar.base import ensure_runtime_dir, workspace_of

    from .embedded import nearest_embedded

    if _explicit_server(ctx):
        return name
    _, live = nearest_embedded(ensure_runtime_dir(create=True), workspace_of())
    root = (live or {}).get("workspace") or workspace_of()
    rel = os.path.relpath(workspace_of(), root)
    return name if rel == "." else f"{rel}/{name}"


@session.command("list")
@click.option("--vars", "with_vars", is_flag=True, help="Also preview each idle kernel's first variable names (one request per kernel).")
@click.option("--no-vars", "with_vars", flag_value=False, hidden=True)  # upstream jupyter-jcli's spelling of the default
@click.pass_context
def session_list(ctx: click.Context, with_vars: bool) -> None:
    """List sessions.

    On a server that does not list sessions (a gateway's default), the
    sessions this user created there through j-cli and the server still
    has, marked remembered.
    """
    from jcli_sidecar.kernel import visible_sessions

    with failing(ctx):
        srv = _server(ctx)
        rows, listed = visible_sessions(srv)
    if with_vars:
        for row in rows:
            row["vars"] = _preview(srv, row)
    doc: dict[str, Any] = {"sessions": rows}
    human = "\n".join(
        f"{r['id'] or '-'}  {r['name']}  {r['kernel_name']}  {r['execution_state']}{'  (remembered)' if r.get('remembered') else ''}{_preview_text(r)}"
        for r in rows
    )
    if not listed:
        doc["listing"] = False
        doc["notes"] = [
            "this server does not list sessions: shown are only the sessions this user created here through j-cli (their names are "
            "remembered), not any other"
        ]
        human = "\n".join([human or "no remembered sessions", *(f"note: {note}" for note in doc["notes"])])
    finish(ctx, doc, human or "no sessions")


def _preview(srv, row: dict[str, Any]) -> dict[str, Any]:
    """``{names, total}`` for an idle kernel; else why there is none (``skipped``, or the coded ``error``)."""
    from jcli_sidecar.kernel import preview_variables

    if row["execution_state"] != "idle":
        return {"skipped": f"kernel {row['execution_state']}"}
    try:
        return preview_variables(srv, row)
    except JcliError as err:
        return {"error": {"code": err.code, "message": err.message}}


def _preview_text(row: dict[str, Any]) -> str:
    preview = row.get("vars")
    if preview is None:
        return ""
    if "names" in preview:
        more = preview["total"] - len(preview["names"])
        return "  vars: " + (", ".join(preview["names"]) or "none") + (f" … (+{more})" if more > 0 else "")
    return f"  vars: ({preview.get('skipped') or preview['error']['code']})"


def _select(ctx: click.Context, key: str):
    from jcli_sidecar.kernel import find_session

    srv = _server(ctx)
    return srv, find_session(srv, key)


def _on_session(ctx: click.Context, key: str, action, report) -> None:
    """Select a session, run ``action(server, row)``, print ``report(row) -> (doc, human)``."""
    with failing(ctx):
        srv, row = _select(ctx, key)
        action(srv, row)
    finish(ctx, *report(row))


@session.command("kill")
@click.argument("session_keys", metavar="SESSION...", nargs=-1, required=True)
@click.pass_context
def session_kill(ctx: click.Context, session_keys: tuple[str, ...]) -> None:
    """Shut sessions and their kernels down.

    Every SESSION is resolved first: one that matches nothing (or more than
    one session) kills nothing. Two selectors of one session kill it once.
    """
    from jcli_sidecar.kernel import find_sessions, forget_kernels

    killed: list[dict[str, Any]] = []
    srv = None
    try:
        srv = _server(ctx)
        rows = find_sessions(srv, list(session_keys))
        for row in rows:
            if row["id"]:
                srv.delete_session(row["id"])
            else:  # a kernel no session holds
                srv.delete_kernel(row["kernel_id"])
            killed.append({"id": row["id"], "name": row["name"], "kernel_id": row["kernel_id"]})
    except JcliError as err:
        if killed:  # a kill failed part way: say which went
            err.details["killed"] = killed
        fail(ctx, err)
    finally:
        if srv is not None and killed:  # their names, where j-cli remembers them, go with them
            forget_kernels(srv, [row["kernel_id"] for row in killed])
    doc = {"killed": killed, "session_ids": [row["id"] for row in killed]}
    finish(
        ctx,
        doc,
        "\n".join(f"killed {row['id'] or 'kernel ' + row['kernel_id']}" + (f" ({row['name']})" if row["name"] else "") for row in killed),
    )


@click.group()
def kernel() -> None:
    """Interrupt or restart a session's kernel."""


@kernel.command("interrupt")
@click.argument("session_key", metavar="SESSION")
@click.pass_context
def kernel_interrupt(ctx: click.Context, session_key: str) -> None:
    """Interrupt what the kernel is running."""
    _on_session(
        ctx,
        session_key,
        lambda srv, row: srv.interrupt(row["kernel_id"]),
        lambda row: ({"interrupted": row["kernel_id"], "session_id": row["id"]}, f"interrupted kernel {row['kernel_id']}"),
    )


@kernel.command("restart")
@click.argument("session_key", metavar="SESSION")
@click.pass_context
def kernel_restart(ctx: click.Context, session_key: str) -> None:
    """Restart the kernel (its variables are lost)."""
    _on_session(
        ctx,
        session_key,
        lambda srv, row: srv.restart(row["kernel_id"]),
        lambda row: ({"restarted": row["kernel_id"], "session_id": row["id"]}, f"restarted kernel {row['kernel_id']}"),
    )
