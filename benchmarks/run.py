"""The benchmark of issue 4: the publisher against the floor and against today's tools.

For each archive size (default 200 and 2,000 sessions, see ``generate.py``), in one run:

1. the floor: read and ``json.loads`` every session file, then write as many files and
   bytes as the built site holds (with every core, and with one process);
2. a full build with search off and on (``--repeat``: alternated, each pair in the other
   order than the one before, the medians used), a
   no-op build, a build after one turn is appended to one session (the file rewritten plainly), the same for the longest session,
   and the watch latency (``polyglav site watch`` in a subprocess; file written → page
   holding the new turn written);
3. the peak memory of each step (each runs in a fresh subprocess: the largest single
   process's VmHWM and the whole process tree's PSS, both sampled every 50 ms, pool
   workers included);
4. ``claude-code-transcripts`` and ``claude-code-log`` on the same content converted to
   Claude Code's JSONL (``convert_claude.py``), through their CLIs.

Then the ratios against issue 4's targets. Prints a table and writes every figure, with
the machine, to ``benchmarks/_archives/results.json``.

The peers are not installed by this script: ``pip install claude-code-log
claude-code-transcripts`` (a missing one is reported, not fatal).

Two archive shapes (issue 13), each with its own floors, builds, peers and ratios: the
``mixed`` one above (``--sizes``) and the ``output`` one, where tool output is most of the
bytes (``--output-sessions``, ``generate.py --shape output``). The render floor (issue 13)
also renders every prose text with the configured markdown-it-py and escapes every tool
input and output; ratios are given in wall time and in CPU seconds.

Usage::

    python benchmarks/run.py                               # full: both shapes
    python benchmarks/run.py --sizes 60,200 --scale 0.05 --output-sessions 40   # smoke test
    python benchmarks/run.py --shapes output --source /tmp/base   # another checkout
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
from compiled import compile_source  # noqa: E402

STEPS = HERE / "steps.py"
SOURCE = ROOT
"""Where the measured publisher is imported from (``main`` sets it; see ``--no-snapshot``)."""
MB = 1024 * 1024

# --------------------------------------------------------------------------------------
# Measuring a subprocess: wall time, ru_maxrss (wait4) and the tree's PSS (sampled).


@dataclass(slots=True)
class Measured:
    """One subprocess, measured."""

    wall: float = 0.0
    """Seconds from start to exit (interpreter start and imports included)."""
    returncode: int | None = None
    max_rss_mb: float = 0.0
    """Largest resident set of any single process of the tree (VmHWM, sampled)."""
    peak_pss_mb: float = 0.0
    """Largest sum of PSS over the process tree (sampled every 50 ms)."""
    peak_processes: int = 0
    result: dict[str, Any] | None = None
    """The step's own JSON result (steps.py), if any."""
    killed: str | None = None
    """Why the run was stopped (timeout, memory cap)."""
    log_tail: str = ""
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    cpu: float = 0.0
    """CPU seconds (user + system) of the process tree (``wait4``: the process and its reaped children)."""
    others_cores: float = 0.0
    """Average cores busy with other work during the run (the whole machine's busy time from
    /proc/stat, less this tree's CPU time): how much the shared machine was contended."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.killed is None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as handle:
                found.extend(int(x) for x in handle.read().split())
    return found


def process_tree(pid: int) -> list[int]:
    pids, k = [pid], 0
    while k < len(pids):
        pids.extend(_children(pids[k]))
        k += 1
    return pids


def _proc_kb(path: str, field: str) -> int:
    """The kB value of ``field`` in a /proc file (0 when the process is gone)."""
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def pss_kb(pid: int) -> int:
    """The proportional set size of ``pid`` (shared pages split between their users)."""
    return _proc_kb(f"/proc/{pid}/smaps_rollup", "Pss:")


def hwm_kb(pid: int) -> int:
    """VmHWM: the peak resident set of ``pid``'s own memory image (reset by exec)."""
    return _proc_kb(f"/proc/{pid}/status", "VmHWM:")


class Sampler(threading.Thread):
    """Samples the PSS of a process tree and the peak RSS (VmHWM) of each of its processes;
    kills its group past a deadline or a memory cap.

    ``ru_maxrss`` from ``wait4`` is not used for the largest process: Linux carries a
    process's peak across ``exec``, so a step started by this (large) runner reported at
    least the runner's own resident set (97 MB at 2,000 sessions, whatever the step did).
    """

    def __init__(self, pid: int, timeout: float | None, cap_mb: float | None) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.deadline = time.monotonic() + timeout if timeout else None
        self.cap_kb = cap_mb * 1024 if cap_mb else None
        self.peak_kb = 0
        self.peak_hwm_kb = 0
        self.peak_processes = 0
        self.killed: str | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.05):
            pids = process_tree(self.pid)
            total = sum(pss_kb(p) for p in pids)
            self.peak_kb = max(self.peak_kb, total)
            self.peak_hwm_kb = max([self.peak_hwm_kb, *(hwm_kb(p) for p in pids)])
            self.peak_processes = max(self.peak_processes, len(pids))
            reason = None
            if self.cap_kb and total > self.cap_kb:
                reason = f"killed: the process tree used {total / 1024:.0f} MB (cap {self.cap_kb / 1024:.0f} MB)"
            elif self.deadline and time.monotonic() > self.deadline:
                reason = "killed: timed out"
            if reason:
                self.killed = reason
                with contextlib.suppress(OSError):
                    os.killpg(self.pid, signal.SIGKILL)  # the group of the process we started
                return


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy since boot (/proc/stat)."""
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def measure(
    cmd: list[str],
    log: Path,
    *,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    cap_mb: float | None = None,
    cwd: Path | None = None,
) -> Measured:
    """Run ``cmd`` to completion in its own session; stdout and stderr go to ``log``."""
    m = Measured(load_before=os.getloadavg())
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd or SOURCE,
            env=env,
            start_new_session=True,
        )
        busy_before = machine_busy()
        sampler = Sampler(proc.pid, timeout, cap_mb)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        m.wall = time.perf_counter() - started
        m.cpu = usage.ru_utime + usage.ru_stime
        m.others_cores = max(0.0, machine_busy() - busy_before - m.cpu) / m.wall if m.wall else 0.0
        proc.returncode = os.waitstatus_to_exitcode(status)
        sampler.done.set()
        sampler.join()
    m.returncode = proc.returncode
    m.max_rss_mb = sampler.peak_hwm_kb / 1024
    m.peak_pss_mb = sampler.peak_kb / 1024
    m.peak_processes = sampler.peak_processes
    m.killed = sampler.killed
    m.log_tail = _tail(log)
    if m.returncode == 0:
        with contextlib.suppress(ValueError, IndexError):
            m.result = json.loads(log.read_text().strip().splitlines()[-1])
    return m


def step(name: str, args: dict[str, Any], log: Path, timeout: float | None = None) -> Measured:
    m = measure([sys.executable, str(STEPS), name, json.dumps(args)], log, timeout=timeout)
    if not m.ok:
        raise RuntimeError(f"step {name} failed ({m.killed or m.returncode}):\n{m.log_tail}")
    return m


# --------------------------------------------------------------------------------------
# Archive preparation.


def working_copy(pristine: Path, work: Path, mutable: list[str]) -> Path:
    """Hard-link copy of the sessions folder; ``mutable`` files get their own inode."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for path in pristine.iterdir():
        os.link(path, work / path.name)
    for name in mutable:
        target = work / name
        if target.exists():
            tmp = work / f".{name}.tmp"
            shutil.copyfile(target, tmp)
            shutil.copystat(target, tmp)
            os.replace(tmp, target)
    return work


def settle(folder: Path, age: float = 3.0) -> None:
    """Wait until every file of ``folder`` is ``age`` seconds old.

    The build rereads a file modified within 2 s of its previous scan (the racy-stamp
    rule), so a freshly generated archive would make the first no-op build read it all.
    """
    newest = max((p.stat().st_mtime for p in folder.iterdir()), default=0.0)
    time.sleep(max(0.0, newest + age - time.time()))


def site_files(site: Path) -> list[int]:
    """Sizes of every published file (the build state folder excluded)."""
    sizes = []
    for path in site.rglob("*"):
        rel = path.relative_to(site)
        if rel.parts[0] != ".polyglav" and path.is_file():
            sizes.append(path.stat().st_size)
    return sizes


def tree_size(folder: Path) -> tuple[int, int]:
    files = total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            files += 1
            total += path.stat().st_size
    return files, total


# --------------------------------------------------------------------------------------
# Watch latency.


@dataclass(slots=True)
class WatchResult:
    status: str = "not run"
    quiet_window: float = 0.3
    latencies_ms: list[float] = field(default_factory=list)
    median_ms: float | None = None
    beyond_quiet_ms: float | None = None
    """Median latency minus the quiet window."""
    initial_build_s: float | None = None
    peak_pss_mb: float = 0.0
    max_rss_mb: float = 0.0
    detail: str = ""


def _pages(folder: Path) -> dict[Path, int]:
    pages = {}
    with contextlib.suppress(OSError):
        for path in folder.glob("*.html"):
            with contextlib.suppress(OSError):
                pages[path] = path.stat().st_mtime_ns
    return pages


def _wait_page(
    folder: Path, before: dict[Path, int], marker: bytes, timeout: float
) -> float | None:
    """Poll until a page of ``folder`` written after ``before`` holds ``marker``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path, mtime in _pages(folder).items():
            if before.get(path) != mtime:
                with contextlib.suppress(OSError):
                    if marker in path.read_bytes():
                        return time.monotonic()
        time.sleep(0.002)
    return None


def measure_watch(
    sessions: Path,
    site: Path,
    target: str,
    seed: int,
    reps: int,
    log: Path,
    polyglav: list[str] | None = None,
) -> WatchResult:
    """Start ``polyglav site watch``, append ``reps`` turns to ``target``, time each page.

    ``polyglav`` is the command prefix (default ``python -m publisher``).
    """
    from publisher.site import urls

    result = WatchResult()
    watch_py = SOURCE / "publisher" / "site" / "watch.py"
    if not watch_py.is_file():
        result.status = "unavailable: publisher/site/watch.py does not exist"
        return result
    manifest = manifest_path(sessions, site)
    cmd = [
        *(polyglav or [sys.executable, "-m", "publisher"]),
        "site",
        "watch",
        "--project",
        str(sessions),
        "--out",
        str(site),
        "--no-search",
        "--quiet",
        "--quiet-window",  # the default, given so that the figure reported is the one used
        f"{result.quiet_window:g}",
    ]
    started_ns = time.time_ns()
    log.parent.mkdir(parents=True, exist_ok=True)
    out = open(log, "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        cmd, stdout=out, stderr=subprocess.STDOUT, cwd=SOURCE, start_new_session=True
    )
    sampler = Sampler(proc.pid, None, None)
    sampler.start()
    try:
        t = time.monotonic()
        while True:  # the initial (incremental) build writes its state
            if proc.poll() is not None:
                result.status = (
                    f"unavailable: `polyglav site watch` exited with status {proc.returncode}"
                )
                result.detail = _tail(log, 3)
                return result
            if _written_since(manifest, started_ns):
                break
            if time.monotonic() - t > 600:
                result.status = "unavailable: no initial build within 600 s"
                return result
            time.sleep(0.01)
        result.initial_build_s = time.monotonic() - t
        folder = site / urls.session_dir(target.removesuffix(".json"))
        for _ in range(reps):
            time.sleep(1.5)  # let the previous burst and any rescan settle
            doc_path = sessions / target
            before = _pages(folder)
            index = generate.append_turn(doc_path, seed)
            written = time.monotonic()
            seen = _wait_page(folder, before, f'id="turn-{index}"'.encode(), 30.0)
            if seen is None:
                result.status = f"failed: no page holding turn {index} within 30 s"
                result.detail = _tail(log, 3)
                return result
            result.latencies_ms.append((seen - written) * 1000)
        result.status = "ok"
        result.median_ms = statistics.median(result.latencies_ms)
        result.beyond_quiet_ms = result.median_ms - result.quiet_window * 1000
        return result
    finally:
        if proc.returncode is None:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGINT)  # the watch process we started: Ctrl-C
            if not _wait_exit(proc, 30):
                result.detail += " (did not stop within 30 s of SIGINT; killed)"
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
            _, status, _ = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        sampler.done.set()
        sampler.join()
        out.close()
        result.peak_pss_mb = sampler.peak_kb / 1024
        result.max_rss_mb = sampler.peak_hwm_kb / 1024


def manifest_path(sessions: Path, site: Path) -> Path:
    """Where the measured publisher keeps the state of ``site``: its catalog in its cache
    folder (under ``$XDG_CACHE_HOME``, which ``main`` points into the archives), the
    manifest there for versions before the catalog, or ``<site>/.polyglav/`` for versions
    that kept it in the site."""
    try:
        from publisher.site.context import BuildOptions, CachePaths
    except ImportError:
        return site / ".polyglav" / "manifest.jsonl"
    paths = CachePaths.of(BuildOptions(sessions_dir=sessions, out_dir=site))
    return getattr(paths, "catalog", None) or paths.root / "manifest.jsonl"


def _written_since(state: Path, started_ns: int) -> bool:
    """True when the build state ``state`` (or its write-ahead log) changed after
    ``started_ns``."""
    for path in (state, state.with_name(state.name + "-wal")):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime_ns > started_ns:
                return True
    return False


def cache_folder(sessions: Path, site: Path) -> Path:
    """The cache folder of ``site`` (under ``$XDG_CACHE_HOME``, which ``main`` points into
    the archives), or ``<site>/.polyglav/`` for versions that kept it in the site."""
    try:
        from publisher.site.context import BuildOptions, CachePaths
    except ImportError:
        return site / ".polyglav"
    return CachePaths.of(BuildOptions(sessions_dir=sessions, out_dir=site)).root


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """True once ``proc`` has exited (still unreaped, so wait4 can read its rusage)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        if info is not None:
            return True
        time.sleep(0.02)
    return False


# --------------------------------------------------------------------------------------
# Peers.


def peer_commands(
    projects: Path, out: Path, scratch: Path
) -> dict[str, tuple[list[str], dict[str, str]]]:
    env = dict(os.environ)
    env["HOME"] = str(scratch / "home")  # read nothing from the real ~/.claude
    (scratch / "home").mkdir(parents=True, exist_ok=True)
    ccl_env = dict(env, CLAUDE_CODE_LOG_CACHE_PATH=str(scratch / "ccl-cache.db"))
    return {
        "claude-code-transcripts": (
            [
                "claude-code-transcripts",
                "all",
                "--source",
                str(projects),
                "--output",
                str(out / "cct"),
                "--quiet",
            ],
            env,
        ),
        "claude-code-log": (
            # One page per session and the index, like the Polyglav site (no combined page).
            [
                "claude-code-log",
                str(projects),
                "--all-projects",
                "-o",
                str(out / "ccl"),
                "--combined",
                "no",
            ],
            ccl_env,
        ),
    }


def run_peers(
    sessions: Path, work: Path, timeout: float, cap_mb: float, log_dir: Path
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    projects = work / "claude-projects"
    if projects.exists():
        shutil.rmtree(projects)
    conv = measure(
        [sys.executable, str(HERE / "convert_claude.py"), str(sessions), str(projects)],
        log_dir / "convert.log",
    )
    conversion: dict[str, Any] = {"seconds": conv.wall, "ok": conv.ok}
    if conv.ok:
        conversion.update(json.loads(log_dir.joinpath("convert.log").read_text()))
    else:
        conversion["error"] = conv.log_tail
    peers: dict[str, Any] = {}
    out = work / "peers"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, (cmd, env) in peer_commands(projects, out, work / "peer-scratch").items():
        entry: dict[str, Any] = {"command": " ".join(cmd)}
        if shutil.which(cmd[0]) is None:
            entry["status"] = f"not installed (pip install {name})"
            peers[name] = entry
            continue
        if not conv.ok:
            entry["status"] = "not run: the conversion failed"
            peers[name] = entry
            continue
        m = measure(cmd, log_dir / f"{name}.log", env=env, timeout=timeout, cap_mb=cap_mb)
        result_dir = out / ("cct" if name == "claude-code-transcripts" else "ccl")
        files, total = tree_size(result_dir) if result_dir.exists() else (0, 0)
        html = len(list(result_dir.rglob("*.html"))) if result_dir.exists() else 0
        entry.update(
            wall=m.wall,
            peak_pss_mb=m.peak_pss_mb,
            max_rss_mb=m.max_rss_mb,
            returncode=m.returncode,
            output_files=files,
            output_bytes=total,
            html_pages=html,
            load_before=m.load_before,
            cpu=m.cpu,
            others_cores=m.others_cores,
        )
        if m.ok:
            entry["status"] = "ok"
        else:
            entry["status"] = m.killed or f"failed with exit status {m.returncode}"
            entry["error"] = m.log_tail
        peers[name] = entry
    imported = via_import(projects, work, log_dir) if conv.ok else {"status": "not run"}
    return conversion, peers, imported


def via_import(projects: Path, work: Path, log_dir: Path) -> dict[str, Any]:
    """The peers' input through our own importer: ``polyglav import claude-code`` of the
    converted Claude Code archive (its throughput), then a site build of what it imported
    (search off), so the peer ratio can also be read on the very files the peers read."""
    project = work / "imported"
    site = work / "site-imported"
    # A cache of its own, fresh like the site: the default one (under ~/.cache, named by the
    # site's path) would survive from the last run and make this a different build each time.
    cache = work / "cache-imported"
    for folder in (project, site, cache):
        if folder.exists():
            shutil.rmtree(folder)
    project.mkdir(parents=True)
    source_bytes = tree_size(projects)[1]
    polyglav = [sys.executable, "-m", "publisher"]
    imp = measure(
        [*polyglav, "import", "claude-code", str(projects), "--project", str(project)],
        log_dir / "import.log",
    )
    result: dict[str, Any] = {
        "source_bytes": source_bytes,
        "import": {"wall": imp.wall, "max_rss_mb": imp.max_rss_mb, "ok": imp.ok},
    }
    if not imp.ok:
        result["status"] = f"import failed: {imp.log_tail}"
        return result
    result["import"]["mb_per_s"] = source_bytes / MB / imp.wall if imp.wall else None
    sessions = project / ".polyglav" / "sessions"
    result["imported_bytes"] = tree_size(sessions)[1]
    build = measure(
        [*polyglav, "site", "build", "--project", str(project), "--out", str(site),
         "--cache-dir", str(cache), "--no-search", "--quiet"],
        log_dir / "build-imported.log",
    )  # fmt: skip
    result["build_nosearch"] = {"wall": build.wall, "max_rss_mb": build.max_rss_mb, "ok": build.ok}
    result["status"] = "ok" if build.ok else f"build failed: {build.log_tail}"
    return result


# --------------------------------------------------------------------------------------
# One archive size.


def bench_size(n: int, opts: argparse.Namespace, log: Any, kind: str = "mixed") -> dict[str, Any]:
    log(f"== {n} sessions, {kind} shape (scale {opts.scale:g}) ==")
    arch = generate.generate(n, opts.scale, opts.seed, log=lambda m: log(f"  {m}"), shape=kind)
    shape = json.loads((arch / "shape.json").read_text())
    pristine = arch / "sessions"
    work = generate.ARCHIVES / "work" / arch.name
    logs = work / "logs"
    target = shape["append_target"] + ".json"
    long_target = (shape["long_target"] + ".json") if shape["long_target"] else ""
    sessions = working_copy(pristine, work / "sessions", [t for t in (target, long_target) if t])
    settle(sessions)
    site_off, site_on = work / "site-nosearch", work / "site"
    for site in (site_off, site_on):
        # A full build starts from nothing: its site and its cache folder. The cache a
        # previous run of the same code left (scan results, turn fragments: same build key)
        # would make the "full" build a warm one, rendering no turn at all.
        for folder in (site, cache_folder(sessions, site)):
            if folder.exists():
                shutil.rmtree(folder)
    res: dict[str, Any] = {"sessions": n, "kind": kind, "shape": shape}
    expected_failures = shape["kinds"].get("truncated", 0) + shape["kinds"].get("legacy", 0)
    steps: dict[str, Any] = {}
    res["steps"] = steps

    def build(key: str, site: Path, search: bool) -> Measured:
        log(f"  {key} ...")
        m = step(
            "build",
            {"sessions_dir": str(sessions), "out_dir": str(site), "search": search},
            logs / f"{key}.log",
        )
        steps[key] = _entry(m)
        if steps[key].get("failures", 0) > expected_failures:
            steps[key]["unexpected_failures"] = steps[key]["failures"] - expected_failures
            log(
                f"    WARNING: {steps[key]['failures']} files not published, {expected_failures} expected"
            )
        log(f"    {_brief(steps[key])}")
        return m

    build("full_nosearch", site_off, False)
    if opts.only_watch:
        w = measure_watch(
            sessions, site_off, target, opts.seed, opts.watch_reps, logs / "watch.log"
        )
        res["watch"] = asdict(w)
        log(f"    watch: {w.status} {w.latencies_ms and [round(x) for x in w.latencies_ms]}")
        return res
    build("full_search", site_on, True)
    # --repeat: more full builds from nothing, search off and on alternately (the machine's
    # load moves both alike); each series' median run stands for it in the ratios. Each
    # pair after the first runs its two builds in the other order than the pair before
    # (off-on, on-off, off-on...): a machine whose speed drifts the same way through the
    # run would otherwise always time search on later than search off.
    series: dict[str, list[dict[str, Any]]] = {
        "full_nosearch": [steps["full_nosearch"]],
        "full_search": [steps["full_search"]],
    }
    pair = (("full_nosearch", site_off, False), ("full_search", site_on, True))
    for rep in range(1, opts.repeat):
        for key, site, search in pair[::-1] if rep % 2 else pair:
            for folder in (site, cache_folder(sessions, site)):
                if folder.exists():
                    shutil.rmtree(folder)
            build(f"{key}_{rep}", site, search)
            series[key].append(steps.pop(f"{key}_{rep}"))
    res["full_builds"] = {
        key: [{"wall": e.get("wall"), "cpu": e.get("cpu")} for e in runs]
        for key, runs in series.items()
    }
    pairs = [
        (on.get("wall"), off.get("wall"))
        for on, off in zip(series["full_search"], series["full_nosearch"], strict=True)
    ]
    res["search_part"] = sorted((on - off) / off for on, off in pairs if on and off)
    for key, runs in series.items():
        steps[key] = sorted(runs, key=lambda e: e.get("wall") or 0)[len(runs) // 2]
    files, total = tree_size(site_on)
    res["site"] = {"files": files, "bytes": total}
    sizes = site_files(site_on)
    res["site_published"] = {"files": len(sizes), "bytes": sum(sizes)}
    sizes_file = work / "site-sizes.json"
    sizes_file.write_text(json.dumps(sizes))
    for key, workers, render in (
        ("floor", os.cpu_count() or 1, False),
        ("floor_1proc", 1, False),
        ("render_floor", os.cpu_count() or 1, True),
    ):
        log(f"  {key} ...")
        floor_out = work / "floor-out"
        if floor_out.exists():
            shutil.rmtree(floor_out)
        m = step(
            "floor",
            {
                "sessions_dir": str(sessions),
                "out_dir": str(floor_out),
                "sizes_file": str(sizes_file),
                "workers": workers,
                "render": render,
            },
            logs / f"{key}.log",
        )
        shutil.rmtree(floor_out)
        steps[key] = _entry(m)
        log(f"    {_brief(steps[key])}")
    build("noop_search", site_on, True)
    build("noop_nosearch", site_off, False)
    generate.append_turn(sessions / target, opts.seed)
    build("append_nosearch", site_off, False)
    build("append_search", site_on, True)
    if long_target:
        generate.append_turn(sessions / long_target, opts.seed)
        build("append_long_nosearch", site_off, False)
    if opts.profile and kind == "mixed" and n == max(opts.size_list):
        log("  profile of a no-op build ...")
        settle(sessions)  # else the file appended just before is reread (racy-stamp rule)
        prof = generate.ARCHIVES / f"profile-noop-n{n}.prof"
        m = step(
            "profile",
            {
                "sessions_dir": str(sessions),
                "out_dir": str(site_off),
                "prof": str(prof),
                "workers": None,
            },
            logs / "profile-noop.log",
        )
        res["profile_noop"] = dict(m.result or {}, prof=str(prof))
    if opts.skip_watch or kind != "mixed":
        res["watch"] = asdict(
            WatchResult(
                status="skipped (--skip-watch)"
                if opts.skip_watch
                else "measured on the mixed shape only"
            )
        )
    else:
        log("  watch ...")
        w = measure_watch(
            sessions, site_off, target, opts.seed, opts.watch_reps, logs / "watch.log"
        )
        res["watch"] = asdict(w)
        log(f"    {w.status} {w.latencies_ms and [round(x) for x in w.latencies_ms]}")
    if opts.skip_peers:
        res["conversion"], res["peers"], res["via_import"] = {}, {}, {}
    else:
        log("  peers ...")
        res["conversion"], res["peers"], res["via_import"] = run_peers(
            pristine, work, opts.peer_timeout, opts.mem_cap_gb * 1024, logs
        )
        imported = res["via_import"]
        if imported.get("status") == "ok":
            log(
                f"    polyglav import: {imported['import']['wall']:.1f} s "
                f"({imported['import']['mb_per_s']:.1f} MB/s), then site build "
                f"{imported['build_nosearch']['wall']:.1f} s"
            )
        for name, entry in res["peers"].items():
            log(f"    {name}: {entry.get('status')} {entry.get('wall', 0):.1f} s")
    if not opts.keep:
        for folder in (
            site_off,
            site_on,
            work / "peers",
            work / "claude-projects",
            work / "peer-scratch",
            work / "imported",
            work / "site-imported",
            sessions,
        ):
            if folder.exists():
                shutil.rmtree(folder)
    return res


def _entry(m: Measured) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "wall": m.wall,
        "peak_pss_mb": m.peak_pss_mb,
        "max_rss_mb": m.max_rss_mb,
        "processes": m.peak_processes,
        "load_before": m.load_before,
        "cpu": m.cpu,
        "others_cores": m.others_cores,
    }
    if m.result:
        entry.update(m.result)
    return entry


def _brief(entry: dict[str, Any]) -> str:
    return f"{entry.get('seconds', entry['wall']):.2f} s, tree {entry['peak_pss_mb']:.0f} MB, max proc {entry['max_rss_mb']:.0f} MB"


# --------------------------------------------------------------------------------------
# Ratios, table, machine.


@dataclass(slots=True)
class Ratio:
    name: str
    value: float | None
    target: str
    met: bool | None
    note: str = ""


def _get(d: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def _div(a: Any, b: Any) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return float(a) / float(b)


def _adder(out: list[Ratio], prefix: str = "") -> Callable[..., None]:
    def add(name: str, value: float | None, op: str, limit: float, note: str = "") -> None:
        met = (
            None
            if value is None
            else (value <= limit if op == "<=" else value < limit if op == "<" else value >= limit)
        )
        out.append(Ratio(prefix + name, value, f"{op} {limit:g}", met, note))

    return add


def shape_ratios(large: dict[str, Any]) -> list[Ratio]:
    """The ratios of one archive shape (issue 13): against the floors, the peers, and the
    no-op and append builds against the full build."""
    out: list[Ratio] = []
    label = f"{large.get('kind', 'mixed')} {large['sessions']}: "
    add = _adder(out, label)
    big = large["steps"]
    add(
        "full build / floor (search on)",
        _div(_get(big, "full_search", "seconds"), _get(big, "floor", "seconds")),
        "<=",
        10,
        "build_site time / floor with every core",
    )
    parts = large.get("search_part") or []
    add(
        "search part of a full build / full build (search off)",
        parts[len(parts) // 2] if parts else None,
        "<=",
        0.15,
        "issue 30: (search on - search off) / search off, wall, the median of the alternated "
        f"pairs ({', '.join(f'{x:.2f}' for x in parts)})",
    )
    add(
        "full build / floor (search off)",
        _div(_get(big, "full_nosearch", "seconds"), _get(big, "floor", "seconds")),
        "<=",
        10,
    )
    add(
        "full build / render floor (search off)",
        _div(_get(big, "full_nosearch", "seconds"), _get(big, "render_floor", "seconds")),
        "<=",
        2,
        "issue 13: the floor also renders every prose text with markdown-it, escapes I/O",
    )
    add(
        "full build / render floor (search on)",
        _div(_get(big, "full_search", "seconds"), _get(big, "render_floor", "seconds")),
        "<=",
        3,
    )
    add(
        "full build / render floor, CPU seconds (search off)",
        _div(_get(big, "full_nosearch", "cpu"), _get(big, "render_floor", "cpu")),
        "<=",
        2,
        "user+system of the process tree: steadier than wall time on a busy shared machine",
    )
    add(
        "full build / render floor, CPU seconds (search on)",
        _div(_get(big, "full_search", "cpu"), _get(big, "render_floor", "cpu")),
        "<=",
        3,
    )
    peers = [p.get("wall") for p in large.get("peers", {}).values() if p.get("status") == "ok"]
    fastest = min(peers) if peers else None
    peer_cpus = [p.get("cpu") for p in large.get("peers", {}).values() if p.get("status") == "ok"]
    least_cpu = min(c for c in peer_cpus if c) if any(peer_cpus) else None
    add(
        "peer CPU (the less) / full build CPU (search off)",
        _div(least_cpu, _get(big, "full_nosearch", "cpu")),
        ">=",
        5,
        "CPU seconds: the peers run on one core, the build on every core",
    )
    add(
        "peer CPU (the less) / full build CPU (search on)",
        _div(least_cpu, _get(big, "full_search", "cpu")),
        ">=",
        3,
    )
    add(
        "faster peer / full build (search on)",
        _div(fastest, _get(big, "full_search", "wall")),
        ">=",
        3,
        "subprocess wall times (CLI against CLI)",
    )
    add(
        "faster peer / full build (search off)",
        _div(fastest, _get(big, "full_nosearch", "wall")),
        ">=",
        5,
    )
    add(
        "faster peer / build of its input imported (search off)",
        _div(fastest, _get(large, "via_import", "build_nosearch", "wall")),
        ">=",
        5,
        "the Claude Code archive the peers read, through polyglav import (import not counted)",
    )
    add(
        "faster peer / (import + build of it) (search off)",
        _div(
            fastest,
            (_get(large, "via_import", "import", "wall") or 0)
            + (_get(large, "via_import", "build_nosearch", "wall") or 0)
            or None,
        ),
        ">=",
        5,
        "what a Claude Code user runs: polyglav import, then polyglav site build",
    )
    add(
        "import throughput / full build throughput (MB/s)",
        _div(
            _get(large, "via_import", "import", "mb_per_s"),
            _div(
                _div(_get(large, "via_import", "imported_bytes"), MB),
                _get(large, "via_import", "build_nosearch", "wall"),
            ),
        ),
        ">=",
        1,
        "issue 14: import (source MB/s) at least as fast as a site build of it (MB/s)",
    )
    add(
        "append rebuild / full build (search on)",
        _div(_get(big, "append_search", "seconds"), _get(big, "full_search", "seconds")),
        "<",
        0.01,
    )
    add(
        "append rebuild / full build (search off)",
        _div(_get(big, "append_nosearch", "seconds"), _get(big, "full_nosearch", "seconds")),
        "<",
        0.01,
    )
    add(
        "no-op build / full build (search on)",
        _div(_get(big, "noop_search", "seconds"), _get(big, "full_search", "seconds")),
        "<",
        0.02,
    )
    add(
        "no-op build / full build (search off)",
        _div(_get(big, "noop_nosearch", "seconds"), _get(big, "full_nosearch", "seconds")),
        "<",
        0.02,
    )
    return out


def ratios(small: dict[str, Any], large: dict[str, Any]) -> list[Ratio]:
    out: list[Ratio] = []
    pair = f"{large['sessions']} / {small['sessions']}"

    def add(name: str, value: float | None, op: str, limit: float, note: str = "") -> None:
        met = (
            None
            if value is None
            else (value <= limit if op == "<=" else value < limit if op == "<" else value >= limit)
        )
        out.append(Ratio(name, value, f"{op} {limit:g}", met, note))

    s, big = small["steps"], large["steps"]
    add(
        "append rebuild 2000 / 200 (search on)",
        _div(_get(big, "append_search", "seconds"), _get(s, "append_search", "seconds")),
        "<=",
        1.5,
    )
    add(
        "append rebuild 2000 / 200 (search off)",
        _div(_get(big, "append_nosearch", "seconds"), _get(s, "append_nosearch", "seconds")),
        "<=",
        1.5,
    )
    add(
        f"peak memory {pair} (full build, tree PSS)",
        _div(_get(big, "full_search", "peak_pss_mb"), _get(s, "full_search", "peak_pss_mb")),
        "<=",
        1.3,
    )
    add(
        f"peak memory {pair} (full build, largest process)",
        _div(_get(big, "full_search", "max_rss_mb"), _get(s, "full_search", "max_rss_mb")),
        "<=",
        1.3,
    )
    add(
        f"peak memory {pair} (full build search off, tree PSS)",
        _div(_get(big, "full_nosearch", "peak_pss_mb"), _get(s, "full_nosearch", "peak_pss_mb")),
        "<=",
        1.3,
    )
    add(
        f"peak memory {pair} (full build search off, largest process)",
        _div(_get(big, "full_nosearch", "max_rss_mb"), _get(s, "full_nosearch", "max_rss_mb")),
        "<=",
        1.3,
    )
    largest_mb = (_get(large, "shape", "largest_file_bytes") or 0) / MB
    add(
        "peak memory / largest file (tree PSS)",
        _div(_get(big, "full_search", "peak_pss_mb"), largest_mb),
        "<=",
        3,
        f"largest file {largest_mb:.1f} MB",
    )
    add(
        "peak memory / largest file (largest process)",
        _div(_get(big, "full_search", "max_rss_mb"), largest_mb),
        "<=",
        3,
    )
    add(
        "peak memory / largest file (search off, tree PSS)",
        _div(_get(big, "full_nosearch", "peak_pss_mb"), largest_mb),
        "<=",
        3,
    )
    add(
        "peak memory / largest file (search off, largest process)",
        _div(_get(big, "full_nosearch", "max_rss_mb"), largest_mb),
        "<=",
        3,
    )
    add(
        "watch latency beyond the quiet window (ms)",
        _get(large, "watch", "beyond_quiet_ms"),
        "<",
        150,
        f"median; quiet window {(_get(large, 'watch', 'quiet_window') or 0) * 1000:.0f} ms, status {_get(large, 'watch', 'status')}",
    )
    return out


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gb"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for dist in (
        "polyglav-publisher",
        "snowballstemmer",
        "claude-code-log",
        "claude-code-transcripts",
        "markdown-it-py",
        "jinja2",
    ):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    info["versions"] = versions
    return info


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


STEP_LABELS = [
    ("floor", "floor: read+parse, write site bytes (every core)"),
    ("floor_1proc", "floor, one process"),
    ("render_floor", "render floor: + markdown-it on prose, escape I/O"),
    ("full_nosearch", "full build, search off"),
    ("full_search", "full build, search on"),
    ("noop_search", "no-op build, search on"),
    ("noop_nosearch", "no-op build, search off"),
    ("append_search", "append 1 turn → build, search on"),
    ("append_nosearch", "append 1 turn → build, search off"),
    ("append_long_nosearch", "append 1 turn to longest session, search off"),
]


def via_import_rows(v: dict[str, Any]) -> list[str]:
    """The table's rows for the peers' input through ``polyglav import`` (issue 14)."""
    if not v:
        return []
    imp = v.get("import") or {}
    if v.get("status") != "ok":
        return [f"{'polyglav import of the peers input':<48} {v.get('status')}"]
    build = v["build_nosearch"]
    return [
        f"{'polyglav import of the peers input':<48} {'':>8} {_fmt(imp['wall']):>8} {'':>8} {'':>6} "
        f"{'':>8} {_fmt(imp['max_rss_mb'], 0):>8}  {v['source_bytes'] / MB:.0f} MB in "
        f"({_fmt(imp.get('mb_per_s'), 1)} MB/s), {v['imported_bytes'] / MB:.0f} MB of sessions out",
        f"{'full build of it (search off)':<48} {'':>8} {_fmt(build['wall']):>8} {'':>8} {'':>6} "
        f"{'':>8} {_fmt(build['max_rss_mb'], 0):>8}  "
        f"{_fmt(_div(v['imported_bytes'] / MB, build['wall']), 1)} MB/s of sessions",
    ]


def table(results: dict[str, Any]) -> str:
    lines: list[str] = []
    m = results["machine"]
    lines.append(
        f"machine: {m.get('cpu', '?')}, {m['nproc']} cores, {m.get('memory_gb', '?')} GB, Python {m['python']}; "
        f"load average at start {results['load_start'][0]:.1f} (shared machine)"
    )
    lines.append(
        "time s: measured inside the step (build_site / the floor's work); wall s: the subprocess, "
        "interpreter start included; cpu s: user+system of the process tree; others: average cores "
        "busy with other work meanwhile; tree MB: peak PSS of the process tree; proc MB: largest process"
    )
    for size in results["sizes"]:
        shape = size["shape"]
        lines.append("")
        lines.append(
            f"## {size['sessions']} sessions, {size.get('kind', 'mixed')} shape: {shape['bytes'] / MB:.0f} MB in {shape['files']} files, "
            f"{shape['turns_total']} turns, largest file {shape['largest_file_bytes'] / MB:.1f} MB"
            + (
                f", {shape['tool_output_share']:.0%} tool output"
                if "tool_output_share" in shape
                else ""
            )
            + (
                f"; site {size['site_published']['bytes'] / MB:.0f} MB in {size['site_published']['files']} files"
                if size.get("site_published")
                else ""
            )
        )
        lines.append(
            f"{'step':<48} {'time s':>8} {'wall s':>8} {'cpu s':>8} {'others':>6} {'tree MB':>8} {'proc MB':>8}  notes"
        )
        for key, label in STEP_LABELS:
            e = size["steps"].get(key)
            if not e:
                continue
            note = ""
            if "sessions_rendered" in e:
                note = f"rendered {e['sessions_rendered']}, read {e['files_read']}, wrote {e['files_written']}, search {e['search']}"
            elif "bytes_written" in e:
                note = f"{e['files_read']} files {e['bytes_read'] / MB:.0f} MB in, {e['files_written']} files {e['bytes_written'] / MB:.0f} MB out"
            lines.append(
                f"{label:<48} {_fmt(e.get('seconds')):>8} {_fmt(e['wall']):>8} {_fmt(e.get('cpu')):>8} "
                f"{_fmt(e.get('others_cores'), 1):>6} {_fmt(e['peak_pss_mb'], 0):>8} {_fmt(e['max_rss_mb'], 0):>8}  {note}"
            )
        w = size.get("watch", {})
        if w.get("status") == "ok":
            lines.append(
                f"{'watch: file written → page written (median)':<48} {_fmt(w['median_ms'] / 1000, 3):>8} {'':>8} "
                f"{'':>8} {'':>6} {_fmt(w['peak_pss_mb'], 0):>8} {_fmt(w['max_rss_mb'], 0):>8}  quiet window {w['quiet_window'] * 1000:.0f} ms, "
                f"runs (ms) {', '.join(f'{x:.0f}' for x in w['latencies_ms'])}"
            )
        else:
            detail = (w.get("detail") or "").strip().splitlines()[-1:] or [""]
            lines.append(f"{'watch':<48} {w.get('status')}: {detail[0]}")
        conv = size.get("conversion") or {}
        if conv:
            lines.append(
                f"{'convert to Claude Code JSONL (not timed in peers)':<48} {'':>8} {_fmt(conv.get('seconds')):>8} {'':>8} {'':>6} {'':>8} {'':>8}  "
                f"{conv.get('sessions', '?')} sessions, {(conv.get('bytes') or 0) / MB:.0f} MB"
            )
        for name, p in (size.get("peers") or {}).items():
            if p.get("status") == "ok":
                lines.append(
                    f"{name:<48} {'':>8} {_fmt(p['wall']):>8} {_fmt(p.get('cpu')):>8} {_fmt(p.get('others_cores'), 1):>6} "
                    f"{_fmt(p['peak_pss_mb'], 0):>8} {_fmt(p['max_rss_mb'], 0):>8}  "
                    f"{p['html_pages']} pages, {p['output_bytes'] / MB:.0f} MB"
                )
            else:
                lines.append(f"{name:<48} {p.get('status')}  {p.get('error', '')[-300:]}")
        lines.extend(via_import_rows(size.get("via_import") or {}))
    if results.get("ratios"):
        lines.append("")
        lines.append(
            "## ratios against issues 4 and 13 (per shape; then between the two mixed sizes)"
        )
        lines.append(f"{'ratio':<72} {'value':>9} {'target':>8}  verdict")
        for r in results["ratios"]:
            verdict = "-" if r["met"] is None else "met" if r["met"] else "MISSED"
            lines.append(
                f"{r['name']:<72} {_fmt(r['value'], 3):>9} {r['target']:>8}  {verdict}  {r['note']}"
            )
    return "\n".join(lines)


@contextlib.contextmanager
def timed(log: Any, label: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    log(f"{label} in {time.perf_counter() - started:.0f} s")


def source_digest(root: Path) -> str:
    """A digest of the publisher's code and themes under ``root`` (names and bytes)."""
    digest = hashlib.sha256()
    for top in ("publisher", "themes"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(
                    str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0"
                )
    return digest.hexdigest()


def snapshot_source() -> Path:
    """Copy ``publisher/`` and ``themes/`` aside, so edits made during a run mix no versions."""
    digest = source_digest(ROOT)[:12]
    dest = generate.ARCHIVES / "snapshots" / digest
    if not dest.is_dir():
        tmp = dest.with_name(f".{digest}.tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / "publisher", tmp / "publisher", ignore=ignore)
        shutil.copytree(ROOT / "themes", tmp / "themes", ignore=ignore)
        tmp.rename(dest)
    return dest


def use_source(path: Path) -> None:
    global SOURCE
    SOURCE = path
    compile_source(path / "publisher")  # timed as installed: see compiled.py
    os.environ["BENCH_SOURCE"] = str(path)  # steps.py and convert_claude.py import from it
    sys.path.insert(0, str(path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark the Polyglav publisher (issue 4).")
    parser.add_argument(
        "--sizes", default="200,2000", help="comma-separated session counts (default 200,2000)"
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="content scale of the archives (0.05 for a smoke run)",
    )
    parser.add_argument(
        "--shapes",
        default="mixed,output",
        help="archive shapes, comma-separated: mixed (--sizes sessions of every kind, issue 4) "
        "and output (--output-sessions sessions where tool output is 96%% of the bytes, issue 13)",
    )
    parser.add_argument(
        "--output-sessions", type=int, default=200, help="sessions of the output shape (200)"
    )
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help="measure the publisher of another checkout (e.g. a baseline commit's worktree)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="full builds from nothing, search off and on, this many pairs (each in the other order than the pair before; medians used)",
    )
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--skip-watch", action="store_true")
    parser.add_argument("--watch-reps", type=int, default=5)
    parser.add_argument("--peer-timeout", type=float, default=1500.0, help="seconds per peer run")
    parser.add_argument(
        "--mem-cap-gb",
        type=float,
        default=12.0,
        help="a peer whose process tree passes this is stopped",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also cProfile a one-process build of the first size"
    )
    parser.add_argument(
        "--no-snapshot",
        action="store_true",
        help="measure the live checkout (default: a copy of publisher/ and themes/ made at start)",
    )
    parser.add_argument(
        "--only-watch",
        action="store_true",
        help="per size: a full build (search off) and the watch latency",
    )
    parser.add_argument("--only-profile", action="store_true", help="run nothing but the profile")
    parser.add_argument(
        "--keep", action="store_true", help="keep the sites, peer outputs and working copies"
    )
    parser.add_argument("--results", type=Path, default=generate.ARCHIVES / "results.json")
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        help="measure nothing: reprint the table of an earlier results.json (ratios recomputed)",
    )
    opts = parser.parse_args(argv)
    if opts.report:
        return report(opts.report)
    # Build caches of the measured steps go with the archives, not the user's cache folder.
    os.environ["XDG_CACHE_HOME"] = str(generate.ARCHIVES / "cache")
    sizes = [int(x) for x in opts.sizes.split(",") if x]
    opts.size_list = sizes

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    shapes = [x for x in opts.shapes.split(",") if x]
    if opts.source:
        use_source(opts.source.resolve())
    else:
        use_source(ROOT if opts.no_snapshot else snapshot_source())
    log(f"measuring the publisher in {SOURCE}")
    results: dict[str, Any] = {
        "source": {"path": str(SOURCE), "digest": source_digest(SOURCE)},
        "machine": machine(),
        "load_start": os.getloadavg(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts).items()},
        "sizes": [],
    }
    started = time.perf_counter()
    if opts.only_profile:
        opts.profile, sizes = True, sizes[:1]
    runs = [("mixed", n) for n in sizes] if "mixed" in shapes else []
    if "output" in shapes:
        runs.append(("output", opts.output_sessions))
    for kind, n in [] if opts.only_profile else runs:
        with timed(log, f"{n} sessions ({kind}) done"):
            results["sizes"].append(bench_size(n, opts, log, kind))
    results["ratios"] = all_ratios(results)
    if opts.profile:
        log("profile ...")
        results["profile"] = profile(sizes[0], opts)
        log(f"  {results['profile']['seconds']:.1f} s under cProfile")
    results["load_end"] = os.getloadavg()
    results["total_seconds"] = time.perf_counter() - started
    opts.results.parent.mkdir(parents=True, exist_ok=True)
    opts.results.write_text(json.dumps(results, indent=2) + "\n")
    if results["sizes"]:
        print(table(results))
    print_profiles(results)
    print(f"\ntotal {results['total_seconds'] / 60:.1f} min; figures in {opts.results}")
    return 0


def all_ratios(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Per shape (the largest mixed archive and the output-heavy one), then between the two
    mixed sizes."""
    mixed = [r for r in results["sizes"] if r.get("kind", "mixed") == "mixed"]
    output = [r for r in results["sizes"] if r.get("kind") == "output"]
    found: list[Ratio] = []
    for entry in mixed[-1:] + output:
        found.extend(shape_ratios(entry))
    if len(mixed) >= 2:
        found.extend(ratios(mixed[0], mixed[-1]))
    return [asdict(r) for r in found]


def report(path: Path) -> int:
    """Reprint the table of an earlier run (its ratios recomputed and saved back)."""
    results = json.loads(path.read_text())
    results["ratios"] = all_ratios(results)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print_profiles(results)
    return 0


def print_profiles(results: dict[str, Any]) -> None:
    p = results.get("profile")
    if p:
        if p.get("phases"):
            print()
            print(phases_table(dict(p["phases"], sessions=p["sessions"])))
        print()
        print(profile_table(p))
    for size in results["sizes"]:
        noop = size.get("profile_noop")
        if noop:
            print()
            print(
                profile_table(dict(noop, sessions=size["sessions"]), "a no-op build (every core)")
            )


def profile(n: int, opts: argparse.Namespace) -> dict[str, Any]:
    arch = generate.generate(n, opts.scale, opts.seed)
    out = generate.ARCHIVES / "work" / "profile-site"
    if out.exists():
        shutil.rmtree(out)
    prof = generate.ARCHIVES / f"profile-n{n}.prof"
    m = step(
        "profile",
        {"sessions_dir": str(arch / "sessions"), "out_dir": str(out), "prof": str(prof)},
        generate.ARCHIVES / "work" / "profile.log",
    )
    shutil.rmtree(out)
    data = dict(m.result or {})
    data["prof"] = str(prof)
    data["sessions"] = n
    m = step(
        "phases",
        {"sessions_dir": str(arch / "sessions"), "out_dir": str(out)},
        generate.ARCHIVES / "work" / "phases.log",
    )
    shutil.rmtree(out)
    data["phases"] = m.result
    return data


def phases_table(p: dict[str, Any]) -> str:
    lines = [
        f"## where a one-process build of {p.get('sessions', '?')} sessions spends its time "
        f"({p['seconds']:.1f} s, timing wrappers, no profiler; nested rows overlap)"
    ]
    for row in p["phases"]:
        lines.append(
            f"{row['seconds']:>8.2f} s {row['share']:>5.0%} {row['calls']:>8} calls  {row['phase']}"
        )
    return "\n".join(lines)


def profile_table(p: dict[str, Any], what: str = "a one-process build") -> str:
    lines = [
        f"## cProfile of {what} of {p['sessions']} sessions ({p['seconds']:.1f} s under the profiler; {p['prof']})"
    ]
    lines.append(f"{'cumulative s':>12} {'own s':>8} {'calls':>9}  function")
    for row in p["cumulative"][:25]:
        lines.append(
            f"{row['cumtime']:>12.2f} {row['tottime']:>8.2f} {row['calls']:>9}  {row['function']}"
        )
    lines.append(f"{'own s':>12} {'':>8} {'calls':>9}  function (by own time)")
    for row in p["tottime"][:15]:
        lines.append(f"{row['tottime']:>12.2f} {'':>8} {row['calls']:>9}  {row['function']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
