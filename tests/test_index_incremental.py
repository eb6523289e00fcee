"""The index stage's incremental path (publisher/site/stages/index.py): a build that
changes a few sessions makes again only the row shards (of the index and of the archive-wide
pages) that hold them, and its site is the full build's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from publisher.site.catalog import Catalog
from publisher.site.context import Tunables
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
    """What the stage made: the index's row shards (``rows``), the archive-wide pages'
    row shards (``events``), and the archive-wide pages themselves (``pages``)."""
    counts = {"rows": 0, "events": 0, "pages": 0}
    real_rows, real_events = Catalog.shard_rows, Catalog.event_shard
    real_archive = index_stage.render_archive_pages

    def rows(self: Catalog, *args: Any) -> Any:
        counts["rows"] += 1
        return real_rows(self, *args)

    def events(self: Catalog, *args: Any) -> Any:
        counts["events"] += 1
        return real_events(self, *args)

    def archive(*args: Any, **kwargs: Any) -> Any:
        counts["pages"] += len(kwargs["pages"])
        return real_archive(*args, **kwargs)

    monkeypatch.setattr(Catalog, "shard_rows", rows)
    monkeypatch.setattr(Catalog, "event_shard", events)
    monkeypatch.setattr(index_stage, "render_archive_pages", archive)
    return counts


ZERO = {"rows": 0, "events": 0, "pages": 0}


def test_changes_update_the_index_as_a_full_build_makes_it(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    archive = Archive(tmp_path / "sessions")
    for i in range(12):
        archive.write(i, _doc(i))
    out, cache = tmp_path / "site", tmp_path / "cache"
    build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)
    # 12 sessions, 2 a shard: 8 row shards; 4 errors, as many as the first rows: no shard.
    assert counted == {"rows": 8, "events": 0, "pages": 2}
    steps = [
        # an append to a session that is not a first row
        (lambda: archive.write(2, _doc(2, turns=[turn(1, part("user", "a")), turn(2)])), 1),
        # a first row updated again: first still
        (lambda: archive.write(11, _doc(11, updated_at="2026-08-18T00:00:00+00:00")), 1),
        # an error on a new day, a new kind of status: the chart and Errors page change
        (
            lambda: archive.write(
                4,
                _doc(
                    4,
                    turns=[turn(1, part("user", "x"), status="error")],
                    errors=[{"code": "E7", "message": "new", "timestamp": "2026-08-16T09:00:00Z"}],
                ),
            ),
            1,
        ),
        # one more error, the newest, in a session that had one: the Errors page's first
        # rows and that session's shard change
        (
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
            1,
        ),
        # a new role: the filters change
        (lambda: archive.write(5, _doc(5, role="weekly")), 1),
        # a new session, the most recent
        (lambda: archive.write(12, _doc(12, updated_at="2026-08-19T00:00:00+00:00")), 1),
        # a session that no longer loads
        (lambda: archive.write(7, "{ not json"), 1),
        # a file removed
        (lambda: (archive.folder / f"{_name(3)}.json").unlink(), 1),
        # a first row falls below the others
        (lambda: archive.write(12, _doc(12, updated_at="2026-01-01T00:00:00+00:00")), 1),
    ]
    for n, (step, shards) in enumerate(steps):
        step()
        counted.update(ZERO)
        build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)
        assert counted["rows"] == shards, n  # the changed session's shard only
        fresh = tmp_path / f"fresh{n}"
        expected = fresh_digest(
            archive.folder, fresh, cache_dir=tmp_path / f"c{n}", tunables=TUNABLES
        )
        assert tree_digest(out) == expected, n
        counted.update(ZERO)
        build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)  # a no-op
        assert counted == ZERO, n
        assert tree_digest(out) == expected, n


def test_a_build_that_stopped_before_saving_its_state_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: dict[str, int]
) -> None:
    """A build that wrote the index files but stopped before committing its catalog: the
    next build, with the file changed back to the stamp the catalog knows (so it is not
    read again), does not trust the files that build left (the cache's ``building`` mark
    says it stopped) and makes every index file again."""
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
    counted.update(ZERO)
    build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)
    assert counted == {"rows": 8, "events": 0, "pages": 2}
    assert [e["code"] for e in json.loads(path.read_text())["errors"]] == ["E1"]
    assert "E9" not in (out / "errors.html").read_text()
    assert tree_digest(out) == fresh_digest(
        archive.folder, tmp_path / "fresh", cache_dir=tmp_path / "c", tunables=TUNABLES
    )
    counted.update(ZERO)
    build(archive.folder, out, cache_dir=cache, tunables=TUNABLES)  # trusted again
    assert counted == ZERO


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
