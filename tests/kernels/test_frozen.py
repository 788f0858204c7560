"""kernels/frozen.py: a plan's arrays as one compiled argument are the arrays themselves (no copy),
nested tuples keep their types, and the fused grasp call reads them as the tuple it replaces."""
import numpy as np

from contactlab.kernels._jit import jit
from contactlab.kernels.frozen import frozen_arrays


@jit
def _read_and_write(fixed, k):
    a, (b, c) = fixed.args
    a[k] += 1.0                 # written through the struct: the caller's array
    return a[k] + b[k, 0] + c[k]


def test_frozen_arrays_share_memory_and_types():
    a = np.arange(3.0)
    b = np.arange(6.0).reshape(3, 2)
    c = np.array([10, 20, 30], dtype=np.int64)
    fixed = frozen_arrays((a, (b, c)))
    assert fixed.args[0] is a and fixed.args[1][1] is c
    assert _read_and_write(fixed, 1) == 2.0 + 2.0 + 20
    assert a[1] == 2.0          # the compiled write landed in the Python array
    b[1, 0] = -5.0              # a Python write is what the compiled code reads next
    assert _read_and_write(fixed, 1) == 3.0 - 5.0 + 20
