"""What a search term is: the one home of the rule, for the index the build writes and, in
JavaScript, for the client that searches it (``themes/default/assets/search.js`` does the
same steps with the same tables; ``tests/test_search.py`` runs both on the same text).

A text becomes terms in four steps:

1. **Words**: maximal runs of word characters, the Unicode categories L (letters), M
   (marks) and N (numbers), as :data:`WORD_RANGES` lists them (frozen at Unicode 14, so the
   index and the client agree whatever Unicode version either runs). Everything else,
   underscore and apostrophe included, separates words: ``parse_config`` is ``parse`` and
   ``config``.
2. **Folding**: NFKC, then lower case, final sigma as sigma (an ASCII word is only lower
   cased: the same result, much faster).
3. **Chinese and Japanese** (:data:`CJK_RANGES`: Han, kana): a run of such characters is
   written without spaces, so it becomes its character bigrams, and its last character
   alone (so that each character starts a term: a one-character query finds it by prefix).
4. **Stemming**: a word of ASCII letters only is stemmed by Snowball's English stemmer
   (``snowballstemmer``; the client runs the same algorithm, generated from the same
   Snowball version); any other word is kept as it is. A word longer than
   :data:`MAX_WORD` characters (a base64 blob, a minified line) is not a term.

The index works on bytes for speed: an ASCII-only stretch of text is split and lower-cased
by one ``bytes.translate`` and ``split`` (some 40 MB/s on this machine), and only a run
holding non-ASCII bytes goes through the exact Unicode rules above. Both paths give the same
terms (tested).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from snowballstemmer import stemmer  # type: ignore[import-untyped]

MAX_WORD = 64
"""A folded word longer than this is not indexed (nor searched)."""

WORD_RANGES = (
    "30.9 8.19 7.19 30 8.1 2 4.1 2.2 2.16 2.1e 2.1c9 5.b f.4 8 2 12.74 2.1 3.3 2 7 2.2 2 "
    "2.13 2.52 2.8a 2.ac 2.25 3 7.28 9.2c 2 2.1 2.1 2 9.1a 5.3 1e.a 6.49 5.65 2.7 3.9 "
    "2.12 3 11.3a 3.64 f.35 5 3 3.2d 13.1b 5.a 6.17 2.5 a.49 2.80 3.9 2.12 2.7 3.1 3.15 "
    "2.6 2 4.3 3.8 3.1 3.3 9 5.1 2.4 3.b 3.5 3 2 3.2 2.5 5.1 3.15 2.6 2.1 2.1 2.1 3 2.4 "
    "5.1 3.2 4 8.3 2 8.f c.2 2.8 2.2 2.15 2.6 2.1 2.4 3.9 2.2 2.2 3 10.3 3.9 a.6 2.2 2.7 "
    "3.1 3.15 2.6 2.1 2.4 3.8 3.1 3.2 8.2 5.1 2.4 3.9 2.6 b.1 2.5 4.2 2.3 4.1 2 2.1 4.1 "
    "4.2 4.b 5.4 4.2 2.3 3 7 f.c e.c 2.2 2.16 2.f 3.8 2.2 2.3 8.1 2.2 3 3.3 3.9 9.6 2.3 "
    "2.7 2.2 2.16 2.9 2.4 3.8 2.2 2.3 8.1 7.1 2.3 3.9 2.1 e.c 2.2 2.32 2.2 2.4 6.f 3.12 "
    "2.5 2.2 2.11 4.17 2.8 2 3.6 4 5.5 2 2.7 7.9 3.1 e.39 6.e 2.9 28.1 2 2.4 2.17 2 2.16 "
    "3.4 2 2.5 3.9 3.3 21 18.1 7.13 2 2 2 5.9 2.23 5.13 2.11 2.23 a 3a.49 7.4d 3.25 2 6 "
    "3.2a 2.14c 2.3 3.6 2 2.3 3.28 2.3 3.20 2.3 3.6 2 2.3 3.e 2.38 2.3 3.42 3.2 a.13 4.f "
    "11.55 3.5 4.26b 3.10 2.19 6.4a 4.a 8.15 a.15 c.13 d.c 2.2 2.1 d.53 4 5.1 3.9 7.9 "
    "12.2 2.a 7.58 8.2a 6.45 b.1e 2.b 5.b b.27 3.4 c.2b 5.19 7.a 26.1b 5.3e 2.1c 3.a 7.9 "
    "e 9.1e 32.4c 4.9 12.8 d.73 d.37 9.9 4.30 3.8 8.2a 3.2 11.2 2.26 6.215 3.5 3.25 3.5 "
    "3.7 2 2 2 2.1e 3.34 2.6 2 4.2 2.6 4.3 3.5 5.c 6.2 2.6 74.1 3.5 6.a 7.c 34.20 12 5 "
    "3.9 2 4.4 7 2 2 2.3 2.a 3.3 6.4 5 2.39 2d7.3b 4f.15 277.1d 46d.e4 7.8 a 3.25 2 6 "
    "3.37 8 10.17 a.6 2.6 2.6 2.6 2.6 2.6 2.6 2.6 2.1f 30 1d6.2 1a.e 2.4 3.4 5.55 3.1 3.2 "
    "2.59 2.3 6.2a 2.5d 4.3 b.1f 31.f 21.9 1f.7 2.e 21.9 28.e 141.19bf 41.568c 44.2d "
    "3.10c 4.1b 15.32 2.9 2.72 26.8 3.66 3.3f 6.1 2 2.4 19.35 5 4.5 b.33 d.45 b.9 7.17 4 "
    "2.30 3.23 d.1c 4.40 f.a 7.1e 2.36 a.d 3.9 7.16 4.48 19.2 3.f 3.4 b.5 3.5 3.5 a.6 2.6 "
    "2.2a 2.d 7.7a 2.1 3.9 7.2ba3 d.16 5.30 2105.16d 3.69 27.6 d.4 6.b 2.c 2.4 2 2.1 2.1 "
    "2.6b 22.16a 13.3f 3.35 29.b 5.f 11.f 41.4 2.86 14.9 8.19 7.19 c.58 4.5 3.5 3.5 3.2 "
    "24.b 2.19 2.12 2.1 2.e 3.d 23.7a d.2c d.38 12.1 72 83.1c 4.30 10.1b 5.23 a.1d 6.2a "
    "6.1d 3.23 5.7 2.4 2b.9d 3.9 7.23 5.23 5.27 9.33 d.a 2.e 2.6 2.1 2.a 2.e 2.6 2.1 "
    "44.136 a.15 b.7 19.5 2.29 2.8 46.5 3 2.2b 2.1 4 3.16 3.1e 3.25 9.8 31.12 2.1 6.20 "
    "5.19 47.37 5.13 3.31 2.1 6.7 2.2 2.1c 3.2 5.9 18.1e 2.1f 21.7 2.1d 5.4 11.35 b.15 "
    "3.1a 6.19 18.6 51.48 38.32 e.32 8.2d 9.9 127.1e 2.29 2.1 4.1 4f.27 9.24 1c.15 2b.1b "
    "15.16 a.46 c.23 a.3b 8 e.18 8.9 7.34 2.9 5.3 9.23 3 a.44 5.3 2.c 2 5.13 c.11 2.24 7 "
    "42.6 2 2.3 2.e 2.9 8.3a 6.9 7.3 2.7 3.1 3.15 2.6 2.1 2.4 2.9 3.1 3.2 3 7 6.6 3.6 4.4 "
    "8c.4a 6.9 5.3 1f.45 2 9.9 a7.35 3.8 18.5 23.40 4 c.9 27.38 8.9 37.1a 3.e 5.b 5.6 "
    "ba.3a 66.52 d.7 3 3.7 2.1 2.1d 2.1 3.8 d.9 47.7 3.2d 3.7 2.1 1c.3e 9 9.49 4 13.48 "
    "108.8 2.2c 2.8 10.1c 6.1d 3.15 2.d 4a.6 2.1 2.2b 4 2.1 2.8 9.9 7.5 2.1 2.24 2.1 2.5 "
    "8.9 137.16 ba 10.14 2c.399 67.6e 12.c3 a4d.60 10.42e fd2.246 21ba.238 8.1e 2.9 7.4e "
    "2.9 7.1d 3.4 c.36 a.3 d.9 2.6 2.14 6.12 2b1.56 6a.4a 5.38 8.10 41.1 2.1 c.1 f.17f7 "
    "9.4d5 2b.8 22e8.3 2.6 2.1 2.122 2e.2 12.3 9.18b 905.6a 6.c 4.8 8.9 4.1 1262.2d 3.16 "
    "21f.4 4.5 9.7 3.6 1f.3 95.2 9c.13 6d.18 88.54 2.46 2.1 3 3.1 3.3 2.b 2 2.6 2.40 2.3 "
    "3.7 2.6 2.1b 2.3 2.4 2 4.6 2.153 3.18 2.18 2.1e 2.18 2.1e 2.18 2.1e 2.18 2.1e 2.18 "
    "2.7 3.31 201.36 5.31 9 f 17.4 2.e 451.1e e2.6 2.10 3.6 2.1 2.4 d6.2c 4.d 3.9 5 "
    "142.1e 12.39 4e7.6 2.3 2.1 2.e 2.c4 3.f 2a.4b 5.9 318.3a 2.2 2.3 4d.2c 2.e c3.3 2.1a "
    "2.1 2 3 2.9 2.3 2 2 7 5 2 2 2.2 2.1 2 3 2 2 2 2 2.1 2 3.3 2.6 2.3 2.3 2 2.9 2.10 6.2 "
    "2.4 2.10 245.c ae4.9 407.a6df 21.1038 8.dd 3.1681 f.1d30 c20.21d 5e3.134a aedb6.ef"
)
"""The word characters (Unicode 14 categories L, M and N) as ranges: each item is
``gap.length`` in hexadecimal, ``gap`` from the previous range's last code point (from 0
for the first), ``length`` the count after its first code point (omitted: 0). The client
holds the same string (tested)."""

CJK_RANGES = "3005-3007 3021-3029 3031-3035 3038-303c 3041-30ff 31f0-31ff 3400-4dbf 4e00-9fff f900-faff ff66-ff9f 20000-3134f"
"""Han ideographs and kana (with the iteration marks): the scripts written without spaces
between words, searched by character bigrams. Hangul is written with spaces: words."""


def decode_ranges(encoded: str) -> list[tuple[int, int]]:
    """The (first, last) code points of :data:`WORD_RANGES`' encoding."""
    ranges = []
    position = 0
    for item in encoded.split():
        gap, _, length = item.partition(".")
        first = position + int(gap, 16)
        position = first + int(length or "0", 16)
        ranges.append((first, position))
    return ranges


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges
    )


def _cjk_ranges() -> list[tuple[int, int]]:
    out = []
    for item in CJK_RANGES.split():
        first, _, last = item.partition("-")
        out.append((int(first, 16), int(last, 16)))
    return out


WORD_RE = re.compile(f"[{_char_class(decode_ranges(WORD_RANGES))}]+")
"""A word (step 1)."""
CJK_SPLIT_RE = re.compile(f"([{_char_class(_cjk_ranges())}]+)")
"""Splits a folded word into its CJK runs (odd items) and the rest (even items)."""

# Step 1 and 2 for ASCII bytes: letters lower-cased, digits kept, every other ASCII byte a
# separator; bytes of non-ASCII characters kept, so that a run holding one is split by the
# exact rules (WORD_RE) afterwards.
_TABLE = bytes(
    (c + 32 if 65 <= c <= 90 else c)
    if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c >= 128)
    else 32
    for c in range(256)
)

_STEMMER = stemmer("english")
_MEMO_LIMIT = 400_000
"""Terms of at most this many distinct raw words are remembered (then forgotten at once):
a process indexing a whole archive keeps a bounded memo."""


def fold(word: str) -> str:
    """Step 2 of one word."""
    if word.isascii():
        return word.lower()
    return unicodedata.normalize("NFKC", word).lower().replace("\u03c2", "\u03c3")


def stem(word: str) -> str:
    """Step 4 of one folded word."""
    if word.isascii() and word.isalpha():
        return str(_STEMMER.stemWord(word))
    return word


def word_terms(word: str) -> list[str]:
    """The terms of one word of step 1 (steps 2-4)."""
    folded = fold(word)
    if folded.isascii():
        pieces = [folded] if folded.isalnum() else re.findall("[a-z0-9]+", folded)
    else:
        # NFKC may turn a character into several, some of them separators ("½" is "1⁄2").
        pieces = WORD_RE.findall(folded)
    out: list[str] = []
    for piece in pieces:
        if piece.isascii():
            if len(piece) <= MAX_WORD:
                out.append(stem(piece))
            continue
        for i, run in enumerate(CJK_SPLIT_RE.split(piece)):
            if not run:
                continue
            if i % 2:
                out.extend(run[j : j + 2] for j in range(len(run) - 1))
                out.append(run[-1])
            elif len(run) <= MAX_WORD:
                out.append(stem(run))
    return out


def text_terms(text: str) -> list[str]:
    """Every term of ``text``, in order (the exact rules, one word at a time: the reference
    the fast path of :class:`TermCounter` is tested against)."""
    out: list[str] = []
    for word in WORD_RE.findall(text):
        out.extend(word_terms(word))
    return out


class TermCounter:
    """Turns texts into terms fast: split as bytes, each distinct raw word's terms found
    once and remembered (up to :data:`_MEMO_LIMIT` raw words, forgotten between sessions
    only: :meth:`start`), then every word of a text mapped to its term by one C-level
    ``map`` over the memo."""

    __slots__ = ("_aliases", "_multi", "_single")

    def __init__(self) -> None:
        self._single: dict[bytes, str] = {}
        """Raw words of exactly one term → it; of none (too long, or only symbols) → ""."""
        self._multi: dict[bytes, tuple[str, ...]] = {}
        """Raw words of several terms: CJK runs, NFKC's expansions."""
        self._aliases: dict[bytes, tuple[str, str]] = {}
        """Raw English words whose stem differs from them: (word, stem)."""

    def start(self) -> None:
        """Called before each session: forgets the memo when it is full (never within a
        session, so what a session's record holds does not depend on the sessions this
        process indexed before it)."""
        if len(self._single) + len(self._multi) >= _MEMO_LIMIT:
            self._single.clear()
            self._multi.clear()
            self._aliases.clear()

    def terms_of(self, raw: bytes) -> tuple[str, ...]:
        """The terms of one raw word of the byte split (lower-cased ASCII, or a run
        holding non-ASCII characters)."""
        one = self._single.get(raw)
        if one is not None:
            return (one,) if one else ()
        found = self._multi.get(raw)
        if found is not None:
            return found
        if raw.isascii():
            word = raw.decode("ascii")
            if len(word) > MAX_WORD:
                found = ()
            elif word.isalpha():
                found = (str(_STEMMER.stemWord(word)),)
                if found[0] != word:
                    self._aliases[raw] = (word, found[0])
            else:
                found = (word,)
        else:
            text = raw.decode("utf-8", "surrogatepass")
            found = tuple(t for w in WORD_RE.findall(text) for t in word_terms(w))
        if len(found) == 1:
            self._single[raw] = found[0]
        elif not found:
            self._single[raw] = ""
        else:
            self._multi[raw] = found
        return found

    @staticmethod
    def raw_words(text: str) -> list[bytes]:
        """The raw words of ``text`` (the byte split; :meth:`terms` gives their terms)."""
        return text.encode("utf-8", "surrogatepass").translate(_TABLE).split()

    def terms(self, raw: list[bytes]) -> list[str]:
        """The terms of raw words, in order; "" for a word of none (the caller drops it:
        the list is as long as ``raw`` unless a word has several terms)."""
        single = self._single
        try:
            return list(map(single.__getitem__, raw))
        except KeyError:
            pass
        multi = self._multi
        for word in set(raw).difference(single):
            if word not in multi:
                self.terms_of(word)
        if not multi or multi.keys().isdisjoint(raw):
            return list(map(single.__getitem__, raw))
        out: list[str] = []
        for word in raw:
            one = single.get(word)
            if one is None:
                out.extend(multi[word])
            elif one:
                out.append(one)
        return out

    def aliases(self, words: set[bytes]) -> dict[str, str]:
        """Of raw words seen by :meth:`terms`, the English words whose stem differs from
        them: word → stem."""
        known = self._aliases
        return dict(sorted(known[w] for w in words.intersection(known)))
