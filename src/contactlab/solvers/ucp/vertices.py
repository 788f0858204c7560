"""Adjacent extreme points of {u >= 0 : A u = a} (Pang-Trinkle-Lo section 4, Step 3; Murty,
Linear Programming, section 3.7.1)."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla


def complete_basis(A: np.ndarray, u: np.ndarray, hint: np.ndarray | None, tol: float) -> np.ndarray:
    """Indices of ``rank(A)`` independent columns containing the support of the vertex ``u``."""
    rows, m = A.shape
    support = np.flatnonzero(u > tol)
    if rows == 0:
        return np.zeros(0, dtype=np.int64)
    if support.size:
        Q, R, piv = sla.qr(A[:, support], mode="economic", pivoting=True)
        k = int(np.sum(np.abs(np.diag(R)) > 1e-10 * max(1.0, abs(R[0, 0]))))
        chosen = list(support[piv[:k]])
        Q = Q[:, :k]
    else:
        chosen, Q = [], np.zeros((rows, 0))
    if len(chosen) < rows:
        others = np.setdiff1d(np.arange(m), chosen)
        if hint is not None:   # prefer the columns the LP reported basic
            others = np.concatenate([others[hint[others]], others[~hint[others]]])
        Rm = A[:, others] - Q @ (Q.T @ A[:, others])
        _, R2, piv2 = sla.qr(Rm, mode="economic", pivoting=True)
        need = rows - len(chosen)
        chosen += list(others[piv2[:need]])
    return np.array(chosen, dtype=np.int64)


def adjacent_vertices(A: np.ndarray, u: np.ndarray, hint, tol: float, max_bases: int = 12) -> np.ndarray:
    """Extreme points of {u >= 0 : A u = a} adjacent to the vertex ``u`` (rows of the result): one
    simplex pivot along each nonbasic column; at a degenerate vertex, degenerate pivots explore up
    to ``max_bases`` bases of the same vertex."""
    rows, m = A.shape
    if rows == 0:
        return np.zeros((0, m))
    start = complete_basis(A, u, hint, tol)
    seen_bases = {np.sort(start).tobytes()}
    queue = [start]
    blocks = []
    while queue:
        basis = queue.pop(0)
        try:
            lu = sla.lu_factor(A[:, basis])
        except (ValueError, sla.LinAlgError):
            continue
        nonbasic = np.setdiff1d(np.arange(m), basis)
        D = sla.lu_solve(lu, A[:, nonbasic])
        if not np.all(np.isfinite(D)):
            continue
        uB = u[basis]
        dec = D > 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(dec, uB[:, None] / np.where(dec, D, 1.0), np.inf)
        leave = np.argmin(ratios, axis=0)
        t = ratios[leave, np.arange(nonbasic.size)]
        edge = np.isfinite(t)                  # columns with an infinite t are extreme rays
        move = edge & (t > tol)
        if np.any(move):
            cols, tk = nonbasic[move], t[move]
            V = np.repeat(u[None, :], cols.size, axis=0)
            V[np.arange(cols.size), cols] = tk
            V[:, basis] -= tk[:, None] * D[:, move].T
            V[V < tol] = 0.0
            blocks.append(V)
        for k in np.flatnonzero(edge & ~move):   # degenerate pivots: same vertex, new basis
            if len(seen_bases) >= max_bases:
                break
            nb = basis.copy()
            nb[leave[k]] = nonbasic[k]
            kb = np.sort(nb).tobytes()
            if kb not in seen_bases:
                seen_bases.add(kb)
                queue.append(nb)
    if not blocks:
        return np.zeros((0, m))
    V = np.vstack(blocks)
    _, first = np.unique(np.round(V, 9), axis=0, return_index=True)
    V = V[np.sort(first)]
    return V[np.any(np.abs(V - u) > 1e-9 * max(1.0, float(np.abs(u).max(initial=0))), axis=1)]
