"""Memory management of a build: glibc's mmap threshold.

Keep long builds from holding memory they freed (glibc's allocator only).

A build frees many large strings (pages, tool outputs, JSON text). glibc serves blocks
of 128 KB and more with ``mmap`` and returns them on ``free``, but each time such a block
is freed it raises that threshold (up to 32 MB), after which large blocks come from the
heap, where freed space between live blocks is kept, not returned. Over a thousand
sessions a worker's resident memory grows that way (measured at 2,000 sessions: the
largest worker 81-87 MB, 70 MB with a fixed threshold; the build took as long). Fixing the
threshold at its default start value turns the adjustment off. Elsewhere (musl, macOS,
Windows) this does nothing.
"""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD = -3
"""``mallopt`` parameter number (glibc's malloc.h)."""
THRESHOLD = 128 * 1024
"""Blocks of this size and more are mapped and unmapped on their own (glibc's default
starting value, kept fixed)."""


def return_large_blocks() -> bool:
    """Fix glibc's mmap threshold for this process; True when it took effect. Calling it
    again sets the same value (it keeps no flag of its own)."""
    try:
        # The process's own symbols hold libc's: no find_library (it runs ldconfig: 8 ms).
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD) == 1)
