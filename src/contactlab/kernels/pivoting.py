"""Principal pivoting kernels: Cottle-Dantzig (with a bordered inverse of M_CC updated in O(k^2))
and Drumwright's modified PPM I on the factored contact form (Cholesky of N_B M^-1 N_B' updated
by row append / Givens delete).

Status codes: 0 solved, 1 no feasible direction (unbounded driving ray: no solution for the
claimed class), 2 pivot limit, 3 numerical failure (singular pivot block), 4 not a P-matrix
(nonsymmetric M with a principal minor ratio <= 0: outside Cottle-Dantzig's guarantee).
"""
import numpy as np

from ._jit import jit
from .dense import border_add, border_remove, chol_append_column, chol_delete, chol_solve
from .residual import lcp_certify_dense, lcp_residual_kernel
from .tolerances import DEPENDENT_W, ITERATE, NORMWISE_FLOOR, PIVOT, SYMMETRY, TIE

SOLVED, UNBOUNDED, MAX_PIVOTS, NUMERICAL, NOT_P = 0, 1, 2, 3, 4


@jit
def _chol_append_sym(L, k, M, idx, a, col, tmp):
    """Append index a to the Cholesky factor of M[idx, idx] (symmetric M)."""
    for i in range(k):
        col[i] = M[idx[i], a]
    return chol_append_column(L, k, col, M[a, a], idx, a, tmp, PIVOT)


@jit
def _set_add(sym, F, k, M, idx, a, w1, w2):
    if sym:
        return _chol_append_sym(F, k, M, idx, a, w1, w2)
    return border_add(F, k, M, idx, a, w1, w2)


@jit
def _set_remove(sym, F, k, idx, p):
    if sym:
        chol_delete(F, k, idx, p)
        return True
    return border_remove(F, k, idx, p)


@jit
def _factor_solve(sym, F, k, b, x):
    """x[:k] = M_CC^-1 b with the factor F: Cholesky L (sym) or the bordered inverse (not sym)."""
    if sym:
        chol_solve(F, k, b, x)
    else:
        for a in range(k):
            s = 0.0
            for c in range(k):
                s += F[a, c] * b[c]
            x[a] = s


@jit
def _direction(sym, F, k, M, idx, dd, u, w1, w2):
    """u[:k] = -M_CC^-1 M_Cd from the factor F (Cholesky L if sym, else the bordered inverse)."""
    for i in range(k):
        w1[i] = M[idx[i], dd]
    _factor_solve(sym, F, k, w1, w2)
    for i in range(k):
        u[i] = -w2[i]


@jit
def dantzig_kernel(M, MT, q, z, w, inC, idx, k0, Minv, sym, max_pivots, mmax, dz, dw, u, v, skip, counts):
    """Cottle-Dantzig principal pivoting (loomis-balkcom §II; Baraff 1994 for the step rules).

    On entry: z, w = M z + q complementary with w[idx[:k0]] = 0, z >= 0, and Minv[:k0,:k0] the
    factor of M[idx[:k0], idx[:k0]] (k0 = 0 for a cold start): its lower Cholesky factor when
    ``sym`` (symmetric PSD M: stable, and rank deficiency is detected), else its inverse kept by
    bordering (nonsymmetric P-matrices, whose principal blocks are all nonsingular). Each major
    cycle drives one index with w_d < 0 to feasibility; minor cycles are principal pivots keeping
    all other pairs feasible.

    Tolerances scale with the iterate (kernels/tolerances.py): w_i counts as negative only below
    -ITERATE * (max|q| + mmax * max|z|) (mmax = max |M_ij|), recomputed every major cycle, so the
    rounding error of a large z never starts a cycle. counts = [major cycles, pivots, d]; on
    UNBOUNDED (no blocking index) u[:k] and d describe the driving ray y (y_d = 1, y_C = u): for
    PSD M it is a Farkas vector (M'y <= 0, q'y = w_d < 0), which ``solve()`` checks. Returns (status, k).
    """
    n = q.shape[0]
    k = k0
    majors = 0
    pivots = 0
    qmax = 0.0
    for i in range(n):
        qmax = max(qmax, abs(q[i]))
    counts[2] = -1
    while True:
        zmax = 0.0
        for i in range(n):
            zmax = max(zmax, abs(z[i]))
        tol = ITERATE * (qmax + mmax * zmax)
        # distinguished index: the most negative w outside C
        dd = -1
        worst = -tol
        for i in range(n):
            if not inC[i] and w[i] < worst:
                worst = w[i]
                dd = i
        if dd < 0:
            counts[0] = majors
            counts[1] = pivots
            return SOLVED, k
        majors += 1
        degenerate = 0
        for i in range(n):
            skip[i] = False
        while True:
            if pivots >= max_pivots:
                counts[0] = majors
                counts[1] = pivots
                return MAX_PIVOTS, k
            # direction: dz_d = 1, dz_C = -M_CC^-1 M_Cd, dw = M dz
            _direction(sym, Minv, k, M, idx, dd, u, dz, v)
            umax = 1.0
            for j in range(k):
                umax = max(umax, abs(u[j]))
            if not np.isfinite(umax):
                counts[0] = majors
                counts[1] = pivots
                return NUMERICAL, k
            # dw = M[:, d] + M[:, C] u as contiguous axpys over rows of MT = M' (dw_C = 0)
            for i in range(n):
                dw[i] = MT[dd, i]
            for j in range(k):
                f = u[j]
                c = idx[j]
                for i in range(n):
                    dw[i] += f * MT[c, i]
            for j in range(k):
                dw[idx[j]] = 0.0
            utol = ITERATE * umax              # direction entries below this are zero
            dtol = ITERATE * mmax * umax       # dw entries below this are zero
            step_d = np.inf
            if dw[dd] > dtol:
                step_d = -w[dd] / dw[dd]
            step = np.inf
            block = -1
            block_pos = -1
            brate = 0.0
            # minimum ratio. Degenerate ties (z_j = 0 in C, w_i = 0 outside C: rank-deficient
            # brickwork has hundreds) decide the pivot count: a z leaving is preferred to a w
            # entering, then the steepest rate; after n zero steps in a row in one major cycle the
            # least-index rule (Chang's, finite for PSD M) takes over, so no cycling is possible.
            bland = degenerate >= n
            for j in range(k):
                if u[j] < -utol:
                    r = max(z[idx[j]], 0.0) / -u[j]
                    tie = TIE * (abs(step) + zmax * ITERATE) if step < np.inf else 0.0
                    if r < step - tie or (r <= step + tie and (
                            (bland and idx[j] < block) or (not bland and (
                                block_pos < 0 or -u[j] > brate or (-u[j] == brate and idx[j] < block))))):
                        step = r
                        block = idx[j]
                        block_pos = j
                        brate = -u[j]
            for i in range(n):
                if not inC[i] and not skip[i] and i != dd and dw[i] < -dtol and w[i] >= -tol:
                    r = max(w[i], 0.0) / -dw[i]
                    tie = TIE * (abs(step) + zmax * ITERATE) if step < np.inf else 0.0
                    if r < step - tie or (r <= step + tie and (
                            (bland and i < block) or (not bland and block_pos < 0 and (
                                -dw[i] > brate or (-dw[i] == brate and i < block))))):
                        step = r
                        block = i
                        block_pos = -1
                        brate = -dw[i]
            # ties go to the driving index: with PSD M a row dependent on C + {d} blocks exactly
            # when d does, and adding it would make M_CC singular (Baraff 1994, §6)
            if step_d < np.inf and step_d <= step + TIE * (abs(step_d) + zmax * ITERATE):
                step = step_d
                block = dd
                block_pos = -1
            if block < 0:
                counts[0] = majors
                counts[1] = pivots
                counts[2] = dd
                return UNBOUNDED, k
            if step <= 0.0:
                step = 0.0
                degenerate += 1
            else:
                degenerate = 0
            z[dd] += step
            for j in range(k):
                z[idx[j]] += step * u[j]
            for i in range(n):
                w[i] += step * dw[i]
            for j in range(k):
                w[idx[j]] = 0.0
            pivots += 1
            if block == dd:
                w[dd] = 0.0
                if not _set_add(sym, Minv, k, M, idx, dd, dz, v):
                    counts[0] = majors
                    counts[1] = pivots
                    counts[2] = dd
                    return NUMERICAL if sym else NOT_P, k
                inC[dd] = True
                k += 1
                break
            elif block_pos >= 0:
                z[block] = 0.0
                if not _set_remove(sym, Minv, k, idx, block_pos):
                    counts[0] = majors
                    counts[1] = pivots
                    return NUMERICAL, k
                inC[block] = False
                k -= 1
            else:
                if _set_add(sym, Minv, k, M, idx, block, dz, v):
                    w[block] = 0.0
                    inC[block] = True
                    k += 1
                elif not sym:
                    # a P-matrix has no singular or negative principal block: M is not P
                    counts[0] = majors
                    counts[1] = pivots
                    counts[2] = block
                    return NOT_P, k
                elif abs(w[dd]) <= 1e4 * tol and _set_add(sym, Minv, k, M, idx, dd, dz, v):
                    # the blocking row depends on C + {d} (PSD M): in exact arithmetic it ties
                    # with d, so the major cycle ends here instead
                    w[dd] = 0.0
                    inC[dd] = True
                    k += 1
                    break
                else:
                    # the row depends on C (PSD M): its w and dw vanish in exact arithmetic and it
                    # blocked on roundoff; leave it out for this major cycle (if its w later turns
                    # negative, a later major cycle drives it)
                    skip[block] = True


@jit
def _g_row(indptr, indices, data, Lm, a, g):
    """g = L^-1 N[a]' (forward substitution, O(m^2)) for CSR row a of N: row a of G = N L^-T,
    formed only when needed."""
    m = Lm.shape[0]
    for t in range(m):
        g[t] = 0.0
    for p in range(indptr[a], indptr[a + 1]):
        g[indices[p]] = data[p]
    for t in range(m):
        v = g[t]
        for r in range(t):
            v -= Lm[t, r] * g[r]
        g[t] = v / Lm[t, t]


@jit
def _chol_append_g(L, k, Gb, rows, a, g, col, tmp, cfm):
    """Append row a (its G row ``g``) to the Cholesky factor of G_B G_B' + cfm I; Gb[:k] caches the
    G rows of the non-basic set. O(k m + k^2)."""
    m = Gb.shape[1]
    for i in range(k):
        v = 0.0
        for t in range(m):
            v += Gb[i, t] * g[t]
        col[i] = v
    gg = cfm
    for t in range(m):
        gg += g[t] * g[t]
    if not chol_append_column(L, k, col, gg, rows, a, tmp, PIVOT):
        return False
    for t in range(m):
        Gb[k, t] = g[t]
    return True


@jit
def _chol_delete_g(L, k, rows, Gb, p):
    """Delete position p from the factor and from the cached G rows."""
    chol_delete(L, k, rows, p)
    m = Gb.shape[1]
    for i in range(p, k - 1):
        for t in range(m):
            Gb[i, t] = Gb[i + 1, t]






@jit
def ppm_kernel(indptr, indices, data, Lm, q, cfm, max_iter, L, rows, Gb, zb, wt, tmp, col, g, u, sv, counts):
    """Drumwright's modified PPM I (Alg. 1) on Q = N M^-1 N' + cfm I = G G' + cfm I (G = N L^-T,
    L L' = M), q = N f* + offset. CFM is the bordering [G, sqrt(cfm) I] of Theorem 1 (full row rank)
    without forming it: only the diagonal of the non-basic block changes, so the cost stays
    O(m^3 + m^2 n) (the non-basic set may then grow to n: L and Gb hold L.shape[0] - 1 rows).

    N comes as CSR arrays. Only the non-basic set's G rows (<= m of them, Lemma 1) are formed, on
    entry (O(m^2) each), with the Cholesky factor of G_B G_B' updated per pivot; w = q + N (M^-1
    N_B' z_B) costs one O(m^2) solve and one pass over the nonzeros of N (lines 13-14). On return rows[:k] are the indices with z > 0,
    zb[:k] their values and wt = w. counts = [iterations, pivots].
    """
    n = q.shape[0]
    m = Lm.shape[0]
    kmax = L.shape[0] - 1
    it = 0
    i0 = 0
    for i in range(n):
        if q[i] < q[i0]:
            i0 = i
    if q[i0] >= 0.0:
        for i in range(n):
            wt[i] = q[i]
        counts[0] = 0
        counts[1] = 0
        return SOLVED, 0
    _g_row(indptr, indices, data, Lm, i0, g)
    if not _chol_append_g(L, 0, Gb, rows, i0, g, col, tmp, cfm):  # a zero row with q < 0: no solution
        counts[0] = 0
        counts[1] = 0
        rows[0] = i0
        return UNBOUNDED, 0
    k = 1
    piv = 1
    while True:
        if it >= max_iter:
            counts[0] = it
            counts[1] = piv
            return MAX_PIVOTS, k
        it += 1
        # z_B = -A^-1 q_B (Alg. 1 lines 10-12)
        for i in range(k):
            tmp[i] = -q[rows[i]]
        chol_solve(L, k, tmp, zb)
        # u = G_B' z_B, sv = L^-T u = M^-1 N_B' z_B, w = q + N sv  (lines 13-14)
        for t in range(m):
            u[t] = 0.0
        for i in range(k):
            c = zb[i]
            for t in range(m):
                u[t] += Gb[i, t] * c
        for t in range(m - 1, -1, -1):
            v = u[t]
            for r in range(t + 1, m):
                v -= Lm[r, t] * sv[r]
            sv[t] = v / Lm[t, t]
        imin = -1
        wmin = 0.0
        wscale = 0.0
        for i in range(n):
            v = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                v += data[p] * sv[indices[p]]
            wscale = max(wscale, abs(q[i]), abs(v))
            wt[i] = q[i] + v
        for i in range(k):
            wt[rows[i]] = 0.0
        for i in range(n):
            if wt[i] < wmin - PIVOT * wscale:
                wmin = wt[i]
                imin = i
        jmin = -1
        zmin = 0.0
        for i in range(k):
            if zb[i] < zmin:
                zmin = zb[i]
                jmin = i
        if imin >= 0:
            if k < kmax:
                _g_row(indptr, indices, data, Lm, imin, g)
            if k < kmax and _chol_append_g(L, k, Gb, rows, imin, g, col, tmp, cfm):
                k += 1  # line 32: i joins the non-basic set
                piv += 1
                if jmin >= 0:  # lines 34-38 (jmin indexes the old rows, unchanged by the append)
                    _chol_delete_g(L, k, rows, Gb, jmin)
                    k -= 1
                    piv += 1
                continue
            if wmin < -DEPENDENT_W * wscale:
                # a dependent row with w clearly < 0: impossible in exact arithmetic (Theorem 1
                # with q in range(N)); report it rather than guess
                counts[0] = it
                counts[1] = piv
                return NUMERICAL, k
            # else: roundoff on a row dependent on the non-basic set; w is zero there
        if jmin < 0:  # lines 16-29
            counts[0] = it
            counts[1] = piv
            return SOLVED, k
        _chol_delete_g(L, k, rows, Gb, jmin)
        k -= 1
        piv += 1


@jit
def refine_active(M, q, z, idx, k, F, sym, r, x):
    """One step of iterative refinement of M_CC z_C = -q_C with the kernel's factor F (O(k^2))."""
    for a in range(k):
        s = -q[idx[a]]
        for b in range(k):
            s -= M[idx[a], idx[b]] * z[idx[b]]
        r[a] = s
    _factor_solve(sym, F, k, r, x)
    for a in range(k):
        z[idx[a]] += x[a]


@jit
def warm_start_kernel(M, q, cand, F, sym, idx, inC, z, w1, w2, x):
    """Factor M_CC over the candidate active indices (dependent ones skipped: PSD M), then drop the
    most negative z_C until z_C = -M_CC^-1 q_C >= 0: a complementary solution of the principal
    sub-problem on C, where loomis-balkcom Theorem 1 starts. All O(k^2) updates, no LAPACK.
    Returns k = |C|; z, inC, idx and F describe the start. The symmetric case calls the Cholesky
    updates directly (through the sym/bordered switch each append cost ~4x its arithmetic)."""
    k = 0
    for t in range(cand.shape[0]):
        a = cand[t]
        if sym:
            for i in range(k):
                w1[i] = M[idx[i], a]
            ok = chol_append_column(F, k, w1, M[a, a], idx, a, w2, PIVOT)
        else:
            ok = border_add(F, k, M, idx, a, w1, w2)
        if ok:
            k += 1
    while k > 0:
        for a in range(k):
            w1[a] = -q[idx[a]]
        if sym:
            chol_solve(F, k, w1, x)
        else:
            _factor_solve(sym, F, k, w1, x)
        worst = 0.0
        p = -1
        for a in range(k):
            if x[a] < worst:
                worst = x[a]
                p = a
        if p < 0:
            break
        if sym:
            chol_delete(F, k, idx, p)
        else:
            border_remove(F, k, idx, p)
        k -= 1
    for i in range(z.shape[0]):
        z[i] = 0.0
        inC[i] = False
    for a in range(k):
        z[idx[a]] = max(x[a], 0.0)
        inC[idx[a]] = True
    return k


@jit
def _natural(M, q, z, w):
    """||min(z, M z + q)||_inf (w written): the solvers' internal check (problems/residual.py
    lcp_natural_residual) in one compiled pass."""
    n = q.shape[0]
    for i in range(n):
        s = q[i]
        for j in range(n):
            if z[j] != 0.0:
                s += M[i, j] * z[j]
        w[i] = s
    return lcp_residual_kernel(z, w)[0]


@jit
def _natural_pair(M, q, za, zb, wa, wb):
    """Whether ||min(za, M za + q)||_inf <= ||min(zb, M zb + q)||_inf (wa, wb written): :func:`_natural`
    of both in one pass over M, each sum in the same order as :func:`_natural`'s (the same numbers,
    bit for bit); the refinement's test in :func:`dantzig_work`."""
    n = q.shape[0]
    for i in range(n):
        sa = q[i]
        sb = q[i]
        for j in range(n):
            m = M[i, j]
            if za[j] != 0.0:
                sa += m * za[j]
            if zb[j] != 0.0:
                sb += m * zb[j]
        wa[i] = sa
        wb[i] = sb
    return lcp_residual_kernel(za, wa)[0] <= lcp_residual_kernel(zb, wb)[0]


@jit
def symmetry_dense(M):
    """(max |M_ij|, max |M_ij - M_ji|) of a dense M in one pass: the numbers of the one symmetry
    test (problems/validation.py ``is_symmetric``: symmetric when the second <= SYMMETRY * the first)."""
    n = M.shape[0]
    mmax = 0.0
    asym = 0.0
    for i in range(n):   # each pair once (|M_ij - M_ji| is the same from either side)
        mmax = max(mmax, abs(M[i, i]))
        for j in range(i + 1, n):
            a, b = M[i, j], M[j, i]
            mmax = max(mmax, max(abs(a), abs(b)))
            asym = max(asym, abs(a - b))
    return mmax, asym


#: dantzig_dense(direct=True) / dantzig_work(direct=True): the problem is one solve() answers otherwise
#: (trivial, or possibly refused); dantzig_work(direct=True) also for an answer that is not SOLVED and certified
NOT_DIRECT = -1


@jit
def work_sizes(n):
    """(float, int, bool) lengths of :func:`dantzig_work`'s three work arrays for n rows."""
    return n * n + 8 * n + 6, 3 * n + 3, 2 * n


@jit
def dantzig_work(M, q, zwarm, max_pivots, refine, floor_factor, direct, tol, fwork, iwork, bwork):
    """The whole Cottle-Dantzig solve of a dense LCP in one compiled call over the caller's work
    arrays (:func:`work_sizes`; solvers/pivoting.py ``DantzigWork`` keeps them between calls, so a
    solve allocates nothing): symmetry (tolerances.SYMMETRY, problems/validation.py
    ``is_symmetric``'s test), the warm start's candidates (zwarm_i > ITERATE (max|q| + max|M|); an
    empty zwarm: cold), :func:`warm_start_kernel`'s exact start on the current data (loomis-balkcom
    Theorem 1), :func:`dantzig_kernel`, one step of :func:`refine_active` kept when it lowers the
    natural residual, and the certification of the final z with the library's one residual kernel
    (:func:`contactlab.kernels.residual.lcp_certify_dense`, ``floor_factor`` =
    tolerances.NORMWISE_FLOOR), which ``solve()`` then reads instead of recomputing it.

    Results in the work arrays: fwork[:n] z, fwork[n:2n] w, fwork[2n:3n] the driving ray y (y_d = 1,
    y_C = u) on UNBOUNDED, fwork[8n:8n+6] the six residual numbers; iwork[:k] the active set sorted.
    The rest is scratch, written before it is read (the factor of M_CC, fwork[8n+6:], the
    directions, the index sets; tests/solvers/test_pivoting.py fills it with NaN and garbage), so only
    z and C are cleared between calls.
    Returns (status, k0, major cycles, pivots, d, k, relative residual): few unboxed numbers, which
    is what makes a solve cost its pivots rather than its arguments and results (docs/computation-reuse.md).

    ``direct`` (solvers/pivoting.py ``DantzigWork.direct``, which answers for solve() without it):
    return NOT_DIRECT without solving unless some q_i < 0 (solve() calls q >= 0 trivial) and every
    diagonal entry of M is > 0 (solve()'s refusal of dantzig needs one <= 0), and NOT_DIRECT after it
    unless the answer is SOLVED and certifies (relative residual <= ``tol``, absolute numbers
    finite), solve()'s own verdict on it."""
    n = q.shape[0]
    if direct:
        neg, pos = False, True
        for i in range(n):
            neg = neg or q[i] < 0.0
            pos = pos and M[i, i] > 0.0
        if not (neg and pos):
            return NOT_DIRECT, 0, 0, 0, 0, 0, np.inf
    z = fwork[:n]
    w = fwork[n:2 * n]
    y = fwork[2 * n:3 * n]
    dz = fwork[3 * n:4 * n]
    dw = fwork[4 * n:5 * n]
    u = fwork[5 * n:6 * n]
    v = fwork[6 * n:7 * n]
    zr = fwork[7 * n:8 * n]
    numbers = fwork[8 * n:8 * n + 6]
    F = fwork[8 * n + 6:8 * n + 6 + n * n].reshape((n, n))
    active = iwork[:n]
    idx = iwork[n:2 * n]
    cand = iwork[2 * n:3 * n]
    counts = iwork[3 * n:3 * n + 3]
    inC = bwork[:n]
    skip = bwork[n:2 * n]
    qmax = 0.0
    for i in range(n):           # z = 0 and C empty: the cold start (the warm start sets its own)
        qmax = max(qmax, abs(q[i]))
        z[i] = 0.0
        inC[i] = False
    mmax, asym = symmetry_dense(M)
    sym = asym <= SYMMETRY * mmax
    MT = M if sym else np.ascontiguousarray(M.T)
    tol0 = ITERATE * (qmax + mmax)
    k0 = 0
    if zwarm.shape[0] == n:
        nc = 0
        for i in range(n):
            if zwarm[i] > tol0:
                cand[nc] = i
                nc += 1
        k0 = warm_start_kernel(M, q, cand[:nc], F, sym, idx, inC, z, dz, dw, u)
    nz = 0                       # w = M z + q over z's nonzeros (each sum in the order of j, as _natural)
    for j in range(n):
        if z[j] != 0.0:
            cand[nz] = j
            nz += 1
    for i in range(n):
        if inC[i]:
            w[i] = 0.0
            continue
        s = q[i]
        for t in range(nz):
            j = cand[t]
            s += M[i, j] * z[j]
        w[i] = s
    code, k = dantzig_kernel(M, MT, q, z, w, inC, idx, k0, F, sym, max_pivots, mmax, dz, dw, u, v, skip, counts)
    if code == SOLVED and refine and k > 0:
        for i in range(n):
            zr[i] = z[i]
        refine_active(M, q, zr, idx, k, F, sym, dz, v)
        ok = True
        for a in range(k):
            if zr[idx[a]] < 0.0:
                ok = False
        if ok and _natural_pair(M, q, zr, z, dz, v):
            for i in range(n):
                z[i] = zr[i]
    for i in range(n):
        z[i] = max(z[i], 0.0)
    c = lcp_certify_dense(M, q, z, w, dz, floor_factor)
    for t in range(6):
        numbers[t] = c[t]
    rel = np.inf if (c[3] != c[3] or c[5] != c[5]) else max(c[3], c[5])   # problems/residual.py certified_error
    if code == UNBOUNDED:
        for i in range(n):
            y[i] = 0.0
        y[counts[2]] = 1.0
        for a in range(k):
            y[idx[a]] = u[a]
    for a in range(k):            # the active set sorted, in place (insertion sort: k <= n, no allocation)
        x = idx[a]
        b = a
        while b > 0 and active[b - 1] > x:
            active[b] = active[b - 1]
            b -= 1
        active[b] = x
    if direct and not (code == SOLVED and rel <= tol and c[0] < np.inf and c[2] < np.inf):
        return NOT_DIRECT, k0, counts[0], counts[1], counts[2], k, rel
    return code, k0, counts[0], counts[1], counts[2], k, rel


@jit
def dantzig_result(M, q, zwarm, max_pivots, refine, floor_factor, direct, tol, fwork, iwork, bwork):
    """:func:`dantzig_work` and its results as solvers/pivoting.py builds a Solution from them: (status,
    k0, majors, pivots, d, relative residual, numbers (6), z (n), w (n), the active set sorted (k)),
    z, w and the active set copied out of the work arrays (the driving ray of an UNBOUNDED stop stays
    in fwork[2n:3n]). ``max_pivots`` < 0: the default 20 n + 100."""
    n = q.shape[0]
    code, k0, majors, pivots, d, k, rel = dantzig_work(M, q, zwarm, 20 * n + 100 if max_pivots < 0 else max_pivots,
                                                       refine, floor_factor, direct, tol, fwork, iwork, bwork)
    c = fwork[8 * n:8 * n + 6]
    return code, k0, majors, pivots, d, rel, (c[0], c[1], c[2], c[3], c[4], c[5]), fwork[:n].copy(), \
        fwork[n:2 * n].copy(), iwork[:k].copy()


@jit
def dantzig_dense(M, q, zwarm, max_pivots, refine, floor_factor):
    """:func:`dantzig_result` with work arrays of its own (kernels/factored.py ``ppm_dense``'s routed
    solve). Returns (status, k0, majors, pivots, d, z (n), w (n), numbers (6), the active set sorted
    (k), y (n): the driving ray y_d = 1, y_C = u on UNBOUNDED, else empty)."""
    n = q.shape[0]
    nf, ni, nb = work_sizes(n)
    fwork = np.empty(nf)
    code, k0, majors, pivots, d, rel, numbers, z, w, active = dantzig_result(
        M, q, zwarm, max_pivots, refine, floor_factor, False, 0.0, fwork, np.empty(ni, dtype=np.int64),
        np.empty(nb, dtype=np.bool_))
    y = fwork[2 * n:3 * n].copy() if code == UNBOUNDED else np.zeros(0)
    return code, k0, majors, pivots, d, z, w, numbers, active, y


@jit
def dantzig_into(M, q, zwarm, max_pivots, tol, fwork, iwork, bwork, zw, active):
    """:func:`dantzig_work` as ``DantzigWork.direct`` calls it with refinement on (``direct``, the
    floor tolerances.NORMWISE_FLOOR, the default pivot limit 20 n + 100 when ``max_pivots`` < 0), its
    arrays written into the caller's: zw[:n] = z, zw[n:2n] = w, active[:k] = the active set sorted.
    Returns numbers only: (status, k0, majors, pivots, k, relative residual, natural residual,
    complementarity, infeasibility).

    Inside a simulator's step every boxed result is a fixed cost that a warm-started solve pays as
    fully as a cold one (loomis-balkcom §IV; sim/reuse_stages.py): an array numba allocates and
    returns is boxed with a Python object of its own besides the ndarray, ~2 us each even in warm
    caches, while the caller's ``np.empty`` costs a third of that, and a tuple of numbers costs
    almost nothing (docs/computation-reuse.md). The same numbers as :func:`dantzig_result`, bit
    for bit (tests/solvers/test_pivoting.py)."""
    n = q.shape[0]
    code, k0, majors, pivots, d, k, rel = dantzig_work(M, q, zwarm, 20 * n + 100 if max_pivots < 0 else max_pivots,
                                                       True, NORMWISE_FLOOR, True, tol, fwork, iwork, bwork)
    for i in range(2 * n):
        zw[i] = fwork[i]
    for a in range(k):
        active[a] = iwork[a]
    c = fwork[8 * n:8 * n + 4]
    return code, k0, majors, pivots, k, rel, c[0], c[1], c[2]
