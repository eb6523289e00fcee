"""Where the events kept outside the turn log happened: the one home of the matching rules.

A session keeps its ``errors`` and ``permissions`` beside the turns, each with only a
timestamp. The session pages, the Markdown export and the CI findings (:mod:`.gate`) all
place them with the rules of this module, so they always agree.

**Error → turn.** An error goes to the latest-started turn whose ``started_at``–``ended_at``
span holds its timestamp (rule ``within``); when no span holds it, to the latest turn
started at or before it (rule ``in progress``: the turn running then, or the last one that
ran: an error recorded just after a turn failed belongs to that turn). An error with no
readable timestamp, or one earlier than every turn, is placed in no turn (rule
``unplaced``). Timestamps without a zone are read as UTC.

**Decision → tool call.** A permission decision is first placed in a turn by the same rule,
then matched to a tool part of that turn with the same tool name, choosing, in order:
a call whose input names the decision's ``path`` (a string value equal to it, or, for a
command, starting with it) and was not matched yet (of several, the one with the same
timestamp, else the last started at or before the decision, else the first); the call with the same timestamp; the
last call started before it; the first call. Rules: ``path``, ``same time``, ``before``,
``first``. A decision whose turn holds no call of that tool, or that is placed in no turn,
matches no call (rule ``unmatched``) and is shown only in the table.

**Delegate call → sub-session.** A delegate call that names its sub-session (an
importer's ``sub_session`` field, or Polyglav's ``Delegated to <name>`` output) spawned that
one. The others, in file order, each take the earliest-created sub-session of the caller
(declared in ``sub_sessions`` or naming it as ``parent_id``) that no call has taken yet,
whose ``role`` is the role the call asked for and whose ``created_at`` is at or after the
call's timestamp (a time that does not read is no constraint). A sub-session named by a
call is never taken by another. The site's pages, their links back from a sub-session to
its call, and the single-file export all use :func:`match_delegations`.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from .model import JSON, Session, ToolPart, Turn
from .render.view import parse_time

WITHIN = "within"
IN_PROGRESS = "in progress"
UNPLACED = "unplaced"
REFUSED = ("denied", "declined")
"""The permission decisions that are refusals: what ``check --fail-on`` names, what a session
page counts as refused, what the Decisions page lists first (in this order)."""
#: How each error rule reads on a page ("placed by …").
ERROR_RULES = {
    WITHIN: "its time is within this turn",
    IN_PROGRESS: "this turn was the one in progress at its time",
    UNPLACED: "it has no time within any turn",
}
DECISION_RULES = {
    "path": "same tool, its path or command",
    "same time": "same tool, same time",
    "before": "same tool, the last call before it",
    "first": "same tool, the first call of the turn",
    "unmatched": "no call of this tool in the turn it falls in",
}


def utc_time(value: str) -> datetime | None:
    """A timestamp as an aware UTC datetime (a naive one is read as UTC), or None."""
    parsed = parse_time(value)
    if parsed is None or parsed.tzinfo is UTC:
        return parsed  # ("Z" and "+00:00" read as UTC itself: nothing to convert)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


def attribute(turns: list[Turn], stamps: Iterable[str]) -> list[int | None]:
    """For each timestamp, the position of the turn it is placed in (module docstring)."""
    return [position for position, _ in place(turns, stamps)]


def place(turns: list[Turn], stamps: Iterable[str]) -> list[tuple[int | None, str]]:
    """For each timestamp, (position of its turn or None, the rule that placed it).

    One sweep over the events in time order with a heap of the turns started so far: a
    turn whose span ended before the current event can hold no later event either, so it
    is dropped for good. O((turns + events) log turns).
    """
    return _Spans(turns).place(stamps)


class _Spans:
    """The turns' spans in start order, read once per session (its errors and its
    decisions are placed against the same spans)."""

    def __init__(self, turns: list[Turn]) -> None:
        spans: list[tuple[datetime, datetime, int]] = []
        for position, turn in enumerate(turns):
            start = utc_time(turn.started_at)
            if start is None:
                continue
            end = utc_time(turn.ended_at)
            spans.append((start, end if end is not None and end >= start else start, position))
        spans.sort(key=lambda span: (span[0], span[2]))
        self.spans = spans
        self.starts = [span[0] for span in spans]

    def place(self, stamps: Iterable[str]) -> list[tuple[int | None, str]]:
        """:func:`place` of ``stamps`` against these spans."""
        spans, starts = self.spans, self.starts
        times = [utc_time(stamp) for stamp in stamps]
        out: list[tuple[int | None, str]] = [(None, UNPLACED)] * len(times)
        if not spans:
            return out  # no turn has a readable start: nothing can be placed
        order = sorted(
            (i for i, when in enumerate(times) if when is not None),
            key=lambda i: times[i],  # type: ignore[arg-type, return-value]
        )
        heap: list[tuple[float, int, int, datetime]] = []  # (-start, -order, position, end)
        added = 0
        for i in order:
            when = times[i]
            assert when is not None
            limit = bisect_right(starts, when)
            while added < limit:
                start, end, position = spans[added]
                heapq.heappush(heap, (-start.timestamp(), -added, position, end))
                added += 1
            while heap and heap[0][3] < when:
                heapq.heappop(heap)
            if heap:
                out[i] = (heap[0][2], WITHIN)
            elif limit:
                out[i] = (spans[limit - 1][2], IN_PROGRESS)
        return out


@dataclass(slots=True, frozen=True)
class ErrorPlace:
    """Where one entry of ``errors`` happened."""

    number: int
    """Its 1-based position in the session's ``errors``."""
    position: int | None
    """0-based position of its turn in ``Session.turns``, or None."""
    rule: str
    """``within``, ``in progress`` or ``unplaced``."""


@dataclass(slots=True, frozen=True)
class DecisionPlace:
    """Which tool call one entry of ``permissions`` resolved."""

    number: int
    """Its 1-based position in the session's ``permissions``."""
    position: int | None
    """0-based position of its turn, or None."""
    part: int | None
    """1-based number of the tool part in that turn, or None when it matches no call."""
    rule: str
    """``path``, ``same time``, ``before``, ``first`` or ``unmatched``."""


def _strings(value: JSON) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


#: A command names a decision's path when it starts with it: its first words are indexed.
_PREFIX_WORDS = 8


class _Calls:
    """The tool calls of one turn by name: their times in order and the strings their
    inputs name, built once per turn and tool name, when a decision on that tool is first
    matched in the turn (matching stays O(log n) a decision; the calls of tools no decision
    names are not read)."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.first: dict[str, int] = {}
        for number, part in enumerate(turn.parts, start=1):
            if isinstance(part, ToolPart) and part.name not in self.first:
                self.first[part.name] = number
        self.named: dict[tuple[str, str], list[int]] = {}
        self.times: dict[str, tuple[list[datetime], list[int]]] = {}
        self.when: dict[int, datetime | None] = {}
        self.indexed: set[str] = set()
        self.claimed: set[int] = set()

    def _index(self, tool: str) -> None:
        """Index the calls of ``tool``: their times, and the strings their inputs name."""
        self.indexed.add(tool)
        timed: list[tuple[datetime, int]] = []
        for number, part in enumerate(self.turn.parts, start=1):
            if not isinstance(part, ToolPart) or part.name != tool:
                continue
            when = self.when[number] = utc_time(part.timestamp)
            if when is not None:
                timed.append((when, number))
            keys: set[str] = set()
            for value in _strings(part.input):
                keys.add(value)
                # Its first words: the text before each of its first _PREFIX_WORDS - 1
                # spaces (no copy of a long value, as splitting it made).
                cut = -1
                for _ in range(_PREFIX_WORDS - 1):
                    cut = value.find(" ", cut + 1)
                    if cut < 0:
                        break
                    keys.add(value[:cut])
            for key in keys:
                self.named.setdefault((tool, key), []).append(number)
        if timed:
            timed.sort()
            self.times[tool] = ([w for w, _ in timed], [n for _, n in timed])

    def match(self, tool: str, path: str, stamp: str) -> tuple[int | None, str]:
        if tool not in self.first:
            return None, "unmatched"
        if tool not in self.indexed:
            self._index(tool)
        at = utc_time(stamp)
        if path:
            candidates = self.named.get((tool, path), [])
            free = [n for n in candidates[:64] if n not in self.claimed]
            if free:
                chosen = free[0]
                if at is not None:  # same time, else the last started by then
                    same = [n for n in free if self.when[n] == at]
                    before = [n for n in free if (w := self.when[n]) is not None and w <= at]
                    chosen = same[0] if same else before[-1] if before else chosen
                self.claimed.add(chosen)
                return chosen, "path"
        if at is None or tool not in self.times:
            return self.first[tool], "first"
        times, numbers = self.times[tool]
        i = bisect_left(times, at)
        if i < len(times) and times[i] == at:
            return numbers[i], "same time"
        if i:
            return numbers[i - 1], "before"
        return self.first[tool], "first"


@dataclass(slots=True)
class Audit:
    """Every error and decision of a session, placed (computed once per session)."""

    errors: list[ErrorPlace]
    decisions: list[DecisionPlace]
    _errors_by_turn: dict[int, list[ErrorPlace]]
    _decisions_by_turn: dict[int, dict[int, list[DecisionPlace]]]

    @classmethod
    def of(cls, session: Session) -> Audit:
        turns = session.turns
        spans = _Spans(turns) if session.errors or session.permissions else None
        errors = [
            ErrorPlace(i, position, rule)
            for i, (position, rule) in enumerate(
                spans.place(e.timestamp for e in session.errors) if spans else [], start=1
            )
        ]
        decisions: list[DecisionPlace] = []
        index: dict[int, _Calls] = {}
        placed = spans.place(p.timestamp for p in session.permissions) if spans else []
        for i, (permission, (position, _)) in enumerate(
            zip(session.permissions, placed, strict=True), start=1
        ):
            if position is None:
                decisions.append(DecisionPlace(i, None, None, "unmatched"))
                continue
            calls = index.get(position)
            if calls is None:
                calls = index[position] = _Calls(turns[position])
            part, rule = calls.match(permission.tool, permission.path, permission.timestamp)
            decisions.append(DecisionPlace(i, position, part, rule))
        errors_by_turn: dict[int, list[ErrorPlace]] = {}
        for e in errors:
            if e.position is not None:
                errors_by_turn.setdefault(e.position, []).append(e)
        decisions_by_turn: dict[int, dict[int, list[DecisionPlace]]] = {}
        for d in decisions:
            if d.position is not None and d.part is not None:
                decisions_by_turn.setdefault(d.position, {}).setdefault(d.part, []).append(d)
        return cls(errors, decisions, errors_by_turn, decisions_by_turn)

    def errors_in(self, position: int) -> list[ErrorPlace]:
        """The errors placed in the turn at ``position``."""
        return self._errors_by_turn.get(position, [])

    def decisions_in(self, position: int) -> dict[int, list[DecisionPlace]]:
        """The decisions matched to the calls of one turn, by part number."""
        return self._decisions_by_turn.get(position, {})


def match_call(turn: Turn, tool: str, path: str, stamp: str) -> tuple[int | None, str]:
    """The tool part of ``turn`` a decision on ``tool``/``path`` at ``stamp`` resolved, and
    the rule that chose it (module docstring); ``(None, "unmatched")`` when none."""
    return _Calls(turn).match(tool, path, stamp)


@dataclass(slots=True, frozen=True)
class Delegation:
    """A delegate call, as the delegation rule reads it (module docstring)."""

    named: str
    """The sub-session the call names itself, or "" when it names none."""
    role: str
    """The role the call delegated to ("" when it says none)."""
    timestamp: str
    """The call's timestamp as written."""


@dataclass(slots=True, frozen=True)
class Spawn:
    """A sub-session of the caller, as the delegation rule reads it."""

    name: str
    """Its session name."""
    role: str
    """Its ``role``."""
    created_at: str
    """Its ``created_at`` as written."""


def delegations(session: Session) -> list[tuple[int, int, Delegation]]:
    """The session's delegate calls in file order: (turn position, part number, call)."""
    from .render.tools import delegation_of

    found = []
    for position, turn in enumerate(session.turns):
        for number, part in enumerate(turn.parts, start=1):
            if isinstance(part, ToolPart) and (call := delegation_of(part)) is not None:
                found.append((position, number, call))
    return found


def match_delegations(calls: Sequence[Delegation], children: Iterable[Spawn]) -> list[str]:
    """The sub-session each of ``calls`` spawned ("" for none), by the delegation rule
    (module docstring); ``children``: the caller's sub-sessions in the archive."""
    named = {call.named for call in calls if call.named}
    free = sorted(
        (c for c in children if c.name not in named),
        key=lambda c: (_created(c.created_at), c.name),
    )
    out = []
    for call in calls:
        if call.named:
            out.append(call.named)
            continue
        after = utc_time(call.timestamp)
        for i, child in enumerate(free):
            if child.role != call.role:
                continue
            born = utc_time(child.created_at)
            if after is not None and born is not None and born < after:
                continue
            out.append(free.pop(i).name)
            break
        else:
            out.append("")
    return out


def delegation_targets(session: Session, targets: Sequence[str]) -> dict[int, dict[int, str]]:
    """``targets`` (:func:`match_delegations` of the session's calls, in file order) by turn
    position and part number; calls that spawned nothing are left out."""
    out: dict[int, dict[int, str]] = {}
    for (position, number, _), target in zip(delegations(session), targets, strict=False):
        if target:
            out.setdefault(position, {})[number] = target
    return out


def _created(stamp: str) -> tuple[int, datetime]:
    """A sort key of creation times: readable ones in time order, then the others."""
    when = utc_time(stamp)
    return (0, when) if when is not None else (1, datetime.min.replace(tzinfo=UTC))
