"""The Delassus operator H W H' + diag of a step's rows, W = M^-1 block-diagonal (one 6x6 block per
moving body, maximal coordinates), compiled (numba).

Rows are grouped by the bodies they touch, and each body adds (H_b W_b)(H_b)' between the rows that
touch it, so only blocks of row pairs sharing a body are formed, never the ndof x ndof product
(drumwright §III's N M^-1 N'; the "Delassus operator" of Moreau and of the FCLIB format):

* :func:`delassus_dense`, :func:`delassus_csr`: any CSR rows H, dense or canonical CSR.
* Pattern and values apart, for a step's contact rows [N; S; T] as :func:`~.rows.frame_rows_csr`
  writes them (a contact's three rows share its bodies): :class:`DelassusPattern` is the
  structure of the matrix (which contacts share a body, the CSR indptr and indices of 3 x 3 blocks
  of contact pairs), which depends only on the bodies each contact touches; its
  :meth:`~DelassusPattern.values` refill the numbers of a step on that structure. A step whose
  contacts touch the bodies the last one's did, in the same order (every step of a resting stack,
  most of a walking robot's), reuses the structure. This is the split of Drake's
  ``BlockSparsityPattern`` and ``BlockSparseLowerTriangularOrPsdMatrix`` (structure once, values
  per solve).
* :func:`delassus`: the one entry point for a :class:`~.system.ConstraintSystem`'s rows.
"""
from __future__ import annotations

from sys import getrefcount

import numpy as np
import scipy.sparse as sp

from ..kernels._jit import jit
from ..kernels.dense import centre_of_mass_blocks, dot6, mass_block_times
from ..kernels.pgs_matrix_free import whole_body_blocks
from .rows import csr_of


class DelassusPattern:
    """The structure of H W H' + diag for contact rows [N; S; T] in :func:`~.rows.frame_rows_csr`'s
    layout (``ip`` (k + 1), ``ix``: contact c's entries, one 6-block of columns per moving body),
    from :func:`frame_pattern`: per contact its bodies (``cb``), the contacts sharing a body with it
    (``nptr``, ``near``, ``near_s``), and the matrix's CSR ``indptr`` and ``indices`` (canonical, of
    the index type asked for: int32 where they fit, as scipy's constructor picks). Immutable once
    built; :meth:`matrix` gives each matrix its own copy of the indices. The values are written into
    a buffer of this pattern's pool (:meth:`_buffer`) that nothing else references any more, so that a
    run of steps on one pattern reuses two arrays instead of allocating one a step: an array above
    glibc's mmap-threshold cap (32 MiB) is otherwise mapped fresh, every page of it faulted and zeroed
    by the kernel, each step (docs/benchmarks-sim.md, seventeenth session). Like the module's last pattern, the pool is
    for one thread's steps."""

    __slots__ = ("ip", "ix", "nbody", "index", "cb", "nptr", "near", "near_s", "indptr", "indices", "pool")

    #: buffers of values kept per pattern: the one under the last step's matrix (still held, e.g. as the
    #: simulator's last problem) and one free for the next step
    POOL = 2

    @classmethod
    def of(cls, ip: np.ndarray, ix: np.ndarray, nbody: int, index: np.ndarray) -> "DelassusPattern | None":
        """The pattern of the rows (ip, ix) over ``nbody`` moving bodies, or None where
        :func:`frame_pattern` builds none (a contact's entries not whole 6-blocks, the entries
        overflowing ``index``'s type)."""
        ok, cb, nptr, near, near_s, indptr, indices = frame_pattern(ip, ix, nbody, 3, index)
        if not ok:
            return None
        p = cls.__new__(cls)
        p.ip, p.ix, p.nbody, p.index = ip.copy(), ix.copy(), int(nbody), index.dtype
        p.cb, p.nptr, p.near, p.near_s, p.indptr, p.indices = cb, nptr, near, near_s, indptr, indices
        p.pool = []
        return p

    def _buffer(self) -> np.ndarray:
        """An array for the values (``indptr[-1]``,) that no matrix, view or other object references
        (its reference count is the pool's and the call's only): one of the pool's, else a new one,
        kept in the pool while it has room. A matrix a caller still holds is never written over."""
        pool = self.pool
        for i in range(len(pool)):
            if getrefcount(pool[i]) == 2:       # the list's reference and the argument's
                return pool[i]
        out = np.empty(int(self.indptr[-1]))
        if len(pool) < self.POOL:
            pool.append(out)
        return out

    def fits(self, ip: np.ndarray, ix: np.ndarray, nbody: int, index: np.ndarray) -> bool:
        """Whether rows (ip, ix) over ``nbody`` bodies with ``index``'s type have this structure
        (compared in full)."""
        return self.nbody == nbody and self.index == index.dtype and np.array_equal(self.ip, ip) \
            and np.array_equal(self.ix, ix)

    def values(self, data: np.ndarray, W: np.ndarray, diag: np.ndarray) -> np.ndarray:
        """The matrix's values on this structure (:func:`frame_values`) for the rows' values ``data``
        (3, nnz), the blocks W (nbody, 6, 6) and the added diagonal ``diag`` (3 k,)."""
        return frame_values(self.ip, data, W, diag, self.cb, self.nptr, self.near, self.near_s, self.indptr,
                            self._buffer())

    def matrix(self, data: np.ndarray, W: np.ndarray, diag: np.ndarray) -> sp.csr_matrix:
        """The CSR matrix of :meth:`values`, with its own copy of the pattern."""
        n = self.indptr.size - 1
        return csr_of(self.values(data, W, diag), self.indices.copy(), self.indptr.copy(), (n, n))


#: the last step's pattern of contact rows (:class:`DelassusPattern`): reused while a step's rows
#: touch the same bodies in the same order
_last_pattern = None


def contact_pattern(ip: np.ndarray, ix: np.ndarray, nbody: int, index: np.ndarray) -> DelassusPattern | None:
    """The :class:`DelassusPattern` of contact rows (ip, ix): the last one's where it fits, else a
    new one (kept for the next step), or None where none can be built."""
    global _last_pattern
    last = _last_pattern
    if last is not None and last.fits(ip, ix, nbody, index):
        return last
    pattern = DelassusPattern.of(ip, ix, nbody, index)
    if pattern is not None:
        _last_pattern = pattern
    return pattern


def delassus(sys, H: sp.csr_matrix, diag, dense: bool):
    """H M^-1 H' + diag(diag) from the system's 6x6 blocks of M^-1 (``sys.W_blocks``; only row pairs
    that share a body are formed). ``dense``: a numpy array, else CSR: for the system's own contact
    rows ``sys.NST`` ([N; S; T]) by 3 x 3 blocks of contact pairs on the last step's pattern where
    it fits (:func:`contact_pattern`), else row by row (:func:`delassus_csr`)."""
    if not (sp.issparse(H) and H.format == "csr"):
        H = sp.csr_matrix(H)
    n = H.shape[0]
    diag = np.full(n, float(diag)) if np.ndim(diag) == 0 else np.array(diag, dtype=np.float64).reshape(n)
    ip, ix = H.indptr.astype(np.int64, copy=False), H.indices.astype(np.int64, copy=False)
    dv = H.data.astype(np.float64, copy=False)
    if dense:
        return delassus_dense(ip, ix, dv, sys.W_blocks, n, diag)
    if H is sys.NST and sys.nc:     # a system's contact rows: by contact pairs (frame_rows_csr's layout)
        nc = sys.nc
        for index in (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)):
            pattern = contact_pattern(ip[:nc + 1], ix[:ip[nc]], sys.W_blocks.shape[0], index)
            if pattern is not None:
                return pattern.matrix(dv.reshape(3, -1), sys.W_blocks, diag)
    data, indices, indptr = delassus_csr(ip, ix, dv, sys.W_blocks, n, diag)     # canonical by construction
    if indptr[-1] < 2 ** 31:      # int32 indices, as scipy's constructor picks: SuperLU and slicing are faster
        indices, indptr = indices.astype(np.int32), indptr.astype(np.int32)
    return csr_of(data, indices, indptr, (n, n))


@jit
def _body_slots(indptr, indices, data, nbody):
    """The slots of each body (the glossary's ``body_slots``: the transpose of a CSR H over the
    per-body layout): per body, the rows touching it with their 6 entries, (start (nbody+1), row,
    vec (m, 6))."""
    n = indptr.size - 1
    of_col = np.empty(6 * nbody, dtype=np.int64)       # column -> body (a gather, not a division per entry)
    for c in range(of_col.size):
        of_col[c] = c // 6
    count = np.zeros(nbody + 1, dtype=np.int64)
    for r in range(n):
        last = -1
        for p in range(indptr[r], indptr[r + 1]):
            b = of_col[indices[p]]
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
            col = indices[p]
            b = of_col[col]
            if b != last:
                slot = fill[b]
                fill[b] += 1
                row[slot] = r
                last = b
            vec[slot, col - 6 * b] += data[p]
    return start, row, vec


_row_blocks = _body_slots      # the former name, kept for one release


@jit
def delassus_dense(indptr, indices, data, W, n, diag):
    """Dense H W H' + diag(diag) for H in CSR (columns = 6 per moving body, W (nbody, 6, 6))."""
    nbody = W.shape[0]
    start, row, vec = _body_slots(indptr, indices, data, nbody)
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
def _add_dot(v, s, j, r, c, G, vec):
    """v + (W h_min)'h_max of slots s (row r) and j (row c), min/max by row (exactly symmetric)."""
    return v + (dot6(G, s, vec, j) if r <= c else dot6(G, j, vec, s))


@jit
def _merge_two(r, s0, s1, body, start, row, G, vec, diag, out_c, out_v, k):
    """Row r's entries of :func:`delassus_csr` when it touches two bodies (slots s0, s1, bodies in
    increasing order): the merge of the two bodies' sorted row lists, an entry on both summed in slot
    order (the general loop's arithmetic). Returns the new fill position k."""
    i0, e0 = start[body[s0]], start[body[s0] + 1]
    i1, e1 = start[body[s1]], start[body[s1] + 1]
    while i0 < e0 or i1 < e1:
        c0 = row[i0] if i0 < e0 else -1
        c1 = row[i1] if i1 < e1 else -1
        v = 0.0
        if c1 < 0 or (0 <= c0 <= c1):
            c = c0
            v = _add_dot(v, s0, i0, r, c, G, vec)
            i0 += 1
        else:
            c = c1
        if c1 == c:
            v = _add_dot(v, s1, i1, r, c, G, vec)
            i1 += 1
        if c == r:
            v += diag[r]
        out_c[k] = c
        out_v[k] = v
        k += 1
    return k


@jit
def delassus_csr(indptr, indices, data, W, n, diag):
    """Canonical CSR (data, indices, indptr) of H W H' + diag(diag), built row by row: a row's
    entries are the merge of the (sorted) row lists of the bodies it touches, so no sort and no
    duplicate pass. Entry (r, c) is (W h_min)'h_max over the shared bodies with min/max of (r, c):
    exactly symmetric."""
    nbody = W.shape[0]
    start, row, vec = _body_slots(indptr, indices, data, nbody)
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
        if nl == 2:         # a contact row (two bodies): a two-pointer merge of their row lists
            k = _merge_two(r, slots[a], slots[a + 1], body, start, row, G, vec, diag, out_c, out_v, k)
            out_p[r + 1] = k
            continue
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
                    v = _add_dot(v, s, head[i], r, c, G, vec)
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


@jit
def _frame_bodies(ip, ix, nbody):
    """Per contact of :func:`delassus_frames_csr`: its moving bodies (cb (k, 2): increasing, -1 for
    none), and per body the contacts touching it in increasing order with the slot they hold it in
    (start (nbody + 1), contact, slot). ok False where a contact's entries are not none or
    :func:`~contactlab.kernels.pgs_matrix_free.whole_body_blocks`, or name a body beyond ``nbody``."""
    k = ip.size - 1
    cb = np.full((k, 2), -1, dtype=np.int64)
    count = np.zeros(nbody + 1, dtype=np.int64)
    ok = True
    for c in range(k):
        e = ip[c + 1] - ip[c]
        if e != 0 and not whole_body_blocks(ip, ix, c):
            ok = False
            break
        for s in range(e // 6):
            b = ix[ip[c] + 6 * s] // 6
            if b >= nbody:
                ok = False
                break
            cb[c, s] = b
            count[b + 1] += 1
        if not ok:
            break
    start = np.cumsum(count)
    occ_c = np.empty(start[nbody], dtype=np.int64)
    occ_s = np.empty(start[nbody], dtype=np.int64)
    if ok:
        fill = start[:nbody].copy()
        for c in range(k):
            for s in range(2):
                b = cb[c, s]
                if b >= 0:
                    occ_c[fill[b]] = c
                    occ_s[fill[b]] = s
                    fill[b] += 1
    return ok, cb, start, occ_c, occ_s


@jit
def _frame_vectors(ip, data, W, cb):
    """Per contact and body slot of :func:`delassus_frames_csr`: its rows' 6-vectors (V (k, 2, 6 m):
    direction j at 6 j) and W_b times them (X, :func:`~contactlab.kernels.dense.mass_block_times`); a slot without
    a body (cb -1) is left unwritten (:func:`_frame_neighbours` pairs only the slots that hold one)."""
    m, k = data.shape[0], ip.size - 1
    V = np.empty((k, 2, 6 * m))
    X = np.empty((k, 2, 6 * m))
    plain = centre_of_mass_blocks(W)
    for c in range(k):
        for s in range(2):
            b = cb[c, s]
            if b < 0:
                continue
            p = ip[c] + 6 * s
            for j in range(m):
                for i in range(6):
                    V[c, s, 6 * j + i] = data[j, p + i]
                o = 6 * j
                X[c, s, o], X[c, s, o + 1], X[c, s, o + 2], X[c, s, o + 3], X[c, s, o + 4], X[c, s, o + 5] = \
                    mass_block_times(W, b, plain[b], V[c, s, o], V[c, s, o + 1], V[c, s, o + 2], V[c, s, o + 3],
                                     V[c, s, o + 4], V[c, s, o + 5])
    return V, X


@jit
def _frame_neighbours(c, cb, start, occ_c, occ_s, near, near_s):
    """The contacts sharing a body with contact c (c itself included), increasing, into ``near``;
    near_s[i] = (d's slot of c's first body or -1, of c's second or -1). Returns their count (1
    for a contact touching no moving body: itself, sharing nothing)."""
    b0, b1 = cb[c, 0], cb[c, 1]
    if b0 < 0:
        near[0] = c
        near_s[0, 0] = near_s[0, 1] = -1
        return 1
    i0, e0 = start[b0], start[b0 + 1]
    i1, e1 = (start[b1], start[b1 + 1]) if b1 >= 0 else (0, 0)
    cnt = 0
    while i0 < e0 or i1 < e1:
        d0 = occ_c[i0] if i0 < e0 else -1
        d1 = occ_c[i1] if i1 < e1 else -1
        if d1 < 0 or (0 <= d0 <= d1):
            d = d0
            near_s[cnt, 0] = occ_s[i0]
            i0 += 1
        else:
            d = d1
            near_s[cnt, 0] = -1
        near_s[cnt, 1] = -1
        if d1 == d:
            near_s[cnt, 1] = occ_s[i1]
            i1 += 1
        near[cnt] = d
        cnt += 1
    return cnt


@jit
def _dots3(A, ia, ta, B, ib, tb):
    """The 3 x 3 products A[ia, ta, direction j] . B[ib, tb, direction jj] (6 coordinates each),
    row-major, the nine sums interleaved over the coordinates (nine independent chains of adds, not
    nine in a row, docs/benchmarks-tuning.md)."""
    b00 = b01 = b02 = b10 = b11 = b12 = b20 = b21 = b22 = 0.0
    for a in range(6):
        x0, x1, x2 = A[ia, ta, a], A[ia, ta, 6 + a], A[ia, ta, 12 + a]
        y0, y1, y2 = B[ib, tb, a], B[ib, tb, 6 + a], B[ib, tb, 12 + a]
        b00 += x0 * y0
        b01 += x0 * y1
        b02 += x0 * y2
        b10 += x1 * y0
        b11 += x1 * y1
        b12 += x1 * y2
        b20 += x2 * y0
        b21 += x2 * y1
        b22 += x2 * y2
    return b00, b01, b02, b10, b11, b12, b20, b21, b22


@jit
def delassus_frames_csr(ip, ix, data, W, diag, index):
    """:func:`delassus_csr` for box friction's contact rows [N; S; T] as :func:`frame_rows_csr` writes
    them: three directions per contact sharing one pattern (``ip`` (k + 1), ``ix``: contact c's
    entries, one 6-block of columns per moving body), values ``data`` (3, nnz), row j k + c being
    direction j of contact c: :func:`frame_pattern`, then :func:`frame_values`. Returns (ok, data,
    indices, indptr); ok False (nothing built) where a contact's entries are not whole 6-blocks,
    ``data`` is not three directions or the entries overflow ``index``'s type."""
    ok, cb, nptr, near, near_s, out_p, out_c = frame_pattern(ip, ix, W.shape[0], data.shape[0], index)
    if not ok:
        return False, np.zeros(0), out_c, out_p
    return True, frame_values(ip, data, W, diag, cb, nptr, near, near_s, out_p, np.empty(out_p[out_p.size - 1])), \
        out_c, out_p


@jit
def frame_pattern(ip, ix, nbody, m, index):
    """The pattern of :func:`delassus_frames_csr`'s matrix, which depends on the contacts' bodies only
    (a step whose rows touch the bodies the last one's did reuses it:
    :func:`~contactlab.mechanics.system.delassus`): per contact its bodies (cb), the contacts sharing
    a body with it, itself included, in increasing order (nptr, near; near_s: the slots of the shared
    bodies, :func:`_frame_neighbours`)
    and the CSR indptr and indices of the 3 k rows (a row's columns: its contact list for each
    direction in turn; canonical), of ``index``'s type (int32 where they fit, as scipy's constructor
    picks). Returns (ok, cb, nptr, near, near_s, indptr, indices); ok False where a contact's entries
    are not whole 6-blocks of bodies below ``nbody``, ``m`` is not 3 or the entries overflow
    ``index``'s type."""
    k = ip.size - 1
    n = m * k
    ok, cb, start, occ_c, occ_s = _frame_bodies(ip, ix, nbody)
    if not ok or m != 3:
        return _no_pattern(cb, n, index)
    total = k
    for b in range(start.size - 1):
        total += (start[b + 1] - start[b]) ** 2
    nptr = np.zeros(k + 1, dtype=np.int64)
    near = np.empty(total, dtype=np.int64)
    near_s = np.empty((total, 2), dtype=np.int64)
    for c in range(k):
        nptr[c + 1] = nptr[c] + _frame_neighbours(c, cb, start, occ_c, occ_s, near[nptr[c]:], near_s[nptr[c]:])
    if 9 * nptr[k] > np.iinfo(index.dtype).max:
        return _no_pattern(cb, n, index)
    out_p = np.zeros(n + 1, dtype=index.dtype)
    for j in range(3):
        for c in range(k):
            out_p[j * k + c + 1] = out_p[j * k + c] + 3 * (nptr[c + 1] - nptr[c])
    out_c = np.empty(out_p[n], dtype=index.dtype)
    for c in range(k):
        cnt = nptr[c + 1] - nptr[c]
        for j in range(3):
            r = out_p[j * k + c]
            for jj in range(3):
                for i in range(cnt):
                    out_c[r + jj * cnt + i] = near[nptr[c] + i] + jj * k
    return True, cb, nptr, near, near_s, out_p, out_c


@jit
def _no_pattern(cb, n, index):
    """:func:`frame_pattern`'s answer where it builds none: ok False, empty lists, an all-zero indptr
    of the n rows and no indices, of ``index``'s type."""
    e = np.zeros(0, dtype=np.int64)
    return False, cb, e, e, np.zeros((0, 2), dtype=np.int64), np.zeros(n + 1, dtype=index.dtype), \
        np.zeros(0, dtype=index.dtype)


@jit
def frame_values(ip, data, W, diag, cb, nptr, near, near_s, out_p, out_v):
    """The values of :func:`delassus_frames_csr`'s matrix on :func:`frame_pattern`'s pattern: all
    3 x 3 entries between two contacts from one interleaved product per shared body (:func:`_dots3`,
    W_b applied once per row and body, :func:`_frame_vectors`); the block between contacts c < d is
    computed once, from c, and written to d's rows too (each contact's rows fill their columns of
    earlier contacts in increasing order, so a cursor per contact says where). Exactly symmetric by
    construction. ``out_v`` (``out_p[3 k]``,): the values, every entry written (the caller's array,
    returned)."""
    k = ip.size - 1
    V, X = _frame_vectors(ip, data, W, cb)
    cursor = np.zeros(k, dtype=np.int64)     # each contact's next column of an earlier contact
    for c in range(k):
        cnt = nptr[c + 1] - nptr[c]
        p0, p1, p2 = out_p[c], out_p[k + c], out_p[2 * k + c]
        for i in range(cursor[c], cnt):      # contact c itself and those after it
            q = nptr[c] + i
            d = near[q]
            s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = 0.0
            for t in range(2):              # the shared bodies in increasing order
                sd = near_s[q, t]
                if sd < 0:
                    continue
                e00, e01, e02, e10, e11, e12, e20, e21, e22 = _dots3(X, c, t, V, d, sd)
                if d == c:                  # within a contact: (W h_j)'h_jj for j <= jj, mirrored
                    e10, e20, e21 = e01, e02, e12
                s00 += e00
                s01 += e01
                s02 += e02
                s10 += e10
                s11 += e11
                s12 += e12
                s20 += e20
                s21 += e21
                s22 += e22
            if d == c:
                s00 += diag[c]
                s11 += diag[k + c]
                s22 += diag[2 * k + c]
            out_v[p0 + i], out_v[p0 + cnt + i], out_v[p0 + 2 * cnt + i] = s00, s01, s02
            out_v[p1 + i], out_v[p1 + cnt + i], out_v[p1 + 2 * cnt + i] = s10, s11, s12
            out_v[p2 + i], out_v[p2 + cnt + i], out_v[p2 + 2 * cnt + i] = s20, s21, s22
            if d != c:                      # row (jj, d), column (j, c): the same number
                dc = nptr[d + 1] - nptr[d]
                r = cursor[d]
                cursor[d] = r + 1
                r0, r1, r2 = out_p[d] + r, out_p[k + d] + r, out_p[2 * k + d] + r
                out_v[r0], out_v[r0 + dc], out_v[r0 + 2 * dc] = s00, s10, s20
                out_v[r1], out_v[r1 + dc], out_v[r1 + 2 * dc] = s01, s11, s21
                out_v[r2], out_v[r2 + dc], out_v[r2 + 2 * dc] = s02, s12, s22
    return out_v
