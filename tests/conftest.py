"""Fixtures, markers and hypothesis profiles for every test (shared helpers: tests/helpers.py).

Markers (registered in pyproject.toml, ``--strict-markers``) say what a test needs; every
test carries at least one:

- ``unit``: pure and fast, no site folder built (loader, model, renderers, export,
  redaction, manifest, CLI commands other than ``site``);
- ``site``: builds a site folder (``build_site``, ``site build|watch|serve``);
- ``browser``: drives Chromium through Playwright (skipped with the reason where either is
  missing, failed instead in CI);
- ``slow``: seconds or more each (hypothesis state machines and big property runs, memory
  probes, big files, the HTML validator, ruff and mypy).

``python3 -m pytest -m "not slow and not browser"`` is the fast subset.

Hypothesis profiles: ``dev`` (default) and ``ci`` (selected by ``CI=true``, as ``.ci/run``
runs; or by ``HYPOTHESIS_PROFILE=ci``): property tests that do not set their own example
count, the incremental state machine first, run many more examples in CI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.browser import browser_missing
from tests.helpers import IN_CI, Writer, require

#: Examples of the tests that do not set their own count (the incremental state machine).
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile("ci", max_examples=400, deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev"))

KINDS = ("unit", "site", "browser", "slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [item.nodeid for item in items if not any(item.get_closest_marker(k) for k in KINDS)]
    if unmarked:
        raise pytest.UsageError(
            "every test needs one of the markers "
            + ", ".join(KINDS)
            + " (see tests/conftest.py); unmarked: "
            + ", ".join(unmarked[:10])
        )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") is not None:
        reason = browser_missing()
        require(reason is None, reason or "")


def pytest_report_header(config: pytest.Config) -> str:
    return f"hypothesis profile: {settings.get_current_profile_name()}; CI: {IN_CI}"


@pytest.fixture(autouse=True)
def _cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's site builds keep their cache in its own folder (the default cache folder
    is under ``$XDG_CACHE_HOME``), never in the user's."""
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "proj" / ".polyglav" / "sessions"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def write_session(archive: Path) -> Writer:
    def write(doc: dict[str, Any] | bytes | str, name: str | None = None) -> Path:
        if isinstance(doc, dict):
            name = name or doc["session_name"]
            data = json.dumps(doc, indent=2).encode()
        else:
            data = doc.encode() if isinstance(doc, str) else doc
        assert name is not None
        path = archive / f"{name}.json"
        path.write_bytes(data)
        return path

    return write
