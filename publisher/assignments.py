"""Assignments by name: a value given to a key whose name says it is a secret.

``DB_PASSWORD=…``, ``export STRIPE_API_KEY=…``, ``client_secret: …``, ``"password": "…"``,
``apiKey = '…'``, ``--token …``: the key's last word (in ``snake_case``, ``kebab-case``,
``dot.case`` or ``camelCase``, any letter case, any prefix) is one of :data:`KEY_WORDS`,
then comes ``=``, ``:``, ``:=``, ``=>`` or ``?=`` (or, after a ``--flag``, a space), then
the value: quoted, or bare up to a space or a delimiter. Only the value is replaced.

A value is taken only when it looks like a secret, not a placeholder, a reference or code
(:func:`value_ok`): ``${DB_PASSWORD}``, ``$TOKEN``, ``<your-key>``, ``changeme``,
``xxxxxxxx``, ``your-api-key-here``, ``os.environ["KEY"]``, ``settings.API_KEY``,
``get_token()``, a file path or a URL are left alone, and so is a value shorter than
:data:`MIN_LENGTH`, one made of words of letters only (``my-tls-secret``), one without a
digit or symbol (unless 16 or more characters of mixed case), or one of low entropy.

Both patterns are RE2 (linear in the text) and start at the key word, so the redactor
runs them only where one of those words occurs (:data:`TRIGGER`).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from typing import Any

import re2

from .secret_rules import shannon_entropy

KIND = "assigned-secret"
"""The kind a redacted value is counted and marked as."""

#: What the last word of a key must be (compared lower-case, separators removed).
KEY_WORDS = (
    "secret",
    "secretkey",
    "secretaccesskey",
    "privatekey",
    "apikey",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "pass",
    "token",
    "credential",
    "credentials",
    "creds",
)
MIN_LENGTH = 8
"""Shortest value taken (``hunter2`` is not; ``s3cr3t-v4lue`` is)."""
MAX_LENGTH = 512
"""Longest value taken (longer is not an assignment of a secret but of data)."""
MIN_ENTROPY = 2.5
"""A value's Shannon entropy (bits per character) must be above this."""
MIXED_CASE_LENGTH = 16
"""A value of letters only is taken when it mixes cases and is at least this long."""

#: A Set pattern (RE2, case-insensitive) occurring wherever one of the patterns can match.
TRIGGER = r"(?i)pass|pwd|secret|token|cred|api[_.-]?key|private[_.-]?key"
TRIGGER_PROBE = "pass"
"""A text :data:`TRIGGER` finds."""

_WORD = (
    r"(?i:secret(?:[_.-]?access)?[_.-]?key|secret|private[_.-]?key|api[_.-]?key"
    r"|passw(?:or)?d|passphrase|pwd|pass|token|credentials?|creds)"
)
_VALUE = r"""(?:"([^"\r\n]{8,})"|'([^'\r\n]{8,})'|([^\s"'`,;&|<>(){}\[\]]{8,}))"""
_OPERATOR = r"""["']?[ \t]*(?:=>|:=|\?=|=|:)[ \t]*"""


def _compile(pattern: str) -> re2._Regexp:
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


_ASSIGNED = _compile(f"({_WORD}){_OPERATOR}{_VALUE}")
_FLAG = _compile(f"--[A-Za-z0-9_.-]{{0,40}}?({_WORD})[ \\t]+{_VALUE}")

_OPERATOR_AFTER = re.compile(rb"[ \t]*+(?::=|=>|\?=|[:=])")
"""An operator right after a bare value: the value is the next assignment's key."""
_KEY_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_SCAN = 64
"""How far left of the key word a key's start is looked for."""
_COMPONENT_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_WORDS_ONLY_RE = re.compile(
    r"(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)(?:[_.\-/:](?:[a-z]+|[A-Z]+|[A-Z][a-z]+))*"
)
_DOTTED_RE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
_IDENTIFIER_RE = re.compile(r"[A-Za-z_]\w*")
_JSON_ESCAPE_RE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4})')
_VERSION_RE = re.compile(r"[vV]?\d+(?:\.\d+)+(?:[-+.][0-9A-Za-z.+-]*)?")
_PLACEHOLDER_WORDS = (
    "your",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "replace",
    "dummy",
    "xxxx",
    "****",
    "...",
    "…",
    "redacted",
    "insert",
    "${",
    "{{",
    "<",
    ">",
)
_PLACEHOLDER_START = ("$", "%", "{", "[", "@", "&", "#{", "(", "~", "/", "./", "../")
_FILLER = frozenset("xX*.-_•#0")


def is_placeholder(value: str) -> bool:
    """A reference, a template or a stand-in, not a secret: ``${VAR}``, ``$VAR``,
    ``%VAR%``, ``{{ x }}``, ``<your-key>``, ``changeme``, ``xxxxxxxx``, ``****``,
    ``your-api-key-here``, ``[REDACTED:…]``, a path."""
    if not value or value.startswith(_PLACEHOLDER_START):
        return True
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return True
    return set(value) <= _FILLER or len(set(value)) == 1


def _classes(value: str) -> tuple[bool, bool, bool, bool]:
    upper = lower = digit = symbol = False
    for char in value:
        if "a" <= char <= "z":
            lower = True
        elif "A" <= char <= "Z":
            upper = True
        elif "0" <= char <= "9":
            digit = True
        elif char not in "_.-":
            symbol = True
    return upper, lower, digit, symbol


def value_ok(value: str, bare: bool, key: str) -> bool:
    """Whether ``value`` given to ``key`` is taken as a secret (see the module docstring).
    ``bare``: written without quotes (then code such as ``self.token`` or ``token_value``
    is likelier than a secret, unless the key is an environment name in capitals)."""
    return _plausible(value) and _fits(value, bare, key)


def _plausible(value: str) -> bool:
    """The checks on the value alone (cheapest first)."""
    if not MIN_LENGTH <= len(value) <= MAX_LENGTH or is_placeholder(value):
        return False
    if any(char.isspace() for char in value) or "://" in value:
        return False
    if _JSON_ESCAPE_RE.search(value):
        return False  # JSON-escaped text: the redactor's decoded view sees the value
    if _WORDS_ONLY_RE.fullmatch(value) or _VERSION_RE.fullmatch(value):
        return False
    upper, lower, digit, symbol = _classes(value)
    if not (upper or lower):
        return False  # digits and punctuation: a number, a date, a rule
    if not (digit or symbol or (upper and lower and len(value) >= MIXED_CASE_LENGTH)):
        return False
    return shannon_entropy(value) > MIN_ENTROPY


def _fits(value: str, bare: bool, key: str) -> bool:
    """The checks on the value given the key."""
    if _normal(value) == _normal(key):
        return False
    if bare:
        if _DOTTED_RE.fullmatch(value):
            return False  # settings.API_KEY, self.token, os.environ
        code_key = key != key.upper()
        if code_key and _IDENTIFIER_RE.fullmatch(value) and ("_" in value or not _has_digit(value)):
            return False  # token=token_value, password=userPassword
    return True


def _has_digit(value: str) -> bool:
    return any("0" <= char <= "9" for char in value)


def _normal(text: str) -> str:
    return "".join(char for char in text.lower() if char.isalnum())


def _key_start(data: bytes, word_start: int) -> int:
    start = word_start
    limit = max(0, word_start - _KEY_SCAN)
    while start > limit and data[start - 1] in _KEY_CHARS:
        start -= 1
    while start < word_start and data[start] in b"-.":
        start += 1  # a flag's dashes, a leading dot: not part of the name
    return start


def _key_ok(data: bytes, key_start: int, word_start: int, word_end: int) -> bool:
    """The key word is the key's last component, and the key is not a reference."""
    if key_start > 0 and data[key_start - 1] in b"${":
        return False  # $TOKEN, ${PASSWORD:-default}
    if word_start > key_start:
        before, first = data[word_start - 1], data[word_start]
        camel = (0x61 <= before <= 0x7A or 0x30 <= before <= 0x39) and 0x41 <= first <= 0x5A
        if before not in b"_.-" and not camel:
            return False  # bypass=, compass:
    key = data[key_start:word_end].decode("ascii")
    parts = [p.lower() for p in _COMPONENT_RE.findall(key)]
    return any("".join(parts[i:]) in KEY_WORDS for i in range(max(0, len(parts) - 3), len(parts)))


def spans(data: bytes, cuts: Sequence[int] = ()) -> Iterator[tuple[int, int]]:
    """The byte spans of assigned secret values in ``data`` (UTF-8).

    A value that is not taken (a placeholder, a name) is looked into again, from the end
    of its key word, when it may be the key of the next assignment: quoted
    (``TOKEN="password": "…"``), or bare and followed by an operator
    (``TOKEN=DB_PASSWORD := "…"``); else the scan goes on after it. A value longer than
    :data:`MAX_LENGTH` is never looked into: each byte is scanned a bounded number of
    times.

    ``cuts`` are where a joined view of the text removed a line break (sorted offsets). A
    bare value not taken whole that runs over one may be a wrapped value glued to the
    next line's text (``KEY=abc\\`` ``def`` then an indented ``host.example``): its
    prefixes ending at a cut are tried, longest first (at most :data:`_MAX_CUTS`).
    """
    for regex in (_ASSIGNED, _FLAG):
        pos = 0
        while (match := regex.search(data, pos)) is not None:
            group = next(g for g in (2, 3, 4) if match.span(g)[0] >= 0)
            v_start, v_end = match.span(group)
            word_start, word_end = match.span(1)
            if _taken(data, word_start, word_end, v_start, v_end, group == 4):
                yield v_start, v_end
                pos = v_end
            elif group == 4 and cuts and (end := _cut_taken(data, match, cuts)) is not None:
                yield v_start, end
                pos = end
            elif v_end - v_start <= MAX_LENGTH and (
                group != 4 or _OPERATOR_AFTER.match(data, v_end) is not None
            ):
                pos = word_end
            else:
                pos = v_end


#: The most prefixes of one value tried at the cuts of a joined view.
_MAX_CUTS = 8


def _cut_taken(data: bytes, match: Any, cuts: Sequence[int]) -> int | None:
    """The end of the longest prefix of ``match``'s bare value ending at one of ``cuts``
    that is taken as a secret, or None."""
    v_start, v_end = match.span(4)
    word_start, word_end = match.span(1)
    lo = bisect_right(cuts, v_start + MIN_LENGTH - 1)
    hi = bisect_left(cuts, v_end)
    for cut in reversed(cuts[max(lo, hi - _MAX_CUTS) : hi]):
        if _taken(data, word_start, word_end, v_start, cut, True):
            return cut
    return None


def _taken(
    data: bytes, word_start: int, word_end: int, v_start: int, v_end: int, bare: bool
) -> bool:
    if bare and v_end < len(data) and data[v_end] in b"([":
        return False  # a call or a subscript: get_token(), os.environ[...]
    value = data[v_start:v_end].decode("utf-8", "surrogatepass")
    if not _plausible(value):
        return False
    key_start = _key_start(data, word_start)
    if not _key_ok(data, key_start, word_start, word_end):
        return False
    return _fits(value, bare, data[key_start:word_end].decode("ascii"))


PATTERNS = (_ASSIGNED.pattern, _FLAG.pattern)
"""Both patterns, for a union with other RE2 rules (see :mod:`.redact`)."""
