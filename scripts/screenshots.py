"""Make the README's screenshots of a session page from the samples.

    python3 scripts/screenshots.py [--out docs] [--site DIR] [--scheme light|dark]

Builds the sample site (unless ``--site`` names a built one), opens the main sample
session in Chromium (Playwright, /usr/bin/chromium) at desktop (1280 px) and phone (390 px)
widths, and saves: the overview, an error in place, and a diff (a tool call's patch); at a
wide desktop (1600 px), the window scrolled to turn 7 with the outline beside the turns.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import CHROMIUM, CHROMIUM_ARGS, static_server  # noqa: E402

SESSION = "sessions/ses_20260817_120000_ab12cd/index.html"
JOB = "sessions/job_20260826_110230_7f3k2a/index.html"
SHOTS = [
    # (file stem, page, selector of the element to capture)
    ("overview", SESSION, "#overview"),
    ("error-in-place", JOB, ".turn:has(.error-note)"),
    ("decision-in-place", SESSION, ".part-tool:has(.decision-note.note-denied)"),
    ("diff", SESSION, ".part-tool:has(.diff)"),
]
WIDTHS = {"desktop": 1280, "phone": 390}
WIDE = 1600
"""The wide desktop: the overview is a sticky column beside the turns from 1400 px on."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--site", type=Path)
    parser.add_argument("--scheme", choices=["light", "dark"], default="light")
    parser.add_argument("--full", action="store_true", help="also save whole pages")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
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
                    str(site),
                    "--no-search",
                    "--cache-dir",
                    str(Path(tmp) / "cache"),
                ],
                check=True,
                cwd=ROOT,
                capture_output=True,
            )
        args.out.mkdir(parents=True, exist_ok=True)
        with static_server(site) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for label, width in WIDTHS.items():
                page = browser.new_page(
                    viewport={"width": width, "height": 900}, color_scheme=args.scheme
                )
                for stem, url, selector in SHOTS:
                    page.goto(base + url)
                    found = page.locator(selector).first
                    if found.count() == 0:
                        print(f"skipped {stem}: nothing matches {selector}")
                        continue
                    suffix = "" if args.scheme == "light" else "-dark"
                    name = args.out / f"session-{stem}-{label}{suffix}.png"
                    found.screenshot(path=str(name))
                    print(name)
                if args.full:
                    for url in (SESSION, JOB):
                        page.goto(base + url)
                        name = args.out / f"page-{Path(url).parent.name}-{label}-{args.scheme}.png"
                        page.screenshot(path=str(name), full_page=True)
                        print(name)
                page.close()
            page = browser.new_page(
                viewport={"width": WIDE, "height": 1000}, color_scheme=args.scheme
            )
            page.goto(base + SESSION + "#turn-7")
            suffix = "" if args.scheme == "light" else "-dark"
            name = args.out / f"session-outline-beside-wide{suffix}.png"
            page.screenshot(path=str(name))
            print(name)
            page.close()
            browser.close()


if __name__ == "__main__":
    main()
