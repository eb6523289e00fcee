"""The catalog: what the builds of a site know of its archive, in one SQLite database.

It lives in the build's cache folder (``catalog.sqlite``, :attr:`.context.CachePaths.catalog`),
never in the published site. A build reads and writes it through this module only; a
build's worker processes never see it (they compute pure results from a session file and
the facts the build sends them). ``docs/catalog.md`` describes it for a reader; this
docstring is its reference.

Tables (``SCHEMA``; the DDL is :data:`DDL`):

- ``sources``: one row per session file of the folder, loaded or not. Its stamp (size,
  mtime), content hash, why it does not load (``failure``, the loader's) or did not render
  (``render_error``), its warnings and references, then the fields of its
  :class:`.summary.Summary` the builds sort, filter, group and join on, as columns of their
  own (:data:`SUMMARY_COLUMNS`: name, kind, role, times, parent, counts...), and what the
  build derives from them (its site folder, its graph shape, its index row's keys, its
  shard ``lane`` and its ``spread``, its activity, what it spent by day and model (``spend``, issue 29's
  tokens and cost), its folder's stamp in the site, the facts its pages were rendered
  with, whether it is ``published``: the first file of its session name that loads). ``gen``, ``scanned`` and ``rendered`` are the build generations that last set
  the row, found its content changed, and rendered it.
- ``summaries``: the whole summary of each loaded file as data (a JSON array,
  :meth:`.summary.Summary.to_row`), its index row's data (JSON) and, once made, its index
  row's HTML.
- ``events``: each row a session gives the archive-wide Errors and Decisions pages: its
  sort key, filter value and UTC time, and, once rendered, its HTML.
- ``outputs``: every file of the site (path, the source file that made it or "" for the
  index pages and assets, its sha256), with the generation that last made it and last
  changed its bytes; ``removed``: the files the last build removed.
- ``kept``: a few texts kept between builds under a key (the delegation tree's HTML).
- ``meta``: the site folder and sessions folder it describes, the build key, the graph key,
  when the last scan began, the generation, the options of the index files.

A new figure of a session is one field of :class:`.summary.Summary` (and its name in
:data:`SUMMARY_COLUMNS` when the index sorts or filters on it): the schema is made from
them, and a catalog made with another schema is rebuilt. A roll-up over sub-sessions is a
recursive query over ``parent_id``.

Versioning and recovery: ``PRAGMA user_version`` holds :data:`SCHEMA` and ``meta`` holds a
hash of :data:`DDL`; a catalog of another schema (an older publisher), one made for another
site folder (a cache folder shared by mistake), one that is not a database or that SQLite
finds damaged while a build reads it (:class:`CatalogDamaged`) is deleted and the build
starts from nothing: a lost or bad catalog costs a full build, never a wrong page. SQLite
checks its pages' structure, not the values in them: a value edited in place inside a
valid page is not detected (as in any database without page checksums).

One writer: a build holds the cache's lock (:mod:`.lock`) and writes the catalog in one
transaction, committed as its last step: a build killed at any moment leaves the catalog
of the build before it (with the cache's ``building`` mark, which says the site may hold
bytes the catalog does not know). Readers (``polyglav sessions``) open it read-only and
see the last committed build (WAL mode), never a build half done.

Text from sessions may hold anything (lone surrogates, NUL): it is stored as TEXT holding
its UTF-8 bytes with surrogates encoded as such (``surrogatepass``), bound through
:func:`text` and ``CAST(? AS TEXT)``, read back by the connection's text factory. That
encoding keeps code point order, so ``ORDER BY`` sorts as Python sorts strings.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .. import refs as reflib
from .staleness import UNTRUSTED_SQL
from .summary import Summary
from .urls import slug

SCHEMA = 4
"""Bumped when the tables change in a way :data:`DDL` does not show (a column's meaning)."""

FILE = "catalog.sqlite"
"""The catalog's file name in the cache folder."""

LANE_MASK = (1 << 62) - 1
"""A session's ``lane`` is its row slot (:func:`.urls.row_slot`, 64 bits) masked to 62 bits
(a SQLite integer); the row shard of a session among ``count`` (a power of two) is
``lane % count``, as it is ``slot % count``. Its ``spread`` (:func:`lane_spread`) makes each
shard one range an index finds (:func:`shard_range`)."""


def lane_spread(lane: int) -> int:
    """``lane``'s 62 bits in reverse order. The lanes of a row shard (``lane % count``,
    ``count`` a power of two) share their low bits, so their spreads share their high bits:
    one range of ``spread`` (:func:`shard_range`), which an index seeks, where
    ``lane % count = index`` makes SQLite read every row."""
    return _reversed_bits(lane & LANE_MASK, 62)


def _reversed_bits(value: int, width: int) -> int:
    """The ``width`` low bits of ``value`` in reverse order."""
    return int(format(value, f"0{width}b")[::-1], 2)


def shard_range(index: int, count: int) -> tuple[int, int]:
    """The first and last ``spread`` of the lanes whose ``lane % count`` is ``index``
    (``count`` a power of two up to 2**62)."""
    bits = count.bit_length() - 1
    if count != 1 << bits or bits > 62 or not 0 <= index < count:
        raise ValueError(f"shard {index} of {count}: not a shard of a power of two")
    if bits == 0:
        return 0, LANE_MASK
    top = _reversed_bits(index, bits)
    shift = 62 - bits
    return top << shift, ((top + 1) << shift) - 1


SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("name", "TEXT"),
    ("session_id", "TEXT"),
    ("kind", "TEXT"),
    ("role", "TEXT"),
    ("version", "TEXT"),
    ("created_at", "TEXT"),
    ("updated_at", "TEXT"),
    ("parent_id", "TEXT"),
    ("turns", "INTEGER"),
    ("tool_calls", "INTEGER"),
    ("errors", "INTEGER"),
    ("last_status", "TEXT"),
    ("redacted", "INTEGER"),
    ("origin", "TEXT"),
)
"""The :class:`.summary.Summary` fields kept as columns of ``sources`` (the others are in
its ``summaries`` row only): what the builds and the CLI sort, filter, group and join on.
NULL for a file that does not load."""

_SOURCE_COLUMNS = (
    "file_name",
    "ident",
    "size",
    "mtime_ns",
    "sha256",
    "failure",
    "warnings",
    "refs",
    "listing",
    "told",
    *(name for name, _ in SUMMARY_COLUMNS),
    "folder",
    "subs",
    "spawns",
    "shape",
    "error_rows",
    "decision_rows",
    "day",
    "outcome",
    "spend",
    "digest",
    "events_key",
    "lane",
    "spread",
    "facts_key",
    "site_ino",
    "site_mtime_ns",
    "gen",
    "scanned",
)
"""The columns :meth:`Catalog.put` sets (``render_error``, ``published`` and ``rendered``
are set by later steps)."""

DDL = f"""
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE sources (
    file_name TEXT PRIMARY KEY,
    ident TEXT,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    failure TEXT,
    render_error TEXT,
    warnings TEXT NOT NULL,
    refs TEXT NOT NULL,
    listing TEXT,
    told TEXT,
    {", ".join(f"{name} {kind}" for name, kind in SUMMARY_COLUMNS)},
    folder TEXT,
    subs TEXT,
    spawns TEXT,
    shape TEXT,
    error_rows INTEGER NOT NULL DEFAULT 0,
    decision_rows INTEGER NOT NULL DEFAULT 0,
    day TEXT,
    outcome TEXT,
    spend TEXT,
    digest TEXT,
    events_key TEXT,
    lane INTEGER,
    spread INTEGER,
    facts_key TEXT NOT NULL DEFAULT '',
    site_ino INTEGER NOT NULL DEFAULT 0,
    site_mtime_ns INTEGER NOT NULL DEFAULT 0,
    published INTEGER NOT NULL DEFAULT 0,
    gen INTEGER NOT NULL DEFAULT 0,
    scanned INTEGER NOT NULL DEFAULT 0,
    rendered INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sources_name ON sources (name, file_name) WHERE name IS NOT NULL;
CREATE INDEX sources_recent ON sources (updated_at, name) WHERE published;
CREATE INDEX sources_parent ON sources (parent_id, name) WHERE published AND parent_id != '';
CREATE INDEX sources_declares ON sources (name) WHERE published AND subs != '[]';
CREATE INDEX sources_series ON sources (role, created_at, name) WHERE published AND role != '';
CREATE INDEX sources_ident ON sources (ident) WHERE ident IS NOT NULL;
CREATE INDEX sources_spread ON sources (spread, lane) WHERE published;
CREATE INDEX sources_size ON sources (size) WHERE published;
CREATE INDEX sources_gen ON sources (gen);
CREATE INDEX sources_rendered ON sources (rendered);
CREATE INDEX sources_scanned ON sources (scanned);
CREATE INDEX sources_unpublished ON sources (file_name) WHERE NOT published;
CREATE INDEX sources_warned ON sources (file_name) WHERE published AND warnings != '[]';
CREATE TABLE summaries (
    file_name TEXT PRIMARY KEY,
    summary TEXT NOT NULL,
    row TEXT NOT NULL,
    row_html TEXT
);
CREATE TABLE events (
    file_name TEXT NOT NULL,
    page TEXT NOT NULL,
    n INTEGER NOT NULL,
    sort_key TEXT NOT NULL,
    value TEXT NOT NULL,
    sort_time TEXT NOT NULL,
    html TEXT,
    PRIMARY KEY (file_name, page, n)
) WITHOUT ROWID;
CREATE INDEX events_order ON events (page, sort_key);
CREATE TABLE outputs (
    path TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    made INTEGER NOT NULL,
    changed INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX outputs_source ON outputs (source);
CREATE TABLE removed (path TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE kept (name TEXT PRIMARY KEY, key TEXT NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
"""
"""The catalog's tables (``meta`` holds a hash of this text: :func:`schema_id`)."""

_TEMP = """
CREATE TEMP TABLE listing (name TEXT NOT NULL, size INTEGER, mtime_ns INTEGER);
CREATE TEMP TABLE to_read (name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TABLE jobs (file_name TEXT PRIMARY KEY, size INTEGER NOT NULL) WITHOUT ROWID;
CREATE TEMP TABLE was AS SELECT * FROM main.sources WHERE 0;
CREATE TEMP TABLE was_summaries AS SELECT * FROM main.summaries WHERE 0;
CREATE TEMP TABLE was_events AS SELECT * FROM main.events WHERE 0;
CREATE TEMP TABLE snap (file_name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TABLE records (folder TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE INDEX temp.was_file ON was (file_name);
CREATE INDEX temp.was_summaries_file ON was_summaries (file_name);
CREATE INDEX temp.was_events_file ON was_events (file_name);
"""
"""A build's scratch tables (gone with its connection): the folder's listing, the files to
read, the sessions to render, the last build's rows of every file this build set or
dropped (``was``: what the index stage compares, what a held file goes back to), and the
folders of the search records kept (``records``: :meth:`Catalog.unpublished`)."""

CACHE_KIB = 2048
"""SQLite's page cache of a connection (and of its temporary tables): a build's memory does
not grow with the archive (the catalog of 100,000 sessions is some 200 MB on disk)."""


class CatalogDamaged(Exception):
    """SQLite found the catalog damaged while a build read it (the build starts again from
    nothing: :func:`.build.build_site`)."""


def schema_id() -> str:
    """What ``meta`` records of the schema: :data:`SCHEMA` and a hash of :data:`DDL`."""
    return f"{SCHEMA}:{hashlib.sha256(DDL.encode()).hexdigest()[:16]}"


def text(value: str) -> str | bytes:
    """``value`` for a ``CAST(? AS TEXT)`` parameter: itself when plain ASCII, else its
    UTF-8 bytes with lone surrogates kept (``surrogatepass``), which sqlite3 would refuse
    as a str."""
    return value if value.isascii() else value.encode("utf-8", "surrogatepass")


_read_text = partial(str, encoding="utf-8", errors="surrogatepass")


def _json(value: object) -> str:
    """JSON text of ``value``, ASCII only (surrogates escaped)."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class SourceState:
    """What the scan found of one session file (made in a worker process, sent back by
    value, written into the catalog by the build's process: :meth:`Catalog.put`)."""

    size: int
    """Size in bytes when it was stamped."""
    mtime_ns: int
    """Modification time when it was stamped."""
    sha256: str
    """Hash of the bytes read ("" when they could not be read)."""
    summary: Summary | None
    """The session's summary; None when the file does not load."""
    failure: str | None
    """Why the file does not load (one line), or None."""
    refs: tuple[str, ...] = ()
    """Session references written in it (``#id``, ``session:name``), sorted."""
    warnings: tuple[str, ...] = ()
    """What the user is told about the file each build (name mismatch, a secret in a name)."""
    digest: str = ""
    """:func:`.staleness.summary_key` of its summary (its index row's key)."""
    events_key: str = ""
    """:func:`.staleness.archive_rows_key` of its summary (its archive rows' key)."""
    slot: int = 0
    """:func:`.urls.row_slot` of its session (0 without a summary)."""
    row: str = ""
    """Its index row's data, JSON (:func:`.index.row_data`; "" without a summary)."""
    events: tuple[tuple[str, int, str, str, str], ...] = ()
    """Its rows on the archive-wide pages: (page, n, sort key, filter value, UTC time)
    (:func:`.archive.event_marks`)."""
    listing: str = ""
    """What ``polyglav sessions`` shows of the file as it is (not redacted):
    :func:`publisher.archive.listing_text` of :func:`publisher.render.console.listing_row`;
    "" when the build redacts."""
    told: tuple[str, ...] = ()
    """What ``polyglav sessions`` tells of it on stderr
    (:func:`publisher.render.console.listing_warnings`)."""

    def __reduce__(self) -> tuple[type[SourceState], tuple[Any, ...]]:
        """Pickled as its values in field order (a full build's scan results come from the
        pool this way)."""
        return (SourceState, tuple(getattr(self, name) for name in _STATE_FIELDS))


_STATE_FIELDS = tuple(SourceState.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class Brief:
    """What a build reads of one ``sources`` row besides its summary."""

    file_name: str
    size: int
    mtime_ns: int
    sha256: str
    failure: str | None
    name: str | None
    facts_key: str
    site_ino: int
    site_mtime_ns: int
    published: bool
    loaded: bool

    @property
    def site(self) -> tuple[int, int]:
        return (self.site_ino, self.site_mtime_ns)


def _brief(row: Sequence[Any]) -> Brief:
    file_name, size, mtime_ns, sha256, failure, name, facts_key, ino, site_mtime = row[:9]
    return Brief(
        file_name,
        size,
        mtime_ns,
        sha256,
        failure,
        name,
        facts_key,
        ino,
        site_mtime,
        bool(row[9]),
        bool(row[10]),
    )


_CALLS = (
    "(s.subs != '[]' OR EXISTS (SELECT 1 FROM sources c WHERE c.published"
    " AND c.parent_id != '' AND c.parent_id = s.name))"
)
"""Whether the published session ``s`` may have sessions below it (it declares
sub-sessions, or one names it as its parent): its index row then counts what they did."""

_BRIEF_SQL = (
    "SELECT file_name, size, mtime_ns, sha256, failure, name, facts_key, site_ino,"
    " site_mtime_ns, published, name IS NOT NULL"
)


@dataclass(frozen=True, slots=True)
class Node:
    """A published session as the graph sees it (:class:`.graph.Graph`)."""

    name: str
    file_name: str
    role: str
    created_at: str
    parent_id: str
    subs: tuple[str, ...]
    """Its declared sub-sessions."""
    spawns: tuple[tuple[str, str, str, str], ...]
    """Its delegate calls: :attr:`.summary.Summary.spawns`."""
    refs: tuple[str, ...]
    """The references written in it."""


_NODE_SQL = "SELECT name, file_name, role, created_at, parent_id, subs, spawns, refs FROM sources"


def _node(row: Sequence[Any]) -> Node:
    name, file_name, role, created_at, parent_id, subs, spawns, refs = row
    return Node(
        name,
        file_name,
        role,
        created_at,
        parent_id,
        tuple(json.loads(subs)),
        tuple(tuple(spawn) for spawn in json.loads(spawns)),
        tuple(json.loads(refs)),
    )


@dataclass(slots=True)
class Meta:
    """The ``meta`` table: what the last committed build recorded."""

    key: str = ""
    """Its build key (:func:`.staleness.build_key`)."""
    graph: str = ""
    """Its graph key (:func:`.staleness.graph_key`)."""
    scanned_at_ns: int = 0
    """When its scan began (the racy-stamp rule)."""
    generation: int = 0
    """How many builds committed to this catalog."""
    index: str = ""
    """The options its index files were made with (:func:`.stages.index.index`)."""
    sessions: str = ""
    """The sessions folder it was built from (absolute)."""
    redacted: bool = False
    """It was built with redaction (its summaries may differ from the files)."""
    files: int = 0
    """How many rows ``sources`` has (a build tells from it whether a file went)."""
    code: str = ""
    """:func:`.staleness.code_key` of the publisher that made it (its listing rows are
    that code's)."""

    @classmethod
    def read(cls, con: sqlite3.Connection) -> Meta:
        values = dict(con.execute("SELECT name, value FROM meta"))
        return cls(
            key=values.get("key", ""),
            graph=values.get("graph", ""),
            scanned_at_ns=int(values.get("scanned_at_ns", "0")),
            generation=int(values.get("generation", "0")),
            index=values.get("index", ""),
            sessions=values.get("sessions", ""),
            redacted=values.get("redacted", "") == "1",
            files=int(values.get("files", "0")),
            code=values.get("code", ""),
        )


def _connect(path: str, *, read_only: bool = False) -> sqlite3.Connection:
    if read_only:
        uri = "file:" + Path(path).absolute().as_posix().replace("?", "%3f") + "?mode=ro"
        con = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    else:
        con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.text_factory = _read_text
    con.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    return con


def remove_files(path: Path) -> None:
    """Delete a catalog's files (the database, its WAL and shared-memory files)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.unlink(f"{path}{suffix}")


class Catalog:
    """One open catalog (see the module docstring)."""

    def __init__(self, con: sqlite3.Connection, path: Path | None, meta: Meta) -> None:
        self.con = con
        self.path = path
        """Its file (None: in memory)."""
        self.meta = meta
        """What the last committed build recorded (empty for a new catalog)."""
        self.fresh = meta.generation == 0
        """True when no build committed to it (a new or rebuilt catalog)."""

    @property
    def gen(self) -> int:
        """The generation of the build writing it (the last committed one's plus one)."""
        return self.meta.generation + 1

    # -- opening --------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, site: str, sessions: str) -> Catalog:
        """The build's catalog at ``path`` for the site folder ``site`` (absolute), made
        when missing, made again when it is of another schema, of another site, or not a
        database. The build's scratch tables are made."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            catalog = cls._open(path, site)
        except sqlite3.DatabaseError:
            catalog = None
        if catalog is None:
            remove_files(path)
            catalog = cls._create(path, site)
        catalog.meta.sessions = catalog.meta.sessions or sessions
        catalog.con.executescript(_TEMP)
        return catalog

    @classmethod
    def _open(cls, path: Path, site: str) -> Catalog | None:
        if not path.exists():
            return None
        con = _connect(os.fspath(path))
        try:
            mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            version = con.execute("PRAGMA user_version").fetchone()[0]
            meta = dict(con.execute("SELECT name, value FROM meta"))
            if (
                mode != "wal"
                or version != SCHEMA
                or meta.get("schema") != schema_id()
                or meta.get("site") != site
            ):
                con.close()
                return None
            _tune(con)
            return cls(con, path, Meta.read(con))
        except sqlite3.DatabaseError:
            con.close()
            raise

    @classmethod
    def _create(cls, path: Path, site: str) -> Catalog:
        con = _connect(os.fspath(path))
        con.execute("PRAGMA journal_mode = WAL")
        _tune(con)
        cls._make(con, site)
        return cls(con, path, Meta())

    @staticmethod
    def _make(con: sqlite3.Connection, site: str) -> None:
        con.executescript(f"BEGIN; {DDL} PRAGMA user_version = {SCHEMA};")
        con.executemany(
            "INSERT INTO meta VALUES (?, CAST(? AS TEXT))",
            [("schema", schema_id()), ("site", text(site))],
        )
        con.execute("COMMIT")

    @classmethod
    def memory(cls) -> Catalog:
        """A catalog in memory (a graph made outside a build: :meth:`.graph.Graph.of`)."""
        con = _connect(":memory:")
        con.executescript(DDL)
        con.executescript(_TEMP)
        return cls(con, None, Meta())

    @classmethod
    def reader(cls, path: Path, sessions: str, code: str) -> Catalog | None:
        """The catalog at ``path`` opened read-only for the CLI, when it is one of this
        schema, committed by a build of the sessions folder ``sessions`` (absolute) without
        redaction, by this publisher's code (``code``: :func:`.staleness.code_key`); else
        None. Nothing of it is written (SQLite makes its shared-memory index and an empty
        WAL file when they are missing: a reader needs them while a build may write)."""
        if not path.is_file():
            return None
        try:
            con = _connect(os.fspath(path), read_only=True)
        except sqlite3.Error:
            return None
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            values = dict(con.execute("SELECT name, value FROM meta"))
            meta = Meta.read(con)
        except sqlite3.Error:
            con.close()
            return None
        if (
            version != SCHEMA
            or values.get("schema") != schema_id()
            or meta.sessions != sessions
            or meta.generation == 0
            or meta.redacted
            or meta.code != code
        ):
            con.close()
            return None
        return cls(con, path, meta)

    @staticmethod
    def rows(path: Path, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        """The rows of one read-only query of the catalog at ``path`` (sqlite3.Error when
        there is none)."""
        if not path.is_file():
            raise sqlite3.OperationalError(f"{path}: no catalog")
        con = _connect(os.fspath(path), read_only=True)
        try:
            return list(con.execute(sql, params))
        finally:
            con.close()

    def close(self) -> None:
        self.con.close()

    def listed(self) -> list[tuple[Any, ...]]:
        """What ``polyglav sessions`` lists of every file (:class:`publisher.archive.Listed`):
        (file name, size, mtime_ns, failure, session name, id, kind, role, version, turns,
        updated_at, parent_id, its listing row, what it tells), in no order (a plain read of
        the table: ordered by name, SQLite would look each row up from the name's index)."""
        return self.con.execute(
            "SELECT file_name, size, mtime_ns, failure, name, session_id, kind, role,"
            " version, turns, updated_at, parent_id, listing, told FROM sources"
        ).fetchall()

    def shown(self) -> list[tuple[Any, ...]]:
        """What ``polyglav sessions`` shows and tells of every file: (file name, size,
        mtime_ns, its listing row, what it tells), in no order (:meth:`listed`); five
        columns where :meth:`listed` reads fourteen (at 100,000 files, half the time)."""
        return self.con.execute(
            "SELECT file_name, size, mtime_ns, listing, told FROM sources"
        ).fetchall()

    @staticmethod
    def recorded_folders(path: Path, key: str) -> Iterator[tuple[str, str, int, int]]:
        """(session name, site folder, inode, mtime_ns) of every session the last committed
        build of the catalog at ``path`` published, when it was made under the build key
        ``key`` (else none), read-only: what a process forked before the build opened the
        catalog checks (:class:`.stages.plan.FolderCheck`)."""
        con = _connect(os.fspath(path), read_only=True)
        try:
            meta = dict(con.execute("SELECT name, value FROM meta"))
            if meta.get("key") != key or meta.get("schema") != schema_id():
                return
            # A plain read of the table (NOT INDEXED): through the published rows' partial
            # index SQLite looks each row up (0.51-0.57 s at 100,000 sessions, against
            # 0.12-0.19 s), and the build waits for this check.
            yield from _each(
                con.execute(
                    "SELECT name, folder, site_ino, site_mtime_ns FROM sources NOT INDEXED"
                    " WHERE published"
                )
            )
        finally:
            con.close()

    def published_outputs(self) -> Iterator[tuple[str, str, bool]]:
        """(site folder, file name, to be rendered this build) of every published session."""
        for folder, file_name, job in self.con.execute(
            "SELECT s.folder, s.file_name, j.file_name IS NOT NULL FROM sources s"
            " LEFT JOIN jobs j ON j.file_name = s.file_name WHERE s.published"
            " ORDER BY s.file_name"
        ):
            yield folder, file_name, bool(job)

    # -- the build's transaction ------------------------------------------------------

    def begin(self) -> None:
        """Start the build's transaction (a build writes nothing outside it)."""
        self.con.execute("BEGIN IMMEDIATE")
        self.con.execute("DELETE FROM removed")

    def commit(self, meta: Meta) -> None:
        """Record ``meta`` and commit the build."""
        values = {
            "key": meta.key,
            "graph": meta.graph,
            "scanned_at_ns": str(meta.scanned_at_ns),
            "generation": str(meta.generation),
            "index": meta.index,
            "sessions": meta.sessions,
            "redacted": "1" if meta.redacted else "",
            "files": str(meta.files),
            "code": meta.code,
        }
        self.con.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, CAST(? AS TEXT))",
            [(name, text(value)) for name, value in values.items()],
        )
        self.con.execute("COMMIT")
        self.meta = meta
        self.fresh = False

    def rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.con.execute("ROLLBACK")

    # -- the folder's listing ----------------------------------------------------------

    def list_folder(self, names: Iterable[tuple[str, int, int]], *, keep: bool = False) -> None:
        """Fill the scratch ``listing`` with session files of the folder (name, size,
        mtime_ns; -1, -1 when not stat'ed), in any order; ``keep``: set the stamps of these
        listed files instead (the others stay listed)."""
        con = self.con
        rows = (
            (name if name.isascii() else text(name), size, mtime) for name, size, mtime in names
        )
        if keep:
            con.executemany(
                "UPDATE listing SET size = ?2, mtime_ns = ?3 WHERE name = CAST(?1 AS TEXT)", rows
            )
            return
        con.execute("DROP INDEX IF EXISTS temp.listing_name")
        con.execute("DELETE FROM listing")
        con.executemany("INSERT INTO listing VALUES (CAST(? AS TEXT), ?, ?)", rows)
        con.execute("CREATE INDEX temp.listing_name ON listing (name)")

    def mark_to_read(self, *, untrusted_before: int) -> None:
        """Add to the files to read every listed file stat'ed whose stamp the catalog does
        not trust (:data:`.staleness.UNTRUSTED_SQL`; ``untrusted_before``: the last scan's
        start minus the racy window)."""
        self.con.execute(
            "INSERT OR IGNORE INTO to_read SELECT l.name FROM listing l"
            " LEFT JOIN sources s ON s.file_name = l.name"
            f" WHERE l.mtime_ns != -1 AND ({UNTRUSTED_SQL})",
            {"racy": untrusted_before},
        )

    def read_all_listed(self) -> None:
        """Every listed file is to be read (no row of the catalog is reused)."""
        self.con.execute("INSERT OR IGNORE INTO to_read SELECT name FROM listing")

    def to_read_count(self) -> int:
        return int(self.con.execute("SELECT count(*) FROM to_read").fetchone()[0])

    def listed_files(self) -> tuple[int, int]:
        """(how many files are listed, how many of them the catalog has no row of), when
        every listed file is to be read or has a row: the new ones are among those to read."""
        listed = int(self.con.execute("SELECT count(*) FROM listing").fetchone()[0])
        new = self.con.execute(
            "SELECT count(*) FROM to_read t WHERE NOT EXISTS"
            " (SELECT 1 FROM sources s WHERE s.file_name = t.name)"
        ).fetchone()[0]
        return listed, int(new)

    def new_files(self) -> list[str]:
        """Listed files the catalog has no row of."""
        return [
            r[0]
            for r in self.con.execute(
                "SELECT name FROM listing l WHERE NOT EXISTS"
                " (SELECT 1 FROM sources s WHERE s.file_name = l.name) ORDER BY name"
            )
        ]

    def gone_files(self) -> list[str]:
        """Files the catalog has a row of that the listing does not hold."""
        return [
            r[0]
            for r in self.con.execute(
                "SELECT file_name FROM sources s WHERE NOT EXISTS"
                " (SELECT 1 FROM listing l WHERE l.name = s.file_name) ORDER BY file_name"
            )
        ]

    def to_read(self) -> Iterator[str]:
        """The files to read, by name (a cursor: rows are written meanwhile)."""
        for (name,) in self.con.execute("SELECT name FROM to_read ORDER BY name"):
            yield name

    def spread(self, table: str, most: int) -> list[str]:
        """Up to ``most`` names of the files to read (``table`` ``"to_read"``) or to render
        (``"jobs"``), spread evenly over their order by name: a sample of what a crew will
        read (:func:`.stages.scan.start_crew`)."""
        column = {"to_read": "name", "jobs": "file_name"}[table]
        total = int(self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        step = max(1, total // max(1, most))
        return [
            r[0]
            for r in self.con.execute(
                f"SELECT {column} FROM (SELECT {column}, row_number() OVER"
                f" (ORDER BY {column}) - 1 AS i FROM {table}) WHERE i % ? = 0 LIMIT ?",
                (step, most),
            )
        ]

    def known(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` the catalog has a row of."""
        lookup = self.con.execute
        return [
            name
            for name in names
            if lookup(
                "SELECT 1 FROM sources WHERE file_name = CAST(? AS TEXT)", (text(name),)
            ).fetchone()
        ]

    def stamps(self) -> Iterator[tuple[str, int, int]]:
        """(file name, size, mtime_ns) of every row, by file name."""
        yield from _each(
            self.con.execute("SELECT file_name, size, mtime_ns FROM sources ORDER BY 1")
        )

    # -- source rows ----------------------------------------------------------------------

    def brief(self, file_name: str) -> Brief | None:
        row = self.con.execute(
            f"{_BRIEF_SQL} FROM sources WHERE file_name = CAST(? AS TEXT)", (text(file_name),)
        ).fetchone()
        return _brief(row) if row is not None else None

    def was_brief(self, file_name: str) -> Brief | None:
        """The last build's row of ``file_name`` when this build set or dropped it."""
        row = self.con.execute(
            f"{_BRIEF_SQL} FROM was WHERE file_name = CAST(? AS TEXT)", (text(file_name),)
        ).fetchone()
        return _brief(row) if row is not None else None

    def has_outputs(self, file_name: str) -> bool:
        return (
            self.con.execute(
                "SELECT 1 FROM outputs WHERE source = CAST(? AS TEXT) LIMIT 1", (text(file_name),)
            ).fetchone()
            is not None
        )

    def put(
        self,
        file_name: str,
        state: SourceState,
        *,
        scanned: int,
        facts_key: str = "",
        site: tuple[int, int] = (0, 0),
    ) -> None:
        """Write the row of ``file_name`` from ``state`` (its last row kept in ``was``).
        ``scanned``: the build that found its content changed (this one's, :attr:`gen`,
        or the row's)."""
        self.keep_was(file_name)
        s = state.summary
        values: list[Any] = [
            text(file_name),
            reflib.id_of_file(file_name),
            state.size,
            state.mtime_ns,
            state.sha256,
            None if state.failure is None else text(state.failure),
            _json(list(state.warnings)),
            _json(list(state.refs)),
            text(state.listing) if state.listing else None,
            _json(list(state.told)) if state.told else None,
        ]
        if s is None:
            values += [None] * len(SUMMARY_COLUMNS)
            values += [None, None, None, None, 0, 0, None, None, None, None, None, None, None]
        else:
            # (imported here: the read-only CLI opens a catalog without the page code)
            from .activity import contribution
            from .spending import contribution as spend_contribution

            values += [text(v) if isinstance(v, str) else v for v in _summary_columns(s)]
            day, outcome, _ = contribution(s)
            spent = spend_contribution(s.usage)
            subs = _json(list(s.sub_sessions))
            spawns = _json([list(spawn) for spawn in s.spawns])
            values += [
                text(slug(s.name)),
                subs,
                spawns,
                _json([s.name, file_name, s.parent_id, s.role, s.created_at]) + subs + spawns,
                len(s.failure_events),
                len(s.decision_events),
                day,
                outcome,
                None if spent is None else _json(spent),
                state.digest,
                state.events_key,
                state.slot & LANE_MASK,
                lane_spread(state.slot),
            ]
        values += [facts_key, site[0], site[1], self.gen, scanned]
        con = self.con
        con.execute(
            f"INSERT OR REPLACE INTO sources ({', '.join(_SOURCE_COLUMNS)})"
            f" VALUES ({', '.join(_PLACES)})",
            values,
        )
        if s is not None:
            con.execute(
                "INSERT INTO summaries VALUES (CAST(? AS TEXT), ?, ?, NULL)",
                (text(file_name), _json(s.to_row()), state.row),
            )
            con.executemany(
                "INSERT INTO events VALUES (CAST(? AS TEXT), ?, ?, CAST(? AS TEXT), CAST(? AS TEXT),"
                " CAST(? AS TEXT), NULL)",
                (
                    (text(file_name), page, n, text(key), text(value), text(when))
                    for page, n, key, value, when in state.events
                ),
            )

    def keep_was(self, file_name: str) -> None:
        """Move the rows of ``file_name`` into ``was`` (a file set or dropped this build: the
        last build's rows are what the stages after the scan compare with)."""
        con = self.con
        param = (text(file_name),)
        where = "WHERE file_name = CAST(? AS TEXT)"
        if self._snapshot(where, param):
            con.execute(f"DELETE FROM sources {where}", param)
            con.execute(f"DELETE FROM summaries {where}", param)
            con.execute(f"DELETE FROM events {where}", param)

    def _snapshot(self, where: str, params: Sequence[object] | Mapping[str, object]) -> int:
        """Copy into ``was`` the rows of ``sources`` ``where`` selects (``params``) that are
        not there yet, with their summaries and events; how many rows were copied."""
        con = self.con
        fresh = "NOT EXISTS (SELECT 1 FROM was w WHERE w.file_name = s.file_name)"
        con.execute("DELETE FROM snap")
        copied = con.execute(
            f"INSERT INTO snap SELECT s.file_name FROM sources s {where} AND {fresh}", params
        ).rowcount
        if copied:
            # (CROSS JOIN: the few rows of ``snap`` drive the loop, each looked up by key)
            for table, into in (("sources", "was"), ("summaries", "was_summaries")):
                con.execute(
                    f"INSERT INTO {into} SELECT t.* FROM snap CROSS JOIN {table} t"
                    " ON t.file_name = snap.file_name"
                )
            con.execute(
                "INSERT INTO was_events SELECT e.* FROM snap CROSS JOIN events e"
                " ON e.file_name = snap.file_name"
            )
        return int(copied)

    def restore(self, file_name: str) -> None:
        """Put back the last build's rows of ``file_name`` (a held file: its last good
        pages stay), as rows set by this build."""
        con = self.con
        param = (text(file_name),)
        where = "WHERE file_name = CAST(? AS TEXT)"
        for table in ("sources", "summaries", "events"):
            con.execute(f"DELETE FROM {table} {where}", param)
        con.execute(f"INSERT INTO sources SELECT * FROM was {where}", param)
        con.execute(f"INSERT INTO summaries SELECT * FROM was_summaries {where}", param)
        con.execute(f"INSERT INTO events SELECT * FROM was_events {where}", param)
        con.execute(f"UPDATE sources SET gen = ? {where}", (self.gen, *param))

    def set_facts_key(self, file_name: str, facts_key: str) -> None:
        self.con.execute(
            "UPDATE sources SET facts_key = ? WHERE file_name = CAST(? AS TEXT)",
            (facts_key, text(file_name)),
        )

    def publish(self, everything: bool) -> None:
        """The census: a file is ``published`` when it loads, rendered (or was not tried)
        and is the first file (by name) of its session name. Made again for every row, or
        (``everything`` False) for the session names of the rows set this build and of
        ``was``; a row whose flag changes is marked as set by this build."""
        first = (
            "SELECT min(f.file_name) FROM sources f WHERE f.name = sources.name"
            " AND f.failure IS NULL AND f.render_error IS NULL"
        )
        now = (
            f"(failure IS NULL AND render_error IS NULL AND name IS NOT NULL"
            f" AND file_name = ({first}))"
        )
        scope = (
            ""
            if everything
            else " AND name IN (SELECT name FROM sources WHERE gen = :gen AND name IS NOT NULL"
            " UNION SELECT name FROM was WHERE name IS NOT NULL)"
        )
        if not everything:
            # A row whose flag changes is kept in ``was`` as it was (its part of the index's
            # counts, its shard): what the stages after compare with.
            changing = f"WHERE s.published != {now.replace('sources.', 's.')}{scope}"
            self._snapshot(changing, {"gen": self.gen})
        self.con.execute(
            f"UPDATE sources SET gen = :gen, published = {now} WHERE published != {now}{scope}",
            {"gen": self.gen},
        )

    def render_failed(self, file_name: str, reason: str) -> None:
        """A session whose render failed: listed as not loading (until its file changes)."""
        self._snapshot("WHERE s.file_name = CAST(? AS TEXT)", (text(file_name),))
        self.con.execute(
            "UPDATE sources SET render_error = CAST(? AS TEXT), published = 0, facts_key = '',"
            " sha256 = '', gen = ?, rendered = ? WHERE file_name = CAST(? AS TEXT)",
            (text(reason), self.gen, self.gen, text(file_name)),
        )

    def rendered(self, file_name: str, outputs: Mapping[str, str], facts_key: str) -> list[str]:
        """Record a session's render: its files and the facts key its pages show; the
        paths whose bytes changed (or are new)."""
        self.con.execute(
            "UPDATE sources SET facts_key = ?, rendered = ? WHERE file_name = CAST(? AS TEXT)",
            (facts_key, self.gen, text(file_name)),
        )
        return self.record_outputs(file_name, outputs)

    def record_outputs(self, source: str, outputs: Mapping[str, str]) -> list[str]:
        """Record files ``source`` made this build (``""``: the index pages and assets);
        the paths whose bytes changed (or are new)."""
        con, gen = self.con, self.gen
        changed = []
        src = text(source)
        for rel, digest in outputs.items():
            path = text(rel)
            row = con.execute(
                "SELECT sha256, source FROM outputs WHERE path = CAST(? AS TEXT)", (path,)
            ).fetchone()
            if row is None or row[0] != digest:
                changed.append(rel)
                con.execute(
                    "INSERT OR REPLACE INTO outputs VALUES"
                    " (CAST(? AS TEXT), CAST(? AS TEXT), ?, ?, ?)",
                    (path, src, digest, gen, gen),
                )
            else:
                con.execute(
                    "UPDATE outputs SET made = ?, source = CAST(? AS TEXT)"
                    " WHERE path = CAST(? AS TEXT)",
                    (gen, src, path),
                )
        return changed

    def outputs_of(self, source: str) -> dict[str, str]:
        """The files ``source`` made last (path → sha256)."""
        return dict(
            self.con.execute(
                "SELECT path, sha256 FROM outputs WHERE source = CAST(? AS TEXT)", (text(source),)
            )
        )

    def all_outputs(self) -> dict[str, str]:
        """Every file of the site (path → sha256), sorted."""
        return dict(self.con.execute("SELECT path, sha256 FROM outputs ORDER BY path"))

    def has_output(self, rel: str) -> bool:
        return (
            self.con.execute(
                "SELECT 1 FROM outputs WHERE path = CAST(? AS TEXT)", (text(rel),)
            ).fetchone()
            is not None
        )

    def stale_outputs(self) -> list[str]:
        """The files of the site this build did not make again and no longer publishes:
        of the index pages and assets, of the sessions it rendered, of the sessions set or
        dropped this build that are not published now (gone, failing, a second file of a
        name), by path."""
        return sorted(
            {
                r[0]
                for r in self.con.execute(
                    "SELECT path FROM outputs WHERE source = '' AND made < :gen"
                    " UNION SELECT o.path FROM sources s CROSS JOIN outputs o"
                    " ON o.source = s.file_name WHERE s.rendered = :gen AND o.made < :gen"
                    " UNION SELECT o.path FROM was w CROSS JOIN outputs o ON o.source = w.file_name"
                    " WHERE NOT EXISTS (SELECT 1 FROM sources s WHERE s.file_name = w.file_name"
                    " AND s.published)",
                    {"gen": self.gen},
                )
            }
        )

    def drop_output(self, rel: str) -> None:
        """A file removed from the site (listed in ``removed``)."""
        path = text(rel)
        self.con.execute("DELETE FROM outputs WHERE path = CAST(? AS TEXT)", (path,))
        self.con.execute("INSERT OR IGNORE INTO removed VALUES (CAST(? AS TEXT))", (path,))

    def changed_outputs(self, gen: int) -> list[str]:
        """The files whose bytes build ``gen`` changed, made or removed (sorted)."""
        return [
            r[0]
            for r in self.con.execute(
                "SELECT path FROM outputs WHERE changed = ? UNION SELECT path FROM removed"
                " ORDER BY 1",
                (gen,),
            )
        ]

    def drop(self, file_name: str) -> None:
        """A file gone from the folder: its rows leave (kept in ``was``)."""
        self.keep_was(file_name)

    def unpublished_names(self) -> list[str]:
        """Session names the last build published (of the rows set or dropped this build)
        that no file publishes now."""
        return [
            r[0]
            for r in self.con.execute(
                "SELECT DISTINCT w.name FROM was w WHERE w.published AND NOT EXISTS"
                " (SELECT 1 FROM sources s WHERE s.published AND s.name = w.name) ORDER BY 1"
            )
        ]

    # -- what the plan and the render read -------------------------------------------------

    def summary_of(self, file_name: str) -> Summary | None:
        row = self.con.execute(
            "SELECT summary FROM summaries WHERE file_name = CAST(? AS TEXT)", (text(file_name),)
        ).fetchone()
        return Summary.from_trusted_row(json.loads(row[0])) if row is not None else None

    def session(self, name: str) -> Summary | None:
        """The summary of the published session ``name``."""
        row = self.con.execute(
            "SELECT m.summary FROM sources s JOIN summaries m ON m.file_name = s.file_name"
            " WHERE s.published AND s.name = CAST(? AS TEXT)",
            (text(name),),
        ).fetchone()
        return Summary.from_trusted_row(json.loads(row[0])) if row is not None else None

    def node(self, name: str) -> Node | None:
        """The published session ``name`` as the graph sees it."""
        row = self.con.execute(
            f"{_NODE_SQL} WHERE published AND name = CAST(? AS TEXT)", (text(name),)
        ).fetchone()
        return _node(row) if row is not None else None

    def node_of_file(self, file_name: str) -> Node | None:
        row = self.con.execute(
            f"{_NODE_SQL} WHERE name IS NOT NULL AND file_name = CAST(? AS TEXT)",
            (text(file_name),),
        ).fetchone()
        return _node(row) if row is not None else None

    def children_of(self, name: str) -> list[tuple[str, str]]:
        """(name, role) of the published sessions whose parent_id names ``name``, by name."""
        return list(
            self.con.execute(
                "SELECT name, role FROM sources WHERE published AND parent_id != ''"
                " AND parent_id = CAST(? AS TEXT) ORDER BY name",
                (text(name),),
            )
        )

    def declaring(self, name: str) -> list[str]:
        """The published sessions that declare ``name`` among their sub-sessions, by name
        (the few sessions that declare any are looked at: a partial index)."""
        needle = _json(name)
        return [
            caller
            for caller, subs in self.con.execute(
                "SELECT name, subs FROM sources WHERE published AND subs != '[]'"
                " AND instr(subs, ?) ORDER BY name",
                (needle,),
            )
            if name in json.loads(subs)
        ]

    def callers(self) -> dict[str, list[str]]:
        """Session name → its callers: the parent it names and the published sessions that
        declare it a sub-session (one pass over the published sessions that have either)."""
        found: dict[str, list[str]] = {}
        for name, parent, subs in self.con.execute(
            "SELECT name, parent_id, subs FROM sources WHERE published"
            " AND (parent_id != '' OR subs != '[]')"
        ):
            if parent:
                found.setdefault(name, []).append(parent)
            for child in json.loads(subs):
                found.setdefault(child, []).append(name)
        return found

    def roles_of(self, names: Iterable[str]) -> dict[str, str]:
        """Each of ``names`` that is published → its role."""
        found = {}
        for name in names:
            row = self.con.execute(
                "SELECT role FROM sources WHERE published AND name = CAST(? AS TEXT)",
                (text(name),),
            ).fetchone()
            if row is not None:
                found[name] = row[0]
        return found

    def neighbours(self, role: str, created_at: str, name: str) -> tuple[str, str]:
        """The published sessions of ``role`` just before and after (created_at, name)."""
        params = (text(role), text(created_at), text(name))
        before = self.con.execute(
            "SELECT name FROM sources WHERE published AND role != '' AND role = CAST(? AS TEXT)"
            " AND (created_at, name) < (CAST(? AS TEXT), CAST(? AS TEXT))"
            " ORDER BY created_at DESC, name DESC LIMIT 1",
            params,
        ).fetchone()
        after = self.con.execute(
            "SELECT name FROM sources WHERE published AND role != '' AND role = CAST(? AS TEXT)"
            " AND (created_at, name) > (CAST(? AS TEXT), CAST(? AS TEXT))"
            " ORDER BY created_at, name LIMIT 1",
            params,
        ).fetchone()
        return (before[0] if before else "", after[0] if after else "")

    def files_with_id(self, ident: str) -> list[str]:
        """Up to two files of the folder (loaded or not) that answer to ``#ident``."""
        return [
            r[0]
            for r in self.con.execute(
                "SELECT file_name FROM sources WHERE ident = ? ORDER BY file_name LIMIT 2",
                (ident,),
            )
        ]

    def published_name_of_file(self, file_name: str) -> str | None:
        row = self.con.execute(
            "SELECT name FROM sources WHERE published AND file_name = CAST(? AS TEXT)",
            (text(file_name),),
        ).fetchone()
        return row[0] if row is not None else None

    def shapes(self) -> Iterator[str]:
        """The graph shape of every published session, by name (:func:`.staleness.graph_key`)."""
        for (shape,) in self.con.execute("SELECT shape FROM sources WHERE published ORDER BY name"):
            yield shape

    def file_names(self) -> Iterator[str]:
        """Every file of the catalog, by name."""
        for (name,) in self.con.execute("SELECT file_name FROM sources ORDER BY file_name"):
            yield name

    def shape_changes(self) -> Iterator[tuple[str | None, str | None]]:
        """(last build's shape, shape now) of each file set or dropped this build (None:
        not published then, or now)."""
        yield from _each(
            self.con.execute(
                "SELECT CASE WHEN w.published THEN w.shape END,"
                " (SELECT CASE WHEN s.published THEN s.shape END FROM sources s"
                "  WHERE s.file_name = w.file_name)"
                " FROM was w"
            )
        )

    def count_published(self) -> int:
        return int(self.con.execute("SELECT count(*) FROM sources WHERE published").fetchone()[0])

    def count_files(self) -> int:
        return int(self.con.execute("SELECT count(*) FROM sources").fetchone()[0])

    def changed_content(self) -> list[tuple[str, str]]:
        """(file name, session name) of the published sessions whose content this build
        found changed."""
        return list(
            self.con.execute(
                "SELECT file_name, name FROM sources WHERE scanned = ? AND published", (self.gen,)
            )
        )

    def folders(self, *, set_now: bool = False) -> Iterator[tuple[str, str, int, int]]:
        """(session name, site folder, inode, mtime_ns) of every published session (or,
        ``set_now``, of those this build set)."""
        where = "published AND gen = :gen" if set_now else "published"
        yield from _each(
            self.con.execute(
                f"SELECT name, folder, site_ino, site_mtime_ns FROM sources WHERE {where}",
                {"gen": self.gen},
            )
        )

    def published_files(self) -> Iterator[tuple[str, str, str, int]]:
        """(file name, session name, facts key, size) of every published session, by file
        name."""
        yield from _each(
            self.con.execute(
                "SELECT file_name, name, facts_key, size FROM sources WHERE published"
                " ORDER BY file_name"
            )
        )

    def published_file(self, name: str) -> tuple[str, str, int] | None:
        """(file name, facts key, size) of the published session ``name``."""
        row = self.con.execute(
            "SELECT file_name, facts_key, size FROM sources WHERE published"
            " AND name = CAST(? AS TEXT)",
            (text(name),),
        ).fetchone()
        return (row[0], row[1], row[2]) if row is not None else None

    # -- the render's jobs -------------------------------------------------------------------

    # -- what the search stage reads ----------------------------------------------------

    def published_totals(self) -> tuple[int, int]:
        """How many sessions are published, and their files' bytes."""
        count, size = self.con.execute(
            "SELECT count(*), coalesce(sum(size), 0) FROM sources WHERE published"
        ).fetchone()
        return int(count), int(size)

    def published_lanes(self, count: int) -> Iterator[int]:
        """Each ``lane % count`` (``count`` a power of two) that holds a published session,
        in order: one seek of the ``spread`` index each (a ``lane % count`` is one range of
        it, :func:`shard_range`), where ``DISTINCT lane % count`` read every published row
        (0.2 s of every build at 100,000 sessions, for 64 answers)."""
        query = "SELECT EXISTS (SELECT 1 FROM sources WHERE published AND spread BETWEEN ? AND ?)"
        for index in range(count):
            if self.con.execute(query, shard_range(index, count)).fetchone()[0]:
                yield index

    def rendered_lanes(self) -> Iterator[int]:
        """The lanes of the published sessions this build rendered."""
        for (lane,) in self.con.execute(
            "SELECT DISTINCT lane FROM sources WHERE rendered = ? AND published", (self.gen,)
        ):
            yield lane

    def bundle_members(self, index: int, count: int) -> list[tuple[str, str]]:
        """(site folder, file name) of the published sessions whose ``lane % count`` is
        ``index``, by folder."""
        return list(
            self.con.execute(
                "SELECT folder, file_name FROM sources WHERE published"
                " AND spread BETWEEN ? AND ? ORDER BY folder, file_name",
                shard_range(index, count),
            )
        )

    def unpublished(self, folders: Iterable[str]) -> list[str]:
        """Those of ``folders`` (in any order) that are no published session's site folder,
        by name: compared in the scratch ``records`` (SQLite's temporary store), never all
        held here."""
        con = self.con
        con.execute("DELETE FROM records")
        con.executemany(
            "INSERT OR IGNORE INTO records VALUES (CAST(? AS TEXT))",
            ((text(f),) for f in folders),
        )
        # A plain pass over the table (NOT INDEXED): not a lookup of each row through the
        # published rows' partial index.
        found = [
            r[0]
            for r in con.execute(
                "SELECT folder FROM records EXCEPT"
                " SELECT folder FROM sources NOT INDEXED WHERE published ORDER BY 1"
            )
        ]
        con.execute("DELETE FROM records")
        return found

    def add_job(self, file_name: str, size: int) -> None:
        self.con.execute(
            "INSERT OR IGNORE INTO jobs VALUES (CAST(? AS TEXT), ?)", (text(file_name), size)
        )

    def add_all_jobs(self) -> None:
        """Every published session is to be rendered."""
        self.con.execute(
            "INSERT OR IGNORE INTO jobs SELECT file_name, size FROM sources WHERE published"
        )

    def job_count(self) -> int:
        return int(self.con.execute("SELECT count(*) FROM jobs").fetchone()[0])

    def jobs(self) -> Iterator[tuple[str, int]]:
        """The sessions to render (file name, size), by file name."""
        yield from _each(self.con.execute("SELECT file_name, size FROM jobs ORDER BY file_name"))

    def is_job(self, file_name: str) -> bool:
        return (
            self.con.execute(
                "SELECT 1 FROM jobs WHERE file_name = CAST(? AS TEXT)", (text(file_name),)
            ).fetchone()
            is not None
        )

    def job_bytes(self) -> int:
        """The size of the files to render, in all."""
        return int(self.con.execute("SELECT coalesce(sum(size), 0) FROM jobs").fetchone()[0])

    def rendered_folders(self, batch: int = 1000) -> Iterator[tuple[str, str]]:
        """(file name, site folder) of each session this build rendered, by file name, read
        ``batch`` at a time (the caller may update their rows meanwhile)."""
        last: str | bytes = ""
        while True:
            rows = self.con.execute(
                "SELECT file_name, folder FROM sources WHERE rendered = ? AND published"
                " AND file_name > CAST(? AS TEXT) ORDER BY file_name LIMIT ?",
                (self.gen, last, batch),
            ).fetchall()
            yield from rows
            if len(rows) < batch:
                return
            last = text(rows[-1][0])

    def stamp_folder(self, file_name: str, stamp: tuple[int, int]) -> None:
        self.con.execute(
            "UPDATE sources SET site_ino = ?, site_mtime_ns = ? WHERE file_name = CAST(? AS TEXT)",
            (stamp[0], stamp[1], text(file_name)),
        )

    # -- failures and warnings ------------------------------------------------------------

    def failures(self) -> list[tuple[str, str, int]]:
        """(file name, why, size) of every file not published, by file name: it does not
        load, its render failed, or it is a second file of a session name."""
        return list(
            self.con.execute(
                "SELECT s.file_name, COALESCE(s.failure, s.render_error, 'same session_name as '"
                " || (SELECT min(f.file_name) FROM sources f WHERE f.published"
                " AND f.name = s.name) || '; not published twice'), s.size"
                " FROM sources s WHERE NOT s.published ORDER BY s.file_name"
            )
        )

    def warnings(self) -> list[str]:
        """What the user is told of the published files, in file name order."""
        lines: list[str] = []
        for (found,) in self.con.execute(
            "SELECT warnings FROM sources WHERE published AND warnings != '[]' ORDER BY file_name"
        ):
            lines.extend(json.loads(found))
        return lines

    # -- the index and the archive-wide pages -----------------------------------------

    def distinct(self, column: str) -> list[str]:
        """The values of a summary column (:data:`SUMMARY_COLUMNS`) among the published
        sessions, sorted."""
        assert column in _SUMMARY_NAMES
        return [
            r[0]
            for r in self.con.execute(
                f"SELECT DISTINCT {column} FROM sources WHERE published ORDER BY 1"
            )
        ]

    def runs(self) -> dict[tuple[str, str], int]:
        """The published sessions counted by (day, outcome) (:func:`.activity.contribution`)."""
        return {
            (day, outcome): n
            for day, outcome, n in self.con.execute(
                "SELECT day, outcome, count(*) FROM sources WHERE published GROUP BY 1, 2"
            )
        }

    def error_days(self) -> dict[str, int]:
        """The published sessions' errors counted by day (those with a readable time)."""
        return dict(
            self.con.execute(
                "SELECT substr(e.sort_time, 1, 10), count(*) FROM events e"
                " JOIN sources s ON s.file_name = e.file_name"
                " WHERE e.page = 'errors' AND s.published AND e.sort_time != '' GROUP BY 1"
            )
        )

    def redacted_total(self) -> int:
        """Secrets redacted across the published sessions."""
        row = self.con.execute("SELECT sum(redacted) FROM sources WHERE published").fetchone()
        return int(row[0] or 0)

    def recent(self, limit: int) -> list[tuple[str, str, str | None, bool, bool]]:
        """(file name, session name, kept row HTML or None, whether it may have sessions
        below it: :data:`_CALLS`, whether its parent is missing: :data:`_ORPHAN`) of the
        ``limit`` most recently updated published sessions (then by name, descending): the
        index's first screen."""
        return [
            (file_name, name, html, bool(calls), bool(orphan))
            for file_name, name, html, calls, orphan in self.con.execute(
                f"SELECT s.file_name, s.name, m.row_html, {_CALLS}, {_ORPHAN} FROM sources s"
                " JOIN summaries m ON m.file_name = s.file_name WHERE s.published"
                " ORDER BY s.updated_at DESC, s.name DESC LIMIT ?",
                (limit,),
            )
        ]

    def set_row_html(self, file_name: str, html: str) -> None:
        self.con.execute(
            "UPDATE summaries SET row_html = CAST(? AS TEXT) WHERE file_name = CAST(? AS TEXT)",
            (text(html), text(file_name)),
        )

    def shard_rows(self, index: int, count: int) -> list[tuple[str, str, str, bool, bool]]:
        """(file name, session name, kept row data (JSON), whether it may have sessions
        below it: :data:`_CALLS`, whether its parent is missing: :data:`_ORPHAN`) of the
        published sessions of row shard ``index`` of ``count``, by name."""
        return [
            (file_name, name, row, bool(calls), bool(orphan))
            for file_name, name, row, calls, orphan in self.con.execute(
                f"SELECT s.file_name, s.name, m.row, {_CALLS}, {_ORPHAN} FROM sources s"
                " JOIN summaries m ON m.file_name = s.file_name"
                " WHERE s.published AND s.spread BETWEEN ? AND ? ORDER BY s.name",
                shard_range(index, count),
            )
        ]

    def touched_names(self) -> Iterator[tuple[str, str]]:
        """(session name, parent) of the published sessions set or dropped this build, as
        they were and as they are: whose callers' index rows count what they did."""
        yield from self.con.execute(
            "SELECT name, parent_id FROM was WHERE published UNION"
            " SELECT name, parent_id FROM sources WHERE published AND gen = ?",
            (self.gen,),
        )

    def lanes_of(self, names: Iterable[str]) -> set[int]:
        """The lanes of those of ``names`` that are published."""
        found = set()
        for name in names:
            row = self.con.execute(
                "SELECT lane FROM sources WHERE published AND name = CAST(? AS TEXT)",
                (text(name),),
            ).fetchone()
            if row is not None:
                found.add(row[0])
        return found

    def touched_lanes(self) -> Iterator[int]:
        """The lanes of the sessions set or dropped this build (then and now)."""
        for (lane,) in self.con.execute(
            "SELECT lane FROM was WHERE published UNION"
            " SELECT lane FROM sources WHERE published AND gen = :gen",
            {"gen": self.gen},
        ):
            yield lane

    def touched_event_lanes(self, page: str) -> Iterator[int]:
        """The lanes of the sessions whose rows on ``page`` may have changed this build:
        set or dropped, and with rows there then or now, other rows or other kind or role."""
        rows = "error_rows" if page == "errors" else "decision_rows"
        yield from (
            lane
            for (lane,) in self.con.execute(
                f"SELECT w.lane FROM was w LEFT JOIN sources s ON s.file_name = w.file_name"
                f" WHERE w.published AND w.{rows} > 0 AND (s.file_name IS NULL OR NOT s.published"
                f" OR s.events_key IS NOT w.events_key OR s.{rows} != w.{rows})"
                f" UNION SELECT s.lane FROM sources s LEFT JOIN was w ON w.file_name = s.file_name"
                f" WHERE s.published AND s.gen = :gen AND s.{rows} > 0 AND (w.file_name IS NULL"
                f" OR NOT w.published OR w.events_key IS NOT s.events_key OR w.{rows} != s.{rows})",
                {"gen": self.gen},
            )
        )

    def counts_of(
        self, side: str
    ) -> Iterator[tuple[str, str, str, str, int, int, int, str | None]]:
        """(kind, role, day, outcome, error rows, decision rows, secrets redacted, what it
        spent: ``spend``, JSON or None) of the published sessions: ``"all"`` of them, those
        this build set (``"now"``), or the last build's rows of the sessions this build set
        or dropped (``"was"``)."""
        columns = "kind, role, day, outcome, error_rows, decision_rows, redacted, spend"
        sql = {
            "all": f"SELECT {columns} FROM sources WHERE published",
            "now": f"SELECT {columns} FROM sources WHERE published AND gen = :gen",
            "was": f"SELECT {columns} FROM was WHERE published",
        }[side]
        yield from _each(self.con.execute(sql, {"gen": self.gen}))

    def event_counts_of(self, side: str) -> Iterator[tuple[str, str, str]]:
        """(page, filter value, UTC time) of the rows the published sessions give the
        archive-wide pages (``side``: as :meth:`counts_of`)."""
        sql = {
            "all": "SELECT e.page, e.value, e.sort_time FROM events e JOIN sources s"
            " ON s.file_name = e.file_name WHERE s.published",
            "now": "SELECT e.page, e.value, e.sort_time FROM events e JOIN sources s"
            " ON s.file_name = e.file_name WHERE s.published AND s.gen = :gen",
            "was": "SELECT e.page, e.value, e.sort_time FROM was_events e JOIN was w"
            " ON w.file_name = e.file_name WHERE w.published",
        }[side]
        yield from _each(self.con.execute(sql, {"gen": self.gen}))

    def family_roots(self) -> list[str]:
        """The published sessions without a parent in the archive that have sub-sessions
        (declared, or naming them as parent) or name a parent (one not in the archive), by
        name: the roots of the delegation tree's families."""
        return [
            r[0]
            for r in self.con.execute(
                f"SELECT r.name FROM sources r WHERE r.published AND {_ROOT}"
                " AND (r.parent_id != '' OR r.subs != '[]' OR EXISTS (SELECT 1 FROM sources c"
                " WHERE c.published AND c.parent_id != '' AND c.parent_id = r.name))"
                " ORDER BY r.name"
            )
        ]

    def count_roots(self) -> int:
        """The published sessions without a parent in the archive."""
        row = self.con.execute(f"SELECT count(*) FROM sources r WHERE r.published AND {_ROOT}")
        return int(row.fetchone()[0])

    def with_parent_present(self) -> Iterator[str]:
        """The published sessions whose parent is published, by name."""
        for (name,) in self.con.execute(
            f"SELECT r.name FROM sources r WHERE r.published AND NOT {_ROOT} ORDER BY r.name"
        ):
            yield name

    def files_missing_event_html(self, batch: int = 500) -> Iterator[str]:
        """The published sessions with rows on the archive-wide pages not rendered yet, by
        file name, read ``batch`` at a time (the caller renders them meanwhile)."""
        last: str | bytes = ""
        while True:
            rows = self.con.execute(
                "SELECT DISTINCT e.file_name FROM events e JOIN sources s"
                " ON s.file_name = e.file_name WHERE s.published AND e.html IS NULL"
                " AND e.file_name > CAST(? AS TEXT) ORDER BY 1 LIMIT ?",
                (last, batch),
            ).fetchall()
            yield from (row[0] for row in rows)
            if len(rows) < batch:
                return
            last = text(rows[-1][0])

    def set_event_html(self, file_name: str, page: str, n: int, html: str) -> None:
        self.con.execute(
            "UPDATE events SET html = CAST(? AS TEXT)"
            " WHERE file_name = CAST(? AS TEXT) AND page = ? AND n = ?",
            (text(html), text(file_name), page, n),
        )

    def event_totals(self, page: str) -> tuple[int, int]:
        """(sessions, rows) of the published sessions with rows on ``page``."""
        rows = "error_rows" if page == "errors" else "decision_rows"
        found = self.con.execute(
            f"SELECT count(*), sum({rows}) FROM sources WHERE published AND {rows} > 0"
        ).fetchone()
        return int(found[0]), int(found[1] or 0)

    def event_values(self, page: str) -> dict[str, int]:
        """The rows of ``page`` counted by filter value (an error's code, a decision)."""
        return dict(
            self.con.execute(
                "SELECT e.value, count(*) FROM events e JOIN sources s"
                " ON s.file_name = e.file_name WHERE e.page = ? AND s.published GROUP BY 1",
                (page,),
            )
        )

    def first_events(self, page: str, limit: int) -> list[str]:
        """The HTML of the first ``limit`` rows of ``page``, in its order (by sort key)."""
        return [
            r[0]
            for r in self.con.execute(
                "SELECT e.html FROM events e JOIN sources s ON s.file_name = e.file_name"
                " WHERE e.page = ? AND s.published ORDER BY e.sort_key LIMIT ?",
                (page, limit),
            )
        ]

    def event_shard(
        self, page: str, index: int, count: int
    ) -> list[tuple[str, str, str, str, str]]:
        """(sort key, kind, role, value, HTML) of the rows of ``page`` of the sessions of
        row shard ``index`` of ``count``, by sort key."""
        return list(
            self.con.execute(
                "SELECT e.sort_key, s.kind, s.role, e.value, e.html FROM sources s"
                " CROSS JOIN events e ON e.file_name = s.file_name AND e.page = ?"
                " WHERE s.published AND s.spread BETWEEN ? AND ? ORDER BY e.sort_key",
                (page, *shard_range(index, count)),
            )
        )

    # -- kept texts ---------------------------------------------------------------------

    def kept(self, name: str, key: str) -> str | None:
        row = self.con.execute(
            "SELECT value FROM kept WHERE name = ? AND key = ?", (name, key)
        ).fetchone()
        return row[0] if row is not None else None

    def keep(self, name: str, key: str, value: str) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO kept VALUES (?, ?, CAST(? AS TEXT))", (name, key, text(value))
        )


_PLACES = tuple(
    "CAST(? AS TEXT)"
    if name
    in {
        "file_name",
        "failure",
        "folder",
        "listing",
        *(n for n, kind in SUMMARY_COLUMNS if kind == "TEXT"),
    }
    else "?"
    for name in _SOURCE_COLUMNS
)


_SUMMARY_NAMES = frozenset(name for name, _ in SUMMARY_COLUMNS)


def _parent_published(alias: str) -> str:
    """Whether the parent that the published session ``alias`` names is in the archive
    (the one rule of :data:`_ROOT` and :data:`_ORPHAN`)."""
    return f"EXISTS (SELECT 1 FROM sources p WHERE p.published AND p.name = {alias}.parent_id)"


_ROOT = f"(r.parent_id = '' OR NOT {_parent_published('r')})"
"""A published session ``r`` without a parent in the archive."""

_ORPHAN = f"(s.parent_id != '' AND (s.parent_id = s.name OR NOT {_parent_published('s')}))"
"""A published session ``s`` naming a parent that is not in the archive, or itself: its
index row is a root's (:func:`.index.index_row`'s ``orphan``). A longer cycle of parents
stays behind the sub-sessions toggle (the toggle shows it)."""


def _each(cursor: sqlite3.Cursor) -> Iterator[Any]:
    """The rows of ``cursor``, one at a time. A plain loop, not ``yield from``: a generator
    left unfinished (a build stopped midway) and closed after its catalog must not close
    the cursor of a closed connection."""
    for row in cursor:  # noqa: UP028
        yield row


def _summary_columns(summary: Summary) -> list[Any]:
    return [getattr(summary, name) for name, _ in SUMMARY_COLUMNS]


def _tune(con: sqlite3.Connection) -> None:
    """The pragmas of a build's connection: synchronous NORMAL (WAL: a power cut may lose
    the last commit, never consistency), scratch tables in files (their pages within the
    page cache), no memory map (its pages would count as the build's memory)."""
    con.execute("PRAGMA synchronous = NORMAL")
    con.execute("PRAGMA temp_store = FILE")
    con.execute(f"PRAGMA temp.cache_size = -{CACHE_KIB}")
    con.execute("PRAGMA mmap_size = 0")


_DAMAGE_CODES = (11, 26)
"""SQLITE_CORRUPT and SQLITE_NOTADB (primary result codes)."""


def damaged(exc: BaseException) -> bool:
    """True when ``exc`` is SQLite saying the catalog is damaged or not a database (a full
    disk or a missing permission is not: the build fails with its message)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in _DAMAGE_CODES
    )
