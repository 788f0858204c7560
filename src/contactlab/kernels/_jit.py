"""The one place numba flags are set: every kernel uses ``@jit``."""
import numba

jit = numba.njit(cache=True, nogil=True, fastmath=False)
