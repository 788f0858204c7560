"""Compiled constraint rows of a step (numba): contact rows
u.(velocity of P on b - velocity of P on a) with the normal and two tangents of each contact in one
pass (drumwright §III, arechavaleta eqs. 7-9), the friction pyramid's rows, products with CSR rows,
the normal rows' bias and the position correction's right-hand side; :func:`csr_of` wraps a
kernel's CSR arrays as a scipy matrix without re-checking them.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels._jit import jit
from ..kernels.dense import csr_times as rows_times  # noqa: F401  (H x for H in CSR: the step's rows)
from ..kernels.dense import csr_transpose_times as rows_transpose_times  # noqa: F401  (H' z)
from ..kernels.tolerances import SINK_RESTORE, SINK_TARGET, SINK_TRIGGER, SLOP_EXCESS

_MAXPRINT = sp.csr_matrix((0, 1)).maxprint


def csr_of(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """The canonical CSR matrix of arrays a compiled kernel wrote (indices sorted within each row,
    no duplicates, one integer dtype for indices and indptr), taken as they are: scipy's constructor
    re-derives the index dtype and checks the format on every call, and a step builds a dozen.
    The tests check the result against scipy's constructor and its full format check."""
    m = sp.csr_matrix.__new__(sp.csr_matrix)
    m._shape = (int(shape[0]), int(shape[1]))
    m.maxprint = _MAXPRINT
    m.data, m.indices, m.indptr = data, indices, indptr
    # the flags scipy's has_sorted_indices / has_canonical_format setters store (written directly: the
    # setters are three Python calls; were the names to change, scipy would work the flags out itself)
    m._has_sorted_indices = m._has_canonical_format = True
    return m


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
def normal_bias_kernel(phi, h, zeta, slop):
    """Per contact: phi/h for a gap (speculative contact), 0 for a penetration within the slop,
    zeta (phi + slop)/h beyond it (:func:`~contactlab.mechanics.system.normal_bias`).

    No bias within the slop, not even for the depth the rows' cfm leaves at rest (h cfm c_n a step,
    Arechavaleta et al. eq. (16)-(17) with cfm I): a bias that moves every step on resting contacts
    moves the answer along A's small-eigenvalue directions (lambda ~ cfm: a face's load split) by
    bias / (lambda + cfm) and costs the warm start Newton steps (docs/benchmarks-sim.md, fifteenth
    session: drift15b, drift15c). That sink is restored at the position level instead
    (:func:`position_targets`), which leaves q = N v_free + bias as it is."""
    out = np.empty(phi.size)
    for i in range(phi.size):
        out[i] = phi[i] / h if phi[i] > 0 else 0.0
        if phi[i] < -slop:
            out[i] = zeta * (phi[i] + slop) / h
    return out


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
def position_targets(Nv, phi, h, slop, zeta):
    """:func:`position_targets_window` with the sink window SINK_RESTORE (certified steps)."""
    return position_targets_window(Nv, phi, h, slop, zeta, SINK_RESTORE)


@jit
def position_targets_window(Nv, phi, h, slop, zeta, sink_restore):
    """The position correction's right-hand side (Simulator.project_contacts): phi' = phi + h N v+
    per contact (``Nv`` = N v+); a contact is deep where phi' < -slop (1 + SLOP_EXCESS)
    (:data:`contactlab.kernels.tolerances.SLOP_EXCESS`: deeper than the slop by more than rounding
    and the solves' tolerances),
    with c_i = zeta (phi'_i + slop); a contact in the sink window -sink_restore slop <= phi' < 0
    gets c_i = phi'_i + SINK_TARGET slop (restored to the depth SINK_TARGET slop), and the correction
    is asked for (``deep``) where one of them is deeper than SINK_TRIGGER slop
    (:data:`contactlab.kernels.tolerances.SINK_TRIGGER`); elsewhere c_i = max(phi'_i + slop, 0) (a
    contact within that tolerance of the slop is held where it is, not pushed in).

    The sink window is the depth the rows' cfm leaves: with cfm the velocity problem (Arechavaleta et
    al., eq. (16)-(17)) solves (A + cfm I) z + q = w, so a resting contact (w = 0) keeps
    N v+ = -cfm c_n and, with no bias within the slop, sinks h cfm c_n a step for ever (a column's top
    by the sum over its levels). Restoring it here moves positions only: the next step's q = N v_free
    does not depend on a penetration within the slop (``normal_bias_kernel``'s bias is 0 there), so
    the velocity problem, its answer and its warm start stay as they were; and only past a trigger
    depth, so the correction's solve runs once in many steps (docs/benchmarks-sim.md, sixteenth
    session, drift16). ``sink_restore`` 0: no window (the fixed-budget steps, whose sweeps leave
    penetrations far deeper than the window and which have no quiet-scene test: a window there would
    only add corrections). Returns (c, whether any contact is deep or past the sink trigger)."""
    c = np.empty(Nv.size)
    deep = False
    limit = -slop * (1.0 + SLOP_EXCESS)
    window = -sink_restore * slop
    trigger = -SINK_TRIGGER * slop
    target = SINK_TARGET * slop
    for i in range(Nv.size):
        p = phi[i] + h * Nv[i]
        if p < limit:
            c[i] = zeta * (p + slop)
            deep = True
        elif p < 0.0 and p >= window and sink_restore > 0.0:
            c[i] = p + target
            if p < trigger:
                deep = True
        else:
            c[i] = max(p + slop, 0.0)
    return c, deep


@jit
def tangent_basis_kernel(n):
    """(t1, t2) for unit normals n (k, 3): t1 = normalise(e_y x n), or e_z x n where |n_y| > 0.9,
    t2 = n x t1 (rotation.tangent_basis, compiled)."""
    k = n.shape[0]
    t1 = np.empty((k, 3))
    t2 = np.empty((k, 3))
    tangent_basis_into(n, t1, t2)
    return t1, t2


@jit
def tangent_basis_into(n, t1, t2):
    """:func:`tangent_basis_kernel` written into t1, t2 (k, 3) (a caller's packed buffers: no
    allocation)."""
    for i in range(n.shape[0]):
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
