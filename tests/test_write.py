"""``atomic_write``: a reader never sees a missing, empty or half-written file."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from publisher.write import WriteError, atomic_write

pytestmark = pytest.mark.unit

CHUNK = 64 * 1024


def version(tag: bytes, chunks: int) -> list[bytes]:
    """A file of ``chunks`` chunks, every byte telling which version it belongs to."""
    return [tag * CHUNK for _ in range(chunks)]


def test_a_reader_during_a_rewrite_sees_the_whole_old_file(tmp_path: Path) -> None:
    """Read the target between every chunk of a rewrite (the chunks come from a generator,
    so the reads happen while atomic_write is writing): each read gets the complete old
    file; once it returns, the complete new one."""
    target = tmp_path / "page.html"
    old = version(b"o", 16)
    atomic_write(target, old)
    seen: list[bytes | None] = []

    def chunks() -> Iterator[bytes]:
        for chunk in version(b"n", 16):
            try:
                seen.append(target.read_bytes())
            except FileNotFoundError:
                seen.append(None)
            yield chunk

    assert atomic_write(target, chunks()) == 16 * CHUNK
    assert len(seen) == 16
    bad = [i for i, data in enumerate(seen) if data != b"".join(old)]
    assert bad == [], f"reads during the rewrite saw a missing or partial file at chunks {bad}"
    assert target.read_bytes() == b"n" * 16 * CHUNK


def test_an_open_reader_keeps_the_old_file_and_the_target_is_a_new_inode(tmp_path: Path) -> None:
    """A reader that opened the file before a rewrite reads the old bytes to the end (the
    new file is moved into place, never written through the old one)."""
    target = tmp_path / "page.html"
    atomic_write(target, ["first version\n" * 1000])
    before = target.stat().st_ino
    with target.open("rb") as reader:
        head = reader.read(100)
        atomic_write(target, ["second\n" * 3000])
        rest = reader.read()
    assert head + rest == b"first version\n" * 1000
    assert target.stat().st_ino != before
    assert target.read_bytes() == b"second\n" * 3000


def test_concurrent_readers_see_only_whole_versions(tmp_path: Path) -> None:
    """Large rewrites back to back while a thread reads the file in a loop: every read is
    one whole version, never nothing, empty or a mix."""
    target = tmp_path / "big.html"
    versions = {tag: b"".join(version(tag, 64)) for tag in (b"a", b"b")}  # 4 MiB each
    atomic_write(target, [versions[b"a"]])
    stop = threading.Event()
    problems: list[str] = []
    reads = [0]

    def reader() -> None:
        while not stop.is_set():
            try:
                data = target.read_bytes()
            except FileNotFoundError:
                problems.append("missing")
                continue
            reads[0] += 1
            if data not in (versions[b"a"], versions[b"b"]):
                problems.append(f"{len(data)} bytes, not one whole version")

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(20):
            atomic_write(target, version(b"ab"[i % 2 : i % 2 + 1], 64))
    finally:
        stop.set()
        thread.join()
    assert reads[0] > 0
    assert problems == [], problems[:5]


def test_a_failed_rewrite_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    atomic_write(target, ["the good version\n"])

    def failing() -> Iterator[str]:
        yield "half of a new"
        raise OSError(28, os.strerror(28))

    with pytest.raises(WriteError, match=r"page\.html"):
        atomic_write(target, failing())
    assert target.read_text() == "the good version\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]
