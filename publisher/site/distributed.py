"""The site build's scan and render on a Dask cluster (``site build --scheduler ADDRESS``).

:class:`DaskCrew` offers what the build's local worker processes offer (:class:`.pool.Runner`,
:class:`.pool.Crew`): a setup run in every worker before its jobs (:meth:`DaskCrew.start`,
:meth:`DaskCrew.each`), and jobs streamed out and their results back (:meth:`DaskCrew.stream`),
so the stages do not know which of the two runs them. The jobs are the same functions with
the same arguments; each becomes a task of ``distributed.Client.submit``, and each result
comes back to the build's process, which writes the catalog as it does for a local result
(the catalog has one writer). A render task writes its session's pages and turn fragments
itself, atomically, as a local worker does: the sessions folder, the cache folder and the
site folder are on a file system every worker sees, at the same paths (docs/distributed.md).

What a worker process keeps between tasks (the setup, the sessions it scanned for their
render) is set up lazily: every task carries the build's :class:`Identity` and the setup
steps so far (each the result of a task of its own, passed as futures), and a worker process
that has not run them for this build runs them first. A worker that joins late, or one
the nanny started again after the last was killed, sets itself up from its first task; a
session kept by a lost worker is read again where its render lands (same pages). A task
that finds another publisher (version, code or theme) or does not see the build's folders
refuses with :class:`ClusterError`, which stops the build with one line.

Tasks of one worker process run one at a time (:data:`_HERE`'s lock): the jobs hold the
GIL nearly all the time, and the per-process state they share is not meant for threads;
run workers with ``--nthreads 1`` and as many processes as cores (``--nworkers``).

This is the only module that imports Dask; the build imports it only when a scheduler is
named.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any, TypeVar

from distributed import Client, Future, as_completed, get_worker
from distributed.scheduler import KilledWorker

import publisher

from ..archive import ArchiveError
from ..theme import Theme
from . import staleness
from .context import BuildContext, ProgressHook

R = TypeVar("R")

PER_THREAD = 8
"""Tasks in flight per worker thread of the cluster (submitted, result not yet taken)."""


class ClusterError(ArchiveError):
    """The cluster cannot run the build: the scheduler cannot be reached or was lost, a
    worker runs another publisher or does not see the build's folders (exit 1)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """What a worker checks before it runs a build's first task (the build key travels
    with every task)."""

    build: str
    """This build's id (what a worker process has set up is for one build)."""
    version: str
    """The publisher's version."""
    code: str
    """:func:`.staleness.code_key` of the build's publisher."""
    theme: Theme
    """The theme (its folders must be seen by the worker)."""
    theme_key: str
    """:func:`.staleness.theme_key` of the theme as the build's process sees it."""
    folders: tuple[str, ...]
    """The sessions folder, the cache folder and the site folder (or the folder it will
    be made in)."""
    prices: str = ""
    """The genai-prices version the build prices with (:func:`publisher.usage.shipped_version`),
    "" when its price table is a ``--prices`` file alone: a worker pricing with another
    would give other costs than the build's key says."""

    @classmethod
    def of(cls, ctx: BuildContext) -> Identity:
        from ..usage import shipped_version

        site = ctx.out if ctx.out.is_dir() else ctx.out.parent  # (a first build makes it)
        folders = (ctx.folder, ctx.cache.root, site)
        return cls(
            build=uuid.uuid4().hex,
            version=publisher.__version__,
            code=ctx.warm.code or staleness.code_key(),
            theme=ctx.theme,
            theme_key=staleness.theme_key(ctx.theme),
            folders=tuple(os.fspath(f) for f in folders),
            prices=shipped_version() if ctx.options.prices.uses_shipped else "",
        )

    def refusal(self, code: str, where: str) -> str | None:
        """Why the worker at ``where`` (whose publisher's code key is ``code``) cannot run
        this build's tasks; None when it can."""
        if publisher.__version__ != self.version or code != self.code:
            return (
                f"Dask worker {where} runs polyglav-publisher {publisher.__version__} "
                f"(code {code[:12]}), the build {self.version} (code {self.code[:12]}): "
                "install the same publisher on every worker"
            )
        for folder in self.folders:
            if not os.path.isdir(folder):
                return (
                    f"Dask worker {where} does not see {folder}: the sessions, site and cache "
                    "folders must be on a file system every worker sees, at the same path"
                )
        if self.prices:
            from ..usage import shipped_version

            if shipped_version() != self.prices:
                return (
                    f"Dask worker {where} prices with genai-prices {shipped_version()}, the "
                    f"build with {self.prices}: install the same version on every worker"
                )
        if staleness.theme_key(self.theme) != self.theme_key:
            dirs = ", ".join(map(str, self.theme.dirs))
            return (
                f"Dask worker {where} sees another theme at {dirs}: install the same "
                "publisher at the same path on every worker (or put the theme on a shared mount)"
            )
        return None


@dataclass(frozen=True, slots=True)
class Step:
    """A setup call run in every worker process before its next task of a build."""

    func: Callable[..., Any]
    """What to call."""
    args: tuple[Any, ...]
    """Its arguments."""


@dataclass(slots=True)
class _Process:
    """What this worker process has set up (one build at a time)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while a task runs: one task at a time in a worker process."""
    code: str = ""
    """This process's :func:`.staleness.code_key` (computed once)."""
    build: str = ""
    """The build whose steps ran here."""
    steps: int = 0
    """How many of its setup steps ran here."""

    def ready(self, identity: Identity, steps: tuple[Step, ...], where: str) -> None:
        """Run the setup steps of ``identity``'s build this process has not run yet (all of
        them for a build it has not seen, once it is checked)."""
        if self.build != identity.build:
            self.code = self.code or staleness.code_key()
            refused = identity.refusal(self.code, where)
            if refused is not None:
                raise ClusterError(refused)
            self.build, self.steps = identity.build, 0
        for step in steps[self.steps :]:
            step.func(*step.args)
            self.steps += 1

    def forget(self, build: str) -> None:
        """Drop what ``build`` set up (its kept sessions go with the next build's setup)."""
        if self.build == build:
            self.build, self.steps = "", 0
            from .stages import worker

            worker.forget()


_HERE = _Process()
"""This process's state when it runs a build's Dask tasks (never set in the build's own
process unless a test runs the workers in it)."""


def _run(
    identity: Identity, steps: tuple[Step, ...], func: Callable[..., R], args: tuple[Any, ...]
) -> tuple[R, str]:
    """A Dask task: ``func(*args)`` once this worker process is set up for the build; the
    result and the worker's address."""
    where = get_worker().address
    with _HERE.lock:
        _HERE.ready(identity, steps, where)
        return func(*args), where


def _value(step: Step) -> Step:
    """A setup step as a task's result (:meth:`DaskCrew.each`)."""
    return step


async def _forget(build: str) -> None:
    """Run on every worker when a build ends (``Client.run``, on the worker's event loop:
    a task still running keeps the lock, and then its process keeps its state until the
    next build sets up)."""
    if _HERE.lock.acquire(blocking=False):
        try:
            _HERE.forget(build)
        finally:
            _HERE.lock.release()


class _Raised(Exception):
    """Carries what a job raised out of :meth:`DaskCrew.stream`'s handling of Dask's own
    errors (a job's ``OSError`` is not a lost connection)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def _reason(exc: BaseException) -> str:
    """The first line of what ``exc`` says (its type when it says nothing)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class DaskCrew:
    """The build's jobs on the Dask cluster at ``address`` (see the module docstring)."""

    def __init__(self, address: str, identity: Identity, workers: int) -> None:
        self.address = address
        self.identity = identity
        self.workers = max(2, workers)
        """At least two: the stages send their jobs here rather than run them in the build's
        process whenever a pool would pay."""
        self._client: Client | None = None
        self._steps: list[Future[Any]] = []
        self._addresses: list[str] = []
        """The workers that returned a result, in order: a job's home is an index here."""
        self._threads = 1
        """Worker threads of the cluster when it was reached (how many tasks to send ahead)."""

    @classmethod
    def of(cls, ctx: BuildContext, address: str) -> DaskCrew:
        return cls(address, Identity.of(ctx), ctx.workers)

    @property
    def started(self) -> bool:
        return self._client is not None

    def start(
        self,
        initializer: Callable[..., None] | None = None,
        initargs: Callable[[bool], tuple[Any, ...]] | None = None,
    ) -> None:
        """Reach the scheduler; ``initializer(*initargs(False))`` becomes the first setup
        step of every worker (nothing is forked: its arguments are pickled)."""
        assert self._client is None, "a crew starts once"
        try:
            # (how long it tries: Dask's distributed.comm.timeouts.connect, 30 s by default)
            client = Client(self.address, set_as_default=False)  # type: ignore[no-untyped-call]
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(
                f"cannot reach the Dask scheduler at {self.address}: {_reason(exc)}"
            ) from None
        self._client = client
        workers = client.scheduler_info().get("workers", {})
        self._threads = max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
        if initializer is not None:
            self.each(initializer, initargs(False) if initargs is not None else ())

    def each(self, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        """``func(*args)`` in every worker process before its next task of this build.

        The step is a task of its own whose result is the step (not data scattered to
        the workers): when every worker that held it is gone, Dask makes it again."""
        client = self._need()
        key = f"polyglav-setup-{len(self._steps)}-{self.identity.build}"
        self._steps.append(client.submit(_value, Step(func, args), key=key))

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
        """As :meth:`.pool.Crew.stream`: ``func(*job)`` for every job, as tasks of the
        cluster, a bounded number in flight; ``on_result(i, result, worker)`` in this
        process as each comes back. ``home``: the worker that should run a job (a wish: it
        runs elsewhere when that worker is busy or gone)."""
        client = self._need()
        steps = tuple(self._steps)
        source = iter(jobs)
        waiting = as_completed(loop=client.loop)  # type: ignore[no-untyped-call]
        index: dict[object, int] = {}
        pulled = 0

        def submit() -> bool:
            nonlocal pulled
            job = next(source, None)
            if job is None:
                return False
            h = home(pulled, job) if home is not None else None
            wish = [self._addresses[h]] if h is not None and 0 <= h < len(self._addresses) else None
            future = client.submit(
                _run,
                self.identity,
                steps,
                func,
                job,
                key=f"polyglav-{stage}-{pulled}-{self.identity.build}",
                workers=wish,
                allow_other_workers=wish is not None,
            )
            index[future.key] = pulled
            waiting.add(future)  # type: ignore[no-untyped-call]
            pulled += 1
            return True

        try:
            for _ in range(max(16, PER_THREAD * self._threads)):
                if not submit():
                    break
            for done, future in enumerate(waiting, start=1):
                i = index.pop(future.key)
                value, where = self._result(future)
                future.release()
                submit()
                on_result(i, value, self._worker_index(where))
                if progress:
                    progress(stage, done, total)
        except _Raised as raised:  # by the job itself: as from a local worker
            raise raised.error from None
        except (OSError, TimeoutError, CancelledError) as exc:  # Dask's connection
            raise self._lost(_reason(exc)) from None
        finally:
            for future in list(waiting.futures):
                future.release()

    def _result(self, future: Future[Any]) -> tuple[Any, str]:
        """A task's result and where it ran; what the job raised comes as :class:`_Raised`."""
        if future.status == "cancelled":
            raise self._lost("its tasks were cancelled (the scheduler stopped or restarted)")
        if future.status == "error":
            error = future.exception()  # type: ignore[no-untyped-call]
            if isinstance(error, KilledWorker):
                raise ClusterError(
                    f"Dask workers died running {future.key} (out of memory?): {_reason(error)}"
                )
            raise _Raised(error)
        value, where = future.result()
        return value, where

    def _worker_index(self, where: str) -> int:
        if where not in self._addresses:
            self._addresses.append(where)
        return self._addresses.index(where)

    def _need(self) -> Client:
        assert self._client is not None, "start the crew first"
        return self._client

    def _lost(self, reason: str) -> ClusterError:
        return ClusterError(f"lost the Dask scheduler at {self.address}: {reason}")

    def close(self) -> None:
        """Tell the workers to drop what this build set up, and disconnect; no-op when not
        started."""
        client, self._client = self._client, None
        if client is None:
            return
        with contextlib.suppress(Exception):  # the cluster is gone: nothing to drop
            client.run(_forget, self.identity.build, wait=False)
        self._steps.clear()
        with contextlib.suppress(Exception):  # a lost scheduler: the build already says so
            client.close(timeout=5)  # type: ignore[no-untyped-call]
