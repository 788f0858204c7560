"""One-pass residual kernels behind contactlab.problems.residual (the one residual definition)."""
import numpy as np

from ._jit import jit


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
def lcp_certify_dense(M, q, z, w, t, floor_factor):
    """One pass over a dense LCP: w = M z + q (written), t_i = |q_i| + sum_j |M_ij z_j| (work), and
    both residual triples of problems/residual.py: absolute (lcp_residuals) and scale-free
    (lcp_relative: z in units of max|z|, w_i in units of max(t_i, floor), floor = floor_factor * max|q|,
    tolerances.NORMWISE_FLOOR for the library's definition).
    Returns (nat, comp, infeas, rel_nat, rel_comp, rel_infeas); inf for non-finite z or w."""
    n = q.shape[0]
    zs = 0.0
    floor = 0.0
    for j in range(n):
        if not np.isfinite(z[j]):
            return np.inf, np.inf, np.inf, np.inf, np.inf, np.inf
        zs = max(zs, abs(z[j]))
        floor = max(floor, abs(q[j]))
    floor *= floor_factor
    for i in range(n):
        s = q[i]
        a = abs(q[i])
        for j in range(n):
            if z[j] != 0.0:
                p = M[i, j] * z[j]
                s += p
                a += abs(p)
        w[i] = s
        t[i] = a
    nat, comp, infeas = lcp_residual_kernel(z, w)
    rn = 0.0
    rc = 0.0
    ri = 0.0
    for i in range(n):
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
