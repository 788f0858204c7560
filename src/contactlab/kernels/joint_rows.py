"""The joint rows of a step eliminated by a Schur complement (arechavaleta eq. 15; drumwright
eq. 8-10): the kernels the compiled jointed steps share, the Stewart-Trinkle step
(:mod:`contactlab.sim.st_kernels`) and the box-friction step with ``joints="schur"``
(:mod:`contactlab.sim.box_joint_kernels`).

With the rows R = [J; H] of a step (J the joints' rows, H the rows the LCP keeps) and W = M^-1,
the mixed problem's blocks are A = J W J', C = J W H', g = J v0 - j_rhs. Eliminating the joint
impulses x = -A^-1 (C z + g) leaves the LCP on H with B - C' A^-1 C and h - C' A^-1 g
(arechavaleta eq. 15). Here A = L L' (:func:`spd_reduce`: MixedLCP._reduce_spd's SPD shortcut, its
symmetry test and rank margin), so that C' A^-1 C = Y'Y and C' A^-1 g = Y' yg with Y = L^-1 C,
yg = L^-1 g, and the recovery is x = -L^-T (Y z + yg) (:func:`back_transpose`).

A kinematic body (a wrist, a palm) is pinned by its velocity rows, one single-entry row a dof
(:func:`pin_rows`): its velocity is known, so those rows and its dofs leave the problem first (the
Schur complement of the pinned rows, exact in exact arithmetic: its block of W is zero and its
prescribed velocity enters v0) and the rows kept (:func:`kept_rows`) are the rest of J. After
the solve, :func:`recover_joint_rows` gives v+ = v0 + W (H' z + J' x) (arechavaleta eq. 13) and
each pinned row's impulse from its body's momentum balance.
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from .dense import csr_times, csr_transpose_times, solve_small
from .factored import dense_csr
from .mixed import symmetric_row_norm

#: MixedLCP's SPD shortcut margin and rank tolerance (problems/mixed.py SPD_RANK_MARGIN, rank_tol's default)
SPD_RANK_MARGIN, RANK_TOL = 100.0, 1e-10


@jit
def stack_csr(parts_p, parts_i, parts_d, counts):
    """One CSR (indptr, indices, data) of CSR parts one above the other; a part with its count but
    an indptr of length 1 stands for that many empty rows (the lambda and motor-slack rows):
    R = [J; H], the joint rows above the rows the eliminated problem keeps."""
    rows = 0
    nnz = 0
    for k in range(len(counts)):
        rows += counts[k]
        nnz += parts_i[k].shape[0]
    ip = np.empty(rows + 1, dtype=np.int64)
    ix = np.empty(nnz, dtype=np.int64)
    dv = np.empty(nnz)
    ip[0] = 0
    r = 0
    p = 0
    for k in range(len(counts)):
        pp, pi, pd = parts_p[k], parts_i[k], parts_d[k]
        for i in range(counts[k]):
            if pp.shape[0] > 1:
                for q in range(pp[i], pp[i + 1]):
                    ix[p] = pi[q]
                    dv[p] = pd[q]
                    p += 1
            r += 1
            ip[r] = p
    return ip, ix, dv


@jit
def spd_reduce(A, C, g):
    """MixedLCP._reduce_spd's factor: (ok, L^-1, Y = L^-1 C, yg = L^-1 g) with A = L L' (so that
    D A^-1 C = Y'Y for D = C' = H W J', and A^-1 [C g] = L^-T [Y yg]); ok False where A is not
    exactly symmetric, not positive definite, or its bound on lambda_min(A), 1 / ||L^-1||_F^2, does
    not beat SPD_RANK_MARGIN * RANK_TOL times the largest row norm of [A C] (the QR branch).

    The loops run over A's envelope (row i from its first nonzero column ``first[i]``; Cholesky
    keeps its fill inside the envelope, George & Liu, Computer Solution of Large Sparse Positive
    Definite Systems, 1981, §4.2) and L^-1's (row i from ``lo[i]``, the least first column among the
    rows it combines): the terms left out are products with an exact zero, so the factor, L^-1 and
    Y are those of the dense loops. A hand's joint rows with the kinematic palm eliminated
    (:func:`pin_rows`) are one band per finger chain, coupled only through the coupling rows."""
    p = A.shape[0]
    n = C.shape[1]
    sym, row0 = symmetric_row_norm(A, C)
    buf = np.zeros(2 * p * p + p * n + p)     # Li, L, Y, yg: views of one allocation
    Li = buf[:p * p].reshape((p, p))
    L = buf[p * p:2 * p * p].reshape((p, p))
    Y = buf[2 * p * p:2 * p * p + p * n].reshape((p, n))
    yg = buf[2 * p * p + p * n:]
    if not sym:
        return False, Li, Y, yg
    ibuf = np.empty(2 * p, dtype=np.int64)
    first = ibuf[:p]
    lo = ibuf[p:]
    for i in range(p):
        f = i
        for j in range(i):
            if A[i, j] != 0.0:
                f = j
                break
        first[i] = f
    for j in range(p):
        fj = first[j]
        s = A[j, j]
        for k in range(fj, j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False, Li, Y, yg
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, p):
            fi = first[i]
            if fi > j:
                continue
            t = A[i, j]
            for k in range(fi if fi > fj else fj, j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    for i in range(p):              # L^-1 row by row: Li[i] = (e_i - sum_k<i L[i, k] Li[k]) / L[i, i]
        m = i
        for k in range(first[i], i):
            if lo[k] < m:
                m = lo[k]
        lo[i] = m
        for k in range(first[i], i):
            lik = L[i, k]
            for j in range(lo[k], k + 1):
                Li[i, j] -= lik * Li[k, j]
        Li[i, i] += 1.0
        for j in range(m, i + 1):
            Li[i, j] /= L[i, i]
    trace_inv = 0.0
    for i in range(p):
        for j in range(lo[i], i + 1):
            trace_inv += Li[i, j] * Li[i, j]
    if not (np.isfinite(trace_inv) and trace_inv > 0.0 and 1.0 / trace_inv > SPD_RANK_MARGIN * RANK_TOL * row0):
        return False, Li, Y, yg
    cp, cj, _ = dense_csr(C)        # C's exact zeros skipped (a term times 0 adds nothing: same bits)
    for i in range(p):
        for k in range(lo[i], i + 1):
            lik = Li[i, k]
            for q in range(cp[k], cp[k + 1]):
                j = cj[q]
                Y[i, j] += lik * C[k, j]
            yg[i] += lik * g[k]
    return True, Li, Y, yg


@jit
def add_gram(M, Y, sign):
    """M += sign * Y'Y in place, each product Y[k, i] Y[k, j] formed once and added to both M[i, j]
    and M[j, i], so M stays exactly symmetric; rows k in order, Y's exact zeros skipped. The Schur
    complement of :func:`spd_reduce`'s factor: B - D A^-1 C = B - Y'Y (sign -1, the maximal call), or
    the joint-space Delassus matrix R Hr^-1 R' = Y'Y (sign +1, the tree call)."""
    p, n = Y.shape
    for k in range(p):
        for i in range(n):
            yki = Y[k, i]
            if yki == 0.0:
                continue
            for j in range(i):
                t = sign * (yki * Y[k, j])
                M[i, j] += t
                M[j, i] += t
            M[i, i] += sign * (yki * yki)


@jit
def back_transpose(Li, t):
    """L^-T t (Li = L^-1 lower triangular, :func:`spd_reduce`'s): with t = Y z + yg, A^-1 (C z + g),
    the joint impulses' recovery x = -L^-T (Y z + yg) of the eliminated rows (arechavaleta eq. 15)."""
    p = t.shape[0]
    out = np.zeros(p)
    for k in range(p):
        tk = t[k]
        for i in range(k + 1):
            out[i] += Li[k, i] * tk
    return out


@jit
def joint_impulses(Li, Y, yg, z):
    """The eliminated joint rows' impulses of the contact answer z: x = -L^-T (Y z + yg) = -A^-1 (C z + g)
    (arechavaleta eq. 15; Li = L^-1 and Y = L^-1 C, yg = L^-1 g as :func:`spd_reduce` leaves them)."""
    nj = yg.shape[0]
    n = z.shape[0]
    t = yg.copy()
    for k in range(nj):
        s = 0.0
        for j in range(n):
            s += Y[k, j] * z[j]
        t[k] += s
    x = back_transpose(Li, t)
    for k in range(nj):
        x[k] = -x[k]
    return x


@jit
def pin_rows(Jp, Ji, Jd, j_rhs, kin, ndof):
    """The kinematic bodies' velocity rows (joint_kernels: v+ of a kinematic body equals its
    velocity, one row a dof with one entry) and what eliminating them leaves: (ok, keep: the other
    joint rows, the prescribed velocity per dof, a mask of the kinematic dofs). ok False where a
    kinematic block (``kin``: body block indices) is not pinned by exactly one single-entry row a dof."""
    nj = j_rhs.shape[0]
    keep = np.ones(nj, dtype=np.bool_)
    vkin = np.zeros(ndof)
    held = np.zeros(ndof, dtype=np.bool_)
    pinned = np.zeros(ndof, dtype=np.int64)
    for b in kin:
        for q in range(6):
            held[6 * b + q] = True
    if kin.shape[0] == 0:
        return False, keep, vkin, held
    for r in range(nj):
        inside = True
        for q in range(Jp[r], Jp[r + 1]):
            if not held[Ji[q]]:
                inside = False
        if not inside:
            continue
        if Jp[r + 1] - Jp[r] != 1 or Jd[Jp[r]] == 0.0:
            return False, keep, vkin, held
        dof = Ji[Jp[r]]
        pinned[dof] += 1
        vkin[dof] = j_rhs[r] / Jd[Jp[r]]
        keep[r] = False
    for i in range(ndof):
        if held[i] and pinned[i] != 1:
            return False, keep, vkin, held
    return True, keep, vkin, held


@jit
def kept_rows(Jp, Ji, Jd, rhs, keep):
    """The CSR rows (and right-hand sides) of J where ``keep``: the joint rows left after
    :func:`pin_rows` took out the kinematic bodies' velocity rows."""
    nk = 0
    nnz = 0
    for r in range(keep.shape[0]):
        if keep[r]:
            nk += 1
            nnz += Jp[r + 1] - Jp[r]
    ip = np.empty(nk + 1, dtype=np.int64)
    ix = np.empty(nnz, dtype=np.int64)
    dv = np.empty(nnz)
    rr = np.empty(nk)
    ip[0] = 0
    k = 0
    p = 0
    for r in range(keep.shape[0]):
        if keep[r]:
            for q in range(Jp[r], Jp[r + 1]):
                ix[p] = Ji[q]
                dv[p] = Jd[q]
                p += 1
            rr[k] = rhs[r]
            k += 1
            ip[k] = p
    return ip, ix, dv, rr


@jit
def recover_joint_rows(z, x, v0, v_unpinned, Rp, Ri, Rd, nj, Mip, Mii, Mid, ndof, elim, keep, held, vkin, Wb, kin,
                       Jp_all, Ji_all, Jd_all):
    """v+ and the joint impulses of an answer z on the rows H with the kept joint rows' impulses x
    (R = [J; H] in CSR (Rp, Ri, Rd), its first ``nj`` rows J): v+ = v0 + M^-1 (H' z + J' x)
    (arechavaleta eq. 13; M^-1 as CSR (Mip, Mii, Mid); a pinned dof keeps its prescribed velocity
    v0). Where rows were pinned (``elim``, :func:`pin_rows`'s ``keep``, ``held``, ``vkin``), each
    pinned row's impulse is its body's momentum balance W_b^-1 (v_b - v_b') - (H' z + J' x)_b with
    v' = ``v_unpinned`` (v0 before the pins) and W_b the body's block of M^-1 (positive definite):
    the returned impulses are the whole J's (J_all, in its row order). Returns (x_all, v_next)."""
    ph = csr_transpose_times(Rp[nj:] - Rp[nj], Ri[Rp[nj]:], Rd[Rp[nj]:], z, ndof)
    pj = csr_transpose_times(Rp[:nj + 1], Ri[:Rp[nj]], Rd[:Rp[nj]], x, ndof)
    for i in range(ndof):
        ph[i] = ph[i] + pj[i]
    mv = csr_times(Mip, Mii, Mid, ph)
    v_next = np.empty(ndof)
    for i in range(ndof):
        v_next[i] = v0[i] + (0.0 if elim and held[i] else 1.0) * mv[i]
    if not elim:
        return x, v_next
    nj_all = keep.shape[0]
    x_all = np.zeros(nj_all)
    k = 0
    for q in range(nj_all):
        if keep[q]:
            x_all[q] = x[k]
            k += 1
    for b in kin:
        p_tot = np.full(6, np.nan)
        solve_small(Wb[b].copy(), vkin[6 * b:6 * b + 6] - v_unpinned[6 * b:6 * b + 6], 6, p_tot)
        for q in range(nj_all):
            if not keep[q]:
                dof = Ji_all[Jp_all[q]]
                if 6 * b <= dof < 6 * b + 6:
                    x_all[q] = (p_tot[dof - 6 * b] - ph[dof]) / Jd_all[Jp_all[q]]
    return x_all, v_next
