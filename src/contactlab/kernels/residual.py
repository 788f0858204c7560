"""One-pass residual kernels behind contactlab.problems.residual (the one residual definition)."""
import numpy as np

from ._jit import jit
from .tolerances import NORMWISE_FLOOR


@jit
def lcp_residual_kernel(z, w):
    """(||min(z, w)||_inf, max |z_i w_i|, max(0, -min z, -min w)); inf for non-finite input."""
    nat = 0.0
    comp = 0.0
    infeas = 0.0
    for i in range(z.shape[0]):
        a = z[i]
        b = w[i]
        if not (np.isfinite(a) and np.isfinite(b)):
            return np.inf, np.inf, np.inf
        m = abs(min(a, b))
        if m > nat:
            nat = m
        c = abs(a * b)
        if c > comp:
            comp = c
        if -a > infeas:
            infeas = -a
        if -b > infeas:
            infeas = -b
    return nat, comp, infeas


@jit
def box_row(a, b, lo, hi):
    """|a - mid(lo, hi, a - b)|: the one box natural-residual term of a row (z_i = a, w_i = b)."""
    y = a - b
    if y < lo:
        y = lo
    if y > hi:
        y = hi
    return abs(a - y)


@jit
def box_residual_kernel(z, w, lo, hi):
    """Mid-function residual ||z - mid(lo, hi, z - w)||_inf, complementarity (w times the distance
    to the bound it pushes against), infeasibility (bound violation); inf for non-finite z or w."""
    nat = 0.0
    comp = 0.0
    infeas = 0.0
    for i in range(z.shape[0]):
        a = z[i]
        b = w[i]
        if not (np.isfinite(a) and np.isfinite(b)):
            return np.inf, np.inf, np.inf
        r = box_row(a, b, lo[i], hi[i])
        if r > nat:
            nat = r
        if b > 0.0:
            c = b * (a - lo[i]) if np.isfinite(lo[i]) else np.inf
            if c > comp:
                comp = c
        elif b < 0.0:
            c = -b * (hi[i] - a) if np.isfinite(hi[i]) else np.inf
            if c > comp:
                comp = c
        v = max(lo[i] - a, a - hi[i])
        if v > infeas:
            infeas = v
    return nat, comp, infeas


@jit
def lcp_zero_solves(q):
    """Whether z = 0 solves the LCP exactly: w = q >= 0 (False on a NaN)."""
    for i in range(q.size):
        if not q[i] >= 0.0:
            return False
    return True


@jit
def boxed_zero_solves(q, lo, hi, findex):
    """Whether z = 0 solves the boxed LCP exactly: at z = 0, w = q, a coupled row's bounds are 0
    and 0, and every row's :func:`box_row` term and bound violation must be 0 (the residuals of
    :func:`box_residual_kernel` at z = 0, without forming them)."""
    for i in range(q.size):
        if not np.isfinite(q[i]):
            return False
        if findex[i] >= 0:
            continue
        if lo[i] > 0.0 or hi[i] < 0.0 or box_row(0.0, q[i], lo[i], hi[i]) != 0.0:
            return False
    return True


@jit
def _affine_terms(M, q, z, w, t):
    """w = M z + q and the row terms t = |q| + |M| |z| (row_terms) of a dense M, one pass over M,
    four rows at a time (eight independent sums, each row's in the order of j: the same numbers as
    one row at a time, 2.4x faster at n = 120)."""
    n = q.shape[0]
    i = 0
    while i + 4 <= n:
        s0, s1, s2, s3 = q[i], q[i + 1], q[i + 2], q[i + 3]
        a0, a1, a2, a3 = abs(s0), abs(s1), abs(s2), abs(s3)
        for j in range(n):
            x = z[j]
            if x != 0.0:
                p0 = M[i, j] * x
                p1 = M[i + 1, j] * x
                p2 = M[i + 2, j] * x
                p3 = M[i + 3, j] * x
                s0 += p0
                s1 += p1
                s2 += p2
                s3 += p3
                a0 += abs(p0)
                a1 += abs(p1)
                a2 += abs(p2)
                a3 += abs(p3)
        w[i], w[i + 1], w[i + 2], w[i + 3] = s0, s1, s2, s3
        t[i], t[i + 1], t[i + 2], t[i + 3] = a0, a1, a2, a3
        i += 4
    while i < n:
        s = q[i]
        a = abs(q[i])
        for j in range(n):
            if z[j] != 0.0:
                p = M[i, j] * z[j]
                s += p
                a += abs(p)
        w[i] = s
        t[i] = a
        i += 1


@jit
def csr_abs_terms(indptr, indices, data, q, z):
    """t_i = |q_i| + sum_j |M_ij| |z_j| for M in CSR (row_terms), one pass over its entries."""
    n = q.shape[0]
    t = np.empty(n)
    for i in range(n):
        a = abs(q[i])
        for p in range(indptr[i], indptr[i + 1]):
            a += abs(data[p]) * abs(z[indices[p]])
        t[i] = a
    return t


@jit
def lcp_certify_dense(M, q, z, w, t, floor_factor):
    """One pass over a dense LCP: w = M z + q (written), t_i = |q_i| + sum_j |M_ij z_j| (work), and
    both residual triples of problems/residual.py: absolute (lcp_residuals) and scale-free
    (lcp_relative: z in units of max|z|, w_i in units of max(t_i, floor), floor = floor_factor * max|q|,
    tolerances.NORMWISE_FLOOR for the library's definition).
    Returns (nat, comp, infeas, rel_nat, rel_comp, rel_infeas); all inf for non-finite z, w or t (a
    certificate only from finite numbers: an overflowed w_i would read as 0 in units of t_i = inf)."""
    n = q.shape[0]
    zs = 0.0
    floor = 0.0
    for j in range(n):
        if not np.isfinite(z[j]):
            return np.inf, np.inf, np.inf, np.inf, np.inf, np.inf
        zs = max(zs, abs(z[j]))
        floor = max(floor, abs(q[j]))
    floor *= floor_factor
    _affine_terms(M, q, z, w, t)
    nat, comp, infeas = lcp_residual_kernel(z, w)
    if not np.isfinite(nat):    # w overflowed: no residual, relative or not, from it
        return np.inf, np.inf, np.inf, np.inf, np.inf, np.inf
    rn = 0.0
    rc = 0.0
    ri = 0.0
    for i in range(n):
        if not np.isfinite(t[i]):   # a term overflowed: w_i's cancellation cannot be trusted
            return np.inf, np.inf, np.inf, np.inf, np.inf, np.inf
        zi = z[i] / zs if zs > 0.0 else 0.0
        u = max(t[i], floor)
        wi = w[i] / u if u > 0.0 else 0.0
        m = abs(min(zi, wi))
        if m > rn:
            rn = m
        c = abs(zi * wi)
        if c > rc:
            rc = c
        if -zi > ri:
            ri = -zi
        if -wi > ri:
            ri = -wi
    return nat, comp, infeas, rn, rc, ri


@jit
def abs_terms(M, q, z, t):
    """t_i = |q_i| + sum_j |M_ij| |z_j| (problems/residual.py row_terms), four rows at a time (four
    independent sums, each in the order of j)."""
    n = q.size
    i = 0
    while i + 4 <= n:
        s0 = s1 = s2 = s3 = 0.0
        for j in range(n):
            a = abs(z[j])
            if a != 0.0:
                s0 += abs(M[i, j]) * a
                s1 += abs(M[i + 1, j]) * a
                s2 += abs(M[i + 2, j]) * a
                s3 += abs(M[i + 3, j]) * a
        t[i] = abs(q[i]) + s0
        t[i + 1] = abs(q[i + 1]) + s1
        t[i + 2] = abs(q[i + 2]) + s2
        t[i + 3] = abs(q[i + 3]) + s3
        i += 4
    while i < n:
        s = 0.0
        for j in range(n):
            if z[j] != 0.0:
                s += abs(M[i, j]) * abs(z[j])
        t[i] = abs(q[i]) + s
        i += 1


@jit
def _scales(z, w, q, size):
    """(z and w finite, max|z|, the floor NORMWISE_FLOOR size of the row units; size = max|q| when
    negative): the units of both relative residuals."""
    zs = 0.0
    qs = 0.0
    for i in range(z.size):
        if not (np.isfinite(z[i]) and np.isfinite(w[i])):
            return False, 0.0, 0.0
        zs = max(zs, abs(z[i]))
        qs = max(qs, abs(q[i]))
    return True, zs, NORMWISE_FLOOR * (qs if size < 0.0 else size)


@jit
def _w_units(w, t, floor, out):
    """out_i = w_i / max(t_i, floor) (0 where that is 0: then w_i is exactly 0). False when a t_i is
    not finite (a term overflowed: w_i / inf would read as 0, a residual from infinities)."""
    for i in range(w.size):
        if not np.isfinite(t[i]):
            return False
        u = t[i] if t[i] > floor else floor
        out[i] = w[i] / u if u > 0.0 else 0.0
    return True


@jit
def lcp_relative_kernel(z, w, q, t, size):
    """problems/residual.py lcp_relative in one pass: lcp_residual_kernel on z in units of max|z| (0
    when z = 0) and w_i in units of max(t_i, NORMWISE_FLOOR size) (size = max|q| when negative);
    (inf, inf, inf) for non-finite z or w."""
    n = z.size
    if n == 0:
        return 0.0, 0.0, 0.0
    finite, zs, floor = _scales(z, w, q, size)
    if not finite:
        return np.inf, np.inf, np.inf
    zr = np.empty(n)
    wr = np.empty(n)
    for i in range(n):
        zr[i] = z[i] / zs if zs > 0.0 else 0.0
    if not _w_units(w, t, floor, wr):
        return np.inf, np.inf, np.inf
    return lcp_residual_kernel(zr, wr)


@jit
def box_relative_kernel(z, w, lo, hi, q, t, size, work):
    """problems/residual.py box_relative in one pass: box_residual_kernel on z, lo, hi in units of
    max|z| (of the largest finite bound when z = 0, else 1) and w_i in units of max(t_i, NORMWISE_FLOOR
    size) (size = max|q| when negative); (inf, inf, inf) for non-finite z or w. ``work``: 4 x n scratch."""
    n = z.size
    if n == 0:
        return 0.0, 0.0, 0.0
    finite, zs, floor = _scales(z, w, q, size)
    if not finite:
        return np.inf, np.inf, np.inf
    if zs == 0.0:
        for i in range(n):
            if np.isfinite(lo[i]):
                zs = max(zs, abs(lo[i]))
            if np.isfinite(hi[i]):
                zs = max(zs, abs(hi[i]))
        if zs == 0.0:
            zs = 1.0
    zr, wr, lr, hr = work[0], work[1], work[2], work[3]
    for i in range(n):
        zr[i] = z[i] / zs
        lr[i] = lo[i] / zs
        hr[i] = hi[i] / zs
    if not _w_units(w, t, floor, wr):
        return np.inf, np.inf, np.inf
    return box_residual_kernel(zr, wr, lr, hr)


@jit
def box_relative_error(z, w, lo, hi, q, t, work):
    """relative_error(box_relative(z, w, lo, hi, q, t)) of problems/residual.py: max(natural,
    infeasibility) of :func:`box_relative_kernel` (size max|q|)."""
    nat, comp, infeas = box_relative_kernel(z, w, lo, hi, q, t, -1.0, work)
    return infeas if infeas > nat else nat


@jit
def coupled_bounds(lo, hi, findex, mu, z, lo_out, hi_out):
    """BoxedLCP.bounds(z): lo, hi, with lo_i = -mu_i max(z_findex_i, 0) = -hi_i on coupled rows."""
    for i in range(lo.size):
        j = findex[i]
        if j >= 0:
            v = z[j]
            r = mu[i] * (v if (v > 0.0 or v != v) else 0.0)
            lo_out[i] = -r
            hi_out[i] = r
        else:
            lo_out[i] = lo[i]
            hi_out[i] = hi[i]


@jit
def _boxed_finish(q, lo, hi, findex, mu, z, w, t):
    """Both residual triples of a boxed LCP from w = M z + q and its row terms t: the bounds at z
    (coupled rows: -+mu_i max(z_findex_i, 0)), box_residual_kernel (absolute) and box_relative_kernel
    (scale-free). Returns (nat, comp, infeas, rel_nat, rel_comp, rel_infeas)."""
    n = q.shape[0]
    work = np.empty((6, n))
    le, he = work[4], work[5]
    coupled_bounds(lo, hi, findex, mu, z, le, he)
    nat, comp, infeas = box_residual_kernel(z, w, le, he)
    rn, rc, ri = box_relative_kernel(z, w, le, he, q, t, -1.0, work[:4])
    return nat, comp, infeas, rn, rc, ri


@jit
def boxed_certify_dense(M, q, lo, hi, findex, mu, z):
    """One pass over a dense boxed LCP (problems/lcp.py BoxedLCP.certify): w = M z + q, row terms
    t = |q| + |M||z| (row_terms), then :func:`_boxed_finish`.
    Returns (w, nat, comp, infeas, rel_nat, rel_comp, rel_infeas)."""
    n = q.shape[0]
    w = np.empty(n)
    t = np.empty(n)
    _affine_terms(M, q, z, w, t)
    nat, comp, infeas, rn, rc, ri = _boxed_finish(q, lo, hi, findex, mu, z, w, t)
    return w, nat, comp, infeas, rn, rc, ri


@jit
def _csr_affine_terms(indptr, indices, data, q, z, w, t):
    """w = M z + q and t = |q| + |M||z| for M in CSR, one pass over the entries (the sums in the
    entries' order, as scipy's matvec and :func:`csr_abs_terms` add them)."""
    for i in range(q.shape[0]):
        s = 0.0
        a = abs(q[i])
        for p in range(indptr[i], indptr[i + 1]):
            v = data[p] * z[indices[p]]
            s += v
            a += abs(data[p]) * abs(z[indices[p]])
        w[i] = s + q[i]
        t[i] = a


@jit
def boxed_certify_csr(indptr, indices, data, q, lo, hi, findex, mu, z):
    """:func:`boxed_certify_dense` for M in CSR (:func:`_csr_affine_terms`, then :func:`_boxed_finish`)."""
    n = q.shape[0]
    w = np.empty(n)
    t = np.empty(n)
    _csr_affine_terms(indptr, indices, data, q, z, w, t)
    nat, comp, infeas, rn, rc, ri = _boxed_finish(q, lo, hi, findex, mu, z, w, t)
    return w, nat, comp, infeas, rn, rc, ri


@jit
def csr_box_error(indptr, indices, data, q, lo, hi, z, w, work):
    """w = M z + q into ``w`` and the certified relative error of the boxed LCP with static bounds
    (:func:`box_relative_error` with the row terms |q| + |M||z|) for M in CSR, in one pass over the
    entries: an iterative solver's per-iterate check. ``work``: 5 x n scratch."""
    _csr_affine_terms(indptr, indices, data, q, z, w, work[4])
    return box_relative_error(z, w, lo, hi, q, work[4], work[:4])
