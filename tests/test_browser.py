"""Real-browser tests of the site in Chromium (Debian's package, driven by Playwright)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from publisher.site import urls
from publisher.site.context import Tunables
from tests.browser import chromium, static_server
from tests.helpers import MAIN, REVIEW, SAMPLES, Writer, build, part, require, session_doc, turn

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


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
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert errors == [], errors


def in_viewport(page: Page, element_id: str) -> bool:
    return bool(
        page.evaluate(
            """id => { const r = document.getElementById(id).getBoundingClientRect();
                 return r.top >= -1 && r.top < window.innerHeight; }""",
            element_id,
        )
    )


def test_turn_anchor_lands(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(MAIN) + "#turn-9")
    page.wait_for_load_state("load")
    assert in_viewport(page, "turn-9")
    page.goto(base_url + urls.session_page(MAIN) + "#turn-5.4")
    assert in_viewport(page, "turn-5.4")


def test_anchor_inside_collapsed_thinking_opens_it(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(MAIN) + "#turn-1.2")
    page.wait_for_selector("details[id='turn-1.2'][open]")
    assert in_viewport(page, "turn-1.2")


def test_collapsibles_open_on_click(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(MAIN))
    thinking = page.locator("details.part-thinking").first
    assert thinking.get_attribute("open") is None
    assert not thinking.locator(".md").is_visible()
    thinking.locator("summary").click()
    assert thinking.locator(".md").is_visible()


def test_sub_session_links_both_ways(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(MAIN))
    page.locator(".sub-agent-list a", has_text=REVIEW).click()  # (the overview lists them)
    page.wait_for_url(f"**/{REVIEW}/index.html")
    assert REVIEW in page.locator("h1").inner_text()
    page.locator("nav.lineage a", has_text=MAIN).click()
    page.wait_for_url(f"**/{MAIN}/index.html")
    assert MAIN in page.locator("h1").inner_text()


def test_dark_mode_follows_the_system(browser: Browser, base_url: str) -> None:
    colors = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme)  # type: ignore[arg-type]
        pg = context.new_page()
        pg.goto(base_url + urls.session_page(MAIN))
        colors[scheme] = pg.evaluate("getComputedStyle(document.body).backgroundColor")
        context.close()
    assert colors["light"] == "rgb(251, 251, 249)"
    assert colors["dark"] == "rgb(22, 24, 27)"


def test_index_sorts_and_filters(page: Page, base_url: str) -> None:
    page.goto(base_url + "index.html")
    rows = page.locator("#session-table tbody tr")
    assert rows.count() == 5
    # Sub-sessions are behind the toggle, and shown when their kind or role is picked.
    assert page.locator("#session-table tbody tr:not([hidden])").count() == 3
    page.select_option("#filter-kind", "sub")
    assert page.locator("#session-table tbody tr:not([hidden])").count() == 2
    page.select_option("#filter-kind", "")
    page.check("#filter-subs")
    assert page.locator("#session-table tbody tr:not([hidden])").count() == 5
    page.check("#filter-failures")
    visible = page.locator("#session-table tbody tr:not([hidden])")
    assert sorted(visible.evaluate_all("rs => rs.map(r => r.dataset.kind)")) == ["job", "ses"]
    page.uncheck("#filter-failures")
    page.locator('th[data-key="turns"] button').click()
    page.locator('th[data-key="turns"] button').click()  # descending
    first = rows.first.locator("td").nth(1).inner_text()
    assert first.startswith(MAIN)
    assert page.locator('th[data-key="turns"]').get_attribute("aria-sort") == "descending"


def test_index_filters_work_from_file_url(page: Page, site: Path) -> None:
    page.goto((site / "index.html").as_uri())
    page.select_option("#filter-role", "=security")
    assert page.locator("#session-table tbody tr:not([hidden])").count() == 1
    page.select_option("#filter-role", "")
    page.select_option("#filter-status", "error")
    assert page.locator("#session-table tbody tr:not([hidden])").count() == 1
    page.select_option("#filter-status", "ok")
    assert page.locator("#session-table tbody tr:not([hidden])").count() == 1
    page.check("#filter-subs")  # the sub-session that ended ok
    assert page.locator("#session-table tbody tr:not([hidden])").count() == 2


def test_search_finds_a_turn(page: Page, base_url: str) -> None:
    page.goto(base_url + "index.html")
    page.fill("#search-input", "bandit")
    page.wait_for_selector("#search-results li a", timeout=15_000)
    assert page.locator("#search-status").inner_text() == "1 turn matches."
    links = page.locator("#search-results li a").evaluate_all(
        "as => as.map(a => a.getAttribute('href'))"
    )
    assert any("sub_20260817_122000_ef56gh" in href and "#turn-1" in href for href in links), links
    page.locator("#search-results li a").first.click()
    page.wait_for_url("**/sub_20260817_122000_ef56gh/**")


def test_search_reads_every_bundle(page: Page, tmp_path: Path) -> None:
    """With one session a bundle, a word found only in one session links to its turn, and
    a word in every session finds a turn of every bundle."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [f"ses_20260101_0000{i:02d}_shd0{i:02d}" for i in range(8)]
    for i, name in enumerate(names):
        turns = [
            turn(1, part("user", "a prompt about oranges"), part("text", "plain answer")),
            turn(2, part("user", f"what about zq{i}marker"), part("text", "a sharded answer")),
        ]
        (sessions / f"{name}.json").write_text(json.dumps(session_doc(name, turns=turns)))
    out = tmp_path / "site"
    report = build(sessions, out, search=True, tunables=Tunables(sessions_per_bundle=1))
    assert report.search.startswith("built ") and not report.search.startswith("built 1/1")
    with static_server(out) as base:
        page.goto(base + "index.html")
        page.fill("#search-input", "zq5marker")
        page.wait_for_selector("#search-results li a", timeout=15_000)
        hrefs = page.locator("#search-results li a").evaluate_all(
            "as => as.map(a => a.getAttribute('href'))"
        )
        assert hrefs == [f"sessions/{names[5]}/index.html#turn-2.1"], hrefs
        page.locator("#search-results li a").first.click()
        page.wait_for_url(f"**/{names[5]}/**#turn-2.1")
        page.goto(base + "index.html")
        page.fill("#search-input", "oranges")
        page.wait_for_function(
            "n => document.querySelectorAll('#search-results li').length >= n", arg=len(names)
        )
        assert page.locator("#search-status").inner_text() == f"{len(names)} turns match."
        hrefs = page.locator("#search-results li a").evaluate_all(
            "as => as.map(a => a.getAttribute('href'))"
        )
    assert {h.split("/")[1] for h in hrefs} == set(names)


def test_split_session_forwards_anchor(
    browser: Browser, archive: Path, write_session: Writer, tmp_path: Path
) -> None:
    turns = [
        turn(i, part("user", f"prompt {i}"), part("text", f"answer {i}")) for i in range(1, 701)
    ]
    write_session(session_doc(turns=turns))
    out = tmp_path / "out"
    build(archive, out)
    context = browser.new_context()
    pg = context.new_page()
    pg.goto((out / urls.session_page(MAIN)).as_uri() + "#turn-650.2")
    pg.wait_for_url("**/page-5.html#turn-650.2")
    pg.wait_for_selector("[id='turn-650.2']", state="attached")
    assert in_viewport(pg, "turn-650.2")
    context.close()


@pytest.mark.slow
def test_3000_turn_session_opens_fast(
    browser: Browser, archive: Path, write_session: Writer, tmp_path: Path
) -> None:
    answer = "Here is the change:\n\n```python\nprint('hello')\n```\n\n- one\n- two\n"
    turns = [
        turn(
            i,
            part("user", f"Step {i}: run the tests"),
            part("thinking", "Run them."),
            part(
                "tool",
                name="run_command",
                input={"command": "pytest -q"},
                output="." * 400 + "\n3 passed\n",
            ),
            part("text", answer),
        )
        for i in range(1, 3001)
    ]
    write_session(session_doc(turns=turns))
    out = tmp_path / "out"
    build(archive, out)
    files = list(out.rglob("*.html"))
    assert max(f.stat().st_size for f in files) < 5_000_000
    context = browser.new_context()
    timings = []
    for target in ("#turn-1", "#turn-2999"):
        pg = context.new_page()  # a new page each: the second is a load, not a jump in the first
        pg.goto((out / urls.session_page(MAIN)).as_uri() + target)
        pg.wait_for_selector(f"[id='{target[1:]}']", state="attached")
        pg.wait_for_load_state("load")
        # Measured by the browser (navigation start to the end of the load event), so that
        # Playwright's round trips, which a loaded machine stretches, are not counted.
        timings.append(
            pg.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000
        )
    context.close()
    assert 0 < max(timings) < 2.0, timings


def test_axe_reports_no_serious_violation(browser: Browser, base_url: str) -> None:
    require(AXE.is_file(), "axe-core is not installed (bash scripts/setup-tests.sh)")
    context = browser.new_context(bypass_csp=True)
    pg = context.new_page()
    found: dict[str, Any] = {}
    for path in ["index.html", urls.session_page(MAIN), urls.session_page(REVIEW)]:
        for scheme in ("light", "dark"):
            pg.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            pg.goto(base_url + path)
            pg.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            pg.add_script_tag(path=str(AXE))
            result = pg.evaluate("axe.run(document, {resultTypes: ['violations']})")
            bad = [v for v in result["violations"] if v["impact"] in ("serious", "critical")]
            if bad:
                found[f"{path} ({scheme})"] = [
                    (v["id"], v["help"], [n["target"] for n in v["nodes"]][:3]) for v in bad
                ]
    context.close()
    assert found == {}, json.dumps(found, indent=1)


def test_search_finds_prompts_and_a_long_outputs_last_lines_only(
    page: Page, tmp_path: Path
) -> None:
    """What docs/search.md says is indexed: a prompt's word is found, and the last 6 lines of a
    long tool output; its first lines, its hidden middle and the first lines of its shown
    tail are not."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    lines = [f"line {n} of the log" for n in range(1, 101)]
    lines[0] += " zqheadword"
    lines[49] += " zqmiddleword"
    lines[-10] += " zqshowntailword"
    lines[-6] += " zqlastlinesword"
    lines[-1] += " zqtailword"
    output = "\n".join(lines) + "\n"
    tool = part("tool", name="run_command", input={"command": "make"}, output=output)
    turns = [turn(1, part("user", "please run zqpromptword"), tool, part("text", "done"))]
    name = "ses_20260101_000001_cap001"
    (sessions / f"{name}.json").write_text(json.dumps(session_doc(name, turns=turns)))
    out = tmp_path / "site"
    build(sessions, out, search=True)
    with static_server(out) as base:
        page.goto(base + "index.html")
        for word, found in (
            ("zqpromptword", True),
            ("zqheadword", False),
            ("zqtailword", True),
            ("zqlastlinesword", True),
            ("zqshowntailword", False),
            ("zqmiddleword", False),
        ):
            page.fill("#search-input", "")
            page.wait_for_function(
                "() => document.getElementById('search-status').textContent.startsWith('Type to search.')"
            )
            page.fill("#search-input", word + " ")
            page.wait_for_function(
                "() => document.getElementById('search-status').textContent.includes('match')",
                timeout=15_000,
            )
            status = page.locator("#search-status").inner_text()
            assert status == ("1 turn matches." if found else "No turn matches."), (word, status)
