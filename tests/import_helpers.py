"""Helpers shared by the importer tests."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from publisher.cli import app
from publisher.loader import read_session
from publisher.model import Session, TextualPart, ToolPart
from tests.helpers import ROOT, build

FIXTURES = ROOT / "tests" / "data" / "import"
runner = CliRunner()


def run_import(agent: str, *sources: Path | str, project: Path) -> tuple[int, str]:
    """``polyglav import AGENT SOURCES --project PROJECT``: (exit code, stderr)."""
    args = ["import", agent, *map(str, sources), "--project", str(project)]
    result = runner.invoke(app, args)
    return result.exit_code, result.stderr


def sessions_dir(project: Path) -> Path:
    return project / ".polyglav" / "sessions"


def snapshot(project: Path) -> dict[str, bytes]:
    """File name → bytes of every session file."""
    return {p.name: p.read_bytes() for p in sorted(sessions_dir(project).glob("*.json"))}


def loaded(project: Path) -> dict[str, Session]:
    """Session name → session, every file loading with the publisher's loader."""
    folder = sessions_dir(project)
    return {p.stem: read_session(p, folder) for p in sorted(folder.glob("*.json"))}


def contents(session: Session) -> list[tuple[str, Any]]:
    """(part type, its text or (input, output, is_error)) of every part, in order."""
    out: list[tuple[str, Any]] = []
    for turn in session.turns:
        for part in turn.parts:
            if isinstance(part, TextualPart):
                out.append((part.type, part.text))
            elif isinstance(part, ToolPart):
                out.append(("tool", (part.name, part.input, part.output, part.is_error)))
            else:
                out.append((part.type, getattr(part, "text", None)))
    return out


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def assert_renders(project: Path, tmp: Path) -> None:
    """Every imported session exports to Markdown and the archive builds as a site."""
    for name in loaded(project):
        result = runner.invoke(
            app, ["export", f"session:{name}", "--project", str(project), "--out", "-"]
        )
        assert result.exit_code == 0, result.stderr
        assert f"# Session `{name}`" in result.stdout
    report = build(sessions_dir(project), tmp / "site")
    assert not report.failures
    assert report.sessions == len(loaded(project))


def quiet_copy(source: Path, target: Path, age: float = 86_400.0) -> Path:
    """``source`` (a file or folder) copied to ``target``, every file modified ``age`` seconds
    ago: a log nobody writes to any more (a recent one may still be running:
    ``claude_code.LIVE_SECONDS``)."""
    if source.is_dir():
        shutil.copytree(source, target)
        files = [p for p in target.rglob("*") if p.is_file()]
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        files = [target]
    stamp = time.time() - age  # not the source's own times: a checkout's are any age
    for path in files:
        os.utime(path, (stamp, stamp))
    return target
