"""``polyglav export``: a session as the auditable Markdown log, or one HTML page."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .app import app, fail, guarded, warn
from .options import Debug, Project, Redact, RedactValues, SessionName


@app.command()
def export(
    ctx: typer.Context,
    name: SessionName,
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
            "--format", "-f", help="md (the auditable log) or html (one self-contained page)."
        ),
    ] = "md",
    project: Project = None,
    redact: Redact = False,
    redact_values: RedactValues = None,
    debug: Debug = False,
) -> None:
    """Export a session to Markdown (or one self-contained HTML file).

    Example: polyglav export '#ab12cd' --project sample_sessions --out review.md
    """
    if fmt not in ("md", "html"):
        fail(f"--format: expected md or html, got {fmt!r}", 2)
    from .. import commands

    def run() -> commands.ExportResult:
        redactor = commands.make_redactor(redact, redact_values)
        reading, target = commands.open_target(project, name)
        return commands.export(reading, target, out, fmt, sys.stdout, redactor)

    result = guarded(ctx, debug, run)
    for warning in result.warnings:
        warn(warning)
    if result.redaction is not None:
        typer.echo(f"polyglav: {result.redaction}", err=True)
    if result.path is not None:
        typer.echo(f"exported to {result.path}", err=True)
