"""The shared term chunks: every bundle's entries of a term in one entry, in chunks that
every bundle shares, so that a query loads one chunk a word whatever the number of bundles
(at 20,000 sessions, 32 bundles: 2 files for a two-word query where a chunk a bundle made
64; docs/search.md, "How it works").

In ``search/terms/``, ``t-<hash>.js`` (named by what it holds, :data:`NAME`): a JSON array
of entries in the client's order (UTF-16 code units), each ``[term, stem, bundle, turns,
postings, bundle, turns, postings, …]``: the term, the stem it is an alias of ("" when it
is none: an English word whose stem differs, for prefix search), then for each bundle
holding it (by number, :func:`.bundle.bundle_of`) how many of its turns hold it and its
postings there (:mod:`.bundle`). ``index.js`` lists the chunks: where each starts (the
shortest beginning of its first term that sorts after the previous chunk's last) and its
name.

**Where a chunk begins** depends on its first term alone (:func:`cut_before`: a hash of
the term against its entry's size, so that a chunk holds about ``chunk_bytes``): a chunk is
a run of terms beginning at one that says so. The chunks of an archive are then a function
of its terms' entries, whatever the order they came in, and a term whose entry changed can
move only the beginning of its own chunk: an append makes again the chunks of its words (and
the chunk before one whose first word came, went or no longer begins it), reading only their
terms' entries (:func:`update_chunks`), and the result is the one a fresh build makes.

A large entry (``chunk_bytes`` or more: a word of many turns) always begins a chunk, so the
words that sort just after it stay with it: its aliases (``cache`` after its stem ``cach``)
and the longer words it begins. A prefix then finds its words in the chunk where it begins;
when a large entry ended its chunk instead (until 5 December 2026), the next chunk, often
another large word's, had to be read for the aliases alone (87 KB a prefix at 100,000
sessions of ``benchmarks/scale.py``).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .bundle import content_name_of, js_order, script_bytes
from .store import ChunkRow

FOLDER = "terms"
"""The chunks' folder under ``search/`` (and the name the client's loader gives them)."""
NAME = 12
"""The characters of a chunk's :func:`.bundle.content_name_of` (60 bits: two chunks of one
name among 2,000 once in 10^11 builds; :func:`update_chunks` refuses it)."""

Row = tuple[bytes, int, str, str]
"""An entry as :meth:`.store.TermEntries.rows_after` gives it: (key, bundle, term, entry)."""


def cut_before(term: str, size: int, gap: int) -> bool:
    """Whether a chunk begins at ``term``, whose entry is ``size`` bytes: a hash of the
    term against the entry's share of ``gap`` (the mean bytes of a chunk), so a term of
    ``gap`` bytes or more always begins one (but the first)."""
    return zlib.crc32(term.encode("utf-8", "surrogatepass")) * gap < size << 32


def entries(rows: Iterable[Row]) -> Iterator[tuple[bytes, str, str]]:
    """The shared entries of ``rows`` (by key, then bundle): (key, term, entry as JSON)."""
    key: bytes | None = None
    term = ""
    stem = '""'
    parts: list[str] = []
    for k, bundle, text, entry in rows:
        if k != key:
            if key is not None:
                made = _entry(term, stem, parts)
                parts = []  # (not held while the entry is: a word of every session is large)
                yield key, term, made
            key, term, stem, parts = k, text, '""', []
        if entry.startswith("["):
            parts.append(f",{bundle},{entry[1:-1]}")
        else:
            stem = entry
    if key is not None:
        yield key, term, _entry(term, stem, parts)


def _entry(term: str, stem: str, parts: list[str]) -> str:
    # A term of letters and digits only (most) is its JSON string as it is.
    quoted = f'"{term}"' if term.isalnum() else json.dumps(term, ensure_ascii=False)
    return f"[{quoted},{stem}{''.join(parts)}]"


@dataclass(slots=True)
class _Chunk:
    """A chunk being filled."""

    first: str = ""
    last: str = ""
    held: list[str] = field(default_factory=list)


def chunk_entries(
    shared: Iterable[tuple[bytes, str, str]],
    chunk_bytes: int,
    emit: Callable[[str, bytes], None],
    stop: Callable[[bytes], bool] = lambda key: False,
) -> Iterator[ChunkRow]:
    """The chunks of ``shared`` entries (in order), each file handed to ``emit`` (its name
    with ``.js``, its bytes) as it is made; after each chunk that ends at a cut (the next
    term begins one), ``stop`` is asked of its last key (True: no more are made; that next
    term and the entries after it are not kept)."""
    chunk = _Chunk()
    last = b""
    for key, term, entry in shared:
        if chunk.held and cut_before(term, len(entry), chunk_bytes):
            yield _made(chunk, emit)
            if stop(last):
                return
        if not chunk.held:
            chunk.first = term
        chunk.held.append(entry)
        chunk.last = term
        last = key
    if chunk.held:
        yield _made(chunk, emit)


def _made(chunk: _Chunk, emit: Callable[[str, bytes], None]) -> ChunkRow:
    # In UTF-8 bytes, copied once: a word of every session is a large entry (a chunk with
    # a Chinese word in it is two bytes a character as a string).
    payload = bytearray(b"[")
    for i, entry in enumerate(chunk.held):
        if i:
            payload += b","
        payload += entry.encode("utf-8", "surrogatepass")
    payload += b"]"
    chunk.held.clear()
    name = f"t-{content_name_of(FOLDER, 't', payload, NAME)}"
    body = script_bytes(FOLDER, "t", name, payload)
    del payload
    emit(f"{name}.js", body)
    # What tells two chunks of one name apart: a hash of the file, beside the name's.
    digest = hashlib.blake2b(body, digest_size=16).hexdigest()
    return ChunkRow(chunk.first, chunk.last, name, digest)


def update_chunks(
    old: list[ChunkRow],
    changed: list[bytes],
    rows_after: Callable[[bytes | None], Iterator[Row]],
    chunk_bytes: int,
    emit: Callable[[str, bytes], None],
) -> list[ChunkRow]:
    """The chunks of every entry now (``rows_after``: the entries after a key, all for
    None), given the chunks ``old`` made before and the keys of the terms whose entries
    changed since (``changed``, in order): the old chunks that hold no changed term are
    kept as they are; from the start of each that does (or of the one before, when the
    term is or would be its first and the chunk no longer begins where it did: whether a
    chunk begins there is the term's to say), chunks are made again until one ends where
    an old one ended beyond every changed term read so far (or the terms end).
    The same chunks as :func:`chunk_entries` of every entry (tested), the new files handed
    to ``emit``."""
    if not old:
        return list(chunk_entries(entries(rows_after(None)), chunk_bytes, emit))
    if not changed:
        return list(old)
    ends = [js_order(c.last) for c in old]
    firsts = [js_order(c.first) for c in old]
    ended = {key: i for i, key in enumerate(ends[:-1])}  # every chunk but the last
    # The old chunk holding each changed key: the first whose last key is at or after it
    # (after every end, the last one); and the one before it when the key is at or before
    # its first key (the key's entry says whether a chunk begins there) and the chunk no
    # longer begins where it did.
    touched_set: set[int] = set()
    at_first: set[int] = set()
    for key in changed:
        at = min(bisect_left(ends, key), len(old) - 1)
        touched_set.add(at)
        if at and key <= firsts[at]:
            at_first.add(at)
    for at in at_first:
        if not _begins_still(old[at], ends[at - 1], rows_after, chunk_bytes):
            touched_set.add(at - 1)
    touched = sorted(touched_set)
    out: list[ChunkRow] = []
    i = 0
    for first in touched:
        if first < i:
            continue  # made again with the chunks before it
        out.extend(old[i:first])
        resume = _Resume(ended, first)
        rows = rows_after(ends[first - 1] if first else None)
        try:
            out.extend(chunk_entries(entries(rows), chunk_bytes, emit, resume.stop))
        finally:
            _close(rows)
        i = resume.at
    out.extend(old[i:])
    names: dict[str, str] = {}
    for chunk in out:
        if names.setdefault(chunk.name, chunk.digest) != chunk.digest:
            raise RuntimeError(
                f"search: two term chunks hash to one name, {chunk.name} (a 60-bit "
                "collision, never seen): please report it"
            )
    return out


def _begins_still(
    chunk: ChunkRow,
    before: bytes,
    rows_after: Callable[[bytes | None], Iterator[Row]],
    chunk_bytes: int,
) -> bool:
    """Whether an old chunk still begins where it did: its first term is still the first
    after ``before`` (the last key of the chunk before it) and still begins a chunk."""
    rows = rows_after(before)
    try:
        for _key, term, entry in entries(rows):
            return term == chunk.first and cut_before(term, len(entry), chunk_bytes)
        return False
    finally:
        _close(rows)


def _close(rows: Iterator[Row]) -> None:
    """Let go of ``rows`` read in part (a generator over a SQLite cursor is closed)."""
    close = getattr(rows, "close", None)
    if close is not None:
        close()


@dataclass(slots=True)
class _Resume:
    """Where the old chunks are kept again after a run made anew from chunk ``first``:
    after the first new chunk that ends where an old one from ``first`` on ended (the
    entries after it are those the old chunks after it hold, but for the changed ones,
    whose chunks are made again in their turn); at the end of the old ones when none
    does."""

    ended: dict[bytes, int]
    """The last key of each old chunk but the last (each ends at a cut) → its index."""
    first: int
    at: int = 1 << 62
    """The old chunk to keep from (past them all until one is found)."""

    def stop(self, key: bytes) -> bool:
        index = self.ended.get(key)
        if index is None or index < self.first:
            return False
        self.at = index + 1
        return True


def separators(chunks: list[ChunkRow]) -> list[str]:
    """Where each chunk starts, as ``index.js`` says it: "" for the first, then the
    shortest beginning of its first term that sorts after the previous chunk's last (a
    query word is in the last chunk whose beginning sorts at or before it)."""
    out = []
    for i, chunk in enumerate(chunks):
        out.append(_separator(chunks[i - 1].last, chunk.first) if i else "")
    return out


def _separator(before: str, first: str) -> str:
    key = js_order(before)
    for end in range(1, len(first) + 1):
        if js_order(first[:end]) > key:
            return first[:end]
    return first
