from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from publisher.loader import decode_session_bytes, parse_session_text
from publisher.model import Session

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"


def session_doc(name: str = "ses_20260817_120000_ab12cd", **fields: Any) -> dict[str, Any]:
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


Writer = Callable[..., Path]


def parse_session_bytes(data: bytes, file_name: str) -> Session:
    """The session of a file's bytes, as the loader parses a file named ``file_name``."""
    return parse_session_text(decode_session_bytes(data, file_name), file_name)


@pytest.fixture(autouse=True)
def _cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's site builds keep their cache in its own folder (the default cache folder
    is under ``$XDG_CACHE_HOME``), never in the user's."""
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "proj" / ".polyglav" / "sessions"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def write_session(archive: Path) -> Writer:
    def write(doc: dict[str, Any] | bytes | str, name: str | None = None) -> Path:
        if isinstance(doc, dict):
            name = name or doc["session_name"]
            data = json.dumps(doc, indent=2).encode()
        else:
            data = doc.encode() if isinstance(doc, str) else doc
        assert name is not None
        path = archive / f"{name}.json"
        path.write_bytes(data)
        return path

    return write
