"""What of a session the search index holds, and the session's record.

**What is indexed** (docs/search.md): every prompt, answer, thinking block, compaction
summary, command and system note; each tool call's name, its input as its friendly view
shows it (:func:`..render.tools.shown_text`; the JSON input when it has no friendly view),
its analysis and the permission decisions matched to it; the errors placed in the turn;
and of each output what :attr:`..render.contexts.OutputView.indexed` says (a short output
whole, the last lines of a long one). Not: timestamps, sizes, a session's overview, turn
metadata, unknown fields.

A turn is one document (search results land on it); each text is a *field* of it, of a
kind that weighs in the ranking (:data:`WEIGHTS`: a prompt or an answer more than tool
output) and with the anchor suffix of the part that holds it (the result links
``#turn-7.3``).

The record of a session (:class:`SessionRecord`) is made by the render, beside the session's
pages and from the same prepared (redacted) session: its documents' texts (for excerpts)
and, for each term, the turns holding it with a quantized BM25 weight (:func:`impact`).
The bundle files are made of records only (:mod:`.bundle`).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from ...audit import Audit
from ...gate import Tally, session_findings
from ...model import CommandPart, Session, TextualPart, ToolPart
from ...render import places, tools, view
from ...render.html import indexed_output, visible_text
from ...render.text import json_text
from .. import urls
from ..urls import PageLimits
from .numbers import encode_numbers, encode_shifted
from .terms import TermCounter

RECORD_FORMAT = 4
"""Bumped when a record's layout or what is indexed changes (part of the search key)."""


def compact_json(data: object) -> str:
    """``data`` (strings, numbers, lists and dicts of them) as compact JSON, non-ASCII
    characters as they are: what ``json.dumps(data, ensure_ascii=False, separators=(",",
    ":"))`` writes (the same text for every string: tested), by msgspec's encoder, several
    times faster; a string holding a lone surrogate, which UTF-8 cannot encode, goes
    through ``json.dumps``."""
    try:
        return _encode(data).decode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

WEIGHTS = {
    "p": 3.0,  # a prompt (or a parked-ask answer)
    "a": 3.0,  # an answer
    "t": 1.5,  # thinking
    "c": 1.5,  # a command, a compaction summary
    "s": 1.0,  # a system note
    "i": 1.5,  # a tool call: its name and input as shown
    "n": 1.0,  # a tool call's analysis
    "o": 1.0,  # a tool call's output (what is indexed of it)
    "e": 1.0,  # an error or a permission decision shown in the turn
}
"""Field kinds and how much an occurrence of a term in each counts (BM25F-like). The client
reads these from the index (to pick an excerpt's field); they are defined here only."""
HALVES = {kind: round(weight * 2) for kind, weight in WEIGHTS.items()}
""":data:`WEIGHTS` in halves (whole numbers: a term's weighted count is counted exactly)."""

K1 = 1.2
B = 0.75
AVERAGE_LENGTH = 200.0
"""BM25's average document length (words): a constant, not the archive's average, so that
a document's weights do not change when other sessions are added (a bundle is a pure
function of its own sessions)."""
MAX_IMPACT = 31
"""Impacts are quantized to 1..31 (one character of the postings' encoding)."""


def impact(weighted: float, length: int) -> int:
    """A term's quantized BM25 weight in a document: its weighted count ``weighted``
    (:data:`WEIGHTS`) in a document of ``length`` words; the client multiplies it by the
    term's IDF over the whole archive."""
    return _quantized(weighted, _length_norm(length))


def _length_norm(length: int) -> float:
    """BM25's length normalization of a document of ``length`` words (:func:`impact`)."""
    return K1 * (1 - B + B * length / AVERAGE_LENGTH)


def _quantized(weighted: float, norm: float) -> int:
    """:func:`impact` of a weighted count in a document of normalization ``norm``."""
    part = weighted * (K1 + 1) / (weighted + norm)
    return max(1, min(MAX_IMPACT, round(part / (K1 + 1) * MAX_IMPACT)))


@dataclass(slots=True, frozen=True)
class Field:
    """One indexed text of a turn."""

    kind: str
    """Its kind, a key of :data:`WEIGHTS`."""
    suffix: str
    """What the turn's anchor gets to link to the part holding it (``.3``), or ""."""
    text: str
    """The text, as the page shows it (for excerpts; lone surrogates as U+FFFD)."""


def _clean(text: str) -> str:
    """``text`` without lone surrogates (a script file is UTF-8)."""
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8") if _has_surrogate(text) else text


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def turn_fields(session: Session, audit: Audit, position: int) -> list[Field]:
    """The indexed texts of the turn at ``position`` (see the module docstring)."""
    turn = session.turns[position]
    errors, decisions = places.turn_notes(session, audit, position)
    fields: list[Field] = []

    def add(kind: str, suffix: str, text: str) -> None:
        if text and not text.isspace():
            fields.append(Field(kind, suffix, _clean(text)))

    for number, part in enumerate(turn.parts, start=1):
        suffix = f".{number}"
        if isinstance(part, TextualPart):
            kind = {"user": "p", "text": "a", "thinking": "t", "system": "s"}.get(part.type)
            if kind is not None:
                add(kind, suffix, part.text)
        elif isinstance(part, CommandPart):
            add("c", suffix, part.text)
            if part.is_compaction and part.summary:
                add("c", suffix, part.summary)
        elif isinstance(part, ToolPart):
            friendly = tools.friendly(part)
            shown = tools.shown_text(friendly) if friendly is not None else []
            if friendly is None:
                shown = [json_text(part.input)] if part.input not in (None, {}, []) else []
            add("i", suffix, "\n".join([part.name, *shown]))
            for decision in decisions.get(number, []):
                p = decision.permission
                add("e", suffix, " ".join(x for x in (p.decision, p.action, p.path) if x))
            if part.output is not None:
                add("o", suffix, indexed_output(part.output))
            add("n", suffix, part.analysis)
    for note in errors:
        add("e", f"-error-{note.number}", f"{note.entry.code} {note.entry.message}")
    return fields


@dataclass(slots=True)
class SessionRecord:
    """What the index holds of one session (see the module docstring)."""

    name: str
    """The session's name."""
    slug: str
    """Its folder in the site (:func:`..urls.slug`)."""
    kind: str
    """Its kind, role, last status and failures (:attr:`publisher.gate.Tally.failures`,
    its own): the index's filters. The kind and the role as the page's filters say them
    (:func:`...render.html.visible_text`: a control or bidirectional control as an
    escape), so that a filter picked finds them."""
    role: str
    status: str
    failures: int
    pages: list[int]
    """:func:`..urls.page_starts`: which page holds each turn."""
    docs: list[str]
    """Each turn's document, in file order (a turn's position is its document number in
    the session), as the JSON a document chunk holds: ``[anchor, [[kind, suffix, text],
    …]]`` (:func:`document`; :func:`fields_of` reads it). Made once by the render's
    worker, copied as it is into the bundle's chunks."""
    postings: dict[str, tuple[int, str]]
    """Term → how many turns hold it, and those turns encoded as its postings in a bundle
    hold them (:func:`index_documents`): the bundle only prefixes the session's number, so
    the per-turn work is done by the render's workers."""
    aliases: dict[str, str]
    """An English word → its stem, where they differ: the client's prefix search finds
    ``runn`` in ``running`` (indexed as ``run``)."""

    def to_bytes(self) -> bytes:
        """The record as the cache keeps it: a line of JSON (all but the documents; the
        postings as three lists, terms, counts and encoded postings, which read back and
        are checked without a step of Python a term), then a line a document."""
        counts, postings = zip(*self.postings.values(), strict=True) if self.postings else ((), ())
        head = [RECORD_FORMAT, self.name, self.slug, self.kind, self.role, self.status,
                self.failures, self.pages, len(self.docs), self.aliases,
                [list(self.postings), counts, postings]]  # fmt: skip
        lines = [compact_json(head), *self.docs]
        return "\n".join(lines).encode("utf-8", "surrogatepass")

    @classmethod
    def from_bytes(cls, data: bytes) -> SessionRecord | None:
        """A record :meth:`to_bytes` wrote, or None when ``data`` is not one."""
        try:
            head, newline, rest = data.partition(b"\n")
            try:
                v = _decode(head)
            except msgspec.DecodeError:  # (a lone surrogate: written by json.dumps)
                v = json.loads(head.decode("utf-8", "surrogatepass"))
            if not isinstance(v, list) or len(v) != 11 or v[0] != RECORD_FORMAT:
                return None
            docs = rest.decode("utf-8", "surrogatepass").split("\n") if newline else []
            if len(docs) != v[8] or not all(d.startswith("[") for d in docs):
                return None
            terms, counts, postings = v[10]
            aliases = v[9]
            if not (
                len(terms) == len(counts) == len(postings)
                and _all_of(str, terms)
                and _all_of(int, counts)
                and _all_of(str, postings)
                and _all_of(str, aliases)
                and _all_of(str, aliases.values())
            ):
                return None
            entries = dict(zip(terms, zip(counts, postings, strict=True), strict=True))
            return cls(str(v[1]), str(v[2]), str(v[3]), str(v[4]), str(v[5]), int(v[6]),
                       [int(x) for x in v[7]], docs, entries, dict(aliases))  # fmt: skip
        except (ValueError, TypeError, AttributeError, IndexError, KeyError):
            return None


def _all_of(kind: type, items: Iterable[object]) -> bool:
    """Whether every item is exactly of type ``kind`` (checked in C: no step of Python an
    item)."""
    return set(map(type, items)) <= {kind}


def document(anchor: str, fields: list[Field]) -> str:
    """A turn's document as a record and a document chunk hold it (JSON)."""
    return compact_json([anchor, [[f.kind, f.suffix, f.text] for f in fields]])


def fields_of(doc: str) -> tuple[str, list[Field]]:
    """A document's anchor and fields (:func:`document` read back)."""
    anchor, fields = json.loads(doc)
    return str(anchor), [Field(str(k), str(s), str(t)) for k, s, t in fields]


def session_record(
    session: Session,
    limits: PageLimits | None = None,
    counter: TermCounter | None = None,
    audit: Audit | None = None,
) -> SessionRecord:
    """The record of a prepared session (``limits``: how its pages are cut, as the render
    cuts them; ``counter``: a term counter kept across sessions, so common words are split
    and stemmed once; ``audit``: the session's :class:`..audit.Audit` when the caller has
    it, as the render does)."""
    counter = counter or TermCounter()
    audit = audit or Audit.of(session)
    docs: list[str] = []
    weighted: list[list[tuple[int, str]]] = []
    for position, anchor in enumerate(view.turn_anchors(session)):
        fields = turn_fields(session, audit, position)
        docs.append(document(anchor, fields))
        weighted.append([(HALVES[f.kind], f.text) for f in fields])
    postings, aliases = index_documents(weighted, counter)
    return SessionRecord(
        name=_clean(session.session_name),
        slug=urls.slug(session.session_name),
        kind=visible_text(session.kind),
        role=visible_text(session.role),
        status=view.outcome_of(session.last_status),
        failures=Tally.of(session_findings(session, audit=audit)).failures,
        pages=list(urls.page_starts(session, limits)),
        docs=docs,
        postings=postings,
        aliases=aliases,
    )


def index_documents(
    documents: list[list[tuple[int, str]]], counter: TermCounter
) -> tuple[dict[str, tuple[int, str]], dict[str, str]]:
    """The postings of a session's documents (each a list of (weight in halves:
    :data:`HALVES`, text)): term → how many turns hold it and those turns encoded as a
    bundle holds them (for each, its position times 32 plus its impact: :mod:`.bundle`),
    and the aliases of its English words.

    The work of a word is done in C: the texts of one weight are joined and split as bytes
    (:class:`.terms.TermCounter`), their words mapped to terms by one ``map`` over the
    memo, counted by ``Counter.update`` once per half of their weight (a prompt's words
    six times, an output's twice: the weighted count, in halves), and each term's posting
    of the turn appended to its list by ``map``: Python runs once a turn and once a
    distinct count, not once a word. A turn's posting is one number, its position times 32
    plus its impact (:func:`impact` of the weighted count and the turn's length in words):
    the same string for every term of the same count in the turn."""
    counter.start()
    lists: defaultdict[str, list[str]] = defaultdict(list)
    get_list = lists.__getitem__
    append = list.append
    seen: set[bytes] = set()
    for position, fields in enumerate(documents):
        groups: dict[int, list[str]] = {}
        for halves, text in fields:
            groups.setdefault(halves, []).append(text)
        counts: Counter[str] = Counter()
        length = 0
        for halves, texts in groups.items():
            raw = counter.raw_words("\n".join(texts))
            length += len(raw)
            seen.update(raw)
            found = counter.terms(raw)
            for _ in range(halves):
                counts.update(found)
        counts.pop("", None)
        if not counts:
            continue
        norm = _length_norm(length)
        high = encode_numbers((position,)) if position else ""
        table = {h: encode_shifted(_quantized(h / 2, norm), high) for h in set(counts.values())}
        deque(map(append, map(get_list, counts), map(table.__getitem__, counts.values())), maxlen=0)
    items = lists.values()
    postings = dict(zip(lists, zip(map(len, items), map("".join, items), strict=True), strict=True))
    return postings, counter.aliases(seen)


def idf(documents: int, frequency: int) -> float:
    """BM25's IDF of a term held by ``frequency`` of ``documents`` documents (the client's
    formula, here for the tests and the benchmark)."""
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))
