"""Three-vector kernels written out on scalars (one place for them): a 3x3 matrix times a vector, the
cross product and the dot product. The compiled joint rows and the collision routines call them
element by element, so that no row view or temporary array is made inside their loops."""
from ._jit import jit


@jit
def mat_vec3(R, x, out):
    """out = R x for a 3x3 matrix R."""
    for i in range(3):
        out[i] = R[i, 0] * x[0] + R[i, 1] * x[1] + R[i, 2] * x[2]


@jit
def cross3(a, b, out):
    """out = a x b."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@jit
def dot3(a, b):
    """a . b of two three-vectors."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
