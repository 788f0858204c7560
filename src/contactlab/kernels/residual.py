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
        p = min(max(a - b, lo[i]), hi[i])
        r = abs(a - p)
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
