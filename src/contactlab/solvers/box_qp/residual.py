"""The relative residual ``box-qp`` checks its iterates with: the one solve() certifies
(problems/residual.py), w_i in units of its row's terms |q_i| + |M_i||z|."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...kernels.residual import csr_box_error
from ...problems.residual import box_relative, relative_error, row_terms


def _residual(M, q, z, w, lo, hi, absM=None):
    """The relative residual solve() certifies: each w_i in units of its row's terms |q_i| + |M_i||z|
    (problems/residual.py, row_terms)."""
    if absM is None or sp.issparse(M):      # row_terms: one compiled pass over a CSR matrix's entries
        t = row_terms(M, z, q)
    else:                                   # a dense |M| kept by the caller (the interior point)
        t = np.abs(q) + absM @ np.abs(z)
    return relative_error(box_relative(z, w, lo, hi, q, t=t))


def _certified(M, q, lo, hi, x, w, work, absM=None):
    """(w, r): w = M x + q and the certified relative residual r of x, one compiled pass for CSR (w
    written into ``w``; ``work``: 5 x n scratch), else through :func:`_residual` (``absM``: a dense
    |M| kept by the caller)."""
    if sp.issparse(M) and M.format == "csr":
        return w, float(csr_box_error(M.indptr, M.indices, M.data, q, lo, hi, x, w, work))
    w = M @ x + q
    return w, _residual(M, q, x, w, lo, hi, absM)
