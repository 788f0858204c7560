"""The one residual definition (DESIGN.md convention 6), used by ``solve()`` after every solver.

Every measure is an infinity norm so that it reads as "the worst violated condition".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.residual import box_residual_kernel, lcp_residual_kernel


@dataclass(frozen=True)
class Residuals:
    natural: float          # ||z - Pi(z - w)||_inf: zero iff z solves the problem
    complementarity: float  # worst |z_i w_i| (box form: w_i times the distance to the active bound)
    infeasibility: float    # worst violation of z >= 0, w >= 0 (box form: of lo <= z <= hi)


def lcp_residuals(z: np.ndarray, w: np.ndarray) -> Residuals:
    """Natural map ||min(z, w)||_inf of the LCP w = Mz + q, z >= 0, w >= 0, z'w = 0;
    complementarity max |z_i w_i|; infeasibility max(0, -min z, -min w)."""
    return Residuals(*lcp_residual_kernel(np.ascontiguousarray(z, dtype=np.float64),
                                          np.ascontiguousarray(w, dtype=np.float64)))


def lcp_natural_residual(z: np.ndarray, w: np.ndarray) -> float:
    """Just ||min(z, w)||_inf (inf for non-finite input): the check solvers use internally."""
    return lcp_residual_kernel(np.ascontiguousarray(z, dtype=np.float64),
                               np.ascontiguousarray(w, dtype=np.float64))[0]


def box_residuals(z: np.ndarray, w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Residuals:
    """Mid-function residual ||z - mid(lo, hi, z - w)||_inf of the boxed LCP.

    lo <= z <= hi, with z_i = lo_i => w_i >= 0, z_i = hi_i => w_i <= 0, lo_i < z_i < hi_i => w_i = 0.
    Complementarity: w_i > 0 times (z_i - lo_i), -w_i > 0 times (hi_i - z_i) (inf if that bound
    is infinite); infeasibility: the worst bound violation.
    """
    f = np.float64
    return Residuals(*box_residual_kernel(np.ascontiguousarray(z, dtype=f), np.ascontiguousarray(w, dtype=f),
                                          np.ascontiguousarray(lo, dtype=f), np.ascontiguousarray(hi, dtype=f)))
