"""What went wrong in a session, for CI: the findings that ``--fail-on KINDS`` gates on.

A *finding* is one thing of a kind CI may fail on, named by the turn it happened in:

======================  =================================================================
kind                    found when
======================  =================================================================
``error``               an entry of the session's ``errors`` array, or a turn whose status
                        is ``error``
``tool-error``          a tool part whose result has ``is_error: true`` (not one the person
                        stopped, ``interrupted``: its turn's ``cancelled`` status counts it)
``denied``              a permission decision ``denied`` (blocked by policy)
``declined``            a permission decision ``declined`` (the user refused an ask)
``truncated``           a turn whose status is ``truncated``
``cancelled``           a turn whose status is ``cancelled``
``running``             a turn whose status is ``running`` (the run never finished)
``secret``              a credential in the text (what ``--redact`` would replace, or a
                        session name ``--redact`` keeps): looked for only when asked, since
                        it runs every redaction rule over every string (:mod:`.secret_report`)
======================  =================================================================

**Counted once.** One thing that went wrong is one finding, of the kind that says the most
about it: a call refused by a permission decision (``denied``, ``declined``: the decision
matched to that call by :mod:`.audit`) is that refusal, not also a ``tool-error``, although
its result says it failed; a turn whose status is ``error`` is an ``error`` finding only
when none of the session's ``errors`` is placed in it (else that entry is the turn's error,
named with its message). Every count a page, the index, the summary or the JUnit report
gives of a session's failures is made of :func:`session_findings`.

**Attribution.** Turn statuses and tool errors belong to their turn (``N``) or part
(``N.M``, numbered as ``/print N.M`` numbers parts). Errors and permission decisions live
outside the turn log with only a timestamp: they are placed in a turn (and a decision on a
tool call) by the rules of :mod:`.audit`, the one home of those rules, which the session
pages and the Markdown export use too. An event placed in no turn names none (``turn`` is
empty).

**Sub-sessions.** :func:`session_tree` follows ``sub_sessions`` at any depth, depth first in
the order the parents list them; a name already visited is not followed again (a cycle or a
diamond), and a name that does not load is kept with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from .audit import REFUSED, Audit, attribute, utc_time
from .model import Session, ToolPart, Turn
from .render.text import FIRST_LINE_RE

__all__ = ["attribute", "utc_time"]

#: Every kind ``--fail-on`` takes, in the order reports list them.
KINDS: tuple[str, ...] = (
    "error",
    "tool-error",
    "denied",
    "declined",
    "truncated",
    "cancelled",
    "running",
    "secret",
)
#: The kinds read from what the log records (every kind but ``secret``): those a report
#: lists when no ``--fail-on`` asks for more, and ``check``'s default.
EVENT_KINDS: tuple[str, ...] = KINDS[:-1]


def listed_kinds(gated: Collection[str] | None) -> tuple[str, ...]:
    """The kinds a report lists for a gate on ``gated``: the event kinds, and ``secret``
    when the gate asks for it."""
    return KINDS if gated is not None and "secret" in gated else EVENT_KINDS


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
    entry: int | None = None
    """1-based number of the ``errors`` entry or the ``permissions`` decision it reports,
    for those kinds (their notes in the turn are linked by it)."""

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
    root: Session, kinds: Collection[str] = EVENT_KINDS, load: Loader | None = None
) -> list[Finding]:
    """The findings of ``kinds`` in ``root`` and, unless ``load`` is None, its sub-sessions.

    Ordered by session (the tree's order), then turn, then part; deterministic.
    """
    out: list[Finding] = []
    for member in session_tree(root, load):
        if member.session is not None:
            out.extend(session_findings(member.session, kinds))
    return out


def session_findings(
    session: Session, kinds: Collection[str] = EVENT_KINDS, audit: Audit | None = None
) -> list[Finding]:
    """The findings of ``kinds`` in one session (its sub-sessions are not read; ``audit``:
    the session's :class:`.audit.Audit`, when the caller has it)."""
    wanted = frozenset(kinds)
    name = session.session_name
    keyed: list[tuple[tuple[int, int, int, int, int], Finding]] = []

    def add(seq: int, finding: Finding, last: int = 0) -> None:
        # In a turn: by part, then kind; a status comes after the errors it sums up.
        position = -1 if finding.position is None else finding.position
        key = (position, finding.part or 0, KINDS.index(finding.kind), last, seq)
        keyed.append((key, finding))

    # Errors and permission decisions, placed by the rules of :mod:`.audit`.
    placed = audit or Audit.of(session)
    refused = {
        (decided.position, decided.part)
        for permission, decided in zip(session.permissions, placed.decisions, strict=True)
        if permission.decision in REFUSED and decided.part is not None
    }
    seq = 0
    for position, turn in enumerate(session.turns):
        status = turn.status
        # A turn's error status is its placed error entry, when it has one (counted once).
        if (
            status in STATUS_FINDINGS
            and status in wanted
            and (status != "error" or not placed.errors_in(position))
        ):
            message = STATUS_FINDINGS[status]
            add(seq, Finding(name, status, str(turn.index), message, position), last=1)
            seq += 1
        if "tool-error" in wanted:
            for number, part in enumerate(turn.parts, start=1):
                if isinstance(part, ToolPart) and part.failed and (position, number) not in refused:
                    add(seq, _tool_error(name, turn, position, number, part))
                    seq += 1

    if "error" in wanted:
        for error, where in zip(session.errors, placed.errors, strict=True):
            message = _error_message(error.code, error.message)
            add(seq, _attributed(session, "error", message, where.position, None, where.number))
            seq += 1
    for permission, decided in zip(session.permissions, placed.decisions, strict=True):
        kind = permission.decision
        if kind in REFUSED and kind in wanted:
            what = one_line(f"{permission.tool} {permission.path}".strip())
            message = f"permission {kind}: {what}"
            found = _attributed(
                session, kind, message, decided.position, decided.part, decided.number
            )
            add(seq, found)
            seq += 1
    if "secret" in wanted:
        for found in _secrets(session):
            add(seq, found)
            seq += 1
    keyed.sort(key=lambda item: item[0])
    return [finding for _, finding in keyed]


def _secrets(session: Session) -> list[Finding]:
    """A finding for each credential left in ``session`` (the default redaction rules;
    the rules are loaded on the first use)."""
    from .redact import Redactor
    from .secret_report import secret_findings

    out = []
    for found in secret_findings(session, Redactor.create()):
        kept = " (a session identifier: --redact keeps it)" if found.kept else ""
        message = f"secret {found.kind} in {found.field}{kept}: {one_line(found.preview)}"
        out.append(Finding(session.session_name, "secret", found.turn, message, found.position,
                           found.part))  # fmt: skip
    return out


def _tool_error(session: str, turn: Turn, position: int, number: int, part: ToolPart) -> Finding:
    message = f"tool error: {one_line(part.name) or '(its call is not in the log)'}"
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
    if not first or first == last:
        return one_line(last if len(last) <= limit else "…" + last[-(limit - 1) :], limit)
    if not last:
        return one_line(first, limit)
    # One "…" between them says what is left out: the rest of the first line, the lines
    # between, the start of the last line (the end of a long last line says the most).
    return f"{one_line(first[:limit], limit)} … {one_line(last[-limit:], limit)}"


def fit(message: str, limit: int) -> str:
    """A finding's message cut to ``limit`` characters. A tool output's gist (``first …
    last``, :func:`output_gist`) keeps the start of its first line and the end of its last
    (which usually says what went wrong), each at least half of the room when both are
    long, with one ``…`` between them; any other message loses its end."""
    if len(message) <= limit:
        return message
    head, sep, tail = message.rpartition(" … ")
    room = limit - len(sep)
    if not sep or room < 16:
        return message[: limit - 1] + "…"
    head, tail = head.rstrip("…"), tail.lstrip("…")
    keep_tail = min(len(tail), max(room // 2, room - len(head)))
    return head[: room - keep_tail] + sep + tail[len(tail) - keep_tail :]


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
    kind: str,
    message: str,
    position: int | None,
    number: int | None,
    entry: int,
) -> Finding:
    """A finding for entry ``entry`` of ``errors`` or ``permissions``, placed in the turn at
    ``position`` (and part ``number``)."""
    if position is None:
        return Finding(session.session_name, kind, "", message, entry=entry)
    turn = session.turns[position]
    label = f"{turn.index}.{number}" if number is not None else str(turn.index)
    return Finding(session.session_name, kind, label, message, position, number, entry)


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


#: The kinds that say something went wrong (a run still going, ``running``, is a state).
FAILURE_KINDS: tuple[str, ...] = tuple(k for k in KINDS if k != "running")


@dataclass(slots=True, frozen=True)
class Tally:
    """A session's findings counted: what every page, the index, the summary and the JUnit
    report say of its failures (one count, made of :func:`session_findings`)."""

    by_kind: dict[str, int]
    """Findings per kind, in :data:`KINDS` order, kinds with none left out."""
    failed_calls: int
    """Tool calls that failed (``tool-error``; a refused call is its refusal)."""
    refused_calls: int
    """Tool calls refused by a permission decision (``denied`` or ``declined`` on a call)."""

    @classmethod
    def of(cls, found: Iterable[Finding]) -> Tally:
        found = list(found)
        return cls(
            by_kind=counts(found),
            failed_calls=sum(1 for f in found if f.kind == "tool-error"),
            refused_calls=sum(1 for f in found if f.kind in REFUSED and f.part is not None),
        )

    @property
    def failures(self) -> int:
        """How many findings say something went wrong (every kind but ``running``)."""
        return sum(n for kind, n in self.by_kind.items() if kind in FAILURE_KINDS)

    def calls_text(self) -> str:
        """``1 failed, 2 refused`` ("" when none of its calls failed or was refused)."""
        said = [f"{self.failed_calls} failed" if self.failed_calls else ""]
        said.append(f"{self.refused_calls} refused" if self.refused_calls else "")
        return ", ".join(filter(None, said))


def spread(found: Iterable[Finding], searched: int) -> str:
    """Where ``found`` was, among the ``searched`` sessions, as a verdict says it:
    ``1 of 3 sessions``, or ``1 session`` when only one was searched."""
    if searched == 1:
        return "1 session"
    sessions = len({finding.session for finding in found})
    return f"{sessions:,} of {searched:,} sessions"
