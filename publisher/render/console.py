"""Plain-text renderings for the terminal: ``history``, ``print``, ``sessions``, preview.

Every string from a session goes through :func:`terminal_safe`, so escape sequences in a
tool output cannot drive the reader's terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ..archive import LISTING_CELLS, LISTING_HEADER, LISTING_SEPARATOR, Listed
from ..model import CommandPart, ImagePart, Session, TextualPart, ToolPart, Turn
from . import view
from .text import first_line, json_text, terminal_safe

DEFAULT_PRINT_MAX_CHARS = 4000
DIM, RESET = "\x1b[2m", "\x1b[0m"


def _v(value: str) -> str:
    """A metadata value: ``-`` when empty, terminal-safe otherwise."""
    return terminal_safe(value) if value else "-"


def history_lines(
    session: Session, count: int | None, thoughts: str | None, color: bool = False
) -> Iterator[str]:
    """The ``/history`` index: ``#<index> [<status>] <duration> <tool count> <prompt>``.

    ``count`` None means all turns; ``thoughts`` is None, ``"excerpt"`` or ``"all"``.
    """
    turns = session.turns if count is None else session.turns[-count:] if count > 0 else []
    for turn in turns:
        prompt = terminal_safe(first_line(view.prompt_of(turn), 100))
        yield (
            f"#{turn.index} [{_v(turn.status)}] {view.turn_duration(turn)} "
            f"{view.tools_label(turn.tool_count)} {prompt}".rstrip()
        )
        if thoughts:
            thinking = view.thinking_of(turn)
            if not thinking:
                continue
            if thoughts == "all":
                body = "\n".join("    " + line for line in terminal_safe(thinking).split("\n"))
            else:
                body = "    " + terminal_safe(first_line(thinking, 100))
            yield f"{DIM}{body}{RESET}" if color else body


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with Polyglav's ``/print`` suffix; 0 means no cap."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more chars, use --full)"


def turn_metadata(turn: Turn) -> Iterator[str]:
    """The full metadata block of ``/print``, ``-`` for empty values."""
    rows = [
        ("index", f"#{turn.index}"),
        ("status", _v(turn.status)),
        ("duration", view.turn_duration(turn)),
        ("tools", str(turn.tool_count)),
        ("started", _v(turn.started_at)),
        ("ended", _v(turn.ended_at)),
        ("model", _v(turn.model)),
        ("provider", _v(turn.provider)),
        ("mode", _v(turn.mode)),
        ("reasoning", _v(turn.reasoning)),
    ]
    for label, value in rows:
        yield f"{label + ':':<11}{value}"


def part_lines(session: Session, turn: Turn, number: int, limit: int) -> Iterator[str]:
    part = turn.parts[number - 1]
    label = view.part_label(part)
    if isinstance(part, ToolPart):
        label += f" {terminal_safe(part.name)} [{view.tool_state(part)}]"
    elif label.startswith("Unknown"):
        label += f" {terminal_safe(part.type)}"
    yield f"--- {turn.index}.{number} {label}" + (
        f" ({_v(part.timestamp)})" if part.timestamp else ""
    )
    if isinstance(part, TextualPart):
        yield terminal_safe(cap(part.text, limit))
    elif isinstance(part, ToolPart):
        yield "input:"
        yield terminal_safe(cap(json_text(part.input), limit))
        yield "output:"
        yield terminal_safe(cap(part.output, limit)) if part.output is not None else "-"
        yield f"is_error: {'true' if part.is_error else 'false'}"
        yield f"analysis: {terminal_safe(cap(part.analysis, limit)) if part.analysis else '-'}"
        for image in part.images:
            yield f"image: {view.image_line(image)}"
        for note in view.tool_notes(part):
            yield f"note: {note}"
    elif isinstance(part, ImagePart):
        yield f"image: {view.image_line(part.image)}"
    elif isinstance(part, CommandPart):
        yield terminal_safe(cap(part.text, limit))
        if part.is_compaction:
            assert part.summary is not None
            yield "summary:"
            yield terminal_safe(cap(part.summary, limit))
            yield f"compact_from: {part.compact_from if part.compact_from is not None else '-'}"
            yield view.compaction_note(part, view.last_index(session))
    if part.extra:
        yield "other fields:"
        yield terminal_safe(cap(json_text(part.extra), limit))


def print_lines(session: Session, turn: Turn, part_number: int | None, limit: int) -> Iterator[str]:
    """``/print n`` (metadata block and every part) or ``/print n.m`` (one part)."""
    if part_number is not None:
        yield from part_lines(session, turn, part_number, limit)
        return
    yield from turn_metadata(turn)
    for number in range(1, len(turn.parts) + 1):
        yield ""
        yield from part_lines(session, turn, number, limit)


def listing_row(entry: Listed) -> tuple[str, ...]:
    """What the ``/sessions`` table shows of one file: its cells (:data:`LISTING_HEADER`)
    and its note (why it does not load; a session_name that is not the file's; the
    parent of a sub-session), every value from the file :func:`terminal_safe`. Kept by the
    site build's catalog for each file it scans (``polyglav sessions`` takes it from there)."""
    if entry.failure is not None:
        name = terminal_safe(entry.file_name[:-5])
        return ("-", name, "-", "-", "-", "-", "-", f"not loaded: {entry.failure.reason}")
    notes = []
    if entry.file_name != f"{entry.session_name}.json":
        notes.append(f"session_name: {terminal_safe(entry.session_name)}")
    if entry.parent_id:
        notes.append(f"parent: {terminal_safe(entry.parent_id)}")
    return (
        entry.kind,
        terminal_safe(entry.file_name[:-5]),
        _v(entry.session_id),
        _v(entry.role),
        _v(entry.version),
        str(entry.turns),
        _v(entry.updated_at),
        "; ".join(notes),
    )


def listing_warnings(entry: Listed) -> list[str]:
    """What ``polyglav sessions`` tells on stderr of one file: why it does not load, or a
    session_name that is not the file's."""
    from ..prepare import name_warnings

    if entry.failure is not None:
        return [f"{entry.file_name}: {entry.failure.reason}"]
    return name_warnings(entry)


def sessions_table(listings: list[str]) -> list[str]:
    """The ``/sessions`` listing of the files' :func:`listing_row`, each as one
    :func:`.archive.listing_text` (of :data:`.archive.LISTING_CELLS` values), by file name
    (what ``#id`` and ``session:`` resolve). Laid out a column at a time, at C speed: one
    split of every row, a column a slice, its width one ``max``, a line one ``%`` (100,000
    rows in about 0.12 s, where a row at a time took 0.35 s)."""
    count = LISTING_CELLS
    flat = LISTING_SEPARATOR.join(listings).split(LISTING_SEPARATOR) if listings else []
    if len(flat) != count * len(listings):
        raise ValueError(f"a listing row is not of {count} values")
    columns = [flat[i::count] for i in range(count)]
    del flat
    notes = columns.pop()
    widths = [
        max(len(head), *map(len, column)) if column else len(head)
        for head, column in zip(LISTING_HEADER, columns, strict=True)
    ]
    # A cell is a ``%s`` argument, never in the pattern; the note follows its two spaces.
    line = "  ".join(f"%-{width}s" for width in widths) + "%s"
    columns.append([note and "  " + note for note in notes])
    header = "  ".join(map(str.ljust, LISTING_HEADER, widths)).rstrip()
    return [header, *(map(str.rstrip, map(line.__mod__, zip(*columns, strict=True))))]


def preview_lines(session: Session, children: list[str]) -> Iterator[str]:
    """``/sessions preview``: the structure without the content."""
    kinds: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    for turn in session.turns:
        for part in turn.parts:
            kinds[part.type] += 1
            if isinstance(part, ToolPart):
                tools[part.name] += 1

    def counted(counter: Counter[str]) -> str:
        items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{terminal_safe(k)} ×{n}" for k, n in items) or "-"

    subs = list(dict.fromkeys([*session.sub_sessions, *children]))
    rows = [
        ("name", terminal_safe(session.session_name)),
        ("kind", f"{session.kind} ({view.KIND_LABELS[session.kind]})"),
        ("id", _v(session.session_id)),
        ("role", _v(session.role)),
        ("version", _v(session.version)),
        ("created", _v(session.created_at)),
        ("updated", _v(session.updated_at)),
        ("turns", str(len(session.turns))),
        ("statuses", counted(Counter(t.status or "-" for t in session.turns))),
        ("part kinds", counted(kinds)),
        ("tools", counted(tools)),
        ("errors", str(len(session.errors))),
        ("permissions", str(len(session.permissions))),
        ("parent", _v(session.parent_id)),
        ("sub-sessions", ", ".join(terminal_safe(s) for s in subs) or "-"),
    ]
    for label, value in rows:
        yield f"{label + ':':<14}{value}"
