"""The build manifest: what the last build read and wrote, kept in the cache folder.

It is read and written by every build, so its cost must not grow with what an append
touches. It is three kinds of file:

- ``manifest.jsonl``: one header line: the build key, the graph's key, when the last scan
  began, the outputs of no source, and the names of the shard files below.
- ``manifest.d/briefs-<shard>-<crc32>.jsonl``: one short line per source file of a shard
  (sorted by file name), its :class:`Brief`: the stamp, the shard, and the few facts of its
  summary that every build needs of every session (name, kind, role, times, the keys of
  its index row and archive rows, its activity on the chart, the stamp of its folder in
  the site). Every build reads them all (a ``site build`` compares every stamp).
- ``manifest.d/<shard>-<crc32>.jsonl``: the full states (:class:`SourceState`: summary,
  references, outputs...) of the sources of one shard. A shard is decoded only when one of
  its states is used (:class:`States`).

There are as many shards as the index has row shards (the build says how many:
:func:`.index.row_shard_count`), and a session's shard is its row shard (its row slot
modulo the count), so the sessions whose rows an append makes again are one shard. Each
shard file is named by the checksum of its content and written again only when one of its
lines changed: an append writes one brief file, one or two state files and the header,
whatever the archive's size.

A header that does not parse, or a brief file that is missing, does not match its
checksum or holds a line that does not parse, makes the whole manifest unusable: the build
then starts from nothing (reads every file), which is always correct. A state file that is
missing or does not match its checksum is found only when it is decoded, during a build:
:class:`ManifestDamaged` is raised, and the build starts again without a manifest
(:func:`.build.build_site`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import operator
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..write import atomic_write
from .activity import contribution
from .graph import Summary
from .staleness import MANIFEST_FORMAT as FORMAT

if TYPE_CHECKING:
    from .context import Warm


class ManifestDamaged(Exception):
    """A shard file of the manifest is missing or is not what the header says."""


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
    site: tuple[int, int] = (0, 0)
    """The stamp (inode, mtime_ns) of the session's folder in the site after the build that
    last wrote it (:func:`.staleness.folder_stamp`; (0, 0): none)."""

    def __reduce__(self) -> tuple[type[SourceState], tuple[Any, ...]]:
        """Pickled as its values in field order (see :meth:`.graph.Summary.__reduce__`):
        a full build's scan results come from the pool this way."""
        return (SourceState, _STATE_VALUES(self))

    def to_row(self, name: str) -> list[Any]:
        """The shard line of this state (JSON values only: lists, never tuples)."""
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
            self.summary.to_row() if self.summary is not None else None,
            self.events_key,
            self.slot,
            list(self.site),
        ]

    @classmethod
    def from_trusted_row(cls, row: list[Any]) -> tuple[str, SourceState]:
        """The state of :meth:`to_row`'s list, from a shard whose checksum says its rows
        are as this publisher wrote them (they are not checked one by one)."""
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
            (row[SUMMARY_AT + 3][0], row[SUMMARY_AT + 3][1]),
        )

    def shard(self, name: str, count: int) -> int:
        """The shard file of this state among ``count``: its session's row shard, or a
        hash of the file name for a file that does not load."""
        if self.summary is not None:
            return self.slot % count
        return zlib.crc32(name.encode("utf-8", "surrogatepass")) % count


_STATE_VALUES = operator.attrgetter(*SourceState.__dataclass_fields__)
SUMMARY_AT = 10
"""Where a shard row holds its summary's row."""
_FIELDS = 25
"""How many values a brief line holds (:class:`Brief`'s fields)."""


class Brief(NamedTuple):
    """What every build needs of every source, kept apart from its full state so that an
    append does not decode the states of the sessions it does not touch. Its manifest line
    is its fields as a JSON array."""

    file_name: str
    """The source file's name."""
    size: int
    """:attr:`SourceState.size`."""
    mtime_ns: int
    """:attr:`SourceState.mtime_ns`."""
    shard: int
    """:meth:`SourceState.shard`."""
    loaded: bool
    """True when the file loads (it has a summary)."""
    name: str
    """The session's name ("" when it does not load), and the fields below: its summary's
    (empty without one)."""
    kind: str
    role: str
    created_at: str
    updated_at: str
    parent_id: str
    digest: str
    """:attr:`SourceState.digest`."""
    events_key: str
    """:attr:`SourceState.events_key`."""
    facts_key: str
    """:attr:`SourceState.facts_key`: when the graph changed, each session's page facts are
    compared with it without decoding its state."""
    slot: int
    """:attr:`SourceState.slot`."""
    errors: int
    """How many rows it has on the Failures page (``len(summary.failure_events)``)."""
    decisions: int
    """How many rows it has on the Decisions page."""
    redacted: int
    """:attr:`.graph.Summary.redacted`."""
    day: str
    """Its :func:`.activity.contribution`: day, outcome, the days of its errors."""
    outcome: str
    error_days: str
    site_ino: int
    """:attr:`SourceState.site`."""
    site_mtime_ns: int
    warnings: list[str]
    """:attr:`SourceState.warnings` (told each build)."""
    links: list[Any] | None
    """What the session says of others, when it says anything: ``[sub_sessions, spawns,
    refs]`` as JSON lists (its summary's declared sub-sessions, the (named session, role,
    timestamp, href) of its
    delegate calls, :attr:`SourceState.refs`); None when all three are empty, as for most
    sessions. With these, the graph's key and every session's page facts are made of
    briefs alone: a build that adds a session decodes no state for them."""

    @classmethod
    def of(cls, name: str, state: SourceState, count: int) -> Brief:
        """The brief of ``name``'s ``state``, in a manifest of ``count`` shards."""
        s = state.summary
        shard = state.shard(name, count)
        ino, mtime = state.site
        if s is None:
            return cls(name, state.size, state.mtime_ns, shard, False, "", "", "", "", "", "",
                       "", "", "", 0, 0, 0, 0, "", "", "", ino, mtime, list(state.warnings), None)  # fmt: skip
        day, outcome, error_days = contribution(s)
        links = (
            [list(s.sub_sessions), [list(spawn) for spawn in s.spawns], list(state.refs)]
            if s.sub_sessions or s.spawns or state.refs
            else None
        )
        return cls(
            name,
            state.size,
            state.mtime_ns,
            shard,
            True,
            s.name,
            s.kind,
            s.role,
            s.created_at,
            s.updated_at,
            s.parent_id,
            state.digest,
            state.events_key,
            state.facts_key,
            state.slot,
            len(s.failure_events),
            len(s.decision_events),
            s.redacted,
            day,
            outcome,
            error_days,
            ino,
            mtime,
            list(state.warnings),
            links,
        )


BRIEF_INPUTS = frozenset(
    {
        "size",
        "mtime_ns",
        "summary",
        "digest",
        "events_key",
        "facts_key",
        "slot",
        "site",
        "warnings",
        "refs",
    }
)
"""The :class:`SourceState` fields :meth:`Brief.of` reads (a state whose other fields
change keeps its brief: :meth:`Sources.amend`)."""
_COPIED = frozenset({"facts_key", "site"})
"""The :data:`BRIEF_INPUTS` a brief holds as they are (:meth:`Sources.amend` copies them)."""


def brief_of(summary: Summary) -> Brief:
    """The brief of a summary made outside a build (its keys computed here)."""
    from .index import row_slot
    from .staleness import archive_rows_key, summary_key

    state = SourceState(
        0,
        0,
        "",
        summary,
        None,
        digest=summary_key(summary),
        events_key=archive_rows_key(summary),
        slot=row_slot(summary.name),
    )
    return Brief.of(summary.file_name, state, 1)


class States(Mapping[str, SourceState]):
    """The last build's states by file name, each shard file decoded on first use."""

    def __init__(
        self,
        briefs: Mapping[str, Brief],
        folder: Path | None = None,
        files: Mapping[int, str] | None = None,
        decoded: Mapping[str, SourceState] | None = None,
        count: int = 1,
    ) -> None:
        self.briefs = briefs
        """Every source's brief."""
        self.folder = folder
        """Where the shard files are."""
        self.files = dict(files or {})
        """Shard → its file's name."""
        self.count = count
        """How many shards the states are spread over."""
        self._decoded: dict[str, SourceState] = dict(decoded or {})
        self._loaded: set[int] = set()

    def __getitem__(self, name: str) -> SourceState:
        state = self._decoded.get(name)
        if state is None:
            brief = self.briefs[name]  # KeyError for an unknown name
            self._load(brief.shard)
            state = self._decoded.get(name)
            if state is None:
                raise ManifestDamaged(f"{name}: not in its shard file")
        return state

    def __contains__(self, name: object) -> bool:
        return name in self.briefs

    def __iter__(self) -> Iterator[str]:
        return iter(self.briefs)

    def __len__(self) -> int:
        return len(self.briefs)

    def decoded(self, name: str) -> SourceState | None:
        """The state of ``name`` if its shard was decoded, else None (nothing is read)."""
        return self._decoded.get(name)

    def outputs_of(
        self, names: Iterable[str], keep: bool = True
    ) -> Iterator[tuple[str, dict[str, str]]]:
        """Each of ``names`` with its outputs, in no particular order, a shard at a time.
        ``keep``: the shards decoded for this stay decoded, as any use of a state leaves
        them; else they are not kept (a build under another key asks this of every source
        to find what to remove, and reads none of them again: holding every state would
        add 40 MB at 20,000 sessions)."""
        by_shard: dict[int, list[str]] = {}
        for name in names:
            state = self._decoded.get(name)
            if state is not None:
                yield name, state.outputs
            else:
                by_shard.setdefault(self.briefs[name].shard, []).append(name)
        for shard, members in sorted(by_shard.items()):
            if keep:
                self._load(shard)
            decoded = self._decoded if keep else self._decode(shard)
            for name in members:
                state = decoded.get(name)
                if state is None:
                    raise ManifestDamaged(f"{name}: not in its shard file")
                yield name, state.outputs

    def _load(self, shard: int) -> None:
        if shard in self._loaded:
            return
        self._loaded.add(shard)
        for name, state in self._decode(shard).items():
            self._decoded.setdefault(name, state)

    def lines_of(self, shard: int) -> dict[str, str]:
        """The lines of one shard file (checked against its CRC) by file name, each as
        written: a save that writes the shard again copies its unchanged states' lines
        from here instead of encoding them (the lines are not kept when a shard is
        decoded: 20 MB at 20,000 sessions once every state is)."""
        decoder = json.JSONDecoder()
        found: dict[str, str] = {}
        try:
            for line in self._lines(shard):
                name = decoder.raw_decode(line, 1)[0]  # the row's first value
                if not isinstance(name, str):
                    raise ManifestDamaged(f"shard {shard}: a row without a name")
                found[name] = line
        except ValueError as exc:
            raise ManifestDamaged(f"shard {shard}: {exc}") from exc
        return found

    def _lines(self, shard: int) -> list[str]:
        """The lines of one shard file, checked against the CRC its name holds."""
        file = self.files.get(shard)
        if file is None or self.folder is None:
            raise ManifestDamaged(f"shard {shard}: no file")
        try:
            data = (self.folder / file).read_bytes()
        except OSError as exc:
            raise ManifestDamaged(f"shard {shard}: {exc}") from exc
        if f"{shard:04d}-{zlib.crc32(data):08x}.jsonl" != file:
            raise ManifestDamaged(f"shard {shard}: damaged")
        return [line for line in data.decode("utf-8", "surrogatepass").split("\n") if line]

    def _decode(self, shard: int) -> dict[str, SourceState]:
        """The states of one shard file (checked against its CRC), by file name."""
        lines = self._lines(shard)
        decoded: dict[str, SourceState] = {}
        with _gc_paused():
            try:
                rows = json.loads("[" + ",".join(lines) + "]")
                del lines  # (not kept: a save copies them from the file, :meth:`lines_of`)
                for row in rows:
                    name, state = SourceState.from_trusted_row(row)
                    decoded.setdefault(name, state)
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise ManifestDamaged(f"shard {shard}: {exc}") from exc
        return decoded


class Sources(Mapping[str, SourceState]):
    """This build's state of every source file: the states set this build (``fresh``)
    over the last build's (``base``, decoded a shard at a time when used)."""

    def __init__(
        self,
        names: list[str],
        base: States,
        fresh: Mapping[str, SourceState] | None = None,
        known: frozenset[str] | None = None,
        same_names: bool = False,
    ) -> None:
        self.names = names
        """Every source file, sorted."""
        self.base = base
        """The last build's states (those of another build key: none)."""
        self.fresh: dict[str, SourceState] = dict(fresh or {})
        """The states set this build, by file name."""
        self.known = frozenset(names) if known is None else known
        """:attr:`names` as a set (given when the caller has it: ``site watch`` keeps the
        listing of its last build)."""
        self.same_names = same_names
        """True when :attr:`names` are known to be the names of ``base``'s briefs, in the
        same order (``site watch``'s kept listing: no file came or went), so that no pass
        over them is made to find out."""
        self._briefs: dict[str, Brief] = {}
        self._all: dict[str, Brief] | None = None

    def __getitem__(self, name: str) -> SourceState:
        state = self.fresh.get(name)
        if state is not None:
            return state
        if name not in self.known:
            raise KeyError(name)
        return self.base[name]

    def __setitem__(self, name: str, state: SourceState) -> None:
        self.fresh[name] = state
        self._briefs.pop(name, None)
        self._all = None

    def __contains__(self, name: object) -> bool:
        return name in self.known

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def amend(self, name: str, **fields: Any) -> None:
        """Set ``name``'s state to its state with ``fields`` replaced, keeping the brief
        made of it when no field of it is one a brief is made of (:data:`BRIEF_INPUTS`;
        the outputs a render sets), or its values copied into that brief (the facts key a
        render sets, the folder's stamp): a full build does not hold every brief twice."""
        state = dataclasses.replace(self[name], **fields)
        brief = self._briefs.get(name) if name in self.fresh else None
        if brief is None or fields.keys() & (BRIEF_INPUTS - _COPIED):
            self[name] = state
            return
        self.fresh[name] = state
        copied: dict[str, Any] = {}
        if "facts_key" in fields:
            copied["facts_key"] = state.facts_key
        if "site" in fields:
            copied["site_ino"], copied["site_mtime_ns"] = state.site
        if copied:
            self._briefs[name] = brief._replace(**copied)
            self._all = None

    def copy(self) -> Sources:
        copied = Sources(self.names, self.base, self.fresh, self.known, self.same_names)
        copied._briefs = dict(self._briefs)
        copied._all = self._all
        return copied

    def brief(self, name: str) -> Brief:
        """The brief of ``name``'s state (read from the manifest when it is the last
        build's)."""
        if name not in self.fresh:
            return self.base.briefs[name]
        brief = self._briefs.get(name)
        if brief is None:
            brief = self._briefs[name] = Brief.of(name, self.fresh[name], self.base.count)
        return brief

    def briefs(self) -> dict[str, Brief]:
        """Every source's brief, by file name in order; made once until a state is set
        (callers only read it)."""
        if self._all is None:
            old, brief, fresh = self.base.briefs, self.brief, self.fresh
            if self.same_names or list(old) == self.names:  # the last build's files: a copy
                made = dict(old)
                for name in fresh:
                    made[name] = brief(name)
            else:
                made = {name: brief(name) if name in fresh else old[name] for name in self.names}
            self._all = made
        return self._all


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
    sources: States = field(default_factory=lambda: States({}))
    """Every source file by name (decoded a shard at a time, when used)."""
    extra_outputs: dict[str, str] = field(default_factory=dict)
    """Outputs of no source (the index, the theme's assets) → sha256."""
    brief_files: dict[int, str] = field(default_factory=dict)
    """Shard → the name of its file of brief lines (:func:`brief_file`)."""
    remembered: bool = field(default=False, repr=False)
    """Handed out from a long-running caller's memory (:class:`.context.Warm`): the
    manifest its own last build wrote, not read from the file."""

    @property
    def briefs(self) -> Mapping[str, Brief]:
        """Every source's :class:`Brief`, by file name."""
        return self.sources.briefs

    @property
    def outputs(self) -> dict[str, str]:
        """Every file the last build produced → sha256 (decodes every shard)."""
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
        decoded, while the collector is still paused.
        """
        if warm is not None and warm.manifest is not None:
            kept_path, kept_stamp, kept = warm.manifest
            warm.manifest = None
            if kept_path == os.fspath(path) and kept_stamp == _stamp(path):
                if freeze is not None:
                    freeze()
                kept.remembered = True
                return kept
        with _gc_paused():
            manifest = cls._read(path)
            if freeze is not None:
                freeze()
            return manifest

    @classmethod
    def _read(cls, path: Path) -> Manifest:
        try:
            header = json.loads(path.read_bytes())
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                return cls()
            files = _named_shards(header["shards"])
            brief_files = _named_shards(header["briefs"])
            count = int(header["shard_count"])
            if count < 1 or brief_files.keys() != files.keys():
                return cls()
            folder = shard_folder(path)
            found: dict[str, Brief] = {}
            rows = 0
            for shard, file in brief_files.items():
                data = (folder / file).read_bytes()
                # A CRC-32 detects damage (a truncated or partly written file, an edited
                # line); a cryptographic hash would add nothing (whoever can edit the cache
                # can recompute any unkeyed hash).
                if brief_file(shard, data) != file:
                    return cls()  # damaged or edited: a fresh start
                # One decode for all of a file's lines (a JSON array of them): far cheaper
                # than one each. Each line ends with a newline, and none holds one (ASCII).
                body = data.decode("ascii")
                del data
                shard_rows = json.loads("[" + body[:-1].replace("\n", ",") + "]")
                del body
                # The checksum matched: the rows are as written (not checked one by one).
                if set(map(len, shard_rows)) - {_FIELDS} or set(map(_SHARD, shard_rows)) - {shard}:
                    return cls()
                found.update(zip(map(_NAME, shard_rows), map(_BRIEF, shard_rows), strict=True))
                rows += len(shard_rows)
            if len(found) != rows:
                return cls()
            # By file name, as a build lists them.
            briefs = {name: found[name] for name in sorted(found)}
            del found
            return cls(
                key=str(header["key"]),
                site=str(header["site"]),
                graph=str(header["graph"]),
                scanned_at_ns=int(header["scanned_at_ns"]),
                sources=States(briefs, folder, files, count=count),
                extra_outputs={str(k): str(v) for k, v in dict(header["extra_outputs"]).items()},
                brief_files=brief_files,
            )
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return cls()


def _named_shards(value: object) -> dict[int, str]:
    """A header's shard → file name mapping, in shard order (TypeError when it is not one)."""
    if not isinstance(value, dict):
        raise TypeError("not a mapping of shards")
    return {int(k): str(v) for k, v in sorted(value.items(), key=lambda item: int(item[0]))}


def brief_file(shard: int, data: bytes) -> str:
    """The name of the file of brief lines ``data`` of ``shard``: its shard and checksum."""
    return f"briefs-{shard:04d}-{zlib.crc32(data):08x}.jsonl"


def shard_folder(path: Path) -> Path:
    """The folder of a manifest's shard files."""
    return path.with_name(path.stem + ".d")


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
    briefs: Mapping[str, Brief] | None = None,
    fresh: Mapping[str, SourceState] | None = None,
    shard_count: int = 1,
    warm: Warm | None = None,
    same_names: bool = False,
) -> None:
    """Write the manifest of a build: the shard files whose states changed, then the brief
    lines (unchanged ones as read) and the header naming the shards, atomically; kept in
    ``warm`` for the next build of a long-running caller.

    ``sources``: every source's state this build, by file name (sorted order is not
    needed). ``briefs`` and ``fresh``, when the caller has them: every source's brief, and
    the states that are not the very ones of ``previous`` (the others are not looked at:
    their shards are kept unless a neighbour changed). ``shard_count``: how many shard
    files (when it is not the last manifest's, every brief moves and every shard is
    written). ``same_names``: the sources are known to be those of ``previous`` (no file
    came or went: none is looked for)."""
    if fresh is None:
        fresh = {
            name: state
            for name, state in sources.items()
            if previous.sources.decoded(name) is not state
        }
    if briefs is None:
        briefs = {
            name: Brief.of(name, state, previous.sources.count)
            if name in fresh
            else previous.briefs[name]
            for name, state in sources.items()
        }
    old = previous.sources
    if (
        not fresh
        and (previous.key, previous.site, previous.graph) == (key, site, graph)
        and previous.extra_outputs == extra_outputs
        and (old.folder, old.count) == (shard_folder(path), shard_count)
        and briefs.keys() == old.briefs.keys()
    ):
        # Nothing differs but the scan's time (a no-op build). Every stamp was trusted
        # against the last scan's time and stays so (a stamp the rule did not trust was
        # read, which makes a fresh state), so the file is kept as it is.
        stamp = _stamp(path)
        if warm is not None and stamp is not None:
            warm.manifest = (os.fspath(path), stamp, previous)
        return
    # A fresh brief made against another count (the last build's key differed) moves here.
    moved = {
        name: brief._replace(shard=_shard_of(name, brief, shard_count))
        for name in fresh
        if (brief := briefs[name]).shard != _shard_of(name, brief, shard_count)
    }
    if moved:
        briefs = {**briefs, **moved}
    # Only the shards of the sources set this build and of the gone ones are written (an
    # append: one), and only their members are looked up. A shard's brief file is written
    # again only when one of its briefs changed (a render that set only outputs does not).
    old_briefs = old.briefs
    gone = () if same_names else old_briefs.keys() - briefs.keys()
    dirty = {briefs[name].shard for name in fresh}
    dirty.update(old_briefs[name].shard for name in fresh if name in old_briefs)
    dirty.update(old_briefs[name].shard for name in gone)
    changed = [
        name
        for name in fresh
        if (was := old_briefs.get(name)) is None
        or (was is not briefs[name] and was != briefs[name])
    ]
    brief_dirty = {briefs[name].shard for name in changed}
    brief_dirty.update(old_briefs[name].shard for name in changed if name in old_briefs)
    brief_dirty.update(old_briefs[name].shard for name in gone)
    folder = shard_folder(path)
    folder.mkdir(parents=True, exist_ok=True)
    reshard = old.folder != folder or old.count != shard_count
    if reshard:  # none is reused
        briefs = {name: _in_shard(name, brief, shard_count) for name, brief in briefs.items()}
        dirty = brief_dirty = {brief.shard for brief in briefs.values()}
    files = {} if reshard else {k: v for k, v in old.files.items() if k not in dirty}
    brief_files = (
        {} if reshard else {k: v for k, v in previous.brief_files.items() if k not in brief_dirty}
    )
    # The unchanged states' lines as the last build wrote them (an append: the one shard
    # file read again, not its states encoded); their names are the shard's members then.
    last_lines = {} if reshard else {k: old.lines_of(k) for k in dirty if k in old.files}
    members: dict[int, list[str]] = {shard: [] for shard in dirty}
    if dirty and len(last_lines) == len(dirty):
        # Each shard's members: the last build's, moved by the sources set or gone (a
        # shard's brief and state files always have the same members).
        grouped = {shard: set(lines) for shard, lines in last_lines.items()}
        for name in gone:
            grouped[old_briefs[name].shard].discard(name)
        for name in fresh:
            if name in old_briefs:
                grouped[old_briefs[name].shard].discard(name)
            grouped[briefs[name].shard].add(name)
        members = {shard: sorted(names) for shard, names in grouped.items()}
    elif dirty:  # a shard new this build, or every one (another count): one pass
        for name in sorted(name for name, brief in briefs.items() if brief.shard in dirty):
            members[briefs[name].shard].append(name)
    changed_names = set(changed)
    for shard, shard_names in sorted(members.items()):
        if not shard_names:
            continue
        reusable = last_lines.get(shard, {})
        lines = []
        for name in shard_names:
            state = fresh.get(name)
            line = reusable.get(name) if state is None else None
            if line is None:
                state = state or sources[name]
                line = json.dumps(state.to_row(name), ensure_ascii=True, separators=(",", ":"))
            lines.append(line + "\n")
        data = "".join(lines).encode("ascii")
        file = f"{shard:04d}-{zlib.crc32(data):08x}.jsonl"
        if not (folder / file).is_file():
            atomic_write(folder / file, [data])
        files[shard] = file
        if shard in brief_dirty:
            # The lines of unchanged briefs as the last build wrote them (its brief file
            # holds its members' lines in the same order), the others encoded.
            kept_briefs = _brief_lines(folder, previous.brief_files.get(shard), reusable)
            data = "".join(
                line + "\n"
                if name not in changed_names and (line := kept_briefs.get(name)) is not None
                else json.dumps(briefs[name], ensure_ascii=True, separators=(",", ":")) + "\n"
                for name in shard_names
            ).encode("ascii")
            file = brief_file(shard, data)
            if not (folder / file).is_file():
                atomic_write(folder / file, [data])
            brief_files[shard] = file
    header = {
        "format": FORMAT,
        "key": key,
        "site": site,
        "graph": graph,
        "scanned_at_ns": scanned_at_ns,
        "publisher": publisher,
        "extra_outputs": dict(sorted(extra_outputs.items())),
        "shards": {str(k): v for k, v in sorted(files.items())},
        "briefs": {str(k): v for k, v in sorted(brief_files.items())},
        "shard_count": shard_count,
    }
    first = json.dumps(header, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    atomic_write(path, [(first + "\n").encode("utf-8")])
    _sweep_shards(
        folder,
        {*files.values(), *brief_files.values()},
        {*old.files.values(), *previous.brief_files.values()},
    )
    stamp = _stamp(path)
    if warm is not None and stamp is not None:
        states = States(dict(briefs), folder, files, count=shard_count)
        # Unchanged states stay decoded (the last build's shards are still these files).
        states._decoded = {
            name: state
            for name, state in old._decoded.items()
            if name in briefs and name not in fresh
        }
        states._decoded.update((name, sources[name]) for name in fresh)
        manifest = Manifest(
            key=key,
            site=site,
            graph=graph,
            scanned_at_ns=scanned_at_ns,
            sources=states,
            extra_outputs=dict(extra_outputs),
            brief_files=brief_files,
        )
        warm.manifest = (os.fspath(path), stamp, manifest)


def _brief_lines(folder: Path, file: str | None, members: Mapping[str, str]) -> dict[str, str]:
    """The lines of a shard's last brief file ``file`` by file name, from its last
    ``members`` (in the file's order); {} when it cannot be read or does not match them
    (then every brief is encoded)."""
    if file is None or not members:
        return {}
    try:
        lines = (folder / file).read_bytes().decode("ascii").split("\n")[:-1]
    except (OSError, ValueError):
        return {}
    names = list(members)
    if len(lines) != len(names) or not all(
        lines[i].startswith(json.dumps([names[i]], ensure_ascii=True)[:-1] + ",") for i in (0, -1)
    ):
        return {}
    return dict(zip(names, lines, strict=True))


def _shard_of(name: str, brief: Brief, count: int) -> int:
    """:meth:`SourceState.shard` from a brief."""
    if brief.loaded:
        return brief.slot % count
    return zlib.crc32(name.encode("utf-8", "surrogatepass")) % count


def _in_shard(name: str, brief: Brief, count: int) -> Brief:
    """``brief`` in its shard among ``count``: itself when it is there already (a full
    build makes its briefs for the count it saves with: none is made twice)."""
    shard = _shard_of(name, brief, count)
    return brief if brief.shard == shard else brief._replace(shard=shard)


def _sweep_shards(folder: Path, keep: set[str], previous: set[str]) -> None:
    """Remove the shard files no longer named (those of the previous manifest, or any
    other ``*.jsonl`` left by an interrupted build, when there are some)."""
    for file in previous - keep:
        with contextlib.suppress(OSError):
            (folder / file).unlink()
    if not previous:
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if entry.name.endswith(".jsonl") and entry.name not in keep:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)


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


assert len(Brief._fields) == _FIELDS
_SHARD = operator.itemgetter(Brief._fields.index("shard"))
_NAME = operator.itemgetter(Brief._fields.index("file_name"))
_BRIEF = partial(tuple.__new__, Brief)
