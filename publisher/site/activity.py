"""Activity at a glance: runs per day by outcome and errors per day, for the index.

Drawn at build time as an SVG (``index_activity.html``: no script, no external resource)
with the same numbers as a table. A function of the sessions' summaries alone, computed
each time the index is rendered (one pass over the summaries: no cache to keep). The days
shown end at the archive's latest day (never the build's clock: rebuilds stay identical).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import date, timedelta

from ..gate import utc_time
from ..render.contexts import Activity, ActivityBar, ActivityDay, ActivitySegment
from .graph import Summary

DAYS = 30
"""How many days the chart shows, at most."""
OUTCOMES = ("ok", "error", "cancelled", "truncated", "running", "empty", "other")
"""The outcomes (a session's last status), in the order bars stack them."""
WIDTH, RUNS_HEIGHT, ERRORS_HEIGHT = 720, 120, 60
"""The chart's geometry (SVG user units; the SVG scales to the page's width)."""


def _day(stamp: str) -> date | None:
    when = utc_time(stamp)
    return when.date() if when is not None else None


def outcome_of(status: str) -> str:
    """The outcome a session's last status counts as ("" means no turns: ``empty``)."""
    if not status:
        return "empty"
    return status if status in OUTCOMES else "other"


def activity(summaries: Iterable[Summary], days: int = DAYS) -> Activity | None:
    """The chart's data and geometry, or None when no session has a readable time."""
    runs: dict[date, Counter[str]] = {}
    errors: Counter[date] = Counter()
    undated = 0
    for summary in summaries:
        day = _day(summary.created_at) or _day(summary.updated_at)
        if day is None:
            undated += 1
        else:
            runs.setdefault(day, Counter())[outcome_of(summary.last_status)] += 1
        for event in summary.error_events:
            if event[0]:
                errors[date.fromisoformat(event[0][:10])] += 1
    if not runs:
        return None
    last = max(runs)
    first = max(min(runs), last - timedelta(days=days - 1))
    span = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    outcomes = [o for o in OUTCOMES if any(runs.get(d, Counter())[o] for d in span)]
    top_runs = max(sum(runs.get(d, Counter()).values()) for d in span) or 1
    top_errors = max((errors[d] for d in span), default=0) or 1
    step = WIDTH / len(span)
    bar = max(step * 0.7, 1.0)
    rows, bars = [], []
    for i, day in enumerate(span):
        counts = runs.get(day, Counter())
        total = sum(counts.values())
        x = round(i * step + (step - bar) / 2, 2)
        segments, y = [], float(RUNS_HEIGHT)
        for outcome in outcomes:
            if counts[outcome]:
                h = counts[outcome] / top_runs * RUNS_HEIGHT
                y -= h
                segments.append(ActivitySegment(outcome, counts[outcome], round(y, 2), round(h, 2)))
        eh = errors[day] / top_errors * ERRORS_HEIGHT
        bars.append(
            ActivityBar(
                day.isoformat(),
                x,
                round(bar, 2),
                segments,
                errors[day],
                round(ERRORS_HEIGHT - eh, 2),
                round(eh, 2),
            )
        )
        rows.append(ActivityDay(day.isoformat(), [counts[o] for o in outcomes], total, errors[day]))
    return Activity(
        first=span[0].isoformat(),
        last=span[-1].isoformat(),
        outcomes=outcomes,
        days=rows,
        bars=bars,
        top_runs=top_runs,
        top_errors=top_errors if any(errors[d] for d in span) else 0,
        runs=sum(d.total for d in rows),
        errors=sum(d.errors for d in rows),
        undated=undated,
        width=WIDTH,
        runs_height=RUNS_HEIGHT,
        errors_height=ERRORS_HEIGHT,
    )
