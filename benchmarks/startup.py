"""How fast the read commands start: each one against a bare ``python -c pass``.

    python benchmarks/startup.py [--runs N]

Runs every command N times (default 15), alternating with the bare interpreter so that a
busy machine slows both alike, and prints the median wall time of each and its ratio to
the bare interpreter's median. The target (issue "the build in plain sight"): ``sessions``,
``sessions preview``, ``history`` and ``print`` within 8× of ``python -c pass``. Exit
status 1 when a command misses it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from compiled import compile_source

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = str(ROOT / "sample_sessions")
TARGET = 8.0
COMMANDS = {
    "sessions": ["sessions", "--project", SAMPLES],
    "sessions preview": ["sessions", "preview", "#ab12cd", "--project", SAMPLES],
    "history": ["history", "3", "--run", "#ab12cd", "--project", SAMPLES],
    "print": ["print", "8", "--run", "#ab12cd", "--project", SAMPLES],
    "--help": ["--help"],
}


def wall(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=ROOT)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compile_source(ROOT / "publisher")  # timed as installed: see compiled.py
    bare = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {name: [] for name in ["python -c pass", *COMMANDS]}
    for command in COMMANDS.values():  # warm the file cache and compiled bytecode
        wall([sys.executable, "-m", "publisher", *command])
    for _ in range(args.runs):
        for name, command in COMMANDS.items():
            times["python -c pass"].append(wall(bare))
            times[name].append(wall([sys.executable, "-m", "publisher", *command]))
    base = statistics.median(times["python -c pass"])
    print(
        f"{'command':<18} {'median':>9} {'ratio':>7}   (target: read commands within {TARGET:g}×)"
    )
    missed = []
    for name, values in times.items():
        median = statistics.median(values)
        ratio = median / base
        verdict = ""
        if name in ("sessions", "sessions preview", "history", "print"):
            verdict = "met" if ratio <= TARGET else "MISSED"
            if ratio > TARGET:
                missed.append(name)
        print(f"{name:<18} {median * 1000:7.1f} ms {ratio:6.2f}×   {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
