"""The one residual definition (DESIGN.md convention 6), used by ``solve()`` after every solver.

Every measure is an infinity norm so that it reads as "the worst violated condition".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Residuals:
    natural: float          # ||z - Pi(z - w)||_inf: zero iff z solves the problem
    complementarity: float  # worst |z_i w_i| (box form: w_i times the distance to the active bound)
    infeasibility: float    # worst violation of z >= 0, w >= 0 (box form: of lo <= z <= hi)


def _inf(x: np.ndarray) -> float:
    return float(np.max(np.abs(x))) if x.size else 0.0


def lcp_residuals(z: np.ndarray, w: np.ndarray) -> Residuals:
    """Natural map ||min(z, w)||_inf of the LCP w = Mz + q, z >= 0, w >= 0, z'w = 0."""
    if z.size == 0:
        return Residuals(0.0, 0.0, 0.0)
    natural = float(np.abs(np.minimum(z, w)).max())
    comp = float(np.abs(z * w).max())
    if not (np.isfinite(natural) and np.isfinite(comp)):
        return Residuals(np.inf, np.inf, np.inf)
    infeas = max(0.0, -float(z.min()), -float(w.min()))
    return Residuals(natural, comp, infeas)


def lcp_natural_residual(z: np.ndarray, w: np.ndarray) -> float:
    """Just ||min(z, w)||_inf (inf for non-finite input): the cheap check solvers use internally."""
    if z.size == 0:
        return 0.0
    r = float(np.abs(np.minimum(z, w)).max())
    return r if np.isfinite(r) else np.inf


def box_residuals(z: np.ndarray, w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Residuals:
    """Mid-function residual ||z - mid(lo, hi, z - w)||_inf of the boxed LCP.

    lo <= z <= hi, with z_i = lo_i => w_i >= 0, z_i = hi_i => w_i <= 0, lo_i < z_i < hi_i => w_i = 0.
    """
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(w))):
        return Residuals(np.inf, np.inf, np.inf)
    natural = _inf(z - np.clip(z - w, lo, hi))
    with np.errstate(invalid="ignore"):
        gap_lo = np.where(np.isfinite(lo), z - lo, np.inf)
        gap_hi = np.where(np.isfinite(hi), hi - z, np.inf)
        comp_lo = np.where(w > 0, np.where(np.isfinite(gap_lo), w * gap_lo, np.inf), 0.0)
        comp_hi = np.where(w < 0, np.where(np.isfinite(gap_hi), -w * gap_hi, np.inf), 0.0)
    comp = max(_inf(np.maximum(comp_lo, 0.0)), _inf(np.maximum(comp_hi, 0.0)))
    infeas = max(0.0, _inf(np.maximum(lo - z, 0.0)), _inf(np.maximum(z - hi, 0.0)))
    return Residuals(natural, comp, infeas)
