"""What a fresh ``site build`` append would cost at least if every session's brief lived in
an indexed store on disk (SQLite) instead of the manifest's brief lines held in memory.

Issue 12 asks that an append at 20,000 sessions cost at most 1.5x what it costs at 2,000,
and that peak memory stay flat. A fresh process must still look at every session file (an
append changes neither the folder's time nor the file's inode) and every site folder (a
page deleted by hand); with a store, that is all it would do in proportion to the archive:
read the stamps back in file name order, compare them with one ``stat`` of each file and
folder, and ask the store for the index's first screen. This measures exactly that, over a
SQLite copy of a built archive's briefs, in a fresh interpreter (best of ``--repeat``). It
is a lower bound of such a design (the census, graph and index queries of what changed are
not made), and the design itself is not built: see docs/performance.md.

Usage (a work folder holding ``sessions/``, ``site/`` and ``cache/`` of a built archive, as
``scale.py`` leaves them)::

    python benchmarks/store_floor.py /dev/shm/am2000 /dev/shm/am20000
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from publisher.site import urls  # noqa: E402
from publisher.site.context import CachePaths  # noqa: E402
from publisher.site.manifest import Brief, Manifest  # noqa: E402

COLUMNS = ("file_name", "size", "mtime_ns", "folder", "updated_at", "site_ino", "site_mtime_ns")

MEASURE = """
import json, os, sqlite3, sys, time
def peak_kb():  # VmHWM: unlike ru_maxrss, not inherited from the parent across exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
store, sessions, site = sys.argv[1:4]
c0 = time.process_time()
con = sqlite3.connect(store)
names = sorted(n for n in os.listdir(sessions) if n.endswith(".json"))
listed = time.process_time()
changed = disturbed = 0
rows = con.execute(
    "SELECT file_name, size, mtime_ns, folder, site_ino, site_mtime_ns FROM briefs"
    " ORDER BY file_name"
)
for (file_name, size, mtime_ns, folder, ino, site_mtime), name in zip(rows, names):
    st = os.stat(os.path.join(sessions, name))
    changed += st.st_size != size or st.st_mtime_ns != mtime_ns
    try:
        st = os.stat(os.path.join(site, folder))
        disturbed += st.st_ino != ino or st.st_mtime_ns != site_mtime
    except OSError:
        disturbed += 1
stats = time.process_time()
first = con.execute("SELECT folder FROM briefs ORDER BY updated_at DESC LIMIT 100").fetchall()
print(json.dumps({
    "files": len(names), "changed": changed, "disturbed": disturbed,
    "list_s": round(listed - c0, 4), "stamps_and_stats_s": round(stats - listed, 4),
    "first_screen_s": round(time.process_time() - stats, 4),
    "cpu_s": round(time.process_time() - c0, 4),
    "peak_rss_mb": round(peak_kb() / 1024, 1),
}))
"""


def make_store(work: Path, store: Path) -> int:
    """A SQLite table of the briefs of ``work``'s manifest (the columns an append's scan
    and first screen need), indexed by file name and by update time. Returns its rows."""
    manifest = Manifest.load(CachePaths(work / "cache").manifest)
    if not manifest.briefs:
        raise SystemExit(f"{work}: no manifest to read (build the archive first)")
    con = sqlite3.connect(store)
    con.execute(
        "CREATE TABLE briefs (file_name TEXT PRIMARY KEY, size INT, mtime_ns INT, folder TEXT,"
        " updated_at TEXT, site_ino INT, site_mtime_ns INT) WITHOUT ROWID"
    )
    con.execute("CREATE INDEX by_update ON briefs (updated_at)")
    rows = [_row(brief) for brief in manifest.briefs.values()]
    con.executemany(f"INSERT INTO briefs VALUES ({', '.join('?' * len(COLUMNS))})", rows)
    con.commit()
    con.close()
    return len(rows)


def _row(brief: Brief) -> tuple[object, ...]:
    folder = urls.slug(brief.name) if brief.loaded else ""
    return (
        brief.file_name,
        brief.size,
        brief.mtime_ns,
        folder,
        brief.updated_at,
        brief.site_ino,
        brief.site_mtime_ns,
    )


def measure(work: Path, store: Path, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(store), str(work / "sessions"),
             str(work / "site" / urls.SESSIONS)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        runs.append(json.loads(out.stdout))
    return min(runs, key=lambda run: run["cpu_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "work", nargs="+", type=Path, help="built archives (sessions/, site/, cache/)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        for work in args.work:
            store = Path(tmp) / f"{work.name}.sqlite"
            rows = make_store(work, store)
            report[str(work)] = {"briefs": rows, **measure(work, store, args.repeat)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
