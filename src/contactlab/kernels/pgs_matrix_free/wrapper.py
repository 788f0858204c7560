"""The Python entry point of matrix-free PGS: argument conversion and the one compiled call."""
from __future__ import annotations

import numpy as np

from .sweep import solve_matrix_free_kernel


def solve_matrix_free(H, W, q, cfm, lo, hi, findex, mu, z0=None, max_sweeps=50, tol=0.0, check=10,
                      floor_factor=None, report=True, w_step_tol=0.0, height=None):
    """PGS on the boxed LCP (H W H' + diag(cfm), q) with bounds lo/hi and findex/mu coupling,
    A never formed. ``H``: CSR (n, 6 nbody); ``W``: (nbody, 6, 6) blocks of M^-1; ``cfm``: scalar or
    (n,). Rows are swept uncoupled first, then coupled (``solvers/pgs.py``'s ``normals_first``);
    ``height`` (n,): within each class the highest row first (:func:`sweep_order`; None: H's order).
    ``z0``: warm start (clipped into the static bounds). ``report=False``: an answer that does not
    reach ``tol`` gets the cheap lower bound of its relative residual in stats[2], not the exact
    value (a position correction reads only z). ``w_step_tol``: Bullet's stop (:func:`pgs_matrix_free`
    ``tol_w``; 0: off). Returns (z, w, dv, status, stats) with
    dv = W H' z (nbody, 6) and stats as :func:`pgs_matrix_free`. The layout, the sweeps and the
    report run as one compiled call (:func:`~.sweep.solve_matrix_free_kernel`)."""
    from ..tolerances import NORMWISE_FLOOR
    n = H.shape[0]
    f = np.float64
    cfm = np.asarray(cfm, dtype=f)
    cfm = np.full(n, float(cfm)) if cfm.ndim == 0 else np.ascontiguousarray(cfm)
    z = np.zeros(n) if z0 is None else np.array(z0, dtype=f)
    ok, w, dv, code, stats = solve_matrix_free_kernel(
        np.asarray(H.indptr, dtype=np.int64), np.asarray(H.indices, dtype=np.int64), np.asarray(H.data, dtype=f),
        np.ascontiguousarray(W, dtype=f), np.ascontiguousarray(q, dtype=f), cfm, np.ascontiguousarray(lo, dtype=f),
        np.ascontiguousarray(hi, dtype=f), np.asarray(findex, dtype=np.int64), np.ascontiguousarray(mu, dtype=f), z,
        int(max_sweeps), int(check), float(tol), float(w_step_tol),
        NORMWISE_FLOOR if floor_factor is None else float(floor_factor), bool(report),
        np.zeros(0) if height is None else np.ascontiguousarray(height, dtype=f))
    if not ok:
        raise ValueError("a row of H touches more than two bodies; the matrix-free layout needs pairwise rows")
    return z, w, dv, int(code), stats
