"""The build's worker processes: a crew kept over several stages (:class:`publisher.site.pool.Crew`)
and the pool runner (:func:`publisher.site.pool.run_jobs`), results in job order."""

from __future__ import annotations

import os

import pytest

from publisher.site.pool import IN_FLIGHT, WINDOW, Crew, run_jobs

pytestmark = pytest.mark.site


def _pid_and(value: int) -> tuple[int, int]:
    return os.getpid(), value * 2


def _fail(value: int) -> int:
    raise ValueError(f"bad {value}")


def test_jobs_go_to_the_worker_named_and_results_come_in_order() -> None:
    crew = Crew(2)
    try:
        crew.start()
        home = [0, 1] * IN_FLIGHT  # every job sent at once: none can be taken by the other
        seen: list[tuple[int, int]] = []
        results, ran_on = crew.run(
            _pid_and,
            [(i,) for i in range(len(home))],
            home=home,
            progress=None,
            stage="t",
            on_result=seen.append,
        )
        assert ran_on == home
        assert [value for _, value in results] == [2 * i for i in range(len(home))]
        assert seen == results
        pids = {
            w: {pid for (pid, _), on in zip(results, ran_on, strict=True) if on == w}
            for w in (0, 1)
        }
        assert len(pids[0]) == len(pids[1]) == 1 and pids[0] != pids[1]
        # Without homes, or with more jobs than are sent at once, every job still runs once.
        results, ran_on = crew.run(
            _pid_and, [(i,) for i in range(9)], home=[0] * 9, progress=None, stage="t"
        )
        assert [value for _, value in results] == [2 * i for i in range(9)]
        assert set(ran_on) <= {0, 1}
    finally:
        crew.close()
    assert not crew.started


def test_a_job_that_raises_stops_the_run_with_its_exception() -> None:
    crew = Crew(2)
    try:
        crew.start()
        with pytest.raises(ValueError, match="bad 3"):
            crew.run(_fail, [(3,), (4,)], progress=None, stage="t")
    finally:
        crew.close()


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


def test_a_workers_ctrl_c_is_left_to_the_builds_process() -> None:
    """Ctrl-C in a terminal reaches every process of its group: a worker ignores it (no
    traceback of its own, no broken build); the build's process decides what stops."""
    import signal

    crew = Crew(2)
    try:
        crew.start()
        results, _ = crew.run(_pid_and, [(1,), (2,)], home=[0, 1], progress=None, stage="t")
        for pid, _ in results:
            os.kill(pid, signal.SIGINT)
        again, _ = crew.run(_pid_and, [(3,), (4,)], home=[0, 1], progress=None, stage="t")
        assert [value for _, value in again] == [6, 8]
        assert {pid for pid, _ in again} == {pid for pid, _ in results}  # the same workers
    finally:
        crew.close()
