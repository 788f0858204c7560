"""Compiled passes over the dense blocks of a mixed LCP (problems/mixed.py, drumwright eq. 4-7):
A x + C y + g = 0,  w = D x + B y + h."""
import numpy as np

from ._jit import jit


@jit
def _abs_row(M, i, v, k):
    """sum_j |M_ij| |v_j| over the k entries of row i."""
    s = 0.0
    for j in range(k):
        if v[j] != 0.0:
            s += abs(M[i, j]) * abs(v[j])
    return s


@jit
def mixed_row_terms(A, C, D, B, g, h, x, z, floor_factor, t):
    """The term sizes of the relative residuals (problems/mixed.py ``relative_residuals``) in one
    pass: the data's size s = max(max|h|, max|g|), t_i = |D||x| + |B||z| + |h| (written) for the
    w rows, and for the equality rows e = A x + C z + g against
    te = max(|A||x| + |C||z| + |g|, floor_factor * s). Returns
    (max_i |e_i| / te_i (0 where te_i = 0), max_i |e_i|, s); inf for a non-finite e_i."""
    p = g.shape[0]
    n = h.shape[0]
    size = 0.0
    for i in range(p):
        size = max(size, abs(g[i]))
    for i in range(n):
        size = max(size, abs(h[i]))
    floor = floor_factor * size
    eq = 0.0
    eabs = 0.0
    for i in range(p):
        s = g[i]
        for j in range(p):
            s += A[i, j] * x[j]
        for j in range(n):
            s += C[i, j] * z[j]
        if not np.isfinite(s):
            return np.inf, np.inf, size
        e = abs(s)
        te = max(abs(g[i]) + _abs_row(A, i, x, p) + _abs_row(C, i, z, n), floor)
        if e > eabs:
            eabs = e
        if te > 0.0 and e / te > eq:
            eq = e / te
    for i in range(n):
        t[i] = abs(h[i]) + _abs_row(D, i, x, p) + _abs_row(B, i, z, n)
    return eq, eabs, size


@jit
def symmetric_row_norm(A, C):
    """(A == A' exactly, the largest row norm of [A C]): the inputs of MixedLCP's SPD rank shortcut."""
    p = A.shape[0]
    sym = True
    best = 0.0
    for i in range(p):
        s = 0.0
        for j in range(p):
            a = A[i, j]
            if a != A[j, i]:
                sym = False
            s += a * a
        for j in range(C.shape[1]):
            s += C[i, j] * C[i, j]
        if s > best:
            best = s
    return sym, np.sqrt(best)


@jit
def pyramid_coupling(nl, nc, d, nm, mu, cfm):
    """The constant block K of the Stewart-Trinkle LCP (models/stewart_trinkle.py; arechavaleta
    eq. 8-9, drumwright §III-C) for y = [c_l (nl), c_n (nc), beta (nc d), lambda (nc), u (nm), s (nm)]:
    +1 at (beta_ik, lambda_i) (D v+ + E lambda), -1 at (lambda_i, beta_ik) and mu_i at
    (lambda_i, c_n,i) (mu c_n - E' beta), +1 at (u_j, s_j) and -1 at (s_j, u_j) (the motor box), and
    ``cfm`` on the diagonal of the contact rows (normal, friction, lambda)."""
    o_cn = nl
    o_b = o_cn + nc
    o_lam = o_b + nc * d
    o_u = o_lam + nc
    o_s = o_u + nm
    ny = o_s + nm
    K = np.zeros((ny, ny))
    for i in range(nc):
        for k in range(d):
            K[o_b + i * d + k, o_lam + i] = 1.0
            K[o_lam + i, o_b + i * d + k] = -1.0
        K[o_lam + i, o_cn + i] = mu[i]
    for j in range(nm):
        K[o_u + j, o_s + j] = 1.0
        K[o_s + j, o_u + j] = -1.0
    for r in range(o_cn, o_u):
        K[r, r] += cfm
    return K
