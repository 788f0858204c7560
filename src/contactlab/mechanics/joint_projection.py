"""Compiled joint projection: the Newton loop of ``Simulator.project_joints`` in one numba call.

Post-stabilisation (arechavaleta §IV, eq. 10 at the position level; drumwright §III's bilateral
rows): the positions x are moved onto the joint manifold err(x) = 0 by Newton steps of minimum
M-norm,

    dx = -W J' (J W J')^+ err,      W = M^-1 with kinematic bodies' blocks zeroed,

where J holds the bilateral rows with a position error (joint anchors and axes, couplings, planar
bodies; :func:`~contactlab.mechanics.joint_kernels.fill_joint_rows`) and, for each joint past one
of its limits by more than ``tol``, its rate row (sign x rate row, error the signed gap). The rows
are those of :func:`~contactlab.mechanics.system.joint_rows` (one place: the same compiled row
writer), J W J' is :func:`~contactlab.mechanics.kernels.delassus_dense`, W from
:func:`~contactlab.mechanics.kernels.body_blocks` and the rotation update x += dx is
:func:`~contactlab.mechanics.kernels._exp_rotate` (exp of the rotation vector), so the
iterates are those of the former per-step Python loop (kept as the reference in
tests/test_joint_projection.py).
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit
from ..kernels.quaternion import quat_matrix
from .joint_kernels import _copy_row, _csr, _WIDTH, fill_joint_rows, row_buffers
from ..kernels.dense import chol_solve
from .kernels import _exp_rotate, block_times, body_blocks, delassus_dense, rows_transpose_times


@jit
def spd_or_least_squares(A, b):
    """Solve A x = b for A = J W J' (symmetric positive semi-definite): by Cholesky when A is
    clearly positive definite (pivots of the factor within 1e-6 of each other, i.e. cond < ~1e12:
    the usual case, far cheaper than an SVD) and the answer is finite, else the minimum-norm least
    squares answer with rcond 1e-12 (redundant or nearly dependent joint rows)."""
    n = b.size
    if n == 0:
        return np.zeros(0)
    ok = True
    try:
        L = np.linalg.cholesky(A)
    except Exception:        # not positive definite
        ok = False
        L = np.zeros((0, 0))
    if ok:
        dmin, dmax = np.inf, 0.0
        for i in range(n):
            d = abs(L[i, i])
            dmin = min(dmin, d)
            dmax = max(dmax, d)
        if dmin > 1e-6 * dmax:
            x = np.empty(n)
            chol_solve(L, n, b, x)
            if np.all(np.isfinite(x)):
                return x
    return np.linalg.lstsq(A, b, rcond=1e-12)[0]


@jit
def displace(dof_start, body_kind, kinematic_code, dx, position, quaternion):
    """x += dx for every moving body that is not kinematic, in place: translation dx[s:s+3], then
    the orientation rotated by the rotation vector dx[s+3:s+6] (s = the body's first dof)."""
    for i in range(dof_start.size):
        s = dof_start[i]
        if s >= 0 and body_kind[i] != kinematic_code:
            for c in range(3):
                position[i, c] += dx[s + c]
            quaternion[i, 0], quaternion[i, 1], quaternion[i, 2], quaternion[i, 3] = _exp_rotate(
                dx[s + 3], dx[s + 4], dx[s + 5], quaternion[i, 0], quaternion[i, 1], quaternion[i, 2], quaternion[i, 3])


@jit
def _mobility(dof_start, body_kind, kinematic_code, mass, inv_inertia, quaternion):
    """(k, 6, 6) blocks diag(I3 / m, R I^-1 R') of M^-1 over the k moving bodies (dof order),
    kinematic bodies' zeroed (system.mobility_blocks, compiled)."""
    nb = dof_start.size
    k = 0
    for i in range(nb):
        if dof_start[i] >= 0:
            k += 1
    R, inv_m, Iinv = np.empty((k, 3, 3)), np.empty(k), np.empty((k, 3, 3))
    kin = np.zeros(k, dtype=np.bool_)
    t = 0
    for i in range(nb):
        if dof_start[i] >= 0:
            quat_matrix(quaternion[i], R[t])
            inv_m[t] = 1.0 / mass[i]
            Iinv[t] = inv_inertia[i]
            kin[t] = body_kind[i] == kinematic_code
            t += 1
    W = body_blocks(R, inv_m, Iinv)
    for t in range(k):
        if kin[t]:
            W[t] = 0.0
    return W


@jit
def _position_rows(joints, dof_start, position, quaternion, lin_vel, ang_vel, planar_reference, h, zeta,
                   bufs, out, e):
    """Write the rows with a position error (finite err: joints, couplings, planar bodies; not the
    kinematic drives nor exact motors) into ``out`` (cols, vals, count) and their errors into e, in
    joint_rows' order. Returns (row count, max |err|)."""
    (a, b, kind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper, mtarget, mforce, follows, ratio,
     special, special_kin, label_base, special_base) = joints
    # the velocities only shape the limit rows' reach, which the projection does not use
    nJ, _, _ = fill_joint_rows(a, b, kind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper, mtarget, mforce,
                               follows, ratio, special, special_kin, label_base, special_base, dof_start, position,
                               quaternion, lin_vel, ang_vel, planar_reference, np.zeros(6 * dof_start.size), h, zeta,
                               bufs)
    Jc, Jv, Jn, _, j_err, _ = bufs[0]
    Pc, Pv, Pn = out
    Pn[:] = 0
    m = 0
    err_max = 0.0
    for r in range(nJ):
        if np.isfinite(j_err[r]):
            _copy_row(Pc, Pv, Pn, m, Jc, Jv, Jn, r, 1.0)
            e[m] = j_err[r]
            err_max = max(err_max, abs(j_err[r]))
            m += 1
    return m, err_max


@jit
def joint_error_kernel(joints, dof_start, position, quaternion, lin_vel, ang_vel, planar_reference):
    """Largest |position error| of the rows with one (limits excluded)."""
    bufs = row_buffers(joints[0].size, joints[13].size)
    mj = bufs[0][0].shape[0]
    out = (np.empty((mj, _WIDTH), dtype=np.int64), np.empty((mj, _WIDTH)), np.zeros(mj, dtype=np.int64))
    _, err_max = _position_rows(joints, dof_start, position, quaternion, lin_vel, ang_vel, planar_reference, 1.0,
                                0.0, bufs, out, np.empty(mj))
    return err_max


@jit
def project_joints_kernel(joints, dof_start, body_kind, kinematic_code, mass, inv_inertia, position, quaternion,
                          lin_vel, ang_vel, planar_reference, tol, max_iter):
    """Newton projection onto the joint manifold (module docstring), positions and quaternions
    updated in place: at most ``max_iter`` steps, stopping when every position error and every
    limit violation is <= tol. Returns the largest |position error| (limits excluded) at the last
    evaluation (before that iteration's step when the iterations run out; 0 if max_iter is 0)."""
    lower, upper = joints[7], joints[8]
    nj = lower.size
    bufs = row_buffers(nj, joints[13].size)
    Rc, Rv, Rn, coord = bufs[3]
    mj = bufs[0][0].shape[0] + 2 * nj          # position rows + a limit row per side and joint
    out = (np.empty((mj, _WIDTH), dtype=np.int64), np.empty((mj, _WIDTH)), np.zeros(mj, dtype=np.int64))
    Pc, Pv, Pn = out
    e = np.empty(mj)
    err_max = 0.0
    for _ in range(max_iter):
        m, err_max = _position_rows(joints, dof_start, position, quaternion, lin_vel, ang_vel, planar_reference,
                                    1.0, 0.0, bufs, out, e)
        # joints past a limit (NaN bounds and coordinates compare False): one more row each, lower first
        worst = err_max
        for k in range(nj):
            worst = max(worst, -(coord[k] - lower[k]) if coord[k] - lower[k] < -tol else 0.0,
                        -(upper[k] - coord[k]) if upper[k] - coord[k] < -tol else 0.0)
        if worst <= tol:
            break
        for side in range(2):
            for k in range(nj):
                gap = coord[k] - lower[k] if side == 0 else upper[k] - coord[k]
                if gap < -tol:
                    _copy_row(Pc, Pv, Pn, m, Rc, Rv, Rn, k, 1.0 if side == 0 else -1.0)
                    e[m] = gap
                    m += 1
        data, indices, indptr = _csr(Pc, Pv, Pn, m)
        W = _mobility(dof_start, body_kind, kinematic_code, mass, inv_inertia, quaternion)
        A = delassus_dense(indptr, indices, data, W, m, np.zeros(m))
        lam = spd_or_least_squares(A, -e[:m])
        g = rows_transpose_times(indptr, indices, data, lam, 6 * W.shape[0])    # J' lam; dx = W J' lam by blocks
        displace(dof_start, body_kind, kinematic_code, block_times(W, g), position, quaternion)
    return err_max
