"""A large session exports with memory of a small multiple of its size (measured, not timed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_large_session_exports_in_a_small_multiple_of_its_size(tmp_path: Path) -> None:
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
    out = tmp_path / "out.md"
    # VmHWM (peak resident memory of this process image), read before and after the
    # export; unlike ru_maxrss it is not inherited from the parent across exec.
    probe = (
        "import runpy, sys\n"
        "def hwm():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            return int(line.split()[1])\n"
        "import publisher.cli\n"
        "base = hwm()\n"
        f"sys.argv = ['polyglav', 'export', '#big001', '--project', {str(sessions)!r}, '--out', {str(out)!r}]\n"
        "try:\n    runpy.run_module('publisher', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print(base, hwm(), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    base_kb, peak_kb = map(int, result.stderr.split()[-2:])
    used = (peak_kb - base_kb) * 1024
    assert out.stat().st_size > size * 0.9
    print(f"export of {size:,} bytes used {used / size:.2f}× its size")
    assert used < 4 * size, f"export used {used / size:.1f}× the file size"
