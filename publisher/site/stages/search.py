"""Stage 6, search: the bundles of the search index whose sessions changed, written again
from the sessions' records (:mod:`..search`). The stage starts before stage 5 and ends
after it: its worker processes write the bundles while the build's process makes the
archive's pages (one core busy; the other idle once the render's workers are gone), fed
by a thread of the build's process from a spool of the bundles' sessions
(:class:`BundleWriting`, :class:`MembersSpool`). ``site watch`` defers the writing
(:attr:`.context.BuildOptions.defer_search`) so that open pages reload before the index
follows; the bundles it leaves are kept in the search state, so a watcher stopped in
between leaves them to the next build.

The site's ``search/`` folder holds ``index.js`` (every bundle and its meta file, the turn
count, the field weights and where each shared term chunk starts), one folder a bundle
(:mod:`..search.bundle`) and ``terms/``, the term chunks every bundle shares
(:mod:`..search.shared`: made again, once the bundles are written, where the terms whose
entries changed are); the stage owns it: anything else there is removed.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ...prepare import prepare_file
from ...redact import Redactor
from ...write import WriteError, is_inside, prepare_target, write_if_changed
from ..catalog import Catalog
from ..context import BuildContext, ProgressHook
from ..pool import Crew
from ..search.bundle import FORMAT as BUNDLE_FORMAT
from ..search.bundle import bundle_count, bundle_id, bundle_of, script
from ..search.extract import RECORD_FORMAT, WEIGHTS, SessionRecord, session_record
from ..search.shared import FOLDER as TERMS
from ..search.shared import separators, update_chunks
from ..search.store import BundleState, SearchState, SearchStore, TermEntries
from ..staleness import bundle_current, bundle_members, search_key, search_stale
from ..urls import PageLimits

FOLDER = "search"
"""The index's folder in the site."""
INDEX = "index"
"""Its entry file (``search/index.js``): the one file whose name is not a hash."""
LEGACY = "pagefind"
"""Where earlier versions (Pagefind) kept the index: removed from a site they made."""


@dataclass(slots=True, frozen=True)
class BundleJob:
    """One bundle to write."""

    ident: str
    """Its folder under ``search/``."""
    members: tuple[tuple[str, str], ...] | None
    """Its sessions: (folder, file in the sessions folder), by folder; None until the job
    is sent to be done (:attr:`PendingSearch.members` lists them then)."""
    digest: str
    """:func:`..staleness.bundle_members` of them."""
    index: int = 0
    """Its number among the bundles."""
    written: BundleState | None = None
    """What the last build recorded of the bundle's files (same index key and bundle
    count), or None: when its records hash to that version and its meta file is there, the
    files are as they would be made (:func:`..staleness.bundle_current`)."""


@dataclass(slots=True)
class PendingSearch:
    """What :func:`finish_search` needs to bring the search index up to date."""

    out_dir: Path
    """The site folder."""
    store: SearchStore
    """The search's cache."""
    state: SearchState
    """The state to save once the bundles are written (its ``pending`` are left to do)."""
    jobs: list[BundleJob]
    """The bundles to write."""
    bundles: list[str]
    """Every bundle of the index, in order."""
    numbers: list[int]
    """... and its number (:func:`..search.bundle.bundle_of`)."""
    folder: Path
    """The sessions folder (a session whose record is missing is read again)."""
    redactor: Redactor | None
    """Redaction, as in the render."""
    limits: PageLimits
    """How pages are cut, as in the render."""
    chunk_bytes: int
    doc_bytes: int
    workers: int
    """Processes at a time."""
    members: Callable[[int], list[tuple[str, str]]] | None = None
    """The sessions of bundle ``index``, asked as each job is sent, in the jobs' order
    (:meth:`MembersSpool.read`): a build holds a few bundles' sessions at a time, never
    the archive's (at 100,000 sessions, 21 MB held in the build process, and in every
    worker forked from it). None: each job holds its own (a deferred index: the catalog is
    closed by then)."""
    stale: list[str] = field(default_factory=list)
    """The kept records of sessions no longer published (:meth:`..catalog.Catalog.
    unpublished`), dropped once the bundles are written."""


def search_store(ctx: BuildContext) -> SearchStore:
    return SearchStore(ctx.cache.search)


def search(ctx: BuildContext, catalog: Catalog, lock: int | None = None) -> Searching:
    """Stage 6 begins: which bundles to write, asked of the catalog (not yet committed);
    their writing starts in worker processes, and goes on while the build makes the
    archive's pages (:meth:`Searching.finish` ends it: nothing of stage 5 is read here,
    what is published was settled by the plan and the render). A bundle's sessions are
    listed only when it is written again or when a session came into it or left it
    (:meth:`..catalog.Catalog.touched_lanes`), so an append lists one bundle, not the
    archive. ``lock``: the cache's lock, closed in the forked workers."""
    store = search_store(ctx)
    remove_legacy(ctx.out)
    if not ctx.options.search:
        remove_tree(ctx.out / FOLDER, ctx.out)
        store.clear()
        return Searching("off")
    tunables = ctx.tunables
    sessions, size = catalog.published_totals()
    count = bundle_count(
        sessions,
        size,
        tunables.sessions_per_bundle,
        tunables.bundle_bytes,
        tunables.max_bundles,
    )
    key = search_key(
        ctx.index_key, RECORD_FORMAT, tunables.search_chunk_bytes, tunables.search_doc_bytes
    )
    state = store.load()
    same_key = state.key == key and state.count == count
    # The bundles whose sessions may not be those the state recorded: every one, unless
    # the catalog is the one the state was saved beside (same build key, rows reused).
    reused = same_key and catalog.meta.key == ctx.key and not catalog.fresh
    touched = (
        {bundle_of(lane, count) for lane in catalog.touched_lanes()}
        if reused
        else set(range(count))
    )
    occupied = set(catalog.published_lanes(count))
    hit = {bundle_of(lane, count) for lane in catalog.rendered_lanes()}
    pending = set(state.pending) if same_key else set()
    with store.term_entries() as terms:
        kept = terms.kept_bundles() if same_key else set()
    site = ctx.out / FOLDER
    jobs: list[BundleJob] = []
    bundles: list[str] = []
    gone = False
    # The sessions of the bundles to write, spooled as each job is made (not asked again
    # as it is sent: the catalog is busy with the archive's pages by then).
    spool = None if ctx.options.defer_search else MembersSpool(store)
    for index in sorted(occupied):
        ident = bundle_id(index, count)
        bundles.append(ident)
        old = state.bundles.get(ident) if same_key else None
        members: list[tuple[str, str]] | None = None
        if index in touched or old is None:
            members = catalog.bundle_members(index, count)
            digest = bundle_members(folder for folder, _ in members)
        else:
            digest = old.members  # no session came or went
        gone = gone or (old is not None and old.members != digest)
        meta = site / ident / f"{old.meta}.js" if old is not None else None
        if search_stale(
            same_key=same_key,
            members_then=old.members if old is not None else None,
            members_now=digest,
            rendered=index in hit,
            pending=ident in pending,
            meta_present=partial(_is_file, meta),
            terms_kept=index in kept,
        ):
            if members is None:  # (the digest recorded with it is of what is written)
                members = catalog.bundle_members(index, count)
                digest = bundle_members(folder for folder, _ in members)
            if spool is None:
                jobs.append(BundleJob(ident, tuple(sorted(members)), digest, index, old))
            else:
                spool.add(index, members)
                jobs.append(BundleJob(ident, None, digest, index, old))
        del members
    if not same_key:
        state = SearchState(key=key, count=count)
        store.clear_terms()  # (before any worker keeps a bundle's entries)
    for ident in list(state.bundles):
        if ident not in bundles:
            gone = True
            del state.bundles[ident]
    state.pending = [job.ident for job in jobs]
    work = PendingSearch(
        out_dir=ctx.out,
        store=store,
        state=state,
        jobs=jobs,
        bundles=bundles,
        numbers=sorted(occupied),
        folder=ctx.folder,
        redactor=ctx.options.redactor,
        limits=PageLimits(tunables.page_turns, tunables.page_bytes),
        chunk_bytes=tunables.search_chunk_bytes,
        doc_bytes=tunables.search_doc_bytes,
        workers=ctx.workers,
        members=None if spool is None else spool.read,
        stale=catalog.unpublished(store.record_slugs()) if gone or not same_key else [],
    )
    if spool is None:
        store.save(state)  # what is left to write, should the caller stop first
        return Searching("pending", work)
    spool.rewind()
    inherited = (lock,) if lock is not None else ()
    return Searching("", work, start_writing(work, ctx.options.progress, inherited, spool))


@dataclass(slots=True)
class Searching:
    """Stage 6 under way (:func:`search`): ended by :meth:`finish`, or by :meth:`close`
    when the build stops first."""

    status: str
    """What the build report says of search when nothing is left to write here ("off";
    "pending": deferred, :attr:`work` left to :func:`finish_search`); "" while the bundles
    are being written."""
    work: PendingSearch | None = None
    """The bundles to write, and the state to save once they are."""
    writing: BundleWriting | None = None
    """Their writing, under way."""

    def finish(self) -> tuple[str, PendingSearch | None]:
        """Wait for the bundles, then write ``search/index.js`` and save the state; what
        the build report says of search, and the work left when deferred."""
        if self.writing is None:
            return self.status, self.work
        assert self.work is not None
        try:
            return complete_search(self.work, self.writing.results()), None
        finally:
            self.close()

    def close(self) -> None:
        """Stop the writing (the bundles in hand are finished first) and its workers."""
        if self.writing is not None:
            self.writing.close()
            self.writing = None


class MembersSpool:
    """The sessions of the bundles a build writes, asked of the catalog as the stage plans
    (the query that tells whether a bundle changed lists them) and kept in a scratch file
    of the cache (gone once closed, or with the process) until the jobs are sent, read
    back one bundle at a time in the jobs' order. What sends the jobs never asks the
    catalog (its connection is the build's, making the archive's pages meanwhile), and no
    process holds every bundle's sessions at once."""

    __slots__ = ("_file",)

    def __init__(self, store: SearchStore) -> None:
        self._file = store.scratch()

    def add(self, index: int, members: list[tuple[str, str]]) -> None:
        """Spool bundle ``index``'s sessions (the jobs' order: :meth:`read` asks them so)."""
        pickle.dump((index, members), self._file, pickle.HIGHEST_PROTOCOL)

    def rewind(self) -> None:
        """Done adding: reading starts at the first bundle."""
        self._file.flush()
        self._file.seek(0)

    def read(self, index: int) -> list[tuple[str, str]]:
        """The sessions of bundle ``index``: the next one spooled."""
        found, members = pickle.load(self._file)
        if found != index:
            raise RuntimeError(f"search: bundle {index} asked, {found} spooled next")
        return list(members)

    def close(self) -> None:
        self._file.close()


class BundleWriting:
    """Bundles being written: by a :class:`..pool.Crew` of worker processes (forked before
    the thread that feeds them exists), their jobs sent and their results taken by a thread
    of the build's process, so that the build goes on meanwhile (its archive pages: one
    core busy, the other free once the render's workers are gone). Below two workers or
    two bundles, nothing runs until :meth:`results`, which writes them in this process.

    A build killed meanwhile leaves no worker behind holding its lock: each closes its
    copy of ``inherited`` (the cache's lock) and stops once the build's process is gone."""

    __slots__ = ("_crew", "_error", "_progress", "_results", "_spool", "_stop", "_thread", "_work")

    def __init__(
        self,
        work: PendingSearch,
        progress: ProgressHook | None,
        inherited: tuple[int, ...],
        spool: MembersSpool | None,
    ) -> None:
        self._work = work
        self._progress = progress
        self._spool = spool
        self._results: list[Any] = [None] * len(work.jobs)
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._crew: Crew | None = None
        self._thread: threading.Thread | None = None
        _own_folder(work.out_dir)
        if work.workers < 2 or len(work.jobs) < 2:
            return
        self._crew = Crew(min(work.workers, len(work.jobs)), inherited)
        self._crew.start()
        self._thread = threading.Thread(target=self._feed, name="polyglav-search", daemon=True)
        self._thread.start()

    def _jobs(self) -> Iterator[tuple[Any, ...]]:
        for job in _sent(self._work):
            if self._stop.is_set():
                return  # closed before the end: the jobs in hand finish, no more are sent
            yield job

    def _feed(self) -> None:
        assert self._crew is not None

        def take(i: int, value: Any, _worker: int) -> None:
            self._results[i] = value

        try:
            self._crew.stream(
                _write_bundle,
                self._jobs(),
                total=len(self._work.jobs),
                progress=self._progress,
                stage="search",
                on_result=take,
            )
        except BaseException as exc:  # raised again by results(), in the build's thread
            self._error = exc

    def results(self) -> list[tuple[str, int, bool]]:
        """Each bundle's meta file, turn count and whether it was made, in the jobs'
        order, once all are written."""
        if self._thread is None:
            made, total = [], len(self._work.jobs)
            for done, job in enumerate(_sent(self._work), start=1):
                made.append(_write_bundle(*job))
                if self._progress:
                    self._progress("search", done, total)
            return made
        self._thread.join()
        if self._error is not None:
            raise self._error
        return list(self._results)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._crew is not None:
            self._crew.close()
        if self._spool is not None:
            self._spool.close()


def start_writing(
    work: PendingSearch,
    progress: ProgressHook | None = None,
    inherited: tuple[int, ...] = (),
    spool: MembersSpool | None = None,
) -> BundleWriting:
    """Start writing the bundles of ``work`` (:class:`BundleWriting`)."""
    return BundleWriting(work, progress, inherited, spool)


def finish_search(work: PendingSearch, progress: ProgressHook | None = None) -> str:
    """Write the bundles a deferred build left (:func:`search`), then ``search/index.js``;
    what the build report says."""
    writing = start_writing(work, progress)
    try:
        return complete_search(work, writing.results())
    finally:
        writing.close()


def _own_folder(out: Path) -> None:
    site = out / FOLDER
    if site.is_symlink() or (site.exists() and not site.is_dir()):
        site.unlink()  # a planted link or file: the folder is ours


def _sent(work: PendingSearch) -> Iterator[tuple[Any, ...]]:
    """The arguments of :func:`_write_bundle` for each job, in order, each with its
    sessions (spooled ones read as the job is sent)."""
    for job in work.jobs:
        if job.members is None:
            assert work.members is not None
            job = replace(job, members=tuple(sorted(work.members(job.index))))
        yield (
            job, work.state.key, work.store.root, work.folder, work.redactor, work.limits,
            work.doc_bytes, work.out_dir,
        )  # fmt: skip


def complete_search(work: PendingSearch, results: list[tuple[str, int, bool]]) -> str:
    """With every bundle written (``results``: :func:`_write_bundle`'s, in the jobs'
    order), write ``search/index.js``, remove what else is in ``search/`` and save the
    state; what the build report says."""
    out, state = work.out_dir, work.state
    built = 0
    for job, (meta, documents, made) in zip(work.jobs, results, strict=True):
        state.bundles[job.ident] = BundleState(job.digest, meta, documents)
        built += made
    listed = [
        ListedBundle(ident, state.bundles[ident].meta, number, state.bundles[ident].documents)
        for ident, number in zip(work.bundles, work.numbers, strict=True)
    ]
    publish_index(out, work.store, listed, work.chunk_bytes)
    state.pending = []
    work.store.save(state)
    work.store.keep_files(work.bundles)
    work.store.drop_records(work.stale)
    if not built:
        return "unchanged"
    return f"built {built}/{len(work.bundles)} bundles"


@dataclass(slots=True, frozen=True)
class ListedBundle:
    """A bundle as ``index.js`` lists it."""

    ident: str
    """Its folder under ``search/``."""
    meta: str
    """Its meta file's name (without ``.js``)."""
    number: int
    """Its number (:func:`..search.bundle.bundle_of`): the term chunks name it so."""
    documents: int
    """Its turns."""


def publish_index(
    out: Path, store: SearchStore, bundles: list[ListedBundle], chunk_bytes: int
) -> int:
    """With every bundle written and its term entries kept (``bundles``: every bundle of
    the index, in order), make the shared term chunks again where terms changed
    (:func:`..search.shared.update_chunks`; all of them when one is missing from the site),
    write ``search/index.js``, and remove what else is in ``search/`` and ``search/terms/``;
    how many term chunks the index has.

    The order survives a build killed at any point: the chunks, then ``index.js`` naming
    them, then the cache's record of them (which forgets the changes they were made for),
    then the removal of the old ones; killed before the record, the next build makes the
    same chunks from the same changes."""
    site = out / FOLDER
    chunks_folder = prepare_target(out, f"{FOLDER}/{TERMS}/{INDEX}.js").parent

    def emit(name: str, data: bytes) -> None:
        write_if_changed(chunks_folder / name, data)

    with store.term_entries() as terms:
        terms.keep_bundles(b.number for b in bundles)
        old = terms.chunks()
        if old and not all(_is_file(chunks_folder / f"{c.name}.js") for c in old):
            old = []  # a chunk went missing from the site: all are made again
        changed = terms.changed()
        chunks = update_chunks(old, changed, terms.rows_after, chunk_bytes, emit)
        data = {
            "format": BUNDLE_FORMAT,
            "documents": sum(b.documents for b in bundles),
            "weights": WEIGHTS,
            "bundles": [[b.ident, b.meta, b.number] for b in bundles],
            "terms": " ".join(separators(chunks)[1:]),
            "chunks": " ".join(c.name[len("t-") :] for c in chunks),
        }
        write_if_changed(
            prepare_target(out, f"{FOLDER}/{INDEX}.js"), script("", INDEX, INDEX, data)
        )
        if changed or chunks != old:  # (a build that changed no word writes nothing here)
            terms.save_chunks(chunks)
    keep = {f"{INDEX}.js", TERMS, *(b.ident for b in bundles)}
    with contextlib.suppress(FileNotFoundError):
        for entry in sorted(os.listdir(site)):
            if entry not in keep:
                remove_tree(site / entry, out)
    _remove_others(chunks_folder, out, {f"{c.name}.js" for c in chunks}.__contains__)
    return len(chunks)


class _Damaged(Exception):
    """A record read once could not be read again (its file changed or broke)."""

    def __init__(self, slug: str) -> None:
        super().__init__(slug)
        self.slug = slug


def _write_bundle(
    job: BundleJob,
    key: str,
    store_root: Path,
    folder: Path,
    redactor: Redactor | None,
    limits: PageLimits,
    doc_bytes: int,
    out: Path,
) -> tuple[str, int, bool]:
    """Write one bundle's files (those whose bytes changed), remove its others; its meta
    file's name, its turn count, and whether it was made (False: its files were current,
    :func:`..staleness.bundle_current`).

    Two passes over the records, one at a time: the first hashes their bytes (the version
    that names the bundle's files; a record the cache lost is made again from its session
    file), the second makes the files (:func:`..search.bundle.build_bundle`), each written
    as soon as it is made. A record that does not read in the second pass is made again and
    the bundle started over (once a record: one that fails again is left out)."""
    from ..search.bundle import build_bundle, bundle_version, version_name

    store = SearchStore(store_root)
    rel = f"{FOLDER}/{job.ident}"
    target = prepare_target(out, f"{rel}/{INDEX}.js").parent
    damaged: set[str] = set()  # did not read in the second pass: made again from their files
    tried: set[str] = set()  # made again once already
    given_up: set[str] = set()  # did not read even when made again: left out (the loop ends)
    while True:
        digest = bundle_version(key, job.ident, doc_bytes)
        present: list[str] = []
        for slug, file_name in job.members or ():
            if slug in given_up:
                continue
            data = None if slug in damaged else store.record_bytes(slug)
            if data is None:
                record = _record_again(folder, file_name, redactor, limits)
                if record is None or record.slug != slug:
                    continue  # no longer loads: its session is gone from the next build's index
                store.put_record(record)
                data = record.to_bytes()
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
            present.append(slug)
        tried |= damaged
        damaged = set()
        version = version_name(digest)
        written = job.written.meta if job.written is not None else None
        files = store.files(job.ident, f"m-{version}")
        meta = target / f"m-{version}.js"
        with store.term_entries() as kept:
            current = bundle_current(
                written,
                f"m-{version}",
                files is not None,
                partial(_is_file, meta),
                partial(_kept, kept, job.index, version),
            )
        if current:
            assert job.written is not None and files is not None
            _remove_others(target, out, set(files).__contains__)
            return job.written.meta, job.written.documents, False

        def records(slugs: list[str] = present) -> Iterator[SessionRecord]:
            for slug in slugs:
                record = store.record(slug)
                if record is None:
                    raise _Damaged(slug)
                yield record

        def emit(name: str, data: bytes) -> None:
            write_if_changed(target / name, data)

        def keep(entries: Iterator[tuple[bytes, str, str]], version: str = version) -> None:
            with store.term_entries() as kept:
                kept.replace_bundle(job.index, version, entries)

        try:
            made = build_bundle(
                job.ident,
                version,
                records(),
                emit,
                keep,
                doc_bytes=doc_bytes,
                scratch=store.scratch,
            )
        except _Damaged as exc:
            (given_up if exc.slug in tried else damaged).add(exc.slug)
            continue
        break
    store.put_files(job.ident, made.meta, made.files)
    _remove_others(target, out, set(made.files).__contains__)
    return made.meta, made.documents, True


def _kept(kept: TermEntries, bundle: int, version: str) -> bool:
    return kept.version(bundle) == version


def _remove_others(target: Path, out: Path, keep: Callable[[str], bool]) -> None:
    """Remove every entry of the bundle folder ``target`` not to ``keep``."""
    with contextlib.suppress(FileNotFoundError):
        for entry in os.listdir(target):
            if not keep(entry):
                remove_tree(target / entry, out)


def _record_again(
    folder: Path, file_name: str, redactor: Redactor | None, limits: PageLimits
) -> SessionRecord | None:
    """The record of a session whose record the cache lost, made from its file."""
    from ...loader import SessionLoadError

    try:
        prepared = prepare_file(folder / file_name, folder, redactor)
    except (SessionLoadError, OSError):
        return None
    return session_record(prepared.session, limits)


def _is_file(path: Path | None) -> bool:
    if path is None:
        return False
    try:
        return path.is_file() and not path.is_symlink()
    except OSError:
        return False


def remove_tree(path: Path, within: Path) -> None:
    """Remove ``path`` (a file, a link: only the link, or a folder) when it lies in
    ``within``."""
    try:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir() and is_inside(path, within):
            shutil.rmtree(path)
    except OSError as exc:
        raise WriteError(f"{path}: cannot remove ({exc.strerror or exc})") from exc


def remove_legacy(out: Path) -> None:
    """Remove the Pagefind index of an earlier version (``pagefind/``, with its listing)."""
    legacy = out / LEGACY
    if legacy.is_symlink() or (legacy / "shards.json").is_file():
        remove_tree(legacy, out)
