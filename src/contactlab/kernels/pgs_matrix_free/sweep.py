"""The sweeps of matrix-free PGS (:func:`pgs_matrix_free`, arechavaleta eq. 3 with findex/mu
coupled bounds) and the compiled call that lays the problem out in sweep order and runs them
(:func:`solve_matrix_free_kernel`)."""
from __future__ import annotations

import numpy as np

from .._jit import jit
from ..pgs import BAD_DIAGONAL, CONVERGED, MAX_SWEEPS, NOT_FINITE, STALLED, row_bounds
from .layout import body_slots, chain_couplings, prepare, row_slots_in_order, sweep_order
from .screen import _check
from .velocity import _max_abs, _pending, _running_dot6, _store6, impulse_velocity


#: a check point's residual is computed only when the sweep's largest step is at most this fraction
#: of max |z|: iterates that still move more cannot be within a 1e-4..1e-7 relative residual, and
#: each check costs about two sweeps (docs/benchmarks-tuning.md); the last sweep is always checked
CHECK_GATE = 1e-3


#: ... and only when no row of the sweep corrected its own w_i by more than this many times
#: ``tol_rel`` of its scale: |dz_i| A_ii <= CHECK_RELATIVE tol_rel (|q_i| + A_ii max|z| + floor),
#: max|z| of the sweep before (the unit of z in the relative residual; A_ii |z_i| instead let a
#: friction row near 0 on a loaded stack read hundreds of tol_rel at a point that certified). Checks
#: that pass have a few tol_rel at most in their sweep, so the gate skips only checks bound to fail
#: (the value chosen on fixed-budget stacks and piles, docs/benchmarks-tuning.md).
#: A skipped check only delays a stop: the iterates are those of every check point
CHECK_RELATIVE = 100.0


@jit
def pgs_matrix_free(ptr, body, hb, g, diag, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w,
                    max_sweeps, check, tol_rel, tol_w, floor, report, stats):
    """Projected Gauss-Seidel sweeps over the rows in their order on A = H W H' + diag(cfm) without
    forming A (:func:`solve_matrix_free_kernel` lays the rows out in the sweep order first).

    ``z`` in/out (warm start in, clipped into the static bounds by the caller), ``dv`` (nbody, 6)
    out (= W H' z), ``w`` out (A z + q at exit). At the start and every ``check`` sweeps (0: only
    at the end; a check point is skipped while the sweep's largest step exceeds ``CHECK_GATE`` x
    max |z| or a row's correction of its w_i exceeds ``CHECK_RELATIVE`` tol_rel of its scale) the
    residual is checked (:func:`_check`) and the sweeps stop once the relative residual of
    ``solve()``'s definition is <= ``tol_rel``; after the last sweep it is computed exactly when
    ``report`` (else stats[2] is the screen's lower bound, which is above tol_rel).
    stats = [sweeps, natural residual, relative residual, last step ||dz||_inf].
    ``tol_w`` > 0: a sweep in which no row corrected its own w_i by more than tol_w (|dz_i| A_ii,
    Bullet's stop; solvers/pgs.py ``w_step_tol``) ends the sweeps with a checked residual:
    CONVERGED if it is <= tol_rel, else STALLED.
    Returns CONVERGED, MAX_SWEEPS, STALLED, BAD_DIAGONAL or NOT_FINITE (kernels/pgs.py codes)."""
    n = z.shape[0]
    stats[0] = 0.0
    stats[3] = np.inf
    for i in range(n):
        if not diag[i] > 0.0:
            stats[1] = np.inf
            stats[2] = np.inf
            return BAD_DIAGONAL
    t = np.empty(n)
    val = np.zeros(n)
    mark = np.full(n, -1, dtype=np.int64)
    inv = 1.0 / diag            # a multiply per row, not a division on the sweep's critical path
    impulse_velocity(ptr, body, g, z, dv)
    if _check(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w, t, val, mark, floor,
              tol_rel, max_sweeps == 0, report, True, stats):
        return CONVERGED
    couple = chain_couplings(body, hb, g, dv.shape[0] - 1)       # dv: one row per body and the dummy
    gate = CHECK_RELATIVE * tol_rel
    zscale = _max_abs(z)        # max |z| of the sweep before (over the rows it swept)
    for sweep in range(1, max_sweeps + 1):
        step = 0.0
        wstep = 0.0
        moved = False           # a row corrected its w_i by more than gate of its scale
        znext = 0.0
        last = -1               # the row before, whose change dz_last is not in dv yet
        dz_last = 0.0
        # the velocity changes of the two bodies of the rows being swept, in registers while the rows
        # stay on that pair (a manifold's rows in turn): dv in memory only when the pair changes
        cb0 = cb1 = -1
        a0 = a1 = a2 = a3 = a4 = a5 = e0 = e1 = e2 = e3 = e4 = e5 = 0.0
        for i in range(n):
            a, b = row_bounds(i, z, lo, hi, findex, mu)
            if a == b and z[i] == a:
                if last >= 0:
                    (a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5) = _pending(
                        last, dz_last, body, g, dv, cb0, cb1, a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5)
                    last = -1
                continue        # a zero-width box (friction of a normal at 0) holds z_i: dz = 0 exactly
            s0 = 2 * i
            b0, b1 = body[s0], body[s0 + 1]
            if b0 != cb0 or b1 != cb1:
                if cb0 >= 0:
                    _store6(dv, cb1, e0, e1, e2, e3, e4, e5)
                    _store6(dv, cb0, a0, a1, a2, a3, a4, a5)
                cb0, cb1 = b0, b1
                a0, a1, a2, a3, a4, a5 = dv[b0, 0], dv[b0, 1], dv[b0, 2], dv[b0, 3], dv[b0, 4], dv[b0, 5]
                e0, e1, e2, e3, e4, e5 = dv[b1, 0], dv[b1, 1], dv[b1, 2], dv[b1, 3], dv[b1, 4], dv[b1, 5]
            # one-row lookahead: w_i from dv without the row before's change, plus A_{i,i-1} dz_{i-1};
            # that change goes into dv after this row's dot product, off its critical path
            # (docs/benchmarks-tuning.md); _row_w's sums
            wi = _running_dot6(q[i] + cfm[i] * z[i], hb, s0, a0, a1, a2, a3, a4, a5) \
                + _running_dot6(0.0, hb, s0 + 1, e0, e1, e2, e3, e4, e5)
            if last >= 0:
                wi += couple[i] * dz_last
                (a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5) = _pending(
                    last, dz_last, body, g, dv, cb0, cb1, a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5)
                last = -1
            y = z[i] - wi * inv[i]
            if y < a:
                y = a
            if y > b:
                y = b
            if abs(y) > znext:
                znext = abs(y)
            dz = y - z[i]
            if dz != 0.0:
                z[i] = y
                last, dz_last = i, dz
                if abs(dz) > step:
                    step = abs(dz)
                if abs(dz) * diag[i] > wstep:
                    wstep = abs(dz) * diag[i]
                if abs(dz) * diag[i] > gate * (abs(q[i]) + diag[i] * zscale + floor):
                    moved = True
        if last >= 0:
            (a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5) = _pending(
                last, dz_last, body, g, dv, cb0, cb1, a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5)
        if cb0 >= 0:
            _store6(dv, cb1, e0, e1, e2, e3, e4, e5)
            _store6(dv, cb0, a0, a1, a2, a3, a4, a5)
        zscale = znext
        stats[0] = sweep
        stats[3] = step
        if not np.isfinite(step):
            stats[1] = np.inf
            stats[2] = np.inf
            return NOT_FINITE
        stalled = tol_w > 0.0 and wstep <= tol_w
        last = sweep == max_sweeps or stalled
        if last or (check > 0 and sweep % check == 0 and not moved and step <= CHECK_GATE * _max_abs(z)):
            if _check(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w, t, val, mark,
                      floor, tol_rel, last, report, False, stats):
                return CONVERGED
            if not np.isfinite(stats[2]):
                return NOT_FINITE
            if stalled:
                return STALLED
    return MAX_SWEEPS


@jit
def solve_matrix_free_kernel(ip, ix, data, W, q, cfm, lo, hi, findex, mu, z, max_sweeps, check, tol, tol_w,
                             floor_factor, report, height):
    """:func:`solve_matrix_free` after its argument checks: the row blocks, g and the diagonal, the
    body slots, the sweep order (:func:`sweep_order`), z clipped into the static bounds (in
    place), then :func:`pgs_matrix_free`. Returns (ok, w, dv, code, stats); ok False: a row touches
    more than two bodies (nothing solved)."""
    n = q.shape[0]
    nbody = W.shape[0]
    w = np.empty(n)
    stats = np.zeros(4)
    order = sweep_order(findex, height)
    ptr, body, hb, ok = row_slots_in_order(ip, ix, data, order, nbody)
    if not ok:
        return False, w, np.zeros((nbody, 6)), 0, stats
    # the problem in the sweep order (row k is row order[k] of H; a coupled row's normal moves with it)
    position = np.empty(n, dtype=np.int64)
    for k in range(n):
        position[order[k]] = k
    qs, cs, ls, us, fs, ms, zs = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), \
        np.empty(n), np.empty(n)
    for k in range(n):
        i = order[k]
        qs[k], cs[k], ls[k], us[k], ms[k], zs[k] = q[i], cfm[i], lo[i], hi[i], mu[i], z[i]
        fs[k] = position[findex[i]] if findex[i] >= 0 else -1
        if fs[k] < 0:
            if zs[k] < ls[k]:       # np.clip: lo first, hi last
                zs[k] = ls[k]
            if zs[k] > us[k]:
                zs[k] = us[k]
    g = np.empty_like(hb)
    diag = np.empty(n)
    prepare(ptr, body, hb, W, cs, g, diag)
    bptr, bslot, srow = body_slots(ptr, body, nbody)
    dv = np.zeros((nbody + 1, 6))
    floor = floor_factor * _max_abs(q)
    ws = np.empty(n)
    code = pgs_matrix_free(ptr, body, hb, g, diag, bptr, bslot, srow, qs, cs, ls, us, fs, ms, zs, dv, ws,
                           max_sweeps, check, tol, tol_w, floor, report, stats)
    for k in range(n):
        z[order[k]] = zs[k]
        w[order[k]] = ws[k]
    return True, w, dv[:nbody], code, stats


_solve = solve_matrix_free_kernel      # the former name, kept for one release
