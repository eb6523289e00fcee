"""Rendered turn fragments of one session, kept on disk between builds and during one.

A long session is rendered turn by turn, then cut into pages by the fragments' sizes, so
every fragment must exist before the first page is written. Held in memory, a session of
thousands of turns would cost its whole HTML several times over (the fragments, the old
cache, its JSON). Instead each fragment goes to a file as soon as it is rendered and is
read back when its page is assembled: a render holds the session and one page at a time.
The file written during the build becomes the next build's cache.

File layout (a format of this module only, never read as code)::

    MAGIC | blobs (UTF-8: each fragment's HTML, then its side files) | index (JSON) | footer

The index maps a fragment's cache key to ``[offset, length, [[name, offset, length], …]]``
of its blobs; the footer is the index's offset (8 bytes, little endian) and ``END``. A file
that does not match, in any way, is an empty cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from pathlib import Path
from typing import Any, Protocol

from ..render.html import RenderedTurn
from ..write import WriteError, open_temp

MAGIC = b"PGFRAG1\n"
END = b"PGFRAGE\n"
_FOOTER = struct.Struct("<Q8s")
SUFFIX = ".frag"
"""File name suffix of a session's fragment file."""

Entry = tuple[int, int, list[tuple[str, int, int]]]


class FragmentSource(Protocol):
    """Where a render finds fragments of the previous build."""

    def get(self, key: str) -> RenderedTurn | None: ...


class FragmentSink(Protocol):
    """Where a render keeps the fragments it made (or reused) until its pages are written."""

    def add(self, key: str, fragment: RenderedTurn) -> None: ...

    def read(self, key: str) -> RenderedTurn: ...


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class FragmentFile:
    """A fragment file of an earlier build, read a fragment at a time."""

    def __init__(self, fd: int, index: dict[str, Entry]) -> None:
        self._fd = fd
        self._index = index

    @classmethod
    def open(cls, path: Path) -> FragmentFile | None:
        """The file at ``path``, or None when it is missing or not a fragment file."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            index = _read_index(fd)
        except (OSError, ValueError, TypeError, KeyError, struct.error):
            index = None
        if index is None:
            os.close(fd)
            return None
        return cls(fd, index)

    def __len__(self) -> int:
        return len(self._index)

    def get(self, key: str) -> RenderedTurn | None:
        entry = self._index.get(key)
        if entry is None:
            return None
        offset, length, files = entry
        try:
            html = _decode(os.pread(self._fd, length, offset))
            texts = {name: _decode(os.pread(self._fd, n, off)) for name, off, n in files}
        except (OSError, UnicodeDecodeError):
            return None
        return RenderedTurn(html=html, files=texts)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _read_index(fd: int) -> dict[str, Entry] | None:
    size = os.fstat(fd).st_size
    if size < len(MAGIC) + _FOOTER.size or os.pread(fd, len(MAGIC), 0) != MAGIC:
        return None
    index_at, end = _FOOTER.unpack(os.pread(fd, _FOOTER.size, size - _FOOTER.size))
    index_end = size - _FOOTER.size
    if end != END or not len(MAGIC) <= index_at <= index_end:
        return None
    raw = json.loads(os.pread(fd, index_end - index_at, index_at))
    if not isinstance(raw, dict):
        return None
    index: dict[str, Entry] = {}

    def span(offset: Any, length: Any) -> tuple[int, int]:
        if not (isinstance(offset, int) and isinstance(length, int)):
            raise ValueError("not a span")
        if offset < len(MAGIC) or length < 0 or offset + length > index_at:
            raise ValueError("span outside the blobs")
        return offset, length

    for key, (offset, length, files) in raw.items():
        html_at, html_len = span(offset, length)
        parts = []
        for name, off, n in files:
            if not isinstance(name, str):
                raise ValueError("file name")
            parts.append((name, *span(off, n)))
        index[key] = (html_at, html_len, parts)
    return index


class FragmentWriter:
    """A new fragment file, written while a session renders.

    Fragments are appended as they come and can be read back at once; :meth:`commit`
    writes the index and moves the file into place (atomically), :meth:`abort` removes it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        fd, self._tmp = open_temp(path, readable=True)
        self._file = os.fdopen(fd, "w+b")
        self._index: dict[str, Entry] = {}
        self._pos = 0
        self._write(MAGIC)

    def _write(self, data: bytes) -> tuple[int, int]:
        try:
            self._file.write(data)
        except OSError as exc:
            self.abort()
            raise WriteError(f"{self.path}: cannot write: {exc.strerror or exc}") from exc
        at = self._pos
        self._pos += len(data)
        return at, len(data)

    def add(self, key: str, fragment: RenderedTurn) -> None:
        html_at, html_len = self._write(_encode(fragment.html))
        files = [(name, *self._write(_encode(text))) for name, text in fragment.files.items()]
        self._index[key] = (html_at, html_len, files)

    def read(self, key: str) -> RenderedTurn:
        offset, length, files = self._index[key]
        self._file.flush()
        fd = self._file.fileno()
        return RenderedTurn(
            html=_decode(os.pread(fd, length, offset)),
            files={name: _decode(os.pread(fd, n, off)) for name, off, n in files},
        )

    def commit(self) -> None:
        index_at, _ = self._write(
            json.dumps(
                {k: [o, n, [list(f) for f in files]] for k, (o, n, files) in self._index.items()},
                ensure_ascii=True,
                separators=(",", ":"),
            ).encode()
        )
        self._write(_FOOTER.pack(index_at, END))
        try:
            self._file.close()
            os.replace(self._tmp, self.path)
        except OSError as exc:
            self.abort()
            raise WriteError(f"{self.path}: cannot write: {exc.strerror or exc}") from exc

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            os.unlink(self._tmp)
