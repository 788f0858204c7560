"""Exhaustive search over complementary bases (the reference solver for tests)."""
import numpy as np

from ._jit import jit
from .dense import solve_small
from .tolerances import RANK




@jit
def enumerate_kernel(M, q, tol, max_solutions, out, singular):
    """Visit every support S (by increasing size): z_S = -M_SS^-1 q_S, check z_S >= 0, w >= 0.

    Tolerances are relative: z_S >= -tol * max|z_S|, w_i >= -tol * (max|q| + max|M| max|z|).
    Writes up to ``max_solutions`` solutions as rows of ``out``; the bit masks of supports whose
    block M_SS is singular (rank test RANK) go to ``singular`` (the caller decides them by LP).
    Returns (found, tested, n_singular).
    """
    n = q.shape[0]
    A = np.empty((n, n))
    b = np.empty(n)
    x = np.empty(n)
    S = np.empty(n, dtype=np.int64)
    z = np.empty(n)
    qmax = 0.0
    mmax = 0.0
    for i in range(n):
        qmax = max(qmax, abs(q[i]))
        for j in range(n):
            mmax = max(mmax, abs(M[i, j]))
    found = 0
    tested = 0
    nsing = 0
    for size in range(n + 1):
        # iterate subsets of this size via bit tricks (Gosper's hack)
        if size == 0:
            mask = 0
        else:
            mask = (1 << size) - 1
        while mask < (1 << n):
            tested += 1
            k = 0
            for i in range(n):
                if (mask >> i) & 1:
                    S[k] = i
                    k += 1
            ok = True
            if k > 0:
                for a in range(k):
                    for c in range(k):
                        A[a, c] = M[S[a], S[c]]
                    b[a] = -q[S[a]]
                ok = solve_small(A, b, k, x)
                if not ok:
                    singular[nsing] = mask
                    nsing += 1
            zmax = 0.0
            if ok:
                for a in range(k):
                    zmax = max(zmax, abs(x[a]))
                for i in range(n):
                    z[i] = 0.0
                for a in range(k):
                    if x[a] < -tol * zmax:
                        ok = False
                        break
                    z[S[a]] = max(x[a], 0.0)
            if ok:
                wtol = tol * (qmax + mmax * zmax)
                for i in range(n):
                    if not ((mask >> i) & 1):
                        s = q[i]
                        for j in range(n):
                            s += M[i, j] * z[j]
                        if s < -wtol:
                            ok = False
                            break
            if ok:
                if found < max_solutions:
                    for i in range(n):
                        out[found, i] = z[i]
                found += 1
                if found >= max_solutions:
                    return found, tested, nsing
            if size == 0:
                break
            c = mask & -mask
            r = mask + c
            mask = (((r ^ mask) >> 2) // c) | r
    return found, tested, nsing
