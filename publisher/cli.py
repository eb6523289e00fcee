"""The ``polyglav`` command line: parse, call one function, map errors to exit codes.

Exit codes: 0 success, 1 when what was asked for failed (one line on stderr naming the
file and the reason; a traceback only with ``--debug``), 2 for usage errors.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import typer

from . import __version__, commands
from .archive import ArchiveError
from .loader import SessionLoadError
from .theme import ThemeError
from .write import WriteError

T = TypeVar("T")

app = typer.Typer(
    name="polyglav",
    help="Publish Polyglav session logs: list, read, export them, and build a static site.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
sessions_app = typer.Typer(
    help="List saved sessions like /sessions.\n\nExample: polyglav sessions --project sample_sessions",
    invoke_without_command=True,
    rich_markup_mode=None,
)
app.add_typer(sessions_app, name="sessions")

_state = {"debug": False}

Project = Annotated[
    Path | None,
    typer.Option(
        "--project",
        "-p",
        help="Project folder (holding .polyglav/) or a folder of session files. "
        "Default: the nearest folder upwards holding .polyglav/.",
        show_default=False,
    ),
]
Run = Annotated[
    str | None,
    typer.Option(
        "--run",
        help="Session to read: #<id>, session:<name>, a name or a role. "
        "Default: the most recently updated session.",
        show_default=False,
    ),
]
Redact = Annotated[
    bool,
    typer.Option(
        "--redact",
        help="Replace secrets (API keys, tokens, private keys, URL passwords…) with "
        "[REDACTED:<kind>] before rendering; the output says how many.",
    ),
]
RedactValues = Annotated[
    Path | None,
    typer.Option(
        "--redact-values",
        help="A file listing more values to redact, one per line (# comments); implies --redact.",
        show_default=False,
    ),
]


def fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"polyglav: error: {message}", err=True)
    raise typer.Exit(code)


def guarded(action: Callable[[], T]) -> T:
    """Run ``action``, turning known failures into one stderr line and an exit code."""
    try:
        return action()
    except commands.UsageError as exc:
        if _state["debug"]:
            raise
        fail(str(exc), 2)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except (ArchiveError, SessionLoadError, ThemeError, WriteError) as exc:
        if _state["debug"]:
            raise
        fail(str(exc))
    except OSError as exc:
        if _state["debug"]:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or exc}")


def _quiet_broken_pipe() -> NoReturn:
    """The reader closed the pipe (``polyglav export X --out - | head``): stop quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(0)


def emit(lines: Iterable[str]) -> None:
    try:
        for line in lines:
            typer.echo(line)
    except BrokenPipeError:
        _quiet_broken_pipe()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"polyglav-publisher {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """Publish Polyglav session logs.

    Example: polyglav export ses_20260817_120000_ab12cd --project sample_sessions --out -
    """
    _state["debug"] = debug


# -- CI: --fail-on, --summary, --link-base and `polyglav check` (issue 16; docs/ci.md) -------
FailOn = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="KINDS",
        help="Exit 1 when any of these happened (comma list): error (an errors entry or a "
        "turn with status error), tool-error, denied, declined, truncated, cancelled, running; "
        "one stderr line per kind names the turn. An export is still written.",
        show_default=False,
    ),
]
SubSessions = Annotated[
    bool,
    typer.Option(
        "--sub-sessions/--no-sub-sessions",
        help="Count the sub-sessions (delegations, at any depth) with their parent.",
    ),
]
SummaryOpt = Annotated[
    str | None,
    typer.Option(
        "--summary",
        metavar="FILE|-",
        help="Write a short Markdown account for a CI job summary or a pull-request comment "
        '(- for stdout), e.g. --summary "$GITHUB_STEP_SUMMARY".',
        show_default=False,
    ),
]
LinkBase = Annotated[
    str | None,
    typer.Option(
        "--link-base",
        metavar="URL",
        help="Where the site is published (or, ending in .html, the single-page export): the "
        "summary links its findings to the turn anchors there.",
        show_default=False,
    ),
]


def _finish_gate(report: commands.GateReport | None) -> None:
    """Warnings and one line per kind found on stderr; exit 1 when the gate failed."""
    if report is None:
        return
    for warning in report.warnings:
        typer.echo(f"polyglav: warning: {warning}", err=True)
    if report.summary_path is not None:
        typer.echo(f"summary written to {report.summary_path}", err=True)
    for line in report.lines:
        typer.echo(f"polyglav: fail-on {line}", err=True)
    if report.failed:
        raise typer.Exit(1)


@app.command()
def check(
    name: Annotated[str, typer.Argument(help="Session: a name, #<id> or session:<name>.")],
    fail_on: FailOn = None,
    project: Project = None,
    sub_sessions: SubSessions = True,
    summary: SummaryOpt = None,
    link_base: LinkBase = None,
    redact: Redact = False,
    redact_values: RedactValues = None,
) -> None:
    """Gate on what happened in a session, writing nothing but the verdict.

    Exit 1 when a --fail-on kind (default: every kind) occurred in the session or its
    sub-sessions, 0 otherwise. The verdict goes to stdout (to stderr when --summary - takes
    stdout).

    Example: polyglav check '#ab12cd' --fail-on error,denied --project sample_sessions
    """
    from .gate import KINDS

    def run() -> commands.GateReport:
        gate = commands.GateOptions.parse(
            fail_on, sub_sessions, summary, link_base, default_kinds=frozenset(KINDS)
        )
        redactor = commands.make_redactor(redact, redact_values)
        return commands.check(commands.Context.open(project), name, gate, sys.stdout, redactor)

    report = guarded(run)
    typer.echo(report.verdict, err=summary == "-")
    _finish_gate(report)


# -- end of the CI block ------------------------------------------------------------------


@app.command()
def export(
    name: Annotated[str, typer.Argument(help="Session: a name, #<id> or session:<name>.")],
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="Output file, or - for stdout. Default: .polyglav/exports/<name>.md",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="md (the auditable log), html (one self-contained page) or junit (JUnit XML "
            "for CI test reports: a test case per turn, failed by --fail-on).",
        ),
    ] = "md",
    project: Project = None,
    redact: Redact = False,
    redact_values: RedactValues = None,
    fail_on: FailOn = None,
    sub_sessions: SubSessions = True,
    summary: SummaryOpt = None,
    link_base: LinkBase = None,
) -> None:
    """Export a session to Markdown (or one self-contained HTML file, or a JUnit report).

    Example: polyglav export '#ab12cd' --project sample_sessions --out review.md

    In CI: polyglav export '#ab12cd' --format junit --out report.xml --fail-on error,denied
    --summary summary.md --project sample_sessions
    """
    if fmt not in ("md", "html", "junit"):
        fail(f"--format: expected md, html or junit, got {fmt!r}", 2)

    def run() -> commands.ExportResult:
        gate = commands.GateOptions.parse(fail_on, sub_sessions, summary, link_base)
        redactor = commands.make_redactor(redact, redact_values)
        ctx = commands.Context.open(project)
        return commands.export(ctx, name, out, fmt, sys.stdout, redactor, gate)

    result = guarded(run)
    for warning in result.warnings:
        typer.echo(f"polyglav: warning: {warning}", err=True)
    if result.redaction is not None:
        typer.echo(f"polyglav: {result.redaction}", err=True)
    if result.path is not None:
        typer.echo(f"exported to {result.path}", err=True)
    _finish_gate(result.gate)


@app.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    options_metavar="[--thoughts [all]] [OPTIONS]",
)
def history(
    ctx: typer.Context,
    run: Run = None,
    project: Project = None,
) -> None:
    """Numbered turn index: #<index> [<status>] <duration> <tool count> <prompt>.

    Arguments: [N|all] how many of the last turns (default 10), or all.
    --thoughts adds a first-line excerpt of each turn's thinking; --thoughts all prints
    all of it.

    Example: polyglav history all --thoughts --run '#ab12cd' --project sample_sessions
    """
    count, thoughts = guarded(lambda: commands.parse_history_args(list(ctx.args)))
    color = sys.stdout.isatty()
    emit(
        guarded(
            lambda: list(
                commands.history(commands.Context.open(project), count, thoughts, run, color)
            )
        )
    )


@app.command("print")
def print_(
    target: Annotated[
        str, typer.Argument(metavar="N[.M]", help="Turn index, or N.M for its M-th part.")
    ],
    full: Annotated[
        bool, typer.Option("--full", help="Do not cap each part at print_max_chars.")
    ] = False,
    run: Run = None,
    project: Project = None,
) -> None:
    """Reprint a turn in full (metadata block and every part), or only one part.

    Example: polyglav print 3.2 --full --run session:release-notes --project sample_sessions
    """
    emit(
        guarded(
            lambda: list(commands.print_turn(commands.Context.open(project), target, full, run))
        )
    )


@sessions_app.callback()
def sessions_list(ctx: typer.Context, project: Project = None) -> None:
    """List saved sessions: kind, name, id, role, version, turns, updated.

    Sub-sessions are annotated with their parent; files that do not load are listed with
    why, and warned about on stderr.

    Example: polyglav sessions --project sample_sessions
    """
    if ctx.invoked_subcommand is not None:
        return
    lines, warnings = guarded(lambda: commands.sessions(commands.Context.open(project)))
    emit(lines)
    for warning in warnings:
        typer.echo(f"polyglav: warning: {warning}", err=True)


@sessions_app.command("preview")
def sessions_preview(
    name: Annotated[str, typer.Argument(help="Session: a name, #<id> or session:<name>.")],
    project: Project = None,
) -> None:
    """Structural preview: turn count, part kinds, tool names, parent and sub-sessions.

    Example: polyglav sessions preview '#ab12cd' --project sample_sessions
    """
    emit(guarded(lambda: list(commands.preview(commands.Context.open(project), name))))


from .site.cli import register as _register_site  # noqa: E402

_register_site(app, guarded, fail)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
