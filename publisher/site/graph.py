"""What a page needs to know about the rest of the archive: parents, sub-sessions, series,
reference targets, asked of the catalog.

A :class:`Graph` answers for the published sessions of a catalog (:mod:`.catalog`), one
session at a time, with indexed queries: a build holds no table of every session. What it
answers is what a session's pages show of others (:class:`.render.PageFacts`); the
archive's shape as a whole is its :meth:`Graph.key`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..audit import Delegation, Spawn, match_delegations
from ..outcome import Outcome
from ..refs import parse
from .catalog import Catalog, Node, SourceState
from .staleness import archive_rows_key, graph_key, summary_key
from .summary import Summary, outcome_of
from .urls import row_slot

NODES_KEPT = 4096
"""Sessions a graph keeps once looked up (a session's facts look up its parent chain,
children and series several times); dropped all at once past this many."""
CALLERS_PASS = 64
"""After this many :meth:`Graph.ancestors` questions, the callers of every session are
read in one pass."""


@dataclass(slots=True)
class Graph:
    """The published sessions of ``catalog`` and their links (see the module docstring)."""

    catalog: Catalog
    """Where the sessions are (the build's catalog, or one in memory: :meth:`of`)."""
    _nodes: dict[str, Node | None] = field(default_factory=dict, repr=False)
    _own: dict[str, Outcome] = field(default_factory=dict, repr=False)
    """What each session looked up did itself (:func:`.summary.outcome_of`), kept as
    :attr:`_nodes` is."""
    _callers: dict[str, list[str]] | None = field(default=None, repr=False)
    """Session name → its callers, of every published session: made by one pass once
    :meth:`ancestors` has been asked :data:`CALLERS_PASS` times (a build that changed many
    sessions), else each caller is asked of the catalog."""
    _asked: int = field(default=0, repr=False)

    @classmethod
    def of(cls, summaries: Mapping[str, Summary], file_names: list[str]) -> Graph:
        """The graph of ``summaries`` (by session name) in a folder of ``file_names``
        (loaded or not), in a catalog in memory: for a page rendered outside a build."""
        catalog = Catalog.memory()
        by_file = {s.file_name: s for s in summaries.values()}
        for file_name in sorted({*file_names, *by_file}):
            summary = by_file.get(file_name)
            state = (
                SourceState(
                    0,
                    0,
                    "",
                    summary,
                    None,
                    digest=summary_key(summary),
                    events_key=archive_rows_key(summary),
                    slot=row_slot(summary.name),
                )
                if summary is not None
                else SourceState(0, 0, "", None, "not a session")
            )
            catalog.put(file_name, state, scanned=1)
        catalog.publish(everything=True)
        return cls(catalog)

    def node(self, name: str) -> Node | None:
        """The published session ``name`` (None when there is none)."""
        nodes = self._nodes
        if name in nodes:
            return nodes[name]
        if len(nodes) >= NODES_KEPT:
            nodes.clear()
        found = nodes[name] = self.catalog.node(name)
        return found

    def present(self, name: str) -> bool:
        return self.node(name) is not None

    def role(self, name: str) -> str:
        node = self.node(name)
        return node.role if node is not None else ""

    def key(self) -> str:
        """:func:`.staleness.graph_key` of the archive: equal keys, equal page facts."""
        return graph_key(self.catalog.shapes(), self.catalog.file_names())

    def resolve(self, ref: str) -> str | None:
        """``#id`` or ``session:name`` (as written) → the name of the session it opens, or
        None, as the CLI resolves it (:class:`publisher.refs.RefIndex`): ``session:<name>``
        is the file ``<name>.json``, ``#<id>`` the one file of the folder (loaded or not)
        answering to it; either must be published."""
        parsed = parse(ref)
        if parsed is None:
            return None
        if parsed.kind == "name":
            return self.catalog.published_name_of_file(f"{parsed.value}.json")
        matches = self.catalog.files_with_id(parsed.value)
        return self.catalog.published_name_of_file(matches[0]) if len(matches) == 1 else None

    def children(self, name: str) -> list[str]:
        """Sub-sessions: declared ones first, then any session whose parent_id names it."""
        node = self.node(name)
        declared = list(node.subs) if node is not None else []
        found = [child for child, _ in self.catalog.children_of(name)]
        return list(dict.fromkeys([*declared, *found]))

    def ref_candidates(self, name: str) -> set[str]:
        """The references written in session ``name``."""
        node = self.node(name)
        return set(node.refs) if node is not None else set()

    def series(self, name: str) -> tuple[str, str]:
        """The previous and next run of a session's series: the sessions of its role, in
        order of creation (then name); "" where there is none, and for a session without a
        role."""
        node = self.node(name)
        if node is None or not node.role:
            return ("", "")
        return self.catalog.neighbours(node.role, node.created_at, node.name)

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
        if name in seen or not self.present(name):
            return Outcome()
        seen.add(name)
        total = self._own_outcome(name)
        for child in self.children(name):
            total = total.plus(self._subtree(child, seen))
        return total

    def _own_outcome(self, name: str) -> Outcome:
        own = self._own
        found = own.get(name)
        if found is None:
            if len(own) >= NODES_KEPT:
                own.clear()
            summary = self.catalog.session(name)
            found = own[name] = outcome_of(summary) if summary is not None else Outcome()
        return found

    def ancestors(self, name: str) -> set[str]:
        """Every session above ``name``: its callers (by ``parent_id`` or a declared
        sub-session), theirs, and so on (cycle-safe). Its callers are asked of the catalog
        (its parent, and the few sessions that declare sub-sessions)."""
        self._asked += 1
        if self._callers is None and self._asked > CALLERS_PASS:
            self._callers = self.catalog.callers()
        found: set[str] = set()
        stack = [name]
        while stack:
            for caller in self._callers_of(stack.pop()):
                if caller not in found:
                    found.add(caller)
                    stack.append(caller)
        found.discard(name)
        return found

    def _callers_of(self, name: str) -> list[str]:
        if self._callers is not None:
            return self._callers.get(name, [])
        node = self.node(name)
        callers = [node.parent_id] if node is not None and node.parent_id else []
        return callers + self.catalog.declaring(name)

    def delegated(self, name: str) -> tuple[str, ...]:
        """The sub-session each delegate call of session ``name`` spawned ("" for none), in
        file order (:func:`publisher.audit.match_delegations` against its children)."""
        node = self.node(name)
        if node is None or not node.spawns:
            return ()
        calls = [Delegation(named, role, stamp) for named, role, stamp, _ in node.spawns]
        children = [
            Spawn(child, found.role, found.created_at)
            for child in self.children(name)
            if (found := self.node(child)) is not None
        ]
        return tuple(match_delegations(calls, children))

    def spawned_at(self, name: str) -> str:
        """The call that spawned session ``name`` in its direct parent, relative to the
        parent's folder on the page that holds it (``page-2.html#turn-200.3``); "" when
        the parent is not in the archive or no call of it spawned ``name``."""
        node = self.node(name)
        if node is None or not node.parent_id:
            return ""
        parent = self.node(node.parent_id)
        if parent is None or not parent.spawns:
            return ""
        targets = self.delegated(parent.name)
        return next(
            (
                spawn[3]
                for spawn, target in zip(parent.spawns, targets, strict=True)
                if target == name
            ),
            "",
        )

    def lineage(self, name: str) -> tuple[list[str], bool]:
        """Parents from the root down to the direct parent; True when a cycle was cut."""
        chain: list[str] = []
        seen = {name}
        current = self.node(name)
        while current is not None and current.parent_id:
            parent = current.parent_id
            if parent in seen:
                return list(reversed(chain)), True
            seen.add(parent)
            chain.append(parent)
            current = self.node(parent)
        return list(reversed(chain)), False
