"""The index page: the archive's most recent sessions, its filters, its activity, its row
shards and its delegation tree, each asked of the catalog (:mod:`.catalog`).

A row of the index table is a function of one session's :class:`~.summary.Summary`: its data
(:func:`row_data`, for the row shards) is made when the session is scanned and kept in the
catalog, and its HTML (for the first screen) is rendered once and kept there too, so an
append renders one row. The first screen is the most recent sessions (an indexed query, not
a sort of every session), the filters and the activity chart are grouped counts, and a row
shard is the kept data of its sessions joined: no build holds a table of every session.
The delegation tree is a function of the archive's shape (:func:`.staleness.graph_key`),
kept in the catalog under that key.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypeVar

from markupsafe import Markup

from ..gate import FAILURE_KINDS
from ..model import LoadFailure
from ..outcome import Outcome
from ..redact import describe_counts
from ..render import view
from ..render.contexts import Column, DelegationTree, IndexPage, IndexRow, TreeNode
from ..render.html import HtmlRenderer
from ..usage import spend_of_groups
from . import spending, urls
from .activity import activity_from, outcome_totals
from .catalog import Catalog
from .graph import Graph
from .spending import Sums
from .summary import Summary

COLUMNS = [
    Column("kind", "Kind", "text"),
    Column("name", "Session", "text"),
    Column("role", "Role", "text"),
    Column("created", "Created", "text"),
    Column("updated", "Updated", "text"),
    Column("turns", "Turns", "number"),
    Column("tools", "Tool calls", "number"),
    Column("failures", "Failures", "number"),
    Column("tokens", "Tokens", "number"),
    Column("cost", "Cost", "number"),
    Column("status", "Last status", "text"),
]
"""The index table's columns, in the order of ``index_row.html``'s cells."""

TREE_PAGE = "tree.html"
"""The delegation tree's own page, when the index's rows are sharded."""


_NOTHING = Outcome()
"""What nothing below a session did (the roll-up of a session that calls none)."""


def row_data(summary: Summary, below: Outcome = _NOTHING, orphan: bool = False) -> list[object]:
    """A session's row as data for the table's script (the order is ``app.js``'s ``F``;
    ``below`` and ``orphan`` as :func:`index_row` takes them)."""
    from ..render.html import short_time

    row = index_row(summary, below, orphan)
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
        -1 if row.tokens is None else row.tokens,
        -1 if row.cost_micro is None else row.cost_micro,
        row.cost,
    ]


def row_json(summary: Summary, below: Outcome = _NOTHING, orphan: bool = False) -> str:
    """:func:`row_data` as the JSON a row shard holds (ASCII: surrogates escaped). The scan
    keeps each session's without ``below``, its parent taken to be in the archive; the
    index stage makes again those of the sessions that have sub-sessions
    (:func:`rolled_up`) and of those whose parent is missing."""
    return json.dumps(row_data(summary, below, orphan), ensure_ascii=True, separators=(",", ":"))


def shard_bytes(index: int, rows: list[str]) -> bytes:
    """A row shard file: a script calling ``polyglavRows(index, rows)`` (it loads from
    ``file://`` as well as over HTTP); ``rows``: each session's :func:`row_json`, by name."""
    return f"polyglavRows({index},[{','.join(rows)}]);\n".encode("ascii")


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


def index_row(summary: Summary, below: Outcome = _NOTHING, orphan: bool = False) -> IndexRow:
    """What the index table shows of a session: a function of its summary, of what its
    sub-sessions did (``below``, :func:`rolled_up`: their failures count in its row) and of
    whether the parent it names is missing from the archive (``orphan``: then nothing above
    counts it, and its row is a root's, not behind the sub-sessions toggle)."""
    own = Outcome(failures=summary.failures).failed
    spend = spend_of_groups(summary.usage)
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
        sub=bool(summary.parent_id) and not orphan,
        last_status=summary.last_status,
        first_prompt=summary.first_prompt,
        file_name="" if summary.file_name == f"{summary.name}.json" else summary.file_name,
        origin=summary.origin,
        tokens=spend.tokens.total if spend.tokens is not None else None,
        cost=view.cost_line(spend),
        cost_micro=spend.micro_usd,
    )


@dataclass(slots=True)
class PageCounts:
    """What an archive-wide page shows of all its rows besides the rows themselves."""

    sessions: int = 0
    """Sessions with rows on the page."""
    rows: int = 0
    """Its rows."""
    values: dict[str, int] = field(default_factory=dict)
    """Its rows by filter value (an error's code, a decision)."""


@dataclass(slots=True)
class Overview:
    """What the index and the archive-wide pages show of the whole archive besides their
    rows: counts of the published sessions. Made with grouped queries the first time
    (:meth:`of`), then brought up to date from the sessions a build set, dropped or
    published otherwise (:meth:`since`: their rows then and now), and kept in the catalog:
    an append does not count every session again."""

    total: int = 0
    """Published sessions."""
    kinds: dict[str, int] = field(default_factory=dict)
    """Sessions by kind (the filters)."""
    roles: dict[str, int] = field(default_factory=dict)
    """Sessions by role."""
    runs: dict[tuple[str, str], int] = field(default_factory=dict)
    """Sessions by (day, outcome) (:func:`.activity.contribution`)."""
    error_days: dict[str, int] = field(default_factory=dict)
    """Failures by day (the Failures page's rows, ``errors.html``)."""
    redacted: int = 0
    """Secrets redacted across the sessions."""
    pages: dict[str, PageCounts] = field(default_factory=dict)
    """The archive-wide pages' counts, by page."""
    spend: Sums = field(default_factory=dict)
    """Tokens, cost and unpriced tokens by (day, role, model) (:mod:`.spending`: the
    activity chart's tokens and cost)."""

    KEPT = "overview-2"
    """Its name in the catalog's kept texts (the number is its JSON's version)."""

    @classmethod
    def of(cls, catalog: Catalog) -> Overview:
        """The overview of every published session."""
        overview = cls()
        overview.add(catalog, "all", 1)
        return overview

    @classmethod
    def since(cls, catalog: Catalog, kept: str) -> Overview:
        """The last build's overview (``kept``, its JSON) brought up to date."""
        overview = cls.from_json(json.loads(kept))
        overview.add(catalog, "was", -1)
        overview.add(catalog, "now", 1)
        return overview

    def add(self, catalog: Catalog, side: str, sign: int) -> None:
        """Count in (``sign`` 1) or out (-1) the sessions of :meth:`.catalog.Catalog.counts_of`."""
        pages = {
            page: self.pages.setdefault(page, PageCounts()) for page in ("errors", "decisions")
        }
        for kind, role, day, outcome, errors, decisions, redacted, spend in catalog.counts_of(side):
            self.total += sign
            _count(self.kinds, kind, sign)
            _count(self.roles, role, sign)
            _count(self.runs, (day, outcome), sign)
            self.redacted += sign * redacted
            for page, rows in (("errors", errors), ("decisions", decisions)):
                if rows:
                    pages[page].sessions += sign
                    pages[page].rows += sign * rows
            if spend is not None:
                spending.count(self.spend, role, json.loads(spend), sign)
        for page, value, when in catalog.event_counts_of(side):
            _count(pages[page].values, value, sign)
            if page == "errors" and when:
                _count(self.error_days, when[:10], sign)

    def to_json(self) -> str:
        return json.dumps(
            {
                "total": self.total,
                "kinds": self.kinds,
                "roles": self.roles,
                "runs": [[day, outcome, n] for (day, outcome), n in sorted(self.runs.items())],
                "error_days": self.error_days,
                "redacted": self.redacted,
                "pages": {
                    page: [c.sessions, c.rows, c.values] for page, c in sorted(self.pages.items())
                },
                "spend": [[*key, *sums] for key, sums in sorted(self.spend.items())],
            },
            ensure_ascii=True,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Overview:
        return cls(
            total=int(data["total"]),
            kinds=dict(data["kinds"]),
            roles=dict(data["roles"]),
            runs={(day, outcome): n for day, outcome, n in data["runs"]},
            error_days=dict(data["error_days"]),
            redacted=int(data["redacted"]),
            pages={
                page: PageCounts(sessions, rows, dict(values))
                for page, (sessions, rows, values) in data["pages"].items()
            },
            spend={(day, role, model): (t, p, u) for day, role, model, t, p, u in data["spend"]},
        )


K = TypeVar("K")


def _count(counts: dict[K, int], key: K, sign: int) -> None:
    """Count ``key`` in or out of ``counts`` (a count that falls to 0 goes)."""
    n = counts.get(key, 0) + sign
    if n:
        counts[key] = n
    else:
        del counts[key]


def overview_of(catalog: Catalog, *, full: bool) -> Overview:
    """The archive's :class:`Overview`: the last build's brought up to date, else (``full``,
    or none kept) counted again; kept for the next build."""
    kept = None if full else catalog.kept(Overview.KEPT, "")
    overview = Overview.since(catalog, kept) if kept is not None else Overview.of(catalog)
    catalog.keep(Overview.KEPT, "", overview.to_json())
    return overview


def redaction_note(redacted: int | None) -> str | None:
    """The archive's redaction note (``12 secrets redacted``), None when redaction is off."""
    if redacted is None:
        return None
    return describe_counts(Counter(secrets=redacted)).split(" (")[0]


def first_rows_html(
    renderer: HtmlRenderer, catalog: Catalog, limit: int, graph: Graph
) -> list[Markup]:
    """The HTML of the ``limit`` most recently updated sessions' rows (then by name,
    descending), each rendered once and kept in the catalog; the row of a session with
    sessions below it counts what they did (:func:`rolled_up`, asked of ``graph``) and is
    rendered each time (never kept: they may have changed)."""
    rows = []
    for file_name, name, html, calls, orphan in catalog.recent(limit):
        below = rolled_up(graph, name) if calls else _NOTHING
        if html is None or below.sessions or orphan:
            summary = catalog.summary_of(file_name)
            assert summary is not None
            made = renderer.render_index_row(index_row(summary, below, orphan))
            if not below.sessions and not orphan:
                catalog.set_row_html(file_name, made)
            html = made
        rows.append(Markup(html))
    return rows


def shard_rows(catalog: Catalog, graph: Graph, index: int, count: int) -> list[str]:
    """The row data (JSON) of row shard ``index`` of ``count``: each session's as the scan
    kept it, or made again with what the sessions below it did (:func:`rolled_up`)."""
    rows = []
    for file_name, name, row, calls, orphan in catalog.shard_rows(index, count):
        below = rolled_up(graph, name) if calls else _NOTHING
        if below.sessions or orphan:
            summary = catalog.summary_of(file_name)
            assert summary is not None
            row = row_json(summary, below, orphan)
        rows.append(row)
    return rows


def render_index(
    renderer: HtmlRenderer,
    catalog: Catalog,
    overview: Overview,
    failures: list[LoadFailure],
    *,
    source_label: str,
    search: bool,
    redacted: int | None,
    first_rows: int,
    shards: list[str],
    tree_html: str,
    graph: Graph,
) -> str:
    """The index page: the first ``first_rows`` rows as HTML, every row in ``shards`` (the
    delegation tree then on a page of its own), else ``tree_html`` inline."""
    return renderer.render_index(
        IndexPage(
            rows_html=first_rows_html(renderer, catalog, first_rows, graph),
            tree_html=Markup(tree_html),
            failures=failures,
            columns=COLUMNS,
            kinds=sorted(overview.kinds),
            roles=sorted(overview.roles),
            source_label=source_label,
            search_enabled=search,
            redaction=redaction_note(redacted),
            activity=activity_from(
                Counter(overview.runs), Counter(overview.error_days), spend=overview.spend
            ),
            total=overview.total,
            outcomes=outcome_totals(overview.runs),
            tree_page=TREE_PAGE if shards else "",
            shards=shards,
        )
    )


def delegation_tree(graph: Graph) -> DelegationTree:
    """The families of delegation, cycle-safe: each session without a parent in the archive
    that has sub-sessions or names a parent (one not in the archive), with its sub-sessions;
    then the sessions only reachable through a cycle. The sessions in no family are counted,
    not listed: they are the index's rows already."""
    shown: set[str] = set()

    def node(name: str, path: frozenset[str]) -> TreeNode:
        found = graph.node(name)
        cycle = name in path
        shown.add(name)
        children = [] if cycle else [node(c, path | {name}) for c in graph.children(name)]
        return TreeNode(
            name=name,
            url=urls.session_page(name) if found is not None else None,
            role=found.role if found is not None else "",
            cycle=cycle,
            children=children,
        )

    catalog = graph.catalog
    tree = [node(root, frozenset()) for root in catalog.family_roots()]
    standalone = catalog.count_roots() - len(tree)
    # Sessions only reachable through a cycle have no root: show them too.
    for name in catalog.with_parent_present():
        if name not in shown:
            tree.append(node(name, frozenset()))
    return DelegationTree(tree, standalone)
