"""The sessions folder: finding it, listing its files, resolving targets.

Targets follow Polyglav's ``--run`` forms (docs/session-format.md): ``#<id>`` (a filename
glob ``*_<id>.json``, no file read), ``session:<name>``, a plain name, or a role (the most
recently updated saved session with that role). Headless, there are no live runs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from . import refs
from .loader import SessionLoadError, is_session_file, read_session, session_file_names
from .model import LoadFailure, Session

if TYPE_CHECKING:
    from .usage import Prices, Spend

T = TypeVar("T")
"""What :func:`catalogued` makes of a catalog row."""

#: A name that can be a file in the folder: no separators, no leading dot, no NUL.
NAME_RE = re.compile(r"\A[^/\\\x00]+\Z")


class ArchiveError(Exception):
    """A user-facing error about the archive (not found, ambiguous, no folder)."""


class NotFoundError(ArchiveError):
    """A target that names no loadable session."""


def find_sessions_dir(project: Path | None = None, *, start: Path | None = None) -> Path:
    """The sessions folder for ``--project DIR`` or, without it, the nearest ``.polyglav/``.

    With a project folder: ``DIR/.polyglav/sessions`` when it exists, else ``DIR`` itself
    when it holds session files (as ``sample_sessions/`` does), else ``DIR/sessions``.
    """
    if project is not None:
        if not project.is_dir():
            raise ArchiveError(f"{project}: not a folder")
        nested = project / ".polyglav" / "sessions"
        if nested.is_dir():
            return nested
        if project.name == "sessions" or session_file_names(project):
            return project
        raise ArchiveError(f"{project}: holds no .polyglav/sessions/ folder and no session files")
    here = (start or Path.cwd()).resolve()
    without: list[Path] = []
    for folder in (here, *here.parents):
        candidate = folder / ".polyglav"
        if (candidate / "sessions").is_dir():
            return candidate / "sessions"
        if candidate.is_dir():
            # e.g. the ./.polyglav/exports/ an export of a bare folder made: not a project
            without.append(candidate)
    if without:
        skipped = ", ".join(str(p) for p in without)
        raise ArchiveError(
            f"no .polyglav/sessions/ folder in {here} or above ({skipped} holds no "
            "sessions/); pass --project DIR"
        )
    raise ArchiveError(f"no .polyglav/ folder in {here} or above; pass --project DIR")


def project_root(sessions_dir: Path) -> Path:
    """The folder that holds ``.polyglav/`` for a standard layout, else the sessions folder."""
    if sessions_dir.name == "sessions" and sessions_dir.parent.name == ".polyglav":
        return sessions_dir.parent.parent
    return sessions_dir


def default_export_path(sessions_dir: Path, name: str) -> Path:
    """``.polyglav/exports/<name>.md`` next to ``sessions/`` (Polyglav's default)."""
    if sessions_dir.name == "sessions" and sessions_dir.parent.name == ".polyglav":
        return sessions_dir.parent / "exports" / f"{name}.md"
    # A bare folder of session files: never write into it; use ./.polyglav/exports.
    return Path(".polyglav") / "exports" / f"{name}.md"


def read_config(sessions_dir: Path) -> dict[str, object]:
    """``.polyglav/config.json`` next to the sessions folder, or an empty config."""
    path = sessions_dir.parent / "config.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(slots=True, frozen=True)
class Facts:
    """The figures ``polyglav sessions --format json`` gives of a session beside its
    listing (made only when asked: they need a pass over every turn)."""

    title: str
    created_at: str
    sub_sessions: tuple[str, ...]
    tool_calls: int
    errors: int
    """Entries of its ``errors`` array."""
    findings: tuple[tuple[str, int], ...]
    """Its findings by kind (:func:`.gate.session_findings`), in ``KINDS`` order."""
    spend: Spend
    """What its own requests to models spent (:mod:`.usage`)."""

    @classmethod
    def of(cls, session: Session, prices: Prices) -> Facts:
        from .gate import Tally, session_findings
        from .usage import session_spend

        return cls(
            title=session.title,
            created_at=session.created_at,
            sub_sessions=tuple(session.sub_sessions),
            tool_calls=session.tool_calls,
            errors=len(session.errors),
            findings=tuple(Tally.of(session_findings(session)).by_kind.items()),
            spend=session_spend(session, prices),
        )


@dataclass(slots=True, frozen=True)
class Listed:
    """What a listing of the folder keeps of one ``*.json`` file: the facts the listing,
    the role and "latest" resolution and a preview's children need, never the session
    itself (an archive of thousands of sessions, some of 100 MB, is read one file at a
    time)."""

    file_name: str
    """The file's name."""
    failure: LoadFailure | None = None
    """Why it does not load (None when it loads; the fields below are then empty)."""
    session_name: str = ""
    session_id: str = ""
    kind: str = ""
    """:attr:`.model.Session.kind`."""
    role: str = ""
    version: str = ""
    turns: int = 0
    """How many turns it has."""
    updated_at: str = ""
    parent_id: str = ""
    facts: Facts | None = None
    """What ``polyglav sessions --format json`` prints beside (None: not asked for)."""

    @classmethod
    def of(cls, session: Session, prices: Prices | None = None) -> Listed:
        """The listing's facts of a loaded session; with ``prices``, its :class:`Facts`
        too (its usage priced with that table)."""
        return cls(
            file_name=session.file_name,
            session_name=session.session_name,
            session_id=session.session_id,
            kind=session.kind,
            role=session.role,
            version=session.version,
            turns=len(session.turns),
            updated_at=session.updated_at,
            parent_id=session.parent_id,
            facts=Facts.of(session, prices) if prices is not None else None,
        )

    @property
    def loads(self) -> bool:
        return self.failure is None


LIST_CHUNK = 32
"""Files a listing job reads (a folder of fewer than two chunks is read in this process)."""


def list_files(folder: Path, names: list[str], prices: Prices | None = None) -> list[Listed]:
    """:class:`Listed` of each of ``names`` in ``folder``, one session held at a time (a
    listing job: run in a worker process for a large folder); with ``prices``, each with
    its :class:`Facts`."""
    out = []
    for name in names:
        path = folder / name
        try:
            out.append(Listed.of(read_session(path, folder), prices))
        except SessionLoadError as exc:
            out.append(Listed(name, failure=failure_for(path, exc.reason)))
    return out


class Archive:
    """A sessions folder, read on demand and never written."""

    def __init__(self, folder: Path, catalog: Callable[[], Path] | None = None) -> None:
        self.folder = folder
        self.catalog = catalog
        """Where the site build of this folder keeps its catalog (asked only by a listing,
        :meth:`listing`); None: every file is read."""

    def files(self) -> list[Path]:
        """Every ``*.json`` file, sorted by name (the order is deterministic)."""
        return [self.folder / name for name in session_file_names(self.folder)]

    def read(self, path: Path) -> Session:
        return read_session(path, self.folder)

    def listing(self, workers: int | None = None, prices: Prices | None = None) -> list[Listed]:
        """Every file, sorted by name, with its listed facts or its failure. A file the
        site build's catalog knows (:attr:`catalog`, :func:`catalogued`) and that is as the
        build read it (its stamp trusted as a build trusts it) is listed from there; the
        others are loaded whole (whether a file loads depends on every turn), one at a time:
        the memory is the largest session's, not the archive's. More than
        :data:`LIST_CHUNK` files to read are read by ``workers`` processes (default: one per
        core). With ``prices``, every file is read, each loaded one with its :class:`Facts`
        (its usage priced with that table: the catalog keeps none)."""
        names = session_file_names(self.folder)
        if prices is not None:
            return self._read_files(names, workers, prices)
        folder = self.folder
        found = (
            catalogued(folder, names, self.catalog(), partial(_listed_row, folder))
            if self.catalog
            else None
        )
        if found is None:
            return self.listed(names, workers)
        read = iter(self.listed([n for n, f in zip(names, found, strict=True) if f is None]))
        return [f if f is not None else next(read) for f in found]

    def shown(self) -> tuple[list[str], list[tuple[str, tuple[str, ...]] | None]]:
        """Every file, sorted by name, and what ``polyglav sessions`` shows and tells of each
        as the site build's catalog keeps it: its listing row (:func:`listing_text`) and
        its warnings, or None where the file must be read (see
        :meth:`listing`; a row not of :data:`LISTING_CELLS` cells is read too). Tuples of
        strings, never a list a file: at 100,000 files the collector would walk them all."""
        names = session_file_names(self.folder)
        known = (
            catalogued(self.folder, names, self.catalog(), _shown_row, shown=True)
            if self.catalog
            else None
        )
        return names, known if known is not None else [None] * len(names)

    def listed(self, names: list[str], workers: int | None = None) -> list[Listed]:
        """:class:`Listed` of ``names`` (files of the folder), each file loaded."""
        return self._read_files(names, workers)

    def _read_files(
        self, names: list[str], workers: int | None, prices: Prices | None = None
    ) -> list[Listed]:
        """:class:`Listed` of ``names``, each file loaded (with ``prices``: with its
        :class:`Facts`)."""
        if len(names) <= LIST_CHUNK:
            return list_files(self.folder, names, prices)  # (no pool to import)
        from .site.pool import run_jobs

        chunks = [names[i : i + LIST_CHUNK] for i in range(0, len(names), LIST_CHUNK)]
        done = run_jobs(
            list_files,
            [(self.folder, chunk, prices) for chunk in chunks],
            workers=workers if workers is not None else os.cpu_count() or 1,
            progress=None,
            stage="list",
        )
        return [listed for chunk in done for listed in chunk]

    # -- resolution -----------------------------------------------------------------
    def path_for_name(self, name: str) -> Path:
        if name.endswith(".json"):
            name = name[:-5]
        if not NAME_RE.match(name) or name in (".", ".."):
            raise NotFoundError(f"{name!r}: not a valid session name")
        return self.folder / f"{name}.json"

    def resolve(self, target: str) -> Session:
        """Resolve a ``--run`` target to a loaded session.

        Raises :class:`NotFoundError` (with the reason when the file exists but does not
        load) or :class:`ArchiveError` for an ambiguous id.
        """
        ref = refs.parse(target)
        if ref is not None and ref.kind == "id":
            return self._by_id(ref.value)
        if ref is not None:
            return self._load_named(ref.value)
        path = self.path_for_name(target)
        if path.exists() or path.is_symlink():
            return self._load_named(target)
        by_role = [e for e in self.listing() if e.loads and e.role == target]
        if by_role:
            return self._load_listed(max(by_role, key=_recency))
        if refs.is_id(target) and any(self.folder.glob(refs.id_glob(target))):
            raise NotFoundError(
                f"{target}: no session with that name or role; did you mean '#{target}' "
                "(a session id)?"
            )
        raise NotFoundError(f"{target}: no session with that name or role")

    def _load_named(self, name: str) -> Session:
        path = self.path_for_name(name)
        if not (path.exists() or path.is_symlink()):
            raise NotFoundError(f"{path.name}: no such session")
        try:
            return self.read(path)
        except SessionLoadError as exc:
            raise NotFoundError(f"{exc.file_name}: does not load: {exc.reason}") from None

    def _by_id(self, ident: str) -> Session:
        if ident.isdigit() and not refs.is_id(ident):
            raise NotFoundError(
                f"#{ident}: a run id, and headless there are no live runs "
                "(a saved session's id has six base36 characters)"
            )
        if not refs.is_id(ident):
            raise NotFoundError(f"#{ident}: not a session id (six base36 letters and digits)")
        matches = sorted(
            (p for p in self.folder.glob(refs.id_glob(ident)) if is_session_file(p.name)),
            key=lambda p: p.name,
        )
        if not matches:
            raise NotFoundError(f"#{ident}: no session with that id")
        if len(matches) > 1:
            names = ", ".join(p.name for p in matches)
            raise ArchiveError(f"#{ident}: ambiguous id, matches {names}")
        return self._load_named(matches[0].name)

    def latest(self) -> Session:
        """The most recently updated session that loads (by ``updated_at``, then name)."""
        listed = self.listing()
        loading = [e for e in listed if e.loads]
        if not loading:
            what = f"{len(listed)} session files, none loads" if listed else "no session files"
            raise NotFoundError(f"{self.folder}: {what}")
        return self._load_listed(max(loading, key=_recency))

    def _load_listed(self, listed: Listed) -> Session:
        """The session of a listed file, read again (it may have changed since, or stopped
        loading: then NotFoundError, as for a name)."""
        try:
            return self.read(self.folder / listed.file_name)
        except SessionLoadError as exc:
            raise NotFoundError(f"{exc.file_name}: does not load: {exc.reason}") from None


def catalogued(
    folder: Path,
    names: list[str],
    path: Path,
    shape: Callable[[tuple[Any, ...]], T | None],
    *,
    shown: bool = False,
) -> list[T | None] | None:
    """What the catalog at ``path`` (:mod:`.site.catalog`) keeps of each of ``names`` (the
    folder's files, sorted), as ``shape`` makes it of the file's row
    (:meth:`.site.catalog.Catalog.listed`, or with ``shown``
    :meth:`.site.catalog.Catalog.shown`), or None where the file must be read (no row, a
    row ``shape`` makes None of, or a stamp the rule of the site build does not trust:
    :func:`.site.staleness.stamp_trusted`, one ``stat`` a file, in a process forked
    while the catalog is read: :class:`.site.pool.StampPass`; the rows are shaped before
    its stamps are awaited). None when there is no catalog of this folder to read: none,
    another schema, another sessions folder, other code (the rows it keeps are that
    code's), a build with redaction (its summaries may not be the files'). Nothing is
    written."""
    import sqlite3

    from .site.catalog import Catalog
    from .site.pool import StampPass
    from .site.staleness import code_key

    catalog = Catalog.reader(path, os.path.abspath(folder), code_key())
    if catalog is None:
        return None
    stamps = StampPass.start(os.fspath(folder), names)
    try:
        rows = catalog.shown() if shown else catalog.listed()
        kept = {row[0]: ((row[1], row[2]), shape(row)) for row in rows}
        del rows
        return _catalogued(names, kept, stamps.result(), catalog.meta.scanned_at_ns)
    except sqlite3.Error:  # a catalog SQLite cannot read: the files are read instead
        return None
    finally:
        stamps.close()
        catalog.close()


def _catalogued(
    names: list[str],
    kept: dict[str, tuple[tuple[int, int], T | None]],
    stamps: list[tuple[int, int]],
    last_scan: int,
) -> list[T | None]:
    """:func:`catalogued` of what the catalog keeps of each file (by file name: its stamp
    then, and its shaped row), the files' ``stamps`` now (in the order of ``names``) and
    ``last_scan``."""
    from .site.staleness import stamp_trusted

    found: list[T | None] = []
    add = found.append
    for known, now in zip(map(kept.get, names), stamps, strict=True):
        add(known[1] if known is not None and stamp_trusted(known[0], now, last_scan) else None)
    return found


def _shown_row(row: tuple[Any, ...]) -> tuple[str, tuple[str, ...]] | None:
    """What ``polyglav sessions`` shows and tells of a file from its catalog row
    (:meth:`.site.catalog.Catalog.shown`): its listing row (:func:`listing_text`) and its
    warnings; None when the row has no listing or one not of :data:`LISTING_CELLS` cells
    (the file is read)."""
    listing = row[3]
    if listing is None or listing.count(LISTING_SEPARATOR) != LISTING_CELLS - 1:
        return None
    return listing, tuple(json.loads(row[4])) if row[4] else ()


def _listed_row(folder: Path, row: tuple[Any, ...]) -> Listed:
    """The :class:`Listed` of a catalog row (:meth:`.site.catalog.Catalog.listed`)."""
    name, _, _, failure, session_name, session_id, kind, role, version, turns, updated = row[:11]
    if failure is not None:
        return Listed(name, failure=failure_for(folder / name, failure))
    return Listed(
        file_name=name,
        session_name=session_name,
        session_id=session_id,
        kind=kind,
        role=role,
        version=version,
        turns=turns,
        updated_at=updated,
        parent_id=row[11],
    )


LISTING_SEPARATOR = "\x1f"
"""Between the values of a listing row as the catalog keeps it (a control character:
never in a terminal-safe value; :func:`listing_text` escapes it where one holds it)."""

LISTING_HEADER = ("KIND", "NAME", "ID", "ROLE", "VERSION", "TURNS", "UPDATED")
"""The ``/sessions`` table's columns."""

LISTING_CELLS = len(LISTING_HEADER) + 1
"""The values of a listing row (:func:`.render.console.listing_row`): a cell a column and
the note."""


def listing_text(row: tuple[str, ...]) -> str:
    """A listing row as one string, its values joined by :data:`LISTING_SEPARATOR` (one held
    in a value is shown escaped, as a terminal-safe value shows it): what the catalog keeps
    and :func:`.render.console.sessions_table` lays out."""
    return LISTING_SEPARATOR.join(v.replace(LISTING_SEPARATOR, "\\x1f") for v in row)


def _recency(listed: Listed) -> tuple[str, str]:
    """The order of "most recently updated": ``updated_at``, then the session name."""
    return (listed.updated_at, listed.session_name)


def failure_for(path: Path, reason: str) -> LoadFailure:
    try:
        st = path.lstat()
        size, mtime = st.st_size, st.st_mtime
    except OSError:
        size, mtime = 0, 0.0
    return LoadFailure(file_name=path.name, reason=reason, size=size, mtime=mtime)
