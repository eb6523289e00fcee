"""The site build on a Dask cluster against the local pool, on one machine (issue 34).

On the output-heavy archive (``generate.py --shape output``), in one run, alternately:

- a full build with the local pool (``polyglav site build``, a worker process per core);
- a full build through a ``dask scheduler`` and two ``dask worker`` processes
  (``--nthreads 1``, no nanny) started by this script on loopback
  (``polyglav site build --scheduler tcp://127.0.0.1:PORT``).

Each build is a fresh subprocess into an empty site and cache folder, search off (Pagefind
runs in the build's process either way). Prints the wall times, the ratio of the medians
(issue 34's target: at most 1.3), the CPU seconds of the build's process, of the workers and
of the scheduler (``psutil``), and from them the cost of one session: the workers' CPU a
session (what more workers divide) and the build process's (what they do not: it writes the
catalog and the index). The two sites are compared file by file.

Usage::

    python benchmarks/distributed.py                       # 200 sessions, 3 rounds
    python benchmarks/distributed.py --sessions 40 --rounds 1   # a smoke test
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# This file's folder comes first on the path when it is run, and its name is Dask's
# package's: it is taken off, and generate.py is loaded by its path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import psutil  # noqa: E402


def _load_generate() -> Any:
    spec = importlib.util.spec_from_file_location("generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = module
    spec.loader.exec_module(module)
    return module


generate = _load_generate()


def env() -> dict[str, str]:
    """This checkout first on the path (the workers import the same publisher)."""
    values = dict(os.environ)
    values["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), values.get("PYTHONPATH")]))
    values.pop("DASK_SCHEDULER_ADDRESS", None)
    return values


def cpu(processes: list[psutil.Process]) -> float:
    """User + system CPU seconds of ``processes`` so far."""
    total = 0.0
    for process in processes:
        times = process.cpu_times()
        total += times.user + times.system
    return total


@dataclass(slots=True)
class Run:
    """One build, measured."""

    wall: float
    """Seconds, interpreter start included."""
    build_cpu: float
    """CPU seconds of the build's process and its children (the local pool's workers)."""
    workers_cpu: float = 0.0
    """CPU seconds of the Dask workers during the build."""
    scheduler_cpu: float = 0.0
    """CPU seconds of the Dask scheduler during the build."""


LOOPBACK = ("--host", "127.0.0.1", "--no-dashboard")
WORKER = ("--nthreads", "1", "--no-nanny")


class Cluster:
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes on loopback."""

    def __init__(self, folder: Path, workers: int) -> None:
        self.file = folder / "scheduler.json"
        log = open(folder / "cluster.log", "wb")  # noqa: SIM115
        dask = [sys.executable, "-m", "dask"]
        self.scheduler = subprocess.Popen(
            [*dask, "scheduler", *LOOPBACK, "--port", "0", "--scheduler-file", str(self.file)],
            env=env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        while not self.file.is_file():
            time.sleep(0.1)
        self.workers = [
            subprocess.Popen(
                [*dask, "worker", *LOOPBACK, "--scheduler-file", str(self.file), *WORKER],
                env=env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for _ in range(workers)
        ]
        from distributed import Client

        with Client(self.address, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=120)

    @property
    def address(self) -> str:
        return str(json.loads(self.file.read_text())["address"])

    def close(self) -> None:
        for process in [*self.workers, self.scheduler]:
            process.kill()
            process.wait()


def build(sessions: Path, work: Path, scheduler: Cluster | None) -> tuple[Run, Path]:
    """A full build of ``sessions`` into a fresh folder of ``work``."""
    out, cache = work / "site", work / "cache"
    shutil.rmtree(work, ignore_errors=True)
    command = [sys.executable, "-m", "publisher", "site", "build", "--project", str(sessions)]
    command += ["--out", str(out), "--cache-dir", str(cache), "--no-search", "-q"]
    workers = [psutil.Process(p.pid) for p in scheduler.workers] if scheduler else []
    boss = psutil.Process(scheduler.scheduler.pid) if scheduler else None
    if scheduler is not None:
        command += ["--scheduler", scheduler.address]
    before_workers = cpu(workers)
    before_boss = cpu([boss]) if boss else 0.0
    before = os.times()
    started = time.perf_counter()
    subprocess.run(command, env=env(), check=True)
    wall = time.perf_counter() - started
    after = os.times()
    run = Run(
        wall=wall,
        build_cpu=(after.children_user - before.children_user)
        + (after.children_system - before.children_system),
        workers_cpu=cpu(workers) - before_workers,
        scheduler_cpu=(cpu([boss]) - before_boss) if boss else 0.0,
    )
    return run, out


def digest(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="builds of each kind")
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes")
    args = parser.parse_args(argv)
    archive = generate.generate(args.sessions, 1.0, 1, shape="output")
    sessions = archive / "sessions"
    size = sum(p.stat().st_size for p in sessions.iterdir())
    print(f"archive: {sessions} ({args.sessions} sessions, {size / 1e6:.0f} MB)")
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores (shared: figures vary)")
    with tempfile.TemporaryDirectory(prefix="polyglav-dask-") as tmp:
        root = Path(tmp)
        cluster = Cluster(root, args.workers)
        local_runs: list[Run] = []
        dask_runs: list[Run] = []
        try:
            for _ in range(args.rounds):  # alternately: the machine is shared
                run, local_out = build(sessions, root / "local", None)
                local_runs.append(run)
                local_files = digest(local_out)
                run, dask_out = build(sessions, root / "dask", cluster)
                dask_runs.append(run)
                same = digest(dask_out) == local_files
                print(
                    f"  local {local_runs[-1].wall:6.2f} s   dask {run.wall:6.2f} s   "
                    f"identical: {same}"
                )
                if not same:
                    print("the sites differ", file=sys.stderr)
                    return 1
        finally:
            cluster.close()
    local_wall = statistics.median(r.wall for r in local_runs)
    dask_wall = statistics.median(r.wall for r in dask_runs)
    best = min(dask_runs, key=lambda r: r.wall)
    per = args.sessions
    print(f"local pool  median {local_wall:.2f} s, CPU {local_runs[0].build_cpu:.1f} s")
    print(
        f"dask, {args.workers} workers  median {dask_wall:.2f} s; CPU: build process "
        f"{best.build_cpu:.1f} s, workers {best.workers_cpu:.1f} s, scheduler "
        f"{best.scheduler_cpu:.1f} s"
    )
    print(f"ratio dask / local: {dask_wall / local_wall:.2f} (target <= 1.3)")
    worker_ms = best.workers_cpu / per * 1000
    build_ms = best.build_cpu / per * 1000
    print(
        f"per session: {worker_ms:.1f} ms of worker CPU, {build_ms:.1f} ms of the build "
        f"process's CPU, {best.scheduler_cpu / per * 1000:.1f} ms of the scheduler's"
    )
    million = 1_000_000
    print(
        f"1,000,000 such sessions in an hour: {million * worker_ms / 1000 / 3600:.0f} "
        f"worker processes; the build process alone needs {million * build_ms / 1000 / 3600:.2f} h"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
