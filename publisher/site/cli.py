"""``polyglav site build|watch|serve``: thin typer commands over :mod:`.build`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from ..archive import ArchiveError, find_sessions_dir, project_root
from ..theme import ThemeError
from .build import BuildOptions, BuildReport, build_site

site_app = typer.Typer(
    help="Build, watch and serve the static website of an archive.\n\n"
    "Example: polyglav site build --project sample_sessions --out site",
    no_args_is_help=True,
    rich_markup_mode=None,
)

Project = Annotated[
    Path | None,
    typer.Option("--project", "-p", help="Project folder (holding .polyglav/) or a folder of session files.",
                 show_default=False),
]
Out = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Site folder. Default: .polyglav/site/ of the project.", show_default=False),
]
ThemeOpt = Annotated[
    str | None,
    typer.Option("--theme", "-t", help="Built-in theme name (default, paper) or a folder overriding some templates.",
                 show_default=False),
]
Search = Annotated[bool, typer.Option("--search/--no-search", help="Build the Pagefind full-text search index.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary line.")]


def default_out(sessions_dir: Path) -> Path:
    root = project_root(sessions_dir)
    if root == sessions_dir:
        return Path(".polyglav") / "site"
    return root / ".polyglav" / "site"


def options_for(project: Path | None, out: Path | None, theme: str | None, search: bool) -> BuildOptions:
    sessions_dir = find_sessions_dir(project)
    return BuildOptions(sessions_dir=sessions_dir, out_dir=out or default_out(sessions_dir), theme=theme,
                        search=search)


def summary_line(report: BuildReport, out: Path) -> str:
    parts = [f"{report.sessions} sessions", f"{len(report.failures)} not loaded",
             f"{report.sessions_rendered} rendered", f"{report.files_written} files written"]
    if report.files_removed:
        parts.append(f"{report.files_removed} removed")
    parts.append(f"search {report.search}")
    return f"built {out}: " + ", ".join(parts)


def register(app: typer.Typer, guarded: Callable[[Callable[[], Any]], Any],
             fail: Callable[[str, int], NoReturn]) -> None:
    """Add the ``site`` group to the main app."""

    def run_build(options: BuildOptions, quiet: bool) -> BuildReport:
        from .progress import progress_hook

        with progress_hook(enabled=not quiet and sys.stderr.isatty()) as hook:
            options.progress = hook
            return build_site(options)

    @site_app.command("build")
    def build(
        project: Project = None,
        out: Out = None,
        theme: ThemeOpt = None,
        search: Search = True,
        strict: Annotated[bool, typer.Option("--strict", help="Fail (exit 1) when any file does not load.")] = False,
        quiet: Quiet = False,
    ) -> None:
        """Build the site: one page per session, the index, search.

        Files that do not load are listed on the index and warned about; the build still
        succeeds unless --strict.

        Example: polyglav site build --project sample_sessions --out /tmp/site
        """

        def action() -> tuple[BuildReport, BuildOptions]:
            try:
                options = options_for(project, out, theme, search)
            except ThemeError as exc:
                raise ArchiveError(str(exc)) from None
            try:
                return run_build(options, quiet), options
            except ThemeError as exc:
                raise ArchiveError(str(exc)) from None

        report, options = guarded(action)
        for warning in report.warnings:
            typer.echo(f"polyglav: warning: {warning}", err=True)
        if report.search.startswith("unavailable"):
            typer.echo(f"polyglav: warning: search {report.search}", err=True)
        if not quiet:
            typer.echo(summary_line(report, options.out_dir), err=True)
        if strict and report.warnings:
            fail(f"--strict: {len(report.warnings)} warnings (files that do not load)", 1)

    app.add_typer(site_app, name="site")
