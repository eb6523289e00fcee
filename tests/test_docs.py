"""The README and the user guide in docs/: every relative link (and every ``#anchor``)
resolves, every page of docs/ is reachable from the README, the README stays short, and
the screenshots show what a fresh build of the samples publishes."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

from tests.helpers import ROOT, SAMPLES, build

#: The pages whose links are checked: the README and the user guide.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: An attribute of raw HTML in a page that names a file (``<picture>``, ``<img>``, ``<a>``).
_HTML_REF = re.compile(r"""\b(?:src|srcset|href)\s*=\s*["']([^"']+)["']""")


@dataclass(frozen=True, slots=True)
class Link:
    """One link or image of a Markdown page."""

    page: Path
    """The page it is written in."""
    target: str
    """The target as written (``docs/ci.md#in-ci``, ``#commands``, ``https://…``)."""


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text: lower case, punctuation dropped (word
    characters, hyphens and spaces kept), each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def anchors(page: Path) -> set[str]:
    """The anchors of a page: its headings' slugs (a repeated one gets ``-1``, ``-2``…
    as on GitHub), and any ``id``/``name`` its raw HTML sets."""
    text = page.read_text(encoding="utf-8")
    if page.suffix == ".html":
        return set(re.findall(r"""\b(?:id|name)=["']?([^"' >]+)""", text))
    found: set[str] = set()
    seen: dict[str, int] = {}
    tokens = _markdown().parse(text)
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[i + 1]
            words = "".join(
                child.content
                for child in inline.children or []
                if child.type in ("text", "code_inline")
            )
            base = slug(words)
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        elif token.type in ("html_block", "html_inline"):
            found.update(re.findall(r"""\b(?:id|name)=["']([^"']+)["']""", token.content))
    return found


def links(page: Path) -> list[Link]:
    """Every link and image of a Markdown page, outside code (code spans and blocks hold
    examples, not links): Markdown's own, and the ``src``/``srcset``/``href`` of raw HTML."""
    found: list[Link] = []

    def html_refs(html: str) -> None:
        for value in _HTML_REF.findall(html):
            for candidate in value.split(","):  # a srcset lists "URL [descriptor]"s
                if candidate.strip():
                    found.append(Link(page, candidate.split()[0]))

    for token in _markdown().parse(page.read_text(encoding="utf-8")):
        if token.type == "html_block":
            html_refs(token.content)
        for child in token.children or []:
            if child.type == "link_open":
                found.append(Link(page, str(child.attrs["href"])))
            elif child.type == "image":
                found.append(Link(page, str(child.attrs["src"])))
            elif child.type == "html_inline":
                html_refs(child.content)
    return found


def broken(link: Link) -> str | None:
    """Why a link does not resolve (None when it does, or when it leaves the repository)."""
    parts = urlsplit(link.target)
    if parts.scheme or parts.netloc:
        return None
    target = (link.page.parent / unquote(parts.path)).resolve() if parts.path else link.page
    if not target.is_relative_to(ROOT):
        return f"{link.target}: outside the repository"
    if not target.exists():
        return f"{link.target}: no such file"
    fragment = unquote(parts.fragment)
    if fragment and target.suffix in (".md", ".html") and fragment not in anchors(target):
        return f"{link.target}: no heading or id {fragment!r} in {target.relative_to(ROOT)}"
    return None


@pytest.mark.unit
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    problems = [problem for link in links(page) if (problem := broken(link))]
    assert not problems, "\n".join(problems)


@pytest.mark.unit
def test_the_link_checker_sees_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    page = ROOT / "docs" / "x.md"  # as if written in docs/
    assert broken(Link(page, "ci.md")) is None
    assert broken(Link(page, "nope.md")) == "nope.md: no such file"
    assert "no heading" in str(broken(Link(page, "ci.md#no-such-heading")))
    assert broken(Link(page, "../README.md#a-readme-that-is-not-there")) is not None
    assert broken(Link(page, "https://example.com/x.md#y")) is None
    assert "outside" in str(broken(Link(page, "../../elsewhere/x.md")))
    assert slug("Round 13: the tree (2 December, b31dacc → 3c1f1c5)") == (
        "round-13-the-tree-2-december-b31dacc--3c1f1c5"
    )
    sample = tmp_path / "a.md"
    sample.write_text(
        "# `polyglav export` and more\n\n## Twice\n\n## Twice\n\n"
        "[a](#polyglav-export-and-more) `[no](nowhere.md)`\n\n"
        '<picture><source srcset="one.png" media="x"><img src="two.png" alt=""></picture>\n\n'
        "```\n[no](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert anchors(sample) == {"polyglav-export-and-more", "twice", "twice-1"}
    assert [link.target for link in links(sample)] == [
        "#polyglav-export-and-more",
        "one.png",
        "two.png",
    ]


@pytest.mark.unit
def test_every_page_of_the_guide_is_linked_from_the_readme() -> None:
    """A page added to docs/ (by a branch merged later) fails this until the README links
    it; the images and the round-by-round history are reached through the other pages."""
    readme = {
        (ROOT / urlsplit(link.target).path).resolve()
        for link in links(ROOT / "README.md")
        if not urlsplit(link.target).scheme
    }
    missing = [p.name for p in PAGES[1:] if p.resolve() not in readme]
    assert not missing, f"docs pages the README does not link: {missing}"


@pytest.mark.unit
def test_the_readme_is_short_and_sends_no_one_outside_the_repository() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    outside = "shared" + "/spec"  # a folder beside the checkout, which a clone does not have
    searched = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for folder in ("docs", "publisher", "tests", "scripts", "benchmarks", "themes"):
        searched += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.suffix in (".md", ".py", ".html", ".js", ".css", ".toml", ".txt", ".sh")
            and "node_modules" not in p.parts
        ]
    assert [p for p in searched if outside in p.read_text(encoding="utf-8", errors="replace")] == []


# --------------------------------------------------------------------------------------
# The screenshots.


def _screenshots() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "screenshots", ROOT / "scripts" / "screenshots.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.site
def test_the_screenshots_show_what_the_samples_publish(tmp_path: Path) -> None:
    """The pages the screenshots were taken of are byte for byte those a fresh build of the
    samples writes: when a page or a stylesheet changes, run ``python3
    scripts/screenshots.py`` (and look at the images) to make this pass again."""
    shots = _screenshots()
    build(SAMPLES, tmp_path / "site", search=True)  # as the script builds (the defaults)
    recorded = (ROOT / "docs" / "screenshots" / shots.SOURCES).read_text(encoding="utf-8")
    assert shots.sources_record(tmp_path / "site") == recorded, (
        "the screenshots' pages changed: run python3 scripts/screenshots.py"
    )
    for name in shots.image_names():
        assert (ROOT / "docs" / "screenshots" / name).stat().st_size > 5_000, name


@pytest.mark.unit
def test_the_readmes_examples_are_what_the_samples_print(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``$ polyglav …`` example of the README prints what it shows (stdout, then
    stderr), run on this checkout."""
    import shlex

    from typer.testing import CliRunner

    from publisher.cli import app

    monkeypatch.chdir(ROOT)  # the examples name sample_sessions/ from the checkout
    tokens = _markdown().parse((ROOT / "README.md").read_text(encoding="utf-8"))
    examples = [t.content for t in tokens if t.type == "fence" and t.content.startswith("$ ")]
    assert len(examples) >= 2
    for example in examples:
        command, *shown = example.splitlines()
        argv = shlex.split(command.removeprefix("$ "))
        assert argv[0] == "polyglav", command
        result = CliRunner().invoke(app, argv[1:])
        assert (result.stdout + result.stderr).splitlines() == shown, command
