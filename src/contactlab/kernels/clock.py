"""The wall clock read from compiled code, so that a compiled step can time one of its parts as the
general stages time it from Python (``StepRecord.solve_time``: the seconds in the solver).

On Linux the compiled read is a direct call of libc's ``clock_gettime(CLOCK_MONOTONIC)``, the clock
``time.perf_counter()`` reads there, declared by name in the kernel's machine code (resolved when numba
loads the kernel, so the kernel stays in numba's cache). Elsewhere, and in numba versions whose code
generation differs, it is numba's object mode: one Python call with the GIL taken. Object mode's
lifted block is compiled again in every process (numba does not cache it), a start-up cost of the
first compiled step in each run, which the direct call avoids.
"""
from __future__ import annotations

import sys
import time
import warnings

import numba
from numba.core.errors import NumbaWarning

from ._jit import jit

# numba notes, when it compiles the object-mode block below, that the block holds the GIL although
# the kernel is nogil (every kernel is, kernels/_jit.py): that is the point of the block, a clock read
warnings.filterwarnings("ignore", message=".*Code running in object mode won.t allow parallel execution",
                        category=NumbaWarning)

#: Linux's CLOCK_MONOTONIC (<time.h>), the clock of ``time.perf_counter()`` on Linux
CLOCK_MONOTONIC = 1


def monotonic_seconds() -> float:
    """``time.perf_counter()``: in Python this function itself, in compiled code the direct
    ``clock_gettime`` call (module docstring)."""
    return time.perf_counter()


def _direct_clock() -> bool:
    """Whether the compiled read is the direct libc call (Linux on 64-bit: ``struct timespec`` is two
    64-bit integers)."""
    if not sys.platform.startswith("linux") or sys.maxsize < 2 ** 62:
        return False
    try:
        from llvmlite import ir                                   # noqa: F401
        from numba.core import cgutils                            # noqa: F401
        from numba.core.extending import intrinsic, overload      # noqa: F401
    except ImportError:
        return False
    return True


if _direct_clock():
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.core.extending import intrinsic, overload

    @intrinsic
    def _monotonic_ns(typingctx):
        """CLOCK_MONOTONIC in nanoseconds: ``clock_gettime`` declared by name (not by address, so the
        calling kernel can be cached) and called on a stack ``struct timespec``."""
        def codegen(context, builder, signature, args):
            i32, i64 = ir.IntType(32), ir.IntType(64)
            timespec = ir.LiteralStructType([i64, i64])
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [i32, timespec.as_pointer()]),
                                                "clock_gettime")
            ts = cgutils.alloca_once(builder, timespec)
            builder.call(fn, [ir.Constant(i32, CLOCK_MONOTONIC), ts])
            sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
            nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
            return builder.add(builder.mul(sec, ir.Constant(i64, 1_000_000_000)), nsec)
        return types.int64(), codegen

    @overload(monotonic_seconds)
    def _monotonic_seconds_compiled():
        def impl():
            return _monotonic_ns() * 1e-9
        return impl

    @jit
    def perf_counter():
        """``time.perf_counter()`` inside a compiled kernel (the direct ``clock_gettime`` call)."""
        return monotonic_seconds()
else:
    @jit
    def perf_counter():
        """``time.perf_counter()`` inside a compiled kernel (numba's object mode: the GIL taken and one
        Python call, about a microsecond)."""
        with numba.objmode(t="float64"):
            t = time.perf_counter()
        return t
