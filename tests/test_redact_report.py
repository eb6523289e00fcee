"""Review before sharing (issue 35): ``polyglav redact-report`` lists every secret with where
it is and a masked preview; ``--fail-on secret`` makes ``check`` and ``export`` refuse to
publish an artifact that still holds one. Neither ever prints a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from publisher.redact import Redactor
from publisher.secret_report import describe, mask, preview, secret_findings
from tests.helpers import parse_session_bytes, part, polyglav, session_doc, turn
from tests.test_redact import CORPUS
from tests.test_redact_rules import SAMPLES

pytestmark = pytest.mark.unit

NAME = "ses_20260101_000000_aaaaaa"
HF = next(s for s in SAMPLES if s["rule"] == "huggingface-access-token")
GITHUB = next(s for s in CORPUS if s["kind"] == "github")
DB = next(s for s in CORPUS if s["kind"] == "assigned-secret")


def with_secrets(name: str = NAME) -> dict[str, object]:
    return session_doc(
        name,
        turns=[
            turn(1, part("user", "deploy it"), part("text", "done")),
            turn(
                2,
                part("user", f"run it with {DB['text']} please"),
                part("tool", name="run_command", input={"env": {"GITHUB_TOKEN": GITHUB["text"]}},
                     output=f"line one\n{HF['text']}\nline three"),
            ),
        ],
        errors=[{"code": 401, "message": f"bad token {GITHUB['text']}", "timestamp": ""}],
    )  # fmt: skip


def archive(tmp_path: Path, *docs: dict[str, object]) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for doc in docs:
        (folder / f"{doc['session_name']}.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder


def secrets() -> list[str]:
    return [HF["secret"], GITHUB["secret"], DB["secret"]]


def test_findings_say_kind_turn_part_and_field_with_the_secret_masked() -> None:
    session = parse_session_bytes(json.dumps(with_secrets()).encode(), f"{NAME}.json")
    found = secret_findings(session, Redactor.create())
    where = [(f.kind, f.turn, f.field) for f in found]
    assert where == [
        ("assigned-secret", "2.1", "text"),
        ("github", "2.2", "input.env.GITHUB_TOKEN"),
        (HF["rule"], "2.2", "output"),
        ("github", "", "errors[0].message"),  # no timestamp: placed in no turn
    ]
    for f in found:
        assert not any(secret in f.preview for secret in secrets()), f
    assert found[1].preview == mask(GITHUB["secret"])
    assert found[0].preview == f"run it with DB_PASSWORD={mask(DB['secret'])} please"
    assert mask(DB["secret"]) == f"…({len(DB['secret'])} chars)"  # a short one: no prefix
    assert describe(found, 1) == (
        f"4 secrets in 1 session (2 github, 1 assigned-secret, 1 {HF['rule']})"
    )
    assert describe([], 12) == "no secret found in 12 sessions"


def test_a_preview_is_one_line_of_bounded_length_whatever_the_text() -> None:
    secret = GITHUB["secret"]
    text = "x" * 5000 + " token " + secret + "\n\t" + "y" * 5000
    start = text.index(secret)
    shown = preview(text, start, [(start, start + len(secret), "github")])
    assert shown == "…" + "x" * 33 + " token " + mask(secret)  # 40 characters before it
    assert len(shown) < 100 and "\n" not in shown


def test_redact_report_lists_every_secret_and_never_prints_one(tmp_path: Path) -> None:
    folder = archive(
        tmp_path, with_secrets(), session_doc("notes", turns=[turn(1, part("user", "hi"))])
    )
    (folder / "broken.json").write_text("{", encoding="utf-8")
    result = polyglav("redact-report", "--all", "--project", str(folder))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    assert (
        lines[0]
        == f"{NAME} turn 2.1 text: assigned-secret: run it with DB_PASSWORD={mask(DB['secret'])} please"
    )
    assert "broken.json: does not load" in result.stderr
    assert "polyglav: 4 secrets in 1 of 2 sessions" in result.stderr
    for secret in secrets():
        assert secret not in result.stdout + result.stderr
    one = polyglav("redact-report", f"session:{NAME}", "--project", str(folder))
    assert one.exit_code == 0 and one.stdout.splitlines() == lines
    clean = polyglav("redact-report", "notes", "--project", str(folder))
    assert clean.exit_code == 0 and clean.stdout == ""
    assert "no secret found in 1 session" in clean.stderr


def test_redact_report_usage_and_missing_sessions(tmp_path: Path) -> None:
    folder = archive(tmp_path, with_secrets())
    assert polyglav("redact-report", "--project", str(folder)).exit_code == 2
    both = polyglav("redact-report", NAME, "--all", "--project", str(folder))
    assert both.exit_code == 2 and "not both" in both.stderr
    missing = polyglav("redact-report", "nope", "--project", str(folder))
    assert missing.exit_code == 1 and "nope" in missing.stderr
    values = tmp_path / "values.txt"
    values.write_text("deploy it\n", encoding="utf-8")
    listed = polyglav(
        "redact-report", NAME, "--project", str(folder), "--redact-values", str(values)
    )
    assert listed.exit_code == 0 and "listed-value" in listed.stdout


def test_fail_on_secret_refuses_an_unredacted_artifact(tmp_path: Path) -> None:
    folder = archive(tmp_path, with_secrets())
    out = tmp_path / "review.html"
    bad = polyglav("export", NAME, "--project", str(folder), "--format", "html", "--out", str(out),
                   "--fail-on", "secret")  # fmt: skip
    assert bad.exit_code == 1
    assert out.exists()  # the export is written whatever the verdict
    assert "polyglav: fail-on secret: no turn: secret github in errors[0].message:" in bad.stderr
    assert "(and 3 more secret: turn 2.1, turn 2.2, turn 2.2)" in bad.stderr
    good = polyglav("export", NAME, "--project", str(folder), "--format", "html", "--out", str(out),
                    "--fail-on", "secret", "--redact")  # fmt: skip
    assert good.exit_code == 0, good.stderr
    check = polyglav("check", NAME, "--project", str(folder), "--fail-on", "secret")
    assert check.exit_code == 1 and "4 secret" in check.stdout
    for result in (bad, good, check):
        for secret in secrets():
            assert secret not in result.stdout + result.stderr
    # check's default gates on every kind but secret.
    default = polyglav("check", NAME, "--project", str(folder))
    assert "secret" not in default.stdout + default.stderr


def test_fail_on_secret_flags_a_secret_in_a_session_name_redaction_keeps(tmp_path: Path) -> None:
    token = GITHUB["secret"]
    name = f"notes-{token}"
    folder = archive(tmp_path, session_doc(name, turns=[turn(1, part("user", "hello"))]))
    result = polyglav("check", name, "--project", str(folder), "--fail-on", "secret", "--redact")
    assert result.exit_code == 1
    assert (
        "secret github in session_name (a session identifier: --redact keeps it)" in result.stderr
    )


def test_summary_and_junit_list_secrets_only_when_the_gate_asks(tmp_path: Path) -> None:
    folder = archive(tmp_path, with_secrets())
    summary = polyglav(
        "check", NAME, "--project", str(folder), "--fail-on", "error", "--summary", "-"
    )
    assert "secret" not in summary.stdout
    asked = polyglav(
        "check", NAME, "--project", str(folder), "--fail-on", "secret", "--summary", "-"
    )
    assert "| secret |" in asked.stdout
    report = tmp_path / "report.xml"
    polyglav("export", NAME, "--project", str(folder), "--format", "junit", "--out", str(report),
             "--fail-on", "secret")  # fmt: skip
    xml = report.read_text(encoding="utf-8")
    # The failure's message names the secret masked (its body, the turn's Markdown, is the
    # unredacted session: that is what the gate refuses to publish).
    assert (
        f'<failure type="secret" message="secret github in errors[0].message: bad token {mask(GITHUB["secret"])}">'
        in xml
    )
