"""What the search keeps in the build's cache folder, behind one small interface.

Three things, all only ever read by the search (so they can move into another store, such
as the catalog issue 33 plans, by reimplementing this class alone):

- each published session's **record** (:class:`.extract.SessionRecord`), written by the
  render beside the session's pages and read when its bundle is written again: a file a
  session, ``search/records/<slug>.json``;
- the **state** of the index: the key it was made under (:func:`..staleness.search_key`),
  the bundle count, for each bundle the digest of its members' names, its meta file and
  its turn count, and the bundles a deferred build left to write (``search/state.json``);
- for each bundle, the names of the files it was last made of (``search/files/<bundle>.txt``:
  its files are named by what they hold, so its version alone does not say which);
- every bundle's **term entries**, the terms whose entries changed since the shared term
  chunks were last made, and those chunks (``search/terms.sqlite``, :class:`TermEntries`).

Losing any of it costs time, never a wrong index: a missing record is made again from the
session file, a missing or foreign state makes every bundle again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ...write import atomic_write
from .extract import SessionRecord


@dataclass(slots=True)
class BundleState:
    """What the state says of one bundle."""

    members: str
    """A digest of its sessions' folders."""
    meta: str
    """Its meta file's name (without ``.js``)."""
    documents: int
    """Its turns."""


@dataclass(slots=True)
class SearchState:
    """The state of the published index (see the module docstring)."""

    key: str = ""
    """:func:`..staleness.search_key` it was made under."""
    count: int = 0
    """The bundle count."""
    bundles: dict[str, BundleState] = field(default_factory=dict)
    """Bundle id → its state, for every bundle written."""
    pending: list[str] = field(default_factory=list)
    """Bundles a deferred build must write (their sessions were rendered since)."""


class SearchStore:
    """The search's part of a cache folder."""

    def __init__(self, root: Path) -> None:
        """``root``: the folder it owns (``<cache>/search``)."""
        self.root = root

    @property
    def records(self) -> Path:
        return self.root / "records"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    def _record_path(self, slug: str) -> Path:
        return self.records / f"{slug}.json"

    def put_record(self, record: SessionRecord) -> None:
        """Keep a session's record (written atomically)."""
        self.records.mkdir(parents=True, exist_ok=True)
        atomic_write(self._record_path(record.slug), [record.to_bytes()])

    def record_bytes(self, slug: str) -> bytes | None:
        """The bytes of the record kept for the session in folder ``slug``, or None."""
        try:
            return self._record_path(slug).read_bytes()
        except OSError:
            return None

    def record(self, slug: str) -> SessionRecord | None:
        """The record kept for the session in folder ``slug``, or None."""
        data = self.record_bytes(slug)
        record = SessionRecord.from_bytes(data) if data is not None else None
        return record if record is not None and record.slug == slug else None

    @property
    def file_lists(self) -> Path:
        return self.root / "files"

    def put_files(self, ident: str, meta: str, files: list[str]) -> None:
        """Keep the names of the files bundle ``ident`` was made of, its meta file
        ``meta`` (written atomically)."""
        self.file_lists.mkdir(parents=True, exist_ok=True)
        atomic_write(self.file_lists / f"{ident}.txt", ["\n".join([meta, *files]), "\n"])

    def files(self, ident: str, meta: str) -> list[str] | None:
        """The names of the files of bundle ``ident`` when it was last made of meta file
        ``meta``, or None (not kept, or kept for another)."""
        try:
            lines = (self.file_lists / f"{ident}.txt").read_text(encoding="utf-8").splitlines()
        except (OSError, ValueError):
            return None
        return lines[1:] if lines and lines[0] == meta else None

    def keep_files(self, bundles: list[str]) -> None:
        """Forget the file lists of bundles no longer in the index."""
        keep = {f"{ident}.txt" for ident in bundles}
        with contextlib.suppress(OSError):
            for entry in os.listdir(self.file_lists):
                if entry not in keep:
                    with contextlib.suppress(OSError):
                        os.unlink(self.file_lists / entry)

    @property
    def terms_path(self) -> Path:
        return self.root / "terms.sqlite"

    def term_entries(self) -> TermEntries:
        """The term entries (:class:`TermEntries`; a connection of this process: open it
        in the process that uses it, close it after)."""
        self.root.mkdir(parents=True, exist_ok=True)
        return TermEntries(self.terms_path)

    def clear_terms(self) -> None:
        """Forget the term entries (another key or bundle count: every bundle is made
        again)."""
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.terms_path}{suffix}")

    def scratch(self) -> IO[bytes]:
        """A scratch file in the cache folder (gone once closed): a bundle's sorted runs."""
        self.root.mkdir(parents=True, exist_ok=True)
        return tempfile.TemporaryFile(dir=self.root)

    def record_slugs(self) -> Iterator[str]:
        """The folder of every session whose record is kept, as the folder is listed (no
        order, never all held)."""
        try:
            with os.scandir(self.records) as entries:
                for entry in entries:
                    if entry.name.endswith(".json"):
                        yield entry.name[: -len(".json")]
        except FileNotFoundError:
            return

    def drop_records(self, slugs: list[str]) -> None:
        """Forget the records of sessions no longer published."""
        for slug in slugs:
            with contextlib.suppress(OSError):
                os.unlink(self._record_path(slug))

    def load(self) -> SearchState:
        """The state the last build saved (an empty one when there is none or it does not
        read)."""
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            bundles = {
                str(ident): BundleState(str(b[0]), str(b[1]), int(b[2]))
                for ident, b in data["bundles"].items()
            }
            return SearchState(
                str(data["key"]), int(data["count"]), bundles, [str(p) for p in data["pending"]]
            )
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return SearchState()

    def save(self, state: SearchState) -> None:
        """Save the state (atomically)."""
        data = {
            "key": state.key,
            "count": state.count,
            "bundles": {
                ident: [b.members, b.meta, b.documents]
                for ident, b in sorted(state.bundles.items())
            },
            "pending": sorted(set(state.pending)),
        }
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write(self.state_file, [json.dumps(data, separators=(",", ":"))])

    def clear(self) -> None:
        """Forget everything (search off)."""
        if self.root.is_dir() and not self.root.is_symlink():
            shutil.rmtree(self.root, ignore_errors=True)
        elif self.root.is_symlink():
            self.root.unlink()


TERMS_SCHEMA = 3
"""The layout of ``terms.sqlite`` (``PRAGMA user_version``): another one is started afresh
(2: the chunks kept begin where a term says, :func:`.shared.cut_before`; 3: a chunk no
longer says whether it ends at a cut, as every one but the last does)."""
CACHE_KIB = 256
"""SQLite's page cache of a connection to ``terms.sqlite`` (its reads are in key order:
a small cache is enough, and what a build holds does not grow with the archive)."""

_TERMS_DDL = """
CREATE TABLE IF NOT EXISTS entries (
    key BLOB NOT NULL, bundle INTEGER NOT NULL, term TEXT NOT NULL, entry TEXT NOT NULL,
    PRIMARY KEY (key, bundle)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_of_bundle ON entries (bundle);
CREATE TABLE IF NOT EXISTS bundles (bundle INTEGER PRIMARY KEY, version TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS changed (key BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks (
    seq INTEGER PRIMARY KEY, first TEXT NOT NULL, last TEXT NOT NULL, name TEXT NOT NULL,
    digest TEXT NOT NULL);
"""


@dataclass(slots=True, frozen=True)
class ChunkRow:
    """A shared term chunk as the cache keeps it (:mod:`.shared` makes them)."""

    first: str
    """Its first term."""
    last: str
    """Its last term."""
    name: str
    """Its file name (without ``.js``)."""
    digest: str
    """A hash of its file (BLAKE2b, 128 bits: two chunks of one name must hold the same)."""


class TermEntries:
    """Every bundle's term entries (``key``: the term's sort key, :func:`.bundle.js_order`;
    ``entry``: as :func:`.bundle.build_bundle` gives it) with the version of the bundle they
    are of; the keys of the terms whose entries changed since the shared chunks were made
    (``changed``), and those chunks, in order. SQLite (the standard library's), so that a
    range of terms is read across every bundle in the order of the keys without holding
    them: a build's memory does not grow with the archive.

    Written by the bundles' workers, each in its own process and connection (one writer at
    a time: SQLite's lock, waited for), then read and updated by the build's process
    (:func:`.shared.update_chunks`). Each step is one transaction, so a build killed at any
    moment leaves the changes it did not merge recorded for the next one."""

    __slots__ = ("_con",)

    def __init__(self, path: Path) -> None:
        try:
            self._con = self._open(path)
        except sqlite3.DatabaseError:  # corrupt or foreign: started afresh
            for suffix in ("", "-journal", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
            self._con = self._open(path)

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        con = sqlite3.connect(path, timeout=120, isolation_level=None)
        try:
            con.execute("PRAGMA synchronous = OFF")  # a cache: a lost one is made again
            con.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, TERMS_SCHEMA):
                raise sqlite3.DatabaseError(f"schema {version}")
            con.executescript(
                f"BEGIN IMMEDIATE; {_TERMS_DDL} PRAGMA user_version = {TERMS_SCHEMA}; COMMIT;"
            )
        except BaseException:
            con.close()
            raise
        return con

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> TermEntries:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version(self, bundle: int) -> str | None:
        """The version of bundle ``bundle`` whose entries are kept, or None."""
        row = self._con.execute("SELECT version FROM bundles WHERE bundle = ?", (bundle,))
        found = row.fetchone()
        return str(found[0]) if found else None

    def kept_bundles(self) -> set[int]:
        """The bundles whose entries are kept."""
        return {int(b) for (b,) in self._con.execute("SELECT bundle FROM bundles")}

    def replace_bundle(
        self, bundle: int, version: str, entries: Iterable[tuple[bytes, str, str]]
    ) -> None:
        """Keep ``entries`` ((key, term, entry), any order) as bundle ``bundle``'s, of
        ``version``, in place of the ones kept; the keys of the terms whose entries came,
        went or changed are recorded (unless no chunk was made yet: the first merge reads
        every entry)."""
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            if con.execute("SELECT 1 FROM chunks LIMIT 1").fetchone():
                self._record_changes(bundle, entries)
            else:  # (no chunk made yet: no change to record, the entries go in directly)
                con.execute("DELETE FROM entries WHERE bundle = ?", (bundle,))
                con.executemany(
                    "INSERT INTO entries VALUES (?, ?, ?, ?)",
                    ((key, bundle, term, entry) for key, term, entry in entries),
                )
            con.execute("INSERT OR REPLACE INTO bundles VALUES (?, ?)", (bundle, version))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def _record_changes(self, bundle: int, entries: Iterable[tuple[bytes, str, str]]) -> None:
        """Within :meth:`replace_bundle`'s transaction: ``entries`` in place of bundle
        ``bundle``'s, the keys whose entries came, went or changed recorded."""
        con = self._con
        con.execute(
            "CREATE TEMP TABLE IF NOT EXISTS fresh "
            "(key BLOB PRIMARY KEY, term TEXT NOT NULL, entry TEXT NOT NULL) WITHOUT ROWID"
        )
        con.execute("DELETE FROM temp.fresh")
        con.executemany("INSERT INTO temp.fresh VALUES (?, ?, ?)", entries)
        con.execute(
            "INSERT OR IGNORE INTO changed SELECT key FROM ("
            "SELECT key, entry FROM entries WHERE bundle = ?1 "
            "EXCEPT SELECT key, entry FROM temp.fresh)",
            (bundle,),
        )
        con.execute(
            "INSERT OR IGNORE INTO changed SELECT key FROM ("
            "SELECT key, entry FROM temp.fresh "
            "EXCEPT SELECT key, entry FROM entries WHERE bundle = ?1)",
            (bundle,),
        )
        con.execute("DELETE FROM entries WHERE bundle = ?", (bundle,))
        con.execute("INSERT INTO entries SELECT key, ?, term, entry FROM temp.fresh", (bundle,))
        con.execute("DELETE FROM temp.fresh")

    def keep_bundles(self, bundles: Iterable[int]) -> None:
        """Drop the entries of every bundle but ``bundles`` (recording their terms as
        changed)."""
        con = self._con
        keep = set(bundles)
        # (a bundle's entries and its row of ``bundles`` come and go in one transaction)
        held = [b for (b,) in con.execute("SELECT bundle FROM bundles").fetchall()]
        gone = [b for b in held if b not in keep]
        if not gone:
            return
        con.execute("BEGIN IMMEDIATE")
        try:
            made = con.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None
            for b in gone:
                if made:
                    con.execute(
                        "INSERT OR IGNORE INTO changed SELECT key FROM entries WHERE bundle = ?",
                        (b,),
                    )
                con.execute("DELETE FROM entries WHERE bundle = ?", (b,))
                con.execute("DELETE FROM bundles WHERE bundle = ?", (b,))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def changed(self) -> list[bytes]:
        """The keys of the terms whose entries changed since the chunks were made, in
        order (an append's: a few hundred)."""
        return [bytes(k) for (k,) in self._con.execute("SELECT key FROM changed ORDER BY key")]

    def chunks(self) -> list[ChunkRow]:
        """The shared chunks, in order (none before the first merge)."""
        rows = self._con.execute(
            "SELECT first, last, name, digest FROM chunks ORDER BY seq"
        ).fetchall()
        return [ChunkRow(str(f), str(la), str(n), str(d)) for f, la, n, d in rows]

    def rows_after(self, key: bytes | None) -> Iterator[tuple[bytes, int, str, str]]:
        """Every entry whose key sorts after ``key`` (all: None), by key then bundle:
        (key, bundle, term, entry), read as they are asked for."""
        if key is None:
            cursor = self._con.execute(
                "SELECT key, bundle, term, entry FROM entries ORDER BY key, bundle"
            )
        else:
            cursor = self._con.execute(
                "SELECT key, bundle, term, entry FROM entries WHERE key > ? ORDER BY key, bundle",
                (key,),
            )
        try:
            while rows := cursor.fetchmany(64):  # (a row of a common word is kilobytes)
                yield from rows  # (BLOB, INTEGER, TEXT, TEXT: bytes, int, str, str)
        finally:
            cursor.close()

    def save_chunks(self, chunks: Iterable[ChunkRow]) -> None:
        """Keep ``chunks`` as the shared chunks made of every entry, and forget the
        changes they were made for."""
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            con.execute("DELETE FROM chunks")
            con.executemany(
                "INSERT INTO chunks (first, last, name, digest) VALUES (?, ?, ?, ?)",
                ((c.first, c.last, c.name, c.digest) for c in chunks),
            )
            con.execute("DELETE FROM changed")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
