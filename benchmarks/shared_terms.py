"""What term chunks shared by all bundles would save a pasted query, before building them.

    python benchmarks/shared_terms.py [--site DIR] [--queries "a b|c d"] [--runs 7]

Issue 30's pasted two-word query at 20,000 sessions loads 80 script files in three rounds:
a term chunk of each word in each of the 32 bundles, then the document starts of the
bundles of the 8 results shown, then their document chunks (``benchmarks/script_files.py``
puts 2-5 ms on each file from ``file://``). The layout proposed instead
(docs/performance.md, "What the missed targets would take") keeps a term's postings of
every bundle in one entry, in chunks shared by all bundles. This measures what that layout
would cost the browser, on a real index, without the build and client that would make and
read it:

1. the pasted queries are run by the real client, in Chromium from ``file://``, on a site
   the build made (default: the one ``search_scale.py --sizes 20000 --keep`` leaves), and
   the script files each loaded are recorded by kind (the client's own figure, the
   milliseconds from the paste to the first results, beside them);
2. the bundles' term chunks are merged into shared ones (each term's entries of every
   bundle in one, in the client's order; a chunk of about ``--chunk-bytes``, a term of half
   that or more alone), in a scratch folder: the CPU this takes is what a build would add;
3. a bare page loads each query's files round after round, as the client would: today's
   rounds (term chunks, starts, documents), the shared layout's (the shared chunks of its
   words, then the same starts and documents), and the shared layout with the document
   starts loaded on focus with the bundles' meta files (two rounds); alternated, ``--runs``
   times each, the median printed; in each page the files of the focus (``index.js``
   and every bundle's meta) are loaded first, untimed, as the client loads them. The client's own work (parsing, decoding, ranking,
   excerpts: 31-38 ms of the pasted query in a profile, docs/search.md) is not in these
   figures; it is the same in every layout.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import heapq
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SITE = ROOT / "benchmarks" / "_archives" / "work" / "search-20000" / "site"

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>rounds</title>
</head><body><script>
window.__polyglavSearch = {add: function () {
  window.left -= 1;
  if (window.left === 0) { window.next(); }
}};
window.go = function (rounds) {
  var started = performance.now(), r = 0;
  window.ms = undefined;
  window.next = function () {
    if (r === rounds.length) { window.ms = performance.now() - started; return; }
    var names = rounds[r++];
    window.left = names.length;
    names.forEach(function (name) {
      var tag = document.createElement("script");
      tag.src = name;
      document.head.appendChild(tag);
    });
  };
  window.next();
};
</script></body></html>
"""

SCRIPTS = "Array.from(document.querySelectorAll('script[src]')).map(e => e.src)"


def client_files(site: Path, queries: list[str]) -> dict[str, dict[str, object]]:
    """Each query pasted into the real client: the index files it loaded after the focus's,
    by kind (``t``, ``s``, ``d``), and the client's milliseconds to the first results."""
    from tests.browser import chromium

    found: dict[str, dict[str, object]] = {}
    with chromium() as browser:
        for query in queries:
            page = browser.new_page()
            page.goto((site / "index.html").as_uri())
            page.focus("#search-input")
            page.wait_for_timeout(1500)
            before = set(page.evaluate(SCRIPTS))
            page.fill("#search-input", query)
            page.wait_for_function(
                "() => document.getElementById('search-results').dataset.ms !== undefined",
                timeout=60_000,
            )
            page.wait_for_timeout(300)
            kinds: dict[str, list[str]] = {"t": [], "s": [], "d": [], "focus": []}
            for url in page.evaluate(SCRIPTS):
                path = Path(url[len("file://") :])
                if path.is_relative_to(site / "search"):
                    kind = "focus" if url in before else path.name[0]
                    kinds.setdefault(kind, []).append(str(path))
            found[query] = {
                "client_ms": float(page.get_attribute("#search-results", "data-ms") or "nan"),
                "files": kinds,
            }
            page.close()
    return found


def _entries(path: Path) -> list[list[object]]:
    text = path.read_text(encoding="utf-8")
    return list(json.loads(text[text.index("[") : text.rindex(")")]))


def merge_shared(
    site: Path, into: Path, chunk_bytes: int
) -> tuple[list[tuple[str, str, str]], float]:
    """The bundles' term chunks merged into shared chunks written to ``into``: each chunk's
    first term, last term and file; the CPU seconds of reading, merging and writing."""
    from publisher.site.search.bundle import js_order

    started = time.process_time()
    streams = []
    for number, bundle in enumerate(sorted((site / "search").glob("b*"))):
        entries = [e for chunk in sorted(bundle.glob("t-*.js")) for e in _entries(chunk)]
        streams.append(sorted((js_order(str(e[0])), number, e) for e in entries))
    chunks: list[tuple[str, str, str]] = []
    held: list[str] = []
    size = 0
    first = last = ""

    def close() -> None:
        nonlocal held, size
        data = "[" + ",".join(held) + "]"
        name = "t-" + hashlib.sha256(data.encode()).hexdigest()[:8]
        path = into / f"{name}.js"
        path.write_text(f'__polyglavSearch.add("","t",{json.dumps(name)},{data});\n')
        chunks.append((first, last, str(path)))
        held, size = [], 0

    def put(entry: list[object]) -> None:
        nonlocal size, first, last
        payload = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        if held and len(payload) >= chunk_bytes // 2:
            close()
        if not held:
            first = str(entry[0])
        held.append(payload)
        size += len(payload) + 1
        last = str(entry[0])
        if size >= chunk_bytes:
            close()

    term = None
    entry: list[object] = []
    for _, number, e in heapq.merge(*streams):
        if e[0] != term:
            if entry:
                put(entry)
            term, entry = e[0], [e[0]]
        entry += [number, *e[1:]]
    if entry:
        put(entry)
    if held:
        close()
    return chunks, time.process_time() - started


def shared_for(query: str, chunks: list[tuple[str, str, str]]) -> list[str]:
    """The shared chunks a query loads: each of its terms' (the last word's as a prefix)."""
    from publisher.site.search.bundle import js_order
    from publisher.site.search.terms import text_terms

    terms = text_terms(query)
    out: list[str] = []
    for i, term in enumerate(terms):
        high = js_order(term + ("\uffff" if i == len(terms) - 1 else ""))
        for first, last, path in chunks:
            if js_order(last) >= js_order(term) and js_order(first) <= high and path not in out:
                out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE)
    parser.add_argument("--queries", default="request timeout|cache retry|the request")
    parser.add_argument("--chunk-bytes", type=int, default=16_000)
    parser.add_argument("--runs", type=int, default=7)
    opts = parser.parse_args(argv)
    site: Path = opts.site.resolve()
    if not (site / "search" / "index.js").is_file() or not (site / "index.html").is_file():
        parser.error(f"{site}: no search index (python benchmarks/search_scale.py --keep)")
    from tests.browser import chromium

    queries = [q for q in opts.queries.split("|") if q]
    recorded = client_files(site, queries)
    report: dict[str, object] = {}
    with contextlib.ExitStack() as stack:
        into = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        chunks, cpu = merge_shared(site, into, opts.chunk_bytes)
        shared_kb = sum(Path(c[2]).stat().st_size for c in chunks) / 1024
        print(f"shared chunks: {len(chunks)}, {shared_kb:.0f} KB, merged in {cpu:.2f} CPU s")
        report["shared"] = {
            "chunks": len(chunks),
            "kb": round(shared_kb),
            "merge_cpu_s": round(cpu, 2),
        }
        layouts: dict[tuple[str, str], list[list[str]]] = {}
        for query, seen in recorded.items():
            files = seen["files"]
            assert isinstance(files, dict)
            mine = shared_for(query, chunks)
            layouts[query, "today"] = [files["t"], files["s"], files["d"]]
            layouts[query, "shared"] = [mine, files["s"], files["d"]]
            layouts[query, "shared, starts on focus"] = [mine, files["d"]]
        (into / "index.html").write_text(PAGE)
        browser = stack.enter_context(chromium())
        runs: dict[tuple[str, str], list[float]] = {}
        for run in range(opts.runs):
            for key, rounds in layouts.items():
                page = browser.new_page()
                page.goto((into / "index.html").as_uri())
                # The focus's files first, untimed, as the client loads them on focus.
                focus = [f"{Path(p).as_uri()}?{run}" for p in recorded[key[0]]["files"]["focus"]]
                page.evaluate("rounds => go(rounds)", [focus])
                page.wait_for_function("() => window.ms !== undefined", timeout=60_000)
                urls = [[f"{Path(p).as_uri()}?{run}" for p in names] for names in rounds]
                page.evaluate("rounds => go(rounds)", urls)
                page.wait_for_function("() => window.ms !== undefined", timeout=60_000)
                runs.setdefault(key, []).append(float(page.evaluate("window.ms")))
                page.close()
        print(f"the queries' files in rounds, Chromium from file://, median of {opts.runs}")
        rows = []
        for (query, layout), values in runs.items():
            rounds = layouts[query, layout]
            kb = sum(Path(p).stat().st_size for names in rounds for p in names) / 1024
            counts = "+".join(str(len(r)) for r in rounds)
            median = statistics.median(values)
            print(f"{query:>18}  {layout:<24} files {counts:<9} {kb:6.0f} KB  {median:6.1f} ms")
            rows.append({"query": query, "layout": layout, "files": counts, "kb": round(kb),
                         "ms": round(median, 1), "runs": [round(v, 1) for v in values]})  # fmt: skip
    report["client_ms_today"] = {q: r["client_ms"] for q, r in recorded.items()}
    report["rounds"] = rows
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
