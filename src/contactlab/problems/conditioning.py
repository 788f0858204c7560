"""Ill-conditioned SPD LCPs with a known, nondegenerate solution (the iterative-solver benchmark family).

The solution z* has about half its entries positive; w* is positive exactly where z* is zero, and
q = w* - M z*. Strict complementarity makes z* the unique solution and keeps the active set
well defined, so the difficulty measured is the conditioning of M alone.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ProblemError
from .lcp import LCP


def _known_solution(n: int, rng: np.random.Generator, active: float) -> tuple[np.ndarray, np.ndarray]:
    pos = rng.random(n) >= active
    z = np.where(pos, rng.uniform(0.1, 1.0, n), 0.0)
    w = np.where(pos, 0.0, rng.uniform(0.1, 1.0, n))
    return z, w


def dense_ill_conditioned_lcp(n: int, cond: float, rng: np.random.Generator, *,
                              active: float = 0.5) -> tuple[LCP, np.ndarray]:
    """(LCP, z*) with M = Q diag(lam) Q', lam geometric in [1/cond, 1], Q Haar-random orthogonal."""
    if n < 1 or not cond >= 1.0:
        raise ProblemError("n >= 1 and cond >= 1 are required")
    lam = rng.permutation(np.geomspace(1.0 / cond, 1.0, n))
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    Q *= np.sign(np.diag(R) + (np.diag(R) == 0))
    M = (Q * lam) @ Q.T
    M = 0.5 * (M + M.T)
    z, w = _known_solution(n, rng, active)
    return LCP(M, w - M @ z), z


def sparse_ill_conditioned_lcp(n: int, cond: float, rng: np.random.Generator, *,
                               active: float = 0.5) -> tuple[LCP, np.ndarray]:
    """(LCP, z*) with banded CSR M = (L^p + s I) / ||.||: L the 1-D Dirichlet Laplacian (p = 1, or p = 2
    when cond exceeds what L reaches at this n), shift s >= 0 chosen so that cond_2(M) = ``cond``."""
    if n < 2 or not cond > 1.0:
        raise ProblemError("n >= 2 and cond > 1 are required")
    lmin = 4.0 * np.sin(np.pi / (2 * (n + 1))) ** 2
    lmax = 4.0 * np.sin(n * np.pi / (2 * (n + 1))) ** 2
    L = sp.diags([-np.ones(n - 1), 2.0 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    p = 1 if lmax / lmin >= cond else 2
    if p == 2:
        L = (L @ L).tocsr()
        lmin, lmax = lmin ** 2, lmax ** 2
        if lmax / lmin < cond:
            raise ProblemError(f"cond {cond:g} is out of reach at n = {n} (at most {lmax / lmin:.3g}); raise n")
    s = (lmax - cond * lmin) / (cond - 1.0)
    M = ((L + s * sp.eye(n, format="csr")) / (lmax + s)).tocsr()
    z, w = _known_solution(n, rng, active)
    return LCP(M, w - M @ z), z
