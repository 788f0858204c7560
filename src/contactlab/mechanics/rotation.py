"""Unit quaternions (w, x, y, z) and rotation matrices; small vectorised helpers."""
from __future__ import annotations

import numpy as np

from . import integrate as _I
from . import rows as _R


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of unit quaternion(s) ``q`` (..., 4) in (w, x, y, z) order -> (..., 3, 3)."""
    q = np.asarray(q, dtype=np.float64)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - w * z)
    R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y)
    R[..., 2, 1] = 2 * (y * z + w * x)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b for (..., 4) quaternions."""
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        aw, ax, ay, az = a
        bw, bx, by, bz = b
        return np.array([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                         aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw])
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=np.float64), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=np.float64), -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def quat_conj(q: np.ndarray) -> np.ndarray:
    q = np.array(q, dtype=np.float64)
    q[..., 1:] *= -1.0
    return q


def quat_from_matrix(R: np.ndarray) -> tuple:
    """The unit quaternion (w, x, y, z) of a rotation matrix R (3, 3), as a tuple (a Body's or Shape's
    ``orientation``), by scipy's Rotation and normalised."""
    from scipy.spatial.transform import Rotation
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q = np.array([w, x, y, z])
    return tuple(q / np.linalg.norm(q))


def quat_from_axis_angle(axis, angle: float) -> np.ndarray:
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def quat_from_rotvec(rv: np.ndarray) -> np.ndarray:
    """exp map of rotation vectors (..., 3) -> unit quaternions (..., 4)."""
    rv = np.asarray(rv, dtype=np.float64)
    th = np.linalg.norm(rv, axis=-1, keepdims=True)
    half = 0.5 * th
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(th > 1e-12, np.sin(half) / np.where(th > 1e-12, th, 1.0), 0.5 - th * th / 48.0)
    return np.concatenate([np.cos(half), s * rv], axis=-1)


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """log map (shortest rotation) of unit quaternions (..., 4) -> rotation vectors (..., 3)."""
    q = np.asarray(q, dtype=np.float64)
    q = np.where(q[..., :1] < 0, -q, q)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    th = 2.0 * np.arctan2(s, q[..., :1])
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(s > 1e-12, th / np.where(s > 1e-12, s, 1.0), 2.0)
    return k * v


def integrate_quat(q: np.ndarray, omega: np.ndarray, h: float) -> np.ndarray:
    """q(t+h) = exp(h omega) q(t) with omega in the world frame (exact for constant omega), normalised;
    compiled (:func:`~.integrate.integrate_quat_kernel`; tests compare it with
    quat_mul(quat_from_rotvec(h omega), q))."""
    q = np.asarray(q, dtype=np.float64)
    w = np.asarray(omega, dtype=np.float64)
    out = _I.integrate_quat_kernel(np.ascontiguousarray(q.reshape(-1, 4)), np.ascontiguousarray(w.reshape(-1, 3)),
                                   float(h))
    return out.reshape(q.shape)


def skew(v: np.ndarray) -> np.ndarray:
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def tangent_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit tangents (t1, t2) with (n, t1, t2) right-handed, for unit normals n (k, 3).

    t1 = normalise(e_y x n) unless n is near +-e_y (then e_z x n is used): a box on a plane
    tilted about e_y gets t1 along the line of steepest descent, so a 4-direction pyramid is
    aligned with the slope.
    """
    return _R.tangent_basis_kernel(np.ascontiguousarray(np.atleast_2d(np.asarray(n, dtype=np.float64))))
