"""The one place numba flags are set: every kernel uses ``@jit``.

``jit_inline``: the same flags, and numba inlines the function into its compiled callers (its IR,
before typing), for the small helpers a pivot calls every iteration; otherwise each call passes
every array as a seven- to nine-word struct (at n = 8-16 Lemke's per-pivot helper calls were a
third of a pivot, perf). Called from Python it is an ordinary compiled function.

``jit_noraise``: the same flags with numpy's error model: a float division by zero gives inf or nan
instead of raising ZeroDivisionError (kernels never raise; their finiteness checks report it),
and no zero test precedes each division. Lemke's reduced kernel uses it (its divisors are
nonzero by construction: 2-5 % per pivot).
"""
import numba

jit = numba.njit(cache=True, nogil=True, fastmath=False)
jit_inline = numba.njit(cache=True, nogil=True, fastmath=False, inline="always")
jit_noraise = numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
