"""``box-qp``'s primal-dual interior point on the bound-constrained QP (Mehrotra predictor-corrector;
Nocedal & Wright, Numerical Optimization, 2nd ed., Alg. 16.4 with the bounds as the inequalities;
Gondzio's centrality correctors): the iteration (:func:`_ipm`), each iterate checked against the
certified residual. In body space (a contact matrix with its factors, the fixed rows at 0) the iterations
run as one compiled call (kernels/box_qp_ipm.py ``ipm_block_loop``) that comes back here for the exact
check and for an iteration whose block pivot is not positive; elsewhere they run here, through the
compiled per-row updates of the same module."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...kernels.box_qp_ipm import (IPM_CHECK, IPM_PIVOT, _ipm_advance, _ipm_centrality, _ipm_duals,  # noqa: F401
                                   _ipm_gaps, _ipm_mu, _ipm_rhs, _ipm_targets)
from ...problems.islands import csr_block
from .factors import EMBED_FREE, _LDL, _symmetric_csc
from .residual import _certified
from .shifted import _BodySpace, _Shifted


#: the interior point starts from the warm start (pushed inside the box) when the warm start's own
#: relative residual is at most this; a poorer one (a falling pile's new contacts) starts cold (a
#: good warm start saves iterations, a poor one costs some: the threshold from recorded pile steps,
#: docs/benchmarks-tuning.md)
IPM_WARM_MAX = 0.5


#: Gondzio centrality correctors per interior-point iteration (0: Mehrotra's predictor-corrector only)
CENTRALITY_CORRECTORS = 2


def _ipm(M, q, lo, hi, opts, tol, counter, z_warm=None, factors=None, warm_residual=None):
    """Primal-dual interior point (Mehrotra predictor-corrector, Gondzio centrality correctors) on
    min 1/2 z'Mz + q'z over lo <= z <= hi, M symmetric positive (semi)definite: multipliers
    s_lo, s_hi >= 0 with M z + q = s_lo - s_hi, (z - lo) s_lo = mu, (hi - z) s_hi = mu, mu -> 0 (Nocedal & Wright
    Alg. 16.4, bounds as the inequalities). Each iterate (strictly inside the box) is checked with
    the certified residual (row sizes |q| + |M||z|, as solve() measures it). ``factors``: the problem's
    (H, W, cfm) with M = H W H' + cfm I, whose Newton systems are then solved in body space where
    that pays (:class:`_BodySpace`); ``warm_residual``: z_warm's certified residual where the caller
    has it. Returns (z, w, converged)."""
    n = q.size
    fixed = lo == hi
    keep = np.flatnonzero(~fixed)
    zf = np.where(fixed, lo, 0.0)
    absM = None if sp.issparse(M) else np.abs(M)       # dense: |M| once; sparse: row_terms per check

    w_all, work = np.empty(n), np.empty((5, n))

    def certified(x):   # w = M x + q (all rows) and the certified residual
        return _certified(M, q, lo, hi, x, w_all, work, absM)

    def check(z):       # the iterate on the kept rows, the fixed ones at their value
        zf[keep] = z
        return certified(zf)

    if keep.size == 0:
        w, r = check(np.zeros(0))
        return zf.copy(), w, r <= tol
    # few fixed rows, and M's pattern analysed already (by Newton's free-set solves, _factor_solve):
    # M's own pattern with the fixed rows decoupled; otherwise the sliced block, whose factor has
    # less fill when its pattern is new
    embed = (sp.issparse(M) and n > opts.dense_max and keep.size >= EMBED_FREE * n
             and _LDL.holds(_symmetric_csc(M, M.data)))
    lo2, hi2 = lo[keep], hi[keep]
    L, U = np.isfinite(lo2), np.isfinite(hi2)
    shifted = _BodySpace.of(factors, M, keep, opts.dense_max)
    lower = None
    if shifted is not None and not np.any(zf):  # the fixed rows at 0: the kept rows' w from the factors
        lower = shifted.lower_error
        q2k, qmax, wk, work_k = q[keep], float(np.max(np.abs(q), initial=0.0)), np.empty(keep.size), \
            np.empty((5, keep.size))
    if keep.size == n:
        M2, q2 = M, q
    elif embed or lower is not None:
        M2 = q2 = None
    else:
        M2 = csr_block(M, keep) if sp.issparse(M) else M[np.ix_(keep, keep)]
        q2 = q[keep] + (M[keep] @ zf if np.any(zf) else 0.0)

    def affine(z):      # M z + q on the kept rows, the fixed ones at their value
        if lower is not None:
            lower(q2k, lo2, hi2, z, qmax, wk, work_k)
            return wk.copy()
        if M2 is not None:
            return M2 @ z + q2
        zf[keep] = z
        return (M @ zf + q)[keep]

    if shifted is not None:
        diag = shifted.base
    else:
        shifted = _Shifted(M, opts.dense_max, keep=keep) if M2 is None else _Shifted(M2, opts.dense_max)
        diag = shifted.base if M2 is not None else shifted.base[keep]
    if M2 is None:
        q2 = affine(np.zeros(keep.size))
    scale_w = max(float(np.max(np.abs(q2), initial=0.0)), 1e-300)
    scale_z = scale_w / max(float(np.max(np.abs(diag), initial=0.0)), 1e-300)
    lo0, hi0 = np.where(L, lo2, 0.0), np.where(U, hi2, 0.0)
    warm = None
    if z_warm is not None:
        zw = np.clip(z_warm, lo, hi)
        if (certified(zw)[1] if warm_residual is None else warm_residual) <= IPM_WARM_MAX:
            warm = zw[keep]
    if warm is None:    # a start strictly inside the box, multipliers of the size of q; a one-sided
        # bound's offset at least 1e-10 of the bound's size, so that it does not round onto the bound
        pad = np.maximum(scale_z, 1e-10 * (1.0 + np.abs(np.where(L, lo0, hi0))))
        z = np.where(L & U, 0.5 * (lo0 + hi0), np.where(L, lo0 + pad, np.where(U, hi0 - pad, 0.0)))
        sl, su = np.where(L, scale_w, 0.0), np.where(U, scale_w, 0.0)
    else:               # the warm start 1 % of the box (or of scale_z) inside, multipliers from its w
        pad = 1e-2 * np.minimum(np.where(L & U, hi0 - lo0, np.inf), scale_z)
        z = np.where(L, np.maximum(warm, lo0 + pad), warm)
        z = np.where(U, np.minimum(z, hi0 - pad), z)
        w2 = affine(z)
        mu0 = 1e-2 * scale_w * scale_z
        sl = np.where(L, np.maximum(np.maximum(w2, 0.0), mu0 / np.where(L, z - lo0, 1.0)), 0.0)
        su = np.where(U, np.maximum(np.maximum(-w2, 0.0), mu0 / np.where(U, hi0 - z, 1.0)), 0.0)
    nk = z.size
    z, sl, su = (np.array(v, dtype=np.float64) for v in (z, sl, su))
    r_, dsl, dsu, dsla, dsua, gl, gu, Dg = (np.empty(nk) for _ in range(8))
    tl, tu, tl2, tu2, dsl2, dsu2 = (np.zeros(nk) for _ in range(6))
    if warm is None:
        w2 = affine(z)      # M z + q on the kept rows; then each check's w
    # the best iterate: z, (its r, whether best_w holds its w)
    best_z, best_r, best_w = np.empty(nk), np.array([np.inf, 0.0]), None
    # body space with the lower bound: the whole iteration compiled (kernels/box_qp_ipm.py), back here for
    # the exact check of an iterate whose bound passes and for an iteration whose pivot is not positive
    block = lower is not None
    it = 0
    while it < opts.ipm_iterations:
        if block:
            w2 = np.array(w2, dtype=np.float64)
            why, done, r, a = shifted.iterate(z, sl, su, lo0, hi0, L, U, w2, opts.ipm_iterations - it, tol,
                                              CENTRALITY_CORRECTORS, q2k, lo2, hi2, qmax, work_k, best_z, best_r)
            counter[0] += done
            it += done
            if why == IPM_CHECK:
                w, r = check(z)
                if r < best_r[0]:
                    best_z[:] = z
                    best_r[:] = (r, 1.0)
                    best_w = w.copy()
                if r <= tol:
                    zf[keep] = best_z
                    return zf.copy(), best_w, True
                if not (np.isfinite(r) and a > 0):
                    break
                w2 = w[keep] if keep.size < n else w
                continue
            if why != IPM_PIVOT:
                break
        # one iteration here: every path but the compiled one's, and its iterations whose pivot is not positive
        it += 1
        mu = _ipm_gaps(z, sl, su, lo0, hi0, L, U, gl, gu, Dg)
        if mu < 0.0:    # an iterate rounded onto a bound: no interior left to step in
            break
        solve_k = shifted.solver(Dg)
        counter[0] += 1
        # predictor (affine scaling: targets 0), then Mehrotra's corrector (sigma = (mu_aff/mu)^3)
        tl[:] = 0.0
        tu[:] = 0.0
        _ipm_rhs(w2, gl, gu, sl, su, L, U, tl, tu, r_)
        dza = solve_k(r_)
        a = _ipm_duals(dza, gl, gu, sl, su, L, U, tl, tu, 1.0, dsla, dsua)
        mu_aff = _ipm_mu(gl, gu, sl, su, L, U, a, dza, dsla, dsua)
        smu = (mu_aff / mu) ** 3 * mu if mu > 0 else 0.0
        _ipm_targets(L, U, smu, dza, dsla, dsua, tl, tu)
        _ipm_rhs(w2, gl, gu, sl, su, L, U, tl, tu, r_)
        dz = solve_k(r_)
        a = _ipm_duals(dz, gl, gu, sl, su, L, U, tl, tu, 0.995, dsl, dsu)
        # Gondzio's centrality correctors: one more solve each with the same factorisation, kept
        # while they lengthen the step enough
        for _c in range(CENTRALITY_CORRECTORS):
            if a >= 0.995 or smu <= 0.0:
                break
            at = min(1.0, 1.5 * a)
            _ipm_centrality(dz, dsl, dsu, gl, gu, sl, su, L, U, at, smu, tl, tu, tl2, tu2)
            _ipm_rhs(w2, gl, gu, sl, su, L, U, tl2, tu2, r_)
            dz2 = solve_k(r_)
            a2 = _ipm_duals(dz2, gl, gu, sl, su, L, U, tl2, tu2, 0.995, dsl2, dsu2)
            if a2 < a + 0.1 * (at - a):
                break
            dz, a = dz2, a2
            dsl, dsl2, dsu, dsu2, tl, tl2, tu, tu2 = dsl2, dsl, dsu2, dsu, tl2, tl, tu2, tu
        _ipm_advance(z, sl, su, dz, dsl, dsu, a)
        if lower is not None:   # body space: w and a lower bound of the error from the factors; the
            r = lower(q2k, lo2, hi2, z, qmax, wk, work_k)   # exact check (a pass over M's entries)
            w = None                                        # only where the bound passes
        if lower is None or r <= tol:
            w, r = check(z)
        if r < best_r[0]:
            best_z[:] = z
            best_r[:] = (r, w is not None)
            best_w = None if w is None else w.copy()
        if r <= tol:
            zf[keep] = best_z
            return zf.copy(), best_w, True
        if not (np.isfinite(r) and a > 0):
            break
        w2 = wk if w is None else (w[keep] if keep.size < n else w)    # the next iterate's M z + q, kept rows
    if best_r[0] == np.inf:
        w, _ = check(z)
        return zf.copy(), w, False
    zf[keep] = best_z
    zb = zf.copy()
    return zb, (best_w if best_r[1] else certified(zb)[0].copy()), False
