"""Stage 3, render: every planned session's pages, written as they are made.

Each session is a pure function of its file, the theme and the facts its pages show
(:func:`..render.render_session_pages`), so sessions render in the build's worker
processes (:class:`..pool.Crew`). What a worker needs is one :class:`RenderSetup`, sent to
each worker once; a job carries a file name and what the archive's graph says of it
(:class:`GraphFacts`, made here: workers get no graph). A session the scan prepared and
kept is rendered where it is kept (in this process, or in the crew worker that scanned it,
:mod:`.worker`) and not read again. A session that fails to load or to render is reported,
not raised: one bad file never stops the build. A write error (a full disk) does stop it.

A run with a previous run in its series (:meth:`..graph.Graph.series`) also gets its
comparison page (:mod:`..comparison`): the previous run is read too, unless this process
rendered it and kept it for that (:attr:`..context.Tunables.keep_runs_bytes`).

Turn fragments are read from the session's fragment file of the last build and spooled
to a new one as they are made (:mod:`..fragments`): an appended turn is the only one
rendered, and a long session's HTML is never held at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from ...audit import Audit
from ...loader import SessionLoadError
from ...prepare import Prepared, prepare_file
from ...redact import RedactionRecord, Redactor
from ...render.html import HtmlRenderer
from ...theme import Theme
from ...write import WriteError, is_inside, prepare_target, write_if_changed
from .. import urls
from ..context import BuildContext
from ..fragments import SUFFIX as FRAGMENT_SUFFIX
from ..fragments import FragmentFile, FragmentWriter
from ..manifest import ManifestDamaged
from ..pool import Crew
from ..render import PageFacts, PageLimits, PreviousRun, render_session_pages
from ..search.extract import session_record
from ..search.store import SearchStore
from ..search.terms import TermCounter
from . import worker
from .plan import Plan, RenderJob
from .scan import Scan, start_crew


@dataclass(frozen=True, slots=True)
class Rendered:
    """What rendering one session did."""

    file_name: str
    """Its file in the sessions folder."""
    outputs: dict[str, str]
    """Every file it produced (path in the site → sha256), sorted."""
    facts_key: str
    """The key of the facts its pages show (:func:`.staleness.facts_key`)."""
    written: int
    """Files actually written (bytes changed)."""
    error: str | None
    """Why it could not be rendered (then nothing else is set)."""


@dataclass(frozen=True, slots=True)
class GraphFacts:
    """What the archive's graph says of one session to render."""

    session_name: str
    """Its session name, as the scan read it."""
    ref_candidates: frozenset[str]
    """The references the scan found in it (:attr:`facts` resolves them)."""
    facts: PageFacts
    """What its pages show of other sessions."""
    previous_file: str
    """The file of the previous run of its series ("" when none)."""
    next_file: str = ""
    """The file of the next run of its series ("" when none)."""


@dataclass(frozen=True, slots=True)
class Records:
    """With redaction on, what the scan's redaction replaced in the files a render job
    may read again (the session's, its previous run's), so that neither is searched for
    secrets a second time (:func:`...prepare.prepare_file`)."""

    session: RedactionRecord | None = None
    """The session's file's."""
    previous: RedactionRecord | None = None
    """Its series' previous run's file's."""


NO_RECORDS = Records()


@dataclass(frozen=True, slots=True)
class RenderSetup:
    """Everything a render worker needs besides the job (sent to each worker once)."""

    theme: Theme
    """The theme (a worker started clean compiles it)."""
    folder: Path
    """The sessions folder."""
    out: Path
    """The site folder."""
    fragments: Path
    """The fragment files' folder in the cache."""
    redactor: Redactor | None
    """Redaction, as in the scan."""
    limits: PageLimits
    """Where long sessions are cut into pages."""
    keep_runs_bytes: int = 0
    """:attr:`..context.Tunables.keep_runs_bytes`."""
    search: Path | None = None
    """The search's cache folder (:class:`..search.store.SearchStore`) when the build
    indexes: each session's record is written there beside its pages."""


class SessionRenderer:
    """Renders sessions with one setup (in a worker, or in the build's own process)."""

    def __init__(self, setup: RenderSetup, renderer: HtmlRenderer, kept: worker.Kept) -> None:
        self.setup = setup
        self.renderer = renderer
        self.kept = kept
        """Sessions the scan prepared, by file name: not read again."""
        self.runs: dict[str, tuple[Prepared, int]] = {}
        """Sessions rendered here whose series has a next run, by session name (oldest
        first), with their file's size: that run's previous run is not read again."""
        self.runs_bytes = 0
        self.runs_next: list[tuple[str, str]] = []
        """(the next run's file, the kept run's session name) of each run kept, a heap:
        see :meth:`_forget_runs`."""
        self.search = SearchStore(setup.search) if setup.search is not None else None
        self.terms = TermCounter()
        """Kept across this process's sessions: common words are split and stemmed once."""

    def __call__(self, job: RenderJob, told: GraphFacts, records: Records = NO_RECORDS) -> Rendered:
        """Render one session and write its files; never raises for a bad session."""
        try:
            return self._render(job, told, records)
        except SessionLoadError as exc:
            return Rendered(job.file_name, {}, "", 0, exc.reason)
        except (WriteError, ManifestDamaged):
            # The output is the problem (read-only, disk full), or the cache (the build
            # starts again without it): stop the build.
            raise
        except Exception as exc:  # a renderer bug must not stop the whole build
            reason = f"could not be rendered: {type(exc).__name__}: {exc}"
            return Rendered(job.file_name, {}, "", 0, reason)

    def _previous_run(
        self, name: str, file_name: str, record: RedactionRecord | None
    ) -> PreviousRun:
        """The previous run of a series, read for the comparison page (a file that cannot be
        read now gives a page that says so, not a failed session)."""
        setup = self.setup
        prepared = self.kept.get(file_name)
        if prepared is None and name in self.runs:
            prepared, size = self.runs.pop(name)
            self.runs_bytes -= size
        try:
            if prepared is None:
                path = setup.folder / file_name
                prepared = prepare_file(path, setup.folder, setup.redactor, record)
        except SessionLoadError as exc:
            return PreviousRun(name, None, unreadable=exc.reason)
        return PreviousRun(name, prepared.session, prepared.redaction_note)

    def _keep_run(self, name: str, size: int, prepared: Prepared, next_file: str) -> None:
        """Keep a rendered session (its file of ``size`` bytes) for the comparison page of
        its series' next run (in ``next_file``; in a full build, runs render in file-name
        order: mostly their series' order), within :attr:`RenderSetup.keep_runs_bytes`."""
        setup = self.setup
        if size > setup.keep_runs_bytes or not next_file:
            return
        self.runs[name] = (prepared, size)
        self.runs_bytes += size
        heapq.heappush(self.runs_next, (next_file, name))
        while self.runs_bytes > setup.keep_runs_bytes:
            _, dropped = self.runs.pop(next(iter(self.runs)))
            self.runs_bytes -= dropped

    def _forget_runs(self, file_name: str) -> None:
        """Drop the kept runs whose next run's file sorts before ``file_name``, the job
        this process renders now: a process gets its jobs in file-name order, so that run
        was rendered by another worker and will not be asked for here (with two workers,
        about half the kept runs; at 20,000 small sessions they filled the budget with
        7,700 sessions a worker that no page would use)."""
        heap = self.runs_next
        while heap and heap[0][0] < file_name:
            _, name = heapq.heappop(heap)
            kept = self.runs.pop(name, None)
            if kept is not None:
                self.runs_bytes -= kept[1]

    def _render(self, job: RenderJob, told: GraphFacts, records: Records) -> Rendered:
        setup = self.setup
        self._forget_runs(job.file_name)
        prepared = self.kept.take(job.file_name)
        if prepared is None:
            path = setup.folder / job.file_name
            prepared = prepare_file(path, setup.folder, setup.redactor, records.session)
            if (prepared.session.session_name, frozenset(prepared.refs)) != (
                told.session_name,
                told.ref_candidates,
            ):
                # Rewritten since the scan, with other links: the graph does not know it.
                raise SessionLoadError(job.file_name, CHANGED)
        session = prepared.session
        facts = told.facts
        previous_run = (
            self._previous_run(facts.series[0], told.previous_file, records.previous)
            if facts.series[0]
            else None
        )
        audit = Audit.of(session)  # the pages' and the search record's
        fragment_file = setup.fragments / f"{urls.slug(session.session_name)}{FRAGMENT_SUFFIX}"
        # The old fragments are read one at a time, the new ones spooled to the next cache
        # file as they are rendered.
        cache = FragmentFile.open(fragment_file) if job.reuse_fragments else None
        spool = FragmentWriter(fragment_file)
        outputs: dict[str, str] = {}
        written = 0

        def write(rel: str, data: bytes) -> None:
            nonlocal written
            digest = hashlib.sha256(data).hexdigest()
            outputs[rel] = digest
            target = prepare_target(setup.out, rel)
            same = job.trust_written and job.previous_outputs.get(rel) == digest
            if same and target.is_file() and not target.is_symlink():
                return
            if write_if_changed(target, data):
                written += 1

        try:
            render_session_pages(
                self.renderer,
                session,
                facts,
                cache,
                prepared.redaction_note,
                sink=write,
                store=spool,
                limits=setup.limits,
                previous_run=previous_run,
                audit=audit,
            )
        except BaseException as exc:
            spool.abort()
            if isinstance(exc, Exception):
                # Pages already written for this render and unknown to the manifest would
                # be orphans: remove them (the caller lists the session as failed).
                for rel in outputs.keys() - job.previous_outputs.keys():
                    with contextlib.suppress(OSError):
                        (setup.out / rel).unlink()
                        remove_empty_parents((setup.out / rel).parent, setup.out)
            raise
        finally:
            if cache is not None:
                cache.close()
        if self.search is not None:
            self.search.put_record(session_record(session, setup.limits, self.terms, audit))
        self._keep_run(session.session_name, job.size, prepared, told.next_file)
        del session, prepared, previous_run
        with contextlib.suppress(WriteError):
            spool.commit()
        return Rendered(job.file_name, dict(sorted(outputs.items())), facts.key(), written, None)


def render(
    ctx: BuildContext,
    planned: Plan,
    scanned: Scan,
    crew: Crew,
    on_rendered: Callable[[Rendered], None] | None = None,
) -> list[Rendered]:
    """Stage 3 (see the module docstring). ``crew``: the build's worker processes (started
    by the scan, or here when a pool pays). ``on_rendered`` sees each session's result as
    soon as its files are written (the search stage indexes finished shards meanwhile)."""
    jobs = planned.jobs
    setup = RenderSetup(
        theme=ctx.theme,
        folder=ctx.folder,
        out=ctx.out,
        fragments=ctx.cache.fragments,
        redactor=ctx.options.redactor,
        limits=PageLimits(ctx.tunables.page_turns, ctx.tunables.page_bytes),
        keep_runs_bytes=ctx.tunables.keep_runs_bytes,
        search=ctx.cache.search if ctx.options.search else None,
    )
    tasks = Tasks(planned, scanned.records)
    kept = {
        job.file_name: scanned.kept[job.file_name] for job in jobs if job.file_name in scanned.kept
    }
    progress = ctx.options.progress
    few = len(jobs) <= ctx.tunables.in_process_render and (
        sum(job.size for job in jobs) <= ctx.tunables.keep_scanned_bytes
    )
    if ctx.workers <= 1 or len(jobs) < 2 or few:
        local = SessionRenderer(
            setup, ctx.renderer, worker.Kept(0, sessions={n: (p, 0) for n, p in kept.items()})
        )
        results = []
        for done, task in enumerate(tasks, start=1):
            results.append(local(*task))
            if on_rendered:
                on_rendered(results[-1])
            if progress:
                progress("render", done, len(jobs))
        return results
    if not crew.started:
        start_crew(ctx, crew, kept)
    crew.each(_start_worker, (setup, [job.file_name for job in jobs]))
    results, _ = crew.run(
        _render_in_worker,
        tasks,
        home=[scanned.homes.get(job.file_name) for job in jobs],
        progress=progress,
        stage="render",
        on_result=on_rendered,
    )
    return results


class Tasks(Sequence[tuple[RenderJob, GraphFacts, Records]]):
    """The render's tasks: each planned job with what the graph says of its session and
    the records of the files it may read again, made when the task is sent (the plan's
    graph facts of every session are not held at once: about 10 MB at 20,000
    sessions)."""

    def __init__(self, planned: Plan, records: dict[str, RedactionRecord]) -> None:
        self.planned = planned
        self.records = records

    @overload
    def __getitem__(self, index: int) -> tuple[RenderJob, GraphFacts, Records]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[RenderJob, GraphFacts, Records]]: ...
    def __getitem__(
        self, index: int | slice
    ) -> tuple[RenderJob, GraphFacts, Records] | Sequence[tuple[RenderJob, GraphFacts, Records]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        job = self.planned.jobs[index]
        told = graph_facts(self.planned, job.file_name)
        records = NO_RECORDS
        if self.records:
            records = Records(self.records.get(job.file_name), self.records.get(told.previous_file))
        return job, told, records

    def __len__(self) -> int:
        return len(self.planned.jobs)


CHANGED = "changed while the site was built (read again by the next build)"
"""Why a session rewritten between the scan and its render, with another name or other
references than the scan found, is not rendered this build."""


def graph_facts(planned: Plan, file_name: str) -> GraphFacts:
    """What the plan's graph says of the session in ``file_name`` (published), made of the
    briefs as the plan's facts keys are (no state decoded)."""
    graph = planned.graph
    name = planned.sources.brief(file_name).name
    candidates = graph.ref_candidates(name)
    facts = PageFacts.from_graph(graph, name, candidates)
    before, after = facts.series
    previous_file = graph.all[before].file_name if before else ""
    next_file = graph.all[after].file_name if after else ""
    return GraphFacts(name, frozenset(candidates), facts, previous_file, next_file)


_worker: SessionRenderer | None = None
"""The session renderer of a crew worker process, set by :func:`_start_worker` before the
render's jobs. Never set in the build's own process, which passes its renderer along."""


def _start_worker(setup: RenderSetup, file_names: list[str]) -> None:
    """Set up a crew worker for the render: keep only the kept sessions it renders."""
    global _worker
    state = worker.here()
    assert state is not None, "a render worker runs in a crew"
    state.kept.retain(file_names)
    _worker = SessionRenderer(setup, state.renderer or HtmlRenderer(setup.theme), state.kept)


def _render_in_worker(job: RenderJob, told: GraphFacts, records: Records) -> Rendered:
    assert _worker is not None, "a render job ran in a process the crew did not set up"
    return _worker(job, told, records)


def remove_empty_parents(folder: Path, stop: Path) -> None:
    """Remove ``folder`` and its parents up to ``stop`` while they are empty."""
    while folder != stop and is_inside(folder, stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
