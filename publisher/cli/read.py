"""``polyglav sessions``, ``sessions preview``, ``history`` and ``print``: reading an
archive headless, as the agent's ``/sessions``, ``/history`` and ``/print`` do."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .app import app, emit, example, fail, guarded, sessions_app, tell, warn
from .options import Debug, ListFormat, PricesFile, Project, Run, RunA, RunB, SessionName


@sessions_app.callback()
def sessions_list(
    ctx: typer.Context,
    project: Project = None,
    fmt: ListFormat = "text",
    prices: PricesFile = None,
    debug: Debug = False,
) -> None:
    """List saved sessions: kind, name, id, role, version, turns, updated.

    Sub-sessions are annotated with their parent; files that do not load are listed with
    why, and warned about on stderr. --format json prints one object a session with its
    tool calls, failures, tokens and cost (with its sub-sessions' too).
    """
    if ctx.invoked_subcommand is not None:
        return
    if fmt not in ("text", "json"):
        fail(f"--format: expected text or json, got {fmt!r}", 2)
    from .. import commands

    def action() -> tuple[list[str], list[str]]:
        context = commands.Context.open(project)
        if fmt == "json":
            return commands.sessions_json(context, commands.make_prices(prices))
        if prices is not None:
            from ..errors import UsageError

            raise UsageError("--prices only applies with --format json")
        return commands.sessions(context)

    lines, warnings = guarded(ctx, debug, action)
    emit(lines)
    for warning in warnings:
        warn(warning)


@sessions_app.command(
    "preview", epilog=example("polyglav sessions preview '#ab12cd' --project sample_sessions")
)
def sessions_preview(
    ctx: typer.Context, name: SessionName, project: Project = None, debug: Debug = False
) -> None:
    """Structural preview: turn count, part kinds, tool names, parent and sub-sessions."""
    from .. import commands

    def action() -> list[str]:
        reading, target = commands.open_target(project, name)
        return list(commands.preview(reading, target))

    emit(guarded(ctx, debug, action))


@app.command(
    epilog=example("polyglav history all --thoughts --run '#ab12cd' --project sample_sessions"),
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    options_metavar="[--thoughts [all]] [OPTIONS]",
)
def history(
    ctx: typer.Context, run: Run = None, project: Project = None, debug: Debug = False
) -> None:
    """Numbered turn index: #<index> [<status>] <duration> <tool count> <prompt>.

    Arguments: [N|all] how many of the last turns (default 10), or all.
    --thoughts adds a first-line excerpt of each turn's thinking; --thoughts all prints
    all of it.
    """
    from .. import commands

    args = list(ctx.args)
    if "--debug" in args:  # after the arguments typer leaves to us
        args.remove("--debug")
        debug = True
    count, thoughts = guarded(ctx, debug, lambda: commands.parse_history_args(args))

    def action() -> list[str]:
        _, session = commands.open_run(project, run)
        if run is None:
            warn_latest(session.session_name)
        color = sys.stdout.isatty()
        return list(commands.history(session, count, thoughts, color))

    emit(guarded(ctx, debug, action))


@app.command(
    "print",
    epilog=example(
        "polyglav print 3.2 --full --run session:release-notes --project sample_sessions"
    ),
)
def print_(
    ctx: typer.Context,
    target: Annotated[
        str, typer.Argument(metavar="N[.M]", help="Turn index, or N.M for its M-th part.")
    ],
    full: Annotated[
        bool, typer.Option("--full", help="Do not cap each part at print_max_chars.")
    ] = False,
    run: Run = None,
    project: Project = None,
    debug: Debug = False,
) -> None:
    """Reprint a turn in full (metadata block and every part), or only one part."""
    from .. import commands

    def action() -> list[str]:
        commands.parse_print_target(target)  # a usage error before anything is read
        reading, session = commands.open_run(project, run)
        if run is None:
            warn_latest(session.session_name)
        return list(commands.print_turn(reading, session, target, full))

    emit(guarded(ctx, debug, action))


@app.command(
    epilog=example("polyglav compare job_20260825_110230_aaaaaa job_20260826_110230_7f3k2a")
)
def compare(
    ctx: typer.Context, a: RunA, b: RunB, project: Project = None, debug: Debug = False
) -> None:
    """Compare two runs turn by turn: prompts, tool calls (name and input), statuses,
    errors and durations; what changed is marked, differing outputs shown as diffs. Exits 0
    whatever differs (for CI logs).
    """
    from .. import commands
    from ..compare import comparison_lines

    def action() -> list[str]:
        _, first = commands.open_run(project, a)
        _, second = commands.open_run(project, b)
        return list(comparison_lines(first, second))

    emit(guarded(ctx, debug, action))


def warn_latest(name: str) -> None:
    """Say which session a command without ``--run`` reads."""
    tell(f"polyglav: reading {name}, the most recently updated session (--run to choose)")
