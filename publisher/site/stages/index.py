"""Stage 5, index: the archive's ``index.html``, ``errors.html`` and ``decisions.html``.

Made of the published sessions' summaries and the failures, never of a session file: rows
are cached by summary key and the delegation tree by graph key (:mod:`..index`), so an
append renders one row.
"""

from __future__ import annotations

from ...model import LoadFailure
from ...render.text import encode_display
from ..archive import ArchiveCache, changed, render_archive_pages
from ..context import BuildContext
from ..graph import Graph
from ..index import IndexCache, render_index, row_shards
from ..manifest import Manifest
from .write import write_files


def index(
    ctx: BuildContext,
    previous: Manifest,
    graph: Graph,
    graph_key: str,
    row_keys: dict[str, str],
    failures: list[LoadFailure],
    search: bool,
) -> tuple[dict[str, str], int]:
    """Stage 5: write ``index.html`` and the archive-wide pages; their hashes by path, and
    the files written.

    ``row_keys``: each published session's summary key, by session name."""
    same_key = previous.key == ctx.key
    cache = IndexCache.load(ctx.cache.index_cache) if same_key else IndexCache()
    redacted = (
        sum(s.redacted for s in graph.summaries.values())
        if ctx.options.redactor is not None
        else None
    )
    tunables = ctx.tunables
    summaries = sorted(graph.summaries.values(), key=lambda s: (s.updated_at, s.name), reverse=True)
    shard_files: dict[str, bytes] = {}
    if len(summaries) > tunables.index_first_rows:
        shard_files = row_shards(summaries, tunables.rows_per_shard, tunables.max_row_shards)
    page, fresh = render_index(
        ctx.renderer,
        graph,
        failures,
        ctx.folder,
        search,
        redacted,
        cache,
        graph_key,
        row_keys,
        tunables.index_first_rows,
        sorted(shard_files),
    )
    if (fresh.graph, fresh.rows.keys()) != (cache.graph, cache.rows.keys()):
        fresh.save(ctx.cache.index_cache)
    archive_cache = ArchiveCache.load(ctx.cache.archive_cache) if same_key else ArchiveCache()
    pages, archive_fresh = render_archive_pages(ctx.renderer, graph, archive_cache)
    if changed(archive_cache, archive_fresh) or not ctx.cache.archive_cache.exists():
        archive_fresh.save(ctx.cache.archive_cache)
    files = {"index.html": encode_display(page), **shard_files}
    files.update((rel, encode_display(html)) for rel, html in pages.items())
    return write_files(ctx, files, previous.extra_outputs)
