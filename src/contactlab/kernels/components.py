"""Connected components of a square matrix's coupling graph by union-find, compiled: the islands
of a step's contact problem (:mod:`contactlab.sim.islands`). scipy.sparse.csgraph finds components too, but a step
would first have to build its graph (a COO copy of a dense Delassus matrix costs more than the
whole scan below); this reads the matrix where it lies."""
import numpy as np

from ._jit import jit


@jit
def _root(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]           # path halving
        i = parent[i]
    return i


@jit
def _join(parent, i, j):
    a, b = _root(parent, i), _root(parent, j)
    if a != b:
        if a < b:
            parent[b] = a
        else:
            parent[a] = b


@jit
def _labels(parent):
    """(count, label per row), labels numbered in order of their first row."""
    n = parent.size
    label = np.full(n, -1, dtype=np.int64)
    count = 0
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        r = _root(parent, i)
        if label[r] < 0:
            label[r] = count
            count += 1
        out[i] = label[r]
    return count, out


@jit
def _reaches_all(M, findex):
    """Whether a search from row 0 along nonzero entries M[r, j] (row scans, contiguous) and findex
    links (both ways) visits every row: then the graph is connected (one island), whatever the
    pattern's symmetry. Costs one scan of each visited row."""
    n = M.shape[0]
    # rows pointing at each row through findex (the reverse links), as a CSR-like list
    cnt = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        if findex[i] >= 0:
            cnt[findex[i] + 1] += 1
    for i in range(n):
        cnt[i + 1] += cnt[i]
    back = np.empty(cnt[n], dtype=np.int64)
    fill = cnt[:n].copy()
    for i in range(n):
        if findex[i] >= 0:
            back[fill[findex[i]]] = i
            fill[findex[i]] += 1
    seen = np.zeros(n, dtype=np.bool_)
    stack = np.empty(n, dtype=np.int64)
    seen[0] = True
    stack[0] = 0
    top = 1
    visited = 1
    while top:
        top -= 1
        r = stack[top]
        for j in range(n):
            if not seen[j] and M[r, j] != 0.0:
                seen[j] = True
                stack[top] = j
                top += 1
                visited += 1
        f = findex[r]
        if f >= 0 and not seen[f]:
            seen[f] = True
            stack[top] = f
            top += 1
            visited += 1
        for p in range(cnt[r], cnt[r + 1]):
            b = back[p]
            if not seen[b]:
                seen[b] = True
                stack[top] = b
                top += 1
                visited += 1
    return visited == n


@jit
def dense_components(M, findex):
    """Components of rows i, j joined where M[i, j] != 0 (or M[j, i]) or findex[i] = j: one island
    found by a row-scan search when the graph is connected (the usual case), union-find otherwise."""
    n = M.shape[0]
    if n == 0:
        return 0, np.zeros(0, dtype=np.int64)
    if _reaches_all(M, findex):
        return 1, np.zeros(n, dtype=np.int64)
    parent = np.arange(n)
    for i in range(n):
        for j in range(n):
            if j != i and M[i, j] != 0.0:
                _join(parent, i, j)
        if findex[i] >= 0:
            _join(parent, i, findex[i])
    return _labels(parent)


@jit
def csr_components(indptr, indices, data, findex):
    """Components of rows joined by the nonzero entries of a CSR matrix (either triangle) or findex."""
    n = indptr.size - 1
    parent = np.arange(n)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if data[p] != 0.0 and indices[p] != i:
                _join(parent, i, indices[p])
        if findex[i] >= 0:
            _join(parent, i, findex[i])
    return _labels(parent)


@jit
def row_block_components(indptr, indices, findex, block):
    """Components of the rows of a row matrix H (CSR, any column order within a row, over
    coordinates grouped in blocks of ``block`` columns, one block per moving body): rows touching a
    common block, or linked by findex, are one island. Union-find over blocks and rows (one join per
    run of a row's entries on one body, and per findex link), so a contact problem's islands cost a
    pass over its Jacobian rows instead of over its Delassus matrix (H M^-1 H' couples exactly the
    rows that share a body). Returns (count, label per row), numbered in order of their first row."""
    return kept_row_components(indptr, indices, findex, block, np.ones(indptr.size - 1, dtype=np.bool_))


@jit
def kept_row_components(indptr, indices, findex, block, kept):
    """:func:`row_block_components` of the rows ``kept`` only (the others join nothing, and a findex
    link joins two kept rows only): (count, label per row), -1 on the rows not kept."""
    n = indptr.size - 1
    top = -1
    for p in range(indptr[n]):
        top = max(top, indices[p])
    nb = top // block + 1
    parent = np.arange(nb + n)              # blocks first, then rows
    for i in range(n):
        if not kept[i]:
            continue
        start, end = 0, 0                   # a row's entries come body by body: one join per body
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            if c < start or c >= end:
                b = c // block
                _join(parent, nb + i, b)
                start, end = b * block, (b + 1) * block
        if findex[i] >= 0 and kept[findex[i]]:
            _join(parent, nb + i, nb + findex[i])
    label = np.full(nb + n, -1, dtype=np.int64)
    out = np.full(n, -1, dtype=np.int64)
    count = 0
    for i in range(n):
        if not kept[i]:
            continue
        r = _root(parent, nb + i)
        if label[r] < 0:
            label[r] = count
            count += 1
        out[i] = label[r]
    return count, out


@jit
def body_pair_groups(indptr, indices):
    """A group per row of H (CSR, sorted columns, 6 per body): rows on the same first and last body
    (a body pair's contact rows, a joint's rows) share one, numbered from 0 (a problem's
    ``body_groups``: box-qp factorises an island's Newton steps block by block over them,
    kernels/box_qp.py ``island_groups``)."""
    n = indptr.size - 1
    key = np.empty(n, dtype=np.int64)
    span = 1
    for r in range(n):
        if indptr[r + 1] > indptr[r]:
            span = max(span, indices[indptr[r + 1] - 1] // 6 + 2)
    for r in range(n):
        if indptr[r + 1] > indptr[r]:
            key[r] = (indices[indptr[r]] // 6) * span + indices[indptr[r + 1] - 1] // 6
        else:
            key[r] = -1 - r             # an empty row: a group of its own
    order = np.argsort(key)
    label = np.empty(n, dtype=np.int64)
    g = -1
    for t in range(n):
        if t == 0 or key[order[t]] != key[order[t - 1]]:
            g += 1
        label[order[t]] = g
    return label
