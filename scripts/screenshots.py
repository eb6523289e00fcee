"""Make the screenshots of the README and docs/ from the samples, and record their sources.

    python3 scripts/screenshots.py [--out docs/screenshots] [--site DIR] [--scheme light|dark|both]

Builds the sample site with the build's default options, as the demo in ``site/`` is built
(unless ``--site`` names a built one), opens it in Chromium (Playwright, /usr/bin/chromium)
and saves, light and dark (dark files end in ``-dark``):

- at desktop (1280 px) and phone (390 px) widths, parts of the main sample session: the
  overview, an error in place, a refused decision in place, and a diff (a tool call's patch);
- the archive's Failures page (``errors.html``) at 1280 px (``archive-errors-desktop``);
- a phone's screen (390 × 844) of the main session's page (``session-phone``);
- at a wide desktop (1600 px), the window scrolled to turn 7 with the outline beside the turns.

Then it writes ``SOURCES.sha256`` beside the images: the SHA-256 of every built file the
screenshots show (the pages and the theme's assets), in ``sha256sum`` form.
``tests/test_docs.py`` builds the samples again and compares: a change to those pages fails
the test until this script is run again (and its images looked at).
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import CHROMIUM, CHROMIUM_ARGS, static_server  # noqa: E402

SESSION = "sessions/ses_20260817_120000_ab12cd/index.html"
JOB = "sessions/job_20260826_110230_7f3k2a/index.html"
ERRORS = "errors.html"
SHOTS = [
    # (file stem, page, selector of the element to capture)
    ("overview", SESSION, "#overview"),
    ("error-in-place", JOB, ".turn:has(.error-note)"),
    ("decision-in-place", SESSION, ".part-tool:has(.decision-note.note-denied)"),
    ("diff", SESSION, ".part-tool:has(.diff)"),
]
WIDTHS = {"desktop": 1280, "phone": 390}
PHONE_SCREEN = (390, 844)
"""A phone's viewport (an iPhone 12 to 15 in CSS pixels)."""
WIDE = 1600
"""The wide desktop: the overview is a sticky column beside the turns from 1400 px on."""
SOURCES = "SOURCES.sha256"
"""The record of the built files the screenshots show, beside the images."""


def image_names(schemes: tuple[str, ...] = ("light", "dark")) -> list[str]:
    """The file names of the images a run makes for ``schemes``."""
    stems = [f"session-{stem}-{label}" for stem, _, _ in SHOTS for label in WIDTHS]
    stems += ["archive-errors-desktop", "session-phone", "session-outline-beside-wide"]
    suffixes = ["" if scheme == "light" else "-dark" for scheme in schemes]
    return [f"{stem}{suffix}.png" for suffix in suffixes for stem in stems]


def source_files(site: Path) -> list[str]:
    """The built files the screenshots show, relative to the site folder: the pages shot
    and every asset of the theme (a stylesheet change changes every picture)."""
    assets = sorted(p.relative_to(site).as_posix() for p in (site / "assets").rglob("*"))
    return sorted({SESSION, JOB, ERRORS, *(a for a in assets if (site / a).is_file())})


def sources_record(site: Path) -> str:
    """``SOURCES.sha256``'s text for the site folder ``site`` (``sha256sum -c`` reads it)."""
    return "".join(
        f"{hashlib.sha256((site / name).read_bytes()).hexdigest()}  {name}\n"
        for name in source_files(site)
    )


def save(target: Page | Locator, name: Path, **options: Any) -> None:
    """Screenshot a page's viewport (or a whole page) or one element into ``name``."""
    target.screenshot(path=str(name), **options)
    print(name)


def build_samples(out: Path, cache: Path) -> None:
    """The sample site, built as the demo in ``site/`` is (the default options)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "publisher",
            "site",
            "build",
            "--project",
            str(ROOT / "sample_sessions"),
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
            "--quiet",
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--site", type=Path)
    parser.add_argument("--scheme", choices=["light", "dark", "both"], default="both")
    parser.add_argument("--full", action="store_true", help="also save whole pages")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    schemes = ["light", "dark"] if args.scheme == "both" else [args.scheme]
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
            build_samples(site, Path(tmp) / "cache")
        args.out.mkdir(parents=True, exist_ok=True)
        with static_server(site) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for scheme in schemes:
                suffix = "" if scheme == "light" else "-dark"

                def shot(target: Page | Locator, stem: str, **options: Any) -> None:
                    save(target, args.out / f"{stem}{suffix}.png", **options)  # noqa: B023

                for label, width in WIDTHS.items():
                    page = browser.new_page(
                        viewport={"width": width, "height": 900}, color_scheme=scheme
                    )
                    for stem, url, selector in SHOTS:
                        page.goto(base + url)
                        found = page.locator(selector).first
                        if found.count() == 0:
                            print(f"skipped {stem}: nothing matches {selector}")
                            continue
                        shot(found, f"session-{stem}-{label}")
                    if args.full:
                        for url in (SESSION, JOB, ERRORS):
                            page.goto(base + url)
                            page_name = Path(url).parent.name or Path(url).stem
                            shot(page, f"page-{page_name}-{label}", full_page=True)
                    page.close()
                page = browser.new_page(
                    viewport={"width": 1280, "height": 400}, color_scheme=scheme
                )
                page.goto(base + ERRORS)
                shot(page, "archive-errors-desktop", full_page=True)  # as tall as its rows
                page.close()
                width, height = PHONE_SCREEN
                page = browser.new_page(
                    viewport={"width": width, "height": height},
                    device_scale_factor=2,
                    is_mobile=True,
                    has_touch=True,
                    color_scheme=scheme,
                )
                page.goto(base + SESSION)
                shot(page, "session-phone")
                page.close()
                page = browser.new_page(
                    viewport={"width": WIDE, "height": 1000}, color_scheme=scheme
                )
                page.goto(base + SESSION + "#turn-7")
                shot(page, "session-outline-beside-wide")
                page.close()
            browser.close()
        (args.out / SOURCES).write_text(sources_record(site), encoding="utf-8")
        print(args.out / SOURCES)


if __name__ == "__main__":
    main()
