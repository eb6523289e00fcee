"""The site build on a Dask cluster (``site build --scheduler``, :mod:`publisher.site.distributed`):
every file byte-identical to a local build; a worker killed mid-build is replaced by Dask
and the build completes, identical; a scheduler stopped mid-build is one line and exit 1,
no torn page, and the next build completes; a worker of another publisher refuses; and
without a scheduler Dask is never imported.

The slow tests start a real ``dask scheduler`` and ``dask worker`` processes on loopback
(:class:`Cluster`); the fast one runs a ``LocalCluster`` in this process."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from publisher.commands import make_redactor
from publisher.errors import describe, exit_status
from publisher.site.context import Tunables
from tests.helpers import (
    ROOT,
    age,
    build,
    copy_samples,
    python_env,
    require,
    tree_digest,
    two_runs,
)

pytestmark = pytest.mark.site

SITE_BUILD = (sys.executable, "-m", "publisher", "site", "build", "--project")
"""``polyglav site build --project`` in a subprocess (this checkout: :func:`python_env`)."""
EVERYWHERE = Tunables(in_process_scan=0, in_process_render=0)
"""Every scan and render job goes to the workers (none in the build's process)."""


def _generate(folder: Path, sessions: int, scale: float) -> None:
    spec = importlib.util.spec_from_file_location("generate", ROOT / "benchmarks" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("generate", module)
    spec.loader.exec_module(module)
    module.generate(sessions, scale, 7, out=folder)


@pytest.fixture(scope="module")
def dask() -> Iterator[None]:
    """Dask is installed (the ``dask`` extra; CI installs it: scripts/setup-tests.sh).

    Once this module's tests are done, the thread a Dask client leaves in the process (its
    offload pool) is stopped: while it runs, the builds of the tests after these would not
    fork their pools and folder check (:func:`publisher.site.pool.forking`)."""
    present = importlib.util.find_spec("distributed") is not None
    require(present, "Dask is not installed: pip install 'polyglav-publisher[dask]'")
    yield
    utils = sys.modules.get("distributed.utils")
    offload = getattr(utils, "_offload_executor", None)
    if offload is not None:
        offload.shutdown(wait=True)


@pytest.fixture(scope="module")
def source(dask: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An archive as the local tests build: the samples, generated sessions (sub-sessions,
    references, long outputs), a series of two runs (a comparison page); the runs' and the
    sub-sessions' turns record usage (a priced model and an unknown one: tokens and cost on
    their pages, their callers' pages, their index rows and the activity chart); a file
    that does not load and one that is not JSON."""
    root = tmp_path_factory.mktemp("archive")
    _generate(root / "gen", 24, 0.3)
    folder = root / "sessions"
    shutil.copytree(root / "gen" / "sessions", folder)
    copy_samples(folder)
    for path in [*(folder / f"{name}.json" for name in two_runs(folder)), *folder.glob("sub_*")]:
        _record_usage(path)
    (folder / "broken.json").write_text('{"session_name": "broken", "turns": [', "utf-8")
    (folder / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    return folder


USAGE = [
    {"model": "claude-opus-4-6", "input": 1200, "output": 340, "cache_read": 9000},
    {"model": "a-model-no-table-lists", "input": 50, "output": 7},
]
"""What each turn of the two runs requested (issue 29's usage entries)."""


def _record_usage(path: Path) -> None:
    doc = json.loads(path.read_text("utf-8"))
    for turn in doc["turns"]:
        turn["usage"] = USAGE
    path.write_text(json.dumps(doc), "utf-8")


@dataclass(frozen=True, slots=True)
class Local:
    """A local build of :func:`source` (two worker processes)."""

    files: dict[str, str]
    """Every file of the site (path → sha256)."""
    warnings: list[str]
    """What it warned of (the files that do not load first)."""


@pytest.fixture(scope="module")
def local(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Local:
    out = tmp_path_factory.mktemp("local") / "site"
    report = build(source, out, cache_dir=out.parent / "cache", workers=2)
    assert {"broken.json", "binary.json"} <= {f.file_name for f in report.failures}
    assert 'id="spend-h"' in (out / "index.html").read_text("utf-8")  # what was spent shows
    return Local(tree_digest(out), report.warnings)


def _archive(source: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    shutil.copytree(source, folder)
    age(*folder.iterdir())  # long unchanged: an incremental build trusts their stamps
    return folder


def _dask_modules() -> list[str]:
    return sorted(m for m in sys.modules if m.split(".")[0] in {"dask", "distributed"})


APPENDED = "job_20260826_110000_bbbbbb.json"
"""The session :func:`on_a_local_cluster` appends a turn to."""


def on_a_local_cluster(folder: str, out: str, cache: str) -> None:
    """Build ``folder`` on a ``LocalCluster`` of two workers in this process, then again
    after a turn is appended to :data:`APPENDED`; prints what each did as JSON. Run in a
    process of its own: Dask leaves a thread running in the process that used it (its
    offload pool), and then the build's pools and folder check no longer fork."""
    from distributed import LocalCluster

    site, state = Path(out), Path(cache)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster:
        address = cluster.scheduler_address
        report = build(Path(folder), site, cache_dir=state, scheduler=address, tunables=EVERYWHERE)
        first = tree_digest(site)
        path = Path(folder) / APPENDED
        doc = json.loads(path.read_text("utf-8"))
        doc["turns"].append({**doc["turns"][-1], "index": len(doc["turns"]) + 1})
        path.write_text(json.dumps(doc), "utf-8")
        again = build(Path(folder), site, cache_dir=state, scheduler=address, tunables=EVERYWHERE)
    facts = {
        "files": first,
        "warnings": report.warnings,
        "published": report.sessions,
        "rendered": report.sessions_rendered,
        "read_again": again.files_read,
        "appended": tree_digest(site),
    }
    print(json.dumps(facts))


def test_a_local_cluster_builds_every_file_as_the_local_pool(
    source: Path, local: Local, tmp_path: Path
) -> None:
    """Every file as the local pool's, the files that do not load listed as locally; then
    an append on the cluster equals a fresh local build of the appended archive."""
    folder = _archive(source, tmp_path)
    code = "import sys\nfrom tests.test_distributed import on_a_local_cluster as run\nrun(*sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder), str(tmp_path / "site"), str(tmp_path / "cache")],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["files"] == local.files
    assert facts["warnings"] == local.warnings
    assert facts["rendered"] == facts["published"]
    assert facts["read_again"] == 1
    fresh = tmp_path / "fresh"
    build(folder, fresh, cache_dir=tmp_path / "fresh-cache", workers=2)
    assert facts["appended"] == tree_digest(fresh)


def test_without_a_scheduler_dask_is_never_imported(tmp_path: Path) -> None:
    folder = copy_samples(tmp_path / "sessions")
    code = (
        "import sys\n"
        "from publisher.cli import main\n"
        "sys.argv = ['polyglav', 'site', 'build', '--project', sys.argv[1], '--out', "
        "sys.argv[2], '--no-search', '-q']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'dask', 'distributed'}))\n"
    )
    env = python_env()
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder), str(tmp_path / "site")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "site" / "index.html").is_file()


def test_an_unreachable_scheduler_named_by_the_dask_variable_is_one_line_and_exit_1(
    dask: None, tmp_path: Path
) -> None:
    folder = copy_samples(tmp_path / "sessions")
    env = python_env(
        DASK_SCHEDULER_ADDRESS="tcp://127.0.0.1:9",
        DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="1s",
    )
    done = subprocess.run(
        [*SITE_BUILD, str(folder), "--out", str(tmp_path / "site"), "--no-search", "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in lines[0]


# ---- a real scheduler and workers -------------------------------------------------------


class Cluster:
    """A ``dask scheduler`` and ``dask worker`` processes on loopback (no nanny: a worker
    killed stays dead)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.file = folder / "scheduler.json"
        self.scheduler: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []

    def _spawn(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{args[0]}-{len(self.workers)}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(
            [sys.executable, "-m", "dask", *args],
            env=env or python_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.folder,
        )

    def start(self, workers: int = 2, env: dict[str, str] | None = None) -> Cluster:
        self.scheduler = self._spawn(
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(self.file),
        )
        self.wait(lambda: self.file.is_file(), "the scheduler")
        for _ in range(workers):
            self.add_worker(env)
        self.wait(lambda: self.count() >= workers, "the workers")
        return self

    def add_worker(self, env: dict[str, str] | None = None) -> None:
        self.workers.append(
            self._spawn(
                "worker",
                "--scheduler-file",
                str(self.file),
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                env=env,
            )
        )

    @property
    def address(self) -> str:
        return str(json.loads(self.file.read_text())["address"])

    def count(self) -> int:
        from distributed import Client

        with Client(self.address, timeout=10, set_as_default=False) as client:
            return len(client.scheduler_info()["workers"])

    def wait(self, ready: Any, what: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if ready():
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"{what} did not start")

    def close(self) -> None:
        for process in [*self.workers, self.scheduler]:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def cluster(dask: None, tmp_path: Path) -> Iterator[Cluster]:
    folder = tmp_path / "cluster"
    folder.mkdir()
    running = Cluster(folder)
    try:
        yield running.start()
    finally:
        running.close()


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), ("--redact",)], ids=["plain", "redacted"])
def test_a_cluster_builds_every_file_as_a_local_build(
    extra: tuple[str, ...], source: Path, local: Local, tmp_path: Path, cluster: Cluster
) -> None:
    """Through the CLI, with the default tunables (what goes to the cluster is what would
    go to the local pool): plain, and redacted with search on (the scan's redaction records
    and the render's search records travel through the cluster)."""
    folder = _archive(source, tmp_path)
    out = tmp_path / "site"
    options = ("--scheduler", cluster.address, *(extra or ("--no-search",)))
    done = subprocess.run(
        [*SITE_BUILD, str(folder), "--out", str(out), *options],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "broken.json" in done.stderr and "binary.json" in done.stderr
    if not extra:
        assert tree_digest(out) == local.files
        return
    expected = tmp_path / "local"
    report = build(
        folder,
        expected,
        cache_dir=tmp_path / "local-cache",
        workers=2,
        search=True,
        redactor=make_redactor(True, None),
    )
    assert report.search.startswith("built"), report.search
    assert tree_digest(out) == tree_digest(expected)


@pytest.mark.slow
def test_workers_killed_mid_build_are_replaced_and_the_build_is_identical(
    source: Path, local: Local, tmp_path: Path, cluster: Cluster
) -> None:
    folder = _archive(source, tmp_path)
    out = tmp_path / "site"
    seen: list[tuple[str, int]] = []

    def progress(stage: str, done: int, total: int) -> None:
        """At the render's third result: the first worker is killed, a third one joins
        (set up by its first task: it saw none of the build's setup), and once it has, the
        second is killed. The build waits meanwhile, so jobs are left for the new one."""
        seen.append((stage, done))
        if stage == "render" and done == 3:
            first, second = cluster.workers
            first.send_signal(signal.SIGKILL)
            first.wait()
            cluster.add_worker()
            cluster.wait(lambda: cluster.count() == 2, "the third worker")
            second.send_signal(signal.SIGKILL)
            second.wait()

    report = build(
        folder,
        out,
        cache_dir=tmp_path / "cache",
        scheduler=cluster.address,
        tunables=EVERYWHERE,
        progress=progress,
    )
    assert [w.poll() is None for w in cluster.workers] == [False, False, True]
    assert cluster.count() == 1
    assert ("render", 4) in seen  # the kills came before the render's end
    assert report.sessions_rendered == report.sessions
    assert tree_digest(out) == local.files


@pytest.mark.slow
def test_a_scheduler_stopped_mid_build_is_one_line_no_torn_page_and_the_next_build_completes(
    source: Path, local: Local, tmp_path: Path, cluster: Cluster
) -> None:
    folder = _archive(source, tmp_path)
    out, cache = tmp_path / "site", tmp_path / "cache"

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "render" and done == 3 and cluster.scheduler is not None:
            cluster.scheduler.send_signal(signal.SIGKILL)
            cluster.scheduler.wait()

    started = time.monotonic()
    with pytest.raises(Exception) as raised:
        build(
            folder,
            out,
            cache_dir=cache,
            scheduler=cluster.address,
            tunables=EVERYWHERE,
            progress=progress,
        )
    took = time.monotonic() - started
    assert exit_status(raised.value) == 1, raised.value
    message = describe(raised.value)
    assert "\n" not in message and "lost the Dask scheduler" in message, message
    assert took < 120
    for worker in cluster.workers:  # what they were running when it stopped is written
        worker.kill()
        worker.wait()
    # No torn page: every page is whole (each written to a temporary file, then moved).
    for page in out.rglob("*.html"):
        assert page.read_bytes().rstrip().endswith(b"</html>"), page
    build(folder, out, cache_dir=cache, workers=2)
    assert tree_digest(out) == local.files


@pytest.mark.slow
def test_a_worker_of_another_publisher_refuses_with_a_clear_message(
    source: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(
        ROOT / "publisher", other / "publisher", ignore=shutil.ignore_patterns("__pycache__")
    )
    init = other / "publisher" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "9.9.9+other-'))
    (tmp_path / "cluster").mkdir()
    env = dict(os.environ, PYTHONPATH=str(other))
    cluster = Cluster(tmp_path / "cluster")
    try:
        cluster.start(workers=1, env=env)
        folder = _archive(source, tmp_path)
        done = subprocess.run(
            [*SITE_BUILD, str(folder), "--out", str(tmp_path / "site"), "--no-search", "-q"],
            env=python_env(DASK_SCHEDULER_ADDRESS=cluster.address),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        cluster.close()
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "runs polyglav-publisher 9.9.9+other-" in lines[0], lines[0]
    assert "install the same publisher on every worker" in lines[0]


def test_a_worker_pricing_with_another_genai_prices_refuses(dask: None, tmp_path: Path) -> None:
    """A worker whose genai-prices is not the build's would price usage otherwise than the
    build's key says: it refuses; a build priced by a ``--prices`` file alone asks nothing."""
    import publisher
    from publisher.site.distributed import Identity
    from publisher.site.staleness import code_key, theme_key
    from publisher.theme import Theme
    from publisher.usage import shipped_version

    theme, code = Theme.load(None), code_key()
    other = Identity(
        "build",
        publisher.__version__,
        code,
        theme,
        theme_key(theme),
        (str(tmp_path),),
        prices="0.0.1+other",
    )
    said = other.refusal(code, "tcp://127.0.0.1:1")
    assert said is not None
    assert "prices with genai-prices" in said and "the build with 0.0.1+other" in said
    assert dataclasses.replace(other, prices=shipped_version()).refusal(code, "w") is None
    assert dataclasses.replace(other, prices="").refusal(code, "w") is None
