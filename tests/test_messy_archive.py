"""The Nu Html Checker and axe on a realistic, messy archive, not only on the samples:
real Claude Code, Codex and aider transcripts imported with ``polyglav import``, and a
hostile session (Markdown headings, tables and fences inside messages, ESC, NUL and other
control characters, lone surrogates, CRLF, a huge output, a long one)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from publisher.site import urls
from tests.helpers import build, friendly_tools, part, require, session_doc, turn
from tests.import_helpers import FIXTURES, loaded, run_import, sessions_dir
from tests.test_html_valid import vnu_errors

AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"

HOSTILE = "ses_20260901_110000_mess01"

MESSAGE = (
    "# A heading one\n\n## Two\n\n### Three\n\n#### Four\n\n##### Five\n\n###### Six\n\n"
    "| tool | result |\n|---|---|\n| `pytest` | **1 failed** |\n| a\\|b | <b>x</b> |\n\n"
    "```python\ndef f():\n    return 1\n```\n\n"
    "````\n```\nnested fence\n```\n````\n\n"
    "> quote with # not a heading\n\n- list\n  - nested `code`\n\n"
    "Escapes: \x1b[31mred\x1b[0m NUL:\x00 BEL:\x07 DEL:\x7f C1:\x85 lone:\ud800 end.\n"
)


def _hostile() -> dict[str, Any]:
    huge = "".join(f"line {i} \x1b[32mok\x1b[0m\r\n" for i in range(60_000))  # ~1.3 MB, CRLF
    long = "\n".join(f"collected {i}" for i in range(400)) + "\n1 failed, 47 passed\n"
    diff = "--- a/x.py\r\n+++ b/x.py\r\n@@ -1 +1 @@\r\n-old\r\n+new\r\n"
    return session_doc(
        HOSTILE,
        role="messy\x1b[1m",
        turns=[
            turn(
                1,
                part("user", MESSAGE),
                part("thinking", MESSAGE),
                part("text", MESSAGE),
                part("tool", name="run_command", input={"command": "pytest\x00 -q"}, output=huge),
                part(
                    "tool", name="run_command", input={"command": ["bash", "-lc", "x"]}, output=long
                ),
                part("tool", name="run_command", input={"command": "git diff"}, output=diff),
                part(
                    "tool",
                    name="file_write",
                    input={"path": "a\x1b.py", "patch": "-a\r\n+b\x00\r\n"},
                    output="\x00\x01\x02\ud800",
                    is_error=True,
                ),
                part("system", MESSAGE),
            ),
            turn(2, part("user", "# only a heading\r\n"), part("text", MESSAGE), status="error"),
            turn(3, part("command", "/compact", summary=MESSAGE, compact_from=1)),
            turn(4, *friendly_tools(MESSAGE)),
        ],
        errors=[
            {"code": 0, "message": MESSAGE, "timestamp": "2026-08-17T12:00:02+00:00"},
            {"code": "E\x1b", "message": "\x00", "timestamp": "not a time\x07"},
        ],
        permissions=[
            {
                "tool": "run_command",
                "action": "ask",
                "decision": "denied",
                "path": "git push\x1b[0m",
                "timestamp": "2026-08-17T12:00:01+00:00",
            },
            {"tool": "x\x00", "action": "", "decision": "\ud800", "path": "", "timestamp": ""},
        ],
    )


@pytest.fixture(scope="module")
def messy_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("messy")
    project = root / "project"
    for agent, source in (
        ("claude-code", FIXTURES / "claude_code"),
        # images, titles, interrupts, notices, compaction and side-question logs
        ("claude-code", FIXTURES / "claude_code_built"),
        ("claude-code", FIXTURES / "claude_code_replay"),
        ("claude-code", FIXTURES / "claude_code_spotter"),
        ("claude-code", FIXTURES / "claude_code_titles"),
        ("codex", FIXTURES / "codex"),
        ("aider", FIXTURES / "aider"),
    ):
        code, err = run_import(agent, source, project=project)
        assert code == 0, err
    imported = loaded(project)
    assert len(imported) >= 5
    (sessions_dir(project) / f"{HOSTILE}.json").write_text(
        json.dumps(_hostile()), encoding="utf-8", errors="surrogatepass"
    )
    out = root / "site"
    report = build(sessions_dir(project), out)
    assert not report.failures, report.failures
    assert report.sessions == len(imported) + 1
    return out


def _pages(site: Path) -> list[Path]:
    """Every session page, the index, and the archive-wide Errors and Decisions pages."""
    pages = sorted((site / "sessions").glob("*/*.html"))
    assert len(pages) >= 6
    return [*pages, site / "index.html", site / "errors.html", site / "decisions.html"]


@pytest.mark.site
@pytest.mark.slow
def test_nu_checker_finds_no_error_on_a_messy_archive(messy_site: Path) -> None:
    pages = _pages(messy_site)
    hostile = (messy_site / urls.session_page(HOSTILE)).read_text(encoding="utf-8")
    # What the checker cannot see by itself: headings nest under the part that holds them,
    # and no raw control character reaches the page.
    assert "<h1>A heading one" not in hostile and "<h2>Two" not in hostile
    assert not any(c in hostile for c in "\x00\x01\x07\x1b\x7f")
    assert vnu_errors(pages) == []


@pytest.fixture(scope="module")
def served(messy_site: Path) -> Iterator[str]:
    from tests.browser import static_server

    with static_server(messy_site) as url:
        yield url


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(900)  # every page of every real log, light and dark: about 5 min here
def test_axe_finds_no_serious_violation_on_a_messy_archive(messy_site: Path, served: str) -> None:
    from tests.browser import browser_missing, chromium

    require(browser_missing() is None, browser_missing() or "")
    require(AXE.is_file(), "axe-core is not installed (bash scripts/setup-tests.sh)")
    found: dict[str, Any] = {}
    with chromium() as browser:
        context = browser.new_context(bypass_csp=True)
        page = context.new_page()
        for path in _pages(messy_site):
            rel = path.relative_to(messy_site).as_posix()
            for scheme in ("light", "dark"):
                page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
                page.goto(served + rel)
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
                page.add_script_tag(path=str(AXE))
                result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
                bad = [v for v in result["violations"] if v["impact"] in ("serious", "critical")]
                if bad:
                    found[f"{rel} ({scheme})"] = [
                        (v["id"], len(v["nodes"]), [n["target"] for n in v["nodes"]][:3])
                        for v in bad
                    ]
        context.close()
    assert found == {}, json.dumps(found, indent=1)


@pytest.mark.unit
def test_printed_text_shows_control_characters_as_escapes() -> None:
    from markupsafe import Markup

    from publisher.render.html import HtmlRenderer
    from publisher.theme import Theme

    env = HtmlRenderer(Theme.load(None)).env
    page = env.from_string('<p title="{{ v }}">{{ v }}</p>{{ m }}').render(
        v="a\x1b[1mb\x00c\x85d\ud800e\tf\ng", m=Markup("<i>\x1b</i>")
    )
    assert page == (
        '<p title="a\\x1b[1mb\\x00c\\x85d\\ud800e\tf\ng">a\\x1b[1mb\\x00c\\x85d\\ud800e\tf\ng</p>'
        "<i>\x1b</i>"  # markup (a filter's output) is the filter's business
    )
