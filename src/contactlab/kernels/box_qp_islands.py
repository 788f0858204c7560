"""Box-qp's islands in one compiled call (:func:`box_qp_islands`): each island of a boxed LCP solved
apart by the projected Newton of :mod:`contactlab.kernels.box_qp` (its dense block, or above
``CSR_FROM`` rows its CSR block factorised by groups), with each sparse island's symbolic layout
(its groups, their elimination order, the block's pattern) kept between calls and reused where the
island's rows and pattern are unchanged (a settled pile's towers keep their contacts step to step).
Called by :mod:`contactlab.solvers.box_qp.islands`."""
from __future__ import annotations

import numpy as np

from ._jit import jit
from .box_qp import (INTERIOR, LEFT, _clip, box_qp_grouped, group_ids, island_groups, new_factor_cache, no_csr,
                     no_groups)
from .csr_blocks import gather_block
from .residual import box_relative_error, coupled_bounds

#: the fewest rows of an island factorised by groups that box_qp_islands keeps as CSR (above: time
#: linear in its entries; below: its dense block, whose BLAS products are faster while it is small);
#: on settled pile towers the two costs cross near 340 rows (docs/benchmarks-sim.md)
CSR_FROM = 320

#: box_qp_islands gives an island of more rows than this whose start is poor (relative error above
#: ``poor_residual``) one full Newton step, and where that does not certify it leaves the island untouched
#: (LEFT: solvers/box_qp/islands.py takes it to the interior point on its own block at once where these steps
#: were tried, else to the whole method, which goes to the interior point at once from such a start): a falling pile's large impact islands start poor and their Newton steps mostly
#: do not land, while a resting pile's towers land in one -- their start's scale-free error is often 1,
#: their box-box rows having q ~ 0, yet with every row free one Newton step is the answer
#: (docs/benchmarks-sim.md)
POOR_LEFT_FROM = 600

#: the Newton steps (each trying the face step first, kernels/box_qp.py ``_face_step``) that such an island
#: on its CSR block gets from a poor start before it is left: towers of a settled pile joined by a few
#: side contacts into one island (tens of thousands of rows at 5,000 boxes) land in two to six, where
#: the interior point in Python takes ~15 iterations; since its solves share one factorisation a run
#: (kernels/box_qp_panels.py ``panel_state_solve``, the border by sparse forward solves) a step after
#: the first costs a few substitutions, and the steps that landed in four to six were left after
#: three before (docs/session13-settle13.md)
POOR_LEFT_STEPS = 8

#: an island of more than POOR_LEFT_FROM rows more than this share of whose rows are fixed (lo = hi, no
#: findex: under coupling "previous" the friction rows of a contact new this step, arechavaleta §IV-C) is left from a
#: poor start before any Newton step, and before its layout is worked out: a falling pile's impact
#: islands (6-26 % of their rows new on a 500-box pile) gain nothing in the steps POOR_LEFT_STEPS
#: gives (relative error 1.0 -> 1.0 on every one recorded), while the towers of a settled pile that
#: those steps land (side contacts joining them at 5,000 boxes) have at most 0.4 % of their rows new
#: (docs/benchmarks-sim.md, "impact islands left before any Newton step")
NEW_LEFT_SHARE = 0.02


@jit
def new_island_layouts():
    """An empty cache of island layouts for :func:`box_qp_islands`: (layout, offsets, spare): no
    island, and no spare buffer yet."""
    return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)


@jit
def _put(blob, used, x):
    """x (flattened) into blob at used (a wider copy when full); returns (blob, used after it)."""
    v = x.ravel()
    if used + v.size > blob.size:
        wider = np.empty(max(2 * blob.size, used + v.size), dtype=np.int64)
        wider[:used] = blob[:used]
        blob = wider
    blob[used:used + v.size] = v
    return blob, used + v.size


@jit
def _island_layout(blob, used, indptr, indices, data, idx, at, label, scratch):
    """The symbolic part of a CSR island's Newton solves (rows idx, at[idx[a]] = a and -1
    elsewhere), computed and appended to blob at used: header (m, G, neighbour width, entries of its
    block), its rows and their groups (the key, with the pattern: :func:`_layout_values`), the
    groups' structure of :func:`island_groups` (gstep, nbr, nnb), its block's pattern (sptr, sidx of
    :func:`~contactlab.kernels.csr_blocks.sub_block`). Returns (blob, used after it, the block's values)."""
    grp, gstep, nbr, nnb = island_groups(indptr, indices, idx, at, label, scratch)
    m = idx.size
    sptr = np.zeros(m + 1, dtype=np.int64)
    for a in range(m):
        c = 0
        for p in range(indptr[idx[a]], indptr[idx[a] + 1]):
            if at[indices[p]] >= 0:
                c += 1
        sptr[a + 1] = sptr[a] + c
    nz = sptr[m]
    head = np.array([m, gstep.size, nbr.shape[1], nz], dtype=np.int64)
    blob, used = _put(blob, used, head)
    blob, used = _put(blob, used, idx)
    blob, used = _put(blob, used, grp)
    blob, used = _put(blob, used, gstep)
    blob, used = _put(blob, used, nbr)
    blob, used = _put(blob, used, nnb)
    blob, used = _put(blob, used, sptr)
    if used + nz > blob.size:
        wider = np.empty(max(2 * blob.size, used + nz), dtype=np.int64)
        wider[:used] = blob[:used]
        blob = wider
    sval = np.empty(nz)                     # sub_block's second pass, its columns written into blob
    o = used
    for a in range(m):
        for p in range(indptr[idx[a]], indptr[idx[a] + 1]):
            b = at[indices[p]]
            if b >= 0:
                blob[o] = b
                sval[o - used] = data[p]
                o += 1
    return blob, used + nz, sval


@jit
def _layout_parts(blob, b0):
    """(grp, gstep, nbr, nnb, sptr, sidx) of the layout at blob[b0:] (:func:`_island_layout`)."""
    m, G, W, nz = blob[b0], blob[b0 + 1], blob[b0 + 2], blob[b0 + 3]
    o = b0 + 4 + m
    grp = blob[o:o + m]
    o += m
    gstep = blob[o:o + G]
    o += G
    nbr = blob[o:o + G * W].copy().reshape((G, W))
    o += G * W
    nnb = blob[o:o + G]
    o += G
    sptr = blob[o:o + m + 1]
    o += m + 1
    sidx = blob[o:o + nz]
    return grp, gstep, nbr, nnb, sptr, sidx


@jit
def _layout_values(blob, b0, b1, indptr, indices, data, idx, at, label, scratch):
    """(holds, values): whether the cached layout blob[b0:b1] (:func:`_island_layout`) is that of the
    island's rows idx (at[idx[a]] = a, -1 elsewhere) -- the same rows, in the same groups, the same
    pattern of its block, from which its groups' order and neighbours are computed -- and, where it
    holds, the block's values (:func:`~contactlab.kernels.csr_blocks.sub_block`'s, in one pass over its rows' entries)."""
    m = idx.size
    none = np.empty(0)
    if b1 - b0 < 4 or blob[b0] != m:
        return False, none
    o = b0 + 4
    for a in range(m):
        if blob[o + a] != idx[a]:
            return False, none
    grp = group_ids(idx, label, scratch)
    o += m
    for a in range(m):
        if blob[o + a] != grp[a]:
            return False, none
    G, W, nz = blob[b0 + 1], blob[b0 + 2], blob[b0 + 3]
    ptr = o + m + G * (2 + W)
    sidx = ptr + m + 1
    if sidx + nz != b1:
        return False, none
    val = np.empty(nz)
    t = 0
    for a in range(m):
        if blob[ptr + a] != t:
            return False, none
        for p in range(indptr[idx[a]], indptr[idx[a] + 1]):
            c = at[indices[p]]
            if c >= 0:
                if t >= nz or blob[sidx + t] != c:
                    return False, none
                val[t] = data[p]
                t += 1
    return t == nz and blob[ptr + m] == nz, val


@jit
def _impact_start(indptr, indices, data, idx, at, q, lo, hi, findex, mu, z0, poor_residual):
    """Whether an island (rows idx, at[idx[a]] = a and -1 elsewhere; q, lo, hi, findex (renumbered),
    mu, z0 its own) is an impact island from a poor start: more than NEW_LEFT_SHARE of its rows fixed
    (lo = hi, bounds tied to no other row) and the relative error of its start above ``poor_residual``, the start and its error
    as :func:`~contactlab.kernels.box_qp.projected_newton` takes them in its first bound update (z0
    clipped into the bounds at z0, w = M z0 + q from the island's rows of M in CSR, row terms
    |q_i| + |w_i - q_i|): the test that leaves it, made before any work on its block."""
    m = idx.size
    new = 0
    for a in range(m):
        if lo[a] == hi[a] and findex[a] < 0:
            new += 1
    if not new > NEW_LEFT_SHARE * m:
        return False
    lk, hk, z = np.empty(m), np.empty(m), z0.copy()
    coupled_bounds(lo, hi, findex, mu, z, lk, hk)
    for a in range(m):
        z[a] = _clip(z[a], lk[a], hk[a])
    w, t = np.empty(m), np.empty(m)
    for a in range(m):
        acc = 0.0
        for p in range(indptr[idx[a]], indptr[idx[a] + 1]):
            b = at[indices[p]]
            if b >= 0:
                acc += data[p] * z[b]
        w[a] = acc + q[a]
        t[a] = abs(q[a]) + abs(w[a] - q[a])
    return box_relative_error(z, w, lk, hk, q, t, np.empty((4, m))) > poor_residual


@jit
def box_qp_islands(indptr, indices, data, q, lo, hi, findex, mu, z0, order, bounds, tol, max_iterations,
                   armijo, newton_only, max_outer, z, w, codes, its, outers, label, grouped_from, small_n,
                   newton_steps, poor_iterations, poor_residual, layout, layout_at, spare):
    """:func:`box_qp_dense` on each island of a CSR problem in one call (the islands of a contact
    problem: rows order[bounds[k]:bounds[k + 1]], ascending, coupled to no other row by M or
    findex): its dense block gathered (:func:`~contactlab.kernels.csr_blocks.csr_dense_block`; an island factorised by groups, below,
    its CSR block instead), findex renumbered, a factor cache of its own, the projected Newton budget solvers/box_qp/ gives a problem of its size: up to
    ``small_n`` rows (or ``newton_only``) ``max_iterations`` steps with line search, above it
    ``newton_steps`` steps, stopping at the first the line search would shorten (the interior point
    goes on from there, as ``_compiled`` hands over). An island of more than ``grouped_from`` rows, where ``label``
    (a group per row, e.g. the rows on one body pair; empty: none) is given, factorises its Newton
    steps block by block over its groups (:func:`island_groups`), and above CSR_FROM rows keeps its
    CSR block (:func:`box_qp_grouped` with sptr, the solves by :func:`_panel_solve`: time and memory
    linear in its entries). Writes
    each island's answer into z, w (SOLVED, UNSETTLED), or its starting point into z (INTERIOR: the
    interior point goes on from bound update outers[k]); codes[k], its[k], outers[k] as
    box_qp_dense returns them. An island whose start's relative error is above ``poor_residual`` gets
    at most ``poor_iterations`` of its line-search steps (:func:`projected_newton`); one of more than
    POOR_LEFT_FROM rows one (on its CSR block POOR_LEFT_STEPS, each trying the face step first), after
    which it is left untouched (codes[k] LEFT, its[k] those steps, z and w not written).

    (layout, layout_at, spare): the symbolic part of each CSR island's solves in the previous call
    (:func:`new_island_layouts` for none): island k's groups, their elimination order and its
    block's pattern (:func:`_island_layout`), reused where its rows, their groups and its block's
    pattern are those of island k there (:func:`_layout_values`: a settled pile's islands keep their
    contacts), only the values gathered again; recomputed otherwise. The same arrays either way, so
    the same bits. Returns (layout, layout_at) of this call's CSR islands for the next, written into
    ``spare`` where it is large enough (the caller passes the previous call's buffer back: no new
    memory a step)."""
    n = q.size
    at = np.full(n, -1, dtype=np.int64)
    scratch = np.full(label.max() + 1 if label.size else 0, -1, dtype=np.int64)
    K = bounds.size - 1
    blob, used = spare, 0
    offsets = np.zeros(K + 1, dtype=np.int64)
    for k in range(K):
        idx = order[bounds[k]:bounds[k + 1]]
        m = idx.size
        for a in range(m):
            at[idx[a]] = a
        qk, lk, hk, mk, zk = np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(m)
        fk = np.empty(m, dtype=np.int64)
        for a in range(m):
            i = idx[a]
            qk[a], lk[a], hk[a], mk[a], zk[a] = q[i], lo[i], hi[i], mu[i], z0[i]
            fk[a] = at[findex[i]] if findex[i] >= 0 else -1
        large = m > POOR_LEFT_FROM and not newton_only
        if large and _impact_start(indptr, indices, data, idx, at, qk, lk, hk, fk, mk, zk, poor_residual):
            codes[k], its[k], outers[k] = LEFT, 0, 1       # an impact island: left as it is, no layout kept
            offsets[k + 1] = used
            for a in range(m):
                at[idx[a]] = -1
            continue
        grouped = label.size > 0 and m > grouped_from
        if grouped and m > CSR_FROM:    # the island's CSR block: products and factorisations linear in its entries
            A = np.empty((0, 0))
            cL, cA, cF, ck = new_factor_cache(0)
            holds = False
            if k + 1 < layout_at.size:
                holds, sval = _layout_values(layout, layout_at[k], layout_at[k + 1], indptr, indices, data, idx, at,
                                             label, scratch)
            if holds:
                blob, used = _put(blob, used, layout[layout_at[k]:layout_at[k + 1]])
            else:
                blob, used, sval = _island_layout(blob, used, indptr, indices, data, idx, at, label, scratch)
            grp, gstep, nbr, nnb, sptr, sidx = _layout_parts(blob, offsets[k])
        else:
            A = gather_block(indptr, indices, data, idx, at)
            sptr, sidx, sval = no_csr()
            cL, cA, cF, ck = new_factor_cache(m)
            if grouped:
                grp, gstep, nbr, nnb = island_groups(indptr, indices, idx, at, label, scratch)
            else:
                grp, gstep, nbr, nnb = no_groups()
        offsets[k + 1] = used
        steps, full = max_iterations, False
        if m > small_n and not newton_only:
            steps, full = newton_steps, True
        poor = (POOR_LEFT_STEPS if sptr.size else 1) if large else (steps if full else poor_iterations)
        code, zz, ww, it, outer = box_qp_grouped(A, qk, lk, hk, fk, mk, zk, tol, steps, armijo, full,
                                                 newton_only, max_outer, cL, cA, cF, ck, grp, gstep, nbr, nnb,
                                                 poor, poor_residual, sptr, sidx, sval, large and sptr.size > 0)
        if large and code == INTERIOR and it <= poor and outer == 1:   # a poor start: left as it is
            codes[k], its[k], outers[k] = LEFT, it, 1
            for a in range(m):
                at[idx[a]] = -1
            continue
        codes[k], its[k], outers[k] = code, it, outer
        for a in range(m):
            z[idx[a]] = zz[a]
            w[idx[a]] = ww[a]
            at[idx[a]] = -1
    return blob[:used], offsets


@jit
def csr_rows_affine(indptr, indices, data, rows, x, q):
    """(M x + q)[rows] for M in CSR: one pass over those rows only."""
    out = np.empty(rows.size)
    for a in range(rows.size):
        i = rows[a]
        acc = q[i]
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * x[indices[p]]
        out[a] = acc
    return out
