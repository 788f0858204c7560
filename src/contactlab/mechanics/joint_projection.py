"""Compiled joint projection: the Newton loop of ``Simulator.project_joints`` in one numba call.

Post-stabilisation (arechavaleta §IV, eq. 10 at the position level; drumwright §III's bilateral
rows): the positions x are moved onto the joint manifold err(x) = 0 by Newton steps of minimum
M-norm,

    dx = -W J' (J W J')^+ err,      W = M^-1 with kinematic bodies' blocks zeroed,

where J holds the bilateral rows with a position error (joint anchors and axes, couplings, planar
bodies; :func:`~contactlab.mechanics.joint_kernels.fill_joint_rows`) and, for each joint past one
of its limits by more than ``tol``, its rate row (sign x rate row, error the signed gap). The rows
are those of :func:`~contactlab.mechanics.system.joint_rows` (one place: the same compiled row
writer), J W J' is :func:`~contactlab.mechanics.delassus.delassus_dense` with the rows in the
elimination order of their groups (a joint's rows: the bodies they touch), factored by a block
Cholesky without fill on a tree of joints (:func:`rows_solve`), W from
:func:`~contactlab.mechanics.bodies.body_blocks` and the rotation update x += dx is
the exponential map of :mod:`~contactlab.mechanics.integrate` (exp of the rotation vector), so the
iterates are those of the former per-step Python loop up to round-off (the tests keep that loop
as their reference).
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit
from ..kernels.quaternion import quat_matrix
from .joint_kernels import _copy_row, _csr, _WIDTH, fill_joint_rows, row_buffers
from ..kernels.dense import elimination_steps, grouped_cholesky_solve
from .bodies import block_times, body_blocks
from .delassus import delassus_dense
from .integrate import _exp_rotate
from .rows import rows_transpose_times


@jit
def joint_row_groups(indptr, indices, live):
    """Rows grouped by the moving bodies they touch (columns // 6 with ``live[body]``: bodies whose
    M^-1 block is not zero): rows on the same one or two bodies form one group (a joint's rows and
    its limit rows), a row on more bodies (a coupling) a group of its own. Returns (perm, gstart,
    adj): the rows group by group (perm[gstart[g]:gstart[g + 1]]) and adj (G, G), whether two
    groups share a body (their block of J W J' may be non-zero)."""
    n = indptr.size - 1
    nbody = live.size
    group = np.empty(n, dtype=np.int64)
    keys = np.empty(n, dtype=np.int64)      # per group: its body pair's key (-1: a row on more bodies)
    G = 0
    for r in range(n):
        b1, b2, more = -1, -1, False
        for p in range(indptr[r], indptr[r + 1]):
            b = indices[p] // 6
            if not live[b] or b == b1 or b == b2:
                continue
            if b1 < 0:
                b1 = b
            elif b2 < 0:
                b2 = b
            else:
                more = True
        key = -1 if more else (min(b1, b2) + 1) * (nbody + 1) + max(b1, b2) + 1 if b2 >= 0 else b1 + 1
        g = -1
        if key >= 0:
            if r > 0 and keys[group[r - 1]] == key:      # a joint's rows come one after another
                g = group[r - 1]
            else:
                for c in range(G):
                    if keys[c] == key:
                        g = c
                        break
        if g < 0:
            g = G
            keys[G] = key
            G += 1
        group[r] = g
    gstart = np.zeros(G + 1, dtype=np.int64)   # counting sort: the rows group by group
    for r in range(n):
        gstart[group[r] + 1] += 1
    for g in range(G):
        gstart[g + 1] += gstart[g]
    fill = gstart[:G].copy()
    perm = np.empty(n, dtype=np.int64)
    for r in range(n):
        perm[fill[group[r]]] = r
        fill[group[r]] += 1
    touches = np.zeros((G, nbody), dtype=np.bool_)
    for g in range(G):
        for i in range(gstart[g], gstart[g + 1]):
            r = perm[i]
            for p in range(indptr[r], indptr[r + 1]):
                b = indices[p] // 6
                if live[b]:
                    touches[g, b] = True
    adj = np.zeros((G, G), dtype=np.bool_)
    for b in range(nbody):
        for g in range(G):
            if touches[g, b]:
                for h in range(G):
                    if touches[h, b] and h != g:
                        adj[g, h] = True
    return perm, gstart, adj


row_groups = joint_row_groups     # the former name (not a problem's row_groups), kept for one release


@jit
def grouped_order(indptr, indices, live):
    """The rows of J (CSR) in the elimination order of their groups (:func:`joint_row_groups`,
    :func:`contactlab.kernels.dense.elimination_steps`): (q, gs, nbr, nnb) with row q[i] of J at position i, group s at
    positions gs[s]:gs[s + 1], and its neighbours at elimination nbr[s, :nnb[s]] (later groups,
    by position)."""
    perm, gstart, adj = joint_row_groups(indptr, indices, live)
    order, _, nbr, nnb = elimination_steps(gstart, adj)
    G = order.size
    q = np.empty(perm.size, dtype=np.int64)
    gs = np.empty(G + 1, dtype=np.int64)
    i = 0
    for s in range(G):
        g = order[s]
        gs[s] = i
        for t in range(gstart[g], gstart[g + 1]):
            q[i] = perm[t]
            i += 1
    gs[G] = i
    return q, gs, nbr, nnb


@jit
def rows_solve(indptr, indices, data, W, b, live):
    """lam with (J W J') lam = b for the rows J (CSR; columns 6 per body, W (nbody, 6, 6) the M^-1
    blocks, ``live`` the bodies whose W is not zero): J W J' by the compiled block Delassus with
    J's rows in :func:`grouped_order`, factored by :func:`grouped_cholesky_solve` when it is clearly
    positive definite (the usual case, far cheaper than an SVD), else the minimum-norm least squares
    answer with rcond 1e-12 (redundant or nearly dependent joint rows)."""
    n = b.size
    if n == 0:
        return np.zeros(0)
    q, gs, nbr, nnb = grouped_order(indptr, indices, live)
    ip = np.empty(n + 1, dtype=indptr.dtype)       # J's rows in that order
    ip[0] = 0
    for i in range(n):
        ip[i + 1] = ip[i] + indptr[q[i] + 1] - indptr[q[i]]
    ix = np.empty(ip[n], dtype=indices.dtype)
    dv = np.empty(ip[n])
    bq = np.empty(n)
    for i in range(n):
        r = q[i]
        bq[i] = b[r]
        for t in range(indptr[r + 1] - indptr[r]):
            ix[ip[i] + t] = indices[indptr[r] + t]
            dv[ip[i] + t] = data[indptr[r] + t]
    ok, xq = grouped_cholesky_solve(delassus_dense(ip, ix, dv, W, n, np.zeros(n)), bq, gs, nbr, nnb, 1e-6)
    if ok:
        x = np.empty(n)
        for i in range(n):
            x[q[i]] = xq[i]
        return x
    return np.linalg.lstsq(delassus_dense(indptr, indices, data, W, n, np.zeros(n)), b, rcond=1e-12)[0]


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
        live = np.zeros(W.shape[0], dtype=np.bool_)     # bodies that yield (kinematic ones' W is 0)
        for t in range(W.shape[0]):
            live[t] = W[t, 0, 0] != 0.0
        lam = rows_solve(indptr, indices, data, W, -e[:m], live)
        g = rows_transpose_times(indptr, indices, data, lam, 6 * W.shape[0])    # J' lam; dx = W J' lam by blocks
        displace(dof_start, body_kind, kinematic_code, block_times(W, g), position, quaternion)
    return err_max
