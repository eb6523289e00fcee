"""A large session exports with memory of a small multiple of its size (measured, not timed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import python_env


@pytest.mark.unit
@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "limit"), [("md", 4), ("html", 4)])
def test_large_session_exports_in_a_small_multiple_of_its_size(
    tmp_path: Path, fmt: str, limit: float
) -> None:
    """Both exports stream: the Markdown by construction, the single HTML page by
    rendering each turn when the page template reaches it (it took 7.3× when the page was
    built whole)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    block = ("pytest output line with `ticks` and text\n" * 1000)[:40_000]
    turns = [
        {"index": i, "status": "ok", "parts": [
            {"type": "user", "text": f"step {i}", "timestamp": ""},
            {"type": "tool", "name": "run_command", "input": {"command": f"pytest -k {i}"}, "output": block + str(i),
             "is_error": False, "timestamp": ""},
        ]}
        for i in range(1, 1001)
    ]  # fmt: skip
    doc = {"session_name": "ses_20260101_000000_big001", "session_id": "big001", "turns": turns}
    path = sessions / "ses_20260101_000000_big001.json"
    path.write_text(json.dumps(doc))
    size = path.stat().st_size
    assert size > 40_000_000
    out = tmp_path / f"out.{fmt}"
    used = peak_used(
        "import runpy\nimport publisher.cli\n",
        f"sys.argv = ['polyglav', 'export', '#big001', '--project', {str(sessions)!r}, '--out', {str(out)!r}, '--format', {fmt!r}]\n"
        "try:\n    runpy.run_module('publisher', run_name='__main__')\nexcept SystemExit:\n    pass\n",
    )
    assert out.stat().st_size > size * 0.9
    print(f"{fmt} export of {size:,} bytes used {used / size:.2f}× its size")
    assert used < limit * size, f"{fmt} export used {used / size:.1f}× the file size"


@pytest.mark.site
@pytest.mark.slow
@pytest.mark.parametrize("keep_budget", [None, 0], ids=["default", "over-keep-budget"])
def test_long_session_site_build_holds_one_page_at_a_time(
    tmp_path: Path, keep_budget: int | None
) -> None:
    """A 3,000-turn session builds without holding its whole HTML (or its cache) in memory.

    Its turn fragments go to the on-disk fragment file as they are rendered and are read
    back a page at a time; when the build held them all, then their JSON, this took 6.1×
    the file size (3.3× with the spool; 2.3× now that the render takes the session the
    scan parsed instead of parsing the file again). What is left is mostly the parse: the
    file's text and its JSON values. ``over-keep-budget``: the file counts as larger than
    the budget for keeping scanned sessions (``Tunables.keep_scanned_bytes``), as a 100 MB one does;
    being the only file, it is still parsed once (parsed again: 3.0×, against 2.3×).
    """
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    answer = "## Done\n\n- ran the `tests`\n- see [the docs](https://example.org/x)\n\n" + (
        "Prose about the change, with *emphasis* and more words. " * 20
    )
    turns = [
        {"index": i, "status": "ok", "started_at": "2026-01-01T00:00:00Z", "parts": [
            {"type": "user", "text": f"step {i}: run it", "timestamp": ""},
            {"type": "tool", "name": "run_command", "input": {"command": f"pytest -k {i}"},
             "output": f"line {i} of the log\n" * 180, "is_error": False, "timestamp": ""},
            {"type": "text", "text": answer, "timestamp": ""},
        ]}
        for i in range(1, 3001)
    ]  # fmt: skip
    doc = {"session_name": "ses_20260101_000000_long01", "session_id": "long01", "turns": turns}
    path = sessions / "ses_20260101_000000_long01.json"
    path.write_text(json.dumps(doc, indent=1))
    size = path.stat().st_size
    assert size > 12_000_000
    out = tmp_path / "site"
    used = peak_used(
        "from pathlib import Path\n"
        "from publisher.site.build import BuildOptions, build_site\n"
        "from publisher.site.context import Tunables\n"
        + (
            f"tunables = Tunables(keep_scanned_bytes={keep_budget})\n"
            if keep_budget is not None
            else "tunables = Tunables()\n"
        ),
        f"report = build_site(BuildOptions(Path({str(sessions)!r}), Path({str(out)!r}), search=False, workers=1, tunables=tunables))\n"
        "assert report.sessions == 1 and not report.failures, report\n",
    )
    pages = list((out / "sessions").glob("*/page-*.html"))
    assert len(pages) >= 9  # split at 150 turns a page
    print(f"site build of {size:,} bytes used {used / size:.2f}× its size")
    assert used < 2.7 * size, f"site build used {used / size:.1f}× the file size"


def peak_used(setup: str, work: str) -> int:
    """Bytes of peak resident memory that ``work`` adds, in a fresh interpreter, after
    ``setup`` (the imports). VmHWM is read before and after; unlike ru_maxrss it is not
    inherited from the parent across exec."""
    probe = (
        "import sys\n"
        "def hwm():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            return int(line.split()[1])\n"
        f"{setup}"
        "base = hwm()\n"
        f"{work}"
        "print(base, hwm(), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=python_env(), capture_output=True, text=True, check=True
    )
    base_kb, peak_kb = map(int, result.stderr.split()[-2:])
    return (peak_kb - base_kb) * 1024


@pytest.mark.unit
def test_large_blocks_are_returned_to_the_system_on_glibc() -> None:
    """The build fixes glibc's mmap threshold (see publisher/site/memory.py), once per process."""
    import platform

    from publisher.site import memory

    took = memory.return_large_blocks()
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert took
    assert memory.return_large_blocks() == took  # idempotent


@pytest.mark.slow
def test_listing_holds_one_session_at_a_time(tmp_path: Path) -> None:
    """``polyglav sessions``, ``history`` (the latest session) and resolving a role read
    every file: they keep what they list of each, not the sessions. Listing an 8 MB session
    beside 41 MB of others took 51.8 MB against 16.2 MB for it alone when the listing kept
    every session (241 MB for the 205 MB output-heavy benchmark archive); 24.2 MB now."""
    from tests.helpers import part, session_doc, turn, write_json

    def write(folder: Path, name: str, turns: int) -> int:
        calls = [
            turn(
                i, part("user", f"go {i}"), part("tool", name="run", input={}, output="x" * 20_000)
            )
            for i in range(1, turns + 1)
        ]
        return write_json(folder / f"{name}.json", session_doc(name, turns=calls)).stat().st_size

    alone, together = tmp_path / "alone", tmp_path / "together"
    alone.mkdir()
    together.mkdir()
    big = write(alone, "ses_20260817_120000_bigbig", 400)
    write(together, "ses_20260817_120000_bigbig", 400)
    rest = sum(write(together, f"ses_20260817_12{i:04d}_sm{i:04d}", 50) for i in range(40))
    setup = "from pathlib import Path\nfrom publisher.archive import Archive\n"
    read_alone = peak_used(setup, f"Archive(Path({str(alone)!r})).listing(workers=1)\n")
    listed = peak_used(setup, f"Archive(Path({str(together)!r})).listing(workers=1)\n")
    print(f"{big / 1e6:.1f} MB alone: {read_alone / 1e6:.1f} MB; 41 MB more: {listed / 1e6:.1f} MB")
    assert read_alone > big  # the session is held while read (this measures something)
    assert listed < read_alone + 0.4 * rest, (read_alone, listed, rest)  # kept: + 0.87 × rest
