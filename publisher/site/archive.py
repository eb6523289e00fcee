"""The archive-wide pages: every failure (``errors.html``, the Failures page: failed calls,
errors, refusals, cut and interrupted turns, as :func:`publisher.gate.session_findings`
finds them) and every permission decision (``decisions.html``) of every session, and the
cache that keeps them cheap to refresh.

A session's rows on both pages are a function of its :class:`~.graph.Summary` alone
(its ``failure_events`` and ``decision_events``, attributed to turns and tool calls by
:mod:`publisher.audit` when the session was scanned), so they are cached by
:func:`.staleness.archive_rows_key`: an append renders the rows of the session it changed,
and the pages are the cached rows merged in order.

Order: failures newest first; decisions refusals first (denied, declined), then every other
decision, each group newest first. Events without a readable time come last.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import operator
import os
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from itertools import chain, compress, repeat
from pathlib import Path

from markupsafe import Markup

from ..audit import REFUSED
from ..render.contexts import ArchivePage, EventRow
from ..render.html import HtmlRenderer
from ..render.view import FINDING_LABELS
from ..write import atomic_write
from . import urls
from .graph import Graph, Summary
from .manifest import Brief
from .staleness import outputs_key

PAGES = ("errors", "decisions")
"""The archive-wide pages (``<name>.html``, rows by ``<name>_row.html``)."""

_UNPLACED = {"error": "errors", "denied": "permissions", "declined": "permissions"}
"""The section of a session page that lists a failure no turn holds, by kind."""

Row = tuple[str, str]
"""(sort key, row HTML): rows sort by key, ascending."""


@dataclass(slots=True)
class ArchiveCache:
    """The rendered rows of each row shard of the archive-wide pages, one file a shard in
    :attr:`folder` (``<page>-<i>-of-<n>.json``: row key, :func:`.staleness.archive_rows_key`
    → that session's rows, keys sorted). A build reads a shard's file when it makes that
    shard again and writes it once the shard is made, so it holds one shard's rows at a
    time, never every session's (21 MB of rows at 20,000 small sessions). A session whose
    rows were in another shard of the last build (the shards' count changed) has them
    rendered again."""

    folder: Path
    """The cache's folder (:attr:`..context.CachePaths.archive_rows`)."""
    readable: bool = True
    """False when the last build had another key: its rows were made by other templates and
    are not read (each shard's file is written again when the shard is made)."""

    def load(self, rel: str) -> dict[str, list[Row]]:
        """The rows kept for the shard ``rel`` (its site path), empty when there are none."""
        if not self.readable:
            return {}
        try:
            data = json.loads((self.folder / self.file_of(rel)).read_bytes())
            return {str(key): [(str(k), str(h)) for k, h in rows] for key, rows in data.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    def save(self, rel: str, rows: Mapping[str, list[Row]]) -> None:
        """Write the rows of the shard ``rel`` atomically (deterministic bytes: keys
        sorted; ASCII, lone surrogates escaped)."""
        text = json.dumps(rows, sort_keys=True, separators=(",", ":"))
        atomic_write(self.folder / self.file_of(rel), [text.encode("ascii")])

    def sweep(self, shards: Collection[str]) -> None:
        """Remove the files of shards that are not among ``shards`` (site paths)."""
        keep = {self.file_of(rel) for rel in shards}
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        for name in names:
            if name.endswith(".json") and name not in keep:
                with contextlib.suppress(OSError):
                    os.unlink(self.folder / name)

    @staticmethod
    def file_of(rel: str) -> str:
        """The cache file of the shard ``rel`` (``events/errors-0001-of-0004.js`` →
        ``errors-0001-of-0004.json``)."""
        return rel.rsplit("/", 1)[-1].removesuffix(".js") + ".json"


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
    keys = {p: [key for key, _ in event_marks(summary, p)] for p in PAGES}
    errors = []
    for key, (_, time, turn, anchor, kind, what, message) in zip(
        keys["errors"], summary.failure_events, strict=True
    ):
        url = f"{folder}/{anchor}" if anchor else f"{page}#{_UNPLACED.get(kind, 'overview')}"
        row = EventRow(
            url=url,
            time=time,
            turn=turn,
            failure=FINDING_LABELS.get(kind, kind),
            code=what,
            message=message,
            **common,
        )
        errors.append((key, row))
    decisions = []
    for key, event in zip(keys["decisions"], summary.decision_events, strict=True):
        _, time, decision, tool, action, path, turn, anchor = event
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
        decisions.append((key, row))
    return {"errors": errors, "decisions": decisions}


def event_marks(summary: Summary, page: str) -> list[tuple[str, str]]:
    """The sort key and filter value (what failed: ``failed call``, ``error``...; a
    decision) of each row a session gives ``page``, in the order of :func:`event_rows`,
    without making the rows: failures newest first; decisions refusals first (denied, then
    declined), then newest first."""
    name = summary.name
    if page == "errors":
        return [
            (f"{_descending(event[0])}\0{name}\0{n:09d}", FINDING_LABELS.get(event[4], event[4]))
            for n, event in enumerate(summary.failure_events)
        ]
    marks = []
    for n, event in enumerate(summary.decision_events):
        decision = event[2]
        group = REFUSED.index(decision) if decision in REFUSED else len(REFUSED)
        marks.append((f"{group}{_descending(event[0])}\0{name}\0{n:09d}", decision))
    return marks


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
    return row.failure if page == "errors" else row.decision


def render_archive_pages(
    renderer: HtmlRenderer,
    graph: Graph,
    cache: ArchiveCache | None = None,
    *,
    first_rows: int | None = None,
    per_shard: int = 500,
    most_shards: int = 1024,
    redaction: str | None = None,
    unchanged: Callable[[str, str], bool] | None = None,
    row_keys: Mapping[str, str] | None = None,
    slots: Mapping[str, int] | None = None,
    emit: Callable[[str, str], object] | None = None,
    states: dict[str, PageState] | None = None,
) -> dict[str, str]:
    """The archive-wide pages and their row shards by site path.

    A page holds its first ``first_rows`` rows (all when None) as HTML; when it has more,
    every row is in ``events/<page>-*-of-*.js`` shards (a session's rows in the shard of its
    name's hash), which ``archive.js`` loads for filters and "Load all". ``unchanged(rel,
    key)`` says a file made from ``key`` (:func:`.staleness.outputs_key`) is still as
    written: it is not made again (None: make every file). ``cache``: the shards' rows
    (:class:`ArchiveCache`), read and written a shard at a time (None: none kept).
    ``redaction``: the archive's redaction note when redaction is on. ``row_keys`` and
    ``slots``: each session's :func:`.staleness.archive_rows_key` and
    :func:`.index.row_slot` by name, when the caller has them (kept in the manifest: not
    computed again for every session each build). ``emit(rel, text)``: called with each
    file as soon as it is made, instead of returning it (a full build does not hold every
    shard's text at once); the files returned are then none. ``states``: filled with the
    :class:`PageState` of each page made (for :func:`update_archive_pages` next time)."""
    briefs = graph.all
    with_errors = [b for b in briefs.values() if b.errors]
    with_decisions = [b for b in briefs.values() if b.decisions]
    with_events = {b.name: b for b in [*with_errors, *with_decisions]}.values()
    known = (row_keys or {}).get
    keys = {b.name: known(b.name) or b.events_key for b in with_events}
    kinds = sorted({b.kind for b in briefs.values()})
    roles = sorted({b.role for b in briefs.values()})

    def is_unchanged(rel: str, key: str) -> bool:
        return unchanged is not None and unchanged(rel, key)

    def rows_of(page: str, summary: Summary) -> list[Row]:
        return _render_rows(renderer, page, event_rows(summary)[page])

    files: dict[str, str] = {}

    def put(rel: str, text: str) -> None:
        if emit is None:
            files[rel] = text
        else:
            emit(rel, text)

    every_shard: list[str] = []
    for page in PAGES:
        briefs_of = with_errors if page == "errors" else with_decisions
        total = sum(map(operator.attrgetter(page), briefs_of))
        limit = total if first_rows is None else first_rows
        shards: dict[str, list[Brief]] = {}
        if total > limit:
            shards = event_shard_groups(page, briefs_of, per_shard, most_shards, slots)
        every_shard.extend(shards)
        page_key = outputs_key(
            [page, str(limit), redaction or "-"],
            sorted(keys[b.name] for b in briefs_of),
            kinds,
            roles,
            list(shards),
        )
        make_page = not is_unchanged(f"{page}.html", page_key)
        members = [graph.summaries[b.name] for b in briefs_of] if make_page else []
        # Two passes over the rows' keys (made again, not kept: a full build does not hold
        # every row's key): the filter values' counts, then the first screen (the first
        # rows in the page's order), picked before the shards so that their sessions' rows
        # are kept as the shards are made; then the HTML of only those rows.
        counts = Counter(value for s in members for _, value in event_marks(s, page))
        ordered = heapq.nsmallest(
            limit,
            (
                (key, s.name, n, value)
                for s in members
                for n, (key, value) in enumerate(event_marks(s, page))
            ),
        )
        wanted = {name for _, name, _, _ in ordered}
        first_of: dict[str, list[Row]] = {}
        for rel, group in shards.items():
            shard_key = outputs_key([rel], [keys[b.name] for b in group])
            if is_unchanged(rel, shard_key):
                continue
            old = cache.load(rel) if cache is not None else {}
            made: dict[str, list[Row]] = {}
            summaries = [graph.summaries[b.name] for b in group]
            for summary in summaries:
                key = keys[summary.name]
                rows = made.get(key) or old.get(key)
                if rows is None:
                    rows = rows_of(page, summary)
                made[key] = rows
                if summary.name in wanted:
                    first_of[summary.name] = rows
            rows_each = [made[keys[summary.name]] for summary in summaries]
            put(rel, _shard_text(page, rel, summaries, rows_each))
            if cache is not None and made != old:
                cache.save(rel, made)
        if not make_page:
            continue
        by_name = {s.name: s for s in members}
        first = []
        for _, name, n, _ in ordered:
            rows = first_of.get(name)
            if rows is None:  # in a shard not made again, or on a page without shards
                rows = first_of[name] = rows_of(page, by_name[name])
            first.append(rows[n][1])
        if states is not None:
            states[page] = PageState(
                first=[
                    (key, value, html)
                    for (key, _, _, value), html in zip(ordered, first, strict=True)
                ],
                values=dict(counts),
                sessions=len(members),
                total=total,
            )
        values = sorted(counts)
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
                        counts=dict(counts),
                        total=total,
                        shards=list(shards),
                        redaction=redaction,
                    )
                )
            ),
        )
    if cache is not None:
        cache.sweep(every_shard)
    return files


def _shard_text(
    page: str,
    rel: str,
    group: list[Summary],
    rows: list[list[Row]],
) -> str:
    """A row shard: a script calling ``polyglavEvents(page, index, rows)``, each row
    ``[sort key, kind, role, value, row HTML]`` (it loads from ``file://`` as over HTTP).
    ``rows``: the rendered rows of each session of ``group``, in its order."""
    index = int(rel.rsplit("/", 1)[1].split("-")[1])
    data = []
    for summary, rows_of_it in zip(group, rows, strict=True):
        marks = event_marks(summary, page)
        kind, role = summary.kind, summary.role
        for (key, value), (_, html) in zip(marks, rows_of_it, strict=True):
            data.append([key, kind, role, value, html])
    data.sort()
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return f"polyglavEvents({json.dumps(page)},{index},{text});\n"


def _render_rows(
    renderer: HtmlRenderer, page: str, events: list[tuple[str, EventRow]]
) -> list[Row]:
    """The HTML of a session's rows on ``page`` (its :func:`event_rows` of the page)."""
    template = renderer.template(f"{page}_row.html")
    return [(key, str(template.render(row=row)).strip("\n")) for key, row in events]


@dataclass(slots=True)
class PageState:
    """What an archive-wide page shows besides its row shards, kept so that a build
    changing a few sessions' rows updates it from theirs (:func:`update_archive_pages`)."""

    first: list[tuple[str, str, str]]
    """(sort key, filter value, row HTML) of the page's first rows, in its order."""
    values: dict[str, int]
    """How many rows have each filter value (code or decision)."""
    sessions: int
    """How many sessions have rows on the page."""
    total: int
    """How many rows the page has."""

    def to_json(self) -> object:
        return {
            "first": self.first,
            "values": sorted(self.values.items()),
            "sessions": self.sessions,
            "total": self.total,
        }

    @classmethod
    def from_json(cls, data: object) -> PageState | None:
        """The state :meth:`to_json` gave, or None when ``data`` is not one."""
        try:
            assert isinstance(data, dict)
            return cls(
                first=[(str(k), str(v), str(h)) for k, v, h in data["first"]],
                values={str(v): int(n) for v, n in data["values"]},
                sessions=int(data["sessions"]),
                total=int(data["total"]),
            )
        except (AssertionError, KeyError, TypeError, ValueError):
            return None


def _session_of(key: str) -> str:
    """The session name in a row's sort key (``<time>\\0<name>\\0<n>``)."""
    return key.split("\0", 1)[1].rsplit("\0", 1)[0]


def update_archive_pages(
    renderer: HtmlRenderer,
    graph: Graph,
    states: Mapping[str, PageState],
    changed: Mapping[str, tuple[Brief | None, Brief | None]],
    *,
    kinds: list[str],
    roles: list[str],
    first_rows: int,
    per_shard: int,
    most_shards: int,
    redaction: str | None,
    last: Callable[[str], bytes | None],
    kept: Callable[[str], str | None],
    unchanged: Callable[[str, str], bool],
    emit: Callable[[str, str], object],
) -> dict[str, PageState] | None:
    """The archive-wide pages brought up to date from the sessions whose rows changed
    (``changed``: name → (last build's brief, brief now), None for a session that was not
    there or is gone), without the rows of the others: each page's first rows, filter
    values and counts from ``states`` (the last build's), each shard holding a changed
    session from the shard file the last build wrote (``last(rel)``: its bytes, when it is
    still as written; ``kept(rel)``: the key the last build made it from, when it is still
    as written). Files are given to ``emit`` as they are made; the pages' new states,
    or None when they cannot be told so (the shards' count changed, a first row moved down
    past rows not kept, a shard file is not as written): then nothing was emitted."""
    briefs = list(graph.all.values())
    plans = []
    for page in PAGES:
        count_of = operator.attrgetter(page)
        state = states[page]
        moved = {
            name: (then, now)
            for name, (then, now) in changed.items()
            if (then is not None and count_of(then)) or (now is not None and count_of(now))
        }
        sessions, total = state.sessions, state.total
        for then, now in moved.values():
            sessions += (now is not None and count_of(now) > 0) - (
                then is not None and count_of(then) > 0
            )
            total += (count_of(now) if now is not None else 0) - (
                count_of(then) if then is not None else 0
            )
        sharded = (state.total > first_rows, total > first_rows)
        count = _shard_count(sessions, per_shard, most_shards)
        if sharded[0] != sharded[1] or (
            sharded[0] and count != _shard_count(state.sessions, per_shard, most_shards)
        ):
            return None
        new_rows: list[tuple[str, EventRow, str]] = []
        for name, (_, now) in sorted(moved.items()):
            if now is not None and count_of(now):
                events = event_rows(graph.summaries[name])[page]
                rendered = _render_rows(renderer, page, events)
                new_rows += [
                    (k, event, h) for (k, event), (_, h) in zip(events, rendered, strict=True)
                ]
        # The rows the changed sessions had: from the shards they were in (or the page,
        # when it held every row).
        shard_rows: dict[str, list[list[object]]] = {}
        old_values: list[str] = []
        others: dict[str, str] = {}
        if sharded[0]:
            slots = {b.slot % count for pair in moved.values() for b in pair if b is not None}
            for index in range(count):
                rel = f"{EVENTS_FOLDER}/{page}-{index:04d}-of-{count:04d}.js"
                if index not in slots:
                    key = kept(rel)
                    if key is None:
                        return None
                    others[rel] = key
            for index in sorted(slots):
                rel = f"{EVENTS_FOLDER}/{page}-{index:04d}-of-{count:04d}.js"
                written = _shard_rows(last(rel), page, index)
                if written is None:
                    return None
                remaining = []
                for item in written:
                    if _session_of(str(item[0])) in moved:
                        old_values.append(str(item[3]))
                    else:
                        remaining.append(item)
                shard_rows[rel] = remaining
            for key, event, text in new_rows:
                index = next(b.slot for b in changed[_session_of(key)] if b is not None) % count
                rel = f"{EVENTS_FOLDER}/{page}-{index:04d}-of-{count:04d}.js"
                shard_rows[rel].append([key, event.kind, event.role, _value(page, event), text])
        else:
            old_values = [v for k, v, _ in state.first if _session_of(k) in moved]
        values = Counter(state.values)
        values.subtract(old_values)
        values.update(_value(page, row) for _, row, _ in new_rows)
        first = [r for r in state.first if _session_of(r[0]) not in moved]
        first += [(k, _value(page, row), h) for k, row, h in new_rows]
        first.sort()
        if (sharded[0] and first_rows) and (
            len(first) < first_rows or first[first_rows - 1][0] > state.first[-1][0]
        ):
            # Rows the last first screen did not hold may come first now (a session that
            # had rows there is gone, or has fewer): every row is in the shards, read one
            # at a time. (A page without shards held every row: its first rows are all.)
            refilled = _first_rows_of_shards(page, first_rows, shard_rows, others, last)
            if refilled is None:
                return None
            first = refilled
        del first[first_rows:]
        fresh = PageState(first, {v: n for v, n in values.items() if n > 0}, sessions, total)
        plans.append((page, fresh, shard_rows, others, count if sharded[1] else 0))
    made: dict[str, PageState] = {}
    for page, fresh, shard_rows, others, count in plans:
        for rel, key in others.items():
            unchanged(rel, key)
        count_of = operator.attrgetter(page)
        members = list(compress(briefs, map(count_of, briefs)))
        keys = list(map(_EVENTS_KEY, members))
        shards = [f"{EVENTS_FOLDER}/{page}-{i:04d}-of-{count:04d}.js" for i in range(count)]
        for rel, rows in shard_rows.items():
            index = _shard_index(rel)
            group = sorted(
                compress(
                    members,
                    map(
                        operator.eq,
                        map(operator.mod, map(_SLOT, members), repeat(count)),
                        repeat(index),
                    ),
                ),
                key=operator.attrgetter("name"),
            )
            if not unchanged(rel, outputs_key([rel], map(_EVENTS_KEY, group))):
                rows.sort()
                text = json.dumps(rows, ensure_ascii=True, separators=(",", ":"))
                emit(rel, f"polyglavEvents({json.dumps(page)},{index},{text});\n")
        page_key = outputs_key(
            [page, str(first_rows), redaction or "-"], sorted(keys), kinds, roles, shards
        )
        if not unchanged(f"{page}.html", page_key):
            html = renderer.template(f"{page}.html").render(
                page=ArchivePage(
                    rows_html=[Markup(h) for _, _, h in fresh.first],
                    kinds=kinds,
                    roles=roles,
                    values=sorted(fresh.values),
                    sessions=fresh.sessions,
                    counts=dict(fresh.values),
                    total=fresh.total,
                    shards=shards,
                    redaction=redaction,
                )
            )
            emit(f"{page}.html", str(html))
        made[page] = fresh
    return made


def _first_rows_of_shards(
    page: str,
    first_rows: int,
    made: Mapping[str, list[list[object]]],
    others: Collection[str],
    last: Callable[[str], bytes | None],
) -> list[tuple[str, str, str]] | None:
    """A page's first rows, (sort key, filter value, row HTML), from all of its row shards:
    ``made``, the rows of the shards this build makes again, by site path; ``others``, the
    other shards, read as the last build wrote them (``last(rel)``); None when one is not."""
    best: list[tuple[str, str, str]] = []
    for rel in sorted({*made, *others}):
        rows = made.get(rel)
        if rows is None:
            rows = _shard_rows(last(rel), page, _shard_index(rel))
            if rows is None:
                return None
        firsts = ((str(row[0]), str(row[3]), str(row[4])) for row in rows)
        best = heapq.nsmallest(first_rows, chain(best, firsts))
    return best


def _shard_index(rel: str) -> int:
    """The index of an archive page's row shard from its site path
    (``events/<page>-<index>-of-<count>.js``)."""
    return int(rel.rsplit("-of-", 1)[0].rsplit("-", 1)[1])


def _shard_rows(data: bytes | None, page: str, index: int) -> list[list[object]] | None:
    """The rows of a shard file :func:`_shard_text` wrote, None when it is not one."""
    if data is None:
        return None
    head = f"polyglavEvents({json.dumps(page)},{index},".encode()
    if not (data.startswith(head) and data.endswith(b");\n")):
        return None
    try:
        rows = json.loads(data[len(head) : -3])
    except ValueError:
        return None
    if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == 5 for r in rows):
        return None
    return rows


def _shard_count(sessions: int, per_shard: int, most: int) -> int:
    """:func:`.index.row_shard_count`."""
    from .index import row_shard_count

    return row_shard_count(sessions, per_shard, most)


_EVENTS_KEY = operator.itemgetter(Brief._fields.index("events_key"))
_SLOT = operator.itemgetter(Brief._fields.index("slot"))
