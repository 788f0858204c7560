"""The wall clock read from compiled code, so that a compiled step can time one of its parts as the
general stages time it from Python (``StepRecord.solve_time``: the seconds in the solver)."""
from __future__ import annotations

import time
import warnings

import numba
from numba.core.errors import NumbaWarning

from ._jit import jit

# numba notes, when it compiles the object-mode block below, that the block holds the GIL although
# the kernel is nogil (every kernel is, kernels/_jit.py): that is the point of the block, a clock read
warnings.filterwarnings("ignore", message=".*Code running in object mode won.t allow parallel execution",
                        category=NumbaWarning)


@jit
def perf_counter():
    """``time.perf_counter()`` inside a compiled kernel (numba's object mode: the GIL taken and one
    Python call, about a microsecond)."""
    with numba.objmode(t="float64"):
        t = time.perf_counter()
    return t
