"""The search part of a full build, two checkouts of the publisher measured alternately.

For ``--rounds`` rounds, each of the four builds (``base`` and ``this`` checkout, search
off and on) runs once, from nothing (a fresh site and build cache), in its own
``steps.py build`` process; the order rotates from round to round so that neither side
always runs first under the same load. Each build's CPU is the process tree's (the step
and its pool workers, waited for: ``os.wait4``), its wall time the step's own.

The search part of a checkout's build is its CPU with search on minus off, in the same
round; printed with its ratio to the build without search (issue 30's target: at most
0.15). ``--base`` is a folder holding another checkout's ``publisher/`` and ``themes/``
(e.g. ``git archive main publisher themes | tar -x -C /tmp/base``).

Usage::

    python benchmarks/search_ab.py --base /tmp/base --sessions 40 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
from compiled import compile_source  # noqa: E402


def build(source: Path, sessions: Path, work: Path, search: bool) -> dict[str, float]:
    """One full build from nothing; its CPU (process tree) and wall seconds."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = dict(os.environ, BENCH_SOURCE=str(source), XDG_CACHE_HOME=str(work / "cache"))
    args = {"sessions_dir": str(sessions), "out_dir": str(work / "site"), "search": search}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "steps.py"), "build", json.dumps(args)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"build failed ({source}, search={search}): {out[-2000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    shutil.rmtree(work, ignore_errors=True)
    return {
        "cpu": round(usage.ru_utime + usage.ru_stime, 2),
        "wall": round(wall, 2),
        "inside": round(result["seconds"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--sessions", type=int, default=40, help="output-shape sessions")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    opts = parser.parse_args(argv)
    archive = generate.generate(opts.sessions, 1.0, opts.seed, shape="output")
    sessions = archive / "sessions"
    sides = {"base": opts.base.resolve(), "this": ROOT}
    for source in sides.values():  # timed as installed: see compiled.py
        compile_source(source / "publisher")
    runs = [(side, search) for side in sides for search in (False, True)]
    rows: list[dict[str, object]] = []
    for r in range(opts.rounds):
        order = runs[r % len(runs) :] + runs[: r % len(runs)]
        measured: dict[tuple[str, bool], dict[str, float]] = {}
        for side, search in order:
            work = generate.ARCHIVES / "work" / f"ab-{side}"
            measured[side, search] = build(sides[side], sessions, work, search)
            load = os.getloadavg()[0]
            print(f"round {r + 1} {side:4} search {'on ' if search else 'off'} "
                  f"{measured[side, search]} load {load:.1f}", flush=True)  # fmt: skip
        for side in sides:
            off, on = measured[side, False]["cpu"], measured[side, True]["cpu"]
            rows.append({"round": r + 1, "side": side, "off": off, "on": on,
                         "part": round(on - off, 2), "ratio": round((on - off) / off, 3)})  # fmt: skip
    print(f"\n{opts.sessions} output-shape sessions, process-tree CPU s, {opts.rounds} rounds")
    for side in sides:
        mine = [row for row in rows if row["side"] == side]
        ratios = [float(str(row["ratio"])) for row in mine]
        print(
            f"{side:4} off {[row['off'] for row in mine]} on {[row['on'] for row in mine]} "
            f"part {[row['part'] for row in mine]} part/off {ratios} "
            f"(median {statistics.median(ratios):.3f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
