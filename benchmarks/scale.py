"""Issue 12's scale benchmark: small archives (``generate.py --small``) of each size.

For each size: a full build (and one more with its site and cache in memory, in
``/dev/shm``, which takes the disk's own costs out), then ``--repeat`` no-op builds and builds after one turn is
appended to one session (each in a fresh subprocess, search off; wall time, and the peak RSS
of the build process and of its largest pool worker),
the files the append rewrote, a new session added (tonight's run of a series) and removed
again, the same append under ``site watch`` (builds in one process
told which file changed), the stat floor (listing the sessions folder and one
``stat`` of each session file and each session's site folder: what any build that notices
a change pays a session on this machine), then in Chromium the time for the index to show its first
rows (measured in the page, and from Playwright) and to sort every row (the first sort
loads every row shard). Prints a JSON report.

Usage::

    python benchmarks/scale.py --sizes 2000,20000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from generate import ARCHIVES, small_archive  # noqa: E402

BUILD = """
import resource, sys, time
from pathlib import Path
from publisher.site.build import build_site
from publisher.site.context import BuildOptions
t, c = time.perf_counter(), time.process_time()
build_site(BuildOptions(sessions_dir=Path(sys.argv[1]), out_dir=Path(sys.argv[2]),
                        cache_dir=Path(sys.argv[3]), search=False))
print(time.process_time() - c)
print(time.perf_counter() - t)
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(own, workers)
"""


WATCH = """
import json, sys, time
from pathlib import Path
from publisher.site.build import build_site
from publisher.site.context import BuildOptions, Warm
sessions, repeat = Path(sys.argv[1]), int(sys.argv[4])
options = BuildOptions(sessions_dir=sessions, out_dir=Path(sys.argv[2]),
                       cache_dir=Path(sys.argv[3]), search=False)
warm = Warm()
build_site(options, warm)  # what site watch does first: a build that looks at everything
files = sorted(sessions.glob("*.json"))
path = files[len(files) // 2]
for _ in range(repeat):
    doc = json.loads(path.read_text())
    doc["turns"].append({**doc["turns"][-1], "index": doc["turns"][-1]["index"] + 1})
    path.write_text(json.dumps(doc, indent=2) + "\\n")
    time.sleep(2.1)
    warm.seen = {path.name}  # as site watch's events tell it: a write, no file created
    warm.relist = False
    t, c = time.perf_counter(), time.process_time()
    report = build_site(options, warm)
    print(json.dumps({"inside_cpu_s": round(time.process_time() - c, 3),
                      "inside_s": round(time.perf_counter() - t, 3),
                      "files_read": report.files_read, "changed": len(report.changed)}))
"""


def watch_appends(sessions: Path, site: Path, cache: Path, repeat: int) -> list[dict[str, float]]:
    """One turn appended ``repeat`` times under ``site watch``: builds in one process that
    keeps its state between builds, each told by the watcher which file changed (the
    builds a running watcher makes while an agent writes)."""
    out = subprocess.run(
        [sys.executable, "-c", WATCH, str(sessions), str(site), str(cache), str(repeat)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def build(sessions: Path, site: Path, cache: Path) -> dict[str, float]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", BUILD, str(sessions), str(site), str(cache)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall = time.perf_counter() - start
    lines = out.stdout.strip().splitlines()
    own, workers = (int(v) for v in lines[-1].split())
    return {
        "wall_s": round(wall, 3),
        "inside_s": round(float(lines[-2]), 3),
        # CPU time of the build process itself (a full build's pool workers not counted).
        "inside_cpu_s": round(float(lines[-3]), 3),
        # Peak RSS of the build process, and of the largest of its pool workers (each
        # process's own, as the build measures them: a Chromium run of this benchmark
        # is a child of this process too, and would hide them in RUSAGE_CHILDREN).
        "peak_rss_mb": round(own / 1024, 1),
        "worker_peak_rss_mb": round(workers / 1024, 1),
    }


def digests(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in site.rglob("*")
        if p.is_file()
    }


def append(sessions: Path) -> None:
    path = sorted(sessions.glob("*.json"))[len(list(sessions.glob("*.json"))) // 2]
    doc = json.loads(path.read_text())
    last = doc["turns"][-1]
    doc["turns"].append({**last, "index": last["index"] + 1})
    path.write_text(json.dumps(doc, indent=2) + "\n")


def add_run(sessions: Path, serial: int) -> Path:
    """Tonight's run: a new session, a copy of the newest with a later time and its own
    name and id (the new last run of that series). Returns its file."""
    newest = max(sessions.glob("job_*.json"))
    doc = json.loads(newest.read_text())
    day, clock = doc["session_name"].split("_")[1:3]
    clock = f"{int(clock) + 1 + serial:06d}"  # a second later (each run its own)
    ident = f"zz{serial:04d}"
    doc["session_name"], doc["session_id"] = f"job_{day}_{clock}_{ident}", ident
    doc["created_at"] = doc["updated_at"] = (
        f"{day[:4]}-{day[4:6]}-{day[6:]}T{clock[:2]}:{clock[2:4]}:{clock[4:]}+00:00"
    )
    path = sessions / f"{doc['session_name']}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def stat_floor(sessions: Path, site: Path) -> dict[str, float]:
    """What any build that notices changes pays a session, whatever else it does: listing
    the sessions folder and one ``stat`` of each session file (a changed file) and of each
    session's folder in the site (a page deleted by hand), in a fresh subprocess as a build
    would (the kernel's caches as warm as a build finds them). CPU seconds, best of 3."""
    code = (
        "import os, sys, time\n"
        "best = 9e9\n"
        "for _ in range(3):\n"
        "    c = time.process_time()\n"
        "    for folder in sys.argv[1:]:\n"
        "        fd = os.open(folder, os.O_RDONLY)\n"
        "        for name in os.listdir(folder):\n"
        "            os.stat(name, dir_fd=fd)\n"
        "        os.close(fd)\n"
        "    best = min(best, time.process_time() - c)\n"
        "print(best)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(sessions), str(site / "sessions")],
        check=True,
        capture_output=True,
        text=True,
    )
    return {"stat_floor_cpu_s": round(float(out.stdout), 3)}


# In the page, from navigation start: the first animation frame after the one in which the
# index's first row is laid out, i.e. the time the first rows are on screen. Measured by the
# browser itself, so Playwright's round trips (a few hundred ms on a loaded machine) are not in it.
FIRST_ROWS_PROBE = """
(() => {
  const seen = () => {
    const row = document.querySelector("#session-table tbody tr");
    if (row && row.getBoundingClientRect().height > 0) {
      requestAnimationFrame(() => { window.__firstRowsMs = performance.now(); });
      return;
    }
    requestAnimationFrame(seen);
  };
  requestAnimationFrame(seen);
})();
"""


def browser(site: Path, timeout_ms: int = 300_000) -> dict[str, float]:
    """The index in a running Chromium, opened in a new tab (the browser is started and one
    blank tab opened first: its start-up is not the index's). ``first_rows_s``: navigation
    start to the first rows painted, measured in the page; ``first_rows_wall_s``: the same
    seen from Playwright (the page asked for, then a row found), round trips included.
    ``timeout_ms``: how long the sort of every row may take (a test gives less)."""
    import re

    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        blank = b.new_page()
        blank.goto("about:blank")
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.add_init_script(FIRST_ROWS_PROBE)
        start = time.perf_counter()
        page.goto((site / "index.html").as_uri(), wait_until="commit")
        page.wait_for_selector("#session-table tbody tr")
        first_wall = time.perf_counter() - start
        page.wait_for_function("() => window.__firstRowsMs !== undefined")
        first = float(page.evaluate("() => window.__firstRowsMs")) / 1000
        total = int(json.loads(page.locator("#index-shards").text_content() or "{}")["total"])
        start = time.perf_counter()
        page.locator('th[data-key="turns"] button').click()
        expect(page.locator("#filter-count")).to_have_text(
            re.compile(rf"of [\d,]+ matching shown \({total:,} sessions\)"), timeout=timeout_ms
        )
        sort_all = time.perf_counter() - start
        b.close()
    return {
        "first_rows_s": round(first, 3),
        "first_rows_wall_s": round(first_wall, 3),
        "sort_all_s": round(sort_all, 3),
        "rows": total,
    }


MEMORY_FS = Path("/dev/shm")
"""A memory file system (Linux): the full build is also measured with its site and cache
there, which takes the disk's own costs out of the figure."""


def set_aside(root: Path, trash: list[Path]) -> None:
    """Move a last run's folder out of the way, to be deleted once every figure is measured
    (``trash``). Freeing tens of thousands of inodes just before a full build slows it on an
    ext4 file system without a journal (this machine's disk): allocating an inode skips
    each recently freed one (``find_inode_bit`` → ``recently_deleted`` in ``perf``), and
    the build's system time grew from 20 to 50 s at 20,000 sessions."""
    if root.exists():
        aside = root.with_name(f"{root.name}.old-{os.getpid()}-{len(trash)}")
        root.rename(aside)
        trash.append(aside)


def full_in_memory(sessions: Path) -> dict[str, float] | None:
    """A full build with its site and cache in :data:`MEMORY_FS` (None where there is none)."""
    if not os.access(MEMORY_FS, os.W_OK):
        return None
    scratch = Path(tempfile.mkdtemp(dir=MEMORY_FS, prefix="polyglav-scale-"))
    try:
        return build(sessions, scratch / "site", scratch / "cache")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def bench(n: int, work: Path, repeat: int, trash: list[Path]) -> dict[str, object]:
    pristine = ARCHIVES / f"small-n{n}-s1"
    if not (pristine / "sessions").is_dir():
        small_archive(n, pristine)
    root = work / f"n{n}"
    set_aside(root, trash)
    sessions = root / "sessions"
    shutil.copytree(pristine / "sessions", sessions)
    site, cache = root / "site", root / "cache"
    result: dict[str, object] = {"sessions": n}
    result["full"] = build(sessions, site, cache)
    log(n, "full", result["full"])
    result["full_in_memory"] = full_in_memory(sessions)
    log(n, "full, site and cache in memory", result["full_in_memory"])
    result["noop"] = [build(sessions, site, cache) for _ in range(repeat)]
    log(n, "noop", result["noop"])
    appends = []
    for _ in range(repeat):
        before = digests(site)
        append(sessions)
        time.sleep(2.1)  # past the racy-stamp window
        appends.append(build(sessions, site, cache))
        after = digests(site)
        result["append_files_rewritten"] = sorted(k for k in after if before.get(k) != after[k])
    result["append"] = appends
    log(n, "append", appends, result["append_files_rewritten"])
    # A new session (nightly CI adds runs) and its removal: the archive's shape changes.
    added, removed = [], []
    for serial in range(repeat):
        before = digests(site)
        path = add_run(sessions, serial)
        time.sleep(2.1)
        added.append(build(sessions, site, cache))
        after = digests(site)
        result["add_files_rewritten"] = sorted(k for k in after if before.get(k) != after[k])
        path.unlink()
        removed.append(build(sessions, site, cache))
    result["add_session"], result["remove_session"] = added, removed
    log(n, "add session", added, len(result["add_files_rewritten"]), "files")
    log(n, "remove session", removed)
    result["watch_append"] = watch_appends(sessions, site, cache, repeat)
    log(n, "watch append", result["watch_append"])
    result["floor"] = stat_floor(sessions, site)
    log(n, "floor", result["floor"])
    result["index_html_bytes"] = (site / "index.html").stat().st_size
    result["chromium"] = [browser(site) for _ in range(repeat)]
    log(n, "chromium", result["chromium"])
    return result


def log(*what: object) -> None:
    """Each figure as it is measured (stderr), so a long run's partial results survive."""
    print(*what, file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2000,20000")
    parser.add_argument("--work", type=Path, default=ARCHIVES / "scale-work")
    parser.add_argument("--repeat", type=int, default=3, help="no-op, append and Chromium runs")
    args = parser.parse_args()
    trash: list[Path] = []
    try:
        report = [bench(int(n), args.work, args.repeat, trash) for n in args.sizes.split(",")]
    finally:
        for folder in trash:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
