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
from collections import Counter
from dataclasses import dataclass

from ...audit import Audit
from ...gate import Tally, session_findings
from ...model import CommandPart, Session, TextualPart, ToolPart
from ...render import places, tools, view
from ...render.html import indexed_output
from ...render.text import json_text
from .. import urls
from ..urls import PageLimits
from .numbers import DIGITS, encode_number
from .terms import TermCounter

RECORD_FORMAT = 2
"""Bumped when a record's layout or what is indexed changes (part of the search key)."""

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
    norm = K1 * (1 - B + B * length / AVERAGE_LENGTH)
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
    its own): the index's filters."""
    role: str
    status: str
    failures: int
    pages: list[int]
    """:func:`..urls.page_starts`: which page holds each turn."""
    docs: list[tuple[str, list[Field]]]
    """Each turn's anchor and indexed texts, in file order (a turn's position is its
    document number in the session)."""
    postings: dict[str, tuple[int, str]]
    """Term → how many turns hold it, and those turns (position, impact) encoded as its
    postings in a bundle hold them (:func:`index_documents`): the bundle only prefixes the
    session's number, so the per-turn work is done by the render's workers."""
    aliases: dict[str, str]
    """An English word → its stem, where they differ: the client's prefix search finds
    ``runn`` in ``running`` (indexed as ``run``)."""

    def to_bytes(self) -> bytes:
        """The record as the cache keeps it (JSON)."""
        docs = [
            [anchor, [[f.kind, f.suffix, f.text] for f in fields]] for anchor, fields in self.docs
        ]
        data = [RECORD_FORMAT, self.name, self.slug, self.kind, self.role, self.status,
                self.failures, self.pages, docs, self.postings, self.aliases]  # fmt: skip
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> SessionRecord | None:
        """A record :meth:`to_bytes` wrote, or None when ``data`` is not one."""
        try:
            v = json.loads(data.decode("utf-8", "surrogatepass"))
            if not isinstance(v, list) or len(v) != 11 or v[0] != RECORD_FORMAT:
                return None
            docs = [(str(a), [Field(str(k), str(s), str(t)) for k, s, t in f]) for a, f in v[8]]
            return cls(str(v[1]), str(v[2]), str(v[3]), str(v[4]), str(v[5]), int(v[6]),
                       [int(x) for x in v[7]], docs,
                       {str(t): (int(p[0]), str(p[1])) for t, p in v[9].items()}, dict(v[10]))  # fmt: skip
        except (ValueError, TypeError, AttributeError):
            return None


def session_record(
    session: Session, limits: PageLimits | None = None, counter: TermCounter | None = None
) -> SessionRecord:
    """The record of a prepared session (``limits``: how its pages are cut, as the render
    cuts them; ``counter``: a term counter kept across sessions, so common words are split
    and stemmed once)."""
    counter = counter or TermCounter()
    audit = Audit.of(session)
    docs: list[tuple[str, list[Field]]] = []
    weights = []
    for position, anchor in enumerate(view.turn_anchors(session)):
        fields = turn_fields(session, audit, position)
        docs.append((anchor, fields))
        weights.append([(WEIGHTS[f.kind], f.text) for f in fields])
    postings, aliases = index_documents(weights, counter)
    return SessionRecord(
        name=_clean(session.session_name),
        slug=urls.slug(session.session_name),
        kind=session.kind,
        role=_clean(session.role),
        status=view.outcome_of(session.last_status),
        failures=Tally.of(session_findings(session, audit=audit)).failures,
        pages=list(urls.page_starts(session, limits)),
        docs=docs,
        postings=postings,
        aliases=aliases,
    )


def index_documents(
    documents: list[list[tuple[float, str]]], counter: TermCounter
) -> tuple[dict[str, tuple[int, str]], dict[str, str]]:
    """The postings of a session's documents (each a list of (weight, text)): term → how
    many turns hold it and those turns encoded as a bundle holds them (for each, the
    difference of its position from the previous one's and its impact:
    :mod:`.bundle`), and the aliases of its English words.

    Counted by raw word first (the byte split, C-level ``Counter``), texts of one weight
    joined: a raw word's terms are found once a session, not once a turn, and the raw words
    of one term (``run``, ``running``) are merged at the end, their weighted counts summed
    before the impact is computed (:func:`impact`, remembered by count and length)."""
    by_word: dict[bytes, list[float]] = {}
    lengths: list[int] = []
    for position, fields in enumerate(documents):
        groups: dict[float, list[str]] = {}
        for weight, text in fields:
            groups.setdefault(weight, []).append(text)
        weighted: dict[bytes, float] = {}
        length = 0
        for weight, texts in groups.items():
            raw = counter.raw_words("\n".join(texts))
            length += len(raw)
            get = weighted.get
            for word, n in Counter(raw).items():
                weighted[word] = get(word, 0.0) + n * weight
        lengths.append(length)
        for word, count in weighted.items():
            found = by_word.get(word)
            if found is None:
                by_word[word] = [position, count]
            else:
                found.append(position)
                found.append(count)
    merged: dict[str, list[float]] = {}
    aliases: dict[str, str] = {}
    for word, flat in by_word.items():
        terms = counter.terms_of(word)
        pair = counter.alias(word)
        if pair is not None:
            aliases[pair[0]] = pair[1]
        if len(terms) == 1:
            term = terms[0]
            old = merged.get(term)
            merged[term] = flat if old is None else _merge(old, flat, 1)
            continue
        for term, times in Counter(terms).items():
            old = merged.get(term)
            mine = flat if times == 1 else _merge([], flat, times)
            merged[term] = list(mine) if old is None else _merge(old, mine, 1)
    cache: dict[tuple[float, int], int] = {}
    postings: dict[str, tuple[int, str]] = {}
    for term, flat in merged.items():
        out: list[str] = []
        last = 0
        for i in range(0, len(flat), 2):
            position = int(flat[i])
            key = (flat[i + 1], lengths[position])
            quantized = cache.get(key)
            if quantized is None:
                quantized = cache[key] = impact(*key)
            encode_number(position - last, out)
            out.append(DIGITS[quantized])
            last = position
        postings[term] = (len(flat) // 2, "".join(out))
    return postings, aliases


def _merge(a: list[float], b: list[float], times: int) -> list[float]:
    """Two flat ``[position, count, …]`` lists, ordered by position, as one; counts at the
    same position summed (``b``'s multiplied by ``times``)."""
    out: list[float] = []
    i = j = 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and a[i] < b[j]):
            out += (a[i], a[i + 1])
            i += 2
        elif i >= len(a) or b[j] < a[i]:
            out += (b[j], b[j + 1] * times)
            j += 2
        else:
            out += (a[i], a[i + 1] + b[j + 1] * times)
            i += 2
            j += 2
    return out


def idf(documents: int, frequency: int) -> float:
    """BM25's IDF of a term held by ``frequency`` of ``documents`` documents (the client's
    formula, here for the tests and the benchmark)."""
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))
