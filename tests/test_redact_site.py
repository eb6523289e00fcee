"""A redacted site build leaves no byte of any secret in any output: pages, side files,
the search index (decompressed), the manifest and the fragment cache."""

from __future__ import annotations

import gzip
import html
import json
from pathlib import Path
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from publisher.cli import app
from publisher.redact import Redactor
from tests.helpers import (
    MAIN,
    OLD_NS,
    SAMPLES,
    build,
    page_of,
    part,
    polyglav,
    session_doc,
    tree_digest,
    turn,
    write_json,
)
from tests.test_redact import CORPUS, FORMS, LISTED, forbidden, form_param, json_escaped

pytestmark = pytest.mark.site

runner = CliRunner()


def carrying(name: str, value: str) -> dict[str, object]:
    return session_doc(
        name,
        role=f"role {value}",
        turns=[
            turn(
                1,
                part("user", f"please use {value} now"),
                part("thinking", f"the key is {value}"),
                part("tool", name="run_command", input={"env": {"TOKEN": value}, "argv": [value]},
                     output=f"export TOKEN={value}\n", analysis=f"found {value}"),
                part("text", f"Done with `{value}`."),
                part("system", value),
                part("command", f"/login {value}", summary=value, compact_from=1),
                model=f"m {value}",
            )
        ],
        errors=[{"code": 401, "message": f"bad key {value}", "timestamp": ""}],
        permissions=[{"tool": "t", "action": "ask", "decision": "granted", "path": value, "timestamp": ""}],
    )  # fmt: skip


def output_bytes(out: Path) -> list[tuple[Path, bytes]]:
    found = []
    for path in sorted(out.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        found.append((path, data))
    return found


@pytest.mark.parametrize(
    "form", [form_param(f, form=f) for f in ["raw", "json-escaped", "url-encoded", "line-split"]]
)
def test_redacted_site_holds_no_secret(form: str, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i, sample in enumerate(CORPUS):
        name = f"ses_20260101_000000_s{i:05d}"
        (sessions / f"{name}.json").write_text(json.dumps(carrying(name, FORMS[form](sample))))
    out = tmp_path / "site"
    report = build(sessions, out, search=True, redactor=Redactor.create(LISTED))
    assert report.sessions == len(CORPUS) and report.search.startswith("built ")
    outputs = output_bytes(out)
    assert any(p.relative_to(out).parts[0] == "search" for p, _ in outputs)
    for sample in CORPUS:
        for needle in forbidden(sample):
            encoded = needle.encode("utf-8")
            leaks = [p.relative_to(out).as_posix() for p, data in outputs if encoded in data]
            assert leaks == [], (sample["kind"], needle, leaks[:3])
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "Redaction is on:" in index
    for i in range(len(CORPUS)):
        page = page_of(out, f"ses_20260101_000000_s{i:05d}").read_text(encoding="utf-8")
        assert "Redaction is on:" in page and "[REDACTED:" in page


def test_samples_are_not_redacted_and_redaction_is_announced(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    build(SAMPLES, plain)
    redacted = tmp_path / "redacted"
    build(SAMPLES, redacted, redactor=Redactor.create())
    differing = {k for k, v in tree_digest(plain).items() if tree_digest(redacted).get(k) != v}
    # Only the notices (the archive-wide Errors and Decisions pages carry one too).
    assert differing == {p.relative_to(plain).as_posix() for p in plain.rglob("*.html")}
    for path in redacted.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert "no secrets redacted" in text and "[REDACTED:" not in text.replace(
            "[REDACTED:kind]", ""
        )


def test_turning_redaction_on_rereads_everything(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    secret = next(s for s in CORPUS if s["kind"] == "github")
    (sessions / "ses_20260101_000000_aaaaaa.json").write_text(
        json.dumps(carrying("ses_20260101_000000_aaaaaa", secret["text"]))
    )
    out = tmp_path / "site"
    build(sessions, out)
    page = page_of(out, "ses_20260101_000000_aaaaaa")
    assert secret["secret"].encode() in page.read_bytes()  # unredacted at first
    build(sessions, out, redactor=Redactor.create())
    for path, data in output_bytes(out):
        assert secret["secret"].encode() not in data, path


def test_cli_redact_flags(tmp_path: Path) -> None:
    values = tmp_path / "values.txt"
    values.write_text("# team names\ninventory-api\n")
    result = runner.invoke(app, ["export", "#ab12cd", "--project", str(SAMPLES), "--out", "-", "--redact-values",
                                 str(values)])  # fmt: skip
    assert result.exit_code == 0
    assert "inventory-api" not in result.stdout and "[REDACTED:listed-value]" in result.stdout
    assert "- **Redaction:** on, 11 secrets redacted (11 listed-value)" in result.stdout
    assert "polyglav: 11 secrets redacted (11 listed-value)" in result.stderr
    values.write_text("ab\n")
    bad = runner.invoke(app, ["export", "#ab12cd", "--project", str(SAMPLES), "--out", "-", "--redact-values",
                              str(values)])  # fmt: skip
    assert bad.exit_code == 2 and "values.txt:1" in bad.stderr
    site = runner.invoke(app, ["site", "build", "--project", str(SAMPLES), "--out", str(tmp_path / "s"),
                               "--no-search", "--redact"])  # fmt: skip
    assert site.exit_code == 0
    assert "Redaction is on: no secrets redacted" in (tmp_path / "s" / "index.html").read_text()


def test_a_value_added_to_the_values_file_is_redacted_from_the_pages_that_hold_it(
    tmp_path: Path,
) -> None:
    """Incremental builds with --redact-values: adding a value to the file re-renders the
    pages (and caches) that hold it, though no session file changed; removing it shows it
    again. Every step equals a fresh build, and no output file keeps the value."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    holder = session_doc(turns=[turn(1, part("user", "deploy project-zeta-42 today"))])
    write_json(sessions / f"{MAIN}.json", holder, OLD_NS)
    write_json(sessions / "notes.json", session_doc("notes", turns=[turn(1, part("user", "hi"))]), OLD_NS)  # fmt: skip
    values = tmp_path / "values.txt"
    values.write_text("# nothing listed yet\n")
    out = tmp_path / "site"

    def site_build(target: Path) -> None:
        result = polyglav("site", "build", "--project", str(sessions), "--out", str(target),
                          "--no-search", "-q", "--redact-values", str(values))  # fmt: skip
        assert result.exit_code == 0, result.stderr

    def holding(target: Path) -> list[str]:
        return [p.relative_to(target).as_posix() for p, data in output_bytes(target) if b"project-zeta-42" in data]  # fmt: skip

    site_build(out)
    assert "project-zeta-42" in page_of(out, MAIN).read_text(encoding="utf-8")
    values.write_text("# nothing listed yet\nproject-zeta-42\n")
    site_build(out)
    assert holding(out) == []
    assert "[REDACTED:listed-value]" in page_of(out, MAIN).read_text(encoding="utf-8")
    site_build(tmp_path / "fresh")
    assert tree_digest(out) == tree_digest(tmp_path / "fresh")
    values.write_text("# nothing listed again\n")
    site_build(out)
    assert "project-zeta-42" in page_of(out, MAIN).read_text(encoding="utf-8")
    site_build(tmp_path / "fresh2")
    assert tree_digest(out) == tree_digest(tmp_path / "fresh2")


def rule_set_pieces(sample: dict[str, str]) -> set[str]:
    """A rule-set sample's secret (and its halves) in every form a published file may hold
    it: as written, JSON-escaped, URL-encoded, HTML-escaped."""
    from tests.test_redact_rules import encodings, pieces

    out: set[str] = set()
    for piece in pieces(sample["secret"]):
        out |= encodings(piece) | {html.escape(piece), html.escape(piece, quote=False)}
    return out


RULE_SET_FORMS = {
    "raw": lambda text: text,
    "json-escaped": json_escaped,
    "url-encoded": lambda text: quote(text, safe=""),
}


@pytest.mark.parametrize("form", [form_param(f, form=f) for f in RULE_SET_FORMS])
def test_no_rule_set_sample_survives_a_redacted_site_or_export(form: str, tmp_path: Path) -> None:
    """Every sample of every adopted rule of the rule set (tests/data/gitleaks_samples.json),
    written into sessions: none is left in any file of a redacted site (pages, side files,
    the search index) or of a redacted Markdown and HTML export."""
    from tests.test_redact_rules import SAMPLES

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = []
    for i in range(0, len(SAMPLES), 80):
        name = f"ses_20260102_000000_r{i:05d}"
        value = "\n\n".join(RULE_SET_FORMS[form](s["text"]) for s in SAMPLES[i : i + 80])
        (sessions / f"{name}.json").write_text(json.dumps(carrying(name, value)))
        names.append(name)
    out = tmp_path / "site"
    report = build(sessions, out, search=True, redactor=Redactor.create())
    assert report.sessions == len(names) and report.search.startswith("built ")
    exports = tmp_path / "exports"
    exports.mkdir()
    for name in names[:2]:
        for fmt in ("md", "html"):
            target = exports / f"{name}.{fmt}"
            result = polyglav("export", name, "--project", str(sessions), "--redact",
                              "--format", fmt, "--out", str(target))  # fmt: skip
            assert result.exit_code == 0, result.stderr
    outputs = output_bytes(out) + output_bytes(exports)
    assert len(output_bytes(exports)) == 4
    for sample in SAMPLES:
        for needle in rule_set_pieces(sample):
            encoded = needle.encode("utf-8")
            leaks = [p.relative_to(tmp_path).as_posix() for p, data in outputs if encoded in data]
            assert leaks == [], (sample["rule"], needle, leaks[:3])
    page = page_of(out, names[0]).read_text(encoding="utf-8")
    assert "Redaction is on:" in page and "[REDACTED:" in page
