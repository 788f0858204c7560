"""Matrix-free projected Gauss-Seidel on H M^-1 H' (sequential impulses), for box friction.

The boxed LCP of arechavaleta eq. (16)-(17) has the matrix A = H W H' + diag(cfm) (W = M^-1,
block-diagonal with one 6x6 block per body) and q = H v_free - rhs. Projected Gauss-Seidel
(arechavaleta eq. 3, ODE's quickstep with findex/mu friction-coupled bounds) needs, for row i,
only w_i = (A z + q)_i and A_ii. Instead of forming A (about 35 nonzeros per row on a pile), these
kernels keep the body velocity change

    dv = W H' z        (one 6-vector per body)

so w_i = q_i + cfm_i z_i + h_i . dv, and a change dz of z_i adds dz W h_i' to dv: a sweep costs
O(nnz(H)), and A is never built (Catto's sequential impulses; Bullet's and ODE's solvers). With
the same row order and sweep count the iterates are those of ``kernels/pgs.py`` on the assembled
A, up to rounding.

Row storage: every row of H (a pairwise constraint) touches at most two bodies, so each row gets
two slots s = 2i, 2i + 1 (``row_blocks``): ``body`` (2n,) (the dummy body ``nbody`` for an unused
slot, whose dv row stays 0) and ``hb`` (2n, 6), the row's entries on that body's six dofs (dof c
belongs to body c // 6); ``g`` (2n, 6) = W_body hb (``prepare``); ``ptr`` = 0, 2, 4, ... A fixed,
row-contiguous layout: a sweep reads 24 numbers per row and no index arrays but two bodies.
"""
from __future__ import annotations

import numpy as np

from ._jit import jit, jit_inline
from .dense import centre_of_mass_blocks, dot6_of, mass_block_times
from .pgs import CONVERGED, MAX_SWEEPS, NOT_FINITE, BAD_DIAGONAL, STALLED, row_bounds, bounds_scale
from .residual import box_row


@jit
def row_blocks(indptr, indices, data, n, nbody):
    """Split the CSR rows of H into two body slots each: (ptr, body, hb, ok) as in the module doc
    (entries of a row on the same body summed; unsorted columns are fine). ``ok`` is False when
    a row touches more than two bodies (then the layout does not apply)."""
    return rows_in_order(indptr, indices, data, np.arange(n), nbody)


@jit
def whole_body_blocks(indptr, indices, r):
    """Whether row r's entries are one or two whole blocks of six columns of a body, in order, on
    two different bodies (frame_rows_csr's rows): the row :func:`rows_in_order` copies block by
    block, and mechanics/kernels.py ``delassus_frames_csr`` takes."""
    e = indptr[r + 1] - indptr[r]
    if e != 6 and e != 12:
        return False
    last = -1
    for t in range(e // 6):
        p = indptr[r] + 6 * t
        c0 = indices[p]
        if c0 % 6 != 0 or c0 // 6 <= last:
            return False
        for c in range(1, 6):
            if indices[p + c] != c0 + c:
                return False
        last = c0 // 6
    return True


@jit
def rows_in_order(indptr, indices, data, order, nbody):
    """:func:`row_blocks` with the rows taken in ``order``: slots 2k, 2k + 1 hold row order[k] of H
    (the sweeps then read their rows one after the other in memory)."""
    n = order.shape[0]
    ptr = np.arange(0, 2 * n + 1, 2).astype(np.int64)
    body = np.full(2 * n, nbody, dtype=np.int64)
    hb = np.zeros((2 * n, 6))
    for k in range(n):
        r = order[k]
        if whole_body_blocks(indptr, indices, r):     # one or two aligned blocks of six (frame_rows_csr's rows)
            for t in range((indptr[r + 1] - indptr[r]) // 6):
                p = indptr[r] + 6 * t
                body[2 * k + t] = indices[p] // 6
                for c in range(6):
                    hb[2 * k + t, c] = data[p + c] + 0.0    # + 0.0: the general loop's sum (no -0.0)
            continue
        for p in range(indptr[r], indptr[r + 1]):
            c = indices[p]
            b = c // 6
            if body[2 * k] == b or body[2 * k] == nbody:
                s = 2 * k
            elif body[2 * k + 1] == b or body[2 * k + 1] == nbody:
                s = 2 * k + 1
            else:
                return ptr, body, hb, False
            body[s] = b
            hb[s, c - 6 * b] += data[p]
    return ptr, body, hb, True


@jit
def prepare(ptr, body, hb, W, cfm, g, diag):
    """g_s = W_body(s) hb_s for every slot (:func:`centre_of_mass_blocks` where it applies);
    diag_i = A_ii = sum_s hb_s . g_s + cfm_i."""
    n = ptr.shape[0] - 1
    nbody = W.shape[0]
    plain = centre_of_mass_blocks(W)
    for r in range(n):
        d = cfm[r]
        for s in range(ptr[r], ptr[r + 1]):
            b = body[s]
            if b == nbody:
                g[s, :] = 0.0
                continue
            x0, x1, x2, x3, x4, x5 = mass_block_times(W, b, plain[b], hb[s, 0], hb[s, 1], hb[s, 2], hb[s, 3],
                                                      hb[s, 4], hb[s, 5])
            g[s, 0], g[s, 1], g[s, 2], g[s, 3], g[s, 4], g[s, 5] = x0, x1, x2, x3, x4, x5
            for c in range(6):
                d += hb[s, c] * g[s, c]
        diag[r] = d


@jit
def _add_impulse(i, dz, body, g, dv):
    """dv += W h_i' dz: row i's impulse change on its two bodies."""
    s0 = 2 * i
    b0 = body[s0]
    b1 = body[s0 + 1]
    for c in range(6):
        dv[b0, c] += g[s0, c] * dz
        dv[b1, c] += g[s0 + 1, c] * dz


@jit_inline
def _store6(dv, b, x0, x1, x2, x3, x4, x5):
    dv[b, 0], dv[b, 1], dv[b, 2], dv[b, 3], dv[b, 4], dv[b, 5] = x0, x1, x2, x3, x4, x5


@jit_inline
def _pending(r, dz, body, g, dv, cb0, cb1, a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5):
    """:func:`_add_impulse` of row r's change dz with the pair (cb0, cb1)'s velocity changes held in
    a0..a5 and e0..e5 (the sweep's registers): each of its two slots adds to the registers of its
    body where it is one of the pair, else to dv; the same additions, so the same bits."""
    for t in range(2 * r, 2 * r + 2):
        bp = body[t]
        if bp == cb0:
            a0, a1, a2, a3, a4, a5 = _axpy6(a0, a1, a2, a3, a4, a5, g, t, dz)
        elif bp == cb1:
            e0, e1, e2, e3, e4, e5 = _axpy6(e0, e1, e2, e3, e4, e5, g, t, dz)
        else:
            for c in range(6):
                dv[bp, c] += g[t, c] * dz
    return a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5


@jit_inline
def _running_dot6(acc, hb, s, x0, x1, x2, x3, x4, x5):
    """acc + hb[s] . (x0, ..., x5) as a running sum: a row's w_i over one of its slots
    (:func:`_row_w`, and the sweeps from the pair's registers: the same sums, the same bits)."""
    acc += hb[s, 0] * x0
    acc += hb[s, 1] * x1
    acc += hb[s, 2] * x2
    acc += hb[s, 3] * x3
    acc += hb[s, 4] * x4
    acc += hb[s, 5] * x5
    return acc


@jit_inline
def _axpy6(x0, x1, x2, x3, x4, x5, g, t, dz):
    """(x0, ..., x5) + g[t] dz, each as dv[b, c] += g[t, c] dz adds it."""
    return x0 + g[t, 0] * dz, x1 + g[t, 1] * dz, x2 + g[t, 2] * dz, x3 + g[t, 3] * dz, x4 + g[t, 4] * dz, \
        x5 + g[t, 5] * dz


@jit
def impulse_velocity(ptr, body, g, z, dv):
    """dv = W H' z (dv zeroed first)."""
    dv[:, :] = 0.0
    for r in range(ptr.shape[0] - 1):
        if z[r] != 0.0:
            _add_impulse(r, z[r], body, g, dv)


@jit
def _row_w(i, ptr, body, hb, q, cfm, z, dv):
    """w_i = q_i + cfm_i z_i + h_i . dv over the row's two slots (two accumulators)."""
    s0 = 2 * i
    b0, b1 = body[s0], body[s0 + 1]
    return _running_dot6(q[i] + cfm[i] * z[i], hb, s0, dv[b0, 0], dv[b0, 1], dv[b0, 2], dv[b0, 3], dv[b0, 4],
                         dv[b0, 5]) \
        + _running_dot6(0.0, hb, s0 + 1, dv[b1, 0], dv[b1, 1], dv[b1, 2], dv[b1, 3], dv[b1, 4], dv[b1, 5])


@jit
def chain_couplings(body, hb, g, nbody):
    """c_i = h_i . g_{i-1} over the bodies rows i and i - 1 share (A_{i,i-1}: 0 for rows with no body
    in common, and for row 0), for the sweeps' one-row lookahead (:func:`pgs_matrix_free`)."""
    n = body.shape[0] // 2
    out = np.zeros(n)
    for i in range(1, n):
        acc = 0.0
        for s in range(2 * i, 2 * i + 2):
            b = body[s]
            if b == nbody:
                continue
            for t in range(2 * i - 2, 2 * i):
                if body[t] == b:
                    for c in range(6):
                        acc += hb[s, c] * g[t, c]
        out[i] = acc
    return out


@jit
def body_slots(ptr, body, nbody):
    """The transpose of the row blocks: per body b the slots bslot[bptr[b]:bptr[b+1]], and the
    row of every slot (srow)."""
    n = ptr.shape[0] - 1
    m = body.shape[0]
    srow = np.empty(m, dtype=np.int64)
    for r in range(n):
        for s in range(ptr[r], ptr[r + 1]):
            srow[s] = r
    bptr = np.zeros(nbody + 2, dtype=np.int64)      # the dummy body nbody last
    for s in range(m):
        bptr[body[s] + 1] += 1
    for b in range(nbody + 1):
        bptr[b + 1] += bptr[b]
    fill = bptr[:nbody + 1].copy()
    bslot = np.empty(m, dtype=np.int64)
    for s in range(m):
        bslot[fill[body[s]]] = s
        fill[body[s]] += 1
    return bptr, bslot, srow


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
def _max_abs(z):
    m = 0.0
    for i in range(z.shape[0]):
        m = max(m, abs(z[i]))
    return m


@jit
def pgs_matrix_free(ptr, body, hb, g, diag, bptr, bslot, srow, q, cfm, lo, hi, findex, mu, z, dv, w,
                    max_sweeps, check, tol_rel, tol_w, floor, report, stats):
    """Projected Gauss-Seidel sweeps over the rows in their order on A = H W H' + diag(cfm) without
    forming A (:func:`_solve` lays the rows out in the sweep order first).

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


def solve_matrix_free(H, W, q, cfm, lo, hi, findex, mu, z0=None, max_sweeps=50, tol=0.0, check=10,
                      floor_factor=None, report=True, w_step_tol=0.0, height=None):
    """PGS on the boxed LCP (H W H' + diag(cfm), q) with bounds lo/hi and findex/mu coupling,
    A never formed. ``H``: CSR (n, 6 nbody); ``W``: (nbody, 6, 6) blocks of M^-1; ``cfm``: scalar or
    (n,). Rows are swept uncoupled first, then coupled (``solvers/pgs.py``'s ``normals_first``);
    ``height`` (n,): within each class the highest row first (:func:`sweep_order`; None: H's order).
    ``z0``: warm start (clipped into the static bounds). ``report=False``: an answer that does not
    reach ``tol`` gets the cheap lower bound of its relative residual in stats[2], not the exact
    value (a position correction reads only z). ``w_step_tol``: Bullet's stop (:func:`pgs_matrix_free`
    ``tol_w``; 0: off). Returns (z, w, dv, status, stats) with
    dv = W H' z (nbody, 6) and stats as :func:`pgs_matrix_free`. The layout, the sweeps and the
    report run as one compiled call (:func:`_solve`)."""
    from .tolerances import NORMWISE_FLOOR
    n = H.shape[0]
    f = np.float64
    cfm = np.asarray(cfm, dtype=f)
    cfm = np.full(n, float(cfm)) if cfm.ndim == 0 else np.ascontiguousarray(cfm)
    z = np.zeros(n) if z0 is None else np.array(z0, dtype=f)
    ok, w, dv, code, stats = _solve(np.asarray(H.indptr, dtype=np.int64), np.asarray(H.indices, dtype=np.int64),
                                    np.asarray(H.data, dtype=f), np.ascontiguousarray(W, dtype=f),
                                    np.ascontiguousarray(q, dtype=f), cfm, np.ascontiguousarray(lo, dtype=f),
                                    np.ascontiguousarray(hi, dtype=f), np.asarray(findex, dtype=np.int64),
                                    np.ascontiguousarray(mu, dtype=f), z, int(max_sweeps), int(check), float(tol),
                                    float(w_step_tol), NORMWISE_FLOOR if floor_factor is None else float(floor_factor),
                                    bool(report), np.zeros(0) if height is None else np.ascontiguousarray(height, dtype=f))
    if not ok:
        raise ValueError("a row of H touches more than two bodies; the matrix-free layout needs pairwise rows")
    return z, w, dv, int(code), stats


@jit
def sweep_order(findex, height):
    """The order of the sweeps: the uncoupled rows (findex < 0: normals, joints, limits) first, then
    the coupled ones (friction), as ``solvers/pgs.py``'s ``normals_first``; within each class, with
    ``height`` (n,), the highest row first (a stable sort: ties keep H's order), else H's order.

    Top down is the order in which one sweep carries the weight of a stack to the ground: the top
    contact takes its box's weight, the one below sees it and takes two, and so on (the
    shock-propagation order of Guendelman, Bridson and Fedkiw, "Nonconvex rigid bodies with
    stacking", SIGGRAPH 2003, for Gauss-Seidel). Bottom up, a sweep moves each contact's share by
    one box only: a 10-box stack under 50 warm-started sweeps a step rocks with a growing amplitude,
    where top down it stays within millimetres (docs/benchmarks-tuning.md)."""
    n = findex.shape[0]
    perm = np.argsort(-height, kind="mergesort") if height.shape[0] == n else np.arange(n)
    order = np.empty(n, dtype=np.int64)
    k = 0
    for coupled in (False, True):
        for i in perm:
            if (findex[i] >= 0) == coupled:
                order[k] = i
                k += 1
    return order


@jit
def _solve(ip, ix, data, W, q, cfm, lo, hi, findex, mu, z, max_sweeps, check, tol, tol_w, floor_factor, report,
           height):
    """:func:`solve_matrix_free` after its argument checks: the row blocks, g and the diagonal, the
    body slots, the sweep order (:func:`sweep_order`), z clipped into the static bounds (in
    place), then :func:`pgs_matrix_free`. Returns (ok, w, dv, code, stats); ok False: a row touches
    more than two bodies (nothing solved)."""
    n = q.shape[0]
    nbody = W.shape[0]
    w = np.empty(n)
    stats = np.zeros(4)
    order = sweep_order(findex, height)
    ptr, body, hb, ok = rows_in_order(ip, ix, data, order, nbody)
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
