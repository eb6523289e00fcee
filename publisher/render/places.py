"""What the pages show of :mod:`publisher.audit`: notes in the turns, links in the
sections, and the overview at the top. Pure functions of the session (and where its turns
are), shared by the site's pages and the single-file export."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..audit import DECISION_RULES, ERROR_RULES, REFUSED, Audit
from ..model import Session, ToolPart
from . import view
from .contexts import DecisionNote, ErrorNote, OutlineEntry, Overview, Placed
from .text import FIRST_LINE_RE

OUTLINE_TURNS = 150
"""The outline lists at most this many turns from the first (a page's worth), then only
the turns with an error or a refused decision: a 3,000-turn outline doubled the first page
(a reader opens the later pages from the pager)."""


def error_code(code: object) -> str:
    """``HTTP 503``; ``no HTTP status`` for ``0`` (the spec's "no status"); ``code X`` else."""
    if isinstance(code, float) and code.is_integer():
        code = int(code)
    if isinstance(code, bool):
        return f"code {str(code).lower()}"
    if code == 0 or code == "" or code == "0":
        return "no HTTP status"
    if isinstance(code, int) and 100 <= code <= 599:
        return f"HTTP {code}"
    return f"code {code}"


def turn_notes(
    session: Session, audit: Audit, position: int
) -> tuple[list[ErrorNote], dict[int, list[DecisionNote]]]:
    """The errors placed in the turn at ``position``, and its decisions by part number."""
    errors = [
        ErrorNote(e.number, session.errors[e.number - 1], ERROR_RULES[e.rule])
        for e in audit.errors_in(position)
    ]
    decisions = {
        number: [
            DecisionNote(d.number, session.permissions[d.number - 1], DECISION_RULES[d.rule])
            for d in found
        ]
        for number, found in audit.decisions_in(position).items()
    }
    return errors, decisions


def section_places(
    session: Session, audit: Audit, hrefs: Sequence[str]
) -> tuple[list[Placed], list[Placed]]:
    """For the Errors section and the Permissions table: where each entry is shown.

    ``hrefs[position]`` is the link to the turn at that position (``#turn-3``)."""
    errors = []
    for e in audit.errors:
        if e.position is None:
            errors.append(Placed(None, "", ERROR_RULES[e.rule]))
        else:
            turn = session.turns[e.position]
            errors.append(Placed(hrefs[e.position], f"turn {turn.index}", ERROR_RULES[e.rule]))
    decisions = []
    for d in audit.decisions:
        if d.position is None or d.part is None:
            decisions.append(Placed(None, "", DECISION_RULES["unmatched"]))
        else:
            turn = session.turns[d.position]
            decisions.append(
                Placed(
                    f"{hrefs[d.position]}.{d.part}",
                    f"call {turn.index}.{d.part}",
                    DECISION_RULES[d.rule],
                )
            )
    return errors, decisions


def overview(session: Session, audit: Audit, hrefs: Sequence[str]) -> Overview:
    """The overview of a session whose turn ``position`` is at ``hrefs[position]``."""
    turns = session.turns
    errors_at = [0] * len(turns)
    failed_at = [0] * len(turns)
    refused_at = [0] * len(turns)
    error_hrefs: list[tuple[int, int, str]] = []
    refused_hrefs: list[tuple[int, int, str]] = []
    for e in audit.errors:
        if e.position is not None:
            errors_at[e.position] += 1
            error_hrefs.append((e.position, 0, f"{hrefs[e.position]}-error-{e.number}"))
    for d in audit.decisions:
        if d.position is not None and session.permissions[d.number - 1].decision in REFUSED:
            refused_at[d.position] += 1
            if d.part is not None:
                refused_hrefs.append((d.position, d.part, f"{hrefs[d.position]}.{d.part}"))
    models: list[str] = []
    seen: set[str] = set()
    outline = []
    busy = 0.0
    longest = 0.0
    tool_errors = 0
    last_end: datetime | None = None
    for position, turn in enumerate(turns):
        model, provider = turn.model, turn.provider
        label = f"{model} · {provider}" if model and provider else model or provider
        if label and label not in seen:
            seen.add(label)
            models.append(label)
        tools = 0
        for number, part in enumerate(turn.parts, start=1):
            if isinstance(part, ToolPart):
                tools += 1
                if part.failed:
                    tool_errors += 1
                    failed_at[position] += 1
                    error_hrefs.append((position, number, f"{hrefs[position]}.{number}"))
        # Each time read once (the session's end is the last one).
        end = view.parse_time(turn.ended_at)
        last_end = end or last_end
        seconds = view.seconds_between(view.parse_time(turn.started_at), end)
        if seconds is not None and seconds > 0:
            busy += seconds
            longest = max(longest, seconds)
        prompt = view.prompt_of(turn)
        match = FIRST_LINE_RE.search(prompt)
        first = prompt[match.start() : match.end()][:120] if match else ""
        outline.append(
            OutlineEntry(
                index=turn.index,
                href=hrefs[position],
                status=turn.status,
                duration=view.format_duration(seconds),
                seconds=seconds if seconds is not None and seconds > 0 else 0.0,
                tools=tools,
                prompt=first,
                errors=errors_at[position],
                failed=failed_at[position],
                refused=refused_at[position],
            )
        )
    total = "-"
    if turns:
        total = view.format_duration(
            view.seconds_between(view.parse_time(turns[0].started_at), last_end)
        )
    shown = [
        entry
        for position, entry in enumerate(outline)
        if position < OUTLINE_TURNS or entry.errors or entry.failed or entry.refused
    ]
    return Overview(
        outcome=turns[-1].status if turns else "",
        duration=total,
        busy=view.format_duration(busy) if turns else "-",
        models=models,
        outline=shown,
        outline_hidden=len(outline) - len(shown),
        errors=[h for _, _, h in sorted(error_hrefs)],
        refused=[h for _, _, h in sorted(refused_hrefs)],
        tool_errors=tool_errors,
        bars=_bars(outline, longest),
    )


def _bars(outline: list[OutlineEntry], longest: float) -> list[tuple[str, str, str, str]]:
    """Each run of consecutive turns of one status as a bar, its width by their durations
    (each turn at least a sliver, so every turn counts): (x, width, status, turns). A
    3,000-turn session of mostly ``ok`` turns draws a few bars, not 3,000."""
    if not outline:
        return []
    floor = (longest or 1.0) / 50
    widths = [max(e.seconds, floor) for e in outline]
    total = sum(widths)
    runs: list[tuple[float, float, str, int, int]] = []  # x, width, status, first, last
    x = 0.0
    for entry, width in zip(outline, widths, strict=True):
        w = width / total * 1000
        if runs and runs[-1][2] == entry.status and len(outline) > RUN_BARS_FROM:
            start, wide, status, first, _ = runs[-1]
            runs[-1] = (start, wide + w, status, first, entry.index)
        else:
            runs.append((x, w, entry.status, entry.index, entry.index))
        x += w
    return [
        (f"{start:.2f}", f"{max(w - 0.5, 0.3):.2f}", status,
         f"Turn {first}" if first == last else f"Turns {first}–{last}")
        for start, w, status, first, last in runs
    ]  # fmt: skip


RUN_BARS_FROM = 100
"""From this many turns on, consecutive turns of one status share a bar."""
