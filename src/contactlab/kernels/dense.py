"""Shared dense kernels (issue 10: one place each): small LU solve and Gauss-Jordan inverse,
Cholesky append / Givens delete / solve, the bordered inverse with its swap-to-last Schur downdate
(Lemke's reduced basis, principal pivoting, enumeration), the one lexicographic tie filter, and a
body's six-coordinate products (a dot product; a 6x6 block of M^-1 times a vector, with the test of
a rigid body's block about its centre of mass).
Numba only; tolerances from kernels/tolerances.py."""
import numpy as np

from ._jit import jit, jit_inline
from .tolerances import GJ_PIVOT, PIVOT, RANK


@jit_inline
def dot6(A, a, B, b):
    """A[a] . B[b] over six coordinates (a body's dofs), summed pairwise: three independent
    products first, half the dependent additions of a running sum."""
    return dot6_of(A[a, 0], A[a, 1], A[a, 2], A[a, 3], A[a, 4], A[a, 5], B, b)


@jit_inline
def dot6_of(x0, x1, x2, x3, x4, x5, B, b):
    """(x0, ..., x5) . B[b], summed as :func:`dot6` sums (for a vector a caller holds in registers)."""
    return ((x0 * B[b, 0] + x1 * B[b, 1]) + (x2 * B[b, 2] + x3 * B[b, 3])) + (x4 * B[b, 4] + x5 * B[b, 5])


@jit
def centre_of_mass_blocks(W):
    """Per 6x6 block of W = M^-1: whether it is diag(I3 / m, R I^-1 R') (a rigid body about its
    centre of mass: zero coupling blocks, a diagonal linear block), whose product with a row's six
    entries is then 12 multiplications, not 36, with the same bits (the zeros' products add
    nothing but a zero's sign)."""
    plain = np.ones(W.shape[0], dtype=np.bool_)
    for b in range(W.shape[0]):
        for i in range(6):
            for t in range(6):
                if W[b, i, t] != 0.0 and ((i < 3 and t != i) or (i >= 3 and t < 3)):
                    plain[b] = False
    return plain


@jit_inline
def mass_block_times(W, b, plain, v0, v1, v2, v3, v4, v5):
    """W[b] (6 x 6) times (v0, ..., v5), each sum in the order of the columns;
    ``plain`` (:func:`centre_of_mass_blocks`' answer for b): as diag(I3 / m, R I^-1 R'), 12 products
    instead of 36, the same bits (the zeros' products add nothing but a zero's sign)."""
    if plain:
        return (W[b, 0, 0] * v0, W[b, 1, 1] * v1, W[b, 2, 2] * v2,
                W[b, 3, 3] * v3 + W[b, 3, 4] * v4 + W[b, 3, 5] * v5,
                W[b, 4, 3] * v3 + W[b, 4, 4] * v4 + W[b, 4, 5] * v5,
                W[b, 5, 3] * v3 + W[b, 5, 4] * v4 + W[b, 5, 5] * v5)
    return (_row_times(W, b, 0, v0, v1, v2, v3, v4, v5), _row_times(W, b, 1, v0, v1, v2, v3, v4, v5),
            _row_times(W, b, 2, v0, v1, v2, v3, v4, v5), _row_times(W, b, 3, v0, v1, v2, v3, v4, v5),
            _row_times(W, b, 4, v0, v1, v2, v3, v4, v5), _row_times(W, b, 5, v0, v1, v2, v3, v4, v5))


@jit_inline
def _row_times(W, b, i, v0, v1, v2, v3, v4, v5):
    """Row i of W[b] times (v0, ..., v5), summed left to right (the bits of a running sum from 0)."""
    return W[b, i, 0] * v0 + W[b, i, 1] * v1 + W[b, i, 2] * v2 + W[b, i, 3] * v3 + W[b, i, 4] * v4 + W[b, i, 5] * v5


@jit_inline
def tie_filter(cand, vals, m, rel):
    """The one lexicographic tie filter: keep the candidates whose value is within
    rel * (1 + |min|) of the minimum. ``vals[t]`` belongs to ``cand[t]``; both are compacted in
    place; returns the new count (used by Lemke's ratio test and each lexicographic column)."""
    best = np.inf
    for t in range(m):
        if vals[t] < best:
            best = vals[t]
    thr = best + rel * (1.0 + abs(best))
    k = 0
    for t in range(m):
        if vals[t] <= thr:
            cand[k] = cand[t]
            vals[k] = vals[t]
            k += 1
    return k


@jit
def border_add(Minv, k, M, idx, a, u, v):
    """Minv[:k,:k] = inv(M[idx,idx]) -> inverse with index a appended (bordering, O(k^2)).
    Returns False when the Schur complement s = det(M_{C+a}) / det(M_CC) is not clearly positive:
    every principal minor of a P-matrix is positive, so s <= 0 proves M is not P (its only user,
    Cottle-Dantzig on nonsymmetric M, is guaranteed only for P-matrices)."""
    for i in range(k):
        s1 = 0.0
        s2 = 0.0
        for j in range(k):
            s1 += Minv[i, j] * M[idx[j], a]
            s2 += M[a, idx[j]] * Minv[j, i]
        u[i] = s1
        v[i] = s2
    s = M[a, a]
    for j in range(k):
        s -= M[a, idx[j]] * u[j]
    big = abs(M[a, a])
    for j in range(k):
        big = max(big, abs(M[a, idx[j]]))
    if not (s > PIVOT * max(big, 1e-300)):
        return False
    for i in range(k):
        for j in range(k):
            Minv[i, j] += u[i] * v[j] / s
        Minv[i, k] = -u[i] / s
        Minv[k, i] = -v[i] / s
    Minv[k, k] = 1.0 / s
    idx[k] = a
    return True

@jit_inline
def schur_remove(Ainv, k, r, c):
    """Shrink the inverse Ainv[:k,:k] by one: swap its row ``r`` and column ``c`` to the last place
    and downdate by the Schur complement (O(k^2)); the result is the inverse of the matrix without
    the corresponding column and row. Lemke's reduced basis (case d, r != c) and principal pivoting (r == c) share it.
    Returns False when the pivot Ainv[last, last] is zero or not finite."""
    last = k - 1
    if r != last:
        for j in range(k):
            t = Ainv[r, j]
            Ainv[r, j] = Ainv[last, j]
            Ainv[last, j] = t
    if c != last:
        for i in range(k):
            t = Ainv[i, c]
            Ainv[i, c] = Ainv[i, last]
            Ainv[i, last] = t
    h = Ainv[last, last]
    if not (abs(h) > 0.0 and np.isfinite(h)):
        return False
    for i in range(last):
        f = Ainv[i, last] / h
        if f != 0.0:
            for j in range(last):
                Ainv[i, j] -= f * Ainv[last, j]
    return True


@jit
def border_remove(Minv, k, idx, p):
    """Remove position p from the bordered inverse of size k (swap to last, Schur downdate).
    Returns False when the inverse's pivot is zero (M_CC was singular: outside P)."""
    last = k - 1
    if p != last:
        t2 = idx[p]
        idx[p] = idx[last]
        idx[last] = t2
    return schur_remove(Minv, k, p, p)


@jit
def chol_append_column(L, k, col, diag, rows, a, tmp, rel_tol):
    """Append one row/column to the Cholesky factor L[:k,:k]: ``col`` holds the new off-diagonal
    entries (k,), ``diag`` the new diagonal entry. O(k^2). Returns False when the new Schur
    complement diag - l'l is not above ``rel_tol * diag`` (the row depends on the others)."""
    for i in range(k):
        s = col[i]
        for j in range(i):
            s -= L[i, j] * tmp[j]
        tmp[i] = s / L[i, i]
    d = diag
    for j in range(k):
        d -= tmp[j] * tmp[j]
    if not (d > rel_tol * max(abs(diag), 1e-300)):
        return False
    for j in range(k):
        L[k, j] = tmp[j]
        L[j, k] = 0.0
    L[k, k] = np.sqrt(d)
    rows[k] = a
    return True

@jit
def chol_delete(L, k, rows, p):
    """Delete row/column p from the Cholesky factor of size k with Givens rotations (O(k^2))."""
    for i in range(p, k - 1):
        for j in range(i + 2):
            L[i, j] = L[i + 1, j]
        rows[i] = rows[i + 1]
    # now rows p..k-2 have one extra entry at column i+1: restore lower-triangularity
    for i in range(p, k - 1):
        a = L[i, i]
        b = L[i, i + 1]
        r = np.sqrt(a * a + b * b)
        c = 1.0
        s = 0.0
        if r > 0.0:
            c = a / r
            s = b / r
        for t in range(i, k - 1):
            x = L[t, i]
            y = L[t, i + 1]
            L[t, i] = c * x + s * y
            L[t, i + 1] = -s * x + c * y
        L[i, i + 1] = 0.0
    for j in range(k):
        L[k - 1, j] = 0.0
        L[j, k - 1] = 0.0

@jit
def chol_factor_block(A, L, s0, s1):
    """Lower Cholesky factor of the diagonal block A[s0:s1, s0:s1] into L[s0:s1, s0:s1] (L's strict
    upper part of the block left as it is: the caller zeroes it); False when a pivot is not positive
    (not positive definite, or not finite)."""
    for j in range(s0, s1):
        d = A[j, j]
        for t in range(s0, j):
            d -= L[j, t] * L[j, t]
        if not d > 0.0:          # also catches NaN
            return False
        ljj = np.sqrt(d)
        L[j, j] = ljj
        for i in range(j + 1, s1):
            v = A[i, j]
            for t in range(s0, j):
                v -= L[i, t] * L[j, t]
            L[i, j] = v / ljj
    return True


@jit
def lower_solve_block(L, s0, s1, b, x):
    """x[s0:s1] from L x = b on the block s0:s1, L lower triangular (x may be b)."""
    for i in range(s0, s1):
        s = b[i]
        for j in range(s0, i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]


@jit
def upper_solve_block(L, s0, s1, b, x):
    """x[s0:s1] from L' x = b on the block s0:s1, L lower triangular (x may be b)."""
    for i in range(s1 - 1, s0 - 1, -1):
        s = b[i]
        for j in range(i + 1, s1):
            s -= L[j, i] * x[j]
        x[i] = s / L[i, i]


@jit
def chol_solve_block(L, s0, s1, b, x):
    """x[s0:s1] from L L' x = b on the block s0:s1 (x may be b: row i reads b_i before writing x_i)."""
    lower_solve_block(L, s0, s1, b, x)
    upper_solve_block(L, s0, s1, x, x)


@jit
def chol_solve(L, k, b, x):
    """x from L L' x = b on the leading k x k block."""
    chol_solve_block(L, 0, k, b, x)


@jit
def csr_times(indptr, indices, data, x):
    """A x for A in CSR (indptr, indices, data), one pass over its entries (mechanics' H x for a
    step's rows, box-qp's products on an island's CSR block)."""
    n = indptr.size - 1
    out = np.empty(n)
    for r in range(n):
        acc = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            acc += data[p] * x[indices[p]]
        out[r] = acc
    return out


@jit
def csr_transpose_times(indptr, indices, data, z, ncols):
    """H' z for H in CSR (ncols columns): each row's entries scaled by z_r and scattered, no
    transposed copy of H (mechanics' H' z for a step's rows)."""
    out = np.zeros(ncols)
    for r in range(indptr.size - 1):
        zr = z[r]
        if zr != 0.0:
            for p in range(indptr[r], indptr[r + 1]):
                out[indices[p]] += data[p] * zr
    return out


@jit
def matvec(A, x, out):
    """out = A x, each row summed in column order."""
    for i in range(A.shape[0]):
        s = 0.0
        for t in range(A.shape[1]):
            s += A[i, t] * x[t]
        out[i] = s


@jit
def add_rmatvec(A, z, sign, out):
    """out += sign A' z, row by row of A, skipping zero z_i (impulses: most are zero)."""
    for i in range(A.shape[0]):
        zi = z[i]
        if zi != 0.0:
            for c in range(A.shape[1]):
                out[c] += sign * (A[i, c] * zi)

@jit
def gauss_jordan_inverse(A, k, out):
    """out[:k,:k] = inv(A[:k,:k]) by Gauss-Jordan with partial pivoting (A destroyed); False if singular."""
    for i in range(k):
        for j in range(k):
            out[i, j] = 1.0 if i == j else 0.0
    scale = abs_max(A, k)
    for c in range(k):
        p = pivot_row(A, c, k)
        if not (abs(A[p, c]) > GJ_PIVOT * scale):
            return False
        if p != c:
            for j in range(k):
                t = A[c, j]
                A[c, j] = A[p, j]
                A[p, j] = t
                t = out[c, j]
                out[c, j] = out[p, j]
                out[p, j] = t
        piv = A[c, c]
        for j in range(k):
            A[c, j] /= piv
            out[c, j] /= piv
        for r in range(k):
            if r != c:
                f = A[r, c]
                if f != 0.0:
                    for j in range(k):
                        A[r, j] -= f * A[c, j]
                        out[r, j] -= f * out[c, j]
    return True

@jit
def abs_max(A, k):
    """max |A[:k,:k]| (the matrix's scale for relative pivot tests)."""
    scale = 0.0
    for i in range(k):
        for j in range(k):
            scale = max(scale, abs(A[i, j]))
    return scale


@jit_inline
def lcp_scale(M, q):
    """The one scale an LCP (M, q) is solved at, (M, q) / s: s = max|M_ij| (:func:`abs_max`), else
    max|q_i|, else 1 (solvers/lemke.py ``lemke_solve``'s ``problem.max_abs_M() or max|q| or 1``), so
    that the problem times any c > 0 runs identically (Lemke's and PGS-SM's kernels)."""
    n = q.shape[0]
    s = abs_max(M, n)
    if s == 0.0:
        for i in range(n):
            s = max(s, abs(q[i]))
    if s == 0.0:
        s = 1.0
    return s


@jit
def pivot_row(A, c, k):
    """Partial pivoting: the row r >= c of largest |A[r, c]| (the first on ties)."""
    p = c
    for r in range(c + 1, k):
        if abs(A[r, c]) > abs(A[p, c]):
            p = r
    return p


@jit
def solve_small(A, b, k, x, rel_tol=RANK):
    """Gaussian elimination with partial pivoting on A[:k,:k] x = b (destroys A, b); False if a
    pivot is <= ``rel_tol`` x max|A| (singular to that tolerance)."""
    scale = abs_max(A, k)
    for c in range(k):
        p = pivot_row(A, c, k)
        if abs(A[p, c]) <= rel_tol * max(scale, 1e-300):
            return False
        if p != c:
            for j in range(k):
                t = A[c, j]
                A[c, j] = A[p, j]
                A[p, j] = t
            t = b[c]
            b[c] = b[p]
            b[p] = t
        for r in range(c + 1, k):
            f = A[r, c] / A[c, c]
            for j in range(c, k):
                A[r, j] -= f * A[c, j]
            b[r] -= f * b[c]
    for i in range(k - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, k):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]
    return True


@jit
def elimination_order(gstart, adj):
    """The groups' elimination order, fewest neighbour rows first (a tree of joints from its leaves:
    no fill), and each group's neighbours at its elimination (later groups it shares a body with,
    fill included: the neighbours of an eliminated group become neighbours of each other). Returns
    (order, nbr, nnb): group order[s] is eliminated at step s; nbr[g, :nnb[g]] its neighbours."""
    G = gstart.size - 1
    adj = adj.copy()
    done = np.zeros(G, dtype=np.bool_)
    order = np.empty(G, dtype=np.int64)
    nbr = np.empty((G, G), dtype=np.int64)
    nnb = np.zeros(G, dtype=np.int64)
    for step in range(G):
        g, best = -1, gstart[G] + 1
        for c in range(G):
            if not done[c]:
                w = 0
                for h in range(G):
                    if adj[c, h] and not done[h]:
                        w += gstart[h + 1] - gstart[h]
                if w < best:
                    g, best = c, w
        order[step] = g
        done[g] = True
        k = 0
        for h in range(G):
            if adj[g, h] and not done[h]:
                nbr[g, k] = h
                k += 1
        nnb[g] = k
        for i in range(k):
            for j in range(k):
                if i != j:
                    adj[nbr[g, i], nbr[g, j]] = True
    return order, nbr, nnb


@jit
def elimination_steps(gstart, adj):
    """:func:`elimination_order` numbered by step: (order, step_of, nbr, nnb) with group order[s]
    eliminated at step s (step_of its inverse) and step s's later neighbours, as steps,
    nbr[s, :nnb[s]] (the form :func:`grouped_cholesky_solve` reads)."""
    order, nbr_g, nnb_g = elimination_order(gstart, adj)
    G = order.size
    step_of = np.empty(G, dtype=np.int64)
    for s in range(G):
        step_of[order[s]] = s
    nbr = np.empty((G, G), dtype=np.int64)
    nnb = np.empty(G, dtype=np.int64)
    for s in range(G):
        g = order[s]
        nnb[s] = nnb_g[g]
        for a in range(nnb_g[g]):
            nbr[s, a] = step_of[nbr_g[g, a]]
    return order, step_of, nbr, nnb


@jit
def grouped_cholesky_solve(B, b, gs, nbr, nnb, min_spread):
    """x with B x = b for the SPD B (dense, overwritten by its factor) whose rows come group by
    group in elimination order (:func:`elimination_steps`; the joint projection's ``grouped_order``,
    box-qp's ``island_groups``: group s at gs[s]:gs[s + 1], later groups it shares a body with
    nbr[s, :nnb[s]]): a block Cholesky whose trailing update touches only a
    group's neighbours, so a tree of joints factors without fill and the work grows with the
    joints, not with their cube (as Baraff's linear-time factorisation of tree-structured
    constraint matrices, SIGGRAPH 1996). Only B's lower blocks between neighbours are read. Returns
    (ok, x): ok False when a pivot is not positive, the pivots (diagonal of the factor) spread
    beyond ``min_spread`` (the joint projection's 1e-6: cond < ~1e12 fails; box-qp's 0: positive
    pivots, what LAPACK's potrf asks) or x is not finite."""
    n = b.size
    G = gs.size - 1
    dmin, dmax = np.inf, 0.0
    for s in range(G):
        g0, g1 = gs[s], gs[s + 1]
        if not chol_factor_block(B, B, g0, g1):        # the pivot block, in place
            return False, np.zeros(n)
        for i in range(g0, g1):
            dmin, dmax = min(dmin, B[i, i]), max(dmax, B[i, i])
        for a in range(nnb[s]):                # L[Nb, R] = B[Nb, R] L_RR^-T
            h = nbr[s, a]
            for i in range(gs[h], gs[h + 1]):
                for j in range(g0, g1):
                    v = B[i, j]
                    for t in range(g0, j):
                        v -= B[i, t] * B[j, t]
                    B[i, j] = v / B[j, j]
        for a in range(nnb[s]):                # B[Nb, Nb] -= L[Nb, R] L[Nb, R]' (lower blocks)
            h = nbr[s, a]
            for c in range(nnb[s]):
                k = nbr[s, c]
                if k > h:
                    continue
                for i in range(gs[h], gs[h + 1]):
                    for j in range(gs[k], min(gs[k + 1], i + 1)):
                        v = 0.0
                        for t in range(g0, g1):
                            v += B[i, t] * B[j, t]
                        B[i, j] -= v
    if not dmin > min_spread * dmax:
        return False, np.zeros(n)
    x = b.copy()
    for s in range(G):                         # L y = b
        g0, g1 = gs[s], gs[s + 1]
        lower_solve_block(B, g0, g1, x, x)
        for a in range(nnb[s]):
            h = nbr[s, a]
            for i in range(gs[h], gs[h + 1]):
                v = 0.0
                for t in range(g0, g1):
                    v += B[i, t] * x[t]
                x[i] -= v
    for s in range(G - 1, -1, -1):             # L' x = y
        g0, g1 = gs[s], gs[s + 1]
        for a in range(nnb[s]):
            h = nbr[s, a]
            for i in range(gs[h], gs[h + 1]):
                for j in range(g0, g1):
                    x[j] -= B[i, j] * x[i]
        upper_solve_block(B, g0, g1, x, x)
    for i in range(n):
        if not np.isfinite(x[i]):
            return False, x
    return True, x
