"""Lemke's complementary pivoting on a product-form basis inverse (O(n^2) per pivot), and on a
reduced basis (O(k^2 + n k) per pivot) that restarts from its refactorised final basis when that
basis is infeasible (_restart_from_basis).

Variables are numbered w_0..w_{n-1} = 0..n-1, z_0..z_{n-1} = n..2n-1, z0 (artificial) = 2n.
The system is  I w - M z - d z0 = q  with basis inverse ``Binv`` (starting at I, never M^-1).
Status codes: 0 solved, 1 ray termination, 2 pivot limit, 3 numerical failure.
"""
import numpy as np

from ._jit import jit, jit_inline, jit_noraise
from .dense import gauss_jordan_inverse, lcp_scale, schur_remove, solve_small, tie_filter
from .residual import lcp_certify_dense
from .tolerances import LEMKE_PIVOT, LEX_COLUMN_TIE, LEX_RATIO_TIE, NORMWISE_FLOOR

SOLVED, RAY, MAX_PIVOTS, NUMERICAL = 0, 1, 2, 3
#: reduced basis: refactorise (O(k^3)) at a checkpoint only when the updated inverse or the basic
#: solution is off by more than this (_basis_drift: half the digits lost); the probe reads ~1e-14 on
#: well-conditioned bases and 1e-11..1e-9 on the friction pyramids (cond * eps, which a fresh
#: inverse would not improve)
REFACTOR_DRIFT = 1e-8
#: reduced basis: when z0 leaves on an answer that does not certify to RESTART_TOL, a basic variable
#: negative by more than RESTART_TOL (relative, as the library's certified residual measures it: a z
#: in units of max|z|, a w in units of |q_i| + sum_j |M_ij z_j|), also once the basis is refactorised,
#: restarts Lemke from that complementary basis (_restart_from_basis)
RESTART_TOL = 1e-9
#: restarts per solve by default (solvers/lemke.py LemkeOptions.restarts; each begins on the
#: refactorised basis and is kept only if its answer certifies better)
RESTARTS = 3


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
#
# The columns of [M d] are the rows of one (n + 1) x n array MTd = [M d]': basic unknown v (z_l,
# v = n + l, or z0, v = 2n) has coefficient MTd[v - n, i] in w_i = q_i + M_i z + d_i z0, and column
# reads are contiguous. The per-pivot constant: every step of a pivot runs in the body of
# lemke_reduced_kernel or in a leaf helper without calls (_matvec, _row_times_inverse, tie_filter,
# schur_remove): numba takes and releases an atomic reference on each array passed to a call that
# it does not prune, and the former per-pivot helpers (a dozen arrays each, and a coefficient
# function called k^2 times) spent a quarter of the time at n = 100 and most of it at n = 10 on
# that (perf). Ties, refactorisation and the final refinement keep their own functions.
# ----------------------------------------------------------------------------------------------
@jit_inline
def _matvec(A, x, y, k):
    """y[:k] = A[:k, :k] x[:k], four rows at a time: four independent sums hide the adder's latency,
    and each row is summed in plain order (the same rounding as one dot at a time)."""
    a = 0
    while a + 4 <= k:
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for e in range(k):
            t = x[e]
            s0 += A[a, e] * t
            s1 += A[a + 1, e] * t
            s2 += A[a + 2, e] * t
            s3 += A[a + 3, e] * t
        y[a] = s0
        y[a + 1] = s1
        y[a + 2] = s2
        y[a + 3] = s3
        a += 4
    while a < k:
        s = 0.0
        for e in range(k):
            s += A[a, e] * x[e]
        y[a] = s
        a += 1


@jit
def _natural_of(M, q, z):
    """||min(z, M z + q)||_inf, inf for non-finite values (kernels/residual.py ``lcp_certify_dense``'s first number)."""
    n = q.shape[0]
    return lcp_certify_dense(M, q, z, np.empty(n), np.empty(n), NORMWISE_FLOOR)[0]


@jit
def _basis_z(n, basis, xB):
    """z read off a final complementary basis (its basic z's, zero elsewhere), negatives set to 0."""
    z = np.zeros(n)
    for i in range(n):
        v = basis[i]
        if n <= v < 2 * n:
            x = xB[i]
            z[v - n] = x if (x >= 0.0 or x != x) else 0.0      # np.maximum(x, 0.0), NaN kept
    return z


@jit
def lemke_tableau_run(M, q, d, max_pivots, refine, first_row):
    """Lemke's method on the full tableau (:func:`lemke_kernel`, Cottle-Pang-Stone §4.4) and z read off
    its final basis; where it is SOLVED after a pivot and ``refine``, one step of iterative refinement
    (:func:`refine_basis`), the refined z kept where its natural residual is no larger. solve()'s
    retry after the reduced-basis runs (solvers/lemke.py ``lemke_core`` with basis "tableau": the
    rank-one updates of the reduced basis can drift on an ill-conditioned LCP where the tableau's
    ties break otherwise) and the compiled Stewart-Trinkle step's last retry (sim/st_kernels.py
    ``st_mixed_step``): one kernel. ``d``: the covering vector, empty for all ones. Returns (status,
    pivots, z, ray)."""
    n = q.shape[0]
    dd = np.ones(n)
    if d.shape[0]:
        dd = d
    Binv = np.empty((n, n))
    xB = np.empty(n)
    basis = np.empty(n, dtype=np.int64)
    col = np.empty(n)
    cand = np.empty(n, dtype=np.int64)
    work = np.empty(n)
    ray = np.zeros(2 * n + 1)
    code, pivots = lemke_kernel(M, q, dd, max_pivots, Binv, xB, basis, col, cand, work, np.empty(n), ray, first_row)
    z = _basis_z(n, basis, xB)
    if code == SOLVED and refine and pivots > 0:
        refine_basis(M, q, dd, basis, xB, Binv, work)
        zr = _basis_z(n, basis, xB)
        if _natural_of(M, q, zr) <= _natural_of(M, q, z):
            z = zr
    return code, pivots, z, ray

@jit_inline
def _row_times_inverse(i, k, n, MTd, unk, Ainv, out):
    """out' = c' Ainv with c_a = MTd[unk[a] - n, i]: row i of [M_iZ d_i] times the inverse, row-contiguous."""
    for e in range(k):
        out[e] = 0.0
    for a in range(k):
        ca = MTd[unk[a] - n, i]
        if ca != 0.0:
            for e in range(k):
                out[e] += ca * Ainv[a, e]


@jit
def _refactor(n, k, MTd, eq_rows, unk, Ainv, q, x, work):
    """Ainv = inv(A) from scratch and x = -Ainv q_W; False if A is numerically singular."""
    for e in range(k):
        i = eq_rows[e]
        for a in range(k):
            work[e, a] = MTd[unk[a] - n, i]
    if not gauss_jordan_inverse(work, k, Ainv):
        return False
    for a in range(k):
        s = 0.0
        for e in range(k):
            s -= Ainv[a, e] * q[eq_rows[e]]
        x[a] = s
    return True


@jit
def _lexico_tie(n, k, m, cand, ratio, dx, dwv, eq_pos, unk, MTd, Ainv, rows):
    """The lexicographic rule among m > 1 candidates tied on the minimum ratio (kernels/dense.py
    tie_filter applied; codes: a basic unknown a, or n + 1 + i for a basic w row i): z0 wins, else
    the rows of B^-1 divided by the pivot column are compared column by column. Entry (p, c) of
    B^-1: column c is 0 but for w_c's row when w_c is basic (q_c moves only w_c); else, with
    pc = pos(c) among the equations, -Ainv[a, pc] for a basic unknown a and -(c_i' Ainv)[pc] for a
    basic w row i. ``rows`` (n+1, n+1) is work space: row i holds c_i' Ainv for each tied basic w
    row i, so each entry costs O(1) (degenerate contact stacks tie over many columns; O(k) per entry
    made the scan O(n m k))."""
    Z0 = 2 * n
    for t in range(m):
        if cand[t] <= n and unk[cand[t]] == Z0:
            return cand[t]
    for t in range(m):
        if cand[t] > n:
            _row_times_inverse(cand[t] - n - 1, k, n, MTd, unk, Ainv, rows[cand[t] - n - 1])
    c = 0
    while m > 1 and c < n:
        pc = eq_pos[c]
        for t in range(m):
            code = cand[t]
            if code <= n:
                e = 0.0 if pc < 0 else -Ainv[code, pc]
                ratio[t] = e / -dx[code]
            else:
                i = code - n - 1
                if pc < 0:
                    e = 1.0 if i == c else 0.0
                else:
                    e = -rows[i, pc]
                ratio[t] = e / -dwv[i]
        m = tie_filter(cand, ratio, m, LEX_COLUMN_TIE)
        c += 1
    return cand[0]


@jit
def _basis_drift(n, k, MTd, q, eq_rows, unk, Ainv, x, v, u):
    """How far the rank-one updates have drifted, in O(k^2): the largest of |Ainv (A p) - p|_inf for
    the probe p_a = 1 + a / k (the inverse's error E shows as E A p) and of the basic solution's
    relative residual max_e |q_e + (A x)_e| / (|q_e| + sum_a |A_ea x_a|) (A x = -q_W, _refactor).
    The tableau never refactorises: a fixed O(k^3) refactorisation every max(64, k) pivots costs a
    large share of a solve (docs/benchmarks-tuning.md) while its drift stays ~1e-14 on
    well-conditioned bases.
    v, u: work space (k,)."""
    res = 0.0
    for e in range(k):
        i = eq_rows[e]
        acc = q[i]
        mag = abs(q[i])
        ve = 0.0
        for a in range(k):
            c = MTd[unk[a] - n, i]
            ve += c * (1.0 + a / k)
            p = c * x[a]
            acc += p
            mag += abs(p)
        v[e] = ve
        if mag > 0.0:
            res = max(res, abs(acc) / mag)
    _matvec(Ainv, v, u, k)
    drift = res
    for a in range(k):
        drift = max(drift, abs(u[a] - (1.0 + a / k)))
    return drift


@jit
def _refine_and_read(n, k, MTd, q, eq_rows, unk, Ainv, x, work, tmp, corr, out_z):
    """Two steps of iterative refinement of A x = -q_W with the current inverse (O(k^2) each, on A
    gathered once), then z read off the basic unknowns (clipped at 0)."""
    for e in range(k):
        i = eq_rows[e]
        for a in range(k):
            work[e, a] = MTd[unk[a] - n, i]
    for rep in range(2):
        _matvec(work, x, tmp, k)
        for e in range(k):
            tmp[e] = -q[eq_rows[e]] - tmp[e]
        _matvec(Ainv, tmp, corr, k)
        for a in range(k):
            x[a] += corr[a]
    for a in range(k):
        if unk[a] < 2 * n:
            out_z[unk[a] - n] = max(x[a], 0.0)


@jit
def _infeasibility(n, k, MTd, q, eq_pos, unk, x, wv):
    """How far the complementary basis (z0 not basic) is from feasible: the basic w's recomputed
    (wv_i = q_i + M_iZ x on the rows outside W) and the largest relative negativity of a basic
    variable, measured as the library's certified residual measures it (a z in units of max|z|, a w
    in units of max(|q_i| + sum_j |M_ij z_j|, NORMWISE_FLOOR max|q|)). Returns (that number, the code
    of the most negative basic variable: a position in ``unk``, or n + 1 + i for row i's w; -1 if none)."""
    zmax = 0.0
    qmax = 0.0
    for a in range(k):
        if unk[a] < 2 * n:
            zmax = max(zmax, abs(x[a]))
    for i in range(n):
        qmax = max(qmax, abs(q[i]))
    floor = NORMWISE_FLOOR * qmax
    worst = 0.0
    lowest = 0.0
    code = -1
    for a in range(k):
        if unk[a] < 2 * n and x[a] < 0.0:
            worst = max(worst, -x[a] / zmax)
            if x[a] < lowest:
                lowest = x[a]
                code = a
    for i in range(n):
        if eq_pos[i] < 0:
            s = q[i]
            t = abs(q[i])
            for a in range(k):
                p = MTd[unk[a] - n, i] * x[a]
                s += p
                t += abs(p)
            wv[i] = s
            if s < 0.0:
                u = max(t, floor)
                worst = max(worst, -s / u) if u > 0.0 else worst
                if s < lowest:
                    lowest = s
                    code = n + 1 + i
    return worst, code


@jit
def _restart_from_basis(n, MTd, q, eq_rows, eq_pos, unk, Ainv, x, wv, work):
    """Prepare a restart of Lemke's method from the complementary basis it ended on (z0 just left).

    On ill-conditioned degenerate contact LCPs (Stewart-Trinkle with redundant box corners, cond(M)
    ~ 1e8) the ratio tests' choices among near-tied degenerate rows are decided by roundings, and the
    basis z0 leaves can be infeasible, re-solved exactly, by far more than rounding (w_i = -1e-7
    relative, sometimes -1, on column-collapse; a smaller pivot tolerance or a refactorisation at
    every pivot left those bases as they were). When the basis is
    infeasible by more than RESTART_TOL (:func:`_infeasibility`), it is refactorised (Ainv =
    inv(M[W, Z]) afresh, x = -Ainv q_W) and measured again; if still infeasible, the covering vector
    MTd[n] becomes d' with d'_i = [i not in W] - M_iZ 1: with it, z0 entering moves every basic
    variable up at rate 1 (A 1 = -d'_W on the equations, M_iZ 1 + d'_i = 1 elsewhere), so a first
    pivot that takes out the most negative basic variable leaves every basic variable >= 0: Lemke's
    start, an almost complementary feasible basis (Cottle-Pang-Stone §4.4), on the problem's own
    (M, q), from which the pivots continue as usual at the scale of the infeasibility.
    Returns the code of that first leaving variable (``_infeasibility``), -1 when the basis is
    feasible as it is, -3 when it is feasible once refactorised (x recomputed: read z again), -2
    when the basis is singular (keep the answer)."""
    k = 0
    for i in range(n):
        k += eq_pos[i] >= 0
    worst, code = _infeasibility(n, k, MTd, q, eq_pos, unk, x, wv)
    if worst <= RESTART_TOL:
        return -1
    if k == 0 or not _refactor(n, k, MTd, eq_rows, unk, Ainv, q, x, work):
        return -2
    worst, code = _infeasibility(n, k, MTd, q, eq_pos, unk, x, wv)
    if worst <= RESTART_TOL or code < 0:
        return -3
    for i in range(n):
        s = 0.0 if eq_pos[i] >= 0 else 1.0
        for a in range(k):
            s -= MTd[unk[a] - n, i]
        MTd[n, i] = s
    return code


@jit_noraise
def lemke_reduced_kernel(MTd, q, max_pivots, refactor_every, pivot_tol, Ainv, x, wv, eq_rows, eq_pos, unk, unk_pos,
                         dx, dwv, cand, ratio, tmp, work2, ray, out_z, resume=-1):
    """Lemke's method (covering vector d > 0, lexicographic rule) on the reduced basis.

    MTd = [M d]' ((n+1) x n, C-contiguous: column reads are contiguous). A pivot column entry counts as blocking
    only above pivot_tol * max(1, max |entry|) (tolerances.LEMKE_PIVOT by default; solvers/lemke.py
    retries with larger values when an answer does not certify). Work arrays: Ainv (n+1, n+1), x (n+1,),
    wv (n,), eq_rows (n+1,) int64, eq_pos (n,) int64, unk (n+1,) int64, unk_pos (2n+1,) int64, dx (n+1,),
    dwv (n,), cand (2n+2,) int64, ratio (2n+2,), tmp (n+1,), work2 (n+1, n+1), ray (2n+1,), out_z (n,).
    ``resume`` >= 0: continue from the state the work arrays hold (a complementary basis prepared by
    :func:`_restart_from_basis`, whose answer is the code of the first leaving variable): z0 enters,
    that variable leaves, and the pivots go on as usual.
    Returns (status, pivots).
    """
    n = q.shape[0]
    Z0 = 2 * n
    d = MTd[n]   # the covering vector
    if resume < 0:
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
    else:   # a restart (_restart_from_basis): the basis is in the work arrays, z0 enters
        k = 0
        for i in range(n):
            k += eq_pos[i] >= 0
        pivots = 0
        since_refactor = 0
        entering = Z0
    while True:
        if pivots >= max_pivots:
            return MAX_PIVOTS, pivots
        # ---- direction of the basic variables per unit increase of the entering variable:
        # z_j enters: A dx = -M[W, j]; w_j enters: dx = Ainv[:, pos(j)]
        jcol = entering - n
        if jcol >= 0:
            for e in range(k):
                tmp[e] = -MTd[jcol, eq_rows[e]]
            _matvec(Ainv, tmp, dx, k)
        else:
            pe = eq_pos[entering]
            for a in range(k):
                dx[a] = Ainv[a, pe]
        # (the loops below over n are written without data-dependent branches: a branch per row,
        # taken at random, cost a fifth of a pivot from n = 12 on (perf, Murty's example); each
        # chooses by a select, and the blocking rows are listed by adding the test's 0 or 1)
        dmax = 0.0
        for a in range(k):
            av = abs(dx[a])
            dmax = av if av > dmax else dmax
        # basic w rows: dw_i = M[i, j] + sum_a M[i, z-col a] dx_a + d_i dx_z0, column-oriented on
        # the contiguous rows of MTd (z0's term first, then the z columns in basis order)
        p0 = unk_pos[Z0]
        dz0 = dx[p0] if p0 >= 0 else 0.0
        if jcol >= 0:
            for i in range(n):
                dwv[i] = d[i] * dz0 + MTd[jcol, i]
        else:
            for i in range(n):
                dwv[i] = d[i] * dz0
        # the z columns four at a time (cand, ratio: free until the ratio test): one load and store
        # of dwv per four columns, each entry still summed in basis order (the same rounding)
        nc = 0
        for a in range(k):
            if unk[a] != Z0:
                cand[nc] = unk[a] - n
                ratio[nc] = dx[a]
                nc += 1
        b = 0
        while b + 4 <= nc:
            c0, c1, c2, c3 = cand[b], cand[b + 1], cand[b + 2], cand[b + 3]
            f0, f1, f2, f3 = ratio[b], ratio[b + 1], ratio[b + 2], ratio[b + 3]
            for i in range(n):
                dwv[i] = (((dwv[i] + f0 * MTd[c0, i]) + f1 * MTd[c1, i]) + f2 * MTd[c2, i]) + f3 * MTd[c3, i]
            b += 4
        while b < nc:
            c0 = cand[b]
            f0 = ratio[b]
            for i in range(n):
                dwv[i] += f0 * MTd[c0, i]
            b += 1
        for i in range(n):   # 0 on the equation rows (the entering w's row is one of them)
            dw = dwv[i] if eq_pos[i] < 0 else 0.0
            dwv[i] = dw
            av = abs(dw)
            dmax = av if av > dmax else dmax
        tol = pivot_tol * max(1.0, dmax)
        if resume >= 0:   # a restart's first pivot: the most negative basic variable leaves (all rise at rate 1)
            chosen = resume
            resume = -1
        else:
            # ---- minimum ratio over basic unknowns (code a) and basic w rows (code n + 1 + i; dwv is 0
            # on the others); the lexicographic rule only when several tie (_lexico_tie)
            m = 0
            for a in range(k):
                if dx[a] < -tol:
                    cand[m] = a
                    ratio[m] = x[a] / -dx[a]
                    m += 1
            m0 = m
            for i in range(n):
                cand[m] = i
                m += dwv[i] < -tol
            for t in range(m0, m):
                i = cand[t]
                ratio[t] = wv[i] / -dwv[i]
                cand[t] = n + 1 + i
            if m == 0:   # nothing blocks: a secondary ray
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
            m = tie_filter(cand, ratio, m, LEX_RATIO_TIE)
            chosen = cand[0]
            if m > 1:
                chosen = _lexico_tie(n, k, m, cand, ratio, dx, dwv, eq_pos, unk, MTd, Ainv, work2)
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
        for i in range(n):   # dwv is 0 on the equation rows, whose wv is never read (set when one leaves)
            wv[i] += theta * dwv[i]
        pivots += 1
        since_refactor += 1
        # ---- basis update
        if entering >= n:
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
                _row_times_inverse(i, k, n, MTd, unk, Ainv, tmp)  # v' = c' Ainv
                # u = Ainv b = -dx; the tableau's order: the new row v / s first, then rank one with it
                # (k divisions, not k^2; (u_a / s) v_e instead rounds differently from the tableau in
                # near-ties of the lexicographic rule: 5 pivot sequences of 800 against 1)
                for e in range(k):
                    tmp[e] /= s
                for a in range(k):
                    ua = -dx[a]
                    for e in range(k):
                        Ainv[a, e] += ua * tmp[e]
                    Ainv[a, k] = -ua / s
                for e in range(k):
                    Ainv[k, e] = -tmp[e]
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
                _row_times_inverse(i, k, n, MTd, unk, Ainv, tmp)
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
            _refine_and_read(n, k, MTd, q, eq_rows, unk, Ainv, x, work2, tmp, dx, out_z)
            return SOLVED, pivots
        if since_refactor >= max(refactor_every, k) and k > 0:   # checkpoint: O(k^2) test, O(k^3) cure
            since_refactor = 0
            if _basis_drift(n, k, MTd, q, eq_rows, unk, Ainv, x, tmp, dx) > REFACTOR_DRIFT:
                if not _refactor(n, k, MTd, eq_rows, unk, Ainv, q, x, work2):
                    return NUMERICAL, pivots
                for i in range(n):
                    if eq_pos[i] < 0:
                        s = q[i]
                        for a in range(k):
                            s += MTd[unk[a] - n, i] * x[a]
                        wv[i] = s
        entering = leaving + n if leaving < n else leaving - n


@jit
def lemke_reduced_certified(M0, q0, s, d, max_pivots, refactor_every, pivot_tol, floor_factor, restarts=RESTARTS):
    """One compiled call for a small dense LCP: scale (M, q) = (M0, q0) / s, set up the work arrays
    of :func:`lemke_reduced_kernel`, run it, and certify the answer with the library's one residual
    (kernels/residual.py ``lcp_certify_dense`` with floor_factor, computed on (M0, q0): the same
    numbers ``LCP.certify`` gives for this z, since the scaled problem has the same solutions). An
    empty covering vector d means all ones.

    Per-call cost matters here: the grasp and contact LCPs of the papers have 10-70 variables, where
    allocating the work arrays and computing the residual from Python cost more than the pivots; the
    work arrays are carved out of four allocations (the scaled copy [M d]', the two square blocks,
    the float and the integer vectors), and z, w = M0 z + q0 and the ray share one output array.
    Returns (status, pivots, out, numbers) with out = [z (n) | w (n) | ray (2n + 1)] and numbers the
    six of ``lcp_certify_dense`` (nat, comp, infeas, rel_nat, rel_comp, rel_infeas) as one tuple (what
    solvers/lemke.py hands to solve() as it is).
    """
    n = q0.shape[0]
    MTd = np.empty((n + 1, n))   # the only n x n copy: a second one costs page faults at n ~ 1000
    sq = np.empty((2 * n + 2, n + 1))
    Ainv, work2 = sq[:n + 1], sq[n + 1:]
    fv = np.empty(8 * n + 5)
    q, x, dx, tmp = fv[:n], fv[n:2 * n + 1], fv[2 * n + 1:3 * n + 2], fv[3 * n + 2:4 * n + 3]
    wv, dwv, ratio = fv[4 * n + 3:5 * n + 3], fv[5 * n + 3:6 * n + 3], fv[6 * n + 3:]
    iv = np.empty(7 * n + 5, np.int64)
    eq_rows, eq_pos, unk = iv[:n + 1], iv[n + 1:2 * n + 1], iv[2 * n + 1:3 * n + 2]
    unk_pos, cand = iv[3 * n + 2:5 * n + 3], iv[5 * n + 3:]
    out = np.empty(4 * n + 1)
    z, w, ray = out[:n], out[n:2 * n], out[2 * n:]
    for v in range(2 * n + 1):
        ray[v] = 0.0
    for i in range(n):
        q[i] = q0[i] / s
        for j in range(n):
            MTd[j, i] = M0[i, j] / s
    for i in range(n):
        MTd[n, i] = d[i] if d.shape[0] else 1.0
    code, pivots = lemke_reduced_kernel(MTd, q, max_pivots, refactor_every, pivot_tol, Ainv, x, wv, eq_rows, eq_pos,
                                        unk, unk_pos, dx, dwv, cand, ratio, tmp, work2, ray, z)
    r = lcp_certify_dense(M0, q0, z, w, wv, floor_factor)   # scale-free: the same on (M0, q0) / s
    for _ in range(restarts):
        # the basis z0 left may be infeasible beyond rounding (degenerate rows the pivot tolerance let
        # go): refactorised, and restarted from where it is infeasible (_restart_from_basis); the
        # answer with the smaller certified residual is kept
        if code != SOLVED or pivots == 0 or max(r[3], r[5]) <= RESTART_TOL:
            break
        first = _restart_from_basis(n, MTd, q, eq_rows, eq_pos, unk, Ainv, x, wv, work2)
        if first == -1 or first == -2:
            break
        before = z.copy()
        if first == -3:     # feasible once refactorised: z read again from the fresh inverse
            k = 0
            for i in range(n):
                k += eq_pos[i] >= 0
            _refine_and_read(n, k, MTd, q, eq_rows, unk, Ainv, x, work2, tmp, dx, z)
            code2 = SOLVED
        else:
            code2, more = lemke_reduced_kernel(MTd, q, max_pivots - pivots, refactor_every, pivot_tol, Ainv, x, wv,
                                               eq_rows, eq_pos, unk, unk_pos, dx, dwv, cand, ratio, tmp, work2, ray,
                                               z, first)
            pivots += more
        r2 = lcp_certify_dense(M0, q0, z, w, wv, floor_factor) if code2 == SOLVED else r
        if code2 != SOLVED or max(r2[3], r2[5]) >= max(r[3], r[5]):
            z[:] = before
            r = lcp_certify_dense(M0, q0, z, w, wv, floor_factor)
            code = SOLVED
            for v in range(2 * n + 1):
                ray[v] = 0.0
            break
        r = r2
    return code, pivots, out, (r[0], r[1], r[2], r[3], r[4], r[5])


@jit
def lemke_reduced_run(M0, q0, s, d, max_pivots, refactor_every, pivot_tol, floor_factor, restarts=RESTARTS):
    """:func:`lemke_reduced_certified` returning (status, pivots, z, ray, relative residual), the
    certified number being max(rel_nat, rel_infeas) (problems/residual.py ``relative_error``)."""
    n = q0.shape[0]
    code, pivots, out, r = lemke_reduced_certified(M0, q0, s, d, max_pivots, refactor_every, pivot_tol, floor_factor,
                                                   restarts)
    return code, pivots, out[:n], out[2 * n:], max(r[3], r[5])


#: symmetric equilibration (:func:`equilibrate_symmetric`): sweeps at most, and the band of row /
#: column maxima, [1/2, 2], at which it stops (powers of two: nothing finer is representable exactly)
EQUILIBRATE_SWEEPS = 20


@jit
def equilibrate_symmetric(M, D, r):
    """Symmetric Ruiz equilibration of a square M (Ruiz 2001, "A scaling algorithm to equilibrate
    both rows and columns norms in matrices", symmetric variant): D (n,) positive with every row and
    column of D M D of largest magnitude in [1/2, 2] (a row and column of zeros keep D_i = 1).
    Each sweep divides every D_i by the square root of max(row_i, column_i) of the current D M D
    (r (n,): work); each D_i is a power of two, so D M D, D q and z = D y are computed exactly (an
    LCP's solutions map one to one: w = M z + q, z >= 0, w >= 0, z.w = 0 iff w' = D w =
    (D M D) y + D q with z = D y, D > 0). Returns the sweeps used."""
    n = M.shape[0]
    for i in range(n):
        D[i] = 1.0
    for sweep in range(EQUILIBRATE_SWEEPS):
        done = True
        for i in range(n):
            m = 0.0
            for j in range(n):
                a = abs(M[i, j]) * D[j]
                b = abs(M[j, i]) * D[j]
                if a > m:
                    m = a
                if b > m:
                    m = b
            m *= D[i]
            r[i] = m
            if m > 0.0 and (m < 0.5 or m > 2.0):
                done = False
        if done:
            return sweep
        for i in range(n):
            if r[i] > 0.0:   # D_i / sqrt(r_i), rounded to a power of two
                D[i] = 2.0 ** np.round(np.log2(D[i]) - 0.5 * np.log2(r[i]))
    return EQUILIBRATE_SWEEPS


@jit
def equilibrate_two_sided(M, R, C, r, c):
    """Ruiz equilibration of rows and columns separately: R, C (n,) powers of two with every row and
    every column of R M C of largest magnitude in [1/2, 2] (r, c (n,): work). The LCP (R M C, R q)
    has the solutions y = C^-1 z of (M, q) (w' = R w: z_i w_i = 0 iff y_i w'_i = 0); it keeps
    P-matrices (principal minors times positive factors), not copositivity, so it is the second
    choice after :func:`equilibrate_symmetric`. Returns the sweeps used."""
    n = M.shape[0]
    for i in range(n):
        R[i] = 1.0
        C[i] = 1.0
    for sweep in range(EQUILIBRATE_SWEEPS):
        for j in range(n):
            c[j] = 0.0
        done = True
        for i in range(n):
            m = 0.0
            for j in range(n):
                a = abs(M[i, j]) * R[i] * C[j]
                if a > m:
                    m = a
                if a > c[j]:
                    c[j] = a
            r[i] = m
        for i in range(n):
            if (r[i] > 0.0 and (r[i] < 0.5 or r[i] > 2.0)) or (c[i] > 0.0 and (c[i] < 0.5 or c[i] > 2.0)):
                done = False
        if done:
            return sweep
        for i in range(n):
            if r[i] > 0.0:
                R[i] = 2.0 ** np.round(np.log2(R[i]) - 0.5 * np.log2(r[i]))
            if c[i] > 0.0:
                C[i] = 2.0 ** np.round(np.log2(C[i]) - 0.5 * np.log2(c[i]))
    return EQUILIBRATE_SWEEPS


@jit
def refine_scaled_answer(M, q, R, C, Ms, y, steps, z):
    """z = C y refined on the unscaled LCP (M, q), y the answer of the equilibrated LCP
    (Ms = R M C, R q) (:func:`lemke_scaled_run`): the complementary basis y reads (z_i basic where
    y_i > w'_i, w' = Ms y + R q), then ``steps`` of iterative refinement of its basis system
    M_aa z_a = -q_a, the residual taken on (M, q) itself and the correction solved on the
    equilibrated block Ms_aa = R_a M_aa C_a (Gaussian elimination with partial pivoting,
    kernels/dense.py ``solve_small``). Why: the scaled run certifies on (Ms, R q); mapped back,
    z = C y can lose the digits the scaling spread over rows of different units, and refinement in
    the original units recovers them (Higham, Accuracy and Stability, §12.1).

    Writes the refined z (clipped at 0) and returns True; False (z unspecified) where the block is
    exactly singular or the refined z not finite. The caller certifies z and keeps the better of
    the two answers."""
    n = y.shape[0]
    act = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += Ms[i, j] * y[j]
        z[i] = 0.0
        if y[i] > s + R[i] * q[i]:
            act[k] = i
            k += 1
    if k == 0:
        return True
    za = np.empty(k)
    b = np.empty(k)
    dz = np.empty(k)
    A = np.empty((k, k))
    for r in range(k):
        za[r] = C[act[r]] * y[act[r]]
    for _ in range(steps):
        for r in range(k):
            i = act[r]
            s = 0.0
            for c in range(k):
                s += M[i, act[c]] * za[c]
                A[r, c] = Ms[i, act[c]]
            b[r] = R[i] * (s + q[i])
        if not solve_small(A, b, k, dz, 0.0):    # an exactly zero pivot: singular
            return False
        for r in range(k):
            za[r] = za[r] - C[act[r]] * dz[r]
    for r in range(k):
        if not np.isfinite(za[r]):
            return False
        z[act[r]] = max(za[r], 0.0)
    return True


@jit
def lemke_scaled_run(M0, q0, d, symmetric, max_pivots, refactor_every, pivot_tol, floor_factor, restarts,
                     refine_above):
    """One reduced Lemke run on the equilibrated LCP (R M0 C, R q0) (symmetric: R = C = D,
    :func:`equilibrate_symmetric`; else :func:`equilibrate_two_sided`; the covering d scaled as R d,
    empty for all ones), its answer mapped back by z = C y and certified on (M0, q0) with the
    library's one residual (kernels/residual.py ``lcp_certify_dense``, max(rel_nat, rel_infeas));
    where that residual exceeds ``refine_above`` on a SOLVED run, z refined on (M0, q0)
    (:func:`refine_scaled_answer`) and the refined answer kept if it certifies better.

    Why (solvers/lemke.py ``equilibration``): Lemke's pivot tolerances and lexicographic ties compare
    entries of different rows, so a jointed hand's LCP, motor rows ~1e5 beside contact rows ~1e-6
    (arechavaleta eq. 15), can end its unscaled run on a basis that does not certify; the scaled
    problem has the same solutions (Cottle-Pang-Stone §4.1). The one place this retry is computed:
    solvers/lemke.py ``_run_scaled`` (solve()) and sim/st_kernels.py ``st_mixed_step`` (the compiled
    Stewart-Trinkle step) both call it.

    Returns (status, pivots, z, residual, refined residual (-1.0 when not refined), smallest and
    largest scale factor)."""
    n = q0.shape[0]
    R = np.empty(n)
    C = np.empty(n)
    if symmetric:
        equilibrate_symmetric(M0, R, np.empty(n))
        for i in range(n):
            C[i] = R[i]
    else:
        equilibrate_two_sided(M0, R, C, np.empty(n), np.empty(n))
    Ms = np.empty((n, n))       # exact: powers of two
    qs = np.empty(n)
    for i in range(n):
        qs[i] = R[i] * q0[i]
        for j in range(n):
            Ms[i, j] = M0[i, j] * R[i] * C[j]
    s = lcp_scale(Ms, qs)
    ds = np.empty(d.shape[0])   # the same covering in the scaled rows' units
    for i in range(d.shape[0]):
        ds[i] = R[i] * d[i]
    code, pivots, y, _, _ = lemke_reduced_run(Ms, qs, s, ds, max_pivots, refactor_every, pivot_tol, floor_factor,
                                              restarts)
    z = np.empty(n)
    for i in range(n):
        z[i] = C[i] * y[i]
    w = np.empty(n)
    t = np.empty(n)
    r = lcp_certify_dense(M0, q0, z, w, t, floor_factor)
    res = max(r[3], r[5])
    refined = -1.0
    if res > refine_above and code == SOLVED:
        zr = np.empty(n)
        if refine_scaled_answer(M0, q0, R, C, Ms, y, 2, zr):
            r = lcp_certify_dense(M0, q0, zr, w, t, floor_factor)
            refined = max(r[3], r[5])
            if refined < res:
                z, res = zr, refined
    lo, hi = np.inf, 0.0
    for i in range(n):
        lo = min(lo, R[i], C[i])
        hi = max(hi, R[i], C[i])
    return code, pivots, z, res, refined, lo, hi
