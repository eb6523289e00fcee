"""Build the static site of an archive, incrementally: the stages, in order.

:func:`build_site` reads as what happens; each stage (:mod:`.stages`) says how. What the
build keeps between runs lives in a cache folder outside the site (:mod:`.context`), and
what a change invalidates is decided in one module (:mod:`.staleness`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from ..model import LoadFailure
from . import urls
from .catalog import Catalog, CatalogDamaged, damaged, remove_files
from .context import BuildContext, BuildOptions, CachePaths, Warm
from .graph import Graph
from .lock import holding
from .memory import return_large_blocks
from .pool import Crew, Runner
from .stages.index import index, options_of
from .stages.plan import FolderCheck, plan
from .stages.render import render
from .stages.scan import scan
from .stages.search import PendingSearch, Searching, finish_search, search
from .stages.state import open_state, save_state, saved_changes, saved_outputs
from .stages.write import assets, must_sweep, remove_stale, write_files
from .staleness import folder_stamp

__all__ = ["BuildOptions", "BuildReport", "PendingSearch", "Warm", "build_site", "finish_search"]


@dataclass(slots=True)
class BuildReport:
    """What a build did."""

    sessions: int = 0
    """Sessions published."""
    failures: list[LoadFailure] = field(default_factory=list)
    """Files that do not load (listed on the index)."""
    files_read: int = 0
    """Session files read (the others were unchanged)."""
    sessions_rendered: int = 0
    """Sessions whose pages were rendered."""
    files_written: int = 0
    """Site files written (bytes changed)."""
    files_removed: int = 0
    """Site files removed (no longer published)."""
    search: str = "off"
    """``built N/M bundles``, ``unchanged``, ``pending`` or ``off``."""
    warnings: list[str] = field(default_factory=list)
    """One line each: files that do not load, then what prepare says of loaded files."""
    list_outputs: Callable[[], dict[str, str]] | None = field(default=None, repr=False)
    """Lists :attr:`outputs` (when asked: from the committed catalog)."""
    list_changed: Callable[[], list[str]] | None = field(default=None, repr=False)
    """Lists :attr:`changed` (when asked: from the committed catalog)."""
    pending_search: PendingSearch | None = None
    """Set when ``defer_search`` left the search index to :func:`finish_search`."""
    held: list[LoadFailure] = field(default_factory=list)
    """Files that did not load but kept their last good pages (``BuildOptions.hold``)."""
    _outputs: dict[str, str] | None = field(default=None, repr=False)
    _changed: list[str] | None = field(default=None, repr=False)

    @property
    def outputs(self) -> dict[str, str]:
        """Every file of the site (path → sha256), as the catalog records them; listed
        when first asked (a full build does not hold them)."""
        if self._outputs is None:
            listed = self.list_outputs() if self.list_outputs is not None else {}
            self._outputs = dict(sorted(listed.items()))
        return self._outputs

    @property
    def changed(self) -> list[str]:
        """Site files whose bytes differ from the last build's, added or removed (sorted):
        what an open page must reload. Listed when first asked, from the catalog this build
        committed (a later build's commit makes it empty: ask before the next build)."""
        if self._changed is None:
            self._changed = self.list_changed() if self.list_changed is not None else []
        return self._changed


def build_site(
    options: BuildOptions, warm: Warm | None = None, *, lock: int | None = None
) -> BuildReport:
    """Build (or bring up to date) the site of ``options.sessions_dir`` in
    ``options.out_dir``. ``warm``: what a long-running caller keeps between builds.
    ``lock``: the descriptor of the cache's lock when the caller holds it already
    (``site watch`` holds it over a rebuild and its search update); else the build takes it
    (:mod:`.lock`: it waits for another build, or raises :class:`.lock.CacheBusy` when
    ``options.wait`` is False).

    A catalog SQLite finds damaged while the build reads it is deleted, and the build
    starts again from nothing: a lost cache costs time, never a wrong page."""
    if lock is None:
        cache = CachePaths.of(options)
        listing = options.listing
        told = options.on_wait

        def waiting(holder: int | None) -> None:
            if listing is not None:
                listing.close()  # its stamps would be as old as the wait
            if told is not None:
                told(holder)

        try:
            BuildContext.check(options, cache.root)  # (a folder error before any wait)
            with holding(cache.lock, wait=options.wait, on_wait=waiting) as held:
                return build_site(options, warm, lock=held)
        finally:
            if listing is not None:
                listing.close()  # not taken (a build that reads every file)
    try:
        return _build(options, warm, lock)
    except Exception as exc:
        if not (isinstance(exc, CatalogDamaged) or damaged(exc)):
            raise
    remove_files(CachePaths.of(options).catalog)
    if warm is not None:
        warm.generation = 0
    return _build(options, warm, lock)


def _build(options: BuildOptions, warm: Warm | None, lock: int) -> BuildReport:
    return_large_blocks()
    ctx = BuildContext.open(options, warm)
    # Forked before the catalog is opened (no connection is carried across a fork); a
    # watcher's build told what changed checks no folder.
    told = bool(ctx.warm.generation) and ctx.warm.seen is not None
    folders = None if told else FolderCheck.start(ctx)
    catalog = open_state(ctx)
    crew = runner(ctx, lock)  # started by the scan or the render when a pool pays
    searching: Searching | None = None
    committed = False
    try:
        ctx.trust_written = not begin_writing(ctx)
        sweep = must_sweep(ctx, catalog)  # before the build writes in the site
        # A watcher's events tell what changed since its own last build, nothing else's.
        hinted = ctx.warm.generation and ctx.warm.generation == catalog.meta.generation
        seen, ctx.warm.seen = ctx.warm.seen if hinted else None, None
        scanned = scan(ctx, catalog, crew, seen)
        planned = plan(ctx, catalog, scanned, folders)
        folders = None
        rendered = render(ctx, catalog, planned, scanned, crew)
        crew.close()  # what its workers kept goes with them
        # The index lists what is published now: no row links to a page not written (the
        # catalog keeps the plan's graph key: the pages rendered with facts of a session
        # that failed are checked again by the next build).
        graph_key = Graph(catalog).key() if rendered.failed else planned.graph_key
        failures = [
            LoadFailure(file_name=name, reason=reason, size=size)
            for name, reason, size in catalog.failures()
        ]
        asset_hashes, assets_written = write_files(ctx, assets(ctx), catalog.outputs_of(""))
        search_on = ctx.options.search
        # The search's bundles are written by its workers while this process makes the
        # archive's pages: neither reads what the other writes.
        searching = search(ctx, catalog, lock)
        index_hashes, index_written, published = index(
            ctx, catalog, graph_key, failures, search_on, watched=scanned.watched
        )
        catalog.record_outputs("", {**asset_hashes, **index_hashes})
        removed = remove_stale(ctx, catalog, sweep=sweep)
        search_status, pending = searching.finish()
        stamp_folders(ctx, catalog)
        warnings = [f"{f.file_name}: {f.reason}" for f in failures] + catalog.warnings()
        save_state(
            ctx,
            catalog,
            graph_key=planned.graph_key,
            scanned_at_ns=scanned.started_ns,
            index=options_of(ctx, search_on),
        )
        committed = True
        ctx.cache.building.unlink(missing_ok=True)  # the catalog says what the site holds
        ctx.warm.generation = catalog.meta.generation
        return BuildReport(
            sessions=published,
            failures=failures,
            files_read=scanned.files_read,
            sessions_rendered=rendered.rendered,
            files_written=rendered.written + assets_written + index_written,
            files_removed=removed,
            search=search_status,
            warnings=warnings,
            list_outputs=partial(saved_outputs, ctx.cache.catalog),
            list_changed=partial(saved_changes, ctx.cache.catalog, catalog.meta.generation),
            pending_search=pending,
            held=scanned.holds.failures,
        )
    finally:
        if folders is not None:
            folders.close()
        if searching is not None:
            searching.close()
        crew.close()
        if not committed:
            catalog.rollback()
        catalog.close()


def runner(ctx: BuildContext, lock: int) -> Runner:
    """What runs the scan's and the render's jobs: the Dask cluster of
    :attr:`.context.BuildOptions.scheduler` (Dask is imported only then), else the build's
    own worker processes (which close ``lock``, the cache's, when forked)."""
    if ctx.options.scheduler:
        from .distributed import DaskCrew

        return DaskCrew.of(ctx, ctx.options.scheduler)
    return Crew(ctx.workers, (lock,))


def begin_writing(ctx: BuildContext) -> bool:
    """Mark the cache as being written from (:attr:`.context.CachePaths.building`); True
    when the mark was already there: the last build stopped before committing its catalog."""
    mark = ctx.cache.building
    stopped = mark.exists()
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.touch()
    return stopped


def stamp_folders(ctx: BuildContext, catalog: Catalog) -> None:
    """Record the stamp of each rendered session's folder in the site, once nothing else
    of this build writes there (:func:`.staleness.folder_intact`)."""
    sessions = os.path.join(ctx.out, urls.SESSIONS)
    for file_name, folder in catalog.rendered_folders():
        catalog.stamp_folder(file_name, folder_stamp(f"{sessions}/{folder}"))
