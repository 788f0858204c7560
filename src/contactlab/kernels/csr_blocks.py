"""Blocks of a CSR matrix, compiled: a principal block as a dense array or as CSR, a symmetric
matrix's free block embedded in its own pattern, its upper triangle's pattern and its diagonal's
positions. box-qp factorises and slices its islands' blocks with these (kernels/box_qp.py,
kernels/box_qp_islands.py, solvers/box_qp), and a problem's islands are cut out with them
(:mod:`contactlab.problems.islands`)."""
from __future__ import annotations

import numpy as np

from ._jit import jit


@jit
def csr_masked(indptr, indices, data, free):
    """The values of M_FF embedded in M's own pattern: entry (i, j) kept where rows i and j are both
    free, a held row's diagonal kept and the rest of its row and column zero. Factorising this has
    the sparsity pattern of M (a pattern already analysed: no new ordering), and its solve with a
    zero right-hand side on the held rows returns 0 there and M_FF^-1 b_F on the free ones."""
    out = np.empty(data.size)
    for i in range(indptr.size - 1):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            out[p] = data[p] if ((free[i] and free[j]) or i == j) else 0.0
    return out


@jit
def csr_dense_block(indptr, indices, data, F, n):
    """M[F][:, F] as a dense array for M in CSR (n columns), F the rows in order: one pass over the
    rows of F (scipy's fancy indexing builds two intermediate sparse matrices)."""
    return gather_block(indptr, indices, data, F, block_positions(F, n))


@jit
def block_positions(F, n):
    """at[F[a]] = a, -1 on the other of n rows."""
    at = np.full(n, -1, dtype=np.int64)
    for a in range(F.size):
        at[F[a]] = a
    return at


@jit
def gather_block(indptr, indices, data, F, at):
    """The dense M[F][:, F] where at[F[a]] = a and at is -1 elsewhere."""
    k = F.size
    A = np.zeros((k, k))
    for a in range(k):
        i = F[a]
        for p in range(indptr[i], indptr[i + 1]):
            b = at[indices[p]]
            if b >= 0:
                A[a, b] += data[p]
    return A


@jit
def csr_sub_block(indptr, indices, data, F, n):
    """M[F][:, F] of M in CSR (n columns), F ascending: (data, indices, indptr) of the canonical CSR
    block (a row's entries stay sorted: the renumbering keeps their order), in two passes over the
    rows of F (scipy's fancy indexing builds two intermediate matrices)."""
    return sub_block(indptr, indices, data, F, block_positions(F, n))


@jit
def sub_block(indptr, indices, data, F, at):
    """:func:`csr_sub_block` where at[F[a]] = a and at is -1 elsewhere."""
    k = F.size
    ptr = np.zeros(k + 1, dtype=np.int64)
    for a in range(k):
        c = 0
        for p in range(indptr[F[a]], indptr[F[a] + 1]):
            if at[indices[p]] >= 0:
                c += 1
        ptr[a + 1] = ptr[a] + c
    idx = np.empty(ptr[k], dtype=np.int64)
    val = np.empty(ptr[k])
    for a in range(k):
        o = ptr[a]
        for p in range(indptr[F[a]], indptr[F[a] + 1]):
            b = at[indices[p]]
            if b >= 0:
                idx[o] = b
                val[o] = data[p]
                o += 1
    return val, idx, ptr


@jit
def upper_pattern(indptr, indices):
    """The upper triangle of a CSC pattern (row <= column), in CSC: (indptr, indices, position of
    each of its entries in the input), the input's order kept within each column."""
    n = indptr.size - 1
    count = 0
    for j in range(n):
        for p in range(indptr[j], indptr[j + 1]):
            if indices[p] <= j:
                count += 1
    up = np.zeros(n + 1, dtype=np.int64)
    ui = np.empty(count, dtype=np.int64)
    at = np.empty(count, dtype=np.int64)
    k = 0
    for j in range(n):
        for p in range(indptr[j], indptr[j + 1]):
            if indices[p] <= j:
                ui[k] = indices[p]
                at[k] = p
                k += 1
        up[j + 1] = k
    return up, ui, at


@jit
def diagonal_positions(indptr, indices):
    """Where each row's (column's) diagonal entry sits in a CSR (CSC) pattern; -1 where it has none."""
    n = indptr.size - 1
    out = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] == i:
                out[i] = p
                break
    return out
