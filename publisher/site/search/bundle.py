"""The files of one bundle of sessions, and its term entries: a pure function of its
sessions' records, made a record at a time.

Sessions fall into ``K`` bundles by a stable hash of their folder (:func:`bundle_of`, the
same hash as the index's row shards); ``K`` is a power of two that depends only on the
number of published sessions and the size of their files (:func:`bundle_count`). A bundle is
the unit the build writes again: an append rewrites the bundle of its session, and the
shared term chunks of the words whose entries changed (:mod:`.shared`), nothing else (but
``index.js``).

Every file is a script that hands its data to the client: ``__polyglavSearch.add(bundle,
kind, name, data)`` (a script tag cannot return a value; the client owns that global). Every
file of a bundle but its meta file is named by what it holds (:func:`content_name`: a hash
of the layout, the bundle, its kind and its data), so a browser never mixes a cached old
file with a new one and a file whose bytes did not change keeps its name; the meta file is
named by the bundle's *version*, a hash of the index's key, the bundle and its records'
bytes (:func:`bundle_version`), known before the files are made. Document chunks end where
their contents say (:func:`_cut_before`), not where the bytes before them do: a turn
appended to a session changes its document chunk (a neighbour at most) and the meta, at any
size of bundle. In ``search/<bundle>/``:

- ``m-<version>.js``, the **meta**: the bundle's session and turn counts, its document
  *starts* (each document chunk's first turn: its session's number after the previous
  chunk's, and its position) with the document chunks' names, and the name of its facets
  file; every bundle's is loaded before the first query (so a query's results need no
  round of files before their texts);
- ``d-<hash>.js``, the **document chunks**: the turns' texts (for excerpts and quoted
  phrases), each chunk a run of turns of the bundle's sessions in order, with each
  session's name, folder and page starts: at least
  :attr:`..context.Tunables.search_doc_bytes` and :data:`DOC_TURNS` turns a chunk (a
  results screen loads a few turns' worth a result, whether turns are small or large),
  then ending before one turn in two (by the turn's hash), at most :data:`DOC_MOST` bytes;
  loaded only for the results shown;
- ``f-<hash>.js``, the **facets**: which sessions have each kind, role and last status
  and which have failures of their own; loaded only when a filter is set.

The bundle's **term entries** are not files of its own: each term's, in the client's order
(UTF-16 code units), with how many of the bundle's turns hold it and its postings, and
beside them the *aliases* (an English word and its stem, for prefix search), go to the
cache (:class:`.store.TermEntries`), where :mod:`.shared` merges every bundle's entries of a
term into one entry of the shared term chunks a query loads: one chunk a word, whatever
the number of bundles.

**Postings** are a string of base-64 digits: for each session holding the term, the
difference of its number from the previous one's, doubled, plus one when more than one of
its turns holds the term (then how many, less two), then for each such turn its position in
the session times 32 plus its impact (:func:`.extract.impact`, 1..31). A number is written
in digits of 5 bits, least significant first, each but the last with 32 added: a session
holding the term in one turn usually costs two or three digits (a session a few after the
previous one, a turn among its first 32).

**Memory**: the records are read one at a time; the postings of the terms go to sorted runs
of at most ``run_bytes`` (an estimate of what the run's (term, session) entries hold, each
term's text and sort key and the short postings kept once a run), spilled to a scratch file
when a bundle has more, and merged in order into the cache; a document chunk is written
once full. What a bundle's process holds does not grow with the bundle.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import json
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO

from .extract import SessionRecord, compact_json
from .numbers import DIGITS, decode_numbers, encode_number, encode_numbers

__all__ = [
    "DIGITS",
    "BundleFiles",
    "build_bundle",
    "bundle_files",
    "decode_numbers",
    "encode_numbers",
]

GLOBAL = "__polyglavSearch"
"""The client's global every index file calls."""
FORMAT = 4
"""The layout of the index's files (``index.js`` says it; the client checks it)."""
SHORT_NAME = 8
"""The characters of a bundle's file's :func:`content_name` (40 bits): every meta file,
loaded before the first query, names its bundle's document chunks."""
LONG_NAME = 20
"""... and of the second of two files of a bundle whose short names are the same (about
one bundle in ten million, at 500 files a bundle)."""
DOC_TURNS = 4
"""A document chunk holds at least this many turns (and ``doc_bytes``)..."""
DOC_MOST = 64_000
"""... and at most this many bytes (but a turn alone, however long)."""
RUN_BYTES = 8_000_000
"""What a run's entries may hold (as :class:`_Runs` estimates it) before the run is sorted
and spilled: about 80,000 (term, session) entries of short postings. Measured
(``benchmarks/search_scale.py``): the largest bundle's process peaks at 47 MB at 100,000
small sessions (64 bundles of 1,600; 45.5 MB with 128 of 780), 45 MB at 20,000."""
_ENTRY_BYTES = 104
"""An entry's own cost: its tuple and its place in the run's list."""
_STR_BYTES = 49
"""A string's own cost beyond its characters (an ASCII one's)."""
_TERM_BYTES = 300
"""A term's cost once a run (its text, its sort key, the cache entry), beyond its length."""
_SHORT = 4
"""Postings shorter than this (one turn or two, most of them) are kept once a run."""


def bundle_count(
    sessions: int, size: int, per_bundle: int, bytes_per_bundle: int, most: int
) -> int:
    """The number of bundles of an archive of ``sessions`` published sessions whose files
    weigh ``size`` bytes: the smallest power of two giving at most ``per_bundle`` sessions
    and ``bytes_per_bundle`` bytes of files a bundle, capped at ``most``. (Bytes too: a
    bundle of a few long sessions is as much work as one of thousands of small ones, and
    bundles are written in parallel.)"""
    count = 1
    while count < most and (sessions > count * per_bundle or size > count * bytes_per_bundle):
        count *= 2
    return count


def bundle_of(slot: int, count: int) -> int:
    """The bundle of the session whose :func:`..index.row_slot` is ``slot``."""
    return slot % count


def bundle_id(index: int, count: int) -> str:
    """The folder name of bundle ``index`` of ``count`` (under ``search/``)."""
    return f"b{index:03d}-of-{count:03d}"


def js_order(term: str) -> bytes:
    """The sort key giving JavaScript's string order (UTF-16 code units)."""
    return term.encode("utf-16-be", "surrogatepass")


def script(bundle: str, kind: str, name: str, data: object, payload: str | None = None) -> bytes:
    """One index file: the call that hands ``data`` (as JSON: ``payload`` when given) to
    the client."""
    if payload is None:
        payload = compact_json(data)
    return script_bytes(bundle, kind, name, payload.encode("utf-8"))


def script_bytes(bundle: str, kind: str, name: str, payload: bytes | bytearray) -> bytes:
    """:func:`script` of a payload already encoded (a large one is copied once)."""
    head = f"{GLOBAL}.add({json.dumps(bundle)},{json.dumps(kind)},{json.dumps(name)},"
    return b"".join((head.encode("utf-8"), payload, b");\n"))


def bundle_version(key: str, ident: str, doc_bytes: int) -> hashlib._Hash:
    """The hash that names a bundle's files, before its records' bytes are added to it
    (``update``, in the bundle's order; :func:`version_name` gives the name)."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT}\0{key}\0{ident}\0{doc_bytes}\0".encode())
    return digest


def content_name(ident: str, kind: str, payload: str, length: int = SHORT_NAME) -> str:
    """The name of a bundle's file of ``kind`` holding ``payload`` (but the meta file's):
    a hash of what it holds, so a file whose bytes did not change keeps its name (an append
    writes again the chunks its turn touched, not the bundle's) and a browser never mixes a
    cached old file with a new one. ``length`` characters of base 32 (lower case: a folder
    on a case-insensitive disk holds them apart), 5 bits each."""
    return content_name_of(ident, kind, payload.encode("utf-8", "surrogatepass"), length)


def content_name_of(
    ident: str, kind: str, payload: bytes | bytearray, length: int = SHORT_NAME
) -> str:
    """:func:`content_name` of a payload already encoded."""
    digest = hashlib.sha256(f"{FORMAT}\0{ident}\0{kind}\0".encode())
    digest.update(payload)
    return base64.b32encode(digest.digest()).decode("ascii")[:length].lower()


def _cut_before(slug: str, position: int) -> bool:
    """Whether a document chunk may end before turn ``position`` of session ``slug``, once
    it holds its least: one turn in two, by a hash of the turn (an appended turn moves no
    other chunk's ends)."""
    return zlib.crc32(f"{slug}\0{position}".encode("utf-8", "surrogatepass")) & 1 == 0


def version_name(digest: hashlib._Hash) -> str:
    """The version of :func:`bundle_version` once every record is in it."""
    return digest.hexdigest()[:12]


@dataclass(slots=True)
class BundleMade:
    """What :func:`build_bundle` made."""

    meta: str
    """The meta file's name (without ``.js``)."""
    documents: int
    """How many turns the bundle holds."""
    files: list[str]
    """Every file it made (``<name>.js``)."""


def build_bundle(
    ident: str,
    version: str,
    records: Iterable[SessionRecord],
    emit: Callable[[str, bytes], None],
    terms: Callable[[Iterator[tuple[bytes, str, str]]], None],
    *,
    doc_bytes: int,
    scratch: Callable[[], IO[bytes]] | None = None,
    run_bytes: int = RUN_BYTES,
) -> BundleMade:
    """Make the files of bundle ``ident`` (its meta file named by ``version``:
    :func:`bundle_version`; the others by what they hold) of ``records``, in the bundle's
    order (by folder), each handed to ``emit`` (its file name, its bytes) as soon as it is
    made; its term entries, in the client's order, handed to ``terms`` as one iterator of
    (sort key: :func:`js_order`, term, entry) (the entry as JSON: ``[turns, postings]`` for
    a term, ``"stem"`` for an alias that is no term), to be kept in the cache and merged
    with the other bundles' (:mod:`.shared`). ``scratch`` opens a file for the sorted runs
    of a bundle whose postings hold more than ``run_bytes`` (in memory without it)."""
    made: dict[str, int] = {}
    """Each file made, and a hash of its payload (two payloads of one short name: the
    second gets a long one)."""

    def add(kind: str, payload: str, name: str | None = None) -> str:
        """Write one file (named by its content unless ``name`` is given); its name."""
        if name is None:
            name = f"{kind}-{content_name(ident, kind, payload)}"
            if made.get(f"{name}.js", hash(payload)) != hash(payload):
                name = f"{kind}-{content_name(ident, kind, payload, LONG_NAME)}"
        if f"{name}.js" not in made:
            emit(f"{name}.js", script(ident, kind, name, None, payload))
            made[f"{name}.js"] = hash(payload)
        return name

    runs = _Runs(run_bytes, scratch)
    docs = _Documents(doc_bytes, lambda payload: add("d", payload))
    facets: dict[str, dict[str, list[int]]] = {"kind": {}, "role": {}, "status": {}}
    with_failures: list[int] = []
    sessions = 0
    last_slug = ""
    for number, record in enumerate(records):
        if number and record.slug <= last_slug:
            raise ValueError(f"bundle {ident}: records out of order ({record.slug})")
        last_slug = record.slug
        sessions += 1
        runs.add_record(number, record)
        docs.add_record(number, record)
        facets["kind"].setdefault(record.kind, []).append(number)
        facets["role"].setdefault(record.role, []).append(number)
        facets["status"].setdefault(record.status, []).append(number)
        if record.failures:
            with_failures.append(number)
    documents, starts = docs.finish()

    terms(runs.entries())
    facet_data: dict[str, object] = {
        name: {value: _deltas(numbers) for value, numbers in sorted(values.items())}
        for name, values in facets.items()
    }
    facet_data["failures"] = _deltas(with_failures)
    meta = {
        "sessions": sessions,
        "documents": documents,
        "starts": [encode_numbers(starts), " ".join(docs.names)],
        "facets": add("f", compact_json(facet_data)),
    }
    name = add("m", compact_json(meta), f"m-{version}")
    return BundleMade(name, documents, list(made))


class _Runs:
    """The (term, session) postings of a bundle, sorted by term (the client's order) then
    session: in memory, or in sorted runs spilled to scratch files and merged.

    A run keeps each term's text and sort key once (a term is in many sessions) and each
    short postings string once (most are one or two digits), and spills when what it holds
    passes its budget: an estimate (:data:`_ENTRY_BYTES`, :data:`_TERM_BYTES`), counted as
    entries are added, not measured."""

    __slots__ = ("_entries", "_files", "_held", "_limit", "_scratch", "_short", "_terms")

    def __init__(self, limit: int, scratch: Callable[[], IO[bytes]] | None) -> None:
        self._entries: list[tuple[bytes, int, str, int, str]] = []
        """(sort key, session number or -1 for an alias, term, turns, postings or stem)."""
        self._files: list[IO[bytes]] = []
        self._limit = limit
        self._scratch = scratch
        self._terms: dict[str, tuple[str, bytes]] = {}
        """The run's terms: each term's one text and its sort key."""
        self._short: dict[str, str] = {}
        """The run's short postings, each kept once."""
        self._held = 0
        """What the run holds, estimated."""

    def _term(self, term: str) -> tuple[str, bytes]:
        known = self._terms.get(term)
        if known is None:
            known = self._terms[term] = (term, js_order(term))
            self._held += _TERM_BYTES + 3 * len(term)
        return known

    def add_record(self, number: int, record: SessionRecord) -> None:
        entries = self._entries
        short = self._short
        term_of = self._term
        held = 0
        for term, (count, postings) in record.postings.items():
            text, key = term_of(term)
            if len(postings) < _SHORT:
                postings = short.setdefault(postings, postings)
                held += _ENTRY_BYTES
            else:
                held += _ENTRY_BYTES + _STR_BYTES + len(postings)
            entries.append((key, number, text, count, postings))
        for word, stem in record.aliases.items():
            text, key = term_of(word)
            entries.append((key, -1, text, 0, stem))
            held += _ENTRY_BYTES + _STR_BYTES + len(stem)
        self._held += held
        if self._scratch is not None and self._held >= self._limit:
            self._spill()

    def _spill(self) -> None:
        entries = self._entries
        entries.sort()
        handle = self._scratch() if self._scratch is not None else None
        assert handle is not None
        for start in range(0, len(entries), 4096):
            block = entries[start : start + 4096]
            handle.write("".join([f"{t}\t{n}\t{c}\t{p}\n" for _, n, t, c, p in block]).encode())
        handle.seek(0)
        self._files.append(handle)
        self._entries = []
        self._terms = {}
        self._short = {}
        self._held = 0

    @staticmethod
    def _read(handle: IO[bytes]) -> Iterator[tuple[bytes, int, str, int, str]]:
        term, key = "", b""  # a run's lines come by term: each term's key made once
        with handle:
            for line in handle:
                text, number, count, payload = line.decode("utf-8").rstrip("\n").split("\t")
                if text != term:
                    term, key = text, js_order(text)
                yield key, int(number), term, int(count), payload

    def entries(self) -> Iterator[tuple[bytes, str, str]]:
        """The bundle's entries in order, each with its term's sort key and its term, as
        JSON: ``[turns, postings]`` for a term, ``"stem"`` for an alias that is no term."""
        self._entries.sort()
        merged: Iterable[tuple[bytes, int, str, int, str]] = (
            heapq.merge(*(self._read(f) for f in self._files), iter(self._entries))
            if self._files
            else self._entries
        )
        term, key = "", b""
        stem: str | None = None
        out: list[str] = []
        frequency = previous = 0
        for sort_key, number, text, count, payload in merged:
            if text != term:
                if out:
                    yield key, term, f'[{frequency},"{"".join(out)}"]'
                elif stem is not None:
                    yield key, term, compact_json(stem)
                term, key, stem, out, frequency, previous = text, sort_key, None, [], 0, 0
            if number < 0:
                stem = payload
                continue
            if count == 1:
                encode_number((number - previous) * 2, out)
            else:
                encode_number((number - previous) * 2 + 1, out)
                encode_number(count - 2, out)
            out.append(payload)
            previous = number
            frequency += count
        if out:
            yield key, term, f'[{frequency},"{"".join(out)}"]'
        elif stem is not None:
            yield key, term, compact_json(stem)
        self._entries = []


class _Documents:
    """The document chunks of a bundle, each written once full."""

    __slots__ = (
        "_emit", "_last", "_least", "_segments", "_size", "_turns", "documents", "names", "starts",
    )  # fmt: skip

    def __init__(self, least: int, emit: Callable[[str], str]) -> None:
        self._least = least
        self._emit = emit
        self._segments: list[tuple[str, list[str]]] = []
        """The chunk being filled: each session's segment head and its documents."""
        self._size = 0
        self._turns = 0
        self._last = 0
        """The session of the last chunk's first turn."""
        self.documents = 0
        self.starts: list[int] = []
        """For each chunk, its first turn: its session's number after the previous
        chunk's, and its position."""
        self.names: list[str] = []
        """Each chunk's file name (without ``.js``)."""

    def add_record(self, number: int, record: SessionRecord) -> None:
        head = f"[{number},{compact_json(record.name)},{compact_json(record.slug)},{compact_json(record.pages)},"
        started = False
        for position, doc in enumerate(record.docs):
            self.documents += 1
            full = (
                self._turns >= DOC_TURNS
                and self._size >= self._least
                and _cut_before(record.slug, position)
            )
            if self._segments and (full or self._size + len(doc) > DOC_MOST):
                self._flush()
            if not self._segments:
                self.starts += [number - self._last, position]
                self._last = number
            if not self._segments or not started:
                self._segments.append((f"{head}{position},[", []))
                started = True
            self._segments[-1][1].append(doc)
            self._size += len(doc) + 1
            self._turns += 1

    def _flush(self) -> None:
        if self._segments:
            body = ",".join(f"{h}{','.join(d)}]]" for h, d in self._segments)
            self.names.append(self._emit(f"[{body}]"))
        self._segments, self._size, self._turns = [], 0, 0

    def finish(self) -> tuple[int, list[int]]:
        """Write the last chunk; the turn count and the chunks' starts."""
        self._flush()
        return self.documents, self.starts


def bundle_files(
    ident: str, records: Iterable[SessionRecord], doc_bytes: int, key: str = ""
) -> BundleFiles:
    """The files and term entries of a bundle of ``records`` (in any order) in memory: for
    tests and tools."""
    ordered = sorted(records, key=lambda r: r.slug)
    digest = bundle_version(key, ident, doc_bytes)
    for record in ordered:
        digest.update(record.to_bytes())
    files: dict[str, bytes] = {}
    terms: list[tuple[str, str]] = []

    def keep(entries: Iterator[tuple[bytes, str, str]]) -> None:
        terms.extend((term, entry) for _, term, entry in entries)

    made = build_bundle(
        ident, version_name(digest), ordered, files.__setitem__, keep, doc_bytes=doc_bytes
    )
    return BundleFiles(files, made.meta, made.documents, terms)


@dataclass(slots=True)
class BundleFiles:
    """A bundle's files in memory (:func:`bundle_files`)."""

    files: dict[str, bytes]
    """File name (in the bundle's folder) → bytes."""
    meta: str
    """The meta file's name (without ``.js``)."""
    documents: int
    """How many turns the bundle holds."""
    terms: list[tuple[str, str]]
    """Its term entries, in order: (term, entry as JSON)."""


def _deltas(numbers: Iterable[int]) -> str:
    """Increasing numbers as their differences (the first from 0), in the postings' digits."""
    out: list[str] = []
    previous = 0
    for n in numbers:
        encode_number(n - previous, out)
        previous = n
    return "".join(out)
