"""The block Cholesky factor of a mass matrix M (compiled; the no-slip and viscous reductions,
drumwright Sec. IV and VI): the diagonal blocks of M are found from its nonzeros (a
ConstraintSystem's M splits per body, a dense M is one block) and each is factored, so M^-1 b is
O(sum of squared block sizes) (:func:`mass_solve`) and b's zero blocks are skipped;
:func:`mass_lower_solve` / :func:`mass_upper_solve` apply L^-1 and L^-T (the M-metric of
:func:`~contactlab.kernels.metric_chain.metric_chain_rows`). Kernels never raise: a failed factor
is a status.
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
