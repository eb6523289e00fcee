"""The site build on a Dask cluster against the local pool, on one machine (issue 34).

On the output-heavy archive (``generate.py --shape output``), in one run, alternately:

- a full build with the local pool (``polyglav site build``, a worker process per core);
- a full build through a ``dask scheduler`` and two ``dask worker`` processes
  (``--nthreads 1``, no nanny) started by this script on loopback
  (``polyglav site build --scheduler tcp://127.0.0.1:PORT``).

Each build is a fresh subprocess into an empty site and cache folder, search off (the
search index is written by the build's process either way). Prints the wall times, the ratio of the medians
(issue 34's target: at most 1.3), the CPU seconds of the build's process, of the workers and
of the scheduler (``/proc``), and from them the cost of one session: the workers' CPU a
session (what more workers divide) and the build process's (what they do not: it writes the
catalog and the index). The two sites are compared file by file.

Usage::

    python benchmarks/dask_cluster.py                       # 200 sessions, 3 rounds
    python benchmarks/dask_cluster.py --sessions 40 --rounds 1   # a smoke test
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

from compiled import compile_source

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# This file's folder comes first on the path when it is run, and its name is Dask's
# package's: it is taken off, and generate.py is loaded by its path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


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


def cpu(pids: list[int]) -> float:
    """User + system CPU seconds of the processes ``pids`` so far (Linux: /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


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
    workers = [p.pid for p in scheduler.workers] if scheduler else []
    boss = scheduler.scheduler.pid if scheduler else None
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


IDLE_SECONDS = 10.0
"""How long the idle cluster's CPU is measured."""


def median(runs: list[Run], field: str) -> float:
    return float(statistics.median(getattr(r, field) for r in runs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="builds of each kind")
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes")
    args = parser.parse_args(argv)
    compile_source(ROOT / "publisher")  # timed as installed: see compiled.py
    archive = generate.generate(args.sessions, 1.0, 1, shape="output")
    sessions = archive / "sessions"
    size = sum(p.stat().st_size for p in sessions.iterdir())
    print(f"archive: {sessions} ({args.sessions} sessions, {size / 1e6:.0f} MB)")
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores (shared: figures vary)")
    with tempfile.TemporaryDirectory(prefix="polyglav-dask-") as tmp:
        root = Path(tmp)
        # Half the archive (the first files, linked): the difference between the two
        # builds is what a session costs, without the start-up and fixed work.
        half = root / "half" / "sessions"
        half.mkdir(parents=True)
        files = sorted(sessions.iterdir())
        for path in files[: len(files) // 2]:
            os.link(path, half / path.name)
        halved = len(files) - len(files) // 2
        cluster = Cluster(root, args.workers)
        try:
            # Warm the workers (their imports) as a long-lived cluster's are, then measure
            # what the idle cluster burns a second (heartbeats, its event loops).
            build(half, root / "warm", cluster)
            processes = [p.pid for p in [*cluster.workers, cluster.scheduler]]
            idle_from, idle_start = cpu(processes), time.perf_counter()
            time.sleep(IDLE_SECONDS)
            idle = (cpu(processes) - idle_from) / (time.perf_counter() - idle_start)
            print(f"the idle cluster burns {idle * 1000:.0f} ms of CPU a second")
            local_runs: list[Run] = []
            dask_runs: list[Run] = []
            half_runs: list[Run] = []
            for _ in range(args.rounds):  # alternately: the machine is shared
                run, local_out = build(sessions, root / "local", None)
                local_runs.append(run)
                local_files = digest(local_out)
                run, dask_out = build(sessions, root / "dask", cluster)
                dask_runs.append(run)
                same = digest(dask_out) == local_files
                half_runs.append(build(half, root / "dask-half", cluster)[0])
                print(
                    f"  local {local_runs[-1].wall:6.2f} s (CPU {local_runs[-1].build_cpu:5.1f})"
                    f"   dask {run.wall:6.2f} s (CPU {run.build_cpu:4.1f} + "
                    f"{run.workers_cpu:5.1f} + {run.scheduler_cpu:4.1f})   identical: {same}"
                )
                if not same:
                    print("the sites differ", file=sys.stderr)
                    return 1
        finally:
            cluster.close()
    local_wall, dask_wall = median(local_runs, "wall"), median(dask_runs, "wall")
    local_cpu = median(local_runs, "build_cpu")
    build_cpu, workers_cpu = median(dask_runs, "build_cpu"), median(dask_runs, "workers_cpu")
    scheduler_cpu = median(dask_runs, "scheduler_cpu")
    dask_cpu = build_cpu + workers_cpu + scheduler_cpu
    print(f"local pool: median {local_wall:.2f} s, CPU {local_cpu:.1f} s (build + its workers)")
    print(
        f"dask, {args.workers} workers: median {dask_wall:.2f} s, CPU {dask_cpu:.1f} s (build "
        f"process {build_cpu:.1f}, workers {workers_cpu:.1f}, scheduler {scheduler_cpu:.1f})"
    )
    print(
        f"ratio dask / local: wall {dask_wall / local_wall:.2f} (target <= 1.3), CPU "
        f"{dask_cpu / local_cpu:.2f}"
    )
    worker_s = (workers_cpu - median(half_runs, "workers_cpu")) / halved
    build_s = (build_cpu - median(half_runs, "build_cpu")) / halved
    sched_s = (scheduler_cpu - median(half_runs, "scheduler_cpu")) / halved
    idle_share = idle * (median(dask_runs, "wall") - median(half_runs, "wall")) / halved
    print(
        f"a session more costs {worker_s * 1000:.0f} ms of worker CPU, {build_s * 1000:.1f} ms "
        f"of the build process's, {sched_s * 1000:.1f} ms of the scheduler's "
        f"({args.sessions} against {len(files) // 2} sessions; of these three, the idle "
        f"cluster's {idle_share * 1000:.0f} ms)"
    )
    million = 1_000_000
    print(
        f"1,000,000 such sessions in an hour: {million * worker_s / 3600:.0f} worker processes "
        f"(a core each); the build process's part alone: {million * build_s / 3600:.2f} h, "
        f"the scheduler's {million * sched_s / 3600:.2f} h"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
