"""What a site build is given and what it carries from stage to stage.

- :class:`BuildOptions`: what the user asked for (the CLI fills it), and a
  :class:`Listing` of the folder ``site build`` may have started taking before the build.
- :class:`Tunables`: the sizes that shape the work (worker batches, pages, search shards),
  with documented defaults; tests and benchmarks pass their own instead of patching
  module constants.
- :class:`CachePaths`: where the build keeps its state. Never in the published folder:
  the site folder holds exactly what is published (a static host, a bucket sync or a CI
  artifact takes all of it), as Sphinx keeps ``_build/doctrees`` beside ``_build/html``.
- :class:`Warm`: what a long-running caller (``site watch``, ``site serve``) keeps from
  one build to the next: compiled templates, and what its watcher saw change. A plain
  ``site build`` starts cold. Nothing of a build lives in module globals, so two builds in
  one process share nothing by accident.
- :class:`BuildContext`: all of the above, resolved once at the start of a build.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..archive import ArchiveError
from ..theme import Theme
from ..usage import Prices
from ..write import is_inside
from . import staleness, urls

if TYPE_CHECKING:
    from ..redact import Redactor
    from ..render.html import HtmlRenderer
    from .lock import WaitHook

ProgressHook = Callable[[str, int, int], None]
"""Called with (stage, done, total) as work proceeds."""
HoldHook = Callable[[str, str], bool]
"""Called with (file name, reason) for a file that stopped loading; True keeps its pages."""


class Listing(Protocol):
    """A sessions folder's files with their stamps, taken before the build started
    (:class:`.pool.FolderStamps`)."""

    folder: str
    """The folder, as the build names it (:attr:`BuildContext.folder`)."""
    started_ns: int
    """The clock before the folder was listed (the scan that takes them started then)."""

    def take(self) -> Iterator[tuple[str, int, int]] | None:
        """Each file's (name, size, mtime_ns), once; None when taken or dropped before."""
        ...

    def close(self) -> None:
        """Drop them (a build that waited: the files may have changed)."""
        ...


@dataclass(frozen=True, slots=True)
class Tunables:
    """Sizes that shape a build's work, not its output (except where said)."""

    in_process_scan: int = 8
    """At most this many changed files are scanned in the build's own process (no pool)."""
    keep_scanned_bytes: int = 64 << 20
    """Sessions scanned in-process are kept for their render when the changed files total
    at most this, or when there is only one (its render holds that session anyway)."""
    in_process_render: int = 4
    """At most this many sessions, of at most ``keep_scanned_bytes`` of files in all, are
    rendered in the build's own process: starting a pool costs more than a few small
    sessions (an append renders the session and the next run's comparison)."""
    keep_runs_bytes: int = 16 << 20
    """A render process keeps sessions it rendered, of at most this many bytes of files in
    all, for the comparison page of the next run of their series (its previous run is then
    not read again); the oldest are dropped first."""
    worker_keep_bytes: int = 32 << 20
    """A worker process that scans many files keeps the sessions it prepared, of at most
    this many bytes of files in all (the first that fit), and renders them without reading
    them again (:mod:`.stages.worker`); the others are read again by the render. The same
    budget applies to a one-process build scanning many files."""
    worker_keep_min_bytes: int = 16 << 10
    """... but not a session whose file is smaller than this: it parses again in about a
    millisecond, and holds about twice its file's size in objects plus 4 KB (a 3.5 KB
    file: 8 KB), so thousands of small ones kept cost more memory than time saved (20,000
    sessions of 3.5 KB: the largest worker held 120 MB against 40 MB with none kept, and
    the build took as long)."""
    page_turns: int = urls.PAGE_TURNS
    """A session page holds at most this many turns (shapes the output)."""
    page_bytes: int = urls.PAGE_BYTES
    """... and about this many bytes of turns at most (shapes the output)."""
    sessions_per_bundle: int = 1000
    """Search: a bundle holds at most this many sessions on average (until max_bundles).
    A bundle is what an append writes again (shapes the output)."""
    bundle_bytes: int = 32 << 20
    """Search: ... and at most this many bytes of session files on average (shapes the
    output)."""
    max_bundles: int = 128
    """Search: at most this many bundles (shapes the output): every bundle's meta file is
    loaded on a search box's focus, an append makes its session's bundle again from its
    records.
    At 128, a bundle holds at most ``sessions_per_bundle`` sessions up to 128,000 sessions
    (at 64, a bundle held 1,560 at 100,000, and an append there took 1.71 s against 1.38 s
    at 128, medians alternated in one hour: ``docs/catalog.md``)."""
    search_chunk_bytes: int = 16_000
    """Search: a term chunk (shared by every bundle: a query loads one a word) holds about
    this many bytes of terms and postings (shapes the output)."""
    search_doc_bytes: int = 4000
    """Search: a document chunk holds about this many bytes of turn texts (shapes the
    output)."""
    index_first_rows: int = 100
    """The index's static table holds the most recent this many sessions; the rest load from
    row shards (shapes the output)."""
    rows_per_shard: int = 500
    """Index row shards: at most this many sessions a shard on average (shapes the output)."""
    max_row_shards: int = 1024
    """Index row shards: at most this many (shapes the output)."""
    fork_check_bytes: int = 8 << 20
    """A catalog of at least this size (some 4,000 sessions) has the site's folders checked
    in a process forked for it, beside the scan (:class:`.stages.plan.FolderCheck`)."""


@dataclass(slots=True)
class BuildOptions:
    """What to build and how."""

    sessions_dir: Path
    """The sessions folder (read only)."""
    out_dir: Path
    """The site folder: it receives exactly the published files."""
    cache_dir: Path | None = None
    """Where the build state goes; None for :func:`default_cache_dir`."""
    theme: str | None = None
    """Built-in theme name or a theme folder; None for default."""
    search: bool = True
    """Build the search index (:mod:`.search`)."""
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
    """Leave re-indexing the search to the caller (:func:`.build.finish_search` with
    :attr:`.build.BuildReport.pending_search`): ``site watch`` reloads pages before it."""
    tunables: Tunables = field(default_factory=Tunables)
    """Sizes that shape the work."""
    prices: Prices = field(default_factory=Prices)
    """The price table usage is priced with (``--prices``; the shipped one by default)."""
    wait: bool = True
    """Wait while another build holds the cache folder (:mod:`.lock`); False: stop at once
    with :class:`.lock.CacheBusy` (``--no-wait``)."""
    on_wait: WaitHook | None = None
    """Told the holder's process id once, when the build waits for another one."""
    scheduler: str | None = None
    """The address of a Dask scheduler (``--scheduler``, ``tcp://HOST:8786``): the scan and
    the render run on its cluster (:mod:`.distributed`); None: on this machine."""
    listing: Listing | None = None
    """The sessions folder's files and their stamps, being taken by a process forked before
    the build's imports (``site build``: :class:`.pool.FolderStamps`): the scan's pass over
    every file takes them; dropped when the build waits for another one."""


def default_cache_dir(out_dir: Path) -> Path:
    """The cache folder of a site folder when none is named: under the user's cache folder
    (``$XDG_CACHE_HOME``, else ``~/.cache``), ``polyglav/site-<hash of the site folder's
    absolute path>``, so each site folder has its own and none is ever published."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    where = os.path.abspath(out_dir).encode("utf-8", "surrogatepass")
    return Path(base) / "polyglav" / f"site-{hashlib.sha256(where).hexdigest()[:16]}"


@dataclass(frozen=True, slots=True)
class CachePaths:
    """The files of a build's cache folder."""

    root: Path
    """The cache folder."""

    @classmethod
    def of(cls, options: BuildOptions) -> CachePaths:
        """The cache of a build: the folder named, else :func:`default_cache_dir`."""
        return cls(options.cache_dir or default_cache_dir(options.out_dir))

    @property
    def catalog(self) -> Path:
        """What the builds know of the archive and the site (:mod:`.catalog`)."""
        return self.root / "catalog.sqlite"

    @property
    def lock(self) -> Path:
        """Held by the build writing this cache (:mod:`.lock`): one writer at a time."""
        return self.root / "lock"

    @property
    def fragments(self) -> Path:
        """Turn fragments, one file a session (:mod:`.fragments`)."""
        return self.root / "fragments"

    @property
    def building(self) -> Path:
        """Present while a build may be writing the site: made before its first write,
        removed once its catalog is committed. Found at the start of a build, it says the
        last one stopped in between (:attr:`BuildContext.trust_written`)."""
        return self.root / "building"

    @property
    def search(self) -> Path:
        """The search's records and state (:class:`.search.store.SearchStore`)."""
        return self.root / "search"

    @property
    def legacy(self) -> list[Path]:
        """What builds before the catalog kept here (removed by a build)."""
        names = ("manifest.jsonl", "manifest.d", "index-cache", "index-cache-tree")
        more = ("index-outputs.json", "archive-rows", "archive-cache.json")
        pagefind = ("search.json", "search-tmp")
        return [self.root / name for name in (*names, *more, *pagefind)]


LEGACY_STATE = ("manifest.jsonl", "manifest.json", "index-rows.json", "index-cache", "search.json")
"""Files that earlier versions kept in ``<out>/.polyglav/`` (with ``fragments/`` and
``search-tmp/``): removed from the site folder by a build."""


@dataclass(slots=True)
class Warm:
    """What a long-running caller keeps between builds (see the module docstring)."""

    renderers: dict[str, HtmlRenderer] = field(default_factory=dict)
    """The renderer of the last theme state (its key → renderer): templates compiled once."""
    code: str = ""
    """:func:`.staleness.code_key`, computed by the first build (the code does not change
    while a process runs)."""
    generation: int = 0
    """The catalog generation the last build of this caller committed (0: none yet):
    :attr:`seen` is about that build only."""
    seen: set[str] | None = None
    """The session files a watcher saw change (created, written, moved, deleted) since the
    last build began, set before a build and taken by it; None when it cannot tell (its
    first build, a periodic rescan, a folder watched anew). Used only when the catalog is
    the one this caller's last build committed (:attr:`generation`): then only these files
    are stat'ed and the site's folders are trusted."""
    relist: bool = True
    """Set with :attr:`seen` by a watcher: False when no session file was created, deleted
    or moved since the last build began, so the build takes the catalog's files as the
    folder's instead of listing it again."""

    def renderer(self, theme: Theme, theme_key: str) -> HtmlRenderer:
        """The renderer of ``theme`` in the state ``theme_key``; a changed theme file gives
        a new one (and the old one is dropped)."""
        renderer = self.renderers.get(theme_key)
        if renderer is None:
            from ..render.html import HtmlRenderer

            self.renderers.clear()
            renderer = self.renderers[theme_key] = HtmlRenderer(theme)
        return renderer


@dataclass(slots=True)
class BuildContext:
    """Everything a stage needs, resolved once at the start of a build."""

    options: BuildOptions
    """What was asked for."""
    theme: Theme
    """The theme's folders."""
    key: str
    """The build key (:func:`.staleness.build_key`)."""
    index_key: str
    """What the search index is made of (:func:`.staleness.index_key`; part of ``key``)."""
    renderer: HtmlRenderer
    """Templates and the configured markdown-it."""
    cache: CachePaths
    """Where the build state lives."""
    workers: int
    """Processes at a time."""
    warm: Warm
    """What carries over to the next build of a long-running caller."""
    trust_written: bool = True
    """False when the last build stopped after writing to the site and before committing
    its catalog: a file whose recorded hash is the one about to be written may hold that
    build's bytes instead, so each file is compared with what is there before it is
    skipped (:func:`.stages.write.write_files`)."""

    @property
    def folder(self) -> Path:
        """The sessions folder."""
        return self.options.sessions_dir

    @property
    def out(self) -> Path:
        """The site folder."""
        return self.options.out_dir

    @property
    def tunables(self) -> Tunables:
        return self.options.tunables

    @staticmethod
    def check(options: BuildOptions, cache: Path) -> None:
        """Raise :class:`..archive.ArchiveError` when the folders of ``options`` (and the
        cache folder ``cache``) cannot be built from and into."""
        folder, out = options.sessions_dir, options.out_dir
        if not folder.is_dir():
            raise ArchiveError(f"{folder}: the sessions folder does not exist")
        if is_inside(out, folder):
            raise ArchiveError(f"{out}: refusing to write the site inside the sessions folder")
        if out.exists() and not out.is_dir():
            raise ArchiveError(f"{out}: not a folder (the site folder)")
        if is_inside(cache, folder):
            raise ArchiveError(f"{cache}: refusing to keep the cache inside the sessions folder")
        if is_inside(cache, out):
            raise ArchiveError(
                f"{cache}: the cache folder must not be inside the site folder (it is published)"
            )

    @classmethod
    def open(cls, options: BuildOptions, warm: Warm | None = None) -> BuildContext:
        """Check the folders, load the theme, compute the key."""
        cache = CachePaths.of(options).root
        cls.check(options, cache)
        theme = Theme.load(options.theme)
        theme_key = staleness.theme_key(theme)
        warm = warm if warm is not None else Warm()
        warm.code = warm.code or staleness.code_key()
        index_key = staleness.index_key(redactor=options.redactor, code=warm.code)
        return cls(
            options=options,
            theme=theme,
            key=staleness.build_key(
                search=options.search,
                index=index_key,
                theme=theme_key,
                prices=options.prices.key,
            ),
            index_key=index_key,
            renderer=warm.renderer(theme, theme_key),
            cache=CachePaths(cache),
            workers=options.workers or os.cpu_count() or 1,
            warm=warm,
        )
