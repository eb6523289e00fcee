"""Build the static site of an archive, incrementally: the stages, in order.

:func:`build_site` reads as what happens; each stage (:mod:`.stages`) says how. What the
build keeps between runs lives in a cache folder outside the site (:mod:`.context`), and
what a change invalidates is decided in one module (:mod:`.staleness`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain

from ..model import LoadFailure
from . import urls
from .context import BuildContext, BuildOptions, CachePaths, Warm
from .manifest import ManifestDamaged, Sources
from .lock import holding
from .memory import Freezer, return_large_blocks
from .pool import Crew
from .stages.index import index
from .stages.plan import Census, plan
from .stages.render import Rendered, render
from .stages.scan import Scan, scan
from .stages.search import (
    EarlySearch,
    PendingSearch,
    finish_search,
    pagefind_available,
    search,
    start_search,
)
from .stages.state import load_state, save_state, saved_outputs
from .stages.write import assets, last_outputs, must_sweep, remove_stale, write_files
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
    """``built N/M shards[, K removed]``, ``unchanged``, ``pending``, ``off`` or
    ``unavailable: …``."""
    warnings: list[str] = field(default_factory=list)
    """One line each: files that do not load, then what prepare says of loaded files."""
    list_outputs: Callable[[], dict[str, str]] | None = field(default=None, repr=False)
    """Lists :attr:`outputs` (when asked: it decodes every session's state from the saved
    manifest)."""
    _outputs: dict[str, str] | None = field(default=None, repr=False)

    @property
    def outputs(self) -> dict[str, str]:
        """Every file of the site (path → sha256), as the manifest records them; listed
        when first asked (it decodes every session's state from the manifest)."""
        if self._outputs is None:
            listed = self.list_outputs() if self.list_outputs is not None else {}
            self._outputs = dict(sorted(listed.items()))
        return self._outputs

    changed: list[str] = field(default_factory=list)
    """Site files whose bytes differ from the last build's, added or removed (sorted): what
    an open page must reload. Found from the sources set this build and the gone ones, so
    an append does not list every file."""
    pending_search: PendingSearch | None = None
    """Set when ``defer_search`` left the search index to :func:`finish_search`."""
    held: list[LoadFailure] = field(default_factory=list)
    """Files that did not load but kept their last good pages (``BuildOptions.hold``)."""


def build_site(
    options: BuildOptions, warm: Warm | None = None, *, lock: int | None = None
) -> BuildReport:
    """Build (or bring up to date) the site of ``options.sessions_dir`` in
    ``options.out_dir``. ``warm``: what a long-running caller keeps between builds.
    ``lock``: the descriptor of the cache's lock when the caller holds it already
    (``site watch`` holds it over a rebuild and its search update); else the build takes it
    (:mod:`.lock`: it waits for another build, or raises :class:`.lock.CacheBusy` when
    ``options.wait`` is False).

    A manifest whose shard file turns out damaged while the build reads it
    (:class:`.manifest.ManifestDamaged`) is dropped, and the build starts again from
    nothing: a lost cache costs time, never a wrong page."""
    if lock is None:
        cache = CachePaths.of(options)
        BuildContext.check(options, cache.root)  # (a folder error before any wait)
        with holding(cache.lock, wait=options.wait, on_wait=options.on_wait) as held:
            return build_site(options, warm, lock=held)
    try:
        return _build(options, warm, lock)
    except ManifestDamaged:
        if warm is not None:
            warm.manifest = None
        with contextlib.suppress(OSError):
            CachePaths.of(options).manifest.unlink()
        return _build(options, warm, lock)


def _build(options: BuildOptions, warm: Warm | None, lock: int) -> BuildReport:
    return_large_blocks()
    ctx = BuildContext.open(options, warm)
    freezer = Freezer()
    early: EarlySearch | None = None
    crew = Crew(ctx.workers, (lock,))  # started by the scan or the render when a pool pays
    try:
        previous = load_state(ctx, freezer)  # its objects frozen: no collection walks them
        freezer.freeze()  # (when there was no manifest to load)
        ctx.trust_written = not begin_writing(ctx)
        sweep = must_sweep(ctx, previous)  # before the build writes in the site
        # A watcher's events tell what changed since its own last build, nothing else's.
        seen, ctx.warm.seen = ctx.warm.seen if previous.remembered else None, None
        scanned = scan(ctx, previous, freezer, crew, seen)
        planned = plan(ctx, previous, scanned)
        early = start_search(ctx, planned)  # indexes finished shards during the render
        rendered = render(ctx, planned, scanned, crew, early.rendered if early else None)
        crew.close()  # what its workers kept goes with them
        planned.jobs = []  # done with (two objects a session rendered)
        sources = settle(planned.sources, rendered, scanned)
        census: Census | None = planned.census
        graph, graph_key = planned.graph, planned.graph_key
        if any(result.error is not None for result in rendered):
            census = ctx.warm.census = None  # a session failed: the census must be made again
        # What the report and the index list: the plan's census, or one made again of the
        # settled sources (a session that failed its render is a failure now).
        listed = census if census is not None else Census.of(sources, scanned.names)
        if listed is not planned.census:
            # The index lists what is published now: no row links to a page not written.
            # (The manifest keeps the plan's graph key: the pages rendered with facts of
            # the failed session are checked again by the next build.)
            graph = listed.graph(sources)
            graph_key = graph.key()
        published: Collection[str] = listed.published.keys()
        warnings = list(chain.from_iterable(listed.warned.values()))
        failures = [
            LoadFailure(file_name=n, reason=sources[n].failure or "", size=sources[n].size)
            for n in listed.failed
        ]
        asset_hashes, assets_written = write_files(ctx, assets(ctx), previous.extra_outputs)
        search_on = ctx.options.search and pagefind_available()
        index_hashes, index_written = index(
            ctx,
            previous,
            graph,
            graph_key,
            failures,
            search_on,
            census,
            watched=scanned.watched,
        )
        extra = {**asset_hashes, **index_hashes}
        last = last_outputs(previous, sources)  # before the manifest's files are replaced
        removed = remove_stale(ctx, previous, sources, extra, published, last, sweep=sweep)
        # Search needs the list of every page (each state's outputs, every shard decoded);
        # a build without it does not make it.
        produced = dict(extra)
        if ctx.options.search:
            produced = {rel: h for n in scanned.names for rel, h in sources[n].outputs.items()}
            produced.update(extra)
        search_status, pending = search(ctx, produced, early)
        early = None
        stamp_folders(ctx, sources, rendered)
        save_state(
            ctx,
            previous,
            graph_key=planned.graph_key,
            scanned_at_ns=scanned.started_ns,
            sources=sources,
            extra_outputs=extra,
            loaded=len(published),
        )
        ctx.cache.building.unlink(missing_ok=True)  # the manifest says what the site holds
        if census is not None:
            census.settle(sources)
        # Made before the thaw: the thawed heap is walked by the next full collection,
        # which then falls to the caller (a CLI exits), not to this build (0.6 s at
        # 20,000 sessions).
        return BuildReport(
            sessions=len(published),
            failures=failures,
            files_read=scanned.files_read,
            sessions_rendered=len(rendered),
            files_written=sum(r.written for r in rendered) + assets_written + index_written,
            files_removed=removed,
            search=search_status,
            warnings=[f"{f.file_name}: {f.reason}" for f in failures] + warnings,
            list_outputs=partial(saved_outputs, ctx.cache.manifest),
            changed=changed_outputs(last, sources, extra),
            pending_search=pending,
            held=scanned.holds.failures,
        )
    finally:
        crew.close()
        if early is not None:  # the build stopped: wait for the Pagefind runs it started
            early.close()
        freezer.thaw()


def begin_writing(ctx: BuildContext) -> bool:
    """Mark the cache as being written from (:attr:`.context.CachePaths.building`); True
    when the mark was already there: the last build stopped before saving its manifest."""
    mark = ctx.cache.building
    stopped = mark.exists()
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.touch()
    return stopped


def settle(sources: Sources, rendered: list[Rendered], scanned: Scan) -> Sources:
    """The sources' states after the render: what each rendered session produced, and the
    sessions that failed to render listed as not loaded (or held, when that is asked)."""
    settled = sources.copy()
    for result in rendered:
        state = settled[result.file_name]
        if result.error is not None:
            held = scanned.holds.hold(result.file_name, result.error, state.size)
            if held is not None:
                settled[result.file_name] = held
                continue
            # Changed between scan and render, or a renderer failure: list it, go on.
            settled[result.file_name] = replace(
                state, summary=None, failure=result.error, outputs={}, sha256=""
            )
            continue
        settled.amend(result.file_name, outputs=result.outputs, facts_key=result.facts_key)
    return settled


def changed_outputs(
    last: Mapping[str, str], sources: Sources, extra: Mapping[str, str]
) -> list[str]:
    """:attr:`BuildReport.changed`: the outputs of the sources set this build and the files
    of no source, against the last build's that these may have changed
    (:func:`.stages.write.last_outputs`)."""
    after = dict(extra)
    for name in sources.fresh:
        after.update(sources.fresh[name].outputs)
    return sorted(rel for rel in last.keys() | after.keys() if last.get(rel) != after.get(rel))


def stamp_folders(ctx: BuildContext, sources: Sources, rendered: list[Rendered]) -> None:
    """Record the stamp of each rendered session's folder in the site, once nothing else
    of this build writes there (:func:`.staleness.folder_intact`)."""
    out = os.fspath(ctx.out)
    for result in rendered:
        state = sources[result.file_name]
        if result.error is None and state.summary is not None:
            site = folder_stamp(f"{out}/{urls.session_dir(state.summary.name)}")
            sources.amend(result.file_name, site=site)
