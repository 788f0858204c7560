"""The one place numba flags are set: every kernel uses ``@jit``.

``jit_inline``: the same flags, and numba inlines the function into its compiled callers (its IR,
before typing), for the small helpers a pivot calls every iteration; otherwise each call passes
every array as a seven- to nine-word struct (at n = 8-16 Lemke's per-pivot helper calls were a
third of a pivot, perf). Called from Python it is an ordinary compiled function.
"""
import numba

jit = numba.njit(cache=True, nogil=True, fastmath=False)
jit_inline = numba.njit(cache=True, nogil=True, fastmath=False, inline="always")
