"""What the archive spent, day by day, by role and by model: the tokens and cost of the
index's activity chart (issue 29).

Made of each session's usage groups (:attr:`.summary.Summary.usage`), kept in its catalog
row (``sources.spend``: :func:`contribution`) and added up by (day, role, model) in the
index's overview (:class:`.index.Overview`: counted once, then brought up to date from the
rows a build set or dropped, as they were and as they are, by :func:`count`), so a build
does not read every session's summary to draw it. The days are those the chart shows
(:mod:`.activity`); a session's tokens count on the UTC day of the turn that spent them (a
run over midnight counts on both days).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..render import view
from ..render.contexts import SpendActivity, SpendBar, SpendRow, SpendSegment
from ..usage import Group, micro_usd

Key = tuple[str, str, str]
"""(day, role, model)."""
Sums = dict[Key, tuple[int, int, int]]
"""(day, role, model) → (tokens, pico-dollars, unpriced tokens)."""

MODELS = 6
"""The chart's bars stack this many models, the ones that spent the most tokens in the
days shown; the others are one segment, ``other models``."""
HEIGHT = 90
"""The tokens chart's height (SVG units; the width is the activity chart's)."""


def contribution(groups: Sequence[Group]) -> list[Any] | None:
    """What one session adds (its catalog row's ``spend``, as JSON): ``[day, model,
    tokens, pico-dollars, unpriced tokens]`` a group; None when it records no usage."""
    if not groups:
        return None
    return [
        [day, model, i + o + cr + cw, pico, unpriced]
        for day, model, i, o, cr, cw, _, pico, unpriced in groups
    ]


def count(sums: dict[Key, tuple[int, int, int]], role: str, spend: Any, sign: int) -> None:
    """Count one session's ``spend`` (its :func:`contribution`, as data) in (``sign`` 1) or
    out (-1) of ``sums``, under its ``role``; a sum that falls to nothing goes."""
    for day, model, tokens, pico, unpriced in spend:
        key = (day, role, model)
        t, p, u = sums.get(key, (0, 0, 0))
        now = (t + sign * tokens, p + sign * pico, u + sign * unpriced)
        if any(now):
            sums[key] = now
        else:
            sums.pop(key, None)


def spend_activity(
    sums: Mapping[Key, tuple[int, int, int]], days: Sequence[str], width: float
) -> SpendActivity | None:
    """The tokens chart and its tables for ``days`` (ISO, oldest first, as the activity
    chart shows them, ``width`` SVG units wide); None when nothing was spent in them."""
    shown = set(days)
    by_day: dict[str, list[int]] = {}
    by_model: dict[str, list[int]] = {}
    by_role: dict[str, list[int]] = {}
    day_model: dict[tuple[str, str], int] = {}
    for (day, role, model), (tokens, pico, unpriced) in sums.items():
        if day not in shown:
            continue
        for table, key in ((by_day, day), (by_model, model), (by_role, role)):
            row = table.setdefault(key, [0, 0, 0])
            row[0] += tokens
            row[1] += pico
            row[2] += unpriced
        day_model[day, model] = day_model.get((day, model), 0) + tokens
    if not any(t for t, _, _ in by_day.values()):
        return None
    ranked = sorted(by_model, key=lambda m: (-by_model[m][0], m))
    stacked = ranked[:MODELS]
    top = max(t for t, _, _ in by_day.values()) or 1
    step = width / len(days)
    bar = max(step * 0.7, 1.0)
    bars = []
    for i, day in enumerate(days):
        segments: list[SpendSegment] = []
        y = float(HEIGHT)
        parts = [(m, day_model.get((day, m), 0)) for m in stacked]
        rest = by_day.get(day, [0, 0, 0])[0] - sum(n for _, n in parts)
        for index, (model, tokens) in enumerate([*parts, ("other models", rest)]):
            if tokens <= 0:
                continue
            h = tokens / top * HEIGHT
            y -= h
            segments.append(SpendSegment(model, index, tokens, round(y, 2), round(h, 2)))
        if segments:
            bars.append(
                SpendBar(day, round(i * step + (step - bar) / 2, 2), round(bar, 2), segments)
            )

    def rows(table: dict[str, list[int]], order: list[str]) -> list[SpendRow]:
        return [
            SpendRow(
                key,
                table[key][0],
                view.cost_text(table[key][1], table[key][2], table[key][0]),
                micro_usd(table[key][1]),
            )
            for key in order
            if table[key][0]
        ]

    tokens = sum(t for t, _, _ in by_day.values())
    pico = sum(p for _, p, _ in by_day.values())
    unpriced = sum(u for _, _, u in by_day.values())
    return SpendActivity(
        tokens=tokens,
        cost=view.cost_text(pico, unpriced, tokens),
        top=top,
        height=HEIGHT,
        bars=bars,
        models=[m for m in stacked if by_model[m][0]]
        + (["other models"] if ranked[MODELS:] else []),
        days=rows(by_day, [d for d in reversed(days) if d in by_day]),
        by_model=rows(by_model, ranked),
        by_role=rows(by_role, sorted(by_role, key=lambda r: (-by_role[r][0], r))),
    )
