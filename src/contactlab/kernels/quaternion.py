"""Rotation of a unit quaternion, compiled (the one copy the numba kernels share; the NumPy
version for Python callers is mechanics/rotation.py ``quat_to_matrix``)."""
from ._jit import jit


@jit
def quat_matrix(q, R):
    """R (3, 3) = rotation matrix of the unit quaternion q = (w, x, y, z)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)
