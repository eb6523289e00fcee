"""The build manifest: round trip, unchanged lines kept, and any damage means a fresh start."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from publisher.site.context import Warm
from publisher.site.graph import Summary
from publisher.site.manifest import (
    FORMAT,
    Brief,
    Manifest,
    ManifestDamaged,
    SourceState,
    save_manifest,
    shard_folder,
)

pytestmark = pytest.mark.unit


def summary(name: str, turns: int = 3) -> Summary:
    return Summary(
        name=name,
        file_name=f"{name}.json",
        session_id="ab12cd",
        kind="ses",
        role="writer",
        version="0.34.2",
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:10:00Z",
        parent_id="",
        sub_sessions=("sub_a", "sub_b"),
        turns=turns,
        tool_calls=4,
        errors=1,
        last_status="ok",
        first_prompt="fix \ud800 the \u2028 tests\n",
        decisions=(("declined", 1), ("granted", 3)),
        redacted=0,
    )


COUNT = 16
"""The shard count of these tests' manifests."""


def sources() -> dict[str, SourceState]:
    # a and c in shards 5 and 9 (their row slots), b (does not load) in its name's shard.
    return {
        "a.json": SourceState(10, 123, "h1", summary("a"), None, ["#ab12cd"], "fk", {"sessions/a/index.html": "d1"}, "dg", ["a.json: a warning"], "ek", 5, (7, 8)),
        "b.json": SourceState(20, 456, "h2", None, "truncated JSON", [], "", {}, ""),
        "c.json": SourceState(30, 789, "h3", summary("c"), None, [], "fk3", {"sessions/c/index.html": "d3"}, "dg3", slot=COUNT + 9),
    }  # fmt: skip


def save(
    path: Path,
    previous: Manifest,
    states: dict[str, SourceState],
    warm: Warm | None = None,
    **changed: Any,
) -> None:
    """Save ``states`` with the tests' header fields; ``changed``: other arguments of
    :func:`save_manifest` (they replace the defaults here)."""
    arguments: dict[str, Any] = {
        "key": "k",
        "site": "/site",
        "graph": "g",
        "scanned_at_ns": 99,
        "publisher": "0.1.0",
        "sources": states,
        "extra_outputs": {"index.html": "di"},
        "shard_count": COUNT,
        "warm": warm,
    }
    save_manifest(path, previous, **{**arguments, **changed})


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "manifest.jsonl"
    save(path, Manifest(), sources())
    loaded = Manifest.load(path)
    assert (loaded.key, loaded.site, loaded.graph, loaded.scanned_at_ns) == ("k", "/site", "g", 99)
    assert loaded.sources == sources()
    assert loaded.outputs == {
        "index.html": "di",
        "sessions/a/index.html": "d1",
        "sessions/c/index.html": "d3",
    }


def shard_files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in shard_folder(path).iterdir()}


def brief_lines(path: Path) -> dict[str, str]:
    """Every brief line of the manifest at ``path``, by file name."""
    found = {}
    for name, data in shard_files(path).items():
        if name.startswith("briefs-"):
            for line in data.decode("ascii").splitlines():
                found[json.loads(line)[0]] = line
    return found


def test_unchanged_sources_keep_their_lines_and_shards(tmp_path: Path) -> None:
    """A save writes again only the files of the shards whose lines changed: the state
    file of a source whose render set only its outputs, but not its brief file; both
    files of an appended source; neither of an untouched one."""
    path = tmp_path / "manifest.jsonl"
    save(path, Manifest(), sources())
    first_shards, first_lines = shard_files(path), brief_lines(path)
    assert len(path.read_text().splitlines()) == 1  # the header alone
    assert sorted(n[:4] for n in first_shards if not n.startswith("briefs-")) == sorted(
        n[7:11] for n in first_shards if n.startswith("briefs-")
    )
    assert len(first_shards) == 6 and "briefs-0009" in {n[:11] for n in first_shards}
    loaded = Manifest.load(path)
    assert loaded.sources.decoded("a.json") is None  # nothing decoded until used
    states = {name: loaded.sources[name] for name in ("a.json", "b.json")}
    states["c.json"] = SourceState(
        31, 790, "h4", summary("c", turns=4), None, [], "fk3", {}, "x", slot=9
    )
    states["a.json"] = replace(states["a.json"], outputs={"a/index.html": "changed in place"})
    save(path, loaded, states)
    second_shards, second_lines = shard_files(path), brief_lines(path)
    assert second_lines["b.json"] == first_lines["b.json"]  # untouched, the very line
    assert second_lines["a.json"] == first_lines["a.json"]  # its brief did not change
    assert json.loads(second_lines["c.json"])[1] == 31
    kept = sorted(first_shards.keys() & second_shards.keys())
    written = ("0005-", "0009-", "briefs-0009-")
    assert kept == sorted(n for n in first_shards if not n.startswith(written))  # b's, a's briefs
    assert b"changed in place" in next(v for n, v in second_shards.items() if n.startswith("0005-"))
    assert Manifest.load(path).sources == states
    # The facts key is in the brief (the plan compares it when the graph changed).
    states["a.json"] = replace(states["a.json"], facts_key="new facts")
    save(path, Manifest.load(path), states)
    assert Manifest.load(path).briefs["a.json"].facts_key == "new facts"
    assert brief_lines(path)["a.json"] != second_lines["a.json"]


def test_a_first_save_keeps_the_briefs_made_for_its_shard_count(tmp_path: Path) -> None:
    """A build without a manifest makes its briefs for the shard count it saves with (the
    scan's guess: every file loads); the save then keeps those very briefs rather than
    making each again (20,000 of them were 6.6 MB at a full build's peak)."""
    path, warm = tmp_path / "manifest.jsonl", Warm()
    states = sources()
    briefs = {name: Brief.of(name, state, COUNT) for name, state in states.items()}
    save(path, Manifest(), states, warm, briefs=briefs, fresh=states)
    assert warm.manifest is not None
    kept = warm.manifest[2].briefs
    assert all(kept[name] is briefs[name] for name in states)
    # Made for another count, they are moved (and saved in their shards).
    other = {name: Brief.of(name, state, 1) for name, state in states.items()}
    save(tmp_path / "other.jsonl", Manifest(), states, warm, briefs=other, fresh=states)
    assert warm.manifest is not None
    moved = warm.manifest[2].briefs
    assert moved["a.json"] is not other["a.json"] and moved["a.json"].shard == 5
    assert Manifest.load(tmp_path / "other.jsonl").briefs == Manifest.load(path).briefs


def test_an_append_decodes_one_shard(tmp_path: Path) -> None:
    """A build reads the brief of every source and the full state only of what it uses."""
    path = tmp_path / "manifest.jsonl"
    save(path, Manifest(), sources())
    loaded = Manifest.load(path)
    assert list(loaded.briefs) == ["a.json", "b.json", "c.json"]  # by file name
    assert loaded.briefs["a.json"].name == "a" and loaded.briefs["b.json"].loaded is False
    assert loaded.sources["c.json"].summary == summary("c")
    assert loaded.sources.decoded("a.json") is None and loaded.sources.decoded("b.json") is None


def damaged_headers(header: str) -> list[str]:
    fields = json.loads(header)
    other = {**fields["briefs"], "5": fields["briefs"]["9"]}  # another shard's file
    return [
        "",
        "[]",
        "{not json",
        "\x00\x01",
        json.dumps({**fields, "format": FORMAT - 1}),
        json.dumps({**fields, "scanned_at_ns": "soon"}),
        json.dumps({**fields, "shards": []}),
        json.dumps({**fields, "briefs": []}),
        json.dumps({**fields, "briefs": {"5": fields["briefs"]["5"]}}),  # a shard left out
        json.dumps({**fields, "briefs": other}),
        json.dumps({**fields, "shard_count": 0}),
        json.dumps({k: v for k, v in fields.items() if k != "key"}),
        json.dumps({k: v for k, v in fields.items() if k != "briefs"}),
    ]


def damaged_briefs(data: bytes) -> list[bytes]:
    """A brief file of one line (a's) damaged in each way."""
    row = json.loads(data)
    return [
        b"",
        data[: len(data) // 2],
        *(
            (json.dumps(bad, separators=(",", ":")) + "\n").encode()
            for bad in (row[:-1], [*row, 1], {"name": "a.json"}, [*row[:3], 9, *row[4:]])
        ),
    ]


def test_every_damaged_manifest_is_a_fresh_start(tmp_path: Path) -> None:
    """A header or a brief file that is not as written: the build starts from nothing. A
    brief file made to match its checksum again (re-named after an edit) must still hold
    well-formed lines of its own shard."""
    from publisher.site.manifest import brief_file

    path = tmp_path / "manifest.jsonl"
    save(path, Manifest(), sources())
    header = path.read_text()
    cases = damaged_headers(header.strip())
    assert len(cases) > 10
    for text in cases:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        loaded = Manifest.load(path)
        assert loaded.sources == {} and loaded.key == "", text[:200]
    path.write_text(header)
    folder = shard_folder(path)
    (own,) = [p for p in folder.iterdir() if p.name.startswith("briefs-0005-")]
    data = own.read_bytes()
    own.write_bytes(data.replace(b"writer", b"reader"))  # edited: not its checksum
    assert Manifest.load(path).sources == {}
    for bad in damaged_briefs(data):
        own.write_bytes(bad)
        assert Manifest.load(path).sources == {}, bad[:200]
        # The same content under the name its checksum gives, the header updated.
        renamed = folder / brief_file(5, bad)
        own.rename(renamed)
        fields = json.loads(header)
        fields["briefs"]["5"] = renamed.name
        path.write_text(json.dumps(fields))
        if bad:
            assert Manifest.load(path).sources == {}, bad[:200]
        renamed.rename(own)
        path.write_text(header)
    own.write_bytes(data)
    assert Manifest.load(path).sources == sources()
    own.unlink()
    assert Manifest.load(path).sources == {}


@pytest.mark.parametrize("damage", ["missing", "truncated", "edited"])
def test_a_damaged_shard_file_is_found_when_it_is_read(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "manifest.jsonl"
    save(path, Manifest(), sources())
    shard = next(p for p in shard_folder(path).iterdir() if p.name.startswith("0005-"))
    data = shard.read_bytes()
    if damage == "missing":
        shard.unlink()
    elif damage == "truncated":
        shard.write_bytes(data[: len(data) // 2])
    else:
        shard.write_bytes(data.replace(b"d1", b"d2"))
    loaded = Manifest.load(path)
    assert loaded.sources["c.json"].summary == summary("c")  # another shard: fine
    with pytest.raises(ManifestDamaged):
        loaded.sources["a.json"]


@pytest.mark.parametrize("name", ["missing.jsonl", "dir"])
def test_missing_or_unreadable_manifest(tmp_path: Path, name: str) -> None:
    (tmp_path / "dir").mkdir()
    assert Manifest.load(tmp_path / name) == Manifest()


def test_the_manifest_written_last_is_kept_in_memory_while_the_file_is_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "manifest.jsonl"
    warm = Warm()
    save(path, Manifest(), sources(), warm)
    first = Manifest.load(path, warm)
    assert first.sources == sources()
    again = Manifest.load(path, warm)  # handed out once: the second load reads the file
    assert again is not first and again.sources == first.sources
    states = again.sources
    save(path, again, states, warm)
    assert Manifest.load(path).sources["a.json"] is not states["a.json"]  # not warm: decoded
    save(path, again, states, warm)
    kept = Manifest.load(path, warm)
    assert kept.sources["a.json"] is states["a.json"]  # from memory, not decoded again
    # Written by someone else (another process, an editor): read from the file again.
    save(path, Manifest(), sources(), warm)
    text = path.read_text()
    path.unlink()
    path.write_text(text.replace('"key":"k"', '"key":"other"'))
    assert Manifest.load(path, warm).key == "other"


def test_a_build_sees_a_manifest_changed_behind_its_back(tmp_path: Path) -> None:
    from publisher.site.build import BuildOptions, build_site
    from publisher.site.context import CachePaths

    sessions = Path(__file__).resolve().parent.parent / "sample_sessions"
    options = BuildOptions(sessions, tmp_path / "site", search=False, workers=1)
    warm = Warm()
    first = build_site(options, warm)
    assert first.files_read == len(list(sessions.glob("*.json")))
    assert build_site(options, warm).files_read == 0  # the kept manifest: nothing to read
    manifest = CachePaths.of(options).manifest
    manifest.unlink()
    manifest.write_text("not a manifest\n")
    assert build_site(options, warm).files_read == first.files_read


def test_a_build_starts_again_when_a_shard_file_is_damaged(tmp_path: Path) -> None:
    from publisher.site.build import BuildOptions, build_site
    from publisher.site.context import CachePaths
    from tests.helpers import tree_digest

    sessions = tmp_path / "sessions"
    shutil.copytree(Path(__file__).resolve().parent.parent / "sample_sessions", sessions)
    options = BuildOptions(sessions, tmp_path / "site", search=False, workers=1)
    first = build_site(options)
    folder = shard_folder(CachePaths.of(options).manifest)
    for shard in folder.iterdir():
        shard.write_bytes(shard.read_bytes()[:-2])
    victim = sorted(sessions.glob("*.json"))[0]
    victim.write_text(victim.read_text())  # read again: its old state is decoded
    os.utime(victim, ns=(1, 1))
    again = build_site(options)
    assert again.files_read == first.files_read  # started again from nothing
    build_site(BuildOptions(sessions, tmp_path / "fresh", search=False, workers=1))
    assert tree_digest(tmp_path / "site") == tree_digest(tmp_path / "fresh")


def test_a_new_shard_count_moves_every_source(tmp_path: Path) -> None:
    path = tmp_path / "manifest.jsonl"
    save(path, Manifest(), sources())
    loaded = Manifest.load(path)
    save(path, loaded, dict(loaded.sources), extra_outputs={}, shard_count=2)
    again = Manifest.load(path)
    assert again.sources == sources() and again.sources.count == 2
    names = sorted(shard_files(path))
    assert [n[:4] for n in names] == ["0000", "0001", "brie", "brie"]  # the old ones gone
    assert [n[:11] for n in names[2:]] == ["briefs-0000", "briefs-0001"]
    assert {b.shard for b in again.briefs.values()} == {0, 1}


def test_a_brief_made_against_another_count_goes_to_its_shard(tmp_path: Path) -> None:
    """States read again under another build key get briefs of a fresh count; the save
    puts each in the shard of the count it writes."""
    from publisher.site.manifest import Brief

    path = tmp_path / "manifest.jsonl"
    save(path, Manifest(), sources())
    loaded = Manifest.load(path)
    states = dict(loaded.sources)
    states["a.json"] = replace(states["a.json"], facts_key="again")
    briefs = {n: loaded.briefs[n] for n in states}
    briefs["a.json"] = Brief.of("a.json", states["a.json"], 1)  # shard 0 of 1
    save(
        path,
        loaded,
        states,
        extra_outputs={},
        briefs=briefs,
        fresh={"a.json": states["a.json"]},
    )
    again = Manifest.load(path)
    assert again.briefs["a.json"].shard == 5 and again.sources == states


def test_states_pickle_by_value_and_back_equal() -> None:
    """A full build's scan results cross the pool pickled: each state and summary comes
    back equal, fields in place (``__reduce__`` by value), a summary of ``None`` too."""
    import pickle

    for name, state in sources().items():
        back = pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
        assert back == state, name
        assert type(back) is SourceState
        assert back.site == state.site and back.outputs == state.outputs
        if state.summary is not None:
            assert back.summary is not None
            assert back.summary.first_prompt == state.summary.first_prompt
            assert back.summary.sub_sessions == ("sub_a", "sub_b")


def test_summaries_from_the_pool_share_their_few_valued_texts() -> None:
    """Two sessions' summaries unpickled in the build's process hold one copy of each text
    that takes few values (role, kind, status, decisions, tools, error codes, failure kinds), not one copy
    each: at 20,000 sessions that is about 14 MB of a full build's memory. Texts of one
    session (its name, its prompt) stay its own."""
    import pickle

    summaries = []
    for i in range(2):
        # Each built at run time: equal texts, distinct objects (as in two worker results).
        role = "".join(["night", "ly"])
        event = ("2026", "t", "".join(["den", "ied"]), "".join(["ba", "sh"]), "run", "/p", "1", "")
        error = ("2026", "t", "1", "", "".join(["tool-", "error"]), "".join(["ba", "sh"]), f"m {i}")
        summary = Summary(name=f"s{i}", file_name=f"s{i}.json", session_id="", kind="job",
                          role=role, version="1", created_at="", updated_at="", parent_id="",
                          sub_sessions=(), turns=1, tool_calls=0, errors=1, last_status="ok",
                          first_prompt=f"prompt {i}", decisions=(("".join(["den", "ied"]), 1),),
                          failure_events=(error,), decision_events=(event,))  # fmt: skip
        summaries.append(pickle.loads(pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL)))
        assert summaries[-1] == summary
    first, second = summaries
    assert first.role is second.role
    assert first.decisions[0][0] is second.decisions[0][0]
    assert first.decision_events[0][2] is second.decision_events[0][2]
    assert first.decision_events[0][3] is second.decision_events[0][3]
    assert first.failure_events[0][4] is second.failure_events[0][4]
    assert first.failure_events[0][5] is second.failure_events[0][5]
    assert first.first_prompt is not second.first_prompt


def test_a_shard_written_again_keeps_its_unchanged_lines_byte_for_byte(tmp_path: Path) -> None:
    """The lines a shard is read from are not kept with its states (20 MB at 20,000
    sessions once every state is decoded): when a change writes the shard again, its
    unchanged states' lines are copied from the last file, and each state decoded encodes
    to the very line it was read from (the path of a new shard count), hostile texts
    included (lone surrogates, line separators, control characters, markup)."""
    path = tmp_path / "manifest.jsonl"
    hostile = replace(
        summary("d"),
        role="night\u2028ly",
        first_prompt="<script>\x00\x1b[31m\udfff\U0001f600</script>",
        failure_events=(("2026", "t", "1", "turn-1", "error", "E\ud800", 'bad "quote" \\ \n'),),
        decision_events=(("2026", "t", "denied", "bash", "run", "/p\u00e9", "1.1", "turn-1.1"),),
    )
    states = {
        **sources(),
        # d and e share a's shard (slot 5 of 16).
        "d.json": SourceState(40, 9, "h4", hostile, None, ["session:x"], "fk4", {"sessions/d/index.html": "d4"}, "dg4", [], "ek4", COUNT * 2 + 5, (1, 2)),
        "e.json": SourceState(50, 9, "h5", summary("e"), None, [], "fk5", {}, "dg5", slot=5),
    }  # fmt: skip
    save(path, Manifest(), states)
    (before,) = [v for n, v in shard_files(path).items() if n.startswith("0005-")]
    loaded = Manifest.load(path)
    # What a build holds of them: the states as decoded from the manifest.
    changed = {name: loaded.sources[name] for name in states}
    assert changed == states
    changed["e.json"] = replace(changed["e.json"], facts_key="changed")
    save(path, loaded, changed, fresh={"e.json": changed["e.json"]})
    (after,) = [v for n, v in shard_files(path).items() if n.startswith("0005-")]
    assert before != after
    old_lines, new_lines = before.splitlines(), after.splitlines()
    assert [line for line in new_lines if b'"e.json"' not in line] == [
        line for line in old_lines if b'"e.json"' not in line
    ]
    assert len(new_lines) == 3
    assert Manifest.load(path).sources == changed
    for line in old_lines:
        name = json.loads(line)[0]
        row = json.dumps(
            loaded.sources[name].to_row(name), ensure_ascii=True, separators=(",", ":")
        )
        assert row.encode() == line


def test_a_shard_written_again_takes_its_members_from_its_last_files(tmp_path: Path) -> None:
    """A save finds a dirty shard's members from the last build's file of that shard (not a
    pass over every brief): a source gone, one added and one changed in the same shard all
    land where a fresh save puts them, and the unchanged member's brief line is the very
    line it was."""
    path = tmp_path / "manifest.jsonl"
    first = {
        **sources(),
        "d.json": SourceState(40, 9, "h4", summary("d"), None, slot=COUNT * 2 + 5),
        "e.json": SourceState(50, 9, "h5", summary("e"), None, slot=5),
    }
    save(path, Manifest(), first)
    before = brief_lines(path)
    loaded = Manifest.load(path)
    second = {name: loaded.sources[name] for name in ("a.json", "b.json", "c.json")}
    second["d.json"] = replace(loaded.sources["d.json"], size=41)  # changed, same shard
    second["f.json"] = SourceState(60, 9, "h6", summary("f"), None, slot=COUNT + 5)  # added
    save(path, loaded, second)  # e.json gone
    after = brief_lines(path)
    assert after["a.json"] == before["a.json"]
    assert sorted(after) == ["a.json", "b.json", "c.json", "d.json", "f.json"]
    assert Manifest.load(path).sources == second
    fresh_path = tmp_path / "fresh" / "manifest.jsonl"
    fresh_path.parent.mkdir()
    save(fresh_path, Manifest(), second)
    assert shard_files(fresh_path) == shard_files(path)  # the same files, byte for byte
