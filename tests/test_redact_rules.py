"""The provider rules (issue 35): gitleaks' default configuration taken as data, each rule
run by RE2 through the redactor's views, refused when RE2 cannot run it, and a corpus of
well-formed fake credentials covering every adopted rule (tests/data/gitleaks_samples.json,
made by scripts/refresh_gitleaks.py from gitleaks' own test cases and regexes): none of
them survives redaction, in any form the views cover; no rule makes a scan superlinear."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from publisher import assignments
from publisher.redact import HOT_SETTLED, KINDS, Redactor, _Detector, marker, redact_json
from publisher.secret_rules import (
    DEFAULT_ORIGIN,
    DEFAULT_RULES,
    ProviderRule,
    RuleSetError,
    load_rule_set,
    read_origin,
    scan_pattern,
    shannon_entropy,
)
from tests.helpers import ROOT
from tests.test_redact import json_escaped, split_point

pytestmark = pytest.mark.unit

RULES = load_rule_set()
CORPUS_FILE = ROOT / "tests" / "data" / "gitleaks_samples.json"
CORPUS = json.loads(CORPUS_FILE.read_text(encoding="utf-8"))
SAMPLES: list[dict[str, str]] = CORPUS["samples"]
BY_RULE: dict[str, list[dict[str, str]]] = defaultdict(list)
for _sample in SAMPLES:
    BY_RULE[_sample["rule"]].append(_sample)
REDACTOR = Redactor.create()


def rule(rule_id: str) -> ProviderRule:
    return next(r for r in RULES.rules if r.id == rule_id)


def middle(secret: str) -> int | None:
    """Where a wrapped secret breaks: near its middle, between two letters or digits (a
    terminal or an editor wraps a token anywhere; the joined view rejoins a token split
    there), None when it has no such place."""
    try:
        return split_point(secret)
    except AssertionError:
        return None


def pieces(secret: str) -> list[str]:
    """The secret, and its halves when each is long enough to mean something."""
    k = middle(secret)
    if k is None or min(k, len(secret) - k) < 6:
        return [secret]
    return [secret, secret[:k], secret[k:]]


def forms(text: str, secret: str) -> dict[str, str]:
    """``text`` as the views see it: raw, JSON-escaped (once, twice), URL-encoded, and the
    secret wrapped with a backslash-newline."""
    shown = {
        "raw": text,
        "json-escaped": json_escaped(text),
        "json-in-json": json_escaped(json_escaped(text)),
        "url-encoded": quote(text, safe=""),
    }
    k = middle(secret)
    if k is not None:
        shown["backslash-split"] = text.replace(secret, secret[:k] + "\\\n" + secret[k:])
    return shown


def encodings(piece: str) -> set[str]:
    """A piece of a secret in every escaped form an output may hold it in."""
    return {
        piece,
        json_escaped(piece),
        json_escaped(piece, slashes=False),
        quote(piece, safe=""),
        quote(piece, safe="/"),
    }


# --------------------------------------------------------------------------------------
# The rule set as data.


def test_the_vendored_rule_set_is_gitleaks_default_config_with_its_origin_and_licence() -> None:
    origin = read_origin(DEFAULT_ORIGIN)
    assert origin.name == "gitleaks" and origin.licence == "MIT"
    assert re.fullmatch(r"v\d+\.\d+\.\d+(-\d+-g[0-9a-f]+)?", origin.version)
    assert re.fullmatch(r"[0-9a-f]{40}", origin.commit)
    assert RULES.origin == origin
    assert RULES.digest == hashlib.sha256(DEFAULT_RULES.read_bytes()).hexdigest()
    licence = (DEFAULT_RULES.parent / "gitleaks.LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Zachary Rice" in licence
    text = DEFAULT_RULES.read_text(encoding="utf-8")
    assert text.startswith("# This file has been auto-generated. Do not edit manually.")
    assert len(RULES.rules) + len(RULES.refused) == text.count("[[rules]]")
    assert len(RULES.rules) >= 200
    # The one rule of the set with nothing to run on a log: it matches file names.
    assert [(r.rule, r.reason) for r in RULES.refused] == [
        ("pkcs12-file", "matches file names only (no regex): a log has no files to name")
    ]
    assert RULES.summary == (
        f"gitleaks {origin.version}: {len(RULES.rules)} rules adopted, 1 refused"
    )


def test_help_and_docs_say_the_rule_set_version() -> None:
    from typer.testing import CliRunner

    from publisher.cli import app

    version = RULES.origin.version
    result = CliRunner().invoke(app, ["export", "--help"], terminal_width=400)
    assert f"gitleaks {version}" in result.stdout
    docs = (ROOT / "docs" / "redaction.md").read_text(encoding="utf-8")
    assert f"gitleaks {version}" in docs
    assert f"{len(RULES.rules)} rules" in docs


def test_each_marker_kind_is_a_kind_of_the_redactor() -> None:
    kinds = REDACTOR.kinds
    assert set(KINDS) <= set(kinds)
    assert {r.id for r in RULES.rules} <= set(kinds)
    # Built-in kinds are named first, the generic ones last: a marker names the most
    # specific rule that found a secret.
    assert kinds[: len(KINDS) - 2] == KINDS[:-2]
    assert kinds[-3:] == (assignments.KIND, "generic-api-key", "listed-value")


def write_rules(folder: Path, body: str) -> Path:
    path = folder / "rules.toml"
    path.write_text(body, encoding="utf-8")
    origin = {
        "name": "test",
        "version": "v0",
        "commit": "0" * 40,
        "date": "2026-01-01",
        "source": "tests",
        "licence": "MIT",
    }
    (folder / "rules.json").write_text(json.dumps(origin), encoding="utf-8")
    return path


def test_a_rule_re2_cannot_run_in_linear_time_is_refused_with_its_reason(tmp_path: Path) -> None:
    path = write_rules(
        tmp_path,
        """
[[rules]]
id = "backreference"
regex = '''(token)=\\1'''
keywords = ["token"]

[[rules]]
id = "lookahead"
regex = '''zzkey_(?=[a-z]{8})[a-z]{8}'''
keywords = ["zzkey_"]

[[rules]]
id = "files"
path = '''\\.pem$'''

[[rules]]
id = "future"
regex = '''zzfut_[a-z]{8}'''
requiredRules = ["files"]

[[rules]]
id = "group"
regex = '''zzgrp_([a-z]{8})'''
secretGroup = 3

[[rules]]
id = "fine"
regex = '''\\bzzfine_[A-Za-z0-9]{16}\\b'''
keywords = ["zzfine_"]
""",
    )
    rule_set = load_rule_set(path)
    assert [r.id for r in rule_set.rules] == ["fine"]
    reasons = {r.rule: r.reason for r in rule_set.refused}
    assert reasons["backreference"].startswith("RE2 cannot run its regex in linear time (")
    assert reasons["lookahead"].startswith("RE2 cannot run its regex in linear time (")
    assert reasons["files"] == "matches file names only (no regex): a log has no files to name"
    assert reasons["future"] == "uses requiredRules, which this engine does not know"
    assert reasons["group"] == "its secretGroup 3 is not a group of its regex"
    redactor = Redactor.create(rules=rule_set)
    text = "token=token zzkey_abcdefgh zzfine_Ab3De5Gh7Jk9Mn2P"
    assert redactor.redact_text(text) == "token=token zzkey_abcdefgh [REDACTED:fine]"
    assert "backreference" not in redactor.kinds and "fine" in redactor.kinds


def test_a_file_that_is_not_a_rule_set_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(RuleSetError, match=r"missing\.toml: cannot read"):
        load_rule_set(tmp_path / "missing.toml")
    bad = write_rules(tmp_path, "[[rules]\nid = 1")
    with pytest.raises(RuleSetError, match=r"rules\.toml: not a TOML file"):
        load_rule_set(bad)
    none = write_rules(tmp_path, 'title = "x"\n')
    with pytest.raises(RuleSetError, match="no \\[\\[rules\\]\\]"):
        load_rule_set(none)


def test_keywords_entropy_and_allowlists_apply_as_gitleaks_applies_them(tmp_path: Path) -> None:
    path = write_rules(
        tmp_path,
        """
[allowlist]
regexes = ['''^zzk_EXAMPLE''']
stopwords = ["dummy"]

[[rules]]
id = "keyed"
regex = '''zzk_([A-Za-z0-9]{12})'''
keywords = ["zzk_"]
entropy = 3.0
[[rules.allowlists]]
regexTarget = "line"
regexes = ['''# not a secret''']
[[rules.allowlists]]
condition = "AND"
paths = ['''\\.md$''']
regexes = ['''.''']

[[rules]]
id = "matched"
regex = '''(?i)[\\w.-]{0,50}?(?:zzsecret)[ \\t]*=[ \\t]*([a-z0-9]{16})'''
keywords = ["zzsecret"]
[[rules.allowlists]]
regexTarget = "match"
regexes = ['''public_zzsecret''']
""",
    )
    rule_set = load_rule_set(path)
    redactor = Redactor.create(rules=rule_set)

    def out(text: str) -> str:
        return redactor.redact_text(text)

    assert out("id zzk_Ab3De5Gh7Jk9 here") == "id zzk_[REDACTED:keyed] here"  # its group
    assert out("id zzk_aaaaaaaaaaab here") == "id zzk_aaaaaaaaaaab here"  # low entropy
    assert out("zzk_Ab3De5Gh7Jk9 # not a secret") == "zzk_Ab3De5Gh7Jk9 # not a secret"
    assert out("zzk_dummyAb3De5G") == "zzk_dummyAb3De5G"  # a stopword in the secret
    # The AND allowlist needs a path: a log has none, it never allows.
    assert out("zzk_Q1w2E3r4T5y6") == "zzk_[REDACTED:keyed]"
    # regexTarget "match" sees the name before the keyword, though RE2 runs the rule
    # from its keyword on (scan_pattern).
    assert out("db_zzsecret = 0123456789abcdef") == "db_zzsecret = [REDACTED:matched]"
    assert out("public_zzsecret = 0123456789abcdef") == "public_zzsecret = 0123456789abcdef"
    assert rule_set.rules[1].lead == 50 and rule_set.rules[1].scan.startswith("(?i)(?:zzsecret)")


def test_scan_pattern_drops_only_a_leading_name_prefix() -> None:
    assert scan_pattern(r"(?i)[\w.-]{0,50}?(?:foo)x") == ("(?i)(?:foo)x", 50)
    assert scan_pattern(r"[\w.-]{0,50}?(?i:[\w.-]{0,50}?(?:foo))") == ("(?i:(?:foo))", 100)
    assert scan_pattern(r"\bfoo[\w.-]{0,50}?") == (r"\bfoo[\w.-]{0,50}?", 0)


def test_shannon_entropy_is_gitleaks() -> None:
    assert shannon_entropy("") == 0
    assert shannon_entropy("aaaa") == 0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert shannon_entropy("aabb") == pytest.approx(1.0)


def test_the_rule_set_is_part_of_a_redactors_identity(tmp_path: Path) -> None:
    """The site build's key covers the rule set: refreshing it makes every page again."""
    other = load_rule_set(write_rules(tmp_path, "[[rules]]\nid = 'x'\nregex = 'zzx_[a-z]{8}'\n"))
    assert Redactor.create(rules=other).identity() != REDACTOR.identity()
    assert Redactor.create().identity() == REDACTOR.identity()
    assert RULES.digest.encode() in REDACTOR.identity()


def test_the_rule_set_pickles_as_its_path_and_loads_once() -> None:
    import pickle

    assert pickle.loads(pickle.dumps(RULES)) is RULES
    clone = pickle.loads(pickle.dumps(REDACTOR))
    assert clone.rules is RULES and clone.kinds == REDACTOR.kinds


# --------------------------------------------------------------------------------------
# The corpus: every adopted rule, every sample gone in every form.


def test_the_corpus_was_made_from_this_rule_set_and_covers_every_rule() -> None:
    assert CORPUS["digest"] == RULES.digest, "rules changed: run scripts/refresh_gitleaks.py"
    assert CORPUS["rules"] == RULES.origin.version
    assert set(BY_RULE) == {r.id for r in RULES.rules}
    assert len(SAMPLES) >= 2 * len(RULES.rules)
    origins = {s["origin"] for s in SAMPLES}
    assert "gitleaks test case" in origins and "generated from the rule's regex" in origins
    for sample in SAMPLES:
        assert sample["secret"] in sample["text"] and len(sample["secret"]) >= 8
        # A credential, not its pattern: no regex syntax left in it.
        assert not re.search(r"\[[a-z0-9]-|\{\d+,?\d*\}|\(\?", sample["secret"]), sample


@pytest.mark.parametrize("rule_id", sorted(BY_RULE))
def test_each_rule_finds_its_samples_and_none_survives_any_form(rule_id: str) -> None:
    provider = rule(rule_id)
    for sample in BY_RULE[rule_id]:
        text, secret = sample["text"], sample["secret"]
        assert secret in provider.secrets_in(text, RULES.allowlists), sample
        for form, shown in forms(text, secret).items():
            out = REDACTOR.redact_text(f"see {shown} here")
            assert "[REDACTED:" in out, (form, sample)
            leaked = [p for piece in pieces(secret) for p in encodings(piece) if p in out]
            assert not leaked, (form, leaked[:2], sample)
            assert REDACTOR.redact_text(out) == out, (form, sample)


def joinable(secret: str) -> bool:
    """Whether a line break in the middle of ``secret`` is one the strict joined view
    removes (docs/redaction.md, "Encoded and split forms"): the continuation is not all
    lowercase letters, a capitalised word of four letters or more or a run of slashes,
    does not look like a ``KEY=value``, a ``key:`` or a call, and does not start like a
    new token."""
    k = middle(secret)
    if k is None:
        return False
    tail = secret[k:]
    run = re.match(r"[A-Za-z0-9+/_.-]+", tail)
    if run is None or re.fullmatch(r"[a-z._-]+|[A-Z][a-z._-]{3,}|/{2,}", run.group()):
        return False
    return tail[run.end() : run.end() + 1] not in ("=", ":", "(")


LINE_SPLIT = [s for s in SAMPLES if joinable(s["secret"])]


def test_most_samples_are_joinable_when_wrapped() -> None:
    assert len(LINE_SPLIT) >= 0.85 * len(SAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("sample", LINE_SPLIT, ids=lambda s: s["rule"])
def test_a_wrapped_sample_is_joined_and_redacted(sample: dict[str, str]) -> None:
    secret = sample["secret"]
    k = middle(secret)
    assert k is not None
    wrapped = sample["text"].replace(secret, secret[:k] + "\n      " + secret[k:])
    for shown in (wrapped, json_escaped(wrapped)):
        out = REDACTOR.redact_text(f"see {shown} here")
        leaked = [p for piece in pieces(secret) for p in encodings(piece) if p in out]
        assert not leaked, (leaked[:2], out)


glue = st.sampled_from(["", " ", "\n", "\n\n", "=", ": ", '"', "\\n", "%20", ", ", "\t"])


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(SAMPLES), glue), min_size=1, max_size=8))
def test_samples_glued_together_all_disappear_and_redaction_is_idempotent(
    items: list[tuple[dict[str, str], str]],
) -> None:
    # Glued together (a secret may then run into the next one: rules end at delimiters),
    # redaction is still total and idempotent; each on its own line, every one is gone.
    text = "".join(f"{sample['text']}{sep}" for sample, sep in items)
    out = REDACTOR.redact_text(text)
    assert REDACTOR.redact_text(out) == out
    separated = "\n\n".join(sample["text"] for sample, _ in items)
    out = REDACTOR.redact_text(separated)
    for sample, _ in items:
        leaked = [p for p in pieces(sample["secret"]) if p in out]
        assert not leaked, (sample, leaked)


# --------------------------------------------------------------------------------------
# Linear time: every rule, on strings made to be slow for it.


def adversarial(provider: ProviderRule, size: int) -> list[str]:
    """Strings of about ``size`` characters that stress ``provider``: its keywords and
    samples repeated (with and without separators), a sample's first characters followed
    by a long run of its last character (a body that never ends), an assignment whose
    value never ends."""
    samples = BY_RULE[provider.id]
    text = samples[0]["text"]
    secret = samples[0]["secret"]
    start = text.index(secret)
    head = text[: start + min(len(secret), 8)]
    out = []
    for word in provider.keywords[:3] or ("x",):
        out.append((word + " ") * (size // (len(word) + 1)))
        out.append(word * (size // max(len(word), 1)))
        out.append((word + "=") * (size // (len(word) + 1)))
    out.append(text * (size // len(text)))
    out.append((text + "\n") * (size // (len(text) + 1)))
    out.append(head + secret[-1] * size)
    out.append(text[:start] + "a" * size)
    return out


def best_time(func: object, text: str, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        func(text)  # type: ignore[operator]
        times.append(time.process_time() - started)
    return min(times)


def scan_with(provider: ProviderRule) -> object:
    def scan(text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        list(provider.findings(data, text, RULES.allowlists))

    return scan


SMALL, LARGE = 20_000, 160_000  # 8 times longer: linear ~8 times slower, quadratic ~64


def grows_linearly(func: object, small: str, large: str) -> tuple[bool, float, float]:
    t_small = max(best_time(func, small), 1e-4)
    t_large = best_time(func, large)
    return t_large <= 24 * t_small + 0.05, t_small, t_large


@pytest.mark.slow
@pytest.mark.parametrize("rule_id", sorted(BY_RULE))
def test_no_rule_makes_a_scan_superlinear(rule_id: str) -> None:
    provider = rule(rule_id)
    scan = scan_with(provider)
    for small, large in zip(
        adversarial(provider, SMALL), adversarial(provider, LARGE), strict=True
    ):
        ok, t_small, t_large = grows_linearly(scan, small, large)
        assert ok, (rule_id, small[:40], f"{t_small:.4f}s -> {t_large:.4f}s")


ASSIGNMENT_ADVERSARIAL = {
    "names and values": "password=abcdefghij " * 10,
    "chained names": "token:" * 10,
    "quoted names": 'token="password": ',
    "flags": "--token --password " * 3,
    "long value": "api_key=" + "Ab1" * 40 + " ",
    "names inside values": 'TOKEN=DB_PASSWORD := "',
}


@pytest.mark.slow
@pytest.mark.parametrize("unit", ASSIGNMENT_ADVERSARIAL.values(), ids=list(ASSIGNMENT_ADVERSARIAL))
def test_the_assignments_and_the_whole_redactor_stay_linear(unit: str) -> None:
    small = unit * (SMALL // len(unit))
    large = unit * (LARGE // len(unit))
    ok, t_small, t_large = grows_linearly(REDACTOR.redact_text, small, large)
    assert ok, (unit, f"{t_small:.4f}s -> {t_large:.4f}s")


def test_markers_of_every_kind_are_left_alone() -> None:
    text = " ".join(marker(kind) for kind in REDACTOR.kinds)
    assert REDACTOR.redact_text(text) == text


# --------------------------------------------------------------------------------------
# Hot rules: what the trigger set skips, never what is found.

#: Long prose full of the everyday keywords some rules are started by (``key``,
#: ``token``, ``secret``, ``sk``, ``ey``…): after a few texts like it, those rules are
#: hot (their patterns, not their keywords, start them).
EVERYDAY = (
    "They keep the api key, the token and the secret in the vault; the password was "
    "rotated, the credentials task is done, risk assessed, key=value pairs parsed.\n"
) * 16


def redactor_with_own_detector(hot: bool) -> Redactor:
    """A redactor with a detector of its own: its rules made hot by long everyday texts
    (``hot``), or settled with none hot (every text asks the keywords' trigger set)."""
    redactor = Redactor.create()
    detector = _Detector.of(RULES)
    object.__setattr__(redactor, "_detector", detector)
    if hot:
        for i in range(64):
            redactor.redact_text(f"{i} {EVERYDAY}")
        assert detector.hot.current is not None
    else:
        detector.hot._seen = HOT_SETTLED
    return redactor


def test_hot_rules_change_what_is_skipped_never_what_is_found() -> None:
    hot, cold = redactor_with_own_detector(True), redactor_with_own_detector(False)
    for sample in SAMPLES:
        for text in (f"see {sample['text']} here", f"{EVERYDAY}{sample['text']}\n{EVERYDAY}"):
            assert hot.redact_text(text) == cold.redact_text(text), sample
            # The walk of a session asks short texts whether they are quiet first.
            value = {"output": text, "note": f"the token: {sample['secret']}"}
            assert redact_json(value, hot) == redact_json(value, cold), sample


def test_a_marker_of_every_kind_is_known_as_one() -> None:
    detector = REDACTOR._engine
    for kind in detector.kinds:
        text = f"a [{marker(kind)}] {marker(kind)}[REDACTED:not-a-kind]"
        start = text.index(marker(kind))
        second = text.rindex(marker(kind))
        assert detector.markers(text) == [
            (start, start + len(marker(kind))),
            (second, second + len(marker(kind))),
        ], kind
