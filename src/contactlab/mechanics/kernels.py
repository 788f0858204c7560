"""Compiled assembly of a step's rows (numba; flags from kernels/_jit.py).

* :func:`point_rows_csr`: the CSR arrays of rows u.(velocity of P on b - velocity of P on a),
  entries [u, (P - x) x u] per body (drumwright §III, arechavaleta eq. 7-9), no per-row Python.
* :func:`delassus_dense` / :func:`delassus_coo`: H W H' for a block-diagonal W = M^-1 (one 6x6
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
def delassus_coo(indptr, indices, data, W, n, diag):
    """COO triplets (rows, cols, vals; duplicates to be summed) of H W H' + diag(diag)."""
    nbody = W.shape[0]
    start, row, vec = _row_blocks(indptr, indices, data, nbody)
    m = n
    for b in range(nbody):
        k = start[b + 1] - start[b]
        m += k * k
    R = np.empty(m, dtype=np.int64)
    C = np.empty(m, dtype=np.int64)
    V = np.empty(m)
    g = np.empty(6)
    t = 0
    for b in range(nbody):
        for i in range(start[b], start[b + 1]):
            for c in range(6):
                s = 0.0
                for e in range(6):
                    s += W[b, c, e] * vec[i, e]
                g[c] = s
            for j in range(i, start[b + 1]):        # upper half, mirrored: exactly symmetric
                s = 0.0
                for c in range(6):
                    s += g[c] * vec[j, c]
                R[t] = row[i]
                C[t] = row[j]
                V[t] = s
                t += 1
                if j != i:
                    R[t] = row[j]
                    C[t] = row[i]
                    V[t] = s
                    t += 1
    for r in range(n):
        R[t] = r
        C[t] = r
        V[t] = diag[r]
        t += 1
    return R, C, V


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
def coo_to_csr(R, C, V, n):
    """Canonical CSR (sorted column indices, duplicates summed) of n x n COO triplets: a counting
    sort by row, duplicates merged through a column marker (O(entries)), then each row's unique
    columns sorted."""
    count = np.zeros(n + 1, dtype=np.int64)
    for t in range(R.size):
        count[R[t] + 1] += 1
    start = np.cumsum(count)
    fill = start[:n].copy()
    cols = np.empty(R.size, dtype=np.int64)
    vals = np.empty(R.size)
    for t in range(R.size):
        p = fill[R[t]]
        cols[p] = C[t]
        vals[p] = V[t]
        fill[R[t]] += 1
    marker = np.full(n, -1, dtype=np.int64)
    out_c = np.empty(R.size, dtype=np.int64)
    out_v = np.empty(R.size)
    indptr = np.zeros(n + 1, dtype=np.int64)
    k = 0
    for r in range(n):
        row0 = k
        for i in range(start[r], start[r + 1]):
            c = cols[i]
            if marker[c] >= row0:
                out_v[marker[c]] += vals[i]
            else:
                marker[c] = k
                out_c[k] = c
                out_v[k] = vals[i]
                k += 1
        order = np.argsort(out_c[row0:k])
        oc = out_c[row0:k][order].copy()
        ov = out_v[row0:k][order].copy()
        out_c[row0:k] = oc
        out_v[row0:k] = ov
        indptr[r + 1] = k
    return out_v[:k].copy(), out_c[:k].copy(), indptr
