"""Bertsekas's projected Newton method (SIAM J. Control Optim. 20(2), 1982) on the bound-constrained
QP min 1/2 z'Mz + q'z, lo <= z <= hi, in Python: the path of large sparse problems, and the
reference the compiled loop (kernels/box_qp.py) is tested against."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...problems.residual import box_relative, relative_error
from .factors import _factor_solve


def _qp(M, q, lo, hi, z, opts, tol, counter, full_steps=False):
    """Projected Newton on min 1/2 z'Mz + q'z, lo <= z <= hi from z; returns (z, w, converged).
    ``full_steps``: only full Newton steps; give up at the first one without sufficient decrease (a
    held set far from the answer's: on a large problem the interior point is then cheaper than a
    line search and more Newton steps). The Armijo test takes the decrease f(z + dz) - f(z) =
    dz'(w + M dz / 2) as such: the difference of the two objective values cancels near the answer,
    where a Newton step's decrease is below their rounding and the test accepted or refused at random.
    Dense problems run this loop compiled (kernels/box_qp.py, through _compiled); this is the
    reference it is tested against and the path of large sparse problems."""
    diag = M.diagonal() if sp.issparse(M) else np.diag(M)
    for it in range(opts.max_iterations):
        w = M @ z + q
        if relative_error(box_relative(z, w, lo, hi, q)) <= tol:
            return z, w, True
        counter[0] += 1
        step = z - np.clip(z - w / diag, lo, hi)
        eps = min(1e-3 * max(float(np.max(np.abs(z), initial=0.0)), 1e-300),
                  float(np.max(np.abs(step), initial=0.0)))
        held = ((z <= lo + eps) & (w > 0)) | ((z >= hi - eps) & (w < 0))
        F = np.flatnonzero(~held)
        zt = None
        # Newton on the free rows, else a scaled projected gradient (full_steps: the full Newton step only)
        for newton in ((True,) if full_steps else (True, False)):
            d = -w / diag
            if newton:
                # the first step may reuse the last factorisation of nearly the same matrix (STALE)
                d[F] = _factor_solve(M, F, -w[F], opts.dense_max, stale_ok=it == 0)
            t = 1.0
            for _ in range(1 if full_steps else 30):
                cand = np.clip(z + t * d, lo, hi)
                dz = cand - z
                if dz @ (w + 0.5 * (M @ dz)) <= opts.armijo * (w @ dz) and np.any(dz):
                    zt = cand
                    break
                t *= 0.5
            if zt is not None:
                break
        if zt is None:
            return z, w, False
        z = zt
    w = M @ z + q
    return z, w, relative_error(box_relative(z, w, lo, hi, q)) <= tol
