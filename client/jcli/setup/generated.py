"""The generated lines inside hand-written files: the plugins' constants and docs/hosts.md's tables.

Each block stands between a ``begin generated: NAME`` line and an ``end
generated: NAME`` line (a ``//`` comment in a plugin, an HTML comment in
Markdown); only the lines between are rewritten, from what owns each fact:

- ``client/plugins/sidecar-client.mjs``: the codes that make a plugin fall
  back to spawning j-cli (``jcli_sidecar.sidecar.client.FALLBACK_CODES``)
  and the values that turn the sidecar off (``OFF_VALUES`` of
  ``jcli_sidecar.base.settings``);
- each host's plugin: which of its tools run which guards, from its
  :class:`~jcli.setup.hosts.Host` and the guard registry
  (``jcli_sidecar.guards.guard_table``);
- ``docs/hosts.md``: the hosts table and the shared-files table, from
  :data:`~jcli.setup.hosts.HOSTS` and the core's image profiles;
- ``docs/guards.md``: which guards each host runs at which of its events.

``make docs`` runs ``python -m jcli.setup.generated ROOT`` (ROOT: the
repository); ``--check`` only compares, and a test does the same.
"""

from __future__ import annotations

import os
import sys

from jcli_sidecar.guards import EVENTS

from .hosts import HOSTS, PARTS, Host

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "BLOCKS",
    "REGENERATE",
    "main",
    "refresh",
    "render_guards",
    "render_hook_table",
    "render_host_table",
    "render_shared_files",
    "render_sidecar_constants",
    "rendered",
]

#: The command that rewrites the blocks; stale-block messages name it.
REGENERATE = "make docs"


def _js_list(items: list[str] | tuple[str, ...], quote: str) -> str:
    return "[" + ", ".join(quote + item + quote for item in items) + "]"


def render_sidecar_constants() -> str:
    """The sidecar client's constants that mirror the Python client's."""
    from jcli_sidecar.base import OFF_VALUES
    from jcli_sidecar.sidecar import FALLBACK_CODES

    return (
        '/** Codes that say "the transport failed", not "your request is wrong": fall back (the Python client\'s FALLBACK_CODES). */\n'
        f"const SIDECAR_FALLBACK_CODES = new Set({_js_list(sorted(FALLBACK_CODES), chr(34))});\n"
        "/** The values (trimmed, any case) that turn a switch such as JCLI_SIDECAR off (j-cli's OFF_VALUES). */\n"
        f"export const SIDECAR_OFF_VALUES = new Set({_js_list(sorted(OFF_VALUES), chr(34))});\n"
    )


def render_guards(host: Host) -> str:
    """``host``'s plugin: the tools it guards and the guards each runs, before and after."""
    from jcli_sidecar.guards import guard_table

    tools, table = host.tools, guard_table()
    if tools.edit_after != tools.edit:
        raise AssertionError(f"{host.name}: a plugin guards the same edit tools before and after")
    ts = host.plugin is not None and host.plugin.language == "ts"
    q, end = ("'", "") if ts else ('"', ";")
    sets = ": ReadonlySet<string>" if ts else ""
    arg, returns = ("tool", "(tool: string): string[]") if ts else ("toolName", "(toolName)")
    lines = [
        f"/** Which guards run before and after which {host.title} tools: its host table entry and j-cli's guard registry. */",
        f"const SHELL_TOOLS{sets} = new Set({_js_list(tools.shell, q)}){end}",
        f"const EDIT_TOOLS{sets} = new Set({_js_list(tools.edit, q)}){end}",
        "",
        f"function hooksBefore{returns} {{",
    ]
    for kind, name in (("shell", "SHELL_TOOLS"), ("edit", "EDIT_TOOLS")):
        if table["before"][kind]:
            lines.append(f"  if ({name}.has({arg})) return {_js_list(table['before'][kind], q)}{end}")
    lines += [f"  return []{end}", "}", "", f"function hooksAfter{returns} {{"]
    if table["after"]["shell"]:
        lines.append(f"  if (SHELL_TOOLS.has({arg})) return {_js_list(table['after']['shell'], q)}{end}")
    lines += [f"  return EDIT_TOOLS.has({arg}) ? {_js_list(table['after']['edit'], q)} : []{end}", "}"]
    return "\n".join(lines) + "\n"


def _code(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{item}`" for item in items)


def render_host_table() -> str:
    """docs/hosts.md: one row per host, as its :class:`Host` and its image profile say."""
    from jcli_sidecar.read import MiB

    rows = [
        "| host | `j-cli setup` scopes (the first is the default): files written | parts (`--only`) | guards | on its tools "
        "| hook payload | images (`--host`) |",
        "|---|---|---|---|---|---|---|",
    ]
    for host in HOSTS.values():
        scopes = "; ".join(f"`--{s.name}`: {_code(s.files)}" for s in host.scopes)
        parts = ", ".join(" + ".join(group) for group in sorted(host.part_groups, key=lambda g: PARTS.index(g[0])))
        tools = f"shell {_code(host.tools.shell)}; edits {_code(host.tools.edit)}"
        if host.tools.edit_after != host.tools.edit:
            tools += f" (after: {_code(host.tools.edit_after)})"
        profile = host.profile
        images = f"{profile.max_edge} px per side, {profile.max_bytes / MiB:g} MiB"
        guards = f"`{host.events[0]}`, `{host.events[1]}` in {host.hooks_in}"
        rows.append(f"| {host.title} (`{host.name}`) | {scopes} | {parts} | {guards} | {tools} | {host.payload} | {images} |")
    return "\n".join(rows) + "\n"


_SHARED = (
    "project (committed, shared by a team)",
    "plain `j-cli`, found on each teammate's PATH; no `--root`: reads are rooted by the host's project directory or MCP roots. "
    "No path of the machine that ran `setup` is written",
)
_ONE_MACHINE = (
    "local / user (one machine)",
    "the absolute interpreter of the j-cli install that ran `setup` (`<python> -m jcli`), so the host finds j-cli without PATH",
)


def render_shared_files() -> str:
    """docs/hosts.md: which scopes' files are shared (``project``) and which belong to one machine."""
    rows = ["| scope | files | how j-cli is started |", "|---|---|---|"]
    for (label, started), shared in ((_SHARED, True), (_ONE_MACHINE, False)):
        files = "; ".join(
            f"{host.title}: " + ", ".join(dict.fromkeys(f"`{f}`" for s in host.scopes if (s.name == "project") == shared for f in s.files))
            for host in HOSTS.values()
        )
        rows.append(f"| {label} | {files} | {started} |")
    return "\n".join(rows) + "\n"


#: How a hooks file's matcher says "or", escaped for a Markdown table.
_MATCHER_OR = "\\|"


def render_hook_table() -> str:
    """docs/guards.md: per host, which guards run at which of its events on which of its tools."""
    from jcli_sidecar.guards import guard_table

    table = guard_table()
    rows = ["| host | event | matcher / tools | hooks |", "| --- | --- | --- | --- |"]
    for host in HOSTS.values():
        label = f"{host.title} ({host.hooks_in})"
        for when, kind, tools in (
            ("before", "shell", host.tools.shell),
            ("before", "edit", host.tools.edit),
            ("after", "shell", host.tools.shell),
            ("after", "edit", host.tools.edit_after),
        ):
            names = table[when][kind]
            if not names:
                continue
            matcher = f"`{_MATCHER_OR.join(tools)}`" if host.plugin is None else _code(tools)
            platform = f" (`--platform {host.name}`)" if label else ""
            event = host.events[EVENTS.index(when)]
            rows.append(f"| {label} | `{event}` | {matcher} | {_code(names)}{platform} |".replace("|  |", "| |", 1))
            label = ""
    return "\n".join(rows) + "\n"


def _blocks() -> dict[str, dict[str, Callable[[], str]]]:
    found: dict[str, dict[str, Callable[[], str]]] = {"client/plugins/sidecar-client.mjs": {"constants": render_sidecar_constants}}
    for host in HOSTS.values():
        if host.plugin is not None:
            found[f"client/plugins/{host.plugin.file}"] = {"guards": lambda host=host: render_guards(host)}  # type: ignore[misc]
    found["docs/hosts.md"] = {"hosts": render_host_table, "shared files": render_shared_files}
    found["docs/guards.md"] = {"hook entries": render_hook_table}
    return found


#: Every file with generated lines (relative to the repository): block name -> what writes it.
BLOCKS = _blocks()


def _markers(path: str, name: str) -> tuple[str, str]:
    if path.endswith(".md"):
        return (
            f"<!-- begin generated: {name} (`{REGENERATE}` writes it from jcli.setup.generated) -->\n",
            f"<!-- end generated: {name} -->\n",
        )
    return f"// ---- begin generated: {name} (`{REGENERATE}` writes it from jcli.setup.generated; edit the source)\n", (
        f"// ---- end generated: {name}\n"
    )


def rendered(path: str, text: str) -> str:
    """``text`` (the file at ``path``, relative to the repository) with every block of it rewritten.

    Raises:
        ValueError: a block's begin or end line is missing.
    """
    for name, render in BLOCKS[path].items():
        begin, end = _markers(path, name)
        start = text.find(begin)
        stop = text.find(end, start + len(begin)) if start >= 0 else -1
        if start < 0 or stop < 0:
            raise ValueError(f"{path}: no generated block {name!r} (its lines {begin.strip()!r} and {end.strip()!r})")
        text = text[: start + len(begin)] + render() + text[stop:]
    return text


def refresh(root: str, check: bool = False) -> list[str]:
    """Rewrite every generated block under ``root`` (with ``check``, only compare); the stale files, relative."""
    stale = []
    for path in BLOCKS:
        full = os.path.join(root, *path.split("/"))
        with open(full, encoding="utf-8", newline="") as fh:
            text = fh.read()
        new = rendered(path, text)
        if new != text:
            stale.append(path)
            if not check:
                with open(full, "w", encoding="utf-8", newline="") as fh:
                    fh.write(new)
    return stale


def main(argv: list[str] | None = None) -> int:
    """``python -m jcli.setup.generated ROOT [--check]``: 1 when ``--check`` finds a stale file."""
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    roots = [a for a in args if a != "--check"]
    if len(roots) != 1:
        print("usage: python -m jcli.setup.generated ROOT [--check]", file=sys.stderr)
        return 2
    stale = refresh(roots[0], check)
    for path in stale:
        print(f"{path} {'is stale: run `' + REGENERATE + '`' if check else 'rewritten'}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
