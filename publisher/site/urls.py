"""Where each session's pages go: file names safe on Linux, macOS and Windows.

A slug is the session name when that name is already safe everywhere (lowercase letters,
digits, ``_ . -``, no reserved device name, no trailing dot); otherwise a cleaned form
plus a hash of the real name. Two different names therefore never share a slug, even on a
case-insensitive file system, and the slug of a name does not depend on the rest of the
archive (an incremental build can compute it alone).
"""

from __future__ import annotations

import hashlib
import re

SAFE_NAME_RE = re.compile(r"\A[a-z0-9_][a-z0-9_.-]{0,99}\Z")
UNSAFE_CHAR_RE = re.compile(r"[^A-Za-z0-9_-]+")
WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)} | {f"lpt{i}" for i in range(10)}
)


def slug(name: str) -> str:
    """A folder name for the session ``name`` (see module docstring)."""
    stem = name.split(".", 1)[0]
    if SAFE_NAME_RE.match(name) and not name.endswith(".") and stem not in WINDOWS_RESERVED:
        return name
    cleaned = UNSAFE_CHAR_RE.sub("_", name).strip("._- ").lower()[:60] or "session"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{cleaned}-{digest}"


def session_dir(name: str) -> str:
    """Site-relative folder of a session's pages."""
    return f"sessions/{slug(name)}"


def session_page(name: str, page: int = 1) -> str:
    """Site-relative path of page ``page`` of a session."""
    return f"{session_dir(name)}/{'index.html' if page == 1 else f'page-{page}.html'}"
