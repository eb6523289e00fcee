"""The write stage: atomic, deterministic file output.

Every file is written to a temporary file in the same folder and moved into place with
``os.replace``, so a reader never sees half a file, a symlink planted at the target is
replaced rather than written through, and a failed write leaves no temp file behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import AnyStr

_TEMP_FLAGS = os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


class WriteError(Exception):
    """A file could not be written; the message names it and says why."""


def open_temp(path: Path, *, readable: bool = False) -> tuple[int, str]:
    """A new temporary file beside ``path`` for an atomic write: (descriptor, its path).

    It is created with mode 0666 and the kernel applies the umask, so the file gets the
    ordinary permissions of a new file (0644 under umask 022) without the process reading
    or caching its umask. ``readable``: opened for reading too."""
    flags = _TEMP_FLAGS | (os.O_RDWR if readable else os.O_WRONLY)
    made = False  # the folder is made when the first try finds it missing, not asked first
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name[:40]}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
        except FileNotFoundError as exc:
            if made:
                raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from exc
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise WriteError(f"{path.parent}: cannot create: {err.strerror or err}") from err
            made = True
        except OSError as exc:
            raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    raise WriteError(f"{path}: cannot write: no free temporary name")


def move_into_place(source: Path, target: Path) -> None:
    """Move ``source`` to ``target`` atomically, also across file systems (a copy to a
    temporary file beside ``target``, then a rename)."""
    try:
        os.replace(source, target)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    with open(source, "rb") as handle:
        atomic_write(target, iter(lambda: handle.read(1 << 20), b""))
    os.unlink(source)


def batches(pieces: Iterable[AnyStr], size: int) -> Iterator[list[AnyStr]]:
    """``pieces`` in runs of at least ``size`` characters or bytes (the last may be
    shorter), to be joined and written a run at a time: fewer, larger writes, and never the
    whole text at once."""
    batch: list[AnyStr] = []
    held = 0
    for piece in pieces:
        batch.append(piece)
        held += len(piece)
        if held >= size:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def atomic_write(
    path: Path, chunks: Iterable[str] | Iterable[bytes], *, encoding: str = "utf-8"
) -> int:
    """Write ``chunks`` to ``path`` atomically; returns the number of bytes written."""
    fd, tmp = open_temp(path)
    written = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                data = chunk.encode(encoding) if isinstance(chunk, str) else chunk
                handle.write(data)
                written += len(data)
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
