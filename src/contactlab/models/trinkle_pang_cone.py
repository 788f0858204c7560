"""Trinkle, Pang, Sudarsky, Lo (1995/1997): the acceleration-level contact problem with Coulomb's
*quadratic* friction cones, written as an exact-cone :class:`FrictionContact` and solved by the Coulomb
solvers (nsgs, newton-ac, prox) instead of the friction-pyramid LCP.

The paper notes the cone model "cannot be conveniently formulated as a standard NCP". In the local
form it is one: with the generalised accelerations M a = f + G' c (G rows N_i, S_i, T_i per contact)
the contact accelerations are a_c = G M^-1 G' c + G M^-1 f + (bias_i, 0, 0), and

* a *rolling* contact (tangential velocity 0) obeys Coulomb's law on (c_i, a_c,i) exactly as the
  velocity-level problem does on (r, u): c_i in K_mu, and a_t != 0 only with c_t = -mu c_n a_t/|a_t|
  and a_n = 0 (the paper's eq. for rolling contacts with the quadratic cone);
* a *sliding* contact (|v_t| > slip_tol) has its friction force fixed to -mu c_n v_t/|v_t|: its
  normal column becomes G_n' - mu (v_t/|v_t|)' [S; T], the complementarity is a_n >= 0 ⊥ c_n >= 0,
  written here as a contact with mu = 0 whose tangential rows are the identity (c_t = 0).

The matrix W is then nonsymmetric (sliding columns); the solvers do not need symmetry. Joints are
not supported here (pass none); the pyramid model with joints, and its cone by pyramid refinement
(``solve_trinkle_pang_cone``), is models/trinkle_pang.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..problems.friction_contact import FrictionContact


@dataclass
class TPConeResult:
    a: np.ndarray            # generalised accelerations
    c: np.ndarray            # (nc, 3) contact forces (normal, t1, t2) in the contact frames
    sliding: np.ndarray      # indices of the sliding contacts
    status: str
    residual: float          # the exact-cone residual of the FrictionContact (solve()'s definition)
    problem: FrictionContact


def _dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64)


def trinkle_pang_cone_problem(M, v, f, N, S, T, mu, *, normal_bias=None, slip_tol: float = 1e-6):
    """The exact-cone acceleration-level problem as ``(FrictionContact, lift, sliding)``.

    M (m, m) SPD; v, f (m,); N, S, T (n, m) normal and tangent Jacobians; mu scalar or (n,);
    ``normal_bias`` (n,): Ndot v terms added to the normal accelerations. ``lift(c_local)`` returns
    (a, c) with c the (n, 3) forces (the sliding contacts' friction filled in)."""
    M, N, S, T = _dense(M), _dense(N), _dense(S), _dense(T)
    v = np.asarray(v, dtype=np.float64).ravel()
    f = np.asarray(f, dtype=np.float64).ravel()
    m = M.shape[0]
    if M.shape != (m, m) or v.shape != (m,) or f.shape != (m,):
        raise ModelError(f"M must be (m, m) and v, f (m,) with m = {m}")
    n = N.shape[0]
    if S.shape != (n, m) or T.shape != (n, m) or N.shape != (n, m):
        raise ModelError(f"N, S, T must all be ({n}, {m})")
    mu = np.broadcast_to(np.asarray(mu, dtype=np.float64), (n,)).copy()
    if np.any(mu < 0) or not np.all(np.isfinite(mu)):
        raise ModelError("mu must be finite and >= 0")
    bias = np.zeros(n) if normal_bias is None else np.asarray(normal_bias, dtype=np.float64).ravel()
    if bias.shape != (n,):
        raise ModelError(f"normal_bias has length {bias.shape[0]}; expected {n}")
    vt = np.stack([S @ v, T @ v], axis=1)
    speed = np.linalg.norm(vt, axis=1)
    sliding = np.flatnonzero(speed > slip_tol)
    G = np.empty((3 * n, m))
    G[0::3], G[1::3], G[2::3] = N, S, T
    C = G.copy()                       # force columns: G' c, sliding normals carry their friction
    mu_loc = mu.copy()
    for i in sliding:
        dirn = vt[i] / speed[i]
        C[3 * i] = N[i] - mu[i] * (dirn[0] * S[i] + dirn[1] * T[i])
        mu_loc[i] = 0.0
    L = np.linalg.cholesky(M)
    Minv_C = np.linalg.solve(L.T, np.linalg.solve(L, C.T))     # M^-1 C'
    Minv_f = np.linalg.solve(L.T, np.linalg.solve(L, f))
    W = G @ Minv_C
    q = G @ Minv_f
    q[0::3] += bias
    for i in sliding:                  # tangential rows of a sliding contact: c_t = 0 (identity rows)
        for k in (1, 2):
            W[3 * i + k, :] = 0.0
            W[3 * i + k, 3 * i + k] = 1.0
            q[3 * i + k] = 0.0
    problem = FrictionContact(W, q, mu_loc, dim=3)

    def lift(c_local):
        c = np.asarray(c_local, dtype=np.float64).reshape(n, 3).copy()
        for i in sliding:
            c[i, 1:] = -mu[i] * c[i, 0] * vt[i] / speed[i]
        return np.linalg.solve(M, f + G.T @ c.ravel()), c

    return problem, lift, sliding


def solve_trinkle_pang_cone_exact(M, v, f, N, S, T, mu, *, method: str = "newton-ac", normal_bias=None,
                                  slip_tol: float = 1e-6, **options) -> TPConeResult:
    """Accelerations and forces of the quadratic-cone model, certified by :func:`contactlab.solve`."""
    from ..solvers import solve
    problem, lift, sliding = trinkle_pang_cone_problem(M, v, f, N, S, T, mu, normal_bias=normal_bias,
                                                       slip_tol=slip_tol)
    sol = solve(problem, method, **options)
    a, c = lift(sol.z)
    return TPConeResult(a, c, sliding, sol.status.name, sol.residual, problem)
