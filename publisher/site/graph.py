"""What a page needs to know about the rest of the archive: summaries and links.

A :class:`Summary` is all the index and the other sessions' pages use of a session, so an
incremental build can refresh them without rereading the session file.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from ..model import Session


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
    """First line of the first prompt (for the index)."""
    decisions: tuple[tuple[str, int], ...] = field(default=())
    """Permission decision counts, sorted by decision."""
    redacted: int = 0
    """Secrets redacted from the session (when the build redacts)."""

    @classmethod
    def of(cls, session: Session, redacted: int = 0) -> Summary:
        from ..render.text import first_line
        from ..render.view import prompt_of

        first = first_line(prompt_of(session.turns[0]), 120) if session.turns else ""
        decisions = Counter(p.decision for p in session.permissions)
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
        )

    def to_json(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in _SUMMARY_FIELDS}

    def digest(self) -> str:
        """A hash of every field (what an index row shows is a function of it).

        The pickle of the fields (4× faster than JSON): equal summaries hash alike unless
        their strings are shared differently, which only costs a cache miss.
        """
        return hashlib.sha256(
            pickle.dumps(tuple(getattr(self, n) for n in _SUMMARY_FIELDS), protocol=5)
        ).hexdigest()

    def to_row(self) -> list[object]:
        """The fields in order, as JSON values (lists, never tuples)."""
        row: list[object] = [getattr(self, name) for name in _SUMMARY_FIELDS]
        row[_SUB_SESSIONS] = list(self.sub_sessions)
        row[_DECISIONS] = [list(d) for d in self.decisions]
        return row

    @classmethod
    def from_row(cls, row: list[Any]) -> Summary:
        """The summary of :meth:`to_row`'s list; ValueError when it is not one."""
        if tuple(map(type, row)) != _ROW_TYPES:
            raise ValueError("a summary of the wrong shape")
        values = list(row)
        values[_SUB_SESSIONS] = tuple(values[_SUB_SESSIONS])
        values[_DECISIONS] = tuple(map(tuple, values[_DECISIONS]))
        if not all(type(n) is str for n in values[_SUB_SESSIONS]) or not all(
            tuple(map(type, d)) == (str, int) for d in values[_DECISIONS]
        ):
            raise ValueError("a summary of the wrong shape")
        return cls(*values)


_SUMMARY_FIELDS = tuple(f.name for f in fields(Summary))
_SUB_SESSIONS = _SUMMARY_FIELDS.index("sub_sessions")
_DECISIONS = _SUMMARY_FIELDS.index("decisions")
_ROW_TYPES = tuple(
    list if f.name in ("sub_sessions", "decisions") else {"str": str, "int": int}[str(f.type)]
    for f in fields(Summary)
)
"""The type of each value of :meth:`Summary.to_row` (exactly: a bool is not an int)."""


@dataclass(slots=True)
class Graph:
    """The archive's sessions by name, with parent/child links and reference lookup."""

    summaries: dict[str, Summary]
    """Loaded sessions by session name (page names)."""
    file_names: list[str] = field(default_factory=list)
    """Every ``*.json`` file name in the folder, loaded or not (for ``#id`` lookups)."""
    _found_children: dict[str, list[str]] = field(init=False, repr=False)
    """Parent name → names of the sessions whose parent_id names it, sorted."""
    _files_by_id: dict[str, list[str]] = field(init=False, repr=False)
    """Trailing ``_<id>`` of a file name → the file names ending so."""

    def __post_init__(self) -> None:
        # Indexes built once, so each page's lookups cost O(1), not a pass over the archive.
        self._found_children = {}
        for summary in sorted(self.summaries.values(), key=lambda s: s.name):
            if summary.parent_id:
                self._found_children.setdefault(summary.parent_id, []).append(summary.name)
        self._files_by_id = {}
        for file_name in self.file_names:
            stem = file_name[:-5] if file_name.endswith(".json") else file_name
            if "_" in stem:
                self._files_by_id.setdefault(stem.rsplit("_", 1)[1], []).append(file_name)

    def fingerprint(self) -> str:
        """A hash of everything page facts depend on: names, parents, sub-sessions, roles,
        and the folder's file names (``#id`` lookups). Equal fingerprints: equal facts."""
        shape = [
            [s.name, s.parent_id, s.sub_sessions, s.role]
            for s in sorted(self.summaries.values(), key=lambda s: s.name)
        ]
        return hashlib.sha256(
            json.dumps([shape, self.file_names]).encode("utf-8", "surrogatepass")
        ).hexdigest()

    def children(self, name: str) -> list[str]:
        """Sub-sessions: declared ones first, then any session whose parent_id names it."""
        summary = self.summaries.get(name)
        declared = list(summary.sub_sessions) if summary else []
        return list(dict.fromkeys([*declared, *self._found_children.get(name, [])]))

    def lineage(self, name: str) -> tuple[list[str], bool]:
        """Parents from the root down to the direct parent; True when a cycle was cut."""
        chain: list[str] = []
        seen = {name}
        current = self.summaries.get(name)
        while current is not None and current.parent_id:
            parent = current.parent_id
            if parent in seen:
                return list(reversed(chain)), True
            seen.add(parent)
            chain.append(parent)
            current = self.summaries.get(parent)
        return list(reversed(chain)), False

    def by_id(self, ident: str) -> str | None:
        """The session name for ``#ident`` (the CLI's filename glob), None if absent or ambiguous."""
        matches = self._files_by_id.get(ident, []) if "_" not in ident else []
        if len(matches) != 1:
            return None
        name = matches[0][:-5]
        return name if name in self.summaries else None

    def resolve_ref(self, ref: str) -> str | None:
        """``#id`` or ``session:name`` → the session name it links to, or None."""
        if ref.startswith("#"):
            return self.by_id(ref[1:])
        if ref.startswith("session:"):
            name = ref[len("session:") :]
            return name if name in self.summaries else None
        return None
