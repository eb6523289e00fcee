"""Activity at a glance: runs per day by outcome and failures per day, for the index.

The window is fitted to the data: from the archive's first day to its last, at most
:data:`DAYS` days; the sessions of earlier days are counted and said, never dropped
silently.

Drawn at build time as an SVG (``index_activity.html``: no script, no external resource)
with the same numbers as a table. A function of the sessions' summaries alone, computed
each time the index is rendered (one pass over the summaries: no cache to keep). The days
shown end at the archive's latest day (never the build's clock: rebuilds stay identical).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, timedelta
from operator import itemgetter
from sys import intern

from ..gate import utc_time
from ..render.contexts import Activity, ActivityBar, ActivityDay, ActivitySegment
from ..render.view import OUTCOMES, outcome_of
from .graph import Summary

DAYS = 90
"""How many days the chart shows, at most (the archive's last; bars stay 5 units wide)."""
WIDTH, RUNS_HEIGHT, FAILURES_HEIGHT = 720, 120, 60
"""The chart's geometry (SVG user units; the SVG scales to the page's width)."""


def _day(stamp: str) -> date | None:
    when = utc_time(stamp)
    return when.date() if when is not None else None


def outcome_totals(runs: Mapping[tuple[str, str], int]) -> list[tuple[str, int]]:
    """The sessions by outcome over the whole archive (dated or not), from the sessions
    counted by (day, outcome): (outcome, count) in :data:`OUTCOMES` order, counts above 0."""
    totals: Counter[str] = Counter()
    for (_, outcome), n in runs.items():
        totals[outcome] += n
    return [(outcome, totals[outcome]) for outcome in OUTCOMES if totals[outcome] > 0]


def contribution(summary: Summary) -> tuple[str, str, str]:
    """What one session adds to the chart: its day (ISO, "" when it has no readable time),
    its outcome, and the days of its failures (ISO, space-separated). Computed when its
    summary is made and kept in the manifest (:class:`.manifest.Brief`): a build does not
    parse every session's times again."""
    day = _day(summary.created_at) or _day(summary.updated_at)
    failed = " ".join(event[0][:10] for event in summary.failure_events if event[0])
    # A day is one of few: interned, not a copy in each session's brief.
    return (intern(day.isoformat()) if day else "", outcome_of(summary.last_status), failed)


def activity(summaries: Iterable[Summary], days: int = DAYS) -> Activity | None:
    """The chart's data and geometry, or None when no session has a readable time."""
    return activity_of([contribution(s) for s in summaries], days)


def activity_of(contributions: Sequence[tuple[str, str, str]], days: int = DAYS) -> Activity | None:
    """:func:`activity` from each session's :func:`contribution`."""
    # Counted by Counter over pairs and joined strings: no Python step per session.
    pairs: Counter[tuple[str, str]] = Counter(map(itemgetter(0, 1), contributions))
    failure_texts = filter(None, map(itemgetter(2), contributions))
    return activity_from(pairs, Counter(" ".join(failure_texts).split()), days)


def activity_from(
    pairs: Counter[tuple[str, str]], failure_days: Counter[str], days: int = DAYS
) -> Activity | None:
    """:func:`activity` from the sessions counted by (day, outcome) (``pairs``) and the
    failures counted by day (the index keeps both: :class:`.index.Overview`)."""
    undated = sum(n for (text, _), n in pairs.items() if not text)
    by_day: dict[str, Counter[str]] = {}
    for (text, outcome), n in pairs.items():
        if text:
            by_day.setdefault(text, Counter())[outcome] += n
    runs = {date.fromisoformat(d): c for d, c in by_day.items()}
    failures: Counter[date] = Counter({date.fromisoformat(d): n for d, n in failure_days.items()})
    if not runs:
        return None
    last, since = max(runs), min(runs)
    first = max(since, last - timedelta(days=days - 1))
    earlier = sum(sum(c.values()) for d, c in runs.items() if d < first)
    span = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    outcomes = [o for o in OUTCOMES if any(runs.get(d, Counter())[o] for d in span)]
    top_runs = max(sum(runs.get(d, Counter()).values()) for d in span) or 1
    top_failures = max((failures[d] for d in span), default=0) or 1
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
        eh = failures[day] / top_failures * FAILURES_HEIGHT
        bars.append(
            ActivityBar(
                day.isoformat(),
                x,
                round(bar, 2),
                segments,
                failures[day],
                round(FAILURES_HEIGHT - eh, 2),
                round(eh, 2),
            )
        )
        rows.append(
            ActivityDay(day.isoformat(), [counts[o] for o in outcomes], total, failures[day])
        )
    return Activity(
        first=span[0].isoformat(),
        last=span[-1].isoformat(),
        outcomes=outcomes,
        days=rows,
        bars=bars,
        top_runs=top_runs,
        top_failures=top_failures if any(failures[d] for d in span) else 0,
        runs=sum(d.total for d in rows),
        failures=sum(d.failures for d in rows),
        undated=undated,
        earlier=earlier,
        since=since.isoformat(),
        width=WIDTH,
        runs_height=RUNS_HEIGHT,
        failures_height=FAILURES_HEIGHT,
    )
