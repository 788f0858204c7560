"""A compiled sparse block Cholesky of the interior point's body-space matrix S (kernels/body_space.py):
S = W^-1 + H' E^-1 H has a dense 6x6 block per pair of touched bodies sharing a row, so its
factorisation is done on the bodies' graph with 6x6 blocks as the entries (a supernodal Cholesky
whose supernodes are the bodies: George & Liu, Computer Solution of Large Sparse Positive Definite
Systems, 1981, ch. 6 on block elimination; Davis, Direct Methods for Sparse Linear Systems, SIAM 2006,
§4.1 elimination tree, §4.8 left-looking Cholesky), where an entry-by-entry LDL' (QDLDL) indexes every
scalar and the interior point's solves pay a Python call each.

* :func:`block_analysis`: once per interior-point call, for an ordering of the bodies (a minimum-degree
  order of their graph, solvers/box_qp/shifted.py): the elimination tree, L's block pattern by columns
  (rows sorted) and by rows, and where each row's terms go in L (:func:`block_symbolic`,
  :func:`block_rows`).
* :func:`drop_cuts`: once per interior-point call, the 1 / E below which a row's coupling of its two
  bodies is left out of the factorised S (DROP).
* :func:`block_factor`: S assembled in L's storage for an iteration's E (:func:`block_assemble`; late in
  the interior point, without the couplings of rows held at a bound) and factorised by the left-looking
  block Cholesky S = L L' (L's diagonal blocks lower triangular; its blocks that stay 0 skipped); -1
  where a pivot is not positive (S not numerically positive definite: the caller falls back).
* :func:`block_space_solve`: x = E^-1 (r - H S^-1 H' E^-1 r), S^-1 by the two block triangular solves
  (:func:`block_solve`), refined once against S where couplings were left out.

The entry points called from Python are these four (each one compiled library, loaded from numba's
cache once per process).
"""
import numpy as np

from ._jit import jit, jit_inline
from .body_space import body_space_apply, body_space_back, body_space_rhs

#: :func:`block_factor` stores an entry of L's off-diagonal blocks below this in magnitude as 0. Rows held at
#: a bound near the interior point's end have 1 / E ~ 1e-20 or less, so the blocks of the pairs they alone
#: join shrink by that factor at each elimination they pass through, down to IEEE 754 subnormals (below
#: 2.2e-308), whose arithmetic runs tens of times slower on x86 (every operation takes a microcode assist);
#: with the entries kept at 0 or above this, a product of two is 0 or a normal number. Such an entry is
#: far below half an ulp of the entries of S it meets (S's diagonal holds the bodies' masses and
#: inertias): the interior point's iterates on recorded 5,000-box pile problems kept their bits
FLUSH = 1e-150

#: :func:`block_assemble` leaves out the coupling e_inv h_a h_b' of a row on two bodies a, b where each of
#: its entries is at most this times sqrt(s_a s_b), s_c the least diagonal entry of body c's block of W^-1
#: (:func:`drop_cuts`): a row held at a bound near the interior point's end (1 / E ~ 1e-12 and below,
#: where a free row's is ~1 / cfm), whose coupling of its bodies' velocities is far below their own
#: masses. S~ = S - Delta with |W^1/2 Delta W^1/2| of that order per pair, and the solve refines once
#: against S itself (:func:`block_space_solve`), leaving an error of its square
DROP = 1e-6

#: the couplings are left out only where at least this share of the rows on two bodies may be (else S
#: whole, no refinement): a few rows held leave the bodies' graph connected, L's fill as it was, and the
#: refinement (a product with S and a second solve) would cost more than the factorisation saves
DROP_SHARE = 0.2


@jit
def block_graph(s_indptr, s_indices):
    """The bodies' graph of S's pattern (body_space_layout: column 6 c lists 6 rows per neighbour of
    body c, itself included, in increasing order): (bptr, bnb) the neighbours of each body, itself
    excluded, in increasing order."""
    nt = (s_indptr.size - 1) // 6
    bptr = np.zeros(nt + 1, dtype=np.int64)
    for c in range(nt):
        bptr[c + 1] = bptr[c] + (s_indptr[6 * c + 1] - s_indptr[6 * c]) // 6 - 1
    bnb = np.empty(bptr[nt], dtype=np.int64)
    for c in range(nt):
        o = bptr[c]
        for p in range(s_indptr[6 * c], s_indptr[6 * c + 1], 6):
            a = s_indices[p] // 6
            if a != c:
                bnb[o] = a
                o += 1
    return bptr, bnb


@jit
def block_symbolic(s_indptr, s_indices, perm):
    """L's block pattern for S (body_space_layout's pattern) with the bodies eliminated in the order
    ``perm`` (perm[j]: the body eliminated j-th). Returns (lp, li, rp, rc, rpos, src, dst, tr): column
    j's blocks (rows > j, increasing) li[lp[j]:lp[j + 1]]; row j's blocks rc[rp[j]:rp[j + 1]] (their
    columns, increasing) at L positions rpos; per stored upper block of S (body_space_layout's order:
    column c, its neighbours a <= c), src its base in S's values, sst its column's stride, dst its place (-1 - j: L's diagonal
    block j; else an off-diagonal block of L) and tr whether L's block is its transpose. The fill is
    the union of each column's own pattern and its children's in the elimination tree (Davis §4.1)."""
    nt = perm.size
    bptr, bnb = block_graph(s_indptr, s_indices)
    ip = np.empty(nt, dtype=np.int64)
    for j in range(nt):
        ip[perm[j]] = j
    # column j's pattern: its neighbours eliminated later, and its children's patterns minus j
    parent = np.full(nt, -1, dtype=np.int64)
    chead = np.full(nt, -1, dtype=np.int64)         # children as linked lists
    cnext = np.full(nt, -1, dtype=np.int64)
    mark = np.full(nt, -1, dtype=np.int64)
    cols = []
    total = 0
    buf = np.empty(nt, dtype=np.int64)
    for j in range(nt):
        n = 0
        c = perm[j]
        for p in range(bptr[c], bptr[c + 1]):
            i = ip[bnb[p]]
            if i > j and mark[i] != j:
                mark[i] = j
                buf[n] = i
                n += 1
        k = chead[j]
        while k >= 0:
            ck = cols[k]
            for t in range(ck.size):
                i = ck[t]
                if i > j and mark[i] != j:
                    mark[i] = j
                    buf[n] = i
                    n += 1
            k = cnext[k]
        col = np.sort(buf[:n])
        cols.append(col)
        total += n
        if n:
            parent[j] = col[0]
            cnext[j] = chead[col[0]]
            chead[col[0]] = j
    lp = np.zeros(nt + 1, dtype=np.int64)
    li = np.empty(total, dtype=np.int64)
    for j in range(nt):
        lp[j + 1] = lp[j] + cols[j].size
        li[lp[j]:lp[j + 1]] = cols[j]
    # by rows: row i's blocks in increasing column order
    rp = np.zeros(nt + 1, dtype=np.int64)
    for e in range(total):
        rp[li[e] + 1] += 1
    for i in range(nt):
        rp[i + 1] += rp[i]
    rc = np.empty(total, dtype=np.int64)
    rpos = np.empty(total, dtype=np.int64)
    fill = rp[:nt].copy()
    for j in range(nt):
        for e in range(lp[j], lp[j + 1]):
            i = li[e]
            rc[fill[i]] = j
            rpos[fill[i]] = e
            fill[i] += 1
    # where S's stored blocks go
    nblk = bptr[nt] // 2 + nt
    src = np.empty(nblk, dtype=np.int64)
    sst = np.empty(nblk, dtype=np.int64)
    dst = np.empty(nblk, dtype=np.int64)
    tr = np.zeros(nblk, dtype=np.bool_)
    b = 0
    for c in range(nt):
        o = s_indptr[6 * c]
        for p in range(s_indptr[6 * c], s_indptr[6 * c + 1], 6):
            a = s_indices[p] // 6
            if a > c:
                break
            src[b] = p
            sst[b] = s_indptr[6 * c + 1] - o
            if a == c:
                dst[b] = -1 - ip[c]
            else:
                ja, jc = ip[a], ip[c]
                lo_, hi_ = (ja, jc) if ja < jc else (jc, ja)     # L's block (hi_, lo_)
                e = lp[lo_] + np.searchsorted(li[lp[lo_]:lp[lo_ + 1]], hi_)
                dst[b] = e
                tr[b] = ja < jc         # S's block (a, c) is rows a, columns c: L's (jc, ja) is its transpose
            b += 1
    return lp, li, rp, rc, rpos, src[:b], sst[:b], dst[:b], tr[:b]


@jit
def block_rows(ra, rb, pair_base, perm, src, dst, tr):
    """Per kept row of body_space_layout (bodies ra < rb, S's block of the pair at pair_base): where
    its term goes in L (:func:`block_symbolic`'s dst of that block; -1 for a row on one body) and
    whether L's block is the pair's (a, b) block transposed; each body's place in ``perm``."""
    nt = perm.size
    ip = np.empty(nt, dtype=np.int64)
    for j in range(nt):
        ip[perm[j]] = j
    m = ra.size
    rdst = np.full(m, -1, dtype=np.int64)
    rtr = np.zeros(m, dtype=np.bool_)
    for k in range(m):
        if ra[k] >= 0 and rb[k] >= 0:
            t = np.searchsorted(src, pair_base[k])
            rdst[k] = dst[t]
            rtr[k] = tr[t]
    return ip, rdst, rtr


@jit
def drop_cuts(ra, rb, ha, hb, Winv):
    """Per row of body_space_layout, the e_inv at or below which :func:`block_assemble` leaves its
    coupling out: DROP sqrt(s_a s_b) / (max|h_a| max|h_b|) for a row on bodies a, b (s_c the least
    diagonal entry of W^-1's block c; inf for a row whose h_a or h_b is 0: it couples nothing), -1 for
    a row on one body (no coupling)."""
    nt = Winv.shape[0]
    s = np.empty(nt)
    for c in range(nt):
        m = Winv[c, 0, 0]
        for u in range(1, 6):
            m = min(m, Winv[c, u, u])
        s[c] = m
    cut = np.full(ra.size, -1.0)
    for k in range(ra.size):
        a, b = ra[k], rb[k]
        if a < 0 or b < 0:
            continue
        na = 0.0
        nb = 0.0
        for i in range(6):
            na = max(na, abs(ha[k, i]))
            nb = max(nb, abs(hb[k, i]))
        cut[k] = DROP * np.sqrt(s[a] * s[b]) / (na * nb) if na * nb > 0.0 else np.inf
    return cut


@jit
def block_assemble(ra, rb, ha, hb, e_inv, Winv, ip, rdst, rtr, cut, Ld, Lv):
    """S = W^-1 + H' diag(e_inv) H straight into the factor's storage (:func:`block_factor` factorises
    it in place): Ld[ip[c]] (lower triangle) the diagonal block of body c, Lv L's blocks below the
    diagonal (fill 0); :func:`block_rows` gives each row's place. The same sums as
    kernels/body_space.py ``body_space_values``, without S's own storage, except that a row on two
    bodies with e_inv <= cut[k] (:func:`drop_cuts`: held at a bound, its coupling below DROP of the
    bodies' own blocks) adds its diagonal terms only, where at least DROP_SHARE of the rows on two
    bodies are such rows. Returns the number of rows left out (0: this is S)."""
    Lv[:] = 0.0
    for c in range(Winv.shape[0]):
        j = ip[c]
        for u in range(6):
            for v in range(6):
                Ld[j, u, v] = Winv[c, u, v]
    dropped, two = 0, 0
    for k in range(ra.size):                    # the couplings left out only where as many pay (DROP_SHARE)
        if ra[k] >= 0 and rb[k] >= 0:
            two += 1
            if e_inv[k] <= cut[k]:
                dropped += 1
    limit = -np.inf if dropped < DROP_SHARE * two else np.inf
    for k in range(ra.size):
        a = ra[k]
        if a < 0:
            continue
        e = e_inv[k]
        D = Ld[ip[a]]
        for u in range(6):
            t = e * ha[k, u]
            for v in range(u + 1):
                D[u, v] += t * ha[k, v]
        b = rb[k]
        if b < 0:
            continue
        D = Ld[ip[b]]
        for u in range(6):
            t = e * hb[k, u]
            for v in range(u + 1):
                D[u, v] += t * hb[k, v]
        if e <= min(cut[k], limit):
            continue
        B = Lv[rdst[k]]
        if rtr[k]:              # L's block is S's (b, a) = e hb ha'
            for u in range(6):
                t = e * hb[k, u]
                for v in range(6):
                    B[u, v] += t * ha[k, v]
        else:                   # S's (a, b) = e ha hb'
            for u in range(6):
                t = e * ha[k, u]
                for v in range(6):
                    B[u, v] += t * hb[k, v]
    return dropped if limit > 0.0 else 0


@jit
def block_analysis(s_indptr, s_indices, perm, ra, rb, pair_base):
    """:func:`block_symbolic` for the order ``perm`` and :func:`block_rows` for the layout's rows:
    (lp, li, rp, rc, rpos, ip, rdst, rtr)."""
    lp, li, rp, rc, rpos, src, sst, dst, tr = block_symbolic(s_indptr, s_indices, perm)
    ip, rdst, rtr = block_rows(ra, rb, pair_base, perm, src, dst, tr)
    return lp, li, rp, rc, rpos, ip, rdst, rtr


@jit_inline
def _row_times(B, u, At, T, count):
    """T[u, v] -= (B A')[u, v] for v < ``count`` (At = A'), each entry's six products summed in order
    w = 0..5 from 0 as a dot product would; the six sums run side by side (independent chains, A'
    read by rows)."""
    a0 = a1 = a2 = a3 = a4 = a5 = 0.0
    for w in range(6):
        b = B[u, w]
        a0 += b * At[w, 0]
        a1 += b * At[w, 1]
        a2 += b * At[w, 2]
        a3 += b * At[w, 3]
        a4 += b * At[w, 4]
        a5 += b * At[w, 5]
    T[u, 0] -= a0
    if count > 1:
        T[u, 1] -= a1
    if count > 2:
        T[u, 2] -= a2
    if count > 3:
        T[u, 3] -= a3
    if count > 4:
        T[u, 4] -= a4
    if count > 5:
        T[u, 5] -= a5


@jit
def block_factor(ra, rb, ha, hb, e_inv, Winv, ip, rdst, rtr, cut, lp, li, rp, rc, rpos, Ld, Lv, wpos, nz):
    """S~ = W^-1 + H' diag(e_inv) H (:func:`block_assemble` into Ld, Lv; the couplings of rows with
    e_inv <= cut left out) and its block Cholesky S~ = L L' (Davis §4.8, left-looking, on 6x6 blocks)
    in place: Ld (nt, 6, 6) the diagonal blocks' lower Cholesky factors in elimination order, Lv L's
    off-diagonal blocks in :func:`block_symbolic`'s pattern, nz[e] whether block e has an entry that
    is not 0. A block that is 0 is skipped as a factor of every product (the products it would give
    are 0: the same values): where the rows held at their bounds leave pairs of bodies uncoupled (the
    interior point's late iterations) the bodies' graph falls apart into small trees, most of L's fill
    stays 0 and the factorisation costs a fraction of the full one, in the same order and pattern.
    ``wpos``: nt scratch. Returns the number of rows left out of the couplings (0: S~ = S), or -1
    where a pivot is not positive (nothing is usable then)."""
    dropped = block_assemble(ra, rb, ha, hb, e_inv, Winv, ip, rdst, rtr, cut, Ld, Lv)
    nt = Ld.shape[0]
    wpos[:] = -1
    At = np.empty((6, 6))
    for j in range(nt):
        for e in range(lp[j], lp[j + 1]):
            wpos[li[e]] = e
        D = Ld[j]
        for t in range(rp[j], rp[j + 1]):          # columns k < j with L_jk != 0
            pk = rpos[t]
            if not nz[pk]:
                continue
            k = rc[t]
            A = Lv[pk]
            for v in range(6):                      # A' in rows: the products below read it row by row
                for w in range(6):
                    At[w, v] = A[v, w]
            for u in range(6):                      # D -= L_jk L_jk' (lower triangle)
                _row_times(A, u, At, D, u + 1)
            for e in range(pk + 1, lp[k + 1]):      # L_ij -= L_ik L_jk', rows i > j of column k
                if not nz[e]:
                    continue
                B = Lv[e]
                T = Lv[wpos[li[e]]]
                for u in range(6):
                    _row_times(B, u, At, T, 6)
        for u in range(6):                          # D = C C' in place (lower)
            for v in range(u + 1):
                acc = D[u, v]
                for w in range(v):
                    acc -= D[u, w] * D[v, w]
                if u == v:
                    if not acc > 0.0:
                        return -1
                    D[u, u] = np.sqrt(acc)
                else:
                    D[u, v] = acc / D[v, v]
            for v in range(u + 1, 6):
                D[u, v] = 0.0
        for e in range(lp[j], lp[j + 1]):           # L_ij = B C'^-1: rows of B solved against C
            B = Lv[e]
            any_ = False
            for u in range(6):
                for v in range(6):
                    acc = B[u, v]
                    for w in range(v):
                        acc -= B[u, w] * D[v, w]
                    acc /= D[v, v]
                    if abs(acc) >= FLUSH:
                        B[u, v] = acc
                        any_ = True
                    else:
                        B[u, v] = 0.0
            nz[e] = any_
    return dropped


@jit
def block_solve(perm, lp, li, Ld, Lv, nz, b, x):
    """x = S^-1 b for S = P L L' P' (:func:`block_factor`; P the bodies' order ``perm``): forward and
    backward block substitution, 6 entries per body, L's blocks that are 0 (``nz``) skipped."""
    nt = perm.size
    y = np.empty((nt, 6))
    for j in range(nt):
        c = perm[j]
        for u in range(6):
            y[j, u] = b[6 * c + u]
    v = np.empty(6)
    for j in range(nt):                             # L y = b
        C = Ld[j]
        for u in range(6):
            acc = y[j, u]
            for w in range(u):
                acc -= C[u, w] * y[j, w]
            y[j, u] = acc / C[u, u]
            v[u] = y[j, u]
        for e in range(lp[j], lp[j + 1]):           # y_i -= L_ij y_j, y_j held in v (y_i is another row)
            if not nz[e]:
                continue
            B = Lv[e]
            i = li[e]
            for u in range(6):
                acc = 0.0
                for w in range(6):
                    acc += B[u, w] * v[w]
                y[i, u] -= acc
    for j in range(nt - 1, -1, -1):                 # L' x = y
        for u in range(6):
            v[u] = y[j, u]
        for e in range(lp[j], lp[j + 1]):           # y_j -= L_ij' y_i, summed in v
            if not nz[e]:
                continue
            B = Lv[e]
            i = li[e]
            a0 = a1 = a2 = a3 = a4 = a5 = 0.0
            for u in range(6):
                c = y[i, u]
                a0 += B[u, 0] * c
                a1 += B[u, 1] * c
                a2 += B[u, 2] * c
                a3 += B[u, 3] * c
                a4 += B[u, 4] * c
                a5 += B[u, 5] * c
            v[0] -= a0
            v[1] -= a1
            v[2] -= a2
            v[3] -= a3
            v[4] -= a4
            v[5] -= a5
        C = Ld[j]
        for u in range(5, -1, -1):
            acc = v[u]
            for w in range(u + 1, 6):
                acc -= C[w, u] * v[w]
            v[u] = acc / C[u, u]
        for u in range(6):
            y[j, u] = v[u]
    for j in range(nt):
        c = perm[j]
        for u in range(6):
            x[6 * c + u] = y[j, u]


@jit
def block_space_solve(ra, rb, ha, hb, r, e_inv, Winv, perm, lp, li, Ld, Lv, nz, dropped, t, y, x):
    """x = E^-1 (r - H S^-1 H' E^-1 r) (kernels/body_space.py's identity) with S^-1 by the factor of
    :func:`block_factor`; where that factor left ``dropped`` > 0 rows' couplings out (S~ = S - Delta,
    |Delta| below DROP of the bodies' blocks), S^-1 t by one step of iterative refinement,
    y = y0 + S~^-1 (t - S y0) with y0 = S~^-1 t and S applied exactly from the rows
    (:func:`body_space_apply`): its error is that of y0 times |S~^-1 Delta| (Golub & Van Loan, Matrix
    Computations, 4th ed., §3.5.3). t, y: 6 nt scratch."""
    body_space_rhs(ra, rb, ha, hb, r, e_inv, perm.size, t)
    block_solve(perm, lp, li, Ld, Lv, nz, t, y)
    if dropped > 0:
        s = np.empty_like(t)
        body_space_apply(ra, rb, ha, hb, e_inv, Winv, y, s)
        for i in range(t.size):
            s[i] = t[i] - s[i]
        d = np.empty_like(t)
        block_solve(perm, lp, li, Ld, Lv, nz, s, d)
        for i in range(t.size):
            y[i] += d[i]
    body_space_back(ra, rb, ha, hb, r, e_inv, y, x)
