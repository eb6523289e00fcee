"""``polyglav redact-report``: what ``--redact`` would replace, to review before sharing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .app import app, emit, example, fail, guarded, tell, warn
from .options import Debug, Project, RedactValues

if TYPE_CHECKING:
    from ..commands import RedactReport


@app.command(
    "redact-report",
    epilog=example(
        "polyglav redact-report '#ab12cd' --project sample_sessions",
        "polyglav redact-report --all --project sample_sessions",
    ),
)
def redact_report(
    ctx: typer.Context,
    name: Annotated[
        str | None,
        typer.Argument(
            help="Session: #<id>, session:<name>, a name, a role, or a session file.",
            show_default=False,
        ),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Every session file of the archive.")
    ] = False,
    project: Project = None,
    redact_values: RedactValues = None,
    debug: Debug = False,
) -> None:
    """List every secret --redact would replace: its session, turn (N.M), field, kind and
    its line with the secret masked (ghp_…(40 chars)). Nothing is written.

    Exit 0 when the report was made (whatever it found: gate with --fail-on secret on
    check or export), 1 when the session does not load, 2 on a usage error.
    """
    if (name is None) == (not every):
        fail(
            "give a session (NAME) or --all, not both"
            if every
            else "give a session (NAME) or --all",
            2,
        )
    from .. import commands

    def run() -> RedactReport:
        redactor = commands.make_redactor(True, redact_values)
        assert redactor is not None
        if name is not None:
            reading, target = commands.open_target(project, name)
            return commands.redact_report(reading, target, redactor)
        return commands.redact_report(commands.Context.open(project), None, redactor)

    report = guarded(ctx, debug, run)
    for warning in report.warnings:
        warn(warning)
    emit(report.lines)
    tell(f"polyglav: {report.summary}")
