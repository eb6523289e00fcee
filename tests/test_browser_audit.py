"""Chromium tests of the audit view: overview, navigation, errors and decisions in place,
cross-links both ways, diffs, ANSI colours, the phone layout."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from publisher.site import urls
from tests.browser import CHROMIUM, CHROMIUM_ARGS, static_server
from tests.helpers import SAMPLES, build, part, session_doc, turn

pytestmark = pytest.mark.browser

MAIN = "ses_20260817_120000_ab12cd"
JOB = "job_20260826_110230_7f3k2a"
REVIEW = "sub_20260817_121500_cd34ef"
EXTRA = "ses_20260901_100000_an5i00"
T = "2026-09-01T10:00:{:02d}+00:00"


def _extra_session() -> dict[str, object]:
    ansi = "\x1b[32mPASSED\x1b[0m test_a\n\x1b[1;31mFAILED\x1b[0m test_b\nplain\n"
    diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old\n+new\n ctx\n"
    return session_doc(
        EXTRA,
        turns=[
            turn(
                1,
                part("user", "run", timestamp=T.format(1)),
                part("tool", name="run_command", input={"command": "pytest"}, output=ansi,
                     timestamp=T.format(2)),
                part("tool", name="run_command", input={"command": "git diff"}, output=diff,
                     timestamp=T.format(3)),
                part("text", "# A heading\n\nsome text", timestamp=T.format(4)),
                started_at=T.format(0),
                ended_at=T.format(9),
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
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("audit")
    sessions = root / "sessions"
    sessions.mkdir()
    for f in SAMPLES.glob("*.json"):
        (sessions / f.name).write_bytes(f.read_bytes())
    (sessions / f"{EXTRA}.json").write_text(json.dumps(_extra_session()), encoding="utf-8")
    out = root / "site"
    build(sessions, out, search=False)
    with static_server(out) as url:
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


def top_of(page: Page, selector: str) -> float:
    return float(
        page.evaluate("s => document.querySelector(s).getBoundingClientRect().top", selector)
    )


def visible(page: Page, element_id: str) -> bool:
    top = page.evaluate("i => document.getElementById(i).getBoundingClientRect().top", element_id)
    return bool(-2 <= top < 900)


def test_overview_outline_links_every_turn(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(MAIN))
    hrefs = page.eval_on_selector_all(
        ".outline-list a", "els => els.map(e => e.getAttribute('href'))"
    )
    assert hrefs[:3] == ["#turn-1", "#turn-2", "#turn-3"] and len(hrefs) == 12
    assert page.locator(".timeline rect").count() == 12
    page.click(".outline-list a[href='#turn-7']")
    assert visible(page, "turn-7")


def test_error_in_place_links_both_ways(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(JOB))
    note = page.locator("#turn-2-error-1")
    assert "no HTTP status" in note.inner_text()
    assert page.locator("section.turn:has(#turn-2) #turn-2-error-2").count() == 1
    note.locator("a[href='index.html#error-1']").click()
    assert visible(page, "error-1")
    page.click("#error-1 a[href='#turn-2-error-1']")
    assert visible(page, "turn-2-error-1")
    assert "code 0" not in page.inner_text("#errors")


def test_decision_in_place_links_both_ways(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(MAIN))
    row = page.locator("#decision-9")
    assert "denied" in row.inner_text()
    row.locator("a").click()
    assert visible(page, "turn-7.2-decision-9")
    note = page.locator("#turn-7\\.2-decision-9")
    assert "denied" in note.inner_text() and "git push" in note.inner_text()
    note.locator("a").click()
    assert visible(page, "decision-9")


def test_delegate_call_and_sub_session_link_both_ways(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(MAIN))
    link = page.locator(f"#spawn-{REVIEW} a")
    link.click()
    page.wait_for_url(f"**/{REVIEW}/index.html")
    page.click(".spawn-link")
    page.wait_for_url(f"**/{MAIN}/index.html#turn-6.3")
    assert visible(page, "turn-6.3")
    assert visible(page, f"spawn-{REVIEW}")


def test_keyboard_shortcuts_and_help(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(MAIN))
    page.keyboard.press("j")
    assert abs(top_of(page, "section.turn")) < 4
    page.keyboard.press("j")
    assert abs(top_of(page, "section.turn:nth-of-type(2)")) < 4
    page.keyboard.press("e")
    assert "error" in page.evaluate("document.activeElement.className")
    page.evaluate("window.scrollTo(0, 0)")  # (a refused call is no failed call: from the top)
    page.keyboard.press("r")
    active = page.evaluate("document.activeElement.className")
    assert "note-denied" in active or "note-declined" in active
    page.keyboard.press("R")
    page.keyboard.press("?")
    assert page.locator("#keys-help").is_visible()
    assert "next / previous error" in page.inner_text("#keys-help")
    page.keyboard.press("Escape")
    assert not page.locator("#keys-help").is_visible()


def test_readable_without_scripts(browser: Browser, base_url: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    pg = context.new_page()
    pg.goto(base_url + urls.session_page(MAIN))
    refused = ".failure-list .fk-denied a, .failure-list .fk-declined a"
    assert pg.locator(".failure-list .fk-error a").count() >= 1
    assert pg.locator(refused).count() == 2
    pg.click(".failure-list .fk-denied a")
    assert "#turn-7.2" in pg.url
    context.close()


def test_diff_and_ansi_colours(page: Page, base_url: str) -> None:
    page.goto(base_url + urls.session_page(EXTRA))
    colour = "s => getComputedStyle(document.querySelector(s)).color"
    plain = page.evaluate(colour, "pre.output code")
    assert page.evaluate(colour, "pre .d-add") != page.evaluate(colour, "pre .d-del")
    assert page.evaluate(colour, "pre .d-add") != plain
    green = page.evaluate(colour, ".ansi-fg-2")
    red = page.evaluate(colour, ".ansi-fg-1")
    assert green != plain and red != plain and green != red
    text = page.inner_text("#turn-1\\.2")
    assert "\x1b" not in text and "[32m" not in text and "PASSED" in text
    assert page.locator("#turn-1\\.2 .cmdline").inner_text().strip() == "$ pytest"
    assert page.locator(".md h4").inner_text() == "A heading"  # nested under the part's h3


def test_phone_session_pages_do_not_scroll_sideways(browser: Browser, base_url: str) -> None:
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme)
        pg = context.new_page()
        for name in (MAIN, JOB, REVIEW, EXTRA):
            pg.goto(base_url + urls.session_page(name))
            width = pg.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (name, width)
        pg.goto(base_url + urls.session_page(MAIN))
        box = pg.locator("#decision-9 td[data-label='Decision']").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        context.close()


@pytest.mark.parametrize("scripts", [True, False])
def test_outline_stays_beside_the_turns_on_a_wide_screen(
    browser: Browser, base_url: str, scripts: bool
) -> None:
    context = browser.new_context(
        viewport={"width": 1600, "height": 900}, java_script_enabled=scripts
    )
    page = context.new_page()
    page.goto(base_url + urls.session_page(MAIN))
    outline = page.locator("#overview .outline-list")
    first_turn = page.locator("section.turn").first
    # Beside the turns, not above them.
    assert (
        outline.bounding_box()["x"]
        > first_turn.bounding_box()["x"] + first_turn.bounding_box()["width"]
    )  # type: ignore[index]
    page.locator("section.turn").last.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, 200)")
    assert page.evaluate("window.scrollY") > 3000
    box = outline.bounding_box()
    assert box is not None
    assert box["y"] < 900 and box["y"] + box["height"] > 0  # still in the viewport
    assert page.evaluate("document.documentElement.scrollWidth") <= 1600
    context.close()


def test_outline_above_the_turns_below_1400px_and_no_sideways_scroll_on_a_phone(
    browser: Browser, base_url: str
) -> None:
    for width in (1280, 390):
        context = browser.new_context(viewport={"width": width, "height": 844})
        page = context.new_page()
        page.goto(base_url + urls.session_page(MAIN))
        outline = page.locator("#overview").bounding_box()
        turn_box = page.locator("section.turn").first.bounding_box()
        assert outline is not None and turn_box is not None
        assert outline["y"] + outline["height"] <= turn_box["y"]
        page.locator("section.turn").last.scroll_into_view_if_needed()
        assert page.locator("#overview").bounding_box()["y"] < 0  # type: ignore[index]
        assert page.evaluate(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )
        context.close()
