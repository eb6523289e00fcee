"""Importers: other agents' logs converted into Polyglav session files.

``import_sources("claude-code", [Path("~/.claude/projects")], sessions_dir)`` reads every
session under the sources (never writing to them) and writes one session file per source
session into ``sessions_dir``, named from the source's own id
(``ses_<time of the first record>_<id6>``), so importing again updates the same files. A
source whose files have the stamps recorded last time (``import-state.json``) is skipped;
a file is written only when its bytes change, so importing twice equals importing once.

Each format is a module with ``AGENT``, ``DEFAULT_SOURCE``, ``discover(sources,
problems)`` (the source sessions, each with a state ``key`` and its ``files``) and
``convert(unit, problems)`` (a :class:`~.common.Result`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Protocol

from ..write import WriteError
from .common import (
    IMPORTER_VERSION,
    Counts,
    Problem,
    SourceState,
    Stamp,
    StateStore,
    origin_of,
    write_session,
)

FORMATS = {"claude-code": "claude_code", "codex": "codex", "aider": "aider"}
"""Agent name on the command line → module."""


class _Unit(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def files(self) -> list[Path]: ...


@dataclass(slots=True)
class ImportReport:
    """What one ``polyglav import`` did."""

    agent: str
    """The agent whose logs were imported."""
    sessions_dir: Path
    """Where the session files went."""
    sources: int = 0
    """Source sessions found."""
    skipped: int = 0
    """Source sessions skipped: their files' stamps are unchanged since the last import."""
    written: list[str] = field(default_factory=list)
    """Session files written (new or changed)."""
    unchanged: int = 0
    """Session files converted again that already held the same bytes."""
    retired: list[str] = field(default_factory=list)
    """Session files removed: an earlier import of the same source wrote them under names
    it no longer produces (a mapping that changed, e.g. a sub-agent's log once imported as
    a session of its own)."""
    counts: Counts = field(default_factory=Counts)
    """Records mapped and kept raw (of the sources converted this time)."""
    problems: list[Problem] = field(default_factory=list)
    """What could not be imported as it is, one line each."""
    notes: list[Problem] = field(default_factory=list)
    """What was imported but should be known, one line each (the exit status stays 0)."""

    @property
    def exit_status(self) -> int:
        """0 when everything was imported, 1 when something could not be."""
        return 1 if self.problems else 0

    def summary(self) -> str:
        """The one-line summary printed at the end."""
        line = (
            f"imported {self.agent} into {self.sessions_dir}: {self.sources} source sessions, "
            f"{len(self.written)} session files written, {self.unchanged} unchanged, "
            f"{self.skipped} skipped (source unchanged); {self.counts.mapped} records mapped, "
            f"{self.counts.raw} kept as raw"
        )
        if self.retired:
            line += f"; {len(self.retired)} session files of an earlier import removed"
        if self.problems:
            line += f"; {len(self.problems)} problems"
        return line


def format_module(agent: str) -> ModuleType:
    """The importer module of ``agent`` (``KeyError`` for an unknown agent)."""
    return import_module(f"{__name__}.{FORMATS[agent]}")


def default_sources(agent: str) -> list[Path]:
    """Where ``agent`` keeps its logs by default."""
    return [Path(os.path.expanduser(format_module(agent).DEFAULT_SOURCE))]


def sessions_folder(project: Path | None) -> Path:
    """The sessions folder to import into: ``DIR/.polyglav/sessions`` for ``--project DIR``
    (created, with ``DIR`` if need be), ``DIR`` itself when it is a bare folder of session files; without a project,
    the nearest ``.polyglav/sessions`` upwards, else ``./.polyglav/sessions``."""
    from ..archive import ArchiveError, find_sessions_dir
    from ..loader import session_file_names

    if project is not None:
        if project.exists() and not project.is_dir():
            raise ArchiveError(f"{project}: not a folder")
        if (
            project.is_dir()
            and not (project / ".polyglav").is_dir()
            and session_file_names(project)
        ):
            return project
        return project / ".polyglav" / "sessions"
    try:
        return find_sessions_dir(None)
    except ArchiveError:
        return Path.cwd() / ".polyglav" / "sessions"


def _stamps(unit: _Unit, report: ImportReport) -> list[Stamp] | None:
    try:
        return [Stamp.of(path) for path in unit.files]
    except OSError as exc:
        report.problems.append(
            Problem(str(exc.filename or unit.key), 0, f"cannot read: {exc.strerror}")
        )
        return None


def _outputs_exist(state: SourceState, folder: Path) -> bool:
    return all((folder / f"{name}.json").is_file() for name in state.sessions)


def _unchanged(state: SourceState | None, stamps: list[Stamp], folder: Path) -> bool:
    """True when the last import of these files is still current (by stamp, else by hash
    for files only touched)."""
    if state is None or state.importer_version != IMPORTER_VERSION:
        return False
    if len(state.stamps) != len(stamps) or not _outputs_exist(state, folder):
        return False
    if all(a.same_file_state(b) for a, b in zip(stamps, state.stamps, strict=True)):
        return True
    if any(a.path != b.path or a.size != b.size for a, b in zip(stamps, state.stamps, strict=True)):
        return False
    try:
        hashed = [s.with_hash() for s in stamps]
    except OSError:
        return False
    if all(a.sha256 == b.sha256 for a, b in zip(hashed, state.stamps, strict=True)):
        state.stamps = hashed
        return True
    return False


@dataclass(slots=True)
class _Converted:
    """What converting and writing one source session did (sent back from a worker)."""

    names: list[str] = field(default_factory=list)
    """The session names produced, in order."""
    written: list[str] = field(default_factory=list)
    """Those written (new or changed)."""
    unchanged: int = 0
    """Those that already held the same bytes."""
    counts: Counts = field(default_factory=Counts)
    """Records mapped and kept raw."""
    problems: list[Problem] = field(default_factory=list)
    """What could not be imported as it is."""
    notes: list[Problem] = field(default_factory=list)
    """What was imported but should be known (:attr:`.common.Result.notes`)."""
    live: bool = False
    """:attr:`.common.Result.live`."""


def _convert(agent: str, unit: _Unit, sessions_dir: Path) -> _Converted:
    """Convert one source session and write its session files (in a worker or in-process:
    one session is held at a time)."""
    done = _Converted()
    result = format_module(agent).convert(unit, done.problems)
    for doc in result.documents:
        done.names.append(str(doc["session_name"]))
        try:
            if write_session(sessions_dir, doc):
                done.written.append(done.names[-1])
            else:
                done.unchanged += 1
        except WriteError as exc:
            done.problems.append(Problem(str(unit.key), 0, str(exc)))
    done.counts = result.counts
    done.notes = list(result.notes)
    done.live = result.live
    return done


def _retire(
    agent: str, unit: _Unit, names: list[str], store: StateStore, folder: Path
) -> list[str]:
    """Remove the session files an earlier import of ``unit``'s files (recorded under the
    unit's key or a file's own, when it was a unit of its own) wrote and this one did not:
    only those whose ``imported_from`` names this agent and one of these files. The stale
    state entries of the files are dropped. Returns the names removed."""
    files = {str(path) for path in unit.files}
    keys = [key for key in (unit.key, *sorted(files)) if key in store.sources]
    stale: list[str] = []
    for key in keys:
        stale += [name for name in store.sources[key].sessions if name not in names]
        if key != unit.key:
            del store.sources[key]
    removed = []
    for name in dict.fromkeys(stale):
        path = folder / f"{name}.json"
        origin = origin_of(path) if path.is_file() and not path.is_symlink() else None
        if origin is None or origin.get("agent") != agent or origin.get("path") not in files:
            continue
        try:
            path.unlink()
        except OSError:
            continue
        removed.append(name)
    return removed


def import_sources(
    agent: str,
    sources: Sequence[Path],
    sessions_dir: Path,
    on_problem: Callable[[Problem], None] | None = None,
    workers: int | None = None,
    on_note: Callable[[Problem], None] | None = None,
) -> ImportReport:
    """Import every source session of ``agent`` found under ``sources`` into
    ``sessions_dir`` (created if missing). Problems are reported through ``on_problem`` as
    they happen, and listed in the report. Sessions are converted by ``workers`` processes
    (default: one per core; 1: in this process), each holding one session at a time."""
    module = format_module(agent)
    report = ImportReport(agent, sessions_dir)
    problems = report.problems
    shown = 0

    def flush() -> None:
        nonlocal shown
        if on_problem is not None:
            for problem in problems[shown:]:
                on_problem(problem)
        shown = len(problems)

    try:
        sessions_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"{sessions_dir}: cannot create: {exc.strerror or exc}") from exc
    store = StateStore(sessions_dir)
    units: list[_Unit] = module.discover(sources, problems)
    flush()
    todo: list[tuple[_Unit, list[Stamp]]] = []
    for unit in units:
        report.sources += 1
        stamps = _stamps(unit, report)
        if stamps is None:
            flush()
            continue
        state = store.sources.get(unit.key)
        if _unchanged(state, stamps, sessions_dir):
            report.skipped += 1
            continue
        todo.append((unit, stamps))
    from ..site.pool import run_jobs

    done = run_jobs(
        _convert,
        [(agent, unit, sessions_dir) for unit, _ in todo],
        workers=workers if workers is not None else os.cpu_count() or 1,
        progress=None,
        stage="import",
    )
    for (unit, stamps), converted in zip(todo, done, strict=True):
        names = converted.names
        if not converted.problems:
            report.retired.extend(_retire(agent, unit, names, store, sessions_dir))
        report.written.extend(converted.written)
        report.unchanged += converted.unchanged
        report.counts.add(converted.counts)
        problems.extend(converted.problems)
        flush()
        report.notes.extend(converted.notes)
        if on_note is not None:
            for note in converted.notes:
                on_note(note)
        if converted.problems or converted.live:
            # imported again (and reported) next time; a running session, until it is not
            store.sources.pop(unit.key, None)
            continue
        try:
            after = [Stamp.of(path).with_hash() for path in unit.files]
        except OSError:
            continue
        if all(a.same_file_state(b) for a, b in zip(after, stamps, strict=True)):
            store.sources[unit.key] = SourceState(after, names)
    store.save()
    return report
