"""The measured code's bytecode, compiled before a benchmark starts its processes.

An installed publisher has its modules compiled (pip compiles them as it installs). A
checkout run where Python writes no bytecode (``PYTHONDONTWRITEBYTECODE``, as on this
project's development machine and on some CI images) compiles again, in every fresh
process, each module whose cached bytecode is missing or older than its source: up to
0.25-0.3 s of a fresh ``polyglav sessions`` of 100,000 sessions, measured with none
cached. The benchmarks that time fresh processes call :func:`compile_source` first, so
that they time the publisher as it runs installed.
"""

from __future__ import annotations

import compileall
from pathlib import Path


def compile_source(folder: Path) -> None:
    """Write the bytecode, for this interpreter, of every module under ``folder`` whose
    bytecode is missing or stale (``compileall`` writes it whatever the environment says).
    Raises SystemExit naming the folder when a module does not compile."""
    if not compileall.compile_dir(folder, quiet=1):
        raise SystemExit(f"{folder}: a module does not compile")
