"""``polyglav export``: a session as the auditable Markdown log, or one HTML page."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from .app import app, example, fail, guarded, tell, warn
from .options import (
    Debug,
    ExportFailOn,
    ExportSubSessions,
    FailOn,
    LinkBase,
    MaxCost,
    MaxTokens,
    PricesFile,
    Project,
    Redact,
    RedactValues,
    SessionName,
    SubSessions,
    Summary,
)

if TYPE_CHECKING:
    from ..ci import GateReport


@app.command(
    epilog=example(
        "polyglav export '#ab12cd' --project sample_sessions --out review.md",
        "polyglav export '#ab12cd' --format junit --out report.xml --fail-on error,denied --summary summary.md --project sample_sessions",
    )
)
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
            "--format",
            "-f",
            help="md (the auditable log), html (one self-contained page) or junit (JUnit XML "
            "for CI test reports: a test case per turn, failed by --fail-on).",
        ),
    ] = "md",
    project: Project = None,
    redact: Redact = False,
    redact_values: RedactValues = None,
    fail_on: ExportFailOn = None,
    sub_sessions: ExportSubSessions = True,
    summary: Summary = None,
    link_base: LinkBase = None,
    max_cost: MaxCost = None,
    max_tokens: MaxTokens = None,
    prices: PricesFile = None,
    debug: Debug = False,
) -> None:
    """Export a session to Markdown (or one self-contained HTML file, or a JUnit report)."""
    if fmt not in ("md", "html", "junit"):
        fail(f"--format: expected md, html or junit, got {fmt!r}", 2)
    from .. import commands

    def run() -> commands.ExportResult:
        from ..ci import Budget, GateOptions

        table = commands.make_prices(prices)
        budget = Budget.parse(max_cost, max_tokens)
        gate = GateOptions.parse(
            fail_on, sub_sessions, summary, link_base, budget=budget, prices=table
        )
        redactor = commands.make_redactor(redact, redact_values)
        reading, target = commands.open_target(project, name)
        return commands.export(reading, target, out, fmt, sys.stdout, redactor, gate)

    result = guarded(ctx, debug, run)
    for warning in result.warnings:
        warn(warning)
    if result.redaction is not None:
        tell(f"polyglav: {result.redaction}")
    if result.path is not None:
        tell(f"exported to {result.path}")
    finish_gate(result.gate)


@app.command(
    epilog=example("polyglav check '#ab12cd' --fail-on error,denied --project sample_sessions")
)
def check(
    ctx: typer.Context,
    name: SessionName,
    fail_on: FailOn = None,
    project: Project = None,
    sub_sessions: SubSessions = True,
    summary: Summary = None,
    link_base: LinkBase = None,
    redact: Redact = False,
    redact_values: RedactValues = None,
    max_cost: MaxCost = None,
    max_tokens: MaxTokens = None,
    prices: PricesFile = None,
    debug: Debug = False,
) -> None:
    """Gate on what happened in a session, writing nothing but the verdict.

    Exit 1 when a --fail-on kind (default: every kind but secret) occurred in the session
    or its sub-sessions, or it spent more than --max-cost or --max-tokens; 0 otherwise. The
    verdict goes to stdout (to stderr when --summary - takes stdout).
    """
    from .. import commands

    def run() -> GateReport:
        from ..ci import Budget, GateOptions, check
        from ..gate import EVENT_KINDS

        table = commands.make_prices(prices)
        gate = GateOptions.parse(
            fail_on,
            sub_sessions,
            summary,
            link_base,
            default_kinds=frozenset(EVENT_KINDS),
            budget=Budget.parse(max_cost, max_tokens),
            prices=table,
        )
        redactor = commands.make_redactor(redact, redact_values)
        reading, target = commands.open_target(project, name)
        return check(reading, target, gate, sys.stdout, redactor)

    report = guarded(ctx, debug, run)
    typer.echo(report.verdict, err=summary == "-")
    finish_gate(report)


def finish_gate(report: GateReport | None) -> None:
    """Warnings and one line per kind found on stderr; exit 1 when the gate failed."""
    if report is None:
        return
    for line in report.warnings:
        warn(line)
    if report.summary_path is not None:
        tell(f"summary written to {report.summary_path}")
    for line in report.lines:
        tell(f"polyglav: fail-on {line}")
    for line in report.budget:
        tell(f"polyglav: budget: {line}")
    if report.failed:
        raise typer.Exit(1)
