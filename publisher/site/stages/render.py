"""Stage 3, render: every planned session's pages, written as they are made.

Each session is a pure function of its file, the theme and the facts its pages show
(:func:`..render.render_session_pages`), so sessions render in the build's worker
processes (:class:`..pool.Crew`, or a Dask cluster's: :mod:`..distributed`). What a worker
needs is one :class:`RenderSetup`, sent to each worker once; a job carries a file name and what the archive's graph says of it
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...audit import Audit
from ...loader import SessionLoadError
from ...prepare import Prepared, prepare_file
from ...redact import RedactionRecord, Redactor
from ...render.html import HtmlRenderer
from ...theme import Theme
from ...usage import Prices
from ...write import WriteError, is_inside, prepare_target, write_if_changed
from .. import urls
from ..catalog import Catalog, CatalogDamaged
from ..context import BuildContext
from ..fragments import SUFFIX as FRAGMENT_SUFFIX
from ..fragments import FragmentFile, FragmentWriter
from ..graph import Graph
from ..pool import Runner
from ..render import PageFacts, PageLimits, PreviousRun, render_session_pages
from ..search.extract import session_record
from ..search.store import SearchStore
from ..search.terms import TermCounter
from . import worker
from .plan import Plan
from .scan import PRICE_HINT_FILES, Holds, Scan, start_crew


@dataclass(frozen=True, slots=True)
class RenderJob:
    """One session to render."""

    file_name: str
    """Its file in the sessions folder."""
    previous_outputs: dict[str, str]
    """What its last render produced (path → sha256): files with the same bytes are not
    written again."""
    reuse_fragments: bool = True
    """False when the build key changed (another theme, other code): the last build's turn
    fragments were made by other templates and are not read."""
    trust_written: bool = True
    """:attr:`..context.BuildContext.trust_written`: False when a page with the hash of
    :attr:`previous_outputs` may hold other bytes (compared before it is skipped)."""
    size: int = 0
    """Its file's size when scanned (what keeping the session after its render costs:
    :attr:`..context.Tunables.keep_runs_bytes`)."""


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
    prices: Prices = field(default_factory=Prices)
    """The price table (:attr:`..context.BuildOptions.prices`)."""
    search: Path | None = None
    """The search's cache folder (:class:`..search.store.SearchStore`) when the build
    indexes: each session's record is written there beside its pages."""


class SessionRenderer:
    """Renders sessions with one setup (in a worker, or in the build's own process)."""

    def __init__(
        self,
        setup: RenderSetup,
        renderer: HtmlRenderer,
        kept: worker.Kept,
        prices: Prices | None = None,
    ) -> None:
        self.setup = setup
        self.prices = prices or setup.prices
        """The price table (a crew worker's own: what the scan looked up is kept)."""
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
        except (WriteError, CatalogDamaged):
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
                prices=self.prices,
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


@dataclass(slots=True)
class RenderReport:
    """What the render stage did (each session's result is in the catalog)."""

    rendered: int = 0
    """Sessions rendered (or tried)."""
    written: int = 0
    """Site files written (bytes changed)."""
    failed: int = 0
    """Sessions whose render failed (listed as not loading, or held)."""


def render(
    ctx: BuildContext,
    catalog: Catalog,
    planned: Plan,
    scanned: Scan,
    crew: Runner,
    on_rendered: Callable[[Rendered], None] | None = None,
) -> RenderReport:
    """Stage 3 (see the module docstring). ``crew``: the build's worker processes (started
    by the scan, or here when a pool pays). Each session's result is written into the
    catalog as it comes back (:func:`record`); ``on_rendered`` sees it too, as soon as its
    files are written."""
    setup = RenderSetup(
        theme=ctx.theme,
        folder=ctx.folder,
        out=ctx.out,
        fragments=ctx.cache.fragments,
        redactor=ctx.options.redactor,
        limits=PageLimits(ctx.tunables.page_turns, ctx.tunables.page_bytes),
        keep_runs_bytes=ctx.tunables.keep_runs_bytes,
        prices=ctx.options.prices,
        search=ctx.cache.search if ctx.options.search else None,
    )
    report = RenderReport()
    # The render takes the sessions the scan kept: nothing holds one once this stage is
    # done (a 90 MB session would otherwise stay through the archive's pages and the
    # search's bundles, and the bundle's own memory would come on top of it).
    taken, scanned.kept = scanned.kept, {}
    count = planned.jobs
    if not count:
        return report
    kept = {name: prepared for name, prepared in taken.items() if catalog.is_job(name)}
    del taken
    progress = ctx.options.progress

    def take(result: Rendered) -> None:
        record(catalog, scanned.holds, result, report)
        if on_rendered:
            on_rendered(result)

    tasks = Tasks(ctx, catalog, planned, scanned.records)
    few = count <= ctx.tunables.in_process_render and (
        catalog.job_bytes() <= ctx.tunables.keep_scanned_bytes
    )
    if crew.workers <= 1 or count < 2 or few:
        local = SessionRenderer(
            setup, ctx.renderer, worker.Kept(0, sessions={n: (p, 0) for n, p in kept.items()})
        )
        for done, task in enumerate(tasks, start=1):
            take(local(*task))
            if progress:
                progress("render", done, count)
        return report
    if not crew.started:
        start_crew(ctx, crew, kept, catalog.spread("jobs", PRICE_HINT_FILES))
    homes = scanned.homes
    crew.each(_start_worker, (setup, sorted(n for n in {*homes, *kept} if catalog.is_job(n))))
    crew.stream(
        _render_in_worker,
        tasks,
        total=count,
        home=lambda _, task: homes.get(task[0].file_name),
        progress=progress,
        stage="render",
        on_result=lambda _, result, __: take(result),
    )
    return report


def record(catalog: Catalog, holds: Holds, result: Rendered, report: RenderReport) -> None:
    """Write one session's render into the catalog: its files and facts key, or, when it
    failed, the session listed as not loading (or held at its last good state, when that
    is asked: :class:`.scan.Holds`)."""
    report.rendered += 1
    if result.error is None:
        report.written += result.written
        catalog.rendered(result.file_name, result.outputs, result.facts_key)
        return
    report.failed += 1
    was = catalog.was_brief(result.file_name)
    had_pages = was is not None and was.loaded and catalog.has_outputs(result.file_name)
    size = was.size if was is not None else 0
    if holds.hold(result.file_name, result.error, size, had_pages=had_pages):
        catalog.restore(result.file_name)
        return
    # Changed between scan and render, or a renderer failure: list it, go on.
    catalog.render_failed(result.file_name, result.error)


class Tasks:
    """The render's tasks, made as they are sent: each session to render (the catalog's
    ``jobs``, by file name) with what the graph says of it (:class:`GraphFacts`) and, with
    redaction on, the records of the files it may read again (:class:`Records`). Neither
    the jobs nor the graph facts of every session are held at once."""

    def __init__(
        self,
        ctx: BuildContext,
        catalog: Catalog,
        planned: Plan,
        records: dict[str, RedactionRecord],
    ) -> None:
        self.ctx = ctx
        self.catalog = catalog
        self.planned = planned
        self.records = records

    def __iter__(self) -> Iterator[tuple[RenderJob, GraphFacts, Records]]:
        catalog, planned, found = self.catalog, self.planned, self.records
        for file_name, size in catalog.jobs():
            previous = catalog.outputs_of(file_name) if planned.same_key else {}
            job = RenderJob(file_name, previous, planned.same_key, self.ctx.trust_written, size)
            told = graph_facts(planned.graph, file_name)
            records = NO_RECORDS
            if found:
                records = Records(found.get(file_name), found.get(told.previous_file))
            yield job, told, records


CHANGED = "changed while the site was built (read again by the next build)"
"""Why a session rewritten between the scan and its render, with another name or other
references than the scan found, is not rendered this build."""


def graph_facts(graph: Graph, file_name: str) -> GraphFacts:
    """What the graph says of the session in ``file_name`` (published), asked of the
    catalog as the plan's facts keys are."""
    node = graph.catalog.node_of_file(file_name)
    assert node is not None, file_name
    name = node.name
    candidates = set(node.refs)
    facts = PageFacts.from_graph(graph, name, candidates)
    before, after = facts.series
    previous = graph.node(before) if before else None
    following = graph.node(after) if after else None
    return GraphFacts(
        name,
        frozenset(candidates),
        facts,
        previous.file_name if previous is not None else "",
        following.file_name if following is not None else "",
    )


_worker: SessionRenderer | None = None
"""The session renderer of a crew worker process, set by :func:`_start_worker` before the
render's jobs. Never set in the build's own process, which passes its renderer along."""


def _start_worker(setup: RenderSetup, file_names: list[str]) -> None:
    """Set up a crew worker for the render: keep only the kept sessions it renders."""
    global _worker
    state = worker.here()
    assert state is not None, "a render worker runs in a crew"
    state.kept.retain(file_names)
    _worker = SessionRenderer(
        setup, state.renderer or HtmlRenderer(setup.theme), state.kept, state.prices
    )


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
