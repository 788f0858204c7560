"""Mixed LCP of drumwright eq. (4)-(7) and its Schur-complement reduction (eq. 8-10)."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..errors import ProblemError
from .base import Problem
from .lcp import LCP
from ..kernels.tolerances import NORMWISE_FLOOR
from .residual import Residuals, lcp_relative, lcp_residuals
from .validation import as_matrix, as_vector, matvec, to_dense


class MixedLCP(Problem):
    """A x + C y + g = 0,  w = D x + B y + h >= 0,  y >= 0,  y'w = 0  (drumwright eq. 4-7).

    Shapes: A (p, p), C (p, n), D (n, p), B (n, n), g (p,), h (n,). x is free, y is the
    complementarity variable (``Solution.z`` holds y, ``Solution.x`` holds x).
    ``rank_tol`` is the relative tolerance of the rank-revealing QR that drops redundant
    equality rows (the purpose of drumwright Alg. 2).
    """

    def __init__(self, A, C, D, B, g, h, *, rank_tol: float = 1e-10):
        self.A = to_dense(as_matrix("A", A, square=True))
        p = self.A.shape[0]
        self.B = as_matrix("B", B, square=True)
        n = self.B.shape[0]
        self.C = to_dense(as_matrix("C", C, (p, n)))
        self.D = to_dense(as_matrix("D", D, (n, p)))
        self.g = as_vector("g", g, p)
        self.h = as_vector("h", h, n)
        self.n, self.p = n, p
        self.rank_tol = rank_tol
        self._reduced = None

    # -- Schur reduction ---------------------------------------------------------------
    def _reduce(self):
        """Pick independent equality rows R by QR with column pivoting of [A C]^T; factor A[R, R].

        Dropped rows must be implied by the kept ones (else the MLCP is inconsistent), and the
        matching x components are fixed at zero (the redundant multipliers of a KKT system).
        """
        if self._reduced is not None:
            return self._reduced
        p = self.p
        if p == 0:
            self._reduced = (np.arange(0), None, np.arange(0))
            return self._reduced
        AC = np.hstack([self.A, self.C])
        _, Rq, piv = sla.qr(AC.T, mode="economic", pivoting=True)
        d = np.abs(np.diag(Rq))
        rank = int(np.sum(d > self.rank_tol * max(d[0], 1e-300))) if d.size else 0
        keep = np.sort(piv[:rank])
        dropped = np.setdiff1d(np.arange(p), keep)
        lu = sla.lu_factor(self.A[np.ix_(keep, keep)], check_finite=False)
        diag_u = np.abs(np.diag(lu[0]))
        if diag_u.size and diag_u.min() <= self.rank_tol * max(diag_u.max(), 1e-300):
            raise ProblemError("A has no nonsingular principal block on its independent rows; "
                               "the MLCP cannot be reduced by a Schur complement (check A's structure)")
        self._reduced = (keep, lu, dropped)
        return self._reduced

    @property
    def kept_rows(self) -> np.ndarray:
        return self._reduce()[0]

    @property
    def dropped_rows(self) -> np.ndarray:
        return self._reduce()[2]

    def recover_x(self, y: np.ndarray) -> np.ndarray:
        """x = -A_RR^{-1} (C_R y + g_R), x_dropped = 0 (drumwright eq. 8)."""
        keep, lu, _ = self._reduce()
        x = np.zeros(self.p)
        if keep.size:
            x[keep] = -sla.lu_solve(lu, self.C[keep] @ y + self.g[keep], check_finite=False)
        return x

    def lcp_reduction(self):
        """F = B - D A^{-1} C, e = h - D A^{-1} g (drumwright eq. 9-10) on the kept rows."""
        keep, lu, dropped = self._reduce()
        B = to_dense(self.B)
        if keep.size:
            AinvC = sla.lu_solve(lu, self.C[keep], check_finite=False)
            Ainvg = sla.lu_solve(lu, self.g[keep], check_finite=False)
            Dk = self.D[:, keep]
            F, e = B - Dk @ AinvC, self.h - Dk @ Ainvg
        else:
            F, e = B.copy(), self.h.copy()
        return LCP(F, e), lambda y: y

    def equality_residual(self, x: np.ndarray, y: np.ndarray) -> float:
        r = self.A @ x + self.C @ y + self.g
        return float(np.max(np.abs(r), initial=0.0))

    def w(self, z, x=None):
        x = self.recover_x(z) if x is None else x
        return self.D @ x + matvec(self.B, z) + self.h

    def residuals(self, z, x=None) -> Residuals:
        x = self.recover_x(z) if x is None else x
        r = lcp_residuals(z, self.w(z, x))
        eq = self.equality_residual(x, z)
        return Residuals(max(r.natural, eq), r.complementarity, max(r.infeasibility, eq))

    def relative_residuals(self, z, w=None, x=None) -> Residuals:
        """The LCP part as :func:`lcp_relative` with t = |D||x| + |B||y| + |h|; each equality row
        relative to its own terms |A||x| + |C||y| + |g|."""
        x = self.recover_x(z) if x is None else x
        ax, az = np.abs(x), np.abs(z)
        absB = abs(self.B) if hasattr(self.B, "nnz") else np.abs(self.B)
        te = np.abs(self.A) @ ax + np.abs(self.C) @ az + np.abs(self.g)
        # the data's size (x carries the equality rows' rounding into w): floors both units
        size = max(float(np.max(np.abs(self.h), initial=0.0)), float(np.max(np.abs(self.g), initial=0.0)))
        t = np.abs(self.D) @ ax + matvec(absB, az) + np.abs(self.h)
        r = lcp_relative(z, self.w(z, x) if w is None else w, self.h, t, size)
        e = np.abs(self.A @ x + self.C @ z + self.g)
        te = np.maximum(te, NORMWISE_FLOOR * size)
        with np.errstate(divide="ignore", invalid="ignore"):
            eq = float(np.max(np.where(te > 0, e / np.where(te > 0, te, 1.0), 0.0), initial=0.0))
        return Residuals(max(r.natural, eq), r.complementarity, max(r.infeasibility, eq))

    def scale(self) -> float:
        return max(1.0, float(np.max(np.abs(self.h), initial=0.0)), float(np.max(np.abs(self.g), initial=0.0)))

    def __repr__(self):
        return f"MixedLCP(p={self.p}, n={self.n})"
