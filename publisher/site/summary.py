"""What the rest of the archive needs of one session: its :class:`Summary`.

A summary is all the index, the archive-wide pages and the other sessions' pages use of a
session, made when the session is scanned: a build does not read the file again for them.
The catalog keeps it as data (:mod:`.catalog`: the whole summary as a JSON row, and the
fields the index sorts and filters on as columns of their own).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from sys import intern
from typing import TYPE_CHECKING, Any

from ..audit import REFUSED, Audit, delegations
from ..model import Session, ToolPart
from ..outcome import Outcome
from ..render import view
from ..usage import Group, Prices, groups_of, spend_of_groups
from .urls import PageLimits, page_starts, turn_href

if TYPE_CHECKING:
    from ..gate import Finding


@dataclass(slots=True, frozen=True)
class Summary:
    """Per-session facts for the index and for links from other pages."""

    name: str
    """Session name."""
    file_name: str
    """File name in the sessions folder."""
    session_id: str
    """The id field."""
    kind: str
    """ses, job, sub or named."""
    role: str
    """Owning role."""
    version: str
    """Polyglav version."""
    created_at: str
    """Creation timestamp."""
    updated_at: str
    """Last update timestamp."""
    parent_id: str
    """Parent session name."""
    sub_sessions: tuple[str, ...]
    """Declared sub-sessions."""
    turns: int
    """Number of turns."""
    tool_calls: int
    """Number of tool parts."""
    errors: int
    """Number of error entries."""
    last_status: str
    """Status of the last turn."""
    first_prompt: str
    """What names the session in the index: its title (:attr:`Session.title`), else the
    first line of its first prompt."""
    decisions: tuple[tuple[str, int], ...] = field(default=())
    """Permission decision counts, sorted by decision."""
    redacted: int = 0
    """Secrets redacted from the session (when the build redacts)."""
    origin: str = ""
    """Where an imported session came from (its ``imported_from``: agent and source), or
    empty for a native session."""
    failure_events: tuple[tuple[str, str, str, str, str, str, str], ...] = field(default=())
    """Its failures for the archive's Failures page (``errors.html``): each finding of
    :func:`publisher.gate.session_findings` that says something went wrong (failed calls,
    errors, refusals, cut and interrupted turns: the ones :attr:`failures` counts), in the
    findings' order: (UTC sort time, time as written, where (``N`` or ``N.M``, or ""), link
    to the turn or call in the session's folder on the page that holds it
    (``page-2.html#turn-200.3``) or "", kind (:data:`publisher.gate.KINDS`), what failed (an
    error's code, a call's or a refused tool's name), the finding's one-line message)."""
    decision_events: tuple[tuple[str, str, str, str, str, str, str, str], ...] = field(default=())
    """Its permission decisions for the Decisions page, in file order: (UTC sort time, time
    as written, decision, tool, action, path, turn position label ``N`` or ``N.M`` or "",
    link to the tool call, or to the turn, in the session's folder on the page that holds
    it (``page-2.html#turn-200.3``), or "")."""
    failures: tuple[tuple[str, int], ...] = field(default=())
    """Its findings by kind (:func:`publisher.gate.session_findings`, counted by
    :class:`publisher.gate.Tally`), in ``KINDS`` order."""
    changes: tuple[tuple[str, str, str], ...] = field(default=())
    """The files its calls changed (:func:`publisher.render.tools.changes_of`): (path,
    action, link to the call in the session's folder on the page that holds it)."""
    spawns: tuple[tuple[str, str, str, str], ...] = field(default=())
    """Its delegate calls, in file order: (the sub-session the call names or "", the role
    it asked for, its timestamp, link to the call in the session's folder on the page that
    holds it, ``page-2.html#turn-200.3``); which sub-session each spawned is
    :func:`publisher.audit.match_delegations` of these and the session's children."""
    usage: tuple[Group, ...] = field(default=())
    """What its requests to models spent, by day and model (:func:`publisher.usage.groups_of`,
    priced with the build's table): its tokens and cost on the index, the activity chart's
    and its callers' sums; empty when it records no usage."""

    @classmethod
    def of(
        cls,
        session: Session,
        redacted: int = 0,
        limits: PageLimits | None = None,
        prices: Prices | None = None,
    ) -> Summary:
        """``limits``: how the session's pages are cut (where its turns are linked);
        ``prices``: the table its usage is priced with (the shipped one when None)."""
        from ..gate import Tally, session_findings
        from ..render.markup import plain_inline
        from ..render.text import first_line
        from ..render.tools import changes_of
        from ..render.view import prompt_of

        audit = Audit.of(session)  # errors and decisions placed once, for every list
        findings = session_findings(session, audit=audit)
        first = session.title or (
            first_line(prompt_of(session.turns[0]), 400) if session.turns else ""
        )
        first = first_line(plain_inline(first), 120)
        decisions = Counter(p.decision for p in session.permissions)
        where = TurnLinks.of(session, limits)
        return cls(
            name=session.session_name,
            file_name=session.file_name,
            session_id=session.session_id,
            kind=session.kind,
            role=session.role,
            version=session.version,
            created_at=session.created_at,
            updated_at=session.updated_at,
            parent_id=session.parent_id,
            sub_sessions=tuple(session.sub_sessions),
            turns=len(session.turns),
            tool_calls=session.tool_calls,
            errors=len(session.errors),
            last_status=session.last_status,
            first_prompt=first,
            decisions=tuple(sorted(decisions.items())),
            redacted=redacted,
            origin=origin_of(session),
            failure_events=failure_events(session, findings, where),
            decision_events=decision_events(session, audit, where),
            failures=tuple(Tally.of(findings).by_kind.items()),
            changes=tuple(
                (c.path, c.action, where.href(c.position, f".{c.number}"))
                for c in changes_of(session)
            ),
            spawns=spawns_of(session, where),
            usage=groups_of(session, prices or Prices()),
        )

    def to_json(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in SUMMARY_FIELDS}

    def __reduce__(self) -> tuple[Callable[..., Summary], tuple[Any, ...]]:
        """Pickled as its values in field order, unpickled by one call of the class (about
        twice as fast as the slots' default state: a full build's scan results come from the
        pool this way)."""
        return (_unpickled, _VALUES(self))

    def to_row(self) -> list[object]:
        """The fields in order, as JSON values (lists, never tuples)."""
        row: list[object] = [getattr(self, name) for name in SUMMARY_FIELDS]
        row[_SUB_SESSIONS] = list(self.sub_sessions)
        for index in _NESTED.values():
            row[index] = [list(d) for d in row[index]]  # type: ignore[attr-defined]
        return row

    @classmethod
    def from_trusted_row(cls, row: list[Any]) -> Summary:
        """The summary of :meth:`to_row`'s list, as this publisher wrote it (the manifest's
        checksum vouches for it)."""
        return _shared(list(row))


def outcome_of(summary: Summary) -> Outcome:
    """What one session did, from its summary."""
    name = summary.name
    changes = tuple((name, path, action, href) for path, action, href in summary.changes)
    return Outcome(1, summary.tool_calls, summary.failures, changes, spend_of_groups(summary.usage))


MESSAGE_CHARS = 300
"""How much of an error message the Errors page shows (the session page has all of it)."""


def _sort_time(stamp: str) -> str:
    from ..audit import utc_time

    when = utc_time(stamp)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f") if when is not None else ""


def _cut(text: str, limit: int = MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(slots=True, frozen=True)
class TurnLinks:
    """Where a session's turns are: each one's anchor and the pages they are cut into."""

    anchors: list[str]
    """Each turn's element id, by position (:func:`publisher.render.view.turn_anchors`)."""
    starts: tuple[int, ...]
    """:func:`.urls.page_starts` of the session."""

    @classmethod
    def of(cls, session: Session, limits: PageLimits | None = None) -> TurnLinks:
        from ..render.view import turn_anchors

        return cls(turn_anchors(session), page_starts(session, limits))

    def href(self, position: int, suffix: str = "") -> str:
        """The link to the turn at ``position`` (``suffix``: ``.3`` for its call 3) in the
        session's folder, on the page that holds it."""
        return turn_href(self.starts, position, self.anchors[position] + suffix)


def spawns_of(
    session: Session, where: TurnLinks | None = None
) -> tuple[tuple[str, str, str, str], ...]:
    """:attr:`Summary.spawns` of a session."""
    where = where or TurnLinks.of(session)
    return tuple(
        (call.named, call.role, call.timestamp, where.href(position, f".{number}"))
        for position, number, call in delegations(session)
    )


def failure_events(
    session: Session,
    findings: Iterable[Finding] | None = None,
    where: TurnLinks | None = None,
) -> tuple[tuple[str, str, str, str, str, str, str], ...]:
    """:attr:`Summary.failure_events` of a session (``findings``: its
    :func:`publisher.gate.session_findings`, when the caller has them; ``where``: its
    turns' links). A failure's time is its error entry's or permission decision's, its
    call's, or its turn's (its end, else its start)."""
    from ..gate import FAILURE_KINDS, session_findings

    if findings is None:
        findings = session_findings(session)
    where = where or TurnLinks.of(session)
    out = []
    for finding in findings:
        kind = finding.kind
        if kind not in FAILURE_KINDS:
            continue
        position, number = finding.position, finding.part
        turn = None if position is None else session.turns[position]
        stamp, what = "", ""
        if finding.entry is not None and kind == "error":
            entry = session.errors[finding.entry - 1]
            stamp, what = entry.timestamp, str(entry.code)
        elif finding.entry is not None and kind in REFUSED:
            permission = session.permissions[finding.entry - 1]
            stamp, what = permission.timestamp, permission.tool
        elif turn is not None and number is not None and 0 < number <= len(turn.parts):
            part = turn.parts[number - 1]
            stamp = part.timestamp
            if isinstance(part, ToolPart):
                what = part.name
        if not stamp and turn is not None:
            stamp = turn.ended_at or turn.started_at
        href = ""
        if position is not None:
            href = where.href(position, "" if number is None else f".{number}")
        out.append(
            (
                _sort_time(stamp),
                stamp,
                finding.turn,
                href,
                kind,
                _cut(what, 200),
                finding.message,
            )
        )
    return tuple(out)


def decision_events(
    session: Session, audit: Audit | None = None, where: TurnLinks | None = None
) -> tuple[tuple[str, str, str, str, str, str, str, str], ...]:
    """:attr:`Summary.decision_events` of a session (matched by :mod:`publisher.audit`;
    ``audit``: the session's, when the caller has it; ``where``: its turns' links)."""
    audit = audit or Audit.of(session)
    where = where or TurnLinks.of(session)
    places = [(d.position, d.part) for d in audit.decisions]
    out = []
    for permission, (position, number) in zip(session.permissions, places, strict=True):
        turn = "" if position is None else str(session.turns[position].index)
        label = f"{turn}.{number}" if turn and number is not None else turn
        out.append(
            (
                _sort_time(permission.timestamp),
                permission.timestamp,
                permission.decision,
                _cut(permission.tool, 200),
                _cut(permission.action, 200),
                _cut(permission.path),
                label,
                ""
                if position is None
                else where.href(position, "" if number is None else f".{number}"),
            )
        )
    return tuple(out)


def origin_of(session: Session) -> str:
    """``Claude Code: <source>`` of an imported session (:func:`.view.origin`), "" when it
    was not imported."""
    found = view.origin(session)
    if found is None:
        return ""
    label = f"{found.label}: {found.path}" if found.path else found.label
    return label if len(label) <= 160 else label[:159] + "…"


SUMMARY_FIELDS = tuple(f.name for f in fields(Summary))
"""The names of a summary's fields, in order (its manifest row)."""
_VALUES = operator.attrgetter(*SUMMARY_FIELDS)
"""A summary's values in field order (:meth:`Summary.__reduce__`)."""
_SUB_SESSIONS = SUMMARY_FIELDS.index("sub_sessions")
_SHARED = [
    SUMMARY_FIELDS.index(name) for name in ("kind", "role", "version", "last_status", "origin")
]
_DECISIONS, _FAILURE_EVENTS, _DECISION_EVENTS, _SPAWNS, _FAILURES, _CHANGES, _USAGE = (
    SUMMARY_FIELDS.index(name)
    for name in (
        "decisions",
        "failure_events",
        "decision_events",
        "spawns",
        "failures",
        "changes",
        "usage",
    )
)


def _unpickled(*values: Any) -> Summary:
    """A summary from its pickled values (:meth:`Summary.__reduce__`)."""
    return _shared(list(values))


def _shared(row: list[Any]) -> Summary:
    """A summary from its values in field order (lists or tuples where it holds tuples:
    made tuples here, a tuple kept as it is), its few-valued texts (kind, role, version, status, origin, decisions, error codes, tools and
    actions) interned: every session's would otherwise be a copy of its own, which at 20,000
    sessions is about 8 MB of a full build's memory (from the pool) or of a build that
    decodes every state (from the manifest)."""
    for index in _SHARED:
        row[index] = intern(row[index])
    row[_SUB_SESSIONS] = tuple(row[_SUB_SESSIONS])
    row[_SPAWNS] = tuple(
        (named, intern(role), stamp, href) for named, role, stamp, href in row[_SPAWNS]
    )
    row[_FAILURES] = tuple((intern(kind), n) for kind, n in row[_FAILURES])
    row[_CHANGES] = tuple((path, intern(action), href) for path, action, href in row[_CHANGES])
    row[_DECISIONS] = tuple((intern(d), n) for d, n in row[_DECISIONS])
    row[_USAGE] = tuple((intern(day), intern(model), *rest) for day, model, *rest in row[_USAGE])
    row[_FAILURE_EVENTS] = tuple(
        (sort, time, turn, anchor, intern(kind), intern(what), message)
        for sort, time, turn, anchor, kind, what, message in row[_FAILURE_EVENTS]
    )
    row[_DECISION_EVENTS] = tuple(
        (sort, time, intern(decision), intern(tool), intern(action), path, turn, anchor)
        for sort, time, decision, tool, action, path, turn, anchor in row[_DECISION_EVENTS]
    )
    return Summary(*row)


_NESTED_TYPES: dict[str, tuple[type, ...]] = {
    "decisions": (str, int),
    "failures": (str, int),
    "changes": (str, str, str),
    "failure_events": (str,) * 7,
    "decision_events": (str,) * 8,
    "spawns": (str, str, str, str),
    "usage": (str, str) + (int,) * 7,
}
"""The fields that are lists of tuples, with the types of each tuple's values."""
_NESTED = {name: SUMMARY_FIELDS.index(name) for name in _NESTED_TYPES}
