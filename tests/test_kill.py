"""A build killed at any moment (``kill -9``: no handler runs) leaves no torn page, and the
next build equals a fresh one, byte for byte: a full build into an empty site, and an
incremental one (turns appended, a session added, one deleted, one that stops loading).

Pages are written to a temporary file and moved into place, the catalog is one SQLite
transaction committed last, and a build that finds the cache's ``building`` mark trusts no
file of the site and sweeps what the catalog does not know."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import (
    MAIN,
    SECURITY,
    build,
    copy_samples,
    part,
    processes_left,
    python_env,
    session_doc,
    tree_digest,
    turn,
    write_json,
)

pytestmark = pytest.mark.site

KILLS = 8
"""Builds killed a test, each at its own moment."""


def archive(folder: Path) -> Path:
    """The samples and 40 sessions of 20 turns: a build of a few seconds, many pages."""
    copy_samples(folder)
    for i in range(40):
        name = f"ses_20260901_12{i:02d}00_kil{i:03d}"
        turns = [
            turn(t, part("user", f"step {t} of {i} #ab12cd"), part("text", "done. " * 150))
            for t in range(1, 21)
        ]
        errors = [{"code": "E1", "message": "m", "timestamp": "2026-09-01T12:00:00Z"}] * (i % 3)
        write_json(folder / f"{name}.json", session_doc(name, turns=turns, errors=errors))
    return folder


def change(folder: Path) -> None:
    """What an incremental build picks up: appends, a new session, one gone, one broken."""
    for name in (MAIN, "ses_20260901_120500_kil005"):
        doc = json.loads((folder / f"{name}.json").read_text())
        doc["turns"].append(turn(len(doc["turns"]) + 1, part("user", "appended before the kill")))
        write_json(folder / f"{name}.json", doc)
    write_json(
        folder / "ses_20260902_090000_new001.json", session_doc("ses_20260902_090000_new001")
    )
    (folder / "ses_20260901_120700_kil007.json").unlink()
    (folder / f"{SECURITY}.json").write_text('{"session_name": "cut')


def start(sessions: Path, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "publisher", "site", "build", "--project", str(sessions),
         "--out", str(out), "--cache-dir", str(cache), "--no-search", "--quiet"],
        env=python_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


def timed(sessions: Path, out: Path, cache: Path) -> float:
    """How long a build of ``sessions`` into ``out`` takes here (seconds)."""
    began = time.monotonic()
    assert start(sessions, out, cache).wait(300) == 0
    return time.monotonic() - began


def torn(out: Path, *states: dict[str, str]) -> list[str]:
    """The files of ``out`` that are in none of ``states`` (path → sha256) as they are:
    output is deterministic, so a complete file is one a build of either state writes. A
    temporary file of a write cut short is not a page (the next build removes it)."""
    now = tree_digest(out)
    return sorted(
        rel
        for rel, digest in now.items()
        if not rel.rsplit("/", 1)[-1].endswith(".tmp")
        and all(state.get(rel) != digest for state in states)
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["full", "incremental"])
def test_a_build_killed_at_any_moment(tmp_path: Path, mode: str) -> None:
    sessions = archive(tmp_path / "sessions")
    out, cache = tmp_path / "site", tmp_path / "cache"
    before: dict[str, str] = {}
    if mode == "incremental":
        before = tree_digest(_built(sessions, tmp_path / "before"))
        build(sessions, out, cache_dir=cache)
        shutil.copytree(out, tmp_path / "site-then")
        shutil.copytree(cache, tmp_path / "cache-then")
        change(sessions)
    after = tree_digest(_built(sessions, tmp_path / "after"))

    def reset() -> None:
        for folder in (out, cache):
            shutil.rmtree(folder, ignore_errors=True)
        if mode == "incremental":
            shutil.copytree(tmp_path / "site-then", out)
            shutil.copytree(tmp_path / "cache-then", cache)

    reset()
    duration = timed(sessions, out, cache)
    moments = random.Random(f"{mode}-kill").sample(range(1, 1000), KILLS)
    killed = 0
    for moment in sorted(moments):
        reset()
        proc = start(sessions, out, cache)
        time.sleep(duration * 1.1 * moment / 1000)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait(60)
        assert torn(out, after, before) == [], f"killed at {moment / 10:.1f} % of a build"
        build(sessions, out, cache_dir=cache)  # the next build
        assert tree_digest(out) == after, f"after a kill at {moment / 10:.1f} % of a build"
        leftovers = [p.name for p in cache.rglob("*.tmp")]
        assert leftovers == [], leftovers
    assert killed >= KILLS // 2  # most were killed midway, not after the build ended


def _built(sessions: Path, root: Path) -> Path:
    """A fresh build of ``sessions`` under ``root`` (its site folder)."""
    out = root / "site"
    build(sessions, out, cache_dir=root / "cache")
    return out


@pytest.mark.site
def test_the_build_after_a_killed_one_removes_what_its_writes_left(tmp_path: Path) -> None:
    """A build killed in the middle of a write leaves the temporary file it was writing
    (in the site, or a fragment file in the cache): the next build, finding the cache's
    ``building`` mark, sweeps them and any page the catalog does not know."""
    from publisher.site.context import CachePaths

    sessions = copy_samples(tmp_path / "sessions")
    out, cache = tmp_path / "site", tmp_path / "cache"
    build(sessions, out, cache_dir=cache)
    expected = tree_digest(out)
    planted = [
        out / ".index.html.0123abcd.tmp",
        out / "sessions" / MAIN / ".page-2.html.89abcdef.tmp",
        out / "sessions" / "ses_20991231_000000_gone01" / "index.html",
    ]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("<html>cut short")
    fragment = CachePaths(cache).fragments / f".{MAIN}.frag.deadbeef.tmp"
    fragment.write_bytes(b"half a fragment file")
    CachePaths(cache).building.touch()  # the killed build's mark
    build(sessions, out, cache_dir=cache)
    assert not any(path.exists() for path in planted) and not fragment.exists()
    assert tree_digest(out) == expected


KILLED_IN_SEARCH = """
import os, signal, sys
from pathlib import Path
from publisher.site.build import build_site
from publisher.site.context import BuildOptions, Tunables

def progress(stage, done, total):
    if stage == "search" and done == 1:  # the first bundle is written, others are under way
        os.kill(os.getpid(), signal.SIGKILL)

sessions, out, cache = map(Path, sys.argv[1:4])
build_site(BuildOptions(sessions_dir=sessions, out_dir=out, cache_dir=cache, search=True,
    workers=2, progress=progress, tunables=Tunables(sessions_per_bundle=4)))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; flock")
def test_a_build_killed_while_its_search_workers_write_leaves_none_holding_the_lock(
    tmp_path: Path,
) -> None:
    """The bundles are written by worker processes while the build makes the archive's
    pages. A build killed then (``kill -9``, the OOM killer) must not leave a worker
    behind holding its copy of the cache's lock: the next build would wait for it forever.
    Each worker closes the lock it inherited and stops once the build's process is gone."""
    import fcntl

    from publisher.site.context import CachePaths, Tunables

    sessions = archive(tmp_path / "sessions")
    out, cache = tmp_path / "site", tmp_path / "cache"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_IN_SEARCH, str(sessions), str(out), str(cache)],
        env=python_env(),
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL  # killed in the search stage, not after
    assert not (out / "search" / "index.js").exists()
    assert processes_left(str(cache), 20) == [], "a search worker outlived the build"
    fd = os.open(CachePaths(cache).lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises when a worker holds it
    finally:
        os.close(fd)
    small = Tunables(sessions_per_bundle=4)
    build(sessions, out, cache_dir=cache, search=True, workers=2, tunables=small, wait=False)
    fresh = tmp_path / "fresh"
    build(sessions, fresh, cache_dir=tmp_path / "fresh-cache", search=True, tunables=small)
    assert tree_digest(out) == tree_digest(fresh)
