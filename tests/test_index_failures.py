"""The archive sees what failed (issue 31): the index's Failures column counts each
session's failures as ``polyglav check`` does, a root's row adds its sub-sessions' (at any
depth), sub-sessions are behind a toggle, the Failures page lists every failure with its
call's link, and an incremental build that changes only a sub-session brings its root's
row up to date (first screen and row shards), byte-identical to a full build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from publisher import gate
from publisher.loader import read_session
from publisher.site.context import Tunables
from tests.helpers import build, fresh_digest, part, session_doc, tree_digest, turn, write_json

pytestmark = pytest.mark.site

ROOT = "ses_20260817_120000_root01"
CHILD = "sub_20260817_120100_child1"
GRANDCHILD = "sub_20260817_120200_grand1"


def failing(n: int, tool: str = "Read") -> list[dict[str, object]]:
    return [
        part(
            "tool", name=tool, input={"file_path": f"/x/{i}"}, output="no such file", is_error=True
        )
        for i in range(n)
    ]


def archive(folder: Path, child_failures: int = 3, *, extra: int = 0) -> Path:
    """A root with one failed call of its own, a sub-session with ``child_failures`` and
    a grandchild with 2; ``extra`` unrelated sessions (to shard the index)."""
    sessions = folder / ".polyglav" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    write_json(
        sessions / f"{ROOT}.json",
        session_doc(
            ROOT,
            sub_sessions=[CHILD],
            turns=[turn(1, part("user", "go"), *failing(1, "Bash"))],
        ),
    )
    write_json(
        sessions / f"{CHILD}.json",
        session_doc(
            CHILD,
            parent_id=ROOT,
            role="explore",
            sub_sessions=[GRANDCHILD],
            created_at="2026-08-17T12:01:00+00:00",
            turns=[turn(1, part("user", "look"), *failing(child_failures))],
        ),
    )
    write_json(
        sessions / f"{GRANDCHILD}.json",
        session_doc(
            GRANDCHILD,
            parent_id=CHILD,
            role="explore",
            created_at="2026-08-17T12:02:00+00:00",
            turns=[turn(1, part("user", "deeper"), *failing(2))],
        ),
    )
    for i in range(extra):
        name = f"job_20260810_{120000 + i:06d}_x{i:05d}"
        write_json(
            sessions / f"{name}.json",
            session_doc(name, role="nightly", turns=[turn(1, part("user", f"hello {i}"))]),
        )
    return sessions


def rows_of(html: str) -> dict[str, tuple[str, bool]]:
    """Each index row's session → (its Failures value, whether it is a sub-session)."""
    found = {}
    for attrs, name in re.findall(
        r"<tr ([^>]*)>\s*<td[^>]*>[^<]*</td>\s*<td[^>]*><a href=\"[^\"]*\"><code>([^<]+)</code>",
        html,
    ):
        failures = re.search(r'data-failures="(\d+)"', attrs)
        assert failures is not None
        found[name] = (failures.group(1), 'data-sub="1"' in attrs)
    return found


def test_a_roots_row_counts_its_sub_sessions_failures_as_check_does(tmp_path: Path) -> None:
    sessions = archive(tmp_path)
    out = tmp_path / "site"
    build(sessions, out)
    html = (out / "index.html").read_text()
    rows = rows_of(html)
    # Own 1 + child 3 + grandchild 2; the child: its 3 and the grandchild's 2.
    assert rows == {ROOT: ("6", False), CHILD: ("5", True), GRANDCHILD: ("2", True)}
    assert "5 below" in html and "2 below" in html
    assert 'title="1 failed call; 5 more in its 2 sub-sessions"' in html
    # The same figures as the gate's, session by session.
    own = {
        name: gate.Tally.of(gate.session_findings(read_session(sessions / f"{name}.json"))).failures
        for name in (ROOT, CHILD, GRANDCHILD)
    }
    assert own == {ROOT: 1, CHILD: 3, GRANDCHILD: 2}
    # The filter and the toggle are there (the toggle works without scripts: CSS :has()).
    assert 'id="filter-failures"' in html and 'id="filter-subs"' in html
    # The Failures page lists the six failed calls, each linked to its call.
    page = (out / "errors.html").read_text()
    assert "6 failures in 3 sessions" in page
    assert page.count('<span class="finding f-failed-call">failed call</span>') == 6
    assert f"sessions/{GRANDCHILD}/index.html#turn-1.3" in page
    assert "<code>Bash</code>" in page


def test_a_sub_sessions_change_reaches_its_roots_row_incrementally(tmp_path: Path) -> None:
    sessions = archive(tmp_path, child_failures=3, extra=12)
    out = tmp_path / "site"
    tunables = Tunables(index_first_rows=4, rows_per_shard=4)
    build(sessions, out, tunables=tunables)
    # Only the child changes: 1 failure instead of 3.
    path = sessions / f"{CHILD}.json"
    doc = json.loads(path.read_text())
    doc["turns"] = [turn(1, part("user", "look"), *failing(1))]
    doc["updated_at"] = "2026-08-17T12:09:00+00:00"
    write_json(path, doc)
    build(sessions, out, tunables=tunables)
    after = tree_digest(out)
    shards = "".join(p.read_text() for p in sorted((out / "rows").glob("*.js")))
    # The root's data row in its shard: own 1, 4 with the sessions below.
    root_row = re.search(rf'\["ses","{ROOT}",[^\]]*\]', shards)
    assert root_row is not None
    data = json.loads(root_row.group(0))
    assert (data[10], data[14], data[16]) == (4, 1, 0)
    assert fresh_digest(sessions, tmp_path / "fresh", tunables=tunables) == after


def test_a_sub_session_whose_parent_is_missing_is_listed_as_a_root(tmp_path: Path) -> None:
    """Nothing above counts an orphan's failures, so its row is never behind the toggle;
    when its parent arrives (or goes), its row moves, incrementally as in a full build."""
    sessions = archive(tmp_path, extra=12)
    root = sessions / f"{ROOT}.json"
    kept = root.read_bytes()
    root.unlink()
    out = tmp_path / "site"
    tunables = Tunables(index_first_rows=4, rows_per_shard=4)
    build(sessions, out, tunables=tunables)

    def subs() -> dict[str, int]:
        shards = "".join(p.read_text() for p in sorted((out / "rows").glob("*.js")))
        found = {}
        for name in (CHILD, GRANDCHILD):
            row = re.search(rf'\["sub","{name}",[^\]]*\]', shards)
            assert row is not None, name
            found[name] = json.loads(row.group(0))[16]
        return found

    # The child names a parent that is not here: a root's row; the grandchild stays below it.
    assert subs() == {CHILD: 0, GRANDCHILD: 1}
    assert fresh_digest(sessions, tmp_path / "fresh1", tunables=tunables) == tree_digest(out)
    root.write_bytes(kept)  # the parent arrives
    build(sessions, out, tunables=tunables)
    assert subs() == {CHILD: 1, GRANDCHILD: 1}
    assert fresh_digest(sessions, tmp_path / "fresh2", tunables=tunables) == tree_digest(out)
    root.unlink()  # and goes again
    build(sessions, out, tunables=tunables)
    assert subs() == {CHILD: 0, GRANDCHILD: 1}
    assert fresh_digest(sessions, tmp_path / "fresh3", tunables=tunables) == tree_digest(out)
