"""FIND-INDICES (drumwright Alg. 2): the largest independent row sets of J, S and T.

Rows are tried in the order of Alg. 2 (all rows of J, then S_i and T_i for each contact i); a
candidate row g is kept when [G_kept; g] M^-1 [G_kept; g]' stays nonsingular. The Cholesky factor
L of G_kept M^-1 G_kept' is grown by one row and column per kept candidate (a bordered update,
O(m^2) per candidate: one product with the kept rows and one triangular solve), never
refactorised. At most m rows can be kept (drumwright Sec. VI, Lemma 1).

The whole chain (M's block Cholesky factor, the selection, the null-space basis, the reduced
problem of eq. 57 and the recovery of the multipliers) runs in compiled kernels
(kernels/noslip.py); this module checks inputs and names the results.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from ..kernels import noslip as K
from ..problems import FactoredLCP


@dataclass
class IndexSets:
    """Result of :func:`find_indices`.

    ``G`` (k, m): the kept rows in trial order, with L L' = G M^-1 G' (``L`` lower triangular).
    ``order[k]`` = (block, row) of row k of G, block 0/1/2 for J/S/T; ``kept[k]`` its index among
    the candidates (Alg. 2's trial order). ``J_rows``, ``S_rows``, ``T_rows``: kept row indices of
    J, S, T (sorted; formed when read).
    """

    G: np.ndarray
    L: np.ndarray
    order: np.ndarray
    kept: np.ndarray

    def _rows(self, block: int) -> np.ndarray:
        return np.sort(self.order[self.order[:, 0] == block, 1])

    @property
    def J_rows(self) -> np.ndarray:
        return self._rows(0)

    @property
    def S_rows(self) -> np.ndarray:
        return self._rows(1)

    @property
    def T_rows(self) -> np.ndarray:
        return self._rows(2)

    @property
    def rank(self) -> int:
        return self.G.shape[0]


def _candidates(J, S, T, m: int = 0):
    """Candidate rows in Alg. 2's order (all of J, then S_i, T_i for each contact i) as one array
    (r, m), and their (block, row) labels (r, 2); ``m`` columns when there are no rows."""
    j = 0 if J is None else J.shape[0]
    n = 0 if S is None else S.shape[0]
    m = (J if J is not None else S).shape[1] if (j or n) else m
    G = np.empty((j + 2 * n, m))
    labels = np.empty((j + 2 * n, 2), dtype=np.int64)
    if j:
        G[:j] = J
        labels[:j, 0] = 0
        labels[:j, 1] = np.arange(j)
    if n:
        G[j::2] = S
        G[j + 1::2] = T
        labels[j::2, 0] = 1
        labels[j + 1::2, 0] = 2
        labels[j:, 1] = np.repeat(np.arange(n), 2)
    return G, labels


class MassFactor:
    """The Cholesky factor of an SPD mass matrix M by diagonal blocks (kernels/noslip.py
    ``mass_factor``: one block per body for a ConstraintSystem's M); ``solve(b)`` = M^-1 b for a
    vector b (m,) or the columns of b (m, c). Raises ModelError when M is not positive definite."""

    __slots__ = ("M", "L", "starts", "nb")

    def __init__(self, M: np.ndarray):
        self.M = M = np.ascontiguousarray(M, dtype=np.float64)
        m = M.shape[0]
        self.L = np.empty((m, m))
        self.starts = np.empty(m + 1, dtype=np.int64)
        self.nb = K.mass_factor(M, self.L, self.starts)
        if self.nb < 0:
            raise ModelError("M is not positive definite; a mass matrix must be SPD")

    def solve(self, b) -> np.ndarray:
        b = np.asarray(b, dtype=np.float64)
        if b.ndim == 1:
            x = np.empty(b.shape[0])
            K.mass_solve(self.L, self.starts, self.nb, np.ascontiguousarray(b), x)
            return x
        X = np.empty((b.shape[1], b.shape[0]))
        K.mass_solve_rows(self.L, self.starts, self.nb, np.ascontiguousarray(b.T), X)
        return X.T

    def solve_rows(self, B: np.ndarray) -> np.ndarray:
        """(M^-1 B')' for the rows of B (C-contiguous (r, m))."""
        X = np.empty_like(B)
        K.mass_solve_rows(self.L, self.starts, self.nb, B, X)
        return X


def step_inputs(M, n: int, n_joint: int, normal_bias, J_rhs):
    """Shared checks of the no-slip and viscous builders: (bias (n,), joint rhs (n_joint,),
    Cholesky factor of M (a :class:`MassFactor`), M^-1 solve), with ModelErrors naming the argument."""
    bias = np.zeros(n) if normal_bias is None else np.asarray(normal_bias, dtype=np.float64).ravel()
    if bias.shape != (n,):
        raise ModelError(f"normal_bias has length {bias.shape[0]}; expected {n} (one per row of N)")
    jr = np.zeros(n_joint) if J_rhs is None else np.asarray(J_rhs, dtype=np.float64).ravel()
    if jr.shape != (n_joint,):
        raise ModelError(f"J_rhs has length {jr.shape[0]}; expected {n_joint} (one per row of J)")
    cf = MassFactor(M)
    return bias, jr, cf, cf.solve


def find_indices(M, J=None, S=None, T=None, *, tol: float = 1e-9, M_solve=None) -> IndexSets:
    """drumwright Alg. 2: indices of J, S, T rows such that A (eq. 47) is nonsingular.

    M (m, m) SPD; J (j, m), S and T (n, m) or None. ``tol`` is relative: a row is dependent when its
    distance (in the M^-1 metric) from the span of the kept rows, squared, is below tol times its
    squared length. ``M_solve`` (optional) is a callable b -> M^-1 b reusing a factorisation.
    """
    M = np.ascontiguousarray(M, dtype=np.float64)
    m = M.shape[0]
    if M.ndim != 2 or M.shape != (m, m):
        raise ModelError(f"M must be square, got shape {M.shape}")
    if (S is None) != (T is None):
        raise ModelError("pass both S and T (the two contact tangents) or neither")
    mats = []
    for name, X in (("J", J), ("S", S), ("T", T)):
        if X is not None:
            X = np.atleast_2d(np.asarray(X, dtype=np.float64))
            if X.shape[1] != m:
                raise ModelError(f"{name} has {X.shape[1]} columns; expected m = {m} (columns of M)")
        mats.append(X)
    J, S, T = mats
    if S is not None and S.shape != T.shape:
        raise ModelError(f"S {S.shape} and T {T.shape} must have the same shape (one row per contact)")
    G, labels = _candidates(J, S, T, m)
    if M_solve is None:
        factor = MassFactor(M)
        M_solve = factor.solve
    return select_rows(G, labels, M_solve, tol, m)


def select_rows(G: np.ndarray, labels: np.ndarray, M_solve, tol: float, m: int) -> IndexSets:
    """Alg. 2 on candidate rows G (r, m) in trial order with (block, row) ``labels`` (r, 2) (see
    :func:`_candidates`); ``M_solve`` is a :class:`MassFactor` or a callable b -> M^-1 b (columns)."""
    if not G.shape[0]:
        return IndexSets(np.zeros((0, m)), np.zeros((0, 0)), np.zeros((0, 2), dtype=np.int64), np.zeros(0, np.int64))
    G = np.ascontiguousarray(G, dtype=np.float64)
    if isinstance(M_solve, MassFactor):
        W = M_solve.solve_rows(G)
    else:
        solve = getattr(M_solve, "__self__", None)
        W = solve.solve_rows(G) if isinstance(solve, MassFactor) else \
            np.ascontiguousarray(np.asarray(M_solve(np.ascontiguousarray(G.T))).T)
    L = np.zeros((m, m))
    kept = np.zeros(m, dtype=np.int64)
    k = K.find_indices_kernel(G, W, float(tol), L, kept, np.zeros(m), np.zeros(m + 1, dtype=np.int64),
                              np.zeros(m * m, dtype=np.int64))
    kept = kept[:k]
    return _index_sets(labels, kept, G[kept], np.ascontiguousarray(L[:k, :k]))


def _index_sets(labels: np.ndarray, kept: np.ndarray, Gk: np.ndarray, L: np.ndarray) -> IndexSets:
    """IndexSets of the kept candidates (indices into Alg. 2's trial order with ``labels``)."""
    return IndexSets(Gk, L, labels[kept], kept)


class ShiftedFactoredLCP(FactoredLCP):
    """A contact LCP kept factored, with a constant offset and optional CFM on the rows:

        w = N M^-1 (N' z + f) + offset + cfm * z   (q = N M^-1 f + offset).

    CFM is FactoredLCP's own ``cfm`` (``ppm`` adds it to the non-basic block's diagonal: still
    O(m^3 + m^2 n), the n x n matrix is never formed). ``accel(z)[:k]`` are the coordinates.
    """

    def __init__(self, N, M, f, offset, cfm: float = 0.0):
        N = np.asarray(N, dtype=np.float64)
        M = np.asarray(M, dtype=np.float64)
        f = np.asarray(f, dtype=np.float64)
        self.k = M.shape[0]
        offset = np.asarray(offset, dtype=np.float64).ravel()
        if offset.shape != (N.shape[0],):
            raise ModelError(f"offset has length {offset.shape[0]}; expected {N.shape[0]}")
        super().__init__(N, M, f=f, offset=offset, cfm=cfm)

    @classmethod
    def from_factor(cls, N, M, L, f, f_star, offset, q, cfm: float = 0.0):
        """:meth:`FactoredLCP.from_factor` (parts computed by the compiled reduction, not re-checked)."""
        self = super().from_factor(N, M, L, f, f_star, offset, q, cfm)
        self.k = M.shape[0]
        return self

    def coordinates(self, z: np.ndarray) -> np.ndarray:
        """The reduced coordinates u (first k of accel) for impulses z."""
        return self.accel(z)[:self.k]

    def __repr__(self):
        return f"ShiftedFactoredLCP(n={self.n}, m={self.k})"


@dataclass
class Reduced:
    """Equality rows G x = r eliminated: x = x_p + Z u, with G x_p = r (M-minimum-norm) and Z an
    orthonormal basis of null(G); ``problem`` is the contact LCP in u (a ShiftedFactoredLCP) for
    M x = p + U' z + G' lam."""

    problem: ShiftedFactoredLCP
    Z: np.ndarray
    x_p: np.ndarray
    sets: IndexSets
    M_factor: MassFactor
    p: np.ndarray = None
    U: np.ndarray = None

    def x(self, z: np.ndarray) -> np.ndarray:
        return self.x_p + self.Z @ self.problem.coordinates(z)

    def M_solve(self, b):
        return self.M_factor.solve(b)

    def recover(self, z: np.ndarray, n_joint: int, n_contact: int):
        """(x, lam, joint, s, t, U x) for the contact impulses z (n,), in one compiled pass: x = x_p + Z u
        (u the problem's coordinates), the kept rows' multipliers lam = (G M^-1 G')^-1 G M^-1 (M x - p - U' z)
        (G' lam = M x - p - U' z) and lam scattered to (joint, S, T) vectors (n_joint joint rows and
        n_contact S and T rows)."""
        cf, sets, pr = self.M_factor, self.sets, self.problem
        return K.recover_kernel(cf.M, cf.L, cf.starts, cf.nb, sets.G, sets.L, sets.order, self.x_p, self.Z,
                                pr.N, pr.lower_factor(), pr.f_star, self.p, self.U,
                                np.ascontiguousarray(z, dtype=np.float64), n_joint, n_contact)


NOT_FINITE = "v, f, J, S, T, N, J_rhs or the normal biases contain NaN or inf"
