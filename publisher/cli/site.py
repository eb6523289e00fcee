"""``polyglav site build|watch|serve``: the static website of an archive."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .app import example, fail, guarded, site_app, tell, warn
from .options import (
    AllowHost,
    Bind,
    BuildQuiet,
    CacheDir,
    Debug,
    NoWait,
    Port,
    PricesFile,
    Project,
    QuietWindow,
    Redact,
    RedactValues,
    Scheduler,
    Search,
    SiteOut,
    Strict,
    Theme,
    WatchImport,
    WatchQuiet,
)

if TYPE_CHECKING:
    from ..site.build import BuildOptions, BuildReport
    from ..site.pool import FolderStamps


def build_options(
    project: Path | None,
    out: Path | None,
    cache_dir: Path | None,
    theme: str | None,
    search: bool,
    redact: bool,
    redact_values: Path | None,
    importing: bool = False,
    prices: Path | None = None,
) -> BuildOptions:
    """The build options of a ``site`` command line (``importing``: the sessions folder
    may not exist yet, the importers make it)."""
    from ..archive import find_sessions_dir
    from ..commands import make_prices, make_redactor, site_out
    from ..importers import sessions_folder
    from ..site.build import BuildOptions

    sessions_dir = sessions_folder(project) if importing else find_sessions_dir(project)
    return BuildOptions(
        sessions_dir=sessions_dir,
        out_dir=site_out(sessions_dir, out),
        cache_dir=cache_dir,
        theme=theme,
        search=search,
        redactor=make_redactor(redact, redact_values),
        prices=make_prices(prices),
    )


def stamps_ahead(project: Path | None) -> FolderStamps | None:
    """The sessions folder's files, their stamps taken by a child forked now, before the
    build is imported (:class:`..site.pool.FolderStamps`); None for a folder that is not
    there (the build says why) or too small to pay a process."""
    from ..archive import ArchiveError, find_sessions_dir
    from ..site.pool import FolderStamps

    try:
        folder = find_sessions_dir(project)
    except ArchiveError:
        return None
    return FolderStamps.start(os.fspath(folder))


def say_waiting(holder: int | None) -> None:
    """What a build waiting for another one of the same site says (once, on stderr)."""
    who = f" (pid {holder})" if holder is not None else ""
    tell(f"polyglav: waiting for another build of this site{who} to finish")


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


@site_app.command(
    "build",
    epilog=example(
        "polyglav site build --project sample_sessions --out /tmp/site",
        "polyglav site build --project . --out /shared/site --scheduler tcp://scheduler:8786",
    ),
)
def build(
    ctx: typer.Context,
    project: Project = None,
    out: SiteOut = None,
    cache_dir: CacheDir = None,
    theme: Theme = None,
    search: Search = True,
    strict: Strict = False,
    quiet: BuildQuiet = False,
    redact: Redact = False,
    redact_values: RedactValues = None,
    prices: PricesFile = None,
    no_wait: NoWait = False,
    scheduler: Scheduler = None,
    debug: Debug = False,
) -> None:
    """Build the site: one page per session, the index, search.

    Files that do not load are listed on the index and warned about; the build still
    succeeds unless --strict. One build of a site runs at a time: a second one waits for
    the first (or, with --no-wait, exits 1).
    """

    def action() -> tuple[BuildReport, BuildOptions]:
        listing = stamps_ahead(project)  # the files' stamps, taken while the build imports
        try:
            from ..site.build import build_site
            from ..site.progress import progress_hook

            options = build_options(
                project, out, cache_dir, theme, search, redact, redact_values, prices=prices
            )
        except BaseException:
            if listing is not None:
                listing.close()
            raise
        options.wait, options.on_wait = not no_wait, say_waiting
        options.scheduler = scheduler or None
        options.listing = listing
        with progress_hook(enabled=not quiet and sys.stderr.isatty()) as hook:
            options.progress = hook
            return build_site(options), options

    report, options = guarded(ctx, debug, action)
    for warning in report.warnings:
        warn(warning)
    if report.search.startswith("unavailable"):
        warn(f"search {report.search}")
    if not quiet:
        tell(summary_line(report, options.out_dir))
    if strict and report.warnings:
        fail(f"--strict: {len(report.warnings)} warnings", 1)


@site_app.command("watch", epilog=example("polyglav site watch --project . --out /tmp/site"))
def watch(
    ctx: typer.Context,
    project: Project = None,
    out: SiteOut = None,
    cache_dir: CacheDir = None,
    theme: Theme = None,
    search: Search = True,
    quiet: WatchQuiet = False,
    quiet_window: QuietWindow = 0.3,
    redact: Redact = False,
    redact_values: RedactValues = None,
    follow: WatchImport = None,
    prices: PricesFile = None,
    debug: Debug = False,
) -> None:
    """Build the site, then rebuild what changed whenever the sessions or the theme change.

    A file being rewritten keeps its last good page until it loads again; a sessions
    folder deleted and recreated is watched again. With --import, another agent's logs
    are imported before each build, so its running session shows live. Ctrl-C stops it.
    """

    def action() -> None:
        from ..errors import UsageError
        from ..site.watch import ImportSource, WatchOptions, watch_site

        try:
            imports = [ImportSource.parse(spec) for spec in follow or []]
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        options = build_options(
            project, out, cache_dir, theme, search, redact, redact_values, bool(imports), prices
        )
        watch = WatchOptions(quiet_window=quiet_window, quiet=quiet, imports=imports)
        watch_site(options, watch)

    guarded(ctx, debug, action)


@site_app.command("serve", epilog=example("polyglav site serve --project . --port 8000"))
def serve(
    ctx: typer.Context,
    project: Project = None,
    out: SiteOut = None,
    cache_dir: CacheDir = None,
    theme: Theme = None,
    search: Search = True,
    port: Port = 8000,
    bind: Bind = "127.0.0.1",
    allow_host: AllowHost = None,
    quiet: WatchQuiet = False,
    quiet_window: QuietWindow = 0.3,
    redact: Redact = False,
    redact_values: RedactValues = None,
    follow: WatchImport = None,
    prices: PricesFile = None,
    debug: Debug = False,
) -> None:
    """Serve the site locally while watching; open pages reload after each build.

    Pages reload only once a build has written them, at the turn the reader was at.
    Paths outside the site answer 404; requests naming another host (DNS rebinding)
    answer 421. Ctrl-C stops it.
    """

    def action() -> None:
        from ..errors import UsageError
        from ..site.serve import allowed_host, serve_site
        from ..site.watch import ImportSource, WatchOptions

        try:
            hosts = [allowed_host(name) for name in allow_host or []]
            imports = [ImportSource.parse(spec) for spec in follow or []]
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        options = build_options(
            project, out, cache_dir, theme, search, redact, redact_values, bool(imports), prices
        )
        watch = WatchOptions(quiet_window=quiet_window, quiet=quiet, imports=imports)
        serve_site(options, watch, bind, port, hosts)

    guarded(ctx, debug, action)
