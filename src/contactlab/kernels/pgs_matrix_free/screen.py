"""The residual screen of matrix-free PGS: the certified relative residual of an iterate (each w_i in
units of |q_i| + sum_j |A_ij| |z_j|, problems/residual.py) from the row blocks, with no A stored:
a cheap screen first, the exact row terms only where the screen cannot decide."""
from __future__ import annotations

import numpy as np

from .._jit import jit
from ..dense import dot6_of
from ..pgs import bounds_scale, row_bounds
from ..residual import box_row
from .velocity import _row_w, impulse_velocity


@jit
def row_term(i, ptr, body, hb, g, bptr, bslot, srow, q, cfm, z, val, mark, touched):
    """t_i = |q_i| + sum_j |A_ij| |z_j| (problems/residual.py ``row_terms``: the unit of w_i in the
    relative residual), A_ij = h_i W h_j' (+ cfm_i if i = j) summed over the bodies rows i and j
    share, read from the row blocks (no A stored). ``val``/``mark``/``touched``: (n,) work, ``mark``
    all -1 on entry and exit. Cost: the 6-vector dots of row i with every row on its bodies."""
    k = 0
    for s in range(ptr[i], ptr[i + 1]):
        b = body[s]
        if b == bptr.shape[0] - 2:      # the dummy body: no entries
            continue
        for p in range(bptr[b], bptr[b + 1]):
            s2 = bslot[p]
            j = srow[s2]
            if z[j] == 0.0:
                continue
            d = 0.0
            for c in range(6):
                d += hb[s, c] * g[s2, c]
            if mark[j] != i:
                mark[j] = i
                val[j] = 0.0
                touched[k] = j
                k += 1
            val[j] += d
    acc = abs(q[i])
    diag_seen = False
    for a in range(k):
        j = touched[a]
        v = val[j]
        if j == i:
            v += cfm[i]
            diag_seen = True
        acc += abs(v) * abs(z[j])
        mark[j] = -1
    if not diag_seen:
        acc += cfm[i] * abs(z[i])
    return acc


@jit
def all_row_terms(ptr, body, hb, g, bptr, bslot, srow, q, cfm, z, t):
    """t_i = |q_i| + sum_j |A_ij| |z_j| for every row at once (:func:`row_term`'s values): each
    pair of slots on a body once (A_ij = h_i W h_j' = A_ji), the pairs of rows on the same two
    bodies at the smaller body (both bodies' parts summed before |.|)."""
    n = ptr.shape[0] - 1
    nbody = bptr.shape[0] - 2
    for i in range(n):
        t[i] = abs(q[i])
        if body[2 * i] == nbody and body[2 * i + 1] == nbody:
            t[i] += cfm[i] * abs(z[i])      # a row on no moving body: A_ii = cfm_i
    for b in range(nbody):
        for p1 in range(bptr[b], bptr[b + 1]):
            s1 = bslot[p1]
            i = srow[s1]
            o1 = s1 ^ 1                     # the row's other slot (slots 2i, 2i + 1)
            bi = body[o1]
            zi = abs(z[i])
            ti = 0.0                        # row i's sum kept in a register (not a chain through t[i])
            # row i's entries on both bodies in registers for the whole scan (not reloaded each
            # iteration: the stores to t could alias them as far as the compiler knows); each
            # product summed as dot6 sums it, so the same bits
            h0, h1, h2, h3, h4, h5 = hb[s1, 0], hb[s1, 1], hb[s1, 2], hb[s1, 3], hb[s1, 4], hb[s1, 5]
            k0, k1, k2, k3, k4, k5 = hb[o1, 0], hb[o1, 1], hb[o1, 2], hb[o1, 3], hb[o1, 4], hb[o1, 5]
            shared = bi != nbody
            for p2 in range(p1, bptr[b + 1]):
                s2 = bslot[p2]
                j = srow[s2]
                zj = abs(z[j])
                if zi == 0.0 and zj == 0.0:
                    continue
                o2 = s2 ^ 1
                both = shared and bi == body[o2]
                if both and bi < b:
                    continue                # taken at the pair's other body
                d = dot6_of(h0, h1, h2, h3, h4, h5, g, s2)
                if both:
                    d += dot6_of(k0, k1, k2, k3, k4, k5, g, o2)
                if i == j:
                    ti += abs(d + cfm[i]) * zi
                else:
                    d = abs(d)
                    ti += d * zj
                    t[j] += d * zi
            t[i] += ti


@jit
def _screen(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w, t, val, mark, floor):
    """The screen of :func:`residuals`: w = A z + q from dv (written), t~ into t, and (natural
    residual, the lower bound L of the relative residual, zs = the unit of z); inf for a non-finite
    iterate."""
    n = z.shape[0]
    # pass 1: max|z| and u = sum_j |W h_j'| |z_j| per body
    zs = 0.0
    u = np.zeros(dv.shape)
    for r in range(n):
        zr = abs(z[r])
        if not np.isfinite(zr):
            return np.inf, np.inf, 1.0
        if zr != 0.0:
            zs = max(zs, zr)
            for s in range(ptr[r], ptr[r + 1]):
                for c in range(6):
                    u[body[s], c] += abs(g[s, c]) * zr
    if zs == 0.0:
        zs = bounds_scale(z, lo, hi, findex, mu)
    # pass 2: w, t~ and both residuals, row by row
    nat = 0.0
    rel = 0.0
    for i in range(n):
        wi_ = _row_w(i, ptr, body, hb, q, cfm, z, dv)
        if not np.isfinite(wi_):
            return np.inf, np.inf, 1.0
        w[i] = wi_
        acc = abs(q[i]) + cfm[i] * abs(z[i])
        for s in range(ptr[i], ptr[i + 1]):
            for c in range(6):
                acc += abs(hb[s, c]) * u[body[s], c]
        t[i] = acc
        a, b = row_bounds(i, z, lo, hi, findex, mu)
        nat = max(nat, box_row(z[i], wi_, a, b))
        u_i = max(acc, floor)
        wi = wi_ / u_i if u_i > 0.0 else 0.0
        rel = max(rel, box_row(z[i] / zs, wi, a / zs, b / zs), (a - z[i]) / zs, (z[i] - b) / zs)
    return nat, rel, zs


@jit
def _row_relative(i, z, w, lo, hi, findex, mu, t_i, floor, zs):
    """Row i's term of the relative residual: box_row of z_i in units of zs and w_i in units of
    max(t_i, floor) (``box_relative``'s row, t_i its row term or a lower bound of it)."""
    a, b = row_bounds(i, z, lo, hi, findex, mu)
    u_i = max(t_i, floor)
    wi = w[i] / u_i if u_i > 0.0 else 0.0
    return box_row(z[i] / zs, wi, a / zs, b / zs)


@jit
def _refine(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, w, t, val, mark, floor,
            nat, rel, zs):
    """The exact relative residual from the screen of :func:`residuals` (its w, t~, zs and lower
    bound rel): the row terms of the rows whose upper bound exceeds it."""
    n = z.shape[0]
    if n == 0:
        return nat, rel
    # each row's upper bound (t_i's lower bound: t_i >= |q_i| + |A_ii z_i| + |sum_{j != i} A_ij z_j|,
    # the off-diagonal part being w_i - q_i - A_ii z_i); the exact row term only for rows whose bound
    # exceeds the largest value known so far, the row of the largest bound first (its exact value
    # prunes most of the others; a full sort costs more than it saves)
    upper = np.empty(n)
    for i in range(n):
        aii = cfm[i]
        for s in range(ptr[i], ptr[i + 1]):
            for c in range(6):
                aii += hb[s, c] * g[s, c]
        upper[i] = _row_relative(i, z, w, lo, hi, findex, mu,
                                 abs(q[i]) + abs(aii * z[i]) + abs(w[i] - q[i] - aii * z[i]), floor, zs)
    touched = np.empty(n, dtype=np.int64)
    first = np.argmax(upper)
    if upper[first] > rel:
        t_i = row_term(first, ptr, body, hb, g, bptr, bslot, srow, q, cfm, z, val, mark, touched)
        rel = max(rel, _row_relative(first, z, w, lo, hi, findex, mu, t_i, floor, zs))
    # the rows still in doubt, one at a time (each: the slots of its two bodies, with the bookkeeping
    # of the shared entries), or every row at once (:func:`all_row_terms`: each pair of slots on a
    # body once, about half the cost a row): whichever reads fewer slots, at twice the weight a row
    nbody = bptr.shape[0] - 2
    one_by_one = 0
    for i in range(n):
        if upper[i] > rel and i != first:
            for s in range(ptr[i], ptr[i + 1]):
                if body[s] != nbody:
                    one_by_one += 2 * (bptr[body[s] + 1] - bptr[body[s]])
    at_once = 0
    for b in range(nbody):
        m = bptr[b + 1] - bptr[b]
        at_once += m * (m + 1) // 2
    if at_once < one_by_one:
        all_row_terms(ptr, body, hb, g, bptr, bslot, srow, q, cfm, z, t)
        for i in range(n):
            if upper[i] > rel and i != first:
                rel = max(rel, _row_relative(i, z, w, lo, hi, findex, mu, t[i], floor, zs))
        return nat, rel
    for i in range(n):
        if not upper[i] > rel or i == first:
            continue
        t_i = row_term(i, ptr, body, hb, g, bptr, bslot, srow, q, cfm, z, val, mark, touched)
        rel = max(rel, _row_relative(i, z, w, lo, hi, findex, mu, t_i, floor, zs))
    return nat, rel


@jit
def residuals(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w, t, val, mark,
              floor, exact):
    """Two passes (:func:`_screen`): w = A z + q from dv (written), and (natural residual
    ||z - mid(lo, hi, z - w)||_inf, relative residual) with the coupled bounds read from z. The
    relative residual is problems/residual.py's ``box_relative`` (max of natural and infeasibility;
    z in units of max|z|, each w_i in units of max(t_i, floor), t = ``row_terms``). Its row term only
    decreases as t_i grows, and |q_i| + |A_ii z_i| + |w_i - q_i - A_ii z_i| <= t_i <= t~_i = |q_i| +
    cfm_i |z_i| + sum_c |h_ic| u_c (u = sum_j |W h_j'| |z_j| per body, the first pass): the bound t~
    gives a lower bound L of the relative residual, and ``exact`` computes t_i (:func:`_refine`) only
    on the rows whose upper bound exceeds L, so the value is ``solve()``'s. Not ``exact``: L (a
    screen, never a certificate). inf for a non-finite iterate."""
    nat, rel, zs = _screen(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w, t, val, mark,
                           floor)
    if not exact or not np.isfinite(rel):
        return nat, rel
    return _refine(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, w, t, val, mark, floor,
                   nat, rel, zs)


@jit
def _check(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w, t, val, mark, floor,
           tol_rel, final, report, fresh, stats):
    """The residual at a check point: the cheap screen first; when it passes or ``final``, dv is
    recomputed from z (no rounding drift of the updates; not when ``fresh``: dv was just computed
    from this z), and the exact relative residual follows when the screen passed or ``report``
    (``final`` and ``report``: the exact value at once, no screen). Writes stats[1:3] (the exact
    values, or the screen's when it fails); True when certified."""
    if final and report:        # the exact value whatever the screen says: no screen first
        if not fresh:
            impulse_velocity(ptr, body, g, z, dv)
        nat, rel = residuals(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w, t,
                             val, mark, floor, True)
    else:
        nat, rel, zs = _screen(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w, t, val,
                               mark, floor)
        if np.isfinite(rel) and (rel <= tol_rel or final):
            if fresh:               # dv is W H' z already: the screen's w and t~ stand
                if rel <= tol_rel:
                    nat, rel = _refine(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, w, t,
                                       val, mark, floor, nat, rel, zs)
            else:
                impulse_velocity(ptr, body, g, z, dv)
                if rel <= tol_rel:
                    nat, rel = residuals(ptr, body, hb, g, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv,
                                         w, t, val, mark, floor, True)
    stats[1] = nat
    stats[2] = rel
    return rel <= tol_rel
