"""The archive-wide Failures and Decisions pages: attribution, order, incremental rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher import gate
from publisher.loader import read_session
from publisher.site.archive import ArchiveCache
from publisher.site.graph import decision_events, failure_events
from tests.helpers import (
    SAMPLES,
    build,
    event_archive,
    fresh_digest,
    part,
    session_doc,
    tree_digest,
    turn,
)

pytestmark = pytest.mark.site


def test_attribution_is_the_gates() -> None:
    """A refusal's call on the Decisions page is the one ``polyglav check`` names."""
    for path in sorted(SAMPLES.glob("*.json")):
        try:
            session = read_session(path)
        except Exception:
            continue
        found = {(f.kind, f.turn) for f in gate.session_findings(session, ("denied", "declined"))}
        mine = {(d[2], d[6]) for d in decision_events(session) if d[2] in ("denied", "declined")}
        assert mine == found, path
        # The Failures page lists what the gate finds, each where the gate says.
        failed = [
            (f.kind, f.turn, f.message)
            for f in gate.session_findings(session)
            if f.kind in gate.FAILURE_KINDS
        ]
        assert [(e[4], e[2], e[6]) for e in failure_events(session)] == failed, path


def timed_turn(index: int, minute: int, *parts: dict[str, object]) -> dict[str, object]:
    stamp = f"2026-08-17T12:{minute:02d}:00+00:00"
    end = f"2026-08-17T12:{minute:02d}:30+00:00"
    return turn(index, *parts, started_at=stamp, ended_at=end)


def test_append_touches_only_what_it_changes(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [f"ses_20260817_1200{i:02d}_aaaa{i:02d}" for i in range(3)]
    for i, name in enumerate(names):
        doc = session_doc(
            name,
            role="nightly" if i else "",
            turns=[timed_turn(1, i, part("user", "go"), part("tool", name="sh", input={}))],
            errors=[
                {
                    "code": 500 + i,
                    "message": f"boom {i}",
                    "timestamp": f"2026-08-17T12:{i:02d}:10+00:00",
                }
            ],
            permissions=[
                {
                    "tool": "sh",
                    "action": "deny",
                    "decision": "denied" if i == 1 else "granted",
                    "path": "x",
                    "timestamp": f"2026-08-17T12:{i:02d}:05+00:00",
                }
            ],
        )
        (sessions / f"{name}.json").write_text(json.dumps(doc))
    out, cache = tmp_path / "site", tmp_path / "cache"
    build(sessions, out, cache_dir=cache)
    errors = (out / "errors.html").read_text()
    assert errors.index("boom 2") < errors.index("boom 1") < errors.index("boom 0")
    assert f"{names[1]}/index.html#turn-1" in errors
    decisions = (out / "decisions.html").read_text()
    assert decisions.index("denied") < decisions.index("granted")
    assert f"{names[1]}/index.html#turn-1.2" in decisions
    # Append an error to one session: its rows change, the others come from the cache.
    path = sessions / f"{names[0]}.json"
    doc = json.loads(path.read_text())
    doc["errors"].append(
        {"code": "E_NEW", "message": "late <b>", "timestamp": "2026-08-17T12:30:00+00:00"}
    )
    path.write_text(json.dumps(doc))
    build(sessions, out, cache_dir=cache)
    errors = (out / "errors.html").read_text()
    assert errors.index("late &lt;b&gt;") < errors.index("boom 2")
    assert "<code>E_NEW</code>" in errors and '<option value="=error">error (' in errors
    lead = '<p class="lead">3 decisions in 3 sessions. 1 refusal (1 denied, 0 declined) comes first'
    assert lead in decisions
    # A decision changed: the lead's and the filter's counts follow.
    path = sessions / f"{names[2]}.json"
    doc = json.loads(path.read_text())
    doc["permissions"][0]["decision"] = "declined"
    path.write_text(json.dumps(doc))
    build(sessions, out, cache_dir=cache)
    decisions = (out / "decisions.html").read_text()
    assert "3 decisions in 3 sessions. 2 refusals (1 denied, 1 declined) come first" in decisions
    assert '<option value="=declined">declined (1)</option>' in decisions
    assert '<option value="=granted">granted (1)</option>' in decisions
    fresh = tmp_path / "fresh"
    build(sessions, fresh, cache_dir=tmp_path / "cache2")
    for page in ("errors.html", "decisions.html", "index.html"):
        assert (fresh / page).read_bytes() == (out / page).read_bytes(), page


def test_activity_chart_counts_runs_and_errors(tmp_path: Path) -> None:
    from publisher.site.activity import activity
    from publisher.site.graph import Summary

    sessions = []
    for i, (day, status) in enumerate([("17", "ok"), ("17", "error"), ("19", "weird"), ("19", "")]):
        doc = session_doc(
            f"job_202608{day}_12000{i}_act00{i}",
            created_at=f"2026-08-{day}T12:00:00+00:00",
            turns=[turn(1, part("user", "go"), status=status)] if status else [],
            errors=[{"code": 1, "message": "x", "timestamp": f"2026-08-{day}T12:00:01+00:00"}],
        )
        from publisher.loader import session_from_json

        sessions.append(Summary.of(session_from_json(doc, f"{doc['session_name']}.json")))
    a = activity(sessions)
    assert a is not None
    assert (a.first, a.last) == ("2026-08-17", "2026-08-19")
    assert a.outcomes == ["ok", "error", "empty", "other"]
    assert [(d.day, d.counts, d.total, d.failures) for d in a.days] == [
        ("2026-08-17", [1, 1, 0, 0], 2, 2),
        ("2026-08-18", [0, 0, 0, 0], 0, 0),
        ("2026-08-19", [0, 0, 1, 1], 2, 2),
    ]
    sessions_dir = tmp_path / "s"
    sessions_dir.mkdir()
    out = tmp_path / "site"
    build(sessions_dir, out)
    assert 'id="activity"' not in (out / "index.html").read_text()
    build(SAMPLES, out)
    html = (out / "index.html").read_text()
    assert '<svg class="chart"' in html and 'role="img"' in html
    assert '<th scope="row">2026-08-26</th>' in html


def test_append_rewrites_a_bounded_number_of_files(tmp_path: Path) -> None:
    import hashlib

    from publisher.site.context import Tunables

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(40):
        name = f"ses_20260817_12{i:02d}00_bnd{i:03d}"
        doc = session_doc(name, turns=[turn(1, part("user", f"hello {i}"))])
        (sessions / f"{name}.json").write_text(json.dumps(doc))
    out, cache = tmp_path / "site", tmp_path / "cache"
    tunables = Tunables(index_first_rows=5, rows_per_shard=4)
    build(sessions, out, cache_dir=cache, tunables=tunables)

    def digests() -> dict[str, str]:
        return {
            p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in out.rglob("*")
            if p.is_file()
        }

    page = (out / "index.html").read_text()
    assert 'href="tree.html"' in page
    assert "No session delegates: the 40 sessions stand alone" in (out / "tree.html").read_text()
    # The counts are the archive's, not the first screen's 5 rows.
    assert "<title>Polyglav sessions · 40 sessions</title>" in page
    assert '<p class="lead">40 sessions, 0 files that do not load.' in page
    assert page.count("<tr data-kind=") == 5, "the first screen"
    before = digests()
    path = sessions / "ses_20260817_120300_bnd003.json"
    doc = json.loads(path.read_text())
    doc["turns"].append(turn(2, part("user", "one more")))
    doc["updated_at"] = "2026-08-18T00:00:00+00:00"
    path.write_text(json.dumps(doc))
    build(sessions, out, cache_dir=cache, tunables=tunables)
    after = digests()
    changed = sorted(k for k in after if before.get(k) != after[k])
    assert len([c for c in changed if c.startswith("rows/")]) == 1, changed
    assert [c for c in changed if not c.startswith(("rows/", "sessions/"))] == ["index.html"]
    assert all("bnd003" in c for c in changed if c.startswith("sessions/")), changed
    fresh = tmp_path / "fresh"
    build(sessions, fresh, cache_dir=tmp_path / "c2", tunables=tunables)
    assert {
        p.relative_to(fresh).as_posix(): p.read_bytes() for p in fresh.rglob("*") if p.is_file()
    } == {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_series_links_previous_and_next_run(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [f"job_2026082{d}_110000_nite0{d}" for d in range(4)]

    def write(i: int) -> None:
        doc = session_doc(
            names[i],
            role="nightly",
            created_at=f"2026-08-2{i}T11:00:00+00:00",
            turns=[turn(1, part("user", "nightly"))],
        )
        (sessions / f"{names[i]}.json").write_text(json.dumps(doc))

    for i in range(3):
        write(i)
    lonely = session_doc("ses_20260820_110000_alone1", turns=[turn(1, part("user", "x"))])
    (sessions / "ses_20260820_110000_alone1.json").write_text(json.dumps(lonely))
    out, cache = tmp_path / "site", tmp_path / "cache"
    build(sessions, out, cache_dir=cache)

    def page(name: str) -> str:
        return (out / "sessions" / name / "index.html").read_text()

    middle = page(names[1])
    assert f'rel="prev" href="../{names[0]}/index.html"' in middle
    assert f'rel="next" href="../{names[2]}/index.html"' in middle
    assert 'rel="prev"' not in page(names[0])
    assert 'rel="next"' not in page(names[2])
    assert 'class="series"' not in page("ses_20260820_110000_alone1")
    write(3)  # tonight's run: last night's page now links to it
    build(sessions, out, cache_dir=cache)
    assert f'rel="next" href="../{names[3]}/index.html"' in page(names[2])
    fresh = tmp_path / "fresh"
    build(sessions, fresh, cache_dir=tmp_path / "c2")
    for name in names:
        rel = f"sessions/{name}/index.html"
        assert (fresh / rel).read_bytes() == (out / rel).read_bytes()


def test_sharded_archive_pages_rewrite_a_bounded_number_of_files(tmp_path: Path) -> None:
    """An error appended to one session rewrites the Errors page's first screen and that
    session's shard, nothing else of the Errors and Decisions pages; incremental == full."""
    from publisher.site.context import Tunables

    event_archive(tmp_path / "sessions")
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    tunables = Tunables(index_first_rows=3, rows_per_shard=2)
    build(sessions, out, tunables=tunables)
    before = tree_digest(out)
    assert len([rel for rel in before if rel.startswith("events/errors-")]) == 4
    path = sessions / "job_20260813_120000_err003.json"
    doc = json.loads(path.read_text())
    doc["errors"].append({"code": "E9", "message": "late", "timestamp": "2026-08-13T12:09:00Z"})
    path.write_text(json.dumps(doc))
    build(sessions, out, tunables=tunables)
    after = tree_digest(out)
    changed = sorted(rel for rel in after if before.get(rel) != after[rel])
    events = [rel for rel in changed if rel.startswith(("events/", "errors.", "decisions."))]
    assert len(events) == 2 and "errors.html" in events, changed
    shard = next(rel for rel in events if rel.startswith("events/"))
    assert "late" in (out / shard).read_text()
    assert '<option value="=error">error (' in (out / "errors.html").read_text()
    decisions = (out / "decisions.html").read_text()
    assert "8 decisions in 8 sessions. 4 refusals (4 denied, 0 declined) come first" in decisions
    assert after == fresh_digest(sessions, tmp_path / "fresh", tunables=tunables)


def test_a_session_gone_from_the_first_screen_is_replaced_from_the_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing the newest run, whose errors were on the Errors page's first screen: the
    rows that come first now were in no page state, only in the row shards, and are read
    from there (the pages are not made again from every session's state); incremental ==
    full."""
    from publisher.site.context import Tunables
    from publisher.site.stages import index as index_stage

    event_archive(tmp_path / "sessions")
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    tunables = Tunables(index_first_rows=3, rows_per_shard=2)
    build(sessions, out, tunables=tunables)
    newest = "job_20260817_120000_err007"
    assert newest in (out / "errors.html").read_text()
    (sessions / f"{newest}.json").unlink()

    def made_from_every_state(*args: object, **kwargs: object) -> object:
        raise AssertionError("the archive pages were made again from every session")

    with monkeypatch.context() as patched:
        patched.setattr(index_stage, "render_archive_pages", made_from_every_state)
        build(sessions, out, tunables=tunables)
    errors = (out / "errors.html").read_text()
    assert newest not in errors and "job_20260816_120000_err006" in errors
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", tunables=tunables)


def test_sharded_index_and_tree_page_are_valid_html(tmp_path: Path) -> None:
    from publisher.site.context import Tunables
    from tests import test_html_valid as hv

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(8):
        name = f"job_20260817_12{i:02d}00_vld{i:03d}"
        error = {"code": "E1", "message": f"boom {i}", "timestamp": f"2026-08-17T12:{i:02d}:01Z"}
        doc = session_doc(
            name, role="nightly", turns=[turn(1, part("user", f"hello {i}"))], errors=[error]
        )
        (sessions / f"{name}.json").write_text(json.dumps(doc))
    out = tmp_path / "site"
    build(sessions, out, tunables=Tunables(index_first_rows=3, rows_per_shard=2))
    assert list((out / "events").glob("errors-*.js"))
    pages = [out / "index.html", out / "tree.html", out / "errors.html", out / "decisions.html"]
    pages += sorted(out.glob("sessions/*/compare.html"))
    assert hv.vnu_errors(pages) == []


_texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)


@pytest.mark.unit
@settings(max_examples=60, deadline=None)
@given(rows=st.dictionaries(_texts, st.lists(st.tuples(_texts, _texts), max_size=3), max_size=4))
def test_the_archive_cache_keeps_a_shards_rows_in_a_file_and_reads_them_back(
    tmp_path_factory: pytest.TempPathFactory, rows: dict[str, list[tuple[str, str]]]
) -> None:
    """A row shard's rows are one file of the cache (deterministic bytes, lone surrogates
    included) and read back as written; under another build key nothing is read."""
    folder = tmp_path_factory.mktemp("cache") / "archive-rows"
    cache = ArchiveCache(folder)
    rel = "events/errors-0001-of-0004.js"
    cache.save(rel, rows)
    path = folder / "errors-0001-of-0004.json"
    assert path.read_bytes() == json.dumps(rows, sort_keys=True, separators=(",", ":")).encode()
    assert cache.load(rel) == rows
    assert cache.load("events/errors-0002-of-0004.js") == {}
    assert ArchiveCache(folder, readable=False).load(rel) == {}
    cache.sweep(["events/decisions-0001-of-0004.js"])
    assert not path.exists()


def test_a_full_build_keeps_one_rows_file_a_shard_and_drops_those_of_gone_shards(
    tmp_path: Path,
) -> None:
    """The archive rows' cache is a file a row shard, made as each shard is: the build
    never holds every session's rows. Another shard count leaves only the new shards'
    files; the one-file cache of earlier versions is removed; the pages are the fresh
    build's either way."""
    from publisher.site.context import Tunables

    def rows_files(site: Path) -> list[str]:
        """The cache file each row shard with rows should have (an empty one has none)."""
        shards = sorted((site / "events").glob("*.js"))
        return [p.stem + ".json" for p in shards if not p.read_text().endswith(",[]);\n")]

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(12):
        name = f"job_2026081{i % 10}_0{i:05d}_ab{i:04d}"
        error = {"code": f"E{i % 3}", "message": f"failed {i}", "timestamp": "2026-08-10T00:00:00Z"}
        doc = session_doc(
            name, role="nightly", turns=[turn(1, part("user", f"hello {i}"))], errors=[error]
        )
        (sessions / f"{name}.json").write_text(json.dumps(doc))
    out, cache = tmp_path / "site", tmp_path / "cache"
    (cache).mkdir()
    (cache / "archive-cache.json").write_text("{}")
    build(sessions, out, cache_dir=cache, tunables=Tunables(index_first_rows=3, rows_per_shard=2))
    kept = sorted(p.name for p in (cache / "archive-rows").iterdir())
    assert kept == rows_files(out) and kept
    assert not (cache / "archive-cache.json").exists()
    build(sessions, out, cache_dir=cache, tunables=Tunables(index_first_rows=3, rows_per_shard=4))
    kept = sorted(p.name for p in (cache / "archive-rows").iterdir())
    assert kept == rows_files(out) and kept
    fresh = tmp_path / "fresh"
    build(sessions, fresh, tunables=Tunables(index_first_rows=3, rows_per_shard=4))
    assert tree_digest(out) == tree_digest(fresh)


def _tree_section(out: Path) -> str:
    html = (out / "index.html").read_text()
    return html[html.index('id="tree"') : html.index('id="not-loaded"')]


def test_the_tree_lists_the_families_of_delegation_and_counts_the_rest(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    docs = [
        session_doc("ses_20260817_120000_root01"),
        session_doc("sub_20260817_120100_sub001", parent_id="ses_20260817_120000_root01"),
        session_doc("sub_20260817_120200_sub002", parent_id="sub_20260817_120100_sub001"),
        session_doc("sub_20260817_120300_orphan", parent_id="ses_20260817_110000_gone01"),
        session_doc("sub_20260817_120400_cyclea", parent_id="sub_20260817_120500_cycleb"),
        session_doc("sub_20260817_120500_cycleb", parent_id="sub_20260817_120400_cyclea"),
        session_doc("job_20260817_130000_alone1", role="nightly"),
        session_doc("job_20260818_130000_alone2", role="nightly"),
        session_doc("ses_20260817_140000_alone3", sub_sessions=["sub_20260817_150000_nothere"]),
    ]
    for doc in docs:
        (sessions / f"{doc['session_name']}.json").write_text(json.dumps(doc))
    out = tmp_path / "site"
    build(sessions, out)
    tree = _tree_section(out)
    listed = [
        "root01",
        "sub001",
        "sub002",
        "orphan",  # its parent is not in the archive: still a sub-session
        "cyclea",
        "cycleb",  # only reachable through the cycle
        "alone3",  # declares a sub-session that is not in the archive
        "nothere",
    ]
    assert all(f"_{ident}</code>" in tree for ident in listed), tree
    assert tree.index("root01") < tree.index("sub001") < tree.index("sub002")
    assert "alone1" not in tree and "alone2" not in tree
    assert "2 other sessions neither delegate nor were delegated to" in tree
    # None delegates: the tree says so, and lists nobody twice.
    for doc in docs[:6] + docs[8:]:
        (sessions / f"{doc['session_name']}.json").unlink()
    build(sessions, out)
    tree = _tree_section(out)
    assert "No session delegates: the 2 sessions stand alone" in tree
    assert "<li>" not in tree


def test_the_tree_page_of_a_large_archive_holds_only_its_families(tmp_path: Path) -> None:
    from publisher.site.context import Tunables

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(12):
        doc = session_doc(f"job_20260817_12{i:02d}00_run{i:03d}", role="nightly")
        (sessions / f"{doc['session_name']}.json").write_text(json.dumps(doc))
    sub = session_doc("sub_20260817_130000_helper", parent_id="job_20260817_120300_run003")
    (sessions / "sub_20260817_130000_helper.json").write_text(json.dumps(sub))
    out = tmp_path / "site"
    build(sessions, out, tunables=Tunables(index_first_rows=5, rows_per_shard=4))
    page = (out / "tree.html").read_text()
    assert '<p class="lead">13 sessions. Below, each that delegates' in page
    assert "run003</code>" in page and "helper</code>" in page
    assert page.count("<li>") == 2
    assert "11 other sessions neither delegate nor were delegated to" in page
    # No decision, no failure: the archive pages say so once, with no count of nothing.
    for name, said in (
        ("decisions", "<p>No session recorded a permission decision.</p>"),
        ("errors", "<p>Nothing failed: no failed call, error, refusal, cut or interrupted turn"),
    ):
        html = (out / f"{name}.html").read_text()
        assert said in html
        assert 'class="lead"' not in html


def test_counts_in_prose_are_grouped_by_thousands() -> None:
    from markupsafe import Markup

    from publisher.render import view
    from publisher.render.contexts import DelegationTree, IndexPage
    from publisher.render.html import HtmlRenderer
    from publisher.site.activity import activity_from
    from publisher.site.index import COLUMNS
    from publisher.theme import Theme

    assert [view.count(n) for n in (0, 999, 1000, 20000, 1234567)] == [
        "0",
        "999",
        "1,000",
        "20,000",
        "1,234,567",
    ]
    assert [view.plural(n, "turn") for n in (1, 2, 1500)] == ["1 turn", "2 turns", "1,500 turns"]
    from publisher.site.activity import outcome_totals

    # Every session, dated or not ("" day), in the chart's stacking order.
    runs = {("2026-08-18", "running"): 1, ("", "error"): 2, ("2026-08-17", "ok"): 3}
    assert outcome_totals(runs | {("2026-08-18", "ok"): 1}) == [
        ("ok", 4),
        ("error", 2),
        ("running", 1),
    ]
    from collections import Counter

    renderer = HtmlRenderer(Theme.load(None))
    tree = renderer.render_index_tree(DelegationTree([], 20000))
    assert "No session delegates: the 20,000 sessions stand alone" in tree
    runs = Counter({("2026-08-17", "ok"): 1200, ("2026-08-17", "error"): 34})
    page = renderer.render_index(
        IndexPage(
            rows_html=[Markup("<tr><td>row</td></tr>")] * 3,
            tree_html=Markup(tree),
            failures=[],
            columns=COLUMNS,
            kinds=["job"],
            roles=["nightly"],
            source_label="sessions",
            search_enabled=False,
            activity=activity_from(runs, Counter({"2026-08-17": 1001})),
            total=20000,
            outcomes=[("ok", 18700), ("error", 1300)],
            tree_page="tree.html",
            shards=["rows/sessions-000-of-002.js", "rows/sessions-001-of-002.js"],
        )
    )
    for text in (
        "<title>Polyglav sessions · 20,000 sessions</title>",
        '<p class="lead">20,000 sessions, 0 files that do not load.',
        "The 3 most recent of 20,000 sessions.",
        "Load all 20,000 sessions",
        "The delegation tree of the 20,000 sessions",
        "1,234 runs and 1,001 failures from 2026-08-17",
        "Last status: 18,700 ok, 1,300 error.",
    ):
        assert text in page, text
