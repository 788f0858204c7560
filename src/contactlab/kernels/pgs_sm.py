"""PGS-SM on dense symmetric M in one numba kernel (arechavaleta Algorithm PGS-SM; the Python loop of
solvers/pgs_sm.py is the reference and handles sparse, non-symmetric and singular cases).

Per outer iteration: ``k_pgs`` sweeps of kernels.pgs.pgs_dense_kernel, then up to ``k_sm`` subspace
steps: Cholesky of M_FF (F = rows strictly inside their box; upper factor) in the work matrix, dz = -M_FF^-1 w_F,
projection onto the box (coupled bounds from the new normals), and if the projected Newton step raises
phi(z) = 1/2 z'Mz + q'z, a step to the first breakpoint (halved until phi decreases). A step that only
reaches a breakpoint below every halving (M_FF near-singular: CFM-regularised redundant contact rows give
a huge dz) moves a bound into the active set and does not count against k_sm (the paper's SM stage
forms the next reduced system; at most n such steps per stage). The Python loop of solvers/pgs_sm.py
counts every step.

Status: 0 converged, 1 outer limit, 2 non-positive diagonal, 3 non-finite, 5 Cholesky failed (M_FF not
numerically positive definite: the caller continues in Python from the current z), 6 M not exactly
symmetric (:func:`pgs_sm_dense_run` only: the caller's general loop takes the problem).
Work arrays: Fidx (n,) int64, K (n, n), rhs, dz, z_old (n,), free, side_hi (n,) bool; stats (6,) receives
[outer, pgs sweeps, sm steps, residual, projected-search trials (added), 0].

:func:`pgs_sm_dense_run` is the whole solver call in one compiled function (a 10-70-row grasp LCP
costs a few microseconds of arithmetic; the Python preparation around the kernel cost ~10x that):
scaling, CFM, row order, start, the kernel, and the relative-residual check with its tightening
of the absolute target, as solvers/pgs.py ``BoxSweeper`` and problems/residual.py ``box_relative``
define them.
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from .dense import lcp_scale
from .pgs import (BAD_DIAGONAL, CONVERGED, NOT_FINITE, box_natural_residual, dense_refresh_w, pgs_dense_kernel,
                  bounds_scale, row_bounds)
from .residual import box_row

MAX_OUTER, CHOLESKY_FAILED, NOT_SYMMETRIC = 1, 5, 6


@jit
def _phi(z, w, q):
    s = 0.0
    for i in range(z.shape[0]):
        s += z[i] * (w[i] + q[i])
    return 0.5 * s


@jit
def _phi_change(M, z, z_old, w_old, moved):
    """phi(z) - phi(z_old) = d'w_old + 1/2 d'M d with d = z - z_old and w_old = M z_old + q, over the
    rows that moved only (``moved`` (n,) int64 work): |d|^2 operations instead of a refresh of w."""
    m = 0
    for i in range(z.shape[0]):
        if z[i] != z_old[i]:
            moved[m] = i
            m += 1
    lin = 0.0
    quad = 0.0
    for a in range(m):
        i = moved[a]
        di = z[i] - z_old[i]
        lin += di * w_old[i]
        t = 0.0
        for b in range(m):
            j = moved[b]
            t += M[i, j] * (z[j] - z_old[j])
        quad += di * t
    return lin + 0.5 * quad


@jit
def _project(z, lo, hi, findex, mu, free, side_hi):
    """Static rows onto [lo, hi], then coupled rows onto +-mu z_normal; True if nothing moved."""
    n = z.shape[0]
    inside = True
    for i in range(n):
        if findex[i] < 0:
            v = z[i]
            if v < lo[i]:
                v = lo[i]
            if v > hi[i]:
                v = hi[i]
            if v != z[i]:
                inside = False
                z[i] = v
    for i in range(n):
        j = findex[i]
        if j >= 0:
            r = mu[i] * max(z[j], 0.0)
            if not free[i]:
                z[i] = r if side_hi[i] else -r
            else:
                v = z[i]
                if v < -r:
                    v = -r
                if v > r:
                    v = r
                if v != z[i]:
                    inside = False
                    z[i] = v
    return inside


@jit
def _cholesky_solve(K, f, rhs, x):
    """In-place Cholesky U'U of K[:f, :f] (upper triangle given; right-looking, row updates that
    vectorise), then x = K^-1 rhs; False if a pivot is not positive or x is not finite."""
    for j in range(f):
        d = K[j, j]
        if not d > 0.0:
            return False
        d = np.sqrt(d)
        K[j, j] = d
        inv = 1.0 / d
        for c in range(j + 1, f):
            K[j, c] *= inv
        for i in range(j + 1, f):
            a = K[j, i]
            if a != 0.0:
                for c in range(i, f):
                    K[i, c] -= a * K[j, c]
    for i in range(f):
        x[i] = rhs[i]
    for k in range(f):      # U' y = rhs
        x[k] /= K[k, k]
        xk = x[k]
        for c in range(k + 1, f):
            x[c] -= K[k, c] * xk
    for i in range(f - 1, -1, -1):      # U x = y
        t = x[i]
        for c in range(i + 1, f):
            t -= K[i, c] * x[c]
        x[i] = t / K[i, i]
    for i in range(f):
        if not np.isfinite(x[i]):
            return False
    return True


@jit
def pgs_sm_dense_kernel(M, q, diag, lo, hi, findex, mu, z, w, order, k_pgs, k_sm, tol, max_outer,
                        max_halvings, Fidx, K, rhs, dz, z_old, free, side_hi, pgs_stats, stats):
    n = z.shape[0]
    sweeps = 0
    sm_steps = 0
    no_rng = np.zeros(1, dtype=np.uint64)
    moved = np.empty(n, dtype=np.int64)
    for outer in range(1, max_outer + 1):
        stats[0] = outer
        code = pgs_dense_kernel(M, q, diag, lo, hi, findex, mu, z, w, order, 1.0, tol, 0.0, k_pgs, 0,
                                False, no_rng, pgs_stats)
        sweeps += int(pgs_stats[0])
        stats[1] = sweeps
        stats[3] = pgs_stats[1]
        if code == CONVERGED:
            return CONVERGED
        if code == BAD_DIAGONAL or code == NOT_FINITE:
            return code
        # ---- subspace minimisation -------------------------------------------------------
        for i in range(n):
            a, b = row_bounds(i, z, lo, hi, findex, mu)
            free[i] = (z[i] > a) and (z[i] < b)
        k = 0
        extra = 0
        while k < k_sm:
            tiny_break = False
            f = 0
            for i in range(n):
                if free[i]:
                    Fidx[f] = i
                    f += 1
            if f == 0:
                break
            for i in range(n):
                a, b = row_bounds(i, z, lo, hi, findex, mu)
                side_hi[i] = findex[i] >= 0 and z[i] >= b and b > 0.0
            for r in range(f):
                ir = Fidx[r]
                rhs[r] = -w[ir]
                for c in range(r, f):
                    K[r, c] = M[ir, Fidx[c]]
            if not _cholesky_solve(K, f, rhs, dz):
                stats[2] = sm_steps
                return CHOLESKY_FAILED
            sm_steps += 1
            stats[2] = sm_steps
            for i in range(n):
                z_old[i] = z[i]
            for r in range(f):
                z[Fidx[r]] += dz[r]
            inside = _project(z, lo, hi, findex, mu, free, side_hi)
            if not inside:
                # phi(z) - phi(z_old) over the rows that moved (w holds M z_old + q until accepted)
                if _phi_change(M, z, z_old, w, moved) > 0.0:
                    # first breakpoint along dz with the bounds at z_old
                    alpha = 1.0
                    for r in range(f):
                        i = Fidx[r]
                        a, b = row_bounds(i, z_old, lo, hi, findex, mu)
                        if dz[r] > 0.0 and (b - z_old[i]) < alpha * dz[r]:
                            alpha = max((b - z_old[i]) / dz[r], 0.0)
                        elif dz[r] < 0.0 and (a - z_old[i]) > alpha * dz[r]:
                            alpha = max((a - z_old[i]) / dz[r], 0.0)
                    # projected search: alpha = 1/2, 1/4, ... while above the breakpoint, then the
                    # breakpoint itself and its halvings; the first that lowers phi is taken. A
                    # breakpoint below every halving (a near-singular M_FF: CFM-regularised redundant
                    # contact rows give a huge dz) is tried at once: the projected halvings fail there
                    accepted = False
                    trial = 0.5
                    use_break = trial <= alpha
                    if alpha < 0.5 ** max_halvings:
                        use_break = True
                        trial = alpha
                    for h in range(2 * max_halvings + 2):
                        if not use_break and (trial <= alpha or h >= max_halvings):
                            use_break = True
                            trial = alpha
                        for i in range(n):
                            z[i] = z_old[i]
                        for r in range(f):
                            z[Fidx[r]] += trial * dz[r]
                        _project(z, lo, hi, findex, mu, free, side_hi)
                        stats[4] += 1.0
                        if _phi_change(M, z, z_old, w, moved) <= 0.0:
                            accepted = True
                            tiny_break = trial == alpha and alpha < 0.5 ** max_halvings
                            break
                        trial *= 0.5
                        if use_break and trial < alpha * 0.5 ** max_halvings:
                            break
                    if not accepted:
                        for i in range(n):
                            z[i] = z_old[i]       # w is still M z_old + q
                        break
            dense_refresh_w(M, q, z, w)
            if inside:
                break
            for i in range(n):
                if free[i]:
                    a, b = row_bounds(i, z, lo, hi, findex, mu)
                    free[i] = (z[i] > a) and (z[i] < b)
            # a step to a breakpoint below every halving (near-singular M_FF) only moved a bound
            # into the active set: it does not count against k_sm (at most n such steps per stage)
            if tiny_break and extra < n:
                extra += 1
            else:
                k += 1
        res = box_natural_residual(z, w, lo, hi, findex, mu)
        stats[3] = res
        if not np.isfinite(res):
            return NOT_FINITE
        if res <= tol:
            return CONVERGED
    return MAX_OUTER


@jit
def box_relative_error(M, q, lo, hi, findex, mu, z, w, floor_factor):
    """max(natural, infeasibility) of problems/residual.py ``box_relative`` with ``row_terms`` (M
    symmetric: its rows are read as columns): z and
    the bounds at z in units of ||z||_inf (the largest finite bound when z = 0, else 1), each w_i in
    units of t_i = |q_i| + sum_j |M_ij| |z_j| (at least floor_factor max|q|); inf if z or w is not finite."""
    n = z.shape[0]
    zs = 0.0
    qmax = 0.0
    for i in range(n):
        if not (np.isfinite(z[i]) and np.isfinite(w[i])):
            return np.inf
        zs = max(zs, abs(z[i]))
        qmax = max(qmax, abs(q[i]))
    if zs == 0.0:
        zs = bounds_scale(z, lo, hi, findex, mu)
    floor = floor_factor * qmax
    terms = np.empty(n)
    for i in range(n):
        terms[i] = abs(q[i])
    for j in range(n):      # t += |M[:, j]| |z_j|, read as row j (M symmetric here)
        zj = abs(z[j])
        if zj != 0.0:
            for i in range(n):
                terms[i] += abs(M[j, i]) * zj
    worst = 0.0
    for i in range(n):
        if not np.isfinite(terms[i]):   # an overflowed term: no certificate from it
            return np.inf
        t = max(terms[i], floor)
        wr = w[i] / t if t > 0.0 else 0.0
        a, b = row_bounds(i, z, lo, hi, findex, mu)
        zi = z[i] / zs
        worst = max(worst, box_row(zi, wr, a / zs, b / zs), a / zs - zi, zi - b / zs)
    return worst


@jit
def _abs_target(q, lo, hi, z, w, tol):
    """solvers/pgs.py BoxSweeper.abs_target: tol * min(||z||, max(||q||, ||w - q||)), with the largest
    finite bound for ||z|| when z = 0 (or the w scale when there is none)."""
    zs = 0.0
    ws = 0.0
    for i in range(z.shape[0]):
        zs = max(zs, abs(z[i]))
        ws = max(ws, abs(q[i]), abs(w[i] - q[i]))
    if zs == 0.0:
        for i in range(z.shape[0]):
            if np.isfinite(lo[i]):
                zs = max(zs, abs(lo[i]))
            if np.isfinite(hi[i]):
                zs = max(zs, abs(hi[i]))
        if zs == 0.0:
            zs = ws
    return tol * min(zs, ws)


@jit
def pgs_sm_dense_run(M, q, lo, hi, findex, mu, z, w, params, stats):
    """The dense PGS-SM solver call: z (n,) in/out (zero or a warm start), w (n,) receives M z + q
    (+ cfm z). ``params`` = [cfm, normals_first, k_pgs, k_sm, tol_rel, max_outer, max_halvings,
    floor_factor] (one array: a solver call's dispatch checks few arguments). Sweeps (M + cfm I, q) / s with s = max|M| (max|q| or 1 for M = 0); static rows first
    when ``normals_first`` (coupled friction rows after the normals they read); the absolute target
    tightens (x0.1, at most 12 rounds) while the relative residual of the swept problem is above
    ``tol_rel``. stats (6,) receives [outer, pgs sweeps, sm steps, relative residual, search trials, s].
    Returns a status code (NOT_SYMMETRIC before any work when M != M' exactly)."""
    cfm, normals_first, k_pgs, k_sm = params[0], params[1] != 0.0, int(params[2]), int(params[3])
    tol_rel, max_outer, max_halvings, floor_factor = params[4], int(params[5]), int(params[6]), params[7]
    n = z.shape[0]
    for i in range(n):
        for j in range(i):
            if M[i, j] != M[j, i]:
                return NOT_SYMMETRIC
    s = lcp_scale(M, q)
    # the work arrays as views of three buffers (one allocation each instead of one per array)
    fbuf = np.zeros(2 * n * n + 5 * n + 9)
    Ms = fbuf[:n * n].reshape((n, n))
    K = fbuf[n * n:2 * n * n].reshape((n, n))
    o = 2 * n * n
    qs = fbuf[o:o + n]
    diag = fbuf[o + n:o + 2 * n]
    rhs = fbuf[o + 2 * n:o + 3 * n]
    dz = fbuf[o + 3 * n:o + 4 * n]
    z_old = fbuf[o + 4 * n:o + 5 * n]
    pgs_stats = fbuf[o + 5 * n:o + 5 * n + 3]
    kstats = fbuf[o + 5 * n + 3:o + 5 * n + 9]
    ibuf = np.zeros(2 * n, dtype=np.int64)
    order = ibuf[:n]
    Fidx = ibuf[n:]
    bbuf = np.zeros(2 * n, dtype=np.bool_)
    free = bbuf[:n]
    side_hi = bbuf[n:]
    for i in range(n):
        for j in range(n):
            Ms[i, j] = M[i, j] / s
        Ms[i, i] += cfm / s
        qs[i] = q[i] / s
        diag[i] = Ms[i, i]
    k = 0
    for i in range(n):
        if not (normals_first and findex[i] >= 0):
            order[k] = i
            k += 1
    for i in range(n):
        if normals_first and findex[i] >= 0:
            order[k] = i
            k += 1
    for i in range(n):
        if findex[i] < 0:
            z[i] = min(max(z[i], lo[i]), hi[i])
    dense_refresh_w(Ms, qs, z, w)
    tol = _abs_target(qs, lo, hi, z, w, tol_rel)
    outer = 0
    sweeps = 0
    sm = 0
    trials = 0
    rel = np.inf
    code = MAX_OUTER
    for _ in range(12):
        kstats[:] = 0.0
        code = pgs_sm_dense_kernel(Ms, qs, diag, lo, hi, findex, mu, z, w, order, k_pgs, k_sm, tol, max_outer - outer,
                                   max_halvings, Fidx, K, rhs, dz, z_old, free, side_hi, pgs_stats, kstats)
        outer += int(kstats[0])
        sweeps += int(kstats[1])
        sm += int(kstats[2])
        trials += int(kstats[4])
        if code != CONVERGED:
            break
        rel = box_relative_error(Ms, qs, lo, hi, findex, mu, z, w, floor_factor)
        if rel <= tol_rel:
            break
        if outer >= max_outer:
            code = MAX_OUTER
            break
        tol = min(0.1 * tol, _abs_target(qs, lo, hi, z, w, tol_rel))
    else:
        code = MAX_OUTER
    if code != CONVERGED:
        rel = box_relative_error(Ms, qs, lo, hi, findex, mu, z, w, floor_factor)
    for i in range(n):
        w[i] *= s
    stats[0] = outer
    stats[1] = sweeps
    stats[2] = sm
    stats[3] = rel
    stats[4] = trials
    stats[5] = s
    return code
