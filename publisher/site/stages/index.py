"""Stage 5, index: the archive's ``index.html``, ``errors.html`` and ``decisions.html``
(and their row shards, ``rows/*.js`` and ``events/*.js``).

Made of the published sessions' summaries and the failures, never of a session file: rows
are cached by summary key and the delegation tree by graph key (:mod:`..index`), so an
append renders one row. A row shard or an archive-wide page whose
:func:`..staleness.outputs_key` is the last build's is not even made again.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from markupsafe import Markup

from ...model import LoadFailure
from ...redact import describe_counts
from ...render.contexts import TreePage
from ...render.text import encode_display
from ...write import atomic_write
from ..archive import ArchiveCache, changed, render_archive_pages
from ..context import BuildContext
from ..graph import Graph
from ..index import TREE_PAGE, IndexCache, render_index, row_shard_groups, shard_bytes
from ..manifest import Manifest
from ..staleness import outputs_key
from .write import write_files


def index(
    ctx: BuildContext,
    previous: Manifest,
    graph: Graph,
    graph_key: str,
    failures: list[LoadFailure],
    search: bool,
) -> tuple[dict[str, str], int]:
    """Stage 5: write ``index.html`` and the archive-wide pages; their hashes by path, and
    the files written.

    Every session is seen through its brief (:class:`..manifest.Brief`: the keys and shard
    slot computed when its summary was made); a summary is read only for a row to render
    (a new row of the first screen, the sessions of a row shard that changed)."""
    briefs = graph.all
    same_key = previous.key == ctx.key
    cache = IndexCache.load(ctx.cache.index_cache) if same_key else IndexCache()
    redacted = (
        sum(b.redacted for b in briefs.values()) if ctx.options.redactor is not None else None
    )
    tunables = ctx.tunables
    made = _load_made(ctx.cache.index_outputs) if same_key else {}
    now: dict[str, list[str]] = {}
    known: dict[str, str] = {}

    def unchanged(rel: str, key: str) -> bool:
        """True when ``rel`` was made from ``key`` last time and is still as written."""
        now[rel] = [key, ""]
        digest = previous.extra_outputs.get(rel, "")
        if made.get(rel) == [key, digest] and digest and (ctx.out / rel).is_file():
            known[rel] = digest
            return True
        return False

    produced: dict[str, str] = {}
    written = 0

    def emit(rel: str, data: bytes) -> None:
        """Write one file as soon as it is made: a full build does not hold every row
        shard's bytes at once (peak memory)."""
        nonlocal written
        hashes, count = write_files(ctx, {rel: data}, previous.extra_outputs)
        produced.update(hashes)
        written += count

    shards: list[str] = []
    if len(briefs) > tunables.index_first_rows:
        groups = row_shard_groups(
            list(briefs.values()), tunables.rows_per_shard, tunables.max_row_shards
        )
        shards = sorted(groups)
        for rel, group in groups.items():
            if not unchanged(rel, outputs_key([rel], [b.digest for b in group])):
                emit(rel, shard_bytes(rel, [graph.summaries[b.name] for b in group]))
    page, fresh = render_index(
        ctx.renderer,
        graph,
        failures,
        ctx.folder,
        search,
        redacted,
        cache,
        graph_key,
        None,
        tunables.index_first_rows,
        shards,
    )
    if (fresh.graph, fresh.rows.keys()) != (cache.graph, cache.rows.keys()):
        fresh.save(ctx.cache.index_cache)
    emit("index.html", encode_display(page))
    del page
    if shards and not unchanged(TREE_PAGE, outputs_key(["tree"], [fresh.graph])):
        tree = ctx.renderer.template(TREE_PAGE).render(
            page=TreePage(tree_html=Markup(fresh.tree), total=len(briefs))
        )
        emit(TREE_PAGE, encode_display(str(tree)))
    loaded: list[ArchiveCache] = []

    def emit_archive(rel: str, html: str) -> None:
        known.pop(rel, None)
        emit(rel, encode_display(html))

    def archive_cache() -> ArchiveCache:
        loaded.append(ArchiveCache.load(ctx.cache.archive_cache) if same_key else ArchiveCache())
        return loaded[0]

    made_archive, archive_fresh = render_archive_pages(
        ctx.renderer,
        graph,
        archive_cache,
        first_rows=tunables.index_first_rows,
        per_shard=tunables.rows_per_shard,
        most_shards=tunables.max_row_shards,
        redaction=None
        if redacted is None
        else describe_counts(Counter(secrets=redacted)).split(" (")[0],
        unchanged=unchanged,
        emit=emit_archive,
    )
    assert not made_archive  # each was written as it was made
    if archive_fresh is not None and (
        changed(loaded[0], archive_fresh) or not ctx.cache.archive_cache.exists()
    ):
        archive_fresh.save(ctx.cache.archive_cache)
    for rel, digest in produced.items():
        if rel in now:
            now[rel][1] = digest
    produced.update(known)
    for rel, digest in known.items():
        now[rel][1] = digest
    if now != made:
        atomic_write(
            ctx.cache.index_outputs,
            [json.dumps(now, sort_keys=True, separators=(",", ":")).encode()],
        )
    return produced, written


def _load_made(path: Path) -> dict[str, list[str]]:
    """The key and hash of each file made from cached pieces last time ({} when unreadable)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): v
        for k, v in data.items()
        if isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v)
    }
