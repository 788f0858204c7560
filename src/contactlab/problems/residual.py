"""The one residual definition (DESIGN.md convention 6), used by ``solve()`` after every solver.

Every measure is an infinity norm so that it reads as "the worst violated condition".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..kernels.residual import box_relative_kernel, csr_abs_terms, box_residual_kernel, lcp_relative_kernel, lcp_residual_kernel


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


def row_terms(M, z: np.ndarray, q: np.ndarray) -> np.ndarray:
    """t_i = |q_i| + sum_j |M_ij| |z_j|: the size of the terms summed into w_i = (M z + q)_i, the
    unit of w_i in the relative residuals (only the columns of nonzero z are read)."""
    z = np.asarray(z, dtype=np.float64)
    if sp.issparse(M) and M.format == "csr":          # one compiled pass over the entries
        return csr_abs_terms(M.indptr, M.indices, M.data, np.ascontiguousarray(q, dtype=np.float64),
                             np.ascontiguousarray(z))
    t = np.abs(q).astype(np.float64)
    S = np.flatnonzero(z)
    if S.size:
        if sp.issparse(M):
            t += np.asarray(abs(M[:, S]) @ np.abs(z[S])).ravel()
        else:
            t += np.abs(M[:, S]) @ np.abs(z[S])
    return t


def _terms(q, w, t):
    """t when given, else |q| + |w - q| (<= the true term sizes: a stricter unit, never a looser one)."""
    if t is not None:
        return np.asarray(t, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    return np.abs(q) + np.abs(w - q)


def lcp_relative(z: np.ndarray, w: np.ndarray, q: np.ndarray, t: np.ndarray | None = None,
                 size: float | None = None) -> Residuals:
    """Scale-free residuals of the LCP w = M z + q: z in units of ||z||_inf, each w_i in units of
    the size t_i of its own terms (:func:`row_terms`), so

        natural = max_i |min(z_i / ||z||, w_i / t_i)|, complementarity = max_i |z_i w_i| / (||z|| t_i),
        infeasibility = max(0, -min_i z_i / ||z||, -min_i w_i / t_i).

    A componentwise backward error (with t_i at least NORMWISE_FLOOR max|q|, kernels/tolerances.py;
    ``size`` replaces max|q| where the data's size is known better, e.g. a mixed LCP's equations):
    natural <= tol means z solves a problem whose data differ from (M, q) by at most tol relative
    to their own entries (or that floor). Invariant under (M, q) -> (c M, c q)
    (and under z -> a z with M -> M / a): no absolute floor. With z = 0 only w = q counts."""
    f = np.float64
    z = np.ascontiguousarray(z, dtype=f)
    w = np.ascontiguousarray(w, dtype=f)
    t = np.ascontiguousarray(_terms(q, w, t), dtype=f)
    return Residuals(*lcp_relative_kernel(z, w, np.ascontiguousarray(q, dtype=f), t,
                                          -1.0 if size is None else float(size)))


def box_relative(z: np.ndarray, w: np.ndarray, lo: np.ndarray, hi: np.ndarray, q: np.ndarray,
                 t: np.ndarray | None = None, size: float | None = None) -> Residuals:
    """Scale-free residuals of the boxed LCP: :func:`box_residuals` with z, lo, hi in units of
    ||z||_inf (the largest finite bound when z = 0) and each w_i in units of t_i (:func:`row_terms`)."""
    f = np.float64
    z = np.ascontiguousarray(z, dtype=f)
    w = np.ascontiguousarray(w, dtype=f)
    t = np.ascontiguousarray(_terms(q, w, t), dtype=f)
    return Residuals(*box_relative_kernel(z, w, np.ascontiguousarray(lo, dtype=f), np.ascontiguousarray(hi, dtype=f),
                                          np.ascontiguousarray(q, dtype=f), t, -1.0 if size is None else float(size),
                                          np.empty((4, z.size))))


def relative_error(r: Residuals) -> float:
    """The one number ``solve()`` certifies: max(natural, infeasibility) of a relative Residuals."""
    return certified_error(r.natural, r.infeasibility)


def certified_error(natural: float, infeasibility: float) -> float:
    """:func:`relative_error` from the two numbers (relative natural residual and infeasibility);
    inf when either is NaN (Python's ``max`` would drop a NaN in second place)."""
    if natural != natural or infeasibility != infeasibility:
        return float("inf")
    return max(natural, infeasibility)
