"""The row layout of matrix-free PGS (the package docstring): each row of H in two body slots
(``body``, ``hb``), g = W_body hb and the diagonal A_ii (``prepare``), the transpose per body
(``body_slots``), the couplings of consecutive rows (``chain_couplings``), and the sweep order
(``sweep_order``)."""
from __future__ import annotations

import numpy as np

from .._jit import jit
from ..dense import centre_of_mass_blocks, mass_block_times


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
