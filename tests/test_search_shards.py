"""The sharded search index: shard assignment, only changed shards indexed again, and an
incremental build giving the same ``pagefind/`` tree as a fresh full build."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from publisher.site import search, urls
from publisher.site.context import Tunables
from publisher.site.search import Shard, plan_shards, shard_count, shard_id, shard_of
from tests import helpers
from tests.helpers import (
    SAMPLES,
    build,
    cache_of,
    fresh_digest,
    part,
    session_doc,
    tree_digest,
    turn,
)

# --------------------------------------------------------------------------------------
# Assignment (pure functions).


@pytest.mark.unit
def test_shard_count_is_a_power_of_two_of_the_session_count() -> None:
    assert Tunables().sessions_per_shard == 32 and Tunables().max_shards == 128
    expected = {0: 1, 1: 1, 5: 1, 32: 1, 33: 2, 64: 2, 65: 4, 200: 8, 2000: 64, 4096: 128}
    assert {n: shard_count(n) for n in expected} == expected
    assert shard_count(10**6) == 128
    for n in range(0, 5000, 7):
        k = shard_count(n)
        assert k & (k - 1) == 0 and 1 <= k <= 128
        assert k == 128 or n <= 32 * k  # at most 32 sessions a shard until the cap
        assert k == 1 or n > 16 * k  # and more than 16 (never needlessly many shards)


@pytest.mark.unit
def test_shard_of_is_a_stable_hash_of_the_slug() -> None:
    # Fixed values: a change of the hash would move every session (and is a format change).
    assert [shard_of("ses_20260817_120000_ab12cd", k) for k in (1, 2, 8, 64, 128)] == [
        0,
        0,
        6,
        54,
        118,
    ]
    assert shard_of("release-notes", 64) == 9
    names = [urls.slug(f"ses_2026_{i:04d}") for i in range(2000)]
    for k in (1, 2, 64, 128):
        counts = [0] * k
        for name in names:
            s = shard_of(name, k)
            assert 0 <= s < k
            assert shard_of(name, 2 * k) % k == s  # a doubling splits each shard in two
            counts[s] += 1
        assert max(counts) < 2 * len(names) / k + 10  # roughly even


@pytest.mark.unit
def test_plan_keeps_every_page_of_a_session_in_one_shard() -> None:
    produced = {
        "index.html": "i",
        "assets/app.js": "a",
        "sessions/big/index.html": "b1",
        "sessions/big/page-2.html": "b2",
        "sessions/big/page-3.html": "b3",
        "sessions/big/notes.txt": "n",
        **{f"sessions/s{i:02d}/index.html": f"d{i}" for i in range(40)},
    }
    shards = plan_shards(produced)
    assert {s.id.rsplit("-", 1)[1] for s in shards} == {"002"}  # 41 sessions: 2 shards
    assert [s.primary for s in shards] == [True] + [False] * (len(shards) - 1)
    assert [s.id for s in shards] == sorted(s.id for s in shards)
    big = next(s for s in shards if "big" in s.folders)
    assert [p for p, _ in big.pages if "/big/" in p] == [
        "sessions/big/index.html",
        "sessions/big/page-2.html",
        "sessions/big/page-3.html",
    ]
    every_page = sorted(p for s in shards for p, _ in s.pages)
    assert every_page == sorted(
        p for p in produced if p.startswith("sessions/") and p.endswith(".html")
    )
    assert sum(len(s.folders) for s in shards) == 41
    # The key follows the pages (and the build key), nothing else.
    changed = plan_shards({**produced, "sessions/big/page-2.html": "other"})
    for before, after in zip(shards, changed, strict=True):
        same = before.key("k", "1.5.2") == after.key("k", "1.5.2")
        assert same == ("big" not in before.folders)
    assert shards[0].key("k", "1.5.2") != shards[0].key("k2", "1.5.2")
    assert plan_shards({"index.html": "i"}) == []


@pytest.mark.unit
def test_heavy_sessions_are_shards_of_their_own() -> None:
    produced = {f"sessions/s{i:02d}/index.html": f"d{i}" for i in range(40)}
    produced["sessions/long/index.html"] = "l1"
    produced["sessions/long/page-2.html"] = "l2"
    sizes = dict.fromkeys(produced, 1000)
    assert all(not s.id.startswith("solo-") for s in plan_shards(produced, sizes))
    sizes["sessions/long/page-2.html"] = Tunables().solo_bytes
    shards = plan_shards(produced, sizes)
    solo = shards[-1]
    assert solo.id == search.solo_id("long") and solo.id.startswith("solo-")
    assert solo.folders == ("long",) and len(solo.pages) == 2 and not solo.primary
    assert shards[0].primary and shards[0].id.startswith("shard-")
    assert all("long" not in s.folders for s in shards[:-1])
    assert shard_count(41) == 2 and all(s.id.endswith("-of-002") for s in shards[:-1])


@pytest.mark.unit
def test_glob_selects_the_shard_folders_and_refuses_unsafe_names() -> None:
    assert Shard("x", ("a",), (), True).glob() == "sessions/a/*.html"
    assert Shard("x", ("a", "b-1.2"), (), True).glob() == "sessions/{a,b-1.2}/*.html"
    for bad in ("a,b", "{a}", "a*", "A", "a/b", "[x]", ".hidden"):
        with pytest.raises(ValueError):
            Shard("x", (bad,), (), True).glob()
    assert shard_id(3, 64) == "shard-003-of-064"


# --------------------------------------------------------------------------------------
# Builds.


@pytest.fixture
def small_shards(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Two sessions a shard; yields the list of shards Pagefind indexed, in call order."""
    monkeypatch.setitem(helpers.DEFAULTS, "tunables", Tunables(sessions_per_shard=2))
    runs: list[str] = []
    real = search.run_pagefind

    def counting(site: Path, glob: str, output: Path, *, cwd: Path) -> str | None:
        runs.append(cwd.name)
        return real(site, glob, output, cwd=cwd)

    monkeypatch.setattr(search, "run_pagefind", counting)
    yield runs


NAMES = [f"ses_20260101_0000{i:02d}_abc0{i:02d}" for i in range(10)]


def write_archive(
    folder: Path, names: list[str], extra_turns: dict[str, int] | None = None
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.glob("*.json"):
        if path.stem not in names:
            path.unlink()
    for name in names:
        i = int(name[-2:])
        turns = [
            turn(n, part("user", f"prompt {n} of zq{i}word"), part("text", f"answer common {n}"))
            for n in range(1, 2 + (extra_turns or {}).get(name, 0))
        ]
        data = json.dumps(session_doc(name, turns=turns), indent=1)
        path = folder / f"{name}.json"
        if not path.is_file() or path.read_text(encoding="utf-8") != data:
            path.write_text(data, encoding="utf-8")


def _replace_tree(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder)


def shard_listing(out: Path) -> list[str]:
    listing = json.loads((out / "pagefind" / "shards.json").read_text(encoding="utf-8"))
    shards: list[str] = listing["shards"]
    return shards


def mtimes(out: Path) -> dict[str, int]:
    return {
        p.relative_to(out).as_posix(): p.stat().st_mtime_ns
        for p in (out / "pagefind").rglob("*")
        if p.is_file()
    }


def shard_of_session(name: str, out: Path) -> str:
    count = int(shard_listing(out)[0].rsplit("-", 1)[1])
    return shard_id(shard_of(urls.slug(name), count), count)


@pytest.mark.site
def test_append_reindexes_one_shard_and_equals_a_fresh_build(
    small_shards: list[str], tmp_path: Path
) -> None:
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    first = build(sessions, out, search=True, workers=2)
    listing = shard_listing(out)
    assert first.search == f"built {len(listing)}/{len(listing)} shards"
    assert len(listing) >= 2 and all(s.endswith("-of-008") for s in listing)
    assert sorted(small_shards) == listing
    before = mtimes(out)

    small_shards.clear()
    assert build(sessions, out, search=True).search == "unchanged"
    assert small_shards == []

    target = NAMES[3]
    write_archive(sessions, NAMES, {target: 1})
    report = build(sessions, out, search=True, workers=2)
    touched = shard_of_session(target, out)
    assert small_shards == [touched]
    assert report.search == f"built 1/{len(listing)} shards"
    after = mtimes(out)
    changed = {rel for rel in after if before.get(rel) != after[rel]}
    assert changed and all(rel.startswith(f"pagefind/{touched}/") for rel in changed), changed
    assert {rel.split("/")[1] for rel in before} == {rel.split("/")[1] for rel in after}
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", search=True)


@pytest.mark.site
@pytest.mark.slow
def test_shards_that_empty_or_change_count_are_removed_and_the_tree_equals_a_fresh_build(
    small_shards: list[str], tmp_path: Path
) -> None:
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    build(sessions, out, search=True)
    listing = shard_listing(out)
    # Remove every session of the primary shard: the next one becomes primary (it now
    # carries the runtime), the emptied bundle goes.
    primary = listing[0]
    kept = [n for n in NAMES if shard_of_session(n, out) != primary]
    write_archive(sessions, kept)
    small_shards.clear()
    report = build(sessions, out, search=True)
    assert len(kept) > 4  # the shard count (8) does not change
    assert shard_listing(out) == listing[1:]
    assert small_shards == [listing[1]]  # only the new primary: it needs the runtime
    assert report.search == f"built 1/{len(listing) - 1} shards, 1 removed"
    assert not (out / "pagefind" / primary).exists()
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh1", search=True)
    # Fewer sessions: fewer shards, everything indexed again, old bundles removed.
    write_archive(sessions, kept[:3])
    small_shards.clear()
    build(sessions, out, search=True)
    assert all(s.endswith("-of-002") for s in shard_listing(out))
    assert sorted(small_shards) == shard_listing(out)
    assert sorted(p.name for p in (out / "pagefind").iterdir()) == sorted(
        [*shard_listing(out), "shards.json"]
    )
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh2", search=True)


@pytest.mark.site
def test_only_the_primary_bundle_carries_the_runtime_and_no_ui_is_published(
    small_shards: list[str], tmp_path: Path
) -> None:
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    build(sessions, out, search=True)
    primary, *others = shard_listing(out)
    names = {p.name for p in (out / "pagefind" / primary).iterdir()}
    assert {"pagefind.js", "pagefind-worker.js", "wasm.en.pagefind", "pagefind-entry.json"} <= names
    for shard in others:
        names = {p.name for p in (out / "pagefind" / shard).iterdir()}
        assert "pagefind-entry.json" in names and "index" in names and "fragment" in names
        assert not any(n.endswith((".js", ".wasm")) or n.startswith("wasm.") for n in names)
    assert not [p for p in (out / "pagefind").rglob("pagefind-*ui*")]
    assert not [p for p in (out / "pagefind").rglob("pagefind-highlight*")]


@pytest.mark.site
@pytest.mark.slow
def test_two_sharded_builds_are_byte_identical(small_shards: list[str], tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    write_archive(sessions, NAMES)
    build(sessions, tmp_path / "a", search=True, workers=1)
    build(sessions, tmp_path / "b", search=True, workers=2)
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")


@pytest.mark.site
@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="needs a tmpfs at /dev/shm")
def test_the_index_does_not_follow_the_order_pages_were_written_in(
    small_shards: list[str], tmp_path: Path
) -> None:
    # On tmpfs a folder lists its entries in the order they were made: the order in which
    # the render's workers finished. Pagefind numbers pages in listing order, so it must
    # index a staging of the pages made in one order, not the site as the build left it.
    sessions = tmp_path / "sessions"
    write_archive(sessions, NAMES)
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        out = Path(shm) / "site"
        build(sessions, out, search=True, workers=1)
        expected = tree_digest(out / "pagefind")
        files = sorted(p for p in (out / "sessions").rglob("*") if p.is_file())
        contents = [(page, page.read_bytes()) for page in files]
        _replace_tree(out / "sessions")
        for page, data in reversed(contents):  # the same folders and pages, made backwards
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_bytes(data)
        _replace_tree(out / "pagefind")  # the whole index made again, nothing seeded
        small_shards.clear()
        build(sessions, out, search=True, workers=1)
        assert small_shards  # Pagefind ran on every shard
        assert tree_digest(out / "pagefind") == expected


@pytest.mark.site
def test_pagefind_sees_only_the_shards_pages_staged_and_no_planted_link(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES[:3])
    build(sessions, out)
    folders = sorted(p.name for p in (out / "sessions").iterdir())
    secret = tmp_path / "secret.html"
    secret.write_text("<html><body>outside the site</body></html>")
    (out / "sessions" / folders[0] / "planted.html").symlink_to(secret)
    seen: list[list[str]] = []

    def looking(site: Path, glob: str, output: Path, *, cwd: Path) -> str | None:
        files = sorted(p for p in site.rglob("*") if not p.is_dir())
        assert not any(p.is_symlink() for p in files)
        seen.append([p.relative_to(site).as_posix() for p in files])
        return "stop here"

    monkeypatch.setattr(search, "run_pagefind", looking)
    produced = {
        p.relative_to(out).as_posix(): "h" for p in sorted(out.rglob("*")) if not p.is_dir()
    }
    shard = plan_shards(produced)[0]
    error = search._index_shard(out, tmp_path / "tmp", shard, search._Seeding())
    assert error == "stop here"
    assert seen == [sorted(rel for rel, _ in shard.pages if not rel.endswith("planted.html"))]
    assert any(rel.endswith("planted.html") for rel, _ in shard.pages)
    assert all(rel.startswith("sessions/") for rel in seen[0])
    assert not (tmp_path / "tmp" / shard.id).exists()  # the staging is removed


@pytest.mark.site
@pytest.mark.slow
def test_a_missing_or_tampered_bundle_is_rebuilt_and_stray_files_removed(
    small_shards: list[str], tmp_path: Path
) -> None:
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    build(sessions, out, search=True)
    expected = tree_digest(out)
    listing = shard_listing(out)
    victim = listing[-1]
    (out / "pagefind" / victim / "pagefind-entry.json").unlink()
    (out / "pagefind" / "pagefind.js").write_text("old single bundle")  # earlier layout
    (out / "pagefind" / "index").mkdir()
    small_shards.clear()
    report = build(sessions, out, search=True)
    assert small_shards == [victim] and report.search == f"built 1/{len(listing)} shards"
    assert tree_digest(out) == expected
    # A file or a link planted at pagefind/: replaced by the bundles.
    outside = tmp_path / "outside"
    outside.mkdir()
    _replace_tree(out / "pagefind")
    (out / "pagefind").symlink_to(outside)
    build(sessions, out, search=True)
    assert not (out / "pagefind").is_symlink() and list(outside.iterdir()) == []
    assert tree_digest(out) == expected
    _replace_tree(out / "pagefind")
    (out / "pagefind").write_text("not a folder")
    build(sessions, out, search=True)
    assert tree_digest(out) == expected
    # A lost search state indexes everything again, with the same result.
    cache_of(out).search_state.write_text("{not json")
    small_shards.clear()
    build(sessions, out, search=True)
    assert sorted(small_shards) == listing
    assert tree_digest(out) == expected


@pytest.mark.site
@pytest.mark.slow
def test_a_failed_shard_is_reported_and_retried(
    small_shards: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    counting = search.run_pagefind
    broken: set[str] = set()

    def flaky(site: Path, glob: str, output: Path, *, cwd: Path) -> str | None:
        if cwd.name in broken:
            small_shards.append(cwd.name)
            return "boom"
        return counting(site, glob, output, cwd=cwd)

    monkeypatch.setattr(search, "run_pagefind", flaky)
    build(sessions, out, search=True)
    expected = tree_digest(out)
    listing = shard_listing(out)
    broken.add(listing[1])
    write_archive(sessions, NAMES, dict.fromkeys(NAMES, 1))  # every shard changes
    report = build(sessions, out, search=True)
    assert report.search.startswith(f"unavailable: Pagefind failed on 1/{len(listing)} shards")
    assert (out / "pagefind" / listing[1] / "pagefind-entry.json").is_file()  # the old one kept
    broken.clear()
    small_shards.clear()
    assert build(sessions, out, search=True).search == f"built 1/{len(listing)} shards"
    assert small_shards == [listing[1]]
    assert tree_digest(out) != expected
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", search=True)


@pytest.mark.site
def test_search_off_removes_the_index_and_its_state(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(SAMPLES, out, search=True)
    assert shard_listing(out) == ["shard-000-of-001"]
    assert cache_of(out).search_state.is_file()
    assert build(SAMPLES, out, search=False).search == "off"
    assert not (out / "pagefind").exists() and not cache_of(out).search_state.exists()
    assert not cache_of(out).search_tmp.exists()


@pytest.mark.site
def test_pagefind_config_in_the_working_directory_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    build(SAMPLES, out, search=True)
    expected = tree_digest(out)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "pagefind.yml").write_text("glob: nothing/*.html\nforce_language: fr\n")
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("PAGEFIND_FORCE_LANGUAGE", "de")
    out2 = tmp_path / "site2"
    build(SAMPLES, out2, search=True)
    assert tree_digest(out2) == expected
    assert os.environ["PAGEFIND_FORCE_LANGUAGE"] == "de"


@pytest.mark.site
@pytest.mark.slow
def test_a_session_growing_heavy_moves_to_a_shard_of_its_own(
    small_shards: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        helpers.DEFAULTS, "tunables", Tunables(sessions_per_shard=2, solo_bytes=60_000)
    )
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    build(sessions, out, search=True)
    assert max(p.stat().st_size for p in (out / "sessions").rglob("*.html")) < 60_000
    assert not [s for s in shard_listing(out) if s.startswith("solo-")]
    heavy = NAMES[4]
    home = shard_of_session(heavy, out)
    write_archive(sessions, NAMES, {heavy: 120})
    small_shards.clear()
    build(sessions, out, search=True)
    solo = search.solo_id(urls.slug(heavy))
    assert shard_listing(out)[-1] == solo
    assert sorted(small_shards) == sorted([solo] + ([home] if home in shard_listing(out) else []))
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh1", search=True)
    # A change to another session of its old shard no longer re-indexes the heavy one.
    neighbour = next(n for n in NAMES if n != heavy and shard_of_session(n, out) != solo)
    write_archive(sessions, NAMES, {heavy: 120, neighbour: 1})
    small_shards.clear()
    build(sessions, out, search=True)
    assert small_shards == [shard_of_session(neighbour, out)]
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh2", search=True)


@pytest.mark.site
@pytest.mark.slow
def test_another_pagefind_binary_reindexes_every_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shard digests name the binary (path, size, mtime), so an upgraded Pagefind, or
    one chosen with PAGEFIND_BINARY_PATH, indexes again (from scratch: chunks another
    Pagefind made do not seed its runs); the same binary does not."""
    seeds: list[Path] = []
    real_seed = search._seed_chunks
    monkeypatch.setattr(
        search, "_seed_chunks", lambda i, b, o: seeds.append(i) or real_seed(i, b, o)
    )
    real = search._pagefind_command()[0]
    out = tmp_path / "site"
    build(SAMPLES, out, search=True)
    assert build(SAMPLES, out, search=True).search == "unchanged"
    copy = tmp_path / "bin" / "pagefind"
    copy.parent.mkdir()
    copy.write_bytes(Path(real).read_bytes())
    copy.chmod(0o755)
    monkeypatch.setenv("PAGEFIND_BINARY_PATH", str(copy))
    assert search._pagefind_command() == [str(copy)]
    version = search.pagefind_version()
    assert build(SAMPLES, out, search=True).search == "built 1/1 shards"
    assert build(SAMPLES, out, search=True).search == "unchanged"
    os.utime(copy, ns=(0, 1_000_000_000))  # "upgraded" in place
    assert search.pagefind_version() != version
    assert build(SAMPLES, out, search=True).search == "built 1/1 shards"
    assert seeds == []
    expected = tree_digest(out)
    cache_of(out).search_state.unlink()  # which Pagefind made the chunks: unknown
    assert build(SAMPLES, out, search=True).search == "built 1/1 shards"
    assert seeds == [] and tree_digest(out) == expected


@pytest.mark.site
def test_bundle_chunks_names_exactly_the_files_pagefind_wrote(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(SAMPLES, out, search=True)
    bundle = out / "pagefind" / shard_listing(out)[0]
    named = search.bundle_chunks(bundle)
    assert named is not None and named["fragment"] and named["index"]
    for folder, suffix in search.CHUNK_SUFFIXES.items():
        on_disk = {p.name[: -len(suffix)] for p in (bundle / folder).glob(f"*{suffix}")}
        assert named[folder] == on_disk, folder
    # Not Pagefind 1's metadata: None, never a guess.
    meta = next(bundle.glob("pagefind.*.pf_meta"))
    meta.write_bytes(b"\x1f\x8b" + meta.read_bytes()[2:40])
    assert search.bundle_chunks(bundle) is None
    (bundle / "pagefind-entry.json").write_text('{"version": "1", "languages": {}}')
    assert search.bundle_chunks(bundle) is None


@pytest.mark.site
@pytest.mark.slow
def test_an_append_seeds_the_shard_with_its_old_chunks_and_prunes_the_stale_ones(
    small_shards: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pagefind skips chunk files that exist, so the old bundle's are copied in first; the
    ones the new index does not name are removed: the result is a fresh build's."""
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    build(sessions, out, search=True)
    seeded: list[bool] = []
    real_seed = search._seed_chunks

    def spy(installed: Path, bundle: Path, out_dir: Path) -> bool:
        seeded.append(real_seed(installed, bundle, out_dir))
        return seeded[-1]

    monkeypatch.setattr(search, "_seed_chunks", spy)
    target = NAMES[5]
    shard = shard_of_session(target, out)
    old_fragments = {p.name for p in (out / "pagefind" / shard / "fragment").iterdir()}
    write_archive(sessions, NAMES, {target: 2})
    small_shards.clear()
    build(sessions, out, search=True)
    assert small_shards == [shard] and seeded == [True]
    new_fragments = {p.name for p in (out / "pagefind" / shard / "fragment").iterdir()}
    assert old_fragments - new_fragments and new_fragments - old_fragments  # one page changed
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", search=True)


@pytest.mark.site
@pytest.mark.slow
def test_unreadable_chunk_lists_fall_back_to_indexing_from_scratch(
    small_shards: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    build(sessions, out, search=True)
    monkeypatch.setattr(search, "bundle_chunks", lambda bundle: None)  # "another format"
    target = NAMES[6]
    shard = shard_of_session(target, out)
    write_archive(sessions, NAMES, {target: 1})
    small_shards.clear()
    build(sessions, out, search=True)
    assert small_shards == [shard, shard]  # seeded run, then the run from scratch
    assert json.loads(cache_of(out).search_state.read_text())["seeding"] is False
    write_archive(sessions, NAMES, {target: 2})
    small_shards.clear()
    build(sessions, out, search=True)
    assert small_shards == [shard]  # not tried again: from scratch at once
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", search=True)


@pytest.mark.site
def test_seeding_never_follows_links_out_of_the_site(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(SAMPLES, out, search=True)
    installed = out / "pagefind" / shard_listing(out)[0]
    outside = tmp_path / "outside.pf_fragment"
    outside.write_text("secret")
    (installed / "fragment" / "planted.pf_fragment").symlink_to(outside)
    bundle = tmp_path / "new"
    assert search._seed_chunks(installed, bundle, out)
    assert not (bundle / "fragment" / "planted.pf_fragment").exists()
    linked = tmp_path / "linked"
    linked.symlink_to(installed)
    assert not search._seed_chunks(linked, tmp_path / "new2", out)
    assert not search._seed_chunks(installed, tmp_path / "new3", tmp_path / "elsewhere")


# --------------------------------------------------------------------------------------
# Indexing during the render (issue 13).


def _early_index(out: Path, folders: list[str], tmp: Path, key: str) -> search.EarlyIndex:
    paths = search.SearchPaths(state=tmp / "search.json", tmp=tmp / "search-tmp")
    expected: dict[str, dict[str, str] | None] = dict.fromkeys(folders)
    return search.EarlyIndex(
        out, expected, workers=2, key=key, paths=paths, tunables=Tunables(sessions_per_shard=2)
    )


def _pages_by_folder(outputs: dict[str, str]) -> dict[str, dict[str, str]]:
    by: dict[str, dict[str, str]] = {}
    for rel, digest in outputs.items():
        match = search.PAGE_RE.match(rel)
        if match:
            by.setdefault(match[1], {})[rel] = digest
    return by


@pytest.mark.site
def test_a_shard_is_indexed_as_soon_as_its_sessions_are_rendered_and_kept(
    small_shards: list[str], tmp_path: Path
) -> None:
    """Shards start while sessions are still pending; update_search keeps every bundle built
    for the key it wants (each shard indexed once) and the index equals a fresh build's."""
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    report = build(sessions, out, search=False)
    by_folder = _pages_by_folder(report.outputs)
    assert len(by_folder) == len(NAMES)
    early = _early_index(out, sorted(by_folder), tmp_path / "cache", "k1")
    count = early.count
    order = sorted(by_folder, key=lambda f: shard_of(f, count))  # shards finish in turn
    half = len(order) // 2
    for folder in order[:half]:
        early.rendered(folder, by_folder[folder])
    started_early = early.runs
    assert started_early > 0  # before the other half of the sessions is rendered
    for folder in order[half:]:
        early.rendered(folder, by_folder[folder])
    produced = dict(report.outputs)
    shards = plan_shards(
        produced, search._page_sizes(out, produced), Tunables(sessions_per_shard=2)
    )
    result = search.update_search(
        out,
        produced,
        workers=1,
        key="k1",
        paths=early.paths,
        tunables=Tunables(sessions_per_shard=2),
        early=early,
    )
    assert not result.failed and sorted(result.built) == sorted(s.id for s in shards)
    assert sorted(small_shards) == sorted(s.id for s in shards)  # each one Pagefind run
    expected = fresh_digest(sessions, tmp_path / "fresh", search=True)
    assert {k: v for k, v in tree_digest(out).items() if k.startswith("pagefind/")} == {
        k: v for k, v in expected.items() if k.startswith("pagefind/")
    }


@pytest.mark.site
def test_an_early_guess_that_turns_out_wrong_is_indexed_again(
    small_shards: list[str], tmp_path: Path
) -> None:
    """A session that fails to render stops early indexing; a bundle built early for another
    key (the shard count changed) is not kept: update_search indexes it again."""
    sessions, out = tmp_path / "sessions", tmp_path / "site"
    write_archive(sessions, NAMES)
    report = build(sessions, out, search=False)
    by_folder = _pages_by_folder(report.outputs)
    extra = [*sorted(by_folder), "ses_never_rendered"]  # expected, but it will fail
    early = _early_index(out, extra, tmp_path / "cache", "k1")
    folders = sorted(by_folder, key=lambda f: shard_of(f, early.count))
    for folder in folders[:3]:
        early.rendered(folder, by_folder[folder])
    early.rendered(None, None)  # a failure: nothing more starts
    started = early.runs
    for folder in folders[3:]:
        early.rendered(folder, by_folder[folder])
    assert early.runs == started
    produced = dict(report.outputs)
    result = search.update_search(
        out,
        produced,
        workers=1,
        key="k1",
        paths=early.paths,
        tunables=Tunables(sessions_per_shard=2),
        early=early,
    )
    assert not result.failed
    expected = fresh_digest(sessions, tmp_path / "fresh", search=True)
    assert {k: v for k, v in tree_digest(out).items() if k.startswith("pagefind/")} == {
        k: v for k, v in expected.items() if k.startswith("pagefind/")
    }


@pytest.mark.site
def test_a_build_indexes_during_the_render_and_equals_a_deferred_one(
    small_shards: list[str], tmp_path: Path
) -> None:
    """``site build`` (early indexing) and a deferred build finished afterwards (``site
    watch``'s path, no early indexing) publish the same index, each shard indexed once."""
    from publisher.site.build import finish_search

    sessions = tmp_path / "sessions"
    write_archive(sessions, NAMES)
    report = build(sessions, tmp_path / "a", search=True, workers=2)
    listing = shard_listing(tmp_path / "a")
    assert report.search == f"built {len(listing)}/{len(listing)} shards"
    assert sorted(small_shards) == listing
    deferred = build(sessions, tmp_path / "b", search=True, defer_search=True)
    assert deferred.search == "pending" and not (tmp_path / "b" / "pagefind").exists()
    assert deferred.pending_search is not None
    finish_search(deferred.pending_search)
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")
