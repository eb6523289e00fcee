"""What sessions did, added up: the figures a caller's page shows of its sub-sessions.

A session's own figures are its tool calls, its findings by kind (:func:`.gate.session_findings`)
and the files its calls changed (:func:`.render.tools.changes_of`); an :class:`Outcome` adds
them up over a sub-session and the sessions below it, or over everything below a session.
"""

from __future__ import annotations

from dataclasses import dataclass

from .gate import FAILURE_KINDS, KINDS


@dataclass(slots=True, frozen=True)
class Outcome:
    """What some sessions did, added up: a sub-session (with those below it) on its caller's
    page, and everything below a session in its overview."""

    sessions: int = 0
    """How many sessions it adds up."""
    calls: int = 0
    """Their tool calls."""
    failures: tuple[tuple[str, int], ...] = ()
    """Their findings by kind, in ``KINDS`` order (a session's :attr:`.site.graph.Summary.failures`)."""
    changes: tuple[tuple[str, str, str, str], ...] = ()
    """The files they changed: (session, path, action, link to the call in that session's
    folder)."""

    def plus(self, other: Outcome) -> Outcome:
        counts = dict(self.failures)
        for kind, n in other.failures:
            counts[kind] = counts.get(kind, 0) + n
        return Outcome(
            self.sessions + other.sessions,
            self.calls + other.calls,
            tuple((k, counts[k]) for k in KINDS if counts.get(k)),
            self.changes + other.changes,
        )

    def count(self, kind: str) -> int:
        """Its findings of ``kind``."""
        return dict(self.failures).get(kind, 0)

    @property
    def failed(self) -> int:
        """Its findings that say something went wrong (every kind but ``running``)."""
        return sum(n for kind, n in self.failures if kind in FAILURE_KINDS)

    @property
    def files(self) -> int:
        """How many files it changed (a file changed twice counts once)."""
        return len({path for _, path, _, _ in self.changes})
