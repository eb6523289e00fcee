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
  its files are named by what they hold, so its version alone does not say which).

Losing any of it costs time, never a wrong index: a missing record is made again from the
session file, a missing or foreign state makes every bundle again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
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
