"""Every cache key of the site build, and the rules for what a change invalidates.

This module is the one home of those rules: the stages compute their keys here and
nowhere else. The caches live in the build's cache folder (never in the published site,
see :mod:`.context`); losing any of them costs only time.

========================  ==========================================  =====================
what is kept              its key (all of it is hashed)               rebuilt when
========================  ==========================================  =====================
everything below          :func:`build_key`: publisher version and     any of those changes:
                          code, the redaction values and rule set      every page rendered,
                          (:func:`index_key`), manifest format, search fragments dropped,
                          on/off, every theme file (:func:`theme_key`) rows and shards redone
                          and the price table
a source's scan           its stamp (size, mtime), trusted only        the stamp changed, or
(summary, refs)           when the file was already that old when      the file was written
                          the last scan began (:func:`stamp_trusted`)  within RACY_NS of it;
                                                                       the content hash then
                                                                       decides
a session's pages         the file's content hash, and                 content or facts
(its comparison page,     :func:`facts_key` of what its pages show     changed, or its folder
``compare.html``, its     of others (parent chain, sub-sessions,       in the site is not as
images, ``img-*``)
                          reference targets, previous and next run     the last build left it
                          of its series, the page and anchor of the    (:func:`folder_intact`:
                          delegate call that spawned it); recomputed   a page deleted by
                          only when :func:`graph_key` changed; the     hand), or the previous
                          previous run's content hash                  run's content changed
                                                                       (the comparison page
                                                                       shows it)
a turn fragment           :func:`turn_key`: the turn, the targets      that turn changed, or
                          of the references it may link, the           what it links or
                          context boundaries starting at it, the       shows did
                          last turn index when it shows a              (an error or a
                          compaction note, the errors and decisions    decision placed in
                          placed in it (publisher/audit.py)            it appeared)
an index row              :func:`summary_key` of its session           that session's summary
a session's rows on the   :func:`archive_rows_key` of its session:     an error or decision
Errors and Decisions      name, kind, role, errors and decisions       added or changed, or
pages                     (attributed to turns and calls)              its kind or role
an archive-wide page      :func:`outputs_key` of its sessions' row     one of those changed
(its first screen)        keys, the kinds, the roles, the redaction
                          note and its shards' names
an archive-wide page's    :func:`outputs_key` of its sessions' row     a session of it
row shard                 keys; a session's shard is a hash of its     changed, or the count
(``events/*.js``)         name (:func:`.urls.row_slot`)                doubled
an index row shard        :func:`outputs_key` of its sessions'         a session of it
(``rows/*.js``)           summary keys; a session's shard is a hash    changed, or the count
                          of its name (:func:`.urls.row_slot`)         doubled
the activity chart        none: a pass over each session's             any summary changed
                          :func:`.activity.contribution` (kept in the
                          manifest), with the index page
the archive's graph key   :func:`graph_key`; the last build's is kept  see the delegation
                          when :func:`graph_unchanged` says so (no     tree, below
                          pass over every summary)
the delegation tree       :func:`graph_key`                            a session appeared,
                                                                       vanished, or changed
                                                                       parent, sub-sessions,
                                                                       role or creation time;
                                                                       a file was
                                                                       added or removed
a search session record   the session's pages: written by its render     its session was
(the cache)               (:mod:`.search.extract`)                     rendered
a search bundle           :func:`search_key` (search format, record     the key or bundle
(``search/<bundle>/``)    format, :func:`index_key`, the chunk sizes),  count changed, a
                          bundle count, :func:`bundle_members` (a       session of it came
                          digest of its sessions' folders); a           or went, or its meta
                          session's bundle is a hash of its name        file is missing; a
                          (:func:`.search.bundle.bundle_of`); its       session of it was
                          files' version, a hash of its records'        rendered and its
                          bytes (:func:`search_stale`, then             records' version
                          :func:`bundle_current`)                       changed
========================  ==========================================  =====================

Every build stats every session file and every session's folder in the site, in one pass
each (:func:`untrusted_stamps`, :func:`disturbed_folders`), except a build that ``site
watch`` started on events: it looks only at the files the events named and trusts the
site's folders, and its rescan looks at everything (:attr:`.context.Warm.seen`).

What changed since the last build, as the index stage sees it, is asked of the catalog
(:mod:`.catalog`: the rows this build set, against the last build's copies of them).

Hashes of Python values use ``pickle`` (several times faster than JSON or ``repr``): equal
values pickle alike here because they come from the same decoder in the same order, and
when two equal values pickle differently (shared strings), the cost is one cache miss,
never a wrong page.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from .summary import SUMMARY_FIELDS

if TYPE_CHECKING:
    from ..model import Turn
    from ..redact import Redactor
    from ..render.view import Boundary
    from ..theme import Theme
    from .summary import Summary

RACY_NS = 2_000_000_000
"""A file modified this close (ns) before the previous scan began is read again: it could
have changed a second time within the same mtime tick ("racy git")."""
STATE_FORMAT = 14
"""Bumped when what a build keeps changes meaning (12: the manifest files; 13: the catalog,
:mod:`.catalog`, whose own schema is checked too; 14: summaries and index rows with usage,
issue 29): every page is rendered again."""
SEARCH_FORMAT = 4
"""Bumped when the search index's layout changes: every bundle is written again."""


def stamp_trusted(old: tuple[int, int] | None, now: tuple[int, int], last_scan_ns: int) -> bool:
    """True when a source need not be read: its (size, mtime_ns) stamp ``now`` is the one
    recorded (``old``), it is a real stamp, and the file was already that old when the last
    scan began (``last_scan_ns``) minus RACY_NS."""
    return old == now and now != (0, 0) and now[1] < last_scan_ns - RACY_NS


UNTRUSTED_SQL = (
    "s.file_name IS NULL OR s.size != l.size OR s.mtime_ns != l.mtime_ns"
    " OR l.mtime_ns >= :racy OR (l.size = 0 AND l.mtime_ns = 0)"
)
""":func:`stamp_trusted` as SQL, for every listed file at once (:meth:`.catalog.Catalog.
mark_to_read`): ``l`` is the file's stamp now, ``s`` its row in the catalog (NULL: a new
file), ``:racy`` the last scan's start minus :data:`RACY_NS`. A file it holds must be read."""


def seen_names(names: Iterable[str], seen: Collection[str]) -> list[str]:
    """The files of ``names`` a watcher's events named since its last build
    (:attr:`.context.Warm.seen`): the only ones whose stamps such a build looks at (a write
    after that build's read has an event after its start; a file dropped by the OS's
    events waits for the watcher's rescan)."""
    return sorted(name for name in names if name in seen)


@contextlib.contextmanager
def stat_in(folder: str) -> Iterator[Callable[[str], os.stat_result]]:
    """``os.stat`` of names in ``folder``: relative to the folder held open where the OS
    allows it (no path strings made, one lookup each), else of the joined path. A folder
    that cannot be opened gives a stat that fails for every name."""
    if os.stat not in os.supports_dir_fd:
        yield lambda name: os.stat(os.path.join(folder, name))
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        error = exc

        def missing(name: str) -> os.stat_result:
            raise error

        yield missing
        return
    try:
        yield partial(os.stat, dir_fd=fd)
    finally:
        os.close(fd)


def theme_key(theme: Theme) -> str:
    """A hash of every file of every folder of the theme (names and bytes)."""
    digest = hashlib.sha256()
    for rel, path in theme.files():
        digest.update(rel.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def code_key() -> str:
    """A hash of the publisher's own Python files: a change to the renderers without a
    version bump (a development checkout, a patched install) must not reuse pages and
    fragments the old code made."""
    import publisher

    root = Path(publisher.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def index_key(*, redactor: Redactor | None, code: str) -> str:
    """The key of what the search index is made of (its records, and so its files'
    names: :func:`search_key`): the publisher (its version and :func:`code_key`, ``code``)
    and the redaction values (hashed, never stored) and rule set (its digest:
    ``Redactor.identity``). Not the theme nor the price table: neither shapes a record, so
    another theme or a newer genai-prices writes every page again but no file of the index
    (a site built where another genai-prices is installed has the same index)."""
    digest = hashlib.sha256()
    digest.update(f"{__version__}\0{code}\0".encode())
    if redactor is not None:
        digest.update(redactor.identity())
    return digest.hexdigest()


def build_key(*, search: bool, index: str, theme: str, prices: str = "") -> str:
    """The key of everything a build keeps: when it changes, nothing is reused.

    It covers ``index`` (:func:`index_key`: the publisher and the redaction), the state
    format, search on or off, ``theme`` (:func:`theme_key`) and the price table
    (``prices``: :attr:`publisher.usage.Prices.key`, the shipped table's version or a
    ``--prices`` file's digest: every figure of cost depends on it)."""
    digest = hashlib.sha256()
    digest.update(f"{index}\0{STATE_FORMAT}\0{search}\0".encode())
    digest.update(theme.encode())
    digest.update(f"\0{prices}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def summary_key(summary: Summary) -> str:
    """The key of a session's index row: a hash of every field of its summary."""
    values = tuple(getattr(summary, name) for name in SUMMARY_FIELDS)
    return hashlib.sha256(pickle.dumps(values, protocol=5)).hexdigest()


def archive_rows_key(summary: Summary) -> str:
    """The key of a session's rows on the archive-wide Failures and Decisions pages: its
    name, kind, role, and its failures and decisions (already attributed to turns and
    calls)."""
    values = (
        summary.name,
        summary.kind,
        summary.role,
        summary.failure_events,
        summary.decision_events,
    )
    return hashlib.sha256(pickle.dumps(values, protocol=5)).hexdigest()


def outputs_key(*parts: Iterable[str]) -> str:
    """The key of a file made of cached pieces (an index row shard: its sessions' summary
    keys; an archive-wide page: its sessions' row keys, the kinds and roles): when it is
    the last build's (same build key) and the file is as written, it is not made again."""
    digest = hashlib.sha256()
    for part in parts:
        items = list(part)
        text = "\0".join(items) + "\0" if items else ""
        digest.update(text.encode("utf-8", "surrogatepass") + b"\1")
    return digest.hexdigest()


def graph_unchanged(
    *,
    same_key: bool,
    last_graph: str,
    same_files: bool,
    changes: Iterable[tuple[str | None, str | None]],
) -> bool:
    """True when the archive's :func:`graph_key` is the last build's (``last_graph``)
    without computing it again over every session: the build key and the folder's file
    names are the same (``same_files``), and every file set or dropped this build has the
    shape it had (``changes``: its graph shape then and now, None when it was or is not
    published: :meth:`.catalog.Catalog.shape_changes`). Whether a file is published (a
    second file of a session name is not) depends only on those, so the published
    sessions are the same too."""
    if not (same_key and last_graph and same_files):
        return False
    return all(old == new for old, new in changes)


def folder_stamp(path: str) -> tuple[int, int]:
    """The stamp of a session's folder in the site: (inode, mtime_ns), (0, 0) when it is
    missing. Taken when a build has written it (:attr:`.manifest.SourceState.site`)."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_ino, st.st_mtime_ns)


def folder_intact(recorded: tuple[int, int], path: str) -> bool:
    """True when the session's folder in the site is as the last build that wrote it left
    it: one ``stat`` a session, not one per page. Removing or adding a file in a folder
    changes its mtime, and replacing the folder (or ``sessions/``) its inode, so a page
    deleted by hand is rendered again; a deletion within the same mtime tick as the
    build's last write to that folder (a few ms) would not be seen. A page edited in place
    (same file) is not noticed, as before: only missing pages are restored."""
    return _intact(recorded, folder_stamp(path))


def _intact(recorded: tuple[int, int], now: tuple[int, int]) -> bool:
    """:func:`folder_intact`'s comparison: a stamp was recorded, and it is the folder's now."""
    return recorded != (0, 0) and now == recorded


def disturbed_folders(
    sessions_folder: str, recorded: Iterable[tuple[str, str, int, int]], *, watched: bool = False
) -> set[str]:
    """The sessions whose folder in the site fails :func:`folder_intact`, in one pass:
    ``recorded`` gives each session's name, its folder's name under the site's
    ``sessions/`` (``sessions_folder``) and the (inode, mtime_ns) the last build recorded.
    Each folder is stat'ed relative to ``sessions/`` (one lookup, no path strings made).

    ``watched``: a build told by a watcher what changed (:attr:`.context.Warm.seen`)
    checks no folder: a page deleted by hand while ``site watch`` runs is written again by
    its next rescan (``WatchOptions.rescan_interval``), which checks every one."""
    disturbed: set[str] = set()
    if watched:
        return disturbed
    with stat_in(sessions_folder) as stat:
        for name, folder, ino, mtime_ns in recorded:
            try:
                st = stat(folder)
            except OSError:
                disturbed.add(name)
                continue
            if not _intact((ino, mtime_ns), (st.st_ino, st.st_mtime_ns)):
                disturbed.add(name)
    return disturbed


def stale_candidates(
    *, same_key: bool, same_graph: bool, touched: Iterable[str]
) -> set[str] | None:
    """The sessions :func:`session_stale` may find stale: None (every one) when the build
    key or the archive's graph changed; else only those ``touched`` (content changed,
    previous run changed, folder disturbed: :func:`disturbed_folders`), since for the
    others every clause of the rule is false. An append asks the rule of a few sessions."""
    if same_key and same_graph:
        return set(touched)
    return None


def graph_key(shapes: Iterable[str], file_names: Iterable[str]) -> str:
    """A hash of the archive's shape, everything the facts of any page depend on: each
    published session's name, file, parent, role, creation time (the order of a role's
    series of runs), declared sub-sessions and delegate calls (where each is: the pages of
    the sub-sessions it spawned link to it), as the catalog keeps them (its ``shape``, JSON,
    by session name), and the folder's file names (``#id`` lookups), by name. Streamed: no
    table of every session is made for it."""
    digest = hashlib.sha256()
    for shape in shapes:
        digest.update(shape.encode("ascii") + b"\n")  # (JSON: ASCII, no raw line break)
    digest.update(b"\0")
    for name in file_names:
        digest.update(name.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def facts_key(
    lineage: object,
    lineage_cycle: bool,
    children: object,
    refs: dict[str, str],
    series: tuple[str, str] = ("", ""),
    spawned_at: str = "",
    delegated: tuple[str, ...] = (),
    outcomes: object = (),
    below: object = None,
) -> str:
    """The key of what a session's pages show about other sessions (``series``: the
    previous and next run of its role's series; ``spawned_at``: the call that spawned it;
    ``delegated``: the sub-session each of its delegate calls spawned; ``outcomes`` and
    ``below``: what its sub-sessions did)."""
    values = (lineage, lineage_cycle, children, sorted(refs.items()), series, spawned_at)
    return hashlib.sha256(pickle.dumps((*values, delegated, outcomes, below))).hexdigest()


def refs_key(refs: dict[str, str]) -> str:
    """The key of the reference targets a session's turns may link."""
    return hashlib.sha256(pickle.dumps(sorted(refs.items()))).hexdigest()


def turn_key(
    turn: Turn,
    refs: str,
    boundaries: list[Boundary],
    last_index: int,
    anchor: str,
    notes: object = None,
) -> str:
    """The key of a turn fragment: everything ``turn.html`` reads.

    That is the turn itself (pickled as it is: its bytes are a function of its content),
    the reference targets (``refs``: :func:`refs_key`), the context boundaries that start
    at it, the session's last turn index when it holds a compaction note (the note names
    it; other turns keep their key when a turn is appended), its anchor, and the ``notes``
    it shows of what the session keeps outside the turn: the errors placed in it and the
    permission decisions matched to its calls (:func:`publisher.render.places.turn_notes`).
    The theme and the publisher version are not in it: the build key drops the whole cache
    for those (and so for a change of this function: :func:`code_key`).

    The hash is BLAKE2b (32 bytes), not SHA-256: a turn's pickle holds all its tool
    output, so this hashes about as many bytes as the archive holds, at every full build,
    and BLAKE2b is about twice as fast in CPython's build of it.
    """
    shown_last = last_index if reads_last_index(turn) else 0
    data = pickle.dumps((turn, refs, boundaries, shown_last, notes), protocol=5)
    return hashlib.blake2b(data, digest_size=32).hexdigest() + anchor


def reads_last_index(turn: Turn) -> bool:
    """True when a turn's HTML shows the session's last turn index (a compaction note)."""
    from ..model import CommandPart

    return any(isinstance(p, CommandPart) and p.is_compaction for p in turn.parts)


def search_key(index: str, record_format: int, chunk_bytes: int, doc_bytes: int) -> str:
    """The key of the whole search index: its format, the records' format, ``index``
    (:func:`index_key`: the publisher and the redaction) and the chunk sizes. Another key
    writes every bundle."""
    text = f"{SEARCH_FORMAT}\0{record_format}\0{index}\0{chunk_bytes}\0{doc_bytes}"
    return hashlib.sha256(text.encode()).hexdigest()


def bundle_members(slugs: Iterable[str]) -> str:
    """A digest of a bundle's sessions (their folders, sorted)."""
    digest = hashlib.sha256()
    for slug in sorted(slugs):
        digest.update(slug.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def search_stale(
    *,
    same_key: bool,
    members_then: str | None,
    members_now: str,
    rendered: bool,
    pending: bool,
    meta_present: Callable[[], bool],
    terms_kept: bool,
) -> bool:
    """The rule for writing a search bundle again: the index's key or bundle count changed
    (``same_key``), it is new or its sessions are not the same (``members_then`` against
    ``members_now``), one of its sessions was rendered by this build (its record may have
    changed), a deferred build left it to write (``pending``), its meta file is not in
    the site (``meta_present``), or the cache lost its term entries (``terms_kept``: the
    shared term chunks are made of them)."""
    return (
        not same_key
        or members_then != members_now
        or rendered
        or pending
        or not terms_kept
        or not meta_present()
    )


def bundle_current(
    written: str | None,
    meta: str,
    files_known: bool,
    meta_present: Callable[[], bool],
    terms_kept: Callable[[], bool],
) -> bool:
    """The rule for a search bundle :func:`search_stale` sends to be written: its files need
    not be made again when its records now hash to the version its files were last made of
    (``meta``, its meta file's name by :func:`.search.bundle.bundle_version` of the index
    key, the bundle and every record's bytes, against ``written``, the one the last build
    recorded; None: none), the names of the files it was made of are kept (``files_known``:
    they are named by what they hold, and any other file in its folder is removed) and that
    meta file, written after every other file of the version, is in the site
    (``meta_present``), and the cache keeps its term entries of that version
    (``terms_kept``: the shared term chunks are made of them). A session rendered again
    whose record came out the same (the next run of a series, whose comparison page shows
    an appended turn) costs one read of the bundle's records, not the bundle."""
    return written == meta and files_known and meta_present() and terms_kept()


def session_stale(
    *,
    same_key: bool,
    content_changed: bool,
    same_graph: bool,
    facts_then: str,
    compared_changed: bool = False,
    below_changed: bool = False,
    facts_now: Callable[[], str],
    outputs_present: Callable[[], bool],
) -> bool:
    """The rule for rendering a session's pages again: the build key changed, the file's
    content changed, the content of the previous run of its series changed (its comparison
    page shows both: ``compared_changed``), the archive's shape changed, or the content of a
    session below it did (its pages show what its sub-sessions did: ``below_changed``), and
    with it the facts its pages show (``facts_now()`` differs from ``facts_then``: computed
    only then), or its folder in the site is not as the last build left it
    (``outputs_present``: :func:`folder_intact`)."""
    return (
        not same_key
        or content_changed
        or compared_changed
        or ((not same_graph or below_changed) and facts_now() != facts_then)
        or not outputs_present()
    )
