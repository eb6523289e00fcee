"""``polyglav site build|watch|serve``: thin typer commands over :mod:`.build`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from ..archive import find_sessions_dir, project_root
from ..commands import UsageError, make_redactor
from ..redact import Redactor
from .build import BuildOptions, BuildReport, build_site

site_app = typer.Typer(
    help="Build, watch and serve the static website of an archive.\n\n"
    "Example: polyglav site build --project sample_sessions --out site",
    no_args_is_help=True,
    rich_markup_mode=None,
)

Project = Annotated[
    Path | None,
    typer.Option(
        "--project",
        "-p",
        help="Project folder (holding .polyglav/) or a folder of session files.",
        show_default=False,
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="Site folder. Default: .polyglav/site/ of the project.",
        show_default=False,
    ),
]
ThemeOpt = Annotated[
    str | None,
    typer.Option(
        "--theme",
        "-t",
        help="Built-in theme name (default, paper) or a folder overriding some templates.",
        show_default=False,
    ),
]
Search = Annotated[
    bool, typer.Option("--search/--no-search", help="Build the Pagefind full-text search index.")
]
Redact = Annotated[
    bool,
    typer.Option(
        "--redact",
        help="Replace secrets with [REDACTED:<kind>] before rendering; pages say how many.",
    ),
]
RedactValues = Annotated[
    Path | None,
    typer.Option(
        "--redact-values",
        help="A file of more values to redact, one per line; implies --redact.",
        show_default=False,
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary line.")]
WatchQuiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="No line per build (warnings and errors still).")
]
QuietWindow = Annotated[
    float,
    typer.Option("--quiet-window", min=0.0, help="Seconds without changes before rebuilding."),
]


def default_out(sessions_dir: Path) -> Path:
    root = project_root(sessions_dir)
    if root == sessions_dir:
        return Path(".polyglav") / "site"
    return root / ".polyglav" / "site"


def options_for(
    project: Path | None,
    out: Path | None,
    theme: str | None,
    search: bool,
    redactor: Redactor | None = None,
) -> BuildOptions:
    sessions_dir = find_sessions_dir(project)
    return BuildOptions(
        sessions_dir=sessions_dir,
        out_dir=out or default_out(sessions_dir),
        theme=theme,
        search=search,
        redactor=redactor,
    )


def summary_line(report: BuildReport, out: Path) -> str:
    parts = [
        f"{report.sessions} sessions",
        f"{len(report.failures)} not loaded",
        f"{report.sessions_rendered} rendered",
        f"{report.files_written} files written",
    ]
    if report.files_removed:
        parts.append(f"{report.files_removed} removed")
    parts.append(f"search {report.search}")
    return f"built {out}: " + ", ".join(parts)


def register(
    app: typer.Typer,
    guarded: Callable[[Callable[[], Any]], Any],
    fail: Callable[[str, int], NoReturn],
) -> None:
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
        strict: Annotated[
            bool, typer.Option("--strict", help="Fail (exit 1) when any file does not load.")
        ] = False,
        quiet: Quiet = False,
        redact: Redact = False,
        redact_values: RedactValues = None,
    ) -> None:
        """Build the site: one page per session, the index, search.

        Files that do not load are listed on the index and warned about; the build still
        succeeds unless --strict.

        Example: polyglav site build --project sample_sessions --out /tmp/site
        """

        def action() -> tuple[BuildReport, BuildOptions]:
            redactor = make_redactor(redact, redact_values)
            options = options_for(project, out, theme, search, redactor)
            return run_build(options, quiet), options

        report, options = guarded(action)
        for warning in report.warnings:
            typer.echo(f"polyglav: warning: {warning}", err=True)
        if report.search.startswith("unavailable"):
            typer.echo(f"polyglav: warning: search {report.search}", err=True)
        if not quiet:
            typer.echo(summary_line(report, options.out_dir), err=True)
        if strict and report.warnings:
            fail(f"--strict: {len(report.warnings)} warnings (files that do not load)", 1)

    @site_app.command("watch")
    def watch(
        project: Project = None,
        out: Out = None,
        theme: ThemeOpt = None,
        search: Search = True,
        quiet: WatchQuiet = False,
        quiet_window: QuietWindow = 0.3,
        redact: Redact = False,
        redact_values: RedactValues = None,
    ) -> None:
        """Build the site, then rebuild what changed whenever the sessions or the theme change.

        A file being rewritten keeps its last good page until it loads again; a sessions
        folder deleted and recreated is watched again. Ctrl-C stops it.

        Example: polyglav site watch --project sample_sessions --out /tmp/site
        """
        from .watch import WatchOptions, watch_site

        def action() -> None:
            options = options_for(project, out, theme, search, make_redactor(redact, redact_values))
            watch_site(options, WatchOptions(quiet_window=quiet_window, quiet=quiet))

        guarded(action)

    @site_app.command("serve")
    def serve(
        project: Project = None,
        out: Out = None,
        theme: ThemeOpt = None,
        search: Search = True,
        port: Annotated[
            int, typer.Option("--port", min=0, max=65535, help="Port; 0 picks a free one.")
        ] = 8000,
        bind: Annotated[str, typer.Option("--bind", help="Address to listen on.")] = "127.0.0.1",
        allow_host: Annotated[
            list[str] | None,
            typer.Option(
                "--allow-host",
                help="Also answer requests naming this host (a reverse proxy's name, a .local"
                " name, a LAN address); repeatable. Known anyway: localhost, 127.0.0.1, [::1]"
                " and the --bind address.",
                show_default=False,
            ),
        ] = None,
        quiet: WatchQuiet = False,
        quiet_window: QuietWindow = 0.3,
        redact: Redact = False,
        redact_values: RedactValues = None,
    ) -> None:
        """Serve the site locally while watching; open pages reload after each build.

        Pages reload only once a build has written them, at the turn the reader was at.
        Paths outside the site answer 404; requests naming another host (DNS rebinding)
        answer 421. Ctrl-C stops it.

        Example: polyglav site serve --project sample_sessions --out /tmp/site --port 8000
        """
        from .serve import allowed_host, serve_site
        from .watch import WatchOptions

        def action() -> None:
            try:
                hosts = [allowed_host(name) for name in allow_host or []]
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            options = options_for(project, out, theme, search, make_redactor(redact, redact_values))
            watch = WatchOptions(quiet_window=quiet_window, quiet=quiet)
            serve_site(options, watch, bind, port, hosts)

        guarded(action)

    app.add_typer(site_app, name="site")
