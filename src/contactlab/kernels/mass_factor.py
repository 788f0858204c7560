"""The block Cholesky factor of a mass matrix M (compiled; the no-slip and viscous reductions,
drumwright Sec. IV and VI): the diagonal blocks of M are found from its nonzeros (a
ConstraintSystem's M splits per body, a dense M is one block) and each is factored, so M^-1 b is
O(sum of squared block sizes) (:func:`mass_solve`) and b's zero blocks are skipped;
:func:`mass_lower_solve` / :func:`mass_upper_solve` apply L^-1 and L^-T (the M-metric of
:func:`~contactlab.kernels.metric_chain.metric_chain_rows`). Kernels never raise: a failed factor
is a status.

A kinematic tree's joint-space mass matrix H has the tree's sparsity (H_kl = 0 unless k and l lie on
one path to the root), which the block factor does not see (a floating base couples every
coordinate: one dense block). :func:`tree_factor` is Featherstone's L'L factorisation (*Rigid Body
Dynamics Algorithms*, 2008, sec. 6.5, Table 6.3), H = L' L with L lower triangular and L_ki nonzero
only where i is k or one of its ancestors: no fill-in, and :func:`tree_transposed_solve` (L^-T) /
:func:`tree_solve` (L^-1, Table 6.4) touch only those entries; a vector supported on one path to the
root (a foot's contact row: the base and that leg) stays on it under L^-T.
"""
import numpy as np

from ._jit import jit, jit_inline
from .dense import chol_factor_block, chol_solve_block, lower_solve_block, upper_solve_block


@jit
def _factor_blocks(M, L, starts, reach):
    """The tail of :func:`mass_factor`: the diagonal blocks from ``reach`` (reach[i]: the largest
    index a nonzero of row or column i reaches above the diagonal) into starts[:nb + 1], L zeroed
    and each block's Cholesky factor written; nb, or -1 at a pivot that is not positive."""
    m = M.shape[0]
    nb = 0
    starts[0] = 0
    cur = -1
    for i in range(m):
        if reach[i] > cur:
            cur = reach[i]
        if cur == i:
            nb += 1
            starts[nb] = i + 1
    for r in range(m):
        for c in range(m):
            L[r, c] = 0.0
    for b in range(nb):
        if not chol_factor_block(M, L, starts[b], starts[b + 1]):
            return -1
    return nb


@jit
def mass_factor(M, L, starts):
    """Block Cholesky factor of the SPD matrix M (m, m).

    The diagonal blocks are the smallest contiguous ones with no nonzero outside them (found from
    M's nonzeros in O(m^2)); starts[:nb + 1] receives their boundaries and L (m, m, zeroed outside
    the blocks) the lower Cholesky factor of each block, so L L' = M exactly as one dense factor
    would give (the factor of a block-diagonal matrix is block diagonal). Returns nb, or -1 when a
    pivot is not positive (M not positive definite, or not finite)."""
    m = M.shape[0]
    reach = np.empty(m, dtype=np.int64)
    for i in range(m):
        reach[i] = i
    for r in range(m):
        for c in range(m):
            _reach_entry(M, r, c, reach)
    return _factor_blocks(M, L, starts, reach)


@jit_inline
def _reach_entry(M, r, c, reach):
    """A nonzero M[r, c] extends the block of min(r, c) to max(r, c) (:func:`mass_factor`'s reach)."""
    if M[r, c] != 0.0:
        lo = min(r, c)
        hi = max(r, c)
        if hi > reach[lo]:
            reach[lo] = hi


@jit
def _mass_factor_stored(M, Mp, Mi, tc, nt, L, starts):
    """:func:`mass_factor` of the dense M whose nonzeros can only lie on the stored entries of a CSR
    pattern (indptr Mp, indices Mi) and on the block tc[:nt] x tc[:nt] (nt = 0: none; the viscous
    model's drag columns): the same blocks (the nonzero values found on those entries only, instead
    of a scan of all m^2), the same factor bit for bit."""
    m = M.shape[0]
    reach = np.empty(m, dtype=np.int64)
    for i in range(m):
        reach[i] = i
    for r in range(m):
        for p in range(Mp[r], Mp[r + 1]):
            _reach_entry(M, r, Mi[p], reach)
    for a_ in range(nt):
        for b_ in range(nt):
            _reach_entry(M, tc[a_], tc[b_], reach)
    return _factor_blocks(M, L, starts, reach)


@jit_inline
def _zero_block(b, x, s0, s1):
    """Whether b[s0:s1] is all zero, then x[s0:s1] = 0 (a block solve of zeros is zeros)."""
    for i in range(s0, s1):
        if b[i] != 0.0:
            return False
    for i in range(s0, s1):
        x[i] = 0.0
    return True


@jit
def mass_solve(L, starts, nb, b, x):
    """x = M^-1 b with the block factor of :func:`mass_factor` (x may be b); zero blocks of b stay zero."""
    for blk in range(nb):
        s0 = starts[blk]
        s1 = starts[blk + 1]
        if _zero_block(b, x, s0, s1):
            continue
        chol_solve_block(L, s0, s1, b, x)


@jit
def mass_solve_rows(L, starts, nb, B, X):
    """X[i] = M^-1 B[i] for every row of B (the rows of (M^-1 B')')."""
    for i in range(B.shape[0]):
        mass_solve(L, starts, nb, B[i], X[i])


@jit
def mass_solve_rows_sparse(L, starts, nb, B, X):
    """X[i] = M^-1 B[i] for every row of B, as :func:`mass_solve_rows` (the same block solves,
    bit for bit) but reaching the blocks from each row's nonzeros: a block with no nonzero of the
    row is zero in X without being scanned again, and the block solve is written out here (no
    call and no row view per block; a joint or tangent row touches 2 of the ~52 blocks' bodies)."""
    r, m = B.shape
    for i in range(r):
        for c in range(m):
            X[i, c] = 0.0
        b = 0
        c = 0
        while c < m:
            if B[i, c] == 0.0:
                c += 1
                continue
            while starts[b + 1] <= c:
                b += 1
            s0 = starts[b]
            s1 = starts[b + 1]
            for t in range(s0, s1):         # chol_solve_block(L, s0, s1, B[i], X[i])
                s = B[i, t]
                for j in range(s0, t):
                    s -= L[t, j] * X[i, j]
                X[i, t] = s / L[t, t]
            for t in range(s1 - 1, s0 - 1, -1):
                s = X[i, t]
                for j in range(t + 1, s1):
                    s -= L[j, t] * X[i, j]
                X[i, t] = s / L[t, t]
            c = s1


@jit
def mass_matvec(M, starts, nb, x, y):
    """y = M x for the block-diagonal M of :func:`mass_factor` (only the diagonal blocks are read)."""
    for blk in range(nb):
        s0 = starts[blk]
        s1 = starts[blk + 1]
        for i in range(s0, s1):
            s = 0.0
            for t in range(s0, s1):
                s += M[i, t] * x[t]
            y[i] = s


@jit
def mass_lower_solve(L, starts, nb, b, x):
    """x = L_M^-1 b with the block factor of :func:`mass_factor` (x may be b); zero blocks of b stay zero."""
    for blk in range(nb):
        s0 = starts[blk]
        s1 = starts[blk + 1]
        if _zero_block(b, x, s0, s1):
            continue
        lower_solve_block(L, s0, s1, b, x)


@jit
def mass_upper_solve(L, starts, nb, b, x):
    """x = L_M^-T b with the block factor of :func:`mass_factor` (x may be b)."""
    for blk in range(nb):
        upper_solve_block(L, starts[blk], starts[blk + 1], b, x)


@jit
def coordinate_parents(order, qstart, qcount, anc_ptr, anc_idx, nq):
    """lam (nq,): each joint coordinate's parent in the tree of coordinates (Featherstone's lambda,
    RBDA sec. 6.5), -1 at a root: a body's coordinates form a chain (a floating root's six, in
    order), whose first one hangs from the last coordinate of the nearest ancestor body that has
    coordinates (``anc_idx[anc_ptr[b]:anc_ptr[b + 1]]``: the coordinates that move b, increasing,
    its own last; :class:`~contactlab.mechanics.tree.TreeTopology`)."""
    lam = np.empty(nq, dtype=np.int64)
    for b in order:
        c = qcount[b]
        if c == 0:
            continue
        s = qstart[b]
        first = anc_ptr[b + 1] - c          # the position of b's first own coordinate in its list
        lam[s] = anc_idx[first - 1] if first > anc_ptr[b] else -1
        for i in range(1, c):
            lam[s + i] = s + i - 1
    return lam


@jit
def tree_factor(H, lam, L):
    """H = L' L (Featherstone Table 6.3, module docstring): L (n, n) receives the factor (lower
    triangular; L_ki, i < k, nonzero only for i an ancestor of k in ``lam``, every other entry 0).
    H's entries off the ancestor pairs must be zero (a tree's joint-space mass matrix: CRBA writes
    no other). Returns False at a pivot that is not positive (H not positive definite, or not
    finite)."""
    n = H.shape[0]
    for i in range(n):
        for j in range(n):
            L[i, j] = H[i, j] if j <= i else 0.0
    for k in range(n - 1, -1, -1):
        a = L[k, k]
        if not a > 0.0:
            return False
        a = np.sqrt(a)
        L[k, k] = a
        i = lam[k]
        while i >= 0:
            L[k, i] /= a
            i = lam[i]
        i = lam[k]
        while i >= 0:
            lki = L[k, i]
            j = i
            while j >= 0:
                L[i, j] -= lki * L[k, j]
                j = lam[j]
            i = lam[i]
    return True


@jit
def tree_transposed_solve(L, lam, X):
    """X <- L^-T X for every column of X (n, c), the factor of :func:`tree_factor` (Table 6.4's
    first half, the columns side by side): for k from the leaves to the roots, x_k /= L_kk, then
    x_i -= L_ki x_k on k's ancestors; a column whose x_k is zero skips k (nothing to subtract), so a
    column supported on one path to the root costs that path's entries only."""
    n, c = X.shape
    for k in range(n - 1, -1, -1):
        dk = L[k, k]
        for e in range(c):
            xk = X[k, e]
            if xk == 0.0:
                continue
            xk /= dk
            X[k, e] = xk
            i = lam[k]
            while i >= 0:
                X[i, e] -= L[k, i] * xk
                i = lam[i]


@jit
def tree_solve(L, lam, x):
    """x <- L^-1 x (Table 6.4's second half) with the factor of :func:`tree_factor`: for k from the
    roots to the leaves, x_k = (x_k - sum over k's ancestors i of L_ki x_i) / L_kk."""
    for k in range(x.shape[0]):
        s = x[k]
        j = lam[k]
        while j >= 0:
            s -= L[k, j] * x[j]
            j = lam[j]
        x[k] = s / L[k, k]
