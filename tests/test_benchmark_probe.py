"""The scale benchmark's Chromium probe (``benchmarks/scale.py``) against a real sharded
index of more than 1,000 sessions: it reads the page as the build writes it. A change of
wording or of number format would otherwise show only as a benchmark run that waits out
its timeout (the first run after counts were grouped by thousands did, for 5 minutes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import build

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _benchmark(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_scale_probe_reads_the_index_of_1200_sessions(tmp_path: Path) -> None:
    scale = _benchmark("scale")
    sessions = scale.small_archive(1200, tmp_path / "archive")
    site = tmp_path / "site"
    build(sessions, site, workers=2)
    assert "Load all 1,200 sessions" in (site / "index.html").read_text()
    result = scale.browser(site, timeout_ms=60_000)
    assert result["rows"] == 1200
    assert 0 < result["first_rows_s"] < 30 and 0 < result["sort_all_s"] < 60
