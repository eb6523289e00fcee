"""What both renderers say about a session: labels, durations, notes, boundaries.

The Markdown export and the HTML pages call these, so a page and an export of the same
file never disagree about what a part is or what a marker means.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import datetime

from .. import images
from ..model import (
    KINDS,
    KNOWN_STATUSES,
    CommandPart,
    Image,
    ImagePart,
    Part,
    Session,
    TextualPart,
    ToolPart,
    Turn,
)

KIND_LABELS = {
    "ses": "interactive session",
    "job": "job run",
    "sub": "sub-agent (delegation)",
    "named": "explicitly named session",
}
assert set(KINDS) <= set(KIND_LABELS)

FINDING_LABELS = {
    "error": "error",
    "tool-error": "failed call",
    "denied": "denied",
    "declined": "declined",
    "truncated": "truncated",
    "cancelled": "interrupted",
    "running": "unfinished",
}
"""How a page names each kind of finding (:data:`publisher.gate.KINDS`)."""


def finding_count(kind: str, number: int) -> str:
    """``3 failed calls``, ``1 interrupted``: a count of findings of one kind, in words."""
    label = FINDING_LABELS.get(kind, kind)
    return (
        plural(number, label) if label in ("error", "failed call") else f"{count(number)} {label}"
    )


OUTCOMES = ("ok", "error", "cancelled", "truncated", "running", "empty", "other")
"""The outcomes (a session's last status, as the index's chart and its "Last status" filter
count it: :func:`outcome_of`), in the order the chart's bars stack them."""


def outcome_of(status: str) -> str:
    """The outcome a session's last status counts as ("" means no turns: ``empty``)."""
    if not status:
        return "empty"
    return status if status in OUTCOMES else "other"


AGENT_LABELS = {"claude-code": "Claude Code", "codex": "Codex CLI", "aider": "aider"}
"""How a page names the agents ``polyglav import`` reads (another is shown as written)."""


@dataclass(slots=True, frozen=True)
class Origin:
    """Where an imported session came from: its ``imported_from`` (untrusted: only its
    text values count)."""

    agent: str
    """The agent's name as written (``claude-code``), "" when not given."""
    path: str
    """The source log's path, "" when not given."""

    @property
    def label(self) -> str:
        """The agent as a page names it (:data:`AGENT_LABELS`), or "another agent"."""
        return AGENT_LABELS.get(self.agent, self.agent) or "another agent"


def origin(session: Session) -> Origin | None:
    """Where ``session`` was imported from, None when it was not."""
    found = session.extra.get("imported_from")
    if not isinstance(found, dict):
        return None
    agent, path = found.get("agent"), found.get("path")
    return Origin(agent if isinstance(agent, str) else "", path if isinstance(path, str) else "")


def workspace(session: Session) -> str:
    """The folder the session worked in, when its log says it (an imported session's
    ``imported_from.cwd``), else ""."""
    found = session.extra.get("imported_from")
    cwd = found.get("cwd") if isinstance(found, dict) else None
    return cwd.rstrip("/") if isinstance(cwd, str) and cwd.startswith("/") else ""


def relative_to(path: str, base: str) -> str:
    """``path`` relative to folder ``base`` when it is inside it, else as it is."""
    if base and path.startswith(base + "/") and len(path) > len(base) + 1:
        return path[len(base) + 1 :]
    return path


def file_part(path: str) -> str:
    """The last part of a path as a header shows it (``…/4d5611e5.jsonl``; the whole path
    is in its title)."""
    cut = max(path.rfind("/"), path.rfind("\\"))
    return f"…/{path[cut + 1 :]}" if cut > 0 and cut < len(path) - 1 else path


def parse_time(value: str) -> datetime | None:
    """An ISO 8601 timestamp, or None when it is empty or malformed."""
    if not value or len(value) > 64:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def zoned(value: str) -> bool:
    """True when ``value`` is a timestamp with a time zone (the pages show those in UTC);
    False for one without (aider writes the local time of the machine, with no zone: it is
    shown as written) or for no timestamp."""
    parsed = parse_time(value)
    return parsed is not None and parsed.utcoffset() is not None


def duration_seconds(turn: Turn) -> float | None:
    return seconds_between(parse_time(turn.started_at), parse_time(turn.ended_at))


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    """``end - start`` in seconds; None when either is unknown or they cannot be compared."""
    if start is None or end is None:
        return None
    try:
        return (end - start).total_seconds()
    except TypeError:  # one naive, one aware
        return None


def format_duration(seconds: float | None) -> str:
    """``5.0s``, ``2m05s``, ``1h02m``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 0:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def turn_duration(turn: Turn) -> str:
    return format_duration(duration_seconds(turn))


IDLE_AFTER = 30 * 60
"""Seconds without any record, within a turn or between two turns, from which that time is
idle (the person away, the run waiting on nobody), not work: a turn of 2m43s of work that
the person answered the next day is 2m43s of work and a day idle. A tool that runs longer
than this without a record in between (one call recorded, its result this much later) is
read as idle too: the log cannot tell the two apart."""


@dataclass(slots=True, frozen=True)
class TurnTimes:
    """Where a turn's time went, from its start, its end and its parts' timestamps."""

    span: float | None
    """Wall-clock seconds from ``started_at`` to ``ended_at`` (None when unknown)."""
    work: float | None
    """The span without its idle gaps (None when the span is unknown)."""
    idle: tuple[float, ...] = ()
    """Each gap of more than :data:`IDLE_AFTER` between two records of the turn, in order."""

    @classmethod
    def of(cls, turn: Turn) -> TurnTimes:
        start, end = parse_time(turn.started_at), parse_time(turn.ended_at)
        span = seconds_between(start, end)
        if span is None or span <= IDLE_AFTER:
            return cls(span, span)
        assert start is not None and end is not None
        naive = start.tzinfo is None
        stamps = (parse_time(p.timestamp) for p in turn.parts)
        inner = [m for m in stamps if m is not None and (m.tzinfo is None) == naive]
        idle = _gaps([start, *inner, end])
        return cls(span, span - sum(idle), idle)


def _gaps(moments: list[datetime]) -> tuple[float, ...]:
    """The gaps of more than :data:`IDLE_AFTER` between ``moments`` in time order (those
    between the first and the last: a part stamped outside its turn's span adds none)."""
    first, last = moments[0], moments[-1]
    inside = sorted(m for m in moments if first <= m <= last)  # (aware ones in UTC order)
    gaps = []
    for before, after in itertools.pairwise(inside):
        seconds = (after - before).total_seconds()
        if seconds > IDLE_AFTER:
            gaps.append(seconds)
    return tuple(gaps)


def turn_work(turn: Turn) -> str:
    """The turn's work time (:class:`TurnTimes`), with its idle time said apart when it had
    any: ``2m43s (24h02m idle)``."""
    times = TurnTimes.of(turn)
    shown = format_duration(times.work)
    if times.idle:
        shown += f" ({format_duration(sum(times.idle))} idle)"
    return shown


def status_known(status: str) -> bool:
    return status in KNOWN_STATUSES


def count(number: int) -> str:
    """A count as prose shows it: ``20,000`` (grouped by thousands, whatever the locale)."""
    return f"{number:,}"


def plural(number: int, word: str) -> str:
    """``1 tool``, ``2 tools``, ``1,500 turns``: the count (:func:`count`) and the English
    plural with an ``s``."""
    return f"{count(number)} {word}" + ("" if number == 1 else "s")


def tools_label(count: int) -> str:
    return plural(count, "tool")


def blank_text(text: str) -> str:
    """What a prompt or answer that shows nothing holds (``text.strip()`` is empty), as a
    page says it in place of the empty text: ``empty``, ``only whitespace: 2 line breaks``.
    Claude Code writes answers of ``"\n\n"`` between tool calls."""
    if not text:
        return "empty"
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    spaces, tabs = text.count(" "), text.count("\t")
    others = len(text) - breaks - text.count("\r\n") - spaces - tabs
    counts = [(breaks, "line break"), (spaces, "space"), (tabs, "tab")]
    counts.append((others, "other whitespace character"))
    return "only whitespace: " + ", ".join(plural(n, word) for n, word in counts if n)


def part_label(part: Part) -> str:
    """Plain-text label of a part, e.g. ``Tool call web_search``."""
    if isinstance(part, TextualPart):
        if part.type == "user":
            ask = part.parked_ask_id
            return f"Parked-ask answer (ask #{ask})" if ask is not None else "User prompt"
        if part.type == "thinking" and not part.text:
            return "Thinking not in the log"
        return {"text": "Answer", "thinking": "Thinking", "system": "System note"}[part.type]
    if isinstance(part, ToolPart):
        return "Tool call" if part.name or part.input is not None else "Tool result"
    if isinstance(part, ImagePart):
        return "Image"
    if isinstance(part, CommandPart):
        return "Compaction" if part.is_compaction else "Command"
    return "Unknown part"


PART_TEMPLATES = {
    "user": "parts/user.html",
    "text": "parts/text.html",
    "thinking": "parts/thinking.html",
    "system": "parts/system.html",
    "tool": "parts/tool.html",
    "command": "parts/command.html",
    "image": "parts/image.html",
    "unknown": "parts/unknown.html",
}
"""Part kind → the template that shows it. The kind is the textual part's type (``user``,
``text``, ``thinking``, ``system``), ``tool``, ``command`` (compaction records too) or
``unknown`` (a type this version does not know). A theme changes how one kind looks by
shipping that one file."""


def part_kind(part: Part) -> str:
    """The kind of a part, a key of :data:`PART_TEMPLATES`."""
    if isinstance(part, TextualPart):
        return part.type if part.type in PART_TEMPLATES else "unknown"
    if isinstance(part, ToolPart):
        return "tool"
    if isinstance(part, CommandPart):
        return "command"
    if isinstance(part, ImagePart):
        return "image"
    return "unknown"


def part_template(part: Part) -> str:
    """The template that shows ``part``, e.g. ``parts/tool.html``."""
    return PART_TEMPLATES[part_kind(part)]


def tool_state(part: ToolPart) -> str:
    """``ok``, ``error``, ``interrupted`` (the person stopped it) or ``pending`` (no output
    yet)."""
    if part.output is None:
        return "pending"
    if part.interrupted:
        return "interrupted"
    return "error" if part.is_error else "ok"


REPORT_LINES = 8
"""A sub-agent's report shows this many lines (to a paragraph's end) before it folds."""


@dataclass(slots=True, frozen=True)
class Report:
    """A delegate call's output read as its sub-agent's report (Markdown)."""

    head: str
    """What shows before the fold: its first lines, cut at a paragraph's end when one is
    among them (the whole report when it is short)."""
    folded: bool
    """True when there is more than :attr:`head`."""


def report_of(part: ToolPart) -> Report | None:
    """A delegate call's result as its sub-agent's report, rendered as the Markdown it is
    and folded after its first lines; None for an error or no output (shown as output)."""
    text = part.output
    if not text or part.is_error:
        return None
    lines = text.split("\n", REPORT_LINES + 4)
    if len(lines) <= REPORT_LINES + 4:
        return Report(text, False)
    head = lines[:REPORT_LINES]
    blank = max((i for i, line in enumerate(head) if not line.strip()), default=0)
    if blank >= 2:
        head = head[:blank]
    return Report("\n".join(head), True)


#: What a tool call's badge says of each :func:`tool_state`.
TOOL_STATE_LABELS = {
    "ok": "ok",
    "error": "error",
    "interrupted": "interrupted",
    "pending": "no output yet",
}


def image_line(image: Image) -> str:
    """What the export says of an image: ``image/png, 1,234 bytes, sha256 …`` and, when a
    page does not show it, why."""
    facts = images.facts(image)
    return facts.label + (f" (not shown: {facts.problem})" if facts.problem else "")


_NOTICE_RE = re.compile(r"\s*<([a-z][a-z0-9_-]{0,40})>")


def notice_tag(text: str) -> str | None:
    """The name of the element a system note is made of (``system-reminder`` for
    ``<system-reminder>…</system-reminder>``, a notice an agent's client injected), None
    when it is not made only of such elements. Pages fold such notes under that name."""
    end = len(text.rstrip())
    position = 0
    first = None
    while position < end:
        match = _NOTICE_RE.match(text, position)
        if match is None:
            return None
        name = match.group(1)
        close = text.find(f"</{name}>", match.end())
        if close < 0:
            return None
        first = first or name
        position = close + len(name) + 3
    return first


def exit_code(part: ToolPart) -> int | None:
    """The exit code of a call that ran a command, when its record gives one (``exit_code``,
    as the importers of Codex logs write it), else None."""
    code = part.extra.get("exit_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def tool_badge(part: ToolPart) -> str:
    """The word a call's badge shows: ``ok``, ``error`` (``error, exit 2`` when the exit code
    is known: a failed command's card says how it ended even when its output, a running
    command's first chunk, does not), ``interrupted`` or ``no output yet``."""
    state = tool_state(part)
    code = exit_code(part) if state == "error" else None
    return TOOL_STATE_LABELS[state] if code is None else f"error, exit {code}"


def tool_notes(part: ToolPart) -> list[str]:
    """Notes about serialization-time transforms visible in the persisted output."""
    notes = []
    if not part.name and part.input is None:
        notes.append("The call of this result is not in the log (only its result is).")
    if part.interrupted:
        notes.append("The person stopped this call while it ran (an interrupt, not a refusal).")
    if part.output is None:
        notes.append("No output yet: the call had not returned when the file was written.")
    if part.noise_excluded:
        notes.append(
            "The output was replaced by the noise_tools marker when the session was saved; "
            "the input above is what was called."
        )
    truncated = part.truncated_from
    if truncated is not None:
        notes.append(
            f"The output was truncated when the session was saved (session_tool_max_chars); "
            f"it was {truncated:,} characters long."
        )
    return notes


def last_index(session: Session) -> int:
    """Index of the session's last turn, 0 when it has none."""
    return session.turns[-1].index if session.turns else 0


def compaction_note(part: CommandPart, last: int) -> str:
    """What a compaction record did to the provider context (``last``: the last turn index)."""
    cf = part.compact_from
    if cf is None:
        return "This compaction record names no compact_from turn."
    if cf <= 1:
        return f"Kept from turn {cf}: no earlier turn was trimmed from the provider context."
    trimmed = "turn 1" if cf == 2 else f"turns 1–{cf - 1}"
    text = (
        f"Context boundary: after this, the model saw {trimmed} only through this summary; "
        f"turns from {cf} on were kept in full."
    )
    if cf > last:
        text += f" (compact_from {cf} is past the last turn, {last}.)"
    return text


@dataclass(slots=True, frozen=True)
class Boundary:
    """A context boundary that falls at the start of a turn."""

    compaction_turn: int
    """The turn holding the compaction record."""
    kept_from: int
    """The turn where the kept portion starts."""

    @property
    def text(self) -> str:
        return (
            f"Context boundary (compaction in turn {self.compaction_turn}): turns before "
            f"{self.kept_from} reached the model only through the summary from here on."
        )


def boundaries(session: Session) -> dict[int, list[Boundary]]:
    """Turn index → the compaction boundaries that start at that turn."""
    out: dict[int, list[Boundary]] = {}
    for turn in session.turns:
        for part in turn.parts:
            if (
                isinstance(part, CommandPart)
                and part.is_compaction
                and part.compact_from is not None
                and part.compact_from > 1
            ):
                out.setdefault(part.compact_from, []).append(
                    Boundary(turn.index, part.compact_from)
                )
    return out


#: The turn settings a card shows only when they change from the turn before.
META_FIELDS = ("model", "provider", "mode", "reasoning")


def meta_changes(previous: Turn | None, turn: Turn) -> frozenset[str]:
    """Which of :data:`META_FIELDS` ``turn`` sets differently from ``previous`` (all of
    them when there is no turn before)."""
    if previous is None:
        return frozenset(META_FIELDS)
    return frozenset(f for f in META_FIELDS if getattr(previous, f) != getattr(turn, f))


def turn_anchors(session: Session) -> list[str]:
    """Each turn's element id: ``turn-3``, ``turn-3-dup2`` for the second turn 3."""
    seen: dict[int, int] = {}
    out = []
    for turn in session.turns:
        seen[turn.index] = seen.get(turn.index, 0) + 1
        count = seen[turn.index]
        out.append(f"turn-{turn.index}" if count == 1 else f"turn-{turn.index}-dup{count}")
    return out


def prompt_of(turn: Turn) -> str:
    """The text /history shows for a turn: the first prompt or command."""
    for part in turn.parts:
        if isinstance(part, TextualPart) and part.type == "user":
            return part.text
        if isinstance(part, CommandPart):
            return part.text
    return ""


def thinking_of(turn: Turn) -> str:
    """All thinking of a turn, joined by blank lines."""
    return "\n\n".join(
        p.text for p in turn.parts if isinstance(p, TextualPart) and p.type == "thinking"
    )
