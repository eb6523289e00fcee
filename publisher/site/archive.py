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
from dataclasses import dataclass, field
from pathlib import Path

from markupsafe import Markup

from ..render.contexts import ArchivePage, EventRow
from ..render.html import HtmlRenderer
from ..write import atomic_write
from . import urls
from .graph import Graph, Summary
from .staleness import archive_rows_key

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


def _descending(stamp: str) -> str:
    """A key that sorts ISO times newest first (and no time last)."""
    if not stamp:
        return "~"
    return "".join(chr(0x7E - (ord(c) - 0x20)) if " " <= c <= "~" else c for c in stamp)


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


def render_archive_pages(
    renderer: HtmlRenderer,
    graph: Graph,
    cache: ArchiveCache | None = None,
) -> tuple[dict[str, str], ArchiveCache]:
    """``errors.html`` and ``decisions.html`` by site path, and the cache for the next build
    (``cache`` comes from a build with the same key, else None)."""
    cache = cache or ArchiveCache()
    fresh = ArchiveCache(rows={page: {} for page in PAGES})
    merged: dict[str, list[Row]] = {page: [] for page in PAGES}
    values: dict[str, set[str]] = {page: set() for page in PAGES}
    sessions: dict[str, set[str]] = {page: set() for page in PAGES}
    for summary in graph.summaries.values():
        if not summary.error_events and not summary.decision_events:
            continue
        key = archive_rows_key(summary)
        rendered: dict[str, list[Row]] | None = None
        for page in PAGES:
            rows = cache.rows.get(page, {}).get(key)
            if rows is None:
                if rendered is None:
                    rendered = _render_rows(renderer, summary)
                rows = rendered[page]
            fresh.rows[page][key] = rows
            merged[page].extend(rows)
            if rows:
                sessions[page].add(summary.name)
        values["errors"].update(e[4] for e in summary.error_events)
        values["decisions"].update(d[2] for d in summary.decision_events)
    kinds = sorted({s.kind for s in graph.summaries.values()})
    roles = sorted({s.role for s in graph.summaries.values()})
    pages = {}
    for page in PAGES:
        rows = sorted(merged[page])
        pages[f"{page}.html"] = str(
            renderer.template(f"{page}.html").render(
                page=ArchivePage(
                    rows_html=[Markup(html) for _, html in rows],
                    kinds=kinds,
                    roles=roles,
                    values=sorted(values[page]),
                    sessions=len(sessions[page]),
                )
            )
        )
    return pages, fresh


def _render_rows(renderer: HtmlRenderer, summary: Summary) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for page, rows in event_rows(summary).items():
        template = renderer.template(f"{page}_row.html")
        out[page] = [(key, str(template.render(row=row)).strip("\n")) for key, row in rows]
    return out


def changed(old: ArchiveCache, new: ArchiveCache) -> bool:
    """True when ``new`` holds other row keys than ``old`` (the cache file needs writing)."""
    return any(old.rows.get(p, {}).keys() != new.rows.get(p, {}).keys() for p in PAGES)
