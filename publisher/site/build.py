"""Build the static site of an archive, incrementally.

The build follows mkdocs' rule, gather everything before writing:

1. **scan**: stat every ``*.json``; a file whose (size, mtime) and build key match the
   manifest is not read. A changed stamp is confirmed by a content hash before parsing.
2. **graph**: the per-session :class:`~.graph.Summary` of every file (cached in the
   manifest) gives parents, children and reference targets.
3. **render**: a session is rendered when its content, the build key (publisher version,
   theme files, options) or the facts its pages show (:class:`~.render.PageFacts`) changed,
   or one of its outputs is missing. Sessions render in a process pool; each is a pure
   function of its file, the theme and its facts. Turn fragments are cached by content.
4. **write**: files are written atomically and only when their bytes changed; outputs of
   deleted or renamed sessions are removed. The index and assets are refreshed from the
   cached summaries. Search (Pagefind) is reindexed per shard of sessions whose pages
   changed (:mod:`.search`).

The manifest and the fragment cache live in ``<out>/.polyglav/`` (not published content).
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..archive import ArchiveError
from ..loader import SessionLoadError, decode_session_bytes, file_stamp, parse_session_text
from ..model import LoadFailure, Session
from ..redact import Redactor, redact_session
from ..render.html import HtmlRenderer
from ..render.markup import iter_refs
from ..render.text import encode_display
from ..theme import Theme
from ..write import WriteError, is_inside, prepare_target, write_if_changed
from . import urls
from .fragments import SUFFIX as FRAGMENT_SUFFIX
from .fragments import FragmentFile, FragmentWriter
from .graph import Graph, Summary
from .index import INDEX_CACHE, IndexCache, render_index
from .manifest import FORMAT as MANIFEST_FORMAT
from .manifest import Manifest, SourceState, save_manifest
from .memory import freeze_long_lived, return_large_blocks, thaw
from .render import PageFacts, render_session_pages
from .search import remove_search, update_search

STATE_DIR = ".polyglav"
MANIFEST = "manifest.jsonl"
#: Build state files that earlier versions wrote and this one does not use.
LEGACY_STATE = ("manifest.json", "index-rows.json")
#: Files modified this close to the previous scan are reread (their stamp may be stale).
RACY_NS = 2_000_000_000

ProgressHook = Callable[[str, int, int], None]
HoldHook = Callable[[str, str], bool]


@dataclass(slots=True)
class BuildOptions:
    """What to build and how."""

    sessions_dir: Path
    """The sessions folder (read only)."""
    out_dir: Path
    """The site folder."""
    theme: str | None = None
    """Built-in theme name or a theme folder; None for default."""
    search: bool = True
    """Build the Pagefind search index when Pagefind is installed."""
    workers: int | None = None
    """Worker processes for rendering; None for every core, 1 to render in-process."""
    progress: ProgressHook | None = None
    """Called with (stage, done, total) as work proceeds."""
    hold: HoldHook | None = None
    """Called with (file name, reason) when a file whose pages were built no longer loads
    (an agent may be rewriting it); True keeps its last good pages and cached summary, and
    the next build reads the file again. None: it is a failure like any other."""
    redactor: Redactor | None = None
    """Redact secrets before anything is rendered (``--redact``)."""
    defer_search: bool = False
    """Leave re-indexing the search to the caller (:func:`finish_search` with
    :attr:`BuildReport.pending_search`): ``site watch`` reloads pages before it."""


@dataclass(slots=True)
class PendingSearch:
    """What :func:`finish_search` needs to bring the search index up to date."""

    out_dir: Path
    """The site folder."""
    produced: dict[str, str]
    """Every file of the site (path → sha256)."""
    workers: int
    """Pagefind runs at a time."""
    key: str
    """The build key."""


@dataclass(slots=True)
class BuildReport:
    """What a build did."""

    sessions: int = 0
    failures: list[LoadFailure] = field(default_factory=list)
    files_read: int = 0
    sessions_rendered: int = 0
    files_written: int = 0
    files_removed: int = 0
    search: str = "off"
    """``built N/M shards[, K removed]``, ``unchanged``, ``off`` or ``unavailable: …``."""
    warnings: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    """Every file of the site (path → sha256), as the manifest records them."""
    pending_search: PendingSearch | None = None
    """Set when ``defer_search`` left the search index to :func:`finish_search`."""
    held: list[LoadFailure] = field(default_factory=list)
    """Files that did not load but kept their last good pages (``BuildOptions.hold``)."""


# --------------------------------------------------------------------------------------
# Worker side: pure functions over one file.


def scan_file(
    path: Path,
    folder: Path,
    redactor: Redactor | None = None,
    keep: dict[str, tuple[Session, str | None, set[str]]] | None = None,
) -> tuple[str, SourceState]:
    """Read, hash and summarise one file (phase 1), redacted first when asked.

    ``keep`` receives the parsed session (with its redaction note and references) by file
    name, for a render in the same process to use instead of reading and parsing the file
    again.
    """
    size, mtime_ns = file_stamp(path)
    try:
        from ..loader import check_inside

        check_inside(path, folder)
        data = path.read_bytes()
    except SessionLoadError as exc:
        return path.name, SourceState(size, mtime_ns, "", None, exc.reason)
    except OSError as exc:
        return path.name, SourceState(
            size, mtime_ns, "", None, f"cannot read: {exc.strerror or exc}"
        )
    file_hash = hashlib.sha256(data).hexdigest()
    read_size = len(data)
    try:
        text = decode_session_bytes(data, path.name)
        del data  # not held while the JSON is parsed
        session = parse_session_text(text, path.name)
    except SessionLoadError as exc:
        return path.name, SourceState(read_size, mtime_ns, file_hash, None, exc.reason)
    del text
    redacted = 0
    note: str | None = None
    if redactor is not None:
        counter = redactor.fresh()
        session = redact_session(session, counter)
        redacted = counter.total
        note = counter.summary()
    refs = find_refs(session)
    if keep is not None:
        keep[path.name] = (session, note, refs)
    summary = Summary.of(session, redacted)
    return path.name, SourceState(
        size, mtime_ns, file_hash, summary, None, sorted(refs), digest=summary.digest()
    )


def find_refs(session: Session) -> set[str]:
    """Every ``#id`` / ``session:name`` reference written in the session's texts."""
    from ..model import CommandPart, TextualPart, ToolPart

    found: set[str] = set()

    def scan(text: str | None) -> None:
        if text and ("#" in text or "session:" in text):
            found.update(ref for _, _, ref in iter_refs(text))

    for turn in session.turns:
        for part in turn.parts:
            if isinstance(part, TextualPart):
                scan(part.text)
            elif isinstance(part, ToolPart):
                scan(part.output)
                scan(part.analysis)
            elif isinstance(part, CommandPart):
                scan(part.text)
                scan(part.summary)
    for error in session.errors:
        scan(error.message)
    return found


_WORKER: dict[str, Any] = {}
#: Sessions parsed by this build's scan, by file name, waiting for their render.
_KEPT: dict[str, tuple[Session, str | None, set[str]]] = {}
#: At most this many changed files are scanned in the build's own process (no pool).
IN_PROCESS_SCAN = 8
#: Their parsed sessions are kept for the render when the files total at most this, or
#: when there is only one (its render holds that session anyway).
KEEP_SCANNED_BYTES = 64 << 20
_RENDERERS: dict[tuple[tuple[Path, ...], str], HtmlRenderer] = {}


def renderer_for(theme: Theme) -> HtmlRenderer:
    """One renderer per theme state, kept for the life of the process (``site watch``
    rebuilds without recompiling templates); a changed theme file gives a new one."""
    key = (tuple(theme.dirs), theme.fingerprint())
    renderer = _RENDERERS.get(key)
    if renderer is None:
        _RENDERERS.clear()
        renderer = _RENDERERS[key] = HtmlRenderer(theme)
    return renderer


def _init_worker(
    graph: Graph, theme: Theme, out_dir: Path, folder: Path, redactor: Redactor | None
) -> None:
    return_large_blocks()
    _WORKER.update(
        graph=graph, renderer=renderer_for(theme), out_dir=out_dir, folder=folder, redactor=redactor
    )


RenderResult = tuple[str, dict[str, str], str, int, str | None]


def _render_job(file_name: str, previous_outputs: dict[str, str]) -> RenderResult:
    """Render one session and write its files; never raises for a bad session.

    Returns (file, outputs, facts_key, files written, error or None).
    """
    try:
        return _render(file_name, previous_outputs)
    except SessionLoadError as exc:
        return file_name, {}, "", 0, exc.reason
    except WriteError:
        raise  # the output is the problem (read-only, disk full): stop the build
    except Exception as exc:  # a renderer bug must not stop the whole build
        return file_name, {}, "", 0, f"could not be rendered: {type(exc).__name__}: {exc}"


def _render(file_name: str, previous_outputs: dict[str, str]) -> RenderResult:
    graph: Graph = _WORKER["graph"]
    renderer: HtmlRenderer = _WORKER["renderer"]
    out_dir: Path = _WORKER["out_dir"]
    from ..loader import read_session

    kept = _KEPT.pop(file_name, None)
    redaction: str | None = None
    if kept is not None:  # scanned in this process moments ago: the very bytes hashed
        session, redaction, refs = kept
    else:
        session = read_session(_WORKER["folder"] / file_name, _WORKER["folder"])
        if _WORKER["redactor"] is not None:
            counter: Redactor = _WORKER["redactor"].fresh()
            session = redact_session(session, counter)
            redaction = counter.summary()
        refs = find_refs(session)
    facts = PageFacts.from_graph(graph, session.session_name, refs)
    cache_rel = f"{STATE_DIR}/fragments/{urls.slug(session.session_name)}{FRAGMENT_SUFFIX}"
    # The old turn fragments are read one at a time, and the new ones spooled to the next
    # cache file as they are rendered: an appended turn is the only one rendered.
    cache = FragmentFile.open(out_dir / cache_rel)
    spool = FragmentWriter(prepare_target(out_dir, cache_rel))
    outputs: dict[str, str] = {}
    written = 0

    def write(rel: str, data: bytes) -> None:
        nonlocal written
        digest = hashlib.sha256(data).hexdigest()
        outputs[rel] = digest
        target = prepare_target(out_dir, rel)
        if previous_outputs.get(rel) == digest and target.is_file() and not target.is_symlink():
            return
        if write_if_changed(target, data):
            written += 1

    try:
        render_session_pages(renderer, session, facts, cache, redaction, sink=write, store=spool)
    except BaseException as exc:
        spool.abort()
        if isinstance(exc, Exception):
            # Pages already written for this render and unknown to the manifest would be
            # orphans: remove them (the caller lists the session as failed).
            for rel in outputs.keys() - previous_outputs.keys():
                with contextlib.suppress(OSError):
                    (out_dir / rel).unlink()
                    _remove_empty_parents((out_dir / rel).parent, out_dir)
        raise
    finally:
        if cache is not None:
            cache.close()
    del session
    with contextlib.suppress(WriteError):
        spool.commit()
    return file_name, dict(sorted(outputs.items())), facts.key(), written, None


# --------------------------------------------------------------------------------------
# Orchestration.


def build_key(theme: Theme, options: BuildOptions) -> str:
    digest = hashlib.sha256()
    digest.update(f"{__version__}\0{MANIFEST_FORMAT}\0{options.search}\0".encode())
    if options.redactor is not None:  # the values themselves never reach the manifest
        digest.update(
            b"redact\0" + "\0".join(options.redactor.values).encode("utf-8", "surrogatepass")
        )
    digest.update(theme.fingerprint().encode())
    return digest.hexdigest()


def _pool_map(
    workers: int,
    initargs: tuple[Any, ...],
    func: Callable[..., Any],
    jobs: list[tuple[Any, ...]],
    progress: ProgressHook | None,
    stage: str,
) -> list[Any]:
    results: list[Any] = []
    if not jobs:
        return results
    if workers <= 1 or len(jobs) < 2:
        if initargs:
            _init_worker(*initargs)
        for i, job in enumerate(jobs, start=1):
            results.append(func(*job))
            if progress:
                progress(stage, i, len(jobs))
        return results
    kwargs: dict[str, Any] = {"max_workers": min(workers, len(jobs))}
    if threading.active_count() > 1:
        # Forking a process with running threads (watch, serve) can deadlock a child on a
        # lock held by another thread: start workers from a clean server process instead.
        kwargs["mp_context"] = multiprocessing.get_context("forkserver")
    if initargs:
        kwargs.update(initializer=_init_worker, initargs=initargs)
    with ProcessPoolExecutor(**kwargs) as pool:
        futures = [pool.submit(func, *job) for job in jobs]
        for i, future in enumerate(futures, start=1):
            results.append(future.result())
            if progress:
                progress(stage, i, len(jobs))
    return results


def _scan_job(path: Path, folder: Path, redactor: Redactor | None) -> tuple[str, SourceState]:
    return_large_blocks()  # a pool worker (a forked one has it from the build already)
    return scan_file(path, folder, redactor)


def build_site(options: BuildOptions) -> BuildReport:
    """Build (or bring up to date) the site of ``options.sessions_dir`` in ``options.out_dir``."""
    try:
        return _build_site(options)
    finally:
        _KEPT.clear()  # sessions scanned but not rendered (failed, duplicate, held)
        thaw()


def _build_site(options: BuildOptions) -> BuildReport:
    return_large_blocks()
    folder, out_dir = options.sessions_dir, options.out_dir
    if not folder.is_dir():
        raise ArchiveError(f"{folder}: the sessions folder does not exist")
    if is_inside(out_dir, folder):
        raise ArchiveError(f"{out_dir}: refusing to write the site inside the sessions folder")
    theme = Theme.load(options.theme)
    workers = options.workers or os.cpu_count() or 1
    state_dir = out_dir / STATE_DIR
    manifest_path = state_dir / MANIFEST
    key = build_key(theme, options)
    manifest = Manifest.load(manifest_path)
    freeze_long_lived()  # the manifest's objects: no collection walks them again
    same_key = manifest.key == key
    # Cached summaries were made under the old key (e.g. without redaction): reread all.
    old_sources: dict[str, SourceState] = manifest.sources if same_key else {}
    report = BuildReport()
    if not same_key:
        # Turn fragments were rendered by another publisher version or theme.
        _remove_tree(state_dir / "fragments", out_dir)
        for legacy in LEGACY_STATE:  # state files of earlier publisher versions
            with contextlib.suppress(OSError):
                (state_dir / legacy).unlink()

    # 1. scan
    scan_started_ns = time.time_ns()
    # A stamp is trusted only when the file was already that old when the last build
    # scanned it; a file written within RACY_NS of that scan could have changed again in
    # the same mtime tick, so it is reread and its hash compared ("racy git").
    trusted_before = manifest.scanned_at_ns - RACY_NS
    with os.scandir(folder) as entries:
        names = sorted(
            e.name for e in entries if e.name.endswith(".json") and not e.name.startswith(".")
        )
    sources: dict[str, SourceState] = {}
    to_scan: list[tuple[Path, Path, Redactor | None]] = []
    folder_str = os.fspath(folder)  # plain strings: one stat per file, no Path objects
    for name in names:
        size, mtime_ns = file_stamp(f"{folder_str}/{name}")
        old = old_sources.get(name)
        if (
            old is not None
            and (old.size, old.mtime_ns) == (size, mtime_ns)
            and (size, mtime_ns) != (0, 0)
            and mtime_ns < trusted_before
        ):
            sources[name] = old
        else:
            to_scan.append((folder / name, folder, options.redactor))
    _KEPT.clear()
    if len(to_scan) > IN_PROCESS_SCAN:
        scanned = dict(_pool_map(workers, (), _scan_job, to_scan, options.progress, "read"))
    else:
        # A few changed files (an append): scanned here, and their parsed sessions kept
        # for the render (in this process, or a forked worker) instead of parsed again.
        # One file is always kept, however large: parsing it again for the render would
        # hold its bytes and text on top of the heap its first parse left (a 95 MB session:
        # 297 MB at peak against 220 MB kept), and cost a second parse.
        small = (
            len(to_scan) == 1 or sum(file_stamp(job[0])[0] for job in to_scan) <= KEEP_SCANNED_BYTES
        )
        scanned = {}
        for i, (path, folder_, redactor) in enumerate(to_scan, start=1):
            name, state = scan_file(path, folder_, redactor, _KEPT if small else None)
            scanned[name] = state
            if options.progress:
                options.progress("read", i, len(to_scan))
    report.files_read = len(scanned)
    # The sessions kept for the render too: collections in this process, and in workers
    # forked from it, need not walk them (a worker's walk would copy their pages).
    freeze_long_lived()
    held: set[str] = set()

    def keep_last_good(name: str, reason: str, size: int) -> bool:
        """Back to the last good state of ``name`` when ``options.hold`` asks for it."""
        old = old_sources.get(name)
        if old is None or old.summary is None or not old.outputs or options.hold is None:
            return False
        if not options.hold(name, reason):
            return False
        sources[name] = old  # its old stamp makes the next build read the file again
        held.add(name)
        report.held.append(LoadFailure(file_name=name, reason=reason, size=size))
        return True

    content_changed: set[str] = set()
    for name, state in scanned.items():
        if state.summary is None and keep_last_good(name, state.failure or "", state.size):
            continue
        old = old_sources.get(name)
        if (
            old is not None
            and old.sha256
            and old.sha256 == state.sha256
            and old.failure == state.failure
        ):
            # Touched but identical: keep what was rendered.
            state.facts_key, state.outputs = old.facts_key, old.outputs
        else:
            content_changed.add(name)
        sources[name] = state

    # 2. graph
    loaded_names: dict[str, str] = {}  # session name -> file name (first file wins)
    for name in names:
        summary = sources[name].summary
        if summary is not None:
            if summary.name in loaded_names:
                sources[name] = SourceState(
                    sources[name].size,
                    sources[name].mtime_ns,
                    sources[name].sha256,
                    None,
                    f"same session_name as {loaded_names[summary.name]}; not published twice",
                )
                continue
            loaded_names[summary.name] = name
    summaries: dict[str, Summary] = {}
    for session_name, file_name in loaded_names.items():
        summary = sources[file_name].summary
        assert summary is not None
        summaries[session_name] = summary
    graph = Graph(summaries=summaries, file_names=names)

    # 3. decide what to render
    graph_fingerprint = graph.fingerprint()
    # With the same graph, an unchanged session shows the same facts: no need to recompute.
    same_graph = same_key and manifest.graph == graph_fingerprint
    jobs: list[tuple[str, dict[str, str]]] = []
    out_root = os.fspath(out_dir)  # plain strings: a stat per output, no Path objects
    for name in names:
        state = sources[name]
        if state.summary is None:
            continue
        dirty = (
            not same_key
            or name in content_changed
            or (not same_graph and _facts_key_for(graph, state) != state.facts_key)
            or any(not os.path.isfile(f"{out_root}/{rel}") for rel in state.outputs)
        )
        if dirty and name in held:
            state.facts_key = ""  # cannot render it now: render it once it loads again
        elif dirty:
            jobs.append((name, state.outputs if same_key else {}))
    initargs = (graph, theme, out_dir, folder, options.redactor)
    results = _pool_map(workers, initargs, _render_job, jobs, options.progress, "render")
    for file_name, outputs, facts_key, written, error in results:
        state = sources[file_name]
        if error is not None and keep_last_good(file_name, error, state.size):
            continue
        if error is not None:
            # Changed between scan and render, or a renderer failure: list it, go on.
            state.summary, state.failure, state.outputs, state.sha256 = None, error, {}, ""
            continue
        state.outputs = outputs
        state.facts_key = facts_key
        report.files_written += written
    report.sessions_rendered = len(results)

    # 4. index, assets, removals
    for state in sources.values():
        if state.summary is not None and not state.digest:
            state.digest = state.summary.digest()
    produced: dict[str, str] = {}
    for state in sources.values():
        produced.update(state.outputs)
    renderer = renderer_for(theme)
    failures = [
        LoadFailure(file_name=n, reason=sources[n].failure or "", size=sources[n].size)
        for n in names
        if sources[n].summary is None
    ]
    report.failures = failures
    report.sessions = sum(1 for n in names if sources[n].summary is not None)
    report.warnings = [f"{f.file_name}: {f.reason}" for f in failures]
    search_available = options.search and _pagefind_available()
    redacted = sum(s.redacted for s in summaries.values()) if options.redactor is not None else None
    cache_path = state_dir / INDEX_CACHE
    index_cache = IndexCache.load(cache_path) if same_key else IndexCache()
    index_page, fresh_cache = render_index(
        renderer,
        graph,
        failures,
        folder,
        search_available,
        redacted,
        index_cache,
        graph_fingerprint,
        {state.summary.name: state.digest for state in sources.values() if state.summary},
    )
    index_html = encode_display(index_page)
    if (fresh_cache.graph, fresh_cache.rows.keys()) != (index_cache.graph, index_cache.rows.keys()):
        fresh_cache.save(prepare_target(out_dir, f"{STATE_DIR}/{INDEX_CACHE}"))
    extra_files: dict[str, bytes] = {"index.html": index_html}
    for rel, path in theme.assets().items():
        extra_files[f"assets/{rel}"] = path.read_bytes()
    old_outputs = manifest.outputs
    for rel, data in extra_files.items():
        digest = hashlib.sha256(data).hexdigest()
        produced[rel] = digest
        target = prepare_target(out_dir, rel)
        if old_outputs.get(rel) == digest and target.is_file() and not target.is_symlink():
            continue  # the same bytes as the last build wrote
        if write_if_changed(target, data):
            report.files_written += 1
    for rel in sorted(set(old_outputs) - set(produced)):
        target = out_dir / rel
        if is_inside(target, out_dir) and (target.is_file() or target.is_symlink()):
            target.unlink()
            report.files_removed += 1
            _remove_empty_parents(target.parent, out_dir)
    old_names = {s.summary.name for s in old_sources.values() if s.summary}
    stale_fragments = {urls.slug(n) for n in old_names - summaries.keys()}
    for slug in stale_fragments:
        with contextlib.suppress(OSError):
            (state_dir / "fragments" / f"{slug}{FRAGMENT_SUFFIX}").unlink()

    # 5. search (sharded: only the shards whose pages changed are indexed again)
    if not options.search:
        report.search = "off"
        remove_search(out_dir)
    elif not search_available:
        report.search = "unavailable: Pagefind is not installed (pip install 'pagefind[bin]')"
    elif options.defer_search:
        report.search = "pending"
        report.pending_search = PendingSearch(out_dir, dict(produced), workers, key)
    else:
        report.search = finish_search(
            PendingSearch(out_dir, produced, workers, key), options.progress
        )

    # 6. manifest
    save_manifest(
        prepare_target(out_dir, f"{STATE_DIR}/{MANIFEST}"),
        manifest,
        key=key,
        graph=graph_fingerprint,
        scanned_at_ns=scan_started_ns,
        publisher=__version__,
        sources={n: sources[n] for n in names},
        extra_outputs={rel: produced[rel] for rel in extra_files},
    )
    report.outputs = dict(sorted(produced.items()))
    return report


def finish_search(pending: PendingSearch, progress: ProgressHook | None = None) -> str:
    """Re-index the shards a deferred build changed; what the build summary would say."""
    return update_search(
        pending.out_dir,
        pending.produced,
        workers=pending.workers,
        key=pending.key,
        progress=progress,
    ).describe()


def _facts_key_for(graph: Graph, state: SourceState) -> str:
    """The facts key a session's pages would have now, from cached summaries only."""
    assert state.summary is not None
    return PageFacts.from_graph(graph, state.summary.name, set(state.refs)).key()


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and is_inside(folder, stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _remove_tree(folder: Path, out_dir: Path) -> None:
    if folder.is_dir() and not folder.is_symlink() and is_inside(folder, out_dir):
        import shutil

        shutil.rmtree(folder)


def _pagefind_available() -> bool:
    try:
        import pagefind_bin  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def iter_site_files(out_dir: Path) -> Iterable[Path]:
    """Every published file (the build state folder excluded), sorted."""
    for path in sorted(out_dir.rglob("*")):
        if path.is_file() and STATE_DIR not in path.relative_to(out_dir).parts[:1]:
            yield path
