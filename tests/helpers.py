"""Helpers shared by the tests: sample paths, session documents, site builds, the CLI.

Tests use the package's public surface (``build_site``/``BuildOptions``, the CLI, the
exporters, ``atomic_write``, files on disk). The few internals a test must know are named
here once (:data:`RACY_WINDOW_NS`, :data:`SITE_STATE`), so a restructure re-points them in
one place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from publisher.cli import app
from publisher.loader import decode_session_bytes, parse_session_text
from publisher.model import Session
from publisher.render.markdown import export_markdown
from publisher.site import urls
from publisher.site.build import BuildOptions, BuildReport, build_site
from publisher.site.context import CachePaths, Warm

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"

#: Sample sessions that several test files name.
MAIN = "ses_20260817_120000_ab12cd"
REVIEW = "sub_20260817_121500_cd34ef"
SECURITY = "sub_20260817_122000_ef56gh"
NOTES = "release-notes"
JOB = "job_20260826_110230_7f3k2a"

#: CI runs ``bash .ci/run`` with ``CI=true``: there a missing tool fails a test instead of
#: skipping it, and hypothesis uses its "ci" profile (see conftest.py).
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")

#: An mtime (ns) far older than any build: a file stamped so is trusted by the next scan.
OLD_NS = 1_600_000_000_000_000_000


#: The incremental build's racy-stamp window (ns), as docs/site.md promises it: a file written
#: within 2 s of the previous scan is read again even when its size and mtime are unchanged.
#: The tests' one reference to it. Deliberately not read from the build (today
#: ``publisher.site.build.RACY_NS``): a test must fail, not adapt, when the build's window
#: shrinks.
RACY_WINDOW_NS = 2_000_000_000

#: The build state folder the site folder held before issue 10 moved the cache out of the
#: site: now None, and every file under the site folder counts.
SITE_STATE: str | None = None


def require(available: bool, reason: str) -> None:
    """Skip the calling test when something it needs is missing, with ``reason``; in CI,
    fail instead, so a broken setup cannot pass as a skip."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: required there)", pytrace=False)
    pytest.skip(reason)


# ---- session documents ----------------------------------------------------------------


def session_doc(name: str = MAIN, **fields: Any) -> dict[str, Any]:
    """A minimal valid session document; keyword arguments override fields."""
    ident = name.rsplit("_", 1)[-1] if name.split("_", 1)[0] in ("ses", "job", "sub") else ""
    doc: dict[str, Any] = {
        "created_at": "2026-08-17T12:00:00+00:00",
        "errors": [],
        "parent_id": "",
        "permissions": [],
        "role": "",
        "session_id": ident,
        "session_name": name,
        "sub_sessions": [],
        "turns": [],
        "updated_at": "2026-08-17T12:05:15+00:00",
        "version": "0.35.0",
    }
    doc.update(fields)
    return doc


def turn(index: int, *parts: dict[str, Any], status: str = "ok", **fields: Any) -> dict[str, Any]:
    t: dict[str, Any] = {
        "index": index,
        "started_at": "2026-08-17T12:00:00+00:00",
        "ended_at": "2026-08-17T12:00:05+00:00",
        "status": status,
        "model": "llama3.2",
        "provider": "ollama",
        "mode": "build",
        "reasoning": False,
        "parts": list(parts),
    }
    t.update(fields)
    return t


def part(ptype: str, text: str = "", **fields: Any) -> dict[str, Any]:
    p: dict[str, Any] = {"type": ptype, "timestamp": "2026-08-17T12:00:01+00:00"}
    if ptype != "tool":
        p["text"] = text
    p.update(fields)
    return p


def friendly_tools(text: str) -> list[dict[str, object]]:
    """A call of each tool with a friendly view that the samples do not use, ``text`` in
    every string it shows."""
    option = {"label": text, "description": text}
    asked = [{"question": text, "header": text, "options": [option], "multiSelect": True}]
    calls = [
        ("Grep", {"pattern": text, "path": text, "glob": text}),
        ("Glob", {"pattern": text, "path": text}),
        ("WebFetch", {"url": "https://example.org/a b", "prompt": text}),
        ("AskUserQuestion", {"questions": asked}),
        ("ExitPlanMode", {"plan": f"# {text}\n\n- {text}"}),
        ("TodoWrite", {"todos": [{"content": text, "status": "in_progress"}]}),
        ("update_plan", {"explanation": text, "plan": [{"step": text, "status": text}]}),
        ("write_stdin", {"session_id": text, "chars": text}),
        ("exec_command", {"cmd": text, "workdir": text}),
        ("TaskOutput", {"task_id": text, "block": True, "timeout": 120000}),
        ("Skill", {"skill": text, "args": text}),
    ]
    return [part("tool", name=name, input=inp, output=text) for name, inp in calls]


#: The ``write_session`` fixture: writes a document (or raw bytes/text) into the archive.
Writer = Callable[..., Path]


def age(*paths: Path) -> None:
    """Stamp files as long unchanged (:data:`OLD_NS`): the next build trusts their stamps."""
    for path in paths:
        os.utime(path, ns=(OLD_NS, OLD_NS))


def copy_samples(folder: Path, names: Iterable[str] | None = None, *, old: bool = True) -> Path:
    """Copy sample session files (all, or ``names`` without ``.json``) into ``folder``;
    ``old`` stamps them as long unchanged. Returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = (
        sorted(SAMPLES.glob("*.json"))
        if names is None
        else [SAMPLES / f"{name}.json" for name in names]
    )
    for source in sources:
        shutil.copy2(source, folder / source.name)
        if old:
            age(folder / source.name)
    return folder


def write_json(path: Path, doc: dict[str, Any], mtime_ns: int | None = None) -> Path:
    """Write ``doc`` as a session file; with ``mtime_ns``, stamp it so."""
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


# ---- site builds ----------------------------------------------------------------------


DEFAULTS: dict[str, object] = {"search": False, "workers": 1}
"""What :func:`build` passes unless told otherwise (a fixture may set ``tunables``)."""


def build(sessions: Path, out: Path, warm: Warm | None = None, **options: object) -> BuildReport:
    """``build_site`` in this process, without search and with one worker unless asked
    (``warm``: what a long-running caller keeps between builds)."""
    values: dict[str, object] = dict(DEFAULTS)
    values.update(options)
    return build_site(BuildOptions(sessions_dir=sessions, out_dir=out, **values), warm)  # type: ignore[arg-type]


def cache_of(out: Path) -> CachePaths:
    """The default cache folder of the site folder ``out``."""
    return CachePaths.of(BuildOptions(sessions_dir=out, out_dir=out))


def parse_session_bytes(data: bytes, file_name: str) -> Session:
    """The session of a file's bytes, as the loader parses a file named ``file_name``."""
    return parse_session_text(decode_session_bytes(data, file_name), file_name)


def export_markdown_text(session: Session, redaction: str | None = None) -> str:
    """The whole Markdown export as one string."""
    return "".join(export_markdown(session, redaction))


def site_files(out: Path) -> list[Path]:
    """Every published file under ``out``, sorted (the build state excluded)."""
    return [
        p
        for p in sorted(out.rglob("*"))
        if p.is_file() and (SITE_STATE is None or p.relative_to(out).parts[0] != SITE_STATE)
    ]


def tree_digest(out: Path) -> dict[str, str]:
    """Relative path → sha256 of every published file."""
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in site_files(out)
    }


def fresh_digest(sessions: Path, out: Path, **options: object) -> dict[str, str]:
    """The published files (path → sha256) of a full build of ``sessions`` into ``out``."""
    build(sessions, out, **options)
    return tree_digest(out)


def page_of(out: Path, name: str, page: int = 1) -> Path:
    """Page ``page`` of session ``name`` in the site folder ``out``."""
    return out / urls.session_page(name, page)


# ---- the CLI --------------------------------------------------------------------------


def polyglav(*args: str) -> Result:
    """Run ``polyglav ARGS`` in this process (typer's CliRunner); returns its result, with
    ``exit_code``, ``stdout`` and ``stderr``."""
    return CliRunner().invoke(app, list(args))


def processes_left(text: str, seconds: float) -> list[int]:
    """The processes whose command line holds ``text`` (a forked worker's is its parent's)
    still there after waiting up to ``seconds`` for them to go (Linux: reads ``/proc``)."""

    def naming() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    deadline = time.monotonic() + seconds
    while naming() and time.monotonic() < deadline:
        time.sleep(0.1)
    return naming()


def python_env(**extra: str) -> dict[str, str]:
    """The environment for ``python -m publisher`` in a subprocess: this checkout's package
    first on the path, whatever the working folder."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def two_runs(folder: Path) -> tuple[str, str]:
    """Two runs of role ``nightly`` in ``folder`` (A, then B): B's turn 1 adds a tool call,
    changes a call's output, turns ``ok`` into ``error`` and has a new error 503."""
    a_name, b_name = "job_20260825_110000_aaaaaa", "job_20260826_110000_bbbbbb"
    a = session_doc(
        a_name,
        role="nightly",
        turns=[
            turn(
                1,
                part("user", "run the tests"),
                part("tool", name="sh", input={"cmd": "pytest"}, output="3 passed"),
                started_at="2026-08-25T11:00:00+00:00",
                ended_at="2026-08-25T11:00:10+00:00",
            )
        ],
    )
    b = session_doc(
        b_name,
        role="nightly",
        turns=[
            turn(
                1,
                part("user", "run the tests"),
                part("tool", name="sh", input={"cmd": "pytest"}, output="2 passed\n1 failed"),
                part("tool", name="sh", input={"cmd": "git log -1"}, output="abc"),
                status="error",
                started_at="2026-08-26T11:00:00+00:00",
                ended_at="2026-08-26T11:00:30+00:00",
            )
        ],
        errors=[
            {
                "code": 503,
                "message": "Service Unavailable",
                "timestamp": "2026-08-26T11:00:20+00:00",
            }
        ],
    )
    (folder / f"{a_name}.json").write_text(json.dumps(a))
    (folder / f"{b_name}.json").write_text(json.dumps(b))
    return a_name, b_name


def event_archive(folder: Path) -> None:
    """Eight runs, run i with i % 3 + 1 errors (codes E0, E1, ...) and one decision
    (denied for odd i, granted for even i); odd runs have role nightly."""
    folder.mkdir()
    for i in range(8):
        name = f"job_2026081{i}_120000_err{i:03d}"
        day = f"2026-08-1{i}T12"
        doc = session_doc(
            name,
            role="nightly" if i % 2 else "",
            created_at=f"{day}:00:00+00:00",
            turns=[
                turn(
                    1,
                    part("user", "go"),
                    started_at=f"{day}:00:00+00:00",
                    ended_at=f"{day}:10:00+00:00",
                )
            ],
            errors=[
                {"code": f"E{j}", "message": f"boom {i}.{j}", "timestamp": f"{day}:0{j}:00+00:00"}
                for j in range(i % 3 + 1)
            ],
            permissions=[
                {
                    "tool": "sh",
                    "action": "run",
                    "decision": "denied" if i % 2 else "granted",
                    "path": "",
                    "timestamp": f"{day}:01:00+00:00",
                }
            ],
        )
        (folder / f"{name}.json").write_text(json.dumps(doc))
