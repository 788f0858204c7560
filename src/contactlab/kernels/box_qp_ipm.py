"""The compiled parts of ``box-qp``'s primal-dual interior point (solvers/box_qp/interior_point.py
``_ipm``; Mehrotra predictor-corrector, Nocedal & Wright, Numerical Optimization, 2nd ed., Alg. 16.4 with
the bounds as the inequalities; Gondzio's centrality correctors): the per-row updates of one iteration,
and (:func:`ipm_block_loop`) the whole iteration for a contact matrix in body space, whose Newton
systems are factorised by the block Cholesky of kernels/body_space_chol.py and whose iterates are
screened by the lower bound of kernels/body_space.py ``kept_box_error``: one compiled call runs
iterations until an iterate needs the exact certified check (Python's), a pivot is not positive (the
caller's fallback factorisation takes that iteration) or the iteration ends, where the same loop in
Python paid some twenty-five compiled calls an iteration.
"""
import math

import numpy as np

from ._jit import jit
from .body_space import kept_box_error
from .body_space_chol import block_factor, block_space_solve

@jit
def _ipm_rhs(w, gl, gu, sl, su, L, U, tl, tu, out):
    """Right-hand side of the interior point's reduced Newton system (M + D) dz = out with targets
    (z-lo) s_lo -> tl, (hi-z) s_hi -> tu (0 for the predictor; :func:`_ipm_targets`)."""
    for i in range(w.size):
        r = -(w[i] - sl[i] + su[i])
        if L[i]:
            r += tl[i] / gl[i] - sl[i]
        if U[i]:
            r -= tu[i] / gu[i] - su[i]
        out[i] = r


@jit
def _ipm_duals(dz, gl, gu, sl, su, L, U, tl, tu, frac, dsl, dsu):
    """The multipliers' steps for dz (same targets as _ipm_rhs) into dsl, dsu; returns the longest
    step in (0, 1] that keeps z - lo, hi - z, s_lo, s_hi positive, times ``frac``."""
    a = 1.0
    for i in range(dz.size):
        dsl[i] = 0.0
        dsu[i] = 0.0
        if L[i]:
            dsl[i] = (tl[i] - gl[i] * sl[i] - sl[i] * dz[i]) / gl[i]
            if dz[i] < 0.0:
                a = min(a, frac * gl[i] / -dz[i])
            if dsl[i] < 0.0:
                a = min(a, frac * sl[i] / -dsl[i])
        if U[i]:
            dsu[i] = (tu[i] - gu[i] * su[i] + su[i] * dz[i]) / gu[i]
            if dz[i] > 0.0:
                a = min(a, frac * gu[i] / dz[i])
            if dsu[i] < 0.0:
                a = min(a, frac * su[i] / -dsu[i])
    return a


@jit
def _ipm_targets(L, U, smu, dza, dsla, dsua, tl, tu):
    """Mehrotra's corrector targets: sigma mu minus the predictor's second-order term."""
    for i in range(dza.size):
        tl[i] = smu - dza[i] * dsla[i] if L[i] else 0.0
        tu[i] = smu + dza[i] * dsua[i] if U[i] else 0.0


@jit
def _ipm_centrality(dz, dsl, dsu, gl, gu, sl, su, L, U, at, smu, tl, tu, tl2, tu2):
    """Gondzio's multiple centrality correction (Comput. Optim. Appl. 6, 1996; Colombo & Gondzio,
    Comput. Optim. Appl. 41, 2008): the complementarity products at the longer trial step ``at``
    along the current direction, those outside [0.1, 10] sigma mu pulled into that band (a product
    far above it by at most 10 sigma mu), as targets tl2, tu2 = tl, tu plus those corrections."""
    lo_b, hi_b = 0.1 * smu, 10.0 * smu
    for i in range(dz.size):
        tl2[i] = tl[i]
        tu2[i] = tu[i]
        if L[i]:
            v = (gl[i] + at * dz[i]) * (sl[i] + at * dsl[i])
            c = (lo_b - v) if v < lo_b else ((hi_b - v) if v > hi_b else 0.0)
            tl2[i] += max(c, -hi_b)
        if U[i]:
            v = (gu[i] - at * dz[i]) * (su[i] + at * dsu[i])
            c = (lo_b - v) if v < lo_b else ((hi_b - v) if v > hi_b else 0.0)
            tu2[i] += max(c, -hi_b)


@jit
def _ipm_gaps(z, sl, su, lo, hi, L, U, gl, gu, Dg):
    """The gaps gl = z - lo, gu = hi - z (1 where the bound is infinite), the diagonal
    Dg = s_lo / gl + s_hi / gu of the iteration's system M + diag(Dg), and the mean complementarity mu.
    -1.0 where a gap is not positive: the fraction-to-boundary rule keeps gaps positive in exact
    arithmetic, but z + a dz can round onto a bound whose gap is below z's ulp; the iteration has then
    left the interior and stops (its best iterate so far is checked as always)."""
    acc, m = 0.0, 0
    for i in range(z.size):
        gl[i] = z[i] - lo[i] if L[i] else 1.0
        gu[i] = hi[i] - z[i] if U[i] else 1.0
        if not (gl[i] > 0.0 and gu[i] > 0.0):
            return -1.0
        Dg[i] = sl[i] / gl[i] + su[i] / gu[i]
        if L[i]:
            acc += gl[i] * sl[i]
            m += 1
        if U[i]:
            acc += gu[i] * su[i]
            m += 1
    return acc / m if m else 0.0


@jit
def _ipm_advance(z, sl, su, dz, dsl, dsu, a):
    """The step a along (dz, dsl, dsu), in place."""
    for i in range(z.size):
        z[i] += a * dz[i]
        sl[i] += a * dsl[i]
        su[i] += a * dsu[i]


@jit
def _ipm_mu(gl, gu, sl, su, L, U, a, dz, dsl, dsu):
    """Mean complementarity after a step a: sum (z-lo) s_lo + (hi-z) s_hi over the finite bounds / count."""
    acc, m = 0.0, 0
    for i in range(dz.size):
        if L[i]:
            acc += (gl[i] + a * dz[i]) * (sl[i] + a * dsl[i])
            m += 1
        if U[i]:
            acc += (gu[i] - a * dz[i]) * (su[i] + a * dsu[i])
            m += 1
    return acc / m if m else 0.0




#: :func:`ipm_block_loop`'s reasons to return: an iterate whose lower bound passes the tolerance (the
#: caller's exact check decides), a pivot that is not positive at the current iterate (the caller's
#: fallback factorisation takes this iteration), the interior left or a step of 0 / a residual that is
#: not finite (the iteration stops), the iterations given used up
IPM_CHECK, IPM_PIVOT, IPM_STOP, IPM_DONE = 0, 1, 2, 3


@jit
def ipm_block_loop(z, sl, su, lo0, hi0, L, U, w2, iterations, tol, correctors,
                   ra, rb, ha, hb, Winv, Wt, cfm, q, lo, hi, qmax, work,
                   ip, rdst, rtr, cut, lp, li, rp, rc, rpos, perm, Ld, Lv, wpos, nz, best_z, best_r):
    """Up to ``iterations`` interior-point iterations (Mehrotra's predictor, his corrector with
    sigma = (mu_aff / mu)^3, up to ``correctors`` of Gondzio's correctors kept while they lengthen the
    step by a tenth of what they aim at) on the kept rows of a contact matrix M = H W H' + cfm I in
    body space, the same arithmetic as solvers/box_qp/interior_point.py's loop: each iteration the
    gaps and D (:func:`_ipm_gaps`), S = W^-1 + H' (cfm + D)^-1 H factorised (body_space_chol.py
    ``block_factor``, in Ld, Lv, nz; the couplings of rows held at a bound, e_inv <= cut, left out and
    the solves refined against S), every direction by ``block_space_solve``, the step, and w = M z + q
    with the lower bound r of the certified error (body_space.py ``kept_box_error``, into ``w2``: the
    next iteration's right-hand sides use it). State: z, sl, su, w2 (in place); best_z, best_r[0] the
    iterate of least r seen (best_r[1] = 0: found here, by the bound, without w). Returns (reason: IPM_CHECK / IPM_PIVOT /
    IPM_STOP / IPM_DONE, iterations factorised, r of the last iterate, its step a)."""
    nk = z.size
    nt = Winv.shape[0]
    gl, gu, Dg, e_inv, r_ = np.empty(nk), np.empty(nk), np.empty(nk), np.empty(nk), np.empty(nk)
    dza, dsla, dsua = np.empty(nk), np.empty(nk), np.empty(nk)
    dz, dsl, dsu, dz2, dsl2, dsu2 = np.empty(nk), np.empty(nk), np.empty(nk), np.empty(nk), np.empty(nk), np.empty(nk)
    tl, tu, tl2, tu2 = np.zeros(nk), np.zeros(nk), np.zeros(nk), np.zeros(nk)
    t, y = np.empty(6 * nt), np.empty(6 * nt)
    done = 0
    for _ in range(iterations):
        mu = _ipm_gaps(z, sl, su, lo0, hi0, L, U, gl, gu, Dg)
        if mu < 0.0:
            return IPM_STOP, done, 0.0, 0.0
        for i in range(nk):
            e_inv[i] = 1.0 / (cfm + Dg[i])
        dropped = block_factor(ra, rb, ha, hb, e_inv, Winv, ip, rdst, rtr, cut, lp, li, rp, rc, rpos, Ld, Lv, wpos, nz)
        if dropped < 0:
            return IPM_PIVOT, done, 0.0, 0.0
        done += 1
        tl[:] = 0.0
        tu[:] = 0.0
        _ipm_rhs(w2, gl, gu, sl, su, L, U, tl, tu, r_)
        block_space_solve(ra, rb, ha, hb, r_, e_inv, Winv, perm, lp, li, Ld, Lv, nz, dropped, t, y, dza)
        a = _ipm_duals(dza, gl, gu, sl, su, L, U, tl, tu, 1.0, dsla, dsua)
        mu_aff = _ipm_mu(gl, gu, sl, su, L, U, a, dza, dsla, dsua)
        smu = math.pow(mu_aff / mu, 3.0) * mu if mu > 0 else 0.0
        _ipm_targets(L, U, smu, dza, dsla, dsua, tl, tu)
        _ipm_rhs(w2, gl, gu, sl, su, L, U, tl, tu, r_)
        block_space_solve(ra, rb, ha, hb, r_, e_inv, Winv, perm, lp, li, Ld, Lv, nz, dropped, t, y, dz)
        a = _ipm_duals(dz, gl, gu, sl, su, L, U, tl, tu, 0.995, dsl, dsu)
        for _c in range(correctors):
            if a >= 0.995 or smu <= 0.0:
                break
            at = min(1.0, 1.5 * a)
            _ipm_centrality(dz, dsl, dsu, gl, gu, sl, su, L, U, at, smu, tl, tu, tl2, tu2)
            _ipm_rhs(w2, gl, gu, sl, su, L, U, tl2, tu2, r_)
            block_space_solve(ra, rb, ha, hb, r_, e_inv, Winv, perm, lp, li, Ld, Lv, nz, dropped, t, y, dz2)
            a2 = _ipm_duals(dz2, gl, gu, sl, su, L, U, tl2, tu2, 0.995, dsl2, dsu2)
            if a2 < a + 0.1 * (at - a):
                break
            a = a2
            dz, dz2 = dz2, dz
            dsl, dsl2 = dsl2, dsl
            dsu, dsu2 = dsu2, dsu
            tl, tl2 = tl2, tl
            tu, tu2 = tu2, tu
        _ipm_advance(z, sl, su, dz, dsl, dsu, a)
        r = kept_box_error(ra, rb, ha, hb, Wt, cfm, q, lo, hi, z, qmax, w2, work)
        if r <= tol:
            return IPM_CHECK, done, r, a
        if r < best_r[0]:
            best_r[0] = r
            best_r[1] = 0.0
            best_z[:] = z
        if not (np.isfinite(r) and a > 0):
            return IPM_STOP, done, r, a
    return IPM_DONE, done, 0.0, 0.0
