"""The no-slip reduction in the M metric for a small dense mass matrix with no equality rows, its
rows batched (compiled; drumwright Sec. VI, Alg. 2 FIND-INDICES, eq. 45-57): the step of a
kinematic tree in joint coordinates (:mod:`contactlab.sim.tree_kernels`), whose H is dense and
small (a legged robot's 18 coordinates), whose joints are not rows, and whose candidate rows are
the touching contacts' dense tangent rows in joint coordinates.

:func:`dense_metric_chain` is :func:`~contactlab.kernels.metric_chain.noslip_metric_chain` with
J empty and f = 0, and :func:`dense_metric_recover` its
:func:`~contactlab.kernels.metric_chain.recover_metric_step`: the same arithmetic in the same order
for each row (the same bits), with the work arranged for a few dense rows instead of many sparse
ones. The triangular solves y_s = L_M^-1 g_s of all candidate rows, and L_M^-1 U', L_M^-1 p, run
side by side (:func:`rows_lower_solve`: each row's forward substitution is a chain of dependent
subtractions; across rows they are independent, so the inner loop runs over the rows, contiguous in
a transposed work array), and the reflectors of the Householder QR are applied to all those rows
at once (:func:`reflect_rows_transposed`); the rows stay dense (no CSR copy of G, no per-row
scatter, no nonzero masks: a zero block of a row is zero whichever way it is solved, a reflector
whose dot product with a row is zero leaves it as it is), and the reflectors stay unpacked between
the reduction and the recovery.
"""
import numpy as np

from ._jit import jit
from .dense import add_rmatvec
from .householder import _chunk, householder_select
from .mass_factor import mass_lower_solve, mass_matvec, mass_upper_solve


@jit
def _block_zero(G, i, s0, s1):
    """Whether row i of G is zero on s0:s1 (a NaN is not zero)."""
    for t in range(s0, s1):
        if G[i, t] != 0.0:
            return False
    return True


@jit
def rows_lower_solve(Lm, starts, nb, G, XT, c0, scatter):
    """XT[:, c0 + i] = L_M^-1 G[i] for every row i of G (r, m), M = L_M L_M' the block factor of
    :func:`~contactlab.kernels.mass_factor.mass_factor` (starts[:nb + 1] its blocks): per block, a
    row zero on it gives zeros there; otherwise forward substitution, each row's sum in the order of
    :func:`~contactlab.kernels.dense.lower_solve_block`, the rows side by side. ``scatter``: the
    reduction's form (:func:`~contactlab.kernels.metric_chain._lower_solve_csr_row`: a row's zero
    entries read as +0, each entry's product with the reciprocal of L_M's diagonal instead of a
    division); else :func:`~contactlab.kernels.mass_factor.mass_lower_solve`'s (the entries as
    they are, divisions). XT (m, >= c0 + r), transposed: the rows are its columns."""
    r = G.shape[0]
    for b in range(nb):
        s0 = starts[b]
        s1 = starts[b + 1]
        for t in range(s0, s1):
            for i in range(r):
                g = G[i, t]
                XT[t, c0 + i] = 0.0 if scatter and g == 0.0 else g
            for j in range(s0, t):
                lt = Lm[t, j]
                for i in range(r):
                    XT[t, c0 + i] -= lt * XT[j, c0 + i]
            if scatter:
                di = 1.0 / Lm[t, t]
                for i in range(r):
                    XT[t, c0 + i] *= di
            else:
                lt = Lm[t, t]
                for i in range(r):
                    XT[t, c0 + i] /= lt
        for i in range(r):
            if _block_zero(G, i, s0, s1):
                for t in range(s0, s1):
                    XT[t, c0 + i] = 0.0


@jit
def reflect_rows_transposed(vval, vidx, vptr, beta, k, XT, acc):
    """Q' applied to every column of XT (m, c) (H_0 first, then H_1 ... H_{k-1}; Q = H_0 ... H_{k-1}
    of :func:`~contactlab.kernels.householder.householder_select`): per reflector the c dot products
    side by side (each summed over the reflector's support in its order, as
    :func:`~contactlab.kernels.householder.apply_reflectors` sums it), then the update of the columns
    whose dot product is not zero. acc (c,): work."""
    c = XT.shape[1]
    for t in range(k):
        p0 = vptr[t]
        p1 = vptr[t + 1]
        for i in range(c):
            acc[i] = 0.0
        for q in range(p0, p1):
            vq = vval[q]
            iq = vidx[q]
            for i in range(c):
                acc[i] += vq * XT[iq, i]
        bt = beta[t]
        for i in range(c):
            s = acc[i]
            if s != 0.0:
                s *= bt
                for q in range(p0, p1):
                    XT[vidx[q], i] -= s * vval[q]


@jit
def dense_metric_chain(M, Lm, starts, nb, ST, tol, v, h, U, bias):
    """:func:`~contactlab.kernels.metric_chain.noslip_metric_chain` with no equality rows and f = 0
    (module docstring; its docstring for the mathematics): the candidate rows are the dense tangent
    rows ST (r, m: S_0, T_0, S_1, ...; zero rows never kept), p = M v, the factored LCP of eq. 57 is
    (N_r = U Z, I, f* = Z' p) with offset = U x_p + bias, x_p = 0 (no right-hand sides), q = U Z f*
    + offset. Returns (status, k, kept, p, Lg, x_p, UZ, Zp, offset, q, vval, vidx, vptr, beta,
    prow, sgn, free): status 0, 3 (an input is not finite) or 4 (nb < 0); Lg's leading k x k block
    is the kept rows' Cholesky factor of G_k M^-1 G_k' (lower); the reflectors as
    :func:`~contactlab.kernels.householder.householder_select` leaves them (its first k), ``free``
    the d = m - k unpivoted rows."""
    m = M.shape[0]
    n = U.shape[0]
    r = ST.shape[0]
    kmax = min(r, m)
    p = np.empty(m)
    x_p = np.zeros(m)
    Lg = np.empty((kmax, kmax))
    kept = np.empty(kmax, dtype=np.int64)
    prow = np.empty(kmax, dtype=np.int64)
    sgn = np.empty(kmax)
    vval = np.empty(kmax * m)
    vidx = np.empty(kmax * m, dtype=np.int64)
    vptr = np.zeros(kmax + 1, dtype=np.int64)
    beta = np.empty(kmax)
    free = np.ones(m, dtype=np.bool_)
    ok = nb >= 0 and _finite(v) and _finite2(U) and _finite(bias)
    if not ok:
        return (3 if nb >= 0 else 4), 0, kept, p, Lg, x_p, np.zeros((n, 0)), np.zeros(0), np.zeros(n), \
            np.zeros(n), vval, vidx, vptr, beta, prow, sgn, free
    mass_matvec(M, starts, nb, v, p)
    for t in range(m):
        p[t] += h * 0.0
    # y_s = L_M^-1 g_s side by side (XT: m x r), then the rows, |y_s|^2 and their nonzero chunks
    XT = np.empty((m, max(r, n + 1)))
    rows_lower_solve(Lm, starts, nb, ST, XT, 0, True)
    Y = np.empty((r, m))
    amask = np.zeros(r, dtype=np.uint64)
    gg = np.zeros(r)
    cs = _chunk(m)
    for i in range(r):
        s2 = 0.0
        mask = np.uint64(0)
        for b in range(nb):
            if _block_zero(ST, i, starts[b], starts[b + 1]):
                continue
            for t in range(starts[b], starts[b + 1]):
                s = XT[t, i]
                s2 += s * s
                if s != 0.0:
                    mask |= np.uint64(1) << np.uint64(t // cs)
        gg[i] = s2
        amask[i] = mask
        for t in range(m):
            Y[i, t] = XT[t, i]
        if not np.isfinite(s2):
            return 3, 0, kept, p, Lg, x_p, np.zeros((n, 0)), np.zeros(0), np.zeros(n), np.zeros(n), vval, vidx, \
                vptr, beta, prow, sgn, free
    vmask = np.zeros(kmax, dtype=np.uint64)
    k = householder_select(Y, amask, gg, tol, Lg, kept, prow, sgn, vval, beta, vptr, vidx, free, vmask)
    d = m - k
    # U Z = rows of (Q' L_M^-1 U')[free], Z' p = (Q' L_M^-1 p)[free] = f*: L_M^-1 of U's rows and p
    # side by side (XT's first n + 1 columns), then Q' on them
    XB = np.empty((m, n + 1))      # its own array (C order), not a strided view of XT's first columns
    rows_lower_solve(Lm, starts, nb, U, XB, 0, False)
    rows_lower_solve(Lm, starts, nb, p.reshape((1, m)), XB, n, False)
    reflect_rows_transposed(vval, vidx, vptr, beta, k, XB, np.empty(n + 1))
    UZ = np.empty((n, d))
    Zp = np.empty(d)
    a = 0
    for t in range(m):
        if free[t]:
            for i in range(n):
                UZ[i, a] = XB[t, i]
            Zp[a] = XB[t, n]
            a += 1
    offset = np.empty(n)
    q = np.empty(n)
    for i in range(n):
        s = bias[i]
        for t in range(m):
            s += U[i, t] * x_p[t]
        offset[i] = s
        for a in range(d):
            s += UZ[i, a] * Zp[a]
        q[i] = s
    return 0, k, kept, p, Lg, x_p, UZ, Zp, offset, q, vval, vidx, vptr, beta, prow, sgn, free


@jit
def _finite(x):
    for v in x:
        if not np.isfinite(v):
            return False
    return True


@jit
def _finite2(X):
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if not np.isfinite(X[i, j]):
                return False
    return True


@jit
def dense_metric_recover(M, Lm, starts, nb, k, Lg, kept, x_p, vval, vidx, vptr, beta, prow, sgn, free, UZ, Zp, p,
                         U, z, nc):
    """:func:`~contactlab.kernels.metric_chain.recover_metric_step` for :func:`dense_metric_chain`'s
    reduction (no equality rows): u = N_r' z + f*, v+ = x_p + Z u = x_p + L_M^-T Q u_hat, res = M v+
    - p - U' z and the kept rows' multipliers from Lg' lam = D (Q' L_M^-1 res)[prow], each in the
    order recover_metric_kernel computes it. Returns (v+, tangential impulses (nc, 2): S and T
    columns, a kept row c being S_(c // 2) (c even) or T_(c // 2))."""
    m = M.shape[0]
    d = UZ.shape[1]
    u = Zp.copy()
    add_rmatvec(UZ, z, 1.0, u)
    v = np.empty(m)
    if d and k < m:
        a = 0
        for t in range(m):
            if free[t]:
                v[t] = u[a]
                a += 1
            else:
                v[t] = 0.0
        _apply_q(vval, vidx, vptr, beta, k, v)
        mass_upper_solve(Lm, starts, nb, v, v)
    else:
        for t in range(m):
            v[t] = 0.0
    for t in range(m):
        v[t] += x_p[t]
    tangent = np.zeros((nc, 2))
    if k:
        res = np.empty(m)
        mass_matvec(M, starts, nb, v, res)
        for t in range(m):
            res[t] -= p[t]
        add_rmatvec(U, z, -1.0, res)
        mass_lower_solve(Lm, starts, nb, res, res)
        XT = res.reshape((m, 1))
        reflect_rows_transposed(vval, vidx, vptr, beta, k, XT, np.empty(1))
        lam = np.zeros(k)
        for i in range(k - 1, -1, -1):          # Lg' lam = D b
            s = sgn[i] * res[prow[i]]
            for j in range(i + 1, k):
                s -= Lg[j, i] * lam[j]
            lam[i] = s / Lg[i, i]
        for a in range(k):
            c = kept[a]
            tangent[c // 2, c % 2] = lam[a]
    return v, tangent


@jit
def _apply_q(vval, vidx, vptr, beta, k, x):
    """x <- Q x = H_0 (H_1 (... H_{k-1} x)) (:func:`~contactlab.kernels.householder.apply_reflectors`
    without its masks: a reflector whose dot product with x is zero leaves x as it is)."""
    for s_ in range(k):
        t = k - 1 - s_
        p0 = vptr[t]
        p1 = vptr[t + 1]
        s = 0.0
        for q in range(p0, p1):
            s += vval[q] * x[vidx[q]]
        if s != 0.0:
            s *= beta[t]
            for q in range(p0, p1):
                x[vidx[q]] -= s * vval[q]
