"""What both renderers say about a session: labels, durations, notes, boundaries.

The Markdown export and the HTML pages call these, so a page and an export of the same
file never disagree about what a part is or what a marker means.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
from ..usage import Spend, Tokens, micro_usd

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
read as idle too: the log cannot tell the two apart. Time waiting on the person (below) is
never idle, however long."""

MODEL, TOOL, PERSON, NEUTRAL = "model", "tool", "person", ""
"""What a record of a turn says the run was waiting for until it was written
(:class:`TurnTimes`)."""


@dataclass(slots=True, frozen=True)
class TurnTimes:
    """Where a turn's time went, from its start, its end, its parts' timestamps, its tool
    results' (``ended_at``) and its permission asks' (``docs/usage.md`` has the rules).

    Each stretch of time between two records of the turn, in time order, is charged to what
    the later record says the run was waiting for: the **model** (its text, thinking or a
    call it wrote), a **tool** (a call's result), or **the person** (an answer to a
    permission ask, or a prompt, such as the answer to a parked ask); after a call whose
    result's time the log does not give (Polyglav's own format), the time to the next
    record that is not the person's is the tool's. A stretch of more than :data:`IDLE_AFTER` that was not waiting on
    the person is idle. Time before a turn that the person's prompt opens, since the turn
    before ended, is waiting on the person (:attr:`before`)."""

    span: float | None
    """Wall-clock seconds from ``started_at`` to ``ended_at`` (None when unknown)."""
    work: float | None
    """Model and tool time (None when the span is unknown)."""
    idle: tuple[float, ...] = ()
    """Each idle stretch within the turn, in order."""
    model: float = 0.0
    """Seconds waiting on the model."""
    tool: float = 0.0
    """Seconds waiting on tools."""
    person: float = 0.0
    """Seconds waiting on the person within the turn (permission asks, parked asks)."""
    before: float = 0.0
    """Seconds waiting on the person before the turn: from the end of the turn before to
    this turn's start, when the person's prompt (or command) opens it; 0 otherwise."""
    idle_before: float = 0.0
    """Seconds idle before the turn: the same gap, longer than :data:`IDLE_AFTER`, when no
    prompt of the person's opens the turn."""

    @property
    def waiting(self) -> float:
        """Every second waiting on the person, before and within the turn."""
        return self.before + self.person

    @classmethod
    def of(cls, turn: Turn, asks: Sequence[str] = (), previous_end: str = "") -> TurnTimes:
        """``asks``: the times of the permission decisions that asked the person, placed in
        this turn; ``previous_end``: the ``ended_at`` of the turn before ("" for none)."""
        start, end = parse_time(turn.started_at), parse_time(turn.ended_at)
        span = seconds_between(start, end)
        before = idle_before = 0.0
        gap = seconds_between(parse_time(previous_end), start) if previous_end else None
        if gap is not None and gap > 0:
            if _prompted(turn):
                before = gap
            elif gap > IDLE_AFTER:
                idle_before = gap
        if span is None or start is None or end is None:
            return cls(span, span, before=before, idle_before=idle_before)
        naive = start.tzinfo is None
        events: list[tuple[datetime, int, str, bool]] = []
        """(time, order, what it waited for, a call whose result's time is unknown)."""
        for order, part in enumerate(turn.parts):
            at = parse_time(part.timestamp)
            if isinstance(part, ToolPart):
                done = parse_time(part.ended_at)
                if done is not None and (done.tzinfo is None) == naive:
                    events.append((done, order, TOOL, False))
                if at is not None and (at.tzinfo is None) == naive:
                    events.append((at, order, MODEL, done is None))
                continue
            kind = _waited_for(part)
            if kind == PERSON and not events:
                continue  # the prompt that opens the turn: the turn starts with it
            if kind and at is not None and (at.tzinfo is None) == naive:
                events.append((at, order, kind, False))
        for ask in asks:
            at = parse_time(ask)
            if at is not None and (at.tzinfo is None) == naive:
                events.append((at, len(turn.parts), PERSON, False))
        events.sort(key=lambda e: (e[0], e[1]))
        spent = {MODEL: 0.0, TOOL: 0.0, PERSON: 0.0}
        idle: list[float] = []
        last, running = start, False
        for at, _, kind, unknown in [*events, (end, len(turn.parts) + 1, MODEL, False)]:
            if not start <= at <= end:
                continue  # (a record stamped outside its turn's span adds no time)
            seconds = (at - last).total_seconds()
            charged = kind if kind == PERSON or not running else TOOL
            if seconds > IDLE_AFTER and charged != PERSON:
                idle.append(seconds)
            else:
                spent[charged] += seconds
            # (an answer of the person's leaves a call without a result's time running)
            last, running = at, running if kind == PERSON else unknown
        work = spent[MODEL] + spent[TOOL]
        return cls(
            span, work, tuple(idle), spent[MODEL], spent[TOOL], spent[PERSON], before, idle_before
        )


def _waited_for(part: Part) -> str:
    """What a part (not a tool call) says the run was waiting for until it was written."""
    if isinstance(part, TextualPart):
        if part.type == "user":
            return PERSON
        if part.type in ("text", "thinking"):
            return MODEL
    return NEUTRAL  # (system notes, commands, images: written by the client, not waited on)


def _prompted(turn: Turn) -> bool:
    """Whether the person opened the turn: a prompt or a command of theirs is in it."""
    return any(
        (isinstance(p, TextualPart) and p.type == "user") or isinstance(p, CommandPart)
        for p in turn.parts
    )


def usd(micro: int) -> str:
    """A cost in micro-dollars (:func:`publisher.usage.micro_usd`) as every output shows
    it: ``$0.0042`` (to the hundredth of a cent under $100), ``$1,234.57`` (to the cent
    from $100); halves round to even."""
    unit = 10_000 if micro >= 100 * 10**6 else 100  # micro-dollars a cent, or a 1/100 cent
    whole, rest = divmod(micro, unit)
    if rest * 2 > unit or (rest * 2 == unit and whole % 2):
        whole += 1
    if unit == 100:
        return f"${whole // 10_000}.{whole % 10_000:04d}"
    return f"${whole // 100:,}.{whole % 100:02d}"


def short_tokens(number: int) -> str:
    """A token count in a few characters, for a dense list: ``850 tok``, ``12.3k tok``,
    ``4.5M tok`` (the exact count is on the turn)."""
    if number < 1000:
        return f"{number} tok"
    if number < 1_000_000:
        return f"{number / 1000:.1f}k tok"
    return f"{number / 1_000_000:.1f}M tok"


def tokens_line(tokens: Tokens) -> str:
    """``1,234,567 tokens``."""
    return tokens_line_of(tokens.total)


def tokens_line_of(number: int) -> str:
    """``1,234,567 tokens`` of a count."""
    return plural(number, "token")


def tokens_detail(tokens: Tokens) -> str:
    """The kinds of tokens: ``input 1,234, output 567 (reasoning 12), cache read 89,000,
    cache write 1,000`` (kinds with none left out; ``no tokens`` when all are 0)."""
    said = [f"input {count(tokens.input)}" if tokens.input else ""]
    output = f"output {count(tokens.output)}" if tokens.output else ""
    if output and tokens.reasoning:
        output += f" (reasoning {count(tokens.reasoning)})"
    said.append(output)
    said.append(f"cache read {count(tokens.cache_read)}" if tokens.cache_read else "")
    said.append(f"cache write {count(tokens.cache_write)}" if tokens.cache_write else "")
    return ", ".join(filter(None, said)) or "no tokens"


def cost_line(spend: Spend) -> str:
    """What a spend cost: ``$1.2346``; ``unpriced`` when no request of it was priced;
    ``$1.2346 + unpriced`` when some were not (the sum is then unknown); "" when it records
    no usage."""
    if spend.tokens is None:
        return ""
    return cost_text(spend.picousd, spend.unpriced, spend.tokens.total)


def cost_text(picousd: int, unpriced: int, tokens: int) -> str:
    """The cost of ``tokens`` tokens of which ``unpriced`` were not priced and the others
    cost ``picousd`` pico-dollars: ``$1.2346``, ``unpriced``, ``$1.2346 + unpriced``."""
    if not unpriced:
        return usd(micro_usd(picousd))
    if unpriced >= tokens:
        return "unpriced"
    return f"{usd(micro_usd(picousd))} + unpriced"


def unpriced_note(spend: Spend) -> str:
    """``12,345 tokens of model foo-1 unpriced: the table has no price for it`` ("" when
    everything was priced)."""
    if not spend.unpriced_models:
        return ""
    names = ", ".join(m or "(no model named)" for m in spend.unpriced_models[:5])
    more = f" and {len(spend.unpriced_models) - 5} more" if len(spend.unpriced_models) > 5 else ""
    noun = "model" if len(spend.unpriced_models) == 1 else "models"
    return (
        f"{plural(spend.unpriced, 'token')} of {noun} {names}{more} unpriced: the price"
        " table has no price for them"
    )


def uncounted_note(turn: Turn) -> str:
    """``2 usage entries not counted: input is -5, not a whole number of tokens; …`` (the
    entries of ``turn.usage`` that do not count), "" when every entry counts."""
    problems = [entry.problem for entry in turn.usage if entry.problem]
    if not problems:
        return ""
    shown = "; ".join(problems[:3]) + ("; …" if len(problems) > 3 else "")
    noun = "usage entry" if len(problems) == 1 else "usage entries"
    return f"{count(len(problems))} {noun} not counted: {shown}"


def work_line(times: TurnTimes) -> str:
    """A turn's work time and what it waited on: ``1m32s (model 1m02s, tools 30.0s)``,
    with its idle time said apart (``, 24h02m idle``); ``-`` when unknown."""
    if times.span is None:
        return "-"
    said = (
        f"{format_duration(times.work)} (model {format_duration(times.model)}, tools "
        f"{format_duration(times.tool)})"
    )
    idle = sum(times.idle) + times.idle_before
    return said + (f", {format_duration(idle)} idle" if idle else "")


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
