"""Links to a turn or a call land on the page of a split session that holds it: a
sub-session's link back to its delegate call, the archive's Errors and Decisions pages,
the session's own sections. One home decides the page: :func:`publisher.site.urls.page_starts`."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from publisher.loader import read_session
from publisher.site import urls
from publisher.site.graph import Summary
from tests.helpers import Writer, build, page_of, part, require, session_doc, turn

PARENT = "ses_20260901_080000_aaaaaa"
CHILD = "sub_20260901_081000_bbbbbb"
GRANDCHILD = "sub_20260901_082000_cccccc"


def _delegate(target: str) -> dict[str, Any]:
    return part(
        "tool",
        name="delegate",
        input={"role": "reviewer", "task": "look"},
        output=f"Delegated to {target} (role reviewer). Result:\nfine",
        timestamp="2026-09-01T08:03:20+00:00",
    )


def _long_parent(turns: int = 320, call_at: int = 200) -> dict[str, Any]:
    body = []
    for i in range(1, turns + 1):
        parts = [part("user", f"step {i}"), part("text", "ok")]
        if i == call_at:
            parts.append(_delegate(CHILD))
        stamp = f"2026-09-01T08:{(i // 60) % 60:02d}:{i % 60:02d}+00:00"
        body.append(turn(i, *parts, started_at=stamp, ended_at=stamp))
    return session_doc(
        PARENT,
        turns=body,
        sub_sessions=[CHILD],
        errors=[{"code": 503, "message": "upstream", "timestamp": "2026-09-01T08:03:20+00:00"}],
        permissions=[
            {
                "tool": "delegate",
                "action": "allow",
                "decision": "denied",
                "path": "reviewer",
                "timestamp": "2026-09-01T08:03:20+00:00",
            }
        ],
    )


@pytest.mark.unit
def test_page_starts_by_turns_and_size(tmp_path: Path, write_session: Writer) -> None:
    path = write_session(_long_parent())
    session = read_session(path, path.parent)
    starts = urls.page_starts(session)
    assert starts == (150, 300)
    assert urls.page_number(starts, 0) == 1
    assert urls.page_number(starts, 149) == 1
    assert urls.page_number(starts, 150) == 2
    assert urls.page_number(starts, 199) == 2
    assert urls.page_number(starts, 300) == 3
    assert urls.turn_href(starts, 199, "turn-200.3") == "page-2.html#turn-200.3"
    assert urls.turn_href(starts, 3, "turn-4") == "index.html#turn-4"
    # A page also ends before its turns weigh more than about limits.bytes.
    small = urls.PageLimits(turns=150, bytes=urls.turn_weight(session.turns[0]) * 10)
    tight = urls.page_starts(session, small)
    weights = [urls.turn_weight(t) for t in session.turns]
    bounds = [0, *tight, len(weights)]
    assert len(tight) > 30
    for first, end in itertools.pairwise(bounds):
        assert sum(weights[first:end]) <= small.bytes
        if end < len(weights):
            assert sum(weights[first : end + 1]) > small.bytes
    summary = Summary.of(session)
    assert [(s[0], s[3]) for s in summary.spawns] == [(CHILD, "page-2.html#turn-200.3")]
    assert summary.failure_events[0][3] == "page-2.html#turn-200"
    assert summary.decision_events[0][7] == "page-2.html#turn-200.3"


def _tree_site(tmp_path: Path, write_session: Writer) -> Path:
    write_session(_long_parent())
    write_session(
        session_doc(
            CHILD,
            parent_id=PARENT,
            turns=[turn(1, part("user", "review"), _delegate(GRANDCHILD))],
            sub_sessions=[GRANDCHILD],
        )
    )
    write_session(session_doc(GRANDCHILD, parent_id=CHILD, turns=[turn(1, part("user", "hi"))]))
    out = tmp_path / "site"
    build(tmp_path / "proj" / ".polyglav" / "sessions", out)
    return out


@pytest.mark.site
def test_links_to_a_call_on_page_two(tmp_path: Path, write_session: Writer) -> None:
    out = _tree_site(tmp_path, write_session)
    child = page_of(out, CHILD).read_text(encoding="utf-8")
    back = re.search(r'class="spawn-link" href="([^"]+)"', child)
    assert back is not None
    assert back.group(1) == f"../{urls.slug(PARENT)}/page-2.html#turn-200.3"
    # The link's target exists on that page, and on no other.
    assert 'id="turn-200.3"' in page_of(out, PARENT, 2).read_text(encoding="utf-8")
    assert 'id="turn-200.3"' not in page_of(out, PARENT, 1).read_text(encoding="utf-8")
    # Depth 2: the grandchild links to the call in the child's first page.
    grandchild = page_of(out, GRANDCHILD).read_text(encoding="utf-8")
    assert f'class="spawn-link" href="../{urls.slug(CHILD)}/index.html#turn-1.2"' in grandchild
    # The archive's lists link the error and the decision on the page that holds them.
    folder = urls.session_dir(PARENT)
    errors = (out / "errors.html").read_text(encoding="utf-8")
    assert f'href="{folder}/page-2.html#turn-200"' in errors
    decisions = (out / "decisions.html").read_text(encoding="utf-8")
    assert f'href="{folder}/page-2.html#turn-200.3"' in decisions
    # The session's own sections and outline too (they are on its first page).
    first = page_of(out, PARENT).read_text(encoding="utf-8")
    assert 'href="page-2.html#turn-200.3-decision-1"' in first
    assert 'href="page-2.html#turn-200-error-1"' in first


@pytest.mark.unit
def test_ci_summary_links_the_page_that_holds_the_turn(write_session: Writer) -> None:
    from publisher.gate import session_tree
    from publisher.render.summary import ci_summary

    path = write_session(_long_parent())
    session = read_session(path, path.parent)
    text = ci_summary(session_tree(session), None, "https://ci.example/site/")
    page = f"https://ci.example/site/{urls.session_dir(PARENT)}"
    assert f"({page}/page-2.html#turn-200)" in text
    assert f"({page}/page-2.html#turn-200.3)" in text
    assert "index.html#turn-200" not in text


@pytest.mark.browser
def test_back_link_lands_on_the_call_with_scripts_off(
    tmp_path: Path, write_session: Writer
) -> None:
    from tests.browser import browser_missing, chromium

    require(browser_missing() is None, browser_missing() or "")
    out = _tree_site(tmp_path, write_session)
    with chromium() as browser:
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(page_of(out, CHILD).as_uri())
        page.click(".spawn-link")
        page.wait_for_url("**/page-2.html#turn-200.3")
        box = page.locator("#turn-200\\.3").bounding_box()
        assert box is not None and 0 <= box["y"] < page.viewport_size["height"]  # type: ignore[index]
        context.close()
