"""One writer at a time: the lock a build holds on its cache folder.

Two builds of one site at once would write the same pages, fragments and catalog: the
second could remove a folder the first is filling (``fragment: Directory not empty``), or
both could finish and leave a search index that no single build makes. So a build takes an
exclusive ``flock`` on the file ``lock`` of its cache folder (:attr:`.context.CachePaths.lock`)
before it reads anything there, and holds it until it is done. The kernel releases it when
the holder exits, however it exits (``kill -9`` included): a lock is never left behind.

The holder writes its process id into the file, so that a build that finds the lock taken
can say whose it is. It then waits (the default), saying so once through
:attr:`.context.BuildOptions.on_wait`, or, asked not to (``--no-wait``), stops with
:class:`CacheBusy`. ``site watch`` takes the lock for each rebuild (and its search
update) and releases it between them, so a ``site build`` beside a running watcher waits
at most for one rebuild.

Where the operating system has no ``flock`` (Windows), builds are not serialised.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ..archive import ArchiveError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

WaitHook = Callable[[int | None], None]
"""Called once, with the holder's process id (None when it cannot be told), when a build
finds its cache locked and waits for it."""


class CacheBusy(ArchiveError):
    """Another build holds the cache folder and the build was asked not to wait."""


def holder_of(fd: int) -> int | None:
    """The process id the holder of the lock file ``fd`` wrote there (None when there is
    none yet: it has just taken the lock)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@contextlib.contextmanager
def holding(path: Path, *, wait: bool = True, on_wait: WaitHook | None = None) -> Iterator[int]:
    """Hold the lock file ``path`` (made with its folder when missing) while the block
    runs; yields its descriptor (the build's worker processes close their inherited copy:
    :class:`.pool.Crew`). ``wait``: wait for another holder (``on_wait`` is told its pid
    first), else raise :class:`CacheBusy` at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = holder_of(fd)
                if not wait:
                    who = f" (pid {holder})" if holder is not None else ""
                    raise CacheBusy(
                        f"{path.parent}: another build{who} is writing this site's cache; "
                        "try again when it is done, or without --no-wait to wait for it"
                    ) from None
                if on_wait is not None:
                    on_wait(holder)
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield fd
    finally:
        os.close(fd)  # (the lock goes with the last descriptor of it)
