"""``polyglav site watch``: keep the site in step with a sessions folder that keeps changing.

One build first (incremental: unchanged files are only stat'ed), then a watchdog observer on
the sessions folder and the theme folders. Events are debounced: a build starts once the
quiet window has passed since the last event, or once a burst has lasted ``max_delay``. A
periodic rescan builds anyway, in case the OS dropped events (a build with nothing to do
only stats the files).

An agent rewrites its session file after every turn, often not atomically: a file that
stops loading keeps its last good pages (``BuildOptions.hold``) and is read again by the
next build, retried every ``retry_delay``; after ``hold_limit`` it is reported as a failure
like a fresh build would. A missing sessions folder pauses building (the site is left as
it is) and is watched again once it reappears. Build errors are logged and retried; they
never stop the loop. SIGINT (Ctrl-C) and SIGTERM stop it cleanly.

Builds run in the calling thread, which must be the main thread (signals are delivered
there; a first Ctrl-C lets a running build finish, a second one interrupts it); the
observer runs in its own threads.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from ..errors import describe
from ..loader import is_session_file
from ..theme import Theme
from .build import BuildOptions, BuildReport, PendingSearch, Warm, build_site, finish_search
from .context import CachePaths
from .lock import holding

ChangeHook = Callable[[list[str]], None]

#: How often the loop checks that the watched folders still exist (seconds).
ROOT_CHECK_INTERVAL = 0.25
#: Event kinds worth a build. Opened/closed-without-writing events (the build's own reads)
#: and directory-modified events are not subscribed to.
EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


@dataclass(slots=True)
class WatchOptions:
    """How to watch (the build itself is described by :class:`~.build.BuildOptions`)."""

    quiet_window: float = 0.3
    """Seconds without events before a build starts."""
    max_delay: float = 2.0
    """Longest a continuous burst of events may delay a build (seconds)."""
    rescan_interval: float = 5.0
    """Build at least this often (seconds), in case events were dropped, and check
    everything then (a page deleted by hand); longer on an archive whose full check is
    slow (:func:`rescan_interval`)."""
    retry_delay: float = 1.0
    """Build again this soon after a failed build or while a file keeps its last good page."""
    hold_limit: float = 30.0
    """How long a file that stopped loading keeps its last good page (seconds)."""
    quiet: bool = False
    """No line per build on stderr (warnings and errors are still written)."""
    on_change: ChangeHook | None = None
    """Called after each build that changed the site, with the changed site paths."""
    imports: list[ImportSource] = field(default_factory=list)
    """Other agents' log folders to follow: imported (``polyglav import``) into the
    sessions folder before each build, and watched like it."""


RESCAN_SHARE = 0.05
"""The most of the watcher's time its periodic full checks may take."""


def rescan_interval(configured: float, last_full_check: float) -> float:
    """Seconds between full checks: ``configured`` (:attr:`WatchOptions.rescan_interval`),
    or longer when the last one took ``last_full_check`` seconds, so that they take at most
    :data:`RESCAN_SHARE` of the time: an idle watcher of 20,000 sessions (0.4 s a check)
    does not spend 8 % of a core on them, nor one of 100,000 (2 s) 40 %."""
    return max(configured, last_full_check / RESCAN_SHARE)


@dataclass(frozen=True, slots=True)
class ImportSource:
    """An agent's log folder that ``site watch --import`` follows."""

    agent: str
    """``claude-code``, ``codex`` or ``aider``."""
    path: Path
    """Its logs (a folder or a file)."""

    @classmethod
    def parse(cls, spec: str) -> ImportSource:
        """``AGENT:PATH`` (``claude-code:~/.claude/projects/-home-me-app``); ValueError when
        it is not one."""
        from ..importers import FORMATS

        agent, sep, path = spec.partition(":")
        if not sep or not path:
            raise ValueError(f"--import {spec!r}: expected AGENT:PATH, e.g. claude-code:DIR")
        if agent not in FORMATS:
            known = ", ".join(FORMATS)
            raise ValueError(f"--import {spec!r}: unknown agent {agent!r} (one of {known})")
        return cls(agent, Path(os.path.expanduser(path)))


@dataclass(slots=True)
class Debouncer:
    """When a burst of events is due for a build: quiet window after the last, capped."""

    quiet_window: float
    max_delay: float
    first: float | None = None
    """When the pending burst started (None: nothing pending)."""
    last: float = 0.0
    """When its latest event happened."""

    def note(self, at: float) -> None:
        """Record an event that happened at ``at`` (a monotonic time)."""
        if self.first is None:
            self.first, self.last = at, at
        else:
            self.first, self.last = min(self.first, at), max(self.last, at)

    def due(self) -> float | None:
        """The time at which the pending burst should be built, or None."""
        if self.first is None:
            return None
        return min(self.last + self.quiet_window, self.first + self.max_delay)

    def clear(self) -> None:
        """Forget the pending burst (a build is starting)."""
        self.first = None


@dataclass(slots=True)
class HoldPolicy:
    """The ``BuildOptions.hold`` hook: keep a last good page for at most ``limit`` seconds."""

    limit: float
    clock: Callable[[], float] = time.monotonic
    since: dict[str, float] = field(default_factory=dict)
    """File name → when it was first seen not loading."""

    def __call__(self, file_name: str, reason: str) -> bool:
        """True (keep the last good page) until ``file_name`` has not loaded for ``limit``."""
        started = self.since.setdefault(file_name, self.clock())
        return self.clock() - started < self.limit

    def settle(self, held: Iterable[str]) -> None:
        """After a build: forget the files it did not hold (they load again, or were released)."""
        keep = set(held)
        self.since = {name: at for name, at in self.since.items() if name in keep}


@dataclass(frozen=True, slots=True)
class Change:
    """A relevant file-system event, passed from watchdog's thread to the loop."""

    at: float
    """When it was seen (monotonic)."""
    lost_root: Path | None = None
    """A watched folder that was itself deleted: its watch is dead and must be renewed."""
    paths: tuple[Path, ...] = ()
    """The paths it concerns (a move: both)."""
    relist: bool = False
    """A file was created, deleted or moved (a write alone leaves the listing as it was)."""


class _Forward(FileSystemEventHandler):
    """Queues a :class:`Change` for each event that concerns the site (runs in watchdog's thread)."""

    def __init__(
        self, root: Path, accept: Callable[[Path], bool], changes: queue.SimpleQueue[Change]
    ) -> None:
        self.root = root
        self.accept = accept
        self.changes = changes

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths = [Path(os.fsdecode(p)) for p in (event.src_path, event.dest_path) if p]
        now = time.monotonic()
        if isinstance(event, DirDeletedEvent) and self.root in paths:
            self.changes.put(Change(now, lost_root=self.root))
        elif any(self.accept(p) for p in paths):
            relist = event.event_type not in ("modified", "closed")
            self.changes.put(Change(now, paths=tuple(paths), relist=relist))


@dataclass(slots=True)
class _Root:
    """A watched folder and the state of its watch."""

    path: Path
    recursive: bool
    accept: Callable[[Path], bool]
    watch: ObservedWatch | None = None
    identity: tuple[int, int] | None = None
    """(device, inode) of the folder the watch was set on."""
    missing: bool = False
    """The folder was found missing (and said so)."""
    failure: str | None = None
    """Why the last attempt to watch it failed (said once)."""


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder at ``path``, None when there is none."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _any_file(path: Path) -> bool:
    return True


def _watched_folder(path: Path) -> Path:
    """The folder to watch for a followed log: itself, or the folder of a log file."""
    path = path.absolute()
    return path.parent if path.is_file() or path.suffix in (".md", ".jsonl") else path


def _log(line: str) -> None:
    """A line on stderr; the file names it holds (a hostile folder's) terminal-safe."""
    from ..render.text import terminal_safe

    print(f"polyglav: {terminal_safe(line)}", file=sys.stderr, flush=True)


def _summarise(changed: list[str], limit: int = 4) -> str:
    shown = ", ".join(changed[:limit])
    return f"{shown} and {len(changed) - limit} more" if len(changed) > limit else shown


class Watcher:
    """The watch loop over one site (see the module docstring)."""

    def __init__(self, options: BuildOptions, watch: WatchOptions, signals: StopSignals) -> None:
        self.signals = signals
        self.hold = HoldPolicy(watch.hold_limit)
        # Pages first: open pages reload before the search index is brought up to date.
        self.options = replace(options, hold=self.hold, defer_search=True)
        self.search_warning: str | None = None
        self.watch = watch
        self.changes: queue.SimpleQueue[Change] = queue.SimpleQueue()
        self.pending = Debouncer(watch.quiet_window, watch.max_delay)
        self.observer: BaseObserver = Observer()
        sessions = options.sessions_dir.absolute()
        out = options.out_dir.absolute()

        def in_sessions(path: Path) -> bool:
            return path.parent == sessions and is_session_file(path.name)

        def is_theme_file(path: Path) -> bool:
            return not path.is_relative_to(out)

        self.roots = (
            [_Root(sessions, False, in_sessions)]
            + [
                _Root(folder.absolute(), True, is_theme_file)
                for folder in Theme.load(options.theme).dirs
            ]
            + [_Root(_watched_folder(source.path), True, _any_file) for source in watch.imports]
        )
        self.warm = Warm()
        """Compiled templates and the last manifest, kept from build to build."""
        self.lock = CachePaths.of(options).lock
        """The cache's lock file, held over each rebuild (:mod:`.lock`)."""
        self.sessions = sessions
        self.seen: set[str] | None = None
        """Session files with events since the last build began (None: unknown, so the
        next build stats every file and checks every site folder)."""
        self.relist = True
        """Whether one of those events created, deleted or moved a file (:attr:`.Warm.relist`)."""
        self.next_full = 0.0
        self.interval = watch.rescan_interval
        """Seconds between full checks (:func:`rescan_interval`)."""
        """When a build next checks everything whatever the events said (the rescan)."""
        self.next_rescan = 0.0
        self.retry_at: float | None = None
        self.last_error: str | None = None
        self.builds = 0
        self.held: set[str] = set()
        self.warnings: set[str] = set()

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        """Build, then rebuild after every change until KeyboardInterrupt (not re-raised)."""
        self.observer.start()
        try:
            self._check_roots(time.monotonic())
            if not self.watch.quiet:
                _log(f"watching {self.roots[0].path} and the theme (Ctrl-C to stop)")
            with self.signals.deferred():
                self._build()
            while True:
                now = time.monotonic()
                deadlines = [
                    self.pending.due(),
                    self.retry_at,
                    self.next_rescan,
                    now + ROOT_CHECK_INTERVAL,
                ]
                self._drain(max(0.0, min(d for d in deadlines if d is not None) - now))
                now = time.monotonic()
                self._check_roots(now)
                due = self.pending.due()
                if (
                    (due is not None and due <= now)
                    or (self.retry_at is not None and self.retry_at <= now)
                    or self.next_rescan <= now
                ):
                    with self.signals.deferred():
                        self._build()
        except KeyboardInterrupt:
            pass
        finally:
            self.observer.stop()
            self.observer.join()

    def _drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` for events, then take every queued one."""
        try:
            change = self.changes.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            self.pending.note(change.at)
            if self.seen is not None:
                self.seen.update(p.name for p in change.paths if p.parent == self.sessions)
                self.relist = self.relist or change.relist
            for root in self.roots:
                if root.path == change.lost_root:
                    root.identity = None  # renewed by _check_roots
                    self.seen = None
            try:
                change = self.changes.get_nowait()
            except queue.Empty:
                return

    def _check_roots(self, now: float) -> None:
        """Drop the watch of a folder that disappeared; (re)watch one that (re)appeared."""
        for root in self.roots:
            identity = _identity(root.path)
            if identity is not None and identity == root.identity:
                continue
            if root.watch is not None:
                with contextlib.suppress(KeyError):
                    self.observer.unschedule(root.watch)
                root.watch, root.identity = None, None
            if identity is None:
                if not root.missing:
                    _log(f"warning: {root.path} does not exist; waiting for it")
                    root.missing = True
                continue
            try:
                root.watch = self.observer.schedule(
                    _Forward(root.path, root.accept, self.changes),
                    str(root.path),
                    recursive=root.recursive,
                    event_filter=EVENT_FILTER,
                )
            except OSError as exc:  # gone again, or out of inotify watches: retried
                reason = describe(exc)
                if reason != root.failure:
                    _log(f"warning: cannot watch {root.path}: {reason}")
                root.failure = reason
                continue
            if root.missing and not self.watch.quiet:
                _log(f"{root.path} is back; watching it again")
            root.identity, root.missing, root.failure = identity, False, None
            self.pending.note(now)
            self.seen = None  # what happened while it was not watched is unknown

    # -- one build ----------------------------------------------------------------------

    def _build(self) -> None:
        self.pending.clear()
        self.retry_at = None
        now = time.monotonic()
        self.next_rescan = now + self.interval
        # The events say which files to look at, except at a rescan (dropped events, a page
        # deleted by hand) and when followed logs are imported (their writes' events may
        # not have arrived yet). Files kept at their last good page are read again.
        seen, self.seen = self.seen, set()
        relist, self.relist = self.relist, False
        if seen is None or self.next_full <= now or self.watch.imports:
            seen = None
            self.next_full = now + self.interval
        else:
            seen |= self.held
        self.warm.seen, self.warm.relist = seen, relist or seen is None
        self._import()
        if not self.roots[0].path.is_dir():
            self.seen = None
            return  # said by _check_roots; built again once the folder is back
        try:
            # One writer at a time (:mod:`.lock`): held over the rebuild and its search
            # update, released between rebuilds so that a ``site build`` may run.
            with holding(self.lock, on_wait=self._waiting) as lock:
                self._rebuild(seen, now, lock)
        except Exception as exc:  # a build error must never stop the watch
            message = describe(exc)
            if message != self.last_error:
                _log(f"error: build failed: {message}; retrying")
            self.last_error = message
            self.retry_at = time.monotonic() + self.watch.retry_delay

    def _waiting(self, holder: int | None) -> None:
        who = f" (pid {holder})" if holder is not None else ""
        _log(f"waiting for another build of this site{who} to finish")

    def _rebuild(self, seen: set[str] | None, now: float, lock: int) -> None:
        """One build and what follows it (the report, the search update), holding the
        cache's ``lock``; a build error is raised."""
        started = time.perf_counter()
        report = build_site(self.options, self.warm, lock=lock)
        self.last_error = None
        elapsed = time.perf_counter() - started
        elapsed_ms = elapsed * 1000
        if seen is None and report.files_read == 0:
            # What a full check costs (one that read nothing): the next is due in proportion.
            self.interval = rescan_interval(self.watch.rescan_interval, elapsed)
            self.next_full = self.next_rescan = now + self.interval
        held = {f.file_name: f.reason for f in report.held}
        self.hold.settle(held)
        if held:
            self.retry_at = time.monotonic() + self.watch.retry_delay
        changed = report.changed
        self.builds += 1
        self._report(report, elapsed_ms, changed, held)
        if changed and self.watch.on_change is not None:
            self.watch.on_change(changed)
        if report.pending_search is not None:
            # The pages are written and open ones reloaded; search follows (the bundle of
            # the changed session is written again).
            self._finish_search(report.pending_search, bool(changed))

    def _import(self) -> None:
        """Bring the sessions of the followed agents' logs up to date (unchanged sources
        are skipped by stamp, so this is cheap when nothing changed)."""
        from ..importers import import_sources

        for source in self.watch.imports:
            if not source.path.exists():
                continue
            try:
                report = import_sources(
                    source.agent,
                    [source.path],
                    self.options.sessions_dir,
                    on_problem=lambda problem: _log(f"warning: {problem}"),
                )
            except Exception as exc:  # like a build error: logged, redone by the next build
                _log(f"error: import of {source.path} failed: {describe(exc)}; retrying")
                self.retry_at = time.monotonic() + self.watch.retry_delay
                continue
            if report.written and not self.watch.quiet:
                _log(f"[{time.strftime('%H:%M:%S')}] {report.summary()}")

    def _finish_search(self, pending: PendingSearch, changed: bool) -> None:
        started = time.perf_counter()
        try:
            result = finish_search(pending)
        except Exception as exc:  # like a build error: logged, redone by the next build
            message = describe(exc)
            _log(f"error: search index not updated: {message}; retrying")
            self.retry_at = time.monotonic() + self.watch.retry_delay
            return
        if result.startswith("unavailable"):
            if result != self.search_warning:
                _log(f"warning: search {result}")
            self.search_warning = result
            return
        self.search_warning = None
        if changed and not self.watch.quiet and result != "unchanged":
            elapsed_ms = (time.perf_counter() - started) * 1000
            _log(f"[{time.strftime('%H:%M:%S')}] search {result} in {elapsed_ms:.0f} ms")

    def _report(
        self, report: BuildReport, elapsed_ms: float, changed: list[str], held: dict[str, str]
    ) -> None:
        for name in sorted(held.keys() - self.held):
            _log(f"warning: {name} does not load yet ({held[name]}); keeping its last good page")
        self.held = set(held)
        for warning in sorted(set(report.warnings) - self.warnings):
            _log(f"warning: {warning}")
        self.warnings = set(report.warnings)
        if self.watch.quiet or (not changed and self.builds > 1):
            return
        stamp = time.strftime("%H:%M:%S")
        line = (
            f"[{stamp}] built in {elapsed_ms:.0f} ms: {report.sessions} sessions, "
            f"{report.sessions_rendered} rendered, {report.files_written} files written, "
            f"{report.files_removed} removed, search {report.search}"
        )
        _log(f"{line}; changed: {_summarise(changed)}" if changed else line)


class StopSignals:
    """SIGINT and SIGTERM as KeyboardInterrupt, held back while a build runs.

    A signal during :meth:`deferred` lets the build finish (a build stopped halfway leaves
    pages newer than the manifest and the index) and stops right after it; a second
    signal stops at once. Later signals are ignored while stopping.
    """

    def __init__(self) -> None:
        self.deferring = False
        self.requested = False
        self.raised = False
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.previous[sig] = signal.signal(sig, self.handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.raised:
            return
        if self.deferring and not self.requested:
            self.requested = True
            with contextlib.suppress(OSError):
                os.write(2, b"polyglav: stopping after this build (again to stop at once)\n")
            return
        self.raised = True
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold a first signal back until the block is done."""
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = False
        if self.requested and not self.raised:
            self.raised = True
            raise KeyboardInterrupt


def watch_site(options: BuildOptions, watch: WatchOptions) -> None:
    """Build the site, then rebuild it on every change until Ctrl-C or SIGTERM (then return).

    Call from the main thread. Raises :class:`~publisher.theme.ThemeError` for an unknown
    theme; every later error is logged and retried.
    """
    with StopSignals() as signals:
        Watcher(options, watch, signals).run()
