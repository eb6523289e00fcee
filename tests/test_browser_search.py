"""Search in Chromium, typed into the index page's search box as a person would, from
``file://`` and over HTTP alike: every kind of query (a word, an English stem, a prefix
being typed, every word required, a quoted phrase, Chinese and Japanese text), the ranking
(a prompt before tool output, a turn holding every word before a session holding them
apart), deep links to the right page of a split session, the index's filters, and the
injection corpus shown as text."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from publisher.site.context import Tunables
from tests.browser import chromium, static_server
from tests.helpers import build, part, session_doc, turn

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

PAYLOADS = [
    line
    for line in (Path(__file__).parent / "data" / "payloads.txt")
    .read_text(encoding="utf-8")
    .splitlines()
    if line and not line.startswith("#")
]

BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")

A = "ses_20260101_000001_alpha1"
B = "ses_20260101_000002_beta02"
C = "job_20260101_000003_gamma3"
LONG = "ses_20260101_000004_long04"
INJ = "ses_20260101_000005_inject"


def write(folder: Path, name: str, turns: list[dict[str, Any]], **fields: Any) -> None:
    (folder / f"{name}.json").write_text(json.dumps(session_doc(name, turns=turns, **fields)))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("search")
    sessions = root / "sessions"
    sessions.mkdir()
    write(
        sessions,
        A,
        [
            turn(1, part("user", "The checkout service keeps timing out under load"),
                 part("text", "I will profile the checkout service.")),
            turn(2, part("tool", name="run_command", input={"command": "pytest -q"},
                         output="zqranked appears only in this output\n")),
            turn(3, part("user", "Please look at zqranked in the prompt"),
                 part("text", "Running the benchmarks generously.")),
            turn(4, part("user", "検索エンジンの日本語テキストを確認してください"),
                 part("text", "中文分词测试通过了")),
        ],
        role="builder",
    )  # fmt: skip
    write(
        sessions,
        B,
        [
            turn(1, part("user", "zqapart first word here")),
            turn(2, part("user", "and zqsecond word there")),
            turn(3, part("user", "the words are reported as timing out")),
        ],
        role="reviewer",
    )
    write(
        sessions,
        C,
        [turn(1, part("user", "zqapart and zqsecond together in one turn"), status="error")],
        role="nightly",
        errors=[
            {"code": 500, "message": "zqfailure upstream", "timestamp": "2026-08-17T12:00:02+00:00"}
        ],
    )
    write(
        sessions,
        LONG,
        [turn(i, part("user", f"step {i} of the long session" + (" zqdeep" if i == 9 else "")))
         for i in range(1, 13)],
    )  # fmt: skip
    write(
        sessions,
        INJ,
        [turn(i + 1, part("user", f"zqinj{i} {payload} zqinj{i}")) for i, payload in enumerate(PAYLOADS)],
    )  # fmt: skip
    out = root / "site"
    build(sessions, out, search=True, tunables=Tunables(page_turns=5, sessions_per_bundle=2))
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


@pytest.fixture(params=["file", "http"])
def base(request: pytest.FixtureRequest, site: Path) -> Iterator[str]:
    if request.param == "file":
        yield site.as_uri() + "/"
    else:
        with static_server(site) as url:
            yield url


@pytest.fixture
def page(browser: Browser, base: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("dialog", lambda d: (errors.append(f"dialog {d.message}"), d.dismiss()))
    pg.goto(base + "index.html")
    yield pg
    context.close()
    assert errors == [], errors


def search(page: Page, query: str) -> list[tuple[str, str]]:
    """Type ``query`` as a person would; the results (link, excerpt) once shown."""
    page.fill("#search-input", "")
    page.wait_for_timeout(100)  # past the client's debounce: the empty query's status is set
    page.evaluate(
        "() => { const l = document.getElementById('search-results'); delete l.dataset.ms;"
        " delete l.dataset.query;"
        " document.getElementById('search-status').textContent = ''; }"
    )
    if query.isascii():
        page.locator("#search-input").press_sequentially(query, delay=5)
    else:  # typed through an input method: the text arrives at once
        page.fill("#search-input", query)
    # Shown for this very query (the client marks the results with the query they are of).
    # "Type a word" ends only a query with no letter or digit: typed slowly (a loaded
    # machine), '"timing out"' shows it for its first keystroke, '"', before its results.
    page.wait_for_function(
        "q => { const said = document.getElementById('search-status').textContent;"
        " return document.getElementById('search-results').dataset.query === q"
        " || /not available/.test(said)"
        " || (/Type a word/.test(said) && !/[\\p{L}\\p{N}]/u.test(q)); }",
        arg=query,
        timeout=15_000,
    )
    links = page.locator("#search-results li a").evaluate_all(
        "as => as.map(a => a.getAttribute('href'))"
    )
    excerpts = page.locator("#search-results li p.excerpt").all_inner_texts()
    return list(zip(links, excerpts, strict=True))


def script_data(path: Path) -> Any:
    """The data an index file hands the client (``__polyglavSearch.add(…, data);``)."""
    return json.loads(path.read_text().split(",", 3)[3].removesuffix(");\n"))


def status(page: Page) -> str:
    return page.locator("#search-status").inner_text()


def test_a_word_a_stem_and_a_prefix(page: Page) -> None:
    hits = search(page, "checkout ")
    assert [h for h, _ in hits] == [f"sessions/{A}/index.html#turn-1.1"]
    assert status(page) == "1 turn matches."
    # An English stem: "runs" finds "Running" (both "run"), and the tool run_command (an
    # underscore separates words), after the answer.
    assert [h for h, _ in search(page, "runs ")] == [
        f"sessions/{A}/index.html#turn-3.2",
        f"sessions/{A}/index.html#turn-2.1",
    ]
    # The word being typed is a prefix: "genero" finds "generously", "bench" "benchmarks".
    assert [h for h, _ in search(page, "genero")] == [f"sessions/{A}/index.html#turn-3.2"]
    assert [h for h, _ in search(page, "benchm")] == [f"sessions/{A}/index.html#turn-3.2"]
    # Not a prefix once the word is finished.
    assert search(page, "bench ") == [] and status(page) == "No turn matches."


def test_every_word_is_required_and_a_turn_holding_all_comes_first(page: Page) -> None:
    hits = search(page, "zqapart zqsecond")
    assert [h for h, _ in hits] == [
        f"sessions/{C}/index.html#turn-1.1",  # both words in one turn
        f"sessions/{B}/index.html#turn-1.1",  # the words in two turns of one session
    ]
    assert status(page) == "1 turn matches; 1 more session holds the words in separate turns."
    assert search(page, "zqapart zqnothing ") == []


def test_a_paste_is_searched_at_once_and_keystrokes_after_the_debounce(page: Page) -> None:
    """A keystroke waits for the debounce (the chunks of a word half typed are not loaded
    for nothing), and so does an input method's update while it composes; text that comes
    in one piece (a paste, text inserted whole) and an input method's text once composed
    are searched at once. The page's timers are stopped: only what runs at once runs."""
    page.evaluate(
        "() => { window.zqTimers = 0; window.zqWaits = [];"
        " window.setTimeout = function (f, ms) { window.zqTimers++; window.zqWaits.push(ms);"
        " return 0; }; }"
    )
    results = "document.getElementById('search-results').dataset.query || ''"
    page.locator("#search-input").press("c")
    page.wait_for_timeout(200)
    assert page.evaluate(results) == "" and page.evaluate("window.zqTimers") == 1
    # A word of one or two ASCII letters being typed waits longer (its chunk would load
    # for nothing: the next letter comes within it); from three letters, the debounce.
    page.locator("#search-input").press("h")
    page.locator("#search-input").press("e")
    page.locator("#search-input").press("Space")
    page.locator("#search-input").press("7")
    assert page.evaluate("window.zqWaits") == [300, 300, 40, 40, 300]
    # Any letter but a Chinese or Japanese character (a prefix of its own) is one.
    page.locator("#search-input").press_sequentially(" ü 検")
    assert page.evaluate("window.zqWaits")[5:] == [40, 300, 40, 40]
    page.locator("#search-input").press_sequentially("検 üb")
    assert page.evaluate("window.zqWaits")[9:] == [40, 40, 300, 300]
    page.evaluate("() => { window.zqTimers = 1; }")
    page.fill("#search-input", "checkout")  # one input event of the whole text
    page.wait_for_function(f"() => ({results}) === 'checkout'", timeout=15_000)
    assert page.locator("#search-results li a").first.get_attribute("href") == (
        f"sessions/{A}/index.html#turn-1.1"
    )
    page.evaluate(
        "() => { const i = document.getElementById('search-input'); i.value = 'zqranked';"
        " i.dispatchEvent(new InputEvent('input', {inputType: 'insertFromPaste'})); }"
    )
    page.wait_for_function(f"() => ({results}) === 'zqranked'", timeout=15_000)
    assert page.locator("#search-results li").count() == 2
    assert page.evaluate("window.zqTimers") == 1
    # An input method's update while it composes is a keystroke: it waits.
    page.evaluate(
        "() => { const i = document.getElementById('search-input'); i.value = 'checkout';"
        " i.dispatchEvent(new InputEvent('input',"
        " {inputType: 'insertCompositionText', data: 'checkout', isComposing: true})); }"
    )
    page.wait_for_timeout(200)
    assert page.evaluate(results) == "zqranked" and page.evaluate("window.zqTimers") == 2
    page.evaluate(  # the composition ends: its text is searched at once
        "() => document.getElementById('search-input')"
        ".dispatchEvent(new CompositionEvent('compositionend', {data: 'checkout'}))"
    )
    page.wait_for_function(f"() => ({results}) === 'checkout'", timeout=15_000)
    assert page.evaluate("window.zqTimers") == 2
    # Firefox then sends an input event of the composed text: not searched again (the
    # results would be cleared and shown anew). A keystroke after it is one as before.
    page.evaluate(
        "() => { window.zqCleared = 0; new MutationObserver((records) => {"
        " window.zqCleared += records.filter((r) => r.removedNodes.length).length; })"
        ".observe(document.getElementById('search-results'), {childList: true});"
        " document.getElementById('search-input').dispatchEvent(new InputEvent('input',"
        " {inputType: 'insertCompositionText', data: 'checkout', isComposing: false})); }"
    )
    page.wait_for_timeout(300)
    assert page.evaluate("window.zqCleared") == 0 and page.evaluate("window.zqTimers") == 2
    page.locator("#search-input").press("s")
    assert page.evaluate("window.zqTimers") == 3


def test_a_prompt_ranks_before_tool_output(page: Page) -> None:
    hits = search(page, "zqranked ")
    assert [h for h, _ in hits] == [
        f"sessions/{A}/index.html#turn-3.1",
        f"sessions/{A}/index.html#turn-2.1",
    ]


def test_a_quoted_phrase(page: Page) -> None:
    hits = search(page, '"timing out"')
    assert sorted(h for h, _ in hits) == [
        f"sessions/{A}/index.html#turn-1.1",
        f"sessions/{B}/index.html#turn-3.1",
    ]
    assert search(page, '"out timing"') == []


def test_chinese_and_japanese(page: Page) -> None:
    assert [h for h, _ in search(page, "日本語")] == [f"sessions/{A}/index.html#turn-4.1"]
    assert [h for h, _ in search(page, "分词")] == [f"sessions/{A}/index.html#turn-4.2"]
    assert [h for h, _ in search(page, "検索")] == [f"sessions/{A}/index.html#turn-4.1"]


def test_excerpts_mark_the_words(page: Page) -> None:
    search(page, "checkout service")
    marks = page.locator("#search-results li p.excerpt mark").all_inner_texts()
    assert marks[:2] == ["checkout", "service"], marks


def test_a_deep_link_to_a_later_page(page: Page, base: str) -> None:
    hits = search(page, "zqdeep ")
    assert [h for h, _ in hits] == [f"sessions/{LONG}/page-2.html#turn-9.1"]
    page.locator("#search-results li a").first.click()
    page.wait_for_url(f"**/{LONG}/page-2.html#turn-9.1")
    assert page.evaluate("document.getElementById('turn-9.1') !== null")


def test_the_filters_apply_to_results(page: Page) -> None:
    assert len(search(page, "zqapart ")) == 2
    page.select_option("#filter-kind", "job")
    page.wait_for_function("() => document.querySelectorAll('#search-results li').length === 1")
    assert (
        page.locator("#search-results li a").get_attribute("href")
        == f"sessions/{C}/index.html#turn-1.1"
    )
    page.select_option("#filter-kind", "")
    page.select_option("#filter-role", "=reviewer")
    assert [h for h, _ in search(page, "zqapart ")] == [f"sessions/{B}/index.html#turn-1.1"]
    page.select_option("#filter-role", "")
    page.select_option("#filter-status", "error")
    assert [h for h, _ in search(page, "zqapart ")] == [f"sessions/{C}/index.html#turn-1.1"]
    page.select_option("#filter-status", "")
    page.check("#filter-failures")
    assert [h for h, _ in search(page, "zqapart ")] == [f"sessions/{C}/index.html#turn-1.1"]
    # An error placed in a turn is indexed there.
    assert [h for h, _ in search(page, "zqfailure ")] == [f"sessions/{C}/index.html#turn-1-error-1"]


def test_the_injection_corpus_is_shown_as_text(page: Page) -> None:
    """Every payload, typed into the search box and found in a prompt: nothing runs (the
    page fixture fails on a dialog or a page error), the excerpt is the payload's text,
    and the results hold only the elements the client makes."""
    for i, payload in enumerate(PAYLOADS):
        hits = search(page, f"zqinj{i} ")
        assert len(hits) == 1, (i, payload)
        shown = page.locator("#search-results li p.excerpt").first.text_content() or ""
        # Bidirectional controls are shown as escapes (as in the pages and the CLI).
        full = BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", f"zqinj{i} {payload} zqinj{i}")
        assert full.startswith(shown.removesuffix(" …")) and shown.startswith(f"zqinj{i}"), (
            payload,
            shown,
        )
        search(page, payload[:60])  # the payload itself as a query
    tags = page.evaluate(
        "() => Array.from(document.querySelectorAll('#search-results *')).map(e => e.tagName)"
    )
    assert set(tags) <= {"LI", "A", "CODE", "SPAN", "P", "MARK"}, set(tags)


@pytest.mark.slow
def test_a_two_word_query_at_20000_sessions_shows_results_within_100_ms(
    browser: Browser, tmp_path: Path
) -> None:
    """Issue 30: 20,000 small sessions (``generate.py --small``), the site opened from
    ``file://``, a two-word query typed: its first results show within 100 ms of the last
    keystroke, measured in the page (from the input event to the results in the DOM)."""
    import importlib.util
    import sys

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(
            "generate", root / "benchmarks" / "generate.py"
        )
        assert spec is not None and spec.loader is not None
        generate = importlib.util.module_from_spec(spec)
        sys.modules["generate"] = generate  # its dataclasses look their module up there
        spec.loader.exec_module(generate)
    finally:
        sys.path.remove(str(root / "benchmarks"))
        sys.modules.pop("generate", None)
    sessions = generate.small_archive(20_000, tmp_path / "archive")
    out = tmp_path / "site"
    report = build(sessions, out, search=True, workers=2)
    assert report.sessions == 20_000
    context = browser.new_context()
    page = context.new_page()
    timings = []
    for query in ("request timeout", "cache retry", "stale snapshot"):
        page.goto((out / "index.html").as_uri())
        page.focus("#search-input")  # the index's meta files load as the box gets the focus
        page.wait_for_timeout(1000)
        page.locator("#search-input").press_sequentially(query[:-1], delay=120)
        page.wait_for_timeout(500)
        page.evaluate("delete document.getElementById('search-results').dataset.ms")
        page.locator("#search-input").press(query[-1])  # the last keystroke's own results
        page.wait_for_function(
            "() => document.getElementById('search-results').dataset.ms !== undefined",
            timeout=30_000,
        )
        assert page.locator("#search-results li").count() > 0, query
        timings.append(float(page.get_attribute("#search-results", "data-ms") or "nan"))
    context.close()
    assert max(timings) < 100, timings


def test_a_bundle_of_no_words_finds_nothing_and_the_others_are_searched(
    browser: Browser, tmp_path: Path
) -> None:
    """A bundle whose sessions hold no word names no term chunk: a query finds nothing
    there and still searches the other bundles (it is neither an error nor "not
    available")."""
    from publisher.site.search.bundle import bundle_id, bundle_of
    from publisher.site.urls import row_slot

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    # Sessions of no word (punctuation only) until one falls in a bundle of its own.
    for i in range(40):
        write(sessions, f"ses_20260101_{i:06d}_empty{i:02d}", [turn(1, part("user", "... !!!"))])
    worded = "ses_20260102_000000_words1"
    write(sessions, worded, [turn(1, part("user", "zqfindable words"))])
    out = tmp_path / "site"
    build(sessions, out, search=True, tunables=Tunables(sessions_per_bundle=1, max_bundles=64))
    bundles = {p.name for p in (out / "search").iterdir() if p.is_dir() and p.name != "terms"}
    index = script_data(out / "search" / "index.js")
    assert len(index["bundles"]) == len(bundles) > 1
    worded_numbers = {
        number
        for chunk in (out / "search" / "terms").glob("t-*.js")
        for entry in script_data(chunk)
        for number in entry[2::3]
    }
    wordless = [b for b, _, n in index["bundles"] if n not in worded_numbers]
    assert wordless, "no bundle without words: change the names"
    assert bundle_id(bundle_of(row_slot(worded), 64), 64) not in wordless
    context = browser.new_context()
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto((out / "index.html").as_uri())
    found = search(pg, "zqfindable")
    assert len(found) == 1 and worded in found[0][0], found
    assert "not available" not in status(pg)
    assert search(pg, "zqnowhere") == [] and "not available" not in status(pg)
    context.close()
    assert errors == [], errors


def test_past_eager_metas_a_query_loads_only_its_results_bundles_metas(
    browser: Browser, tmp_path: Path
) -> None:
    """Past ``EAGER_METAS`` bundles (at 100,000 sessions the 128 bundles' meta files are 282
    KB), the box's focus loads ``index.js`` alone and a query the meta files of the bundles
    its shown results are in; a filter then loads every bundle's (their facets' files are
    named there) and still applies."""
    from publisher.site.search.bundle import bundle_id, bundle_of
    from publisher.site.urls import row_slot

    assets = Path(__file__).resolve().parent.parent / "themes" / "default" / "assets"
    found = re.search(r"var EAGER_METAS = (\d+);", (assets / "search.js").read_text())
    assert found is not None
    eager = int(found[1])
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [f"ses_20260101_{i:06d}_many{i:02d}" for i in range(70)]
    for i, name in enumerate(names):
        role = "reviewer" if i % 2 == 0 else "builder"
        write(sessions, name, [turn(1, part("user", f"zqmany zqone{i} words"))], role=role)
    out = tmp_path / "site"
    build(sessions, out, search=True, tunables=Tunables(sessions_per_bundle=1, max_bundles=64))
    index = script_data(out / "search" / "index.js")
    assert len(index["bundles"]) > eager
    meta_file = {b: f"search/{b}/{m}.js" for b, m, _ in index["bundles"]}

    def bundle(name: str) -> str:
        return bundle_id(bundle_of(row_slot(name), 64), 64)

    context = browser.new_context()
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto((out / "index.html").as_uri())
    root = out.as_uri() + "/"

    def loaded() -> set[str]:
        srcs = pg.evaluate("() => Array.from(document.scripts).map(s => s.src)")
        return {s[len(root) :] for s in srcs if s.startswith(root + "search/")}

    pg.focus("#search-input")
    pg.wait_for_function("() => window.__polyglavSearch && document.scripts.length > 0")
    pg.wait_for_timeout(300)
    assert loaded() == {"search/index.js"}
    hits = search(pg, "zqone7 ")
    assert [h for h, _ in hits] == [f"sessions/{names[7]}/index.html#turn-1.1"]
    metas = {f for f in loaded() if "/m-" in f}
    assert metas == {meta_file[bundle(names[7])]}
    hits = search(pg, "zqmany ")
    assert len(hits) == 8 and status(pg) == "70 turns match."
    shown = {h.split("/")[1] for h, _ in hits} | {names[7]}
    assert {f for f in loaded() if "/m-" in f} == {meta_file[bundle(n)] for n in shown}
    pg.select_option("#filter-role", "=reviewer")
    pg.wait_for_function(
        "() => /^35 turns match/.test(document.getElementById('search-status').textContent)"
    )
    assert {f for f in loaded() if "/m-" in f} == set(meta_file.values())
    reviewers = {f"sessions/{n}/index.html#turn-1.1" for n in names[::2]}
    links = pg.locator("#search-results li a").evaluate_all(
        "as => as.map(a => a.getAttribute('href'))"
    )
    assert len(links) == 8 and set(links) <= reviewers
    context.close()
    assert errors == [], errors


def test_a_prefix_of_two_letters_reads_one_term_chunk_a_longer_one_two(
    browser: Browser, tmp_path: Path
) -> None:
    """A prefix of two characters matches words spread over many chunks, of which two or
    one are as arbitrary a slice (alphabetical): it reads one, the one where its words
    begin (it holds the first of them); from three characters, two."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(12):
        write(
            sessions, f"ses_20260101_{i:06d}_chunk{i:02d}", [turn(1, part("user", f"zqa{i:02d}"))]
        )
    out = tmp_path / "site"
    build(sessions, out, search=True, tunables=Tunables(search_chunk_bytes=1))  # a word a chunk
    assert len(list((out / "search" / "terms").glob("t-*.js"))) >= 12
    context = browser.new_context()
    pg = context.new_page()
    pg.goto((out / "index.html").as_uri())
    root = out.as_uri() + "/search/terms/"

    def chunks() -> int:
        srcs = pg.evaluate("() => Array.from(document.scripts).map(s => s.src)")
        return sum(s.startswith(root) for s in srcs)

    assert [h for h, _ in search(pg, "zq")] == [
        "sessions/ses_20260101_000000_chunk00/index.html#turn-1.1"
    ]
    assert chunks() == 1
    assert len(search(pg, "zqa")) == 2 and chunks() == 2
    context.close()
