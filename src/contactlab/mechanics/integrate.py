"""Compiled integration of a step (numba): semi-implicit Euler,
x += h v and q <- exp(h omega) q normalised, and each shape's sweep over the step (how far its
points can travel, for the collision margin).
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit


@jit
def _exp_rotate(rx, ry, rz, bw, bx, by, bz):
    """exp(r) * (bw, bx, by, bz) for the rotation vector r, normalised (the series 1/2 - th^2/48 of
    sin(th/2)/th below th = 1e-12): the one orientation update of a step."""
    th = np.sqrt(rx * rx + ry * ry + rz * rz)
    half = 0.5 * th
    s = np.sin(half) / th if th > 1e-12 else 0.5 - th * th / 48.0
    aw, ax, ay, az = np.cos(half), s * rx, s * ry, s * rz
    w = aw * bw - ax * bx - ay * by - az * bz
    x = aw * bx + ax * bw + ay * bz - az * by
    y = aw * by - ax * bz + ay * bw + az * bx
    z = aw * bz + ax * by - ay * bx + az * bw
    nrm = np.sqrt(w * w + x * x + y * y + z * z)
    return w / nrm, x / nrm, y / nrm, z / nrm


@jit
def integrate_quat_kernel(q, omega, h):
    """q(t+h) = exp(h omega) q(t), normalised, for (k, 4) quaternions and world-frame (k, 3) omega
    (rotation.integrate_quat, compiled)."""
    k = q.shape[0]
    out = np.empty((k, 4))
    for i in range(k):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = _exp_rotate(h * omega[i, 0], h * omega[i, 1], h * omega[i, 2],
                                                                 q[i, 0], q[i, 1], q[i, 2], q[i, 3])
    return out


@jit
def advance_state(dof_start, v_next, lin, ang, pos, quat, h):
    """Semi-implicit Euler for every body with dofs: (v, omega) from v_next, x += h v, q <- exp(h omega) q
    normalised (:func:`_exp_rotate`), in place."""
    for b in range(dof_start.size):
        s = dof_start[b]
        if s < 0:
            continue
        for i in range(3):
            lin[b, i] = v_next[s + i]
            ang[b, i] = v_next[s + 3 + i]
            pos[b, i] += h * lin[b, i]
        quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3] = _exp_rotate(h * ang[b, 0], h * ang[b, 1], h * ang[b, 2],
                                                                     quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3])


@jit
def shape_sweep(dof_start, lin, ang, body_radius, shape_body, h):
    """Per shape: (h v_x, h v_y, h v_z, h |omega| r) of its body (zeros for a body without dofs):
    the step's translation and a bound on how far rotation moves its points, from which
    :func:`contactlab.collision.boxes.pair_reach` bounds how far two shapes close in on each other
    and ``shape_reach_of`` how far one shape's points travel."""
    out = np.zeros((shape_body.size, 4))
    for k in range(shape_body.size):
        b = shape_body[k]
        if dof_start[b] >= 0:
            for i in range(3):
                out[k, i] = h * lin[b, i]
            out[k, 3] = h * np.sqrt(ang[b, 0] ** 2 + ang[b, 1] ** 2 + ang[b, 2] ** 2) * body_radius[b]
    return out
