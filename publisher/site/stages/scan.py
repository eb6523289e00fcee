"""Stage 1, scan: what each session file is now, reading only the files that changed.

Every session file is stat'ed (:func:`.staleness.untrusted_stamps`). A file whose stamp the
manifest trusts (:func:`.staleness.stamp_trusted`) keeps its recorded state and is not read. The others
are read, hashed, prepared (:func:`publisher.prepare.prepare`: redaction, references,
warnings) and summarised; a file with the same hash as before keeps what it rendered. Many
changed files are scanned in the build's worker processes (:class:`..pool.Crew`), each
keeping the sessions it prepared, within a budget, for the render stage to send there
(:mod:`.worker`); a few (an append) in this process, and their prepared sessions are kept
for the render stage. Either way a kept session is not read and parsed again.

A file that rendered before and stops loading may keep its last good pages
(:class:`Holds`, asked through :attr:`.context.BuildOptions.hold`): ``site watch`` uses it
while an agent rewrites a file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...loader import (
    SessionLoadError,
    check_inside,
    decode_session_bytes,
    file_stamp,
    parse_session_text,
    session_file_names,
)
from ...model import LoadFailure
from ...prepare import Prepared, prepare
from ...redact import RedactionRecord, Redactor
from ..context import BuildContext, HoldHook
from ..graph import Summary
from ..index import row_slot
from ..manifest import Manifest, Sources, SourceState, States
from ..memory import Freezer
from ..pool import Crew
from ..staleness import archive_rows_key, summary_key, untrusted_stamps
from ..urls import PageLimits
from . import worker
from .state import shard_count


@dataclass(slots=True)
class Holds:
    """Files that stopped loading but keep their last good pages this build."""

    previous: Mapping[str, SourceState]
    """The last build's states (the ones to go back to)."""
    hook: HoldHook | None
    """Asked whether to hold a file; None holds nothing."""
    names: set[str] = field(default_factory=set)
    """The files held."""
    failures: list[LoadFailure] = field(default_factory=list)
    """Why each held file does not load now."""

    def hold(self, name: str, reason: str, size: int) -> SourceState | None:
        """The last good state of ``name`` when it is held (its old stamp makes the next
        build read the file again), else None."""
        old = self.previous.get(name)
        if old is None or old.summary is None or not old.outputs or self.hook is None:
            return None
        if not self.hook(name, reason):
            return None
        self.names.add(name)
        self.failures.append(LoadFailure(file_name=name, reason=reason, size=size))
        return old


@dataclass(slots=True)
class Scan:
    """What the scan found."""

    names: list[str]
    """Every session file of the folder, sorted."""
    sources: Sources
    """Each file's state for this build (unchanged files keep the manifest's, unmodified,
    and not decoded)."""
    changed: set[str]
    """Files whose content differs from what the last build rendered (or that are new)."""
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
    watched: bool = False
    """Only the files a watcher saw change were looked at (:attr:`..context.Warm.seen`)."""


def scan(
    ctx: BuildContext,
    previous: Manifest,
    freezer: Freezer,
    crew: Crew,
    seen: set[str] | None = None,
) -> Scan:
    """Stage 1 (see the module docstring). ``crew``: the build's worker processes, started
    here when many files are read (the render stage then uses them). ``seen``: the files a
    watcher saw change since ``previous`` was made (None: every file is stat'ed)."""
    started_ns = time.time_ns()
    same_key = previous.key == ctx.key
    # States made under another key (e.g. without redaction) are not reused.
    old: States = previous.sources if same_key else States({}, count=previous.sources.count)
    briefs = old.briefs
    # A watcher that saw no file created, deleted or moved: the last build's listing,
    # whose every file has a brief (when the key is the same), and only the files it saw
    # written are looked at.
    warm = ctx.warm
    listing = warm.listing if not warm.relist else None
    warm.relist = True  # taken, as ``seen`` is: a caller sets both before each build
    known: frozenset[str] | None = None
    if seen is None or listing is None:
        names = session_file_names(ctx.folder)
        looked_at = names
    else:
        names, known = listing
        looked_at = sorted(seen & known) if same_key else names
    if not briefs:
        # Nothing to reuse: the briefs made this build are made for the shard count the
        # save uses when every file loads (it moves them otherwise), not moved all at once.
        old = States({}, count=shard_count(ctx, len(names)))
    # (When the key is the same, the last manifest's sources are a kept listing's.)
    sources = Sources(names, old, known=known, same_names=known is not None and same_key)
    warm.listing = (names, sources.known)
    # The state of an unchanged file stays in the manifest, not even decoded.
    to_read = untrusted_stamps(
        os.fspath(ctx.folder), looked_at, briefs, previous.scanned_at_ns, seen
    )
    scanned, kept, homes, records = _read(ctx, to_read, crew)
    freezer.freeze()  # the kept sessions too: later collections need not walk them
    holds = Holds(old, ctx.options.hold)
    changed: set[str] = set()
    for name, state in scanned.items():
        if state.summary is None:
            held = holds.hold(name, state.failure or "", state.size)
            if held is not None:
                sources[name] = held
                kept.pop(name, None)
                homes.pop(name, None)
                records.pop(name, None)
                continue
        before = old.get(name)
        if (
            before is not None
            and before.sha256
            and before.sha256 == state.sha256
            and before.failure == state.failure
        ):
            # Touched but identical: keep what was rendered.
            state = dataclasses.replace(
                state, facts_key=before.facts_key, outputs=before.outputs, site=before.site
            )
        else:
            changed.add(name)
        sources[name] = state
    return Scan(
        names,
        sources,
        changed,
        holds,
        len(scanned),
        kept,
        homes,
        records,
        started_ns,
        seen is not None,
    )


def _read(
    ctx: BuildContext, names: list[str], crew: Crew
) -> tuple[dict[str, SourceState], dict[str, Prepared], dict[str, int], dict[str, RedactionRecord]]:
    """Scan ``names``: in the crew when there are many (each worker keeps what fits of
    what it prepared: the third result says where), else here, keeping the sessions."""
    folder, redactor, tunables = ctx.folder, ctx.options.redactor, ctx.tunables
    progress = ctx.options.progress
    if len(names) > tunables.in_process_scan and ctx.workers > 1:
        limits = PageLimits(tunables.page_turns, tunables.page_bytes)
        jobs = [(folder / name, folder, redactor, limits) for name in names]
        if not crew.started:
            start_crew(ctx, crew, {})
        results, ran_on = crew.run(_scan_job, jobs, progress=progress, stage="read")
        homes = {name: w for (name, _, kept, _), w in zip(results, ran_on, strict=True) if kept}
        found = {name: record for name, _, _, record in results if record is not None}
        return {name: state for name, state, _, _ in results}, {}, homes, found
    # A few changed files (an append): scanned here, and their prepared sessions kept for
    # the render instead of parsed again. One file is always kept, however large: parsing
    # it again would hold its bytes and text on top of the heap its first parse left (a
    # 95 MB session: 297 MB at peak against 220 MB kept), and cost a second parse.
    few = len(names) <= tunables.in_process_scan
    keep_all = len(names) == 1 or (
        few and sum(file_stamp(folder / name)[0] for name in names) <= tunables.keep_scanned_bytes
    )
    # Many files in one process (``workers=1``): what fits the budget of a crew worker.
    budget = worker.Kept(0 if few else tunables.worker_keep_bytes, tunables.worker_keep_min_bytes)
    scanned: dict[str, SourceState] = {}
    kept: dict[str, Prepared] = {}
    records: dict[str, RedactionRecord] = {}
    for done, name in enumerate(names, start=1):
        state, prepared = scan_file(
            folder / name, folder, redactor, PageLimits(tunables.page_turns, tunables.page_bytes)
        )
        scanned[name] = state
        if prepared is not None and (keep_all or budget.keep(name, prepared, state.size)):
            kept[name] = prepared
        if prepared is not None and prepared.record is not None:
            records[name] = prepared.record
        if progress:
            progress("read", done, len(names))
    return scanned, kept, {}, records


def start_crew(ctx: BuildContext, crew: Crew, kept: dict[str, Prepared]) -> None:
    """Start the build's worker processes (:func:`.worker.start` in each): forked ones get
    the build's renderer and ``kept`` as they are; clean ones compile the theme, and get
    ``kept`` pickled."""
    keep = (ctx.tunables.worker_keep_bytes, ctx.tunables.worker_keep_min_bytes)
    crew.start(worker.start, lambda forked: (keep, ctx.renderer if forked else None, kept))


def _scan_job(
    path: Path, folder: Path, redactor: Redactor | None, limits: PageLimits
) -> tuple[str, SourceState, bool, RedactionRecord | None]:
    """A crew worker scans one file and keeps its prepared session if it fits; True when
    kept. And the record of what redaction replaced in it (if on): another worker may
    read it again, as the previous run of the series of a session it renders."""
    state, prepared = scan_file(path, folder, redactor, limits)
    here = worker.here()
    kept = (
        prepared is not None
        and here is not None
        and here.kept.keep(path.name, prepared, state.size)
    )
    record = prepared.record if prepared is not None else None
    return path.name, state, kept, record


def scan_file(
    path: Path, folder: Path, redactor: Redactor | None, limits: PageLimits | None = None
) -> tuple[SourceState, Prepared | None]:
    """Read, hash, prepare and summarise one file; its state, and the prepared session
    when it loads (``limits``: how its pages are cut)."""
    size, mtime_ns = file_stamp(path)
    try:
        check_inside(path, folder)
        data = path.read_bytes()
    except SessionLoadError as exc:
        return SourceState(size, mtime_ns, "", None, exc.reason), None
    except OSError as exc:
        return SourceState(size, mtime_ns, "", None, f"cannot read: {exc.strerror or exc}"), None
    file_hash = hashlib.sha256(data).hexdigest()
    read_size = len(data)
    try:
        text = decode_session_bytes(data, path.name)
        del data  # not held while the JSON is parsed
        session = parse_session_text(text, path.name)
    except SessionLoadError as exc:
        return SourceState(read_size, mtime_ns, file_hash, None, exc.reason), None
    del text
    prepared = prepare(session, redactor, file_hash)
    summary = Summary.of(prepared.session, prepared.redacted_total, limits)
    state = SourceState(
        size,
        mtime_ns,
        file_hash,
        summary,
        None,
        sorted(prepared.refs),
        digest=summary_key(summary),
        warnings=list(prepared.warnings),
        events_key=archive_rows_key(summary),
        slot=row_slot(summary.name),
    )
    return state, prepared
