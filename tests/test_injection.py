"""Hostile content never becomes live markup: a payload corpus in every field, checked
statically (the HTML's tags and attributes) and in Chromium (nothing runs, nothing is
fetched from outside the site)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import chromium, static_server
from tests.helpers import build, part, session_doc, turn

pytestmark = pytest.mark.site

PAYLOADS = [
    line
    for line in (Path(__file__).parent / "data" / "payloads.txt")
    .read_text(encoding="utf-8")
    .split("\n")
    if line
]
# Whole multi-line payloads too (fence breakers, reference links).
PAYLOADS += [
    "```\n<script>window.__pwned=1</script>\n```",
    "[r]\n\n[r]: javascript:window.__pwned=1",
    "a\n````\nb",
]
PAYLOADS = list(dict.fromkeys(PAYLOADS))

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "link", "script", "body", "a", "header", "nav", "main", "footer", "p",
    "h1", "h2", "h3", "h4", "h5", "h6", "code", "pre", "span", "dl", "dt", "dd", "div", "section", "article",
    "details", "summary", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "strong", "em", "br",
    "hr", "blockquote", "label", "input", "select", "option", "button", "s", "del", "mark",
    "figure", "figcaption", "svg", "g", "line", "rect", "text", "desc", "kbd", "aside",
    "noscript", "caption",
}  # fmt: skip


def file_name_for(i: int, payload: str) -> str:
    cleaned = payload.replace("/", "∕").replace("\x00", "").replace("\n", " ")[:80].strip()
    return f"x{i:03d} {cleaned}".rstrip(". ")


def hostile_session(i: int, payload: str) -> dict[str, Any]:
    p = payload
    return session_doc(
        name=p,
        session_id=p,
        role=p,
        version=p,
        parent_id=p,
        sub_sessions=[p, f"sub_{i}"],
        created_at=p,
        updated_at=p,
        turns=[
            turn(
                1,
                part("user", p, timestamp=p),
                part("user", f"[answer to parked ask #{p}] {p}"),
                part("thinking", p),
                part(
                    "tool",
                    name=p,
                    input={p: [p, {"nested": p}], "__proto__": p},
                    output=p,
                    is_error=True,
                    analysis=p,
                ),
                part(
                    "text", f"{p}\n\n*{p}*\n\n> {p}\n\n- {p}\n\n| {p} | x |\n|---|---|\n| {p} | y |"
                ),
                part("system", p),
                {"type": p, "timestamp": p, p: p},
                status=p,
                model=p,
                provider=p,
                mode=p,
                reasoning=p,
                started_at=p,
                ended_at=p,
                **{p: p},
            ),
            turn(2, part("command", p, summary=p, compact_from=1)),
            # An error and a decision placed in a turn and on its call: shown in place.
            turn(
                3,
                part("tool", name=p, input={"command": p}, output=p),
                # Tool-aware views: shell line, diff, read, fetch URL, delegate, ANSI.
                part(
                    "tool",
                    name="run_command",
                    input={"command": p},
                    output=f"\x1b[31m{p}\x1b[0m\x00",
                ),
                part(
                    "tool", name="file_write", input={"path": p, "patch": f"-{p}\n+{p}"}, output=p
                ),
                part(
                    "tool",
                    name="Edit",
                    input={"file_path": p, "old_string": p, "new_string": p + "x"},
                ),
                part(
                    "tool",
                    name="run_command",
                    input={"command": ["bash", "-lc", p]},
                    output=f"--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-{p}\n+{p}\n",
                ),
                part("tool", name="file_read", input={"path": p, "start_line": 1, "end_line": 2}),
                part("tool", name="web_fetch", input={"url": p}),
                part("tool", name="web_fetch", input={"url": "https://x.test/" + p}),
                part(
                    "tool",
                    name="delegate",
                    input={"role": p, "task": p},
                    output=f"Delegated to {p}",
                ),
                status=p,
            ),
        ],
        errors=[
            {"code": p, "message": p, "timestamp": p, p: p},
            {"code": p, "message": p, "timestamp": "2026-08-17T12:00:02+00:00"},
        ],
        permissions=[
            {"tool": p, "action": p, "decision": p, "path": p, "timestamp": p},
            {"tool": p, "action": p, "decision": p, "path": p, "timestamp": "2026-08-17T12:00:01Z"},
        ],
        imported_from={"agent": p, "path": p, "session_id": p},
        **{f"x_{i}": p},
    )


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    sessions = root / "sessions"
    sessions.mkdir()
    for i, payload in enumerate(PAYLOADS):
        (sessions / f"{file_name_for(i, payload)}.json").write_text(
            json.dumps(hostile_session(i, payload)), encoding="utf-8"
        )
    out = root / "site"
    report = build(sessions, out, search=True)
    assert report.sessions == len(PAYLOADS), report.warnings
    assert report.search.startswith("built ")
    return out


class TagAudit(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self.csp = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.problems.append(f"tag <{tag}>")
        for name, value in attrs:
            if name.startswith("on") or name in ("style", "srcdoc", "formaction", "background"):
                self.problems.append(f"attribute {name} on <{tag}>")
            if name in ("href", "src", "action") and value is not None:
                cleaned = re.sub(r"[\x00-\x20]", "", value).lower()
                if ":" in cleaned.split("/")[0] and not cleaned.startswith(
                    ("http:", "https:", "mailto:")
                ):
                    self.problems.append(f"{name}={value!r} on <{tag}>")
        if tag == "script" and dict(attrs).get("type") != "application/json":
            src = dict(attrs).get("src") or ""
            ours = ("app.js", "session.js", "archive.js", "search.js", "snowball-english.js")
            if not src.endswith(tuple(f"assets/{name}" for name in ours)):
                self.problems.append(f"script {src!r}")
        equiv = (dict(attrs).get("http-equiv") or "").lower()
        if tag == "meta" and equiv == "refresh":
            self.problems.append("meta refresh")
        if tag == "meta" and equiv == "content-security-policy":
            self.csp += 1
        if tag == "link" and not (dict(attrs).get("href") or "").endswith(
            ("assets/style.css", "assets/theme.css", "assets/session.css", "assets/archive.css")
        ):
            self.problems.append(f"link {attrs}")


def html_files(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_every_page_is_inert_markup(hostile_site: Path) -> None:
    files = html_files(hostile_site)
    archive_pages = ["index.html", "errors.html", "decisions.html"]
    assert len(files) == len(PAYLOADS) + len(archive_pages)
    assert {p.name for p in files if p.parent == hostile_site} == set(archive_pages)
    for path in files:
        audit = TagAudit()
        text = path.read_text(encoding="utf-8")
        audit.feed(text)
        assert audit.problems == [], (path, audit.problems[:5])
        assert audit.csp == 1, path  # ours, and no payload <meta> survives as a tag
        assert "49" not in re.findall(r"<p>([^<]*)</p>", text)  # template syntax is not evaluated


#: What no published file holds raw: control characters (ESC, NUL, DEL, C1; not tab or
#: line breaks) and the bidirectional controls that reorder what a reader sees.
RAW_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_no_published_file_holds_a_raw_control(hostile_site: Path) -> None:
    """Every page and every data file the pages' scripts show (row shards, facets, the
    search index's terms) shows a control as an escape. The search index's documents are
    the one exception: the text searched, which the client shows through ``visible``
    (tested in the browser with this corpus)."""
    checked = 0
    for path in sorted(hostile_site.rglob("*")):
        rel = path.relative_to(hostile_site).as_posix()
        if path.is_dir() or re.fullmatch(r"search/[^/]+/d-[^/]+\.js", rel):
            continue
        found = RAW_CONTROL_RE.search(path.read_bytes().decode("utf-8", "replace"))
        assert found is None, (rel, hex(ord(found.group())))
        checked += 1
    assert checked > len(PAYLOADS)


def test_the_search_filters_name_roles_as_the_page_does(hostile_site: Path) -> None:
    """The search index's role facets are keyed by the role as the page's role filter
    says it (a control as an escape), so picking any hostile role finds its sessions."""

    class Options(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.roles: set[str] = set()
            self.inside = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "select":
                self.inside = dict(attrs).get("id") == "filter-role"
            elif tag == "option" and self.inside:
                value = dict(attrs).get("value") or ""
                if value.startswith("="):
                    self.roles.add(value[1:])

    page = Options()
    page.feed((hostile_site / "index.html").read_text(encoding="utf-8"))
    faceted: set[str] = set()
    for path in (hostile_site / "search").glob("*/f-*.js"):
        call = path.read_text(encoding="utf-8")
        payload = call[call.index(",", call.index(",", call.index(",") + 1) + 1) + 1 : -3]
        faceted |= set(json.loads(payload)["role"])
    assert len(faceted) > len(PAYLOADS) // 2
    assert faceted <= page.roles, sorted(faceted - page.roles)[:5]


def test_every_write_stays_inside_the_output(hostile_site: Path) -> None:
    names = [p.name for p in hostile_site.rglob("*")]
    for name in names:
        assert len(name.encode()) < 120 and not name.endswith((".", " "))
        assert re.fullmatch(r"[A-Za-z0-9_.-]+", name), name


@pytest.fixture(scope="module")
def served(hostile_site: Path) -> Iterator[str]:
    with static_server(hostile_site) as url:
        yield url


@pytest.mark.browser
@pytest.mark.slow
def test_nothing_executes_and_nothing_is_fetched_outside(hostile_site: Path, served: str) -> None:
    with chromium() as browser:
        context = browser.new_context()
        outside: list[str] = []
        dialogs: list[str] = []
        errors: list[str] = []
        context.on("request", lambda r: None if r.url.startswith(served) else outside.append(r.url))
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: errors.append(str(e)))
        for path in html_files(hostile_site):
            rel = path.relative_to(hostile_site).as_posix()
            page.goto(served + rel)
            page.wait_for_load_state("load")
            page.locator("details").evaluate_all("ds => ds.forEach(d => d.open = true)")
            for link in page.locator("a.session-ref").all()[:3]:
                link.hover()
            assert page.evaluate("window.__pwned") is None, rel
        page.goto(served + "index.html")
        page.fill("#search-input", "pwned")
        page.wait_for_selector("#search-results li", timeout=20_000)
        assert page.locator("#search-results li").count() > 0
        assert page.locator("#search-results script, #search-results img").count() == 0
        assert page.evaluate("window.__pwned") is None
    assert dialogs == []
    assert outside == []
    assert errors == []


@pytest.fixture(scope="module")
def hostile_series(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every payload as a run of one series (each run's comparison page shows a payload
    against the previous one), with the index and the Failures and Decisions pages sharded:
    the delegation tree has its own page (``tree.html``) and the rows come from script-tag
    shards."""
    from publisher.site.context import Tunables

    root = tmp_path_factory.mktemp("hostile-series")
    sessions = root / "sessions"
    sessions.mkdir()
    for i, payload in enumerate(PAYLOADS):
        doc = hostile_session(i, payload)
        doc["role"] = "nightly"
        doc["created_at"] = f"2026-08-17T12:{i // 60:02d}:{i % 60:02d}+00:00"
        (sessions / f"{file_name_for(i, payload)}.json").write_text(
            json.dumps(doc), encoding="utf-8"
        )
    out = root / "site"
    report = build(sessions, out, tunables=Tunables(index_first_rows=5, rows_per_shard=8))
    assert report.sessions == len(PAYLOADS), report.warnings
    return out


def test_comparison_and_tree_pages_are_inert_markup(hostile_series: Path) -> None:
    compares = sorted(hostile_series.glob("sessions/*/compare.html"))
    assert len(compares) == len(PAYLOADS) - 1
    assert (hostile_series / "tree.html").is_file()
    assert sorted(hostile_series.glob("rows/*.js"))
    assert sorted(hostile_series.glob("events/*.js"))
    archive = [hostile_series / name for name in ("index.html", "errors.html", "decisions.html")]
    for path in [hostile_series / "tree.html", *archive, *compares]:
        audit = TagAudit()
        text = path.read_text(encoding="utf-8")
        audit.feed(text)
        assert audit.problems == [], (path, audit.problems[:5])
        assert audit.csp == 1, path


@pytest.fixture(scope="module")
def hostile_tree_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A single-file export of a root whose sub-sessions are the hostile sessions (their
    names, titles and every text field a payload), one that does not load, and one missing."""
    from tests.helpers import polyglav

    root = tmp_path_factory.mktemp("hostile-tree")
    sessions = root / ".polyglav" / "sessions"
    sessions.mkdir(parents=True)
    # File names the archive can resolve; the session names (titles) are the payloads.
    names = [f"sub_{i:03d}" for i in range(len(PAYLOADS))]
    for i, payload in enumerate(PAYLOADS):
        (sessions / f"{names[i]}.json").write_text(
            json.dumps(hostile_session(i, payload)), encoding="utf-8"
        )
    (sessions / "sub_broken.json").write_text('{"turns": [', encoding="utf-8")
    doc = session_doc(
        "ses_20260901_100000_tree01",
        sub_sessions=[*names, "sub_broken", PAYLOADS[0] + "/missing"],
        turns=[
            turn(1, *(part("tool", name="delegate", output=f"Delegated to {n}") for n in names))
        ],
    )
    (sessions / "ses_20260901_100000_tree01.json").write_text(json.dumps(doc), encoding="utf-8")
    out = root / "tree.html"
    result = polyglav("export", "#tree01", "--project", str(root), "-f", "html", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    return out


def test_single_file_with_hostile_sub_sessions_is_inert(hostile_tree_file: Path) -> None:
    text = hostile_tree_file.read_text(encoding="utf-8")
    audit = TagAudit()
    audit.feed(text)
    # Its one <style> and the CSP; no script, no link, nothing else.
    assert [p for p in audit.problems if p != "tag <style>"] == []
    assert text.count("<style>") == 1 and audit.csp == 1
    from tests.test_single_export import parsed

    found = parsed(text)
    assert [i for i, n in Counter(found.ids).items() if n > 1] == []
    assert set(found.links) - set(found.ids) == set()
    # Each hostile session names sub-sessions that are not there: one line for each.
    assert '<li class="missing">Sub-session sub_broken (of ' in text
    assert text.count('<li class="missing">Sub-session ') > len(PAYLOADS)
    assert text.count('<article class="session" id="s-') == len(PAYLOADS)


@pytest.mark.browser
@pytest.mark.slow
def test_nothing_executes_on_comparison_tree_and_sharded_index(hostile_series: Path) -> None:
    with static_server(hostile_series) as served, chromium() as browser:
        context = browser.new_context()
        outside: list[str] = []
        dialogs: list[str] = []
        errors: list[str] = []
        context.on("request", lambda r: None if r.url.startswith(served) else outside.append(r.url))
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: errors.append(str(e)))
        compares = hostile_series.glob("sessions/*/compare.html")
        rels = ["tree.html", *sorted(p.relative_to(hostile_series).as_posix() for p in compares)]
        for rel in rels:
            page.goto(served + rel)
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned") is None, rel
        page.goto(served + "index.html")
        page.locator('th[data-key="turns"] button').click()  # every shard's rows, drawn
        expect(page.locator("#session-table tbody tr")).to_have_count(len(PAYLOADS))
        assert page.evaluate("window.__pwned") is None
        # every row, from the script-tag shards: each session failed thrice (two errors
        # and a failed call) and made two decisions
        for rel, each in (("errors.html", 3), ("decisions.html", 2)):
            page.goto(served + rel)
            page.locator("#load-all").click()
            expect(page.locator("#event-table tbody tr")).to_have_count(each * len(PAYLOADS))
            assert page.evaluate("window.__pwned") is None, rel
    assert dialogs == []
    assert outside == []
    assert errors == []


@pytest.mark.browser
@pytest.mark.slow
def test_single_file_with_hostile_sub_sessions_runs_nothing(hostile_tree_file: Path) -> None:
    with chromium() as browser:
        context = browser.new_context()
        outside: list[str] = []
        context.on(
            "request", lambda r: None if r.url.startswith("file:") else outside.append(r.url)
        )
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(hostile_tree_file.as_uri())
        page.locator("details").evaluate_all("ds => ds.forEach(d => d.open = true)")
        for link in page.locator("a[href^='#s-']").all()[:20]:
            link.click()
        assert page.evaluate("window.__pwned") is None
    assert dialogs == [] and outside == []
