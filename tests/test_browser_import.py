"""An archive mixing all four sources (a Polyglav session and the real Claude Code, Codex and
aider samples, each given a distinctive word and a planted secret) builds, searches and
redacts in Chromium like a Polyglav-only one, and its index says where each session came
from."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from publisher.render.view import AGENT_LABELS
from publisher.site import urls
from tests.browser import chromium, static_server
from tests.helpers import part, polyglav, session_doc, turn
from tests.import_helpers import FIXTURES, run_import, sessions_dir
from tests.test_redact import forbidden
from tests.test_redact_site import output_bytes

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

WORDS = {
    "polyglav": "quokkaword",
    "claude-code": "narwhalword",
    "codex": "axolotlword",
    "aider": "pangolinword",
}
"""A word found only in that source's session."""
SECRETS = {
    agent: f"sk-ant-api03-{tag}Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXc"
    for agent, tag in (("polyglav", "PG"), ("claude-code", "CC"), ("codex", "CX"), ("aider", "AI"))
}
"""An Anthropic-shaped key (the redactor's ``anthropic`` kind) planted in each source."""
NATIVE = "ses_20260101_090000_pgl001"
CC_SESSION = "258c7280-ae70-4798-800f-63464d01a85d"
CODEX_FILE = "rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905.jsonl"


def _append_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def _sources(root: Path) -> dict[str, Path]:
    """Copies of the real samples, each with a prompt, a tool output holding its secret and
    an answer holding its word appended as the agent writes them."""
    claude = root / "claude"
    shutil.copytree(FIXTURES / "claude_code", claude)
    envelope = {"sessionId": CC_SESSION, "cwd": "/home/USER/projects/x", "version": "2.1.39"}
    ts = "2026-02-11T22:00:0{}.000Z"
    _append_jsonl(
        claude / f"{CC_SESSION}.jsonl",
        [
            {**envelope, "type": "user", "uuid": "w1", "timestamp": ts.format(1),
             "message": {"role": "user", "content": "print the environment"}},
            {**envelope, "type": "assistant", "uuid": "w2", "timestamp": ts.format(2),
             "message": {"role": "assistant", "model": "claude-opus-4-6", "content": [
                 {"type": "tool_use", "id": "toolu_w", "name": "Bash", "input": {"command": "env"}}]}},
            {**envelope, "type": "user", "uuid": "w3", "timestamp": ts.format(3),
             "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "toolu_w",
                  "content": f"ANTHROPIC_API_KEY={SECRETS['claude-code']}\nHOME=/home/USER"}]}},
            {**envelope, "type": "assistant", "uuid": "w4", "timestamp": ts.format(4),
             "message": {"role": "assistant", "model": "claude-opus-4-6", "content": [
                 {"type": "text", "text": f"The key is set; the {WORDS['claude-code']} is done."}]}},
        ],
    )  # fmt: skip
    codex = root / "codex"
    codex.mkdir()
    shutil.copy(FIXTURES / "codex" / CODEX_FILE, codex / CODEX_FILE)
    ts = "2025-12-28T12:30:0{}.000Z"
    _append_jsonl(
        codex / CODEX_FILE,
        [
            {"timestamp": ts.format(1), "type": "response_item", "payload": {
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "print the environment"}]}},
            {"timestamp": ts.format(2), "type": "response_item", "payload": {
                "type": "function_call", "name": "shell", "call_id": "call_w",
                "arguments": json.dumps({"command": ["bash", "-lc", "env"]})}},
            {"timestamp": ts.format(3), "type": "response_item", "payload": {
                "type": "function_call_output", "call_id": "call_w",
                "output": json.dumps({"output": f"ANTHROPIC_API_KEY={SECRETS['codex']}\n",
                                      "metadata": {"exit_code": 0}})}},
            {"timestamp": ts.format(4), "type": "response_item", "payload": {
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": f"Done: the {WORDS['codex']}."}]}},
        ],
    )  # fmt: skip
    aider = root / "aider"
    aider.mkdir()
    history = aider / ".aider.chat.history.md"
    shutil.copy(FIXTURES / "aider" / ".aider.chat.history.md", history)
    with history.open("a", encoding="utf-8") as handle:
        handle.write(
            f"\n#### /run env  \n\n> ANTHROPIC_API_KEY={SECRETS['aider']}  \n\n"
            f"#### what was that  \n\nThe environment of the {WORDS['aider']}.\n"
        )
    return {"claude-code": claude, "codex": codex, "aider": aider}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(project, site, source → the session holding its word and secret)."""
    root = tmp_path_factory.mktemp("mixed")
    project = root / "project"
    folder = sessions_dir(project)
    folder.mkdir(parents=True)
    native = session_doc(
        NATIVE,
        turns=[
            turn(
                1,
                part("user", "print the environment"),
                part("tool", name="run_command", input={"argv": ["env"]},
                     output=f"ANTHROPIC_API_KEY={SECRETS['polyglav']}\n"),
                part("text", f"Done: the {WORDS['polyglav']}."),
            )
        ],
    )  # fmt: skip
    (folder / f"{NATIVE}.json").write_text(json.dumps(native), encoding="utf-8")
    for agent, source in _sources(root / "src").items():
        code, err = run_import(agent, source, project=project)
        assert code == 0, err
    holders = {"polyglav": NATIVE}
    for path in folder.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        for agent in ("claude-code", "codex", "aider"):
            if WORDS[agent] in text:
                assert SECRETS[agent] in text  # imported as written; redacted when published
                holders[agent] = path.stem
    assert len(holders) == 4
    site = root / "site"
    result = polyglav("site", "build", "--project", str(project), "--out", str(site), "--redact")
    assert result.exit_code == 0, result.stderr
    return project, site, holders


@pytest.fixture(scope="module")
def base_url(archive: tuple[Path, Path, dict[str, str]]) -> Iterator[str]:
    with static_server(archive[1]) as url:
        yield url


@pytest.fixture
def page(base_url: str) -> Iterator[Page]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        yield pg
        context.close()
    assert errors == [], errors


def test_search_finds_each_sources_word_and_links_to_its_session(
    page: Page, base_url: str, archive: tuple[Path, Path, dict[str, str]]
) -> None:
    holders = archive[2]
    for agent, word in WORDS.items():
        page.goto(base_url + "index.html")
        page.fill("#search-input", word)
        page.wait_for_selector("#search-results li a", timeout=15_000)
        hrefs = page.locator("#search-results li a").evaluate_all(
            "as => as.map(a => a.getAttribute('href'))"
        )
        slug = urls.slug(holders[agent])
        assert hrefs and all(f"/{slug}/" in h for h in hrefs), (agent, hrefs)
        page.locator("#search-results li a").first.click()
        page.wait_for_url(f"**/{slug}/**")
        body = page.locator("main").inner_text()
        assert word in body
        # the secret shown as redacted on the page, never as written
        assert "[REDACTED:anthropic]" in body and "Redaction is on:" in body
        assert SECRETS[agent] not in page.content()


def test_the_index_says_where_each_session_came_from(
    page: Page, base_url: str, archive: tuple[Path, Path, dict[str, str]]
) -> None:
    holders = archive[2]
    page.goto(base_url + "index.html")
    for agent, name in holders.items():
        row = page.locator("tr", has=page.locator(f'a[href*="/{urls.slug(name)}/"]'))
        meta = row.locator(".row-meta")
        text, title = meta.inner_text(), meta.get_attribute("title")
        if agent == "polyglav":
            assert title is None, title  # a Polyglav session of its own
        else:
            # the agent named on the row, the full origin in its title
            assert text.endswith(f" · {AGENT_LABELS[agent]}"), (agent, text)
            assert title and title.startswith(f"imported from {AGENT_LABELS[agent]}: "), title


def test_no_secret_in_any_file_of_the_site_or_the_markdown(
    archive: tuple[Path, Path, dict[str, str]],
) -> None:
    project, site, holders = archive
    outputs = output_bytes(site)
    assert any(p.relative_to(site).parts[0] == "search" for p, _ in outputs)
    needles = {
        agent: forbidden({"kind": "anthropic", "secret": secret})
        for agent, secret in SECRETS.items()
    }
    for agent, forms in needles.items():
        for needle in forms:
            data = needle.encode("utf-8")
            leaks = [p.relative_to(site).as_posix() for p, content in outputs if data in content]
            assert leaks == [], (agent, needle, leaks[:3])
    for agent, name in holders.items():
        result = polyglav(
            "export", f"session:{name}", "--project", str(project), "--out", "-", "--redact"
        )
        assert result.exit_code == 0, result.stderr
        assert "[REDACTED:anthropic]" in result.stdout and WORDS[agent] in result.stdout
        assert not [n for n in needles[agent] if n in result.stdout], agent
