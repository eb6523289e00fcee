"""``polyglav import``: other agents' logs converted into session files."""

from __future__ import annotations

import typer

from .app import app, example, fail, guarded, say, tell
from .options import Debug, ImportAgent, ImportQuiet, ImportSources, Project


@app.command(
    "import",
    epilog=example(
        "polyglav import claude-code ~/.claude/projects/-home-me-src-app --project .",
        "polyglav site build --project .",
    ),
)
def import_logs(
    ctx: typer.Context,
    agent: ImportAgent,
    sources: ImportSources = None,
    project: Project = None,
    quiet: ImportQuiet = False,
    debug: Debug = False,
) -> None:
    """Import Claude Code, Codex CLI or aider logs as Polyglav sessions.

    Each source session becomes one file in the project's .polyglav/sessions/, named from
    the source's own id: importing again updates the same files, and unchanged sources are
    skipped. Exit status 1 when something could not be imported (each problem on one line).
    """
    from ..importers import FORMATS

    if agent not in FORMATS:
        fail(f"unknown agent {agent!r}: expected one of {', '.join(FORMATS)}", 2)
    from ..importers import default_sources, import_sources, sessions_folder

    def run() -> int:
        folder = sessions_folder(project)
        chosen = list(sources) if sources else default_sources(agent)
        report = import_sources(
            agent,
            chosen,
            folder,
            on_problem=lambda p: say("warning", str(p)),
            on_note=lambda n: say("note", str(n)),
        )
        if not quiet:
            tell(report.summary())
        return report.exit_status

    status = guarded(ctx, debug, run)
    if status:
        raise typer.Exit(status)
