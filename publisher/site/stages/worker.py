"""What a build's pool worker process keeps from the scan to the render.

In a build that scans many files, the same worker processes (:class:`..pool.Crew`) scan
and then render. A worker keeps the sessions it prepared while scanning, up to a budget of
file bytes (:attr:`..context.Tunables.worker_keep_bytes`), and the render stage sends each
kept session's job to the worker that holds it: that session is read and parsed once.
Small files are not kept (:attr:`..context.Tunables.worker_keep_min_bytes`): parsing one
again costs less than holding it. The
state is set once per worker process by :func:`start` (the crew's initializer) and read
by the stages' worker functions through :func:`here`; the build's own process never sets
it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...prepare import Prepared
from ...render.html import HtmlRenderer
from ...usage import Prices


@dataclass(slots=True)
class Kept:
    """Prepared sessions by file name, of at most ``budget`` bytes of files in all (a
    session that does not fit is not kept; none is dropped for a later one, so the scan
    can tell the build which worker holds what)."""

    budget: int
    """Bytes of files kept at most."""
    least: int = 0
    """A session whose file is smaller is not kept."""
    sessions: dict[str, tuple[Prepared, int]] = field(default_factory=dict)
    held: int = 0
    """Bytes of files kept."""

    def keep(self, file_name: str, prepared: Prepared, size: int) -> bool:
        """Keep ``prepared`` (its file's ``size`` bytes) if it fits; True when kept."""
        if file_name in self.sessions or size < self.least or self.held + size > self.budget:
            return False
        self.sessions[file_name] = (prepared, size)
        self.held += size
        return True

    def get(self, file_name: str) -> Prepared | None:
        """The kept session of ``file_name`` (still kept), or None."""
        found = self.sessions.get(file_name)
        return found[0] if found is not None else None

    def take(self, file_name: str) -> Prepared | None:
        """The kept session of ``file_name``, no longer kept; None when not kept."""
        found = self.sessions.pop(file_name, None)
        if found is None:
            return None
        self.held -= found[1]
        return found[0]

    def retain(self, file_names: Iterable[str]) -> None:
        """Drop every kept session but those of ``file_names`` (the ones to render)."""
        wanted = set(file_names)
        for name in [n for n in self.sessions if n not in wanted]:
            self.take(name)


@dataclass(slots=True)
class WorkerState:
    """One worker process's state over a build."""

    kept: Kept
    """Sessions it scanned, for their render."""
    renderer: HtmlRenderer | None
    """The build's renderer when the worker was forked from the build (nothing pickled);
    None when it was started clean (a render then compiles the theme)."""
    prices: Prices
    """The build's price table, for the scan's summaries and the render's pages alike
    (one object a process: what it looked up is looked up once)."""


_state: WorkerState | None = None
"""This process's state when it is a build's pool worker (set by :func:`start` only)."""


def start(
    keep: tuple[int, int],
    renderer: HtmlRenderer | None,
    kept: dict[str, Prepared],
    prices: Prices,
) -> None:
    """The crew's initializer: runs once in each worker process when it starts. ``kept``:
    sessions the build's own process prepared (a fork shares them; nothing is read again);
    ``keep``: the budget and the least size of what the worker keeps (:class:`Kept`)."""
    global _state
    from ..memory import return_large_blocks

    return_large_blocks()
    state = WorkerState(Kept(*keep), renderer, prices)
    for name, prepared in kept.items():
        state.kept.sessions[name] = (prepared, 0)  # not counted: the build holds them anyway
    _state = state


def here() -> WorkerState | None:
    """This process's worker state; None outside a crew's worker."""
    return _state


def forget() -> None:
    """Drop this process's worker state and the sessions it kept (a Dask worker outlives
    the build that set it up: :mod:`..distributed`)."""
    global _state
    if _state is not None:
        _state.kept.retain(())
    _state = None
