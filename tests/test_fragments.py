"""The on-disk turn fragment store: round trip, and every damaged file is an empty cache."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from publisher.render.html import RenderedTurn
from publisher.site.fragments import END, MAGIC, FragmentFile, FragmentWriter

pytestmark = pytest.mark.unit

FRAGMENTS = {
    "k1turn-1": RenderedTurn(html="<section>one</section>\n", files={}),
    "k2turn-2": RenderedTurn(
        html="<section>é \ud800 two 😀</section>\n",
        files={"output-2-1.txt": "x" * 70_000 + "\udfff", "output-2-2.txt": ""},
    ),
    "k3turn-3": RenderedTurn(html="", files={}),
}


def write_store(path: Path) -> None:
    writer = FragmentWriter(path)
    for key, fragment in FRAGMENTS.items():
        writer.add(key, fragment)
        assert writer.read(key) == fragment  # readable back at once, while still writing
    writer.commit()


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.frag"
    write_store(path)
    assert [p.name for p in tmp_path.iterdir()] == ["s.frag"]  # no temp file left
    store = FragmentFile.open(path)
    assert store is not None and len(store) == 3
    for key, fragment in FRAGMENTS.items():
        assert store.get(key) == fragment
    assert store.get("missing") is None
    store.close()
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_abort_leaves_nothing(tmp_path: Path) -> None:
    writer = FragmentWriter(tmp_path / "s.frag")
    writer.add("k", RenderedTurn(html="x"))
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def _damaged(data: bytes) -> list[bytes]:
    index_at, end = struct.unpack("<Q8s", data[-16:])
    assert end == END
    return [
        b"",
        MAGIC,
        data[:-1],  # truncated footer
        data[: len(data) // 2],  # truncated in the blobs
        b"XXXXXXX\n" + data[8:],  # wrong magic
        data[:-8] + b"PGFRAGX\n",  # wrong end marker
        data[:-16] + struct.pack("<Q8s", len(data) + 10, END),  # index past the end
        data[:-16] + struct.pack("<Q8s", 2, END),  # index inside the magic
        data[:index_at] + b"[1, 2]" + data[-16:],  # index not an object
        data[:index_at] + b'{"k": [8, 999999999, []]}' + data[-16:],  # span past the blobs
        data[:index_at] + b'{"k": [0, 3, []]}' + data[-16:],  # span over the magic
        data[:index_at] + b'{"k": [8, -1, []]}' + data[-16:],  # negative length
        data[:index_at] + b'{"k": [8, 1, [[3, 8, 1]]]}' + data[-16:],  # file name not text
        data[:index_at] + b'{"k": [8, 1]}' + data[-16:],  # entry too short
        data[:index_at] + b'{"k": "x"}' + data[-16:],
        data[:index_at] + b"{not json" + data[-16:],
    ]


@pytest.mark.parametrize("case", range(16))
def test_damaged_file_is_an_empty_cache(tmp_path: Path, case: int) -> None:
    good = tmp_path / "good.frag"
    write_store(good)
    bad = tmp_path / "bad.frag"
    bad.write_bytes(_damaged(good.read_bytes())[case])
    assert FragmentFile.open(bad) is None


def test_symlinked_cache_is_not_followed(tmp_path: Path) -> None:
    good = tmp_path / "good.frag"
    write_store(good)
    link = tmp_path / "link.frag"
    link.symlink_to(good)
    assert FragmentFile.open(link) is None
    assert FragmentFile.open(tmp_path / "absent.frag") is None
