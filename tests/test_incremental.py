"""Incremental builds give exactly what a fresh full build gives (hypothesis, stateful)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from publisher.site.context import Tunables, Warm
from publisher.site.fragments import SUFFIX as FRAGMENT_SUFFIX
from tests.helpers import (
    JOB,
    MAIN,
    NOTES,
    OLD_NS,
    RACY_WINDOW_NS,
    REVIEW,
    SECURITY,
    age,
    build,
    cache_of,
    copy_samples,
    fresh_digest,
    page_of,
    part,
    session_doc,
    tree_digest,
    turn,
    write_json,
)

pytestmark = pytest.mark.site

NAMES = [f"ses_20260101_00000{i}_abc00{i}" for i in range(4)] + [
    "sub_20260101_000009_abc009",
    "notes",
]
# Texts reference every session (by #id or session:name), so that any session appearing,
# going or changing can change what another session's pages show.
words = st.sampled_from(
    ["alpha", "`code`", "**bold**", "<b>x</b>", "## h"]
    + [f"#{name[-6:]}" for name in NAMES if name.count("_") == 3]
    + ["session:notes", "#abc004"]
)


#: A memory file system where there is one: the machine builds two sites at every step, and
#: its examples run twice as fast there (CI runs many of them).
FAST_TMP = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


class ArchiveMachine(RuleBasedStateMachine):
    """Adds, edits, appends, renames, deletes and corrupts files and changes roles; after
    every step the incremental build equals a fresh one."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="incr-", dir=FAST_TMP))
        self.sessions = self.root / "sessions"
        self.sessions.mkdir()
        self.out = self.root / "site"
        self.docs: dict[str, dict[str, Any]] = {}
        self.steps = 0
        self.outputs: dict[str, str] = {}
        self.options: dict[str, Any] = {}
        """What every build of this machine, incremental and fresh, is given."""

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def write(self, file_name: str, doc: dict[str, Any] | str) -> None:
        data = doc if isinstance(doc, str) else json.dumps(doc, indent=1)
        path = self.sessions / file_name
        path.write_text(data, encoding="utf-8")
        # Keep stamps moving like a real clock does, even within one mtime tick.
        self.steps += 1
        os.utime(
            path,
            ns=(1_700_000_000_000_000_000 + self.steps, 1_700_000_000_000_000_000 + self.steps),
        )

    @rule(name=st.sampled_from(NAMES), text=words, parent=st.sampled_from(["", *NAMES]))
    def add(self, name: str, text: str, parent: str) -> None:
        doc = session_doc(
            name, parent_id=parent, turns=[turn(1, part("user", text), part("text", text))]
        )
        if parent and parent in self.docs:
            self.docs[parent]["sub_sessions"] = sorted({*self.docs[parent]["sub_sessions"], name})
            self.write(f"{parent}.json", self.docs[parent])
        self.docs[name] = doc
        self.write(f"{name}.json", doc)

    @precondition(lambda self: self.docs)
    @rule(data=st.data(), text=words)
    def append_turn(self, data: st.DataObject, text: str) -> None:
        name = data.draw(st.sampled_from(sorted(self.docs)))
        doc = self.docs[name]
        doc["turns"].append(
            turn(
                len(doc["turns"]) + 1,
                part("user", text),
                part("command", "/compact", summary=text, compact_from=len(doc["turns"])),
            )
        )
        self.write(f"{name}.json", doc)

    @precondition(lambda self: self.docs)
    @rule(data=st.data(), text=words)
    def edit_first_turn(self, data: st.DataObject, text: str) -> None:
        name = data.draw(st.sampled_from(sorted(self.docs)))
        self.docs[name]["turns"][0]["parts"][0]["text"] = text
        self.write(f"{name}.json", self.docs[name])

    @precondition(lambda self: self.docs)
    @rule(data=st.data(), new=st.sampled_from(NAMES))
    def rename(self, data: st.DataObject, new: str) -> None:
        name = data.draw(st.sampled_from(sorted(self.docs)))
        if new in self.docs:
            return
        doc = self.docs.pop(name)
        doc["session_name"] = new
        (self.sessions / f"{name}.json").unlink()
        self.docs[new] = doc
        self.write(f"{new}.json", doc)

    @precondition(lambda self: self.docs)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.docs)))
        del self.docs[name]
        (self.sessions / f"{name}.json").unlink()

    @precondition(lambda self: self.docs)
    @rule(data=st.data())
    def half_write(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.docs)))
        text = json.dumps(self.docs.pop(name))
        self.write(f"{name}.json", text[: len(text) // 2])

    @precondition(lambda self: self.docs)
    @rule(data=st.data(), role=st.sampled_from(["", "reviewer", "auditor"]))
    def set_role(self, data: st.DataObject, role: str) -> None:
        """A role shows on the parent's page (its list of sub-sessions)."""
        name = data.draw(st.sampled_from(sorted(self.docs)))
        self.docs[name]["role"] = role
        self.write(f"{name}.json", self.docs[name])

    @rule()
    def touch_without_change(self) -> None:
        for path in sorted(self.sessions.glob("*.json"))[:1]:
            self.steps += 1
            os.utime(path, ns=(1_800_000_000_000_000_000 + self.steps,) * 2)

    def build(self) -> None:
        """An incremental build; the files it reports changed are those whose bytes differ
        from the last build's outputs (what ``site watch`` reloads)."""
        report = build(self.sessions, self.out, **self.options)
        before, after = self.outputs, report.outputs
        assert report.changed == sorted(
            rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)
        )
        self.outputs = after

    @rule()
    def incremental_build(self) -> None:  # then the invariant's: a build with nothing changed
        self.build()

    @invariant()
    def incremental_equals_full(self) -> None:
        # Every step is followed by an incremental build checked against a fresh one.
        self.build()
        fresh = self.root / "fresh"
        shutil.rmtree(fresh, ignore_errors=True)
        build(self.sessions, fresh, **self.options)
        assert tree_digest(self.out) == tree_digest(fresh)


class SearchArchiveMachine(ArchiveMachine):
    """The same steps with the search index on, in small bundles and chunks (several of
    each from a few sessions): every file of ``search/`` equals a fresh build's too."""

    def __init__(self) -> None:
        super().__init__()
        small = Tunables(
            sessions_per_bundle=1, max_bundles=4, search_chunk_bytes=120, search_doc_bytes=200
        )
        self.options = {"search": True, "tunables": small}


class WatchedArchiveMachine(ArchiveMachine):
    """The same steps, each built as ``site watch`` builds: one :class:`Warm` kept from
    build to build, told which files changed (``seen``) and whether one was created,
    deleted or moved (``relist``), as a watcher that drops no event tells it. What it
    keeps (the listing, the census of published files, the graph's whole-archive tables)
    must make the same site as a fresh build."""

    def __init__(self) -> None:
        super().__init__()
        self.warm = Warm()
        self.stamps: dict[str, tuple[int, int, int]] = {}

    def build(self) -> None:
        now = {}
        for path in self.sessions.iterdir():
            st = path.stat()
            now[path.name] = (st.st_size, st.st_mtime_ns, st.st_ino)
        before, self.stamps = self.stamps, now
        self.warm.seen = {n for n in before.keys() | now.keys() if before.get(n) != now.get(n)}
        self.warm.relist = before.keys() != now.keys()
        report = build(self.sessions, self.out, self.warm)
        before_outputs, after = self.outputs, report.outputs
        assert report.changed == sorted(
            rel
            for rel in before_outputs.keys() | after.keys()
            if before_outputs.get(rel) != after.get(rel)
        )
        self.outputs = after


# Examples: the hypothesis profile's (conftest.py): 25 by default, many more in CI, where
# the state machine must catch a dropped page dependency every time. Its own timeout: the ci
# profile's run takes 5-6 min on the CI machine (1 December 2026), and shrinking a failure
# up to 5 more (pytest-timeout's 300 s would cut the shrinking short and add a spurious
# "flaky" report to the real failure).
ArchiveMachine.TestCase.settings = settings(stateful_step_count=12, deadline=None)
TestIncremental = pytest.mark.timeout(1200)(pytest.mark.slow(ArchiveMachine.TestCase))
SearchArchiveMachine.TestCase.settings = settings(
    stateful_step_count=12, deadline=None, max_examples=25
)
TestSearchIncremental = pytest.mark.timeout(1200)(pytest.mark.slow(SearchArchiveMachine.TestCase))
# Fewer examples: most of what it exercises is the machine above's.
WatchedArchiveMachine.TestCase.settings = settings(
    stateful_step_count=12, deadline=None, max_examples=25
)
TestWatchedIncremental = pytest.mark.timeout(1200)(pytest.mark.slow(WatchedArchiveMachine.TestCase))


def test_noop_build_reads_no_session_file(tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    first = build(sessions, tmp_path / "site")
    assert first.files_read == 7 and first.sessions_rendered == 5
    again = build(sessions, tmp_path / "site")
    assert (again.files_read, again.sessions_rendered, again.files_written) == (0, 0, 0)


def append_prompt(path: Path, text: str) -> None:
    """Append a turn holding the prompt ``text`` to the session file ``path``."""
    doc = json.loads(path.read_text())
    doc["turns"].append(turn(len(doc["turns"]) + 1, part("user", text)))
    path.write_text(json.dumps(doc))


def test_noop_build_touches_no_row_and_the_next_change_is_seen(tmp_path: Path) -> None:
    """A build that read nothing and changed nothing writes no file of the site and sets no
    row of the catalog (what it knows of every session stays as the last build wrote it);
    an append after it is read and rendered."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)  # the copies' stamps are old: the next build trusts them
    before = catalog_rows(out)
    noop = build(sessions, out)
    assert (noop.files_read, noop.sessions_rendered, noop.files_written) == (0, 0, 0)
    assert noop.changed == []
    assert catalog_rows(out) == before
    path = sessions / f"{SECURITY}.json"
    append_prompt(path, "one more after a no-op")
    report = build(sessions, out)
    assert (report.files_read, report.sessions_rendered) == (1, 1)
    assert catalog_rows(out) != before
    assert "one more after a no-op" in page_of(out, SECURITY).read_text(encoding="utf-8")
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


def catalog_rows(out: Path) -> list[tuple[object, ...]]:
    """Every row the catalog of the site ``out`` keeps of its sessions."""
    con = sqlite3.connect(cache_of(out).catalog)
    try:
        return [
            row
            for table in ("sources", "summaries", "events")
            for row in con.execute(f"SELECT * FROM {table} ORDER BY 1")
        ]
    finally:
        con.close()


@pytest.mark.parametrize("damage", ["page", "folder", "sessions", "added"])
def test_a_page_deleted_from_the_site_by_hand_is_written_again(tmp_path: Path, damage: str) -> None:
    """The one rule that reads the site (staleness.folder_intact): a session's folder that is
    not as the last build left it renders that session again, and only that one."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    page = page_of(out, SECURITY)
    if damage == "page":
        page.unlink()
    elif damage == "folder":
        shutil.rmtree(page.parent)
    elif damage == "sessions":
        shutil.rmtree(out / "sessions")
    else:  # a file of someone else's: the folder changed, so it is rendered again
        (page.parent / "stray.html").write_text("not ours")
    report = build(sessions, out)
    assert report.files_read == 0
    assert report.sessions_rendered == (5 if damage == "sessions" else 1)
    assert page.is_file()
    stray = f"{page.parent.relative_to(out).as_posix()}/stray.html"
    assert tree_digest(out) == {
        **fresh_digest(sessions, tmp_path / "fresh"),
        **({stray: tree_digest(out)[stray]} if damage == "added" else {}),
    }
    assert build(sessions, out).sessions_rendered == 0  # the folder's new stamp is kept


@pytest.mark.parametrize("damage", ["page", "sessions"])
def test_the_site_folders_checked_in_a_process_of_their_own(
    tmp_path: Path, monkeypatch: Any, damage: str
) -> None:
    """On a large archive the site's folders are checked in a forked process while the
    build scans (``FolderCheck``): a page deleted by hand is written again as when the
    build checks them itself, and a session this build set is checked by the build."""
    from publisher.site.stages import plan as plan_stage

    found: list[set[str] | None] = []
    real = plan_stage.FolderCheck.result

    def result(self: Any) -> set[str] | None:
        found.append(real(self))
        return found[-1]

    monkeypatch.setattr(plan_stage.FolderCheck, "result", result)
    tunables = Tunables(fork_check_bytes=0)  # every catalog is large enough
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out, tunables=tunables)
    if damage == "page":
        page_of(out, JOB).unlink()
    else:
        shutil.rmtree(out / "sessions")
    append_prompt(sessions / f"{SECURITY}.json", "set this build")
    report = build(sessions, out, tunables=tunables)
    # The forked process found the disturbed folders (every one when ``sessions/`` went).
    assert found[-1] == ({JOB} if damage == "page" else {JOB, MAIN, SECURITY, NOTES, REVIEW})
    assert report.sessions_rendered == (5 if damage == "sessions" else 2)
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")
    assert build(sessions, out, tunables=tunables).sessions_rendered == 0


def test_a_build_without_its_cache_sweeps_only_a_site_that_was_there(tmp_path: Path) -> None:
    """With no catalog to say what the site holds, a build removes the files of ours it
    did not write (a session deleted while the cache was lost) only when our folders were
    there before it wrote: a first build into a new folder has nothing to sweep and does
    not list the folders it made; a folder of someone else's keeps its files."""
    from publisher.site.catalog import Catalog
    from publisher.site.context import BuildContext, BuildOptions
    from publisher.site.stages.write import must_sweep

    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    ctx = BuildContext.open(BuildOptions(sessions_dir=sessions, out_dir=out), None)
    assert not must_sweep(ctx, Catalog.memory())  # nothing there yet
    build(sessions, out)
    gone = page_of(out, SECURITY)
    assert gone.is_file()
    (sessions / f"{SECURITY}.json").unlink()
    shutil.rmtree(cache_of(out).root)
    # A row shard of the Errors page from a larger archive, once.
    old_shard = out / "events" / "errors-0009-of-0010.js"
    old_shard.parent.mkdir(exist_ok=True)
    old_shard.write_text("polyglavEvents();")
    assert must_sweep(ctx, Catalog.memory())
    report = build(sessions, out)
    assert not gone.exists() and not old_shard.exists() and report.files_removed >= 2
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")

    # Someone else's folder: no index page of ours, so nothing of it is removed.
    theirs = tmp_path / "theirs"
    (theirs / "sessions").mkdir(parents=True)
    (theirs / "sessions" / "notes.txt").write_text("mine")
    build(sessions, theirs)
    assert (theirs / "sessions" / "notes.txt").read_text() == "mine"

    # A first build stopped before its index page: the cache's mark says the folder is ours.
    stopped = tmp_path / "stopped"
    stray = stopped / "sessions" / "gone_session" / "index.html"
    stray.parent.mkdir(parents=True)
    stray.write_text("a page of a session deleted since")
    cache_of(stopped).root.mkdir(parents=True)
    cache_of(stopped).building.touch()
    build(sessions, stopped)
    assert not stray.exists()
    assert tree_digest(stopped) == tree_digest(tmp_path / "fresh")


def test_a_watched_build_looks_only_at_the_files_the_watcher_saw(tmp_path: Path) -> None:
    """``site watch`` tells each build which session files had events since its last build
    (``Warm.seen``): only those are stat'ed and read, and no file of the site is checked
    (a session's folder, the index stage's files). A change it did not report (dropped by
    the OS), and a page deleted by hand, wait for the
    next build without hints (its rescan). Hints are ignored when the manifest is not the
    one this caller's own last build wrote."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    warm = Warm()
    build(sessions, out, warm)
    reported, unreported = sessions / f"{SECURITY}.json", sessions / f"{MAIN}.json"
    for path, text in ((reported, "seen by the watcher"), (unreported, "an event dropped")):
        doc = json.loads(path.read_text())
        doc["turns"].append(turn(len(doc["turns"]) + 1, part("user", text)))
        path.write_text(json.dumps(doc))
    age(reported, unreported)  # past the racy window: a read file is trusted next time
    page_of(out, JOB).unlink()
    (out / "decisions.html").unlink()  # a file of the index stage, as trusted
    warm.seen = {reported.name}
    report = build(sessions, out, warm)
    assert (report.files_read, report.sessions_rendered) == (1, 1)
    assert warm.seen is None  # taken by the build
    assert "seen by the watcher" in page_of(out, SECURITY).read_text(encoding="utf-8")
    assert "an event dropped" not in page_of(out, MAIN).read_text(encoding="utf-8")
    assert not page_of(out, JOB).exists()
    assert not (out / "decisions.html").exists()
    assert set(report.changed) >= {page_of(out, SECURITY).relative_to(out).as_posix()}
    rescan = build(sessions, out, warm)  # no hints: every file stat'ed, every folder checked
    assert rescan.files_read == 1 and rescan.sessions_rendered == 2
    assert "an event dropped" in page_of(out, MAIN).read_text(encoding="utf-8")
    assert page_of(out, JOB).is_file() and (out / "decisions.html").is_file()
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")
    # A caller whose hints are not about the build that wrote the manifest (here, one that
    # has not built yet): they are not used, so a change it did not report is still read.
    doc = json.loads(reported.read_text())
    doc["turns"].append(turn(len(doc["turns"]) + 1, part("user", "after another build")))
    reported.write_text(json.dumps(doc))
    age(reported)
    assert build(sessions, out, Warm(seen=set())).files_read == 1
    assert "after another build" in page_of(out, SECURITY).read_text(encoding="utf-8")
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh2")


def test_the_fragments_of_a_session_no_longer_published_are_removed(tmp_path: Path) -> None:
    """The cache keeps no turn fragments of a session whose file was deleted, or whose
    file now holds another session name; the others' stay."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    folder = cache_of(out).fragments

    def kept() -> set[str]:
        return {p.name.removesuffix(FRAGMENT_SUFFIX) for p in folder.iterdir()}

    assert {JOB, MAIN, SECURITY} <= kept()
    (sessions / f"{JOB}.json").unlink()
    doc = json.loads((sessions / f"{SECURITY}.json").read_text())
    doc["session_name"] = "sub_20260817_122000_renamed"
    (sessions / f"{SECURITY}.json").write_text(json.dumps(doc))
    build(sessions, out)
    assert JOB not in kept() and SECURITY not in kept()
    assert {MAIN, "sub_20260817_122000_renamed"} <= kept()


@pytest.mark.parametrize("stage", ["save_state", "index"])
def test_a_build_stopped_before_saving_its_state_then_a_file_reverted(
    tmp_path: Path, monkeypatch: Any, stage: str
) -> None:
    """A build that wrote pages, then stopped before saving its manifest (killed, a crash);
    the file is then put back as it was, stamp and all. The next build must not trust the
    site's files to hold what the manifest recorded: it equals a fresh build. Index
    shards from two sessions on, so row shards are written too."""
    import publisher.site.build as site_build

    tunables = Tunables(index_first_rows=2, rows_per_shard=1)
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out, tunables=tunables)
    path = sessions / f"{SECURITY}.json"
    original, stamp = path.read_bytes(), path.stat().st_mtime_ns
    doc = json.loads(original)
    doc["role"] = "auditor-of-the-stopped-build"
    path.write_text(json.dumps(doc))

    def stop(*args: object, **kwargs: object) -> None:
        raise RuntimeError("stopped")

    with monkeypatch.context() as patched, pytest.raises(RuntimeError):
        patched.setattr(site_build, stage, stop)
        build(sessions, out, tunables=tunables)
    path.write_bytes(original)
    os.utime(path, ns=(stamp, stamp))
    report = build(sessions, out, tunables=tunables)
    assert report.files_read == 0  # the file is as the manifest has it
    assert "auditor-of-the-stopped-build" not in "".join(
        p.read_text(encoding="utf-8") for p in out.rglob("*.html")
    )
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", tunables=tunables)
    assert not cache_of(out).building.exists()


def test_stat_passes_where_the_os_cannot_stat_relative_to_a_folder(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Where ``os.stat`` takes no ``dir_fd`` (Windows), the scan's and the plan's passes stat
    joined paths, with the same results: unchanged files trusted, a changed one read, a
    page deleted by hand written again."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    monkeypatch.setattr(os, "supports_dir_fd", set())
    page_of(out, JOB).unlink()
    path = sessions / f"{SECURITY}.json"
    append_prompt(path, "read through joined paths")
    report = build(sessions, out)
    assert (report.files_read, report.sessions_rendered) == (1, 2)
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


def test_append_rerenders_one_session_and_its_dependents(tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    build(sessions, tmp_path / "site")
    path = sessions / f"{SECURITY}.json"
    doc = json.loads(path.read_text())
    doc["turns"].append(turn(3, part("user", "one more")))
    path.write_text(json.dumps(doc))
    report = build(sessions, tmp_path / "site")
    assert report.files_read == 1
    assert report.sessions_rendered == 1  # its summary's facts for others did not change
    # A change of role changes what the parent page shows: the parent is rerendered too.
    doc["role"] = "auditor"
    path.write_text(json.dumps(doc))
    report = build(sessions, tmp_path / "site")
    assert report.sessions_rendered == 2


@pytest.mark.parametrize("lag", ["1 ms", "a quarter window"])
def test_same_size_rewrite_with_the_same_mtime_is_read_again(tmp_path: Path, lag: str) -> None:
    """A file rewritten with the same size and the same mtime soon after a build (a coarse
    file-system clock, or a writer that restores the stamp) is read again by the next build,
    because its stamp was too recent to trust then (the racy-stamp rule): its page changes.
    The stamp lags the write by 1 ms, or by a quarter of the racy window."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    out = tmp_path / "site"
    path = sessions / f"{MAIN}.json"
    lag_ns = 1_000_000 if lag == "1 ms" else RACY_WINDOW_NS // 4
    stamp = time.time_ns() - lag_ns
    write_json(path, session_doc(turns=[turn(1, part("user", "version AAAA"))]), stamp)
    build(sessions, out)
    if time.time_ns() - stamp >= RACY_WINDOW_NS:  # the rule covers stamps within the window
        pytest.skip("the first build took longer than the racy window; cannot tell")
    assert "version AAAA" in page_of(out, MAIN).read_text(encoding="utf-8")
    size = path.stat().st_size
    write_json(path, session_doc(turns=[turn(1, part("user", "version BBBB"))]), stamp)
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (size, stamp)  # same stamp
    report = build(sessions, out)
    assert report.files_read == 1
    html = page_of(out, MAIN).read_text(encoding="utf-8")
    assert "version BBBB" in html and "version AAAA" not in html
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


def test_a_stamp_trusted_once_old_enough(tmp_path: Path) -> None:
    """A racy file is read again only until a build scans it later than the window after
    its mtime: from then on an unchanged stamp is trusted (no file read)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    path = write_json(sessions / f"{MAIN}.json", session_doc(turns=[turn(1, part("user", "x"))]))
    os.utime(path, ns=(time.time_ns() - 2 * RACY_WINDOW_NS,) * 2)
    build(sessions, tmp_path / "site")
    assert build(sessions, tmp_path / "site").files_read == 0


def ref_session(name: str, *texts: str, **fields: Any) -> dict[str, Any]:
    return session_doc(name, turns=[turn(1, *(part("text", t) for t in texts))], **fields)


# Each scenario: the sessions of a first build, then a change to one session (None deletes
# it) that changes what another session's pages show (the page dependencies).
DEPENDENCIES = {
    "a reference target appears": (
        {"ses_20260101_000001_abc001": ref_session("ses_20260101_000001_abc001", "see #abc002")},
        ("ses_20260101_000002_abc002", ref_session("ses_20260101_000002_abc002", "here")),
    ),
    "a reference target goes": (
        {
            "ses_20260101_000001_abc001": ref_session(
                "ses_20260101_000001_abc001", "see #abc002 and session:notes"
            ),
            "ses_20260101_000002_abc002": ref_session("ses_20260101_000002_abc002", "here"),
            "notes": ref_session("notes", "plain"),
        },
        ("notes", None),
    ),
    "a sub-session appears": (
        {
            "ses_20260101_000001_abc001": ref_session(
                "ses_20260101_000001_abc001", "parent", sub_sessions=["sub_20260101_000009_abc009"]
            )
        },
        (
            "sub_20260101_000009_abc009",
            ref_session(
                "sub_20260101_000009_abc009", "child", parent_id="ses_20260101_000001_abc001"
            ),
        ),
    ),
    "a sub-session changes role": (
        {
            "ses_20260101_000001_abc001": ref_session(
                "ses_20260101_000001_abc001", "parent", sub_sessions=["sub_20260101_000009_abc009"]
            ),
            "sub_20260101_000009_abc009": ref_session(
                "sub_20260101_000009_abc009", "child", parent_id="ses_20260101_000001_abc001"
            ),
        },
        (
            "sub_20260101_000009_abc009",
            ref_session(
                "sub_20260101_000009_abc009",
                "child",
                parent_id="ses_20260101_000001_abc001",
                role="auditor",
            ),
        ),
    ),
    "the previous run of a series changes": (
        {
            "job_20260101_000001_abc001": ref_session(
                "job_20260101_000001_abc001",
                "ok",
                role="nightly",
                created_at="2026-01-01T00:00:01Z",
            ),
            "job_20260101_000002_abc002": ref_session(
                "job_20260101_000002_abc002",
                "ok",
                role="nightly",
                created_at="2026-01-02T00:00:01Z",
            ),
        },
        (
            "job_20260101_000001_abc001",
            session_doc(
                "job_20260101_000001_abc001",
                role="nightly",
                created_at="2026-01-01T00:00:01Z",
                turns=[turn(1, part("text", "ok"), status="error")],
            ),
        ),
    ),
    "a run joins a series between two": (
        {
            "job_20260101_000001_abc001": ref_session(
                "job_20260101_000001_abc001",
                "one",
                role="nightly",
                created_at="2026-01-01T00:00:01Z",
            ),
            "job_20260101_000003_abc003": ref_session(
                "job_20260101_000003_abc003",
                "three",
                role="nightly",
                created_at="2026-01-03T00:00:01Z",
            ),
        },
        (
            "job_20260101_000002_abc002",
            ref_session(
                "job_20260101_000002_abc002",
                "two",
                role="nightly",
                created_at="2026-01-02T00:00:01Z",
            ),
        ),
    ),
    "a parent goes": (
        {
            "ses_20260101_000001_abc001": ref_session(
                "ses_20260101_000001_abc001", "parent", sub_sessions=["sub_20260101_000009_abc009"]
            ),
            "sub_20260101_000009_abc009": ref_session(
                "sub_20260101_000009_abc009", "child", parent_id="ses_20260101_000001_abc001"
            ),
        },
        ("ses_20260101_000001_abc001", None),
    ),
}


@pytest.mark.parametrize("scenario", DEPENDENCIES)
def test_a_change_rerenders_the_pages_that_show_it(tmp_path: Path, scenario: str) -> None:
    """Changing one session updates the pages of the others that show it (references,
    sub-sessions and their roles, the parent chain): the incremental site equals a fresh
    build, and at least one other session's page changed."""
    first, (name, doc) = DEPENDENCIES[scenario]
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for file_name, content in first.items():
        write_json(sessions / f"{file_name}.json", content, OLD_NS)
    out = tmp_path / "site"
    build(sessions, out)
    before = tree_digest(out)
    if doc is None:
        (sessions / f"{name}.json").unlink()
    else:
        write_json(sessions / f"{name}.json", doc)
    build(sessions, out)
    after = tree_digest(out)
    assert after == fresh_digest(sessions, tmp_path / "fresh")
    others = [n for n in first if n != name]
    assert any(
        before.get(rel) != after.get(rel)
        for other in others
        for rel in {*before, *after}
        if rel.startswith(page_of(Path(), other).parent.as_posix() + "/")
    ), "no other session's page changed: the scenario tests nothing"


def count_session_reads(monkeypatch: Any) -> list[str]:
    """The names of the session files the render reads (it reads none when it takes the
    session the scan parsed)."""
    import publisher.prepare

    reads: list[str] = []
    original_read = publisher.prepare.read_session
    monkeypatch.setattr(
        publisher.prepare,
        "read_session",
        lambda p, *a: reads.append(p.name) or original_read(p, *a),
    )
    return reads


def _many_sessions(folder: Path, count: int = 10) -> dict[str, dict[str, Any]]:
    """``count`` small sessions of increasing size (more than the in-process scan takes)."""
    folder.mkdir()
    docs = {}
    for n in range(count):
        name = f"ses_20260101_0000{n:02d}_many{n:02d}"
        docs[name] = session_doc(
            name, turns=[turn(i, part("user", f"prompt {i} of {name}")) for i in range(1, n + 2)]
        )
        write_json(folder / f"{name}.json", docs[name], OLD_NS)
    return docs


def test_many_files_in_one_process_are_kept_within_the_worker_budget(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A one-process build scanning many files keeps the first that fit
    ``Tunables.worker_keep_bytes`` for the render, and reads only the others again (and
    the files smaller than ``Tunables.worker_keep_min_bytes``)."""
    from publisher.site.context import Tunables

    sessions = tmp_path / "sessions"
    docs = _many_sessions(sessions)
    files = sorted(f"{n}.json" for n in docs)
    sizes = [(sessions / f).stat().st_size for f in files]
    reads = count_session_reads(monkeypatch)
    everything = Tunables(worker_keep_bytes=sum(sizes), worker_keep_min_bytes=0)
    assert build(sessions, tmp_path / "all", tunables=everything).sessions_rendered == 10
    assert reads == []
    three = Tunables(worker_keep_bytes=sum(sizes[:3]), worker_keep_min_bytes=0)
    assert build(sessions, tmp_path / "three", tunables=three).sessions_rendered == 10
    assert sorted(reads) == files[3:]
    reads.clear()
    assert build(sessions, tmp_path / "none", tunables=Tunables(worker_keep_bytes=0)).sessions == 10
    assert sorted(reads) == files
    reads.clear()
    # Files smaller than the least size are read again, whatever the budget.
    least = sorted(sizes)[5]
    small = Tunables(worker_keep_bytes=sum(sizes), worker_keep_min_bytes=least)
    assert build(sessions, tmp_path / "small", tunables=small).sessions == 10
    assert sorted(reads) == sorted(f for f, size in zip(files, sizes, strict=True) if size < least)
    assert 0 < len(reads) < 10
    digest = tree_digest(tmp_path / "none")
    assert tree_digest(tmp_path / "all") == digest == tree_digest(tmp_path / "three")
    assert tree_digest(tmp_path / "small") == digest


def test_pool_builds_with_links_are_the_one_process_builds(tmp_path: Path) -> None:
    """Scanned and rendered by the crew's workers (more files than the build scans itself),
    with series, parents and references between the sessions, a full build and an
    incremental one after most files changed give the site a one-process full build
    gives, whichever worker kept which session (budgets: none, some, every one)."""
    from publisher.site.context import Tunables

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [f"ses_20260101_0000{n:02d}_link{n:02d}" for n in range(12)]
    docs = {}
    for n, name in enumerate(names):
        other = names[(n + 5) % len(names)]
        docs[name] = session_doc(
            name,
            role="nightly" if n % 3 else "",
            parent_id=names[0] if n in (3, 4, 7) else "",
            created_at=f"2026-08-17T12:{n:02d}:00+00:00",
            turns=[turn(1, part("user", f"see session:{other} ({n})"))],
        )
        write_json(sessions / f"{name}.json", docs[name], OLD_NS)
    sizes = sum((sessions / f"{n}.json").stat().st_size for n in names)
    for keep in (0, sizes // 4, sizes):
        tunables = Tunables(worker_keep_bytes=keep, worker_keep_min_bytes=0)
        site = tmp_path / f"site-{keep}"
        build(sessions, site, workers=2, tunables=tunables)
        assert tree_digest(site) == fresh_digest(sessions, tmp_path / f"one-{keep}")
        assert len(list(site.glob("sessions/*/compare.html"))) >= 6  # series: previous runs
        first = page_of(site, names[0]).read_text()
        assert f"../{names[5]}/index.html" in first  # a resolved reference
        assert all(f"../{names[n]}/index.html" in first for n in (3, 4, 7))  # sub-sessions
        for n, name in enumerate(names[:10]):
            docs[name]["turns"].append(turn(2, part("assistant", f"more {keep} {n}")))
            write_json(sessions / f"{name}.json", docs[name], OLD_NS + keep + 1)
        report = build(sessions, site, workers=2, tunables=tunables)
        assert report.files_read == 10 and not report.failures
        assert tree_digest(site) == fresh_digest(sessions, tmp_path / f"two-{keep}")


def test_pool_workers_render_the_sessions_they_scanned(tmp_path: Path) -> None:
    """With a pool, the workers that scanned the files keep them and render them: every
    file rewritten (another session name) as soon as the scan is done is not read again
    where it was kept; a file read again no longer matches what the graph was made of, and
    is listed as changed, not rendered with the wrong links."""
    from publisher.site.context import Tunables
    from publisher.site.stages.render import CHANGED

    def rewrite_after_scan(sessions: Path, docs: dict[str, dict[str, Any]]) -> Any:
        def progress(stage: str, done: int, total: int) -> None:
            if stage == "read" and done == total:
                for name, doc in docs.items():
                    write_json(sessions / f"{name}.json", {**doc, "session_name": f"{name}-x"})

        return progress

    for keep, least in ((1 << 30, 2), (0, 0)):
        sessions = tmp_path / f"sessions-{keep}"
        docs = _many_sessions(sessions)
        report = build(
            sessions,
            tmp_path / f"site-{keep}",
            workers=2,
            tunables=Tunables(worker_keep_bytes=keep, worker_keep_min_bytes=0),
            progress=rewrite_after_scan(sessions, docs),
        )
        assert {f.reason for f in report.failures} <= {CHANGED}
        assert report.sessions + len(report.failures) == 10
        assert report.sessions >= least  # each worker's first render is one it kept
        if keep == 0:
            assert report.sessions == 0  # every one read again
        for name in docs:
            page = tmp_path / f"site-{keep}" / "sessions" / name / "index.html"
            if f"{name}.json" not in {f.file_name for f in report.failures}:
                assert f"prompt 1 of {name}" in page.read_text()


@pytest.mark.parametrize("turns", [1, 3, 200])
def test_appended_turn_renders_one_fragment(tmp_path: Path, monkeypatch: Any, turns: int) -> None:
    """Short sessions too: every session keeps its turn fragments."""
    from publisher.render.html import HtmlRenderer

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    doc = session_doc(
        turns=[
            turn(i, part("user", f"step {i}"), part("text", f"done {i}"))
            for i in range(1, turns + 1)
        ]
    )
    path = sessions / f"{doc['session_name']}.json"
    path.write_text(json.dumps(doc))
    build(sessions, tmp_path / "site")
    calls: list[int] = []
    original = HtmlRenderer.render_turn

    def counting(self: HtmlRenderer, session: Any, t: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(t.index)
        return original(self, session, t, *args, **kwargs)

    monkeypatch.setattr(HtmlRenderer, "render_turn", counting)
    reads = count_session_reads(monkeypatch)
    import publisher.prepare

    ref_scans: list[str] = []
    real_refs = publisher.prepare.session_refs
    monkeypatch.setattr(
        publisher.prepare,
        "session_refs",
        lambda s: ref_scans.append(s.session_name) or real_refs(s),
    )
    doc["turns"].append(turn(turns + 1, part("user", "one more")))
    path.write_text(json.dumps(doc))
    build(sessions, tmp_path / "site")
    assert calls == [turns + 1]
    assert reads == []  # the render took the session the scan had just parsed
    assert len(ref_scans) == 1  # and the references the scan found in it
    fresh = tmp_path / "fresh"
    build(sessions, fresh)
    assert tree_digest(tmp_path / "site") == tree_digest(fresh)


def test_one_changed_file_is_parsed_once_however_large(tmp_path: Path, monkeypatch: Any) -> None:
    """The scan's parsed session goes to the render when one file changed, whatever its
    size (a second parse of a 95 MB session held its bytes and text on top of the first
    parse's heap: 297 MB against 220 MB); several files are kept within a byte budget."""
    from publisher.site.context import Tunables

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    docs = {}
    for name in ("ses_20260101_000000_aaa001", "ses_20260101_000000_bbb002"):
        docs[name] = session_doc(name, turns=[turn(1, part("user", "hello"))])
        (sessions / f"{name}.json").write_text(json.dumps(docs[name]))
        age(sessions / f"{name}.json")  # not racy
    build(sessions, tmp_path / "site")
    every_file_large = Tunables(keep_scanned_bytes=0)
    reads = count_session_reads(monkeypatch)

    def append(name: str, index: int) -> None:
        docs[name]["turns"].append(turn(index, part("user", f"more {index}")))
        (sessions / f"{name}.json").write_text(json.dumps(docs[name]))

    append("ses_20260101_000000_aaa001", 2)
    assert build(sessions, tmp_path / "site", tunables=every_file_large).sessions_rendered == 1
    assert reads == []
    append("ses_20260101_000000_aaa001", 3)
    append("ses_20260101_000000_bbb002", 2)
    assert build(sessions, tmp_path / "site", tunables=every_file_large).sessions_rendered == 2
    assert sorted(reads) == sorted(f"{n}.json" for n in docs)  # over the budget: read again
    fresh = tmp_path / "fresh"
    build(sessions, fresh)
    assert tree_digest(tmp_path / "site") == tree_digest(fresh)


def test_links_of_unchanged_sessions_follow_a_session_added_and_removed(tmp_path: Path) -> None:
    """The graph's key and every session's page facts are made of briefs (declared
    sub-sessions, delegate calls, references), no state decoded: a sub-session added later
    links back to the call that spawned it in its unchanged parent, the parent lists it,
    an unchanged session's reference to it resolves; removed, all of it goes. Each build
    gives the site a full build gives."""
    parent, child, reader = (
        "ses_20260901_080000_parent",
        "sub_20260901_081000_child1",
        "ses_20260901_090000_reader",
    )
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    delegate = part(
        "tool",
        name="delegate",
        input={"role": "reviewer", "task": "look"},
        output=f"Delegated to {child} (role reviewer). Result:\nfine",
    )
    write_json(
        sessions / f"{parent}.json",
        session_doc(parent, sub_sessions=[child], turns=[turn(1, part("user", "go"), delegate)]),
        OLD_NS,
    )
    write_json(
        sessions / f"{reader}.json",
        session_doc(reader, turns=[turn(1, part("user", f"see session:{child}"))]),
        OLD_NS,
    )
    site = tmp_path / "site"
    build(sessions, site)
    assert f"../{child}/index.html" not in page_of(site, reader).read_text()
    write_json(
        sessions / f"{child}.json",
        session_doc(child, parent_id=parent, turns=[turn(1, part("user", "review"))]),
        OLD_NS + 1,
    )
    report = build(sessions, site)
    assert report.files_read == 1  # the two others unchanged: their pages follow the graph
    assert tree_digest(site) == fresh_digest(sessions, tmp_path / "with-child")
    back = f'class="spawn-link" href="../{parent}/index.html#turn-1.2"'
    assert back in page_of(site, child).read_text()
    assert f"../{child}/index.html" in page_of(site, parent).read_text()
    assert f"../{child}/index.html" in page_of(site, reader).read_text()
    (sessions / f"{child}.json").unlink()
    build(sessions, site)
    assert tree_digest(site) == fresh_digest(sessions, tmp_path / "without-child")
    assert f"../{child}/index.html" not in page_of(site, reader).read_text()
