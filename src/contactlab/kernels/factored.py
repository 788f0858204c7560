"""Compiled parts of the factored contact LCP (N M^-1 N' + cfm I, N M^-1 f + offset; drumwright
eq. 41-42) with a dense N and the lower Cholesky factor L of M: the certification's w and term
sizes in one pass (and the six certification numbers, :func:`factored_certify`), the clear cases of
Theorem 1's full-row-rank condition, N's CSR arrays for ppm, the formed N M^-1 N' + cfm I
(:func:`formed_gram`), and ppm's whole solve of a dense N in one call (:func:`ppm_dense`: Theorem 1's
decision, then ppm, or the routed Dantzig on the formed matrix)."""
import numpy as np

from ._jit import jit
from .dense import add_rmatvec, chol_factor_block, chol_solve
from .pivoting import UNBOUNDED as PPM_UNBOUNDED
from .pivoting import dantzig_dense, ppm_kernel
from .residual import lcp_relative_kernel, lcp_residual_kernel
from .tolerances import EPS, NORMWISE_FLOOR, RANK

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


@jit
def factored_certify(N, L, f_star, offset, cfm, q, z):
    """FactoredLCP.certify's numbers in one call: w and the term sizes t (:func:`factored_w_terms`),
    then problems/residual.py ``lcp_residuals`` (kernels/residual.py ``lcp_residual_kernel``) and
    ``lcp_relative`` (``lcp_relative_kernel`` with these t): the same kernels on the same arrays.
    Returns (w, (natural, complementarity, infeasibility, relative natural, relative
    complementarity, relative infeasibility))."""
    n = N.shape[0]
    w = np.empty(n)
    t = np.empty(n)
    factored_w_terms(N, L, f_star, offset, cfm, z, w, t, True)
    a = lcp_residual_kernel(z, w)
    r = lcp_relative_kernel(z, w, q, t, -1.0)
    return w, (a[0], a[1], a[2], r[0], r[1], r[2])


#: :func:`ppm_dense` codes of drumwright Theorem 1's case (solvers/pivoting.py ``theorem1_holds``):
#: UNCLEAR (nothing solved: the caller decides), the three clear cases, the two the SVD / least-squares
#: test decides inside Theorem 1, and OUTSIDE (routed to Dantzig on the formed matrix)
THEOREM1_UNCLEAR, THEOREM1_CFM, THEOREM1_NO_OFFSET, THEOREM1_FULL_RANK = -1, 0, 1, 2
THEOREM1_RANGE, THEOREM1_OUTSIDE = 3, 4


@jit
def formed_gram(N, Lm, cfm):
    """problems/factored.py ``FactoredLCP.lcp_reduction``'s matrix: Q = N M^-1 N' (M^-1 N' by two
    triangular solves with M's lower factor Lm per row of N), then 0.5 (Q + Q') and cfm on the
    diagonal (drumwright eq. 41). The product is BLAS's on the operands' layouts there (M^-1 N'
    column-major, as SciPy's ``cho_solve`` returns it), so the numbers are those of ``to_lcp``."""
    n, m = N.shape
    Xt = np.empty((n, m))                   # row j: M^-1 N_j'; Xt.T is M^-1 N' in column-major order
    for j in range(n):
        chol_solve(Lm, m, np.ascontiguousarray(N[j]), Xt[j])
    Q = N @ Xt.T
    Q = 0.5 * (Q + Q.T)
    if cfm:
        for i in range(n):
            Q[i, i] += cfm
    return Q


@jit
def theorem1_decide(N, offset):
    """The SVD half of solvers/pivoting.py ``theorem1_holds`` (for cfm = 0, a nonzero offset and N not
    clearly of full row rank, :func:`clear_full_row_rank`): N of full row rank by numpy's
    ``matrix_rank`` (singular values above max(n, m) eps sigma_max), else the offset in range(N) by
    ``lstsq`` with numpy's default cut-off (rcond = max(n, m) eps) and the residual test
    max |N x - offset| <= RANK max |offset|. THEOREM1_FULL_RANK, THEOREM1_RANGE or THEOREM1_OUTSIDE."""
    n, m = N.shape
    if n <= m and np.linalg.matrix_rank(N) == n:
        return THEOREM1_FULL_RANK
    x = np.linalg.lstsq(N, offset, rcond=EPS * max(n, m))[0]
    r = N @ x
    omax = 0.0
    rmax = 0.0
    for i in range(n):
        omax = max(omax, abs(offset[i]))
        rmax = max(rmax, abs(r[i] - offset[i]))
    if rmax <= RANK * max(omax, 1e-300):
        return THEOREM1_RANGE
    return THEOREM1_OUTSIDE


@jit
def _all_finite(a):
    for v in a.ravel():
        if not np.isfinite(v):
            return False
    return True


@jit
def ppm_dense(N, Lm, f_star, offset, q, cfm, max_it):
    """solvers/pivoting.py ``ppm_solve`` on a dense N in one call (drumwright Alg. 1, Theorem 1):
    Theorem 1's clear cases (cfm > 0; no offset; N of full row rank beyond doubt,
    :func:`clear_full_row_rank`), else its SVD / least-squares test (:func:`theorem1_decide`); inside
    Theorem 1, N's CSR arrays (:func:`dense_csr`), the work arrays, the pivoting kernel
    (kernels/pivoting.py ``ppm_kernel``) and z = max(z, 0); outside it, the route the method's
    guarantee names: kernels/pivoting.py ``dantzig_dense`` (cold, 20 n + 100 pivots, refined) on the
    formed N M^-1 N' (:func:`formed_gram`) and q. Then z's certification on the factored problem
    (:func:`factored_certify`, what ``solve()`` would compute on that z). Returns (case, code, k, z, w,
    numbers, counts, nonbasic (sorted), positive, rows[0], y); routed (case THEOREM1_OUTSIDE): code is
    Dantzig's, counts (major cycles, pivots), nonbasic its active set, rows[0] the index of a NOT_P
    stop and y the driving ray of an UNBOUNDED one (else empty). Case THEOREM1_UNCLEAR means nothing was
    solved (N has no columns, or N, the offset or q is not finite: the caller's general path)."""
    n, m = N.shape
    case = THEOREM1_UNCLEAR
    if cfm > 0:
        case = THEOREM1_CFM
    else:
        case = THEOREM1_NO_OFFSET
        for i in range(n):
            if offset[i] != 0.0:
                case = THEOREM1_UNCLEAR
                break
        if case == THEOREM1_UNCLEAR and n <= m and clear_full_row_rank(N):
            case = THEOREM1_FULL_RANK
        if case == THEOREM1_UNCLEAR and m > 0 and _all_finite(N) and _all_finite(offset) and _all_finite(q):
            case = theorem1_decide(N, offset)
    counts = np.zeros(2, dtype=np.int64)
    z = np.zeros(n)
    w = np.zeros(0)
    y = np.zeros(0)
    if case == THEOREM1_UNCLEAR:
        return case, 0, 0, z, w, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0), counts, np.zeros(0, dtype=np.int64), 0, 0, y
    if case == THEOREM1_OUTSIDE:
        code, k0, majors, pivots, d, z, wd, numbers, active, y = dantzig_dense(
            formed_gram(N, Lm, cfm), q, np.zeros(0), 20 * n + 100, True, NORMWISE_FLOOR)
        counts[0] = majors
        counts[1] = pivots
        w, numbers = factored_certify(N, Lm, f_star, offset, cfm, q, z)
        return case, code, active.shape[0], z, w, numbers, counts, active, 0, d, y
    indptr, indices, data = dense_csr(N)
    kmax = n if cfm > 0 else min(m, n)
    L = np.zeros((kmax + 1, kmax + 1))
    rows = np.zeros(kmax + 1, dtype=np.int64)
    Gb = np.zeros((kmax + 1, m))
    zb = np.zeros(kmax + 1)
    wt = np.zeros(n)
    code, k = ppm_kernel(indptr, indices, data, Lm, q, cfm, max_it, L, rows, Gb, zb, wt, np.zeros(kmax + 1),
                         np.zeros(kmax + 1), np.zeros(m), np.zeros(m), np.zeros(m), counts)
    if code != PPM_UNBOUNDED:
        for a in range(k):
            z[rows[a]] = zb[a]
    positive = 0
    for i in range(n):
        if z[i] > 0.0:
            positive += 1
        elif z[i] < 0.0:            # np.maximum(z, 0) (NaN kept)
            z[i] = 0.0
    nonbasic = np.sort(rows[:k])
    w, numbers = factored_certify(N, Lm, f_star, offset, cfm, q, z)
    return case, code, k, z, w, numbers, counts, nonbasic, positive, rows[0], y
