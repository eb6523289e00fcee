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

The rules: the built-in ones here, the rule set's (:mod:`.secret_rules`, gitleaks' default
configuration) and the assignments by name (:mod:`.assignments`). One RE2 set, matched once
per view, holds every rule's keywords or prefixes and what calls for each view, and says
which rules run (:class:`_Detector`). The rule set's rules and the assignments are RE2
patterns: linear in the text whatever they say. Every built-in pattern starts with a
literal (so the regex engine scans for it quickly), checks its left boundary with a
fixed-width look-behind placed after the literal, and uses only possessive or bounded
quantifiers: a scan is linear in the length of the text. See ``docs/redaction.md`` for the
rules and their limits.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import operator
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import re2

from . import assignments
from .model import JSON, Image, Session
from .secret_rules import ProviderRule, RuleSet, load_rule_set, looser

#: The built-in kinds, named before any provider rule's: when detections overlap, the
#: marker names the first of their kinds in :attr:`Redactor.kinds` (the most specific).
BUILTIN_KINDS = (
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
)
#: Provider rules named after every other rule (their name says least about the secret).
GENERIC_RULES = ("generic-api-key",)
LISTED_KIND = "listed-value"
#: The kinds of a redactor without provider rules, in the order markers prefer them; a
#: redactor's kinds (:attr:`Redactor.kinds`) have its rule set's rules after the built-in
#: ones, and its generic ones after the assignments.
KINDS = (*BUILTIN_KINDS, assignments.KIND, LISTED_KIND)

#: Session fields kept as written: they name pages and files and are link targets.
IDENTIFIER_FIELDS = frozenset({"session_name", "session_id", "file_name"})
#: Shortest value accepted in a values file (shorter ones would redact ordinary words).
MIN_VALUE_LENGTH = 4
#: Redaction runs until nothing more is found, at most this many times per text.
MAX_PASSES = 16
#: A text shorter than this holds no secret any rule finds (the shortest: an assigned
#: value of 8 characters with its name; gitleaks' rules all need more), so a walk does
#: not look at it (unless values are listed: they may be as short as 4).
SHORTEST_SECRET = 8


def marker(kind: str) -> str:
    """The visible text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


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

    kind: str
    regex: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    strip_dots: bool = False

    def spans(self, text: str, prio: int) -> Iterable[Span]:
        has_group = "s" in self.regex.groupindex
        if self.check is None and not self.strip_dots:
            if has_group:
                return [(*m.span("s"), prio) for m in self.regex.finditer(text)]
            return [(*m.span(), prio) for m in self.regex.finditer(text)]
        return self._checked(text, has_group, prio)

    def _checked(self, text: str, has_group: bool, prio: int) -> Iterator[Span]:
        for match in self.regex.finditer(text):
            start, end = match.span("s") if has_group else match.span()
            if self.strip_dots:
                while end > start and text[end - 1] == ".":
                    end -= 1
            if self.check is not None and not self.check(text[start:end]):
                continue
            if end > start:
                yield start, end, prio


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
    return _Rule(kind, re.compile(f"{literal}(?<!{edge}{literal}){body}{after}"))


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
        rules.append(_Rule("aws-secret", re.compile(anchor + behind + value)))
    return rules


def _bearer_rules() -> list[_Rule]:
    rules = []
    for word in ("Bearer", "bearer", "BEARER"):
        regex = re.compile(
            word + f"(?<![A-Za-z0-9_]{word})" + r"[ \t]++(?P<s>[A-Za-z0-9._~+/-]++=*+)"
        )
        rules.append(_Rule("bearer", regex, check=_bearer_ok, strip_dots=True))
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
        rules.append(_Rule("basic-auth", regex, check=_basic_ok))
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


#: The built-in rules, each with the literals that must occur for it to run (its anchors:
#: the trigger set of :class:`_Detector` looks for every anchor in one pass).
_BUILTINS: tuple[tuple[tuple[str, ...], tuple[_Rule, ...]], ...] = (
    (("sk-",), (_token("anthropic", "sk-ant-", _TOK + "{20,}+"),)),
    (
        ("sk-",),
        (_Rule("openai", re.compile(r"sk-(?<![A-Za-z0-9_-]sk-)(?!ant-)" + _OPENAI_BODY)),),
    ),
    (
        ("AKIA", "ASIA"),
        (
            _token("aws-access-key", "AKIA", "[A-Z0-9]{16}", "(?![A-Za-z0-9])", _ALNUM_EDGE),
            _token("aws-access-key", "ASIA", "[A-Z0-9]{16}", "(?![A-Za-z0-9])", _ALNUM_EDGE),
        ),
    ),
    (("ccess", "CCESS"), tuple(_aws_secret_rules())),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        (
            _token(
                "github", "gh", "[A-Za-z0-9]{36,255}+", "(?![A-Za-z0-9_])", _ALNUM_EDGE, "[pousr]_"
            ),
            _token(
                "github", "github_pat_", "[A-Za-z0-9_]{22,255}+", "(?![A-Za-z0-9_])", _ALNUM_EDGE
            ),
        ),
    ),
    (
        ("glpat-", "gldt-", "glrt-", "glptt-"),
        tuple(_token("gitlab", p, _TOK + "{20,}+") for p in ("glpat-", "gldt-", "glrt-", "glptt-")),
    ),
    (
        ("hooks.slack.com/",),
        (
            _Rule(
                "slack-webhook",
                re.compile(
                    r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9/_-]{16,}+)"
                ),
            ),
        ),
    ),
    (("xox",), (_token("slack", "xox", "[A-Za-z0-9-]{10,}+", tail="[abprs]-"),)),
    (
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
        tuple(
            _token("stripe", p, "[A-Za-z0-9]{16,}+", "(?![A-Za-z0-9_])")
            for p in ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_")
        ),
    ),
    (("AIza",), (_token("google-api-key", "AIza", _TOK + "{35}", _NOT_TOK, _ALNUM_EDGE),)),
    (
        ("eyJ",),
        (
            _token(
                "jwt",
                "eyJ",
                _TOK + r"{7,}+\." + _TOK + r"{8,}+\." + _TOK + r"*+(?:\." + _TOK + r"++){0,2}+",
            ),
        ),
    ),
    (("://",), (_Rule("url-password", _URL_PASSWORD_RE),)),
    (("Bearer", "bearer", "BEARER"), tuple(_bearer_rules())),
    (("uthorization", "UTHORIZATION"), tuple(_basic_rules())),
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


def _private_key_spans(text: str, prio: int) -> Iterator[Span]:
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


# --------------------------------------------------------------------------------------
# The detector: every rule of a redactor, and the one pass that says which may match.

#: UTF-8 continuation bytes (a character's bytes but its first).
_UTF8_CONTINUATION = bytes(range(0x80, 0xC0))


def _char_offsets(data: bytes, offsets: Iterable[int]) -> dict[int, int]:
    """Byte offsets of ``data`` (a text as UTF-8) as offsets of the text's characters."""
    chars: dict[int, int] = {}
    pos = continuation = 0
    for offset in sorted(set(offsets)):
        chunk = data[pos:offset]
        continuation += len(chunk) - len(chunk.translate(None, _UTF8_CONTINUATION))
        chars[offset] = offset - continuation
        pos = offset
    return chars


def _char_spans(data: bytes, text: str, spans: list[Span]) -> list[Span]:
    """Byte spans of ``data`` (``text`` as UTF-8) as character spans of ``text``."""
    if len(data) == len(text):
        return spans
    chars = _char_offsets(data, (offset for start, end, _ in spans for offset in (start, end)))
    return [(chars[start], chars[end], prio) for start, end, prio in spans]


@dataclass(frozen=True, slots=True)
class _Job:
    """One rule (or a group of built-in rules) the trigger pass can ask to run."""

    builtins: tuple[tuple[_Rule, int], ...] = ()
    """Built-in rules with the priority of their kind (Python ``re`` on the text)."""
    private_key: int = -1
    """The priority of ``private-key`` when this job is the private-key scan, else -1."""
    provider: ProviderRule | None = None
    """A rule of the rule set (RE2 on the text's UTF-8 bytes)."""
    assignments: bool = False
    """The assignments by name (RE2 on the bytes)."""
    prio: int = 0
    """The priority of the provider rule's or the assignments' kind."""
    placeholders: bool = False
    """Drop what :func:`.assignments.is_placeholder` calls a placeholder (generic rules)."""


#: A line break the strict joined view may remove (RE2), with the token character
#: before it: a backslash-newline before a token character, or a newline, indentation
#: and a run of token characters that is neither all lowercase, nor a capitalised word
#: of four letters or more (``Compiling``, ``Running``: a build log's indented lines), nor
#: slashes only (a ``//`` comment); :data:`_STRICT_JOIN_RE` decides. A short run may be
#: followed by what ends it, a line break included: the next break then starts there.
_BREAK_CANDIDATE = (
    r"[A-Za-z0-9+/=_.-](?:\\\r?\n[ \t]*[A-Za-z0-9+/_-]|\r?\n[ \t]+"
    r"(?:[a-z._-]*[0-9+]|[a-z._-]+[A-Z/]|/+[A-Za-z0-9+_.-]|/(?:[^/]|$)"
    r"|[A-Z][a-z._-]*[A-Z0-9+/]|[A-Z][a-z._-]{0,2}(?:[^A-Za-z0-9+/_.:(-]|$)))"
)
#: Set patterns that say which views of a text to derive (see :class:`_View`).
_VIEW_TRIGGERS = (
    ("json", r"\\(?:u[0-9A-Fa-f]{4}|[\"\\/bfnrt])", "\\n"),
    ("url", r"%[0-9A-Fa-f]{2}", "%2F"),
    ("join", _BREAK_CANDIDATE, "a\n  A"),
)
#: Texts this long or longer choose which rules are hot (see :class:`_Hot`); once some
#: are, every text asks one RE2 set of their patterns which of them match at all (one
#: pass instead of one a rule). Shorter texts first ask the trigger set whether anything
#: is to be looked for (:meth:`_Texts.quiet`).
HOT_MIN_BYTES = 2048
#: Most rules in the hot set (a larger one makes RE2's DFA thrash).
HOT_MAX_RULES = 12
#: After this many long texts, which jobs are hot is no longer counted.
HOT_SETTLED = 4096


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.max_mem = 64 << 20
    options.log_errors = False
    return options


@dataclass(frozen=True, slots=True)
class _Scan:
    """What the detector found in one view's text."""

    spans: list[Span]
    """Character spans holding a secret or a listed value, with the kind's priority."""
    data: bytes
    """The text as UTF-8 (surrogates passed through), empty when the rules did not run."""
    views: frozenset[str]
    """Which of :data:`_VIEW_TRIGGERS` occur: the views worth deriving from this text."""


@dataclass(frozen=True, slots=True)
class _Trigger:
    """An RE2 set run once over a text, and what each of its patterns means."""

    set: re2.Set
    """The patterns; the first, ``\\A``, matches every text (when it is missing from an
    answer, RE2 gave up)."""
    jobs: tuple[tuple[int, ...], ...]
    """For each pattern, the jobs it starts (a keyword, an anchor)."""
    views: tuple[str | None, ...]
    """For each pattern, the view it calls for, or None."""
    matches: tuple[int, ...]
    """For each pattern, the hot job whose (looser) pattern it is, or -1."""
    keys: tuple[tuple[int, ...], ...]
    """For each pattern, the hot jobs whose keyword it is (a hot job runs where its
    pattern matched only if one of its keywords occurs too)."""
    inert: frozenset[int]
    """The patterns whose hit alone starts nothing: ``\\A`` and the hot jobs' keywords (a
    text that hits only these is quiet)."""
    hot: frozenset[int]
    """The hot jobs (their keywords start nothing: they only allow their patterns)."""
    patterns: tuple[str, ...]
    """The patterns as added (kept for the base trigger, which others are made from)."""
    match: Callable[[bytes], Iterable[int] | None] = field(init=False, repr=False, compare=False)
    """:attr:`set`'s match of UTF-8 bytes: the numbers of the patterns found (empty or
    None when none is). google-re2's own set when it has one: its Python wrapper, asked
    of tens of thousands of short texts a build, cost a fortieth of redaction."""

    def __post_init__(self) -> None:
        inner = getattr(self.set, "_set", None)
        match = getattr(inner, "Match", None) if inner is not None else None
        object.__setattr__(self, "match", match if callable(match) else self.set.Match)

    def quiet(self, data: bytes) -> bool:
        """Whether nothing is to be looked for in ``data``: the set hits only
        :attr:`inert` patterns (and RE2 did not give up)."""
        found = self.match(data) or ()
        return 0 in found and self.inert.issuperset(found)


class _Hot:
    """The RE2 jobs long texts choose most, their patterns added to the trigger set.

    Most of a long text's bytes go to the few rules whose keywords are everyday words
    (``key``, ``token``, ``ey``, ``s.``, ``sk``…): each would be one more pass over the
    text. Added to the trigger set, their whole patterns cost almost nothing more in the
    pass the text gets anyway, and say which of them match at all: only those run
    (usually none). Short texts use the same set once it exists: prose that says "token"
    or "secret" is then quiet unless something shaped like one follows (on a build log
    archive, 6,800 short texts a pass ran rules for nothing before; redaction's cost fell
    by a fifth). Which jobs are hot is counted from the long texts seen (chosen by at
    least a tenth of them, at most :data:`HOT_MAX_RULES`), decided again after 16, 64,
    256… of them. This only decides what is skipped for sure: what is found never depends
    on it (the same secrets, whatever the order of the texts).
    """

    __slots__ = ("_counts", "_hot", "_next", "_seen", "_sets", "current")

    def __init__(self) -> None:
        self._counts: Counter[int] = Counter()
        self._seen = 0
        self._next = 16
        self._hot: tuple[int, ...] = ()
        self._sets: dict[tuple[int, ...], _Trigger | None] = {}
        self.current: _Trigger | None = None
        """The trigger with the hot jobs' patterns (None while no job is hot, or when RE2
        refused the set): made when they are decided, read for every text."""

    def count(self, chosen: set[int], detector: _Detector) -> None:
        """Count the RE2 jobs one long text chose (and decide the hot ones when due; after
        :data:`HOT_SETTLED` long texts they are settled)."""
        if self._seen >= HOT_SETTLED:
            return
        self._seen += 1
        self._counts.update(chosen & detector.re2_jobs)
        if self._seen >= self._next:
            self._next *= 4
            floor = self._seen / 10
            ranked = [n for n, c in self._counts.most_common(HOT_MAX_RULES) if c >= floor]
            hot = self._hot = tuple(sorted(ranked))
            if hot and hot not in self._sets:
                self._sets[hot] = detector.trigger_with(hot)
            self.current = self._sets[hot] if hot else None


#: A marker of any kind: what it names is checked against the kinds known (one pattern
#: of every kind's name took longer to compile than the rest of the trigger pass). A
#: kind's name holds no bracket or space, so this finds the same spans.
_MARKER_RE = re.compile(r"\[REDACTED:([^\[\]\s]+)\]")


@dataclass(frozen=True, slots=True, eq=False)
class _Detector:
    """Every rule of a redactor, and the trigger pass: one RE2 set of every provider
    keyword (any case), every built-in rule's anchors, the assignment words and the view
    triggers, matched once per text, says which rules run on it and which views of it
    are worth deriving."""

    rule_set: RuleSet
    """The provider rules."""
    kinds: tuple[str, ...]
    """Every kind a marker can name, in the order markers prefer them."""
    known: frozenset[str]
    """:attr:`kinds` as a set (what a marker in a text must name to be one)."""
    base: _Trigger
    """The trigger: every keyword, anchor, the assignment words and view triggers."""
    always: tuple[int, ...]
    """Jobs that run on every text (provider rules without keywords)."""
    jobs: tuple[_Job, ...]
    """Every job."""
    join_candidates: re2._Regexp
    """The RE2 pattern of a line break the strict joined view may remove."""
    hot: _Hot = field(default_factory=lambda: _Hot())
    """The RE2 jobs long texts choose most, and their set (a cache, see :class:`_Hot`)."""
    re2_jobs: frozenset[int] = frozenset()
    """The jobs that run RE2 patterns (the rule set's rules, the assignments)."""

    def markers(self, text: str) -> list[tuple[int, int]]:
        """The spans of the markers already in ``text`` (of a kind this detector knows)."""
        return [m.span() for m in _MARKER_RE.finditer(text) if m.group(1) in self.known]

    def re2_patterns(self, number: int) -> tuple[str, ...]:
        """The RE2 patterns of job ``number`` (none for a built-in job)."""
        job = self.jobs[number]
        if job.provider is not None:
            return (job.provider.scan,)
        return assignments.PATTERNS if job.assignments else ()

    @classmethod
    def of(cls, rule_set: RuleSet) -> _Detector:
        providers = [r for r in rule_set.rules if r.id not in GENERIC_RULES]
        generic = [r for r in rule_set.rules if r.id in GENERIC_RULES]
        ordered = [*BUILTIN_KINDS, *(r.id for r in providers), assignments.KIND]
        ordered += [*(r.id for r in generic), LISTED_KIND]
        kinds = tuple(dict.fromkeys(ordered))
        prio = {kind: i for i, kind in enumerate(kinds)}
        patterns: dict[str, list[int]] = {r"\A": []}
        probes: dict[str, str] = {r"\A": ""}
        view_patterns: dict[str, str] = {}
        jobs: list[_Job] = []
        always: list[int] = []

        def add(job: _Job, triggers: Iterable[tuple[str, str]]) -> None:
            """``job`` runs when one of ``triggers`` (pattern, a text it finds) occurs."""
            jobs.append(job)
            listed = list(triggers)
            if not listed:
                always.append(len(jobs) - 1)
            for pattern, probe in listed:
                patterns.setdefault(pattern, []).append(len(jobs) - 1)
                probes[pattern] = probe

        def literally(words: Iterable[str], case: str = "") -> list[tuple[str, str]]:
            return [(case + re2.escape(word), word) for word in words]

        add(_Job(private_key=prio["private-key"]), literally(["-----BEGIN "]))
        for anchors, rules in _BUILTINS:
            job = _Job(builtins=tuple((rule, prio[rule.kind]) for rule in rules))
            add(job, literally(anchors))
        for rule in rule_set.rules:
            job = _Job(provider=rule, prio=prio[rule.id], placeholders=rule.id in GENERIC_RULES)
            add(job, literally(rule.keywords, "(?i)"))
        add(
            _Job(assignments=True, prio=prio[assignments.KIND]),
            [(assignments.TRIGGER, assignments.TRIGGER_PROBE)],
        )
        for view, pattern, probe in _VIEW_TRIGGERS:
            patterns.setdefault(pattern, [])
            probes[pattern] = probe
            view_patterns[pattern] = view
        trigger = re2.Set.SearchSet(_re2_options())
        for pattern in patterns:
            trigger.Add(pattern)
        trigger.Compile()
        found = trigger.Match(" ".join(probes.values()).encode()) or []
        if len(found) != len(patterns):  # RE2 ran out of memory: fail loudly, never skip rules
            raise RuntimeError("the redaction trigger set does not see every keyword")
        base = _Trigger(
            trigger,
            tuple(tuple(found) for found in patterns.values()),
            tuple(view_patterns.get(pattern) for pattern in patterns),
            (-1,) * len(patterns),
            ((),) * len(patterns),
            frozenset({0}),
            frozenset(),
            tuple(patterns),
        )
        join = re2.compile(_BREAK_CANDIDATE, _re2_options())
        re2_jobs = frozenset(
            n for n, job in enumerate(jobs) if job.provider is not None or job.assignments
        )
        return cls(
            rule_set,
            kinds,
            frozenset(kinds),
            base,
            tuple(always),
            tuple(jobs),
            join,
            re2_jobs=re2_jobs,
        )

    def detect(
        self,
        text: str,
        listed: tuple[re.Pattern[str], ...],
        rules: bool,
        cuts: tuple[int, ...] = (),
    ) -> _Scan:
        """The spans of ``text`` holding a secret (with ``rules``) or a listed value.
        ``cuts``: where a joined view removed a line break (UTF-8 offsets of ``text``)."""
        out: list[Span] = []
        data = b""
        views: set[str] = set()
        if rules:
            data = text.encode("utf-8", "surrogatepass")
            chosen = self._chosen(text, data, views)
            if chosen:
                byte_spans: list[Span] = []
                for number in chosen:
                    self._run(self.jobs[number], text, data, out, byte_spans, cuts)
                if byte_spans:
                    out.extend(_char_spans(data, text, byte_spans))
        if listed:
            prio = len(self.kinds) - 1
            for pattern in listed:
                for match in pattern.finditer(text):
                    out.append((match.start(), match.end(), prio))
        return _Scan(out, data, frozenset(views))

    def _chosen(self, text: str, data: bytes, views: set[str]) -> list[int]:
        """The jobs to run on ``data`` (``text`` as UTF-8; into ``views``, the views it
        calls for): the trigger pass, with the hot jobs' patterns once some are hot (see
        :class:`_Hot`; only a long text counts towards which are)."""
        long = len(data) >= HOT_MIN_BYTES
        trigger = self.hot.current or self.base
        found = trigger.match(data) or ()
        if 0 not in found:
            return list(range(len(self.jobs)))  # RE2 gave up (out of memory): run them all
        chosen = set(self.always)
        matching = []
        keyed: set[int] = set()
        for hit in found:
            chosen.update(trigger.jobs[hit])
            keyed.update(trigger.keys[hit])
            view = trigger.views[hit]
            if view is not None:
                views.add(view)
            if trigger.matches[hit] >= 0:
                matching.append(trigger.matches[hit])
        if long:
            self.hot.count(chosen | trigger.hot, self)
        for number in matching:  # a hot rule runs only where one of its keywords is too
            provider = self.jobs[number].provider
            if provider is None or not provider.keywords or number in keyed:
                chosen.add(number)
        return sorted(chosen)

    def trigger_with(self, hot: tuple[int, ...]) -> _Trigger | None:
        """The trigger set once ``hot`` jobs are known: their patterns
        (:func:`.secret_rules.looser`) start them, not their keywords, which occur in most
        texts (a keyword's hit only allows its job to run where its pattern matched).
        None when RE2 refuses it."""
        hot_set = frozenset(hot)
        merged = re2.Set.SearchSet(_re2_options())
        jobs: list[tuple[int, ...]] = []
        keys: list[tuple[int, ...]] = []
        views: list[str | None] = []
        matches: list[int] = []
        try:
            for pattern, gated, view in zip(
                self.base.patterns, self.base.jobs, self.base.views, strict=True
            ):
                merged.Add(pattern)
                jobs.append(tuple(n for n in gated if n not in hot_set))
                keys.append(tuple(n for n in gated if n in hot_set))
                views.append(view)
                matches.append(-1)
            for number in hot:
                for pattern in self.re2_patterns(number):
                    merged.Add(looser(pattern))  # counting costs the DFA dearly
                    jobs.append(())
                    keys.append(())
                    views.append(None)
                    matches.append(number)
            merged.Compile()
        except re2.error:
            return None
        inert = frozenset(
            i
            for i, (started, view, match) in enumerate(zip(jobs, views, matches, strict=True))
            if not started and view is None and match < 0
        )
        return _Trigger(
            merged, tuple(jobs), tuple(views), tuple(matches), tuple(keys), inert, hot_set, ()
        )

    def _run(
        self,
        job: _Job,
        text: str,
        data: bytes,
        out: list[Span],
        byte_spans: list[Span],
        cuts: tuple[int, ...] = (),
    ) -> None:
        if job.private_key >= 0:
            out.extend(_private_key_spans(text, job.private_key))
        for rule, prio in job.builtins:
            out.extend(rule.spans(text, prio))
        if job.provider is not None:
            for start, end, whole in job.provider.findings(data, text, self.rule_set.allowlists):
                if job.placeholders and assignments.is_placeholder(
                    data[start:end].decode("utf-8", "surrogatepass")
                ):
                    continue
                byte_spans.append((start, end, job.prio | _WHOLE if whole else job.prio))
        if job.assignments:
            found = assignments.spans(data, cuts)
            byte_spans.extend((start, end, job.prio) for start, end in found)


@functools.cache
def _detector(rule_set: RuleSet) -> _Detector:
    """The detector of a rule set (made once per process: the set takes milliseconds)."""
    return _Detector.of(rule_set)


# --------------------------------------------------------------------------------------
# Views: decoded or joined forms of a text, with the map back to it.

UnitSource = Callable[[], Iterable[tuple[int, int, int]]]


class _View:
    """A text derived from ``parent`` by replacing *units* (parent spans) with new text.

    The units (parent start, parent end, length in the view) are listed again from the
    parent text only when a match in this view has to be mapped back, which is rare.
    """

    __slots__ = ("_arrays", "_source", "cuts", "listed", "parent", "rules", "text")

    def __init__(
        self,
        text: str,
        parent: _View | None = None,
        source: UnitSource | None = None,
        rules: bool = True,
        listed: bool = True,
        cuts: tuple[int, ...] = (),
    ) -> None:
        self.text = text
        self.parent = parent
        self.rules = rules
        """Whether the detection rules run on this view."""
        self.listed = listed
        """Whether the user-listed values are looked for in this view."""
        self.cuts = cuts
        """Where a line break was removed (a joined view): UTF-8 offsets of ``text``."""
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
# a lowercase word, a capitalised word of four letters or more ("Compiling"), a run of
# slashes (a "//" comment), a "key:", "KEY=value", "x = " or "call(" (so "KEY=sk-..."
# lines, code and build logs are not glued together; base64 padding such as "abc==" is
# fine). A line that starts with a known token prefix starts a new token (a list of
# keys, one per line) unless the break follows a '.' (a JWT wrapped between its
# segments).
_WRAP_PREV = r"[A-Za-z0-9+/=_.-]"
_WRAP_NEXT = r"[A-Za-z0-9+/_-]"
_CONTINUATION = (
    r"(?!(?:[a-z._-]*+|[A-Z][a-z._-]{3,}+|/{2,}+)(?![A-Za-z0-9+/_.-]))[A-Za-z0-9+/_.-]++"
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


def _loose_joined_view(view: _View) -> _View | None:
    """``view`` without any line break and the indentation after it (for listed values)."""
    text = view.text
    if "\n" not in text or _LOOSE_JOIN_RE.search(text) is None:
        return None

    def source() -> Iterator[tuple[int, int, int]]:
        for match in _LOOSE_JOIN_RE.finditer(text):
            yield match.start(), match.end(), 0

    return _View(_LOOSE_JOIN_RE.sub("", text), view, source, rules=False, listed=True)


def _strict_joined_view(view: _View, data: bytes, candidates: Any) -> _View | None:
    """``view`` without the line breaks that wrap a token (:data:`_STRICT_JOIN_RE`).

    RE2 finds where such a break may be (``candidates``, :data:`_BREAK_CANDIDATE`, on the
    text's UTF-8 ``data``); the Python pattern, with its look-arounds, decides at each of
    those places only.
    """
    starts = []
    for found in candidates.finditer(data):
        starts.append(found.start() + 1)
        end = found.end()
        if data[end - 1] in b"\\\r\n":
            starts.append(end - 1)  # a short word's end, read past: the next break
        elif end < len(data) and data[end] in b"\\\r\n":
            starts.append(end)  # the next break's token character was this match's last
    if not starts:
        return None
    text = view.text
    if len(data) != len(text):
        chars = _char_offsets(data, starts)
        starts = [chars[start] for start in starts]
    units: list[tuple[int, int, int]] = []
    for start in starts:
        match = _STRICT_JOIN_RE.match(text, start)
        if match is not None and match.end() > start and (not units or start >= units[-1][1]):
            units.append((start, match.end(), 0))
    if not units:
        return None
    pieces = []
    cuts = []
    pos = offset = 0
    for start, end, _ in units:
        piece = text[pos:start]
        pieces.append(piece)
        offset += len(piece) if piece.isascii() else len(piece.encode("utf-8", "surrogatepass"))
        cuts.append(offset)
        pos = end
    pieces.append(text[pos:])
    joined = "".join(pieces)
    return _View(joined, view, lambda: units, rules=True, listed=False, cuts=tuple(cuts))


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


#: Set in a span's priority when a provider rule took its whole match as the secret.
_WHOLE = 1 << 24


def _trimmed(spans: list[Span], builtin: int) -> list[Span]:
    """The spans, a provider rule's whole match that starts before a built-in detection
    inside it starting there: a gitleaks rule without a group for its secret
    (``hooks.slack.com/services/…``) takes its context too; the built-in rule keeps it
    readable. The end is kept (a span longer on the right still hides all it found)."""
    if not any(prio & _WHOLE for _, _, prio in spans):
        return spans
    inner = sorted(start for start, _, prio in spans if prio < builtin)
    out = []
    for start, end, prio in spans:
        if prio & _WHOLE:
            prio &= ~_WHOLE
            i = bisect_right(inner, start)
            if i < len(inner) and inner[i] < end:
                start = inner[i]
        out.append((start, end, prio))
    return out


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


# --------------------------------------------------------------------------------------
# The public API.

#: What redacting a text replaced: for each pass, the (start, end, kind) of each span.
Passes = tuple[tuple[tuple[int, int, str], ...], ...]


def _apply(text: str, passes: Passes) -> str:
    """``text`` with the spans of each pass replaced by their markers, pass after pass."""
    for spans in passes:
        pieces = []
        pos = 0
        for start, end, kind in spans:
            pieces.append(text[pos:start])
            pieces.append(marker(kind))
            pos = end
        pieces.append(text[pos:])
        text = "".join(pieces)
    return text


@dataclass(frozen=True, slots=True)
class Redactor:
    """Finds and replaces secrets: the configuration of redaction, immutable.

    Build one with :meth:`create`. It keeps no count: :meth:`redact_text` adds what it
    replaced to the ``counts`` the caller passes, and :func:`redact_session` returns the
    counts of one session, so one redactor serves any number of sessions, threads or
    builds. It pickles as its values and its rule set's path (a worker compiles the rules
    once).
    """

    values: tuple[str, ...] = ()
    """The user-listed values, redacted wherever they appear (exact, case-sensitive)."""
    rules: RuleSet | None = None
    """The provider rules (None: the vendored gitleaks set, :func:`.load_rule_set`)."""
    _listed: tuple[re.Pattern[str], ...] = field(default=(), init=False, repr=False)
    """The patterns of :attr:`values` (and their form-encoded variants)."""
    _detector: _Detector | None = field(default=None, init=False, repr=False, compare=False)
    """Every rule, compiled, and the trigger pass."""

    def __post_init__(self) -> None:
        rules = self.rules if self.rules is not None else load_rule_set()
        detector = _detector(rules)
        values = _check_values(self.values, detector.kinds)
        patterns = []
        for value in values:
            patterns.append(re.compile(re.escape(value)))
            if " " in value:  # form encoding writes spaces as '+'
                patterns.append(re.compile(re.escape(value.replace(" ", "+"))))
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "_listed", tuple(patterns))
        object.__setattr__(self, "_detector", detector)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return Redactor, (self.values, self.rules)

    @classmethod
    def create(cls, extra_values: Iterable[str] = (), rules: RuleSet | None = None) -> Redactor:
        """A redactor for the built-in kinds, the rule set's rules (by default the vendored
        gitleaks set) and the assignments by name, plus ``extra_values`` (e.g. from a file).

        Raises ValueError for a value shorter than :data:`MIN_VALUE_LENGTH` or one that a
        redaction marker contains (it would make redaction undo itself).
        """
        return cls(values=tuple(extra_values), rules=rules)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind a marker can name, in the order markers prefer them."""
        return self._engine.kinds

    @property
    def _engine(self) -> _Detector:
        assert self._detector is not None
        return self._detector

    def identity(self) -> bytes:
        """What makes two redactors redact alike (part of the site build's key; the values
        are hashed there, never stored)."""
        rules = self._engine.rule_set.digest.encode()
        values = "\0".join(self.values).encode("utf-8", "surrogatepass")
        return b"redact\0" + rules + b"\0" + values

    def redact_text(self, text: str, counts: Counter[str] | None = None) -> str:
        """``text`` with every secret replaced by ``[REDACTED:<kind>]``, each one added to
        ``counts`` by kind when given."""
        passes = self._passes(text)
        if passes is None:
            return text
        if counts is not None:
            counts.update(kind for spans in passes for _, _, kind in spans)
        return _apply(text, passes)

    def _passes(self, text: str) -> Passes | None:
        """What redacting ``text`` replaces: the spans of each pass (a pass looks again at
        the text the last one made: a marker may have joined what it split), or None."""
        groups = self._find(text)
        if not groups:
            return None
        kinds = self._engine.kinds
        passes = []
        for _ in range(MAX_PASSES):
            spans = tuple((start, end, kinds[prio]) for start, end, prio in groups)
            passes.append(spans)
            text = _apply(text, (spans,))
            groups = self._find(text)
            if not groups:
                break
        return tuple(passes)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """Where ``text`` holds secrets: (start, end, kind) of each span :meth:`redact_text`
        would replace (one pass: what a marker would join with is not looked for)."""
        kinds = self._engine.kinds
        return [(start, end, kinds[prio]) for start, end, prio in self._find(text)]

    def scan(self, text: str) -> Counter[str]:
        """The secrets ``text`` holds, by kind, without changing it."""
        kinds = self._engine.kinds
        return Counter(kinds[prio] for _, _, prio in self._find(text))

    def _find(self, text: str) -> list[Span]:
        if not text:
            return []
        engine = self._engine
        listed = self._listed
        first = engine.detect(text, listed, True)
        if not first.spans and not first.views and not (listed and "\n" in text):
            return []  # the common case: nothing found, no view worth deriving
        if "[REDACTED:" in text:
            found = engine.markers(text)
            mark_starts, mark_ends = [s for s, _ in found], [e for _, e in found]
        else:
            mark_starts, mark_ends = [], []
        accepted: list[Span] = []
        cover: tuple[list[int], list[int]] = ([], [])
        # The views, the least transformed first: a view, its joined forms, then the
        # views decoded from it (JSON-unescaped at most twice, URL-decoded once), each
        # with its own joined forms. A view is derived only when the trigger pass of
        # its parent saw what it would change.
        pending: list[tuple[_View, int, bool]] = [(_View(text), 0, True)]
        while pending:
            view, json_depth, url = pending.pop()
            if view.parent is None:
                scan = first
            else:
                scan = engine.detect(
                    view.text, listed if view.listed else (), view.rules, view.cuts
                )
            found_here: list[Span] = []
            for v_start, v_end, prio in scan.spans:
                start, end = view.to_root(v_start, v_end)
                if start >= end or (mark_starts and _overlaps(mark_starts, mark_ends, start, end)):
                    continue
                if view.parent is not None and _covered(text, cover, start, end):
                    continue
                found_here.append((start, end, prio))
            if found_here:
                accepted.extend(found_here)
                cover = _merged(accepted)
            if not view.rules or not view.listed:
                continue  # a joined view: nothing is derived from it
            children: list[tuple[_View, int, bool]] = []
            if "join" in scan.views:
                joined = _strict_joined_view(view, scan.data, engine.join_candidates)
                if joined is not None:
                    children.append((joined, json_depth, url))
            if listed:
                loose = _loose_joined_view(view)
                if loose is not None:
                    children.append((loose, json_depth, url))
            if json_depth < 2 and "json" in scan.views:
                decoded = _json_view(view)
                if decoded is not None:
                    children.append((decoded, json_depth + 1, url))
            if url and "url" in scan.views:
                decoded = _url_view(view)
                if decoded is not None:
                    children.append((decoded, 2, False))
            pending.extend(reversed(children))
        if not accepted:
            return []
        return _groups(_trimmed(accepted, len(BUILTIN_KINDS)))


def _check_values(values: Iterable[str], kinds: Iterable[str] = KINDS) -> tuple[str, ...]:
    markers = [marker(kind) for kind in kinds]
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


def load_values_file(path: str | Path, rules: RuleSet | None = None) -> list[str]:
    """The values listed in ``path``: one per line, blank lines and ``#`` lines ignored.

    Each line is stripped of surrounding whitespace. Raises ValueError naming the file
    when it cannot be read, is not UTF-8, or lists a value that is too short or that a
    marker of the rule set's kinds contains.
    """
    kinds = _detector(rules or load_rule_set()).kinds
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
            _check_values([value], kinds)
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


@dataclass(frozen=True, slots=True)
class RedactionRecord:
    """What redacting one session file replaced, to redact it again without looking for
    anything: a site build reads a session file a second time to render it when the scan
    could not keep it (the worker's memory budget), and the previous run of a series for
    its comparison page; the scan's record comes along (a few dozen bytes for a session
    with no secret)."""

    source: str
    """The SHA-256 of the file's bytes (the record applies to those bytes only)."""
    changes: dict[int, Passes]
    """What was replaced in each string that changed, by its position in the walk."""
    counts: Counter[str]
    """What was replaced, by kind."""


def _memo_key(text: str) -> Hashable:
    """What :class:`_Texts` finds a text seen before by: the text itself, or for a long
    one its length and ends (hashing every byte of the long tool outputs cost a twentieth
    of redaction; a text found by its key is compared whole before its result is used)."""
    if len(text) < HOT_MIN_BYTES:
        return text
    return (len(text), text[:64], text[-64:])


class _Texts:
    """Redacts the strings of one walk, each distinct string once (a session repeats its
    tool names, statuses, roles and models many times), and notes what changed by the
    position of the string in the walk (:class:`RedactionRecord`)."""

    __slots__ = ("changes", "counts", "memo", "position", "quick", "redactor", "shortest")

    def __init__(self, redactor: Redactor, counts: Counter[str] | None) -> None:
        self.redactor = redactor
        self.shortest = MIN_VALUE_LENGTH if redactor.values else SHORTEST_SECRET
        engine = redactor._engine
        self.quick = None if redactor.values or engine.always else engine
        self.counts = counts
        self.memo: dict[Hashable, tuple[str, tuple[str, Passes] | None]] = {}
        """Each distinct text seen (by :func:`_memo_key`), with what it became."""
        self.position = 0
        self.changes: dict[int, Passes] = {}

    def __call__(self, text: str) -> str:
        position = self.position
        self.position += 1
        if len(text) < self.shortest:
            return text  # shorter than any secret
        key = _memo_key(text)
        seen = self.memo.get(key)
        if seen is not None and seen[0] == text:
            hit = seen[1]
        else:
            if self.quiet(text):
                hit = None
            else:
                passes = self.redactor._passes(text)
                hit = None if passes is None else (_apply(text, passes), passes)
            if seen is None:
                self.memo[key] = (text, hit)
        if hit is None:
            return text  # this very object: an equal string may be another one
        self.changes[position] = hit[1]
        if self.counts is not None:
            self.counts.update(kind for spans in hit[1] for _, _, kind in spans)
        return hit[0]

    def quiet(self, text: str) -> bool:
        """A short text in which nothing of the trigger set occurs (no keyword, prefix or
        view trigger; once rules are hot, none of their patterns): nothing to look for
        (the common case, asked of the trigger set directly)."""
        engine = self.quick
        if engine is None or len(text) >= HOT_MIN_BYTES:
            return False
        trigger = engine.hot.current or engine.base
        return trigger.quiet(text.encode("utf-8", "surrogatepass"))


class _Replay(_Texts):
    """Puts back what a record says changed, by position; looks at nothing."""

    __slots__ = ("record",)

    def __init__(self, redactor: Redactor, record: RedactionRecord) -> None:
        super().__init__(redactor, None)
        self.record = record

    def __call__(self, text: str) -> str:
        passes = self.record.changes.get(self.position)
        self.position += 1
        return text if passes is None else _apply(text, passes)


def redact_json(value: JSON, redactor: Redactor, counts: Counter[str] | None = None) -> JSON:
    """A redacted copy of a JSON value: string values and object keys, at any depth.

    Walks with an explicit stack (no recursion limit). Two keys that redact to the same
    text keep both entries: the later gets `` (2)``, `` (3)``... appended.
    """
    texts = _Texts(redactor, counts)
    found = [texts(text) for text in _json_strings(value)]
    return _copy_json(value, iter(found))


def _json_strings(value: JSON) -> list[str]:
    """The strings of a JSON value (keys too), in the order :func:`_copy_json` puts them
    back (a list: collected in one loop, no generator resumed per string)."""
    out: list[str] = []
    append = out.append
    stack: list[JSON] = [value]
    while stack:
        item = stack.pop()
        cls = item.__class__
        if cls is str:
            append(cast(str, item))
        elif cls is dict or isinstance(item, dict):
            containers = []
            for key, child in cast(dict[str, JSON], item).items():
                if isinstance(key, str):
                    append(key)
                if isinstance(child, str):
                    append(child)
                elif isinstance(child, (dict, list)):
                    containers.append(child)
            if containers:
                stack.extend(reversed(containers))
        elif cls is list or isinstance(item, list):
            containers = []
            for child in cast(list[JSON], item):
                if isinstance(child, str):
                    append(child)
                elif isinstance(child, (dict, list)):
                    containers.append(child)
            if containers:
                stack.extend(reversed(containers))
        elif isinstance(item, str):
            append(item)
    return out


def _copy_json(value: JSON, found: Iterator[str]) -> JSON:
    """A copy of ``value`` with its strings replaced, in :func:`_json_strings` order, by
    the next of ``found``."""
    if isinstance(value, str):
        return next(found)
    if not isinstance(value, (dict, list)):
        return value
    root: JSON = {} if isinstance(value, dict) else []
    stack: list[tuple[JSON, JSON]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        pending: list[tuple[JSON, JSON]] = []
        if isinstance(source, dict):
            assert isinstance(target, dict)
            for key, item in source.items():
                new_key = next(found) if isinstance(key, str) else key
                if new_key in target:
                    n = 2
                    while f"{new_key} ({n})" in target:
                        n += 1
                    new_key = f"{new_key} ({n})"
                target[new_key] = _copy_item(item, found, pending)
        else:
            assert isinstance(source, list) and isinstance(target, list)
            target.extend(_copy_item(item, found, pending) for item in source)
        stack.extend(reversed(pending))
    return root


def _copy_item(item: JSON, found: Iterator[str], pending: list[tuple[JSON, JSON]]) -> JSON:
    """An item of a container being copied: its string, or an empty container to fill
    (noted in ``pending``), or the item itself."""
    if isinstance(item, str):
        return next(found)
    if isinstance(item, dict):
        new_dict: dict[str, JSON] = {}
        pending.append((item, new_dict))
        return new_dict
    if isinstance(item, list):
        new_list: list[JSON] = []
        pending.append((item, new_list))
        return new_list
    return item


def _redact_field(value: Any, redact: _Texts) -> Any:
    cls = value.__class__  # the exact classes first: this runs for every field
    if cls is str:
        return redact(value)
    if cls in _SCALARS:
        return value
    if cls is list or cls is dict:
        return _redact_container(value, redact) if value else value
    if isinstance(value, Image):
        # An image's base64 is bytes, not text: a rule matching in it would only break the
        # image (and scanning megabytes of it costs). What it shows is not text to redact.
        return _redact_object(value, redact, _IMAGE_BYTES)
    if _is_model_class(cls):
        return _redact_object(value, redact)
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, (dict, list)):
        return _redact_container(value, redact) if value else value
    return value  # a number, None


#: Field values with no text in them.
_SCALARS = frozenset({bool, int, float, type(None)})
#: The field of :class:`.Image` not redacted.
_IMAGE_BYTES = frozenset({"data"})


def _redact_container(value: list[Any] | dict[str, Any], redact: _Texts) -> Any:
    """A list of models, or a JSON value: redacted, or ``value`` itself when unchanged."""
    if isinstance(value, list) and value and _is_model_class(value[0].__class__):
        items = [_redact_field(item, redact) for item in value]
        return items if any(map(operator.is_not, items, value)) else value
    originals = _json_strings(value)
    found = [redact(text) for text in originals]
    if not any(map(operator.is_not, found, originals)):
        return value  # unchanged: the original, not a copy
    return _copy_json(value, iter(found))


@functools.cache
def _is_model_class(cls: type) -> bool:
    """Whether instances of ``cls`` are model dataclasses (walked field by field)."""
    return dataclasses.is_dataclass(cls)


@functools.cache
def _fields(cls: object, keep: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The fields of a model class a copy is made with (``init`` fields), but ``keep``."""
    fields = dataclasses.fields(cast(Any, cls))
    return tuple(f.name for f in fields if f.init and f.name not in keep)


def _redact_object(obj: Any, redact: _Texts, keep: frozenset[str] = frozenset()) -> Any:
    """``obj`` (a model dataclass) with every field redacted except those in ``keep``: a
    copy, or ``obj`` itself when no field changed. A text, a scalar and an empty container
    are taken here (most fields: :func:`_redact_field` is called for the rest)."""
    changes = {}
    for name in _fields(obj.__class__, keep):
        old = getattr(obj, name)
        cls = old.__class__
        if cls is str:
            new = redact(old)
        elif cls in _SCALARS or ((cls is dict or cls is list) and not old):
            continue
        else:
            new = _redact_field(old, redact)
        if new is not old:
            changes[name] = new
    return dataclasses.replace(obj, **changes) if changes else obj


def redact_session(session: Session, redactor: Redactor) -> tuple[Session, Counter[str]]:
    """The Session with every string redacted but the identifiers (input untouched: a copy
    where anything changed), and what was replaced, by kind.

    Fields are found generically (``dataclasses.fields``), so a field added to the model
    later is redacted without changes here. ``session_name``, ``session_id`` and
    ``file_name`` are kept: they are what page paths, links and ``#id`` references are made
    of; :func:`identifier_findings` reports a secret in them.
    """
    redacted, record = redact_recorded(session, redactor, "")
    return redacted, Counter(record.counts)


def redact_recorded(
    session: Session, redactor: Redactor, source: str, record: RedactionRecord | None = None
) -> tuple[Session, RedactionRecord]:
    """:func:`redact_session` of a session parsed from a file whose bytes have the SHA-256
    ``source``, with the record of what it replaced. Given the ``record`` of those same
    bytes (``record.source == source``), the walk puts back what it says and looks at
    nothing else."""
    if record is not None and record.source == source:
        if not record.changes:
            return session, record  # nothing was replaced: no walk to put nothing back
        replay = _Replay(redactor, record)
        return cast(Session, _redact_object(session, replay, IDENTIFIER_FIELDS)), record
    counts: Counter[str] = Counter()
    texts = _Texts(redactor, counts)
    redacted = cast(Session, _redact_object(session, texts, IDENTIFIER_FIELDS))
    return redacted, RedactionRecord(source, texts.changes, counts)


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
