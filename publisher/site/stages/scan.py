"""Stage 1, scan: what each session file is now, reading only the files that changed.

The folder is listed and every session file stat'ed into the catalog's scratch listing, and
one query finds the files whose stamp the catalog does not trust
(:data:`.staleness.UNTRUSTED_SQL`, :func:`.staleness.stamp_trusted`): only those are read,
hashed, prepared (:func:`publisher.prepare.prepare`: redaction, references, warnings) and
summarised, and their rows written into the catalog (the last build's kept aside for the
stages after: :meth:`..catalog.Catalog.keep_was`); a file with the same hash as before keeps
what it rendered. Files gone from the folder leave the catalog. Many changed files are
scanned in the build's worker processes (:class:`..pool.Crew`, or a Dask cluster's:
:mod:`..distributed`), each keeping the sessions it
prepared, within a budget, for the render stage to send there (:mod:`.worker`), and each
result is written as it comes back (a full build holds none of them); a few (an append) in
this process, and their prepared sessions are kept for the render stage. Either way a kept
session is not read and parsed again.

A file that rendered before and stops loading may keep its last good pages
(:class:`Holds`, asked through :attr:`.context.BuildOptions.hold`): ``site watch`` uses it
while an agent rewrites a file.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ...archive import Listed, listing_text
from ...loader import (
    SessionLoadError,
    check_inside,
    file_stamp,
    is_session_file,
    may_record_usage,
    parse_session_bytes,
    session_file_names,
)
from ...model import LoadFailure
from ...prepare import Prepared, prepare
from ...redact import RedactionRecord, Redactor
from ...render.console import listing_row, listing_warnings
from ...usage import Prices
from ..archive import event_states
from ..catalog import Catalog, SourceState
from ..context import BuildContext, HoldHook
from ..index import row_json
from ..pool import Crew, Runner, forking
from ..staleness import RACY_NS, archive_rows_key, seen_names, summary_key
from ..summary import Summary
from ..urls import PageLimits, row_slot
from . import worker


@dataclass(slots=True)
class Holds:
    """Files that stopped loading but keep their last good pages this build."""

    hook: HoldHook | None
    """Asked whether to hold a file; None holds nothing."""
    names: set[str] = field(default_factory=set)
    """The files held."""
    failures: list[LoadFailure] = field(default_factory=list)
    """Why each held file does not load now."""

    def hold(self, name: str, reason: str, size: int, *, had_pages: bool) -> bool:
        """True when ``name`` keeps its last good state (``had_pages``: it had one, with
        pages): its old stamp makes the next build read the file again."""
        if not had_pages or self.hook is None or not self.hook(name, reason):
            return False
        self.names.add(name)
        self.failures.append(LoadFailure(file_name=name, reason=reason, size=size))
        return True


@dataclass(slots=True)
class Scan:
    """What the scan found (the rest is in the catalog)."""

    holds: Holds
    """Files that keep their last good pages."""
    files_read: int
    """How many files were read."""
    kept: dict[str, Prepared]
    """Sessions prepared in this process, by file name, for the render to reuse."""
    homes: dict[str, int]
    """Sessions a worker of the build's crew prepared and keeps: file name → that worker."""
    records: dict[str, RedactionRecord]
    """With redaction on, what it replaced in each file read, by file name: the render
    redacts a file it reads again from it (:func:`...prepare.prepare_file`)."""
    started_ns: int
    """When the scan began: the next build's reference for racy stamps."""
    same_key: bool
    """The catalog was made under this build's key (its rows are reused)."""
    same_files: bool
    """No file came or went since the last build."""
    watched: bool = False
    """Only the files a watcher saw change were looked at (:attr:`..context.Warm.seen`)."""


def scan(ctx: BuildContext, catalog: Catalog, crew: Runner, seen: set[str] | None = None) -> Scan:
    """Stage 1 (see the module docstring). ``crew``: the build's worker processes, started
    here when many files are read (the render stage then uses them). ``seen``: the files a
    watcher saw change since its last build committed the catalog (None: every file is
    stat'ed)."""
    started_ns = time.time_ns()
    same_key = catalog.meta.key == ctx.key and not catalog.fresh
    warm = ctx.warm
    relist, warm.relist = warm.relist, True  # taken, as ``seen`` is
    folder = os.fspath(ctx.folder)
    racy = catalog.meta.scanned_at_ns - RACY_NS
    ahead = ctx.options.listing  # the stamps site build took ahead (taken below, or dropped)
    if ahead is not None and not same_key:
        ahead.close()  # every file is read: they are not needed, nor held meanwhile
    if seen is not None and same_key and not relist:
        # No file was created, deleted or moved: the catalog's files are the folder's, and
        # only those the watcher saw written are looked at.
        looked_at = seen_names(catalog.known(seen), seen)
        catalog.list_folder(_stamped(folder, looked_at))
        catalog.mark_to_read(untrusted_before=racy)
        gone: list[str] = []
        same_files = True
    elif seen is not None and same_key:
        names = session_file_names(folder)
        catalog.list_folder((name, -1, -1) for name in names)
        new = catalog.new_files()
        gone = catalog.gone_files()
        looked_at = sorted({*seen_names(names, seen), *new})
        del names
        catalog.list_folder(_stamped(folder, looked_at), keep=True)
        catalog.mark_to_read(untrusted_before=racy)
        same_files = not new and not gone
    else:
        # Every file is stat'ed (as the folder is listed, never all names held at once, or
        # by the child ``site build`` forked before its imports: the scan started then),
        # unless none of the catalog's rows can be reused: then every file is read.
        taken = ahead.take() if ahead is not None and same_key and ahead.folder == folder else None
        if ahead is not None and taken is not None:
            started_ns = min(started_ns, ahead.started_ns)
            catalog.list_folder(taken)
        else:
            catalog.list_folder(_stamped_all(folder) if same_key else _unstamped_all(folder))
        if same_key:
            catalog.mark_to_read(untrusted_before=racy)
        else:
            catalog.read_all_listed()
        # Every listed file with a row is trusted or to read, and the new ones are to read:
        # when the listed files with a row are as many as the rows, none went.
        listed, new_count = catalog.listed_files()
        known = listed - new_count
        gone = [] if known == catalog.meta.files else catalog.gone_files()
        same_files = same_key and not gone and not new_count
    if ahead is not None:
        ahead.close()  # not held while the files are read (at 100,000 files, 8 MB of names)
    for name in gone:
        catalog.drop(name)
    holds = Holds(ctx.options.hold)
    records: dict[str, RedactionRecord] = {}
    kept, homes, files_read = _read(ctx, catalog, crew, holds, same_key, records)
    return Scan(
        holds,
        files_read,
        kept,
        homes,
        records,
        started_ns,
        same_key,
        same_files,
        seen is not None,
    )


def _unstamped_all(folder: str) -> Iterator[tuple[str, int, int]]:
    """Every session file of ``folder`` as it is listed (not stat'ed)."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if is_session_file(entry.name):
                    yield entry.name, -1, -1
    except OSError:
        return


def _stamped_all(folder: str) -> Iterator[tuple[str, int, int]]:
    """Every session file of ``folder`` with its stamp (size, mtime_ns; (0, 0) when it
    cannot be stat'ed), one ``stat`` each relative to the folder: the pass every build
    that may trust a stamp pays a file, kept tight."""
    yield from _stamped(folder, session_file_names(folder))


def _stamped(folder: str, names: Iterable[str]) -> Iterator[tuple[str, int, int]]:
    """``names`` of ``folder`` with their stamps (:func:`_stamped_all`)."""
    if os.stat not in os.supports_dir_fd:
        for name in names:
            size, mtime = file_stamp(os.path.join(folder, name))
            yield name, size, mtime
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        for name in names:
            yield name, 0, 0
        return
    stat = partial(os.stat, dir_fd=fd)
    try:
        for name in names:
            try:
                st = stat(name)
            except OSError:
                yield name, 0, 0
                continue
            yield name, st.st_size, st.st_mtime_ns
    finally:
        os.close(fd)


def _read(
    ctx: BuildContext,
    catalog: Catalog,
    crew: Runner,
    holds: Holds,
    same_key: bool,
    records: dict[str, RedactionRecord],
) -> tuple[dict[str, Prepared], dict[str, int], int]:
    """Scan the files to read and write their rows: in the crew when there are many (each
    worker keeps what fits of what it prepared: the second result says where), else here,
    keeping the sessions. Returns those kept here, those kept by a worker, and how many
    files were read; ``records`` gets what redaction replaced in each file read (when
    on)."""
    folder, redactor, tunables = ctx.folder, ctx.options.redactor, ctx.tunables
    progress = ctx.options.progress
    limits = PageLimits(tunables.page_turns, tunables.page_bytes)
    count = catalog.to_read_count()
    kept: dict[str, Prepared] = {}
    homes: dict[str, int] = {}
    if count > tunables.in_process_scan and crew.workers > 1:
        if not crew.started:
            start_crew(ctx, crew, {}, catalog.spread("to_read", PRICE_HINT_FILES))

        def jobs() -> Iterator[tuple[Path, Path, Redactor | None, PageLimits]]:
            for name in catalog.to_read():
                yield (folder / name, folder, redactor, limits)

        def take(
            i: int,
            result: tuple[str, SourceState, bool, RedactionRecord | None],
            worker_index: int,
        ) -> None:
            name, state, was_kept, record = result
            if not _settle(catalog, holds, name, state, same_key):
                return
            if was_kept:
                homes[name] = worker_index
            if record is not None:
                records[name] = record

        crew.stream(_scan_job, jobs(), total=count, progress=progress, stage="read", on_result=take)
        return kept, homes, count
    # A few changed files (an append): scanned here, and their prepared sessions kept for
    # the render instead of parsed again. One file is always kept, however large: parsing
    # it again would hold its bytes and text on top of the heap its first parse left (a
    # 95 MB session: 297 MB at peak against 220 MB kept), and cost a second parse.
    to_read = list(catalog.to_read()) if count <= tunables.in_process_scan else None
    few = to_read is not None
    keep_all = count == 1 or (
        to_read is not None
        and sum(file_stamp(folder / name)[0] for name in to_read) <= tunables.keep_scanned_bytes
    )
    # Many files in one process (``workers=1``): what fits the budget of a crew worker.
    budget = worker.Kept(0 if few else tunables.worker_keep_bytes, tunables.worker_keep_min_bytes)
    names = to_read if to_read is not None else catalog.to_read()
    for done, name in enumerate(names, start=1):
        state, prepared = scan_file(folder / name, folder, redactor, limits, ctx.options.prices)
        if _settle(catalog, holds, name, state, same_key) and prepared is not None:
            if keep_all or budget.keep(name, prepared, state.size):
                kept[name] = prepared
            if prepared.record is not None:
                records[name] = prepared.record
        if progress:
            progress("read", done, count)
    return kept, homes, count


def _settle(catalog: Catalog, holds: Holds, name: str, state: SourceState, same_key: bool) -> bool:
    """Write the row of a file just scanned; False when it keeps its last good state
    instead (:class:`Holds`)."""
    old = catalog.brief(name) if same_key else None
    if state.summary is None and old is not None:
        had_pages = old.loaded and catalog.has_outputs(name)
        if holds.hold(name, state.failure or "", state.size, had_pages=had_pages):
            return False
    if (
        old is not None
        and old.sha256
        and old.sha256 == state.sha256
        and old.failure == state.failure
    ):
        # Touched but identical: keep what was rendered.
        catalog.put(name, state, scanned=0, facts_key=old.facts_key, site=old.site)
    else:
        catalog.put(name, state, scanned=catalog.gen)
    return True


PRICE_HINT_FILES = 16
"""How many of the files a crew will read are looked at (their first bytes) for usage
before it starts (:func:`start_crew`)."""


def start_crew(
    ctx: BuildContext, crew: Runner, kept: dict[str, Prepared], hints: Sequence[str] = ()
) -> None:
    """Start the build's worker processes (:func:`.worker.start` in each): forked ones get
    the build's renderer and ``kept`` as they are; clean ones (``forkserver``, a Dask
    cluster's) compile the theme and read those sessions again: each would unpickle every
    kept session and render only its share of them (a Dask cluster's would get them through
    its scheduler: up to :attr:`..context.Tunables.keep_scanned_bytes`). Every one gets the
    build's price table. When local workers will be forked and some of ``hints`` (files
    they will read, :data:`PRICE_HINT_FILES` of them spread over the list:
    :meth:`.catalog.Catalog.spread`) may record usage, the shipped price table is imported
    here first, once, for all of them (each would import it, about 0.3 s of CPU)."""
    keep = (ctx.tunables.worker_keep_bytes, ctx.tunables.worker_keep_min_bytes)
    prices = ctx.options.prices
    if (
        prices.uses_shipped
        and isinstance(crew, Crew)
        and forking()
        and any(may_record_usage(ctx.folder / name) for name in hints)
    ):
        prices.load_shipped()
    crew.start(
        worker.start,
        lambda forked: (keep, ctx.renderer, kept, prices) if forked else (keep, None, {}, prices),
    )


def _scan_job(
    path: Path, folder: Path, redactor: Redactor | None, limits: PageLimits
) -> tuple[str, SourceState, bool, RedactionRecord | None]:
    """A crew worker scans one file and keeps its prepared session if it fits; True when
    kept. And the record of what redaction replaced in it (if on): another worker may
    read it again, as the previous run of the series of a session it renders."""
    here = worker.here()
    assert here is not None, "a scan job runs in a crew"
    state, prepared = scan_file(path, folder, redactor, limits, here.prices)
    kept = prepared is not None and here.kept.keep(path.name, prepared, state.size)
    record = prepared.record if prepared is not None else None
    return path.name, state, kept, record


def scan_file(
    path: Path,
    folder: Path,
    redactor: Redactor | None,
    limits: PageLimits | None = None,
    prices: Prices | None = None,
) -> tuple[SourceState, Prepared | None]:
    """Read, hash, prepare and summarise one file; its state, and the prepared session
    when it loads (``limits``: how its pages are cut; ``prices``: the table its usage is
    priced with, the shipped one when None)."""
    size, mtime_ns = file_stamp(path)
    try:
        check_inside(path, folder)
        data = path.read_bytes()
    except SessionLoadError as exc:
        return _failed(path, size, mtime_ns, "", exc.reason, redactor), None
    except OSError as exc:
        reason = f"cannot read: {exc.strerror or exc}"
        return _failed(path, size, mtime_ns, "", reason, redactor), None
    file_hash = hashlib.sha256(data).hexdigest()
    read_size = len(data)
    try:
        session = parse_session_bytes(data, path.name)
    except SessionLoadError as exc:
        return _failed(path, read_size, mtime_ns, file_hash, exc.reason, redactor), None
    del data
    shown = None if redactor is not None else Listed.of(session)
    prepared = prepare(session, redactor, file_hash)
    return state_of(prepared, size, mtime_ns, file_hash, limits, shown, prices), prepared


def _failed(
    path: Path, size: int, mtime_ns: int, file_hash: str, reason: str, redactor: Redactor | None
) -> SourceState:
    """The state of a file that does not load (why, and what the listing shows of it)."""
    shown = (
        None if redactor is not None else Listed(path.name, failure=LoadFailure(path.name, reason))
    )
    return SourceState(size, mtime_ns, file_hash, None, reason, **_listing(shown))


def _listing(shown: Listed | None) -> dict[str, Any]:
    """What ``polyglav sessions`` shows and tells of a file (``shown``: the file as it is,
    None when the build redacts: not kept then)."""
    if shown is None:
        return {}
    return {"listing": listing_text(listing_row(shown)), "told": tuple(listing_warnings(shown))}


def state_of(
    prepared: Prepared,
    size: int,
    mtime_ns: int,
    file_hash: str,
    limits: PageLimits | None,
    shown: Listed | None = None,
    prices: Prices | None = None,
) -> SourceState:
    """The state of a session file that loads (its summary and what the catalog keeps of
    it: keys, shard slot, index row data, archive rows; ``shown``: the session as the file
    holds it, for ``polyglav sessions``; ``prices``: the table its usage is priced with,
    the shipped one when None)."""
    summary = Summary.of(prepared.session, prepared.redacted_total, limits, prices)
    return SourceState(
        size,
        mtime_ns,
        file_hash,
        summary,
        None,
        tuple(sorted(prepared.refs)),
        tuple(prepared.warnings),
        digest=summary_key(summary),
        events_key=archive_rows_key(summary),
        slot=row_slot(summary.name),
        row=row_json(summary),
        events=event_states(summary),
        **_listing(shown),
    )
