"""The no-slip reduction's kernels (drumwright Sec. VI, Alg. 2 FIND-INDICES, eq. 45-57): here the
orthonormal chain of one step (:func:`noslip_chain` runs it in one call), the reference the tests
compare the M-metric chain with (models/find_indices.py ``reduce_step``):

* :func:`find_indices_kernel`: Alg. 2's greedy selection with the bordered Cholesky update of
  G M^-1 G' (products over the nonzeros of the kept rows only, forward substitution from the first
  nonzero: the same sums, zero terms skipped).
* :func:`~contactlab.kernels.householder.nullspace_kernel`: an orthonormal basis Z of null(G) by
  Householder reflections of G'.
* :func:`reduce_kernel`: x_p (G x_p = r, M-minimum-norm), U Z, Z' M Z (eq. 57), its Cholesky factor,
  Z' p, the offset U x_p + bias and q of the factored LCP.
* :func:`recover_kernel`: from the solution z, v+ = x_p + Z u, the kept rows' multipliers
  lam = (G M^-1 G')^-1 G M^-1 (M v+ - p - U' z) scattered to (joint, S, T), and U v+.
* :func:`symmetric_finite`: build_noslip's input check.

The rest lives by concept: the block mass factor in :mod:`contactlab.kernels.mass_factor`, the
Householder reflectors in :mod:`contactlab.kernels.householder`, the M-metric chain the no-slip
model runs in :mod:`contactlab.kernels.metric_chain`, the viscous model's kernels in
:mod:`contactlab.kernels.viscous`; every name stays importable from here for one release. Kernels
never raise: they return status codes that the Python layer (models/find_indices.py,
models/noslip.py) turns into ModelErrors.
"""
import numpy as np

from ._jit import jit
from .dense import add_rmatvec, chol_factor_block, chol_solve, matvec
from .householder import _chunk, nullspace_kernel
from .mass_factor import mass_matvec, mass_solve, mass_solve_rows_sparse
from .metric_chain import _all_finite, scatter_impulses

# moved to their own modules (issue 41 item 3), importable from here for one release
from .householder import (  # noqa: E402,F401
    row_mask, _reflector_support, householder_factor, apply_reflectors, householder_select,
    apply_reflectors_rows, unpack_reflectors,
)
from .mass_factor import (  # noqa: E402,F401
    _factor_blocks, mass_factor, _reach_entry, _mass_factor_stored, _zero_block, mass_solve_rows,
    mass_lower_solve, mass_upper_solve,
)
from .metric_chain import (  # noqa: E402,F401
    noslip_system_chain, csr_rows_into, candidate_rows_dense, candidate_rows_csr, _copy_csr_row,
    _lower_solve_csr_row, metric_chain_rows, noslip_metric_chain, _metric_apply, metric_basis,
    recover_metric_kernel, recover_metric_step,
)
from .viscous import (  # noqa: E402,F401
    _csr_row_dot, _add_drag, _mark_columns, viscous_system_chain, viscous_forces, viscous_recover_step,
)


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
