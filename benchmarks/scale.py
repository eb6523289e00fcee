"""Issues 12 and 33's scale benchmark: small archives (``generate.py --small``) of each size.

For each size: a full build (and one more with its site and cache in memory, in
``/dev/shm``, which takes the disk's own costs out), then ``--repeat`` no-op builds and builds after one turn is
appended to one session (each in a fresh subprocess, search off unless ``--search``; wall time, and the peak RSS
of the build process and of its largest pool worker),
the files the append rewrote, a new session added (tonight's run of a series) and removed
again, the same append under ``site watch`` (builds in one process
told which file changed), the stat floor (listing the sessions folder and one
``stat`` of each session file and each session's site folder: what any build that notices
a change pays a session on this machine), then in Chromium the time for the index to show its first
rows (measured in the page, and from Playwright) and to sort every row (the first sort
loads every row shard). ``polyglav sessions`` in a fresh process against the warm catalog
(the archive is laid out as a project, ``<root>/project/.polyglav/sessions``, and built
into its default site and cache folders, so the CLI finds the build's catalog).

Then (issue 33) the output-heavy shape (``generate.py --shape output``, ``--output N``
sessions) gets the same full build, appends and ``polyglav sessions``, and the 5,000-turn
session (``generate.py --long-session 5000``, about 92 MB) one full build (``--long``).

Memory is each process's own peak resident set from the operating system: the build
process's ``VmHWM`` (reset by ``exec``, so the benchmark's own size is not in it) and its
largest worker's (``RUSAGE_CHILDREN``), the larger of the two, net of a bare interpreter's
``VmHWM`` measured the same way. The last lines of the report (``summary``) give, in one
run: full-build net peak against the smallest size (issue 33: flat within 1.2x), the
fresh-process append's median wall time against the smallest size (targets: 1.5x at
20,000, 2x at 100,000), the files an append rewrote at each size (the same at every
size), ``polyglav sessions``' median wall time, and the long session's net peak against
its file size (target 3x).

Usage::

    python benchmarks/scale.py --sizes 2000,20000,100000 --output 40 --long \
        --skip watch,add,browser,memfs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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

from compiled import compile_source  # noqa: E402
from generate import ARCHIVES, generate, long_session, small_archive  # noqa: E402

BUILD = """
import resource, sys, time
from pathlib import Path
from publisher.site.pool import FolderStamps
listing = FolderStamps.start(sys.argv[1])  # as polyglav site build: before the imports
from publisher.site.build import build_site
from publisher.site.context import BuildOptions
t, c = time.perf_counter(), time.process_time()
build_site(BuildOptions(sessions_dir=Path(sys.argv[1]), out_dir=Path(sys.argv[2]),
                        cache_dir=Path(sys.argv[3]), search=sys.argv[4] == "on",
                        listing=listing))
print(time.process_time() - c)
print(time.perf_counter() - t)
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
own = 0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        own = int(line.split()[1])
print(own, workers)
"""

BARE = """
import sys
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        sys.stdout.write(line.split()[1])
"""


WATCH = """
import json, sys, time
from pathlib import Path
from publisher.site.build import build_site
from publisher.site.context import BuildOptions, Warm
sessions, repeat = Path(sys.argv[1]), int(sys.argv[4])
options = BuildOptions(sessions_dir=sessions, out_dir=Path(sys.argv[2]),
                       cache_dir=Path(sys.argv[3]), search=sys.argv[5] == "on")
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
        [sys.executable, "-c", WATCH, str(sessions), str(site), str(cache), str(repeat), SEARCH[0]],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def bare_peak_mb() -> float:
    """A bare interpreter's peak resident set (its ``VmHWM``), MB: the floor every
    process's figure is net of (the smallest of 3)."""
    runs = [
        subprocess.run([sys.executable, "-c", BARE], check=True, capture_output=True, text=True)
        for _ in range(3)
    ]
    return round(min(int(run.stdout) for run in runs) / 1024, 1)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(sessions: Path, site: Path, cache: Path) -> dict[str, float]:
    cpu = _children_cpu()
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", BUILD, str(sessions), str(site), str(cache), SEARCH[0]],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    lines = out.stdout.strip().splitlines()
    own, workers = (int(v) for v in lines[-1].split())
    return {
        "wall_s": round(wall, 3),
        "inside_s": round(float(lines[-2]), 3),
        # CPU time of the build process itself (a full build's pool workers not counted).
        "inside_cpu_s": round(float(lines[-3]), 3),
        # CPU time of the whole process and its workers, interpreter start included: what
        # the wall time is on an idle machine, whatever the load (this one is shared).
        "process_cpu_s": round(cpu, 3),
        # Peak RSS of the build process, and of the largest of its pool workers (each
        # process's own, as the build measures them: a Chromium run of this benchmark
        # is a child of this process too, and would hide them in RUSAGE_CHILDREN).
        "peak_rss_mb": round(own / 1024, 1),
        "worker_peak_rss_mb": round(workers / 1024, 1),
        "largest_peak_net_mb": round(max(own, workers) / 1024 - BARE_MB[0], 1),
    }


BARE_MB = [0.0]
"""The bare interpreter's peak (:func:`bare_peak_mb`), measured once at the start."""

SEARCH = ["off"]
"""``--search``: every build of the run with the search index ("on", a build's default) or
without it ("off")."""


def sessions_cli(project: Path, expected: int) -> dict[str, float]:
    """``polyglav sessions --project PROJECT`` in a fresh process (the catalog of its default
    site read): wall time, and the rows it listed (checked against ``expected``)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "publisher", "sessions", "--project", str(project)],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    wall = time.perf_counter() - start
    rows = out.stdout.count(b"\n") - 1  # a header line
    if rows != expected:
        raise SystemExit(f"polyglav sessions listed {rows} sessions, not {expected}")
    return {
        "wall_s": round(wall, 3),
        "process_cpu_s": round(_children_cpu() - cpu, 3),
        "rows": rows,
    }


def stamps(site: Path) -> dict[str, tuple[int, int, int]]:
    """Each file of ``site`` by its (inode, size, mtime): a build writes a file whose bytes
    changed by a rename of a new file (a new inode), and leaves the others as they are
    (hashing every file of 100,000 sessions' site twice an append took longer than the
    builds)."""
    found = {}
    for folder, _, files in os.walk(site):
        for name in files:
            path = os.path.join(folder, name)
            st = os.stat(path)
            found[os.path.relpath(path, site)] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return found


def rewritten(
    before: dict[str, tuple[int, int, int]], after: dict[str, tuple[int, int, int]]
) -> list[str]:
    return sorted(k for k in after.keys() | before.keys() if before.get(k) != after.get(k))


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


def bench(
    label: str, pristine: Path, work: Path, repeat: int, trash: list[Path], skip: set[str]
) -> dict[str, object]:
    """Every figure of one archive (``pristine``: its sessions folder, copied first)."""
    root = work / label
    set_aside(root, trash)
    project = root / "project"
    sessions = project / ".polyglav" / "sessions"
    shutil.copytree(pristine, sessions)
    n = sum(1 for _ in sessions.glob("*.json"))
    # Its default site and cache folders, so that ``polyglav sessions`` reads its catalog.
    os.environ["XDG_CACHE_HOME"] = str(root / "xdg")
    from publisher.site.context import default_cache_dir

    site = project / ".polyglav" / "site"
    cache = default_cache_dir(site)
    result: dict[str, object] = {"archive": label, "sessions": n}
    result["full"] = build(sessions, site, cache)
    log(label, "full", result["full"])
    if "memfs" not in skip:
        result["full_in_memory"] = full_in_memory(sessions)
        log(label, "full, site and cache in memory", result["full_in_memory"])
    result["noop"] = [build(sessions, site, cache) for _ in range(repeat)]
    log(label, "noop", result["noop"])
    result["sessions_cli"] = [sessions_cli(project, n) for _ in range(repeat)]
    log(label, "polyglav sessions", result["sessions_cli"])
    appends = []
    for _ in range(repeat):
        before = stamps(site)
        append(sessions)
        time.sleep(2.1)  # past the racy-stamp window
        appends.append(build(sessions, site, cache))
        result["append_files_rewritten"] = rewritten(before, stamps(site))
    result["append"] = appends
    log(label, "append", appends, result["append_files_rewritten"])
    if "add" not in skip:
        # A new session (nightly CI adds runs) and its removal: the archive's shape changes.
        added, removed = [], []
        for serial in range(repeat):
            before = stamps(site)
            path = add_run(sessions, serial)
            time.sleep(2.1)
            added.append(build(sessions, site, cache))
            result["add_files_rewritten"] = rewritten(before, stamps(site))
            path.unlink()
            removed.append(build(sessions, site, cache))
        result["add_session"], result["remove_session"] = added, removed
        log(label, "add session", added, len(result["add_files_rewritten"]), "files")
        log(label, "remove session", removed)
    if "watch" not in skip:
        result["watch_append"] = watch_appends(sessions, site, cache, repeat)
        log(label, "watch append", result["watch_append"])
    result["floor"] = stat_floor(sessions, site)
    log(label, "floor", result["floor"])
    result["index_html_bytes"] = (site / "index.html").stat().st_size
    if "browser" not in skip and label.startswith("small"):
        result["chromium"] = [browser(site) for _ in range(repeat)]
        log(label, "chromium", result["chromium"])
    return result


def bench_long(pristine: Path, work: Path, trash: list[Path]) -> dict[str, object]:
    """One full build of the long session (issue 13's memory case): its net peak against
    its file's size."""
    root = work / "long"
    set_aside(root, trash)
    sessions = root / "sessions"
    shutil.copytree(pristine, sessions)
    size_mb = sum(p.stat().st_size for p in sessions.glob("*.json")) / 2**20
    full = build(sessions, root / "site", root / "cache")
    result: dict[str, object] = {
        "archive": "long",
        "file_mib": round(size_mb, 1),
        "full": full,
        "net_over_file": round(full["largest_peak_net_mb"] / size_mb, 2),
    }
    log("long", result)
    return result


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


APPEND_TARGETS = {20_000: 1.5, 100_000: 2.0}
"""Issue 33: a fresh process's append at this many sessions, at most this many times the
same append at 2,000."""


def summary(report: list[dict[str, object]]) -> dict[str, object]:
    """The figures issue 33 asks for, against the smallest small archive of the run."""
    small = [r for r in report if str(r["archive"]).startswith("small")]
    rows: list[dict[str, object]] = []
    base = small[0] if small else None
    for r in report:
        if r["archive"] == "long":
            continue
        full = r["full"]
        appends = [a["wall_s"] for a in r["append"]]  # type: ignore[attr-defined]
        row: dict[str, object] = {
            "archive": r["archive"],
            "sessions": r["sessions"],
            "full_peak_net_mb": full["largest_peak_net_mb"],  # type: ignore[index]
            "append_wall_s": round(_median(appends), 3),
            # In the build (interpreter start and imports apart), and its CPU time.
            "append_inside_s": round(_median([a["inside_s"] for a in r["append"]]), 3),  # type: ignore[attr-defined]
            "append_cpu_s": round(_median([a["inside_cpu_s"] for a in r["append"]]), 3),  # type: ignore[attr-defined]
            "append_process_cpu_s": round(
                _median([a.get("process_cpu_s", 0.0) for a in r["append"]]),  # type: ignore[attr-defined]
                3,
            ),
            "append_files_rewritten": len(r["append_files_rewritten"]),  # type: ignore[arg-type]
            "sessions_cli_s": round(_median([c["wall_s"] for c in r["sessions_cli"]]), 3),  # type: ignore[attr-defined]
            "sessions_cli_process_cpu_s": round(
                _median([c.get("process_cpu_s", 0.0) for c in r["sessions_cli"]]),  # type: ignore[attr-defined]
                3,
            ),
        }
        if base is not None and r in small:
            bfull = base["full"]["largest_peak_net_mb"]  # type: ignore[index]
            bappend = _median([a["wall_s"] for a in base["append"]])  # type: ignore[attr-defined]
            row["full_peak_vs_smallest"] = round(row["full_peak_net_mb"] / bfull, 2)  # type: ignore[operator]
            row["append_vs_smallest"] = round(row["append_wall_s"] / bappend, 2)  # type: ignore[operator]
            target = APPEND_TARGETS.get(int(r["sessions"]))  # type: ignore[call-overload]
            if target is not None:
                row["append_target"] = target
        rows.append(row)
    out: dict[str, object] = {"bare_interpreter_mb": BARE_MB[0], "archives": rows}
    long = [r for r in report if r["archive"] == "long"]
    if long:
        out["long"] = {k: long[0][k] for k in ("file_mib", "net_over_file")} | {
            "largest_peak_net_mb": long[0]["full"]["largest_peak_net_mb"],  # type: ignore[index]
            "target": 3.0,
        }
    return out


def log(*what: object) -> None:
    """Each figure as it is measured (stderr), so a long run's partial results survive."""
    print(*what, file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2000,20000")
    parser.add_argument("--work", type=Path, default=ARCHIVES / "scale-work")
    parser.add_argument("--repeat", type=int, default=3, help="no-op, append and Chromium runs")
    parser.add_argument(
        "--output", type=int, default=0, help="also the output-heavy shape of N sessions"
    )
    parser.add_argument("--long", action="store_true", help="also the 5,000-turn session")
    parser.add_argument(
        "--search",
        action="store_true",
        help="every build with the search index (the default of polyglav site build; an"
        " append then writes its session's bundle again)",
    )
    parser.add_argument(
        "--skip", default="", help="comma-separated: memfs, add, watch, browser (not measured)"
    )
    args = parser.parse_args()
    compile_source(ROOT / "publisher")  # timed as installed: see compiled.py
    skip = {s for s in args.skip.split(",") if s}
    SEARCH[0] = "on" if args.search else "off"
    log("search", SEARCH[0])
    BARE_MB[0] = bare_peak_mb()
    log("bare interpreter", BARE_MB[0], "MB")
    trash: list[Path] = []
    report: list[dict[str, object]] = []
    try:
        # The long session and the output-heavy shape first: quicker than the largest size.
        if args.long:
            pristine = ARCHIVES / "long-t5000-s1" / "sessions"
            if not pristine.is_dir():
                long_session(pristine, 5000)
            report.append(bench_long(pristine, args.work, trash))
        if args.output:
            folder = generate(args.output, shape="output")
            report.append(
                bench(
                    f"output-n{args.output}",
                    folder / "sessions",
                    args.work,
                    args.repeat,
                    trash,
                    skip,
                )
            )
        for n in (int(n) for n in args.sizes.split(",") if n):
            pristine = ARCHIVES / f"small-n{n}-s1"
            if not (pristine / "sessions").is_dir():
                small_archive(n, pristine)
            report.append(
                bench(f"small-n{n}", pristine / "sessions", args.work, args.repeat, trash, skip)
            )
    finally:
        for folder in trash:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps({"search": SEARCH[0], "runs": report, "summary": summary(report)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
