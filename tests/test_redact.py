"""Secret redaction for sharing (issue 5): a corpus of fake secrets, in every field of a
session and in raw, JSON-escaped, URL-encoded and line-split forms, never reaches the
rendered output; ordinary sessions come out unchanged; the scan stays linear."""

from __future__ import annotations

import copy
import dataclasses
import html
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from publisher.loader import SessionLoadError, read_session
from publisher.model import CommandPart, Session
from publisher.redact import (
    KINDS,
    MIN_VALUE_LENGTH,
    Redactor,
    describe_counts,
    identifier_findings,
    load_values_file,
    marker,
    redact_json,
    redact_recorded,
    redact_session,
)
from publisher.render.markdown import export_markdown
from tests.helpers import (
    ROOT,
    SAMPLES,
    parse_session_bytes,
    part,
    session_doc,
    turn,
)

pytestmark = pytest.mark.unit

CORPUS: list[dict[str, str]] = json.loads(
    (ROOT / "tests" / "data" / "secrets.json").read_text(encoding="utf-8")
)["samples"]
LISTED = [sample["text"] for sample in CORPUS if sample["kind"] == "listed-value"]
SESSION_NAME = "ses_20260817_120000_ab12cd"


def new_redactor() -> Redactor:
    return Redactor.create(LISTED)


class Counting:
    """A redactor with the counts of everything redacted through it (the redactor itself is
    immutable and keeps none)."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self.redactor = redactor or new_redactor()
        self.counts: Counter[str] = Counter()

    def redact_text(self, text: str) -> str:
        return self.redactor.redact_text(text, self.counts)

    def scan(self, text: str) -> Counter[str]:
        return self.redactor.scan(text)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# --------------------------------------------------------------------------------------
# Forms of a secret.


def split_point(secret: str) -> int:
    """The index nearest the middle with a letter or digit on both sides."""
    middle = len(secret) // 2
    for offset in range(len(secret)):
        for k in (middle - offset, middle + offset):
            if 0 < k < len(secret) and secret[k - 1].isalnum() and secret[k].isalnum():
                return k
    raise AssertionError(f"no split point in {secret!r}")


def json_escaped(text: str, ascii_only: bool = True, slashes: bool = True) -> str:
    """``text`` as it appears inside a JSON string literal (``\\n``, ``\\/``, ``\\u00fc``)."""
    escaped = json.dumps(text, ensure_ascii=ascii_only)[1:-1]
    return escaped.replace("/", "\\/") if slashes else escaped


def split(sample: dict[str, str], separator: str) -> str:
    secret = sample["secret"]
    k = split_point(secret)
    return sample["text"].replace(secret, secret[:k] + separator + secret[k:])


FORMS: dict[str, Callable[[dict[str, str]], str]] = {
    "raw": lambda s: s["text"],
    "json-escaped": lambda s: json_escaped(s["text"]),
    "url-encoded": lambda s: quote(s["text"], safe=""),
    "line-split": lambda s: split(s, "\n      "),
    "backslash-split": lambda s: split(s, "\\\n"),
    "json-escaped-split": lambda s: json_escaped(split(s, "\n    ")),
}


def forbidden(sample: dict[str, str]) -> set[str]:
    """The secret, its halves, its key lines, each in every escaped form an output may use."""
    secret = sample["secret"]
    k = split_point(secret)
    pieces = [secret, secret[:k], secret[k:]]
    if sample["kind"] == "private-key":
        pieces += [line for line in secret.splitlines() if len(line) >= 16 and ":" not in line]
    out: set[str] = set()
    for piece in pieces:
        out |= {
            piece,
            json_escaped(piece),
            json_escaped(piece, ascii_only=False),
            json_escaped(piece, slashes=False),
            json_escaped(piece, ascii_only=False, slashes=False),
            quote(piece, safe=""),
            quote(piece, safe="/"),
            html.escape(piece),
            html.escape(piece, quote=False),
        }
    assert all(len(piece) >= 6 for piece in out)
    return out


# --------------------------------------------------------------------------------------
# Walking a session.


def all_strings(obj: Any, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """Every string reachable from a model object: fields, JSON values and dict keys."""
    stack: list[Any] = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            for f in dataclasses.fields(item):
                if f.name not in skip:
                    stack.append(getattr(item, f.name))
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


IDENTIFIERS = frozenset({"session_name", "session_id", "file_name"})


def deep(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = {"level": value}
    return value


def session_with(value: str) -> Session:
    """A session carrying ``value`` in every field a session file has, and a few new ones."""
    c = f"see {value} here"
    doc = session_doc(
        SESSION_NAME,
        role=c,
        version=c,
        parent_id=c,
        created_at=c,
        updated_at=c,
        sub_sessions=[c],
        future_field=c,
        future_nested={c: [c, {"k": c, "n": 1.5}]},
        turns=[
            turn(
                1,
                part("user", c, timestamp=c, attachment={"name": c}),
                part("thinking", c),
                part("text", c),
                part("system", c),
                part(
                    "tool",
                    name=c,
                    input={
                        c: c,
                        "args": [c, {"nested": {c: [c, 7, None, True]}}],
                        "deep": deep({c: c}, 150),
                    },
                    output=c,
                    is_error=True,
                    analysis=c,
                ),
                part("command", c, summary=c, compact_from=1),
                {"type": "future_part", "payload": c, c: [c]},
                status=c,
                model=c,
                provider=c,
                mode=c,
                reasoning=c,
                started_at=c,
                ended_at=c,
                turn_note=c,
            ),
        ],
        errors=[{"code": c, "message": c, "timestamp": c, "detail": {"x": c}}],
        permissions=[
            {
                "tool": c,
                "action": c,
                "decision": c,
                "path": f"/home/dana/{c}/file.txt",
                "timestamp": c,
                "reason": c,
            }
        ],
    )
    return parse_session_bytes(json.dumps(doc).encode("utf-8"), f"{SESSION_NAME}.json")


def form_param(*values: Any, form: str, id: str | None = None) -> Any:
    """A parameter set for one form of a value: the raw form runs in the fast subset, the
    encoded forms are marked slow (the full suite runs every form)."""
    return pytest.param(*values, id=id or form, marks=[] if form == "raw" else [pytest.mark.slow])


CASES = [
    form_param(sample, form, form=form, id=f"{i:02d}-{sample['kind']}-{form}")
    for i, sample in enumerate(CORPUS)
    for form in FORMS
]


def test_corpus_is_large_and_fake_looking() -> None:
    assert len(CORPUS) >= 25
    assert {sample["kind"] for sample in CORPUS} <= set(KINDS)
    assert len({sample["kind"] for sample in CORPUS}) >= 15
    assert len({sample["secret"] for sample in CORPUS}) == len(CORPUS)
    for sample in CORPUS:
        assert sample["secret"] in sample["text"]
        assert len(sample["secret"]) >= 12


@pytest.mark.parametrize(("sample", "form"), CASES)
def test_secret_in_every_field_and_form_is_redacted(sample: dict[str, str], form: str) -> None:
    value = FORMS[form](sample)
    session = session_with(value)
    before = copy.deepcopy(session)
    expected = sum(s.count(value) for s in all_strings(session, IDENTIFIERS))
    assert expected >= 40  # the value really is in every field

    redacted, counts = redact_session(session, new_redactor())

    assert session == before, "the input session was modified"
    assert counts == Counter({sample["kind"]: expected})
    bad = forbidden(sample)
    for text in all_strings(redacted):
        assert not any(piece in text for piece in bad), text
    command = redacted.turns[0].parts[5]
    assert isinstance(command, CommandPart)
    assert command.compact_from == 1
    assert redacted.session_name == SESSION_NAME
    assert redacted.file_name == f"{SESSION_NAME}.json"

    markdown = "".join(export_markdown(redacted))
    leaked = sorted(piece for piece in bad if piece in markdown)
    assert not leaked, f"{form} form leaked into the Markdown export: {leaked[:3]}"
    assert marker(sample["kind"]) in markdown


@pytest.mark.parametrize(
    "form", [form_param(f, form=f) for f in ["raw", "json-escaped", "url-encoded", "line-split"]]
)
def test_html_export_of_redacted_session_holds_no_secret(form: str) -> None:
    from publisher.site.single import export_html

    values = [FORMS[form](sample) for sample in CORPUS]
    session = session_with("\n\n".join(values))
    redacted, counts = redact_session(session, new_redactor())
    page = "".join(export_html(redacted))
    for sample in CORPUS:
        leaked = sorted(piece for piece in forbidden(sample) if piece in page)
        assert not leaked, f"{sample['kind']} leaked into the HTML page: {leaked[:3]}"
    assert sum(counts.values()) >= len(CORPUS) * 40


@pytest.mark.parametrize("sample", CORPUS, ids=lambda s: s["kind"])
def test_each_sample_gets_its_kind(sample: dict[str, str]) -> None:
    redactor = Counting()
    text = f"before {sample['text']} after"
    out = redactor.redact_text(text)
    assert out == text.replace(sample["secret"], marker(sample["kind"]))
    assert redactor.counts == Counter({sample["kind"]: 1})


# --------------------------------------------------------------------------------------
# Hypothesis: total, idempotent, never adds a secret.

any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=80)
glue = st.sampled_from(
    [
        "",
        " ",
        "\n",
        "\n    ",
        "\\\n",
        "\\n",
        "%20",
        "%2F",
        "=",
        ":",
        "@",
        "/",
        "x",
        '"',
        "[REDACTED:openai]",
        "://",
        "user:",
        "Bearer ",
        "Authorization: Basic ",
        "aws_secret_access_key=",
        "-----BEGIN PRIVATE KEY-----\n",
        "-----END PRIVATE KEY-----",
    ]
)
secret_forms = st.builds(
    lambda sample, form: FORMS[form](sample), st.sampled_from(CORPUS), st.sampled_from(list(FORMS))
)
mixed_text = st.lists(any_text | glue | secret_forms, max_size=12).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_text)
def test_redact_text_is_total_idempotent_and_never_adds_secrets(text: str) -> None:
    redactor = Counting()
    once = redactor.redact_text(text)
    total = redactor.total
    assert redactor.redact_text(once) == once
    assert redactor.total == total, "a second pass found more"
    for sample in CORPUS:
        for needle in (sample["secret"], *(form(sample) for form in FORMS.values())):
            assert once.count(needle) <= text.count(needle)
    assert (total == 0) == (once == text)


@settings(max_examples=200, deadline=None)
@given(any_text)
def test_redact_text_never_raises_on_any_text(text: str) -> None:
    redactor = new_redactor()
    once = redactor.redact_text(text)
    assert redactor.redact_text(once) == once


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.sampled_from(CORPUS), st.sampled_from(list(FORMS))), min_size=1),
    st.sampled_from(["\n\n", " ; ", "\n", "\t", ", ", "\n    ", "\r\n", " \\\n  "]),
)
def test_separated_secrets_all_disappear(
    items: list[tuple[dict[str, str], str]], separator: str
) -> None:
    redactor = Counting()
    out = redactor.redact_text(separator.join(FORMS[form](sample) for sample, form in items))
    for sample, _ in items:
        assert not any(piece in out for piece in forbidden(sample))
    assert redactor.total >= 1


def test_a_wrapped_value_glued_to_the_next_line_keeps_its_second_half_hidden() -> None:
    # The joined view reads the wrapped value and the next, indented line as one value,
    # which ends in ".example" (a placeholder): its prefix at the join is the secret.
    for text in (
        "client_secret: 5hJ8kL2m\\\nN9pQ4rT7\n    acme-fyxg0yod.internal.example",
        "export PAYMENTS_API_KEY=Zq7Wd3Hs\n      x2Kp8Rv5\n    see docs.example",
    ):
        out = Counting().redact_text(text)
        assert "N9pQ4rT7" not in out and "x2Kp8Rv5" not in out, out
        assert "[REDACTED:assigned-secret]" in out


# --------------------------------------------------------------------------------------
# False positives.


def loadable_samples() -> list[Path]:
    paths = []
    for path in sorted(SAMPLES.glob("*.json")):
        try:
            read_session(path)
        except SessionLoadError:
            continue  # the deliberately broken samples (legacy formats)
        paths.append(path)
    return paths


@pytest.mark.parametrize("path", loadable_samples(), ids=lambda p: p.name)
def test_sample_sessions_come_out_unchanged(path: Path) -> None:
    session = read_session(path)
    redacted, counts = redact_session(session, new_redactor())
    assert not counts, counts
    assert redacted == session
    assert list(all_strings(redacted)) == list(all_strings(session))
    assert "".join(export_markdown(redacted)) == "".join(export_markdown(session))


def test_a_record_replays_what_was_replaced_and_nothing_when_nothing_was() -> None:
    """A build that reads a session file again puts back what the record says: the same
    session as looking again; a record of no secret gives back the session itself."""
    redactor = new_redactor()
    secret = CORPUS[0]["secret"]
    session = session_with(secret)
    fresh, record = redact_recorded(session, redactor, "digest")
    assert record.changes and record.counts
    replayed, same = redact_recorded(session_with(secret), redactor, "digest", record)
    assert same is record
    assert replayed == fresh
    assert secret not in "".join(all_strings(replayed))
    plain = read_session(loadable_samples()[0])
    _, quiet = redact_recorded(plain, redactor, "other")
    assert not quiet.changes
    again, _ = redact_recorded(plain, redactor, "other", quiet)
    assert again is plain
    # a record of other bytes is not used: the session is looked at afresh
    looked, other = redact_recorded(session_with(secret), redactor, "changed", quiet)
    assert other is not quiet and looked == fresh


def test_there_are_loadable_samples() -> None:
    assert len(loadable_samples()) >= 4


ORDINARY = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    "merge e83c5163316f89bfbde7d9ab23ca2e25604af290 into 1f2e3d4c",
    "request id 123e4567-e89b-12d3-a456-426614174000 took 42 ms",
    "base64.b64encode(b'hello world') == b'aGVsbG8gd29ybGQ='",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "/home/dana/src/inventory-api/app/service.py:42: AssertionError",
    "C:\\Users\\dana\\AppData\\Local\\Temp\\new_folder\\test.txt",
    "def task_runner(sk_test_value):\n    return sk_test_value\n",
    "class sk-button-primary-large-variant { color: red }",
    "risk-assessment-for-the-quarterly-plan-2024 and desk-organizer-deluxe-edition-v2",
    "The bearer of bad news. Use Bearer authentication: Bearer $TOKEN or Bearer <token>.",
    "curl -H 'Authorization: Bearer ${API_KEY}' https://api.example.com/v1/items",
    "Authorization: Basic realm=example and Authorization: Bearer YOUR_TOKEN_HERE",
    "see https://docs.python.org/3/reference/expressions.html#comparisons",
    "postgres://user:${DB_PASSWORD}@localhost/db, redis://:*****@cache, <user>:<password>@host",
    "http://localhost:8000/@user and git@github.com:org/repo.git and ssh://git@host:22/x",
    "if line.startswith('-----BEGIN PRIVATE KEY-----'):\n    return parse(line)\n",
    "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
    "AIza, eyJ, xoxb-, ghp_, glpat-, sk-, AKIA are prefixes we scan for",
    "aws_secret_access_key = <your secret key> and aws_access_key_id = YOUR_KEY_ID",
    "    value = compute(\n        x,\n        y)\n    return value\n",
    "ÄÖÜ ß – “quotes” 😀 日本語のテキスト",
    "progress: 100% done, 50%25 encoded, \\n escaped, \\/ slash",
    "[REDACTED:openai] was already redacted",
    "eyJhbGciOiJIUzI1NiJ9 is only a JWT header",
    "Version 1.2.3-rc.4+build.5 on linux-x86_64",
    # Look-alikes of what the rule set and the assignments by name look for (issue 35).
    "git checkout 9fceb02d0ae598e95dc970b74767f19372d61af8 && git log -1 e83c516",
    "uuid 550e8400-e29b-41d4-a716-446655440000, trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
    "image: python@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "checksum sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    '"version": "2.31.0", "api_version": "2024-06-01", requests==2.31.0, node v20.11.1',
    ".button { color: #ff00aa; background: #1a2b3c; border-color: #FFF; }",
    "see https://docs.github.com/en/rest/repos?apiVersion=2022-11-28#list-tags and "
    "https://example.com/api/v1/token/refresh?page=2&per_page=100",
    "The password must be at least 12 characters; your password is stored hashed.",
    "Forgot your password? Enter your password: ******** (the password field is required)",
    "DB_PASSWORD=${DB_PASSWORD}\nexport API_TOKEN=$API_TOKEN\npassword: ${{ secrets.DB_PASSWORD }}",
    "API_KEY=your-api-key-here\nOPENAI_API_KEY=<your-openai-key>\nSECRET_KEY=changeme",
    "token = os.environ['GITHUB_TOKEN']; password = getpass.getpass(); key = settings.API_KEY",
    "def login(username: str, password: str, token: Optional[str] = None) -> Session:",
    "client = Client(api_key=api_key, secret=secret_value, token=self.token)",
    "max_tokens: 4096, input_tokens: 1523, token_count=87, tokens_per_second=41.2",
    '"token_type": "bearer", "secretName": "db-credentials", secret: my-tls-secret',
    "PASSWORD=$(openssl rand -hex 32) && echo $PASSWORD | docker secret create db_pw -",
    "password_file=/run/secrets/db_password and --password-stdin and --token-file ~/.token",
    "passwd: files systemd (nsswitch), bypass=true, compass=north, passport=XK",
    '"password": "", "token": null, "api_key": "xxxxxxxxxxxxxxxx", secret=********',
    "Authorization: Bearer ${TOKEN} and key=value pairs: key1=abc key2=def",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    redactor = Counting()
    assert redactor.redact_text(text) == text
    assert redactor.total == 0


def test_wrapped_lines_are_not_glued_to_a_secret() -> None:
    key = next(s["text"] for s in CORPUS if s["note"] == "legacy user key")
    ant = next(s["text"] for s in CORPUS if s["note"] == "API key" and s["kind"] == "anthropic")
    redactor = Counting()
    text = f"OPENAI_API_KEY={key}\nANTHROPIC_API_KEY={ant}\n  next: {key}\n    return x\n"
    assert redactor.redact_text(text) == (
        "OPENAI_API_KEY=[REDACTED:openai]\nANTHROPIC_API_KEY=[REDACTED:anthropic]\n"
        "  next: [REDACTED:openai]\n    return x\n"
    )
    assert redactor.counts == Counter({"openai": 2, "anthropic": 1})


def test_a_build_logs_words_and_comments_are_not_glued_to_a_secret() -> None:
    # An indented "Compiling ..." line or "// ..." comment is not a token's continuation:
    # the secret before it is redacted, the line stays as written.
    for line in ("    Compiling serde v1.0.219", "    // retries once", "    Finished `dev`"):
        text = f"export PAYMENTS_API_KEY=Zq7Wd3Hsx2Kp8Rv5\n{line}\n"
        out = Counting().redact_text(text)
        assert out == f"export PAYMENTS_API_KEY=[REDACTED:assigned-secret]\n{line}\n", out


def test_a_token_wrapped_over_a_short_capitalised_piece_is_joined_whole() -> None:
    # The middle line ("Ab", "Xyz") is a short run, read past by the break finder: the
    # break after it is still one to join.
    for middle in ("Ab", "Xyz", "Q"):
        text = f"token: sk-proj-Ab3dEfGh1jKlMnOp\n    {middle}\n    Qr7StUvWx0123yZ\n"
        out = Counting().redact_text(text)
        assert "Qr7StUvWx0123yZ" not in out and "MnOp" not in out, out


# --------------------------------------------------------------------------------------
# The API.


def test_counts_are_the_callers_and_the_redactor_is_immutable() -> None:
    redactor = new_redactor()
    counts: Counter[str] = Counter()
    assert describe_counts(counts) == "no secrets redacted"
    aws = next(s["text"] for s in CORPUS if s["kind"] == "aws-access-key")
    text = f"{aws} and {aws} and {LISTED[0]}"
    redactor.redact_text(text, counts)
    assert counts == Counter({"aws-access-key": 2, "listed-value": 1})
    assert describe_counts(counts) == "3 secrets redacted (2 aws-access-key, 1 listed-value)"
    assert redactor.redact_text(text) == redactor.redact_text(text, Counter())  # no counts kept
    with pytest.raises(AttributeError):
        redactor.values = ()  # type: ignore[misc]
    assert describe_counts(Counter({"jwt": 1})) == "1 secret redacted (1 jwt)"


def test_scan_reports_without_changing_counts() -> None:
    redactor = Counting()
    jwt = next(s["text"] for s in CORPUS if s["kind"] == "jwt")
    assert redactor.scan(f"x {jwt} y") == Counter({"jwt": 1})
    assert redactor.total == 0


def test_markers_are_never_redacted_again() -> None:
    redactor = Counting()
    text = " ".join(marker(kind) for kind in KINDS)
    assert redactor.redact_text(text) == text
    assert redactor.total == 0


def test_create_rejects_values_that_would_break_redaction() -> None:
    with pytest.raises(ValueError, match="shorter than"):
        Redactor.create(["abc"])
    for bad in ("REDACTED", "openai", "[REDACTED:x"):
        with pytest.raises(ValueError, match="marker"):
            Redactor.create([bad])
    redactor = Redactor.create(["", "s3cr3t-value", "s3cr3t-value"])
    assert redactor.values == ("s3cr3t-value",)
    assert Redactor.create().values == ()


def test_listed_values_in_encoded_forms() -> None:
    value = "p@ss w0rd/+Grün"
    redactor = Redactor.create([value])
    forms = [
        value,
        quote(value, safe=""),
        quote(value, safe="").replace("%20", "+"),
        json_escaped(value),
        json_escaped(value, ascii_only=False),
        "p@ss w0\n   rd/+Grün",
        "p@ss w0rd/+Gr\\\nün",
    ]
    out = redactor.redact_text("\n\n".join(forms))
    assert out == "\n\n".join([marker("listed-value")] * len(forms))


def test_load_values_file(tmp_path: Path) -> None:
    path = tmp_path / "values.txt"
    path.write_bytes(
        "\ufeff# secrets to hide\n\nfirst-value\n  second value  \r\n   # indented comment\nthird\n".encode()
    )
    assert load_values_file(path) == ["first-value", "second value", "third"]


def test_load_values_file_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    with pytest.raises(ValueError, match=r"missing\.txt: cannot read"):
        load_values_file(missing)
    with pytest.raises(ValueError, match="cannot read"):
        load_values_file(tmp_path)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"ok-value\n\xff\xfe\n")
    with pytest.raises(ValueError, match=r"binary\.txt: .*not UTF-8"):
        load_values_file(binary)
    short = tmp_path / "short.txt"
    short.write_text("long-enough\nab\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"short\.txt:2: .*shorter than {MIN_VALUE_LENGTH}"):
        load_values_file(short)


@pytest.mark.slow
def test_redact_json_walks_deep_values_without_recursion() -> None:
    key = next(s["text"] for s in CORPUS if s["kind"] == "github")
    value: Any = [key]
    for _ in range(10_000):
        value = {key: value, "n": 1}
    counts: Counter[str] = Counter()
    out = redact_json(value, new_redactor(), counts)
    assert counts == Counter({"github": 10_001})
    for _ in range(10_000):
        assert list(out) == [marker("github"), "n"]
        out = out[marker("github")]
    assert out == [marker("github")]


def test_long_texts_alike_at_both_ends_are_each_redacted_for_what_they_hold() -> None:
    # A long text is found again by its length and ends, then compared whole: one that
    # differs only in its middle is looked at, not given the other's result.
    aws = next(s["text"] for s in CORPUS if s["kind"] == "aws-access-key")
    head, tail = "log line\n" * 300, "\nend of log" * 300
    plain = f"{head}{'x' * len(aws)}{tail}"
    secret = f"{head}{aws}{tail}"
    counts: Counter[str] = Counter()
    out = redact_json([plain, secret, plain, secret], new_redactor(), counts)
    assert isinstance(out, list)
    assert out[0] == out[2] == plain
    assert out[1] == out[3] == f"{head}[REDACTED:aws-access-key]{tail}"
    assert counts == Counter({"aws-access-key": 2})


def test_redact_json_keeps_keys_apart_and_copies() -> None:
    a, b = [s["text"] for s in CORPUS if s["kind"] == "github"][:2]
    source = {a: 1, b: 2, "plain": [1.5, None, True, {"x": "y"}]}
    original = copy.deepcopy(source)
    out = redact_json(source, new_redactor())
    assert out == {
        "[REDACTED:github]": 1,
        "[REDACTED:github] (2)": 2,
        "plain": [1.5, None, True, {"x": "y"}],
    }
    out["plain"][3]["x"] = "changed"
    assert source == original


def test_identifiers_are_kept_and_reported() -> None:
    key = next(s["text"] for s in CORPUS if s["kind"] == "google-api-key")
    doc = session_doc(f"notes-{key}", turns=[turn(1, part("user", key))])
    session = parse_session_bytes(json.dumps(doc).encode(), f"notes-{key}.json")
    redactor = new_redactor()
    redacted, counts = redact_session(session, redactor)
    assert redacted.session_name == session.session_name
    assert redacted.file_name == session.file_name
    assert counts == Counter({"google-api-key": 1})
    warnings = identifier_findings(session, redactor)
    assert len(warnings) == 2
    assert all("google-api-key" in w for w in warnings)


# --------------------------------------------------------------------------------------
# Linear time.

MB5 = 5_000_000
ADVERSARIAL = {
    "one long token run": "a" * MB5,
    "repeated sk- prefix": "sk-" * (MB5 // 3),
    "repeated eyJ segments": ("eyJ" + "a" * 10 + ".") * (MB5 // 14),
    "schemes and long authorities": ("a://" + "b:" * 400 + "@") * (MB5 // 805),
    "private key headers without end": "-----BEGIN RSA PRIVATE KEY-----\n" * (MB5 // 32),
    "key body never closed": "-----BEGIN PRIVATE KEY-----\n" + ("A" * 64 + "\n") * (MB5 // 65),
    "JSON escapes": "\\n\\/" * (MB5 // 4),
    "percent escapes": "%2B%C3%A9" * (MB5 // 9),
    "indented continuation lines": "ab\n    cd" * (MB5 // 9),
    "bearer words": "Bearer Bearer " * (MB5 // 14),
    "key headers nested in header lines": "-----BEGIN PRIVATE KEY-----\n"
    + "A" * 20
    + "\nX: -----BEGIN PRIVATE KEY-----" * (MB5 // 31),
    "many URL passwords": "x://a:b@" * (MB5 // 8),
    "many wrapped keys": "sk-proj-Ab3dEfGh1jKlMnOpQr\n    StUvWx0123 " * (MB5 // 40),
}


@pytest.mark.slow
@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=list(ADVERSARIAL))
def test_adversarial_5mb_text_is_fast(text: str) -> None:
    redactor = new_redactor()
    start = time.perf_counter()
    out = redactor.redact_text(text)
    elapsed = time.perf_counter() - start
    assert elapsed < 10, f"{elapsed:.1f}s for {len(text):,} characters"
    assert redactor.redact_text(out) == out


@pytest.mark.slow
def test_big_text_with_a_few_secrets() -> None:
    code = "    def foo(self, x):\n        return self.bar(x) + 1  # see https://example.com\n"
    samples = [s for s in CORPUS if s["kind"] != "listed-value"][:6]
    chunk = code * 10_000
    text = chunk + "".join(f"\n{s['text']}\n{chunk}" for s in samples)
    redactor = Counting()
    start = time.perf_counter()
    out = redactor.redact_text(text)
    assert time.perf_counter() - start < 20
    assert redactor.total == len(samples)
    assert all(s["secret"] not in out for s in samples)
