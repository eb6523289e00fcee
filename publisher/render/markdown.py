"""The Markdown export: the full, auditable, lossless log of one session.

Every text that comes from the session (prompts, thinking, answers, tool input and
output, commands, notes, error messages) is written in a fenced code block, so nothing in a
session can forge the export's own structure (a fake ``## Errors`` heading, a closed
fence, a link). Metadata values are code spans. See docs/export.md for the recovery rules.
The export is produced as a stream of chunks so a 100 MB session never becomes one string.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from ..audit import ERROR_RULES, Audit
from ..gate import Tally
from ..model import CommandPart, ImagePart, Part, Session, TextualPart, ToolPart, Turn
from ..usage import Prices, Spend, turn_spend, turn_tokens
from . import places, view
from .contexts import DecisionNote, Overview
from .places import error_code
from .text import code_block, first_line, inline_code, json_text

ERROR_GIST_CHARS = 200
"""How much of an error's first line a turn's pointer to it quotes (the whole message is
under Errors)."""
TEXT_INFO = {"user": "text", "text": "markdown", "thinking": "text", "system": "text"}


def export_markdown(
    session: Session, redaction: str | None = None, prices: Prices | None = None
) -> Iterator[str]:
    """Yield the Markdown export of ``session`` chunk by chunk (deterministic).

    ``redaction`` (e.g. ``3 secrets redacted (2 openai, 1 jwt)``) is stated in the header
    when the session was redacted before rendering; ``prices``: the table its usage is
    priced with (the shipped one when None).
    """
    yield from _header(session, redaction)
    audit = Audit.of(session)
    prices = prices or Prices()
    spends = [turn_spend(session, turn, prices) for turn in session.turns]
    yield from _overview(session, audit, spends, prices.label)
    marks = view.boundaries(session)
    for position, turn in enumerate(session.turns):
        yield from _turn(
            session, turn, marks.get(turn.index, []), audit, position, spends[position]
        )
    yield from _permissions(session, audit)
    yield from _errors(session, audit)


def turn_markdown(
    session: Session, turn: Turn, marks: list[view.Boundary] | None = None
) -> Iterator[str]:
    """One turn's part of the export (``## Turn N`` and its parts), chunk by chunk.

    ``marks`` are the context boundaries starting at this turn (``view.boundaries(session)``
    computed once by a caller rendering many turns); ``None`` computes them.
    """
    if marks is None:
        marks = view.boundaries(session).get(turn.index, [])
    yield from _turn(session, turn, marks, None, None)


def _bullets(items: Iterable[tuple[str, str]]) -> Iterator[str]:
    for label, value in items:
        yield f"- **{label}:** {value}\n"


def _names(names: list[str]) -> str:
    return ", ".join(inline_code(n) for n in names) if names else "-"


def _header(session: Session, redaction: str | None) -> Iterator[str]:
    yield f"# Session {inline_code(session.session_name)}\n\n"
    kind = session.kind
    prefix = f" (`{kind}_`)" if kind != "named" else ""
    ident = inline_code(session.session_id)
    if session.session_id:
        ident += f" (reference it as {inline_code('#' + session.session_id)})"
    titled = [("Title", inline_code(session.title))] if session.title else []
    yield from _bullets(
        [
            *titled,
            ("Kind", view.KIND_LABELS[kind] + prefix),
            ("Name", inline_code(session.session_name)),
            ("Id", ident),
            ("File", inline_code(session.file_name)),
            ("Role", inline_code(session.role)),
            ("Version", inline_code(session.version)),
            ("Created", inline_code(session.created_at)),
            ("Updated", inline_code(session.updated_at)),
            ("Parent", inline_code(session.parent_id)),
            ("Sub-sessions", _names(session.sub_sessions)),
            (
                "Counts",
                f"{view.plural(len(session.turns), 'turn')}, "
                f"{view.plural(session.tool_calls, 'tool call')}, "
                f"{view.plural(len(session.errors), 'error')}, "
                f"{view.plural(len(session.permissions), 'permission decision')}",
            ),
        ]
    )
    if redaction is not None:
        yield f"- **Redaction:** on, {redaction}; each secret is shown as `[REDACTED:<kind>]`\n"
    yield "\n"
    if session.extra:
        yield "**Other fields** (not known to this publisher, as written):\n\n"
        yield from code_block(json_text(session.extra), "json")
        yield "\n"


def _overview(session: Session, audit: Audit, spends: list[Spend], priced_by: str) -> Iterator[str]:
    """The overview: what a reviewer reads first (the same facts as the page's)."""
    facts = places.overview(session, audit, view.turn_anchors(session), spends, priced_by)
    yield "**Overview:**\n\n"
    decisions = ", ".join(
        f"{n} {inline_code(d)}"
        for d, n in sorted(Counter(p.decision for p in session.permissions).items())
    )
    yield from _bullets(
        [
            ("Outcome", inline_code(facts.outcome) if session.turns else "no turns"),
            ("Time", _times(facts)),
            ("Models", _names(facts.models)),
            ("Tool calls", _calls(session.tool_calls, facts.tally)),
            ("Errors", str(len(session.errors))),
            ("Findings", _findings(facts.tally)),
            ("Decisions", decisions or "none"),
            *_spend_bullets(facts.spend, facts.priced_by),
        ]
    )
    if facts.outline:
        yield "- **Turns:**\n"
        for e in facts.outline:
            marks = ""
            if e.errors:
                marks += f", {view.plural(e.errors, 'error')}"
            if e.failed:
                marks += f", {e.failed} failed"
            if e.refused:
                marks += f", {e.refused} refused"
            prompt = f": {inline_code(e.prompt)}" if e.prompt else ""
            status = inline_code(e.status)
            line = f"turn {e.index} {status}, {e.duration}, {view.tools_label(e.tools)}"
            if e.tokens is not None:
                line += f", {view.plural(e.tokens, 'token')}"
            if e.idle:
                line += f" ({view.format_duration(e.idle)} idle before or within)"
            yield f"  - {line}{marks}{prompt}\n"
    yield "\n"


def _spend_bullets(spend: Spend, priced_by: str) -> list[tuple[str, str]]:
    """The Tokens and Cost bullets of what ``spend`` says (none when it records no
    usage)."""
    out = []
    if spend.tokens is not None:
        tokens = f"{view.tokens_line(spend.tokens)} ({view.tokens_detail(spend.tokens)})"
        out.append(("Tokens", tokens))
        cost = f"{view.cost_line(spend)}, priced with {priced_by}" if priced_by else ""
        note = view.unpriced_note(spend)
        out.append(("Cost", cost + (f"; {note}" if note else "")))
    if spend.uncounted:
        noun = "usage entry" if spend.uncounted == 1 else "usage entries"
        out.append(("Not counted", f"{view.count(spend.uncounted)} {noun}"))
    return [(label, value) for label, value in out if value]


def _times(facts: Overview) -> str:
    """``12m05s of work (model 10m, tools 2m05s), 3m waiting on the person, 24h02m idle;
    24h14m from the first turn's start to the last's end``."""
    said = f"{facts.work} of work (model {facts.model_time}, tools {facts.tool_time})"
    if facts.waiting not in ("-", "0.0s"):
        said += f", {facts.waiting} waiting on the person"
    if facts.idle:
        said += f", {facts.idle} idle"
    return f"{said}; {facts.span} from the first turn's start to the last turn's end"


def _calls(count: int, tally: Tally) -> str:
    said = tally.calls_text()
    return f"{count} ({said})" if said else str(count)


def _findings(tally: Tally) -> str:
    """``2 error, 1 tool-error, 1 denied`` (:func:`publisher.gate.session_findings`)."""
    return ", ".join(f"{n} {inline_code(kind)}" for kind, n in tally.by_kind.items()) or "none"


def _turn(
    session: Session,
    turn: Turn,
    marks: list[view.Boundary],
    audit: Audit | None,
    position: int | None,
    spend: Spend | None = None,
) -> Iterator[str]:
    yield f"## Turn {turn.index}\n\n"
    for mark in marks:
        yield f"> **{mark.text}**\n\n"
    status = inline_code(turn.status)
    if turn.status and not view.status_known(turn.status):
        status += " (not a status this publisher knows)"
    duration = view.turn_duration(turn)
    asks = places.asks_in(session, audit, position) if audit and position is not None else []
    before = session.turns[position - 1].ended_at if position else ""
    times = view.TurnTimes.of(turn, asks, before)
    spent: list[tuple[str, str]] = []
    if times.span is not None:  # a turn's duration is its span (docs/session-format.md)
        spent.append(("Work time", view.work_line(times)))
    if times.waiting:
        spent.append(("Waiting on the person", view.format_duration(times.waiting)))
    if spend is not None and spend.tokens is not None:
        spent.append(
            ("Tokens", f"{view.tokens_line(spend.tokens)} ({view.tokens_detail(spend.tokens)})")
        )
        spent.append(("Cost", view.cost_line(spend)))
    elif spend is None and turn.usage:
        tokens = turn_tokens(turn)
        if tokens is not None:
            spent.append(("Tokens", f"{view.tokens_line(tokens)} ({view.tokens_detail(tokens)})"))
    uncounted = view.uncounted_note(turn)
    if uncounted:
        spent.append(("Not counted", uncounted))
    yield from _bullets(
        [
            ("Status", status),
            ("Duration", duration),
            *spent,
            ("Started", inline_code(turn.started_at)),
            ("Ended", inline_code(turn.ended_at)),
            ("Model", inline_code(turn.model)),
            ("Provider", inline_code(turn.provider)),
            ("Mode", inline_code(turn.mode)),
            ("Reasoning", inline_code(turn.reasoning)),
            ("Tool calls", str(turn.tool_count)),
        ]
    )
    yield "\n"
    if turn.usage_written is not None:
        yield "**Usage, as written:**\n\n"
        yield from code_block(json_text(turn.usage_written), "json")
        yield "\n"
    if turn.extra:
        yield "**Other turn fields:**\n\n"
        yield from code_block(json_text(turn.extra), "json")
        yield "\n"
    # One turn alone (turn_markdown, e.g. a JUnit failure) carries no notes: placing them
    # needs the whole session, once, not once a turn.
    errors, decisions = (
        places.turn_notes(session, audit, position)
        if audit is not None and position is not None
        else ([], {})
    )
    if not turn.parts:
        yield "_This turn has no parts._\n\n"
    for number, part in enumerate(turn.parts, start=1):
        yield from _part(session, turn, number, part, decisions.get(number, []))
    for note in errors:
        gist = first_line(note.entry.message, ERROR_GIST_CHARS)
        yield (
            f"> **Error {note.number}** ({error_code(note.entry.code)}, at "
            f"{inline_code(note.entry.timestamp)}): {inline_code(gist) if gist else '(no message)'}"
            f"\n>\n> It is shown here: {note.rule}. Its whole message is under Errors.\n\n"
        )


def _part(
    session: Session, turn: Turn, number: int, part: Part, decisions: list[DecisionNote]
) -> Iterator[str]:
    label = view.part_label(part)
    if isinstance(part, ToolPart):
        label += f" {inline_code(part.name)}" if part.name or part.input is not None else ""
        state = view.tool_state(part)
        code = view.exit_code(part)
        if state == "error":
            label += " — **error**" if code is None else f" — **error** (exit {code})"
        elif state == "pending":
            label += " — pending"
        elif state == "interrupted":
            label += " — interrupted"
    elif part.type not in ("user", "text", "thinking", "system", "tool", "command", "image"):
        label += f" {inline_code(part.type)}"
    yield f"### {turn.index}.{number} {label}\n\n"
    if part.timestamp:
        yield f"At {inline_code(part.timestamp)}\n\n"
    for d in decisions:
        path = f" on {inline_code(d.permission.path)}" if d.permission.path else ""
        yield (
            f"> **Permission {d.number}:** {inline_code(d.permission.decision)} "
            f"(action {inline_code(d.permission.action)}{path}; matched: {d.rule})\n\n"
        )
    if isinstance(part, TextualPart):
        yield from code_block(part.text, TEXT_INFO[part.type])
        yield "\n"
    elif isinstance(part, ImagePart):
        yield f"Image: {view.image_line(part.image)}\n\n"
        if part.image.extra:
            yield "**Image fields** (as written):\n\n"
            yield from code_block(json_text(part.image.extra), "json")
            yield "\n"
    elif isinstance(part, ToolPart):
        yield "**Input:**\n\n"
        yield from code_block(json_text(part.input), "json")
        yield "\n"
        if part.output is not None:
            yield f"**Output** (is_error: {'true' if part.is_error else 'false'}):\n\n"
            yield from code_block(part.output, "text")
            yield "\n"
        for count, image in enumerate(part.images, start=1):
            yield f"**Image {count} of the result:** {view.image_line(image)}\n\n"
            if image.extra:
                yield from code_block(json_text(image.extra), "json")
                yield "\n"
        for note in view.tool_notes(part):
            yield f"_{note}_\n\n"
        if part.analysis:
            yield "**Analysis:**\n\n"
            yield from code_block(part.analysis, "text")
            yield "\n"
    elif isinstance(part, CommandPart):
        yield from code_block(part.text, "text")
        yield "\n"
        if part.is_compaction:
            assert part.summary is not None
            yield "**Summary:**\n\n"
            yield from code_block(part.summary, "text")
            yield "\n"
            yield f"> **{view.compaction_note(part, view.last_index(session))}**\n\n"
    if part.extra:
        title = "All fields" if label.startswith("Unknown") else "Other fields"
        yield f"**{title}** (as written):\n\n"
        yield from code_block(json_text(part.extra), "json")
        yield "\n"


def _permissions(session: Session, audit: Audit) -> Iterator[str]:
    permissions = session.permissions
    yield "## Permissions\n\n"
    if not permissions:
        yield "No permission decisions were recorded in this session.\n\n"
        return
    counts: dict[str, int] = {}
    for p in permissions:
        counts[p.decision] = counts.get(p.decision, 0) + 1
    summary = ", ".join(f"{n} {inline_code(d)}" for d, n in sorted(counts.items()))
    yield f"{view.plural(len(permissions), 'decision')}: {summary}.\n\n"
    yield "| # | Time | Tool | Action | Decision | Path | Call |\n"
    yield "|---|---|---|---|---|---|---|\n"
    for i, (p, placed) in enumerate(zip(permissions, audit.decisions, strict=True), start=1):
        cells = [p.timestamp, p.tool, p.action, p.decision, p.path]
        if placed.position is not None and placed.part is not None:
            call = f"{session.turns[placed.position].index}.{placed.part}"
        else:
            call = "no matching call"
        yield f"| {i} | " + " | ".join(inline_code(c) for c in cells) + f" | {call} |\n"
    yield "\n"
    extras = [(i, p.extra) for i, p in enumerate(permissions, start=1) if p.extra]
    for i, extra in extras:
        yield f"Other fields of decision {i}:\n\n"
        yield from code_block(json_text(extra), "json")
        yield "\n"


def _errors(session: Session, audit: Audit) -> Iterator[str]:
    errors = session.errors
    yield "## Errors\n\n"
    if not errors:
        yield "No errors were recorded in this session.\n"
        return
    yield f"{view.plural(len(errors), 'error')} recorded.\n"
    for i, (error, placed) in enumerate(zip(errors, audit.errors, strict=True), start=1):
        code = error.code if isinstance(error.code, str) else json_text(error.code)
        yield f"\n### Error {i} · code {inline_code(str(code))} ({error_code(error.code)})\n\n"
        if error.timestamp:
            yield f"At {inline_code(error.timestamp)}\n\n"
        if placed.position is not None:
            where = session.turns[placed.position].index
            yield f"In turn {where} ({ERROR_RULES[placed.rule]}).\n\n"
        else:
            yield "In no turn (it has no time within any turn).\n\n"
        yield from code_block(error.message, "text")
        if error.extra:
            yield "\n**Other fields** (as written):\n\n"
            yield from code_block(json_text(error.extra), "json")
