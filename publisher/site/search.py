"""The full-text search index: Pagefind, sharded by session so a change re-indexes little.

Indexing the whole site again after any change cost most of a big build (38 s of 65 s on
2,000 sessions, 3.1 GB of memory) and 0.41 of a full build for one appended turn. Instead:

- every session folder (``sessions/<slug>/``, all the pages of one session) belongs to one
  of ``K`` shards, by a stable hash of its slug; ``K`` is a power of two that depends only on
  the number of published sessions (:func:`shard_count`), so the index is a pure function
  of the site: an incremental build gives exactly the files a fresh build gives;
- a session whose pages weigh more than ``Tunables.solo_bytes`` (a long session: Pagefind takes
  seconds over it) is a shard of its own, so that the sessions sharing a hashed shard with
  it do not pay for it at each of their changes;
- each shard is a Pagefind bundle of its own, ``pagefind/<shard>/``, indexed by one Pagefind
  run restricted to its pages, in parallel up to the build's worker count (the memory of a
  run is bounded by its shard);
- a shard is indexed again only when its key (:func:`.staleness.shard_key`: its pages and
  what else shapes its bundle) differs from the one kept in the build's cache folder
  (``search.json``), or its bundle is missing; bundles of shards that no longer exist are
  removed;
- ``pagefind/shards.json`` lists the bundles; the client (``assets/app.js``) loads the first
  one's ``pagefind.js`` and merges the others (Pagefind's ``mergeIndex``). Only that first
  bundle holds the runtime (``pagefind.js``, its worker and WebAssembly); merged bundles are
  index data only, and Pagefind's unused UI files are not published.

A bundle is installed from a temporary folder: each file is moved into place atomically and
only when its bytes changed, the entry file last, then files no longer produced are removed.
A shard indexed again starts from its old bundle's content-addressed chunks, which
Pagefind does not write again (:func:`_seed_chunks`, :func:`_prune_chunks`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..write import (
    WriteError,
    atomic_write,
    is_inside,
    move_into_place,
    prepare_target,
    write_if_changed,
)
from .context import Tunables
from .staleness import SEARCH_FORMAT, shard_key

DEFAULT_TUNABLES = Tunables()
"""The shard sizes of a build that names none."""

BUNDLE_DIR = "pagefind"
SHARDS_FILE = "shards.json"
ENTRY = "pagefind-entry.json"
#: The files the primary bundle needs to run a search; merged bundles need none of them.
RUNTIME_RE = re.compile(r"\A(pagefind\.js|pagefind-worker\.js|wasm\.[A-Za-z0-9_-]+\.pagefind)\Z")
#: Pagefind's prebuilt UIs: the site uses its own script, never these.
UI_RE = re.compile(r"\Apagefind-(ui|modular-ui|component-ui|highlight)\.(js|css)\Z")
#: A session page: ``sessions/<slug>/<page>.html``.
PAGE_RE = re.compile(r"\Asessions/([^/]+)/[^/]+\.html\Z")
#: Slugs are made of these (see :mod:`.urls`); none is special in Pagefind's glob syntax.
GLOB_SAFE_RE = re.compile(r"\A[a-z0-9_][a-z0-9_.-]*\Z")
TIMEOUT_S = 600

ProgressHook = Callable[[str, int, int], None]


def shard_count(sessions: int, tunables: Tunables = DEFAULT_TUNABLES) -> int:
    """The number of shards for an archive of ``sessions`` published sessions: the smallest
    power of two giving at most ``sessions_per_shard`` sessions a shard, capped at
    ``max_shards``."""
    count = 1
    while count < tunables.max_shards and sessions > count * tunables.sessions_per_shard:
        count *= 2
    return count


def shard_of(folder: str, count: int) -> int:
    """The shard of the session folder ``folder`` (its slug) among ``count`` shards.

    A hash of the slug alone: stable across builds, machines and archive contents."""
    digest = hashlib.sha256(folder.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def shard_id(index: int, count: int) -> str:
    """The folder name of shard ``index`` of ``count`` (under ``pagefind/``)."""
    return f"shard-{index:03d}-of-{count:03d}"


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard to publish: its session folders and their pages."""

    id: str
    """Its folder under ``pagefind/``."""
    folders: tuple[str, ...]
    """The session folders (slugs) it indexes."""
    pages: tuple[tuple[str, str], ...]
    """Their pages: (path in the site, sha256)."""
    primary: bool
    """True for the first shard, the one that carries Pagefind's runtime."""

    def key(self, build_key: str, pagefind_version: str) -> str:
        """:func:`.staleness.shard_key` of this shard."""
        return shard_key(self.id, self.primary, self.pages, build_key, pagefind_version)

    def glob(self) -> str:
        """Pagefind's ``--glob`` selecting exactly this shard's session folders."""
        for folder in self.folders:
            if not GLOB_SAFE_RE.match(folder):
                raise ValueError(f"session folder {folder!r} is not safe in a glob")
        if len(self.folders) == 1:
            return f"sessions/{self.folders[0]}/*.html"
        return "sessions/{" + ",".join(self.folders) + "}/*.html"


def solo_id(folder: str) -> str:
    """The folder name of the shard of its own of a heavy session (see ``Tunables.solo_bytes``)."""
    return "solo-" + hashlib.sha256(folder.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def plan_shards(
    produced: Mapping[str, str],
    sizes: Mapping[str, int] | None = None,
    tunables: Tunables = DEFAULT_TUNABLES,
) -> list[Shard]:
    """The non-empty shards of a site whose outputs are ``produced`` (rel path -> sha256),
    in order; the first is the primary (it carries the search runtime).

    ``sizes`` (rel path -> bytes) puts every session whose pages weigh more than
    ``tunables.solo_bytes`` in a shard of its own, listed after the hashed shards: Pagefind
    takes seconds over such a session, which every session sharing its shard would pay
    again at each of their changes."""
    by_folder: dict[str, list[tuple[str, str]]] = {}
    for rel, digest in produced.items():
        match = PAGE_RE.match(rel)
        if match:
            by_folder.setdefault(match[1], []).append((rel, digest))
    count = shard_count(len(by_folder), tunables)
    members: dict[int, list[str]] = {}
    solos: list[str] = []
    for folder, folder_pages in by_folder.items():
        weight = sum(sizes.get(rel, 0) for rel, _ in folder_pages) if sizes is not None else 0
        if weight > tunables.solo_bytes:
            solos.append(folder)
        else:
            members.setdefault(shard_of(folder, count), []).append(folder)
    groups = [(shard_id(index, count), sorted(members[index])) for index in sorted(members)]
    groups += sorted((solo_id(folder), [folder]) for folder in solos)
    shards = []
    for position, (ident, folders) in enumerate(groups):
        pages = tuple(sorted(page for folder in folders for page in by_folder[folder]))
        shards.append(Shard(ident, tuple(folders), pages, primary=position == 0))
    return shards


@dataclass(slots=True)
class SearchResult:
    """What :func:`update_search` did."""

    shards: int = 0
    built: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    listing_changed: bool = False

    def describe(self) -> str:
        """The build report's ``search`` string."""
        if self.failed:
            first = next(iter(sorted(self.failed.items())))
            return (
                f"unavailable: Pagefind failed on {len(self.failed)}/{self.shards} shards: "
                f"{first[0]}: {first[1]}"
            )
        if not self.built and not self.removed and not self.listing_changed:
            return "unchanged"
        text = f"built {len(self.built)}/{self.shards} shards"
        return text + (f", {len(self.removed)} removed" if self.removed else "")


def pagefind_version() -> str:
    """What identifies the Pagefind that indexes (part of each shard's digest): its
    executable's path, size and mtime, so an upgrade or another binary re-indexes.

    A stat, not ``importlib.metadata`` (40 ms in a cold process, paid by every build), and
    it also tells apart a binary named by ``PAGEFIND_BINARY_PATH``."""
    command = _pagefind_command()
    try:
        st = os.stat(command[0])
    except OSError:
        return " ".join(command)
    return f"{' '.join(command)}\0{st.st_size}\0{st.st_mtime_ns}"


@dataclass(slots=True)
class SearchPaths:
    """Where search keeps its state: in the build's cache folder, never in the site."""

    state: Path
    """Each shard's key and the Pagefind that indexed them (JSON)."""
    tmp: Path
    """Where Pagefind writes bundles before they are installed."""


@dataclass(slots=True)
class _Seeding:
    """Whether old chunks may seed Pagefind runs: True until a bundle's chunks could not be
    read back (another Pagefind format), after which every run indexes from scratch without
    a wasted first run; kept in the search state until another Pagefind is used."""

    allowed: bool = True


class EarlyIndex:
    """Indexes shards while the render is still running (issue 13): a shard whose sessions
    are all rendered goes to Pagefind at once, on a thread beside the render workers,
    instead of after the last page.

    It only ever runs ahead: :func:`update_search` stays the judge. It plans the shards of
    the whole site again from what the build produced, and takes a bundle built here as up
    to date only when it was built for exactly the key it wants (same pages and digests,
    same primary flag, same build key and Pagefind); any other shard it indexes itself. So
    a guess that turns out wrong (a session failing to render changes the shard count; a
    session's stale page still on disk) costs time, never a wrong index. A shard is not
    started early when:

    - a session failed to render (from then on nothing more is started);
    - whether it is the primary bundle (the first, carrying the runtime) is not yet known;
    - a folder of it holds a page the build did not produce (removed only after the
      render: Pagefind would index it);
    - the last build's bundle already has its key.
    """

    def __init__(
        self,
        out_dir: Path,
        expected: Mapping[str, Mapping[str, str] | None],
        *,
        workers: int,
        key: str,
        paths: SearchPaths,
        tunables: Tunables = DEFAULT_TUNABLES,
    ) -> None:
        """``expected``: every session folder (slug) the site should publish → its pages
        (rel path → sha256) when they are known already (not rendered by this build), or
        None for the folders this build renders."""
        self.out_dir = out_dir
        self.key = key
        self.paths = paths
        self.tunables = tunables
        self.count = shard_count(len(expected), tunables)
        self.pages: dict[str, dict[str, str]] = {}
        self.pending: set[str] = set()
        self.members: dict[int, list[str]] = {}
        for folder, pages in expected.items():
            self.members.setdefault(shard_of(folder, self.count), []).append(folder)
            if pages is None:
                self.pending.add(folder)
            else:
                self.pages[folder] = {rel: h for rel, h in pages.items() if PAGE_RE.match(rel)}
        self.heavy: set[str] = set()
        self.sizes: dict[str, int] = {}
        self.version = pagefind_version()
        self.old, old_version, old_seeding = _load_state(paths.state)
        self.seeding = _Seeding(allowed=old_version == self.version and old_seeding)
        self.broken = False
        self.started: set[int] = set()
        self.solos: list[str] = []
        """Heavy sessions rendered, waiting for the primary to be known."""
        self.built: dict[str, str] = {}
        """Shard id → the key its installed bundle was built for."""
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers // 2))
        self._futures: list[Future[None]] = []
        self._lock = threading.Lock()
        _remove_tree(paths.tmp, paths.tmp.parent)
        for folder in list(self.pages):
            self._weigh(folder)

    def _weigh(self, folder: str) -> None:
        root = os.fspath(self.out_dir)
        weight = 0
        for rel in self.pages[folder]:
            with contextlib.suppress(OSError):
                self.sizes[rel] = size = os.stat(f"{root}/{rel}").st_size
                weight += size
        if weight > self.tunables.solo_bytes:
            self.heavy.add(folder)

    def rendered(self, folder: str | None, outputs: Mapping[str, str] | None) -> None:
        """A session was rendered: its folder and files (``None``: it failed)."""
        if self.broken:
            return
        if folder is None or outputs is None or folder not in self.pending:
            self.broken = True  # the plan of shards may change: leave it all to the end
            return
        self.pending.discard(folder)
        self.pages[folder] = {rel: h for rel, h in outputs.items() if PAGE_RE.match(rel)}
        self._weigh(folder)
        if folder in self.heavy:
            self.solos.append(folder)
        first = self._first_light()
        if first is None:
            return  # which bundle is the primary is not known yet
        if first != -1:  # else the primary may be a solo: left to the end
            for solo in self.solos:
                self._start(Shard(solo_id(solo), (solo,), self._pages_of([solo]), False))
            self.solos.clear()
        for index in sorted(self.members):
            if index in self.started or not self._done(index):
                continue
            self.started.add(index)
            folders = self._light(index)
            if folders:
                pages = self._pages_of(folders)
                self._start(
                    Shard(shard_id(index, self.count), tuple(folders), pages, first == index)
                )

    def _done(self, index: int) -> bool:
        return all(f not in self.pending for f in self.members.get(index, []))

    def _light(self, index: int) -> list[str]:
        return sorted(f for f in self.members.get(index, []) if f not in self.heavy)

    def _first_light(self) -> int | None:
        """The index of the first non-empty hashed shard (the primary), None while unknown,
        -1 when every hashed shard is empty."""
        for index in sorted(self.members):
            light = self._light(index)
            if any(f not in self.pending for f in light):
                return index
            if light:  # only sessions not rendered yet: empty or not, unknown
                return None
        return -1

    def _pages_of(self, folders: list[str]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(page for f in folders for page in self.pages[f].items()))

    def _start(self, shard: Shard) -> None:
        wanted = shard.key(self.key, self.version)
        if self.old.get(shard.id) == wanted and _bundle_complete(self.out_dir, shard):
            return
        if not self._only_produced(shard):
            return
        self._futures.append(self._pool.submit(self._run, shard, wanted))

    def _only_produced(self, shard: Shard) -> bool:
        produced = {rel for rel, _ in shard.pages}
        for folder in shard.folders:
            try:
                names = os.listdir(self.out_dir / "sessions" / folder)
            except OSError:
                return False
            on_disk = {f"sessions/{folder}/{n}" for n in names if n.endswith(".html")}
            if not on_disk <= produced:
                return False
        return True

    def _run(self, shard: Shard, wanted: str) -> None:
        if _index_shard(self.out_dir, self.paths.tmp, shard, self.seeding) is None:
            with self._lock:
                self.built[shard.id] = wanted

    @property
    def runs(self) -> int:
        """How many shards were given to Pagefind so far."""
        return len(self._futures)

    def finish(self) -> dict[str, str]:
        """Wait for the shards started; the key each bundle built here was built for."""
        for future in self._futures:
            future.exception()  # an error leaves the shard to update_search
        self._pool.shutdown(wait=True)
        return dict(self.built)


def update_search(
    out_dir: Path,
    produced: Mapping[str, str],
    *,
    workers: int,
    key: str,
    paths: SearchPaths,
    tunables: Tunables = DEFAULT_TUNABLES,
    progress: ProgressHook | None = None,
    early: EarlyIndex | None = None,
) -> SearchResult:
    """Bring ``out_dir/pagefind/`` up to date with the session pages in ``produced``;
    ``early``: the shards indexed while the render ran (:class:`EarlyIndex`)."""
    prebuilt = early.finish() if early is not None else {}
    bundles = out_dir / BUNDLE_DIR
    state_path = paths.state
    if bundles.is_symlink() or (bundles.exists() and not bundles.is_dir()):
        bundles.unlink()  # planted link or stray file: pagefind/ is ours
    sizes = _page_sizes(out_dir, produced)
    shards = plan_shards(produced, sizes, tunables)
    version = pagefind_version()
    wanted = {shard.id: shard.key(key, version) for shard in shards}
    old, old_version, old_seeding = _load_state(state_path)
    # Old chunks may seed a new run only when the same Pagefind made them (its chunk names
    # and bytes could differ in another version), and unless its chunk lists could not be
    # read back before (then every run starts from scratch, without a wasted first run).
    seeding = _Seeding(allowed=old_version == version and old_seeding)
    if early is not None and not early.seeding.allowed:
        seeding.allowed = False
    jobs = [
        s
        for s in shards
        if wanted[s.id] not in (old.get(s.id), prebuilt.get(s.id))
        or not _bundle_complete(out_dir, s)
    ]
    # Largest shards first: with a few workers, a big shard started last would run alone.
    jobs.sort(key=lambda s: -sum(sizes.get(rel, 0) for rel, _ in s.pages))
    result = SearchResult(shards=len(shards))
    result.built.extend(sorted(sid for sid, k in prebuilt.items() if wanted.get(sid) == k))

    tmp_root = paths.tmp
    _remove_tree(tmp_root, tmp_root.parent)
    done = 0
    if jobs:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
            futures = [
                (shard, pool.submit(_index_shard, out_dir, tmp_root, shard, seeding))
                for shard in jobs
            ]
            for shard, future in futures:
                error = future.result()
                if error is None:
                    result.built.append(shard.id)
                else:
                    result.failed[shard.id] = error
                done += 1
                if progress:
                    progress("search", done, len(jobs))
    _remove_tree(tmp_root, tmp_root.parent)

    listed = [s.id for s in shards if (bundles / s.id / ENTRY).is_file()]
    listing = json.dumps({"format": SEARCH_FORMAT, "shards": listed}, indent=1) + "\n"
    result.listing_changed = write_if_changed(
        prepare_target(out_dir, f"{BUNDLE_DIR}/{SHARDS_FILE}"), listing.encode()
    )
    # Then (no longer listed) the bundles of shards that no longer exist (another shard
    # count, emptied shards), and anything else under pagefind/ (e.g. the single bundle of
    # earlier versions).
    for entry in sorted(bundles.iterdir()):
        if entry.name in wanted or entry.name == SHARDS_FILE:
            continue
        if entry.is_dir() and not entry.is_symlink():
            _remove_tree(entry, out_dir)
            if entry.name.startswith(("shard-", "solo-")):
                result.removed.append(entry.name)
        else:
            entry.unlink()
    state = {sid: digest for sid, digest in wanted.items() if sid not in result.failed}
    seeds = seeding.allowed or old_version != version
    if state != old or old_version != version or seeds != old_seeding:
        _save_state(state_path, state, version, seeds)
    return result


def remove_search(out_dir: Path, paths: SearchPaths) -> None:
    """Search is off: no bundle and no search state."""
    _remove_tree(out_dir / BUNDLE_DIR, out_dir)
    _remove_tree(paths.tmp, paths.tmp.parent)
    with contextlib.suppress(OSError):
        paths.state.unlink()


def _page_sizes(out_dir: Path, produced: Mapping[str, str]) -> dict[str, int]:
    sizes = {}
    root = os.fspath(out_dir)  # plain strings: a stat per page, no Path objects
    for rel in produced:
        if PAGE_RE.match(rel):
            with contextlib.suppress(OSError):
                sizes[rel] = os.stat(f"{root}/{rel}").st_size
    return sizes


def _bundle_complete(out_dir: Path, shard: Shard) -> bool:
    folder = out_dir / BUNDLE_DIR / shard.id
    if folder.is_symlink() or not (folder / ENTRY).is_file():
        return False
    return not shard.primary or (folder / "pagefind.js").is_file()


def _load_state(path: Path) -> tuple[dict[str, str], str | None, bool]:
    """The shard keys of the last build, the Pagefind that indexed them (None when
    unknown), and whether its bundles' chunks can seed a run (False once they could not be
    read back)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, None, True
    if not isinstance(data, dict) or data.get("format") != SEARCH_FORMAT:
        return {}, None, True
    shards = data.get("shards")
    if not isinstance(shards, dict):
        return {}, None, True
    version = data.get("pagefind")
    return (
        {k: v for k, v in shards.items() if isinstance(k, str) and isinstance(v, str)},
        version if isinstance(version, str) else None,
        data.get("seeding", True) is not False,
    )


def _save_state(path: Path, shards: dict[str, str], version: str, seeding: bool) -> None:
    data = {
        "format": SEARCH_FORMAT,
        "pagefind": version,
        "seeding": seeding,
        "shards": dict(sorted(shards.items())),
    }
    atomic_write(path, [json.dumps(data, sort_keys=True, indent=1).encode()])


def _index_shard(out_dir: Path, tmp_root: Path, shard: Shard, seeding: _Seeding) -> str | None:
    """Index one shard into a temporary folder and install it; the error, or None."""
    work = tmp_root / shard.id
    try:
        work.mkdir(parents=True, exist_ok=True)
        glob = shard.glob()
    except (OSError, ValueError) as exc:
        return str(exc)
    bundle = work / "bundle"
    pages = work / "pages"
    try:
        stage_pages(out_dir, pages, shard.pages)
    except OSError as exc:
        _remove_tree(work, tmp_root)
        return f"cannot stage the pages: {exc}"
    seeded = seeding.allowed and _seed_chunks(out_dir / BUNDLE_DIR / shard.id, bundle, out_dir)
    error = run_pagefind(pages, glob, bundle, cwd=work)
    if error is None and seeded and not _prune_chunks(bundle):
        # The new bundle's chunks could not be told from the seeded ones: from scratch.
        seeding.allowed = False
        _remove_tree(bundle, tmp_root)
        error = run_pagefind(pages, glob, bundle, cwd=work)
    if error is not None:
        _remove_tree(work, tmp_root)
        return error
    try:
        install_bundle(bundle, out_dir, f"{BUNDLE_DIR}/{shard.id}", shard.primary)
    except (OSError, WriteError) as exc:
        return f"cannot install the bundle: {exc}"
    finally:
        _remove_tree(work, tmp_root)
    return None


def stage_pages(out_dir: Path, stage: Path, pages: tuple[tuple[str, str], ...]) -> None:
    """Lay out a shard's pages in ``stage`` (a new folder), each at its path in the site,
    made one at a time in the order of their paths: what Pagefind indexes.

    Pagefind numbers pages in the order it lists folders, which is the order their entries
    were made on ``tmpfs`` (and in a folder of one block on ext4): in the site, that is the
    order in which the render's workers happened to finish, so the same archive gave
    another index at each full build. Made here in one order, they give one index. Pagefind
    also walks only this shard's pages, not the whole site. Hard links where the site's
    file system allows (Pagefind only reads them), else copies; a page that is not a
    regular file (a link planted in the site) is not staged."""
    stage.mkdir(parents=True)
    for rel, _ in sorted(pages):
        source = out_dir / rel
        try:
            if not stat.S_ISREG(os.lstat(source).st_mode):
                continue
        except FileNotFoundError:
            continue
        target = stage / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError:
            shutil.copyfile(source, target, follow_symlinks=False)


#: A bundle's content-addressed files, by folder: each is named by a hash of what it
#: holds (a page's fragment, a chunk of the word index, a filter), so an existing file of
#: that name already has the bytes Pagefind would write.
CHUNK_SUFFIXES = {"fragment": ".pf_fragment", "index": ".pf_index", "filter": ".pf_filter"}
CHUNK_STEM_RE = re.compile(r"\A[A-Za-z0-9_-]{1,100}\Z")
META_SIGNATURE = b"pagefind_dcd"


def _seed_chunks(installed: Path, bundle: Path, out_dir: Path) -> bool:
    """Copy the installed bundle's content-addressed files into the new bundle's folder;
    True when some were.

    Pagefind does not write a fragment or index chunk whose file exists already, and
    compressing them is a quarter of its time on a shard: after an append, all but the
    appended page's fragment and a few index chunks are there (0.36 -> 0.27 s on a 5 MB
    shard). Those that the new index no longer names are removed after the run
    (:func:`_prune_chunks`). Copies, not links: Pagefind must never write to the site.
    """
    if installed.is_symlink() or not installed.is_dir():
        return False
    if not is_inside(installed, out_dir):
        return False
    copied = 0
    for folder, suffix in CHUNK_SUFFIXES.items():
        source = installed / folder
        if source.is_symlink() or not source.is_dir():
            continue
        for entry in sorted(os.scandir(source), key=lambda e: e.name):
            stem = entry.name[: -len(suffix)] if entry.name.endswith(suffix) else ""
            if not CHUNK_STEM_RE.match(stem) or not entry.is_file(follow_symlinks=False):
                continue
            target = bundle / folder / entry.name
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(entry.path, target, follow_symlinks=False)
            except OSError:
                continue  # a chunk not seeded is only written again
            copied += 1
    return copied > 0


def _prune_chunks(bundle: Path) -> bool:
    """Remove the seeded chunks the new index does not name; False when the bundle's
    chunk list cannot be read, or names a file that is not there."""
    named = bundle_chunks(bundle)
    if named is None:
        return False
    for folder, suffix in CHUNK_SUFFIXES.items():
        present = {p.name for p in (bundle / folder).glob(f"*{suffix}")}
        wanted = {f"{stem}{suffix}" for stem in named[folder]}
        if not wanted <= present:
            return False
        for name in sorted(present - wanted):
            (bundle / folder / name).unlink()
    return True


def bundle_chunks(bundle: Path) -> dict[str, set[str]] | None:
    """The content-addressed files (stems by folder) a Pagefind bundle's metadata names;
    None when it does not read as Pagefind 1's format.

    Each language of ``pagefind-entry.json`` has a ``pagefind.<hash>.pf_meta``: the
    signature ``pagefind_dcd``, then CBOR ``[version, pages, index chunks, filters, sorts,
    meta fields]``, with pages ``[hash, word count]``, index chunks ``[from, to, hash]``
    and filters ``[name, hash]`` (gzip-compressed)."""
    import gzip

    import cbor2

    named: dict[str, set[str]] = {folder: set() for folder in CHUNK_SUFFIXES}
    try:
        entry = json.loads((bundle / ENTRY).read_text(encoding="utf-8"))
        languages = entry["languages"]
        if not isinstance(languages, dict) or not languages:
            return None
        for language in languages.values():
            meta_hash = language["hash"]
            if not isinstance(meta_hash, str) or not CHUNK_STEM_RE.match(meta_hash):
                return None
            raw = gzip.decompress((bundle / f"pagefind.{meta_hash}.pf_meta").read_bytes())
            if not raw.startswith(META_SIGNATURE):
                return None
            meta = cbor2.loads(raw[len(META_SIGNATURE) :])
            if not isinstance(meta, list) or len(meta) < 4 or meta[0] != entry["version"]:
                return None
            for folder, rows, width in (
                ("fragment", meta[1], 2),
                ("index", meta[2], 3),
                ("filter", meta[3], 2),
            ):
                if not isinstance(rows, list):
                    return None
                for row in rows:
                    if not isinstance(row, list) or len(row) != width:
                        return None
                    stem = row[0] if folder == "fragment" else row[-1]
                    if not isinstance(stem, str) or not CHUNK_STEM_RE.match(stem):
                        return None
                    named[folder].add(stem)
    except (OSError, ValueError, KeyError, TypeError, IndexError, EOFError, cbor2.CBORError):
        return None
    return named


def _pagefind_command() -> list[str]:
    """The command that runs Pagefind: the binary ``pagefind.service`` would pick
    (``PAGEFIND_BINARY_PATH``, else the extended then the plain binary package), found
    without importing ``pagefind.service`` (it imports asyncio: 60 ms per build)."""
    named = os.environ.get("PAGEFIND_BINARY_PATH")
    if named:
        return [named]
    for package in ("pagefind_bin_extended", "pagefind_bin"):
        try:
            module = importlib.import_module(package)
            return [str(module.get_executable())]
        except (ImportError, OSError, AttributeError):
            continue
    return [sys.executable, "-m", "pagefind"]


def run_pagefind(site: Path, glob: str, output: Path, *, cwd: Path) -> str | None:
    """Run Pagefind's binary over the pages of ``site`` matching ``glob``, writing the bundle
    to ``output``; the error, or None.

    ``cwd`` is a folder of ours: Pagefind reads a config file from its working directory,
    and the caller's must not change what we publish (nor must ``PAGEFIND_*`` variables).
    """
    command = [
        *_pagefind_command(),
        "--site",
        str(site.resolve()),
        "--glob",
        glob,
        "--output-path",
        str(output.resolve()),
        "--silent",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEFIND_")}
    try:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            cwd=cwd,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Pagefind failed to run ({exc})"
    if result.returncode != 0:
        last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        return last[0]
    if not (output / ENTRY).is_file():
        return "Pagefind wrote no index"
    return None


def install_bundle(source: Path, out_dir: Path, rel_dir: str, primary: bool) -> int:
    """Move the bundle Pagefind wrote in ``source`` to ``out_dir/rel_dir``; returns the
    number of files replaced.

    Files whose bytes did not change are left alone (their mtime too); every other file is
    moved into place atomically, the entry file last so that a reader never finds an entry
    naming files not there yet; files no longer produced are removed after."""
    keep: dict[str, Path] = {}
    for path in sorted(source.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        rel = path.relative_to(source).as_posix()
        name = path.name
        if UI_RE.match(name) or (not primary and RUNTIME_RE.match(name)):
            continue
        keep[rel] = path
    replaced = 0
    for rel in sorted(keep, key=lambda r: (r == ENTRY, r)):
        target = prepare_target(out_dir, f"{rel_dir}/{rel}")
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        if _same_file_bytes(keep[rel], target):
            continue
        move_into_place(keep[rel], target)
        replaced += 1
    folder = out_dir / rel_dir
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink() or (path.is_file() and rel not in keep):
            path.unlink()
        elif path.is_dir():
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty
    return replaced


def _same_file_bytes(a: Path, b: Path) -> bool:
    try:
        if b.is_symlink() or not b.is_file() or a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _remove_tree(folder: Path, within: Path) -> None:
    """Remove ``folder`` when it lies in ``within`` (a link planted there: only the link)."""
    if folder.is_symlink():
        folder.unlink()
    elif folder.is_dir() and is_inside(folder, within):
        shutil.rmtree(folder)
