"""The no-slip reduction the no-slip model runs, compiled (drumwright Sec. VI, Alg. 2 FIND-INDICES,
eq. 45-57): FIND-INDICES and the null space in one Householder QR of L_M^-1 G' in Alg. 2's order
(:func:`~contactlab.kernels.householder.householder_select`), the basis Z = L_M^-T Q[:, free] with
Z' M Z = I (never formed), and the recovery (:func:`recover_metric_kernel`).

The candidate rows travel as CSR (:func:`metric_chain_rows`; :func:`candidate_rows_csr` from a
system's rows, :func:`candidate_rows_dense` from dense ones): each row's L_M^-1 g is solved from its
stored entries, and no dense copy of J, S or T is formed. :func:`noslip_system_chain` runs it for a
ConstraintSystem in one call, :func:`noslip_metric_chain` for dense rows. Kernels never raise: they
return status codes that the Python layer (models/noslip.py) turns into ModelErrors.
"""
import numpy as np

from ._jit import jit, jit_inline
from .dense import add_rmatvec, matvec
from .householder import _chunk, apply_reflectors, apply_reflectors_rows, householder_select, unpack_reflectors
from .mass_factor import _mass_factor_stored, mass_lower_solve, mass_matvec, mass_upper_solve


@jit
def _all_finite(x):
    for v in x.ravel():
        if not np.isfinite(v):
            return False
    return True


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
