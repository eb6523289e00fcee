"""Chromium tests of the archive-wide pages: the index's layout, filters and search."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.browser import CHROMIUM, CHROMIUM_ARGS, static_server
from tests.helpers import SAMPLES, build, event_archive, part, session_doc, turn, two_runs

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build(SAMPLES, out, search=True)
    return out


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    with static_server(site) as url:
        yield url


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert errors == [], errors


def overflow(browser: Browser, url: str, width: int, scheme: str = "light") -> int:
    """How far the page scrolls sideways at ``width`` px (0: it fits), the table included."""
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)  # type: ignore[arg-type]
    pg = context.new_page()
    pg.goto(url)
    scroll = pg.evaluate(
        """() => Math.max(document.documentElement.scrollWidth - innerWidth,
                 ...[...document.querySelectorAll('.table-wrap')].map(
                     w => w.scrollWidth - w.clientWidth))"""
    )
    context.close()
    return int(scroll)


def test_index_fits_without_horizontal_scroll(browser: Browser, base_url: str) -> None:
    for width in (1600, 1280, 390):
        assert overflow(browser, base_url + "index.html", width) <= 0, width


def test_index_with_long_untrusted_values_fits(browser: Browser, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    name = "ses_20260101_000000_" + "x" * 90
    doc = session_doc(
        name,
        role="r" * 120,
        turns=[turn(1, part("user", "`" + "y" * 300 + "` and **bold**"), part("text", "ok"))],
    )
    doc["imported_from"] = {"agent": "claude-code", "path": "/home/u/" + "z" * 200 + ".jsonl"}
    (sessions / "renamed-file.json").write_text(json.dumps(doc))
    out = tmp_path / "site"
    build(sessions, out)
    for width in (1280, 390):
        assert overflow(browser, (out / "index.html").as_uri(), width) <= 0, width
    html = (out / "index.html").read_text()
    assert "imported from Claude Code: /home/u/" in html
    assert "renamed-file.json" in html
    assert "`" not in html.split('id="session-table"')[1].split("</table>")[0]


def test_phone_card_shows_every_field(browser: Browser, base_url: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 800})
    pg = context.new_page()
    pg.goto(base_url + "index.html")
    cells = pg.evaluate(
        """() => [...document.querySelector('#session-table tbody tr').cells].map(td => {
             const r = td.getBoundingClientRect();
             const label = getComputedStyle(td, '::before').content;
             return [td.className, r.width > 0 && r.left >= 0 && r.right <= innerWidth, label];
           })"""
    )
    context.close()
    shown = {cls.split()[-1]: (visible, label) for cls, visible, label in cells}
    for key, label in [
        ("c-kind", "Kind"),
        ("c-role", "Role"),
        ("c-updated", "Updated"),
        ("c-turns", "Turns"),
        ("c-failures", "Failures"),
        ("c-status", "Last status"),
    ]:
        assert shown[key] == (True, f'"{label}: "'), (key, shown[key])
    assert shown["c-name"][0]


def test_role_filter_none_is_not_all(page: Page, base_url: str) -> None:
    page.goto(base_url + "index.html")
    total = page.locator("#session-table tbody tr").count()
    shown = page.locator("#session-table tbody tr:not([hidden])")
    first = shown.count()  # sub-sessions are behind their toggle
    page.select_option("#filter-role", label="(none)")
    assert 0 < shown.count() < total
    assert set(shown.evaluate_all("rs => rs.map(r => r.dataset.role)")) == {""}
    page.select_option("#filter-role", label="all")
    assert shown.count() == first
    page.check("#filter-subs")
    assert shown.count() == total


def test_previews_are_plain_text(page: Page, base_url: str) -> None:
    page.goto(base_url + "index.html")
    previews = page.locator("#session-table .preview").all_inner_texts()
    assert any("test_reserve_last_unit" in p for p in previews), previews
    assert not any("`" in p for p in previews), previews


def test_search_excerpts_keep_spaces_and_titles_are_clean(page: Page, base_url: str) -> None:
    page.goto(base_url + "index.html")
    page.fill("#search-input", "suite")
    page.wait_for_selector("#search-results li p mark", timeout=15_000)
    excerpts = page.locator("#search-results li p").all_inner_texts()
    assert any("suite and" in e or "suite since" in e for e in excerpts), excerpts
    titles = page.locator("#search-results li a").all_inner_texts()
    assert not any("#" in t for t in titles), titles
    status = page.locator("#search-status").inner_text()
    assert status.startswith(("1 page matches", f"{len(set(titles))} ")) or "pages match" in status
    assert "1 pages" not in status


def test_decisions_link_to_the_call_they_resolved(page: Page, base_url: str) -> None:
    page.goto(base_url + "decisions.html")
    first = page.locator("#event-table tbody tr").first
    assert first.locator("td").first.inner_text().strip().endswith("denied")
    link = first.locator('a:has-text("call 7.2")')
    link.click()
    page.wait_for_url("**/ses_20260817_120000_ab12cd/index.html#turn-7.2")
    target = page.locator('[id="turn-7.2"]')
    assert "run_command" in target.inner_text()
    assert page.evaluate("document.getElementById('turn-7.2').getBoundingClientRect().top") < 900


def test_failures_link_to_their_turn_and_filter(page: Page, base_url: str) -> None:
    page.goto(base_url + "errors.html")
    rows = page.locator("#event-table tbody tr")
    times = rows.evaluate_all("rs => rs.map(r => r.cells[0].innerText)")
    assert times == sorted(times, reverse=True)
    page.select_option('select[data-filter="value"]', label="interrupted (1)")  # its count
    shown = page.locator("#event-table tbody tr:not([hidden])")
    assert shown.count() == 1
    shown.locator('a:has-text("turn 11")').click()
    page.wait_for_url("**/ses_20260817_120000_ab12cd/index.html#turn-11")
    page.goto(base_url + "errors.html")
    page.select_option('select[data-filter="role"]', label="(none)")
    roles = page.locator("#event-table tbody tr:not([hidden])").evaluate_all(
        "rs => rs.map(r => r.dataset.role)"
    )
    assert roles and set(roles) == {""}


def test_archive_pages_fit(browser: Browser, base_url: str) -> None:
    for path in ("errors.html", "decisions.html"):
        for width in (1280, 390):
            assert overflow(browser, base_url + path, width) <= 0, (path, width)


def test_axe_on_archive_pages(browser: Browser, base_url: str) -> None:
    axe = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
    context = browser.new_context(bypass_csp=True)
    pg = context.new_page()
    found = {}
    for path in ("errors.html", "decisions.html", "index.html"):
        for scheme in ("light", "dark"):
            pg.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            pg.goto(base_url + path)
            pg.add_script_tag(path=str(axe))
            result = pg.evaluate("axe.run(document, {resultTypes: ['violations']})")
            bad = [v["id"] for v in result["violations"] if v["impact"] in ("serious", "critical")]
            if bad:
                found[f"{path} ({scheme})"] = bad
    context.close()
    assert found == {}


def test_full_table_sorts_and_filters_across_shards(browser: Browser, tmp_path: Path) -> None:
    from publisher.site.context import Tunables

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(12):
        name = f"job_2026081{i % 10}_12{i:02d}00_shrd{i:02d}"
        turns = [turn(n + 1, part("user", f"step {n}")) for n in range(i + 1)]
        doc = session_doc(
            name,
            role="nightly" if i % 3 else "",
            created_at=f"2026-08-17T12:{i:02d}:00+00:00",
            updated_at=f"2026-08-17T12:{i:02d}:30+00:00",
            turns=turns,
        )
        (sessions / f"{name}.json").write_text(json.dumps(doc))
    out = tmp_path / "site"
    build(sessions, out, tunables=Tunables(index_first_rows=3, rows_per_shard=2))
    shards = sorted((out / "rows").glob("rows-*.js"))
    assert len(shards) >= 4
    html = (out / "index.html").read_text()
    assert html.count('<tr data-kind="job"') == 3
    with static_server(out) as base:
        for url in ((out / "index.html").as_uri(), base + "index.html"):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            pg = context.new_page()
            errors: list[str] = []
            pg.on("pageerror", lambda exc, seen=errors: seen.append(str(exc)))
            pg.goto(url)
            assert pg.locator("#session-table tbody tr").count() == 3
            pg.locator('th[data-key="turns"] button').click()  # ascending: needs every shard
            pg.wait_for_function(  # a function: an expression would be eval'd, which the CSP forbids
                "() => document.querySelectorAll('#session-table tbody tr').length === 12"
            )
            first = pg.locator("#session-table tbody tr").first.locator("td").nth(1).inner_text()
            assert first.startswith("job_20260810_120000_shrd00"), first
            pg.select_option("#filter-role", label="(none)")
            roles = pg.locator("#session-table tbody tr").evaluate_all(
                "rs => rs.map(r => r.dataset.role)"
            )
            assert roles == [""] * 4, roles
            turns_shown = pg.locator("#session-table tbody tr td.c-turns").all_inner_texts()
            assert turns_shown == ["1", "4", "7", "10"], turns_shown
            link = pg.locator("#session-table tbody tr").first.locator("a").first
            assert link.get_attribute("href") == "sessions/job_20260810_120000_shrd00/index.html"
            context.close()
            assert errors == [], errors


@pytest.fixture(scope="module")
def compare_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare")
    sessions = root / "sessions"
    sessions.mkdir()
    two_runs(sessions)
    build(sessions, root / "site")
    return root / "site"


def test_comparison_page_shows_what_changed(browser: Browser, compare_site: Path) -> None:
    """From the session page's link: an added tool call, a changed status and a new error
    between two runs, and the differing output as a diff."""
    a, b = "job_20260825_110000_aaaaaa", "job_20260826_110000_bbbbbb"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto((compare_site / "sessions" / b / "index.html").as_uri())
    pg.get_by_role("link", name="compare with previous run").click()
    assert pg.url.endswith(f"/sessions/{b}/compare.html")
    turn1 = pg.locator("section.cmp-turn#turn-1")
    assert turn1.get_attribute("class") == "cmp-turn changed"
    added = turn1.locator("li.call-added")
    assert added.count() == 1
    assert added.inner_text().startswith('+ sh {"cmd":"git log -1"} added')
    status = turn1.locator("tr.changed", has=pg.locator("th", has_text="Status"))
    assert status.locator("td").all_inner_texts() == ["ok", "error changed"]
    new_error = turn1.locator("ul.cmp-errors li.new")
    assert new_error.inner_text() == "new 503: Service Unavailable"
    diff = turn1.locator("li.call-output pre.diff")
    assert diff.locator(".d-del").all_inner_texts() == ["-3 passed"]
    assert diff.locator(".d-add").all_inner_texts() == ["+2 passed", "+1 failed"]
    assert "10.0s" in turn1.inner_text() and "30.0s (+20.0s)" in turn1.inner_text()
    pg.get_by_role("link", name="Previous run").click()
    assert pg.url.endswith(f"/sessions/{a}/index.html")
    context.close()
    assert errors == [], errors


def test_comparison_page_fits_and_passes_axe(browser: Browser, compare_site: Path) -> None:
    url = (compare_site / "sessions" / "job_20260826_110000_bbbbbb" / "compare.html").as_uri()
    for width in (1280, 390):
        assert overflow(browser, url, width) <= 0, width
    axe = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
    context = browser.new_context(bypass_csp=True)
    pg = context.new_page()
    found = {}
    for scheme in ("light", "dark"):
        pg.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        pg.goto(url)
        pg.add_script_tag(path=str(axe))
        result = pg.evaluate("axe.run(document, {resultTypes: ['violations']})")
        bad = [v["id"] for v in result["violations"] if v["impact"] in ("serious", "critical")]
        if bad:
            found[scheme] = bad
    context.close()
    assert found == {}


def test_archive_pages_filter_across_shards(browser: Browser, tmp_path: Path) -> None:
    """Failures and Decisions hold their first rows as HTML and every row in script-tag
    shards: filters and "Load all" work across the shards from file:// and over HTTP."""
    from publisher.site.context import Tunables

    event_archive(tmp_path / "sessions")
    out = tmp_path / "site"
    build(tmp_path / "sessions", out, tunables=Tunables(index_first_rows=3, rows_per_shard=2))
    assert len(list((out / "events").glob("errors-*.js"))) >= 2
    with static_server(out) as base:
        for root in (out.as_uri() + "/", base):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            pg = context.new_page()
            errors: list[str] = []
            pg.on("pageerror", lambda exc, seen=errors: seen.append(str(exc)))
            rows = pg.locator("#event-table tbody tr:not([hidden])")
            pg.goto(root + "errors.html")
            assert rows.count() == 3
            # newest first
            assert rows.first.locator("td").nth(4).inner_text() == "error E1: boom 7.1"
            # The option says its count: the rows it shows (15 errors, 4 denied calls).
            pg.select_option('select[data-filter="value"]', label="denied (4)")
            expect(pg.locator("#event-table tbody tr")).to_have_count(4)
            messages = rows.locator("td.c-message").all_inner_texts()
            assert messages == ["permission denied: sh"] * 4, messages
            names = rows.locator("td.c-name code").all_inner_texts()
            assert names == [f"job_2026081{i}_120000_err{i:03d}" for i in (7, 5, 3, 1)], names
            pg.select_option('select[data-filter="value"]', label="all")
            pg.select_option('select[data-filter="role"]', label="(none)")
            assert rows.count() == 7  # runs 0, 2, 4, 6: 1 + 3 + 2 + 1 errors, none denied
            assert pg.locator(".filter-count").inner_text() == "7 of 19 shown"
            link = rows.first.locator("td").nth(2).locator("a")
            assert link.get_attribute("href") == (
                "sessions/job_20260816_120000_err006/index.html#turn-1"
            )
            pg.goto(root + "decisions.html")
            assert rows.locator("td:first-child").all_inner_texts() == ["denied"] * 3
            pg.locator("#load-all").click()
            expect(pg.locator("#event-table tbody tr")).to_have_count(8)
            decisions = rows.locator("td:first-child").all_inner_texts()
            assert decisions == ["denied"] * 4 + ["granted"] * 4, decisions
            context.close()
            assert errors == [], errors
