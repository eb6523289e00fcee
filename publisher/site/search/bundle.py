"""The files of one bundle of sessions: a pure function of its sessions' records.

Sessions fall into ``K`` bundles by a stable hash of their folder (:func:`bundle_of`, the
same hash as the index's row shards); ``K`` is a power of two that depends only on the
number of published sessions and the size of their files (:func:`bundle_count`). A bundle is the unit the build writes
again: an append rewrites the bundle of its session, nothing else (but ``index.js``).

Every file is a script that hands its data to the client: ``__polyglavSearch.add(bundle,
kind, name, data)`` (a script tag cannot return a value; the client owns that global). Each
file's name is a hash of its bytes, so a browser never mixes a cached old file with a new
one, and a file that did not change keeps its name and is not written again. In
``search/<bundle>/``:

- ``t-<hash>.js``, the **term chunks**: the bundle's terms in the client's string order
  (UTF-16 code units), each with how many turns hold it and its postings, cut into chunks
  of about :attr:`..context.Tunables.search_chunk_bytes`; beside them the *aliases* (an
  English word and its stem, for prefix search). A query loads, in each bundle, only the
  chunks of its words;
- ``d-<hash>.js``, the **document chunks**: the turns' texts (for excerpts and quoted
  phrases), each chunk a run of turns of the bundle's sessions in order, with each session's
  name, folder and page starts; loaded only for the results shown;
- ``f-<hash>.js``, the **facets**: which sessions have each kind, role and last status and
  which have failures of their own; loaded only when a filter is set;
- ``m-<hash>.js``, the **meta**: the first term of each term chunk, the first turn of each
  document chunk, the chunks' names and the facets' file; every bundle's is loaded before
  the first query.

**Postings** are a string of base-64 digits: for each session holding the term, the
difference of its number from the previous one's, how many of its turns hold the term,
then for each such turn the difference of its position from the previous one's and its
impact (:func:`.extract.impact`, 1..31, one digit). A number is written in digits of 5
bits, least significant first, each but the last with 32 added.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from .extract import SessionRecord
from .numbers import DIGITS, decode_numbers, encode_number, encode_numbers

__all__ = ["DIGITS", "BundleFiles", "build_bundle", "decode_numbers", "encode_numbers"]

GLOBAL = "__polyglavSearch"
"""The client's global every index file calls."""


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
        payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    call = f"{GLOBAL}.add({json.dumps(bundle)},{json.dumps(kind)},{json.dumps(name)},{payload});\n"
    return call.encode("utf-8")


def named(bundle: str, kind: str, data: object) -> tuple[str, bytes]:
    """A file's name (its kind and a hash of what it holds) and bytes."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    name = f"{kind}-{hashlib.sha256(payload.encode('utf-8')).hexdigest()[:12]}"
    return name, script(bundle, kind, name, data, payload)


@dataclass(slots=True)
class BundleFiles:
    """What :func:`build_bundle` made."""

    files: dict[str, bytes]
    """File name (in the bundle's folder) → bytes."""
    meta: str
    """The meta file's name (without ``.js``)."""
    documents: int
    """How many turns the bundle holds."""


def build_bundle(
    ident: str, records: Sequence[SessionRecord], chunk_bytes: int, doc_bytes: int
) -> BundleFiles:
    """The files of bundle ``ident`` of ``records`` (in any order: sorted here by folder)."""
    records = sorted(records, key=lambda r: r.slug)
    files: dict[str, bytes] = {}

    def add(kind: str, data: object) -> str:
        name, body = named(ident, kind, data)
        files[f"{name}.js"] = body
        return name

    def add_series(kind: str, chunks: list[list[object]]) -> str:
        """Write chunks named by one hash of them all and their number (the meta file names
        the hash once, not a hash a chunk); the hash."""
        payloads = [json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in chunks]
        digest = hashlib.sha256("\n".join(payloads).encode("utf-8")).hexdigest()[:12]
        for number, (chunk, payload) in enumerate(zip(chunks, payloads, strict=True)):
            name = f"{kind}-{digest}-{number}"
            files[f"{name}.js"] = script(ident, kind, name, chunk, payload)
        return digest

    # Terms: merged over sessions, then encoded in the client's order.
    merged: dict[str, list[tuple[int, int, str]]] = {}
    aliases: dict[str, str] = {}
    for number, record in enumerate(records):
        for term, (count, turns) in record.postings.items():
            merged.setdefault(term, []).append((number, count, turns))
        aliases.update(record.aliases)
    entries: list[tuple[bytes, list[object]]] = []
    for term, sessions in merged.items():
        out: list[str] = []
        previous, frequency = 0, 0
        for number, count, turns in sessions:
            encode_number(number - previous, out)
            encode_number(count, out)
            out.append(turns)
            previous = number
            frequency += count
        entries.append((js_order(term), [term, frequency, "".join(out)]))
    for word, stem in aliases.items():
        if word not in merged:
            entries.append((js_order(word), [word, stem]))
    entries.sort(key=lambda e: e[0])
    firsts: list[str] = []
    term_chunks: list[list[object]] = []
    chunk: list[object] = []
    size = 0
    last = ""
    for _, entry in entries:
        weight = sum(len(str(x)) for x in entry) + 8
        if chunk and size + weight > chunk_bytes:
            term_chunks.append(chunk)
            chunk, size = [], 0
        if not chunk:
            firsts.append(_separator(last, str(entry[0])) if firsts else "")
        chunk.append(entry)
        last = str(entry[0])
        size += weight
    if chunk:
        term_chunks.append(chunk)
    terms_version = add_series("t", term_chunks)

    # Documents: runs of turns, in session order, each chunk about doc_bytes.
    doc_starts: list[int] = []
    doc_chunks: list[list[object]] = []
    segments: list[list[object]] = []
    size = 0
    documents = 0
    started = 0

    def flush() -> None:
        nonlocal segments, size
        if segments:
            doc_chunks.append(list(segments))
            segments, size = [], 0

    for number, record in enumerate(records):
        for position, (anchor, fields) in enumerate(record.docs):
            documents += 1
            doc = [anchor, [[f.kind, f.suffix, f.text] for f in fields]]
            weight = len(anchor) + sum(len(f.text) + 8 for f in fields) + 8
            if segments and size + weight > doc_bytes:
                flush()
            if not segments or segments[-1][0] != number:
                if not segments:
                    doc_starts += [number - started, position]
                    started = number
                segments.append([number, record.name, record.slug, record.pages, position, []])
            docs = segments[-1][5]
            assert isinstance(docs, list)
            docs.append(doc)
            size += weight
    flush()
    docs_version = add_series("d", doc_chunks)

    # Facets: the sessions of each value of each filter.
    facets: dict[str, dict[str, list[int]]] = {"kind": {}, "role": {}, "status": {}}
    with_failures: list[int] = []
    for number, record in enumerate(records):
        facets["kind"].setdefault(record.kind, []).append(number)
        facets["role"].setdefault(record.role, []).append(number)
        facets["status"].setdefault(record.status, []).append(number)
        if record.failures:
            with_failures.append(number)
    facet_data: dict[str, object] = {
        name: {value: _deltas(numbers) for value, numbers in sorted(values.items())}
        for name, values in facets.items()
    }
    facet_data["failures"] = _deltas(with_failures)
    facet_file = add("f", facet_data)
    meta = add(
        "m",
        {
            "sessions": len(records),
            "documents": documents,
            "terms": firsts,
            "termChunks": terms_version,
            "docStarts": encode_numbers(doc_starts),
            "docChunks": docs_version,
            "facets": facet_file,
        },
    )
    return BundleFiles(files, meta, documents)


def _deltas(numbers: Sequence[int]) -> str:
    """Increasing numbers as their differences (the first from 0), in the postings' digits."""
    out: list[str] = []
    previous = 0
    for n in numbers:
        encode_number(n - previous, out)
        previous = n
    return "".join(out)


def _separator(before: str, first: str) -> str:
    """The shortest beginning of ``first`` that sorts after ``before`` (in the client's
    order): what the meta file says a chunk starts with (a query word is in the last chunk
    whose beginning sorts at or before it)."""
    key = js_order(before)
    for end in range(1, len(first) + 1):
        if js_order(first[:end]) > key:
            return first[:end]
    return first
