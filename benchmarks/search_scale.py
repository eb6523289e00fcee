"""Issue 30's search benchmark: the index of archives of small sessions, what a query loads.

For each size (``generate.py --small`` archives: 3-turn CI runs):

1. the index alone, as a full build makes it: each session's record (read, prepared,
   extracted as the render does), then every bundle written (in a subprocess each, so that
   its peak memory is its own: the largest bundle's peak RSS is what the index build holds
   at once, and must not grow with the archive). The peak is the process's ``VmHWM``, its
   own memory image's: not ``ru_maxrss``, which Linux carries over ``exec`` from the
   parent that started it (this benchmark's own size, which grows with the archive);
2. in Chromium, from ``file://``, a two-word query typed into the real search client
   (``assets/search.js`` on a page holding only the search box): the bytes of every index
   file it loaded (the script tags the client added, sized on disk) and the time from the
   last keystroke to the first results, measured in the page.

Prints a JSON report. The full site build's search part against its build without search
is ``run.py``'s (``--shapes output``); this one is about scale.

Usage::

    python benchmarks/search_scale.py --sizes 20000,100000
    # two clients alternated on an index already built (a site, or a --keep run's):
    python benchmarks/search_scale.py --site SITE --clients HEAD~1,work --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from compiled import compile_source  # noqa: E402
from generate import ARCHIVES, small_archive  # noqa: E402

RECORDS = """
import sys, json, time
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from publisher.prepare import prepare_file
from publisher.site.search.extract import session_record
from publisher.site.search.store import SearchStore
from publisher.site.search.terms import TermCounter
folder, store = Path(sys.argv[1]), SearchStore(Path(sys.argv[2]))
names = json.loads(Path(sys.argv[3]).read_text())
counter = TermCounter()
started = time.process_time()
for name in names:
    store.put_record(session_record(prepare_file(folder / name, folder, None).session, None, counter))
print(time.process_time() - started)
"""

BUNDLE = """
import sys, json, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from publisher.site.stages.search import BundleJob, _write_bundle
from publisher.site.urls import PageLimits
job = json.loads(sys.argv[2])
started = time.process_time()
meta, documents, _ = _write_bundle(
    BundleJob(job["id"], tuple(tuple(m) for m in job["members"]), "", job["index"]),
    "search_scale", Path(job["store"]), Path(job["folder"]), None, PageLimits(), job["doc"],
    Path(job["out"]))
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"meta": meta, "documents": documents, "cpu": time.process_time() - started,
                  "rss_kb": hwm}))
"""

TERMS = """
import sys, json, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from publisher.site.search.store import SearchStore
from publisher.site.stages.search import ListedBundle, publish_index
job = json.loads(sys.argv[2])
started = time.process_time()
chunks = publish_index(Path(job["out"]), SearchStore(Path(job["store"])),
                       [ListedBundle(*b) for b in job["bundles"]], job["chunk"])
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"chunks": chunks, "cpu": time.process_time() - started, "rss_kb": hwm}))
"""

PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'self'">
<title>search</title>
<script src="assets/snowball-english.js" defer></script><script src="assets/search.js" defer></script>
</head><body data-root="" data-search="on">
<input id="search-input" type="search"><p id="search-status"></p><ol id="search-results"></ol>
<button id="search-more" hidden>more</button></body></html>
"""


def build_index(
    sessions: Path, out: Path, work: Path, workers: int, chunk: int, doc: int, reuse: bool
) -> dict[str, object]:
    """Records of every session (``workers`` processes; with ``reuse``, those of an earlier
    ``--keep`` run when it left one a session), then every bundle (one process each,
    ``workers`` at a time, document chunks of at least ``doc``), then the shared term
    chunks (of ``chunk`` bytes) and ``index.js``; what it cost."""
    from publisher.site import urls
    from publisher.site.context import Tunables
    from publisher.site.search.bundle import bundle_count, bundle_id, bundle_of
    from publisher.site.urls import row_slot

    tunables = Tunables()
    store = work / "search"
    names = sorted(p.name for p in sessions.glob("*.json"))
    started = time.perf_counter()
    kept = len(list((store / "records").glob("*.json"))) if reuse else 0
    parts = [names[i::workers] for i in range(workers)] if kept != len(names) else []
    procs = []
    for i, part in enumerate(parts):
        listing = work / f"names-{i}.json"
        listing.write_text(json.dumps(part))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", RECORDS, str(sessions), str(store), str(listing), str(ROOT)],
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    record_cpu = sum(float(p.communicate()[0]) for p in procs)
    records_s = time.perf_counter() - started
    size = sum((sessions / n).stat().st_size for n in names)
    count = bundle_count(
        len(names), size, tunables.sessions_per_bundle, tunables.bundle_bytes, tunables.max_bundles
    )
    members: dict[int, list[tuple[str, str]]] = {}
    for n in names:
        session = n[: -len(".json")]
        members.setdefault(bundle_of(row_slot(session), count), []).append((urls.slug(session), n))
    # A kept record the build no longer takes (made by an older extraction) is made again
    # in its bundle's process, timed with the bundles: counted by the files it rewrites.
    stamps = {p.name: p.stat().st_mtime_ns for p in (store / "records").glob("*.json")}
    started = time.perf_counter()
    results = []
    pending = sorted(members)
    running: list[subprocess.Popen[str]] = []
    while pending or running:
        while pending and len(running) < workers:
            index = pending.pop(0)
            job = {
                "id": bundle_id(index, count),
                "index": index,
                "members": sorted(members[index]),
                "store": str(store),
                "folder": str(sessions),
                "chunk": chunk,
                "doc": doc,
                "out": str(out),
            }
            proc = subprocess.Popen(
                [sys.executable, "-c", BUNDLE, str(ROOT), json.dumps(job)],
                stdout=subprocess.PIPE,
                text=True,
            )
            proc.job_id = job["id"]  # type: ignore[attr-defined]
            proc.job_index = index  # type: ignore[attr-defined]
            running.append(proc)
        proc = running.pop(0)
        result = json.loads(proc.communicate()[0])
        result["id"] = proc.job_id  # type: ignore[attr-defined]
        result["index"] = proc.job_index  # type: ignore[attr-defined]
        results.append(result)
    bundles_s = time.perf_counter() - started
    remade = sum(
        1
        for p in (store / "records").glob("*.json")
        if stamps.get(p.name) not in (None, p.stat().st_mtime_ns)
    )
    results.sort(key=lambda r: r["id"])
    # The shared term chunks and index.js, as the build's process makes them (its own
    # process here too: its peak memory is its own).
    started = time.perf_counter()
    listed = [[r["id"], r["meta"], r["index"], r["documents"]] for r in results]
    job = {"out": str(out), "store": str(store), "bundles": listed, "chunk": chunk}
    terms = json.loads(
        subprocess.run(
            [sys.executable, "-c", TERMS, str(ROOT), json.dumps(job)],
            stdout=subprocess.PIPE, text=True, check=True,
        ).stdout
    )  # fmt: skip
    terms_s = time.perf_counter() - started
    files = [p for p in (out / "search").rglob("*.js")]
    return {
        "sessions": len(names),
        "bundles": count,
        "records_reused": not parts,
        "records_made_again_in_bundles": remade,
        "chunk_bytes": chunk,
        "doc_bytes": doc,
        "records_s": round(records_s, 2),
        "records_cpu_s": round(record_cpu, 2),
        "bundles_s": round(bundles_s, 2),
        "bundles_cpu_s": round(sum(r["cpu"] for r in results), 2),
        "largest_bundle_peak_rss_mb": round(max(r["rss_kb"] for r in results) / 1024, 1),
        "term_chunks": terms["chunks"],
        "terms_s": round(terms_s, 2),
        "terms_cpu_s": round(terms["cpu"], 2),
        "terms_peak_rss_mb": round(terms["rss_kb"] / 1024, 1),
        "index_files": len(files),
        "index_mb": round(sum(p.stat().st_size for p in files) / 1e6, 1),
        "records_mb": round(sum(p.stat().st_size for p in store.rglob("*.json")) / 1e6, 1),
    }


def _thread_time(cdp: object) -> float:
    """The page's main thread's CPU seconds so far (Chromium's ``ThreadTime`` metric)."""
    metrics = cdp.send("Performance.getMetrics")["metrics"]  # type: ignore[attr-defined]
    return float(next(m["value"] for m in metrics if m["name"] == "ThreadTime"))


def query_in_chromium(
    out: Path, queries: list[str], client: bytes | None = None
) -> list[dict[str, object]]:
    """Each query typed into the client from ``file://``: the index bytes it loaded and
    the milliseconds from its last keystroke to the first results (in the page). The
    client is ``assets/search.js`` of the working tree, or ``client``'s bytes."""
    from tests.browser import chromium

    assets = ROOT / "themes" / "default" / "assets"
    (out / "assets").mkdir(exist_ok=True)
    shutil.copyfile(assets / "snowball-english.js", out / "assets" / "snowball-english.js")
    search = out / "assets" / "search.js"
    search.write_bytes(client if client is not None else (assets / "search.js").read_bytes())
    (out / "index.html").write_text(PAGE)
    measured = []
    scripts = "Array.from(document.querySelectorAll('script[src]')).map(e => e.src)"
    with chromium() as browser:
        for query in queries:
            entry: dict[str, object] = {"query": query}
            for how in ("typed", "pasted"):
                page = browser.new_page()
                page.goto((out / "index.html").as_uri())
                page.focus("#search-input")  # as a person clicks into the box: the metas load
                page.wait_for_timeout(1500)
                before = set(page.evaluate(scripts))
                cdp = page.context.new_cdp_session(page)
                cdp.send("Performance.enable")
                if how == "typed":  # as a person types: a query at each keystroke
                    page.locator("#search-input").press_sequentially(query[:-1], delay=150)
                    page.wait_for_timeout(500)
                    page.evaluate("delete document.getElementById('search-results').dataset.ms")
                    cpu_before = _thread_time(cdp)
                    page.locator("#search-input").press(query[-1])
                else:  # the whole query at once: what the query itself loads
                    cpu_before = _thread_time(cdp)
                    page.fill("#search-input", query)
                page.wait_for_function(
                    "() => document.getElementById('search-results').dataset.ms !== undefined",
                    timeout=60_000,
                )
                # The page's main thread's CPU from the last keystroke to the results (and
                # the few ms of polling after them): what the wall time in the page would
                # be on an idle core, give or take the files' reads in other threads.
                entry[f"{how}_main_thread_cpu_ms"] = round(
                    (_thread_time(cdp) - cpu_before) * 1000, 1
                )
                page.wait_for_timeout(500)
                loaded = page.evaluate(scripts)  # the client adds a script tag a file
                index = out / "search"
                paths = [
                    p for u in loaded if (p := Path(u[len("file://") :])).is_relative_to(index)
                ]
                first = {
                    p for u in before if (p := Path(u[len("file://") :])).is_relative_to(index)
                }
                entry["status"] = page.locator("#search-status").inner_text()
                entry[f"{how}_ms_after_last_key"] = float(
                    page.get_attribute("#search-results", "data-ms") or "nan"
                )
                entry["kb_on_focus"] = round(sum(p.stat().st_size for p in first) / 1024, 1)
                entry[f"{how}_files"] = len(paths)
                entry[f"{how}_kb"] = round(sum(p.stat().st_size for p in paths) / 1024, 1)
                kinds: dict[str, float] = {}
                for path in paths:
                    if path not in first:
                        kind = path.name.split("-")[0]
                        kinds[kind] = kinds.get(kind, 0) + path.stat().st_size / 1024
                entry[f"{how}_kb_by_kind"] = {k: round(v, 1) for k, v in sorted(kinds.items())}
                page.close()
            measured.append(entry)
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--queries", default="request timeout|cache retry|the request", help="|-separated"
    )
    parser.add_argument("--keep", action="store_true", help="keep the records, index and site")
    parser.add_argument(
        "--reuse-records", action="store_true", help="the records of an earlier --keep run"
    )
    parser.add_argument("--chunk-bytes", type=int, default=None, help="term chunks (Tunables)")
    parser.add_argument("--doc-bytes", type=int, default=None, help="document chunks (Tunables)")
    parser.add_argument(
        "--site",
        type=Path,
        default=None,
        help="query the index of this built site (its search/ folder) instead of building one",
    )
    parser.add_argument(
        "--clients",
        default="",
        help="with --site: git revisions whose search client is queried, alternated "
        "(e.g. HEAD~1,work; 'work' is the working tree)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="with --clients")
    opts = parser.parse_args(argv)
    if opts.site is not None:
        return _query_site(opts.site, opts.queries.split("|"), opts.clients, opts.rounds)
    compile_source(ROOT / "publisher")  # timed as installed: see compiled.py
    from publisher.site.context import Tunables

    chunk = opts.chunk_bytes or Tunables().search_chunk_bytes
    doc = opts.doc_bytes or Tunables().search_doc_bytes
    report = []
    for size in [int(s) for s in opts.sizes.split(",") if s]:
        archive = ARCHIVES / f"small-n{size}-s1"
        sessions = archive / "sessions"
        if not (sessions.is_dir() and len(os.listdir(sessions)) == size):
            small_archive(size, archive)
        work = ARCHIVES / "work" / f"search-{size}"
        if opts.reuse_records:
            shutil.rmtree(work / "site", ignore_errors=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
        out = work / "site"
        out.mkdir(parents=True)
        entry = build_index(sessions, out, work, opts.workers, chunk, doc, opts.reuse_records)
        entry["queries"] = query_in_chromium(out, opts.queries.split("|"))
        entry["own_peak_rss_mb"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
        )
        print(json.dumps(entry), flush=True)
        report.append(entry)
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))
    return 0


def _query_site(site: Path, queries: list[str], clients: str, rounds: int) -> int:
    """The queries against an index already built, with each client in turn (the order
    reversed every other round), and the medians of each client's figures."""
    import statistics
    import tempfile

    revisions = [c for c in clients.split(",") if c] or ["work"]
    sources = {
        rev: None
        if rev == "work"
        else subprocess.run(
            ["git", "show", f"{rev}:themes/default/assets/search.js"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        for rev in revisions
    }
    measured: dict[str, list[dict[str, object]]] = {rev: [] for rev in revisions}
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        (out / "search").symlink_to((site / "search").resolve())
        for r in range(rounds):
            for rev in revisions if r % 2 == 0 else revisions[::-1]:
                for entry in query_in_chromium(out, queries, sources[rev]):
                    entry["client"] = rev
                    print(json.dumps(entry), flush=True)
                    measured[rev].append(entry)
    keys = ("kb_on_focus", "typed_kb", "pasted_kb", "typed_ms_after_last_key",
            "pasted_ms_after_last_key")  # fmt: skip
    summary = {
        rev: {
            k: [min(xs), statistics.median(xs), max(xs)]
            for k in keys
            if (xs := [float(e[k]) for e in entries])  # type: ignore[arg-type]
        }
        for rev, entries in measured.items()
    }
    print(json.dumps({"min_median_max": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
