"""PGS-SM on dense symmetric M in one numba kernel (arechavaleta Algorithm PGS-SM; the Python loop of
solvers/pgs_sm.py is the reference and handles sparse, non-symmetric and singular cases).

Per outer iteration: ``k_pgs`` sweeps of kernels.pgs.pgs_dense_kernel, then up to ``k_sm`` subspace
steps: Cholesky of M_FF (F = rows strictly inside their box) in the work matrix, dz = -M_FF^-1 w_F,
projection onto the box (coupled bounds from the new normals), and if the projected Newton step raises
phi(z) = 1/2 z'Mz + q'z, a step to the first breakpoint (halved until phi decreases).

Status: 0 converged, 1 outer limit, 2 non-positive diagonal, 3 non-finite, 5 Cholesky failed (M_FF not
numerically positive definite: the caller continues in Python from the current z).
Work arrays: Fidx (n,) int64, K (n, n), rhs, dz, z_old (n,), free, side_hi (n,) bool; stats (6,) receives
[outer, pgs sweeps, sm steps, residual, 0, 0].
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from .pgs import (BAD_DIAGONAL, CONVERGED, NOT_FINITE, box_natural_residual, dense_refresh_w, pgs_dense_kernel,
                  row_bounds)

MAX_OUTER, CHOLESKY_FAILED = 1, 5


@jit
def _phi(z, w, q):
    s = 0.0
    for i in range(z.shape[0]):
        s += z[i] * (w[i] + q[i])
    return 0.5 * s


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
    """In-place Cholesky of K[:f, :f] (lower), then x = K^-1 rhs; False if a pivot is not positive."""
    for j in range(f):
        s = K[j, j]
        for k in range(j):
            s -= K[j, k] * K[j, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        K[j, j] = d
        for i in range(j + 1, f):
            t = K[i, j]
            for k in range(j):
                t -= K[i, k] * K[j, k]
            K[i, j] = t / d
    for i in range(f):
        t = rhs[i]
        for k in range(i):
            t -= K[i, k] * x[k]
        x[i] = t / K[i, i]
    for i in range(f - 1, -1, -1):
        t = x[i]
        for k in range(i + 1, f):
            t -= K[k, i] * x[k]
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
        for k in range(k_sm):
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
                for c in range(r + 1):
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
                phi0 = _phi(z_old, w, q)
                dense_refresh_w(M, q, z, w)
                if _phi(z, w, q) > phi0:
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
                    # breakpoint itself and its halvings; the first that lowers phi is taken
                    accepted = False
                    trial = 0.5
                    use_break = trial <= alpha
                    for h in range(2 * max_halvings + 2):
                        if not use_break and (trial <= alpha or h >= max_halvings):
                            use_break = True
                            trial = alpha
                        for i in range(n):
                            z[i] = z_old[i]
                        for r in range(f):
                            z[Fidx[r]] += trial * dz[r]
                        _project(z, lo, hi, findex, mu, free, side_hi)
                        dense_refresh_w(M, q, z, w)
                        if _phi(z, w, q) <= phi0:
                            accepted = True
                            break
                        trial *= 0.5
                        if use_break and trial < alpha * 0.5 ** max_halvings:
                            break
                    if not accepted:
                        for i in range(n):
                            z[i] = z_old[i]
                        dense_refresh_w(M, q, z, w)
                        break
            else:
                dense_refresh_w(M, q, z, w)
            if inside:
                break
            for i in range(n):
                if free[i]:
                    a, b = row_bounds(i, z, lo, hi, findex, mu)
                    free[i] = (z[i] > a) and (z[i] < b)
        res = box_natural_residual(z, w, lo, hi, findex, mu)
        stats[3] = res
        if not np.isfinite(res):
            return NOT_FINITE
        if res <= tol:
            return CONVERGED
    return MAX_OUTER
