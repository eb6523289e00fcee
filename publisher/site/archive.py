"""The archive-wide pages: every failure (``errors.html``, the Failures page: failed calls,
errors, refusals, cut and interrupted turns, as :func:`publisher.gate.session_findings`
finds them) and every permission decision (``decisions.html``) of every session, asked of
the catalog.

A session's rows on both pages are a function of its :class:`~.summary.Summary` alone (its
``failure_events`` and ``decision_events``, attributed to turns and tool calls by
:mod:`publisher.audit` when the session was scanned): their sort keys and filter values are
kept in the catalog's ``events`` table when the session is scanned (:func:`event_marks`),
and their HTML once rendered, so an append renders the rows of the session it changed. A
page's first screen is an indexed query (the first rows in the page's order), its filters
grouped counts, and a row shard its sessions' kept rows in order: no build holds every
session's rows.

Order: failures newest first; decisions refusals first (denied, declined), then every other
decision, each group newest first. Events without a readable time come last.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping

from markupsafe import Markup

from ..audit import REFUSED
from ..render.contexts import ArchivePage, EventRow
from ..render.html import HtmlRenderer
from ..render.view import FINDING_LABELS
from . import urls
from .catalog import Catalog
from .index import PageCounts
from .summary import Summary

PAGES = ("errors", "decisions")
"""The archive-wide pages (``<name>.html``, rows by ``<name>_row.html``)."""

_UNPLACED = {"error": "errors", "denied": "permissions", "declined": "permissions"}
"""The section of a session page that lists a failure no turn holds, by kind."""


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


def event_states(summary: Summary) -> tuple[tuple[str, int, str, str, str], ...]:
    """Every row a session gives the archive-wide pages as the catalog keeps it: (page, n,
    sort key, filter value, UTC time) (:attr:`.catalog.SourceState.events`)."""
    out = []
    for page in PAGES:
        events = summary.failure_events if page == "errors" else summary.decision_events
        for n, ((key, value), event) in enumerate(
            zip(event_marks(summary, page), events, strict=True)
        ):
            out.append((page, n, key, value, event[0]))
    return tuple(out)


def render_missing_rows(renderer: HtmlRenderer, catalog: Catalog) -> None:
    """Render the rows of the published sessions whose rows on the archive-wide pages have
    no HTML yet (new or changed since the last build), and keep it in the catalog."""
    for file_name in catalog.files_missing_event_html():
        summary = catalog.summary_of(file_name)
        assert summary is not None
        rows = event_rows(summary)
        for page in PAGES:
            template = renderer.template(f"{page}_row.html")
            for n, (_, row) in enumerate(rows[page]):
                html = str(template.render(row=row)).strip("\n")
                catalog.set_event_html(file_name, page, n, html)


def shard_text(page: str, index: int, rows: list[tuple[str, str, str, str, str]]) -> str:
    """A row shard: a script calling ``polyglavEvents(page, index, rows)``, each row
    ``[sort key, kind, role, value, row HTML]`` in sort key order (it loads from ``file://``
    as over HTTP)."""
    text = json.dumps([list(row) for row in rows], ensure_ascii=True, separators=(",", ":"))
    return f"polyglavEvents({json.dumps(page)},{index},{text});\n"


def render_archive_pages(
    renderer: HtmlRenderer,
    catalog: Catalog,
    counts: Mapping[str, PageCounts],
    *,
    kinds: list[str],
    roles: list[str],
    first_rows: int,
    per_shard: int,
    most_shards: int,
    redaction: str | None,
    pages: Collection[str],
    shards: Callable[[str, int], Collection[int] | None],
    emit: Callable[[str, str], object],
) -> dict[str, list[str]]:
    """Make the archive-wide pages ``pages`` and the row shards ``shards(page, count)`` says
    (None: every one), giving each file to ``emit(rel, text)`` as it is made; the row shard
    files of each page (site paths, every one, made or not).

    A page holds its first ``first_rows`` rows as HTML; when it has more, every row is in
    ``events/<page>-*-of-*.js`` shards (a session's rows in the shard of its name's hash, as
    the index's: :func:`.urls.row_slot`), which ``archive.js`` loads for filters and "Load
    all". ``counts``: each page's sessions, rows and filter values (:class:`.index.Overview`).
    ``redaction``: the archive's redaction note when redaction is on."""
    render_missing_rows(renderer, catalog)
    made: dict[str, list[str]] = {}
    for page in PAGES:
        found = counts.get(page) or PageCounts()
        sessions, total = found.sessions, found.rows
        count = urls.row_shard_count(sessions, per_shard, most_shards) if total > first_rows else 0
        made[page] = [urls.event_shard_path(page, i, count) for i in range(count)]
        wanted = shards(page, count) if count else ()
        for i in range(count) if wanted is None else sorted(wanted):
            emit(
                urls.event_shard_path(page, i, count),
                shard_text(page, i, catalog.event_shard(page, i, count)),
            )
        if page not in pages:
            continue
        html = renderer.template(f"{page}.html").render(
            page=ArchivePage(
                rows_html=[Markup(h) for h in catalog.first_events(page, first_rows)],
                kinds=kinds,
                roles=roles,
                values=sorted(found.values),
                sessions=sessions,
                counts=dict(found.values),
                total=total,
                shards=made[page],
                redaction=redaction,
            )
        )
        emit(f"{page}.html", str(html))
    return made
