"""``j-cli sidecar start|stop|status|unit-name``: manage the workspace's sidecar."""

from __future__ import annotations

import click

from jcli_sidecar.base import SidecarPaths, ensure_runtime_dir, workspace_of

from .outcome import attempt, finish

__all__ = ["sidecar"]


def _paths(create: bool) -> SidecarPaths:
    """The workspace's sidecar files; ``RUNTIME_DIR_UNUSABLE`` when no sidecar could live there."""
    try:
        directory = ensure_runtime_dir(create=create)
    except FileNotFoundError:
        directory = None  # nothing has run yet: status says so
    paths = SidecarPaths(workspace_of(), directory)
    paths.check_socket()
    return paths


@click.group()
def sidecar() -> None:
    """The per-workspace sidecar that keeps reads fast (optional; JCLI_SIDECAR=off disables it)."""


@sidecar.command()
@click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds to wait for it to answer.")
@click.pass_context
def start(ctx: click.Context, timeout: float) -> None:
    """Start this workspace's sidecar (if needed) and wait until it answers."""
    from jcli_sidecar.sidecar import start_sidecar

    doc = attempt(ctx, lambda: start_sidecar(_paths(create=True), timeout), "sidecar")
    finish(ctx, doc, f"sidecar running: pid {doc['pid']} on {doc['socket']}")


@sidecar.command()
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds to wait for it to exit.")
@click.pass_context
def stop(ctx: click.Context, timeout: float) -> None:
    """Stop this workspace's sidecar."""
    from jcli_sidecar.sidecar import stop_sidecar

    doc = attempt(ctx, lambda: stop_sidecar(_paths(create=False), timeout), "sidecar")
    finish(ctx, doc, "sidecar stopped" if doc.get("stopped") else "no sidecar was running")


@sidecar.command()
@click.pass_context
def status(ctx: click.Context) -> None:
    """Show the socket, pid, uptime, cache and request counters."""
    from jcli_sidecar.sidecar import sidecar_status

    doc = attempt(ctx, lambda: sidecar_status(_paths(create=False)), "sidecar")
    if doc["running"]:
        cache = doc.get("cache", {})
        human = (
            f"sidecar running: pid {doc['pid']}, up {doc['uptime_seconds']:.0f} s, "
            f"{doc['requests_served']} requests, cache {cache.get('entries', 0)} notebooks / "
            f"{cache.get('bytes', 0)} bytes\nsocket {doc['socket']}"
        )
    elif doc.get("unresponsive"):
        stuck = doc["unresponsive"]
        how = "stopped" if stuck["stopped"] else "not answering"
        human = f"sidecar pid {stuck['pid']} is {how}: reads go in-process; j-cli sidecar stop ends it\nsocket {doc['socket']}"
    else:
        human = f"no sidecar running for {doc['workspace']}\nsocket {doc['socket']}"
    finish(ctx, doc, human)


@sidecar.command("unit-name")
@click.pass_context
def unit_name(ctx: click.Context) -> None:
    """Print the systemd unit for this workspace (instance = workspace hash)."""
    paths = SidecarPaths(workspace_of(), "")
    doc = {
        "instance": paths.hash,
        "socket_unit": f"jcli-sidecar@{paths.hash}.socket",
        "service_unit": f"jcli-sidecar@{paths.hash}.service",
        "workspace": paths.workspace,
    }
    finish(ctx, doc, doc["socket_unit"])
