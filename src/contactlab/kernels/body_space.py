"""Compiled parts of box-qp's interior-point Newton systems solved in body space
(solvers/box_qp/shifted.py ``_BodySpace``).

A contact matrix is M = H W H' + cfm I: H the rows (each on one or two bodies, 6 columns per
body), W the bodies' 6x6 blocks of the inverse mass matrix. The interior point solves
(M + diag(d)) x = r on the rows ``keep`` once per right-hand side, several times an iteration. With
E = cfm + d (positive where cfm > 0) the Sherman-Morrison-Woodbury identity moves that system onto
the velocities of the bodies the rows touch:

    S = W^-1 + H' E^-1 H,    x = E^-1 (r - H S^-1 H' E^-1 r),

S having 6 rows per body and a dense 6x6 block per pair of bodies sharing a row, where M has a row
per contact direction and an entry per pair of rows sharing a body. A falling 500-box pile's impact
step keeps 5,500 rows on 500 bodies: S has 3,000 rows and 39,000 entries in its upper triangle, M's
kept block 106,000 (docs/benchmarks-sim.md).

* :func:`body_space_layout`: once per problem: each kept row's bodies (numbered among the touched
  ones) and 6-vectors, W^-1 per touched body, and S's block pattern (symmetric CSC, bodies in order;
  the positions each row adds to).
* :func:`body_space_values`: S's upper triangle for 1 / E (once per iteration).
* :func:`body_space_rhs`, :func:`body_space_back`: H' E^-1 r and E^-1 (r - H y).
* :func:`kept_box_error`: the interior point's per-iterate w = M z + q from the same vectors and a lower
  bound of its certified error (the exact check, a pass over M's entries, only where the bound passes).
"""
import numpy as np

from ._jit import jit, jit_inline
from .pgs_matrix_free import row_slots
from .residual import box_relative_kernel

#: a body's 6x6 block of W counts as invertible when every pivot of its elimination exceeds this times
#: its largest diagonal entry (else the body-space form is not used: solvers/box_qp/ falls back)
PIVOT_FLOOR = 1e-12


@jit
def _inverse6(A, out):
    """out = A^-1 for a symmetric positive definite 6x6 A by Gauss-Jordan elimination with diagonal
    pivots; False where a pivot is below PIVOT_FLOOR times A's largest diagonal entry."""
    T = np.zeros((6, 12))
    scale = 0.0
    for i in range(6):
        scale = max(scale, abs(A[i, i]))
        for j in range(6):
            T[i, j] = A[i, j]
        T[i, 6 + i] = 1.0
    if not scale > 0.0:
        return False
    for i in range(6):
        piv = T[i, i]
        if not piv > PIVOT_FLOOR * scale:
            return False
        for j in range(12):
            T[i, j] /= piv
        for k in range(6):
            if k != i:
                f = T[k, i]
                if f != 0.0:
                    for j in range(12):
                        T[k, j] -= f * T[i, j]
    for i in range(6):
        for j in range(6):
            out[i, j] = 0.5 * (T[i, 6 + j] + T[j, 6 + i])     # exactly symmetric
    return True


@jit
def body_space_layout(indptr, indices, data, keep, W):
    """The body-space form of the rows ``keep`` of H (CSR, 6 columns per body) with W (nbody, 6, 6).

    Bodies whose W block is zero (held ones) are dropped with their columns (they add nothing to
    M). Returns (ok, ra, rb, ha, hb, nt, Winv, Wt, s_indptr, s_indices, diag_base, stride, pair_base):
    ok False where a row touches more than two bodies or a touched body's block is not invertible;
    per kept row k its bodies ra[k] < rb[k] numbered 0..nt-1 among the touched ones (-1: none) and
    its entries on them ha[k], hb[k]; Winv and Wt (nt, 6, 6): the touched bodies' W^-1 and W; S's pattern, symmetric CSC with 6 rows per
    body in each of its neighbours' columns (6 deg(c) entries per column of body c); S's entry
    (6 a + v, 6 c + u) of a neighbour a of c at position base + stride[c] u + v, where base is
    diag_base[c] for a = c and pair_base[k] for row k's pair (a, c) = (ra[k], rb[k])."""
    nbody = W.shape[0]
    m = keep.size
    live = np.zeros(nbody, dtype=np.bool_)
    for b in range(nbody):
        for i in range(6):
            for j in range(6):
                if W[b, i, j] != 0.0:
                    live[b] = True
    ra = np.full(m, -1, dtype=np.int64)
    rb = np.full(m, -1, dtype=np.int64)
    ha = np.zeros((m, 6))
    hb = np.zeros((m, 6))
    # each row's two body slots (kernels/pgs_matrix_free/ row_slots; slot body nbody: none)
    _, body, vec, ok = row_slots(indptr, indices, data, indptr.size - 1, nbody)
    for k in range(m):
        for s in range(2 * keep[k], 2 * keep[k] + 2):
            b = body[s]
            if b == nbody or not live[b]:
                continue
            if ra[k] < 0:
                ra[k] = b
                ha[k, :] = vec[s]
            else:
                rb[k] = b
                hb[k, :] = vec[s]
    cid = np.full(nbody, -1, dtype=np.int64)
    for k in range(m):
        if ra[k] >= 0:
            cid[ra[k]] = 0
        if rb[k] >= 0:
            cid[rb[k]] = 0
    nt = 0
    for b in range(nbody):
        if cid[b] == 0:
            cid[b] = nt
            nt += 1
    Winv = np.zeros((nt, 6, 6))
    Wt = np.zeros((nt, 6, 6))
    for b in range(nbody):
        if cid[b] >= 0:
            Wt[cid[b]] = W[b]
            if not _inverse6(W[b], Winv[cid[b]]):
                ok = False
    npair = 0
    keys = np.empty(m, dtype=np.int64)
    for k in range(m):
        if ra[k] >= 0:
            ra[k] = cid[ra[k]]
        if rb[k] >= 0:
            rb[k] = cid[rb[k]]      # bodies in increasing order in a canonical row, so ra[k] < rb[k]
            if rb[k] < ra[k]:
                ra[k], rb[k] = rb[k], ra[k]
                for i in range(6):
                    ha[k, i], hb[k, i] = hb[k, i], ha[k, i]
            keys[npair] = ra[k] * nt + rb[k]
            npair += 1
    keys = np.unique(keys[:npair])
    # neighbours of each body: the lower ones (pairs (x, c)), itself, the upper ones (pairs (c, y))
    deg = np.ones(nt, dtype=np.int64)
    for t in range(keys.size):
        deg[keys[t] // nt] += 1
        deg[keys[t] % nt] += 1
    bstart = np.zeros(nt + 1, dtype=np.int64)
    for c in range(nt):
        bstart[c + 1] = bstart[c] + deg[c]
    nbr = np.empty(bstart[nt], dtype=np.int64)
    fill = np.zeros(nt, dtype=np.int64)
    pair_pos = np.empty(keys.size, dtype=np.int64)      # pair (a, c)'s place among c's neighbours
    for t in range(keys.size):                          # lower neighbours, in increasing order
        a, c = keys[t] // nt, keys[t] % nt
        pair_pos[t] = fill[c]
        nbr[bstart[c] + fill[c]] = a
        fill[c] += 1
    self_pos = fill.copy()
    for c in range(nt):
        nbr[bstart[c] + fill[c]] = c
        fill[c] += 1
    for t in range(keys.size):                          # upper neighbours, in increasing order
        a, c = keys[t] // nt, keys[t] % nt
        nbr[bstart[a] + fill[a]] = c
        fill[a] += 1
    s_indptr = np.zeros(6 * nt + 1, dtype=np.int64)
    stride = 6 * deg
    for c in range(nt):
        for u in range(6):
            s_indptr[6 * c + u + 1] = s_indptr[6 * c + u] + stride[c]
    s_indices = np.empty(s_indptr[6 * nt], dtype=np.int64)
    for c in range(nt):
        for u in range(6):
            o = s_indptr[6 * c + u]
            for p in range(deg[c]):
                for v in range(6):
                    s_indices[o + 6 * p + v] = 6 * nbr[bstart[c] + p] + v
    diag_base = np.empty(nt, dtype=np.int64)
    for c in range(nt):
        diag_base[c] = 36 * bstart[c] + 6 * self_pos[c]
    pair_base = np.full(m, -1, dtype=np.int64)
    for k in range(m):
        if rb[k] >= 0:
            t = np.searchsorted(keys, ra[k] * nt + rb[k])
            pair_base[k] = 36 * bstart[rb[k]] + 6 * pair_pos[t]
    return ok, ra, rb, ha, hb, nt, Winv, Wt, s_indptr, s_indices, diag_base, stride, pair_base


@jit_inline
def _add_outer(data, base, st, e, hu, hv, upper):
    """S's block at ``base`` (column stride ``st``) += e hv hu' (entry (v, u) at base + st u + v; only
    v <= u where ``upper``: a diagonal block's upper triangle)."""
    for u in range(6):
        t = e * hu[u]
        for v in range(u + 1 if upper else 6):
            data[base + st * u + v] += t * hv[v]


@jit
def body_space_values(ra, rb, ha, hb, e_inv, Winv, diag_base, stride, pair_base, data):
    """S = W^-1 + H' diag(e_inv) H into ``data`` (:func:`body_space_layout`'s pattern): the entries on
    and above the diagonal (row <= column); the others are left at 0 (the factorisations read the
    upper triangle only)."""
    data[:] = 0.0
    for c in range(Winv.shape[0]):
        for u in range(6):
            for v in range(u + 1):
                data[diag_base[c] + stride[c] * u + v] = Winv[c, v, u]
    for k in range(ra.size):
        a = ra[k]
        if a < 0:
            continue
        e = e_inv[k]
        _add_outer(data, diag_base[a], stride[a], e, ha[k], ha[k], True)
        b = rb[k]
        if b >= 0:
            _add_outer(data, diag_base[b], stride[b], e, hb[k], hb[k], True)
            _add_outer(data, pair_base[k], stride[b], e, hb[k], ha[k], False)


@jit
def body_space_rhs(ra, rb, ha, hb, r, e_inv, nt, out):
    """out (6 nt) = H' diag(e_inv) r."""
    out[:] = 0.0
    for k in range(ra.size):
        a = ra[k]
        if a < 0:
            continue
        s = r[k] * e_inv[k]
        for i in range(6):
            out[6 * a + i] += s * ha[k, i]
        b = rb[k]
        if b >= 0:
            for i in range(6):
                out[6 * b + i] += s * hb[k, i]


@jit
def body_space_back(ra, rb, ha, hb, r, e_inv, y, out):
    """out = diag(e_inv) (r - H y)."""
    for k in range(ra.size):
        acc = r[k]
        a = ra[k]
        if a >= 0:
            for i in range(6):
                acc -= ha[k, i] * y[6 * a + i]
            b = rb[k]
            if b >= 0:
                for i in range(6):
                    acc -= hb[k, i] * y[6 * b + i]
        out[k] = acc * e_inv[k]


@jit
def body_space_apply(ra, rb, ha, hb, e_inv, Winv, y, out):
    """out (6 nt) = S y for S = W^-1 + H' diag(e_inv) H from the rows themselves (every row's
    coupling included), for the refinement of a solve whose factor left some out
    (kernels/body_space_chol.py ``block_space_solve``)."""
    nt = Winv.shape[0]
    for c in range(nt):
        for u in range(6):
            acc = 0.0
            for v in range(6):
                acc += Winv[c, u, v] * y[6 * c + v]
            out[6 * c + u] = acc
    for k in range(ra.size):
        a = ra[k]
        if a < 0:
            continue
        s = 0.0
        for i in range(6):
            s += ha[k, i] * y[6 * a + i]
        b = rb[k]
        if b >= 0:
            for i in range(6):
                s += hb[k, i] * y[6 * b + i]
        s *= e_inv[k]
        for i in range(6):
            out[6 * a + i] += s * ha[k, i]
        if b >= 0:
            for i in range(6):
                out[6 * b + i] += s * hb[k, i]


@jit
def kept_box_error(ra, rb, ha, hb, Wt, cfm, q, lo, hi, z, size, w, work):
    """On the kept rows of :func:`body_space_layout` (the fixed rows at 0): w = M z + q for
    M = H W H' + cfm I from the rows' body vectors (two thin products, no pass over M's entries; Wt
    the touched bodies' blocks of W) into ``w``, and a lower bound of the certified relative error
    of the whole boxed LCP with static bounds (kernels/residual.py ``csr_box_error``): the same
    measure (``size`` = max|q| over every row) with each row's terms |q_i| + |M_i||z| replaced by
    their upper bound |q_i| + |h_i| |W| |H'| |z| + cfm |z_i| (triangle inequality). A larger unit
    only shrinks a row's natural residual, and a fixed row's is 0, so where this bound exceeds a
    tolerance the certified error does too. 0 where z = 0 (the exact measure then scales z by the
    bounds of every row). ``work``: 5 x n scratch."""
    nt = Wt.shape[0]
    u = np.zeros((nt, 6))
    ua = np.zeros((nt, 6))
    zmax = 0.0
    for k in range(ra.size):
        zk = z[k]
        zmax = max(zmax, abs(zk))
        a = ra[k]
        if a < 0:
            continue
        for i in range(6):
            u[a, i] += ha[k, i] * zk
            ua[a, i] += abs(ha[k, i]) * abs(zk)
        b = rb[k]
        if b >= 0:
            for i in range(6):
                u[b, i] += hb[k, i] * zk
                ua[b, i] += abs(hb[k, i]) * abs(zk)
    v = np.empty((nt, 6))
    va = np.empty((nt, 6))
    for c in range(nt):
        for i in range(6):
            s = 0.0
            sa = 0.0
            for e in range(6):
                s += Wt[c, i, e] * u[c, e]
                sa += abs(Wt[c, i, e]) * ua[c, e]
            v[c, i] = s
            va[c, i] = sa
    t = work[4]
    for k in range(ra.size):
        s = cfm * z[k] + q[k]
        sa = abs(q[k]) + cfm * abs(z[k])
        a = ra[k]
        if a >= 0:
            for i in range(6):
                s += ha[k, i] * v[a, i]
                sa += abs(ha[k, i]) * va[a, i]
            b = rb[k]
            if b >= 0:
                for i in range(6):
                    s += hb[k, i] * v[b, i]
                    sa += abs(hb[k, i]) * va[b, i]
        w[k] = s
        t[k] = sa
    if zmax == 0.0:
        return 0.0
    nat, comp, infeas = box_relative_kernel(z, w, lo, hi, q, t, size, work[:4])
    return infeas if infeas > nat else nat
