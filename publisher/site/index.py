"""The index page, and the cache that keeps refreshing it cheap on a large archive.

A row of the index table is a function of one session's :class:`~.graph.Summary`, and the
delegation tree a function of the archive's shape (:func:`.staleness.graph_key`).
Both are kept between builds (made under the same build key) in one file of the build
state, so an append to one session renders one row, and the tree only when a session
appeared, vanished or changed parent, sub-sessions or role.

The cache file is a JSON header line (the graph fingerprint, the :class:`Overview`, the
archive-wide pages' states, the tunables and journal of the build that made it, then each
row's summary digest and length) followed by the rows, concatenated: loading it is slicing
one string, not decoding thousands of JSON strings. The tree is in a file of its own
(``index-cache-tree``: its graph fingerprint on the first line), read only when used.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from itertools import compress, repeat
from pathlib import Path
from typing import Protocol, TypeVar

from markupsafe import Markup

from ..gate import FAILURE_KINDS
from ..model import LoadFailure
from ..outcome import Outcome
from ..redact import describe_counts
from ..render.contexts import Column, DelegationTree, IndexPage, IndexRow, TreeNode
from ..render.html import HtmlRenderer
from ..write import atomic_write
from . import urls
from .activity import activity_from, outcome_totals
from .archive import PageState
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
    Column("failures", "Failures", "number"),
    Column("status", "Last status", "text"),
]
"""The index table's columns, in the order of ``index_row.html``'s cells."""


@dataclass(slots=True)
class Overview:
    """What ``index.html`` shows of the whole archive besides its rows' HTML: a function
    of every session's brief, kept in the cache so that a build changing a few sessions
    updates it from theirs (:meth:`since`) instead of a pass over every session."""

    top: list[tuple[str, str]]
    """(updated_at, name) of the first rows, in the index's order (:func:`recent_first`)."""
    kinds: list[str]
    """Every session kind, sorted (the filters)."""
    roles: list[str]
    """Every role, sorted."""
    runs: dict[tuple[str, str], int]
    """Sessions by (day, outcome) (:func:`.activity.contribution`; only counts above 0)."""
    error_days: dict[str, int]
    """Errors by day (only counts above 0)."""

    @classmethod
    def of(cls, briefs: Collection[Brief], first_rows: int | None) -> Overview:
        """The overview of every session (bulk passes, no Python step per session)."""
        runs = Counter(map(_RUN, briefs))
        error_days = Counter(" ".join(filter(None, map(_ERROR_DAYS, briefs))).split())
        return cls(
            top=sorted(map(_RECENT, briefs), reverse=True)[:first_rows],
            kinds=sorted(set(map(_KIND, briefs))),
            roles=sorted(set(map(_ROLE, briefs))),
            runs=dict(runs),
            error_days=dict(error_days),
        )

    def since(
        self,
        briefs: Collection[Brief],
        now: Mapping[str, Brief],
        then: Mapping[str, Brief],
        first_rows: int | None,
    ) -> Overview | None:
        """This overview (the last build's, of the same sessions but those in ``then``, as
        they were) brought up to date with the sessions in ``now``; None when the first
        rows cannot be told from them (a first row moved down past rows not kept)."""
        if first_rows is None:
            return None
        gone = now.keys() | then.keys()
        top = [k for k in self.top if k[1] not in gone]
        top.extend(map(_RECENT, now.values()))
        top.sort(reverse=True)
        # Every session not in ``top`` ranks below the last build's last first row (when
        # it had as many: else ``top`` holds every session).
        if len(self.top) >= first_rows and (
            len(top) < first_rows or top[first_rows - 1] < self.top[-1]
        ):
            return None
        del top[first_rows:]
        same_kinds = now.keys() == then.keys() and all(
            (then[n].kind, then[n].role) == (b.kind, b.role) for n, b in now.items()
        )
        runs = Counter(self.runs)
        runs.subtract(map(_RUN, then.values()))
        runs.update(map(_RUN, now.values()))
        error_days = Counter(self.error_days)
        error_days.subtract(" ".join(filter(None, map(_ERROR_DAYS, then.values()))).split())
        error_days.update(" ".join(filter(None, map(_ERROR_DAYS, now.values()))).split())
        return Overview(
            top=top,
            kinds=self.kinds if same_kinds else sorted(set(map(_KIND, briefs))),
            roles=self.roles if same_kinds else sorted(set(map(_ROLE, briefs))),
            runs={k: n for k, n in runs.items() if n > 0},
            error_days={d: n for d, n in error_days.items() if n > 0},
        )

    def to_json(self) -> object:
        return {
            "top": self.top,
            "kinds": self.kinds,
            "roles": self.roles,
            "runs": [[d, o, n] for (d, o), n in sorted(self.runs.items())],
            "error_days": sorted(self.error_days.items()),
        }

    @classmethod
    def from_json(cls, data: object) -> Overview | None:
        """The overview :meth:`to_json` gave, or None when ``data`` is not one."""
        try:
            assert isinstance(data, dict)
            top = [(str(u), str(n)) for u, n in data["top"]]
            runs = {(str(d), str(o)): int(n) for d, o, n in data["runs"]}
            error_days = {str(d): int(n) for d, n in data["error_days"]}
            kinds = [str(k) for k in data["kinds"]]
            roles = [str(r) for r in data["roles"]]
        except (AssertionError, KeyError, TypeError, ValueError):
            return None
        return cls(top, kinds, roles, runs, error_days)


@dataclass(slots=True)
class IndexCache:
    """Rendered index rows by summary digest, the :class:`Overview` and the state it was
    made in, and the tree of one graph fingerprint (in a file of its own, read only when
    used: a sharded index needs it only when the archive's shape changed)."""

    rows: dict[str, str] = field(default_factory=dict)
    """Summary digest → the row's HTML."""
    graph: str = ""
    """The graph fingerprint of the build that made it ("" when there is none)."""
    overview: Overview | None = None
    """The index's overview as that build made it."""
    tunables: list[int] = field(default_factory=list)
    """The first rows, rows a shard and most shards it was made with."""
    pages: dict[str, PageState] = field(default_factory=dict)
    """The archive-wide pages' states as that build made them (those it knows)."""
    journal: dict[str, str] = field(default_factory=dict)
    """Session name → summary digest ("" when removed) of each session that build changed
    from the one before: a build tells from it that the cache is its last build's (a build
    that stopped before saving its state made a cache the state does not match)."""
    tree_path: Path | None = None
    """Where the tree is kept."""
    _tree: tuple[str, str] | None = None
    """(graph fingerprint, tree HTML), once read or set."""
    _tree_new: bool = False
    """True when the tree was made by this build (:meth:`save` writes it)."""

    def tree(self, graph: str) -> str | None:
        """The delegation tree's HTML for graph fingerprint ``graph``, when it is kept."""
        if self._tree is None and self.tree_path is not None:
            try:
                text = self.tree_path.read_bytes().decode("utf-8", "surrogatepass")
                head, _, body = text.partition("\n")
                self._tree = (head, body)
            except (OSError, ValueError):
                self._tree = ("", "")
        return self._tree[1] if self._tree is not None and self._tree[0] == graph else None

    def set_tree(self, graph: str, html: str, new: bool = True) -> None:
        """Keep ``html`` as the tree of graph fingerprint ``graph`` (``new``: made by this
        build, written by :meth:`save`)."""
        self._tree = (graph, html)
        self._tree_new = new

    def made_tree(self) -> bool:
        """True when this build made the tree (the cache needs saving)."""
        return self._tree_new

    @classmethod
    def load(cls, path: Path) -> IndexCache:
        """The cache at ``path``, empty when it is missing or does not add up."""
        empty = cls(tree_path=_tree_path(path))
        try:
            data = path.read_bytes()
            header_end = data.index(b"\n")
            header = json.loads(data[:header_end])
            body = data[header_end + 1 :].decode("utf-8", "surrogatepass")
            graph, rows, journal = header["graph"], header["rows"], header["journal"]
            tunables = header["tunables"]
            if not (isinstance(graph, str) and isinstance(journal, dict)):
                return empty
            cache = cls(
                graph=graph,
                overview=Overview.from_json(header["overview"]),
                tunables=[int(t) for t in tunables],
                journal={str(k): str(v) for k, v in journal.items()},
                tree_path=empty.tree_path,
            )
            for page, data in header["pages"].items():
                state = PageState.from_json(data)
                if state is not None:
                    cache.pages[str(page)] = state
            pos = 0
            for digest, length in rows:
                if not (isinstance(digest, str) and isinstance(length, int) and length >= 0):
                    return empty
                cache.rows[digest] = body[pos : pos + length]
                pos += length
            if pos != len(body):
                return empty
        except (OSError, ValueError, KeyError, TypeError):
            return empty
        return cache

    def save(self, path: Path) -> None:
        """Write the cache atomically (rows sorted by digest: deterministic bytes), and the
        tree when it was set (:meth:`set_tree`)."""
        if self._tree is not None and self.tree_path is None:
            self.tree_path = _tree_path(path)
        if self._tree_new and self._tree is not None and self.tree_path is not None:
            head, html = self._tree
            atomic_write(self.tree_path, [f"{head}\n{html}".encode("utf-8", "surrogatepass")])
        rows = sorted(self.rows.items())
        header = {
            "graph": self.graph,
            "overview": self.overview.to_json() if self.overview is not None else None,
            "tunables": self.tunables,
            "pages": {page: state.to_json() for page, state in sorted(self.pages.items())},
            "journal": dict(sorted(self.journal.items())),
            "rows": [[digest, len(row)] for digest, row in rows],
        }
        atomic_write(
            path,
            [
                json.dumps(header, separators=(",", ":")).encode() + b"\n",
                "".join(row for _, row in rows).encode("utf-8", "surrogatepass"),
            ],
        )


def _tree_path(path: Path) -> Path:
    return path.with_name(f"{path.name}-tree")


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


_NOTHING = Outcome()
"""What nothing below a session did (the roll-up of a session that calls none)."""


def row_data(summary: Summary, below: Outcome = _NOTHING) -> list[object]:
    """A session's row as data for the table's script (the order is ``app.js``'s ``F``;
    ``below``: what its sub-sessions did, :func:`rolled_up`)."""
    from ..render.html import short_time

    row = index_row(summary, below)
    meta = " · ".join(
        part
        for part in (
            f"id {row.session_id}" if row.session_id else "",
            f"v{row.version}" if row.version else "",
            row.origin.split(": ", 1)[0],
            f"file {row.file_name}" if row.file_name else "",
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
        row.failures + row.failures_below,
        row.last_status,
        row.first_prompt,
        meta,
        row.failures,
        row.failure_note,
        1 if row.sub else 0,
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
    return shard_groups(summaries, per_shard, most, slots, row_shard_path)


def row_shard_path(index: int, count: int) -> str:
    """The site path of row shard ``index`` of ``count``."""
    return f"{ROWS_FOLDER}/rows-{index:04d}-of-{count:04d}.js"


def shard_members(briefs: Collection[Brief], index: int, count: int) -> list[Brief]:
    """The sessions of shard ``index`` of ``count`` (as :func:`shard_groups` makes them),
    sorted by name: bulk passes over ``briefs``, for a build that needs a few shards."""
    slots = map(operator.mod, map(_SLOT, briefs), repeat(count))
    members = compress(briefs, map(operator.eq, slots, repeat(index)))
    return sorted(members, key=operator.attrgetter("name"))


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


def shard_bytes(rel: str, group: list[tuple[Summary, Outcome]]) -> bytes:
    """A row shard file: a script calling ``polyglavRows(index, rows)`` (it loads from
    ``file://`` as well as over HTTP); ``group``: each session's summary and what its
    sub-sessions did (:func:`rolled_up`)."""
    index = int(rel.split("rows-", 1)[1].split("-", 1)[0])
    rows = [row_data(s, below) for s, below in group]
    data = json.dumps(rows, ensure_ascii=True, separators=(",", ":"))
    return f"polyglavRows({index},{data});\n".encode("ascii")


def failure_note(own: tuple[tuple[str, int], ...], below: Outcome) -> str:
    """What a row's failures are, said in a line (its cell's title): ``2 failed calls, 1
    error; 4 more in its 2 sub-sessions``; "" when nothing failed."""
    from ..render.view import finding_count, plural

    said = ", ".join(finding_count(kind, n) for kind, n in own if kind in FAILURE_KINDS)
    if below.failed:
        more = f"{below.failed:,} more in its {plural(below.sessions, 'sub-session')}"
        said = f"{said}; {more}" if said else f"none of its own; {more}"
    return said


def rolled_up(graph: Graph, name: str) -> Outcome:
    """What the sessions below ``name`` did, for its index row (the one rule of the index's
    roll-up: :meth:`.graph.Graph.below`); nothing for a session that calls none."""
    return graph.below(name) if graph.children(name) else _NOTHING


def row_key(digest: str, below: Outcome) -> str:
    """The key of a session's index row (its HTML, its data in a row shard): its summary's
    ``digest`` and, when sessions are below it, their failures (the row shows them)."""
    if not below.sessions:
        return digest
    counts = ",".join(f"{kind}={n}" for kind, n in below.failures)
    return f"{digest}:{below.sessions}:{counts}"


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
    overview: Overview | None = None,
) -> tuple[str, IndexCache]:
    """The index page, and the cache to keep for the next build.

    ``redacted`` is the archive's redaction count when redaction is on. ``cache`` comes
    from a build with the same key (else None): its rows and tree are reused where their
    summary digest and graph fingerprint still match (``fingerprint``: the graph's, when
    the caller has it already; ``digests``: summary digests by session name, likewise).
    The static table holds the ``first_rows`` most recent sessions (all when None), and
    ``shards`` names the row shard files holding every row (:func:`shard_bytes`); the
    delegation tree is then on a page of its own, and not made here. ``overview``: the
    archive's :class:`Overview` when the caller has it (else made from every brief).
    """
    cache = cache or IndexCache()
    briefs = graph.all
    if overview is None:
        overview = Overview.of(briefs.values(), first_rows)
    fresh = IndexCache(overview=overview, tree_path=cache.tree_path)
    rows_html = []
    first = [briefs[name] for _, name in overview.top] if first_rows is not None else []
    if first_rows is None:
        first = recent_first(graph)
    for brief in first:
        below = rolled_up(graph, brief.name)
        digest = row_key((digests or {}).get(brief.name) or brief.digest, below)
        row = cache.rows.get(digest)
        if row is None:
            row = renderer.render_index_row(index_row(graph.summaries[brief.name], below))
        fresh.rows[digest] = row
        rows_html.append(Markup(row))
    fresh.graph = fingerprint or graph.key()
    tree = ""
    if not shards:
        kept = cache.tree(fresh.graph)
        tree = kept if kept is not None else renderer.render_index_tree(delegation_tree(graph))
        fresh.set_tree(fresh.graph, tree, new=kept is None)
    html = renderer.render_index(
        IndexPage(
            rows_html=rows_html,
            tree_html=Markup(tree),
            failures=failures,
            columns=COLUMNS,
            kinds=overview.kinds,
            roles=overview.roles,
            source_label=folder.name,
            search_enabled=search,
            redaction=None
            if redacted is None
            else describe_counts(Counter(secrets=redacted)).split(" (")[0],
            activity=activity_from(Counter(overview.runs), Counter(overview.error_days)),
            total=len(briefs),
            outcomes=outcome_totals(overview.runs),
            tree_page=TREE_PAGE if shards else "",
            shards=shards or [],
        )
    )
    return html, fresh


def recent_first(graph: Graph) -> list[Brief]:
    """The published sessions' briefs, the most recently updated first (then by name,
    descending): the index's order."""
    return sorted(graph.all.values(), key=_RECENT, reverse=True)


def _field(name: str) -> int:
    return Brief._fields.index(name)


_RECENT = operator.itemgetter(_field("updated_at"), _field("name"))
_SLOT = operator.itemgetter(_field("slot"))
_RUN = operator.itemgetter(_field("day"), _field("outcome"))
_ERROR_DAYS = operator.itemgetter(_field("error_days"))
_KIND = operator.itemgetter(_field("kind"))
_ROLE = operator.itemgetter(_field("role"))


def index_row(summary: Summary, below: Outcome = _NOTHING) -> IndexRow:
    """What the index table shows of a session: a function of its summary and of what its
    sub-sessions did (``below``, :func:`rolled_up`: their failures count in its row)."""
    own = Outcome(failures=summary.failures).failed
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
        failures=own,
        failures_below=below.failed,
        failure_note=failure_note(summary.failures, below),
        sub=bool(summary.parent_id),
        last_status=summary.last_status,
        first_prompt=summary.first_prompt,
        file_name="" if summary.file_name == f"{summary.name}.json" else summary.file_name,
        origin=summary.origin,
    )


def delegation_tree(graph: Graph) -> DelegationTree:
    """The families of delegation, cycle-safe: each session without a parent in the archive
    that has sub-sessions or names a parent (one not in the archive), with its sub-sessions;
    then the sessions only reachable through a cycle. The sessions in no family are counted,
    not listed: they are the index's rows already."""
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
    tree: list[TreeNode] = []
    standalone = 0
    for root in sorted(b.name for b in briefs.values() if b.parent_id not in briefs):
        family = node(root, frozenset())
        if family.children or briefs[root].parent_id:
            tree.append(family)
        else:
            standalone += 1
    # Sessions only reachable through a cycle have no root: show them too.
    for name in sorted(briefs):
        if name not in shown:
            tree.append(node(name, frozenset()))
    return DelegationTree(tree, standalone)
