"""The contact LCP kept in factored form: Q = N M^-1 N', q = N M^-1 f (drumwright eq. 41-42)."""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ProblemError
from ..kernels.dense import chol_solve
from ..kernels.factored import factored_certify, factored_w_terms
from .base import Problem
from .lcp import LCP
from .residual import Residuals, lcp_relative, lcp_residuals
from .validation import as_matrix, as_vector, is_symmetric, matvec, to_dense


def _chol_solve(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """M^-1 b from the lower Cholesky factor L of M: compiled for a vector, LAPACK for columns."""
    if b.ndim == 1:
        x = np.empty(L.shape[0])
        chol_solve(L, L.shape[0], np.ascontiguousarray(b, dtype=np.float64), x)
        return x
    return sla.cho_solve((L, True), b, check_finite=False)


class FactoredLCP(Problem):
    """LCP (N M^-1 N' + cfm I, N M^-1 f + offset) with N (n, m) contact rows and M (m, m) SPD.

    Pass ``f`` (generalized forces, q = N M^-1 f) or ``f_star`` (already M^-1 f, q = N f_star, as
    drumwright Alg. 1 line 2); ``offset`` (n,) adds constant row terms (stabilisation biases);
    ``cfm`` >= 0 constraint force mixing on the diagonal (w = N M^-1 (N'z + f) + offset + cfm z).
    The n x n matrix is formed only by :meth:`to_lcp`.
    """

    def __init__(self, N, M, f=None, *, f_star=None, offset=None, cfm: float = 0.0):
        self.N = as_matrix("N", N)
        n, m = self.N.shape
        self.M = as_matrix("M", M, (m, m), square=True)
        self.n, self.m = n, m
        if (f is None) == (f_star is None):
            raise ProblemError("pass exactly one of f (forces) or f_star (= M^-1 f)")
        if sp.issparse(self.M):
            if not is_symmetric(self.M):
                raise ProblemError("M must be symmetric (a mass matrix): max |M - M'| > SYMMETRY max |M|")
            try:
                self._solve = spla.factorized(sp.csc_matrix(self.M))
            except RuntimeError as exc:
                raise ProblemError(f"M is singular ({exc}); a mass matrix must be positive definite") from None
        else:
            if not is_symmetric(self.M):
                raise ProblemError("M must be symmetric (a mass matrix): max |M - M'| > SYMMETRY max |M|")
            try:
                cf = sla.cho_factor(self.M, check_finite=False)
            except np.linalg.LinAlgError:
                raise ProblemError("M is not positive definite; a mass matrix must be SPD") from None
            self._chol = cf
            self._solve = lambda b: sla.cho_solve(cf, b, check_finite=False)
        if f_star is None:
            self.f = as_vector("f", f, m)
            self.f_star = np.asarray(self._solve(self.f), dtype=np.float64).ravel()
        else:
            self.f_star = as_vector("f_star", f_star, m)
            self.f = matvec(self.M, self.f_star)
        self.offset = np.zeros(n) if offset is None else as_vector("offset", offset, n)
        self.q = matvec(self.N, self.f_star) + self.offset
        try:
            self.cfm = float(cfm)
        except (TypeError, ValueError):
            raise ProblemError(f"cfm must be a number >= 0, got {cfm!r}") from None
        if not (np.isfinite(self.cfm) and self.cfm >= 0.0):
            raise ProblemError(f"cfm must be finite and >= 0, got {cfm!r}")

    @classmethod
    def from_factor(cls, N: np.ndarray, M: np.ndarray, L: np.ndarray, f: np.ndarray, f_star: np.ndarray,
                    offset: np.ndarray, q: np.ndarray, cfm: float = 0.0):
        """A problem whose parts a model computed itself (no checks, no factorisation): dense C-contiguous
        float64 N (n, m), symmetric M (m, m) with its lower Cholesky factor L (L L' = M), f, f_star = M^-1 f,
        offset and q = N f_star + offset (e.g. models/find_indices.py's compiled no-slip reduction, whose
        inputs were checked once). The same object as the checked constructor would build."""
        self = cls.__new__(cls)
        self.N, self.M = N, M
        self.n, self.m = N.shape
        self._chol = (L, True)
        self._lower = L
        self._solve = lambda b: _chol_solve(L, b)
        self.f, self.f_star, self.offset, self.q = f, f_star, offset, q
        self.cfm = float(cfm)
        if not (math.isfinite(self.cfm) and self.cfm >= 0.0):    # math: ~20x cheaper than np.isfinite on a float
            raise ProblemError(f"cfm must be finite and >= 0, got {cfm!r}")
        return self

    def lower_factor(self) -> np.ndarray:
        """The lower Cholesky factor L of M (L L' = M), C-contiguous, computed once."""
        if getattr(self, "_lower", None) is None:
            if hasattr(self, "_chol"):
                c, lower = self._chol
                self._lower = np.ascontiguousarray(np.tril(c) if lower else np.triu(c).T)
            else:
                self._lower = np.ascontiguousarray(np.linalg.cholesky(to_dense(self.M)))
        return self._lower

    def solve_M(self, b: np.ndarray) -> np.ndarray:
        """M^-1 b with the factorisation made once at construction."""
        return np.asarray(self._solve(b), dtype=np.float64).reshape(b.shape)

    def accel(self, z: np.ndarray) -> np.ndarray:
        """a = M^-1 N' z + f_star (drumwright Alg. 1 line 13)."""
        return self.solve_M(matvec(self.N.T, z)) + self.f_star

    def w(self, z):
        w = matvec(self.N, self.accel(z)) + self.offset
        return w + self.cfm * np.asarray(z, dtype=np.float64) if self.cfm else w

    def residuals(self, z, w=None) -> Residuals:
        return lcp_residuals(z, self.w(z) if w is None else w)

    def relative_residuals(self, z, w=None, x=None) -> Residuals:
        """:func:`lcp_relative` with the terms of w_i = N_i (M^-1 N' z + f*) + offset_i + cfm z_i:
        t = |N| (|M^-1 N' z| + |f*|) + |offset| + cfm |z|."""
        return self.certify(np.asarray(z, dtype=np.float64), w)[2]

    def certify(self, z, w=None):
        """(w, absolute, relative Residuals) with one solve with M."""
        if isinstance(self.N, np.ndarray) and hasattr(self, "_chol"):   # dense: one compiled pass
            z = np.ascontiguousarray(z, dtype=np.float64)
            t = np.empty(self.n)
            w_out = np.empty(self.n) if w is None else np.asarray(w, dtype=np.float64)
            factored_w_terms(self.N, self.lower_factor(), self.f_star, self.offset, self.cfm, z, w_out, t, w is None)
            return w_out, lcp_residuals(z, w_out), lcp_relative(z, w_out, self.q, t)
        s = self.solve_M(matvec(self.N.T, z))
        if w is None:
            w = matvec(self.N, s + self.f_star) + self.offset
            if self.cfm:
                w = w + self.cfm * z
        if getattr(self, "_absN", None) is None:
            self._absN = abs(self.N) if sp.issparse(self.N) else np.abs(self.N)
        t = matvec(self._absN, np.abs(s) + np.abs(self.f_star)) + np.abs(self.offset)
        if self.cfm:
            t += self.cfm * np.abs(z)
        return w, lcp_residuals(z, w), lcp_relative(z, w, self.q, t)

    def certify_numbers(self, z):
        """:meth:`certify` as (w, six numbers) (what ``solve()`` reads): for a dense N with M's Cholesky
        factor, one compiled call running the same kernels (kernels/factored.py ``factored_certify``)."""
        if isinstance(self.N, np.ndarray) and hasattr(self, "_chol"):
            return factored_certify(self.N, self.lower_factor(), self.f_star, self.offset, self.cfm, self.q,
                                    np.ascontiguousarray(z, dtype=np.float64))
        return super().certify_numbers(z)

    def is_trivial(self) -> bool:
        return self.n == 0 or float(self.q.min()) >= 0.0

    def scale(self) -> float:
        return max(1.0, float(np.max(np.abs(self.q), initial=0.0)))

    def lcp_reduction(self):
        Nd = to_dense(self.N)
        Q = Nd @ self.solve_M(np.ascontiguousarray(Nd.T))
        Q = 0.5 * (Q + Q.T)
        if self.cfm:
            Q[np.diag_indices_from(Q)] += self.cfm
        return LCP(Q, self.q), lambda z: z

    def __repr__(self):
        return f"FactoredLCP(n={self.n}, m={self.m})"
