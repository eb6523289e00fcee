"""Stage 5, index: the archive's ``index.html``, ``errors.html`` and ``decisions.html``, their
row shards (``rows/*.js`` and ``events/*.js``) and ``tree.html``.

Made of the catalog, never of a session file, and streamed from its queries: the first
rows, filters, counts and activity chart are indexed or grouped queries, a row shard is its
sessions' kept rows joined (:mod:`..index`, :mod:`..archive`). So that an append costs what
it changes rather than a pass over every session, only the row shards holding a session
this build set or dropped are made again (:meth:`..catalog.Catalog.touched_lanes`; the
others keep the file the last build wrote, checked present), and the delegation tree only
when the archive's shape changed (:func:`..staleness.graph_key`). Everything is made again
when the build key or the index's options changed, when the catalog is new, or after a
build that stopped before committing (its files may not be the catalog's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from markupsafe import Markup

from ...model import LoadFailure
from ...render.contexts import TreePage
from ...render.text import encode_display
from .. import urls
from ..archive import PAGES, render_archive_pages
from ..catalog import Catalog
from ..context import BuildContext
from ..graph import Graph
from ..index import (
    TREE_PAGE,
    delegation_tree,
    overview_of,
    redaction_note,
    render_index,
    shard_bytes,
    shard_rows,
)
from .write import write_files


def options_of(ctx: BuildContext, search: bool) -> str:
    """The options the index files are made with (kept in the catalog: when they change,
    every index file is made again)."""
    t = ctx.tunables
    return f"{ctx.key}:{search}:{t.index_first_rows}:{t.rows_per_shard}:{t.max_row_shards}"


def index(
    ctx: BuildContext,
    catalog: Catalog,
    graph_key: str,
    failures: list[LoadFailure],
    search: bool,
    *,
    watched: bool = False,
) -> tuple[dict[str, str], int, int]:
    """Stage 5: write the index files; their hashes by path (those made and those kept),
    the files written, and how many sessions are published. ``watched``: a build told by a watcher what changed
    (:attr:`.scan.Scan.watched`) trusts that the files it made last time are still there,
    as it trusts the sessions' folders (its rescan checks them)."""
    tunables = ctx.tunables
    first_rows = tunables.index_first_rows
    options = options_of(ctx, search)
    full = (
        catalog.fresh
        or catalog.meta.key != ctx.key
        or catalog.meta.index != options
        or not ctx.trust_written
    )
    files = _Files(ctx, catalog.outputs_of(""), trust_site=watched)
    graph = Graph(catalog)  # (the published sessions after the render)
    overview = overview_of(catalog, full=full)
    redacted = overview.redacted if ctx.options.redactor is not None else None
    count = (
        urls.row_shard_count(overview.total, tunables.rows_per_shard, tunables.max_row_shards)
        if overview.total > first_rows
        else 0
    )
    shards = [urls.row_shard_path(i, count) for i in range(count)]
    todo = _todo(files, shards, None if full else _lanes(_touched(catalog, graph), count))
    for i in range(count):
        if i in todo:
            files.emit(shards[i], shard_bytes(i, shard_rows(catalog, graph, i, count)))
    tree_html = ""
    if shards:
        if full or catalog.meta.graph != graph_key or not files.keeps(TREE_PAGE):
            tree = ctx.renderer.template(TREE_PAGE).render(
                page=TreePage(tree_html=Markup(_tree(ctx, graph, graph_key)), total=overview.total)
            )
            files.emit(TREE_PAGE, encode_display(str(tree)))
    else:
        tree_html = _tree(ctx, graph, graph_key)
    page = render_index(
        ctx.renderer,
        catalog,
        overview,
        failures,
        source_label=ctx.folder.name,
        search=search,
        redacted=redacted,
        first_rows=first_rows,
        shards=shards,
        tree_html=tree_html,
        graph=graph,
    )
    files.emit("index.html", encode_display(page))
    del page

    # The archive-wide pages: made again when a session's rows on them may have changed,
    # or what every page shows (the filters, the redaction note) did.
    kinds, roles = sorted(overview.kinds), sorted(overview.roles)
    shown = json.dumps([kinds, roles, redaction_note(redacted)])
    same_shown = catalog.kept("filters", options) == shown
    # A session's rows there may have changed: what it touched, asked of the catalog as
    # needed (a full build touches every lane: they are never gathered in a set).
    pages = [
        page
        for page in PAGES
        if full
        or not same_shown
        or not files.keeps(f"{page}.html")
        or next(catalog.touched_event_lanes(page), None) is not None
    ]

    def event_shards(page: str, count: int) -> Collection[int] | None:
        if full:
            return None
        paths = [urls.event_shard_path(page, i, count) for i in range(count)]
        return _todo(files, paths, _lanes(catalog.touched_event_lanes(page), count))

    render_archive_pages(
        ctx.renderer,
        catalog,
        overview.pages,
        kinds=kinds,
        roles=roles,
        first_rows=first_rows,
        per_shard=tunables.rows_per_shard,
        most_shards=tunables.max_row_shards,
        redaction=redaction_note(redacted),
        pages=pages,
        shards=event_shards,
        emit=lambda rel, text: files.emit(rel, encode_display(text)),
    )
    if not same_shown:
        catalog.keep("filters", options, shown)
    return (*files.finish(), overview.total)


def _tree(ctx: BuildContext, graph: Graph, graph_key: str) -> str:
    """The delegation tree's HTML, kept in the catalog under the graph key."""
    html = graph.catalog.kept("tree", graph_key)
    if html is None:
        html = ctx.renderer.render_index_tree(delegation_tree(graph))
        graph.catalog.keep("tree", graph_key, html)
    return html


def _touched(catalog: Catalog, graph: Graph) -> set[int]:
    """The lanes of the sessions this build set or dropped, of the sessions above them
    (a row counts the failures of the sessions below it: :func:`..index.rolled_up`; a
    gone session's callers are found by the parent its last row named) and of those naming
    them as parent (whether a row is behind the sub-sessions toggle turns on its parent
    being in the archive: :func:`..index.index_row`'s ``orphan``)."""
    lanes = set(catalog.touched_lanes())
    names: set[str] = set()
    for name, parent in catalog.touched_names():
        names.add(name)
        if parent:
            names.add(parent)
    above = set(names)
    for name in sorted(names):
        above |= graph.ancestors(name)
        above.update(graph.children(name))
    return lanes | catalog.lanes_of(sorted(above))


def _lanes(lanes: Iterable[int], count: int) -> set[int]:
    """The shards (of ``count``) holding the sessions of ``lanes``."""
    return {lane % count for lane in lanes} if count else set()


_SHARD_RE = re.compile(r"-of-(\d{4})\.js\Z")


def _todo(files: _Files, paths: list[str], touched: set[int] | None) -> set[int]:
    """The shards among ``paths`` to make: ``touched`` (None: every one), every one when the
    last build made another count of them, and any whose file is not as it was made."""
    if touched is None or not paths:
        return set(range(len(paths)))
    prefix = paths[0].rsplit("-", 3)[0]
    last = {
        rel
        for rel in files.recorded
        if rel.startswith(prefix + "-") and _SHARD_RE.search(rel) is not None
    }
    if last != set(paths):
        return set(range(len(paths)))
    return {i for i, rel in enumerate(paths) if i in touched or not files.keeps(rel)}


@dataclass(slots=True)
class _Files:
    """The stage's files: each written as soon as it is made (a full build does not hold
    every row shard's bytes at once), and those kept as the last build made them."""

    ctx: BuildContext
    recorded: Mapping[str, str]
    """The last build's files of no source → sha256 (the catalog's)."""
    trust_site: bool = False
    """A file made last time is taken to be still there (no ``stat``: ``site watch``)."""
    produced: dict[str, str] = field(default_factory=dict)
    """Files written (or found as they are) this time → sha256."""
    written: int = 0
    """How many of them had new bytes."""

    def keeps(self, rel: str) -> bool:
        """True when ``rel`` is as the last build made it (present, its hash recorded):
        it is kept as it is."""
        digest = self.recorded.get(rel)
        if digest is None or not (self.trust_site or (self.ctx.out / rel).is_file()):
            return False
        self.produced.setdefault(rel, digest)
        return True

    def emit(self, rel: str, data: bytes) -> None:
        """Write one file now."""
        hashes, count = write_files(self.ctx, {rel: data}, self.recorded)
        self.produced.update(hashes)
        self.written += count

    def finish(self) -> tuple[dict[str, str], int]:
        """The stage's files (those kept as they are included) and the files written."""
        return self.produced, self.written
