"""Build the static site of an archive, incrementally: the stages, in order.

:func:`build_site` reads as what happens; each stage (:mod:`.stages`) says how. What the
build keeps between runs lives in a cache folder outside the site (:mod:`.context`), and
what a change invalidates is decided in one module (:mod:`.staleness`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..model import LoadFailure
from .context import BuildContext, BuildOptions, Warm
from .manifest import SourceState
from .memory import Freezer, return_large_blocks
from .stages.index import index
from .stages.plan import plan
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
from .stages.state import load_state, save_state
from .stages.write import assets, remove_stale, write_files

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
    outputs: dict[str, str] = field(default_factory=dict)
    """Every file of the site (path → sha256), as the manifest records them."""
    pending_search: PendingSearch | None = None
    """Set when ``defer_search`` left the search index to :func:`finish_search`."""
    held: list[LoadFailure] = field(default_factory=list)
    """Files that did not load but kept their last good pages (``BuildOptions.hold``)."""


def build_site(options: BuildOptions, warm: Warm | None = None) -> BuildReport:
    """Build (or bring up to date) the site of ``options.sessions_dir`` in
    ``options.out_dir``. ``warm``: what a long-running caller keeps between builds."""
    return_large_blocks()
    ctx = BuildContext.open(options, warm)
    freezer = Freezer()
    early: EarlySearch | None = None
    try:
        previous = load_state(ctx, freezer)  # its objects frozen: no collection walks them
        freezer.freeze()  # (when there was no manifest to load)
        scanned = scan(ctx, previous, freezer)
        planned = plan(ctx, previous, scanned)
        early = start_search(ctx, planned)  # indexes finished shards during the render
        rendered = render(ctx, planned, scanned, early.rendered if early else None)
        sources = settle(planned.sources, rendered, scanned)
        published = {s.summary.name for s in sources.values() if s.summary is not None}
        failures = [
            LoadFailure(file_name=n, reason=sources[n].failure or "", size=sources[n].size)
            for n in scanned.names
            if sources[n].summary is None
        ]
        produced = {rel: h for state in sources.values() for rel, h in state.outputs.items()}
        asset_hashes, assets_written = write_files(ctx, assets(ctx), previous.extra_outputs)
        search_on = ctx.options.search and pagefind_available()
        states = {s.summary.name: s for s in sources.values() if s.summary is not None}
        index_hashes, index_written = index(
            ctx, previous, planned.graph, planned.graph_key, states, failures, search_on
        )
        extra = {**asset_hashes, **index_hashes}
        produced.update(extra)
        removed = remove_stale(ctx, previous, produced, published)
        search_status, pending = search(ctx, produced, early)
        early = None
        save_state(
            ctx,
            previous,
            graph_key=planned.graph_key,
            scanned_at_ns=scanned.started_ns,
            names=scanned.names,
            sources=sources,
            extra_outputs=extra,
        )
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
            warnings=[f"{f.file_name}: {f.reason}" for f in failures]
            + [w for n in scanned.names for w in sources[n].warnings if sources[n].summary],
            outputs=dict(sorted(produced.items())),
            pending_search=pending,
            held=scanned.holds.failures,
        )
    finally:
        if early is not None:  # the build stopped: wait for the Pagefind runs it started
            early.close()
        freezer.thaw()


def settle(
    sources: dict[str, SourceState], rendered: list[Rendered], scanned: Scan
) -> dict[str, SourceState]:
    """The sources' states after the render: what each rendered session produced, and the
    sessions that failed to render listed as not loaded (or held, when that is asked)."""
    settled = dict(sources)
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
        settled[result.file_name] = replace(
            state, outputs=result.outputs, facts_key=result.facts_key
        )
    return settled
