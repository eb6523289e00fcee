"""What went wrong in a session, for CI: the findings that ``--fail-on KINDS`` gates on.

A *finding* is one thing of a kind CI may fail on, named by the turn it happened in:

======================  =================================================================
kind                    found when
======================  =================================================================
``error``               an entry of the session's ``errors`` array, or a turn whose status
                        is ``error``
``tool-error``          a tool part whose result has ``is_error: true``
``denied``              a permission decision ``denied`` (blocked by policy)
``declined``            a permission decision ``declined`` (the user refused an ask)
``truncated``           a turn whose status is ``truncated``
``cancelled``           a turn whose status is ``cancelled``
``running``             a turn whose status is ``running`` (the run never finished)
======================  =================================================================

**Attribution.** Turn statuses and tool errors belong to their turn (``N``) or part
(``N.M``, numbered as ``/print N.M`` numbers parts). Errors and permission decisions live
outside the turn log with only a timestamp, so they are attributed by time: the event goes
to the latest-started turn whose ``started_at``–``ended_at`` span holds its timestamp; when
no span holds it, to the latest turn started at or before it (the turn in progress, or the
last one that ran: an error recorded just after a turn failed belongs to that turn). A
permission is then narrowed to the tool part of its turn with the same tool name and the same
timestamp, else the last such part started before it, else the first. An event with no
readable timestamp, or one earlier than every turn, names no turn (``turn`` is empty).
Timestamps without a zone are read as UTC.

**Sub-sessions.** :func:`session_tree` follows ``sub_sessions`` at any depth, depth first in
the order the parents list them; a name already visited is not followed again (a cycle or a
diamond), and a name that does not load is kept with the reason.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from .model import Session, ToolPart, Turn
from .render.text import FIRST_LINE_RE
from .render.view import parse_time

#: Every kind ``--fail-on`` takes, in the order reports list them.
KINDS: tuple[str, ...] = (
    "error",
    "tool-error",
    "denied",
    "declined",
    "truncated",
    "cancelled",
    "running",
)

#: Turn statuses that are findings, with the kind each one is and the message it gets.
STATUS_FINDINGS = {
    "error": "status error",
    "truncated": "status truncated",
    "cancelled": "status cancelled",
    "running": "status running: the run never finished",
}

#: Longest text quoted from the session in a message (characters); longer is cut with "…".
QUOTE_CHARS = 160

_LINE_BREAK_RE = re.compile("\r\n|[\r\n\t\u2028\u2029]")
_BREAK_ESCAPES = {
    "\r\n": "\\r\\n",
    "\r": "\\r",
    "\n": "\\n",
    "\t": "\\t",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


@dataclass(slots=True, frozen=True)
class Finding:
    """One thing of a ``--fail-on`` kind that happened in a session."""

    session: str
    """Name of the session it was found in (the root or a sub-session)."""
    kind: str
    """One of :data:`KINDS`."""
    turn: str
    """Where: ``"N"`` (turn index N), ``"N.M"`` (part M of turn N) or ``""`` (no turn)."""
    message: str
    """One line saying what happened, e.g. ``permission denied: run_command git push``.

    Text quoted from the session has its line breaks and tabs shown as ``\\n``/``\\t`` and is
    cut at :data:`QUOTE_CHARS`; other control characters are left for the renderer to escape.
    """
    position: int | None = None
    """0-based position of the turn in :attr:`Session.turns` (``None`` when no turn)."""
    part: int | None = None
    """1-based number of the part within the turn, when one is named."""

    @property
    def where(self) -> str:
        """``turn 7.2``, or ``no turn`` when the finding names none."""
        return f"turn {self.turn}" if self.turn else "no turn"


@dataclass(slots=True, frozen=True)
class Member:
    """One session of a tree: the root, or a sub-session at some depth."""

    name: str
    """The session name as its parent lists it (the root: its ``session_name``)."""
    session: Session | None
    """The loaded session, or ``None`` when it could not be loaded."""
    parent: str = ""
    """Name of the session that lists it, empty for the root."""
    depth: int = 0
    """0 for the root, 1 for its sub-sessions, and so on."""
    problem: str = ""
    """Why it could not be loaded (one line), empty when it was."""


#: Loads a sub-session by name: the session, or a one-line reason it could not be loaded.
Loader = Callable[[str], "Session | str"]


def parse_kinds(text: str) -> frozenset[str]:
    """The kinds of a ``--fail-on`` value (a comma list); ``ValueError`` names the valid ones."""
    names = [name.strip() for name in text.split(",")]
    names = [name for name in names if name]
    valid = ", ".join(KINDS)
    if not names:
        raise ValueError(f"--fail-on: no kind given; valid kinds: {valid}")
    unknown = [name for name in names if name not in KINDS]
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        noun = "kind" if len(unknown) == 1 else "kinds"
        raise ValueError(f"--fail-on: unknown {noun} {listed}; valid kinds: {valid}")
    return frozenset(names)


def one_line(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` on one line (line breaks and tabs as ``\\n``, ``\\t``), cut at ``limit``."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return _LINE_BREAK_RE.sub(lambda m: _BREAK_ESCAPES[m.group(0)], text)


def session_tree(root: Session, load: Loader | None = None) -> list[Member]:
    """The root and, when ``load`` is given, its sub-sessions at any depth (cycle-safe)."""
    members = [Member(root.session_name, root)]
    if load is None:
        return members
    seen = {root.session_name}
    stack = [(name, root.session_name, 1) for name in reversed(root.sub_sessions)]
    while stack:
        name, parent, depth = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        loaded = load(name)
        if isinstance(loaded, str):
            members.append(Member(name, None, parent, depth, loaded or "does not load"))
            continue
        members.append(Member(name, loaded, parent, depth))
        seen.add(loaded.session_name)
        stack.extend((child, name, depth + 1) for child in reversed(loaded.sub_sessions))
    return members


def findings(
    root: Session, kinds: Collection[str] = KINDS, load: Loader | None = None
) -> list[Finding]:
    """The findings of ``kinds`` in ``root`` and, unless ``load`` is None, its sub-sessions.

    Ordered by session (the tree's order), then turn, then part; deterministic.
    """
    out: list[Finding] = []
    for member in session_tree(root, load):
        if member.session is not None:
            out.extend(session_findings(member.session, kinds))
    return out


def session_findings(session: Session, kinds: Collection[str] = KINDS) -> list[Finding]:
    """The findings of ``kinds`` in one session (its sub-sessions are not read)."""
    wanted = frozenset(kinds)
    name = session.session_name
    keyed: list[tuple[tuple[int, int, int, int, int], Finding]] = []

    def add(seq: int, finding: Finding, last: int = 0) -> None:
        # In a turn: by part, then kind; a status comes after the errors it sums up.
        position = -1 if finding.position is None else finding.position
        key = (position, finding.part or 0, KINDS.index(finding.kind), last, seq)
        keyed.append((key, finding))

    seq = 0
    for position, turn in enumerate(session.turns):
        if turn.status in STATUS_FINDINGS and turn.status in wanted:
            message = STATUS_FINDINGS[turn.status]
            add(seq, Finding(name, turn.status, str(turn.index), message, position), last=1)
            seq += 1
        if "tool-error" in wanted:
            for number, part in enumerate(turn.parts, start=1):
                if isinstance(part, ToolPart) and part.output is not None and part.is_error:
                    add(seq, _tool_error(name, turn, position, number, part))
                    seq += 1

    # (timestamp, kind, message, tool): errors and permission decisions, attributed by time.
    events: list[tuple[str, str, str, str | None]] = []
    if "error" in wanted:
        for error in session.errors:
            events.append(
                (error.timestamp, "error", _error_message(error.code, error.message), None)
            )
    for permission in session.permissions:
        kind = permission.decision
        if kind in ("denied", "declined") and kind in wanted:
            what = one_line(f"{permission.tool} {permission.path}".strip())
            events.append(
                (permission.timestamp, kind, f"permission {kind}: {what}", permission.tool)
            )
    positions = attribute(session.turns, [event[0] for event in events]) if events else []
    calls = _ToolCalls(session)
    for (stamp, kind, message, tool), at in zip(events, positions, strict=True):
        add(seq, _attributed(session, calls, kind, message, at, tool, stamp))
        seq += 1
    keyed.sort(key=lambda item: item[0])
    return [finding for _, finding in keyed]


def _tool_error(session: str, turn: Turn, position: int, number: int, part: ToolPart) -> Finding:
    message = f"tool error: {one_line(part.name)}"
    gist = output_gist(part.output or "")
    if gist:
        message += f": {gist}"
    return Finding(session, "tool-error", f"{turn.index}.{number}", message, position, number)


_RULE_RE = re.compile(r"\A[\s=\-*_#~]{3,}|[\s=\-*_#~]{3,}\Z")


def output_gist(output: str, limit: int = 80) -> str:
    """The first and the last non-blank line of a tool output, without ``=====`` rules:
    ``test session starts … 1 failed, 47 passed in 2.31s``. A tool usually says what went
    wrong in one of the two (an error message first, a test summary or an exception last).
    Neither the whole output nor a whole line is copied (a 100 MB output stays one string)."""
    match = FIRST_LINE_RE.search(output)
    if match is None:
        return ""
    first = _gist_line(output[match.start() : min(match.end(), match.start() + 4 * limit)])
    size = 4096
    window = output[-size:]
    tail = window.rstrip()
    while not tail and size < len(output):
        size *= 4
        window = output[-size:]
        tail = window.rstrip()
    if len(output) - (len(window) - len(tail)) <= match.end():
        return one_line(first, limit)  # one line only
    cut = max(tail.rfind("\n"), tail.rfind("\r"))
    last = _gist_line(tail[cut + 1 :] if cut >= 0 else tail[-limit:])
    if len(last) > limit or (cut < 0 and last):
        last = "…" + last[-(limit - 1) :]  # the end of a long last line says the most
    first, last = one_line(first, limit), one_line(last, limit)
    if not first or first == last:
        return last
    return f"{first} … {last}" if last else first


def _gist_line(line: str) -> str:
    return _RULE_RE.sub("", line.strip()).strip()


def _error_message(code: int | float | str, message: str) -> str:
    """``error 401: Unauthorized``; ``error: …`` when the code is 0 (no HTTP status)."""
    if isinstance(code, str):
        shown = code.strip()
    elif isinstance(code, float) and code.is_integer():
        shown = str(int(code))
    else:
        shown = str(code)
    head = "error" if shown in ("", "0") else f"error {one_line(shown, 40)}"
    return f"{head}: {one_line(message)}" if message else head


def _attributed(
    session: Session,
    calls: _ToolCalls,
    kind: str,
    message: str,
    position: int | None,
    tool: str | None,
    stamp: str,
) -> Finding:
    """A finding for an event attributed to the turn at ``position`` (and, for a permission
    on ``tool``, to the part of that turn that called it)."""
    if position is None:
        return Finding(session.session_name, kind, "", message)
    turn = session.turns[position]
    number = calls.part_for(position, tool, stamp) if tool is not None else None
    label = f"{turn.index}.{number}" if number is not None else str(turn.index)
    return Finding(session.session_name, kind, label, message, position, number)


class _ToolCalls:
    """The tool parts of a session's turns by name, sorted by time, read once per turn."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.by_turn: dict[int, dict[str, tuple[list[datetime], list[int], int]]] = {}

    def part_for(self, position: int, tool: str, stamp: str) -> int | None:
        """The part a permission on ``tool`` at ``stamp`` was for: the call of that tool with
        the same timestamp, else the last one before it, else the first; None if none."""
        table = self.by_turn.get(position)
        if table is None:
            table = self.by_turn[position] = self._index(self.session.turns[position])
        entry = table.get(tool)
        if entry is None:
            return None
        times, numbers, first = entry
        at = utc_time(stamp)
        if at is None:
            return first
        i = bisect_left(times, at)
        if i < len(times) and times[i] == at:
            return numbers[i]
        return numbers[i - 1] if i else first

    @staticmethod
    def _index(turn: Turn) -> dict[str, tuple[list[datetime], list[int], int]]:
        timed: dict[str, list[tuple[datetime, int]]] = {}
        first: dict[str, int] = {}
        for number, part in enumerate(turn.parts, start=1):
            if isinstance(part, ToolPart):
                first.setdefault(part.name, number)
                when = utc_time(part.timestamp)
                if when is not None:
                    timed.setdefault(part.name, []).append((when, number))
        table = {}
        for name, number in first.items():
            calls = sorted(timed.get(name, []))
            table[name] = ([w for w, _ in calls], [n for _, n in calls], number)
        return table


def locate(
    session: Session, events: list[tuple[str, str | None]]
) -> list[tuple[int | None, int | None]]:
    """Where each event ``(timestamp, tool or None)`` of a session happened, by the rules of
    the module docstring: the position of its turn in ``session.turns`` (None: no turn) and,
    for an event on a tool (a permission), the 1-based number of the tool part it resolved
    (None when none). The one entry point for attributing errors and decisions elsewhere."""
    positions = attribute(session.turns, [stamp for stamp, _ in events]) if events else []
    calls = _ToolCalls(session)
    out: list[tuple[int | None, int | None]] = []
    for (stamp, tool), position in zip(events, positions, strict=True):
        if position is None:
            out.append((None, None))
            continue
        number = calls.part_for(position, tool, stamp) if tool is not None else None
        out.append((position, number))
    return out


def utc_time(value: str) -> datetime | None:
    """A timestamp as an aware UTC datetime (a naive one is read as UTC), or None."""
    parsed = parse_time(value)
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


def attribute(turns: list[Turn], stamps: Iterable[str]) -> list[int | None]:
    """For each timestamp, the position of the turn it is attributed to (module docstring).

    One sweep over the events in time order with a heap of the turns started so far: a
    turn whose span ended before the current event can hold no later event either, so it
    is dropped for good. O((turns + events) log turns).
    """
    spans: list[tuple[datetime, datetime, int]] = []
    for position, turn in enumerate(turns):
        start = utc_time(turn.started_at)
        if start is None:
            continue
        end = utc_time(turn.ended_at)
        spans.append((start, end if end is not None and end >= start else start, position))
    spans.sort(key=lambda span: (span[0], span[2]))
    starts = [span[0] for span in spans]
    times = [utc_time(stamp) for stamp in stamps]
    order = sorted(
        (i for i, when in enumerate(times) if when is not None),
        key=lambda i: times[i],  # type: ignore[arg-type, return-value]
    )
    out: list[int | None] = [None] * len(times)
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
            out[i] = heap[0][2]
        elif limit:
            out[i] = spans[limit - 1][2]
    return out


def kind_lines(found: list[Finding], root: str, limit: int = 10) -> list[str]:
    """One line per kind found, naming its first turn and the others (up to ``limit``).

    ``denied: turn 7.2: permission denied: run_command git push origin main``; a finding of a
    sub-session is prefixed with that session's name. Raw text: the caller makes it safe
    for its output.
    """
    by_kind: dict[str, list[Finding]] = {}
    for finding in found:
        by_kind.setdefault(finding.kind, []).append(finding)
    lines = []
    for kind in KINDS:
        group = by_kind.get(kind)
        if not group:
            continue
        first, rest = group[0], group[1:]
        line = f"{kind}: {_place(first, root)}: {first.message}"
        if rest:
            shown = ", ".join(_place(f, root) for f in rest[:limit])
            more = f", and {len(rest) - limit} more" if len(rest) > limit else ""
            line += f" (and {len(rest)} more {kind}: {shown}{more})"
        lines.append(line)
    return lines


def _place(finding: Finding, root: str) -> str:
    if finding.session == root:
        return finding.where
    return f"{one_line(finding.session, 80)} {finding.where}"


def counts(found: Iterable[Finding]) -> dict[str, int]:
    """Number of findings per kind, in :data:`KINDS` order (kinds with none left out)."""
    tally = dict.fromkeys(KINDS, 0)
    for finding in found:
        tally[finding.kind] += 1
    return {kind: n for kind, n in tally.items() if n}
