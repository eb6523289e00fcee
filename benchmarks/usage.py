"""What building the tokens, cost and time figures costs (issue 29): a full site build of
the output-heavy archive with usage against the same archive without it.

    python benchmarks/usage.py [--sessions 40] [--rounds 3] [--scale 1] [--source DIR]

The archive is ``generate.py --shape output`` (``--sessions`` of them), its turns served by
``claude-sonnet-4-5-20250929`` from ``anthropic`` (a model the shipped price table
prices), written twice: once as it is, once with a usage entry a request (one per tool
call, plus the answer), with the counts of a real Claude Code session (a few uncached
tokens, tens of thousands read from the cache, some written to it, up to 2,000 output).
Each round builds both (``polyglav site build --no-search``, a fresh process, site folder
and cache each time), alternately, so a busy machine slows both alike; the figures are the
median of the rounds, in wall time and in CPU time (the build's process and its workers),
and the spread is the smallest and largest ratio of a round. The target: at most 1.05.

With ``--source DIR`` (a checkout without the figures, e.g. ``git archive`` of the commit
before them), the archive without usage is built by that checkout instead: the ratio is
then the whole cost of the figures (tokens, cost and the time split alike), not only of
the usage entries.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
from compiled import compile_source  # noqa: E402

MODEL, PROVIDER = "claude-sonnet-4-5-20250929", "anthropic"
TARGET = 1.05


def variants(source: Path, target: Path, seed: int = 1) -> tuple[Path, Path, int]:
    """``target/plain`` and ``target/usage``: the archive's sessions served by a priced
    model, without and with usage entries; and how many entries."""
    rng = random.Random(seed)
    entries = 0
    plain, usage = target / "plain", target / "usage"
    for folder in (plain, usage):
        folder.mkdir(parents=True)
    for path in sorted(source.glob("*.json")):
        data = path.read_bytes()
        try:
            doc = json.loads(data)
        except ValueError:
            (plain / path.name).write_bytes(data)  # (the files that do not load, as they are)
            (usage / path.name).write_bytes(data)
            continue
        turns = doc.get("turns") if isinstance(doc, dict) else None
        if not isinstance(turns, list):
            (plain / path.name).write_bytes(data)
            (usage / path.name).write_bytes(data)
            continue
        for turn in turns:
            if isinstance(turn, dict):
                turn["model"], turn["provider"] = MODEL, PROVIDER
        (plain / path.name).write_text(json.dumps(doc), encoding="utf-8")
        for turn in turns:
            if not isinstance(turn, dict):
                continue
            calls = sum(1 for p in turn.get("parts", []) if p.get("type") == "tool")
            turn["usage"] = [
                {
                    "model": MODEL,
                    "input": rng.randint(1, 6),
                    "output": rng.randint(20, 2000),
                    "cache_read": rng.randint(15_000, 150_000),
                    "cache_write": rng.randint(0, 5_000),
                }
                for _ in range(calls + 1)
            ]
            entries += calls + 1
        (usage / path.name).write_text(json.dumps(doc), encoding="utf-8")
    return plain, usage, entries


def build(sessions: Path, work: Path, source: Path = ROOT) -> tuple[float, float]:
    """A full build in a fresh process, of the publisher in ``source``: (wall seconds, CPU
    seconds of it and its workers)."""
    out, cache = work / "site", work / "cache"
    for folder in (out, cache):
        shutil.rmtree(folder, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "publisher", "site", "build", "--project", str(sessions),
         "--out", str(out), "--cache-dir", str(cache), "--no-search", "--quiet"],
        check=True, cwd=source, env={**os.environ, "PYTHONPATH": str(source)},
    )  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", type=Path, default=ROOT, help="builds the plain archive")
    args = parser.parse_args()
    for source in {ROOT, args.source.resolve()}:  # timed as installed: see compiled.py
        compile_source(source / "publisher")
    archive = generate.generate(args.sessions, args.scale, shape="output", log=print)
    with tempfile.TemporaryDirectory(prefix="polyglav-usage-") as tmp:
        plain, usage, entries = variants(archive / "sessions", Path(tmp))
        print(f"{args.sessions} sessions, {entries:,} usage entries")
        times: dict[str, list[tuple[float, float]]] = {"plain": [], "usage": []}
        for round_ in range(args.rounds):
            order = ("plain", "usage") if round_ % 2 == 0 else ("usage", "plain")
            for name in order:
                folder = plain if name == "plain" else usage
                source = args.source if name == "plain" else ROOT
                times[name].append(build(folder, Path(tmp) / "work", source.resolve()))
                print(f"round {round_ + 1} {name}: {times[name][-1][0]:.1f} s wall, "
                      f"{times[name][-1][1]:.1f} s CPU")  # fmt: skip
    for index, label in ((0, "wall"), (1, "CPU")):
        a = statistics.median(t[index] for t in times["plain"])
        b = statistics.median(t[index] for t in times["usage"])
        ratios = [u[index] / p[index] for p, u in zip(times["plain"], times["usage"], strict=True)]
        print(
            f"{label}: without usage {a:.2f} s, with usage {b:.2f} s, ratio {b / a:.3f} "
            f"(rounds {min(ratios):.3f}–{max(ratios):.3f}; target ≤ {TARGET})"
        )
    cpu = statistics.median(t[1] for t in times["usage"]) / statistics.median(
        t[1] for t in times["plain"]
    )
    return 0 if cpu <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
