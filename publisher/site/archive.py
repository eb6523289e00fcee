"""The archive-wide pages: every error (``errors.html``) and every permission decision
(``decisions.html``) of every session, and the cache that keeps them cheap to refresh.

A session's rows on both pages are a function of its :class:`~.graph.Summary` alone
(its ``error_events`` and ``decision_events``, attributed to turns and tool calls by
:mod:`publisher.audit` when the session was scanned), so they are cached by
:func:`.staleness.archive_rows_key`: an append renders the rows of the session it changed,
and the pages are the cached rows merged in order.

Order: errors newest first; decisions refusals first (denied, declined), then every other
decision, each group newest first. Events without a readable time come last.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from markupsafe import Markup

from ..render.contexts import ArchivePage, EventRow
from ..render.html import HtmlRenderer
from ..write import atomic_write
from . import urls
from .graph import Graph, Summary
from .manifest import Brief
from .staleness import outputs_key

ARCHIVE_CACHE = "archive-cache.json"
"""File name of the cache in the build state folder."""
PAGES = ("errors", "decisions")
"""The archive-wide pages (``<name>.html``, rows by ``<name>_row.html``)."""
REFUSALS = ("denied", "declined")
"""Decisions listed first on the Decisions page."""

Row = tuple[str, str]
"""(sort key, row HTML): rows sort by key, ascending."""


@dataclass(slots=True)
class ArchiveCache:
    """Each session's rendered rows of each page, by :func:`.staleness.archive_rows_key`."""

    rows: dict[str, dict[str, list[Row]]] = field(default_factory=dict)
    """Page name → row key → the session's rows."""

    @classmethod
    def load(cls, path: Path) -> ArchiveCache:
        """The cache at ``path``, empty when it is missing or not one."""
        try:
            data = json.loads(path.read_bytes())
            cache = cls()
            for page in PAGES:
                by_key = data[page]
                if not isinstance(by_key, dict):
                    return cls()
                cache.rows[page] = {
                    str(key): [(str(k), str(h)) for k, h in rows] for key, rows in by_key.items()
                }
        except (OSError, ValueError, KeyError, TypeError):
            return cls()
        return cache

    def save(self, path: Path) -> None:
        """Write the cache atomically (deterministic bytes)."""
        data = {page: self.rows.get(page, {}) for page in PAGES}
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        atomic_write(path, [text.encode("utf-8", "surrogatepass")])


#: Each printable ASCII character to its mirror (`` `` ↔ ``~``): a text so mapped sorts in
#: reverse order (``str.translate``: C speed, once per event of every session).
_MIRROR = {code: 0x7E - (code - 0x20) for code in range(0x20, 0x7F)}


def _descending(stamp: str) -> str:
    """A key that sorts ISO times newest first (and no time last)."""
    if not stamp:
        return "~"
    return stamp.translate(_MIRROR)


def event_rows(summary: Summary) -> dict[str, list[tuple[str, EventRow]]]:
    """The rows a session gives each page, with their sort keys (a function of its summary)."""
    page = urls.session_page(summary.name)
    folder = urls.session_dir(summary.name)
    common = {
        "session": summary.name,
        "session_url": page,
        "kind": summary.kind,
        "role": summary.role,
    }
    errors = []
    for n, (sort, time, turn, anchor, code, message) in enumerate(summary.error_events):
        url = f"{folder}/{anchor}" if anchor else f"{page}#errors"
        row = EventRow(url=url, time=time, turn=turn, code=code, message=message, **common)
        errors.append((f"{_descending(sort)}\0{summary.name}\0{n:09d}", row))
    decisions = []
    for n, event in enumerate(summary.decision_events):
        sort, time, decision, tool, action, path, turn, anchor = event
        url = f"{folder}/{anchor}" if anchor else f"{page}#permissions"
        row = EventRow(
            url=url,
            time=time,
            turn=turn,
            decision=decision,
            tool=tool,
            action=action,
            path=path,
            **common,
        )
        group = REFUSALS.index(decision) if decision in REFUSALS else len(REFUSALS)
        decisions.append((f"{group}{_descending(sort)}\0{summary.name}\0{n:09d}", row))
    return {"errors": errors, "decisions": decisions}


EVENTS_FOLDER = "events"
"""The site folder of the archive-wide pages' row shards."""


def event_shard_groups(
    page: str,
    briefs: list[Brief],
    per_shard: int,
    most: int,
    slots: Mapping[str, int] | None = None,
) -> dict[str, list[Brief]]:
    """The row shard files of ``page`` (site paths) and the sessions of each, sorted by
    name: the sessions with rows on the page (``briefs``: those), each in the shard of its
    name's hash (as the index's rows, :func:`.index.row_shard_groups`; ``slots``: each
    session's :func:`.index.row_slot`, by name, when the caller has them)."""
    from .index import shard_groups

    return shard_groups(
        briefs,
        per_shard,
        most,
        slots,
        lambda i, n: f"{EVENTS_FOLDER}/{page}-{i:04d}-of-{n:04d}.js",
    )


def _value(page: str, row: EventRow) -> str:
    return row.code if page == "errors" else row.decision


def render_archive_pages(
    renderer: HtmlRenderer,
    graph: Graph,
    cache: ArchiveCache | Callable[[], ArchiveCache] | None = None,
    *,
    first_rows: int | None = None,
    per_shard: int = 500,
    most_shards: int = 1024,
    redaction: str | None = None,
    unchanged: Callable[[str, str], bool] | None = None,
    row_keys: Mapping[str, str] | None = None,
    slots: Mapping[str, int] | None = None,
    emit: Callable[[str, str], object] | None = None,
) -> tuple[dict[str, str], ArchiveCache | None]:
    """The archive-wide pages and their row shards by site path, and the cache for the next
    build (``cache`` comes from a build with the same key, else None; a function giving it
    is called only when a row is needed; None is returned for the cache then when it was
    not).

    A page holds its first ``first_rows`` rows (all when None) as HTML; when it has more,
    every row is in ``events/<page>-*-of-*.js`` shards (a session's rows in the shard of its
    name's hash), which ``archive.js`` loads for filters and "Load all". ``unchanged(rel,
    key)`` says a file made from ``key`` (:func:`.staleness.outputs_key`) is still as
    written: it is not made again (None: make every file). ``redaction``: the archive's
    redaction note when redaction is on. ``row_keys`` and ``slots``: each session's
    :func:`.staleness.archive_rows_key` and :func:`.index.row_slot` by name, when the caller
    has them (kept in the manifest: not computed again for every session each build).
    ``emit(rel, text)``: called with each file as soon as it is made, instead of returning
    it (a full build does not hold every shard's text at once); the files returned are then
    none."""
    loaded: list[ArchiveCache] = [cache] if isinstance(cache, ArchiveCache) else []

    def old_rows() -> ArchiveCache:
        if not loaded:
            loaded.append(cache() if callable(cache) else ArchiveCache())
        return loaded[0]

    briefs = graph.all
    with_errors = [b for b in briefs.values() if b.errors]
    with_decisions = [b for b in briefs.values() if b.decisions]
    with_events = {b.name: b for b in [*with_errors, *with_decisions]}.values()
    known = (row_keys or {}).get
    keys = {b.name: known(b.name) or b.events_key for b in with_events}
    kinds = sorted({b.kind for b in briefs.values()})
    roles = sorted({b.role for b in briefs.values()})
    fresh = ArchiveCache(rows={page: {} for page in PAGES})
    rendered: dict[str, dict[str, list[Row]]] = {}

    made: dict[str, dict[str, list[tuple[str, EventRow]]]] = {}

    def events_of(summary: Summary) -> dict[str, list[tuple[str, EventRow]]]:
        """:func:`event_rows` of a session, made once a build."""
        events = made.get(summary.name)
        if events is None:
            events = made[summary.name] = event_rows(summary)
        return events

    def rows_of(page: str, summary: Summary) -> list[Row]:
        key = keys[summary.name]
        rows = fresh.rows[page].get(key)
        if rows is None:
            rows = old_rows().rows.get(page, {}).get(key)
            if rows is None:
                if summary.name not in rendered:
                    rendered[summary.name] = _render_rows(renderer, events_of(summary))
                rows = rendered[summary.name][page]
            fresh.rows[page][key] = rows
        return rows

    def is_unchanged(rel: str, key: str) -> bool:
        return unchanged is not None and unchanged(rel, key)

    files: dict[str, str] = {}

    def put(rel: str, text: str) -> None:
        if emit is None:
            files[rel] = text
        else:
            emit(rel, text)

    for page in PAGES:
        briefs_of = with_errors if page == "errors" else with_decisions
        total = sum(map(operator.attrgetter(page), briefs_of))
        limit = total if first_rows is None else first_rows
        shards: dict[str, list[Brief]] = {}
        if total > limit:
            shards = event_shard_groups(page, briefs_of, per_shard, most_shards, slots)
        for rel, group in shards.items():
            key = outputs_key([rel], [keys[b.name] for b in group])
            if not is_unchanged(rel, key):
                summaries = [graph.summaries[b.name] for b in group]
                put(rel, _shard_text(page, rel, summaries, rows_of, events_of))
        page_key = outputs_key(
            [page, str(limit), redaction or "-"],
            sorted(keys[b.name] for b in briefs_of),
            kinds,
            roles,
            list(shards),
        )
        if is_unchanged(f"{page}.html", page_key):
            continue
        members = [graph.summaries[b.name] for b in briefs_of]
        events = {s.name: events_of(s)[page] for s in members}
        values = sorted({_value(page, row) for rows in events.values() for _, row in rows})
        # The first screen: the first rows in the page's order, their sort keys from the
        # summaries (no HTML), then the HTML of only those rows.
        ordered = sorted(
            (key, name, n) for name, rows in events.items() for n, (key, _) in enumerate(rows)
        )[:limit]
        by_name = {s.name: s for s in members}
        first = [rows_of(page, by_name[name])[n][1] for _, name, n in ordered]
        put(
            f"{page}.html",
            str(
                renderer.template(f"{page}.html").render(
                    page=ArchivePage(
                        rows_html=[Markup(html) for html in first],
                        kinds=kinds,
                        roles=roles,
                        values=values,
                        sessions=len(members),
                        total=total,
                        shards=list(shards),
                        redaction=redaction,
                    )
                )
            ),
        )
    if not loaded:
        return files, None
    # The cache keeps every current session's rows: those not needed this build carry over.
    for page in PAGES:
        old = loaded[0].rows.get(page, {})
        for b in with_events:
            key = keys[b.name]
            if key not in fresh.rows[page] and key in old:
                fresh.rows[page][key] = old[key]
    return files, fresh


def _shard_text(
    page: str,
    rel: str,
    group: list[Summary],
    rows_of: Callable[[str, Summary], list[Row]],
    events_of: Callable[[Summary], dict[str, list[tuple[str, EventRow]]]],
) -> str:
    """A row shard: a script calling ``polyglavEvents(page, index, rows)``, each row
    ``[sort key, kind, role, value, row HTML]`` (it loads from ``file://`` as over HTTP)."""
    index = int(rel.rsplit("/", 1)[1].split("-")[1])
    data = []
    for summary in group:
        events = events_of(summary)[page]
        for (key, row), (_, html) in zip(events, rows_of(page, summary), strict=True):
            data.append([key, row.kind, row.role, _value(page, row), html])
    data.sort()
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return f"polyglavEvents({json.dumps(page)},{index},{text});\n"


def _render_rows(
    renderer: HtmlRenderer, events: dict[str, list[tuple[str, EventRow]]]
) -> dict[str, list[Row]]:
    """The rows' HTML of a session's :func:`event_rows`."""
    out: dict[str, list[Row]] = {}
    for page, rows in events.items():
        template = renderer.template(f"{page}_row.html")
        out[page] = [(key, str(template.render(row=row)).strip("\n")) for key, row in rows]
    return out


def changed(old: ArchiveCache, new: ArchiveCache) -> bool:
    """True when ``new`` holds other row keys than ``old`` (the cache file needs writing)."""
    return any(old.rows.get(p, {}).keys() != new.rows.get(p, {}).keys() for p in PAGES)
