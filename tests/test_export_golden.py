"""Every sample exports to its golden file (``UPDATE_GOLDEN=1`` rewrites them, and checks nothing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from publisher.archive import Archive
from publisher.cli import app
from publisher.render.markdown import export_markdown
from tests.helpers import IN_CI, SAMPLES

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).parent / "golden"
LOADABLE = sorted(e.file_name[:-5] for e in Archive(SAMPLES).listing() if e.loads)


def test_samples_cover_the_spec() -> None:
    archive = Archive(SAMPLES)
    entries = archive.listing()
    sessions = [archive.read(SAMPLES / e.file_name) for e in entries if e.loads]
    kinds = {s.kind for s in sessions}
    assert kinds == {"ses", "job", "sub", "named"}
    statuses = {t.status for s in sessions for t in s.turns}
    assert statuses >= {"running", "ok", "error", "truncated", "empty", "cancelled"}
    part_types = {p.type for s in sessions for t in s.turns for p in t.parts}
    assert part_types >= {"user", "text", "thinking", "tool", "command", "system"}
    decisions = {(p.action, p.decision) for s in sessions for p in s.permissions}
    assert {d for _, d in decisions} == {"granted", "declined", "denied"}
    assert {a for a, _ in decisions} == {"allow", "ask", "deny"}
    assert len([e for e in entries if e.failure is not None]) == 2
    depth = max(
        len(_chain(s.session_name, {x.session_name: x.parent_id for x in sessions}))
        for s in sessions
    )
    assert depth == 3  # root -> sub -> sub


def _chain(name: str, parents: dict[str, str]) -> list[str]:
    chain = [name]
    while parents.get(chain[-1]):
        chain.append(parents[chain[-1]])
    return chain


#: ``UPDATE_GOLDEN=1``: rewrite the golden files instead of checking them. Updating and checking
#: are kept apart: an updated file is reported as skipped ("updated"), never as a pass; run
#: the tests again without it to check.
UPDATING = bool(os.environ.get("UPDATE_GOLDEN"))


def test_golden_files_are_not_updated_in_ci() -> None:
    if UPDATING and IN_CI:
        pytest.fail("UPDATE_GOLDEN is set in CI: golden files would be rewritten, not checked")


@pytest.mark.parametrize("name", LOADABLE)
def test_sample_matches_golden(name: str) -> None:
    session = Archive(SAMPLES).resolve(name)
    text = "".join(export_markdown(session))
    golden = GOLDEN / f"{name}.md"
    if UPDATING:
        old = golden.read_text(encoding="utf-8") if golden.is_file() else None
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
        state = "unchanged" if old == text else "created" if old is None else "changed"
        pytest.skip(f"UPDATE_GOLDEN: wrote {golden.name} ({state}); run again without it to check")
    assert golden.is_file(), f"missing golden file {golden}; run UPDATE_GOLDEN=1 pytest"
    assert text == golden.read_text(encoding="utf-8")


def test_export_default_path_and_stdout(tmp_path: Path) -> None:
    if UPDATING:
        pytest.skip("UPDATE_GOLDEN: the golden files are being rewritten, not checked")
    runner = CliRunner()
    project = tmp_path / "proj"
    sessions = project / ".polyglav" / "sessions"
    sessions.mkdir(parents=True)
    for path in SAMPLES.glob("*.json"):
        (sessions / path.name).write_bytes(path.read_bytes())
    result = runner.invoke(app, ["export", "#ab12cd", "--project", str(project)])
    assert result.exit_code == 0, result.stderr
    out = project / ".polyglav" / "exports" / "ses_20260817_120000_ab12cd.md"
    assert out.read_text(encoding="utf-8") == (GOLDEN / "ses_20260817_120000_ab12cd.md").read_text(
        encoding="utf-8"
    )
    piped = runner.invoke(
        app, ["export", "session:release-notes", "--project", str(project), "--out", "-"]
    )
    assert piped.exit_code == 0
    assert piped.stdout == (GOLDEN / "release-notes.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in sessions.iterdir()) == sorted(
        p.name for p in SAMPLES.glob("*.json")
    )
