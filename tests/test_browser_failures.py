"""Chromium tests of what failed, at a glance, on a session page (issue 31): the list of
findings, the sub-agents and what they did, the files changed, a sub-agent's folded report,
work time and idle gaps, Read outputs' line numbers, and the phone's first screen."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from publisher.site import urls
from tests.browser import CHROMIUM, CHROMIUM_ARGS, static_server
from tests.helpers import ROOT, build, part, python_env, session_doc, turn
from tests.import_helpers import quiet_copy
from tests.test_delegation import FIXER, ROOT_S, SCOUT, _family

pytestmark = pytest.mark.browser

LONG = "ses_20260903_090000_longaa"
T = "2026-09-03T{:02d}:{:02d}:00+00:00"
REPORT = "## Findings\n\nThe cache is stale.\n\n" + "".join(f"- item {i}\n" for i in range(40))
READ = "".join(f"{i:>6}\u2192{'x' * 30} {'word ' * 12}line {i}\n" for i in range(1, 61))


def _long_session() -> dict[str, Any]:
    """A turn the person answered a day later (idle), a numbered Read, a failed call, a
    delegate call with a long report, an edit."""
    return session_doc(
        LONG,
        created_at=T.format(9, 0),
        turns=[
            turn(
                1,
                part("user", "look around", timestamp=T.format(9, 0)),
                part("tool", name="Read", input={"file_path": "/w/app.py"}, output=READ,
                     timestamp=T.format(9, 1)),
                part("tool", name="Bash", input={"command": "make test"}, output="boom\n3 failed",
                     is_error=True, timestamp=T.format(9, 2)),
                part("tool", name="Task", input={"subagent_type": "Explore", "prompt": "p"},
                     output=REPORT, timestamp=T.format(9, 3)),
                part("tool", name="Edit", output="ok", timestamp=T.format(9, 4),
                     input={"file_path": "/w/app.py", "old_string": "a", "new_string": "b"}),
                part("text", "done", timestamp="2026-09-04T09:05:00+00:00"),
                started_at=T.format(9, 0),
                ended_at="2026-09-04T09:05:00+00:00",
            )
        ],
    )  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("failures")
    project = root / "proj"
    sessions = project / ".polyglav" / "sessions"
    sessions.mkdir(parents=True)

    def write(doc: dict[str, Any] | bytes | str, name: str | None = None) -> Path:
        assert isinstance(doc, dict)
        path = sessions / f"{doc['session_name']}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        return path

    _family(write)
    write(_long_session())
    # A real Claude Code session with a sub-agent (marot/spotter, MIT).
    source = quiet_copy(ROOT / "tests/data/import/claude_code", root / "cc")
    subprocess.run(
        [sys.executable, "-m", "publisher", "import", "claude-code", str(source),
         "--project", str(project)],
        env=python_env(), check=True, capture_output=True,
    )  # fmt: skip
    out = root / "site"
    build(sessions, out, search=False)
    with static_server(out) as url:
        yield url


def _page(browser: Browser, width: int = 1280) -> Page:
    context = browser.new_context(viewport={"width": width, "height": 900 if width > 500 else 844})
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(str(exc)))
    return page


def _url(site: str, name: str) -> str:
    return site + urls.session_page(name)


def test_each_finding_is_listed_and_leads_to_its_call(browser: Browser, site: str) -> None:
    page = _page(browser)
    page.goto(_url(site, LONG))
    items = page.locator(".failure-list li")
    assert items.count() == 1
    assert items.first.inner_text().split()[:3] == ["failed", "call", "turn"]
    assert "Bash: boom … 3 failed" in items.first.inner_text()
    items.first.locator("a").click()
    assert page.evaluate("location.hash") == "#turn-1.3"
    top = page.evaluate("document.getElementById('turn-1.3').getBoundingClientRect().top")
    assert -2 <= top < 200
    page.context.close()


def test_sub_agents_in_call_order_with_what_they_did(browser: Browser, site: str) -> None:
    page = _page(browser)
    page.goto(_url(site, ROOT_S))
    listed = page.locator(".sub-agent-list li")
    assert listed.count() == 2
    assert FIXER in listed.nth(0).inner_text() and SCOUT in listed.nth(1).inner_text()
    assert "4 calls: 2 failed calls · 1 file changed (2 sessions)" in listed.nth(0).inner_text()
    # The delegate call's card says the same, and its link opens the sub-session.
    card = page.locator("#turn-1\\.2")
    assert "The sub-agent: 4 calls: 2 failed calls" in card.inner_text()
    listed.nth(0).locator(f"a[href*='{FIXER}']").click()
    assert page.url.endswith(urls.session_page(FIXER).split("/", 1)[1])
    # ... whose "Spawned from" chain leads back to the call.
    page.click(".spawn-link")
    assert page.evaluate("location.hash") == "#turn-1.2"
    page.context.close()


def test_files_changed_and_the_folded_report(browser: Browser, site: str) -> None:
    page = _page(browser)
    page.goto(_url(site, LONG))
    change = page.locator(".change-list li")
    assert change.count() == 1 and "/w/app.py" in change.inner_text()
    change.locator("a").click()
    assert page.evaluate("location.hash") == "#turn-1.5"
    report = page.locator("#turn-1\\.4")
    assert report.locator(".report h4").first.inner_text() == "Findings"  # Markdown, not raw
    assert not report.locator("details.report-rest").evaluate("d => d.open")
    assert not report.get_by_text("item 39").is_visible()
    report.locator("details.report-rest summary").click()
    assert report.get_by_text("item 39").is_visible()
    page.context.close()


def test_work_time_apart_from_idle_and_a_gap_on_the_timeline(browser: Browser, site: str) -> None:
    page = _page(browser)
    page.goto(_url(site, LONG))
    facts = page.locator(".overview-facts").inner_text()
    assert "Work time\n4m00s (24h01m idle)" in facts or "Work time 4m00s (24h01m idle)" in facts
    assert "Span\n24h05m" in facts or "Span 24h05m" in facts
    assert page.locator(".timeline rect.tl-idle").count() == 1
    meta = page.locator("section.turn:has(#turn-1) .turn-head dl.meta").inner_text()
    assert meta.startswith("Work time") and "4m00s (24h01m idle)" in meta
    page.context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_read_output_numbers_stay_in_their_gutter(browser: Browser, site: str, width: int) -> None:
    page = _page(browser, width)
    page.goto(_url(site, LONG))
    pre = page.locator("#turn-1\\.2 pre.out-head")
    lines = pre.locator(".nl")
    assert lines.first.get_attribute("data-n") == "1"
    # A wrapped line stays right of the numbers; the numbers are not part of a copy.
    boxes = page.evaluate(
        """el => Array.from(el.querySelectorAll('.nl')).map(n => {
            const text = n.firstElementChild; const r = document.createRange();
            r.selectNodeContents(text);
            const rects = Array.from(r.getClientRects());
            return [n.getBoundingClientRect().left, Math.min(...rects.map(x => x.left)),
                    rects.length];
        })""",
        pre.element_handle(),
    )
    assert all(text_left > left + 10 for left, text_left, _ in boxes)
    if width == 390:
        assert any(count > 1 for _, _, count in boxes)  # they do wrap on a phone
    copied = page.evaluate(
        """el => { const s = getSelection(); s.removeAllRanges(); const r = document.createRange();
            r.selectNodeContents(el); s.addRange(r); return s.toString(); }""",
        pre.element_handle(),
    )
    assert copied.lstrip().startswith("x" * 30) and "\u2192" not in copied
    page.context.close()


@pytest.mark.parametrize("name", [ROOT_S, LONG, "imported"])
def test_on_a_phone_the_overview_is_on_the_first_screen(
    browser: Browser, site: str, name: str
) -> None:
    page = _page(browser, 390)
    if name == "imported":
        page.goto(site + "index.html")
        href = page.locator("a[href*='sessions/ses_']").first.get_attribute("href")
        assert href is not None
        page.goto(site + href)
    else:
        page.goto(_url(site, name))
    top = page.evaluate("document.querySelector('.overview').getBoundingClientRect().top")
    assert top < 844 - 120, top  # its heading and first facts are in view
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.context.close()


def test_the_index_counts_failures_with_sub_sessions_behind_a_toggle(
    browser: Browser, site: str
) -> None:
    page = _page(browser)
    page.goto(site + "index.html")
    rows = page.locator("#session-table tbody tr")
    subs = page.locator("#session-table tbody tr[data-sub]")
    assert subs.count() > 0
    # Sub-sessions hidden at first; their failures are in their root's row.
    assert all(not subs.nth(i).is_visible() for i in range(subs.count()))
    cell = page.locator(f"#session-table tr:has(a[href*='{ROOT_S}']) td.c-failures")
    assert "below" in cell.inner_text()
    total = int(cell.get_attribute("data-value") or "0")
    own_and_below = cell.locator("a").get_attribute("title") or ""
    assert "more in its" in own_and_below
    page.check("#filter-subs")
    assert all(subs.nth(i).is_visible() for i in range(subs.count()))
    # With failures only: every row shown has some, every row hidden has none.
    page.check("#filter-failures")
    for i in range(rows.count()):
        row = rows.nth(i)
        assert row.is_visible() == (int(row.get_attribute("data-failures") or "0") > 0)
    assert total > 0
    # A row is at most three lines (name, title or prompt, facts) on a desktop.
    page.uncheck("#filter-failures")
    heights = page.eval_on_selector_all(
        "#session-table tbody tr:not([hidden])",
        "rs => rs.map(r => r.getBoundingClientRect().height)",
    )
    assert heights and max(heights) < 90, heights
    page.context.close()


def test_without_scripts_sub_sessions_stay_behind_the_toggle(browser: Browser, site: str) -> None:
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, java_script_enabled=False
    )
    page = context.new_page()
    page.goto(site + "index.html")
    subs = page.locator("#session-table tbody tr[data-sub]")
    assert subs.count() > 0 and not subs.first.is_visible()
    page.check("#filter-subs")
    assert subs.first.is_visible()
    context.close()


def test_the_failures_page_leads_to_each_failed_call(browser: Browser, site: str) -> None:
    page = _page(browser)
    page.goto(site + "errors.html")
    assert page.locator("h1").inner_text() == "Failures"
    row = page.locator(f"#event-table tr:has(a[href*='{LONG}'])")
    assert row.count() == 1
    assert row.locator(".finding").inner_text() == "failed call"
    assert "Bash" in row.inner_text() and "boom" in row.inner_text()
    # The filter by what failed.
    options = page.locator("select[data-filter='value'] option").evaluate_all(
        "os => os.map(o => o.textContent)"
    )
    assert any(o.startswith("failed call (") for o in options), options
    row.locator("td[data-label='Where'] a").click()
    assert page.evaluate("location.hash") == "#turn-1.3"
    page.context.close()
