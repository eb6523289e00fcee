"""One writer at a time (publisher/site/lock.py): real ``polyglav site build`` and ``site
watch`` processes on one site, started together, beside each other, killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from publisher.site.lock import holding
from tests.helpers import (
    MAIN,
    copy_samples,
    fresh_digest,
    page_of,
    part,
    python_env,
    session_doc,
    tree_digest,
    turn,
    write_json,
)

pytestmark = pytest.mark.site

TIMEOUT = 60


def start_build(sessions: Path, out: Path, cache: Path, *extra: str) -> subprocess.Popen[str]:
    """``polyglav site build`` of ``sessions`` (without search unless ``--search``)."""
    search = [] if "--search" in extra else ["--no-search"]
    return subprocess.Popen(
        [sys.executable, "-m", "publisher", "site", "build", "--project", str(sessions),
         "--out", str(out), "--cache-dir", str(cache), *search, "--quiet", *extra],
        env=python_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def wait_for_line(proc: subprocess.Popen[str], needle: str) -> str:
    """The first stderr line of ``proc`` holding ``needle`` (the process keeps running)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if needle in line:
            return line
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"{needle!r} never said (exit {proc.poll()})")


def test_a_build_waits_for_the_holder_and_says_whose_lock_it_is(tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    out, cache = tmp_path / "site", tmp_path / "cache"
    with holding(cache / "lock"):
        waiting = [start_build(sessions, out, cache) for _ in range(2)]
        for proc in waiting:
            line = wait_for_line(proc, "waiting")
            assert line.strip() == (
                f"polyglav: waiting for another build of this site (pid {os.getpid()}) to finish"
            )
        time.sleep(0.3)
        assert all(proc.poll() is None for proc in waiting)  # still waiting
    for proc in waiting:
        assert proc.wait(TIMEOUT) == 0, proc.stderr.read() if proc.stderr else ""
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


def test_no_wait_fails_at_once_with_one_line(tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    out, cache = tmp_path / "site", tmp_path / "cache"
    with holding(cache / "lock"):
        proc = start_build(sessions, out, cache, "--no-wait")
        _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1
    assert err.splitlines() == [
        f"polyglav: error: {cache}: another build (pid {os.getpid()}) is writing this site's "
        "cache; try again when it is done, or without --no-wait to wait for it"
    ]
    assert not out.exists()  # nothing was written


def test_two_builds_started_together_both_succeed_and_equal_a_fresh_build(
    tmp_path: Path,
) -> None:
    """Two builds raced on one site ended with ``fragment: Directory not empty``, or with a
    search index no single build makes; now the second waits for the first."""
    sessions = copy_samples(tmp_path / "sessions")
    for i in range(40):  # enough work that the two overlap
        doc = session_doc(f"ses_20260901_1200{i:02d}_lk{i:04d}", turns=[
            turn(t, part("user", f"step {t} #ab12cd"), part("text", "done " * 200))
            for t in range(1, 30)
        ])  # fmt: skip
        write_json(sessions / f"{doc['session_name']}.json", doc)
    out, cache = tmp_path / "site", tmp_path / "cache"
    procs = [start_build(sessions, out, cache, "--search") for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, err
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", search=True)


def test_a_killed_build_leaves_no_lock(tmp_path: Path) -> None:
    """The kernel releases the lock of a build killed with -9, and its worker processes
    do not keep it (they close their inherited copy, and stop when the build is gone)."""
    sessions = copy_samples(tmp_path / "sessions")
    for i in range(60):
        doc = session_doc(f"ses_20260901_1200{i:02d}_kl{i:04d}", turns=[
            turn(t, part("user", f"step {t}"), part("text", "done " * 300)) for t in range(1, 40)
        ])  # fmt: skip
        write_json(sessions / f"{doc['session_name']}.json", doc)
    out, cache = tmp_path / "site", tmp_path / "cache"
    proc = start_build(sessions, out, cache)
    deadline = time.monotonic() + TIMEOUT
    while not (out / "sessions").is_dir() and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(TIMEOUT)
    again = start_build(sessions, out, cache, "--no-wait")
    _, err = again.communicate(timeout=TIMEOUT)
    assert again.returncode == 0, err
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


def test_a_build_beside_a_running_watch(tmp_path: Path) -> None:
    """``site watch`` holds the lock for each rebuild only: a ``site build`` of the same
    site beside it succeeds, and the site is then what a fresh build makes."""
    sessions = copy_samples(tmp_path / "sessions")
    out, cache = tmp_path / "site", tmp_path / "cache"
    watch = subprocess.Popen(
        [sys.executable, "-m", "publisher", "site", "watch", "--project", str(sessions),
         "--out", str(out), "--cache-dir", str(cache), "--no-search", "--quiet-window", "0.1"],
        env=python_env(PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_for_line(watch, "built in")
        doc = session_doc(MAIN, turns=[turn(1, part("user", "changed beside the watcher"))])
        write_json(sessions / f"{MAIN}.json", doc)
        build = start_build(sessions, out, cache)
        _, err = build.communicate(timeout=TIMEOUT)
        assert build.returncode == 0, err
        assert "changed beside the watcher" in page_of(out, MAIN).read_text()
        time.sleep(1.0)  # the watcher's own rebuild of the change, if it makes one
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(TIMEOUT)
    assert watch.returncode == 0
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")
