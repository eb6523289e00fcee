"""Comparing two runs turn by turn: what ``polyglav compare A B`` prints.

Turns are aligned by position (turn 1 with turn 1, ...): a run of a series replays the
same steps. Within a pair of turns, tool calls are aligned as sequences of (name, input)
(:class:`difflib.SequenceMatcher`): a call only in B is *added*, only in A *removed*, and
a call in both whose output differs gets a unified diff. Errors are attributed to turns by
:mod:`.audit` (the rules ``polyglav check`` and the pages use).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from .model import Session, ToolPart, Turn
from .render.text import first_line, terminal_safe
from .render.view import prompt_of

DIFF_LINES = 40
"""A differing output's diff is cut to this many lines in the terminal."""


@dataclass(slots=True, frozen=True)
class CallChange:
    """A tool call of an aligned pair of turns."""

    change: str
    """``same``, ``added`` (only in B), ``removed`` (only in A) or ``output`` (its output
    differs)."""
    name: str
    """The tool's name."""
    input: str
    """Its input as compact JSON."""
    diff: list[str] = field(default_factory=list)
    """For ``output``: the unified diff of A's output against B's."""


@dataclass(slots=True, frozen=True)
class TurnComparison:
    """One aligned pair of turns (either side may be missing)."""

    position: int
    """1-based position in both runs."""
    prompt_a: str | None
    """A's prompt (first line), None when A has no turn here."""
    prompt_b: str | None
    """B's likewise."""
    status_a: str | None
    status_b: str | None
    seconds_a: float | None
    """A's duration in seconds, None when unknown."""
    seconds_b: float | None
    errors_a: list[str]
    """Errors attributed to A's turn (``code: message``)."""
    errors_b: list[str]
    calls: list[CallChange]

    @property
    def changed(self) -> bool:
        """True when anything but the durations differs."""
        return (
            self.prompt_changed
            or self.status_changed
            or self.errors_a != self.errors_b
            or any(c.change != "same" for c in self.calls)
        )

    @property
    def prompt_changed(self) -> bool:
        """True when the prompts differ (or one run has no turn here)."""
        return self.prompt_a != self.prompt_b

    @property
    def status_changed(self) -> bool:
        """True when the statuses differ."""
        return self.status_a != self.status_b

    @property
    def new_errors(self) -> list[str]:
        """Errors of B's turn that A's does not have."""
        return [e for e in self.errors_b if e not in self.errors_a]

    @property
    def gone_errors(self) -> list[str]:
        """Errors of A's turn that B's no longer has."""
        return [e for e in self.errors_a if e not in self.errors_b]

    @property
    def kept_errors(self) -> list[str]:
        """Errors both turns have."""
        return [e for e in self.errors_b if e in self.errors_a]


def _seconds(turn: Turn) -> float | None:
    from .audit import utc_time

    start, end = utc_time(turn.started_at), utc_time(turn.ended_at)
    if start is None or end is None or end < start:
        return None
    return (end - start).total_seconds()


def _errors_by_turn(session: Session) -> dict[int, list[str]]:
    from .audit import place

    out: dict[int, list[str]] = {}
    places = place(session.turns, (e.timestamp for e in session.errors))
    for error, (position, _) in zip(session.errors, places, strict=True):
        if position is not None:
            out.setdefault(position, []).append(first_line(f"{error.code}: {error.message}", 200))
    return out


def _calls(turn: Turn | None) -> list[ToolPart]:
    return [p for p in turn.parts if isinstance(p, ToolPart)] if turn else []


def _input(part: ToolPart) -> str:
    return json.dumps(part.input, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _align_calls(a: list[ToolPart], b: list[ToolPart]) -> list[CallChange]:
    keys_a = [(p.name, _input(p)) for p in a]
    keys_b = [(p.name, _input(p)) for p in b]
    out: list[CallChange] = []
    matcher = difflib.SequenceMatcher(a=keys_a, b=keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k, (pa, pb) in enumerate(zip(a[i1:i2], b[j1:j2], strict=True)):
                shown = keys_a[i1 + k][1]  # _input(pa), made once
                if (pa.output or "") == (pb.output or ""):
                    out.append(CallChange("same", pa.name, shown))
                else:
                    diff = list(
                        difflib.unified_diff(
                            (pa.output or "").splitlines(),
                            (pb.output or "").splitlines(),
                            "A",
                            "B",
                            lineterm="",
                        )
                    )
                    out.append(CallChange("output", pa.name, shown, diff))
            continue
        out.extend(CallChange("removed", a[i].name, keys_a[i][1]) for i in range(i1, i2))
        out.extend(CallChange("added", b[j].name, keys_b[j][1]) for j in range(j1, j2))
    return out


def compare(a: Session, b: Session) -> list[TurnComparison]:
    """The turns of ``a`` and ``b`` aligned by position."""
    errors_a, errors_b = _errors_by_turn(a), _errors_by_turn(b)
    out = []
    for i in range(max(len(a.turns), len(b.turns))):
        ta = a.turns[i] if i < len(a.turns) else None
        tb = b.turns[i] if i < len(b.turns) else None
        out.append(
            TurnComparison(
                position=i + 1,
                prompt_a=first_line(prompt_of(ta), 200) if ta else None,
                prompt_b=first_line(prompt_of(tb), 200) if tb else None,
                status_a=ta.status if ta else None,
                status_b=tb.status if tb else None,
                seconds_a=_seconds(ta) if ta else None,
                seconds_b=_seconds(tb) if tb else None,
                errors_a=errors_a.get(i, []),
                errors_b=errors_b.get(i, []),
                calls=_align_calls(_calls(ta), _calls(tb)),
            )
        )
    return out


CALL_SIGNS = {"same": " ", "added": "+", "removed": "-", "output": "!"}
"""How each :attr:`CallChange.change` is marked (terminal and page alike)."""
CALL_LABELS = {"same": "", "added": "added", "removed": "removed", "output": "output differs"}
"""How each :attr:`CallChange.change` is named (terminal and page alike)."""


def duration(seconds: float | None) -> str:
    """A turn's duration as both views show it (``-`` when unknown)."""
    return "-" if seconds is None else f"{seconds:.1f}s"


def comparison_lines(a: Session, b: Session) -> Iterator[str]:
    """``polyglav compare``'s output: a heading, then each turn, what changed marked ``!``
    (``+`` an added call or error, ``-`` a removed one), differing outputs as diffs."""
    turns = compare(a, b)
    changed = sum(t.changed for t in turns)
    yield terminal_safe(f"A: {a.session_name} ({len(a.turns)} turns, {len(a.errors)} errors)")
    yield terminal_safe(f"B: {b.session_name} ({len(b.turns)} turns, {len(b.errors)} errors)")
    yield f"{changed} of {len(turns)} turns differ"
    for t in turns:
        mark = "!" if t.changed else " "
        status = (
            f"{t.status_a or '-'}"
            if t.status_a == t.status_b
            else f"{t.status_a or '(none)'} -> {t.status_b or '(none)'}"
        )
        durations = f"{duration(t.seconds_a)} -> {duration(t.seconds_b)}"
        yield terminal_safe(f"{mark} turn {t.position}: {status}  {durations}")
        if t.prompt_a != t.prompt_b:
            yield terminal_safe(
                f"    prompt A: {t.prompt_a if t.prompt_a is not None else '(no turn)'}"
            )
            yield terminal_safe(
                f"    prompt B: {t.prompt_b if t.prompt_b is not None else '(no turn)'}"
            )
        elif t.prompt_a:
            yield terminal_safe(f"    prompt: {t.prompt_a}")
        for error in t.gone_errors:
            yield terminal_safe(f"    - error {error}")
        for error in t.new_errors:
            yield terminal_safe(f"    + error {error}")
        for call in t.calls:
            sign = CALL_SIGNS[call.change]
            what = f" ({CALL_LABELS[call.change]})" if call.change != "same" else ""
            yield terminal_safe(f"    {sign} {call.name} {first_line(call.input, 100)}{what}")
            for line in call.diff[:DIFF_LINES]:
                yield terminal_safe(f"        {line}")
            if len(call.diff) > DIFF_LINES:
                yield f"        … {len(call.diff) - DIFF_LINES} more diff lines"
