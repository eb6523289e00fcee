"""Stage 5, index: the archive's ``index.html``, ``errors.html`` and ``decisions.html``
(and their row shards, ``rows/*.js`` and ``events/*.js``).

Made of the published sessions' summaries and the failures, never of a session file: rows
are cached by summary key and the delegation tree by graph key (:mod:`..index`), so an
append renders one row. A row shard or an archive-wide page whose
:func:`..staleness.outputs_key` is the last build's is not even made again.

A no-op or an append costs what changed, not a pass over every session: the sessions whose
brief is not the last build's are found by bulk comparisons
(:func:`..staleness.brief_changes`), and when the index cache is the last build's
(:func:`..staleness.journal_holds`) only their row shards are made
again, the first rows, filters and chart counts are updated from them
(:meth:`..index.Overview.since`), and so are the archive-wide pages
(:func:`..archive.update_archive_pages`) when their rows changed at all
(docs/architecture.md, "The index stage").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import operator
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from ...model import LoadFailure
from ...redact import describe_counts
from ...render.contexts import TreePage
from ...render.text import encode_display
from ...write import atomic_write
from ..archive import (
    EVENTS_FOLDER,
    PAGES,
    ArchiveCache,
    PageState,
    render_archive_pages,
    update_archive_pages,
)
from ..context import BuildContext
from ..graph import Graph
from ..index import (
    TREE_PAGE,
    IndexCache,
    delegation_tree,
    render_index,
    rolled_up,
    row_key,
    row_shard_count,
    row_shard_groups,
    row_shard_path,
    shard_bytes,
    shard_members,
)
from ..manifest import Brief, Manifest
from ..staleness import (
    BriefChanges,
    brief_changes,
    change_journal,
    events_touched,
    journal_holds,
    outputs_key,
    touched_slots,
)
from .write import write_files

if TYPE_CHECKING:
    from .plan import Census


def index(
    ctx: BuildContext,
    previous: Manifest,
    graph: Graph,
    graph_key: str,
    failures: list[LoadFailure],
    search: bool,
    census: Census | None = None,
    watched: bool = False,
) -> tuple[dict[str, str], int]:
    """Stage 5: write ``index.html`` and the archive-wide pages; their hashes by path, and
    the files written. ``census``: the plan's, which may know what changed since the last
    build (:attr:`.plan.Census.changes`). ``watched``: a build told by a watcher what
    changed (:attr:`.scan.Scan.watched`) trusts that the files it made last time are still
    there, as it trusts the sessions' folders (its rescan checks them).

    Every session is seen through its brief (:class:`..manifest.Brief`: the keys and shard
    slot computed when its summary was made); a summary is read only for a row to render
    (a new row of the first screen, the sessions of a row shard that changed)."""
    briefs = graph.all
    values = briefs.values()
    same_key = previous.key == ctx.key
    cache = IndexCache.load(ctx.cache.index_cache) if same_key else IndexCache()
    redacted = sum(map(_REDACTED, values)) if ctx.options.redactor is not None else None
    tunables = ctx.tunables
    first_rows = tunables.index_first_rows
    settings = [first_rows, tunables.rows_per_shard, tunables.max_row_shards]
    # After a build that stopped before saving its state, no file is known to be as made.
    made = _load_made(ctx.cache.index_outputs) if same_key and ctx.trust_written else {}
    if not same_key:
        changes = None
    elif census is not None and census.changes is not None and census.briefs is briefs:
        changes = census.changes
    else:
        changes = brief_changes(previous.briefs, briefs)
    new, old = (changes.new, changes.old) if changes is not None else ({}, {})
    # The caches describe the last build's sessions (the manifest's) when they were made
    # under its graph and tunables, and what they noted as changed is as the manifest has it.
    valid = (
        changes is not None
        and cache.overview is not None
        and cache.graph == previous.graph != ""
        and cache.tunables == settings
        and journal_holds(cache.journal, briefs, changes)
    )
    files = _Files(ctx, previous.extra_outputs, made, trust_site=watched)
    unchanged, emit = files.unchanged, files.emit
    shards: list[str] = []
    if len(briefs) > first_rows:
        count = row_shard_count(len(briefs), tunables.rows_per_shard, tunables.max_row_shards)
        shards = [row_shard_path(i, count) for i in range(count)]
        touched = (
            touched_slots(
                changes,
                count,
                lambda name: [
                    b for a in sorted({name, *graph.ancestors(name)}) if (b := briefs.get(a))
                ],
            )
            if valid and changes is not None
            else None
        )
        todo = [
            rel
            for i, rel in enumerate(shards)
            if touched is None
            or i in touched
            or rel not in made
            or not unchanged(rel, made[rel][0])
        ]
        # Each shard's members: from one grouping of every session when many shards are
        # made or the grouping is kept for the next build (``site watch``), else from a
        # bulk pass each (an append of ``site build``).
        members = graph.memo.row_groups.get(count)
        if members is None and (len(todo) > _FEW_SHARDS or ctx.lasting):
            members = _shard_names(graph, tunables.rows_per_shard, count)
        for rel in todo:
            i = shards.index(rel)
            group = (
                [briefs[name] for name in members[i]]
                if members is not None
                else shard_members(values, i, count)
            )
            rows = [(b, rolled_up(graph, b.name)) for b in group]
            if not unchanged(rel, outputs_key([rel], (row_key(_DIGEST(b), o) for b, o in rows))):
                emit(rel, shard_bytes(rel, [(graph.summaries[b.name], o) for b, o in rows]))
    kept = cache.overview if valid else None
    overview = kept.since(values, new, old, first_rows) if kept is not None else None
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
        first_rows,
        shards,
        overview,
    )
    fresh.tunables = settings
    fresh.journal = change_journal(changes) if same_key else {}
    emit("index.html", encode_display(page))
    del page
    if shards and not unchanged(TREE_PAGE, outputs_key(["tree"], [fresh.graph])):
        tree_html = cache.tree(fresh.graph)
        if tree_html is None:
            tree_html = ctx.renderer.render_index_tree(delegation_tree(graph))
            fresh.set_tree(fresh.graph, tree_html)
        tree = ctx.renderer.template(TREE_PAGE).render(
            page=TreePage(tree_html=Markup(tree_html), total=len(briefs))
        )
        emit(TREE_PAGE, encode_display(str(tree)))
        del tree, tree_html  # the archive pages come next (the tree's text is in ``fresh``)
    _archive_pages(ctx, graph, files, cache, fresh, _Changes(changes, valid, same_key), redacted)
    if fresh.made_tree() or (
        fresh.graph,
        fresh.rows.keys(),
        fresh.overview,
        fresh.tunables,
        fresh.pages,
        fresh.journal,
    ) != (
        cache.graph,
        cache.rows.keys(),
        cache.overview,
        cache.tunables,
        cache.pages,
        cache.journal,
    ):
        fresh.save(ctx.cache.index_cache)
    return files.finish()


def _archive_pages(
    ctx: BuildContext,
    graph: Graph,
    files: _Files,
    cache: IndexCache,
    fresh: IndexCache,
    changes: _Changes,
    redacted: int | None,
) -> None:
    """The archive-wide pages and their row shards: nothing made when no session's rows on
    them changed (each file the last build made has the key it had), made from the changed
    sessions' rows when the index cache is the last build's (:func:`..archive.update_archive_pages`),
    else from every session's (:func:`..archive.render_archive_pages`). Their states go in
    ``fresh``."""
    tunables = ctx.tunables
    valid, made = changes.valid, files.made
    touched = events_touched(changes.since) if changes.since is not None else {}
    states = cache.pages if valid else {}
    archive_files = [rel for rel in made if rel.startswith(f"{EVENTS_FOLDER}/") or rel in _PAGES]
    if valid and not touched and set(_PAGES) <= set(archive_files):
        if all(files.unchanged(rel, made[rel][0]) for rel in archive_files):
            fresh.pages = dict(states)
            return
        for rel in archive_files:  # made again below: their keys are computed there
            files.forget(rel)

    def emit_archive(rel: str, html: str) -> None:
        files.known.pop(rel, None)
        files.emit(rel, encode_display(html))

    redaction = (
        None if redacted is None else describe_counts(Counter(secrets=redacted)).split(" (")[0]
    )
    if valid and set(PAGES) <= states.keys() and fresh.overview is not None:
        updated = update_archive_pages(
            ctx.renderer,
            graph,
            states,
            touched,
            kinds=fresh.overview.kinds,
            roles=fresh.overview.roles,
            first_rows=tunables.index_first_rows,
            per_shard=tunables.rows_per_shard,
            most_shards=tunables.max_row_shards,
            redaction=redaction,
            last=files.last,
            kept=files.kept,
            unchanged=files.unchanged,
            emit=emit_archive,
        )
        if updated is not None:
            fresh.pages = updated
            return
    made_pages: dict[str, PageState] = {}
    made_archive = render_archive_pages(
        ctx.renderer,
        graph,
        ArchiveCache(ctx.cache.archive_rows, readable=changes.same_key),
        first_rows=tunables.index_first_rows,
        per_shard=tunables.rows_per_shard,
        most_shards=tunables.max_row_shards,
        redaction=redaction,
        unchanged=files.unchanged,
        emit=emit_archive,
        states=made_pages,
    )
    assert not made_archive  # each was written as it was made
    # A page not made again is as the last build made it: its state carries over.
    fresh.pages = {
        page: made_pages.get(page) or states[page]
        for page in PAGES
        if page in made_pages or page in states
    }
    with contextlib.suppress(OSError):  # the one-file cache of earlier versions
        (ctx.cache.root / "archive-cache.json").unlink()


@dataclass(slots=True)
class _Changes:
    """What changed since the last build, as the index stage sees it."""

    since: BriefChanges | None
    """:func:`..staleness.brief_changes` (None: not known, or another build key)."""
    valid: bool
    """The index cache is the last build's: it may be updated from these alone."""
    same_key: bool
    """The build key is the last build's (its caches may be read at all)."""


@dataclass(slots=True)
class _Files:
    """The stage's files: each written as soon as it is made (a full build does not hold
    every row shard's bytes at once), and the key each was made from, noted for the next
    build (:attr:`..context.CachePaths.index_outputs`)."""

    ctx: BuildContext
    recorded: Mapping[str, str]
    """The last build's files of no source → sha256 (the manifest's)."""
    made: dict[str, list[str]]
    """The key and hash of each file made of cached pieces last time."""
    now: dict[str, list[str]] = field(default_factory=dict)
    """The key (and, once known, hash) of each file made this time."""
    known: dict[str, str] = field(default_factory=dict)
    """Files found as the last build made them (not made again) → sha256."""
    produced: dict[str, str] = field(default_factory=dict)
    """Files written this time → sha256."""
    written: int = 0
    """How many of them had new bytes."""
    trust_site: bool = False
    """A file made last time is taken to be still there (no ``stat``: ``site watch``)."""

    def unchanged(self, rel: str, key: str) -> bool:
        """True when ``rel`` was made from ``key`` last time and is still as written."""
        self.now[rel] = [key, ""]
        digest = self.recorded.get(rel, "")
        if (
            self.made.get(rel) == [key, digest]
            and digest
            and (self.trust_site or (self.ctx.out / rel).is_file())
        ):
            self.known[rel] = digest
            return True
        return False

    def emit(self, rel: str, data: bytes) -> None:
        """Write one file now."""
        hashes, count = write_files(self.ctx, {rel: data}, self.recorded)
        self.produced.update(hashes)
        self.written += count

    def forget(self, rel: str) -> None:
        """``rel`` is made again after all: its key is computed again."""
        self.now.pop(rel, None)
        self.known.pop(rel, None)

    def last(self, rel: str) -> bytes | None:
        """The file the last build wrote, when it is still as written."""
        try:
            data = (self.ctx.out / rel).read_bytes()
        except OSError:
            return None
        digest = self.recorded.get(rel)
        return data if digest and hashlib.sha256(data).hexdigest() == digest else None

    def kept(self, rel: str) -> str | None:
        """The key a file was made from last time, when it is still as written."""
        key, digest = self.made.get(rel, ["", ""])
        same = digest and self.recorded.get(rel) == digest
        return key if same and (self.ctx.out / rel).is_file() else None

    def finish(self) -> tuple[dict[str, str], int]:
        """Note the key and hash of each file made of cached pieces; the stage's hashes by
        path and the files written."""
        now, produced = self.now, self.produced
        for rel, digest in produced.items():
            if rel in now:
                now[rel][1] = digest
        produced.update(self.known)
        for rel, digest in self.known.items():
            now[rel][1] = digest
        if now != self.made:
            atomic_write(
                self.ctx.cache.index_outputs,
                [json.dumps(now, sort_keys=True, separators=(",", ":")).encode()],
            )
        return produced, self.written


_FEW_SHARDS = 4
"""Up to how many row shards are made again each from its own pass over the sessions
(more: one grouping of every session)."""
_PAGES = ("errors.html", "decisions.html")
_DIGEST = operator.itemgetter(Brief._fields.index("digest"))
_REDACTED = operator.itemgetter(Brief._fields.index("redacted"))


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


def _shard_names(graph: Graph, per_shard: int, count: int) -> list[list[str]]:
    """The session names of each row shard (:func:`..index.row_shard_groups`), made in one
    pass the first time and kept with the graph's shape (:class:`..graph.ShapeMemo`): an
    append under ``site watch`` looks up its shard's members, not every session's slot."""
    memo = graph.memo
    names = memo.row_groups.get(count)
    if names is None:
        groups = row_shard_groups(list(graph.all.values()), per_shard, count)
        names = memo.row_groups[count] = [[b.name for b in group] for group in groups.values()]
    return names
