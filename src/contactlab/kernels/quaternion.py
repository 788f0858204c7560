"""Unit quaternions (w, x, y, z), compiled: the one module of the quaternion helpers the numba
kernels share (rotation matrix, Hamilton product, conjugate, each into a caller's array). The NumPy
versions for Python callers (vectorised, allocating) are mechanics/rotation.py's ``quat_to_matrix``,
``quat_mul``, ``quat_conj`` and ``quat_from_matrix``."""
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


@jit
def quat_mul_into(a, b, out):
    """out (4,) = a * b (Hamilton product)."""
    aw, ax, ay, az = a[0], a[1], a[2], a[3]
    bw, bx, by, bz = b[0], b[1], b[2], b[3]
    out[0] = aw * bw - ax * bx - ay * by - az * bz
    out[1] = aw * bx + ax * bw + ay * bz - az * by
    out[2] = aw * by - ax * bz + ay * bw + az * bx
    out[3] = aw * bz + ax * by - ay * bx + az * bw


@jit
def quat_conj_into(q, out):
    """out (4,) = the conjugate (w, -x, -y, -z) of q (the inverse of a unit quaternion)."""
    out[0] = q[0]
    out[1] = -q[1]
    out[2] = -q[2]
    out[3] = -q[3]
