"""Compiled parts of the factored contact LCP (N M^-1 N' + cfm I, N M^-1 f + offset; drumwright
eq. 41-42) with a dense N and the lower Cholesky factor L of M: the certification's w and term
sizes in one pass, the clear cases of Theorem 1's full-row-rank condition, and N's CSR arrays
for ppm."""
import numpy as np

from ._jit import jit
from .dense import add_rmatvec, chol_factor_block, chol_solve
from .tolerances import EPS

#: :func:`clear_full_row_rank` answers True only when the smallest singular value of N exceeds the
#: SVD rank threshold (max(n, m) eps sigma_max) by a margin of about 1e3 sqrt(m eps)^-1
CLEAR_RANK_MARGIN = 1e6


@jit
def factored_w_terms(N, L, f_star, offset, cfm, z, w, t, with_w):
    """s = M^-1 N' z (two triangular solves with L, L L' = M); w = N (s + f_star) + offset + cfm z
    (when ``with_w``) and the term sizes t = |N| (|s| + |f_star|) + |offset| + cfm |z| of
    problems/residual.py ``lcp_relative`` (FactoredLCP.certify)."""
    n, m = N.shape
    s = np.zeros(m)
    add_rmatvec(N, z, 1.0, s)
    chol_solve(L, m, s, s)              # in place: row i reads b_i before writing x_i
    for i in range(n):
        wi = 0.0
        ti = 0.0
        for c in range(m):
            a = s[c] + f_star[c]
            wi += N[i, c] * a
            ti += abs(N[i, c]) * (abs(s[c]) + abs(f_star[c]))
        if with_w:
            wi += offset[i]
            if cfm:
                wi += cfm * z[i]
            w[i] = wi
        ti += abs(offset[i])
        if cfm:
            ti += cfm * abs(z[i])
        t[i] = ti


@jit
def clear_full_row_rank(N):
    """True when N (n, m) has full row rank beyond doubt: with A = N N' (Cholesky, n x n),
    1 / ||A^-1||_F <= lambda_min(A) = sigma_min(N)^2, and a bound above CLEAR_RANK_MARGIN m eps
    ||N||_F^2 puts sigma_min far above both the rounding of A and its inverse and numpy's
    matrix_rank threshold max(n, m) eps sigma_max (so the SVD test would say full rank too). False
    means "not clear" (the caller runs the SVD test), never "rank-deficient"."""
    n, m = N.shape
    if n > m:
        return False
    if n == 0:
        return True
    A = np.empty((n, n))
    nf2 = 0.0
    for i in range(n):
        for j in range(i + 1):
            v = 0.0
            for c in range(m):
                v += N[i, c] * N[j, c]
            A[i, j] = v
            A[j, i] = v
        nf2 += A[i, i]
    if not nf2 > 0.0 or not nf2 < np.inf:
        return False
    Lc = np.zeros((n, n))
    if not chol_factor_block(A, Lc, 0, n):
        return False
    # ||A^-1||_F^2, column by column of A^-1 = L^-T L^-1
    fro2 = 0.0
    x = np.empty(n)
    unit = np.zeros(n)
    for e in range(n):
        unit[e] = 1.0
        chol_solve(Lc, n, unit, x)
        unit[e] = 0.0
        for i in range(n):
            fro2 += x[i] * x[i]
    return np.sqrt(fro2) * nf2 * max(n, m) * EPS * CLEAR_RANK_MARGIN <= 1.0


@jit
def dense_csr(N):
    """(indptr, indices, data) of the nonzeros of the dense N (n, m), row by row (int64, float64)."""
    n, m = N.shape
    indptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        c = 0
        for j in range(m):
            if N[i, j] != 0.0:
                c += 1
        indptr[i + 1] = indptr[i] + c
    indices = np.empty(indptr[n], dtype=np.int64)
    data = np.empty(indptr[n])
    p = 0
    for i in range(n):
        for j in range(m):
            if N[i, j] != 0.0:
                indices[p] = j
                data[p] = N[i, j]
                p += 1
    return indptr, indices, data
