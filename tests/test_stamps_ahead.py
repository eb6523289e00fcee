"""The stamps ``site build`` takes ahead (publisher/site/pool.py ``FolderStamps``): a child
forked before the build's imports stats every file, the scan takes its stamps instead of
stating the files itself. A build so made equals one that stats itself; a file written
after its stamp was taken is read by the next build; a build that waited for another
drops the stamps."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from publisher.site.lock import holding
from publisher.site.pool import FolderStamps
from tests.helpers import age, build, cache_of, copy_samples, fresh_digest, tree_digest

pytestmark = pytest.mark.site

CHANGED = "ses_20260817_120000_ab12cd.json"


def ahead(sessions: Path) -> FolderStamps:
    """Stamps of every file of ``sessions``, taken by a forked child (whatever the count),
    returned once the child has taken them: a file changed after this is changed after its
    stamp (on a loaded machine the child may not have run yet when this returns otherwise)."""
    taken = FolderStamps.start(os.fspath(sessions), fork_from=1)
    assert taken is not None and taken.pass_ is not None and taken.pass_.pid  # a child
    # Until it has ended, not reaped (WNOWAIT): the build reads its result then reaps it.
    # (A few stamps: the pipe holds them, the child does not wait for a reader.)
    os.waitid(os.P_PID, taken.pass_.pid, os.WEXITED | os.WNOWAIT)
    return taken


def grow(path: Path, words: str) -> None:
    """Add ``words`` to the first text of the session file ``path`` (its size changes)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    stack: list[Any] = [doc["turns"]]
    while stack:
        item = stack.pop()
        if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"]:
            item["text"] += f" {words}"
            break
        if isinstance(item, (dict, list)):
            stack.extend(reversed(list(item.values() if isinstance(item, dict) else item)))
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")


def scanned_at(out: Path) -> int:
    """When the last scan of the site ``out`` started, as its catalog keeps it."""
    con = sqlite3.connect(cache_of(out).catalog)
    try:
        row = con.execute("SELECT value FROM meta WHERE name = 'scanned_at_ns'").fetchone()
        return int(row[0])
    finally:
        con.close()


def test_a_build_with_stamps_taken_ahead_equals_one_that_stats_itself(tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    grow(sessions / CHANGED, "written before the stamps were taken")
    age(sessions / CHANGED)  # same mtime as before: only its size says it changed
    taken = ahead(sessions)
    report = build(sessions, out, listing=taken)
    assert taken.pass_ is None  # taken by the scan
    assert report.files_read == 1
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


def test_a_file_written_after_its_stamp_was_taken_is_read_by_the_next_build(
    tmp_path: Path,
) -> None:
    """The scan that takes stamps ahead started when they were taken: a file written after
    its stat keeps the stamp of before in the catalog, and the next build reads it."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    taken = ahead(sessions)
    grow(sessions / CHANGED, "written while the build imported")
    assert build(sessions, out, listing=taken).files_read == 0  # as the folder was
    assert scanned_at(out) == taken.started_ns  # the scan started when the stamps were taken
    assert build(sessions, out).files_read == 1
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


def test_a_build_that_waits_for_another_drops_the_stamps_taken_ahead(tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    taken = ahead(sessions)  # forked before the thread below exists
    waiting = threading.Event()
    done: list[int] = []
    with holding(cache_of(out).lock):
        thread = threading.Thread(
            target=lambda: done.append(
                build(sessions, out, listing=taken, on_wait=lambda _: waiting.set()).files_read
            )
        )
        thread.start()
        assert waiting.wait(30)
        assert taken.pass_ is None  # dropped: the files may change while it waits
        grow(sessions / CHANGED, "written while the build waited")
    thread.join(60)
    assert done == [1]  # the build stated the files itself once the lock was its own
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


def test_no_stamps_are_taken_ahead_for_a_small_folder_or_beside_a_thread(tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    assert FolderStamps.start(os.fspath(sessions)) is None  # fewer files than pay a process
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert FolderStamps.start(os.fspath(sessions), fork_from=1) is None
    finally:
        stop.set()
        other.join()
