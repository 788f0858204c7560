"""Box-qp's Newton solves on an island's CSR block (kernels/box_qp.py, above
kernels/box_qp_islands.py ``CSR_FROM`` rows): the block Cholesky of M_FF over the island's groups in
panels (:func:`panel_factor`, :func:`panel_substitute`), and the solves of one projected Newton run
on a changing free set from one such factor (:func:`panel_state_solve`): where the free set differs
from the factor's by a few rows, the bordered system of the factor's block (rows that left held at
0 by multipliers, rows that joined as a border) is solved through its Schur complement -- the
update of a basis factorisation in active-set QP methods (Gill, Murray, Saunders & Wright, "Sparse
matrix methods in optimization", SIAM J. Sci. Stat. Comput. 5(3), 1984, the Schur-complement
update; Nocedal & Wright, Numerical Optimization, 2nd ed., §16.5) -- so that a run whose free set
moves by a few rows a step factorises once instead of at every solve.
"""
from __future__ import annotations

import numpy as np

from ._jit import jit, jit_inline


@jit
def _failed(G, m):
    """panel_factor's outcome where the factor fails: (False, empty arrays)."""
    return (False, np.zeros(0), np.zeros(G + 1, dtype=np.int64), np.zeros((G, 1), dtype=np.int64),
            np.zeros(G, dtype=np.int64), np.zeros(G + 1, dtype=np.int64), np.full(m, -1, dtype=np.int64))


@jit
def panel_factor(sptr, sidx, sval, F, k, grp, gstep, nbr, nnb):
    """The block Cholesky factor L L' = M_FF of an island's CSR block (sptr, sidx, sval; its own
    rows) on the free rows F[:k], over the groups' elimination order (grp, gstep, nbr, nnb:
    kernels/box_qp.py ``island_groups``; the block Cholesky of kernels/dense.py
    ``grouped_cholesky_solve``), each step's lower blocks stored as one panel (its own group's rows,
    then each later neighbour's, by the group's columns) in a flat array, gathered from M's entries:
    memory and time linear in the rows where the groups' fill is bounded (a column of boxes: a
    path). Returns (ok, P, poff, roff, cnt, xo, place): ok False where a pivot is not positive or M
    couples two groups the order does not hold; step s's panel at P[poff[s]:poff[s + 1]], its
    neighbour a's rows from roff[s, a], cnt[s] free rows, the first at xo[s] in step order; row i's
    place in step order place[i] (-1: not free). :func:`panel_substitute` solves with it."""
    G = gstep.size
    m = sptr.size - 1
    cnt = np.zeros(G, dtype=np.int64)
    pos = np.full(m, -1, dtype=np.int64)        # a free row's place in its step
    for a in range(k):
        s = gstep[grp[F[a]]]
        pos[F[a]] = cnt[s]
        cnt[s] += 1
    xo = np.zeros(G + 1, dtype=np.int64)         # the steps' rows in x, in step order
    for s in range(G):
        xo[s + 1] = xo[s] + cnt[s]
    width = nbr.shape[1]
    roff = np.empty((G, max(width, 1)), dtype=np.int64)
    poff = np.zeros(G + 1, dtype=np.int64)
    for s in range(G):
        r = cnt[s]
        for a in range(nnb[s]):
            roff[s, a] = r
            r += cnt[nbr[s, a]]
        poff[s + 1] = poff[s] + r * cnt[s]
    step = np.empty(m, dtype=np.int64)
    order = np.empty(k, dtype=np.int64)         # the free rows in step order
    for a in range(k):
        step[F[a]] = gstep[grp[F[a]]]
        order[xo[step[F[a]]] + pos[F[a]]] = F[a]
    P = np.zeros(poff[G])
    slot = np.full(G, -1, dtype=np.int64)       # step h's place among step s's neighbours, while at s
    for s in range(G):                            # the lower blocks of M_FF into the panels: column
        w = cnt[s]                                # j of step s, row i at or after it (M symmetric)
        for e in range(nnb[s]):
            slot[nbr[s, e]] = e
        for c in range(xo[s], xo[s + 1]):
            j = order[c]
            pj = pos[j]
            for p in range(sptr[j], sptr[j + 1]):
                i = sidx[p]
                pi = pos[i]
                if pi < 0:
                    continue
                si = step[i]
                if si == s:
                    if pi >= pj:
                        P[poff[s] + pi * w + pj] += sval[p]
                elif si > s:
                    e = slot[si]
                    if e < 0:                     # a coupling the groups' order does not hold
                        return _failed(G, m)
                    P[poff[s] + (roff[s, e] + pi) * w + pj] += sval[p]
        for e in range(nnb[s]):
            slot[nbr[s, e]] = -1
    for s in range(G):
        w, b0 = cnt[s], poff[s]
        rows = (poff[s + 1] - b0) // w if w > 0 else 0
        for j in range(w):                        # the pivot block, then the rows below it
            d = P[b0 + j * w + j]
            for t in range(j):
                d -= P[b0 + j * w + t] * P[b0 + j * w + t]
            if not d > 0.0:
                return _failed(G, m)
            ljj = np.sqrt(d)
            P[b0 + j * w + j] = ljj
            for i in range(j + 1, rows):
                v = P[b0 + i * w + j]
                for t in range(j):
                    v -= P[b0 + i * w + t] * P[b0 + j * w + t]
                P[b0 + i * w + j] = v / ljj
        for a in range(nnb[s]):                   # B[h, kk] -= L[h, s] L[kk, s]' (lower blocks)
            h = nbr[s, a]
            for c in range(nnb[s]):
                kk = nbr[s, c]
                if kk > h or cnt[h] == 0 or cnt[kk] == 0:
                    continue
                wk = cnt[kk]
                if h == kk:
                    tr = 0
                else:
                    tr = -1
                    for e in range(nnb[kk]):
                        if nbr[kk, e] == h:
                            tr = roff[kk, e]
                            break
                    if tr < 0:                    # not the fill of this order
                        return _failed(G, m)
                for ii in range(cnt[h]):
                    ri = b0 + (roff[s, a] + ii) * w
                    for jj in range(wk if h != kk else ii + 1):
                        rj = b0 + (roff[s, c] + jj) * w
                        v = 0.0
                        for t in range(w):
                            v += P[ri + t] * P[rj + t]
                        P[poff[kk] + (tr + ii) * wk + jj] -= v
    place = np.full(m, -1, dtype=np.int64)
    for a in range(k):
        place[F[a]] = xo[step[F[a]]] + pos[F[a]]
    return True, P, poff, roff, cnt, xo, place


@jit_inline
def _forward_step(P, poff, roff, cnt, xo, nbr, nnb, x, s):
    """Step s of L y = x in place (:func:`panel_forward`): its own rows by the pivot block, then
    their contribution taken from its later neighbours' rows."""
    w, b0, x0 = cnt[s], poff[s], xo[s]
    for i in range(w):
        v = x[x0 + i]
        for t in range(i):
            v -= P[b0 + i * w + t] * x[x0 + t]
        x[x0 + i] = v / P[b0 + i * w + i]
    for a in range(nnb[s]):
        h = nbr[s, a]
        for ii in range(cnt[h]):
            ri = b0 + (roff[s, a] + ii) * w
            v = 0.0
            for t in range(w):
                v += P[ri + t] * x[x0 + t]
            x[xo[h] + ii] -= v


@jit
def panel_forward(P, poff, roff, cnt, xo, nbr, nnb, x):
    """x <- L^-1 x in place (x in step order), L the factor of :func:`panel_factor`."""
    for s in range(cnt.size):
        _forward_step(P, poff, roff, cnt, xo, nbr, nnb, x, s)


@jit
def panel_back(P, poff, roff, cnt, xo, nbr, nnb, x):
    """x <- L'^-1 x in place (x in step order), L the factor of :func:`panel_factor`."""
    for s in range(cnt.size - 1, -1, -1):
        w, b0, x0 = cnt[s], poff[s], xo[s]
        for a in range(nnb[s]):
            h = nbr[s, a]
            for ii in range(cnt[h]):
                ri = b0 + (roff[s, a] + ii) * w
                xi = x[xo[h] + ii]
                for t in range(w):
                    x[x0 + t] -= P[ri + t] * xi
        for i in range(w - 1, -1, -1):
            v = x[x0 + i]
            for t in range(i + 1, w):
                v -= P[b0 + t * w + i] * x[x0 + t]
            x[x0 + i] = v / P[b0 + i * w + i]


@jit
def panel_substitute(P, poff, roff, cnt, xo, nbr, nnb, x):
    """x <- M_FF^-1 x in place, x in step order (row i at ``place[i]``), by the factor of
    :func:`panel_factor`: L y = x (:func:`panel_forward`), then L' x = y (:func:`panel_back`)."""
    panel_forward(P, poff, roff, cnt, xo, nbr, nnb, x)
    panel_back(P, poff, roff, cnt, xo, nbr, nnb, x)


@jit
def panel_solve(sptr, sidx, sval, F, k, rhs, grp, gstep, nbr, nnb):
    """(ok, x) with M_FF x = rhs for M in CSR (F[:k] the free rows): :func:`panel_factor`, then
    :func:`panel_substitute`; neither a dense block of the island nor a pass over one. ok False
    where a pivot is not positive or x is not finite (the caller then takes the dense path)."""
    ok, P, poff, roff, cnt, xo, place = panel_factor(sptr, sidx, sval, F, k, grp, gstep, nbr, nnb)
    if not ok:
        return False, np.zeros(k)
    x = np.empty(k)
    for a in range(k):
        x[place[F[a]]] = rhs[a]
    panel_substitute(P, poff, roff, cnt, xo, nbr, nnb, x)
    out = np.empty(k)
    for a in range(k):
        out[a] = x[place[F[a]]]
        if not np.isfinite(out[a]):
            return False, out
    return True, out


#: the most rows by which the free set of a :func:`panel_state_solve` may differ from its factor's
#: (counted over the run since that factor: each such row costs one forward solve along its elimination
#: path, once) before the block is factorised again
BORDER_MAX = 64


@jit
def new_panel_state(m):
    """An empty factor state of :func:`panel_state_solve` for an island of m rows (no factor yet: its
    first solve factorises and sizes every array, so none is allocated here; m is kept for the callers):
    (P, poff, roff, cnt, xo, place, W, wrow, wcol, meta, reach, rlen, WW, known):
    :func:`panel_factor`'s factor; the forward solves W[c] = L^-1 B_c of the border rows met since
    (row wrow[c]; row i's column wcol[i], -1: none), each held on the steps of its elimination path
    only (reach[c, :rlen[c]], ascending: W[c] is read nowhere else); their Gram matrix WW (entry
    (c, d) computed where known[c, d]); meta = (border columns used, whether the factor holds,
    factorisations made, the border columns' forward-solve work since the last, that factorisation's
    work: :func:`_factor_work`)."""
    none = np.zeros(0, dtype=np.int64)
    return (np.zeros(0), np.zeros(1, dtype=np.int64), np.zeros((0, 1), dtype=np.int64), none,
            np.zeros(1, dtype=np.int64), none, np.zeros((0, 0)), none, none, np.zeros(5, dtype=np.int64),
            np.zeros((0, 0), dtype=np.int64), none, np.zeros((0, 0)), np.zeros((0, 0), dtype=np.bool_))


@jit
def _border_column(P, poff, roff, cnt, xo, nbr, nnb, sptr, sidx, sval, place, grp, gstep, i, W, reach, rlen, c, mark):
    """W[c] = L^-1 B_i for border row i of the factor's block F (B_i = e_i for a row of F, else
    M_{F,i}: row i's entries on F's rows), computed on the steps it reaches only: the nonzeros of
    L^-1 b lie on the steps from b's own steps up the elimination tree (each step passes its values
    to its later neighbours nbr[s]; Gilbert & Peierls, SIAM J. Sci. Stat. Comput. 9(5), 1988, the
    reach of a sparse right-hand side), written into reach[c, :rlen[c]] ascending. ``mark``: False
    per step on entry and exit. Returns its work: the factor entries it read (those of its steps'
    panels), the unit of :func:`_factor_work`."""
    G = cnt.size
    first = G
    if place[i] >= 0:
        s = gstep[grp[i]]
        mark[s] = True
        first = s
    else:
        for p in range(sptr[i], sptr[i + 1]):
            r = sidx[p]
            if place[r] >= 0:
                s = gstep[grp[r]]
                mark[s] = True
                if s < first:
                    first = s
    n = 0
    work = 0
    y = W[c]
    for s in range(first, G):                      # the steps reached, ascending; their rows zeroed
        if mark[s]:
            mark[s] = False
            reach[c, n] = s
            n += 1
            work += poff[s + 1] - poff[s]
            for e in range(nnb[s]):
                mark[nbr[s, e]] = True
            for r in range(xo[s], xo[s + 1]):
                y[r] = 0.0
    rlen[c] = n
    if place[i] >= 0:
        y[place[i]] = 1.0
    else:
        for p in range(sptr[i], sptr[i + 1]):
            r = place[sidx[p]]
            if r >= 0:
                y[r] += sval[p]
    for a in range(n):
        _forward_step(P, poff, roff, cnt, xo, nbr, nnb, y, reach[c, a])
    return work


@jit
def _factor_work(poff, cnt):
    """The multiply-adds of :func:`panel_factor` in units of factor entries, about: step s's panel of
    r rows by w columns costs r^2 w / 2 (its own Cholesky, r w^2 / 2, and the updates of its
    neighbours' blocks), where a forward solve reads each of its r w entries once."""
    work = 0
    for s in range(cnt.size):
        w = cnt[s]
        if w:
            r = (poff[s + 1] - poff[s]) // w
            work += r * r * w // 2
    return work


@jit
def _reach_dot(W, reach, rlen, xo, c, v):
    """W[c]' v over the steps column c reaches (W[c] is zero elsewhere)."""
    acc = 0.0
    y = W[c]
    for a in range(rlen[c]):
        s = reach[c, a]
        for r in range(xo[s], xo[s + 1]):
            acc += y[r] * v[r]
    return acc


@jit
def _gram(W, reach, rlen, xo, WW, known, c, d):
    """W[c]' W[d] (cached in WW): over the steps both columns reach, a merge of their ascending lists."""
    if not known[c, d]:
        acc = 0.0
        yc, yd = W[c], W[d]
        a = b = 0
        while a < rlen[c] and b < rlen[d]:
            sc, sd = reach[c, a], reach[d, b]
            if sc < sd:
                a += 1
            elif sd < sc:
                b += 1
            else:
                for r in range(xo[sc], xo[sc + 1]):
                    acc += yc[r] * yd[r]
                a += 1
                b += 1
        WW[c, d] = WW[d, c] = acc
        known[c, d] = known[d, c] = True
    return WW[c, d]


@jit
def panel_state_solve(st, sptr, sidx, sval, F, k, rhs, grp, gstep, nbr, nnb):
    """(ok, x, state) with M_FF x = rhs (F[:k] the free rows; M in CSR, its groups as
    :func:`panel_factor` takes them) from the factor L L' = M_F0F0 held in ``st``
    (:func:`new_panel_state`) of the block of another free set F0: rows R of F0 not in F (held: x_R
    = 0 by multipliers) and rows A of F not in F0 (joined) border it, K = [[M_F0F0, B], [B', G]]
    with B = [M_{F0,A}, E_R], G = [[M_AA, 0], [0, 0]]. With W = L^-1 B (one forward solve per border
    row along its elimination path, :func:`_border_column`, kept for the rest of the run) and v =
    L^-1 b, the Schur complement S = G - B' M_F0F0^-1 B = G - W'W gives (G - W'W) y = g - W'v,
    x_A = y_A, x_F0 = L'^-1 (v - W y), x_R = 0: the solution on F exactly, as a factorisation of
    M_FF would give it up to rounding, for one forward and one back substitution a solve (the
    Schur-complement update of a basis factorisation in active-set QP methods: Gill, Murray,
    Saunders & Wright 1984; Nocedal & Wright §16.5; here with L^-1 B held on its reach only). The
    block is factorised afresh (a new F0 = F) where there is no factor, or more than BORDER_MAX
    border rows since it, or where the border columns' forward solves have together cost as much as
    that factorisation did (:func:`_factor_work`; ski rental: the border's work between two
    factorisations is at most one factorisation's); ok False where that factorisation fails or x is
    not finite."""
    P, poff, roff, cnt, xo, place, W, wrow, wcol, meta, reach, rlen, WW, known = st
    m = sptr.size - 1
    if k == 0:
        return True, np.empty(0), st
    at = np.full(m, -1, dtype=np.int64)          # row i's place in F (rhs), -1: held
    for a in range(k):
        at[F[a]] = a
    cols = np.empty(BORDER_MAX, dtype=np.int64)
    c = 0
    fresh = meta[1] == 0
    if not fresh:
        need = 0
        for i in range(m):
            if (place[i] >= 0) != (at[i] >= 0):
                if c == BORDER_MAX:
                    fresh = True
                    break
                cols[c] = i
                c += 1
                if wcol[i] < 0:
                    need += 1
        if meta[0] + need > BORDER_MAX or meta[3] > meta[4]:
            fresh = True
    if fresh:
        ok, P, poff, roff, cnt, xo, place = panel_factor(sptr, sidx, sval, F, k, grp, gstep, nbr, nnb)
        wcol = np.full(m, -1, dtype=np.int64)
        # the border's buffers are sized at its first row (a run that lands in one solve needs none)
        W, wrow, reach = np.empty((0, 0)), wcol[:0], np.empty((0, 0), dtype=np.int64)
        rlen, WW, known = wcol[:0], np.empty((0, 0)), np.zeros((0, 0), dtype=np.bool_)
        meta = np.array([0, 1 if ok else 0, meta[2] + 1, 0, _factor_work(poff, cnt) if ok else 0], dtype=np.int64)
        st = (P, poff, roff, cnt, xo, place, W, wrow, wcol, meta, reach, rlen, WW, known)
        if not ok:
            return False, np.zeros(k), st
        c = 0
    kf = xo[-1]
    if c:
        if W.shape[0] == 0:
            W = np.empty((BORDER_MAX, kf))
            wrow = np.full(BORDER_MAX, -1, dtype=np.int64)
            reach = np.empty((BORDER_MAX, cnt.size), dtype=np.int64)
            rlen = np.zeros(BORDER_MAX, dtype=np.int64)
            WW = np.empty((BORDER_MAX, BORDER_MAX))
            known = np.zeros((BORDER_MAX, BORDER_MAX), dtype=np.bool_)
            st = (P, poff, roff, cnt, xo, place, W, wrow, wcol, meta, reach, rlen, WW, known)
        mark = np.zeros(cnt.size, dtype=np.bool_)
        for j in range(c):                        # the border rows' forward solves not yet made
            i = cols[j]
            if wcol[i] >= 0:
                continue
            meta[3] += _border_column(P, poff, roff, cnt, xo, nbr, nnb, sptr, sidx, sval, place, grp, gstep, i, W,
                                      reach, rlen, meta[0], mark)
            wrow[meta[0]] = i
            wcol[i] = meta[0]
            meta[0] += 1
    v = np.zeros(kf)
    for a in range(k):
        if place[F[a]] >= 0:
            v[place[F[a]]] = rhs[a]
    panel_forward(P, poff, roff, cnt, xo, nbr, nnb, v)
    yb = np.zeros(c)
    if c:
        S = np.empty((c, c))
        g = np.empty(c)
        for ii in range(c):
            ri = cols[ii]
            ci = wcol[ri]
            joined = place[ri] < 0
            for jj in range(ii + 1):
                rj = cols[jj]
                s = 0.0
                if joined and place[rj] < 0:           # G: M_AA
                    for p in range(sptr[ri], sptr[ri + 1]):
                        if sidx[p] == rj:
                            s += sval[p]
                S[ii, jj] = S[jj, ii] = s - _gram(W, reach, rlen, xo, WW, known, ci, wcol[rj])
            g[ii] = (rhs[at[ri]] if joined else 0.0) - _reach_dot(W, reach, rlen, xo, ci, v)
        try:
            yb = np.linalg.solve(S, g)
        except Exception:
            meta[1] = 0                              # refactorise at the next call
            return False, np.zeros(k), st
        for jj in range(c):                          # v - W y, over each column's steps
            cj = wcol[cols[jj]]
            y = W[cj]
            b = yb[jj]
            for a in range(rlen[cj]):
                s = reach[cj, a]
                for r in range(xo[s], xo[s + 1]):
                    v[r] -= y[r] * b
    panel_back(P, poff, roff, cnt, xo, nbr, nnb, v)
    x = np.empty(k)
    for a in range(k):
        i = F[a]
        if place[i] >= 0:
            x[a] = v[place[i]]
        else:
            for jj in range(c):
                if cols[jj] == i:
                    x[a] = yb[jj]
        if not np.isfinite(x[a]):
            return False, x, st
    return True, x, st
