"""Compiled assembly of a step's rows (numba; flags from kernels/_jit.py).

* :func:`point_rows_csr`: the CSR arrays of rows u.(velocity of P on b - velocity of P on a),
  entries [u, (P - x) x u] per body (drumwright §III, arechavaleta eq. 7-9), no per-row Python.
* :func:`delassus_dense` / :func:`delassus_csr`: H W H' for a block-diagonal W = M^-1 (one 6x6
  block per moving body): rows are grouped by the bodies they touch, and each body adds
  (H_b W_b)(H_b)' between the rows that touch it, so only blocks of row pairs sharing a body are
  formed (3x3 per contact pair for the normal + two tangent rows), never the ndof x ndof product.
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit


@jit
def point_rows_csr(a_dof, b_dof, P, xa, xb, U):
    """CSR (data, indices, indptr) of k rows; ``a_dof``/``b_dof`` the first dof of each row's
    bodies (-1: world or fixed, no entries), ``xa``/``xb`` their centres."""
    k = U.shape[0]
    indptr = np.zeros(k + 1, dtype=np.int64)
    for r in range(k):
        indptr[r + 1] = indptr[r] + (6 if a_dof[r] >= 0 else 0) + (6 if b_dof[r] >= 0 else 0)
    data = np.empty(indptr[k])
    indices = np.empty(indptr[k], dtype=np.int64)
    for r in range(k):
        p = indptr[r]
        first, second = (a_dof[r], b_dof[r]) if a_dof[r] < b_dof[r] else (b_dof[r], a_dof[r])
        for s in (first, second):
            if s < 0:
                continue
            if s == b_dof[r]:
                sign, x = 1.0, xb[r]
            else:
                sign, x = -1.0, xa[r]
            rx, ry, rz = P[r, 0] - x[0], P[r, 1] - x[1], P[r, 2] - x[2]
            ux, uy, uz = U[r, 0], U[r, 1], U[r, 2]
            vals = (ux, uy, uz, ry * uz - rz * uy, rz * ux - rx * uz, rx * uy - ry * ux)
            for c in range(6):
                indices[p] = s + c
                data[p] = sign * vals[c]
                p += 1
    return data, indices, indptr


@jit
def _row_blocks(indptr, indices, data, nbody):
    """Per body, the rows touching it with their 6 entries: (start (nbody+1), row, vec (m, 6))."""
    n = indptr.size - 1
    count = np.zeros(nbody + 1, dtype=np.int64)
    for r in range(n):
        last = -1
        for p in range(indptr[r], indptr[r + 1]):
            b = indices[p] // 6
            if b != last:
                count[b + 1] += 1
                last = b
    start = np.cumsum(count)
    m = start[nbody]
    row = np.empty(m, dtype=np.int64)
    vec = np.zeros((m, 6))
    fill = start[:nbody].copy()
    for r in range(n):
        last = -1
        slot = -1
        for p in range(indptr[r], indptr[r + 1]):
            b = indices[p] // 6
            if b != last:
                slot = fill[b]
                fill[b] += 1
                row[slot] = r
                last = b
            vec[slot, indices[p] % 6] += data[p]
    return start, row, vec


@jit
def delassus_dense(indptr, indices, data, W, n, diag):
    """Dense H W H' + diag(diag) for H in CSR (columns = 6 per moving body, W (nbody, 6, 6))."""
    nbody = W.shape[0]
    start, row, vec = _row_blocks(indptr, indices, data, nbody)
    D = np.zeros((n, n))
    g = np.empty(6)
    for b in range(nbody):
        for i in range(start[b], start[b + 1]):
            for c in range(6):
                s = 0.0
                for e in range(6):
                    s += W[b, c, e] * vec[i, e]
                g[c] = s
            ri = row[i]
            for j in range(i, start[b + 1]):        # upper half, mirrored: exactly symmetric
                s = 0.0
                for c in range(6):
                    s += g[c] * vec[j, c]
                D[ri, row[j]] += s
                if j != i:
                    D[row[j], ri] += s
    for r in range(n):
        D[r, r] += diag[r]
    return D


@jit
def body_blocks(R, mass, inertia):
    """(k, 6, 6) blocks diag(m I3, R I R') for k bodies (R (k, 3, 3), inertia (k, 3, 3) body frame)."""
    k = mass.size
    B = np.zeros((k, 6, 6))
    for b in range(k):
        B[b, 0, 0] = B[b, 1, 1] = B[b, 2, 2] = mass[b]
        for i in range(3):
            for j in range(3):
                s = 0.0
                for p in range(3):
                    for q in range(3):
                        s += R[b, i, p] * inertia[b, p, q] * R[b, j, q]
                B[b, 3 + i, 3 + j] = s
    return B


@jit
def delassus_csr(indptr, indices, data, W, n, diag):
    """Canonical CSR (data, indices, indptr) of H W H' + diag(diag), built row by row: a row's
    entries are the merge of the (sorted) row lists of the bodies it touches, so no sort and no
    duplicate pass. Entry (r, c) is (W h_min)'h_max over the shared bodies with min/max of (r, c):
    exactly symmetric."""
    nbody = W.shape[0]
    start, row, vec = _row_blocks(indptr, indices, data, nbody)
    m = row.size
    body = np.empty(m, dtype=np.int64)
    G = np.empty((m, 6))
    for b in range(nbody):
        for s in range(start[b], start[b + 1]):
            body[s] = b
            for c in range(6):
                acc = 0.0
                for e in range(6):
                    acc += W[b, c, e] * vec[s, e]
                G[s, c] = acc
    # the slots of each row (bodies in increasing order)
    cnt = np.zeros(n + 1, dtype=np.int64)
    for s in range(m):
        cnt[row[s] + 1] += 1
    rs = np.cumsum(cnt)
    fill = rs[:n].copy()
    slots = np.empty(m, dtype=np.int64)
    for s in range(m):
        slots[fill[row[s]]] = s
        fill[row[s]] += 1
    cap = n
    for s in range(m):
        cap += start[body[s] + 1] - start[body[s]]
    out_c = np.empty(cap, dtype=np.int64)
    out_v = np.empty(cap)
    out_p = np.zeros(n + 1, dtype=np.int64)
    head = np.empty(8, dtype=np.int64)
    k = 0
    for r in range(n):
        a, z = rs[r], rs[r + 1]
        nl = z - a
        if nl > head.size:
            head = np.empty(2 * nl, dtype=np.int64)
        for i in range(nl):
            head[i] = start[body[slots[a + i]]]
        diag_done = False
        while True:
            c = n
            for i in range(nl):
                s = slots[a + i]
                if head[i] < start[body[s] + 1] and row[head[i]] < c:
                    c = row[head[i]]
            if c == n:
                break
            v = 0.0
            for i in range(nl):
                s = slots[a + i]
                if head[i] < start[body[s] + 1] and row[head[i]] == c:
                    j = head[i]
                    lo_s, hi_s = (s, j) if r <= c else (j, s)
                    for e in range(6):
                        v += G[lo_s, e] * vec[hi_s, e]
                    head[i] += 1
            if c == r:
                v += diag[r]
                diag_done = True
            out_c[k] = c
            out_v[k] = v
            k += 1
        if not diag_done:            # a row touching no moving body: only its diagonal
            out_c[k] = r
            out_v[k] = diag[r]
            k += 1
        out_p[r + 1] = k
    return out_v[:k].copy(), out_c[:k].copy(), out_p
