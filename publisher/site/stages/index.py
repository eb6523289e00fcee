"""Stage 5, index: the archive's ``index.html``.

Made of the published sessions' summaries and the failures, never of a session file: rows
are cached by summary key and the delegation tree by graph key (:mod:`..index`), so an
append renders one row.
"""

from __future__ import annotations

from ...model import LoadFailure
from ...render.text import encode_display
from ..context import BuildContext
from ..graph import Graph
from ..index import IndexCache, render_index
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
    """Stage 5: write ``index.html``; its hash by path, and the files written (0 or 1).

    ``row_keys``: each published session's summary key, by session name."""
    same_key = previous.key == ctx.key
    cache = IndexCache.load(ctx.cache.index_cache) if same_key else IndexCache()
    redacted = (
        sum(s.redacted for s in graph.summaries.values())
        if ctx.options.redactor is not None
        else None
    )
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
    )
    if (fresh.graph, fresh.rows.keys()) != (cache.graph, cache.rows.keys()):
        fresh.save(ctx.cache.index_cache)
    return write_files(ctx, {"index.html": encode_display(page)}, previous.extra_outputs)
