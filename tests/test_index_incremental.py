"""The index stage's incremental path (publisher/site/stages/index.py): a build that
changes a few sessions updates the index's first rows, filters, activity chart, row shards
and archive-wide pages from those sessions alone, and its site is the full build's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from publisher.site import index as index_module
from publisher.site import staleness
from publisher.site.context import Tunables
from publisher.site.manifest import Brief
from publisher.site.stages import index as index_stage
from tests import helpers
from tests.helpers import (
    OLD_NS,
    build,
    fresh_digest,
    part,
    session_doc,
    tree_digest,
    turn,
    write_json,
)
from tests.test_incremental import ArchiveMachine

pytestmark = pytest.mark.site

TUNABLES = Tunables(index_first_rows=4, rows_per_shard=2)
"""Sharded index, Errors and Decisions pages from a dozen sessions."""


def _name(i: int) -> str:
    return f"job_20260817_12{i:02d}00_inc{i:03d}"


def _doc(i: int, **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "role": "nightly" if i % 2 else "",
        "created_at": f"2026-08-{10 + i % 5:02d}T12:00:00+00:00",
        "updated_at": f"2026-08-17T12:{i:02d}:00+00:00",
        "turns": [turn(1, part("user", f"hello {i}"))],
        "errors": [{"code": "E1", "message": f"boom {i}", "timestamp": "2026-08-17T12:00:01Z"}]
        if i % 3 == 0
        else [],
    }
    values.update(fields)
    return session_doc(_name(i), **values)


class Archive:
    """A folder of sessions, each file stamped old and distinct (its stamp is trusted, and a
    rewrite is seen)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.stamp = OLD_NS
        folder.mkdir()

    def write(self, i: int, doc: dict[str, Any] | str) -> Path:
        self.stamp += 1_000_000_000
        path = self.folder / f"{_name(i)}.json"
        if isinstance(doc, str):
            path.write_text(doc)
            import os

            os.utime(path, ns=(self.stamp, self.stamp))
            return path
        return write_json(path, doc, self.stamp)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times the stage took the full path: made the overview of every session,
    or grouped every session into row shards."""
    counts = {"overview": 0, "groups": 0, "archive": 0}
    real_of = index_module.Overview.of.__func__  # type: ignore[attr-defined]
    real_groups = index_stage.row_shard_groups
    real_archive = index_stage.render_archive_pages

    def of(cls: type, *args: Any, **kwargs: Any) -> Any:
        counts["overview"] += 1
        return real_of(cls, *args, **kwargs)

    def groups(*args: Any, **kwargs: Any) -> Any:
        counts["groups"] += 1
        return real_groups(*args, **kwargs)

    def archive(*args: Any, **kwargs: Any) -> Any:
        counts["archive"] += 1
        return real_archive(*args, **kwargs)

    monkeypatch.setattr(index_module.Overview, "of", classmethod(of))
    monkeypatch.setattr(index_stage, "render_archive_pages", archive)
    monkeypatch.setattr(index_stage, "row_shard_groups", groups)
    return counts


def test_changes_update_the_index_as_a_full_build_makes_it(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    archive = Archive(tmp_path / "sessions")
    for i in range(12):
        archive.write(i, _doc(i))
    out, cache = tmp_path / "site", tmp_path / "cache"
    build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)
    full = dict(counted)
    assert full == {"overview": 1, "groups": 1, "archive": 1}
    steps = [
        # an append to a session that is not a first row
        lambda: archive.write(2, _doc(2, turns=[turn(1, part("user", "a")), turn(2)])),
        # a first row updated again: first still
        lambda: archive.write(11, _doc(11, updated_at="2026-08-18T00:00:00+00:00")),
        # an error on a new day, a new kind of status: the chart and Errors page change
        lambda: archive.write(
            4,
            _doc(
                4,
                turns=[turn(1, part("user", "x"), status="error")],
                errors=[{"code": "E7", "message": "new", "timestamp": "2026-08-16T09:00:00Z"}],
            ),
        ),
        # one more error, the newest, in a session that had one: the Errors page's first
        # rows and that session's shard change (from the changed session's rows alone)
        lambda: archive.write(
            9,
            _doc(
                9,
                errors=[
                    {"code": "E1", "message": "boom 9", "timestamp": "2026-08-17T12:00:01Z"},
                    {"code": "E8", "message": "later", "timestamp": "2026-08-19T00:00:00Z"},
                ],
            ),
        ),
        # a new role: the filters change
        lambda: archive.write(5, _doc(5, role="weekly")),
        # a new session, the most recent
        lambda: archive.write(12, _doc(12, updated_at="2026-08-19T00:00:00+00:00")),
        # a session that no longer loads
        lambda: archive.write(7, "{ not json"),
        # a file removed
        lambda: (archive.folder / f"{_name(3)}.json").unlink(),
        # a first row falls below the others: the first rows are sorted again
        lambda: archive.write(12, _doc(12, updated_at="2026-01-01T00:00:00+00:00")),
    ]
    for n, step in enumerate(steps):
        step()
        counted.update(overview=0, groups=0, archive=0)
        build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)
        if n < len(steps) - 1:  # the last step cannot tell its first rows from the others
            assert counted["overview"] == 0, n
        assert counted["groups"] == 0, n
        if n not in (2, 7):  # the Errors page's sessions change their shards' count there
            assert counted["archive"] == 0, n
        fresh = tmp_path / f"fresh{n}"
        expected = fresh_digest(
            archive.folder, fresh, cache_dir=tmp_path / f"c{n}", tunables=TUNABLES
        )
        assert tree_digest(out) == expected, n
        counted.update(overview=0, groups=0, archive=0)
        build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)  # a no-op
        assert counted == {"overview": 0, "groups": 0, "archive": 0}, n
        assert tree_digest(out) == expected, n


def test_a_build_that_stopped_before_saving_its_state_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: dict[str, int]
) -> None:
    """A build that wrote the index and its caches but stopped before the manifest: the
    next build, with the file changed back to the stamp the manifest knows (so it is not
    read again), does not trust the caches that build left (their journal names a change
    the manifest does not have) and makes the index of every session again."""
    import publisher.site.build as build_module

    archive = Archive(tmp_path / "sessions")
    for i in range(12):
        archive.write(i, _doc(i))
    out, cache = tmp_path / "site", tmp_path / "cache"
    build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)
    path = archive.folder / f"{_name(6)}.json"
    original, stamp = path.read_bytes(), path.stat().st_mtime_ns
    late = {"code": "E9", "message": "m", "timestamp": "2026-08-01T00:00:00Z"}
    archive.write(6, _doc(6, errors=[late]))  # the archive's shape is the same

    def stop(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("stopped")

    with monkeypatch.context() as m:
        m.setattr(build_module, "save_state", stop)
        with pytest.raises(RuntimeError):
            build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)
    assert "E9" in (out / "errors.html").read_text()
    path.write_bytes(original)
    import os

    os.utime(path, ns=(stamp, stamp))
    counted.update(overview=0, groups=0, archive=0)
    build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)
    assert counted == {"overview": 1, "groups": 1, "archive": 1}
    assert [e["code"] for e in json.loads(path.read_text())["errors"]] == ["E1"]
    counted.update(overview=0, groups=0, archive=0)
    build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)  # trusted again
    assert counted == {"overview": 0, "groups": 0, "archive": 0}


class ShardedArchiveMachine(ArchiveMachine):
    """The state machine of tests/test_incremental.py with the index, Errors and Decisions
    pages sharded from two sessions on: every step's incremental build (mostly the stage's
    incremental path) equals a fresh one."""

    def __init__(self) -> None:
        super().__init__()
        self.defaults = dict(helpers.DEFAULTS)
        helpers.DEFAULTS["tunables"] = Tunables(index_first_rows=2, rows_per_shard=1)

    @precondition(lambda self: self.docs)
    @rule(
        data=st.data(),
        code=st.sampled_from(["E1", "E2"]),
        day=st.integers(1, 28),
        decision=st.sampled_from(["denied", "granted", "declined"]),
    )
    def add_events(self, data: st.DataObject, code: str, day: int, decision: str) -> None:
        """An error and a permission decision (the Errors and Decisions pages change)."""
        name = data.draw(st.sampled_from(sorted(self.docs)))
        doc = self.docs[name]
        stamp = f"2026-07-{day:02d}T10:00:00Z"
        doc["errors"] = [*doc["errors"], {"code": code, "message": "m", "timestamp": stamp}]
        doc["permissions"] = [
            *doc["permissions"],
            {"tool": "sh", "action": "run", "decision": decision, "path": "", "timestamp": stamp},
        ]
        self.write(f"{name}.json", doc)

    def teardown(self) -> None:
        helpers.DEFAULTS.clear()
        helpers.DEFAULTS.update(self.defaults)
        super().teardown()


# Its own example count: the unsharded machine (tests/test_incremental.py) runs the ci
# profile's 400 on the same rules; 80 here keep CI's whole run well under its limit (400
# took 6.4 min, 80 about 1.3).
ShardedArchiveMachine.TestCase.settings = settings(
    stateful_step_count=12, deadline=None, max_examples=min(settings().max_examples, 80)
)
TestShardedIncremental = pytest.mark.timeout(1200)(pytest.mark.slow(ShardedArchiveMachine.TestCase))


def _brief(file_name: str, name: str, digest: str = "d", slot: int = 0) -> Brief:
    """A loaded session's brief, its other fields empty."""
    empty = dict.fromkeys(Brief._fields, "")
    fields = {**empty, "size": 0, "mtime_ns": 0, "shard": 0, "slot": slot, "errors": 0,
              "decisions": 0, "redacted": 0, "site_ino": 0, "site_mtime_ns": 0, "warnings": [],
              "links": None}  # fmt: skip
    return Brief(
        **{**fields, "file_name": file_name, "loaded": True, "name": name, "digest": digest}
    )


@pytest.mark.unit
def test_brief_changes_tell_new_gone_and_moved_names() -> None:
    """The staleness rule the index stage asks (``staleness.brief_changes``): an unchanged
    session is the last build's own brief; a session read again is new and its old brief
    gone; a removed file's session is gone; a name published now from another, unchanged
    file makes what changed unknown (None), and nothing cached by name is trusted."""
    a, b, c = _brief("a.json", "A", slot=1), _brief("b.json", "B", slot=2), _brief("c.json", "C")
    before = {"a.json": a, "b.json": b, "c.json": c}
    same = staleness.brief_changes(before, {"A": a, "B": b, "C": c})
    assert same is not None and (dict(same.new), dict(same.old)) == ({}, {})
    b2 = b._replace(digest="d2")  # read again: a new object, equal or not
    read = staleness.brief_changes(before, {"A": a, "B": b2, "C": c})
    assert read is not None and (dict(read.new), dict(read.old)) == ({"B": b2}, {"B": b})
    assert staleness.touched_slots(read, 2) == {0}
    assert staleness.events_touched(read) == {}  # its rows on the archive pages are as before
    gone = staleness.brief_changes(before, {"A": a, "C": c})
    assert gone is not None and (dict(gone.new), dict(gone.old)) == ({}, {"B": b})
    assert staleness.events_touched(gone) == {"B": (b, None)}
    journal = staleness.change_journal(read)
    assert journal == {"B": "d2"}
    assert staleness.journal_holds(journal, {"A": a, "B": b2, "C": c}, same)
    assert not staleness.journal_holds(journal, {"A": a, "B": b, "C": c}, same)
    # Two files named A; the one published goes, the other (unchanged) is published now.
    twin = _brief("a2.json", "A")
    moved = staleness.brief_changes({**before, "a2.json": twin}, {"A": twin, "B": b, "C": c})
    assert moved is None
    assert not staleness.journal_holds(staleness.change_journal(moved), {"A": a}, same)
