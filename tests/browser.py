"""Shared browser helpers: Debian's Chromium driven by Playwright, and a static server.

Playwright is imported only when a browser starts, so the other tests of a module run (and
the browser tests skip, or fail in CI) where it is not installed.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"Chromium is not installed at {CHROMIUM} (bash scripts/setup-tests.sh)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (bash scripts/setup-tests.sh)"
    return None


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, started by Playwright; closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "application/javascript",
    }

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def static_server(root: Path) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 (a plain static host); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
