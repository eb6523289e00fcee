"""The index page, and the cache that keeps refreshing it cheap on a large archive.

A row of the index table is a function of one session's :class:`~.graph.Summary`, and the
delegation tree a function of the archive's shape (:func:`.staleness.graph_key`).
Both are kept between builds (made under the same build key) in one file of the build
state, so an append to one session renders one row, and the tree only when a session
appeared, vanished or changed parent, sub-sessions or role.

The cache file is a JSON header line (the tree's graph fingerprint and length, then each
row's summary digest and length) followed by the tree and the rows, concatenated: loading
it is slicing one string, not decoding thousands of JSON strings.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from markupsafe import Markup

from ..model import LoadFailure
from ..redact import describe_counts
from ..render.contexts import Column, IndexPage, IndexRow, TreeNode
from ..render.html import HtmlRenderer
from ..write import atomic_write
from . import urls
from .activity import activity_of
from .graph import Graph, Summary
from .manifest import Brief

INDEX_CACHE = "index-cache"
"""File name of the cache in the build state folder."""

COLUMNS = [
    Column("kind", "Kind", "text"),
    Column("name", "Session", "text"),
    Column("role", "Role", "text"),
    Column("created", "Created", "text"),
    Column("updated", "Updated", "text"),
    Column("turns", "Turns", "number"),
    Column("tools", "Tool calls", "number"),
    Column("errors", "Errors", "number"),
    Column("status", "Last status", "text"),
]
"""The index table's columns, in the order of ``index_row.html``'s cells."""


@dataclass(slots=True)
class IndexCache:
    """Rendered index rows by summary digest, and the tree of one graph fingerprint."""

    rows: dict[str, str] = field(default_factory=dict)
    """Summary digest → the row's HTML."""
    graph: str = ""
    """The graph fingerprint ``tree`` was rendered for ("" when there is none)."""
    tree: str = ""
    """The delegation tree's HTML."""

    @classmethod
    def load(cls, path: Path) -> IndexCache:
        """The cache at ``path``, empty when it is missing or does not add up."""
        try:
            data = path.read_bytes()
            header_end = data.index(b"\n")
            header = json.loads(data[:header_end])
            body = data[header_end + 1 :].decode("utf-8", "surrogatepass")
            graph, tree_len, rows = header["graph"], header["tree"], header["rows"]
            if not (isinstance(graph, str) and isinstance(tree_len, int)):
                return cls()
            cache = cls(graph=graph, tree=body[:tree_len])
            pos = tree_len
            for digest, length in rows:
                if not (isinstance(digest, str) and isinstance(length, int) and length >= 0):
                    return cls()
                cache.rows[digest] = body[pos : pos + length]
                pos += length
            if pos != len(body):
                return cls()
        except (OSError, ValueError, KeyError, TypeError):
            return cls()
        return cache

    def save(self, path: Path) -> None:
        """Write the cache atomically (rows sorted by digest: deterministic bytes)."""
        rows = sorted(self.rows.items())
        header = {
            "graph": self.graph,
            "tree": len(self.tree),
            "rows": [[digest, len(row)] for digest, row in rows],
        }
        atomic_write(
            path,
            [
                json.dumps(header, separators=(",", ":")).encode() + b"\n",
                "".join([self.tree, *(row for _, row in rows)]).encode("utf-8", "surrogatepass"),
            ],
        )


TREE_PAGE = "tree.html"
"""The delegation tree's own page, when the index's rows are sharded."""
ROWS_FOLDER = "rows"
"""The site folder of the index's row shards."""


def row_shard_count(sessions: int, per_shard: int, most: int) -> int:
    """The number of row shards: the smallest power of two giving at most ``per_shard``
    sessions a shard, capped at ``most`` (so an append rewrites one shard, and the count
    changes only when the archive doubles)."""
    count = 1
    while count < most and sessions > count * per_shard:
        count *= 2
    return count


def row_data(summary: Summary) -> list[object]:
    """A session's row as data for the table's script (the order is ``app.js``'s ``F``)."""
    from ..render.html import short_time

    row = index_row(summary)
    meta = " · ".join(
        part
        for part in (
            f"id {row.session_id}" if row.session_id else "",
            f"v{row.version}" if row.version else "",
            f"file {row.file_name}" if row.file_name else "",
            f"imported from {row.origin}" if row.origin else "",
        )
        if part
    )
    return [
        row.kind,
        row.name,
        row.url,
        row.role,
        row.created_at,
        short_time(row.created_at),
        row.updated_at,
        short_time(row.updated_at),
        row.turns,
        row.tool_calls,
        row.errors,
        row.last_status,
        row.first_prompt,
        meta,
    ]


def row_slot(name: str) -> int:
    """The number whose remainder by a shard count is the row shard of session ``name``: a
    hash of its folder (slug), so :func:`.search.shard_of` of the folder is the same shard.
    Stable across builds; kept in the manifest (:attr:`.manifest.SourceState.slot`) so a
    build does not hash every session's name again."""
    digest = hashlib.sha256(urls.slug(name).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big")


class Named(Protocol):
    """A session's summary, or its brief (:class:`.manifest.Brief`)."""

    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


def row_shard_groups(
    summaries: list[N],
    per_shard: int,
    most: int,
    slots: Mapping[str, int] | None = None,
) -> dict[str, list[N]]:
    """The row shard files (site paths) and the sessions of each, sorted by name. A session
    goes to the shard of its name's hash (:func:`row_slot`; ``slots``: each session's, by
    name, when the caller has them)."""
    return shard_groups(
        summaries, per_shard, most, slots, lambda i, n: f"{ROWS_FOLDER}/rows-{i:04d}-of-{n:04d}.js"
    )


def shard_groups(
    summaries: list[N],
    per_shard: int,
    most: int,
    slots: Mapping[str, int] | None,
    path: Callable[[int, int], str],
) -> dict[str, list[N]]:
    """Script-tag shards of rows (the index's, and the Errors and Decisions pages'): each
    session in the shard of its name's hash, :func:`row_slot` (``slots``: each session's,
    by name, when the caller has them); ``path(index, count)``: a shard's site path. The
    shards' sessions are sorted by name."""
    count = row_shard_count(len(summaries), per_shard, most)
    groups: list[list[N]] = [[] for _ in range(count)]
    if summaries and isinstance(summaries[0], Brief):
        for brief in summaries:  # a brief carries its slot
            groups[brief.slot % count].append(brief)  # type: ignore[attr-defined]
    else:
        slot = (slots or {}).get
        for summary in summaries:
            groups[(slot(summary.name) or row_slot(summary.name)) % count].append(summary)
    by_name = operator.attrgetter("name")
    return {path(index, count): sorted(group, key=by_name) for index, group in enumerate(groups)}


def shard_bytes(rel: str, group: list[Summary]) -> bytes:
    """A row shard file: a script calling ``polyglavRows(index, rows)`` (it loads from
    ``file://`` as well as over HTTP)."""
    index = int(rel.split("rows-", 1)[1].split("-", 1)[0])
    data = json.dumps([row_data(s) for s in group], ensure_ascii=True, separators=(",", ":"))
    return f"polyglavRows({index},{data});\n".encode("ascii")


def row_shards(summaries: list[Summary], per_shard: int, most: int) -> dict[str, bytes]:
    """Every session's row as data, in script files (site path → bytes)."""
    groups = row_shard_groups(summaries, per_shard, most)
    return {rel: shard_bytes(rel, group) for rel, group in groups.items()}


def render_index(
    renderer: HtmlRenderer,
    graph: Graph,
    failures: list[LoadFailure],
    folder: Path,
    search: bool,
    redacted: int | None = None,
    cache: IndexCache | None = None,
    fingerprint: str | None = None,
    digests: dict[str, str] | None = None,
    first_rows: int | None = None,
    shards: list[str] | None = None,
) -> tuple[str, IndexCache]:
    """The index page, and the cache to keep for the next build.

    ``redacted`` is the archive's redaction count when redaction is on. ``cache`` comes
    from a build with the same key (else None): its rows and tree are reused where their
    summary digest and graph fingerprint still match (``fingerprint``: the graph's, when
    the caller has it already; ``digests``: summary digests by session name, likewise).
    The static table holds the ``first_rows`` most recent sessions (all when None), and
    ``shards`` names the row shard files holding every row (:func:`row_shards`).
    """
    cache = cache or IndexCache()
    briefs = recent_first(graph)
    fresh = IndexCache()
    rows_html = []
    for brief in briefs[:first_rows]:
        digest = (digests or {}).get(brief.name) or brief.digest
        row = cache.rows.get(digest)
        if row is None:
            row = renderer.render_index_row(index_row(graph.summaries[brief.name]))
        fresh.rows[digest] = row
        rows_html.append(Markup(row))
    fresh.graph = fingerprint or graph.key()
    if cache.graph == fresh.graph:
        fresh.tree = cache.tree
    else:
        fresh.tree = renderer.render_index_tree(delegation_tree(graph))
    html = renderer.render_index(
        IndexPage(
            rows_html=rows_html,
            tree_html=Markup("" if shards else fresh.tree),
            failures=failures,
            columns=COLUMNS,
            kinds=sorted({b.kind for b in briefs}),
            roles=sorted({b.role for b in briefs}),
            source_label=folder.name,
            search_enabled=search,
            redaction=None
            if redacted is None
            else describe_counts(Counter(secrets=redacted)).split(" (")[0],
            activity=activity_of(list(map(_CONTRIBUTION, briefs))),
            total=len(briefs),
            tree_page=TREE_PAGE if shards else "",
            shards=shards or [],
        )
    )
    return html, fresh


def recent_first(graph: Graph) -> list[Brief]:
    """The published sessions' briefs, the most recently updated first (then by name,
    descending): the index's order."""
    return sorted(graph.all.values(), key=_RECENT, reverse=True)


_RECENT = operator.itemgetter(Brief._fields.index("updated_at"), Brief._fields.index("name"))
_CONTRIBUTION = operator.itemgetter(
    *(Brief._fields.index(f) for f in ("day", "outcome", "error_days"))
)


def index_row(summary: Summary) -> IndexRow:
    """What the index table shows of a session (a function of its summary alone)."""
    return IndexRow(
        name=summary.name,
        url=urls.session_page(summary.name),
        kind=summary.kind,
        session_id=summary.session_id,
        role=summary.role,
        version=summary.version,
        created_at=summary.created_at,
        updated_at=summary.updated_at,
        turns=summary.turns,
        tool_calls=summary.tool_calls,
        errors=summary.errors,
        last_status=summary.last_status,
        first_prompt=summary.first_prompt,
        file_name="" if summary.file_name == f"{summary.name}.json" else summary.file_name,
        origin=summary.origin,
    )


def delegation_tree(graph: Graph) -> list[TreeNode]:
    """Roots (no parent in the archive) with their sub-sessions, cycle-safe."""
    shown: set[str] = set()

    def node(name: str, path: frozenset[str]) -> TreeNode:
        brief = briefs.get(name)
        cycle = name in path
        shown.add(name)
        children = [] if cycle else [node(c, path | {name}) for c in graph.children(name)]
        return TreeNode(
            name=name,
            url=urls.session_page(name) if brief else None,
            role=brief.role if brief else "",
            cycle=cycle,
            children=children,
        )

    briefs = graph.all
    roots = sorted(b.name for b in briefs.values() if not b.parent_id or b.parent_id not in briefs)
    tree = [node(r, frozenset()) for r in roots]
    # Sessions only reachable through a cycle have no root: show them too.
    for name in sorted(briefs):
        if name not in shown:
            tree.append(node(name, frozenset()))
    return tree
