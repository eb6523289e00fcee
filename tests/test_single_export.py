"""``polyglav export NAME --format html``: one file holding the session and its sub-sessions
at any depth, with links between them that work offline (file://, no request leaves)."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers import (
    MAIN,
    REVIEW,
    SAMPLES,
    SECURITY,
    part,
    polyglav,
    require,
    session_doc,
    turn,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"

ROOT = "ses_20260901_090000_r00t01"


class Ids(HTMLParser):
    """Every element id, every in-page link, and the text of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.tags: Counter[str] = Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        values = dict(attrs)
        if values.get("id") is not None:
            self.ids.append(str(values["id"]))
        href = values.get("href")
        if tag == "a" and href is not None and href.startswith("#"):
            self.links.append(href[1:])


def parsed(text: str) -> Ids:
    found = Ids()
    found.feed(text)
    return found


def _delegate(target: str) -> dict[str, Any]:
    return part(
        "tool",
        name="delegate",
        input={"role": "helper", "task": f"do {target}"},
        output=f"Delegated to {target} (role helper). Result:\ndone",
    )


def _chain(folder: Path, depth: int) -> list[str]:
    """A root and a chain of ``depth`` sub-sessions, each spawned by a delegate call of the
    one above; the deepest declares the root as its own sub-session (a cycle) and two more
    that are missing or do not load. Returns the names, root first."""
    names = [ROOT] + [f"sub_20260901_09{i:02d}00_d{i:05d}" for i in range(1, depth + 1)]
    for i, name in enumerate(names):
        below = names[i + 1] if i + 1 < len(names) else ""
        subs = [below] if below else [ROOT, "sub_missing_x", "sub_broken_y"]
        parts = [part("user", f"step of {name}"), part("text", "# heading\n\ntext")]
        if below:
            parts.append(_delegate(below))
        doc = session_doc(
            name,
            parent_id=names[i - 1] if i else "",
            sub_sessions=subs,
            turns=[turn(1, *parts), turn(2, part("user", "more"), status="error")],
            errors=[{"code": 0, "message": "stream EOF", "timestamp": "2026-08-17T12:00:02Z"}],
            permissions=[
                {
                    "tool": "delegate",
                    "action": "ask",
                    "decision": "denied",
                    "path": "",
                    "timestamp": "2026-08-17T12:00:01Z",
                }
            ],
        )
        (folder / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    (folder / "sub_broken_y.json").write_text('{"session_name": "sub_broken_y", "tur', "utf-8")
    return names


@pytest.mark.site
def test_the_file_holds_every_descendant_with_unique_ids(tmp_path: Path) -> None:
    folder = tmp_path / "proj" / ".polyglav" / "sessions"
    folder.mkdir(parents=True)
    names = _chain(folder, 4)
    out = tmp_path / "tree.html"
    result = polyglav(
        "export", ROOT, "--project", str(tmp_path / "proj"), "-f", "html", "-o", str(out)
    )
    assert result.exit_code == 0, result.stderr
    # Missing and unloadable sub-sessions: one line each, the export still made.
    warned = [line for line in result.stderr.splitlines() if "sub-session" in line]
    assert len(warned) == 2, result.stderr
    text = out.read_text(encoding="utf-8")
    found = parsed(text)
    assert [i for i, n in Counter(found.ids).items() if n > 1] == []
    # Every in-page link has its target in the file.
    assert set(found.links) - set(found.ids) == set()
    # The root's ids are those of its site page; each descendant is a section of its own.
    assert "turn-1" in found.ids and "turn-1.3" in found.ids and "errors" in found.ids
    for name in names[1:]:
        section = f"s-{name.rsplit('_', 1)[-1]}"
        assert section in found.ids, name
        assert f"{section}-turn-1" in found.ids
        assert f"{section}-errors" in found.ids
    # The cycle (the deepest names the root again) does not repeat the root.
    assert text.count(f"<code>{ROOT}</code></h1>") == 1
    assert found.tags["article"] == len(names) + sum(
        1 for _ in re.finditer(r'class="part part-', text)
    )
    assert "sub_missing_x" in text and "sub_broken_y" in text
    assert len(re.findall(r'<li class="missing">Sub-session ', text)) == 2
    # Delegate calls link down, each sub-session's chain links back to the call.
    for upper, lower in itertools.pairwise(names):
        up = "" if upper == ROOT else f"s-{upper.rsplit('_', 1)[-1]}-"
        assert f'<a href="#s-{lower.rsplit("_", 1)[-1]}"><code>{lower}</code></a>' in text
        assert f'class="spawn-link" href="#{up}turn-1.3"' in text
    # Deterministic: the same bytes again.
    again = tmp_path / "again.html"
    polyglav("export", ROOT, "--project", str(tmp_path / "proj"), "-f", "html", "-o", str(again))
    assert again.read_bytes() == out.read_bytes()
    # --no-sub-sessions: the session alone.
    alone = tmp_path / "alone.html"
    polyglav(
        "export", ROOT, "--project", str(tmp_path / "proj"), "-f", "html", "-o", str(alone),
        "--no-sub-sessions",
    )  # fmt: skip
    assert 'id="s-' not in alone.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single") / "ab12cd.html"
    result = polyglav("export", "#ab12cd", "--project", str(SAMPLES), "-f", "html", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    return out


@pytest.mark.site
def test_samples_file_holds_the_delegation_tree(sample_file: Path) -> None:
    text = sample_file.read_text(encoding="utf-8")
    assert "not in this archive" not in text
    found = parsed(text)
    assert {"s-cd34ef", "s-ef56gh"} <= set(found.ids)
    assert set(found.links) - set(found.ids) == set()
    assert [i for i, n in Counter(found.ids).items() if n > 1] == []
    assert found.tags["script"] == 0 and found.tags["link"] == 0


@pytest.fixture
def offline_page(sample_file: Path) -> Iterator[tuple[Page, list[str]]]:
    from tests.browser import browser_missing, chromium

    require(browser_missing() is None, browser_missing() or "")
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1100, "height": 800})
        left: list[str] = []
        context.on(
            "request",
            lambda r: None if r.url.startswith(("file:", "data:")) else left.append(r.url),
        )
        page = context.new_page()
        page.goto(sample_file.as_uri())
        yield page, left
        context.close()


def _in_view(page: Page, element_id: str) -> bool:
    return bool(
        page.evaluate(
            """id => { const r = document.getElementById(id).getBoundingClientRect();
                 return r.bottom > 0 && r.top < window.innerHeight; }""",
            element_id,
        )
    )


@pytest.mark.browser
def test_links_between_sessions_work_offline(offline_page: tuple[Page, list[str]]) -> None:
    page, left = offline_page
    # Depth 1: the delegate call in the root goes to the sub-session's section...
    page.locator('#turn-6\\.3 a[href="#s-cd34ef"]').click()
    assert page.evaluate("location.hash") == "#s-cd34ef"
    assert _in_view(page, "s-cd34ef")
    # ... depth 2: its own delegate call goes to the sub-sub-session's section...
    page.locator('#s-cd34ef a[href="#s-ef56gh"]').first.click()
    assert page.evaluate("location.hash") == "#s-ef56gh"
    assert _in_view(page, "s-ef56gh")
    # ... whose parent chain links back to the call that spawned it, and to the root.
    page.locator("#s-ef56gh .spawn-link").click()
    assert page.evaluate("location.hash") == "#s-cd34ef-turn-1.4"
    assert _in_view(page, "s-cd34ef-turn-1.4")
    page.locator("#s-cd34ef .spawn-link").click()
    assert page.evaluate("location.hash") == "#turn-6.3"
    assert _in_view(page, "turn-6.3")
    chain = page.locator("#s-ef56gh nav.lineage a").all_inner_texts()
    assert chain[:2] == [MAIN, REVIEW]
    assert page.locator("#s-ef56gh h1").inner_text() == SECURITY
    assert left == []


@pytest.mark.browser
def test_axe_on_the_file_light_and_dark(offline_page: tuple[Page, list[str]]) -> None:
    require(AXE.is_file(), "axe-core is not installed (bash scripts/setup-tests.sh)")
    page, left = offline_page
    found = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        page.reload()
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        # The file's CSP forbids scripts: axe runs from the test, not from the page.
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;0")
        result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
        bad = [v for v in result["violations"] if v["impact"] in ("serious", "critical")]
        if bad:
            found[scheme] = [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in bad]
    assert found == {}, json.dumps(found, indent=1)
    assert left == []
