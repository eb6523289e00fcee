"""What a page needs to know about the rest of the archive: summaries and links.

A :class:`Summary` is all the index and the other sessions' pages use of a session, so an
incremental build can refresh them without rereading the session file.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from sys import intern
from typing import TYPE_CHECKING, Any

from ..audit import REFUSED, Audit, Delegation, Spawn, delegations, match_delegations
from ..model import Session, ToolPart
from ..outcome import Outcome
from ..refs import RefIndex
from ..render import view
from .staleness import graph_key
from .urls import PageLimits, page_starts, turn_href

if TYPE_CHECKING:
    from ..gate import Finding
    from .manifest import Brief


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

    @classmethod
    def of(cls, session: Session, redacted: int = 0, limits: PageLimits | None = None) -> Summary:
        """``limits``: how the session's pages are cut (where its turns are linked)."""
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
    return Outcome(1, summary.tool_calls, summary.failures, changes)


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
_NAME = operator.attrgetter("name")
"""A brief's session name (the delegation links' order)."""
_SUB_SESSIONS = SUMMARY_FIELDS.index("sub_sessions")
_SHARED = [
    SUMMARY_FIELDS.index(name) for name in ("kind", "role", "version", "last_status", "origin")
]
_DECISIONS, _FAILURE_EVENTS, _DECISION_EVENTS, _SPAWNS, _FAILURES, _CHANGES = (
    SUMMARY_FIELDS.index(name)
    for name in ("decisions", "failure_events", "decision_events", "spawns", "failures", "changes")
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
}
"""The fields that are lists of tuples, with the types of each tuple's values."""
_NESTED = {name: SUMMARY_FIELDS.index(name) for name in _NESTED_TYPES}


@dataclass(slots=True)
class ShapeMemo:
    """What a :class:`Graph` makes of every session that depends only on the archive's
    shape (:func:`.staleness.graph_key`: names, files, parents, roles, creation times): a
    graph of the same shape may use it as it is."""

    key: str = ""
    """The graph key of the shape it was made for ("" until a build says it)."""
    refs: RefIndex | None = None
    """:attr:`Graph.refs`, made on first use (an append whose session makes no reference
    never needs it: it costs a pass over every file name)."""
    found_children: dict[str, list[str]] | None = None
    """Parent name → names of the sessions whose parent_id names it, sorted."""
    series: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    """Role → session name → (previous, next) run of its series ("" when none), made for a
    role on first use."""
    runs: dict[str, list[tuple[str, str]]] | None = None
    """Role → (created_at, name) of its sessions, unsorted: one pass over every session
    the first time a series is asked, not one a role."""
    callers: dict[str, set[str]] | None = None
    """Session name → the sessions that name it as a sub-session or as its parent (made on
    first use: :meth:`Graph.ancestors`)."""
    row_groups: dict[int, list[list[str]]] = field(default_factory=dict)
    """Shard count → the session names of each row shard of the index, sorted (made by
    the index stage)."""


@dataclass(slots=True)
class Graph:
    """The archive's sessions by name, with parent/child links and reference lookup.

    Made of each session's :class:`.manifest.Brief` (``briefs``): the summaries themselves
    (``summaries``, a mapping that may decode them from the manifest when used) are read
    only for the sessions a build renders or whose rows it makes."""

    summaries: Mapping[str, Summary]
    """Published sessions by session name (page names)."""
    file_names: list[str] = field(default_factory=list)
    """Every session file name of the folder, loaded or not (for ``#id`` lookups)."""
    briefs: Mapping[str, Brief] | None = None
    """Each published session's brief, by session name (made from ``summaries`` when
    None)."""
    memo: ShapeMemo = field(default_factory=lambda: ShapeMemo())
    """The tables made of every session (reference lookup, children found by parent,
    series), each made on first use; one of a graph of the same shape may be given
    (``site watch`` keeps it from build to build: :meth:`.context.Warm.shape_memo`)."""

    def __post_init__(self) -> None:
        if self.briefs is None:
            from .manifest import brief_of

            self.briefs = {name: brief_of(s) for name, s in self.summaries.items()}

    @property
    def all(self) -> Mapping[str, Brief]:
        """Each published session's brief, by session name."""
        assert self.briefs is not None
        return self.briefs

    @property
    def refs(self) -> RefIndex:
        """Resolves ``#id`` and ``session:name`` as the CLI does."""
        memo = self.memo
        if memo.refs is None:
            memo.refs = RefIndex(self.file_names, {b.file_name: b.name for b in self.all.values()})
        return memo.refs

    def key(self) -> str:
        """:func:`.staleness.graph_key` of this graph: equal keys, equal page facts."""
        return graph_key(self.all.values(), self.file_names)

    def children(self, name: str) -> list[str]:
        """Sub-sessions: declared ones first, then any session whose parent_id names it."""
        brief = self.all.get(name)
        declared = list(brief.links[0]) if brief is not None and brief.links else []
        memo = self.memo
        if memo.found_children is None:
            found: dict[str, list[str]] = {}
            with_parent = [brief for brief in self.all.values() if brief.parent_id]
            for brief in sorted(with_parent, key=_NAME):
                found.setdefault(brief.parent_id, []).append(brief.name)
            memo.found_children = found
        return list(dict.fromkeys([*declared, *memo.found_children.get(name, [])]))

    def ref_candidates(self, name: str) -> set[str]:
        """The references written in session ``name`` (:attr:`.manifest.SourceState.refs`),
        from its brief."""
        brief = self.all.get(name)
        return set(brief.links[2]) if brief is not None and brief.links else set()

    def series(self, name: str) -> tuple[str, str]:
        """The previous and next run of a session's series: the sessions of its role, in
        order of creation (then name); "" where there is none, and for a session without a
        role."""
        brief = self.all.get(name)
        if brief is None or not brief.role:
            return ("", "")
        memo = self.memo
        series = memo.series.get(brief.role)
        if series is None:
            if memo.runs is None:  # every role's runs in one pass, the first time
                memo.runs = {}
                for b in self.all.values():
                    if b.role:
                        memo.runs.setdefault(b.role, []).append((b.created_at, b.name))
            runs = sorted(memo.runs.get(brief.role, []))
            series = memo.series[brief.role] = {}
            for i, (_, run) in enumerate(runs):
                before = runs[i - 1][1] if i else ""
                after = runs[i + 1][1] if i + 1 < len(runs) else ""
                series[run] = (before, after)
        return series.get(name, ("", ""))

    def outcome(self, name: str) -> Outcome:
        """What session ``name`` and every session below it did (each counted once,
        cycles cut)."""
        return self._subtree(name, set())

    def below(self, name: str) -> Outcome:
        """What the sessions below ``name`` did (each counted once, cycles cut)."""
        seen = {name}
        total = Outcome()
        for child in self.children(name):
            total = total.plus(self._subtree(child, seen))
        return total

    def _subtree(self, name: str, seen: set[str]) -> Outcome:
        if name in seen or name not in self.all:
            return Outcome()
        seen.add(name)
        total = outcome_of(self.summaries[name])
        for child in self.children(name):
            total = total.plus(self._subtree(child, seen))
        return total

    def ancestors(self, name: str) -> set[str]:
        """Every session above ``name``: its callers (by ``parent_id`` or a declared
        sub-session), theirs, and so on (cycle-safe)."""
        memo = self.memo
        if memo.callers is None:
            callers: dict[str, set[str]] = {}
            for brief in self.all.values():
                if brief.parent_id:
                    callers.setdefault(brief.name, set()).add(brief.parent_id)
                for child in brief.links[0] if brief.links else ():
                    callers.setdefault(child, set()).add(brief.name)
            memo.callers = callers
        found: set[str] = set()
        stack = [name]
        while stack:
            for caller in memo.callers.get(stack.pop(), ()):
                if caller not in found:
                    found.add(caller)
                    stack.append(caller)
        found.discard(name)
        return found

    def delegated(self, name: str) -> tuple[str, ...]:
        """The sub-session each delegate call of session ``name`` spawned ("" for none), in
        file order (:func:`publisher.audit.match_delegations` against its children)."""
        brief = self.all.get(name)
        spawns = brief.links[1] if brief is not None and brief.links else ()
        if not spawns:
            return ()
        calls = [Delegation(named, role, stamp) for named, role, stamp, _ in spawns]
        children = [
            Spawn(child, b.role, b.created_at)
            for child in self.children(name)
            if (b := self.all.get(child)) is not None
        ]
        return tuple(match_delegations(calls, children))

    def spawned_at(self, name: str) -> str:
        """The call that spawned session ``name`` in its direct parent, relative to the
        parent's folder on the page that holds it (``page-2.html#turn-200.3``); "" when
        the parent is not in the archive or no call of it spawned ``name``."""
        brief = self.all.get(name)
        if brief is None or brief.parent_id not in self.all:
            return ""
        parent = self.all[brief.parent_id]
        spawns = parent.links[1] if parent.links else ()
        targets = self.delegated(brief.parent_id)
        return next(
            (spawn[3] for spawn, target in zip(spawns, targets, strict=True) if target == name),
            "",
        )

    def lineage(self, name: str) -> tuple[list[str], bool]:
        """Parents from the root down to the direct parent; True when a cycle was cut."""
        chain: list[str] = []
        seen = {name}
        current = self.all.get(name)
        while current is not None and current.parent_id:
            parent = current.parent_id
            if parent in seen:
                return list(reversed(chain)), True
            seen.add(parent)
            chain.append(parent)
            current = self.all.get(parent)
        return list(reversed(chain)), False
