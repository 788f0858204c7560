"""Compiled kernels of the no-slip reduction (drumwright Sec. VI, Alg. 2 FIND-INDICES, eq. 45-57).

The chain of one step, without LAPACK or Python glue (:func:`noslip_chain` runs it in one call):

* :func:`mass_factor`: the diagonal blocks of M (found from its nonzeros: a ConstraintSystem's M
  splits per body, a dense M is one block) and the Cholesky factor of each; M^-1 b is then
  O(sum of squared block sizes) (:func:`mass_solve`), and b's zero blocks are skipped.
* :func:`find_indices_kernel`: Alg. 2's greedy selection with the bordered Cholesky update of
  G M^-1 G' (products over the nonzeros of the kept rows only, forward substitution from the first
  nonzero: the same sums, zero terms skipped).
* :func:`nullspace_kernel`: an orthonormal basis Z of null(G) by Householder reflections of G'
  (each reflector supported on the nonzeros of its column, pivot row the largest entry): G' = Q R
  with R nonzero on k pivot rows only, so the images Q e_r of the d = m - k other unit vectors are
  an orthonormal basis of null(G). O(sum of reflector supports x columns) instead of O(m k^2).
* :func:`reduce_kernel`: x_p (G x_p = r, M-minimum-norm), U Z, Z' M Z (eq. 57), its Cholesky factor,
  Z' p, the offset U x_p + bias and q of the factored LCP.
* :func:`recover_kernel`: from the solution z, v+ = x_p + Z u, the kept rows' multipliers
  lam = (G M^-1 G')^-1 G M^-1 (M v+ - p - U' z) scattered to (joint, S, T), and U v+.

The no-slip model itself runs :func:`metric_chain_rows` (through :func:`noslip_metric_chain` for dense
rows, :func:`noslip_system_chain` for a ConstraintSystem): FIND-INDICES and the null space in one Householder QR of L_M^-1 G' in Alg. 2's
order (:func:`householder_select`), the basis Z = L_M^-T Q[:, free] with Z' M Z = I (never formed),
and :func:`recover_metric_kernel`; so does the viscous model (drumwright Sec. IV: the same reduction
without tangent rows, M + h C in place of M; :func:`viscous_system_chain`, :func:`viscous_forces`,
:func:`viscous_recover_step` at the end of this module). The chain above (orthonormal Z) is the
reference the tests compare with (models/find_indices.py ``reduce_step``).

The candidate rows travel as CSR (:func:`metric_chain_rows`; :func:`candidate_rows_csr` from a
system's rows, :func:`candidate_rows_dense` from dense ones): each row's L_M^-1 g is solved from its
stored entries, and no dense copy of J, S or T is formed.

Also :func:`csr_rows_into` (a system's sparse rows into the dense arrays) and
:func:`symmetric_finite` (build_noslip's input check). Kernels never raise: they return status
codes that the Python layer (models/find_indices.py, models/noslip.py) turns into ModelErrors.
"""
import numpy as np

from ._jit import jit, jit_inline
from .dense import add_rmatvec, chol_factor_block, chol_solve, chol_solve_block, lower_solve_block, matvec, upper_solve_block


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
def _chunk(m):
    """Rows per bit of the nonzero masks: m entries in at most 64 contiguous chunks."""
    return max(1, (m + 63) // 64)


@jit
def row_mask(x, cs):
    """uint64 mask of the chunks (cs entries each) where the vector x has a nonzero."""
    mask = np.uint64(0)
    for c in range(x.shape[0]):
        if x[c] != 0.0:
            mask |= np.uint64(1) << np.uint64(c // cs)
    return mask


#: a row whose Schur complement d passes FIND-INDICES' test by less than this (relative to its
#: g M^-1 g') is measured again by a second projection (:func:`_second_projection`): d = gg - |col|^2
#: cancels, and rounding in col grows with the conditioning of the rows kept before, so an exactly
#: dependent row could pass (a Barrett grasp under no-slip kept 60 rows of rank 59 on 60 coordinates)
RECHECK = 1e-4


@jit
def _second_projection(G, W, i, L, kept, k, col):
    """Row i's Schur complement measured again (classical Gram-Schmidt's second pass, in the M^-1
    metric): with y = L^-T col, the residual r = g - y'G_k and M^-1 r' = W_i - y'W_k (no mass solve),
    col2 = L^-1 G_k M^-1 r', d = r M^-1 r' - |col2|^2; col becomes col + col2 (the factor row of
    the refined projection). Returns d."""
    m = G.shape[1]
    y = np.empty(k)
    for a in range(k - 1, -1, -1):        # L' y = col
        s = col[a]
        for b in range(a + 1, k):
            s -= L[b, a] * y[b]
        y[a] = s / L[a, a]
    r = G[i].copy()
    w = W[i].copy()
    for a in range(k):
        ya = y[a]
        if ya != 0.0:
            ra = kept[a]
            for c in range(m):
                r[c] -= ya * G[ra, c]
                w[c] -= ya * W[ra, c]
    rr = 0.0
    for c in range(m):
        rr += r[c] * w[c]
    col2 = np.empty(k)
    ll = 0.0
    for a in range(k):                    # L col2 = G_k M^-1 r'
        ra = kept[a]
        s = 0.0
        for c in range(m):
            s += G[ra, c] * w[c]
        for b in range(a):
            s -= L[a, b] * col2[b]
        col2[a] = s / L[a, a]
        ll += col2[a] * col2[a]
    for a in range(k):
        col[a] += col2[a]
    return rr - ll


@jit
def find_indices_kernel(G, W, tol, L, kept, col, nzptr, nzidx):
    """drumwright Alg. 2: greedy independent-row selection with a bordered Cholesky update.

    G (r, m) candidate rows in trial order; W (r, m) rows of G M^-1; tol relative threshold on the
    Schur complement d = g M^-1 g' - |l|^2 (a row is kept when d > tol g M^-1 g'). L (m, m) work
    array receives the factor of the kept rows' Gram matrix G_k M^-1 G_k'; kept (m,) their
    indices; col (m,) work; nzptr (m + 1,), nzidx (m * m,) work: the nonzero columns of each kept
    row. Only nonzero terms are summed, which gives the dense products' values: G_kept M^-1 g' over
    the kept rows' nonzeros, skipped when their nonzero chunks (``row_mask``) miss those of M^-1 g';
    the forward substitution from the first nonzero of the new column and of each factor row (a
    profile). Returns the number kept."""
    r, m = G.shape
    cs = _chunk(m)
    gmask = np.empty(m, dtype=np.uint64)    # nonzero chunks of each kept row
    first = np.empty(m, dtype=np.int64)     # first nonzero column of each row of L
    k = 0
    nzptr[0] = 0
    for i in range(r):
        if k >= m:
            break
        gg = 0.0
        wmask = np.uint64(0)
        for c in range(m):
            w = W[i, c]
            if w != 0.0:
                gg += G[i, c] * w
                wmask |= np.uint64(1) << np.uint64(c // cs)
        if not gg > 0.0:  # a zero (or non-finite) row is never independent
            continue
        # col = L^-1 (G_kept M^-1 g')  by forward substitution on the fly; zero up to the first kept
        # row whose nonzeros meet those of M^-1 g'
        a0 = k
        for a in range(k):
            if gmask[a] & wmask:
                a0 = a
                break
        for a in range(a0):
            col[a] = 0.0
        ll = 0.0
        fnz = k
        for a in range(a0, k):
            s = 0.0
            ra = kept[a]
            if gmask[a] & wmask:
                for p in range(nzptr[a], nzptr[a + 1]):
                    c = nzidx[p]
                    s += G[ra, c] * W[i, c]
            for b in range(max(fnz, first[a]), a):
                s -= L[a, b] * col[b]
            col[a] = s / L[a, a]
            if fnz == k and col[a] != 0.0:
                fnz = a
            ll += col[a] * col[a]
        d = gg - ll
        if tol * gg < d <= RECHECK * gg and k > 0:
            d = _second_projection(G, W, i, L, kept, k, col)
            fnz = k                         # the refined row's profile: its first nonzero
            for a in range(k):
                if col[a] != 0.0:
                    fnz = a
                    break
        if d > tol * gg:
            for b in range(k):
                L[k, b] = col[b]
            L[k, k] = np.sqrt(d)
            first[k] = fnz
            kept[k] = i
            p = nzptr[k]
            mask = np.uint64(0)
            for c in range(m):
                if G[i, c] != 0.0:
                    nzidx[p] = c
                    p += 1
                    mask |= np.uint64(1) << np.uint64(c // cs)
            nzptr[k + 1] = p
            gmask[k] = mask
            k += 1
    return k


@jit
def _reflector_support(x_row, free, cs, vidx, vval, p0):
    """A Householder reflector's support on the free rows: the nonzeros of ``x_row`` there written
    from p0 (indices vidx, values vval). Returns (end p1, their sum of squares, the position of the
    largest |x| (the pivot; -1 when none), the mask of the chunks (width cs) they touch)."""
    p1 = p0
    sig2 = 0.0
    piv = -1
    amax = 0.0
    mask = np.uint64(0)
    for r in range(x_row.shape[0]):
        x = x_row[r]
        if free[r] and x != 0.0:
            vidx[p1] = r
            vval[p1] = x
            p1 += 1
            sig2 += x * x
            mask |= np.uint64(1) << np.uint64(r // cs)
            if abs(x) > amax:
                amax = abs(x)
                piv = p1 - 1
    return p1, sig2, piv, mask


@jit
def householder_factor(A, vval, beta, vptr, vidx, free, vmask):
    """The factor phase of :func:`nullspace_kernel` (its docstring): the k reflectors of G' = A'
    (A (k, m) destroyed), taken last row first, stored over their supports (vval, vidx at
    vptr[t]:vptr[t + 1], beta[t], the nonzero chunks vmask[t]); free (m,) marks the d = m - k rows
    never pivoted. Returns 0, or 1 when a column vanished (rows dependent)."""
    k, m = A.shape
    cs = _chunk(m)
    amask = np.empty(k, dtype=np.uint64)
    for j in range(k):
        amask[j] = row_mask(A[j], cs)
    for r in range(m):
        free[r] = True
    vptr[0] = 0
    for t in range(k):
        j = k - 1 - t           # the column reflected at step t; columns j-1 .. 0 remain
        p0 = vptr[t]
        p1, sig2, piv, mask = _reflector_support(A[j], free, cs, vidx, vval, p0)
        vptr[t + 1] = p1
        vmask[t] = mask
        if piv < 0:
            return 1
        sigma = np.sqrt(sig2)
        xp = vval[piv]
        # v = x - alpha e_piv, alpha = -sign(x_p) sigma; H = I - beta v v', beta = 2 / v'v = 1 / (sigma (sigma + |x_p|))
        vval[piv] = xp + sigma if xp > 0.0 else xp - sigma
        bt = 1.0 / (sigma * (sigma + abs(xp)))
        beta[t] = bt
        free[vidx[piv]] = False
        # apply H_t to the remaining columns that have a nonzero on its support
        for c in range(j):
            if not (amask[c] & mask):
                continue
            s = 0.0
            for q in range(p0, p1):
                s += vval[q] * A[c, vidx[q]]
            if s != 0.0:
                s *= bt
                for q in range(p0, p1):
                    A[c, vidx[q]] -= s * vval[q]
                amask[c] |= mask
    return 0


@jit
def nullspace_kernel(A, Z, vval, beta, vptr, vidx, free):
    """Orthonormal basis Z (m, m - k) of null(G) for G = A (k, m) with independent rows (A is destroyed).

    Householder QR of G' with row pivoting, the columns of G' (rows of A) taken last to first: any
    order spans the same space, and joints are listed parent before child, so children are
    eliminated first and each reflector stays on the bodies between its joint and the leaves
    already done (the quadruped's 68 kept rows: 18k instead of 48k multiply-adds). Reflector t maps
    its column (as the earlier reflectors left it) restricted to the rows not yet pivoted onto its
    largest entry's row; it is supported on that column's nonzeros there, so it is stored and
    applied only over them, and only to the remaining columns whose nonzero chunks (``row_mask``)
    meet them (the others are unchanged). Then G' = H_0 ... H_{k-1} R with R nonzero on the k
    pivot rows only, and the columns Q e_f (f the d unpivoted rows, ascending) of the orthogonal
    Q = H_0 ... H_{k-1} are orthonormal and orthogonal to range(G'): null(G).
    Work: vval, vidx (k * m,) the reflectors' entries and rows (reflector t at vptr[t]:vptr[t + 1]),
    beta (k,), vptr (k + 1,), free (m,) bool.
    Returns 0, or 1 when a column vanished (rows dependent: not FIND-INDICES' output)."""
    k, m = A.shape
    cs = _chunk(m)
    vmask = np.empty(k, dtype=np.uint64)
    if householder_factor(A, vval, beta, vptr, vidx, free, vmask):
        return 1
    # Z[:, col] = H_0 ... H_{k-1} e_f (in a contiguous work vector)
    col = 0
    z = np.empty(m)
    for f in range(m):
        if not free[f]:
            continue
        for r in range(m):
            z[r] = 0.0
        z[f] = 1.0
        zmask = np.uint64(1) << np.uint64(f // cs)
        for t in range(k - 1, -1, -1):
            if not (zmask & vmask[t]):
                continue
            s = 0.0
            for q in range(vptr[t], vptr[t + 1]):
                s += vval[q] * z[vidx[q]]
            if s != 0.0:
                s *= beta[t]
                for q in range(vptr[t], vptr[t + 1]):
                    z[vidx[q]] -= s * vval[q]
                zmask |= vmask[t]
        for r in range(m):
            Z[r, col] = z[r]
        col += 1
    return 0


@jit
def _all_finite(x):
    for v in x.ravel():
        if not np.isfinite(v):
            return False
    return True


@jit
def noslip_chain(M, Lm, starts, nb, J, ST, rhs_j, tol, v, f, h, U, bias):
    """One no-slip step's reduction (drumwright Sec. VI) in one call, from the equality rows J (j, m)
    (J v+ = rhs_j) and the contacts' tangent rows ST (2 n, m: S_0, T_0, S_1, ...): the candidate
    rows G = [J; ST] in Alg. 2's order, the momentum p = M v + h f, W = G M^-1 (block factor of
    :func:`mass_factor`), FIND-INDICES (:func:`find_indices_kernel`), the null-space basis of the
    kept rows (:func:`nullspace_kernel`) and the factored LCP of eq. 57 (:func:`reduce_kernel`).
    Returns (status, kept, order, p, Lg, Gk, Z, x_p, UZ, Mr, Lr, Zp, f_star, offset, q): ``order``
    (k, 2) the (block, row) of each kept row (0: J, 1: S, 2: T); status 0, 1 (kept rows dependent),
    2 (Z' M Z not SPD), 3 (an input is not finite) or 4 (nb < 0: M's factor failed, nothing done)."""
    m = M.shape[0]
    n = U.shape[0]
    nj = J.shape[0]
    r = nj + ST.shape[0]
    p = np.empty(m)
    ok = nb >= 0 and _all_finite(v) and _all_finite(f) and _all_finite(J) and _all_finite(ST) \
        and _all_finite(rhs_j) and _all_finite(U) and _all_finite(bias)
    if ok:
        mass_matvec(M, starts, nb, v, p)
        for t in range(m):
            p[t] += h * f[t]
    G = np.empty((r, m))
    rhs = np.zeros(r)
    for i in range(nj):
        G[i] = J[i]
        rhs[i] = rhs_j[i]
    for i in range(ST.shape[0]):
        G[nj + i] = ST[i]
    W = np.empty((r, m))
    Lbuf = np.empty((m, m))           # find_indices_kernel writes every entry it reads
    kbuf = np.empty(m, dtype=np.int64)
    k = 0
    if ok:
        mass_solve_rows_sparse(Lm, starts, nb, G, W)
        k = find_indices_kernel(G, W, tol, Lbuf, kbuf, np.empty(m), np.empty(m + 1, dtype=np.int64),
                                np.empty(m * m, dtype=np.int64))
    kept = kbuf[:k].copy()
    order = np.empty((k, 2), dtype=np.int64)
    Lg = np.empty((k, k))
    Gk = np.empty((k, m))
    rk = np.empty(k)
    for a in range(k):
        c = kept[a]
        if c < nj:
            order[a, 0] = 0
            order[a, 1] = c
        else:
            order[a, 0] = 1 + (c - nj) % 2
            order[a, 1] = (c - nj) // 2
        for b in range(k):
            Lg[a, b] = Lbuf[a, b]
        Gk[a] = G[c]
        rk[a] = rhs[c]
    d = m - k
    Z = np.empty((m, d))
    x_p, UZ, Mr, Lr = np.zeros(m), np.zeros((n, d)), np.zeros((d, d)), np.zeros((d, d))
    Zp, f_star, offset, q = np.zeros(d), np.zeros(d), np.zeros(n), np.zeros(n)
    status = 0 if ok else (3 if nb >= 0 else 4)
    if ok and nullspace_kernel(Gk.copy(), Z, np.empty(k * m), np.empty(k), np.empty(k + 1, dtype=np.int64),
                               np.empty(k * m, dtype=np.int64), np.empty(m, dtype=np.bool_)):
        status = 1
    elif ok and not reduce_kernel(M, Lm, starts, nb, Gk, Lg, rk, Z, p, U, bias, x_p, UZ, Mr, Lr, Zp, f_star,
                                  offset, q, np.empty(m), np.empty(k)):
        status = 2
    return status, kept, order, p, Lg, Gk, Z, x_p, UZ, Mr, Lr, Zp, f_star, offset, q


@jit
def noslip_system_chain(m, Mp, Mi, Mx, Jp, Ji, Jx, Lp, Li, Lx, Np, Ni, Nx, Sp, Si, Sx, Tp, Ti, Tx, touch, v, f,
                        rhs_j, l_bias, n_bias, tol, h):
    """A ConstraintSystem's no-slip step without motors (models/noslip.py ``build``) in one call: the
    CSR rows (indptr, indices, data) of M, L (limits), N scattered into dense arrays as
    :func:`csr_rows_into` does (U = [L; N]), bias = [l_bias; n_bias], M's block factor
    (:func:`mass_factor`'s, its blocks found from M's stored entries: :func:`_mass_factor_stored`)
    and :func:`metric_chain_rows` on the candidate rows of J, S, T taken from their CSR rows
    (:func:`candidate_rows_csr`: the touching contacts' S_i, T_i interleaved, Alg. 2's order; empty
    rows for the others): the numbers of the dense arrays and :func:`noslip_metric_chain`, with no
    dense J, S or T formed. Returns (nb, M, Lm, starts, U, chain): nb = -1 when M is not positive
    definite (``chain``'s status is then 4)."""
    nj = Jp.shape[0] - 1
    nl = Lp.shape[0] - 1
    nc = Np.shape[0] - 1
    M = np.zeros((m, m))
    U = np.zeros((nl + nc, m))
    keep = np.zeros(0, dtype=np.bool_)
    csr_rows_into(Mp, Mi, Mx, M, 0, 1, keep, False)
    csr_rows_into(Lp, Li, Lx, U, 0, 1, keep, False)
    csr_rows_into(Np, Ni, Nx, U, nl, 1, keep, False)
    gp, gi, gx = candidate_rows_csr(Jp, Ji, Jx, Sp, Si, Sx, Tp, Ti, Tx, touch)
    bias = np.empty(nl + nc)
    for i in range(nl):
        bias[i] = l_bias[i]
    for i in range(nc):
        bias[nl + i] = n_bias[i]
    Lm = np.empty((m, m))
    starts = np.empty(m + 1, dtype=np.int64)
    nb = _mass_factor_stored(M, Mp, Mi, np.empty(0, dtype=np.int64), 0, Lm, starts)
    return nb, M, Lm, starts, U, metric_chain_rows(M, Lm, starts, nb, gp, gi, gx, nj, rhs_j, tol, v, f, h, U, bias)


@jit
def csr_rows_into(indptr, indices, data, out, r0, step, keep, use_keep):
    """out[r0 + step * i, indices] = data of CSR row i, for the rows i with keep[i] (all rows when
    not ``use_keep``): a system's sparse rows scattered into the model's dense arrays."""
    for i in range(indptr.shape[0] - 1):
        if use_keep and not keep[i]:
            continue
        row = r0 + step * i
        for p in range(indptr[i], indptr[i + 1]):
            out[row, indices[p]] += data[p]


@jit
def chol_factor(A, L):
    """Dense lower Cholesky factor L of the SPD A (d, d); False if a pivot is not positive."""
    d = A.shape[0]
    for i in range(d):
        for j in range(d):
            L[i, j] = 0.0
    return chol_factor_block(A, L, 0, d)


@jit
def reduce_kernel(M, Lm, starts, nb, Gk, Lg, r, Z, p, U, bias, x_p, UZ, Mr, Lr, Zp, f_star, offset, q, wm, wk):
    """drumwright eq. 56-57 in the coordinates x = x_p + Z u of null(G) (Z from :func:`nullspace_kernel`).

    x_p = M^-1 Gk' (Gk M^-1 Gk')^-1 r (zero when r = 0; Lg the FIND-INDICES factor), U Z, the reduced
    mass Z' M Z (symmetrised; M block diagonal by :func:`mass_factor`'s blocks), its Cholesky factor
    Lr, Z' p, f_star = (Z' M Z)^-1 Z' p, offset = U x_p + bias and q = U Z f_star + offset.
    Work: wm (m,), wk (k,). Returns False when Z' M Z is not positive definite."""
    m = M.shape[0]
    k = Gk.shape[0]
    d = Z.shape[1]
    n = U.shape[0]
    anyr = False
    for i in range(k):
        if r[i] != 0.0:
            anyr = True
    for t in range(m):
        x_p[t] = 0.0
    if anyr:
        chol_solve(Lg, k, r, wk)
        for i in range(k):
            c = wk[i]
            for t in range(m):
                x_p[t] += Gk[i, t] * c
        mass_solve(Lm, starts, nb, x_p, x_p)
    for i in range(n):
        s = bias[i]
        for t in range(m):
            s += U[i, t] * x_p[t]
        offset[i] = s
        for a in range(d):
            UZ[i, a] = 0.0
        for t in range(m):
            u = U[i, t]
            if u != 0.0:
                for a in range(d):
                    UZ[i, a] += u * Z[t, a]
    za = np.empty(m)
    for a in range(d):
        s = 0.0
        for t in range(m):
            s += Z[t, a] * p[t]
            za[t] = Z[t, a]
        Zp[a] = s
        # column a of M Z, then column a of Z' M Z
        mass_matvec(M, starts, nb, za, wm)
        for b in range(d):
            s = 0.0
            for t in range(m):
                s += Z[t, b] * wm[t]
            Mr[b, a] = s
    for a in range(d):
        for b in range(a):
            s = 0.5 * (Mr[a, b] + Mr[b, a])
            Mr[a, b] = s
            Mr[b, a] = s
    if not chol_factor(Mr, Lr):
        return False
    chol_solve(Lr, d, Zp, f_star)
    for i in range(n):
        s = offset[i]
        for a in range(d):
            s += UZ[i, a] * f_star[a]
        q[i] = s
    return True


@jit
def scatter_impulses(order, lam, joint, ts, tt):
    """Kept-row multipliers to the full (joint, S, T) vectors: lam[a] goes to row order[a, 1] of
    block order[a, 0] (0 joint, 1 S, 2 T); the others are left as they are (zero: dropped rows)."""
    for a in range(lam.shape[0]):
        b = order[a, 0]
        r = order[a, 1]
        if b == 0:
            joint[r] = lam[a]
        elif b == 1:
            ts[r] = lam[a]
        else:
            tt[r] = lam[a]


@jit
def recover_kernel(M, Lm, starts, nb, Gk, Lg, order, x_p, Z, Nr, Lr, f_star, p, U, z, n_joint, n_contact):
    """The step of eq. 57's solution z (n,) in one pass: u = (Z'MZ)^-1 (Nr' z) + f_star (Nr = U Z,
    Lr the factor of Z'MZ), v = x_p + Z u, res = M v - p - U' z, the kept rows' multipliers
    lam = (Gk M^-1 Gk')^-1 Gk M^-1 res (G' lam = res: Gk the kept rows, Lg their Gram factor),
    scattered to (joint, S, T) (:func:`scatter_impulses`), and U v. Returns (v, lam, joint, ts, tt, Uv)."""
    m = M.shape[0]
    k = Gk.shape[0]
    d = Z.shape[1]
    n = U.shape[0]
    y = np.zeros(d)
    add_rmatvec(Nr, z, 1.0, y)
    u = np.empty(d)
    chol_solve(Lr, d, y, u)
    v = np.empty(m)
    for t in range(m):
        s = x_p[t]
        for a in range(d):
            s += Z[t, a] * (u[a] + f_star[a])
        v[t] = s
    res = np.empty(m)
    mass_matvec(M, starts, nb, v, res)
    for t in range(m):
        res[t] -= p[t]
    add_rmatvec(U, z, -1.0, res)
    lam = np.zeros(k)
    if k:
        wm = np.empty(m)
        mass_solve(Lm, starts, nb, res, wm)
        g = np.empty(k)
        matvec(Gk, wm, g)
        chol_solve(Lg, k, g, lam)
    joint = np.zeros(n_joint)
    ts = np.zeros(n_contact)
    tt = np.zeros(n_contact)
    scatter_impulses(order, lam, joint, ts, tt)
    Uv = np.empty(n)
    matvec(U, v, Uv)
    return v, lam, joint, ts, tt, Uv


@jit
def symmetric_finite(M, rel):
    """True when every entry of the square M is finite and |M_ij - M_ji| <= atol + 1e-5 |M_ji| with
    atol = rel * max(1, max |M|) (numpy's allclose(M, M', atol=atol), as models/noslip.py's
    check_dynamics asks). False otherwise (the caller then runs the numpy test for its message)."""
    m = M.shape[0]
    amax = 1.0
    for i in range(m):
        for j in range(m):
            a = abs(M[i, j])
            if not a < np.inf:
                return False
            if a > amax:
                amax = a
    atol = rel * amax
    for i in range(m):
        for j in range(i):
            if abs(M[i, j] - M[j, i]) > atol + 1e-5 * abs(M[j, i]) or \
                    abs(M[j, i] - M[i, j]) > atol + 1e-5 * abs(M[i, j]):
                return False
    return True


# -- the no-slip reduction in the M^-1 metric: one Householder QR gives null(G) with Z' M Z = I ---------------

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
def apply_reflectors(vval, vidx, vptr, beta, vmask, k, x, transpose):
    """x <- Q' x (``transpose``: H_0 first, then H_1 ... H_{k-1}) or x <- Q x (H_{k-1} first) for
    Q = H_0 ... H_{k-1} of :func:`householder_factor`; a reflector whose support misses x's nonzero
    chunks (tracked as they grow) leaves x as it is and is skipped."""
    m = x.shape[0]
    cs = _chunk(m)
    xmask = row_mask(x, cs)
    for s_ in range(k):
        t = s_ if transpose else k - 1 - s_
        if not (xmask & vmask[t]):
            continue
        p0 = vptr[t]
        p1 = vptr[t + 1]
        s = 0.0
        for q in range(p0, p1):
            s += vval[q] * x[vidx[q]]
        if s != 0.0:
            s *= beta[t]
            for q in range(p0, p1):
                x[vidx[q]] -= s * vval[q]
            xmask |= vmask[t]


@jit
def householder_select(Y, amask, gg, tol, Lg, kept, prow, sgn, vval, beta, vptr, vidx, free, vmask):
    """drumwright Alg. 2 (FIND-INDICES) as a Householder QR with column rejection, in the M^-1 metric.

    Y (r, m): the candidate rows y_s = L_M^-1 g_s (M = L_M L_M'), in Alg. 2's trial order (all of J,
    then S_i, T_i per contact); destroyed. amask (r,): masks of chunks (``row_mask``'s, width
    ``_chunk(m)``) that cover each row's nonzeros (a wider mask only costs dot products that come out
    zero and are skipped); updated. gg (r,): g_s M^-1 g_s' = |y_s|^2. Column s of Y' is
    reflected by the reflectors of the rows kept before it; what remains on the rows not yet pivoted
    has squared norm d_s = the squared distance of g_s from the span of the kept rows in the M^-1
    metric (the Schur complement g M^-1 g' - |l|^2 of FIND-INDICES' bordered Cholesky, computed
    without its cancellation), and the row is kept when d_s > tol gg_s (:func:`find_indices_kernel`'s
    test; a zero row is never kept, at most m rows are). A kept row gets reflector k (stored over its
    support as in :func:`householder_factor`: vval, vidx at vptr[k]:vptr[k + 1], beta[k], nonzero
    chunks vmask[k], pivot row prow[k] taken off ``free``), applied to the later columns whose
    nonzero chunks meet it. Y_k' = Q R with Q = H_0 ... H_{k-1}; the entries R[t, k] (t < k) are read
    on the pivot rows when row k is kept, and Lg = (diag(sign) R)' (k, k) is the Cholesky factor of
    G_k M^-1 G_k' with a positive diagonal (|R[k, k]| = sqrt(d_k)). kept[:k] receives the kept rows'
    indices (ascending); Q[:, free] spans null(G_k) in the L_M^-1 coordinates. Returns k."""
    r, m = Y.shape
    cs = _chunk(m)
    for t in range(m):
        free[t] = True
    k = 0
    vptr[0] = 0
    cl = np.empty(r, dtype=np.int64)      # the columns a reflector meets
    acc = np.empty(r)
    for s in range(r):
        if k >= m:
            break
        if not gg[s] > 0.0:   # a zero (or non-finite) row is never independent
            continue
        p0 = vptr[k]
        p1, sig2, piv, mask = _reflector_support(Y[s], free, cs, vidx, vval, p0)
        if not sig2 > tol * gg[s]:   # dependent on the rows kept before (Alg. 2 lines 7, 14, 19)
            continue
        for t in range(k):
            Lg[k, t] = sgn[t] * Y[s, prow[t]]
        sigma = np.sqrt(sig2)
        xp = vval[piv]
        Lg[k, k] = sigma
        sgn[k] = 1.0 if xp <= 0.0 else -1.0     # R[k, k] = alpha = sigma (x_p <= 0) or -sigma
        vval[piv] = xp + sigma if xp > 0.0 else xp - sigma
        bt = 1.0 / (sigma * (sigma + abs(xp)))
        beta[k] = bt
        prow[k] = vidx[piv]
        free[vidx[piv]] = False
        vptr[k + 1] = p1
        vmask[k] = mask
        kept[k] = s
        # H_k on the later columns that meet its support, all at once: the dots accumulate side by side
        # (one independent sum per column, each in the support's order), then one update pass
        nl = 0
        for c in range(s + 1, r):
            if amask[c] & mask:
                cl[nl] = c
                acc[nl] = 0.0
                nl += 1
        for q in range(p0, p1):
            vq = vval[q]
            iq = vidx[q]
            for j in range(nl):
                acc[j] += vq * Y[cl[j], iq]
        na = 0
        for j in range(nl):
            if acc[j] != 0.0:
                cl[na] = cl[j]
                acc[na] = acc[j] * bt
                amask[cl[j]] |= mask
                na += 1
        for q in range(p0, p1):
            vq = vval[q]
            iq = vidx[q]
            for j in range(na):
                Y[cl[j], iq] -= acc[j] * vq
        k += 1
    return k


@jit
def candidate_rows_dense(J, ST):
    """Alg. 2's candidate rows G = [J; ST] of dense J (j, m) and ST (2 n, m) as CSR (indptr, indices,
    data): each row's nonzeros (NaN and inf included) in ascending column order."""
    nj, m = J.shape
    r = nj + ST.shape[0]
    nnz = 0
    for i in range(r):
        g = J[i] if i < nj else ST[i - nj]
        for c in range(m):
            if g[c] != 0.0:
                nnz += 1
    gp = np.empty(r + 1, dtype=np.int64)
    gi = np.empty(nnz, dtype=np.int64)
    gx = np.empty(nnz)
    q = 0
    gp[0] = 0
    for i in range(r):
        g = J[i] if i < nj else ST[i - nj]
        for c in range(m):
            if g[c] != 0.0:
                gi[q] = c
                gx[q] = g[c]
                q += 1
        gp[i + 1] = q
    return gp, gi, gx


@jit
def candidate_rows_csr(Jp, Ji, Jx, Sp, Si, Sx, Tp, Ti, Tx, touch):
    """Alg. 2's candidate rows G = [J; S_0; T_0; S_1; T_1; ...] from the CSR rows (indptr, indices,
    data) of J, S, T as one CSR matrix (the stored entries copied in their order); the rows S_i, T_i of
    a contact without ``touch[i]`` are empty (zero rows: never kept)."""
    nj = Jp.shape[0] - 1
    nc = Sp.shape[0] - 1
    r = nj + 2 * nc
    nnz = Jp[nj]
    for i in range(nc):
        if touch[i]:
            nnz += Sp[i + 1] - Sp[i] + Tp[i + 1] - Tp[i]
    gp = np.empty(r + 1, dtype=np.int64)
    gi = np.empty(nnz, dtype=np.int64)
    gx = np.empty(nnz)
    for i in range(nj + 1):
        gp[i] = Jp[i]
    q = Jp[nj]
    for p in range(q):
        gi[p] = Ji[p]
        gx[p] = Jx[p]
    for i in range(nc):
        if touch[i]:
            q = _copy_csr_row(Sp, Si, Sx, i, gi, gx, q)
        gp[nj + 2 * i + 1] = q
        if touch[i]:
            q = _copy_csr_row(Tp, Ti, Tx, i, gi, gx, q)
        gp[nj + 2 * i + 2] = q
    return gp, gi, gx


@jit
def _copy_csr_row(Xp, Xi, Xx, i, gi, gx, q):
    """Row i's stored entries of the CSR (Xp, Xi, Xx) into gi, gx from q; returns the end."""
    for p in range(Xp[i], Xp[i + 1]):
        gi[q] = Xi[p]
        gx[q] = Xx[p]
        q += 1
    return q


@jit_inline
def _lower_solve_csr_row(L, starts, blk, dinv, gp, gi, gx, i, w, blist, y, cs):
    """y = L_M^-1 g for row i of the CSR matrix (gp, gi, gx) (y zero on entry): g's stored entries summed
    into the work row w (m,) (zero on entry and on return, as a dense scatter would give g), then the
    blocks that g's nonzeros reach solved in ascending order (the forward half of
    :func:`mass_solve_rows_sparse`; blk[c] the block of column c, dinv the reciprocals of L_M's
    diagonal: a product per entry instead of a division); blist (m,) work. Returns (|y|^2 = g M^-1 g',
    y's ``row_mask`` (chunks of width cs))."""
    p0 = gp[i]
    p1 = gp[i + 1]
    for p in range(p0, p1):
        w[gi[p]] += gx[p]
    nbk = 0
    for p in range(p0, p1):
        c = gi[p]
        if w[c] != 0.0:                 # also NaN: it reaches its block solve, so |y|^2
            b = blk[c]
            j = nbk                     # insert b into the ascending blist[:nbk] unless there
            while j > 0 and blist[j - 1] > b:
                j -= 1
            if j > 0 and blist[j - 1] == b:
                continue
            for t in range(nbk, j, -1):
                blist[t] = blist[t - 1]
            blist[j] = b
            nbk += 1
    gg = 0.0
    mask = np.uint64(0)
    for a in range(nbk):
        b = blist[a]
        s0 = starts[b]
        s1 = starts[b + 1]
        for t in range(s0, s1):
            s = w[t]
            for j in range(s0, t):
                s -= L[t, j] * y[j]
            s *= dinv[t]
            y[t] = s
            gg += s * s
            if s != 0.0:
                mask |= np.uint64(1) << np.uint64(t // cs)
    for p in range(p0, p1):
        w[gi[p]] = 0.0
    return gg, mask


@jit
def apply_reflectors_rows(vval, vidx, vptr, beta, vmask, k, B, transpose):
    """:func:`apply_reflectors` on every row of B (r, m) in one pass over the reflectors (each
    reflector loaded once for all rows; a row whose nonzero chunks miss it is skipped)."""
    r, m = B.shape
    cs = _chunk(m)
    bmask = np.empty(r, dtype=np.uint64)
    for i in range(r):
        bmask[i] = row_mask(B[i], cs)
    for s_ in range(k):
        t = s_ if transpose else k - 1 - s_
        p0 = vptr[t]
        p1 = vptr[t + 1]
        vm = vmask[t]
        bt = beta[t]
        for i in range(r):
            if not (bmask[i] & vm):
                continue
            s = 0.0
            for q in range(p0, p1):
                s += vval[q] * B[i, vidx[q]]
            if s != 0.0:
                s *= bt
                for q in range(p0, p1):
                    B[i, vidx[q]] -= s * vval[q]
                bmask[i] |= vm


@jit
def metric_chain_rows(M, Lm, starts, nb, gp, gi, gx, nj, rhs_j, tol, v, f, h, U, bias):
    """One no-slip step's reduction (drumwright Sec. VI, Alg. 2, eq. 56-57) in the M metric: the
    null-space basis makes the reduced mass the identity, which is never formed.

    The candidate rows G (r, m) in Alg. 2's order as CSR (gp, gi, gx): the nj rows of J (J x = rhs_j),
    then S_i, T_i per contact (zero right-hand sides; :func:`candidate_rows_csr`,
    :func:`candidate_rows_dense`), the momentum p = M v + h f, y_s = L_M^-1 g_s (M = L_M L_M', block
    factor of :func:`mass_factor`; from each row's stored entries, :func:`_lower_solve_csr_row`), and
    FIND-INDICES and the null space in one Householder QR of Y' (:func:`householder_select`: the
    same test d > tol g M^-1 g' on the same
    Schur complements as :func:`find_indices_kernel`, the same kept rows up to round-off at the
    threshold, and Lg the Cholesky factor of Gk M^-1 Gk'). With Y_k' = Q R, Z = L_M^-T Q[:, free]
    spans null(Gk) (Gk Z = R' Q' Q[:, free] = 0) with Z' M Z = I: the factored LCP of eq. 57 is
    (N_r = U Z, I, f* = Z' p) and F = N_r N_r' = U X^-1 U' (eq. 56), the matrix of the orthonormal
    basis (:func:`noslip_chain`) up to round-off. Z is not formed: U Z and Z' p are Q' applied to
    L_M^-1 U' and L_M^-1 p (:func:`apply_reflectors`), and v+ = x_p + L_M^-T Q u (recovery,
    :func:`recover_metric_kernel`; :func:`metric_basis` forms Z when asked). x_p (G x_p = r,
    M-minimum-norm), offset = U x_p + bias and q = U Z f* + offset as :func:`reduce_kernel`, but
    x_p = L_M^-T Q P D Lg^-1 r from the same QR (P: row t of R on pivot row prow[t], D = diag(sgn)).
    The reflectors travel packed (:func:`unpack_reflectors`): fpack = [beta, sgn, vval], ipack =
    [vptr, prow, vmask, vidx]. Gk (k, m): the kept rows, dense (their stored entries summed into
    zero rows). Returns (status, kept, order, p, Lg, Gk, x_p, UZ, Zp, offset, q, fpack, ipack):
    status 0, 3 (an input is not finite) or 4 (nb < 0: M's factor failed)."""
    m = M.shape[0]
    n = U.shape[0]
    r = gp.shape[0] - 1
    p = np.empty(m)
    ok = nb >= 0 and _all_finite(v) and _all_finite(f) and _all_finite(rhs_j) and _all_finite(U) \
        and _all_finite(bias)
    Y = np.zeros((r, m))
    amask = np.zeros(r, dtype=np.uint64)
    gg = np.zeros(r)
    if ok:
        mass_matvec(M, starts, nb, v, p)
        for t in range(m):
            p[t] += h * f[t]
        dinv = np.empty(m)
        blk = np.empty(m, dtype=np.int64)
        for b in range(nb):
            for t in range(starts[b], starts[b + 1]):
                blk[t] = b
                dinv[t] = 1.0 / Lm[t, t]
        cs = _chunk(m)
        w = np.zeros(m)
        blist = np.empty(m, dtype=np.int64)
        for i in range(r):      # a NaN or inf of a row reaches its block solve, so |y|^2: G checked here
            gg[i], amask[i] = _lower_solve_csr_row(Lm, starts, blk, dinv, gp, gi, gx, i, w, blist, Y[i], cs)
            if not np.isfinite(gg[i]):
                ok = False
    kmax = min(r, m)
    Lbuf = np.empty((kmax, kmax))     # householder_select writes the lower triangle of its first k rows
    kbuf = np.empty(kmax, dtype=np.int64)
    prow = np.empty(kmax, dtype=np.int64)
    sgn = np.empty(kmax)
    vval = np.empty(kmax * m)
    vidx = np.empty(kmax * m, dtype=np.int64)
    vptr = np.zeros(kmax + 1, dtype=np.int64)
    beta = np.empty(kmax)
    vmask = np.zeros(kmax, dtype=np.uint64)
    free = np.ones(m, dtype=np.bool_)
    k = 0
    if ok:
        k = householder_select(Y, amask, gg, tol, Lbuf, kbuf, prow, sgn, vval, beta, vptr, vidx, free, vmask)
    kept = kbuf[:k].copy()
    order = np.empty((k, 2), dtype=np.int64)
    whole = k == kmax                 # every candidate kept (or m of them): Lg is the buffer itself
    Lg = Lbuf if whole else np.empty((k, k))
    Gk = np.zeros((k, m))
    rk = np.empty(k)
    for a in range(k):
        c = kept[a]
        if not whole:
            for b in range(a + 1):
                Lg[a, b] = Lbuf[a, b]
        for b in range(a + 1, k):
            Lg[a, b] = 0.0
        for q in range(gp[c], gp[c + 1]):
            Gk[a, gi[q]] += gx[q]
        if c < nj:
            order[a, 0] = 0
            order[a, 1] = c
            rk[a] = rhs_j[c]
        else:
            order[a, 0] = 1 + (c - nj) % 2
            order[a, 1] = (c - nj) // 2
            rk[a] = 0.0
    d = m - k
    x_p, UZ, Zp = np.zeros(m), np.zeros((n, d)), np.zeros(d)
    offset, q = np.zeros(n), np.zeros(n)
    supp = vptr[k]
    fpack = np.empty(2 * k + supp)
    ipack = np.empty(3 * k + 1 + supp, dtype=np.int64)
    pmask = ipack[2 * k + 1:3 * k + 1].view(np.uint64)
    for t in range(k):
        fpack[t] = beta[t]
        fpack[k + t] = sgn[t]
        ipack[k + 1 + t] = prow[t]
        pmask[t] = vmask[t]
    for t in range(k + 1):
        ipack[t] = vptr[t]
    for t in range(supp):
        fpack[2 * k + t] = vval[t]
        ipack[3 * k + 1 + t] = vidx[t]
    status = 0 if ok else (3 if nb >= 0 else 4)
    if status:
        return status, kept, order, p, Lg, Gk, x_p, UZ, Zp, offset, q, fpack, ipack
    # U Z = rows of (Q' L_M^-1 U')[free], Z' p = (Q' L_M^-1 p)[free] = f* (Z' M Z = I): one pass of Q'
    B = np.empty((n + 1, m))
    for i in range(n):
        mass_lower_solve(Lm, starts, nb, U[i], B[i])
    mass_lower_solve(Lm, starts, nb, p, B[n])
    apply_reflectors_rows(vval, vidx, vptr, beta, vmask, k, B, True)
    a = 0
    for t in range(m):
        if free[t]:
            for i in range(n):
                UZ[i, a] = B[i, t]
            Zp[a] = B[n, t]
            a += 1
    anyr = False
    for i in range(k):
        if rk[i] != 0.0:
            anyr = True
    if anyr:                            # x_p = L_M^-T Q P D Lg^-1 r (= M^-1 Gk' (Gk M^-1 Gk')^-1 r)
        for i in range(k):
            c = rk[i]
            for j in range(i):
                c -= Lg[i, j] * rk[j]
            rk[i] = c / Lg[i, i]
        for i in range(k):
            x_p[prow[i]] = sgn[i] * rk[i]
        apply_reflectors(vval, vidx, vptr, beta, vmask, k, x_p, False)
        mass_upper_solve(Lm, starts, nb, x_p, x_p)
    for i in range(n):
        s = bias[i]
        for t in range(m):
            s += U[i, t] * x_p[t]
        offset[i] = s
        for a in range(d):
            s += UZ[i, a] * Zp[a]
        q[i] = s
    return status, kept, order, p, Lg, Gk, x_p, UZ, Zp, offset, q, fpack, ipack


@jit
def noslip_metric_chain(M, Lm, starts, nb, J, ST, rhs_j, tol, v, f, h, U, bias):
    """:func:`metric_chain_rows` of the dense equality rows J (j, m) (J v+ = rhs_j) and tangent rows ST
    (2 n, m: S_0, T_0, S_1, ...; zero right-hand sides): the candidate rows G = [J; ST] in Alg. 2's
    order (:func:`candidate_rows_dense`). Returns its (status, kept, order, p, Lg, Gk, x_p, UZ, Zp,
    offset, q, fpack, ipack)."""
    gp, gi, gx = candidate_rows_dense(J, ST)
    return metric_chain_rows(M, Lm, starts, nb, gp, gi, gx, J.shape[0], rhs_j, tol, v, f, h, U, bias)


@jit
def unpack_reflectors(fpack, ipack, k, m):
    """The reflectors of :func:`metric_chain_rows` from their packed form: (vval, vidx, vptr, beta,
    vmask, free, prow, sgn), views of fpack = [beta, sgn, vval] and ipack = [vptr, prow, vmask (the
    nonzero chunks' bits), vidx], with the free rows recomputed."""
    vptr = ipack[:k + 1]
    prow = ipack[k + 1:2 * k + 1]
    vmask = ipack[2 * k + 1:3 * k + 1].view(np.uint64)
    vidx = ipack[3 * k + 1:]
    beta = fpack[:k]
    sgn = fpack[k:2 * k]
    vval = fpack[2 * k:]
    free = np.ones(m, dtype=np.bool_)
    for t in range(k):
        free[prow[t]] = False
    return vval, vidx, vptr, beta, vmask, free, prow, sgn


@jit
def _metric_apply(Lm, starts, nb, vval, vidx, vptr, beta, vmask, free, u, x):
    """x = Z u = L_M^-T Q u_hat (u_hat: u on the free rows, ascending; zero on the pivot rows)."""
    m = x.shape[0]
    k = beta.shape[0]
    a = 0
    for t in range(m):
        if free[t]:
            x[t] = u[a]
            a += 1
        else:
            x[t] = 0.0
    apply_reflectors(vval, vidx, vptr, beta, vmask, k, x, False)
    mass_upper_solve(Lm, starts, nb, x, x)


@jit
def metric_basis(Lm, starts, nb, fpack, ipack, k):
    """Z (m, d) of :func:`noslip_metric_chain`: Z e_a = L_M^-T Q e_f (f the a-th free row), with
    Gk Z = 0 and Z' M Z = I."""
    m = Lm.shape[0]
    vval, vidx, vptr, beta, vmask, free, _, _ = unpack_reflectors(fpack, ipack, k, m)
    d = m - k
    Z = np.empty((m, d))
    u = np.zeros(d)
    x = np.empty(m)
    for a in range(d):
        u[a] = 1.0
        _metric_apply(Lm, starts, nb, vval, vidx, vptr, beta, vmask, free, u, x)
        u[a] = 0.0
        for t in range(m):
            Z[t, a] = x[t]
    return Z


@jit
def recover_metric_kernel(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p, U, z, n_joint,
                          n_contact):
    """:func:`recover_kernel` for the basis of :func:`noslip_metric_chain` (Z' M Z = I), with its QR
    Y_k' = L_M^-1 Gk' = Q P R: u = Nr' z + f*, v = x_p + Z u = x_p + L_M^-T Q u_hat
    (:func:`apply_reflectors`), res = M v - p - U' z, and the kept rows' multipliers from
    Gk' lam = res: P R lam = Q' L_M^-1 res, so Lg' lam = D (Q' L_M^-1 res)[prow] (Lg = (D R)',
    D = diag(sgn); the M^-1-metric least-squares solution (Gk M^-1 Gk')^-1 Gk M^-1 res of
    :func:`recover_kernel`), scattered to (joint, S, T) (:func:`scatter_impulses`), and U v.
    Returns (v, lam, joint, ts, tt, Uv)."""
    m = M.shape[0]
    k = Gk.shape[0]
    n = U.shape[0]
    d = Nr.shape[1]
    vval, vidx, vptr, beta, vmask, free, prow, sgn = unpack_reflectors(fpack, ipack, k, m)
    u = f_star.copy()
    add_rmatvec(Nr, z, 1.0, u)
    v = np.empty(m)
    if d and k < m:
        _metric_apply(Lm, starts, nb, vval, vidx, vptr, beta, vmask, free, u, v)
    else:
        for t in range(m):
            v[t] = 0.0
    for t in range(m):
        v[t] += x_p[t]
    res = np.empty(m)
    mass_matvec(M, starts, nb, v, res)
    for t in range(m):
        res[t] -= p[t]
    add_rmatvec(U, z, -1.0, res)
    lam = np.zeros(k)
    if k:
        mass_lower_solve(Lm, starts, nb, res, res)
        apply_reflectors(vval, vidx, vptr, beta, vmask, k, res, True)
        for i in range(k - 1, -1, -1):          # Lg' lam = D b
            s = sgn[i] * res[prow[i]]
            for j in range(i + 1, k):
                s -= Lg[j, i] * lam[j]
            lam[i] = s / Lg[i, i]
    joint = np.zeros(n_joint)
    ts = np.zeros(n_contact)
    tt = np.zeros(n_contact)
    scatter_impulses(order, lam, joint, ts, tt)
    Uv = np.empty(n)
    matvec(U, v, Uv)
    return v, lam, joint, ts, tt, Uv


@jit
def recover_metric_step(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p, U, z, n_joint,
                        n_contact):
    """:func:`recover_metric_kernel` for models/noslip.py ``recover``: (v+, joint impulses, tangential
    impulses (n_contact, 2): S and T columns)."""
    v, _, joint, ts, tt, _ = recover_metric_kernel(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star,
                                                   p, U, z, n_joint, n_contact)
    tangent = np.empty((n_contact, 2))
    for i in range(n_contact):
        tangent[i, 0] = ts[i]
        tangent[i, 1] = tt[i]
    return v, joint, tangent


# -- the viscous model (drumwright Sec. IV, eq. 29, 33, 39-42): the no-slip chain without tangent rows ---------
@jit
def _csr_row_dot(indptr, indices, data, i, x):
    """Row i of a CSR matrix times x, summed in the row's stored order."""
    s = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        s += data[p] * x[indices[p]]
    return s


@jit
def _add_drag(C, pos, x, mu, p0, p1, indices, cols, seen):
    """C[pos[a], pos[b]] += mu x_a x_b over the columns indices[p0:p1] where the dense row x is stored
    (each column once; (a, b) and (b, a) both get (mu x_a) x_b: C stays exactly symmetric). ``seen`` (m,)
    all False on entry and on return; ``cols`` (m,) work."""
    nz = 0
    for p in range(p0, p1):
        c = indices[p]
        if not seen[c]:
            seen[c] = True
            cols[nz] = c
            nz += 1
    for a_ in range(nz):
        a = cols[a_]
        seen[a] = False
        xa = mu * x[a]
        pa = pos[a]
        for b_ in range(a_, nz):
            b = cols[b_]
            cab = xa * x[b]
            C[pa, pos[b]] += cab
            if b != a:
                C[pos[b], pa] += cab


@jit
def _mark_columns(indptr, indices, touch, mark):
    """mark[c] = True for the columns c stored in the rows i with touch[i]."""
    for i in range(indptr.shape[0] - 1):
        if touch[i]:
            for p in range(indptr[i], indptr[i + 1]):
                mark[indices[p]] = True


@jit
def viscous_system_chain(m, Mp, Mi, Mx, Jp, Ji, Jx, Lp, Li, Lx, Np, Ni, Nx, Sp, Si, Sx, Tp, Ti, Tx, touch, mu_v, v,
                         f, j_rhs, l_bias, n_bias, tol, h, hc):
    """A ConstraintSystem's viscous step (models/viscous.py ``build``, semi-implicit Euler) in one call.

    The CSR rows (indptr, indices, data) of M, L (limits), N, S, T scattered as
    :func:`csr_rows_into` does (U = [L; N]; S, T (nl + nc, m) with the touching contacts' rows after nl
    zero rows), the drag matrix C = S' mu_v S + T' mu_v T (mu_v (nl + nc,)) on the columns the touching
    rows reach (C is zero elsewhere; symmetric by construction: each entry mu_v (s_a s_b) written to
    (a, b) and (b, a)), Mh = M + hc C (eq. 29 with the drag at the step's end: hc = h; hc = 0 keeps M),
    f* = f - C v (eq. 29's f* with the sign of eq. 39's g; each row of C v summed in ascending column
    order, the zero columns left out: the sums of the dense product), the joint right-hand sides
    (j_rhs - J v) / h and the normal biases (U v + [l_bias; n_bias]) / h (each row's product with v
    summed over its stored entries), Mh's block factor (:func:`mass_factor`'s, its blocks found from
    the stored entries: :func:`_mass_factor_stored`) and
    :func:`metric_chain_rows` on (Mh, J's CSR rows, no tangent rows, v = 0, f = f*, h = 1): FIND-INDICES on J
    (Alg. 2) and F = N A^-1 N', e (eq. 41-42) factored in the Mh metric, p = f* exactly. A non-finite
    v makes f* NaN (the chain's status 3). Returns (nb, Mh, Lm, starts, U, S, T, f*, chain): nb = -1
    when Mh is not positive definite (``chain``'s status is then 4)."""
    nj = Jp.shape[0] - 1
    nl = Lp.shape[0] - 1
    nc = Np.shape[0] - 1
    n = nl + nc
    M = np.zeros((m, m))
    U = np.zeros((n, m))
    S = np.zeros((n, m))
    T = np.zeros((n, m))
    keep = np.zeros(0, dtype=np.bool_)
    csr_rows_into(Mp, Mi, Mx, M, 0, 1, keep, False)
    csr_rows_into(Lp, Li, Lx, U, 0, 1, keep, False)
    csr_rows_into(Np, Ni, Nx, U, nl, 1, keep, False)
    csr_rows_into(Sp, Si, Sx, S, nl, 1, touch, True)
    csr_rows_into(Tp, Ti, Tx, T, nl, 1, touch, True)
    # the columns of the drag, ascending, and their places in the compact C
    seen = np.zeros(m, dtype=np.bool_)
    _mark_columns(Sp, Si, touch, seen)
    _mark_columns(Tp, Ti, touch, seen)
    tc = np.empty(m, dtype=np.int64)
    pos = np.empty(m, dtype=np.int64)
    nt = 0
    for c in range(m):
        if seen[c]:
            seen[c] = False
            tc[nt] = c
            pos[c] = nt
            nt += 1
    C = np.zeros((nt, nt))
    cols = np.empty(m, dtype=np.int64)
    for i in range(nc):
        if touch[i]:
            _add_drag(C, pos, S[nl + i], mu_v[nl + i], Sp[i], Sp[i + 1], Si, cols, seen)
    for i in range(nc):
        if touch[i]:
            _add_drag(C, pos, T[nl + i], mu_v[nl + i], Tp[i], Tp[i + 1], Ti, cols, seen)
    fstar = f.copy()
    if not _all_finite(v):
        for a in range(m):
            fstar[a] = np.nan
    for a_ in range(nt):
        s = 0.0
        for b_ in range(nt):
            s += C[a_, b_] * v[tc[b_]]
        a = tc[a_]
        fstar[a] = f[a] - s
    if hc > 0.0:
        for a_ in range(nt):
            for b_ in range(nt):
                M[tc[a_], tc[b_]] += hc * C[a_, b_]
    jr = np.empty(nj)
    for i in range(nj):
        jr[i] = (j_rhs[i] - _csr_row_dot(Jp, Ji, Jx, i, v)) / h
    bias = np.empty(n)
    for i in range(nl):
        bias[i] = (_csr_row_dot(Lp, Li, Lx, i, v) + l_bias[i]) / h
    for i in range(nc):
        bias[nl + i] = (_csr_row_dot(Np, Ni, Nx, i, v) + n_bias[i]) / h
    Lm = np.empty((m, m))
    starts = np.empty(m + 1, dtype=np.int64)
    nb = _mass_factor_stored(M, Mp, Mi, tc, nt, Lm, starts)
    chain = metric_chain_rows(M, Lm, starts, nb, Jp, Ji, Jx, nj, jr, tol, np.zeros(m), fstar, 1.0, U, bias)
    return nb, M, Lm, starts, U, S, T, fstar, chain


@jit
def viscous_forces(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p, U, z, n_joint, v, h, S, T,
                   mu_v):
    """The forces of :func:`viscous_system_chain`'s (or :func:`noslip_metric_chain`'s, with p = f*) LCP
    solution z (n,): the acceleration a, the kept joint rows' forces and N a by :func:`recover_metric_kernel`,
    v_end = v + h a (h = 0: v itself, the explicit drag of eq. 29) and the viscous forces -mu_v S v_end,
    -mu_v T v_end (each row of S, T times v_end summed in column order). Returns (a, joint, Na, v_end, fs, ft)."""
    a, _, joint, _, _, an = recover_metric_kernel(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p,
                                                  U, z, n_joint, 0)
    m = a.shape[0]
    n = z.shape[0]
    vn = np.empty(m)
    for t in range(m):
        vn[t] = v[t] + h * a[t]
    fs = np.empty(n)
    ft = np.empty(n)
    for i in range(n):
        s = 0.0
        t_ = 0.0
        for c in range(m):
            s += S[i, c] * vn[c]
            t_ += T[i, c] * vn[c]
        fs[i] = -mu_v[i] * s
        ft[i] = -mu_v[i] * t_
    return a, joint, an, vn, fs, ft


@jit
def viscous_recover_step(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p, U, z, n_joint, v, h,
                         S, T, mu_v, nl):
    """The step of :func:`viscous_system_chain`'s LCP solution z (n,) (models/viscous.py ``recover``,
    semi-implicit Euler) in one call: a, the joint forces, v+ = v + h a and the viscous forces -mu_v S v+,
    -mu_v T v+ at the step's end (eq. 29 with the implicit drag) by :func:`viscous_forces`, and the
    impulses over the step (h times the forces). Returns (v+, a, z_impulse (n,) = h z, joint impulses
    (n_joint,), tangential impulses (n - nl, 2): S and T columns, forces (fs, ft) (n,))."""
    a, joint, _, vn, fs, ft = viscous_forces(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p, U, z,
                                             n_joint, v, h, S, T, mu_v)
    n = z.shape[0]
    zi = np.empty(n)
    for i in range(n):
        zi[i] = h * z[i]
    ji = np.empty(n_joint)
    for i in range(n_joint):
        ji[i] = h * joint[i]
    tangent = np.empty((n - nl, 2))
    for i in range(n - nl):
        tangent[i, 0] = h * fs[nl + i]
        tangent[i, 1] = h * ft[nl + i]
    return vn, a, zi, ji, tangent, fs, ft
