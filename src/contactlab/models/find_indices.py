"""FIND-INDICES (drumwright Alg. 2): the largest independent row sets of J, S and T.

Rows are tried in the order of Alg. 2 (all rows of J, then S_i and T_i for each contact i); a
candidate row g is kept when [G_kept; g] M^-1 [G_kept; g]' stays nonsingular. The Cholesky factor
L of G_kept M^-1 G_kept' is grown by one row and column per kept candidate (a bordered update,
O(m^2) per candidate: one product with the kept rows and one triangular solve), never
refactorised. At most m rows can be kept (drumwright Sec. VI, Lemma 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from ..errors import ModelError
from ..kernels._jit import jit
from ..problems import FactoredLCP


@jit
def _find_indices_kernel(G, W, tol, L, kept, col):
    """Greedy independent-row selection with a bordered Cholesky update.

    G (r, m) candidate rows in trial order; W (r, m) rows of (M^-1 G')' = G M^-1; tol relative
    threshold on the Schur complement d = g M^-1 g' - |l|^2. L (m, m) work array receives the factor
    of the kept rows' Gram matrix; kept (m,) receives their indices; col (m,) work. Returns the
    number kept (kernels never raise).
    """
    r, m = G.shape
    k = 0
    for i in range(r):
        if k >= m:
            break
        gg = 0.0
        for c in range(m):
            gg += G[i, c] * W[i, c]
        if not gg > 0.0:  # a zero (or non-finite) row is never independent
            continue
        # col = L^-1 (G_kept M^-1 g')  by forward substitution on the fly
        ll = 0.0
        for a in range(k):
            s = 0.0
            ra = kept[a]
            for c in range(m):
                s += G[ra, c] * W[i, c]
            for b in range(a):
                s -= L[a, b] * col[b]
            col[a] = s / L[a, a]
            ll += col[a] * col[a]
        d = gg - ll
        if d > tol * gg:
            for b in range(k):
                L[k, b] = col[b]
            L[k, k] = np.sqrt(d)
            kept[k] = i
            k += 1
    return k


@dataclass
class IndexSets:
    """Result of :func:`find_indices`.

    ``J_rows``, ``S_rows``, ``T_rows``: kept row indices of J, S, T (sorted). ``G`` (k, m): the
    kept rows in trial order, with L L' = G M^-1 G' (``L`` lower triangular). ``order[k]`` =
    (block, row) of row k of G, block 0/1/2 for J/S/T.
    """

    J_rows: np.ndarray
    S_rows: np.ndarray
    T_rows: np.ndarray
    G: np.ndarray
    L: np.ndarray
    order: np.ndarray

    @property
    def rank(self) -> int:
        return self.G.shape[0]


def _candidates(J, S, T):
    """Candidate rows in Alg. 2's order and their (block, row) labels."""
    rows, labels = [], []
    if J is not None:
        for i in range(J.shape[0]):
            rows.append(J[i]); labels.append((0, i))
    n = 0 if S is None else S.shape[0]
    for i in range(n):
        rows.append(S[i]); labels.append((1, i))
        rows.append(T[i]); labels.append((2, i))
    return rows, labels


def step_inputs(M, n: int, n_joint: int, normal_bias, J_rhs):
    """Shared checks of the no-slip and viscous builders: (bias (n,), joint rhs (n_joint,),
    Cholesky factor of M, M^-1 solve), with ModelErrors naming the argument."""
    bias = np.zeros(n) if normal_bias is None else np.asarray(normal_bias, dtype=np.float64).ravel()
    if bias.shape != (n,):
        raise ModelError(f"normal_bias has length {bias.shape[0]}; expected {n} (one per row of N)")
    jr = np.zeros(n_joint) if J_rhs is None else np.asarray(J_rhs, dtype=np.float64).ravel()
    if jr.shape != (n_joint,):
        raise ModelError(f"J_rhs has length {jr.shape[0]}; expected {n_joint} (one per row of J)")
    try:
        cf = sla.cho_factor(M, check_finite=False)
    except np.linalg.LinAlgError:
        raise ModelError("M is not positive definite; a mass matrix must be SPD") from None
    return bias, jr, cf, (lambda b: sla.cho_solve(cf, b, check_finite=False))


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
    rows, labels = _candidates(J, S, T)
    if not rows:
        e = np.zeros(0, dtype=np.int64)
        return IndexSets(e, e, e, np.zeros((0, m)), np.zeros((0, 0)), np.zeros((0, 2), dtype=np.int64))
    G = np.ascontiguousarray(np.array(rows))
    if M_solve is None:
        try:
            cf = sla.cho_factor(M, check_finite=False)
        except np.linalg.LinAlgError:
            raise ModelError("M is not positive definite; a mass matrix must be SPD") from None
        W = sla.cho_solve(cf, G.T, check_finite=False).T
    else:
        W = np.asarray(M_solve(np.ascontiguousarray(G.T))).T
    W = np.ascontiguousarray(W)
    L = np.zeros((m, m))
    kept = np.zeros(m, dtype=np.int64)
    col = np.zeros(m)
    k = _find_indices_kernel(G, W, float(tol), L, kept, col)
    kept = kept[:k]
    lab = np.array(labels, dtype=np.int64)[kept]
    pick = lambda b: np.sort(lab[lab[:, 0] == b, 1])
    return IndexSets(pick(0), pick(1), pick(2), G[kept], np.ascontiguousarray(L[:k, :k]), lab)


def find_indices_bruteforce(M, J=None, S=None, T=None) -> tuple:
    """Reference for tests: Alg. 2 with a fresh eigenvalue rank test of X' M^-1 X per candidate."""
    M = np.asarray(M, dtype=np.float64)
    rows, labels = _candidates(None if J is None else np.atleast_2d(J), S, T)
    Minv = np.linalg.inv(M)
    kept: list[int] = []
    for i, g in enumerate(rows):
        X = np.array([rows[j] for j in kept] + [g])
        if np.linalg.matrix_rank(X @ Minv @ X.T) == len(kept) + 1:
            kept.append(i)
    lab = np.array(labels, dtype=np.int64).reshape(-1, 2)[kept]
    return tuple(np.sort(lab[lab[:, 0] == b, 1]) for b in range(3))


def nullspace_basis(G: np.ndarray, m: int) -> np.ndarray:
    """Orthonormal basis Z (m, m - k) of {v : G v = 0} for G (k, m) with independent rows (QR of G')."""
    k = G.shape[0]
    if k == 0:
        return np.eye(m)
    Q, _ = sla.qr(G.T, mode="full", check_finite=False)
    return np.ascontiguousarray(Q[:, k:])


def constraint_impulses(sets: IndexSets, M_solve, r: np.ndarray) -> np.ndarray:
    """lambda with G' lambda = r for r in range(G'): lambda = (G M^-1 G')^-1 G M^-1 r, using L."""
    if sets.rank == 0:
        return np.zeros(0)
    y = sets.G @ M_solve(r)
    return sla.cho_solve((sets.L, True), y, check_finite=False)


def split_impulses(sets: IndexSets, lam: np.ndarray, n_joint: int, n_contact: int):
    """Scatter kept-row multipliers back to full (joint, S, T) vectors; dropped rows get zero."""
    out = [np.zeros(n_joint), np.zeros(n_contact), np.zeros(n_contact)]
    for (block, row), val in zip(sets.order, lam):
        out[block][row] = val
    return out


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

    def coordinates(self, z: np.ndarray) -> np.ndarray:
        """The reduced coordinates u (first k of accel) for impulses z."""
        return self.accel(z)[:self.k]

    def __repr__(self):
        return f"ShiftedFactoredLCP(n={self.n}, m={self.k})"


@dataclass
class Reduced:
    """Equality rows G x = r eliminated: x = x_p + Z u, with G x_p = r (M-minimum-norm) and Z an
    orthonormal basis of null(G); ``problem`` is the contact LCP in u (a ShiftedFactoredLCP)."""

    problem: ShiftedFactoredLCP
    Z: np.ndarray
    x_p: np.ndarray
    sets: IndexSets
    M_factor: tuple

    def x(self, z: np.ndarray) -> np.ndarray:
        return self.x_p + self.Z @ self.problem.coordinates(z)

    def M_solve(self, b):
        return sla.cho_solve(self.M_factor, b, check_finite=False)


def reduce_equalities(M, p, U, sets: IndexSets, rhs_of_row, bias, cfm: float = 0.0,
                      M_factor=None) -> Reduced:
    """Contact LCP after removing the kept equality rows of ``sets`` (drumwright eq. 8-10 / 56-57).

    Solves M x = p + U' z + G' lam, G x = r, 0 <= z _|_ U x + bias (+ cfm z) >= 0 with x = x_p + Z u:
    Z' M Z u = Z' (p + U' z) (Z' M x_p = 0 since M x_p lies in range(G')). ``rhs_of_row(block, row)``
    gives r for each kept row.
    """
    M = np.asarray(M, dtype=np.float64)
    m = M.shape[0]
    cf = M_factor if M_factor is not None else sla.cho_factor(M, check_finite=False)
    Z = nullspace_basis(sets.G, m)
    r = np.array([rhs_of_row(int(b), int(i)) for b, i in sets.order], dtype=np.float64)
    if sets.rank and np.any(r != 0):
        y = sla.cho_solve((sets.L, True), r, check_finite=False)
        x_p = sla.cho_solve(cf, sets.G.T @ y, check_finite=False)
    else:
        x_p = np.zeros(m)
    U = np.asarray(U, dtype=np.float64).reshape(-1, m)
    offset = U @ x_p + np.asarray(bias, dtype=np.float64)
    if Z.shape[1] == 0:   # every coordinate is fixed: one inert coordinate keeps the factored form
        problem = ShiftedFactoredLCP(np.zeros((U.shape[0], 1)), np.eye(1), np.zeros(1), offset, cfm)
        Z = np.zeros((m, 1))
    else:
        Mr = Z.T @ M @ Z
        problem = ShiftedFactoredLCP(U @ Z, 0.5 * (Mr + Mr.T), Z.T @ p, offset, cfm)
    return Reduced(problem, Z, x_p, sets, cf)
