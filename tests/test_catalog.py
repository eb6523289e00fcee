"""The catalog (publisher/site/catalog.py): hostile text round trips and sorts as Python
sorts, the census, and a lost, damaged, foreign or older catalog costs a full build, never a
wrong page."""

from __future__ import annotations

import json
import pickle
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.site import catalog as catalog_module
from publisher.site.catalog import LANE_MASK, SCHEMA, Catalog, SourceState, lane_spread, shard_range
from publisher.site.stages.scan import state_of
from publisher.site.summary import Summary
from publisher.site.urls import row_slot
from tests.helpers import (
    MAIN,
    OLD_NS,
    SECURITY,
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

HOSTILE = st.text(
    st.characters(codec=None, exclude_categories=()) | st.sampled_from(["\ud800", "\udfff", "\0"]),
    max_size=12,
)
"""Any text: lone surrogates, NUL, controls, astral characters."""


def summary(name: str, **fields: object) -> Summary:
    values: dict[str, object] = {
        "name": name,
        "file_name": f"{name}.json",
        "session_id": "ab12cd",
        "kind": "ses",
        "role": "writer",
        "version": "0.34.2",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:10:00Z",
        "parent_id": "",
        "sub_sessions": ("sub_a", "sub_\ud800"),
        "turns": 3,
        "tool_calls": 4,
        "errors": 1,
        "last_status": "ok",
        "first_prompt": "fix \ud800 the \u2028 tests\n\0",
        "decisions": (("declined", 1), ("granted", 3)),
        "failure_events": (
            ("2026-01-01T00:00:01", "t", "1", "page.html#turn-1", "error", "E\ud800", "m"),
        ),
    }
    values.update(fields)
    return Summary(**values)  # type: ignore[arg-type]


def state(s: Summary | None, *, failure: str | None = None) -> SourceState:
    if s is None:
        return SourceState(10, 20, "h", None, failure or "does not load")
    return SourceState(
        10, 20, "h", s, None, ("#ab12cd",), ("a warning \ud800",), "dg", "ek", row_slot(s.name)
    )


@pytest.mark.unit
def test_a_source_round_trips_with_hostile_text() -> None:
    catalog = Catalog.memory()
    s = summary("ses_\ud800<b>x</b>", parent_id="p\0", role="r\udfff")
    catalog.put(s.file_name, state(s), scanned=1)
    catalog.publish(everything=True)
    assert catalog.summary_of(s.file_name) == s
    assert catalog.session(s.name) == s
    node = catalog.node(s.name)
    assert node is not None
    assert (node.name, node.parent_id, node.role) == (s.name, "p\0", "r\udfff")
    assert node.subs == ("sub_a", "sub_\ud800") and node.refs == ("#ab12cd",)
    assert catalog.warnings() == ["a warning \ud800"]
    assert catalog.failures() == []


@pytest.mark.unit
@settings(max_examples=60, deadline=None)
@given(names=st.lists(HOSTILE.filter(bool), min_size=1, max_size=8, unique=True))
def test_queries_sort_hostile_names_as_python_sorts_them(names: list[str]) -> None:
    """Every ``ORDER BY`` of the catalog (row shards, the graph key, the series, the census)
    sorts as Python sorts strings: its text keeps code point order, surrogates included."""
    catalog = Catalog.memory()
    for i, name in enumerate(names):
        catalog.put(f"{i}.json", state(summary(name, file_name=f"{i}.json")), scanned=1)
    catalog.publish(everything=True)
    in_order = [row[0] for row in catalog.con.execute("SELECT name FROM sources ORDER BY name")]
    assert in_order == sorted(names)
    count = 1
    assert [row for _, _, row, _, _ in catalog.shard_rows(0, count)] == [
        row for _, row in sorted((n, catalog.con.execute("SELECT row FROM summaries WHERE file_name = ?", (f"{i}.json",)).fetchone()[0]) for i, n in enumerate(names))
    ]  # fmt: skip
    for name in names:
        assert catalog.node(name) is not None


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(lane=st.integers(0, LANE_MASK), bits=st.integers(0, 62), other=st.integers(0, LANE_MASK))
def test_a_row_shard_is_one_range_of_spread(lane: int, bits: int, other: int) -> None:
    """``lane % count = index`` holds exactly when the lane's spread is in
    ``shard_range(index, count)``, for every power of two up to 2**62."""
    count = 1 << bits
    index = lane % count
    low, high = shard_range(index, count)
    assert low <= lane_spread(lane) <= high
    elsewhere = other % count
    low, high = shard_range(elsewhere, count)
    assert (low <= lane_spread(lane) <= high) == (elsewhere == index)
    with pytest.raises(ValueError):
        shard_range(0, 3)
    with pytest.raises(ValueError):
        shard_range(count, count)


@pytest.mark.unit
def test_a_shard_s_rows_are_found_by_a_seek_with_the_same_answer() -> None:
    """The shard queries an append makes (its index rows, its Errors and Decisions rows, a
    search bundle's members, which bundles hold a session) seek the ``spread`` index
    instead of reading every row, and answer as ``lane % count`` does."""
    catalog = Catalog.memory()
    for i in range(64):
        s = summary(f"ses_{i:03d}", file_name=f"{i}.json")
        catalog.put(s.file_name, state(s), scanned=1)
    catalog.publish(everything=True)
    lanes = dict(catalog.con.execute("SELECT file_name, lane FROM sources"))
    assert len(set(lanes.values())) > 32
    for count in (1, 2, 8, 64):
        for index in range(count):
            want = sorted(f for f, lane in lanes.items() if lane % count == index)
            got = sorted(f for _, f in catalog.bundle_members(index, count))
            assert got == want
            assert sorted(f for f, *_ in catalog.shard_rows(index, count)) == want
        # Which bundles hold a published session: every answer, and no other.
        assert list(catalog.published_lanes(count)) == sorted(
            {lane % count for lane in lanes.values()}
        )
    catalog.con.execute("UPDATE sources SET published = 0 WHERE lane % 8 = 5")
    assert 5 not in set(catalog.published_lanes(8)) and len(list(catalog.published_lanes(8))) == 7
    statements: list[str] = []
    catalog.con.set_trace_callback(statements.append)
    catalog.shard_rows(3, 8)
    catalog.event_shard("errors", 3, 8)
    catalog.bundle_members(3, 8)
    next(catalog.published_lanes(8))
    catalog.con.set_trace_callback(None)
    assert len(statements) == 4
    for statement in statements:
        plan = " ".join(row[-1] for row in catalog.con.execute("EXPLAIN QUERY PLAN " + statement))
        assert "USING INDEX sources_spread (spread>? AND spread<?)" in plan, plan
        assert "SCAN s " not in plan + " " and "SCAN sources" not in plan, plan


@pytest.mark.unit
def test_the_census_publishes_the_first_file_of_a_name_and_the_next_when_it_goes() -> None:
    """Two files of one session name publish one (the first by file name); the other is
    listed as not loading. When the first goes, the second is published: the census is made
    again for every name a change touched."""
    catalog = Catalog.memory()
    twin = summary("twin")
    for file_name in ("a.json", "b.json"):
        catalog.put(
            file_name, state(Summary(**{**twin.to_json(), "file_name": file_name})), scanned=1
        )  # type: ignore[arg-type]
    catalog.put("c.json", state(None, failure="truncated JSON"), scanned=1)
    catalog.publish(everything=True)
    assert catalog.count_published() == 1
    assert catalog.published_file("twin") == ("a.json", "", 10)
    assert catalog.failures() == [
        ("b.json", "same session_name as a.json; not published twice", 10),
        ("c.json", "truncated JSON", 10),
    ]
    catalog.drop("a.json")  # (as the next build's scan does)
    catalog.meta.generation += 1
    catalog.publish(everything=False)
    assert catalog.published_file("twin") == ("b.json", "", 10)


@pytest.mark.unit
def test_states_pickle_by_value_and_back_equal() -> None:
    """A full build's scan results cross the pool pickled: each state and summary comes
    back equal (``__reduce__`` by value), a summary of ``None`` too."""
    for value in (state(summary("a")), state(None)):
        back = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        assert back == value and type(back) is SourceState


@pytest.mark.unit
def test_summaries_from_the_pool_share_their_few_valued_texts() -> None:
    """Two sessions' summaries unpickled in the build's process hold one copy of each text
    that takes few values (role, kind, status, decisions, tools, error codes, failure kinds), not one copy
    each. Texts of one session (its name, its prompt) stay its own."""
    summaries = []
    for i in range(2):
        # Each built at run time: equal texts, distinct objects (as in two worker results).
        role = "".join(["night", "ly"])
        event = ("2026", "t", "".join(["den", "ied"]), "".join(["ba", "sh"]), "run", "/p", "1", "")
        error = ("2026", "t", "1", "", "".join(["tool-", "error"]), "".join(["ba", "sh"]), f"m {i}")
        s = summary(f"s{i}", role=role, decisions=(("".join(["den", "ied"]), 1),),
                    failure_events=(error,), decision_events=(event,), first_prompt=f"p {i}")  # fmt: skip
        summaries.append(pickle.loads(pickle.dumps(s, protocol=pickle.HIGHEST_PROTOCOL)))
        assert summaries[-1] == s
    first, second = summaries
    assert first.role is second.role
    assert first.decisions[0][0] is second.decisions[0][0]
    assert first.decision_events[0][2] is second.decision_events[0][2]
    assert first.failure_events[0][4] is second.failure_events[0][4]
    assert first.failure_events[0][5] is second.failure_events[0][5]
    assert first.first_prompt is not second.first_prompt


# ---- a lost, damaged, foreign or older catalog -----------------------------------------


def damage_catalog(path: Path, how: str) -> None:
    """Damage the committed catalog at ``path`` as ``how`` says."""
    if how == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"not a database at all\n" * 100)
    elif how == "truncated":
        con = sqlite3.connect(path)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif how == "pages":
        # The pages past the first (the tables' b-trees) overwritten: SQLite finds them
        # malformed when a build reads them.
        con = sqlite3.connect(path)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = con.execute("PRAGMA page_size").fetchone()[0]
        con.close()
        data = bytearray(path.read_bytes())
        for at in range(page, len(data), page):
            data[at : at + 64] = b"\xff" * 64
        path.write_bytes(bytes(data))
    elif how == "missing":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    elif how == "older":
        con = sqlite3.connect(path)
        con.execute(f"PRAGMA user_version = {SCHEMA - 1}")
        con.close()
    elif how == "other-schema":
        con = sqlite3.connect(path)
        con.execute("UPDATE meta SET value = '1:0000000000000000' WHERE name = 'schema'")
        con.commit()
        con.close()
    else:
        raise AssertionError(how)


@pytest.mark.site
@pytest.mark.parametrize(
    "how", ["garbage", "truncated", "pages", "missing", "older", "other-schema"]
)
def test_a_damaged_lost_or_older_catalog_costs_a_full_build(tmp_path: Path, how: str) -> None:
    """Whatever happened to the catalog, the next build reads every file again and its
    site equals a fresh build's: changes made meanwhile (an appended turn, a session
    removed) are in it, nothing of the catalog's is trusted."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    doc = json.loads((sessions / f"{MAIN}.json").read_text())
    doc["turns"].append(turn(len(doc["turns"]) + 1, part("user", "after the damage")))
    write_json(sessions / f"{MAIN}.json", doc, OLD_NS + 1)  # (old: trusted once read)
    (sessions / f"{SECURITY}.json").unlink()
    damage_catalog(cache_of(out).catalog, how)
    report = build(sessions, out)
    assert report.files_read == 6  # every file read again
    assert "after the damage" in page_of(out, MAIN).read_text(encoding="utf-8")
    assert not page_of(out, SECURITY).exists()
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")
    assert build(sessions, out).files_read == 0  # the catalog made again is trusted


@pytest.mark.site
def test_the_folder_check_reads_the_published_rows_as_one_pass_over_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the forked folder check reads (:meth:`Catalog.recorded_folders`): every
    published session's folder and stamp, and only under the build key it was made with.
    It is read as one pass over the table: through the published rows' partial index,
    SQLite looked each row up, three to four times as slow at 100,000 sessions, and every
    build waits for this check."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    path = cache_of(out).catalog
    con = sqlite3.connect(path)
    key = dict(con.execute("SELECT name, value FROM meta"))["key"]
    want = sorted(con.execute("SELECT name, folder FROM sources WHERE published"))
    con.close()
    assert len(want) >= 3
    assert list(Catalog.recorded_folders(path, "another key")) == []
    statements: list[str] = []
    connect = catalog_module._connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        con = connect(*args, **kwargs)
        con.set_trace_callback(statements.append)
        return con

    monkeypatch.setattr(catalog_module, "_connect", traced)
    found = list(Catalog.recorded_folders(path, key))
    assert sorted((name, folder) for name, folder, *_ in found) == want
    con = sqlite3.connect(path)
    [select] = [sql for sql in statements if "FROM sources" in sql]
    plan = " ".join(row[-1] for row in con.execute("EXPLAIN QUERY PLAN " + select))
    con.close()
    assert plan == "SCAN sources", plan


@pytest.mark.site
def test_a_catalog_of_another_site_is_not_used(tmp_path: Path) -> None:
    """A cache folder shared by two sites by mistake: each build finds the catalog made for
    the other site folder and starts again from nothing, never taking the other's pages as
    its own."""
    sessions = copy_samples(tmp_path / "sessions")
    other = copy_samples(tmp_path / "other", [MAIN])
    cache = tmp_path / "cache"
    build(sessions, tmp_path / "a", cache_dir=cache)
    report = build(other, tmp_path / "b", cache_dir=cache)
    assert report.files_read == 1 and report.sessions_rendered == 1
    assert tree_digest(tmp_path / "b") == fresh_digest(other, tmp_path / "fresh-b")
    again = build(sessions, tmp_path / "a", cache_dir=cache)
    assert again.files_read == 7
    assert tree_digest(tmp_path / "a") == fresh_digest(sessions, tmp_path / "fresh-a")


@pytest.mark.site
def test_damage_found_during_a_build_starts_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite finding the catalog damaged in the middle of a build (a page it reads then):
    the catalog is deleted and the build starts again from nothing."""
    from publisher.site import catalog as catalog_module

    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    build(sessions, out)
    calls = {"n": 0}
    real = catalog_module.Catalog.outputs_of

    def malformed(self: Catalog, source: str) -> dict[str, str]:
        calls["n"] += 1
        if calls["n"] == 1:
            error = sqlite3.DatabaseError("database disk image is malformed")
            error.sqlite_errorcode = 11  # type: ignore[attr-defined]
            raise error
        return real(self, source)

    monkeypatch.setattr(catalog_module.Catalog, "outputs_of", malformed)
    (sessions / f"{SECURITY}.json").unlink()
    report = build(sessions, out)
    assert report.files_read == 6
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


@pytest.mark.site
def test_the_state_of_builds_before_the_catalog_is_removed(tmp_path: Path) -> None:
    """The manifest files and index caches earlier versions kept in the cache folder go."""
    sessions = copy_samples(tmp_path / "sessions")
    out = tmp_path / "site"
    cache = cache_of(out)
    for legacy in cache.legacy:
        if legacy.name in ("manifest.d", "archive-rows"):
            legacy.mkdir(parents=True)
            (legacy / "0000-00000000.jsonl").write_text("{}")
        else:
            legacy.parent.mkdir(parents=True, exist_ok=True)
            legacy.write_text("old")
    build(sessions, out)
    assert not any(path.exists() for path in cache.legacy)
    assert sorted(p.name for p in cache.root.iterdir() if not p.name.startswith("catalog")) == [
        "fragments", "lock"
    ]  # fmt: skip


@pytest.mark.site
def test_a_session_figure_is_a_column_of_its_summary(tmp_path: Path) -> None:
    """What the catalog keeps of a session is its summary as data, and the fields the index
    sorts and filters on as columns; a roll-up over sub-sessions is one recursive query."""
    sessions = copy_samples(tmp_path / "sessions")
    parent = session_doc("ses_20260901_120000_par001", turns=[turn(1, part("user", "go"))])
    child = session_doc(
        "sub_20260901_120100_chi001",
        parent_id="ses_20260901_120000_par001",
        errors=[{"code": "E1", "message": "m", "timestamp": "2026-09-01T12:01:00Z"}],
    )
    grandchild = session_doc(
        "sub_20260901_120200_gra001",
        parent_id="sub_20260901_120100_chi001",
        errors=[{"code": "E2", "message": "m", "timestamp": "2026-09-01T12:02:00Z"}] * 2,
    )
    for doc in (parent, child, grandchild):
        write_json(sessions / f"{doc['session_name']}.json", doc)
    out = tmp_path / "site"
    build(sessions, out)
    con = sqlite3.connect(cache_of(out).catalog)
    rolled = con.execute(
        "WITH RECURSIVE family(name) AS (SELECT ?1 UNION SELECT s.name FROM sources s"
        " JOIN family f ON s.parent_id = f.name WHERE s.published)"
        " SELECT sum(s.errors) FROM sources s JOIN family f ON s.name = f.name",
        ("ses_20260901_120000_par001",),
    ).fetchone()[0]
    con.close()
    assert rolled == 3


@pytest.mark.unit
def test_a_summary_state_keeps_what_the_index_needs() -> None:
    """The scan's state of a session holds its row data and its archive rows (made in the
    worker that read it), so the build's process renders neither again."""
    from publisher.loader import parse_session_text
    from publisher.prepare import prepare

    doc = session_doc(
        MAIN,
        errors=[{"code": 503, "message": "down", "timestamp": "2026-08-17T12:00:02Z"}],
        turns=[turn(1, part("user", "hello"))],
    )
    prepared = prepare(parse_session_text(json.dumps(doc), f"{MAIN}.json"), None)
    found = state_of(prepared, 1, 2, "h", None)
    assert json.loads(found.row)[1] == MAIN
    assert [(page, n, value) for page, n, _, value, _ in found.events] == [("errors", 0, "error")]


@pytest.mark.unit
def test_a_session_s_spend_is_its_row_s_and_counts_as_its_role_s() -> None:
    """What a session spent (issue 29) is its row's ``spend`` (None without usage), and
    the index's counts take it under the session's role, out again when it goes."""
    from publisher.loader import parse_session_text
    from publisher.prepare import prepare
    from publisher.site.index import Overview

    usage = [{"model": "claude-opus-4-6", "input": 10, "output": 2, "cache_read": 100}]
    doc = session_doc(
        MAIN,
        role="nightly",
        turns=[turn(1, part("user", "hi"), started_at="2026-08-17T12:00:00Z", usage=usage)],
    )
    prepared = prepare(parse_session_text(json.dumps(doc), f"{MAIN}.json"), None)
    catalog = Catalog.memory()
    catalog.put(f"{MAIN}.json", state_of(prepared, 1, 2, "h", None), scanned=1)
    catalog.put("plain.json", state(summary("plain")), scanned=1)
    catalog.publish(everything=True)
    rows = dict(catalog.con.execute("SELECT name, spend FROM sources"))
    assert rows["plain"] is None
    assert [row[:3] for row in json.loads(rows[MAIN])] == [["2026-08-17", "claude-opus-4-6", 112]]
    overview = Overview.of(catalog)
    assert list(overview.spend) == [("2026-08-17", "nightly", "claude-opus-4-6")]
    assert overview.spend[("2026-08-17", "nightly", "claude-opus-4-6")][0] == 112
    assert Overview.from_json(json.loads(overview.to_json())) == overview
    catalog.drop(f"{MAIN}.json")
    overview.add(catalog, "was", -1)
    assert overview.spend == {}


@pytest.mark.unit
def test_a_sample_of_the_files_to_read_is_spread_over_them() -> None:
    catalog = Catalog.memory()
    for i in range(100):
        catalog.add_job(f"f{i:03}.json", 1)
    assert catalog.spread("jobs", 16) == [f"f{i:03}.json" for i in range(0, 96, 6)]
    assert catalog.spread("to_read", 16) == []


@pytest.mark.site
def test_nothing_here_writes_the_sessions_folder(tmp_path: Path) -> None:
    """The catalog lives in the cache folder: a build leaves the sessions folder as it was."""
    sessions = copy_samples(tmp_path / "sessions")
    before = sorted(p.name for p in sessions.iterdir())
    build(sessions, tmp_path / "site")
    assert sorted(p.name for p in sessions.iterdir()) == before
    shutil.rmtree(tmp_path / "site")


# ---- the read-only CLI -------------------------------------------------------------------


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The session files the CLI's listing loads (the others it takes from the catalog)."""
    import publisher.archive as archive_module

    loaded: list[str] = []
    real = archive_module.read_session

    def read(path: Path, folder: Path) -> object:
        loaded.append(path.name)
        return real(path, folder)

    monkeypatch.setattr(archive_module, "read_session", read)
    return loaded


def listing_without_catalog(sessions: Path) -> tuple[str, str]:
    """What ``polyglav sessions`` prints when no catalog is there (every file read)."""
    from publisher.archive import Archive
    from publisher.commands import Context
    from publisher.commands import sessions as sessions_command

    lines, warnings = sessions_command(Context(Archive(sessions)))
    return "\n".join(lines) + "\n", "".join(f"polyglav: warning: {w}\n" for w in warnings)


@pytest.mark.site
def test_the_cli_lists_from_a_warm_catalog_and_reads_only_what_changed(
    archive: Path, reads: list[str]
) -> None:
    """``polyglav sessions`` takes what the site build's catalog knows of each file whose
    stamp it trusts (as a build does), and loads the others: a file appended to, a new
    one, one that stopped loading; a deleted file is gone. What it prints is what reading
    every file prints, and the catalog is not written."""
    from publisher.commands import default_catalog
    from tests.helpers import SAMPLES, age, polyglav

    for path in SAMPLES.glob("*.json"):
        shutil.copy2(path, archive / path.name)
        age(archive / path.name)
    project = archive.parent.parent
    assert polyglav("site", "build", "--project", str(project), "--no-search", "-q").exit_code == 0
    catalog = default_catalog(archive)
    assert catalog.is_file()
    stamp = (catalog.stat().st_mtime_ns, catalog.read_bytes())
    result = polyglav("sessions", "--project", str(project))
    assert result.exit_code == 0
    assert reads == []  # every file listed from the catalog
    assert (result.stdout, result.stderr) == listing_without_catalog(archive)
    assert (catalog.stat().st_mtime_ns, catalog.read_bytes()) == stamp
    # Files changed since the build: each is read, and listed as it is now.
    doc = json.loads((archive / f"{MAIN}.json").read_text())
    doc["turns"].append(turn(len(doc["turns"]) + 1, part("user", "after the build")))
    write_json(archive / f"{MAIN}.json", doc, OLD_NS + 5)
    write_json(
        archive / "ses_20260901_120000_new001.json",
        session_doc("ses_20260901_120000_new001"),
        OLD_NS + 5,
    )
    (archive / f"{SECURITY}.json").write_text('{"session_name": "cut short')
    (archive / "release-notes.json").unlink()
    reads.clear()
    result = polyglav("sessions", "--project", str(project))
    assert sorted(reads) == sorted(
        [f"{MAIN}.json", "ses_20260901_120000_new001.json", f"{SECURITY}.json"]
    )
    assert (result.stdout, result.stderr) == listing_without_catalog(archive)
    assert "release-notes" not in result.stdout and "new001" in result.stdout
    # ``history`` without --run (the latest session) and a role as target list the same way.
    reads.clear()
    assert polyglav("history", "--project", str(project)).exit_code == 0
    assert polyglav("print", "1", "--run", "reviewer", "--project", str(project)).exit_code == 0
    assert set(reads) <= {f"{MAIN}.json", "ses_20260901_120000_new001.json", f"{SECURITY}.json",
                          "sub_20260817_121500_cd34ef.json",
                          "job_20260826_110230_7f3k2a.json"}  # fmt: skip


@pytest.mark.site
def test_the_cli_ignores_a_catalog_it_cannot_trust(archive: Path, reads: list[str]) -> None:
    """A catalog of a build with redaction (its summaries may not be the files'), of
    another schema, or that is not a database: the CLI reads every file."""
    from publisher.commands import default_catalog
    from tests.helpers import SAMPLES, age, polyglav

    for path in SAMPLES.glob("*.json"):
        shutil.copy2(path, archive / path.name)
        age(archive / path.name)
    project = archive.parent.parent
    expected = listing_without_catalog(archive)
    reads.clear()
    for how in ("redact", "older", "garbage"):
        args = ["--redact"] if how == "redact" else []
        assert (
            polyglav(
                "site", "build", "--project", str(project), "--no-search", "-q", *args
            ).exit_code
            == 0
        )
        if how != "redact":
            damage_catalog(default_catalog(archive), how)
        reads.clear()
        result = polyglav("sessions", "--project", str(project))
        assert len(reads) == 7, how
        assert (result.stdout, result.stderr) == expected, how


@pytest.mark.unit
def test_the_callers_of_a_session_by_parent_and_by_declaration_with_or_without_the_pass() -> None:
    """A changed session's ancestors (whose pages show what it did): its parent, the
    sessions that declare it a sub-session (without being named its parent; a name that
    holds the other's as a part, or a lone surrogate, found exactly), theirs, cycles cut;
    asked one at a time of the catalog, and alike from the one pass made once many are
    asked."""
    from publisher.site import graph as graph_module
    from publisher.site.graph import Graph

    leaf, mid, top, lone = "sub_\ud800x", "sub_mid", "ses_top", "ses_lone"
    summaries = {
        s.name: s
        for s in (
            summary(leaf, sub_sessions=(), parent_id=""),
            summary(mid, sub_sessions=(leaf,), parent_id=""),
            summary(top, sub_sessions=(), parent_id=""),
            summary(lone, sub_sessions=(f"{leaf}y", "sub_\ud800"), parent_id=""),
            summary("sub_cycle", sub_sessions=(top,), parent_id=mid),
        )
    }
    summaries[mid] = summary(mid, sub_sessions=(leaf,), parent_id=top)
    graph = Graph.of(summaries, [f"{n}.json" for n in summaries])
    expected = {
        leaf: {mid, top, "sub_cycle"},
        mid: {top, "sub_cycle"},
        top: {"sub_cycle", mid},
        lone: set(),
    }
    for name, above in expected.items():
        assert graph.ancestors(name) == above, name
    graph._asked = graph_module.CALLERS_PASS  # the next question makes the pass
    for name, above in expected.items():
        assert graph.ancestors(name) == above, name
    assert graph._callers is not None


@pytest.mark.site
def test_the_cli_reads_a_file_whose_catalog_listing_is_not_a_row(
    archive: Path, reads: list[str]
) -> None:
    """A listing the catalog keeps that is not of :data:`~publisher.archive.LISTING_CELLS`
    values (a catalog edited by hand, or by a bug) is not laid out: that file is read, and
    what is printed is what reading every file prints."""
    from publisher.commands import default_catalog
    from tests.helpers import SAMPLES, age, polyglav

    for path in SAMPLES.glob("*.json"):
        shutil.copy2(path, archive / path.name)
        age(archive / path.name)
    project = archive.parent.parent
    assert polyglav("site", "build", "--project", str(project), "--no-search", "-q").exit_code == 0
    con = sqlite3.connect(default_catalog(archive))
    with con:
        con.execute(
            "UPDATE sources SET listing = listing || char(31) || 'one value too many'"
            " WHERE file_name = ?",
            (f"{MAIN}.json",),
        )
        con.execute(
            "UPDATE sources SET listing = 'one value' WHERE file_name = ?", (f"{SECURITY}.json",)
        )
    con.close()
    reads.clear()
    result = polyglav("sessions", "--project", str(project))
    assert result.exit_code == 0
    assert sorted(reads) == sorted([f"{MAIN}.json", f"{SECURITY}.json"])
    assert (result.stdout, result.stderr) == listing_without_catalog(archive)
    assert "one value" not in result.stdout


def _table_a_row_at_a_time(rows: list[tuple[str, ...]]) -> list[str]:
    """The listing laid out a row at a time (the layout before it went by columns): the
    reference :func:`~publisher.render.console.sessions_table` is held to."""
    from publisher.render.console import LISTING_HEADER

    cells = [row[:-1] for row in rows]
    widths = [max(map(len, column)) for column in zip(LISTING_HEADER, *cells, strict=True)]
    line = "  ".join(f"{{:<{width}}}" for width in widths).format
    out = [line(*LISTING_HEADER).rstrip()]
    for row, cell in zip(rows, cells, strict=True):
        note = row[-1]
        out.append((line(*cell) + ("  " + note if note else "")).rstrip())
    return out


_CELL = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@pytest.mark.unit
@given(st.lists(st.tuples(*[_CELL] * 8), max_size=12))
@settings(max_examples=300, deadline=None)
def test_the_listing_laid_out_by_columns_is_the_listing_laid_out_by_rows(
    rows: list[tuple[str, ...]],
) -> None:
    """Any values (blank, padded with spaces or other white space, wide, holding the
    separator) give the lines a row-at-a-time layout gives, the separator shown escaped."""
    from publisher.archive import LISTING_SEPARATOR, listing_text
    from publisher.render.console import sessions_table

    escaped = [tuple(v.replace(LISTING_SEPARATOR, "\\x1f") for v in row) for row in rows]
    assert sessions_table([listing_text(row) for row in rows]) == _table_a_row_at_a_time(escaped)


@pytest.mark.unit
def test_a_listing_that_is_not_of_whole_rows_is_refused() -> None:
    from publisher.render.console import sessions_table

    with pytest.raises(ValueError, match="not of 8 values"):
        sessions_table(["a\x1fb"])


@pytest.mark.unit
@given(st.text(max_size=12).map(lambda s: s + ".json") | st.text(max_size=12))
@settings(max_examples=500)
def test_the_session_file_pattern_is_the_rule_as_written(name: str) -> None:
    """``*.json`` and not hidden, whatever else the name holds (line breaks, surrogates)."""
    from publisher.loader import is_session_file

    assert is_session_file(name) == (name.endswith(".json") and not name.startswith("."))
