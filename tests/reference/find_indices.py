"""Python references of the no-slip reduction, kept for the tests (issue 41 item 6): FIND-INDICES by
brute force (a fresh rank test per candidate), and the reduction with an orthonormal null-space basis
(Householder, kernels/noslip.py ``nullspace_kernel``, ``reduce_kernel`` and ``noslip_chain``) that the
models replaced by the M-metric chain (models/noslip.py). Moved here from models/find_indices.py."""
from __future__ import annotations

import numpy as np

from contactlab.errors import ModelError
from contactlab.kernels import noslip as K
from contactlab.kernels.dense import chol_solve
from contactlab.models.find_indices import (NOT_FINITE, IndexSets, MassFactor, Reduced, ShiftedFactoredLCP,
                                            _candidates)


def find_indices_bruteforce(M, J=None, S=None, T=None) -> tuple:
    """Reference for tests: Alg. 2 with a fresh eigenvalue rank test of X' M^-1 X per candidate."""
    M = np.asarray(M, dtype=np.float64)
    G, labels = _candidates(None if J is None else np.atleast_2d(J), S, T)
    rows = list(G)
    Minv = np.linalg.inv(M)
    kept: list[int] = []
    for i, g in enumerate(rows):
        X = np.array([rows[j] for j in kept] + [g])
        if np.linalg.matrix_rank(X @ Minv @ X.T) == len(kept) + 1:
            kept.append(i)
    lab = np.array(labels, dtype=np.int64).reshape(-1, 2)[kept]
    return tuple(np.sort(lab[lab[:, 0] == b, 1]) for b in range(3))


def nullspace_basis(G: np.ndarray, m: int) -> np.ndarray:
    """Orthonormal basis Z (m, m - k) of {v : G v = 0} for G (k, m) with independent rows
    (Householder reflections of G' over their nonzeros, last row first: kernels/noslip.py
    ``nullspace_kernel``)."""
    k = G.shape[0]
    if k == 0:
        return np.eye(m)
    Z = np.empty((m, m - k))
    code = K.nullspace_kernel(np.array(G, dtype=np.float64, order="C"), Z, np.empty(k * m), np.empty(k),
                              np.empty(k + 1, dtype=np.int64), np.empty(k * m, dtype=np.int64),
                              np.empty(m, dtype=np.bool_))
    if code:
        raise ModelError("the rows of G are linearly dependent (FIND-INDICES keeps independent rows only)")
    return Z


def constraint_impulses(sets: IndexSets, M_solve, r: np.ndarray) -> np.ndarray:
    """lambda with G' lambda = r for r in range(G'): lambda = (G M^-1 G')^-1 G M^-1 r, using L."""
    if sets.rank == 0:
        return np.zeros(0)
    y = sets.G @ M_solve(r)
    lam = np.empty(sets.rank)
    chol_solve(sets.L, sets.rank, np.ascontiguousarray(y), lam)
    return lam


def split_impulses(sets: IndexSets, lam: np.ndarray, n_joint: int, n_contact: int):
    """Scatter kept-row multipliers back to full (joint, S, T) vectors; dropped rows get zero."""
    out = [np.zeros(n_joint), np.zeros(n_contact), np.zeros(n_contact)]
    K.scatter_impulses(sets.order, np.ascontiguousarray(lam, dtype=np.float64), *out)
    return out


def reduce_equalities(M, p, U, sets: IndexSets, rhs_of_row, bias, cfm: float = 0.0,
                      M_factor=None) -> Reduced:
    """Contact LCP after removing the kept equality rows of ``sets`` (drumwright eq. 8-10 / 56-57).

    Solves M x = p + U' z + G' lam, G x = r, 0 <= z _|_ U x + bias (+ cfm z) >= 0 with x = x_p + Z u:
    Z' M Z u = Z' (p + U' z) (Z' M x_p = 0 since M x_p lies in range(G')). ``rhs_of_row`` is r, one
    value per kept row in ``sets.order`` (an array), or a callable (block, row) -> r. ``M_factor``: M's
    :class:`MassFactor` if already made. One compiled pass (kernels/noslip.py ``reduce_kernel``).
    """
    M = np.ascontiguousarray(M, dtype=np.float64)
    m = M.shape[0]
    cf = M_factor if isinstance(M_factor, MassFactor) else MassFactor(M)
    k = sets.rank
    if callable(rhs_of_row):
        r = np.array([rhs_of_row(int(b), int(i)) for b, i in sets.order], dtype=np.float64)
    else:
        r = np.ascontiguousarray(rhs_of_row, dtype=np.float64).reshape(k)
    Z = nullspace_basis(sets.G, m)
    d = Z.shape[1]
    U = np.ascontiguousarray(U, dtype=np.float64).reshape(-1, m)
    n = U.shape[0]
    p = np.ascontiguousarray(p, dtype=np.float64)
    bias = np.ascontiguousarray(bias, dtype=np.float64)
    x_p, UZ, Mr, Lr = np.empty(m), np.empty((n, d)), np.empty((d, d)), np.empty((d, d))
    Zp, f_star, offset, q = np.empty(d), np.empty(d), np.empty(n), np.empty(n)
    if not K.reduce_kernel(M, cf.L, cf.starts, cf.nb, np.ascontiguousarray(sets.G), sets.L, r, Z, p, U, bias,
                           x_p, UZ, Mr, Lr, Zp, f_star, offset, q, np.empty(m), np.empty(k)):
        raise ModelError(_NOT_SPD)
    return _reduced(sets, cf, Z, x_p, UZ, Mr, Lr, Zp, f_star, offset, q, cfm, p, U)


_NOT_SPD = "Z' M Z is not positive definite; M must be SPD"


def _reduced(sets, cf, Z, x_p, UZ, Mr, Lr, Zp, f_star, offset, q, cfm, p, U) -> Reduced:
    """The Reduced of the compiled reduction's parts (``problem`` built from its factors, unchecked)."""
    if Z.shape[1] == 0:   # every coordinate is fixed: one inert coordinate keeps the factored form
        one = np.ones((1, 1))
        problem = ShiftedFactoredLCP.from_factor(np.zeros((offset.shape[0], 1)), one, one, np.zeros(1), np.zeros(1),
                                                 offset, offset.copy(), cfm)
        Z = np.zeros((Z.shape[0], 1))
    else:
        problem = ShiftedFactoredLCP.from_factor(UZ, Mr, Lr, Zp, f_star, offset, q, cfm)
    return Reduced(problem, Z, x_p, sets, cf, p, U)


def reduce_step(cf: MassFactor, J: np.ndarray, ST: np.ndarray, rhs_j: np.ndarray, tol: float, v: np.ndarray,
                f: np.ndarray, h: float, U: np.ndarray, bias: np.ndarray, cfm: float = 0.0) -> Reduced:
    """FIND-INDICES on the candidate rows [J; ST] (Alg. 2's order: J (j, m) with J x = rhs_j, then
    S_i, T_i interleaved in ST (2 n, m) with zero right-hand sides) and :func:`reduce_equalities` of
    the kept rows for M x = M v + h f + U' z + G' lam (``Reduced.p`` = M v + h f; v = 0, h = 1 gives
    p = f exactly), in one compiled call (kernels/noslip.py ``noslip_chain``: the same kernels as
    :func:`select_rows` and :func:`reduce_equalities`). Inputs C-contiguous float64; ModelError if
    one is not finite. The orthonormal-basis reference of the tests: the no-slip and viscous models
    run the M-metric chain (kernels/noslip.py ``metric_chain_rows``; ``noslip_metric_chain`` for
    dense rows)."""
    st, kept, order, p, Lg, Gk, Z, x_p, UZ, Mr, Lr, Zp, f_star, offset, q = K.noslip_chain(
        cf.M, cf.L, cf.starts, cf.nb, J, ST, rhs_j, float(tol), v, f, float(h), U, bias)
    if st:
        raise ModelError({1: "FIND-INDICES kept dependent rows (numerical failure)", 2: _NOT_SPD,
                          3: NOT_FINITE}[st])
    return _reduced(IndexSets(Gk, Lg, order, kept), cf, Z, x_p, UZ, Mr, Lr, Zp, f_star, offset, q, cfm, p, U)
