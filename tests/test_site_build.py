"""The static site: pages, anchors, links, index, themes, determinism, the demo site."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from publisher.cli import app
from publisher.site import urls
from tests.helpers import (
    MAIN,
    REVIEW,
    ROOT,
    SAMPLES,
    SECURITY,
    Writer,
    build,
    page_of,
    part,
    session_doc,
    tree_digest,
    turn,
    write_json,
)

runner = CliRunner()
pytestmark = pytest.mark.site


class Ids(HTMLParser):
    """Collects ids, hrefs and script tags of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.hrefs: list[str] = []
        self.scripts: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        d = dict(attrs)
        if d.get("id"):
            self.ids.append(d["id"] or "")
        if tag == "a" and d.get("href"):
            self.hrefs.append(d["href"] or "")
        if tag == "script":
            self.scripts.append(d)


def parse(path: Path) -> Ids:
    p = Ids()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build(SAMPLES, out)
    return out


def test_every_turn_and_part_has_its_anchor(site: Path) -> None:
    from publisher.archive import Archive

    archive = Archive(SAMPLES)
    for entry in archive.listing():
        if not entry.loads:
            continue
        session = archive.read(SAMPLES / entry.file_name)
        ids = parse(page_of(site, session.session_name)).ids
        assert len(ids) == len(set(ids)), "duplicate ids"
        for t in session.turns:
            assert f"turn-{t.index}" in ids
            for m in range(1, len(t.parts) + 1):
                assert f"turn-{t.index}.{m}" in ids
        assert "errors" in ids and "permissions" in ids


def test_errors_and_permissions_sections(site: Path) -> None:
    html = page_of(site, MAIN).read_text(encoding="utf-8")
    errors = html[html.index('id="errors"') :]
    assert "HTTP 401" in errors and "max_tokens truncation" in errors
    perms = html[html.index('id="permissions"') : html.index('id="errors"')]
    for decision in ("granted", "declined", "denied"):
        assert f'class="badge dec-{decision}"' in perms
    assert "No errors were recorded in this session." in page_of(site, REVIEW).read_text(
        encoding="utf-8"
    )


def test_delegation_links_both_ways(site: Path) -> None:
    parent = parse(page_of(site, MAIN))
    assert f"../{REVIEW}/index.html" in parent.hrefs
    child = page_of(site, REVIEW).read_text(encoding="utf-8")
    lineage = child[
        child.index('class="lineage"') : child.index("</nav>", child.index('class="lineage"'))
    ]
    assert f'href="../{MAIN}/index.html"' in lineage
    grandchild = page_of(site, SECURITY).read_text(encoding="utf-8")
    lineage = grandchild[grandchild.index('class="lineage"') :]
    assert lineage.index(MAIN) < lineage.index(REVIEW) < lineage.index(SECURITY)
    assert f"../{SECURITY}/index.html" in parse(page_of(site, REVIEW)).hrefs


def test_references_in_text_link_to_sessions(site: Path) -> None:
    html = page_of(site, MAIN).read_text(encoding="utf-8")
    assert f'<a class="session-ref" href="../{REVIEW}/index.html">#cd34ef</a>' in html
    assert (
        '<a class="session-ref" href="../release-notes/index.html">session:release-notes</a>'
        in html
    )
    named = page_of(site, "release-notes").read_text(encoding="utf-8")
    assert f'href="../{REVIEW}/index.html">#cd34ef</a>' in named


def test_index_lists_every_file(site: Path) -> None:
    html = (site / "index.html").read_text(encoding="utf-8")
    # At a glance: how many, how many do not load, how the published ones ended.
    assert (
        '<p class="lead">5 sessions, 2 files that do not load. Built from <code>sample_sessions'
        "</code>. Last status: 2 ok, 1 error, 1 running, 1 empty.</p>"
    ) in html
    for path in SAMPLES.glob("*.json"):
        assert path.stem in html
    assert "legacy flat-messages format" in html
    assert "written before the session_name/session_id fields" in html
    rows = re.findall(
        r'<tr data-kind="(\w+)" data-role="([^"]*)" data-status="[^"]*" data-failures="(\d+)"', html
    )
    # Failures as `polyglav check --fail-on` every failure kind counts them (job: 2 errors
    # and a failed call; ses: 2 errors, a failed call, a denial, a refusal, a cut and an
    # interrupted turn).
    assert sorted(rows) == sorted(
        [
            ("job", "nightly-ci", "3"),
            ("named", "writer", "0"),
            ("ses", "", "7"),
            ("sub", "reviewer", "0"),
            ("sub", "security", "0"),
        ]
    )
    tree = html[html.index('id="tree"') : html.index('id="not-loaded"')]
    assert tree.index(MAIN) < tree.index(REVIEW) < tree.index(SECURITY)


def test_no_inline_script_and_csp(site: Path) -> None:
    for path in site.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert "Content-Security-Policy" in text
        for script in parse(path).scripts:
            assert script.get("src") or script.get("type") == "application/json", path


def test_two_builds_are_byte_identical(tmp_path: Path) -> None:
    build(SAMPLES, tmp_path / "a", search=True)
    build(SAMPLES, tmp_path / "b", search=True, workers=2)
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")


def test_demo_site_is_up_to_date(tmp_path: Path) -> None:
    """site/ is the demo built from sample_sessions/: rebuild with `polyglav site build
    --project sample_sessions --out site` when this fails."""
    build(SAMPLES, tmp_path / "site", search=True)

    assert tree_digest(tmp_path / "site") == tree_digest(ROOT / "site")
    assert (ROOT / "site" / "search" / "index.js").is_file()


def test_cli_build_exit_codes_and_strict(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["site", "build", "--project", str(SAMPLES), "--out", str(out), "--no-search"]
    )
    assert result.exit_code == 0, result.stderr
    assert "ses_20260301_090000_flat01.json: legacy flat-messages format" in result.stderr
    strict = runner.invoke(
        app,
        ["site", "build", "--project", str(SAMPLES), "--out", str(out), "--no-search", "--strict"],
    )
    assert strict.exit_code == 1
    assert "--strict" in strict.stderr
    bad_theme = runner.invoke(
        app, ["site", "build", "--project", str(SAMPLES), "--out", str(out), "--theme", "nope"]
    )
    assert bad_theme.exit_code == 1 and "no such theme" in bad_theme.stderr


def test_user_theme_overrides_one_template(tmp_path: Path) -> None:
    theme = tmp_path / "mytheme" / "templates"
    theme.mkdir(parents=True)
    (theme / "turn_meta.html").write_text(
        '<p class="mine">turn {{ t.turn.index }} by {{ t.turn.model }}</p>\n'
    )
    build(SAMPLES, tmp_path / "out", theme=str(tmp_path / "mytheme"))
    html = page_of(tmp_path / "out", MAIN).read_text(encoding="utf-8")
    assert '<p class="mine">turn 1 by qwen2.5-coder:32b</p>' in html
    assert 'id="errors"' in html  # everything else from the default theme


def test_every_part_kind_has_a_default_template() -> None:
    from publisher.render.view import PART_TEMPLATES

    templates = ROOT / "themes" / "default" / "templates"
    assert sorted(PART_TEMPLATES) == [
        "command", "image", "system", "text", "thinking", "tool", "unknown", "user"
    ]  # fmt: skip
    for name in PART_TEMPLATES.values():
        assert (templates / name).is_file(), name


def test_user_theme_overriding_parts_tool_changes_tool_parts_only(tmp_path: Path) -> None:
    """A theme shipping only parts/tool.html changes every tool call and nothing else."""
    theme = tmp_path / "tooltheme" / "templates" / "parts"
    theme.mkdir(parents=True)
    (theme / "tool.html").write_text(
        '<article class="mine" id="{{ p.anchor }}">{{ p.part.name }} {{ p.label }}</article>\n'
    )
    build(SAMPLES, tmp_path / "default")
    build(SAMPLES, tmp_path / "mine", theme=str(tmp_path / "tooltheme"))
    default_tool = re.compile(
        r'<article class="part part-tool(?: is-error)?" id="([^"]+)">.*?</article>\n', re.S
    )
    mine_tool = re.compile(r'<article class="mine" id="([^"]+)">([^<]*)</article>\n')
    default_files = tree_digest(tmp_path / "default")
    assert default_files.keys() == tree_digest(tmp_path / "mine").keys()
    tools = 0
    for rel in default_files:
        before = (tmp_path / "default" / rel).read_bytes()
        after = (tmp_path / "mine" / rel).read_bytes()
        if not rel.endswith(".html"):
            assert after == before, rel
            continue
        text, ours = before.decode(), after.decode()
        assert len(default_tool.findall(text)) == len(mine_tool.findall(ours)), rel
        for _, shown in mine_tool.findall(ours):
            assert shown.endswith(" Tool call") and "<" not in shown
        tools += len(mine_tool.findall(ours))
        # With every tool part cut out, the pages are the same bytes.
        assert default_tool.sub(r"TOOL \1\n", text) == mine_tool.sub(r"TOOL \1\n", ours), rel
    assert tools >= 10


def test_builtin_paper_theme(tmp_path: Path) -> None:
    build(SAMPLES, tmp_path / "out", theme="paper")
    assert "print-like reading theme" in (tmp_path / "out" / "assets" / "theme.css").read_text()
    assert 'class="turn-line"' in page_of(tmp_path / "out", MAIN).read_text(encoding="utf-8")


def test_export_html_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "x.html"
    result = runner.invoke(
        app, ["export", "#ab12cd", "--project", str(SAMPLES), "--format", "html", "--out", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    html = out.read_text(encoding="utf-8")
    ids = parse(out)
    assert "<style>" in html and "<script" not in html and "<link" not in html
    assert not [h for h in ids.hrefs if not h.startswith(("#", "https://docs.python.org/"))]
    assert "turn-12.2" in ids.ids and "errors" in ids.ids


def test_long_session_is_split_and_outputs_externalised(
    archive: Path, write_session: Writer, tmp_path: Path
) -> None:
    turns = [
        turn(i, part("user", f"prompt {i}"), part("text", f"answer {i}")) for i in range(1, 701)
    ]
    turns[10]["parts"].append(
        part("tool", name="cat", input={"path": "big.log"}, output="line\n" * 100_000)
    )
    write_session(session_doc(turns=turns))
    out = tmp_path / "out"
    build(archive, out)
    folder = out / urls.session_dir("ses_20260817_120000_ab12cd")
    pages = sorted(folder.glob("*.html"))
    assert [p.name for p in pages] == ["index.html", *(f"page-{n}.html" for n in range(2, 6))]
    seen: list[str] = []
    for p in pages:
        seen += [i for i in parse(p).ids if re.fullmatch(r"turn-\d+", i)]
        assert p.stat().st_size < 5_000_000
    assert sorted(seen) == sorted(f"turn-{i}" for i in range(1, 701))
    text = (folder / "index.html").read_text(encoding="utf-8")
    page_map = json.loads(text.split('id="page-map">')[1].split("</script>")[0])
    assert [(p["first"], p["last"]) for p in page_map["pages"]] == [
        (1, 150),
        (151, 300),
        (301, 450),
        (451, 600),
        (601, 700),
    ]
    assert (folder / "output-11.3.txt").read_text() == "line\n" * 100_000
    assert 'href="output-11.3.txt"' in text


def test_hostile_text_never_becomes_markup(
    archive: Path, write_session: Writer, tmp_path: Path
) -> None:
    payload = "<script>alert(1)</script><img src=x onerror=alert(2)>[x](javascript:alert(3))![i](https://evil.example/p.png){{ 7*7 }}{% raw %}"
    write_session(
        session_doc(
            role=payload,
            turns=[
                turn(
                    1,
                    part("user", payload),
                    part("text", payload),
                    part(
                        "tool",
                        name=payload,
                        input={payload: payload},
                        output=payload,
                        analysis=payload,
                    ),
                    model=payload,
                )
            ],
            errors=[{"code": 0, "message": payload, "timestamp": payload}],
            permissions=[
                {
                    "tool": payload,
                    "action": payload,
                    "decision": payload,
                    "path": payload,
                    "timestamp": "",
                }
            ],
        )
    )
    out = tmp_path / "out"
    build(archive, out)
    for path in [out / "index.html", page_of(out, MAIN)]:
        html = path.read_text(encoding="utf-8")
        assert "<script>alert" not in html and "<img" not in html
        assert "javascript:" not in " ".join(parse(path).hrefs)
        assert "evil.example" not in " ".join(re.findall(r'src="([^"]*)"', html))
        assert "{{ 7*7 }}" in html or path.name == "index.html"


@pytest.mark.slow
def test_pool_build_with_threads_running_uses_a_clean_start(tmp_path: Path) -> None:
    import threading

    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, daemon=True)
    busy.start()
    try:
        build(SAMPLES, tmp_path / "threaded", workers=2)
    finally:
        stop.set()
    build(SAMPLES, tmp_path / "plain", workers=1)
    assert tree_digest(tmp_path / "threaded") == tree_digest(tmp_path / "plain")


@pytest.mark.slow
def test_many_files_scanned_and_rendered_by_clean_workers_build_the_same_site(
    tmp_path: Path,
) -> None:
    """More files than the build scans itself, with a thread running: the crew's workers
    start clean (nothing forked: the sessions they keep and the render's setup are
    theirs), and the site is the one a single process builds."""
    import shutil
    import threading

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for source in sorted(SAMPLES.glob("*.json")):
        shutil.copy2(source, sessions / source.name)
        doc = json.loads(source.read_text())
        if isinstance(doc, dict) and isinstance(doc.get("session_name"), str):
            copy = {**doc, "session_name": doc["session_name"] + "-copy"}
            (sessions / f"{source.stem}-copy.json").write_text(json.dumps(copy))
    assert len(list(sessions.glob("*.json"))) > 8  # more than the in-process scan takes
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, daemon=True)
    busy.start()
    try:
        report = build(sessions, tmp_path / "threaded", workers=2)
    finally:
        stop.set()
    assert report.files_read == len(list(sessions.glob("*.json")))
    build(sessions, tmp_path / "plain", workers=1)
    assert tree_digest(tmp_path / "threaded") == tree_digest(tmp_path / "plain")


def test_render_failing_midway_leaves_no_orphan_page(
    archive: Path, write_session: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from publisher.render.contexts import SessionPage
    from publisher.render.html import HtmlRenderer

    turns = [turn(i, part("user", f"prompt {i}")) for i in range(1, 701)]
    write_session(session_doc(turns=turns))
    original = HtmlRenderer.render_session

    def fail_on_page_2(self: HtmlRenderer, page: SessionPage) -> str:
        if page.number == 2:
            raise RuntimeError("template bug")
        return original(self, page)

    monkeypatch.setattr(HtmlRenderer, "render_session", fail_on_page_2)
    out = tmp_path / "out"
    report = build(archive, out)
    assert [f.reason for f in report.failures] == [
        "could not be rendered: RuntimeError: template bug"
    ]
    assert not (out / urls.session_dir("ses_20260817_120000_ab12cd")).exists()
    page = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="not-loaded"' in page
    # Listed as not loaded, not also as a session whose row links to no page.
    assert '<p class="lead">0 sessions, 1 file that does not load.' in page
    assert 'href="sessions/' not in page


def test_a_blank_prompt_or_answer_says_what_it_holds(tmp_path: Path) -> None:
    """Claude Code writes answers of two line breaks between tool calls: the page says so
    instead of showing a heading over nothing (the export keeps them as written)."""
    doc = session_doc(
        turns=[turn(1, part("user", ""), part("text", "\n\n"), part("text", " \r\n\t"))]
    )
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    write_json(sessions / f"{MAIN}.json", doc)
    build(sessions, tmp_path / "site")
    page = page_of(tmp_path / "site", MAIN).read_text()
    notes = re.findall(r'<p class="dim blank-text">([^<]*)</p>', page)
    assert notes == [
        "(empty)",
        "(only whitespace: 2 line breaks)",
        "(only whitespace: 1 line break, 1 space, 1 tab)",
    ]


@pytest.mark.parametrize(
    ("imported_from", "shown"),
    [
        (
            {"agent": "codex", "path": "/logs/r.jsonl"},
            'Codex CLI <code class="origin-path" title="/logs/r.jsonl">…/r.jsonl</code>',
        ),
        ({"agent": "<b>x</b>", "path": 5}, "&lt;b&gt;x&lt;/b&gt;"),
        ({}, "another agent"),
        ("not an object", None),
    ],
)
def test_an_imported_session_says_where_it_came_from(
    tmp_path: Path, imported_from: object, shown: str | None
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    write_json(sessions / f"{MAIN}.json", session_doc(imported_from=imported_from))
    build(sessions, tmp_path / "site")
    rows = re.findall(
        r"<dt>Imported from</dt><dd>(.*?)</dd>", page_of(tmp_path / "site", MAIN).read_text()
    )
    assert rows == ([] if shown is None else [shown])


@pytest.mark.parametrize(
    ("created_at", "said"),
    [
        ("2026-08-17T12:00:00+00:00", "Times are UTC."),
        ("2026-04-22T09:06:43", "Times are as the log wrote them, with no time zone."),  # aider
    ],
)
def test_the_page_says_when_its_times_have_no_zone(
    tmp_path: Path, created_at: str, said: str
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    doc = session_doc(created_at=created_at, turns=[turn(1, part("user", "go"))])
    write_json(sessions / f"{MAIN}.json", doc)
    build(sessions, tmp_path / "site")
    hint = re.findall(
        r'<p class="keys-hint dim">.*?</p>', page_of(tmp_path / "site", MAIN).read_text()
    )
    assert len(hint) == 1 and hint[0].endswith(f" {said}</p>")


def test_no_session_is_held_past_the_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sessions the scan kept for the render are let go once it is done: a 90 MB one
    held through the archive's pages and the search's bundles raised a build's peak memory
    by the bundle's own (the 5,000-turn session of ``benchmarks/scale.py``: 3.06x its file
    against 2.82x)."""
    import gc
    import shutil

    from publisher.model import Session
    from publisher.site import build as build_module

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copy(SAMPLES / "ses_20260817_120000_ab12cd.json", sessions)
    alive: list[int] = []
    index = build_module.index

    def counting(*args: object, **kwargs: object) -> object:
        gc.collect()
        alive.append(sum(isinstance(o, Session) for o in gc.get_objects()))
        return index(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(build_module, "index", counting)
    report = build(sessions, tmp_path / "site", search=True)
    assert report.sessions == 1 and report.sessions_rendered == 1
    assert alive == [0]
