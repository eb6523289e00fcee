"""What the pages show of :mod:`publisher.audit`: notes in the turns, links in the
sections, and the overview at the top. Pure functions of the session (and where its turns
are), shared by the site's pages and the single-file export."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from ..audit import DECISION_RULES, ERROR_RULES, Audit
from ..model import Session, ToolPart
from ..outcome import Outcome
from ..usage import Spend
from . import tools, view
from .contexts import (
    ChangedFile,
    DecisionNote,
    ErrorNote,
    FailureLink,
    OutlineEntry,
    Overview,
    Placed,
    SubAgent,
)
from .text import FIRST_LINE_RE

OUTLINE_TURNS = 150
"""The outline lists at most this many turns from the first (a page's worth), then only
the turns with an error or a refused decision: a 3,000-turn outline doubled the first page
(a reader opens the later pages from the pager)."""


def error_code(code: object) -> str:
    """``HTTP 503``; ``no HTTP status`` for ``0`` (the format's "no status":
    docs/session-format.md); ``code X`` else."""
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


def overview(
    session: Session,
    audit: Audit,
    hrefs: Sequence[str],
    spends: Sequence[Spend] = (),
    priced_by: str = "",
    times: Sequence[view.TurnTimes] | None = None,
) -> Overview:
    """The overview of a session whose turn ``position`` is at ``hrefs[position]``;
    ``spends``: what each turn spent (:func:`publisher.usage.turn_spend`, none when not
    given), priced with the table ``priced_by`` names; ``times``: each turn's
    (:func:`turn_times`, made here when not given).

    Its failures are :func:`publisher.gate.session_findings` (the counts ``check``, the
    index, the summary and the JUnit report give); its times are work time
    (:class:`.view.TurnTimes`), the idle gaps and the wall-clock span said apart."""
    from ..gate import Tally, fit, session_findings

    turns = session.turns
    found = session_findings(session, audit=audit)
    marks = [Counter[str]() for _ in turns]
    failures = []
    for f in found:
        what = fit(_what(f.kind, f.message), FAILURE_CHARS)
        if f.position is None:
            failures.append(FailureLink(None, f.kind, f.where, what))
            continue
        marks[f.position][f.kind] += 1
        if f.kind == "error" and f.entry is not None:
            href = f"{hrefs[f.position]}-error-{f.entry}"
        elif f.part is not None:
            href = f"{hrefs[f.position]}.{f.part}"
        else:
            href = hrefs[f.position]
        failures.append(FailureLink(href, f.kind, f.where, what))
    models: list[str] = []
    seen: set[str] = set()
    outline = []
    totals = dict.fromkeys(("model", "tool", "waiting", "idle"), 0.0)
    first_start: datetime | None = None
    last_end: datetime | None = None
    total = Spend()
    times_of = turn_times(session, audit) if times is None else times
    for position, turn in enumerate(turns):
        model, provider = turn.model, turn.provider
        label = f"{model} · {provider}" if model and provider else model or provider
        if label and label not in seen:
            seen.add(label)
            models.append(label)
        start, end = view.parse_time(turn.started_at), view.parse_time(turn.ended_at)
        first_start = first_start or start
        last_end = end or last_end
        times_here = times_of[position]
        seconds = times_here.work if times_here.work is not None and times_here.work > 0 else 0.0
        totals["model"] += times_here.model
        totals["tool"] += times_here.tool
        totals["waiting"] += times_here.waiting
        totals["idle"] += sum(times_here.idle) + times_here.idle_before
        spent = spends[position] if position < len(spends) else Spend()
        prompt = view.prompt_of(turn)
        match = FIRST_LINE_RE.search(prompt)
        first = prompt[match.start() : match.end()][:120] if match else ""
        here = marks[position]
        long_wait = times_here.before if times_here.before > view.IDLE_AFTER else 0.0
        outline.append(
            OutlineEntry(
                index=turn.index,
                href=hrefs[position],
                status=turn.status,
                duration=view.format_duration(times_here.work),
                seconds=seconds,
                tools=turn.tool_count,
                prompt=first,
                errors=here["error"],
                failed=here["tool-error"],
                refused=here["denied"] + here["declined"],
                idle=sum(times_here.idle) + times_here.idle_before,
                waiting=long_wait,
                tokens=spent.tokens.total if spent.tokens is not None else None,
            )
        )
        total = total.plus(spent)
    shown = [
        entry
        for position, entry in enumerate(outline)
        if position < OUTLINE_TURNS or entry.errors or entry.failed or entry.refused
    ]
    tally = Tally.of(found)
    work = totals["model"] + totals["tool"]
    return Overview(
        changes=changed_files(session, hrefs),
        outcome=turns[-1].status if turns else "",
        span=view.format_duration(view.seconds_between(first_start, last_end)),
        work=view.format_duration(work) if turns else "-",
        model_time=view.format_duration(totals["model"]) if turns else "-",
        tool_time=view.format_duration(totals["tool"]) if turns else "-",
        waiting=view.format_duration(totals["waiting"]) if turns else "-",
        idle=view.format_duration(totals["idle"]) if totals["idle"] else "",
        models=models,
        outline=shown,
        outline_hidden=len(outline) - len(shown),
        failures=failures,
        tally=tally,
        tool_errors=tally.failed_calls,
        calls=sum(turn.tool_count for turn in turns),
        bars=_bars(outline),
        spend=total,
        priced_by=priced_by,
    )


_SAID_BY_KIND = ("tool error: ", "permission denied: ", "permission declined: ")
_STATUS_WHAT = {
    "status error": "the turn ended in an error",
    "status truncated": "the answer was cut short",
    "status cancelled": "the turn was stopped before it finished",
}


def _what(kind: str, message: str) -> str:
    """A finding's message as the overview's list shows it, beside its kind's label: the
    label's words are not said again (``Bash: Exit code 1 …``, not ``tool error: …``)."""
    for prefix in _SAID_BY_KIND:
        if message.startswith(prefix):
            return message[len(prefix) :]
    if message.startswith("status running"):
        return "the run never finished"
    return _STATUS_WHAT.get(message, message)


def turn_times(session: Session, audit: Audit) -> list[view.TurnTimes]:
    """Each turn's :class:`.view.TurnTimes`, with the permission asks placed on its calls
    and the end of the turn before (made once for a session's page and its overview)."""
    out = []
    previous_end = ""
    for position, turn in enumerate(session.turns):
        out.append(view.TurnTimes.of(turn, asks_in(session, audit, position), previous_end))
        previous_end = turn.ended_at or previous_end
    return out


def asks_in(session: Session, audit: Audit, position: int) -> list[str]:
    """The times of the permission decisions that asked the person (action ``ask``)
    matched to a call of the turn at ``position`` (:class:`.view.TurnTimes`)."""
    return [
        permission.timestamp
        for found in audit.decisions_in(position).values()
        for d in found
        if (permission := session.permissions[d.number - 1]).action == "ask"
    ]


def sub_agents_of(
    session: Session,
    targets: Sequence[str],
    hrefs: Sequence[str],
    children: Sequence[tuple[str, str | None, str]],
) -> list[SubAgent]:
    """The session's sub-sessions in the order its delegate calls spawned them (each with
    the role and task its first call gave it and a link to that call), then those no call
    names. ``targets``: the sub-session each delegate call spawned, in file order
    (:func:`publisher.audit.match_delegations`); ``children``: (name, page or None, role)."""
    from ..audit import delegations

    known = {name: (url, role) for name, url, role in children}
    listed: dict[str, SubAgent] = {}
    for (position, number, call), target in zip(delegations(session), targets, strict=False):
        if not target or target in listed:
            continue
        part = session.turns[position].parts[number - 1]
        seen = tools.friendly(part) if isinstance(part, ToolPart) else None
        task = FIRST_LINE_RE.search(seen.task) if seen is not None else None
        url, role = known.get(target, (None, ""))
        listed[target] = SubAgent(
            name=target,
            url=url,
            role=role or call.role,
            task=task.group(0).strip()[:160] if task else "",
            call=f"{hrefs[position]}.{number}",
            call_label=f"{session.turns[position].index}.{number}",
        )
    for name, url, role in children:
        if name not in listed:
            listed[name] = SubAgent(name=name, url=url, role=role, task="", call=None)
    return list(listed.values())


def own_outcome(name: str, facts: Overview) -> Outcome:
    """What session ``name`` did by itself, from its overview (its tool calls, findings and
    changed files), to add to what the sessions below it did."""
    changes = tuple(
        (name, c.path, action, href) for c in facts.changes for _, href, action in c.calls
    )
    return Outcome(1, facts.calls, tuple(facts.tally.by_kind.items()), changes, facts.spend)


def changed_files(session: Session, hrefs: Sequence[str]) -> list[ChangedFile]:
    """The files the session's calls changed (:func:`.tools.changes_of`), each with the
    calls that changed it, in the order of their first change."""
    base = view.workspace(session)
    by_path: dict[str, list[tuple[str, str, str]]] = {}
    for change in tools.changes_of(session):
        turn = session.turns[change.position]
        where = f"{turn.index}.{change.number}"
        href = f"{hrefs[change.position]}.{change.number}"
        by_path.setdefault(change.path, []).append((where, href, change.action))
    return [
        ChangedFile(path, view.relative_to(path, base), calls) for path, calls in by_path.items()
    ]


FAILURE_CHARS = 140
"""How much of a finding's message the overview's list of failures shows."""


def _bars(outline: list[OutlineEntry]) -> list[tuple[str, str, str, str]]:
    """Each run of consecutive turns of one status as a bar, its width by their work time
    (each turn at least a sliver, so every turn counts), and an idle gap
    (:data:`.view.IDLE_AFTER`) before a turn or within it as a break of its own, drawn the
    same width whatever it lasted: (x, width, status, title); status ``idle`` for a break.
    A 3,000-turn session of mostly ``ok`` turns draws a few bars, not 3,000."""
    if not outline:
        return []
    longest = max(e.seconds for e in outline)
    floor = (longest or 1.0) / 50
    widths = [max(e.seconds, floor) for e in outline]
    breaks = sum(1 for e in outline if e.idle or e.waiting)
    gap = 12.0 if breaks else 0.0  # a break's width, out of 1000
    room = 1000 - gap * breaks
    total = sum(widths)
    runs: list[tuple[float, float, str, str, str]] = []  # x, width, status, first, last
    x = 0.0
    for entry, width in zip(outline, widths, strict=True):
        if entry.idle or entry.waiting:
            runs.append((x, gap, "idle", _pause(entry), ""))
            x += gap
        w = width / total * room
        index = str(entry.index)
        if runs and runs[-1][2] == entry.status and len(outline) > RUN_BARS_FROM:
            start, wide, status, first, _ = runs[-1]
            runs[-1] = (start, wide + w, status, first, index)
        else:
            runs.append((x, w, entry.status, index, index))
        x += w
    out = []
    for start, w, status, first, last in runs:
        if status == "idle":
            title = first
        else:
            title = f"Turn {first}" if first == last else f"Turns {first}–{last}"
            title += f": {status or 'no status'}"
        out.append((f"{start:.2f}", f"{max(w - 0.5, 0.3):.2f}", status, title))
    return out


def _pause(entry: OutlineEntry) -> str:
    """A break's title: ``waiting on the person 14h05m``, ``idle 2h10m``, or both."""
    said = [f"waiting on the person {view.format_duration(entry.waiting)}" if entry.waiting else ""]
    said.append(f"idle {view.format_duration(entry.idle)}" if entry.idle else "")
    return ", ".join(filter(None, said))


RUN_BARS_FROM = 100
"""From this many turns on, consecutive turns of one status share a bar."""
