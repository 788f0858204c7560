"""Lemke's complementary pivoting on a product-form basis inverse (O(n^2) per pivot).

Variables are numbered w_0..w_{n-1} = 0..n-1, z_0..z_{n-1} = n..2n-1, z0 (artificial) = 2n.
The system is  I w - M z - d z0 = q  with basis inverse ``Binv`` (starting at I, never M^-1).
Status codes: 0 solved, 1 ray termination, 2 pivot limit, 3 numerical failure.
"""
import numpy as np

from ._jit import jit
from .dense import gauss_jordan_inverse, schur_remove, tie_filter
from .residual import lcp_certify_dense
from .tolerances import LEMKE_PIVOT, LEX_COLUMN_TIE, LEX_RATIO_TIE

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
def _lexico_ratio_row(n, col, xB, Binv, basis, artificial, tol, cand, work, first_row):
    """Lexicographic minimum-ratio test; returns the leaving row, or -1 for a ray.

    Rows with col_i > tol compete on (xB_i, Binv[i, :]) / col_i; z0 wins any tie (termination).
    ``work[t]`` holds the value of candidate ``cand[t]`` (kernels/dense.py tie_filter).
    """
    m = 0
    for i in range(n):
        if col[i] > tol:
            cand[m] = i
            work[m] = xB[i] / col[i]
            m += 1
    if m == 0:
        return -1
    m = tie_filter(cand, work, m, LEX_RATIO_TIE)   # keep near-minimal ratios
    for t in range(m):
        if basis[cand[t]] == artificial:
            return cand[t]
    if first_row:  # the textbook rule without lexicography: first tied row (cycles on Kostreva's example)
        return cand[0]
    col_k = 0
    while m > 1 and col_k < n:
        for t in range(m):
            i = cand[t]
            work[t] = Binv[i, col_k] / col[i]
        m = tie_filter(cand, work, m, LEX_COLUMN_TIE)
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
def lemke_kernel(M, q, d, max_pivots, Binv, xB, basis, col, cand, work, tmp, ray, first_row=False):
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
        if t < best or (t == best and not first_row):
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
            tol = LEMKE_PIVOT * max(1.0, cmax)  # tiny pivots make degenerate bases singular
            r = _lexico_ratio_row(n, col, xB, Binv, basis, artificial, tol, cand, work, first_row)
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


# ----------------------------------------------------------------------------------------------
# Lemke on the reduced basis: only the k x k block A = [M_{W,Z} d_W] of the basis matrix is kept
# (W: rows whose w is nonbasic, Z: basic z's and z0), with its inverse updated by rank-one
# formulas (O(k^2)) and refactorised periodically. Per pivot O(k^2 + (n - k) k) instead of the
# tableau's O(n^2); the pivot sequence (lexicographic rule included) is the tableau's.
# ----------------------------------------------------------------------------------------------
@jit
def _coef(var, i, n, M, d):
    """Coefficient of basic unknown ``var`` (z_l or z0) in w_i = q_i + M_i z + d_i z0."""
    if var < 2 * n:
        return M[i, var - n]
    return d[i]


@jit
def _basic_row_times_inverse(i, k, n, M, d, unk, Ainv, out):
    """out' = c' Ainv with c_a = coef(unk[a], i): row i of [M_iZ d_i] times the inverse (row-contiguous)."""
    for e in range(k):
        out[e] = 0.0
    for a in range(k):
        ca = _coef(unk[a], i, n, M, d)
        if ca != 0.0:
            for e in range(k):
                out[e] += ca * Ainv[a, e]




@jit
def _refactor(n, k, M, d, eq_rows, unk, Ainv, q, x, work):
    """Ainv = inv(A) from scratch and x = -Ainv q_W; False if A is numerically singular."""
    for e in range(k):
        for a in range(k):
            work[e, a] = _coef(unk[a], eq_rows[e], n, M, d)
    if not gauss_jordan_inverse(work, k, Ainv):
        return False
    for a in range(k):
        s = 0.0
        for e in range(k):
            s -= Ainv[a, e] * q[eq_rows[e]]
        x[a] = s
    return True


@jit
def _binv_entry(p_is_unknown, p, c, n, k, M, d, eq_pos, unk, Ainv):
    """Entry (p, c) of B^-1 for the lexicographic rule; p is an unknown position or a basic w row."""
    pc = eq_pos[c]
    if pc < 0:  # q_c moves only the basic w_c
        if p_is_unknown:
            return 0.0
        return 1.0 if p == c else 0.0
    if p_is_unknown:
        return -Ainv[p, pc]
    s = 0.0
    for a in range(k):
        s -= _coef(unk[a], p, n, M, d) * Ainv[a, pc]
    return s


@jit
def _reduced_direction(entering, n, k, MT, d, Ainv, eq_rows, eq_pos, unk, dx, dwv, tmp, zcols, zdx):
    """dx: change of the basic unknowns, dwv: of the basic w rows, per unit of the entering variable
    (z_j: A dx = -M[W, j]; w_j: dx = Ainv[:, pos(j)]); returns max |entry| (the pivot scale)."""
    Z0 = 2 * n
    if entering >= n:
        j = entering - n
        for e in range(k):
            tmp[e] = -MT[j, eq_rows[e]]
        for a in range(k):
            s = 0.0
            for e in range(k):
                s += Ainv[a, e] * tmp[e]
            dx[a] = s
    else:
        pe = eq_pos[entering]
        for a in range(k):
            dx[a] = Ainv[a, pe]
    dmax = 0.0
    for a in range(k):
        dmax = max(dmax, abs(dx[a]))
    # dw_i = M[i, j] + sum_a M[i, z-col a] dx_a + d_i dx_z0: gather the z-columns once
    nz = 0
    dz0 = 0.0
    for a in range(k):
        if unk[a] == Z0:
            dz0 = dx[a]
        else:
            zcols[nz] = unk[a] - n
            zdx[nz] = dx[a]
            nz += 1
    # column-oriented: dw += dx_a * M[:, col_a] read as contiguous rows of MT = M'
    jcol = entering - n if entering >= n else -1
    for i in range(n):
        dwv[i] = d[i] * dz0
    if jcol >= 0:
        for i in range(n):
            dwv[i] += MT[jcol, i]
    for t in range(nz):
        c = zcols[t]
        f = zdx[t]
        for i in range(n):
            dwv[i] += f * MT[c, i]
    for i in range(n):
        if eq_pos[i] >= 0 or i == entering:
            dwv[i] = 0.0
        else:
            dmax = max(dmax, abs(dwv[i]))
    return dmax


@jit
def _reduced_ratio_test(n, k, entering, x, wv, dx, dwv, tol, eq_pos, unk, M, d, Ainv, cand, ratio, rows):
    """Lexicographic minimum ratio over basic unknowns (code a) and basic w rows (code n + 1 + i);
    z0 wins a tie; -1 when nothing blocks (a secondary ray). ``rows`` (n+1, n+1) is work space: on a
    tie, row i holds c_i' Ainv for each tied basic w row i, so the column scan reads each entry of
    B^-1 in O(1) (degenerate contact stacks tie over many columns; O(k) per entry made the scan
    cost O(n m k) per pivot)."""
    Z0 = 2 * n
    m = 0
    for a in range(k):
        if dx[a] < -tol:
            cand[m] = a
            ratio[m] = x[a] / -dx[a]
            m += 1
    for i in range(n):
        if eq_pos[i] < 0 and i != entering and dwv[i] < -tol:
            cand[m] = n + 1 + i
            ratio[m] = wv[i] / -dwv[i]
            m += 1
    if m == 0:
        return -1
    m = tie_filter(cand, ratio, m, LEX_RATIO_TIE)
    for t in range(m):
        if cand[t] <= n and unk[cand[t]] == Z0:
            return cand[t]
    if m > 1:
        for t in range(m):
            if cand[t] > n:
                _basic_row_times_inverse(cand[t] - n - 1, k, n, M, d, unk, Ainv, rows[cand[t] - n - 1])
    c = 0
    while m > 1 and c < n:
        pc = eq_pos[c]
        for t in range(m):
            code = cand[t]
            if code <= n:
                ratio[t] = _binv_entry(True, code, c, n, k, M, d, eq_pos, unk, Ainv) / -dx[code]
            else:
                i = code - n - 1
                if pc < 0:   # entry (i, c) of B^-1 (_binv_entry): q_c moves only the basic w_c
                    e = 1.0 if i == c else 0.0
                else:
                    e = -rows[i, pc]
                ratio[t] = e / -dwv[i]
        m = tie_filter(cand, ratio, m, LEX_COLUMN_TIE)
        c += 1
    return cand[0]


@jit
def lemke_reduced_kernel(M, MT, q, d, max_pivots, refactor_every, pivot_tol, Ainv, x, wv, eq_rows, eq_pos, unk, unk_pos,
                         dx, dwv, cand, ratio, tmp, zcols, zdx, work2, ray, out_z):
    """Lemke's method (covering vector d > 0, lexicographic rule) on the reduced basis.

    MT is M' (C-contiguous) so column reads are contiguous. A pivot column entry counts as blocking
    only above pivot_tol * max(1, max |entry|) (tolerances.LEMKE_PIVOT by default; solvers/lemke.py
    retries with larger values when an answer does not certify). Work arrays: Ainv (n+1, n+1), x (n+1,),
    wv (n,), eq_rows (n+1,) int64, eq_pos (n,) int64,
    unk (n+1,) int64, unk_pos (2n+1,) int64, dx (n+1,), dwv (n,), cand (2n+2,) int64, ratio (2n+2,),
    tmp (n+1,), zcols (n+1,) int64, zdx (n+1,), work2 (n+1, n+1), ray (2n+1,), out_z (n,).
    Returns (status, pivots).
    """
    n = q.shape[0]
    Z0 = 2 * n
    for i in range(n):
        wv[i] = q[i]
        eq_pos[i] = -1
    for v in range(2 * n + 1):
        unk_pos[v] = -1
    # first pivot: z0 enters, w_r leaves (r = argmin q_i/d_i, ties -> largest index)
    r = -1
    best = np.inf
    for i in range(n):
        t = q[i] / d[i]
        if t <= best:
            best = t
            r = i
    for i in range(n):
        out_z[i] = 0.0
    if best >= 0.0:
        return SOLVED, 0
    k = 1
    eq_rows[0] = r
    eq_pos[r] = 0
    unk[0] = Z0
    unk_pos[Z0] = 0
    Ainv[0, 0] = 1.0 / d[r]
    x[0] = -q[r] / d[r]
    for i in range(n):
        if i != r:
            wv[i] = q[i] + d[i] * x[0]
    wv[r] = 0.0
    pivots = 1
    since_refactor = 0
    entering = r + n  # complement of w_r
    while True:
        if pivots >= max_pivots:
            return MAX_PIVOTS, pivots
        # ---- direction of the basic variables per unit increase of the entering variable
        dmax = _reduced_direction(entering, n, k, MT, d, Ainv, eq_rows, eq_pos, unk, dx, dwv, tmp, zcols, zdx)
        tol = pivot_tol * max(1.0, dmax)
        # ---- minimum ratio (lexicographic) over basic unknowns and basic w rows
        chosen = _reduced_ratio_test(n, k, entering, x, wv, dx, dwv, tol, eq_pos, unk, M, d, Ainv, cand, ratio,
                                     work2)
        if chosen < 0:
            for v in range(2 * n + 1):
                ray[v] = 0.0
            ray[entering] = 1.0
            for a in range(k):
                ray[unk[a]] = dx[a]
            for i in range(n):
                if eq_pos[i] < 0 and i != entering:
                    ray[i] = dwv[i]
            for a in range(k):
                if unk[a] < 2 * n:
                    out_z[unk[a] - n] = max(x[a], 0.0)
            return RAY, pivots
        # ---- step
        if chosen <= n:
            theta = x[chosen] / -dx[chosen]
        else:
            i = chosen - n - 1
            theta = wv[i] / -dwv[i]
        if theta < 0.0:
            theta = 0.0
        for a in range(k):
            x[a] += theta * dx[a]
        for i in range(n):
            if eq_pos[i] < 0 and i != entering:
                wv[i] += theta * dwv[i]
        pivots += 1
        since_refactor += 1
        # ---- basis update
        if entering >= n:
            j = entering - n
            if chosen <= n:  # (b) z_j replaces unknown at position a0: Sherman-Morrison on a column
                a0 = chosen
                leaving = unk[a0]
                piv = -dx[a0]  # (Ainv b)[a0] with b = M[W, j]
                if not (abs(piv) > 0.0) or not np.isfinite(piv):
                    return NUMERICAL, pivots
                for e in range(k):
                    tmp[e] = Ainv[a0, e]
                for a in range(k):
                    ua = -dx[a] - (1.0 if a == a0 else 0.0)
                    if ua != 0.0:
                        f = ua / piv
                        for e in range(k):
                            Ainv[a, e] -= f * tmp[e]
                unk_pos[leaving] = -1
                unk[a0] = entering
                unk_pos[entering] = a0
                x[a0] = theta
            else:  # (a) z_j enters, w_i leaves: border with row i and column j
                i = chosen - n - 1
                leaving = i
                s = dwv[i]
                if not (abs(s) > 0.0) or not np.isfinite(s):
                    return NUMERICAL, pivots
                _basic_row_times_inverse(i, k, n, M, d, unk, Ainv, tmp)  # v' = c' Ainv
                # u = Ainv b = -dx
                for a in range(k):
                    ua = -dx[a]
                    for e in range(k):
                        Ainv[a, e] += ua * tmp[e] / s
                    Ainv[a, k] = -ua / s
                for e in range(k):
                    Ainv[k, e] = -tmp[e] / s
                Ainv[k, k] = 1.0 / s
                eq_rows[k] = i
                eq_pos[i] = k
                unk[k] = entering
                unk_pos[entering] = k
                x[k] = theta
                wv[i] = 0.0
                k += 1
        else:
            pe = eq_pos[entering]
            if chosen > n:  # (c) w_j enters, w_i leaves: replace equation row pe by row i
                i = chosen - n - 1
                leaving = i
                s = dwv[i]  # r' Ainv e_pe
                if not (abs(s) > 0.0) or not np.isfinite(s):
                    return NUMERICAL, pivots
                _basic_row_times_inverse(i, k, n, M, d, unk, Ainv, tmp)
                tmp[pe] -= 1.0
                for a in range(k):
                    f = dx[a] / s  # (Ainv e_pe)[a] / s
                    if f != 0.0:
                        for e in range(k):
                            Ainv[a, e] -= f * tmp[e]
                eq_pos[entering] = -1
                eq_rows[pe] = i
                eq_pos[i] = pe
                wv[entering] = theta
                wv[i] = 0.0
            else:  # (d) w_j enters, unknown a0 leaves: remove equation pe and unknown a0
                a0 = chosen
                leaving = unk[a0]
                last = k - 1
                # move unknown a0 to the last row and equation pe to the last column, downdate
                if not schur_remove(Ainv, k, a0, pe):
                    return NUMERICAL, pivots
                if a0 != last:
                    ua = unk[a0]
                    unk[a0] = unk[last]
                    unk[last] = ua
                    unk_pos[unk[a0]] = a0
                    t2 = x[a0]
                    x[a0] = x[last]
                    x[last] = t2
                if pe != last:
                    er = eq_rows[pe]
                    eq_rows[pe] = eq_rows[last]
                    eq_rows[last] = er
                    eq_pos[eq_rows[pe]] = pe
                unk_pos[unk[last]] = -1
                eq_pos[eq_rows[last]] = -1
                wv[entering] = theta
                k -= 1
        for a in range(k):
            if not np.isfinite(x[a]):
                return NUMERICAL, pivots
        if leaving == Z0:
            for e in range(k):    # gather A = [M_WZ d_W] once: the refinement's products run on it densely
                i = eq_rows[e]
                for a in range(k):
                    work2[e, a] = _coef(unk[a], i, n, M, d)
            for rep in range(2):  # iterative refinement of A x = -q_W with the current inverse, O(k^2)
                for e in range(k):
                    s = -q[eq_rows[e]]
                    for a in range(k):
                        s -= work2[e, a] * x[a]
                    tmp[e] = s
                for a in range(k):
                    s = 0.0
                    for e in range(k):
                        s += Ainv[a, e] * tmp[e]
                    x[a] += s
            for a in range(k):
                if unk[a] < 2 * n:
                    out_z[unk[a] - n] = max(x[a], 0.0)
            return SOLVED, pivots
        if since_refactor >= max(refactor_every, k) and k > 0:
            if not _refactor(n, k, M, d, eq_rows, unk, Ainv, q, x, work2):
                return NUMERICAL, pivots
            for i in range(n):
                if eq_pos[i] < 0:
                    s = q[i]
                    for a in range(k):
                        s += _coef(unk[a], i, n, M, d) * x[a]
                    wv[i] = s
            since_refactor = 0
        entering = leaving + n if leaving < n else leaving - n


@jit
def lemke_reduced_run(M0, q0, s, d, max_pivots, refactor_every, pivot_tol, floor_factor):
    """One compiled call for a small dense LCP: scale (M, q) = (M0, q0) / s, allocate the work
    arrays of :func:`lemke_reduced_kernel`, run it, and certify the answer on the scaled problem
    (kernels/residual.py ``lcp_certify_dense`` with floor_factor).

    Per-call cost matters here: the grasp and contact LCPs of the papers have 10-70 variables, where
    allocating 17 work arrays and computing the residual from Python cost more than the pivots.
    Returns (status, pivots, z, ray, scaled M, scaled q, relative residual).
    """
    n = q0.shape[0]
    M = np.empty((n, n))
    MT = np.empty((n, n))
    q = np.empty(n)
    for i in range(n):
        q[i] = q0[i] / s
        for j in range(n):
            v = M0[i, j] / s
            M[i, j] = v
            MT[j, i] = v
    Ainv = np.zeros((n + 1, n + 1))
    work2 = np.zeros((n + 1, n + 1))
    x, dx, tmp, zdx = np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1)
    wv, dwv, z = np.zeros(n), np.zeros(n), np.zeros(n)
    ratio, ray = np.zeros(2 * n + 2), np.zeros(2 * n + 1)
    eq_rows, eq_pos = np.zeros(n + 1, np.int64), np.zeros(n, np.int64)
    unk, unk_pos = np.zeros(n + 1, np.int64), np.zeros(2 * n + 1, np.int64)
    cand, zcols = np.zeros(2 * n + 2, np.int64), np.zeros(n + 1, np.int64)
    code, pivots = lemke_reduced_kernel(M, MT, q, d, max_pivots, refactor_every, pivot_tol, Ainv, x, wv, eq_rows, eq_pos,
                                        unk, unk_pos, dx, dwv, cand, ratio, tmp, zcols, zdx, work2, ray, z)
    r = lcp_certify_dense(M, q, z, dwv, wv, floor_factor)
    return code, pivots, z, ray, M, q, max(r[3], r[5])
