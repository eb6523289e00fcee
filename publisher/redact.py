"""Secret redaction for sharing: replace secrets with a visible ``[REDACTED:<kind>]``.

:func:`redact_session` returns a copy of a :class:`~publisher.model.Session` in which every
string reachable (turn and part fields, tool input keys and values at any depth, outputs,
``extra`` fields, errors, permissions) went through :meth:`Redactor.redact_text`. Only
``session_name``, ``session_id`` and ``file_name`` are kept as written: they are the
identifiers page paths, links and ``#id`` references are built from (see
:func:`identifier_findings` to warn about them instead).

Detection works on the text as written and on *views* of it: JSON-unescaped (``\\n``,
``\\/``, ``\\uXXXX``; twice, for JSON inside JSON), URL-decoded (``%2B``, ``%2F``, UTF-8
runs) and joined (a line break plus indentation, or a backslash-newline, removed). A
match in a view is mapped back to the span of the original text it came from, so a
JSON-escaped private key or a token wrapped over two lines is replaced whole.

Every pattern starts with a literal (so the regex engine scans for it quickly), checks
its left boundary with a fixed-width look-behind placed after the literal, and uses only
possessive or bounded quantifiers: a scan is linear in the length of the text. See
``docs/redaction.md`` for the rules and their limits.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .model import JSON, Image, Session

#: Every kind a marker can name, most specific first (the first wins when spans overlap).
KINDS = (
    "private-key",
    "anthropic",
    "openai",
    "aws-access-key",
    "aws-secret",
    "github",
    "gitlab",
    "slack-webhook",
    "slack",
    "stripe",
    "google-api-key",
    "jwt",
    "url-password",
    "bearer",
    "basic-auth",
    "listed-value",
)
_PRIO = {kind: prio for prio, kind in enumerate(KINDS)}
_LISTED = _PRIO["listed-value"]

#: Session fields kept as written: they name pages and files and are link targets.
IDENTIFIER_FIELDS = frozenset({"session_name", "session_id", "file_name"})
#: Shortest value accepted in a values file (shorter ones would redact ordinary words).
MIN_VALUE_LENGTH = 4
#: Redaction runs until nothing more is found, at most this many times per text.
MAX_PASSES = 16


def marker(kind: str) -> str:
    """The visible text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


_MARKER_RE = re.compile(r"\[REDACTED:(?:" + "|".join(map(re.escape, KINDS)) + r")\]")


# --------------------------------------------------------------------------------------
# Detection rules. A rule yields (start, end, prio) spans of the text it is given.

Span = tuple[int, int, int]
_DIGIT_RE = re.compile(r"[0-9]")
_ALPHA_RE = re.compile(r"[A-Za-z]")
_UPPER_RE = re.compile(r"[A-Z]")
_LOWER_RE = re.compile(r"[a-z]")
# ``sk-`` is generic: an OpenAI key body holds a digit, a letter and a run of 10 letters
# or digits (which rules out ``sk-some-css-class-name``). Checked inside the pattern.
_OPENAI_BODY = (
    r"(?=[A-Za-z_-]*+[0-9])(?=[0-9_-]*+[A-Za-z])(?=[A-Za-z0-9_-]*?[A-Za-z0-9]{10})"
    r"[A-Za-z0-9_-]{20,}+"
)


def _basic_ok(value: str) -> bool:
    """Basic credentials are base64 of ``user:password``."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


def _bearer_ok(value: str) -> bool:
    """A bearer token, not a word (``Bearer authentication``, ``Bearer YOUR_TOKEN``)."""
    if len(value) < 12:
        return False
    has_digit = _DIGIT_RE.search(value) is not None
    has_alpha = _ALPHA_RE.search(value) is not None
    if has_digit and has_alpha:
        return True
    return len(value) >= 32 and bool(_UPPER_RE.search(value)) and bool(_LOWER_RE.search(value))


@dataclass(frozen=True, slots=True)
class _Rule:
    """A pattern; the named group ``s`` (when present) is the secret, the rest context."""

    prio: int
    regex: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    strip_dots: bool = False

    def spans(self, text: str) -> Iterable[Span]:
        has_group = "s" in self.regex.groupindex
        if self.check is None and not self.strip_dots:
            prio = self.prio
            if has_group:
                return [(*m.span("s"), prio) for m in self.regex.finditer(text)]
            return [(*m.span(), prio) for m in self.regex.finditer(text)]
        return self._checked(text, has_group)

    def _checked(self, text: str, has_group: bool) -> Iterator[Span]:
        for match in self.regex.finditer(text):
            start, end = match.span("s") if has_group else match.span()
            if self.strip_dots:
                while end > start and text[end - 1] == ".":
                    end -= 1
            if self.check is not None and not self.check(text[start:end]):
                continue
            if end > start:
                yield start, end, self.prio


# Left boundaries. A token whose body is unbounded must not follow a character its body
# could hold (so only the first position of a run can start a match: linear time); a
# bounded one only must not follow a letter or digit.
_RUN_EDGE = "[A-Za-z0-9_-]"
_ALNUM_EDGE = "[A-Za-z0-9]"


def _token(
    kind: str, prefix: str, body: str, after: str = "", edge: str = _RUN_EDGE, tail: str = ""
) -> _Rule:
    """A token that starts with the literal ``prefix`` (plus fixed-width ``tail``)."""
    literal = re.escape(prefix) + tail
    return _Rule(_PRIO[kind], re.compile(f"{literal}(?<!{edge}{literal}){body}{after}"))


_TOK = r"[A-Za-z0-9_-]"
_NOT_TOK = r"(?![A-Za-z0-9_-])"


def _aws_secret_rules() -> list[_Rule]:
    """``aws_secret_access_key = <40 chars>`` in env, INI, YAML, JSON or CLI form."""
    secret = "[Ss][Ee][Cc][Rr][Ee][Tt]"
    value = (
        r"[_-]?[Kk][Ee][Yy][\"']?(?:[ \t]*+[:=][ \t]*+|[ \t]++)[\"']?"
        r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
    )
    rules = []
    for anchor, access in (("ccess", "[Aa]ccess"), ("CCESS", "ACCESS")):
        behind = f"(?:(?<={secret}[_-]{access})|(?<={secret}{access}))"
        rules.append(_Rule(_PRIO["aws-secret"], re.compile(anchor + behind + value)))
    return rules


def _bearer_rules() -> list[_Rule]:
    rules = []
    for word in ("Bearer", "bearer", "BEARER"):
        regex = re.compile(
            word + f"(?<![A-Za-z0-9_]{word})" + r"[ \t]++(?P<s>[A-Za-z0-9._~+/-]++=*+)"
        )
        rules.append(_Rule(_PRIO["bearer"], regex, check=_bearer_ok, strip_dots=True))
    return rules


def _basic_rules() -> list[_Rule]:
    rules = []
    for anchor, behind in (("uthorization", "[Aa]uthorization"), ("UTHORIZATION", "AUTHORIZATION")):
        regex = re.compile(
            anchor
            + f"(?<={behind})"
            + r"[\"']?[ \t]*+[:=][ \t]*+[\"']?(?:Basic|basic|BASIC)[ \t]++"
            + r"(?P<s>[A-Za-z0-9+/]{8,}+=*+)"
        )
        rules.append(_Rule(_PRIO["basic-auth"], regex, check=_basic_ok))
    return rules


# Passwords in URLs: scheme://user:password@host keeps user and host. The password runs
# from the first ':' of the authority to its last '@'. Placeholders (``${DB_PASSWORD}``,
# ``<password>``, ``****``, a marker) are left alone.
_URL_STOP = r"\s/?#\\\"'<>`"
_URL_PASSWORD_RE = re.compile(
    r"://(?<=[A-Za-z0-9]://)"
    rf"[^{_URL_STOP}@:]{{0,256}}+:"
    r"(?![$<{\[]|%\(|(?:\*++|x++|X++|\.++)@)"
    rf"(?P<s>[^{_URL_STOP}]{{1,512}}?)"
    rf"@(?=[^{_URL_STOP}@]*+(?:[{_URL_STOP}]|\Z))"
)


_RULES: tuple[_Rule, ...] = (
    _token("anthropic", "sk-ant-", _TOK + "{20,}+"),
    _Rule(_PRIO["openai"], re.compile(r"sk-(?<![A-Za-z0-9_-]sk-)(?!ant-)" + _OPENAI_BODY)),
    _token("aws-access-key", "AKIA", "[A-Z0-9]{16}", "(?![A-Za-z0-9])", _ALNUM_EDGE),
    _token("aws-access-key", "ASIA", "[A-Z0-9]{16}", "(?![A-Za-z0-9])", _ALNUM_EDGE),
    *_aws_secret_rules(),
    _token("github", "gh", "[A-Za-z0-9]{36,255}+", "(?![A-Za-z0-9_])", _ALNUM_EDGE, "[pousr]_"),
    _token("github", "github_pat_", "[A-Za-z0-9_]{22,255}+", "(?![A-Za-z0-9_])", _ALNUM_EDGE),
    *(_token("gitlab", p, _TOK + "{20,}+") for p in ("glpat-", "gldt-", "glrt-", "glptt-")),
    _Rule(
        _PRIO["slack-webhook"],
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9/_-]{16,}+)"
        ),
    ),
    _token("slack", "xox", "[A-Za-z0-9-]{10,}+", tail="[abprs]-"),
    *(
        _token("stripe", p, "[A-Za-z0-9]{16,}+", "(?![A-Za-z0-9_])")
        for p in ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_")
    ),
    _token("google-api-key", "AIza", _TOK + "{35}", _NOT_TOK, _ALNUM_EDGE),
    _token(
        "jwt",
        "eyJ",
        _TOK + r"{7,}+\." + _TOK + r"{8,}+\." + _TOK + r"*+(?:\." + _TOK + r"++){0,2}+",
    ),
    _Rule(_PRIO["url-password"], _URL_PASSWORD_RE),
    *_bearer_rules(),
    *_basic_rules(),
)

# Private key blocks: header, body of base64 lines and "Key: value" lines (plain, with
# escaped newlines, indented), then the END line. A block cut short (a truncated tool
# output) is redacted up to its last base64 run.
_PEM_KIND = r"(?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_PEM_BEGIN_RE = re.compile(r"-----BEGIN " + _PEM_KIND)
_PEM_END_RE = re.compile(r"-----END " + _PEM_KIND)
_PEM_BODY_RE = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9-]{0,40}+:[ \t](?:[^\r\n\\-]|-(?!----)){0,300}+|[A-Za-z0-9+/=]++|\s++|\\(?:[\\nrt/\"]|\r?\n))*+"
)
_B64_RUN_RE = re.compile(r"[A-Za-z0-9+/=]{16,}+")


def _private_key_spans(text: str) -> Iterator[Span]:
    prio = _PRIO["private-key"]
    pos = 0
    while True:
        begin = _PEM_BEGIN_RE.search(text, pos)
        if begin is None:
            return
        body = _PEM_BODY_RE.match(text, begin.end())
        body_end = body.end() if body else begin.end()
        run_end = -1
        for run in _B64_RUN_RE.finditer(text, begin.end(), body_end):
            run_end = run.end()
        if run_end < 0:
            pos = begin.end()
            continue
        end = _PEM_END_RE.match(text, body_end)
        stop = end.end() if end else run_end
        yield begin.start(), stop, prio
        pos = stop


def _detect(text: str, listed: tuple[re.Pattern[str], ...], rules: bool = True) -> Iterator[Span]:
    if rules:
        if "-----BEGIN " in text:
            yield from _private_key_spans(text)
        for rule in _RULES:
            yield from rule.spans(text)
    for pattern in listed:
        for match in pattern.finditer(text):
            yield match.start(), match.end(), _LISTED


# --------------------------------------------------------------------------------------
# Views: decoded or joined forms of a text, with the map back to it.

UnitSource = Callable[[], Iterable[tuple[int, int, int]]]


class _View:
    """A text derived from ``parent`` by replacing *units* (parent spans) with new text.

    The units (parent start, parent end, length in the view) are listed again from the
    parent text only when a match in this view has to be mapped back, which is rare.
    """

    __slots__ = ("_arrays", "_source", "listed", "parent", "rules", "text")

    def __init__(
        self,
        text: str,
        parent: _View | None = None,
        source: UnitSource | None = None,
        rules: bool = True,
        listed: bool = True,
    ) -> None:
        self.text = text
        self.parent = parent
        self.rules = rules
        """Whether the detection rules run on this view."""
        self.listed = listed
        """Whether the user-listed values are looked for in this view."""
        self._source = source
        self._arrays: tuple[array[int], array[int], array[int], array[int]] | None = None

    def _units(self) -> tuple[array[int], array[int], array[int], array[int]]:
        if self._arrays is None:
            ostart, oend, vstart, vend = array("q"), array("q"), array("q"), array("q")
            shift = 0
            assert self._source is not None
            for start, end, length in self._source():
                view_start = start - shift
                ostart.append(start)
                oend.append(end)
                vstart.append(view_start)
                vend.append(view_start + length)
                shift += (end - start) - length
            self._arrays = (ostart, oend, vstart, vend)
        return self._arrays

    def _map(self, start: int, end: int) -> tuple[int, int]:
        ostart, oend, vstart, vend = self._units()
        i = bisect_right(vstart, start) - 1
        if i < 0:
            new_start = start
        elif start < vend[i]:
            new_start = ostart[i]
        else:
            new_start = oend[i] + (start - vend[i])
        j = bisect_right(vstart, end - 1) - 1
        if j < 0:
            new_end = end
        elif end - 1 < vend[j]:
            new_end = oend[j]
        else:
            new_end = oend[j] + (end - vend[j])
        return new_start, new_end

    def to_root(self, start: int, end: int) -> tuple[int, int]:
        view: _View = self
        while view.parent is not None:
            start, end = view._map(start, end)
            view = view.parent
        return start, end


_JSON_ESCAPE_RE = re.compile(r'\\(?:u[0-9A-Fa-f]{4}|["\\/bfnrt])')
_JSON_SIMPLE = {
    '\\"': '"',
    "\\\\": "\\",
    "\\/": "/",
    "\\b": "\b",
    "\\f": "\f",
    "\\n": "\n",
    "\\r": "\r",
    "\\t": "\t",
}


def _json_unescape(match: re.Match[str]) -> str:
    token = match.group()
    return _JSON_SIMPLE.get(token) or chr(int(token[2:], 16))


def _json_view(view: _View) -> _View | None:
    text = view.text
    if "\\" not in text or _JSON_ESCAPE_RE.search(text) is None:
        return None

    def source() -> Iterator[tuple[int, int, int]]:
        for match in _JSON_ESCAPE_RE.finditer(text):
            yield match.start(), match.end(), 1

    return _View(_JSON_ESCAPE_RE.sub(_json_unescape, text), view, source)


_PERCENT_RUN_RE = re.compile(r"(?:%[0-9A-Fa-f]{2})++")


def _percent_bytes(run: str) -> bytes:
    return bytes.fromhex(run.replace("%", ""))


def _percent_decode(match: re.Match[str]) -> str:
    data = _percent_bytes(match.group())
    return data.decode("utf-8", "surrogateescape")


def _url_view(view: _View) -> _View | None:
    text = view.text
    if "%" not in text or _PERCENT_RUN_RE.search(text) is None:
        return None

    def source() -> Iterator[tuple[int, int, int]]:
        for match in _PERCENT_RUN_RE.finditer(text):
            start, end = match.span()
            data = _percent_bytes(match.group())
            if data.isascii():
                for pos in range(start, end, 3):
                    yield pos, pos + 3, 1
            else:
                yield start, end, len(data.decode("utf-8", "surrogateescape"))

    return _View(_PERCENT_RUN_RE.sub(_percent_decode, text), view, source)


# Joined views remove line breaks. The strict one, for the rules, removes only a break
# that plausibly wraps one token: a backslash-newline between token characters, or a
# newline after a token character followed by indentation and a continuation that is not
# a lowercase word, a "key:", "KEY=value", "x = " or "call(" (so "KEY=sk-..." lines and
# code are not glued together; base64 padding such as "abc==" is fine). A line that
# starts with a known token prefix starts a new token (a list of keys, one per line)
# unless the break follows a '.' (a JWT wrapped between its segments).
_WRAP_PREV = r"[A-Za-z0-9+/=_.-]"
_WRAP_NEXT = r"[A-Za-z0-9+/_-]"
_CONTINUATION = (
    r"(?![a-z._-]*+(?![A-Za-z0-9+/_.-]))[A-Za-z0-9+/_.-]++"
    r"(?![ \t]*+[:(]|[ \t]++=|=[^=\s\"',;)\]}])"
)
_TOKEN_START = (
    r"(?:sk[-_]|rk_|A[KS]IA|gh[pousr]_|github_pat_|gl(?:pat|dt|rt|ptt)-|xox[abprs]-"
    r"|whsec_|AIza|eyJ|[Bb]earer|BEARER)"
)


def _strict_join_pattern() -> re.Pattern[str]:
    branches = []
    for brk, indent, cont in (
        (r"\\\n", r"[ \t]*+", _WRAP_NEXT),
        (r"\\\r\n", r"[ \t]*+", _WRAP_NEXT),
        (r"\n", r"[ \t]++", _CONTINUATION),
        (r"\r\n", r"[ \t]++", _CONTINUATION),
    ):
        branches.append(rf"{brk}(?<=\.{brk}){indent}(?={cont})")
        branches.append(rf"{brk}(?<={_WRAP_PREV}{brk}){indent}(?!{_TOKEN_START})(?={cont})")
    return re.compile("|".join(branches))


_STRICT_JOIN_RE = _strict_join_pattern()
# The loose one, for listed values only (an exact value cannot be matched by accident):
# any line break, with the indentation after it, before a non-space character.
_LOOSE_JOIN_RE = re.compile(r"(?:\\\r?\n|\r?\n)[ \t]*+(?=\S)")


def _joined_view(view: _View, regex: re.Pattern[str], rules: bool) -> _View | None:
    text = view.text
    if "\n" not in text or regex.search(text) is None:
        return None

    def source() -> Iterator[tuple[int, int, int]]:
        for match in regex.finditer(text):
            yield match.start(), match.end(), 0

    return _View(regex.sub("", text), view, source, rules=rules, listed=not rules)


def _views(view: _View, listed: bool, json_depth: int = 0, url: bool = True) -> Iterator[_View]:
    """``view`` and the views derived from it, the least transformed first."""
    yield view
    joined = _joined_view(view, _STRICT_JOIN_RE, rules=True)
    if joined is not None:
        yield joined
    if listed:
        joined = _joined_view(view, _LOOSE_JOIN_RE, rules=False)
        if joined is not None:
            yield joined
    del joined
    if json_depth < 2:
        decoded = _json_view(view)
        if decoded is not None:
            yield from _views(decoded, listed, json_depth + 1, url)
        del decoded
    if url:
        decoded = _url_view(view)
        if decoded is not None:
            yield from _views(decoded, listed, 2, False)


# --------------------------------------------------------------------------------------
# Span bookkeeping.

# What may separate two secrets that a joined view saw as one (whitespace, escapes).
_IGNORABLE_RE = re.compile(r"(?:\s|\\[nrt]?|%0[9aAdD]|%20)*+")


def _merged(spans: list[Span]) -> tuple[list[int], list[int]]:
    starts: list[int] = []
    ends: list[int] = []
    for start, end, _ in sorted(spans):
        if starts and start <= ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return starts, ends


def _covered(text: str, cover: tuple[list[int], list[int]], start: int, end: int) -> bool:
    """True when ``text[start:end]`` holds nothing but covered or ignorable characters."""
    starts, ends = cover
    pos = start
    i = max(bisect_right(starts, start) - 1, 0)
    while pos < end and i < len(starts) and starts[i] < end:
        if starts[i] > pos and _IGNORABLE_RE.fullmatch(text, pos, starts[i]) is None:
            return False
        pos = max(pos, ends[i])
        i += 1
    return pos >= end or _IGNORABLE_RE.fullmatch(text, pos, end) is not None


def _overlaps(starts: list[int], ends: list[int], start: int, end: int) -> bool:
    i = bisect_left(ends, start + 1)
    return i < len(starts) and starts[i] < end


def _groups(spans: list[Span]) -> list[Span]:
    """Overlapping spans as one span each, named after the most specific kind."""
    groups: list[Span] = []
    for start, end, prio in sorted(spans):
        if groups and start < groups[-1][1]:
            g_start, g_end, g_prio = groups[-1]
            groups[-1] = (g_start, max(g_end, end), min(g_prio, prio))
        else:
            groups.append((start, end, prio))
    return groups


# Characters that may start a secret or an encoded/split form of one; a text with none
# of them has nothing to redact (a fast path for the many short strings of a session).
_TRIGGER_RE = re.compile(
    r"[\n\\%]|sk-|sk_|rk_|AKIA|ASIA|ccess|CCESS|gh[pousr]_|github_pat_|gl(?:pat|dt|rt|ptt)-"
    r"|hooks\.slack|xox|whsec_|AIza|eyJ|://|[Bb]earer|BEARER|uthorization|UTHORIZATION"
    r"|-----BEGIN"
)


# --------------------------------------------------------------------------------------
# The public API.


@dataclass(frozen=True, slots=True)
class Redactor:
    """Finds and replaces secrets: the configuration of redaction, immutable.

    Build one with :meth:`create`. It keeps no count: :meth:`redact_text` adds what it
    replaced to the ``counts`` the caller passes, and :func:`redact_session` returns the
    counts of one session, so one redactor serves any number of sessions, threads or
    builds.
    """

    values: tuple[str, ...] = ()
    """The user-listed values, redacted wherever they appear (exact, case-sensitive)."""
    _listed: tuple[re.Pattern[str], ...] = field(default=(), init=False, repr=False)
    """The patterns of :attr:`values` (and their form-encoded variants)."""

    def __post_init__(self) -> None:
        values = _check_values(self.values)
        patterns = []
        for value in values:
            patterns.append(re.compile(re.escape(value)))
            if " " in value:  # form encoding writes spaces as '+'
                patterns.append(re.compile(re.escape(value.replace(" ", "+"))))
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "_listed", tuple(patterns))

    @classmethod
    def create(cls, extra_values: Iterable[str] = ()) -> Redactor:
        """A redactor for the built-in kinds plus ``extra_values`` (e.g. from a file).

        Raises ValueError for a value shorter than :data:`MIN_VALUE_LENGTH` or one that a
        redaction marker contains (it would make redaction undo itself).
        """
        return cls(values=tuple(extra_values))

    def identity(self) -> bytes:
        """What makes two redactors redact alike (part of the site build's key; the values
        are hashed there, never stored)."""
        return b"redact\0" + "\0".join(self.values).encode("utf-8", "surrogatepass")

    def redact_text(self, text: str, counts: Counter[str] | None = None) -> str:
        """``text`` with every secret replaced by ``[REDACTED:<kind>]``, each one added to
        ``counts`` by kind when given."""
        for _ in range(MAX_PASSES):
            groups = self._find(text)
            if not groups:
                break
            pieces = []
            pos = 0
            for start, end, prio in groups:
                pieces.append(text[pos:start])
                pieces.append(marker(KINDS[prio]))
                if counts is not None:
                    counts[KINDS[prio]] += 1
                pos = end
            pieces.append(text[pos:])
            text = "".join(pieces)
        return text

    def scan(self, text: str) -> Counter[str]:
        """The secrets ``text`` holds, by kind, without changing it."""
        return Counter(KINDS[prio] for _, _, prio in self._find(text))

    def _find(self, text: str) -> list[Span]:
        if not text or (
            _TRIGGER_RE.search(text) is None and not any(p.search(text) for p in self._listed)
        ):
            return []
        if "[REDACTED:" in text:
            found = [m.span() for m in _MARKER_RE.finditer(text)]
            mark_starts, mark_ends = [s for s, _ in found], [e for _, e in found]
        else:
            mark_starts, mark_ends = [], []
        accepted: list[Span] = []
        cover: tuple[list[int], list[int]] = ([], [])
        listed = self._listed
        for view in _views(_View(text), bool(listed)):
            found_here: list[Span] = []
            for v_start, v_end, prio in _detect(
                view.text, listed if view.listed else (), view.rules
            ):
                start, end = view.to_root(v_start, v_end)
                if start >= end or (mark_starts and _overlaps(mark_starts, mark_ends, start, end)):
                    continue
                if view.parent is not None and _covered(text, cover, start, end):
                    continue
                found_here.append((start, end, prio))
            if found_here:
                accepted.extend(found_here)
                cover = _merged(accepted)
        return _groups(accepted)


def _check_values(values: Iterable[str]) -> tuple[str, ...]:
    markers = [marker(kind) for kind in KINDS]
    out: dict[str, None] = {}
    for value in values:
        # The messages never quote the value: it is a secret, and errors end up in logs.
        if not isinstance(value, str):
            raise ValueError(f"a redaction value is a {type(value).__name__}, not a string")
        if value == "":
            continue
        if len(value) < MIN_VALUE_LENGTH:
            raise ValueError(
                f"a redaction value of {len(value)} characters is shorter than "
                f"{MIN_VALUE_LENGTH} characters"
            )
        if "[REDACTED:" in value or any(value in m for m in markers):
            raise ValueError("a redaction value overlaps the redaction marker text")
        out[value] = None
    return tuple(out)


def load_values_file(path: str | Path) -> list[str]:
    """The values listed in ``path``: one per line, blank lines and ``#`` lines ignored.

    Each line is stripped of surrounding whitespace. Raises ValueError naming the file
    when it cannot be read, is not UTF-8, or lists a value that is too short.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(
            f"{path}: cannot read the redaction values file: {exc.strerror or exc}"
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path}: the redaction values file is not UTF-8 (byte {exc.start})"
        ) from None
    values = []
    for number, line in enumerate(text.splitlines(), start=1):
        value = line.strip()
        if not value or value.startswith("#"):
            continue
        try:
            _check_values([value])
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
        values.append(value)
    return values


def describe_counts(counts: Counter[str]) -> str:
    """``no secrets redacted`` or ``3 secrets redacted (2 openai, 1 jwt)``."""
    total = sum(counts.values())
    if total == 0:
        return "no secrets redacted"
    kinds = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    detail = ", ".join(f"{n} {kind}" for kind, n in kinds if n)
    return f"{total} secret{'s' if total != 1 else ''} redacted ({detail})"


# --------------------------------------------------------------------------------------
# Sessions.


def redact_json(value: JSON, redactor: Redactor, counts: Counter[str] | None = None) -> JSON:
    """A redacted copy of a JSON value: string values and object keys, at any depth.

    Walks with an explicit stack (no recursion limit). Two keys that redact to the same
    text keep both entries: the later gets `` (2)``, `` (3)``... appended.
    """

    def redact(text: str) -> str:
        return redactor.redact_text(text, counts)

    def child(item: JSON, stack: list[tuple[JSON, JSON]]) -> JSON:
        if isinstance(item, str):
            return redact(item)
        if isinstance(item, dict):
            new_dict: dict[str, JSON] = {}
            stack.append((item, new_dict))
            return new_dict
        if isinstance(item, list):
            new_list: list[JSON] = []
            stack.append((item, new_list))
            return new_list
        return item

    stack: list[tuple[JSON, JSON]] = []
    root = child(value, stack)
    while stack:
        source, target = stack.pop()
        if isinstance(source, dict):
            for key, item in source.items():
                new_key = redact(key) if isinstance(key, str) else key
                if new_key in target:
                    n = 2
                    while f"{new_key} ({n})" in target:
                        n += 1
                    new_key = f"{new_key} ({n})"
                target[new_key] = child(item, stack)
        else:
            target.extend(child(item, stack) for item in source)
    return root


def _redact_field(value: Any, redactor: Redactor, counts: Counter[str]) -> Any:
    if isinstance(value, Image):
        # An image's base64 is bytes, not text: a rule matching in it would only break the
        # image (and scanning megabytes of it costs). What it shows is not text to redact.
        return _redact_object(value, redactor, counts, frozenset({"data"}))
    if isinstance(value, str):
        return redactor.redact_text(value, counts)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _redact_object(value, redactor, counts)
    if isinstance(value, list) and any(
        dataclasses.is_dataclass(item) and not isinstance(item, type) for item in value
    ):
        return [_redact_field(item, redactor, counts) for item in value]
    if isinstance(value, (dict, list)):
        return redact_json(value, redactor, counts)
    return value  # int, float, bool, None


def _redact_object(
    obj: Any, redactor: Redactor, counts: Counter[str], keep: frozenset[str] = frozenset()
) -> Any:
    """A copy of a model dataclass with every field redacted except those in ``keep``."""
    changes = {
        f.name: _redact_field(getattr(obj, f.name), redactor, counts)
        for f in dataclasses.fields(obj)
        if f.init and f.name not in keep
    }
    return dataclasses.replace(obj, **changes)


def redact_session(session: Session, redactor: Redactor) -> tuple[Session, Counter[str]]:
    """A new Session with every string redacted but the identifiers (input untouched), and
    what was redacted, by kind.

    Fields are found generically (``dataclasses.fields``), so a field added to the model
    later is redacted without changes here. ``session_name``, ``session_id`` and
    ``file_name`` are kept: they are what page paths, links and ``#id`` references are made
    of; :func:`identifier_findings` reports a secret in them.
    """
    counts: Counter[str] = Counter()
    redacted = cast(Session, _redact_object(session, redactor, counts, IDENTIFIER_FIELDS))
    return redacted, counts


def identifier_findings(session: Session, redactor: Redactor) -> list[str]:
    """Warnings for secrets in the fields :func:`redact_session` keeps as written."""
    warnings = []
    for name in sorted(IDENTIFIER_FIELDS):
        found = redactor.scan(getattr(session, name))
        if found:
            kinds = ", ".join(sorted(found))
            warnings.append(
                f"{name} looks like it holds a secret ({kinds}); names are not redacted"
            )
    return warnings
