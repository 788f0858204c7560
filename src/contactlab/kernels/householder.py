"""Householder reflectors over their nonzeros (compiled; the no-slip reduction, drumwright Sec. VI):
reflections of G' each supported on the nonzeros of its column (pivot row the largest entry), so
G' = Q R with R nonzero on k pivot rows and the images Q e_r of the other m - k unit vectors an
orthonormal basis of null(G) (:func:`nullspace_kernel`), in O(sum of reflector supports x columns);
:func:`householder_select` runs Alg. 2's FIND-INDICES selection inside the factorisation;
reflectors are kept packed (:func:`unpack_reflectors`) and applied to vectors and rows
(:func:`apply_reflectors`, :func:`apply_reflectors_rows`). Nonzero masks of rows by 64 chunks
(:func:`row_mask`) skip the columns a reflector cannot touch.
"""
import numpy as np

from ._jit import jit


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
