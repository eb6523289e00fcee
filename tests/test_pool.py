"""The build's worker processes kept over several stages (:class:`publisher.site.pool.Crew`)."""

from __future__ import annotations

import os

import pytest

from publisher.site.pool import IN_FLIGHT, Crew

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
