"""The click app: every command, with help and proper usage errors.

The read commands are generated from ``read_options`` (the same table the
fast path uses) and run through ``read_command``. Each top-level command's
module is imported only when that command runs (:class:`LazyGroup`).
"""

from __future__ import annotations

import click

from jcli_sidecar import __version__
from jcli_sidecar.base import UsageError
from jcli_sidecar.read import HOST_NAMES

from . import emit
from .fastpath import JSON_FLAGS
from .lazy_group import LazyGroup
from .setup.hosts import HOSTS, PARTS, Host

__all__ = ["app", "run_click"]


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-j", "--json", "json_mode", is_flag=True, help="Print one JSON document (errors as JSON on stderr).")
@click.option("-s", "--server-url", help="Jupyter Server URL (env JCLI_JUPYTER_SERVER_URL; default: embedded).")
@click.option("-t", "--token", help="Jupyter Server token (env JCLI_JUPYTER_SERVER_TOKEN).")
@click.version_option(__version__, prog_name="j-cli")
@click.pass_context
def app(ctx: click.Context, json_mode: bool, server_url: str | None, token: str | None) -> None:
    """j-cli: run code in Jupyter kernels and read what it produced."""
    ctx.obj = {"json": json_mode, "server_url": server_url, "token": token}


def _notebook_group() -> click.Group:
    from .grep_cmd import GREP_COMMANDS
    from .notebook_cmd import NOTEBOOK_COMMANDS
    from .read_options import READ_COMMANDS

    @click.group("notebook", cls=LazyGroup)
    def notebook() -> None:
        """Summarise, show, map, search and print notebooks, read saved outputs, and edit cells by id (never executes)."""

    for name, (help_text, options) in READ_COMMANDS.items():
        notebook.add_command(_make_read_command(name, help_text, options))
    for command in (*NOTEBOOK_COMMANDS, *GREP_COMMANDS):
        notebook.add_command(command)
    notebook.loaders["cell"] = _from("cell_cmd", "cell_group")
    return notebook


def _make_exec_command() -> click.Command:
    from .click_options import table_options
    from .exec_cmd import EXEC_HELP, EXEC_OPTIONS, run_exec

    params = [click.Argument(["session_key"], metavar="SESSION"), *table_options(EXEC_OPTIONS)]

    @click.pass_context
    def callback(ctx: click.Context, session_key: str, **values) -> None:
        obj = ctx.find_root().obj
        ctx.exit(run_exec(obj["json"], obj["server_url"], obj["token"], session_key, **values))

    return click.Command("exec", params=params, callback=callback, help=EXEC_HELP)


def _make_read_command(name: str, help_text: str, options) -> click.Command:
    from .click_options import table_options
    from .read_command import run_read

    params: list[click.Parameter] = [click.Argument(["file_path"], required=False, metavar="FILE")]
    params.extend(table_options(options))
    if name == "output":  # upstream jupyter-jcli's: pick the first of these MIME types the output has
        params.append(click.Option(["--supported-mime", "supported_mime"], multiple=True, hidden=True))

    @click.pass_context
    def callback(ctx: click.Context, file_path: str | None, **values) -> None:
        code = run_read(name, ctx.find_root().obj["json"], file_path, values)
        ctx.exit(code)

    return click.Command(name, params=params, callback=callback, help=help_text)


def _from(module: str, name: str):
    """A loader of command ``name`` from this package's ``module``, imported when the command is asked for."""

    def load() -> click.Command:
        # __import__, not importlib.import_module: -X importtime (and the import test) sees this import
        return getattr(__import__(f"{__package__}.{module}", fromlist=[name]), name)

    return load


app.loaders.update(
    {
        "notebook": _notebook_group,
        "exec": _make_exec_command,
        **{name: _from("kernel_cmd", name) for name in ("server", "healthcheck", "kernelspec", "session", "kernel")},
        "output": _from("output_cmd", "output"),
        "convert": _from("convert_cmd", "convert"),
        "sidecar": _from("sidecar_cmd", "sidecar"),
        "vars": _from("vars_cmd", "vars_command"),
        "job": _from("job_cmd", "job"),
    }
)


@app.group()
def setup() -> None:
    """Wire j-cli into agent hosts and git (edits their files directly)."""


def _run_setup(action) -> None:
    """Run one ``setup`` action and print what it changed (``jcli.setup.report``, which the fast path runs too)."""
    from .outcome import json_mode
    from .setup.report import run_setup

    ctx = click.get_current_context()
    ctx.exit(run_setup(action, json_mode(ctx)))


def _make_host_setup_command(host: Host) -> click.Command:
    """``j-cli setup NAME`` from the host's row: one flag per scope (the first is the default), ``--remove``, ``--only``, ``--skill-dir``.

    ``host.setup`` (``jcli.setup.<name>.setup_<name>``) does the work.
    """
    first, *others = host.scopes
    params: list[click.Parameter] = [click.Option([f"--{first.name}", "scope"], flag_value=first.name, default=True, help=first.help)]
    params += [click.Option([f"--{scope.name}", "scope"], flag_value=scope.name, help=scope.help) for scope in others]
    params.append(click.Option(["--remove"], is_flag=True, help=host.remove_help))
    params.extend(_part_options(host))
    params.extend(_upstream_setup_options(host))

    def callback(scope: str, remove: bool, force: bool, only: tuple[str, ...], skill_dir: str | None) -> None:
        from .outcome import json_mode
        from .setup.report import run_host_setup

        parts, skills = _selected_parts(host, only, skill_dir)
        ctx = click.get_current_context()
        ctx.exit(run_host_setup(host.name, scope, remove, json_mode(ctx), parts, skills))

    return click.Command(host.name, params=params, callback=callback, help=host.setup_help)


_PART_WORDS = {"skill": "the j-cli skill", "hook": "the guards", "tool": "the notebook-output tool"}


def _part_options(host: Host) -> list[click.Parameter]:
    """``--only PART`` (repeatable) and ``--skill-dir DIR``; hidden where the host has no choice to offer (upstream's spellings)."""
    together = "".join(f"; {' and '.join(group)} go together" for group in host.part_groups if len(group) > 1)
    return [
        click.Option(
            ["--only"],
            multiple=True,
            type=click.Choice(list(PARTS)),
            hidden=len(host.part_groups) < 2,
            help=f"Install (or with --remove, remove) only this part; repeat for more (default: all{together}).",
        ),
        click.Option(
            ["--skill-dir", "skill_dir"],
            metavar="DIR",
            hidden="skill" not in host.parts,
            help="Put the skill in DIR/j-cli/ instead of the scope's skills dir (give it to --remove too; setup status does not look there).",
        ),
    ]


def _selected_parts(host: Host, only: tuple[str, ...], skill_dir: str | None) -> tuple[frozenset[str], str | None]:
    """The parts ``--only`` chose (all when none) and the ``--skill-dir`` path, checked against the host's row.

    Raises:
        click.UsageError: a part the host does not install, half of a group, or ``--skill-dir`` without the skill;
            each message says what to type instead.
    """
    chosen = frozenset(only) or host.parts
    command = f"j-cli setup {host.name}"
    missing = sorted(chosen - host.parts, key=PARTS.index)
    if missing:
        offered = " ".join(f"--only {part}" for part in PARTS if part in host.parts)
        raise click.UsageError(
            f"j-cli installs no {' or '.join(missing)} for {host.name} (its parts are {', '.join(sorted(host.parts, key=PARTS.index))}): "
            f"run `{command}` for all of them, or `{command} {offered}`"
        )
    for group in host.part_groups:
        if chosen & set(group) and not set(group) <= chosen:
            words = " and ".join(_PART_WORDS[part] for part in group)
            together = " ".join(f"--only {part}" for part in group)
            raise click.UsageError(f"for {host.name}, {words} are one plugin file, installed together: run `{command} {together}`")
    if skill_dir is None:
        return chosen, None
    if "skill" not in chosen:
        if "skill" not in host.parts:
            raise click.UsageError(f"j-cli installs no skill for {host.name}: run `{command}` without --skill-dir")
        raise click.UsageError("--skill-dir places the skill, which --only left out: add `--only skill`, or drop --skill-dir")
    if not skill_dir.strip():
        raise click.UsageError("--skill-dir is empty; give the directory the skill's j-cli/ folder goes in")
    import os

    return chosen, os.path.abspath(os.path.expanduser(skill_dir))


def _upstream_setup_options(host: Host) -> list[click.Parameter]:
    """Upstream's ``setup HOST`` spellings, hidden: its scope names and ``--force``."""
    params: list[click.Parameter] = [
        click.Option([f"--{flag}", "scope"], flag_value=scope, hidden=True) for flag, scope in host.upstream_scopes.items()
    ]
    params.append(click.Option(["--force"], is_flag=True, hidden=True))  # j-cli always replaces its own entries
    return params


for _host in HOSTS.values():
    setup.add_command(_make_host_setup_command(_host))


@setup.command("status")
def setup_status_command() -> None:
    """Per host and scope: what setup installed here and whether the host will find this j-cli."""
    from jcli_sidecar.base import workspace_of

    from . import outcome
    from .setup.status import setup_status, status_text

    ctx = click.get_current_context()
    result = outcome.attempt(ctx, lambda: setup_status(workspace_of()), "config")
    if not outcome.json_mode(ctx):
        for warning in result["warnings"]:
            click.echo(f"warning: {warning}", err=True)
    outcome.finish(ctx, result, status_text(result))


@setup.command("git")
@click.option("--hooks", is_flag=True, help="Also install the pre-commit hook that refuses a .py and its notebook out of line.")
@click.option("--include", multiple=True, metavar="GLOB", help="With --hooks: check only pairs whose .py matches GLOB (repeatable).")
@click.option("--remove", is_flag=True, help="Remove only j-cli's block (with --hooks: and its hook, restoring a chained one).")
@click.option("--local", "hooks", flag_value=True, hidden=True)  # upstream jupyter-jcli's: these install the hook
@click.option("--project", "hooks", flag_value=True, hidden=True)
@click.option("--force", is_flag=True, hidden=True)  # j-cli chains a hook that is there, never needs to replace it
def setup_git_command(hooks: bool, include: tuple[str, ...], remove: bool, force: bool) -> None:
    """Add a managed block ignoring **/.j-cli/ to this directory's .gitignore (--hooks: and the pre-commit hook)."""
    from jcli_sidecar.base import workspace_of

    from .setup.gitignore import setup_git

    if include and not hooks:
        raise click.UsageError("--include needs --hooks")
    _run_setup(lambda: setup_git(workspace_of(), remove, hooks, include))


@app.group("_hooks", hidden=True)
def hooks() -> None:
    """Hook entry points that hosts and git call (not for direct use)."""


@hooks.command("pre-commit-pair-sync")
@click.option("--include", "include", multiple=True, metavar="GLOB", help="Check only pairs whose .py path matches GLOB (repeatable).")
@click.option("--stage-synced", is_flag=True, help="Stage notebooks synced from the staged .py files (the index only), then exit.")
def pre_commit_pair_sync(include: tuple[str, ...], stage_synced: bool) -> None:
    """Git pre-commit: refuse a commit whose staged .py and notebook cells differ (exit 1)."""
    import os

    from jcli_sidecar.pair import check_commit, render_commit_check
    from jcli_sidecar.pair import stage_synced as stage_synced_pairs

    from . import outcome

    ctx = click.get_current_context()
    action = stage_synced_pairs if stage_synced else check_commit
    result = outcome.attempt(ctx, lambda: action(os.getcwd(), include), "write")
    text = render_commit_check(result)
    if not text and not outcome.json_mode(ctx):
        ctx.exit(0)  # nothing to say: git shows a hook's output on every commit
    outcome.finish(ctx, result, text)


@app.group()
def mcp() -> None:
    """The read-only MCP server for Claude Code, Codex and other MCP hosts."""


@mcp.command("serve")
@click.option("--root", "roots", multiple=True, type=click.Path(file_okay=False), help="Allow reads under DIR (repeatable).")
@click.option("--host", metavar="NAME", help=f"Fit images to this host's types and limits: {HOST_NAMES}.")
@click.option(
    "--text-only", is_flag=True, help="The host's model takes no image input: tell images as text (what, size, where, text forms)."
)
def mcp_serve(roots: tuple[str, ...], host: str | None, text_only: bool) -> None:
    """Serve the read-only tools (notebook outputs, runs, grep, jobs) over stdio."""
    from .mcp_server import run_mcp_serve
    from .outcome import json_mode

    ctx = click.get_current_context()
    ctx.exit(run_mcp_serve(list(roots), host, text_only, json_mode(ctx)))


def _json_requested(args: list[str]) -> bool:
    skip = False
    for token in args:
        if skip:
            skip = False
            continue
        if token in JSON_FLAGS:
            return True
        if token in ("-s", "--server-url", "-t", "--token"):
            skip = True
            continue
        if not token.startswith("-"):
            return False
    return False


def run_click(args: list[str]) -> int:
    """Run the click app; usage errors exit 2 (with -j, as a JSON envelope too)."""
    try:
        result = app.main(args=args, prog_name="j-cli", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.Abort:
        return emit.EXIT_FAILURE
    except click.ClickException as exc:
        if _json_requested(args):
            return emit.error(UsageError(exc.format_message()), True)
        exc.show()
        return emit.EXIT_USAGE
    except Exception as exc:  # a bug: still one coded line, never a traceback
        return emit.unexpected(exc, _json_requested(args))
    # With standalone_mode off, click hands back ctx.exit(code) as the result.
    return result if isinstance(result, int) else emit.EXIT_OK
