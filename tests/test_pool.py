"""The build's worker processes: a crew kept over several stages (:class:`publisher.site.pool.Crew`)
and the pool runner (:func:`publisher.site.pool.run_jobs`), results in job order."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from publisher.loader import file_stamp
from publisher.site import pool
from publisher.site.pool import IN_FLIGHT, WINDOW, Crew, StampPass, run_jobs
from tests.helpers import processes_left, python_env

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


def _gc_threshold(_: int) -> tuple[int, int]:
    import gc

    return os.getpid(), gc.get_threshold()[0]


def test_workers_collect_garbage_less_often_and_the_caller_keeps_its_setting() -> None:
    """Our worker processes (a crew's and a pool's) run the collector at
    ``WORKER_GC_YOUNG`` young allocations; the process that started them keeps its own
    threshold (a build called as a library does not change its caller's collector)."""
    import gc

    before = gc.get_threshold()
    crew = Crew(2)
    try:
        crew.start()
        results, _ = crew.run(_gc_threshold, [(1,), (2,)], home=[0, 1], progress=None, stage="t")
    finally:
        crew.close()
    pooled = run_jobs(_gc_threshold, [(1,), (2,)], workers=2, progress=None, stage="t")
    for pid, threshold in [*results, *pooled]:
        assert pid != os.getpid()
        assert threshold == pool.WORKER_GC_YOUNG != before[0]
    assert gc.get_threshold() == before


def _stamp_folder(tmp_path: Path) -> tuple[str, list[str]]:
    """A folder of 40 files of distinct sizes, and their names with three that are not
    there (a file gone since the listing: stamped (0, 0))."""
    folder = tmp_path / "files"
    folder.mkdir()
    names = []
    for i in range(40):
        (folder / f"f{i:03d}.json").write_bytes(b"x" * i)
        names.append(f"f{i:03d}.json")
    names[5:5] = ["gone-1.json"]
    names += ["gone-2.json", "gone-3.json"]
    return os.fspath(folder), names


@pytest.mark.skipif(not hasattr(os, "fork"), reason="an OS without fork")
def test_a_stamp_pass_forked_gives_each_files_stamp_in_order(tmp_path: Path) -> None:
    folder, names = _stamp_folder(tmp_path)
    expected = [file_stamp(os.path.join(folder, name)) for name in names]
    assert expected[5] == (0, 0) and expected[-1] == (0, 0)
    forked = StampPass.start(folder, names, fork_from=10)
    assert forked.pid != 0 and forked.split == 0  # every file is the child's
    assert forked.result() == expected
    alone = StampPass.start(folder, names)  # fewer than STAMPS_FORK_FROM: no child
    assert alone.pid == 0 and alone.result() == expected
    # Asked nothing, the child is reaped.
    unasked = StampPass.start(folder, names, fork_from=10)
    pid = unasked.pid
    unasked.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="an OS without fork")
def test_a_stamp_pass_whose_child_fails_stats_every_file_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, names = _stamp_folder(tmp_path)
    expected = [file_stamp(os.path.join(folder, name)) for name in names]
    parent = os.getpid()
    real = pool._stamps

    def failing_in_the_child(where: str, some: list[str]) -> object:
        if os.getpid() != parent:
            raise OSError("the child fails")
        return real(where, some)

    monkeypatch.setattr(pool, "_stamps", failing_in_the_child)
    assert StampPass.start(folder, names, fork_from=10).result() == expected


def test_a_stamp_pass_does_not_fork_a_process_running_another_thread(tmp_path: Path) -> None:
    folder, names = _stamp_folder(tmp_path)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        passed = StampPass.start(folder, names, fork_from=10)
        assert passed.pid == 0
        assert passed.result() == [file_stamp(os.path.join(folder, n)) for n in names]
    finally:
        stop.set()
        other.join()


ORPHANED = """
import signal, sys, time
from publisher.site.pool import run_jobs

def job(i):
    time.sleep(60)  # what a worker is doing when its parent is killed
    return i

def kill(*_):
    import os
    os.kill(os.getpid(), signal.SIGKILL)

if __name__ == "__main__":
    signal.signal(signal.SIGALRM, kill)
    signal.setitimer(signal.ITIMER_REAL, 1.5)
    run_jobs(job, [(i,) for i in range(8)], workers=2, progress=None, stage=sys.argv[1])
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_pools_workers_stop_when_the_process_that_started_it_is_killed(
    tmp_path: Path,
) -> None:
    """``polyglav import`` killed with ``-9`` (the OOM killer): its pool's workers must not
    go on with the jobs queued for them, nor wait for more forever."""
    marker = f"orphan-{tmp_path.name}"
    proc = subprocess.run([sys.executable, "-c", ORPHANED, marker], env=python_env(), timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert processes_left(marker, 10) == [], "a pool worker outlived the process that started it"
