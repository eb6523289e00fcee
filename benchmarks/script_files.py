"""What a search query's script files cost the browser by themselves, from ``file://``.

    python benchmarks/script_files.py [--counts 8,16,32,64,128] [--runs 7] [--http]

The search index is loaded by script tags (the only way a page opened from ``file://``
reads files: ``fetch``, modules and workers are refused there). A two-word query pasted
at 20,000 sessions loads 80 files (two term chunks in each of 32 bundles, then the
document starts and chunks of the 8 results shown). This measures the floor under that: a
bare page in Chromium that adds N script tags at once, each file as small as a term chunk
(about 2 KB: one call with a JSON array), and the milliseconds until the last one has run
(``performance.now()`` in the page). Each count is run ``--runs`` times, alternating, in a
fresh page; the median is printed with the milliseconds a file, and the same bytes in one
file for comparison. ``--http``: the same over a local static server (HTTP/1.1), as
``polyglav site serve`` or a plain static host serves the site.

The figure it answers: how many files a query can load within issue 30's 100 ms before any
of the client's own work (docs/search.md, "Measured").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>script files</title>
</head><body><script>
window.got = function () {
  window.left -= 1;
  if (window.left === 0) { window.ms = performance.now() - window.started; }
};
window.go = function (names, calls) {
  window.left = calls; window.ms = undefined; window.started = performance.now();
  names.forEach(function (name) {
    var tag = document.createElement("script");
    tag.src = name;
    document.head.appendChild(tag);
  });
};
</script></body></html>
"""


def chunk(rng: random.Random, entries: int) -> str:
    """A file like a term chunk: one call with a JSON array of [word, count, postings]."""
    rows = [
        [
            f"w{rng.randrange(10**6)}",
            rng.randrange(1, 99),
            "".join(rng.choices("0123456789ABCDEFab", k=20)),
        ]
        for _ in range(entries)
    ]
    return f"got({json.dumps(rows, separators=(',', ':'))});\n"


def write_files(folder: Path, most: int, seed: int) -> int:
    """The page and ``most`` files ``f<i>.js`` like term chunks; their mean size in bytes
    (:func:`one_file` joins the first n of them)."""
    rng = random.Random(seed)
    texts = [chunk(rng, 45) for _ in range(most)]
    for i, text in enumerate(texts):
        (folder / f"f{i}.js").write_text(text)
    (folder / "index.html").write_text(PAGE)
    return sum(len(t) for t in texts) // most


def one_file(folder: Path, n: int) -> str:
    """The first ``n`` files' calls in one file: the same bytes, one script tag."""
    name = f"all-{n}.js"
    parts = [(folder / f"f{i}.js").read_text() for i in range(n)]
    (folder / name).write_text("".join(parts))
    return name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="8,16,32,64,128")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--http", action="store_true", help="over HTTP (a local static server), not file://"
    )
    opts = parser.parse_args(argv)
    counts = [int(c) for c in opts.counts.split(",") if c]
    from tests.browser import chromium, static_server

    results: dict[str, list[float]] = {}
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        browser = stack.enter_context(chromium())
        size = write_files(folder, max(counts), opts.seed)
        singles = {n: one_file(folder, n) for n in counts}
        if opts.http:
            url = stack.enter_context(static_server(folder)).rstrip("/") + "/index.html"
        else:
            url = (folder / "index.html").as_uri()
        for run in range(opts.runs):
            for n in counts:
                for label, names in (
                    (f"{n} files", [f"f{i}.js?{run}" for i in range(n)]),
                    (f"{n} in one", [f"{singles[n]}?{run}"]),
                ):
                    page = browser.new_page()
                    page.goto(url)
                    page.evaluate("([names, calls]) => go(names, calls)", [names, n])
                    page.wait_for_function("() => window.ms !== undefined", timeout=60_000)
                    results.setdefault(label, []).append(float(page.evaluate("window.ms")))
                    page.close()
    where = "over HTTP (a local static server)" if opts.http else "from file://"
    print(f"Chromium, {where}, files of {size} bytes, median of {opts.runs} runs each")
    print(f"{'files':>7} {'ms (median)':>12} {'ms a file':>10} {'one file of the same bytes':>28}")
    report = []
    for n in counts:
        many = statistics.median(results[f"{n} files"])
        one = statistics.median(results[f"{n} in one"])
        print(f"{n:>7} {many:>12.1f} {many / n:>10.2f} {one:>25.1f} ms")
        report.append({"files": n, "ms": round(many, 1), "ms_one_file": round(one, 1),
                       "runs": [round(x, 1) for x in results[f"{n} files"]]})  # fmt: skip
    print(json.dumps({"file_bytes": size, "counts": report}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
