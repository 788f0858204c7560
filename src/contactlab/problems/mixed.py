"""Mixed LCP of drumwright eq. (4)-(7) and its Schur-complement reduction (eq. 8-10)."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..errors import ProblemError
from .base import Problem
from .lcp import LCP
from ..kernels.mixed import mixed_row_terms, symmetric_row_norm
from ..kernels.tolerances import NORMWISE_FLOOR
from .residual import Residuals, certified_error, lcp_relative, lcp_residuals
from .structure import as_structure
from .validation import as_matrix, as_vector, matvec, to_dense

#: the SPD shortcut of MixedLCP._reduce keeps every row only when its bound on lambda_min(A) beats
#: the QR's rank threshold by this factor (the computed QR then decides the same with room to spare)
SPD_RANK_MARGIN = 100.0
#: :meth:`MixedLCP.polish`: at most this many block-pivoting rounds, and only on systems of at most
#: this many unknowns (kept x plus basic y; one dense LU a round)
POLISH_ROUNDS = 6
POLISH_MAX_UNKNOWNS = 3000


def _identity(y):
    return y


class MixedLCP(Problem):
    """A x + C y + g = 0,  w = D x + B y + h >= 0,  y >= 0,  y'w = 0  (drumwright eq. 4-7).

    Shapes: A (p, p), C (p, n), D (n, p), B (n, n), g (p,), h (n,). x is free, y is the
    complementarity variable (``Solution.z`` holds y, ``Solution.x`` holds x).
    ``rank_tol`` is the relative tolerance of the rank-revealing QR that drops redundant
    equality rows (the purpose of drumwright Alg. 2). ``structure``: what its builder knows of its
    rows (:class:`~contactlab.problems.ProblemStructure`, e.g. the row kinds of y).
    """

    def __init__(self, A, C, D, B, g, h, *, rank_tol: float = 1e-10, structure=None):
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
        self.structure = as_structure(structure)

    @classmethod
    def trusted(cls, A: np.ndarray, C: np.ndarray, D: np.ndarray, B: np.ndarray, g: np.ndarray, h: np.ndarray,
                *, rank_tol: float = 1e-10, structure=None) -> "MixedLCP":
        """A problem whose parts a model assembled itself (no checks): dense C-contiguous float64
        A (p, p), C (p, n), D (n, p), B (n, n), g (p,), h (n,), all finite (the caller checked
        them once, e.g. models/common.py ``mixed_problem``). The same object as the checked
        constructor would build."""
        self = cls.__new__(cls)
        self.A, self.C, self.D, self.B, self.g, self.h = A, C, D, B, g, h
        self.n, self.p = B.shape[0], A.shape[0]
        self.rank_tol = rank_tol
        self._reduced = None
        if structure is not None:
            self.structure = structure
        return self

    # -- Schur reduction ---------------------------------------------------------------
    def _reduce(self):
        """Pick independent equality rows R by QR with column pivoting of [A C]^T; factor A[R, R].

        Dropped rows must be implied by the kept ones (else the MLCP is inconsistent), and the
        matching x components are fixed at zero (the redundant multipliers of a KKT system).
        Computed once: (keep, dropped, A_RR^-1 C_R, A_RR^-1 g_R), reused by :meth:`recover_x`,
        :meth:`lcp_reduction`, :meth:`is_trivial` and the residuals.

        Symmetric positive definite A (J M^-1 J' of independent joint rows) skips the QR: with
        A = L L' (Cholesky), lambda_min(A) >= 1 / trace(A^-1) = 1 / ||L^-1||_F^2, and every
        diagonal entry of the pivoted QR's R satisfies |R_kk| >= sigma_min([A C]') >= lambda_min(A),
        while |R_00| is the largest row norm of [A C]; so when 1 / ||L^-1||_F^2 exceeds
        ``SPD_RANK_MARGIN`` * rank_tol * |R_00|, the QR keeps every row (its rank test passes with
        that margin to spare) and A's Cholesky factor gives the solves.
        """
        if self._reduced is not None:
            return self._reduced
        p = self.p
        if p == 0:
            self._reduced = (np.arange(0), np.arange(0), np.zeros((0, self.n)), np.zeros(0))
            return self._reduced
        red = self._reduce_spd()
        if red is None:
            red = self._reduce_qr()
        self._reduced = red
        return red

    def _reduce_spd(self):
        """The full-rank SPD case of :meth:`_reduce` (None when it does not apply)."""
        A = self.A
        symmetric, row0 = symmetric_row_norm(A, self.C)
        if not symmetric:
            return None
        L, info = sla.lapack.dpotrf(A, lower=1, clean=1)
        if info != 0:
            return None
        Li, info = sla.lapack.dtrtri(L, lower=1)
        if info != 0:
            return None
        trace_inv = float(np.vdot(Li, Li))
        if not (np.isfinite(trace_inv) and trace_inv > 0.0 and 1.0 / trace_inv > SPD_RANK_MARGIN * self.rank_tol * row0):
            return None
        X = Li.T @ (Li @ np.column_stack([self.C, self.g]))      # A^-1 [C g]
        return np.arange(self.p), np.arange(0), np.ascontiguousarray(X[:, :-1]), np.ascontiguousarray(X[:, -1])

    def _reduce_qr(self):
        p = self.p
        AC = np.hstack([self.A, self.C])
        Rq, piv = sla.qr(AC.T, mode="r", pivoting=True)
        d = np.abs(np.diag(Rq))
        rank = int(np.sum(d > self.rank_tol * max(d[0], 1e-300))) if d.size else 0
        keep = np.sort(piv[:rank])
        dropped = np.setdiff1d(np.arange(p), keep)
        lu = sla.lu_factor(self.A[np.ix_(keep, keep)], check_finite=False)
        diag_u = np.abs(np.diag(lu[0]))
        if diag_u.size and diag_u.min() <= self.rank_tol * max(diag_u.max(), 1e-300):
            raise ProblemError("A has no nonsingular principal block on its independent rows; "
                               "the MLCP cannot be reduced by a Schur complement (check A's structure)")
        if keep.size:
            AinvC = sla.lu_solve(lu, self.C[keep], check_finite=False)
            Ainvg = sla.lu_solve(lu, self.g[keep], check_finite=False)
        else:
            AinvC, Ainvg = np.zeros((0, self.n)), np.zeros(0)
        return keep, dropped, AinvC, Ainvg

    @property
    def kept_rows(self) -> np.ndarray:
        return self._reduce()[0]

    @property
    def dropped_rows(self) -> np.ndarray:
        return self._reduce()[1]

    def recover_x(self, y: np.ndarray) -> np.ndarray:
        """x_R = -A_RR^{-1} (C_R y + g_R), x_dropped = 0 (drumwright eq. 8)."""
        keep, _, AinvC, Ainvg = self._reduce()
        if keep.size == self.p:
            return -(AinvC @ y + Ainvg)
        x = np.zeros(self.p)
        if keep.size:
            x[keep] = -(AinvC @ y + Ainvg)
        return x

    def lcp_reduction(self):
        """F = B - D A^{-1} C, e = h - D A^{-1} g (drumwright eq. 9-10) on the kept rows (formed once)."""
        if getattr(self, "_lcp", None) is None:
            keep, _, AinvC, Ainvg = self._reduce()
            B = to_dense(self.B)
            if keep.size:
                Dk = self.D if keep.size == self.p else self.D[:, keep]
                F, e = B - Dk @ AinvC, self.h - Dk @ Ainvg
            else:
                F, e = B.copy(), self.h.copy()
            self._lcp = LCP(F, e)
        return self._lcp, _identity

    def is_trivial(self) -> bool:
        """Whether z = 0 solves the problem exactly (:meth:`residuals` at z = 0 all zero): the
        equality rows at x = recover_x(0) first, the w rows only when those hold exactly."""
        if self.n == 0:
            return True
        x = self.recover_x(np.zeros(self.n))
        if self.equality_residual(x, np.zeros(self.n)) != 0.0:
            return False
        r = self.residuals(np.zeros(self.n), x)
        return r.natural == 0.0 and r.infeasibility == 0.0

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

    def _size(self) -> float:
        """The data's size max(|h|, |g|) (x carries the equality rows' rounding into w): floors both units."""
        return max(float(np.max(np.abs(self.h), initial=0.0)), float(np.max(np.abs(self.g), initial=0.0)))

    def relative_residuals(self, z, w=None, x=None) -> Residuals:
        """The LCP part as :func:`lcp_relative` with t = |D||x| + |B||y| + |h|; each equality row
        relative to its own terms |A||x| + |C||y| + |g| (at least NORMWISE_FLOOR times the data's size).
        Dense B: the term sizes and the equality rows in one compiled pass (kernels/mixed.py)."""
        x = self.recover_x(z) if x is None else x
        w = self.w(z, x) if w is None else w
        if isinstance(self.B, np.ndarray):
            t = np.empty(self.n)
            f = np.float64
            eq, _, size = mixed_row_terms(self.A, self.C, self.D, self.B, self.g, self.h, np.ascontiguousarray(x, dtype=f),
                                          np.ascontiguousarray(z, dtype=f), NORMWISE_FLOOR, t)
        else:
            size = self._size()
            ax, az = np.abs(x), np.abs(z)
            te = np.abs(self.A) @ ax + np.abs(self.C) @ az + np.abs(self.g)
            t = np.abs(self.D) @ ax + matvec(abs(self.B), az) + np.abs(self.h)
            e = np.abs(self.A @ x + self.C @ z + self.g)
            te = np.maximum(te, NORMWISE_FLOOR * size)
            with np.errstate(divide="ignore", invalid="ignore"):
                eq = float(np.max(np.where(te > 0, e / np.where(te > 0, te, 1.0), 0.0), initial=0.0))
        r = lcp_relative(z, w, self.h, t, size)
        return Residuals(max(r.natural, eq), r.complementarity, max(r.infeasibility, eq))

    def polish(self, z: np.ndarray, threshold: float, rounds: int = POLISH_ROUNDS):
        """Block principal pivoting from an almost-certified answer y = ``z`` on the FULL mixed problem.

        The reduced LCP F = B - D A^-1 C (eq. 9) of a stiff problem can be so ill-conditioned
        (F's condition number ~ 1e10 with large mu and small CFM) that an answer accurate on F misses
        the mixed problem's own certificate (eq. 4-7) by a small factor. Kept fixed, the active set
        {i: y_i > w_i} such an answer found turns the problem into a square linear system,
        [A_RR C_RB; D_BR B_BB] [x_R; y_B] = -[g_R; h_B] with y_N = 0 (R: A's kept rows, B: the basic
        set, N its complement), solved here by one dense LU directly on the mixed data, not through F.
        The basic set is then corrected as in block principal pivoting (Judice & Pires, Computers &
        Operations Research 21(5), 1994, 587-596; Kostreva, Linear Algebra Appl. 21, 1978, 207-215):
        the basic rows with y_B < 0 leave; when there is none, the nonbasic rows with w_N < 0 enter;
        and again, at most ``rounds`` times.

        Each round's candidate (y_B clipped at 0) is judged by the certificate solve() applies,
        ``certified_error`` of :meth:`relative_residuals`, against ``threshold``. Returns
        (y, rounds_used) for the first candidate that passes, else None (also when the system is
        singular, non-finite or larger than POLISH_MAX_UNKNOWNS): never an uncertified answer.
        """
        y0 = np.asarray(z, dtype=np.float64)
        keep = self._reduce()[0]
        nk = keep.size
        if y0.shape != (self.n,) or not np.all(np.isfinite(y0)):
            return None
        x0 = self.recover_x(y0)
        basic = y0 > self.w(y0, x0)
        full = keep.size == self.p
        A = self.A if full else self.A[np.ix_(keep, keep)]
        C = self.C if full else self.C[keep]
        D = self.D if full else self.D[:, keep]
        g = self.g if full else self.g[keep]
        for r in range(1, rounds + 1):
            bi = np.flatnonzero(basic)
            if nk + bi.size > POLISH_MAX_UNKNOWNS:
                return None
            Bbb = self.B[np.ix_(bi, bi)] if isinstance(self.B, np.ndarray) else self.B[bi][:, bi].toarray()
            K = np.block([[A, C[:, bi]], [D[bi], Bbb]])
            try:
                u = np.linalg.solve(K, -np.concatenate([g, self.h[bi]]))
            except np.linalg.LinAlgError:
                return None
            if not np.all(np.isfinite(u)):
                return None
            y = np.zeros(self.n)
            y[bi] = u[nk:]
            w = self.w(y)
            neg_basic = bi[y[bi] < 0.0]
            neg_free = np.flatnonzero(~basic & (w < 0.0))
            cand = np.maximum(y, 0.0)
            rel = self.relative_residuals(cand)
            if certified_error(rel.natural, rel.infeasibility) <= threshold:
                return cand, r
            if neg_basic.size:
                basic[neg_basic] = False
            elif neg_free.size:
                basic[neg_free] = True
            else:
                return None
        return None

    def scale(self) -> float:
        return max(1.0, float(np.max(np.abs(self.h), initial=0.0)), float(np.max(np.abs(self.g), initial=0.0)))

    def __repr__(self):
        return f"MixedLCP(p={self.p}, n={self.n})"
