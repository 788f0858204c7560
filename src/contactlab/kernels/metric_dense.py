"""The no-slip reduction in the metric of a kinematic tree's joint-space mass matrix, with no
equality rows, its rows batched (compiled; drumwright Sec. VI, Alg. 2 FIND-INDICES, eq. 45-57): the
step of a kinematic tree in joint coordinates (:mod:`contactlab.sim.tree_kernels`), whose H is small
(a legged robot's 18 coordinates) and tree-sparse, whose joints are not rows, and whose candidate
rows are the touching contacts' dense tangent rows in joint coordinates.

:func:`tree_metric_chain` is :func:`~contactlab.kernels.metric_chain.noslip_metric_chain` with J
empty and f = 0, and :func:`tree_metric_recover` its
:func:`~contactlab.kernels.metric_chain.recover_metric_step`, the metric's factor being Featherstone's
H = L' L (:func:`~contactlab.kernels.mass_factor.tree_factor`, RBDA sec. 6.5) instead of the block
Cholesky factor: y = L^-T g has |y|^2 = g H^-1 g', and L^-T keeps a row supported on one path to the
root (a foot's contact row: the base and that leg, 9 of a quadruped's 18 coordinates) on that path,
so its solve costs that path's entries (:func:`~contactlab.kernels.mass_factor.tree_transposed_solve`).
The solves of all candidate rows, and L^-T U', L^-T p, run side by side (the rows as the columns of a
transposed work array), and the reflectors of the Householder QR are applied to all those rows at
once (:func:`reflect_rows_transposed`); the reflectors stay unpacked between the reduction and the
recovery.
"""
import numpy as np

from ._jit import jit
from .dense import add_rmatvec
from .householder import _chunk, householder_select
from .mass_factor import tree_solve, tree_transposed_solve


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
def tree_metric_chain(H, L, lam, ST, tol, p, U, bias):
    """:func:`~contactlab.kernels.metric_chain.noslip_metric_chain`'s reduction with no equality rows
    and f = 0 (module docstring; its docstring for the mathematics), in the metric of the tree factor
    H = L' L (:func:`~contactlab.kernels.mass_factor.tree_factor`, ``lam`` the coordinates' parents):
    F = L' is the factor H = F F' whose F^-1 = L^-T maps a row g to y = L^-T g with |y|^2 = g H^-1 g'.
    The candidate rows are the dense tangent rows ST (r, m: S_0, T_0, S_1, ...; zero rows never
    kept), p the momentum (H v_free), the factored LCP of eq. 57 is (N_r = U Z, I, f* = Z' p) with
    offset = bias (x_p = 0: no right-hand sides), q = U Z f* + offset. Returns (status, k, kept, Lg,
    UZ, Zp, offset, q, vval, vidx, vptr, beta, prow, sgn, free): status 0, or 3 (an input is not
    finite); Lg's leading k x k block is the kept rows' Cholesky factor of G_k H^-1 G_k' (lower); the
    reflectors as :func:`~contactlab.kernels.householder.householder_select` leaves them (its first
    k), ``free`` the d = m - k unpivoted rows."""
    m = H.shape[0]
    n = U.shape[0]
    r = ST.shape[0]
    kmax = min(r, m)
    Lg = np.empty((kmax, kmax))
    kept = np.empty(kmax, dtype=np.int64)
    prow = np.empty(kmax, dtype=np.int64)
    sgn = np.empty(kmax)
    vval = np.empty(kmax * m)
    vidx = np.empty(kmax * m, dtype=np.int64)
    vptr = np.zeros(kmax + 1, dtype=np.int64)
    beta = np.empty(kmax)
    free = np.ones(m, dtype=np.bool_)
    if not (_finite(p) and _finite2(U) and _finite(bias) and _finite2(ST)):
        return 3, 0, kept, Lg, np.zeros((n, 0)), np.zeros(0), bias.copy(), np.zeros(n), vval, vidx, vptr, beta, \
            prow, sgn, free
    # y_s = L^-T g_s side by side (the rows as the columns of XT), then the rows, |y_s|^2 and their
    # nonzero chunks
    XT = np.empty((m, r))
    for t in range(m):
        for i in range(r):
            XT[t, i] = ST[i, t]
    tree_transposed_solve(L, lam, XT)
    Y = np.empty((r, m))
    amask = np.zeros(r, dtype=np.uint64)
    gg = np.zeros(r)
    cs = _chunk(m)
    for i in range(r):
        s2 = 0.0
        mask = np.uint64(0)
        for t in range(m):
            s = XT[t, i]
            Y[i, t] = s
            if s != 0.0:
                s2 += s * s
                mask |= np.uint64(1) << np.uint64(t // cs)
        gg[i] = s2
        amask[i] = mask
    vmask = np.zeros(kmax, dtype=np.uint64)
    k = householder_select(Y, amask, gg, tol, Lg, kept, prow, sgn, vval, beta, vptr, vidx, free, vmask)
    d = m - k
    # U Z = rows of (Q' L^-T U')[free], Z' p = (Q' L^-T p)[free] = f*: L^-T of U's rows and p side by
    # side (the columns of XB), then Q' on them
    XB = np.empty((m, n + 1))
    for t in range(m):
        for i in range(n):
            XB[t, i] = U[i, t]
        XB[t, n] = p[t]
    tree_transposed_solve(L, lam, XB)
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
    offset = bias.copy()
    q = np.empty(n)
    for i in range(n):
        s = offset[i]
        for a in range(d):
            s += UZ[i, a] * Zp[a]
        q[i] = s
    return 0, k, kept, Lg, UZ, Zp, offset, q, vval, vidx, vptr, beta, prow, sgn, free


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
def tree_metric_recover(H, L, lam, k, Lg, kept, vval, vidx, vptr, beta, prow, sgn, free, UZ, Zp, p, U, z, nc):
    """:func:`~contactlab.kernels.metric_chain.recover_metric_step` for :func:`tree_metric_chain`'s
    reduction (no equality rows, x_p = 0): u = N_r' z + f*, v+ = Z u = F^-T Q u_hat = L^-1 Q u_hat
    (:func:`~contactlab.kernels.mass_factor.tree_solve`), res = H v+ - p - U' z and the kept rows'
    multipliers from Lg' lam = D (Q' L^-T res)[prow] (G_k' lam = res: eq. 47). Returns (v+,
    tangential impulses (nc, 2): S and T columns, a kept row c being S_(c // 2) (c even) or
    T_(c // 2))."""
    m = H.shape[0]
    d = UZ.shape[1]
    u = Zp.copy()
    add_rmatvec(UZ, z, 1.0, u)
    v = np.zeros(m)
    if d:
        a = 0
        for t in range(m):
            if free[t]:
                v[t] = u[a]
                a += 1
        _apply_q(vval, vidx, vptr, beta, k, v)
        tree_solve(L, lam, v)
    tangent = np.zeros((nc, 2))
    if k:
        res = np.empty((m, 1))
        for i in range(m):
            s = 0.0
            for t in range(m):
                s += H[i, t] * v[t]
            res[i, 0] = s - p[i]
        for i in range(U.shape[0]):
            zi = z[i]
            if zi != 0.0:
                for t in range(m):
                    res[t, 0] -= U[i, t] * zi
        tree_transposed_solve(L, lam, res)
        reflect_rows_transposed(vval, vidx, vptr, beta, k, res, np.empty(1))
        lam_k = np.zeros(k)
        for i in range(k - 1, -1, -1):          # Lg' lam = D b
            s = sgn[i] * res[prow[i], 0]
            for j in range(i + 1, k):
                s -= Lg[j, i] * lam_k[j]
            lam_k[i] = s / Lg[i, i]
        for a in range(k):
            c = kept[a]
            tangent[c // 2, c % 2] = lam_k[a]
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
