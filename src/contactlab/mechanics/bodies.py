"""Compiled per-body terms of a step (numba): the 6x6 blocks
diag(m I3, R I R') of M and of M^-1, the generalised velocity, gravity and gyroscopic forces (eq. 5's
F_e), the free velocity v + h M^-1 f and the kinetic energy a step's impulses add.
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit
from ..kernels.quaternion import quat_matrix
from .joint_kernels import body_forces


@jit
def body_blocks(R, mass, inertia):
    """(k, 6, 6) blocks diag(m I3, R I R') for k bodies (R (k, 3, 3), inertia (k, 3, 3) body frame)."""
    k = mass.size
    B = np.zeros((k, 6, 6))
    for b in range(k):
        B[b, 0, 0] = B[b, 1, 1] = B[b, 2, 2] = mass[b]
        for i in range(3):
            for j in range(3):
                s = 0.0
                for p in range(3):
                    for q in range(3):
                        s += R[b, i, p] * inertia[b, p, q] * R[b, j, q]
                B[b, 3 + i, 3 + j] = s
    return B


@jit
def mass_blocks_kernel(live, q, mass, inertia, inv_inertia):
    """(k, 6, 6) blocks diag(m I3, R I R') of M and diag(I3 / m, R I^-1 R') of M^-1 for the bodies
    ``live``, R from each body's unit quaternion (one pass; :func:`body_blocks` from matrices)."""
    k = live.size
    work = np.zeros(72 * k + 9)         # M_blocks, W_blocks, R: views of one allocation
    M_blocks = work[:36 * k].reshape((k, 6, 6))
    W_blocks = work[36 * k:72 * k].reshape((k, 6, 6))
    R = work[72 * k:].reshape((3, 3))
    for t in range(k):
        b = live[t]
        quat_matrix(q[b], R)
        M_blocks[t, 0, 0] = M_blocks[t, 1, 1] = M_blocks[t, 2, 2] = mass[b]
        W_blocks[t, 0, 0] = W_blocks[t, 1, 1] = W_blocks[t, 2, 2] = 1.0 / mass[b]
        for i in range(3):
            for j in range(3):
                sm = 0.0
                sw = 0.0
                for p in range(3):
                    for r in range(3):
                        RR = R[i, p] * R[j, r]
                        sm += RR * inertia[b, p, r]
                        sw += RR * inv_inertia[b, p, r]
                M_blocks[t, 3 + i, 3 + j] = sm
                W_blocks[t, 3 + i, 3 + j] = sw
    return M_blocks, W_blocks


@jit
def velocity_vector(dof_start, lin, ang):
    """The generalised velocity: (v, omega) of each body with dofs at its dof_start."""
    n = 0
    for b in range(dof_start.size):
        if dof_start[b] >= 0:
            n = max(n, dof_start[b] + 6)
    out = np.empty(n)
    for b in range(dof_start.size):
        s = dof_start[b]
        if s >= 0:
            for i in range(3):
                out[s + i] = lin[b, i]
                out[s + 3 + i] = ang[b, i]
    return out


@jit
def body_terms(live, dof_start, quaternion, mass, inertia, inv_inertia, gravity, linear_velocity,
               angular_velocity, gyroscopic, f):
    """build_system's per-body terms in one call: (M_blocks, W_blocks, v) = the blocks of M and M^-1
    of the bodies ``live`` (:func:`mass_blocks_kernel`), the velocity vector (:func:`velocity_vector`),
    and f += each body's gravity and gyroscopic force in place
    (:func:`~contactlab.mechanics.joint_kernels.body_forces`)."""
    M_blocks, W_blocks = mass_blocks_kernel(live, quaternion, mass, inertia, inv_inertia)
    v = velocity_vector(dof_start, linear_velocity, angular_velocity)
    body_forces(live, dof_start, mass, inertia, gravity, quaternion, angular_velocity, gyroscopic, f)
    return M_blocks, W_blocks, v


@jit
def block_times(B, x):
    """B x for the block-diagonal matrix of the (k, 6, 6) blocks B (one per moving body, in dof
    order): the sums of :func:`rows_times` on its CSR rows (six entries in column order)."""
    out = np.empty(6 * B.shape[0])
    for t in range(B.shape[0]):
        for i in range(6):
            acc = 0.0
            for j in range(6):
                acc += B[t, i, j] * x[6 * t + j]
            out[6 * t + i] = acc
    return out


@jit
def free_velocity(W_blocks, v, f, h):
    """v + h M^-1 f with M^-1 block-diagonal (W_blocks): :func:`block_times`, so the numbers v_free()
    computes through M^-1's CSR rows."""
    out = block_times(W_blocks, f)      # (the same two roundings a term as v + h * out, in one array)
    for i in range(out.size):
        out[i] = v[i] + h * out[i]
    return out


@jit
def kinetic_gain(indptr, indices, data, after, before, weight):
    """1/2 (a'Ma - b'Mb) with a = weight * after, b = weight * before, M in CSR: the kinetic energy a
    step's impulses add (weight 0 on the dofs left out), one pass over M."""
    g = 0.0
    for r in range(indptr.size - 1):
        wr = weight[r]
        if wr == 0.0:
            continue
        sa = 0.0
        sb = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            c = indices[p]
            wc = data[p] * weight[c]
            sa += wc * after[c]
            sb += wc * before[c]
        g += wr * (after[r] * sa - before[r] * sb)
    return 0.5 * g
