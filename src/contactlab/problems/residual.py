"""The one residual definition (DESIGN.md convention 6), used by ``solve()`` after every solver.

Every measure is an infinity norm so that it reads as "the worst violated condition".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.residual import box_residual_kernel, lcp_residual_kernel
from ..kernels.tolerances import ROUNDING_UNIT


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


def _inf(v) -> float:
    return float(np.max(np.abs(v))) if np.size(v) else 0.0


def lcp_relative(z: np.ndarray, w: np.ndarray, q: np.ndarray, terms: float = 0.0) -> Residuals:
    """Scale-free residuals of the LCP w = M z + q: z measured in units of zs = ||z||_inf, w in
    units of ws = max(||q||_inf, ||w - q||_inf, ROUNDING_UNIT * terms) (= max(||q||, ||M z||, ...);
    ``terms`` bounds the size of the products summed into w, e.g. max|M| ||z||_1), so

        natural = max_i |min(z_i / zs, w_i / ws)|, complementarity = max_i |z_i w_i| / (zs ws),
        infeasibility = max(0, -min z / zs, -min w / ws).

    Invariant under (M, q) -> (c M, c q) and under z -> a z with M -> M / a: the problem's own scale,
    no absolute floor. (With z = 0 only w counts: the answer z = 0 is right iff w = q >= 0.)"""
    z = np.asarray(z, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(w))):
        return Residuals(np.inf, np.inf, np.inf)
    ws = max(_inf(q), _inf(w - q), ROUNDING_UNIT * terms)
    zs = _inf(z)
    if ws == 0.0:           # q = 0 and M z = 0: every entry of w is exactly zero
        return Residuals(max(0.0, -float(np.min(z, initial=0.0))) / (zs or 1.0), 0.0,
                         max(0.0, -float(np.min(z, initial=0.0))) / (zs or 1.0))
    if zs == 0.0:
        bad = max(0.0, -float(np.min(w, initial=0.0))) / ws
        return Residuals(bad, 0.0, bad)
    nat, comp, inf = lcp_residual_kernel(np.ascontiguousarray(z / zs), np.ascontiguousarray(w / ws))
    return Residuals(nat, comp, inf)


def box_relative(z: np.ndarray, w: np.ndarray, lo: np.ndarray, hi: np.ndarray, q: np.ndarray,
                 terms: float = 0.0) -> Residuals:
    """Scale-free residuals of the boxed LCP: as :func:`box_residuals` with z in units of
    zs = ||z||_inf (the largest finite bound when z = 0) and w in units of
    ws = max(||q||, ||w - q||, ROUNDING_UNIT * terms) as in :func:`lcp_relative`."""
    z = np.asarray(z, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(w))):
        return Residuals(np.inf, np.inf, np.inf)
    ws = max(_inf(q), _inf(w - q), ROUNDING_UNIT * terms) or 1.0
    zs = _inf(z)
    if zs == 0.0:
        fin = np.concatenate([lo[np.isfinite(lo)], hi[np.isfinite(hi)]])
        zs = _inf(fin) or 1.0
    f = np.float64
    nat, comp, inf = box_residual_kernel(np.ascontiguousarray(z / zs, dtype=f), np.ascontiguousarray(w / ws, dtype=f),
                                         np.ascontiguousarray(lo / zs, dtype=f), np.ascontiguousarray(hi / zs, dtype=f))
    return Residuals(nat, comp, inf)


def relative_error(r: Residuals) -> float:
    """The one number ``solve()`` certifies: max(natural, infeasibility) of a relative Residuals."""
    return max(r.natural, r.infeasibility)
