"""Compiled assembly of a step's rows (numba; flags from kernels/_jit.py).

* :func:`frame_rows_csr`: the CSR arrays of rows u.(velocity of P on b - velocity of P on a),
  several directions per point in one pass (a contact's normal and tangents share one pattern),
  entries [u, (P - x) x u] per body (drumwright §III, arechavaleta eq. 7-9), no per-row Python.
* :func:`mass_blocks_kernel`, :func:`tangent_basis_kernel`, :func:`integrate_quat_kernel`: the
  per-body and per-contact array formulas of a step, compiled.
* :func:`delassus_dense` / :func:`delassus_csr`: H W H' for a block-diagonal W = M^-1 (one 6x6
  block per moving body): rows are grouped by the bodies they touch, and each body adds
  (H_b W_b)(H_b)' between the rows that touch it, so only blocks of row pairs sharing a body are
  formed (3x3 per contact pair for the normal + two tangent rows), never the ndof x ndof product.
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit
from ..kernels.dense import centre_of_mass_blocks, dot6, mass_block_times
from ..kernels.pgs_matrix_free import whole_body_blocks
from ..kernels.quaternion import quat_matrix
from ..kernels.tolerances import SLOP_EXCESS
from .joint_kernels import body_forces


@jit
def frame_rows_csr(a, b, dof_start, position, P, U):
    """The rows u.(velocity of P on b - velocity of P on a), one per point and direction, for m
    directions per point at once (U (m, k, 3), e.g. a contact's normal and two tangents) in CSR:
    data (m, nnz), one row of values per direction, and the (indices, indptr) pattern they share
    (the same bodies per point). ``a``/``b`` body indices (-1: world; a body with dof_start -1 is
    fixed: no entries). Entries per body: b: [u, (P - x_b) x u], a: -[u, (P - x_a) x u]
    (drumwright §III, arechavaleta eq. 7-9); bodies in increasing dof order, so rows are canonical.
    The pattern is written for the m directions' rows one block above the other: ``indices``
    (m * nnz) and ``indptr`` (m * k + 1), so data.reshape(-1) with them is the stacked CSR of all
    rows, and ``indices[:nnz]``, ``indptr[:k + 1]`` the pattern of each direction's own rows."""
    m, k = U.shape[0], U.shape[1]
    indptr = np.zeros(m * k + 1, dtype=np.int64)
    for r in range(k):
        da = dof_start[a[r]] if a[r] >= 0 else -1
        db = dof_start[b[r]] if b[r] >= 0 else -1
        indptr[r + 1] = indptr[r] + (6 if da >= 0 else 0) + (6 if db >= 0 else 0)
    nnz = indptr[k]
    for j in range(1, m):
        for r in range(k):
            indptr[j * k + r + 1] = indptr[r + 1] + j * nnz
    data = np.empty((m, nnz))
    indices = np.empty(m * nnz, dtype=np.int64)
    for r in range(k):
        p = indptr[r]
        da = dof_start[a[r]] if a[r] >= 0 else -1
        db = dof_start[b[r]] if b[r] >= 0 else -1
        first, second = (da, db) if da < db else (db, da)
        for s in (first, second):
            if s < 0:
                continue
            if s == db:
                sign, body = 1.0, b[r]
            else:
                sign, body = -1.0, a[r]
            rx, ry, rz = P[r, 0] - position[body, 0], P[r, 1] - position[body, 1], P[r, 2] - position[body, 2]
            for c in range(6):
                indices[p + c] = s + c
            for j in range(m):
                ux, uy, uz = U[j, r, 0], U[j, r, 1], U[j, r, 2]
                data[j, p] = sign * ux
                data[j, p + 1] = sign * uy
                data[j, p + 2] = sign * uz
                data[j, p + 3] = sign * (ry * uz - rz * uy)
                data[j, p + 4] = sign * (rz * ux - rx * uz)
                data[j, p + 5] = sign * (rx * uy - ry * ux)
            p += 6
    for j in range(1, m):
        for p in range(nnz):
            indices[j * nnz + p] = indices[p]
    return data, indices, indptr


@jit
def _row_blocks(indptr, indices, data, nbody):
    """Per body, the rows touching it with their 6 entries: (start (nbody+1), row, vec (m, 6))."""
    n = indptr.size - 1
    of_col = np.empty(6 * nbody, dtype=np.int64)       # column -> body (a gather, not a division per entry)
    for c in range(of_col.size):
        of_col[c] = c // 6
    count = np.zeros(nbody + 1, dtype=np.int64)
    for r in range(n):
        last = -1
        for p in range(indptr[r], indptr[r + 1]):
            b = of_col[indices[p]]
            if b != last:
                count[b + 1] += 1
                last = b
    start = np.cumsum(count)
    m = start[nbody]
    row = np.empty(m, dtype=np.int64)
    vec = np.zeros((m, 6))
    fill = start[:nbody].copy()
    for r in range(n):
        last = -1
        slot = -1
        for p in range(indptr[r], indptr[r + 1]):
            col = indices[p]
            b = of_col[col]
            if b != last:
                slot = fill[b]
                fill[b] += 1
                row[slot] = r
                last = b
            vec[slot, col - 6 * b] += data[p]
    return start, row, vec


@jit
def delassus_dense(indptr, indices, data, W, n, diag):
    """Dense H W H' + diag(diag) for H in CSR (columns = 6 per moving body, W (nbody, 6, 6))."""
    nbody = W.shape[0]
    start, row, vec = _row_blocks(indptr, indices, data, nbody)
    D = np.zeros((n, n))
    g = np.empty(6)
    for b in range(nbody):
        for i in range(start[b], start[b + 1]):
            for c in range(6):
                s = 0.0
                for e in range(6):
                    s += W[b, c, e] * vec[i, e]
                g[c] = s
            ri = row[i]
            for j in range(i, start[b + 1]):        # upper half, mirrored: exactly symmetric
                s = 0.0
                for c in range(6):
                    s += g[c] * vec[j, c]
                D[ri, row[j]] += s
                if j != i:
                    D[row[j], ri] += s
    for r in range(n):
        D[r, r] += diag[r]
    return D


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
def pyramid_csr(indptr, indices, s_data, t_data, d):
    """CSR of the friction-pyramid rows D (contact-major: row i d + k = cos(2 pi k / d) S_i +
    sin(2 pi k / d) T_i) for S and T sharing one pattern (indptr, indices)."""
    k = indptr.size - 1
    nnz = indptr[k]
    data = np.empty(d * nnz)
    ix = np.empty(d * nnz, dtype=indices.dtype)
    ip = np.empty(k * d + 1, dtype=indptr.dtype)
    ip[0] = 0
    c = np.cos(2.0 * np.pi * np.arange(d) / d)
    sn = np.sin(2.0 * np.pi * np.arange(d) / d)
    p = 0
    for r in range(k):
        for j in range(d):
            for q in range(indptr[r], indptr[r + 1]):
                data[p] = c[j] * s_data[q] + sn[j] * t_data[q]
                ix[p] = indices[q]
                p += 1
            ip[r * d + j + 1] = p
    return data, ix, ip


@jit
def rows_times(indptr, indices, data, x):
    """H x for H in CSR."""
    n = indptr.size - 1
    out = np.empty(n)
    for r in range(n):
        acc = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            acc += data[p] * x[indices[p]]
        out[r] = acc
    return out


@jit
def position_targets(Nv, phi, h, slop, zeta):
    """The position correction's right-hand side (Simulator.project_contacts): phi' = phi + h N v+
    per contact (``Nv`` = N v+); a contact is deep where phi' < -slop (1 + SLOP_EXCESS)
    (kernels/tolerances.py: deeper than the slop by more than rounding and the solves' tolerances),
    with c_i = zeta (phi'_i + slop); elsewhere c_i = max(phi'_i + slop, 0) (a contact within that
    tolerance of the slop is held where it is, not pushed in). Returns (c, whether any contact is deep)."""
    c = np.empty(Nv.size)
    deep = False
    limit = -slop * (1.0 + SLOP_EXCESS)
    for i in range(Nv.size):
        p = phi[i] + h * Nv[i]
        if p < limit:
            c[i] = zeta * (p + slop)
            deep = True
        else:
            c[i] = max(p + slop, 0.0)
    return c, deep


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


@jit
def rows_transpose_times(indptr, indices, data, z, ncols):
    """H' z for H in CSR (ncols columns): each row's entries scaled by z_r and scattered, no
    transposed copy of H."""
    out = np.zeros(ncols)
    for r in range(indptr.size - 1):
        zr = z[r]
        if zr != 0.0:
            for p in range(indptr[r], indptr[r + 1]):
                out[indices[p]] += data[p] * zr
    return out


@jit
def tangential_speeds(indptr, indices, s_data, t_data, v):
    """|(S v, T v)| per contact for S and T sharing one CSR pattern (frame_rows_csr)."""
    k = indptr.size - 1
    out = np.empty(k)
    for r in range(k):
        a = 0.0
        b = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            a += s_data[p] * v[indices[p]]
            b += t_data[p] * v[indices[p]]
        out[r] = np.hypot(a, b)
    return out


@jit
def mass_blocks_kernel(live, q, mass, inertia, inv_inertia):
    """(k, 6, 6) blocks diag(m I3, R I R') of M and diag(I3 / m, R I^-1 R') of M^-1 for the bodies
    ``live``, R from each body's unit quaternion (one pass; :func:`body_blocks` from matrices)."""
    k = live.size
    Bm = np.zeros((k, 6, 6))
    Bw = np.zeros((k, 6, 6))
    R = np.empty((3, 3))
    for t in range(k):
        b = live[t]
        quat_matrix(q[b], R)
        Bm[t, 0, 0] = Bm[t, 1, 1] = Bm[t, 2, 2] = mass[b]
        Bw[t, 0, 0] = Bw[t, 1, 1] = Bw[t, 2, 2] = 1.0 / mass[b]
        for i in range(3):
            for j in range(3):
                sm = 0.0
                sw = 0.0
                for p in range(3):
                    for r in range(3):
                        RR = R[i, p] * R[j, r]
                        sm += RR * inertia[b, p, r]
                        sw += RR * inv_inertia[b, p, r]
                Bm[t, 3 + i, 3 + j] = sm
                Bw[t, 3 + i, 3 + j] = sw
    return Bm, Bw


@jit
def tangent_basis_kernel(n):
    """(t1, t2) for unit normals n (k, 3): t1 = normalise(e_y x n), or e_z x n where |n_y| > 0.9,
    t2 = n x t1 (rotation.tangent_basis, compiled)."""
    k = n.shape[0]
    t1 = np.empty((k, 3))
    t2 = np.empty((k, 3))
    for i in range(k):
        nx, ny, nz = n[i, 0], n[i, 1], n[i, 2]
        if abs(ny) > 0.9:          # e_z x n
            ax, ay, az = -ny, nx, 0.0
        else:                      # e_y x n
            ax, ay, az = nz, 0.0, -nx
        s = np.sqrt(ax * ax + ay * ay + az * az)
        ax, ay, az = ax / s, ay / s, az / s
        t1[i, 0], t1[i, 1], t1[i, 2] = ax, ay, az
        t2[i, 0] = ny * az - nz * ay
        t2[i, 1] = nz * ax - nx * az
        t2[i, 2] = nx * ay - ny * ax
    return t1, t2


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


@jit
def _add_dot(v, s, j, r, c, G, vec):
    """v + (W h_min)'h_max of slots s (row r) and j (row c), min/max by row (exactly symmetric)."""
    return v + (dot6(G, s, vec, j) if r <= c else dot6(G, j, vec, s))


@jit
def _merge_two(r, s0, s1, body, start, row, G, vec, diag, out_c, out_v, k):
    """Row r's entries of :func:`delassus_csr` when it touches two bodies (slots s0, s1, bodies in
    increasing order): the merge of the two bodies' sorted row lists, an entry on both summed in slot
    order (the general loop's arithmetic). Returns the new fill position k."""
    i0, e0 = start[body[s0]], start[body[s0] + 1]
    i1, e1 = start[body[s1]], start[body[s1] + 1]
    while i0 < e0 or i1 < e1:
        c0 = row[i0] if i0 < e0 else -1
        c1 = row[i1] if i1 < e1 else -1
        v = 0.0
        if c1 < 0 or (0 <= c0 <= c1):
            c = c0
            v = _add_dot(v, s0, i0, r, c, G, vec)
            i0 += 1
        else:
            c = c1
        if c1 == c:
            v = _add_dot(v, s1, i1, r, c, G, vec)
            i1 += 1
        if c == r:
            v += diag[r]
        out_c[k] = c
        out_v[k] = v
        k += 1
    return k


@jit
def delassus_csr(indptr, indices, data, W, n, diag):
    """Canonical CSR (data, indices, indptr) of H W H' + diag(diag), built row by row: a row's
    entries are the merge of the (sorted) row lists of the bodies it touches, so no sort and no
    duplicate pass. Entry (r, c) is (W h_min)'h_max over the shared bodies with min/max of (r, c):
    exactly symmetric."""
    nbody = W.shape[0]
    start, row, vec = _row_blocks(indptr, indices, data, nbody)
    m = row.size
    body = np.empty(m, dtype=np.int64)
    G = np.empty((m, 6))
    for b in range(nbody):
        for s in range(start[b], start[b + 1]):
            body[s] = b
            for c in range(6):
                acc = 0.0
                for e in range(6):
                    acc += W[b, c, e] * vec[s, e]
                G[s, c] = acc
    # the slots of each row (bodies in increasing order)
    cnt = np.zeros(n + 1, dtype=np.int64)
    for s in range(m):
        cnt[row[s] + 1] += 1
    rs = np.cumsum(cnt)
    fill = rs[:n].copy()
    slots = np.empty(m, dtype=np.int64)
    for s in range(m):
        slots[fill[row[s]]] = s
        fill[row[s]] += 1
    cap = n
    for s in range(m):
        cap += start[body[s] + 1] - start[body[s]]
    out_c = np.empty(cap, dtype=np.int64)
    out_v = np.empty(cap)
    out_p = np.zeros(n + 1, dtype=np.int64)
    head = np.empty(8, dtype=np.int64)
    k = 0
    for r in range(n):
        a, z = rs[r], rs[r + 1]
        nl = z - a
        if nl == 2:         # a contact row (two bodies): a two-pointer merge of their row lists
            k = _merge_two(r, slots[a], slots[a + 1], body, start, row, G, vec, diag, out_c, out_v, k)
            out_p[r + 1] = k
            continue
        if nl > head.size:
            head = np.empty(2 * nl, dtype=np.int64)
        for i in range(nl):
            head[i] = start[body[slots[a + i]]]
        diag_done = False
        while True:
            c = n
            for i in range(nl):
                s = slots[a + i]
                if head[i] < start[body[s] + 1] and row[head[i]] < c:
                    c = row[head[i]]
            if c == n:
                break
            v = 0.0
            for i in range(nl):
                s = slots[a + i]
                if head[i] < start[body[s] + 1] and row[head[i]] == c:
                    v = _add_dot(v, s, head[i], r, c, G, vec)
                    head[i] += 1
            if c == r:
                v += diag[r]
                diag_done = True
            out_c[k] = c
            out_v[k] = v
            k += 1
        if not diag_done:            # a row touching no moving body: only its diagonal
            out_c[k] = r
            out_v[k] = diag[r]
            k += 1
        out_p[r + 1] = k
    return out_v[:k].copy(), out_c[:k].copy(), out_p


@jit
def normal_bias_kernel(phi, h, zeta, slop):
    """Per contact: phi/h for a gap (speculative contact), 0 within the slop, zeta (phi + slop)/h
    beyond it (mechanics/system.py ``normal_bias``)."""
    out = np.empty(phi.size)
    for i in range(phi.size):
        out[i] = phi[i] / h if phi[i] > 0 else 0.0
        if phi[i] < -slop:
            out[i] = zeta * (phi[i] + slop) / h
    return out


@jit
def body_terms(live, dof_start, quaternion, mass, inertia, inv_inertia, gravity, linear_velocity,
               angular_velocity, gyroscopic, f):
    """build_system's per-body terms in one call: (Bm, Bw, v) = the blocks of M and M^-1 of the
    bodies ``live`` (:func:`mass_blocks_kernel`), the velocity vector (:func:`velocity_vector`),
    and f += each body's gravity and gyroscopic force in place (joint_kernels.py ``body_forces``)."""
    Bm, Bw = mass_blocks_kernel(live, quaternion, mass, inertia, inv_inertia)
    v = velocity_vector(dof_start, linear_velocity, angular_velocity)
    body_forces(live, dof_start, mass, inertia, gravity, quaternion, angular_velocity, gyroscopic, f)
    return Bm, Bw, v


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
def free_velocity(Bw, v, f, h):
    """v + h M^-1 f with M^-1 block-diagonal (Bw): :func:`block_times`, so the numbers v_free()
    computes through M^-1's CSR rows."""
    return v + h * block_times(Bw, f)


@jit
def contact_terms(a, b, dof_start, position, P, normal, t1, t2, phi, h, zeta, slop):
    """build_system's per-contact terms in one call: the rows of the normal and the two tangents
    (:func:`frame_rows_csr`, directions in that order) and the normal rows' bias
    (:func:`normal_bias_kernel`)."""
    k = normal.shape[0]
    U = np.empty((3, k, 3))
    for i in range(k):
        for c in range(3):
            U[0, i, c] = normal[i, c]
            U[1, i, c] = t1[i, c]
            U[2, i, c] = t2[i, c]
    data, indices, indptr = frame_rows_csr(a, b, dof_start, position, P, U)
    return data, indices, indptr, normal_bias_kernel(phi, h, zeta, slop)


@jit
def _frame_bodies(ip, ix, nbody):
    """Per contact of :func:`delassus_frames_csr`: its moving bodies (cb (k, 2): increasing, -1 for
    none), and per body the contacts touching it in increasing order with the slot they hold it in
    (start (nbody + 1), contact, slot). ok False where a contact's entries are not none or
    kernels/pgs_matrix_free.py ``whole_body_blocks``, or name a body beyond ``nbody``."""
    k = ip.size - 1
    cb = np.full((k, 2), -1, dtype=np.int64)
    count = np.zeros(nbody + 1, dtype=np.int64)
    ok = True
    for c in range(k):
        e = ip[c + 1] - ip[c]
        if e != 0 and not whole_body_blocks(ip, ix, c):
            ok = False
            break
        for s in range(e // 6):
            b = ix[ip[c] + 6 * s] // 6
            if b >= nbody:
                ok = False
                break
            cb[c, s] = b
            count[b + 1] += 1
        if not ok:
            break
    start = np.cumsum(count)
    occ_c = np.empty(start[nbody], dtype=np.int64)
    occ_s = np.empty(start[nbody], dtype=np.int64)
    if ok:
        fill = start[:nbody].copy()
        for c in range(k):
            for s in range(2):
                b = cb[c, s]
                if b >= 0:
                    occ_c[fill[b]] = c
                    occ_s[fill[b]] = s
                    fill[b] += 1
    return ok, cb, start, occ_c, occ_s


@jit
def _frame_vectors(ip, data, W, cb):
    """Per contact and body slot of :func:`delassus_frames_csr`: its rows' 6-vectors (V (k, 2, 6 m):
    direction j at 6 j) and W_b times them (X, kernels/dense.py ``mass_block_times``); a slot without
    a body (cb -1) is left unwritten (:func:`_frame_neighbours` pairs only the slots that hold one)."""
    m, k = data.shape[0], ip.size - 1
    V = np.empty((k, 2, 6 * m))
    X = np.empty((k, 2, 6 * m))
    plain = centre_of_mass_blocks(W)
    for c in range(k):
        for s in range(2):
            b = cb[c, s]
            if b < 0:
                continue
            p = ip[c] + 6 * s
            for j in range(m):
                for i in range(6):
                    V[c, s, 6 * j + i] = data[j, p + i]
                o = 6 * j
                X[c, s, o], X[c, s, o + 1], X[c, s, o + 2], X[c, s, o + 3], X[c, s, o + 4], X[c, s, o + 5] = \
                    mass_block_times(W, b, plain[b], V[c, s, o], V[c, s, o + 1], V[c, s, o + 2], V[c, s, o + 3],
                                     V[c, s, o + 4], V[c, s, o + 5])
    return V, X


@jit
def _frame_neighbours(c, cb, start, occ_c, occ_s, near, near_s):
    """The contacts sharing a body with contact c (c itself included), increasing, into ``near``;
    near_s[i] = (d's slot of c's first body or -1, of c's second or -1). Returns their count (1
    for a contact touching no moving body: itself, sharing nothing)."""
    b0, b1 = cb[c, 0], cb[c, 1]
    if b0 < 0:
        near[0] = c
        near_s[0, 0] = near_s[0, 1] = -1
        return 1
    i0, e0 = start[b0], start[b0 + 1]
    i1, e1 = (start[b1], start[b1 + 1]) if b1 >= 0 else (0, 0)
    cnt = 0
    while i0 < e0 or i1 < e1:
        d0 = occ_c[i0] if i0 < e0 else -1
        d1 = occ_c[i1] if i1 < e1 else -1
        if d1 < 0 or (0 <= d0 <= d1):
            d = d0
            near_s[cnt, 0] = occ_s[i0]
            i0 += 1
        else:
            d = d1
            near_s[cnt, 0] = -1
        near_s[cnt, 1] = -1
        if d1 == d:
            near_s[cnt, 1] = occ_s[i1]
            i1 += 1
        near[cnt] = d
        cnt += 1
    return cnt


@jit
def _dots3(A, ia, ta, B, ib, tb):
    """The 3 x 3 products A[ia, ta, direction j] . B[ib, tb, direction jj] (6 coordinates each),
    row-major, the nine sums interleaved over the coordinates (nine independent chains of adds, not
    nine in a row, docs/benchmarks-tuning.md)."""
    b00 = b01 = b02 = b10 = b11 = b12 = b20 = b21 = b22 = 0.0
    for a in range(6):
        x0, x1, x2 = A[ia, ta, a], A[ia, ta, 6 + a], A[ia, ta, 12 + a]
        y0, y1, y2 = B[ib, tb, a], B[ib, tb, 6 + a], B[ib, tb, 12 + a]
        b00 += x0 * y0
        b01 += x0 * y1
        b02 += x0 * y2
        b10 += x1 * y0
        b11 += x1 * y1
        b12 += x1 * y2
        b20 += x2 * y0
        b21 += x2 * y1
        b22 += x2 * y2
    return b00, b01, b02, b10, b11, b12, b20, b21, b22


@jit
def delassus_frames_csr(ip, ix, data, W, diag, index):
    """:func:`delassus_csr` for box friction's contact rows [N; S; T] as :func:`frame_rows_csr` writes
    them: three directions per contact sharing one pattern (``ip`` (k + 1), ``ix``: contact c's
    entries, one 6-block of columns per moving body), values ``data`` (3, nnz), row j k + c being
    direction j of contact c: :func:`frame_pattern`, then :func:`frame_values`. Returns (ok, data,
    indices, indptr); ok False (nothing built) where a contact's entries are not whole 6-blocks,
    ``data`` is not three directions or the entries overflow ``index``'s type."""
    ok, cb, nptr, near, near_s, out_p, out_c = frame_pattern(ip, ix, W.shape[0], data.shape[0], index)
    if not ok:
        return False, np.zeros(0), out_c, out_p
    return True, frame_values(ip, data, W, diag, cb, nptr, near, near_s, out_p), out_c, out_p


@jit
def frame_pattern(ip, ix, nbody, m, index):
    """The pattern of :func:`delassus_frames_csr`'s matrix, which depends on the contacts' bodies only
    (a step whose rows touch the bodies the last one's did reuses it: mechanics/system.py
    ``delassus``): per contact its bodies (cb), the contacts sharing a body with it, itself included,
    in increasing order (nptr, near; near_s: the slots of the shared bodies, :func:`_frame_neighbours`)
    and the CSR indptr and indices of the 3 k rows (a row's columns: its contact list for each
    direction in turn; canonical), of ``index``'s type (int32 where they fit, as scipy's constructor
    picks). Returns (ok, cb, nptr, near, near_s, indptr, indices); ok False where a contact's entries
    are not whole 6-blocks of bodies below ``nbody``, ``m`` is not 3 or the entries overflow
    ``index``'s type."""
    k = ip.size - 1
    n = m * k
    ok, cb, start, occ_c, occ_s = _frame_bodies(ip, ix, nbody)
    if not ok or m != 3:
        return _no_pattern(cb, n, index)
    total = k
    for b in range(start.size - 1):
        total += (start[b + 1] - start[b]) ** 2
    nptr = np.zeros(k + 1, dtype=np.int64)
    near = np.empty(total, dtype=np.int64)
    near_s = np.empty((total, 2), dtype=np.int64)
    for c in range(k):
        nptr[c + 1] = nptr[c] + _frame_neighbours(c, cb, start, occ_c, occ_s, near[nptr[c]:], near_s[nptr[c]:])
    if 9 * nptr[k] > np.iinfo(index.dtype).max:
        return _no_pattern(cb, n, index)
    out_p = np.zeros(n + 1, dtype=index.dtype)
    for j in range(3):
        for c in range(k):
            out_p[j * k + c + 1] = out_p[j * k + c] + 3 * (nptr[c + 1] - nptr[c])
    out_c = np.empty(out_p[n], dtype=index.dtype)
    for c in range(k):
        cnt = nptr[c + 1] - nptr[c]
        for j in range(3):
            r = out_p[j * k + c]
            for jj in range(3):
                for i in range(cnt):
                    out_c[r + jj * cnt + i] = near[nptr[c] + i] + jj * k
    return True, cb, nptr, near, near_s, out_p, out_c


@jit
def _no_pattern(cb, n, index):
    """:func:`frame_pattern`'s answer where it builds none: ok False, empty lists, an all-zero indptr
    of the n rows and no indices, of ``index``'s type."""
    e = np.zeros(0, dtype=np.int64)
    return False, cb, e, e, np.zeros((0, 2), dtype=np.int64), np.zeros(n + 1, dtype=index.dtype), \
        np.zeros(0, dtype=index.dtype)


@jit
def frame_values(ip, data, W, diag, cb, nptr, near, near_s, out_p):
    """The values of :func:`delassus_frames_csr`'s matrix on :func:`frame_pattern`'s pattern: all
    3 x 3 entries between two contacts from one interleaved product per shared body (:func:`_dots3`,
    W_b applied once per row and body, :func:`_frame_vectors`); the block between contacts c < d is
    computed once, from c, and written to d's rows too (each contact's rows fill their columns of
    earlier contacts in increasing order, so a cursor per contact says where). Exactly symmetric by
    construction."""
    k = ip.size - 1
    V, X = _frame_vectors(ip, data, W, cb)
    out_v = np.empty(out_p[3 * k])
    cursor = np.zeros(k, dtype=np.int64)     # each contact's next column of an earlier contact
    for c in range(k):
        cnt = nptr[c + 1] - nptr[c]
        p0, p1, p2 = out_p[c], out_p[k + c], out_p[2 * k + c]
        for i in range(cursor[c], cnt):      # contact c itself and those after it
            q = nptr[c] + i
            d = near[q]
            s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = 0.0
            for t in range(2):              # the shared bodies in increasing order
                sd = near_s[q, t]
                if sd < 0:
                    continue
                e00, e01, e02, e10, e11, e12, e20, e21, e22 = _dots3(X, c, t, V, d, sd)
                if d == c:                  # within a contact: (W h_j)'h_jj for j <= jj, mirrored
                    e10, e20, e21 = e01, e02, e12
                s00 += e00
                s01 += e01
                s02 += e02
                s10 += e10
                s11 += e11
                s12 += e12
                s20 += e20
                s21 += e21
                s22 += e22
            if d == c:
                s00 += diag[c]
                s11 += diag[k + c]
                s22 += diag[2 * k + c]
            out_v[p0 + i], out_v[p0 + cnt + i], out_v[p0 + 2 * cnt + i] = s00, s01, s02
            out_v[p1 + i], out_v[p1 + cnt + i], out_v[p1 + 2 * cnt + i] = s10, s11, s12
            out_v[p2 + i], out_v[p2 + cnt + i], out_v[p2 + 2 * cnt + i] = s20, s21, s22
            if d != c:                      # row (jj, d), column (j, c): the same number
                dc = nptr[d + 1] - nptr[d]
                r = cursor[d]
                cursor[d] = r + 1
                r0, r1, r2 = out_p[d] + r, out_p[k + d] + r, out_p[2 * k + d] + r
                out_v[r0], out_v[r0 + dc], out_v[r0 + 2 * dc] = s00, s10, s20
                out_v[r1], out_v[r1 + dc], out_v[r1 + 2 * dc] = s01, s11, s21
                out_v[r2], out_v[r2 + dc], out_v[r2 + 2 * dc] = s02, s12, s22
    return out_v
