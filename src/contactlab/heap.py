"""The C heap kept between time steps, written once (issue 11).

A step's compiled kernels allocate and free the same few megabytes every step (a settling 500-box
pile's: ~2.3 MB). With glibc's defaults the freed top of the heap goes back to the operating system
at the end of each step (``brk`` down: free space there above ``M_TRIM_THRESHOLD``, a threshold
glibc raises only to twice the largest ``mmap``-ed block it has freed), and the next step takes it
back one page fault at a time: hundreds to thousands of faults a step on large piles, none left
after (docs/benchmarks-tuning.md). :func:`keep_freed_memory` sets glibc's thresholds once
per process so that freed memory up to :data:`TRIM_THRESHOLD` stays in the process for the next
step, and blocks up to :data:`MMAP_THRESHOLD` (glibc's largest allowed) come from the heap, not from
``mmap``. The cost: up to :data:`TRIM_THRESHOLD` of freed memory stays with the process.

The simulator calls it when built; ``CONTACTLAB_KEEP_HEAP=0`` leaves the allocator as it is. A C
library other than glibc (macOS, musl) is left alone.
"""
from __future__ import annotations

import ctypes
import os

ENV = "CONTACTLAB_KEEP_HEAP"

#: glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3

#: free memory at the top of the heap kept in the process (bytes)
TRIM_THRESHOLD = 256 << 20

#: allocations below this come from the heap (glibc refuses more than 32 MiB on 64-bit systems)
MMAP_THRESHOLD = 32 << 20

_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Set glibc's trim and mmap thresholds (:data:`TRIM_THRESHOLD`, :data:`MMAP_THRESHOLD`) once per
    process; True where they are set (now or before), False where ``CONTACTLAB_KEEP_HEAP=0`` or the
    C library is not glibc. Setting either threshold also ends glibc's own adjustment of both."""
    global _applied
    if _applied is None:
        _applied = False
        if os.environ.get(ENV, "1").strip() not in ("0", "false", "no", "off"):
            try:
                libc = ctypes.CDLL(None)
            except OSError:
                return _applied
            if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):   # musl, macOS
                return _applied
            mallopt = libc.mallopt
            mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            _applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD,
                                                                                         TRIM_THRESHOLD))
    return _applied
