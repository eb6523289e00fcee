"""Run a stage's jobs in a process pool (or in this process when that is cheaper).

The one place that chooses how work is spread: ``fork`` where the process has no other
thread, ``forkserver`` where it has (``site watch`` and ``site serve`` run observers and a
server: forking a process with running threads can deadlock a child on a lock another
thread held).
"""

from __future__ import annotations

import multiprocessing
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import islice
from typing import Any, TypeVar

from .context import ProgressHook

R = TypeVar("R")

WINDOW = 64
"""Jobs in flight per worker (submitted, not yet taken): enough to keep every worker busy."""


def forking() -> bool:
    """True when a pool would fork this process (no other thread is running)."""
    return threading.active_count() <= 1


def run_jobs(
    func: Callable[..., R],
    jobs: Sequence[tuple[Any, ...]],
    *,
    workers: int,
    progress: ProgressHook | None,
    stage: str,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    on_result: Callable[[R], None] | None = None,
) -> list[R]:
    """``func(*job)`` for every job, in order, over up to ``workers`` processes.

    ``initializer(*initargs)`` runs once in each worker before its jobs. The caller runs
    the jobs itself when there are fewer than two, or one worker (then no initializer
    runs: the caller holds what it would set up). ``on_result`` sees each result, in
    order, as soon as it is there (the search index starts on finished sessions)."""
    results: list[R] = []
    if not jobs:
        return results
    if workers <= 1 or len(jobs) < 2:
        for done, job in enumerate(jobs, start=1):
            results.append(func(*job))
            if on_result:
                on_result(results[-1])
            if progress:
                progress(stage, done, len(jobs))
        return results
    kwargs: dict[str, Any] = {"max_workers": min(workers, len(jobs))}
    if not forking():
        kwargs["mp_context"] = multiprocessing.get_context("forkserver")
    if initializer is not None:
        kwargs.update(initializer=initializer, initargs=initargs)
    with ProcessPoolExecutor(**kwargs) as pool:
        # A bounded window of jobs in flight, each future dropped once its result is
        # taken: 20,000 sessions are not 20,000 futures held at once (peak memory).
        window = WINDOW * kwargs["max_workers"]
        waiting = iter(jobs)
        futures = deque(pool.submit(func, *job) for job in islice(waiting, window))
        done = 0
        while futures:
            results.append(futures.popleft().result())
            for job in islice(waiting, 1):
                futures.append(pool.submit(func, *job))
            done += 1
            if on_result:
                on_result(results[-1])
            if progress:
                progress(stage, done, len(jobs))
    return results
