"""The write stage: atomic, deterministic file output.

Every file is written to a temporary file in the same folder and moved into place with
``os.replace``, so a reader never sees half a file, a symlink planted at the target is
replaced rather than written through, and a failed write leaves no temp file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

_UMASK: int | None = None


def file_mode() -> int:
    """The mode of a new file under the current umask (0644 under umask 022)."""
    global _UMASK
    if _UMASK is None:
        current = os.umask(0)
        os.umask(current)
        _UMASK = current
    return 0o666 & ~_UMASK


class WriteError(Exception):
    """A file could not be written; the message names it and says why."""


def atomic_write(
    path: Path, chunks: Iterable[str] | Iterable[bytes], *, encoding: str = "utf-8"
) -> int:
    """Write ``chunks`` to ``path`` atomically; returns the number of bytes written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    written = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                data = chunk.encode(encoding) if isinstance(chunk, str) else chunk
                handle.write(data)
                written += len(data)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from exc
        raise
    return written


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` atomically unless ``path`` already holds exactly those bytes."""
    try:
        if not path.is_symlink() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    atomic_write(path, [data])
    return True


def is_inside(path: Path, folder: Path) -> bool:
    """True when ``path`` (resolved) lies in ``folder`` (resolved)."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def prepare_target(root: Path, rel: str) -> Path:
    """``root / rel``, made safe to write: ``rel`` must stay inside ``root``, and a symlink
    planted at any folder along the way is removed (and a real folder made), so that no
    write can go through a link to outside the output folder."""
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
        raise WriteError(f"{rel!r}: refusing an output path outside the site")
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            folder.unlink()
        if not folder.is_dir():
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise WriteError(f"{folder}: cannot create: {exc.strerror or exc}") from exc
    return root / rel
