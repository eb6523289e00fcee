"""Run a stage's jobs in a process pool (or in this process when that is cheaper).

The one place that chooses how work is spread: ``fork`` where the process has no other
thread, ``forkserver`` where it has (``site watch`` and ``site serve`` run observers and a
server: forking a process with running threads can deadlock a child on a lock another
thread held).

:func:`run_jobs` starts a pool for one stage. A :class:`Crew` is a set of worker processes
kept over several stages of one build, each job sent to a chosen worker when it has one:
the scan's workers render the sessions they scanned and kept (:mod:`.stages.worker`).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from itertools import islice
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkContext, ForkServerContext
from multiprocessing.process import BaseProcess
from typing import Any, Protocol, TypeVar

from .context import ProgressHook

R = TypeVar("R")

WINDOW = 64
"""Jobs in flight per worker (submitted, not yet taken): enough to keep every worker busy."""


WORKER_GC_YOUNG = 20_000
"""The garbage collector's young-generation threshold in our worker processes (CPython's
default: 700 allocations of tracked objects). A render or a search record allocates
millions of short-lived containers, all freed by their reference counts; at 700 the
collector ran some 1,900 times a worker over the 200 output-heavy sessions of
``benchmarks/run.py``, 14-18 of them full collections through the session held, and took
0.6-0.9 s of a worker's CPU. At 20,000 it runs about 100 times, one of them full: 0.3-0.4 s
(measured with ``gc.callbacks``), and the build's peak memory is the same (cycles are rare
here: they wait for a collection, never long). Only processes started here get it: a build
called as a library leaves its caller's collector as it was."""


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
    order, as soon as it is there. At most :data:`WINDOW` jobs a worker are sent and not
    yet done.

    Its workers stop once this process is gone (killed with ``-9``, they would wait for
    jobs forever: :func:`_start_pool_worker`), but keep the descriptors they inherited
    until then: what runs while a site build holds its cache's lock runs on a
    :class:`Crew` instead (whose workers close the lock first)."""
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
    kwargs.update(initializer=_start_pool_worker, initargs=(initializer, initargs))
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


class Runner(Protocol):
    """What runs a build's scan and render jobs: a :class:`Crew` of local processes, or a
    Dask cluster's workers (:class:`.distributed.DaskCrew`); the stages see only this."""

    workers: int
    """How many jobs may run at once (a stage runs its jobs itself below two)."""

    @property
    def started(self) -> bool: ...

    def start(
        self,
        initializer: Callable[..., None] | None = None,
        initargs: Callable[[bool], tuple[Any, ...]] | None = None,
    ) -> None: ...

    def each(self, func: Callable[..., Any], args: tuple[Any, ...]) -> None: ...

    def stream(
        self,
        func: Callable[..., R],
        jobs: Iterable[tuple[Any, ...]],
        *,
        total: int,
        home: Callable[[int, tuple[Any, ...]], int | None] | None = None,
        progress: ProgressHook | None,
        stage: str,
        on_result: Callable[[int, R, int], None],
    ) -> None: ...

    def close(self) -> None: ...


IN_FLIGHT = 2
"""Jobs a crew's worker is sent ahead of its results (its next job waits in its pipe)."""


class CrewBroken(RuntimeError):
    """A crew's worker process died (or its result could not be sent back)."""


def _start_worker(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    """A worker process's start: Ctrl-C is left to the build's own process. A terminal
    sends it to the whole process group: each worker would otherwise die with a traceback
    of its own, and break the build that ``site watch`` stops after (its first Ctrl-C
    finishes the build; the build's process stops the workers when it is done). Its
    collector runs less often (:data:`WORKER_GC_YOUNG`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.set_threshold(WORKER_GC_YOUNG, *gc.get_threshold()[1:])
    if initializer is not None:
        initializer(*initargs)


def _start_pool_worker(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    """A :func:`run_jobs` worker's start (:func:`_start_worker`), with a thread that ends
    the worker once the process that started the pool is gone: a ``ProcessPoolExecutor``
    worker whose parent was killed with ``-9`` would finish the jobs already queued for it
    (an import writing files after it was stopped), then wait for more forever."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()
    _start_worker(initializer, initargs)


def _exit_with(sentinel: int) -> None:
    wait([sentinel])
    os._exit(1)


def _serve(
    conn: Connection,
    inherited: tuple[int, ...],
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
) -> None:
    """A crew worker's loop: ``(func, args)`` in, ``(ok, result or exception)`` out, in order,
    until ``None``, the pipe closes or the build's process is gone. ``inherited``: the
    descriptors a forked worker closes first (the build's lock on its cache: a worker
    outliving a killed build must not hold it)."""
    for fd in inherited:
        with contextlib.suppress(OSError):
            os.close(fd)
    _start_worker(initializer, initargs)
    parent = multiprocessing.parent_process()
    # A forked worker also holds the build's end of its pipe, so a build killed with -9
    # never closes it: the parent's sentinel says it is gone.
    watched: list[Any] = [conn] if parent is None else [conn, parent.sentinel]
    while True:
        if conn not in wait(watched):
            return
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        func, args = message
        try:
            reply: tuple[bool, Any] = (True, func(*args))
        except Exception as exc:
            reply = (False, exc)
        try:
            conn.send(reply)
        except Exception as exc:  # the result or the exception does not pickle
            conn.send((False, CrewBroken(f"{type(exc).__name__}: {exc}")))


class Crew:
    """Up to ``workers`` processes kept over the stages of one build (started by
    :meth:`start`, stopped by :meth:`close`). Each job may name the worker that should run
    it (:meth:`run`); a worker with nothing of its own left takes the others' last jobs, so
    the work stays spread (such a job then runs where it was not expected: slower, same
    result)."""

    def __init__(self, workers: int, inherited: tuple[int, ...] = ()) -> None:
        self.workers = workers
        self.inherited = inherited
        """Descriptors of the build's process that its forked workers close (its lock)."""
        self._processes: list[BaseProcess] = []
        self._conns: list[Connection] = []

    @property
    def started(self) -> bool:
        return bool(self._processes)

    @property
    def size(self) -> int:
        """Worker processes started."""
        return len(self._processes)

    def start(
        self,
        initializer: Callable[..., None] | None = None,
        initargs: Callable[[bool], tuple[Any, ...]] | None = None,
    ) -> None:
        """Start the workers, all at once (before a thread of the pool exists): forked when
        this process has no other thread, else from a clean server process.
        ``initargs(forked)``: the initializer's arguments (pickled unless forked)."""
        assert not self._processes, "a crew starts once"
        forked = forking()
        mp: ForkContext | ForkServerContext = (
            multiprocessing.get_context("fork")
            if forked
            else multiprocessing.get_context("forkserver")
        )
        args = initargs(forked) if initargs is not None else ()
        for _ in range(max(1, self.workers)):
            parent, child = mp.Pipe()
            process = mp.Process(
                target=_serve,
                args=(child, self.inherited if forked else (), initializer, args),
                daemon=True,
            )
            process.start()
            child.close()
            self._processes.append(process)
            self._conns.append(parent)

    def each(self, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        """``func(*args)`` once in every worker (e.g. a stage's setup); waits for all."""
        for conn in self._conns:
            self._send(conn, func, args)
        for conn in self._conns:
            ok, value = self._recv(conn)
            if not ok:
                raise value

    def run(
        self,
        func: Callable[..., R],
        jobs: Sequence[tuple[Any, ...]],
        *,
        home: Sequence[int | None] | None = None,
        progress: ProgressHook | None,
        stage: str,
        on_result: Callable[[R], None] | None = None,
    ) -> tuple[list[R], list[int]]:
        """``func(*job)`` for every job over the started workers: each result, in job order,
        and the worker that ran it. ``home[i]``: the worker that should run job ``i`` (None:
        any). ``on_result`` sees each result in job order once it and those before it are
        there (:meth:`stream` for a run that keeps no result)."""
        results: list[Any] = [None] * len(jobs)
        there = [False] * len(jobs)
        ran_on = [0] * len(jobs)
        delivered = 0

        def take(i: int, value: R, worker: int) -> None:
            nonlocal delivered
            results[i], there[i], ran_on[i] = value, True, worker
            while delivered < len(jobs) and there[delivered]:
                if on_result:
                    on_result(results[delivered])
                delivered += 1

        homes = list(home) if home is not None else None
        self.stream(
            func,
            list(jobs),
            total=len(jobs),
            home=(lambda i, _: homes[i]) if homes is not None else None,
            progress=progress,
            stage=stage,
            on_result=take,
        )
        return results, ran_on

    def stream(
        self,
        func: Callable[..., R],
        jobs: Iterable[tuple[Any, ...]],
        *,
        total: int,
        home: Callable[[int, tuple[Any, ...]], int | None] | None = None,
        progress: ProgressHook | None,
        stage: str,
        on_result: Callable[[int, R, int], None],
    ) -> None:
        """``func(*job)`` for every job of ``jobs`` (taken as workers need them: a few
        ahead, never all at once) over the started workers; ``on_result(i, result, worker)``
        sees each result as it comes back (not in job order), and no result is kept.
        ``home(i, job)``: the worker that should run job ``i`` (None: any); a worker with none of
        its own takes the others' last ones. ``total``: how many jobs there are (progress)."""
        assert self._processes, "start the crew first"
        count = len(self._conns)
        source = iter(jobs)
        own: list[deque[tuple[int, tuple[Any, ...]]]] = [deque() for _ in range(count)]
        anyone: deque[tuple[int, tuple[Any, ...]]] = deque()
        sent: list[deque[int]] = [deque() for _ in range(count)]
        pulled = 0
        exhausted = False
        lookahead = WINDOW * count

        def pull() -> bool:
            nonlocal pulled, exhausted
            if exhausted:
                return False
            job = next(source, None)
            if job is None:
                exhausted = True
                return False
            h = home(pulled, job) if home is not None else None
            (own[h] if h is not None and 0 <= h < count else anyone).append((pulled, job))
            pulled += 1
            return True

        def next_job(worker: int) -> tuple[int, tuple[Any, ...]] | None:
            while True:
                if own[worker]:
                    return own[worker].popleft()
                if anyone:
                    return anyone.popleft()
                if sum(map(len, own)) < lookahead and pull():
                    continue
                other = max(range(count), key=lambda w: len(own[w]))
                return own[other].pop() if own[other] else None  # their last: least likely soon

        def feed(worker: int) -> None:
            while len(sent[worker]) < IN_FLIGHT:
                item = next_job(worker)
                if item is None:
                    return
                i, job = item
                sent[worker].append(i)
                self._send(self._conns[worker], func, job)

        for worker in range(count):
            feed(worker)
        done = 0
        while any(sent):
            busy = {self._conns[w]: w for w in range(count) if sent[w]}
            for conn in wait(list(busy)):
                worker = busy[conn]  # type: ignore[index]
                ok, value = self._recv(conn)  # type: ignore[arg-type]
                i = sent[worker].popleft()
                if not ok:
                    raise value
                feed(worker)
                on_result(i, value, worker)
                done += 1
                if progress:
                    progress(stage, done, total)

    def _send(self, conn: Connection, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            conn.send((func, args))
        except (BrokenPipeError, ConnectionResetError, EOFError) as exc:
            raise CrewBroken(f"a worker process stopped: {exc}") from exc

    def _recv(self, conn: Connection) -> tuple[bool, Any]:
        try:
            reply: tuple[bool, Any] = conn.recv()
        except (EOFError, ConnectionResetError, OSError) as exc:
            raise CrewBroken("a worker process stopped") from exc
        return reply

    def close(self) -> None:
        """Stop the workers (each finishes its current job first); no-op when not started."""
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for process in self._processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join()
        for conn in self._conns:
            conn.close()
        self._processes.clear()
        self._conns.clear()


def fork_child(work: Callable[[], bytes]) -> tuple[int, int] | None:
    """Run ``work`` in a process forked from this one (the caller checked :func:`forking`),
    which sends back the bytes it returns: (its pid, the pipe to read them from:
    :func:`child_result`), or None when the OS would not fork. The child leaves by
    ``os._exit`` (nothing of this process's is cleaned up or flushed twice)."""
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # pragma: no cover - the child (its result is checked by the parent)
        status = 1
        try:
            os.close(read)
            data = work()
            with os.fdopen(write, "wb") as pipe:
                pipe.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    return pid, read


def child_result(pid: int, fd: int) -> bytes | None:
    """What the child of :func:`fork_child` sent, once it has ended; None when it failed."""
    with os.fdopen(fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    return data if status == 0 else None


def reap_child(pid: int, fd: int) -> None:
    """End with the child of :func:`fork_child` whose result is not asked."""
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


STAMPS_FORK_FROM = 10_000
"""A :class:`StampPass` of at least this many files forks (below, one pass costs this
process less than 40 ms here: not worth a process)."""


class StampPass:
    """The stamps (size, mtime_ns; (0, 0) where a file cannot be stat'ed:
    :func:`...loader.file_stamp`) of files of a folder, one ``stat`` each, taken by a
    process forked at :meth:`start` while this one goes on (a catalog query) and sent when
    asked (:meth:`result`). The query takes about as long as the stats: at 100,000 files,
    ``polyglav sessions`` took 1.19 s (median of six) with the child stating every file,
    1.29 s when this process stated half of them after the query; two threads took 0.58 s
    where one took 0.37 s (each ``stat`` holds the GIL to make its result). Where this
    process may not fork (:func:`forking`), or the child fails, this process stats every
    file."""

    def __init__(self, folder: str, names: Sequence[str], split: int, pid: int, fd: int) -> None:
        self.folder = folder
        self.names = names
        self.split = split
        """The child stats ``names[split:]``."""
        self.pid = pid
        """The child's pid; 0: none."""
        self.fd = fd

    @classmethod
    def start(
        cls, folder: str, names: Sequence[str], *, fork_from: int = STAMPS_FORK_FROM
    ) -> StampPass:
        """Fork the child when there are at least ``fork_from`` files and this process may
        fork."""
        if len(names) < fork_from or not forking() or not hasattr(os, "fork"):
            return cls(folder, names, len(names), 0, -1)
        child = fork_child(partial(_stamp_bytes, folder, names))
        if child is None:
            return cls(folder, names, len(names), 0, -1)
        return cls(folder, names, 0, *child)

    def result(self) -> list[tuple[int, int]]:
        """The stamp of every file, in the order of the names."""
        values = self.flat()
        return list(zip(values[0::2], values[1::2], strict=True))

    def flat(self) -> array[int]:
        """:meth:`result` as one array, each file's size then mtime_ns (16 bytes a file,
        where a tuple a file holds about 90)."""
        values = _stamps(self.folder, self.names[: self.split])
        if self.pid:
            rest = self._child()
            if rest is None:
                rest = _stamps(self.folder, self.names[self.split :])
            values.extend(rest)
        return values

    def _child(self) -> array[int] | None:
        """What the child sent (None when it failed or sent the wrong length)."""
        data = child_result(self.pid, self.fd)
        self.pid = 0
        rest: array[int] = array("q")
        if data is None or len(data) != 2 * rest.itemsize * (len(self.names) - self.split):
            return None
        rest.frombytes(data)
        return rest

    def close(self) -> None:
        """Reap the child when its result is not asked."""
        if self.pid:
            reap_child(self.pid, self.fd)
            self.pid = 0


class FolderStamps:
    """The session files of a sessions folder, with their stamps taken by a
    :class:`StampPass` started before the work that comes first: ``site build`` starts one
    before it imports the build (at 100,000 files, 0.2 s of ``stat`` beside 0.35 s of
    imports), and the scan's pass over every file takes them (:meth:`take`) instead of
    stating each file itself. Only where a child is forked (at least
    :data:`STAMPS_FORK_FROM` files, no other thread); :meth:`close` drops them (a build
    that waited for another one: its files may have changed meanwhile)."""

    __slots__ = ("folder", "names", "pass_", "started_ns")

    def __init__(self, folder: str, started_ns: int, names: list[str], pass_: StampPass) -> None:
        self.folder = folder
        """The folder (as the build names it: :attr:`.context.BuildContext.folder`)."""
        self.started_ns = started_ns
        """The clock before the folder was listed: the scan that takes these stamps started
        then (what a later build trusts a stamp against: :func:`.staleness.stamp_trusted`)."""
        self.names = names
        self.pass_: StampPass | None = pass_
        """None once taken or dropped."""

    @classmethod
    def start(cls, folder: str, *, fork_from: int = STAMPS_FORK_FROM) -> FolderStamps | None:
        """List ``folder`` and fork the child that stats its files; None when no child would
        be forked (fewer than ``fork_from`` files, or another thread: then the scan stats
        the files as it lists them)."""
        from ..loader import session_file_names

        started_ns = time.time_ns()
        names = session_file_names(folder)
        if len(names) < fork_from:
            return None
        stamps = StampPass.start(folder, names, fork_from=fork_from)
        if not stamps.pid:
            return None
        return cls(folder, started_ns, names, stamps)

    def take(self) -> Iterator[tuple[str, int, int]] | None:
        """Every file with its stamp (name, size, mtime_ns), once; None when taken or
        dropped before."""
        stamps, self.pass_ = self.pass_, None
        if stamps is None:
            return None
        names, self.names = self.names, []
        found = stamps.flat()  # the child is reaped now, whatever the caller does next
        return ((name, found[2 * i], found[2 * i + 1]) for i, name in enumerate(names))

    def close(self) -> None:
        """Drop the stamps (the child is reaped if they were not asked)."""
        stamps, self.pass_ = self.pass_, None
        self.names = []
        if stamps is not None:
            stamps.close()


def _stamp_bytes(folder: str, names: Sequence[str]) -> bytes:
    """The child's work: :func:`_stamps` as bytes."""
    return _stamps(folder, names).tobytes()


def _stamps(folder: str, names: Sequence[str]) -> array[int]:
    """(size, mtime_ns) of each of ``names`` of ``folder``, flat: one ``stat`` each
    (:func:`.staleness.stat_in`)."""
    from .staleness import stat_in

    values: array[int] = array("q")
    add = values.append
    with stat_in(folder) as stat:
        for name in names:
            try:
                st = stat(name)
            except OSError:
                add(0)
                add(0)
                continue
            add(st.st_size)
            add(st.st_mtime_ns)
    return values
