"""The build manifest: what the last build read and wrote, kept in the cache folder.

It is read and written by every build, so its cost grows with the archive: it is JSON
Lines, a header line then one line per source file (a JSON array, sorted by file name).
A source whose state did not change keeps the very line it was read from, so appending
to one session re-encodes one line, not the archive. Any line that does not parse, or
does not have the expected shape, or a header whose ``rows_crc32`` is not the checksum of
the lines (the rows are then trusted without checking each), makes the whole manifest
unusable: the build then
starts from nothing (reads every file), which is always correct.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..write import atomic_write
from .graph import Summary
from .staleness import MANIFEST_FORMAT as FORMAT

if TYPE_CHECKING:
    from .context import Warm


@dataclass(frozen=True, slots=True)
class SourceState:
    """What the manifest remembers of one source file."""

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
    refs: list[str] = field(default_factory=list)
    """Session references written in it (``#id``, ``session:name``)."""
    facts_key: str = ""
    """Key of the facts about other sessions its pages were rendered with."""
    outputs: dict[str, str] = field(default_factory=dict)
    """Files it produced (path relative to the site → sha256)."""
    digest: str = ""
    """The summary's key (:func:`.staleness.summary_key`: its index row's cache key),
    computed when it was made."""
    warnings: list[str] = field(default_factory=list)
    """What the user is told about the file each build (name mismatch, a secret in a name)."""
    events_key: str = ""
    """:func:`.staleness.archive_rows_key` of the summary ("" without one), computed when
    it was made: a build does not hash every session's errors and decisions again."""
    slot: int = 0
    """:func:`.index.row_slot` of the session (0 without a summary): the
    index's and the archive pages' row shard of the session is ``slot % count``."""

    def to_row(self, name: str, summary_row: list[Any] | None = None) -> list[Any]:
        """The manifest line of this state (JSON values only: lists, never tuples);
        ``summary_row``: its summary's row when the caller has it."""
        if summary_row is None and self.summary is not None:
            summary_row = self.summary.to_row()
        return [
            name,
            self.size,
            self.mtime_ns,
            self.sha256,
            self.failure,
            self.refs,
            self.facts_key,
            self.outputs,
            self.digest,
            self.warnings,
            summary_row,
            self.events_key,
            self.slot,
        ]

    @classmethod
    def from_trusted_row(cls, row: list[Any]) -> tuple[str, SourceState]:
        """The state of :meth:`to_row`'s list, from a manifest whose checksum says its rows
        are as this publisher wrote them (they are not checked one by one: the checks cost
        as much as the decoding)."""
        (name, size, mtime_ns, sha256, failure, refs, facts_key, outputs, digest, warnings, s) = (
            row[: SUMMARY_AT + 1]
        )
        return name, cls(
            size,
            mtime_ns,
            sha256,
            Summary.from_trusted_row(s) if s is not None else None,
            failure,
            list(refs),
            facts_key,
            dict(outputs),
            digest,
            list(warnings),
            row[SUMMARY_AT + 1],
            row[SUMMARY_AT + 2],
        )


SUMMARY_AT = 10
"""Where a manifest row holds its summary's row."""


@dataclass(slots=True)
class Manifest:
    """The state of the last build."""

    key: str = ""
    """The build key (publisher version, options, theme files)."""
    site: str = ""
    """The absolute path of the site folder it describes."""
    graph: str = ""
    """The graph fingerprint of the last build."""
    scanned_at_ns: int = 0
    """When the last build started scanning (the racy-stamp rule)."""
    sources: dict[str, SourceState] = field(default_factory=dict)
    """Every source file by name."""
    extra_outputs: dict[str, str] = field(default_factory=dict)
    """Outputs of no source (the index, the theme's assets) → sha256."""
    _lines: dict[str, tuple[list[Any], str, Summary | None, SourceState]] = field(
        default_factory=dict, repr=False
    )
    """Each source's row as read, its line, its summary and its state, to write again
    unchanged."""

    @property
    def outputs(self) -> dict[str, str]:
        """Every file the last build produced → sha256."""
        produced = dict(self.extra_outputs)
        for state in self.sources.values():
            produced.update(state.outputs)
        return produced

    @classmethod
    def load(
        cls, path: Path, warm: Warm | None = None, freeze: Callable[[], None] | None = None
    ) -> Manifest:
        """The manifest at ``path``; an empty one when it is missing or unusable.

        The manifest a build of ``warm`` wrote last is returned from memory while the file
        is still the one it wrote (same inode, size and mtime): ``site watch`` does not
        decode it again at each change. It is handed out once (the build changes it); a
        build that fails before writing a new one leaves nothing kept.

        ``freeze`` (a build's :meth:`.memory.Freezer.freeze`) is called once the manifest is
        decoded, while the collector is still paused: the first collection after the pause
        would otherwise walk every object the decoding made (0.4 s at 20,000 sources).
        """
        if warm is not None and warm.manifest is not None:
            kept_path, kept_stamp, kept = warm.manifest
            warm.manifest = None
            if kept_path == os.fspath(path) and kept_stamp == _stamp(path):
                if freeze is not None:
                    freeze()
                return kept
        with _gc_paused():
            manifest = cls._read(path)
            if freeze is not None:
                freeze()
            return manifest

    @classmethod
    def _read(cls, path: Path) -> Manifest:
        try:
            text = path.read_text(encoding="utf-8")
            first, _, body = text.partition("\n")
            header = json.loads(first)
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                return cls()
            if header.get("rows_crc32") != _checksum(body):
                return cls()  # damaged or edited: a fresh start
            lines = body.split("\n")
            manifest = cls(
                key=str(header["key"]),
                site=str(header["site"]),
                graph=str(header["graph"]),
                scanned_at_ns=int(header["scanned_at_ns"]),
                extra_outputs={str(k): str(v) for k, v in dict(header["extra_outputs"]).items()},
            )
            lines = [line for line in lines if line]
            # One decode for all lines (a JSON array of them): far cheaper than one each.
            rows = json.loads("[" + ",".join(lines) + "]")
            for row, line in zip(rows, lines, strict=True):
                # The checksum matched: the rows are as written, not checked one by one
                # (the checks cost as much as the decoding).
                name, state = SourceState.from_trusted_row(row)
                manifest.sources[name] = state
                manifest._lines[name] = (row, line, state.summary, state)
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return cls()
        return manifest

    def lines_for(
        self, sources: Mapping[str, SourceState]
    ) -> dict[str, tuple[list[Any], str, Summary | None, SourceState]]:
        """The source lines of a manifest holding ``sources`` (sorted by name), each with
        the row it encodes, the summary and the state it was made from."""
        out = {}
        for name in sorted(sources):
            state = sources[name]
            kept = self._lines.get(name)
            if kept is not None and kept[3] is state:
                out[name] = kept  # the very state read (frozen): its line, not even compared
                continue
            # A summary read from this line (frozen) has that line's summary row.
            same_summary = kept is not None and kept[2] is not None and state.summary is kept[2]
            row = state.to_row(
                name, kept[0][SUMMARY_AT] if kept is not None and same_summary else None
            )
            if kept is not None and kept[0] == row:
                line = kept[1]  # unchanged: the same line, not encoded again
            else:
                line = json.dumps(row, ensure_ascii=True, separators=(",", ":"))
            out[name] = (row, line, state.summary, state)
        return out


def save_manifest(
    path: Path,
    previous: Manifest,
    *,
    key: str,
    site: str,
    graph: str,
    scanned_at_ns: int,
    publisher: str,
    sources: Mapping[str, SourceState],
    extra_outputs: Mapping[str, str],
    warm: Warm | None = None,
) -> None:
    """Write the manifest of a build atomically (lines of unchanged sources reused); kept
    in ``warm`` for the next build of a long-running caller."""
    header = {
        "format": FORMAT,
        "key": key,
        "site": site,
        "graph": graph,
        "scanned_at_ns": scanned_at_ns,
        "publisher": publisher,
        "extra_outputs": dict(sorted(extra_outputs.items())),
    }
    kept = previous.lines_for(sources)
    body = "".join([kept[name][1] + "\n" for name in kept])
    header["rows_crc32"] = _checksum(body)
    first = json.dumps(header, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    atomic_write(path, [first + "\n" + body])
    stamp = _stamp(path)
    if warm is not None and stamp is not None:
        manifest = Manifest(
            key=key,
            site=site,
            graph=graph,
            scanned_at_ns=scanned_at_ns,
            sources=dict(sources),
            extra_outputs=dict(extra_outputs),
            _lines=kept,
        )
        warm.manifest = (os.fspath(path), stamp, manifest)


def _checksum(body: str) -> int:
    """The header's ``rows_crc32``: a CRC-32 of every source line (all ASCII). It detects
    damage (a truncated or partly written file, an edited line); a cryptographic hash would
    add nothing (whoever can edit the cache can recompute any unkeyed hash) and costs 7x
    as much (0.17 s against 0.02 s for the 20 MB manifest of 20,000 sessions, twice a
    build)."""
    return zlib.crc32(body.encode("utf-8", "surrogatepass"))


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a manifest is decoded: it makes thousands of
    objects and no cycles, and the collector's repeated passes over them cost as much as
    the decoding (measured: 56 ms against 28 ms for 2,000 sources)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
