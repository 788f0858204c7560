"""Lemke's complementary pivoting on a product-form basis inverse (O(n^2) per pivot).

Variables are numbered w_0..w_{n-1} = 0..n-1, z_0..z_{n-1} = n..2n-1, z0 (artificial) = 2n.
The system is  I w - M z - d z0 = q  with basis inverse ``Binv`` (starting at I, never M^-1).
Status codes: 0 solved, 1 ray termination, 2 pivot limit, 3 numerical failure.
"""
import numpy as np

from ._jit import jit

SOLVED, RAY, MAX_PIVOTS, NUMERICAL = 0, 1, 2, 3


@jit
def _entering_column(v, n, M, d, Binv, col, tmp):
    """col = B^-1 A_v for the column A_v of variable v in [I, -M, -d] (row-contiguous dots)."""
    if v < n:
        for i in range(n):
            col[i] = Binv[i, v]
        return
    if v < 2 * n:
        j = v - n
        for k in range(n):
            tmp[k] = M[k, j]
    else:
        for k in range(n):
            tmp[k] = d[k]
    for i in range(n):
        acc = 0.0
        for k in range(n):
            acc += Binv[i, k] * tmp[k]
        col[i] = -acc


@jit
def _lexico_ratio_row(n, col, xB, Binv, basis, artificial, tol, cand, work):
    """Lexicographic minimum-ratio test; returns the leaving row, or -1 for a ray.

    Rows with col_i > tol compete on (xB_i, Binv[i, :]) / col_i; z0 wins any tie (termination).
    """
    m = 0
    best = np.inf
    for i in range(n):
        if col[i] > tol:
            r = xB[i] / col[i]
            work[i] = r
            if r < best:
                best = r
            cand[m] = i
            m += 1
    if m == 0:
        return -1
    # keep near-minimal ratios
    thr = best + 1e-12 * (1.0 + abs(best))
    k = 0
    for t in range(m):
        i = cand[t]
        if work[i] <= thr:
            cand[k] = i
            k += 1
    m = k
    for t in range(m):
        if basis[cand[t]] == artificial:
            return cand[t]
    col_k = 0
    while m > 1 and col_k < n:
        best = np.inf
        for t in range(m):
            i = cand[t]
            r = Binv[i, col_k] / col[i]
            work[i] = r
            if r < best:
                best = r
        thr = best + 1e-13 * (1.0 + abs(best))
        k = 0
        for t in range(m):
            i = cand[t]
            if work[i] <= thr:
                cand[k] = i
                k += 1
        m = k
        col_k += 1
    return cand[0]


@jit
def _pivot(n, r, col, xB, Binv):
    """Gauss-Jordan pivot on row r of [xB | Binv] with entering column col (O(n^2))."""
    p = col[r]
    xB[r] /= p
    for k in range(n):
        Binv[r, k] /= p
    for i in range(n):
        if i != r:
            f = col[i]
            if f != 0.0:
                xB[i] -= f * xB[r]
                for k in range(n):
                    Binv[i, k] -= f * Binv[r, k]


@jit
def lemke_kernel(M, q, d, max_pivots, Binv, xB, basis, col, cand, work, tmp, ray):
    """Lemke's method with covering vector d > 0 (Cottle-Pang-Stone §4.4, lexicographic rule).

    Work arrays: Binv (n, n), xB (n,), basis (n,) int64, col (n,), cand (n,) int64, work (n,), tmp (n,),
    ray (2n+1,).
    Returns (status, pivots). On success, basis/xB describe the final complementary basis.
    """
    n = q.shape[0]
    artificial = 2 * n
    for i in range(n):
        for k in range(n):
            Binv[i, k] = 0.0
        Binv[i, i] = 1.0
        xB[i] = q[i]
        basis[i] = i
    # first pivot: z0 enters, leaves the row of min q_i/d_i (ties -> the largest index keeps lexico-positivity)
    r = -1
    best = np.inf
    for i in range(n):
        t = q[i] / d[i]
        if t <= best:
            best = t
            r = i
    if best >= 0.0:
        return SOLVED, 0
    entering = artificial
    pivots = 0
    scale = 0.0
    for i in range(n):
        for k in range(n):
            a = abs(M[i, k])
            if a > scale:
                scale = a
    while True:
        if pivots >= max_pivots:
            return MAX_PIVOTS, pivots
        _entering_column(entering, n, M, d, Binv, col, tmp)
        if pivots > 0:
            cmax = 0.0
            for i in range(n):
                a = abs(col[i])
                if a > cmax:
                    cmax = a
            tol = 1e-12 * max(1.0, cmax)
            r = _lexico_ratio_row(n, col, xB, Binv, basis, artificial, tol, cand, work)
            if r < 0:
                for k in range(2 * n + 1):
                    ray[k] = 0.0
                ray[entering] = 1.0
                for i in range(n):
                    ray[basis[i]] = -col[i]
                return RAY, pivots
        if not np.isfinite(col[r]) or col[r] == 0.0:
            return NUMERICAL, pivots
        leaving = basis[r]
        _pivot(n, r, col, xB, Binv)
        basis[r] = entering
        pivots += 1
        for i in range(n):
            if not np.isfinite(xB[i]):
                return NUMERICAL, pivots
        if leaving == artificial:
            return SOLVED, pivots
        entering = leaving + n if leaving < n else leaving - n


@jit
def refine_basis(M, q, d, basis, xB, Binv, r):
    """One step of iterative refinement of the basic solution: xB += B^-1 (q - B xB) (O(n^2))."""
    n = q.shape[0]
    for i in range(n):
        r[i] = q[i]
    for p in range(n):
        v = basis[p]
        x = xB[p]
        if v < n:
            r[v] -= x
        elif v < 2 * n:
            j = v - n
            for i in range(n):
                r[i] += M[i, j] * x
        else:
            for i in range(n):
                r[i] += d[i] * x
    for i in range(n):
        acc = 0.0
        for k in range(n):
            acc += Binv[i, k] * r[k]
        xB[i] += acc
