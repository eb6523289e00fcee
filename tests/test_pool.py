"""The process pool runner: results in job order whatever the window of jobs in flight."""

from __future__ import annotations

import os

import pytest

from publisher.site.pool import WINDOW, run_jobs

pytestmark = pytest.mark.unit


def _square_and_pid(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def test_more_jobs_than_the_window_come_back_in_order() -> None:
    """Jobs beyond the window (``WINDOW`` a worker in flight) are submitted as results are
    taken: every job runs once, results and ``on_result`` in job order, progress counted."""
    count = WINDOW * 2 * 2 + 7  # more than two workers' windows
    seen: list[int] = []
    progress: list[tuple[str, int, int]] = []
    results = run_jobs(
        _square_and_pid,
        [(n,) for n in range(count)],
        workers=2,
        progress=lambda stage, done, total: progress.append((stage, done, total)),
        stage="test",
        on_result=lambda r: seen.append(r[0]),
    )
    assert [r[0] for r in results] == [n * n for n in range(count)]
    assert seen == [n * n for n in range(count)]
    assert progress[-1] == ("test", count, count) and len(progress) == count
    assert os.getpid() not in {pid for _, pid in results}  # they ran in the pool
