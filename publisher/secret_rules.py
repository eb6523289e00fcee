"""Provider rules as data: gitleaks' default configuration, run by RE2 in linear time.

The rule set is ``publisher/rules/gitleaks.toml``, gitleaks' own ``config/gitleaks.toml``
(MIT, licence beside it) as published at the version ``gitleaks.json`` names; it is
refreshed by ``scripts/refresh_gitleaks.py``, never edited by hand. :func:`load_rule_set`
reads it and compiles every rule with RE2 (``google-re2``), whose matching time is linear
in the text whatever the pattern: a rule RE2 cannot compile (a backreference, a
look-around) is *refused* with the reason, never run, and so is a rule with nothing to run
on a log (a file-name rule). :attr:`RuleSet.refused` lists them.

A rule is applied as gitleaks applies it to a file (``detect.detectRule``), with the text
of one string of a session (or a decoded view of it, see :mod:`.redact`) as the file:

- it runs only when one of its keywords occurs in the lower-cased text (a cheap prefilter
  the caller does for every rule at once: :attr:`RuleSet.keywords`);
- each match is trimmed of line breaks at both ends; the secret is the rule's
  ``secretGroup``, else its first unnamed group of at least :data:`MIN_GROUP` bytes, else
  the whole match (gitleaks takes the first non-empty group, named or not: for a few
  rules a piece such as ``abcd-`` of a webhook URL, which would leave the rest shown);
- a secret whose Shannon entropy is not above the rule's ``entropy`` is dropped, and so
  is one the global or the rule's allowlists allow (``regexes`` on the secret, the match
  or its line, of which at most :data:`LINE_CONTEXT` bytes each side of the match are
  looked at; ``stopwords`` in the secret; ``condition = "AND"`` for all of them). An
  allowlist that also names paths or commits never applies: a log has neither.

Two departures, both towards redacting more: a rule restricted to some file names (a
``path`` with a ``regex``) runs on every text, since a tool output of ``cat main.tf`` is
such a file's content; and a ``gitleaks:allow`` comment does not silence a finding (a log
is redacted for someone else than its author).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import re2

RULES_FOLDER = Path(__file__).resolve().parent / "rules"
"""Where the vendored rule set lives (package data)."""
DEFAULT_RULES = RULES_FOLDER / "gitleaks.toml"
"""gitleaks' default configuration, as published."""
DEFAULT_ORIGIN = RULES_FOLDER / "gitleaks.json"
"""Where :data:`DEFAULT_RULES` comes from: its version, commit and licence."""

#: The keys a rule may have; a rule with another key is refused (a newer gitleaks feature
#: this engine does not know must not be half applied).
RULE_KEYS = frozenset(
    {"id", "description", "regex", "secretGroup", "entropy", "keywords", "path", "tags"}
    | {"allowlists", "allowlist"}
)
ALLOWLIST_KEYS = frozenset(
    {"description", "condition", "regexTarget", "regexes", "stopwords", "paths", "commits"}
)
#: RE2's memory budget for one compiled rule (its default is 8 MiB; gitleaks' largest
#: rules need more to stay on the fast DFA).
RULE_MAX_MEM = 64 << 20
LINE_CONTEXT = 1024
"""An allowlist on the line of a match sees at most this many bytes each side of it."""
MIN_GROUP = 8
"""Shortest group taken as a rule's secret when it names no ``secretGroup``: a shorter
one is a repeated piece or a word (``([a-z0-9]{4}-){3}``, ``(live|test)``), and the next
group, or else the whole match, is the secret (gitleaks reports the first non-empty one)."""


class RuleSetError(ValueError):
    """The rule set file cannot be read or is not a gitleaks configuration."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a rule set comes from (``gitleaks.json``, written by the refresh script)."""

    name: str
    """``gitleaks``."""
    version: str
    """``git describe --tags`` of the commit: ``v8.30.0-27-gb58d3f10``."""
    commit: str
    """The full commit the file was taken from."""
    date: str
    """The commit's date, ``2026-07-22``."""
    source: str
    """The repository and path: ``https://github.com/gitleaks/gitleaks config/gitleaks.toml``."""
    licence: str
    """``MIT``; the licence text is ``gitleaks.LICENSE`` beside the rules."""

    @property
    def label(self) -> str:
        """``gitleaks v8.30.0-27-gb58d3f10``: the version as help and pages say it."""
        return f"{self.name} {self.version}"


def read_origin(path: Path = DEFAULT_ORIGIN) -> Origin:
    """The origin file of a rule set (small, read without loading the rules)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Origin(**{name: str(data[name]) for name in Origin.__slots__})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RuleSetError(f"{path}: not a rule set origin file: {exc}") from None


@dataclass(frozen=True, slots=True)
class Refused:
    """A rule of the file that is not run, and why."""

    rule: str
    """Its ``id``."""
    reason: str
    """One line: ``RE2 cannot run it (invalid perl operator: (?<)``…"""


@dataclass(frozen=True, slots=True)
class Allowlist:
    """One allowlist (global or of a rule), as far as it can apply to a log."""

    regex: re2._Regexp | None
    """Its ``regexes`` joined (any one matching anywhere in the target allows)."""
    target: str
    """What the regexes look at: ``secret``, ``match`` or ``line``."""
    stopwords: re2._Regexp | None
    """Its ``stopwords``, lower-cased and joined (one occurring in the secret allows)."""
    all_of: bool
    """``condition = "AND"``: every check it has must allow."""

    def allows(self, secret: str, match: str, line: str) -> bool:
        target = {"secret": secret, "match": match, "line": line}[self.target]
        by_regex = self.regex is not None and bool(secret) and _searches(self.regex, target)
        by_word = (
            self.stopwords is not None
            and bool(secret)
            and _searches(self.stopwords, secret.lower())
        )
        if self.all_of:
            checks = []
            if self.regex is not None:
                checks.append(by_regex)
            if self.stopwords is not None:
                checks.append(by_word)
            return bool(checks) and all(checks)
        return by_regex or by_word


def _searches(regex: re2._Regexp, text: str) -> bool:
    return regex.search(text.encode("utf-8", "surrogatepass")) is not None


@dataclass(frozen=True, slots=True)
class ProviderRule:
    """One adopted rule, compiled."""

    id: str
    """The rule's ``id``: the kind its markers name (``[REDACTED:npm-access-token]``)."""
    description: str
    """What it finds, as gitleaks says it."""
    regex: re2._Regexp
    """:attr:`scan`, compiled by RE2 for UTF-8 bytes."""
    pattern: str
    """The pattern as written in the file."""
    scan: str
    """The pattern run: :attr:`pattern` without its leading ``[\\w.-]{0,50}?`` (see
    :func:`scan_pattern`)."""
    lead: int
    """How many ``[\\w.-]`` characters before a match of :attr:`scan` the rule's
    pattern would have taken into its match (0: none)."""
    secret_group: int
    """``secretGroup``, or 0 (the first unnamed group long enough, else the match)."""
    groups: tuple[int, ...]
    """The unnamed groups, in order (the candidates when ``secret_group`` is 0)."""
    entropy: float
    """A secret's Shannon entropy must be above this (0: no threshold)."""
    keywords: tuple[str, ...]
    """Lower-cased; the rule runs when one occurs in the lower-cased text (none: always)."""
    allowlists: tuple[Allowlist, ...]
    """The rule's own allowlists."""
    path_only_in_gitleaks: bool = False
    """The file restricts it to some file names (``path``); here it runs on every text."""

    def findings(
        self, data: bytes, text: str, global_allowlists: tuple[Allowlist, ...]
    ) -> Iterator[tuple[int, int, bool]]:
        """The byte spans of ``data`` (``text`` encoded as UTF-8) holding a secret, each
        with whether it is the whole match (the rule has no group for its secret)."""
        previous_end = 0
        for match in self.regex.finditer(data):
            start, end = match.span()
            if self.lead:
                floor = max(previous_end, start - self.lead)
                while start > floor and data[start - 1] in _LEAD_BYTES:
                    start -= 1
            previous_end = end
            while start < end and data[start] == 0x0A:
                start += 1
            while end > start and data[end - 1] == 0x0A:
                end -= 1
            if start >= end:
                continue
            s_start, s_end, whole = self._secret_span(match, start, end)
            if s_start >= s_end:
                continue
            secret = data[s_start:s_end].decode("utf-8", "surrogatepass")
            if self.entropy and shannon_entropy(secret) <= self.entropy:
                continue
            if self._allowed(secret, data, start, end, global_allowlists):
                continue
            yield s_start, s_end, whole

    def secrets_in(self, text: str, global_allowlists: tuple[Allowlist, ...]) -> list[str]:
        """What this rule alone finds in ``text``, as the redactor runs it: nothing unless
        one of its keywords occurs in the lower-cased text (the test corpus is checked so)."""
        if self.keywords and not any(word in text.lower() for word in self.keywords):
            return []
        data = text.encode("utf-8", "surrogatepass")
        return [
            data[s:e].decode("utf-8", "surrogatepass")
            for s, e, _ in self.findings(data, text, global_allowlists)
        ]

    def _secret_span(self, match: Any, start: int, end: int) -> tuple[int, int, bool]:
        if self.secret_group:
            s_start, s_end = match.span(self.secret_group)
            return (s_start, s_end, False) if s_start >= 0 else (0, 0, False)
        for group in self.groups:
            s_start, s_end = match.span(group)
            if s_end - s_start >= MIN_GROUP:
                return max(s_start, start), min(s_end, end), False
        return start, end, True

    def _allowed(
        self, secret: str, data: bytes, start: int, end: int, global_lists: tuple[Allowlist, ...]
    ) -> bool:
        lists = global_lists + self.allowlists
        if not lists:
            return False
        matched = data[start:end].decode("utf-8", "surrogatepass")
        line = ""
        if any(a.target == "line" for a in lists):
            # The line, but at most LINE_CONTEXT bytes each side of the match: a line
            # of megabytes with a match every few bytes would be read again for each.
            floor = max(0, start - LINE_CONTEXT)
            line_start = data.rfind(b"\n", floor, start) + 1 or floor
            line_end = data.find(b"\n", end, end + LINE_CONTEXT)
            line_end = min(len(data), end + LINE_CONTEXT) if line_end < 0 else line_end
            line = data[line_start:line_end].decode("utf-8", "replace")
        return any(a.allows(secret, matched, line) for a in lists)


_LEAD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LEAD = "[\\w.-]{0,50}?"


def scan_pattern(pattern: str) -> tuple[str, int]:
    """``pattern`` without the ``[\\w.-]{0,50}?`` its match starts with (once or twice,
    after a ``(?i)`` or inside a leading ``(?i:``), and how many characters that was.

    gitleaks' keyword rules start so to report the whole name a secret is assigned to
    (``STRIPE_SECRET_KEY = …``): the secret they find is the same without it, and RE2
    runs about twice as fast when a pattern starts at its keyword. The name is found
    again before a match (:meth:`ProviderRule.findings`), for the allowlists that look
    at the match.
    """
    lead = 0
    rest = pattern
    head = ""
    while True:
        for opener in ("(?i)", "(?i:"):
            if rest.startswith(opener + _LEAD):
                head += opener
                rest = rest[len(opener) + len(_LEAD) :]
                lead += 50
                break
        else:
            if rest.startswith(_LEAD):
                rest = rest[len(_LEAD) :]
                lead += 50
                continue
            return head + rest, lead


_COUNT_RE = re.compile(r"\{(\d+)(,(\d*))?\}")


def looser(pattern: str) -> str:
    """A pattern matching at least what ``pattern`` matches, cheaper for RE2's DFA: every
    counted range ``x{m,n}`` becomes ``x{m,}`` (an exact count ``x{n}`` stays).

    A range such as ``[ \\t\\w.-]{0,20}`` followed by ``[\\w.=-]{10,150}`` makes a DFA
    track every count of each at once, state by state; without the upper bounds it need
    not. The looser pattern can only say a rule may match (the rule itself then runs),
    never miss where it does: the trigger set of :mod:`.redact` holds looser forms of the
    rules that run on most texts.
    """
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if pattern.startswith("x{", i + 1):
                end = pattern.index("}", i)
                out.append(pattern[i : end + 1])
                i = end + 1
            else:
                out.append(pattern[i : i + 2])
                i += 2
            continue
        if c == "[":
            end = _class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
            continue
        if c == "{":
            m = _COUNT_RE.match(pattern, i)
            if m is not None and m.group(3):  # a range {m,n}: {m,} (an exact count stays)
                out.append(f"{{{m.group(1)},}}")
                i = m.end()
                if i < n and pattern[i] == "?":
                    i += 1  # lazy or greedy: the same strings
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """The index after the ``]`` closing the character class opened at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a leading ] is a member
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
        elif pattern.startswith("[:", i):
            i = pattern.index(":]", i) + 2
        elif c == "]":
            return i + 1
        else:
            i += 1
    return len(pattern)


def shannon_entropy(secret: str) -> float:
    """Bits per character of ``secret``, as gitleaks computes it (characters counted,
    divided by the length in UTF-8 bytes)."""
    if not secret:
        return 0.0
    counts: dict[str, int] = {}
    for char in secret:
        counts[char] = counts.get(char, 0) + 1
    size = len(secret.encode("utf-8", "surrogatepass"))
    entropy = 0.0
    for count in counts.values():
        freq = count / size
        entropy -= freq * math.log2(freq)
    return entropy


@dataclass(frozen=True, slots=True, eq=False)
class RuleSet:
    """A loaded, compiled rule set. Immutable; pickled as the path it was loaded from."""

    path: Path
    """The TOML file."""
    origin: Origin
    """Its version, commit and licence."""
    digest: str
    """SHA-256 of the file's bytes (part of the site build's key)."""
    rules: tuple[ProviderRule, ...]
    """The adopted rules, in file order."""
    refused: tuple[Refused, ...]
    """The rules not run, with the reason of each."""
    allowlists: tuple[Allowlist, ...]
    """The global allowlists that can apply to a log."""
    keywords: tuple[str, ...] = field(init=False)
    """Every keyword of the adopted rules, sorted."""

    def __post_init__(self) -> None:
        words = sorted({k for rule in self.rules for k in rule.keywords})
        object.__setattr__(self, "keywords", tuple(words))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return load_rule_set, (self.path,)

    @property
    def summary(self) -> str:
        """``gitleaks v8.30.0-27-gb58d3f10: 221 rules adopted, 1 refused``."""
        return f"{self.origin.label}: {len(self.rules)} rules adopted, {len(self.refused)} refused"


def _compile(pattern: str) -> re2._Regexp:
    options = re2.Options()
    options.max_mem = RULE_MAX_MEM
    options.log_errors = False
    return re2.compile(pattern, options)


def _joined(patterns: list[str]) -> re2._Regexp:
    return _compile("|".join(f"(?:{p})" for p in patterns))


def _allowlist(raw: dict[str, Any], where: str) -> Allowlist | None:
    """The allowlist, or None when it cannot apply to a log (only paths or commits)."""
    unknown = set(raw) - ALLOWLIST_KEYS
    if unknown:
        raise RuleSetError(f"{where}: unknown allowlist keys {sorted(unknown)}")
    condition = str(raw.get("condition", "OR")).upper()
    if condition not in ("OR", "AND"):
        raise RuleSetError(f"{where}: unknown allowlist condition {condition!r}")
    target = str(raw.get("regexTarget") or "secret")
    if target not in ("secret", "match", "line"):
        raise RuleSetError(f"{where}: unknown allowlist regexTarget {target!r}")
    all_of = condition == "AND"
    if all_of and (raw.get("paths") or raw.get("commits")):
        return None  # needs a path or a commit to allow anything
    regexes = [str(p) for p in raw.get("regexes") or []]
    words = sorted({str(w).lower() for w in raw.get("stopwords") or []})
    if not regexes and not words:
        return None
    try:
        regex = _joined(regexes) if regexes else None
    except re2.error as exc:
        raise RuleSetError(f"{where}: an allowlist regex RE2 cannot run: {exc}") from None
    stopwords = _compile("|".join(re2.escape(w) for w in words)) if words else None
    return Allowlist(regex, target, stopwords, all_of)


def _adopt(raw: dict[str, Any]) -> ProviderRule | Refused:
    rule_id = str(raw.get("id") or "")
    unknown = set(raw) - RULE_KEYS
    if unknown:
        return Refused(
            rule_id, f"uses {', '.join(sorted(unknown))}, which this engine does not know"
        )
    pattern = raw.get("regex")
    if not pattern:
        return Refused(rule_id, "matches file names only (no regex): a log has no files to name")
    try:
        # The pattern run is the rule's without a leading [\w.-]{0,50}? (scan_pattern),
        # which RE2 accepts whenever it accepts the rest.
        scan, lead = scan_pattern(str(pattern))
        regex = _compile(scan)
    except re2.error as exc:
        return Refused(rule_id, f"RE2 cannot run its regex in linear time ({exc})")
    named = set(regex.groupindex.values())
    groups = tuple(g for g in range(1, regex.groups + 1) if g not in named)
    secret_group = int(raw.get("secretGroup") or 0)
    if secret_group > regex.groups:
        return Refused(rule_id, f"its secretGroup {secret_group} is not a group of its regex")
    where = f"rule {rule_id}"
    lists = [raw["allowlist"]] if raw.get("allowlist") else []
    lists += list(raw.get("allowlists") or [])
    allowlists = tuple(a for a in (_allowlist(x, where) for x in lists) if a is not None)
    return ProviderRule(
        id=rule_id,
        description=str(raw.get("description") or ""),
        regex=regex,
        pattern=str(pattern),
        scan=scan,
        lead=lead,
        secret_group=secret_group,
        groups=groups,
        entropy=float(raw.get("entropy") or 0.0),
        keywords=tuple(sorted({str(k).lower() for k in raw.get("keywords") or []})),
        allowlists=allowlists,
        path_only_in_gitleaks=bool(raw.get("path")),
    )


def load_rule_set(path: Path = DEFAULT_RULES) -> RuleSet:
    """The rule set of the gitleaks configuration ``path`` (its origin: the ``.json`` file
    beside it), compiled.

    Cached by path: a rule set is immutable, and compiling its rules takes a fraction of a
    second. Raises :class:`RuleSetError` naming the file when it cannot be read or is not
    a gitleaks configuration (``[extend]`` is not followed).
    """
    return _load(path.resolve())


@functools.cache
def _load(path: Path) -> RuleSet:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RuleSetError(f"{path}: cannot read the rule set: {exc.strerror or exc}") from None
    try:
        config = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RuleSetError(f"{path}: not a TOML file: {exc}") from None
    if "extend" in config:
        raise RuleSetError(f"{path}: [extend] is not supported; give a whole configuration")
    raw_rules = config.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise RuleSetError(f"{path}: no [[rules]]")
    global_lists = [config["allowlist"]] if config.get("allowlist") else []
    global_lists += list(config.get("allowlists") or [])
    allowlists = tuple(
        a for a in (_allowlist(x, f"{path}: global allowlist") for x in global_lists) if a
    )
    rules: list[ProviderRule] = []
    refused: list[Refused] = []
    seen: set[str] = set()
    for raw in raw_rules:
        adopted = _adopt(raw)
        rule_id = adopted.rule if isinstance(adopted, Refused) else adopted.id
        if not rule_id or rule_id in seen:
            raise RuleSetError(f"{path}: a rule without an id or with a repeated id ({rule_id!r})")
        seen.add(rule_id)
        if isinstance(adopted, Refused):
            refused.append(adopted)
        else:
            rules.append(adopted)
    return RuleSet(
        path=path,
        origin=read_origin(path.with_suffix(".json")),
        digest=hashlib.sha256(data).hexdigest(),
        rules=tuple(rules),
        refused=tuple(refused),
        allowlists=allowlists,
    )
