"""Frictional contact problems with the exact Coulomb cone (FCLIB's local and global forms).

Local form (Acary, Cadoux, Lemarechal, Malick 2011, eq. 1; FCLIB ``fclib_local``):

    u = W r + q,   K_mu* ∋ u + mu ||u_t|| e_n  ⊥  r ∈ K_mu,    K_mu = {r : ||r_t|| <= mu r_n}

per contact (``dim`` = 2 or 3 rows each: normal first, then tangents). Global form (``fclib_global``,
without equality rows): M v = H r + q, u = H' v + b, same law on (r, u).

The one residual definition of both forms (:meth:`FrictionContact.residuals`) is the natural map
(De Saxce's bipotential written as a projection, Acary et al. 2011 eq. 6)

    F_i(r) = r_i - P_{K_mu_i}(r_i - rho_i (u_i + mu_i ||u_t,i|| e_n)),   rho_i = dim / trace(W_ii),

reported as ``max_i ||F_i|| / max_i ||rho_i q_i||``: zero exactly at the solutions and invariant
under scaling q (units of impulse) or W (units of mass^-1). ``complementarity`` is
max_i rho_i |r_i . u~_i| / s^2 and ``infeasibility`` the worst violation of r_i ∈ K_mu, u_n >= 0
(divided by the same s). Any answer (Newton, NSGS, the pyramid LCP, a box) is certified against
the exact cone through these figures.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ProblemError
from ..kernels.coulomb import fc_residual_kernel
from .base import Problem
from .residual import Residuals
from .validation import as_matrix, as_vector, matvec


def _check_dim(dim) -> int:
    if dim not in (2, 3) or isinstance(dim, bool):
        raise ProblemError(f"dim must be 2 or 3 (rows per contact: normal + tangents), got {dim!r}")
    return int(dim)


def _check_mu(mu, nc: int) -> np.ndarray:
    mu = as_vector("mu", mu, nc)
    if np.any(mu < 0):
        i = int(np.flatnonzero(mu < 0)[0])
        raise ProblemError(f"mu must be >= 0 (friction coefficients); mu[{i}] = {mu[i]}")
    return mu


def _diag_blocks(W, nc: int, dim: int) -> np.ndarray:
    """W_ii of every contact as an (nc, dim, dim) array."""
    out = np.zeros((nc, dim, dim))
    if sp.issparse(W):
        Wc = sp.coo_matrix(W)
        ci, cj = Wc.row // dim, Wc.col // dim
        keep = ci == cj
        np.add.at(out, (ci[keep], Wc.row[keep] % dim, Wc.col[keep] % dim), Wc.data[keep])
    else:
        for a in range(dim):
            for b in range(dim):
                out[:, a, b] = W[a::dim, b::dim].diagonal()
    return out


class FrictionContact(Problem):
    """Local frictional contact problem (W, q, mu): u = W r + q, Coulomb's law with the exact cone.

    ``W`` (n, n) with n = nc * dim, dense or ``scipy.sparse`` (kept as CSR, block-sparse by
    contact); ``q`` (n,); ``mu`` (nc,) >= 0 or a scalar; ``dim`` 2 or 3. The unknown ``z`` of
    :func:`contactlab.solve` is the impulse r, ``w`` is the velocity u.
    """

    def __init__(self, W, q, mu, dim: int = 3):
        self.dim = _check_dim(dim)
        self.W = as_matrix("W", W, square=True)
        n = self.W.shape[0]
        if n % self.dim:
            raise ProblemError(f"W is {n} x {n}; its size must be a multiple of dim = {self.dim} "
                               "(dim rows per contact)")
        self.q = as_vector("q", q, n)
        self.nc = n // self.dim
        self.n = n
        self.mu = _check_mu(mu, self.nc)
        self.Wdiag = _diag_blocks(self.W, self.nc, self.dim)
        tr = np.trace(self.Wdiag, axis1=1, axis2=2) / self.dim
        pos = tr[tr > 0]
        fallback = float(np.mean(pos)) if pos.size else 1.0
        #: per-contact step of the natural map: 1 / (mean eigenvalue of W_ii)
        self.rho = 1.0 / np.where(tr > 0, tr, fallback)
        self._denom = None

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.W)

    def w(self, z):
        return matvec(self.W, z) + self.q

    def denominator(self) -> float:
        """max_i ||rho_i q_i||: the size the residual is relative to."""
        if self._denom is None:
            qb = (self.q.reshape(self.nc, self.dim) * self.rho[:, None]) if self.nc else np.zeros((0, 1))
            d = float(np.max(np.linalg.norm(qb, axis=1), initial=0.0))
            self._denom = d if d > 0 else 1.0
        return self._denom

    def residuals(self, z, w=None) -> Residuals:
        z = np.ascontiguousarray(z, dtype=np.float64)
        u = self.w(z) if w is None else np.ascontiguousarray(w, dtype=np.float64)
        if z.shape != (self.n,) or u.shape != (self.n,):
            raise ProblemError(f"r and u must have length {self.n}")
        return Residuals(*fc_residual_kernel(z, u, self.mu, self.rho, self.dim, self.denominator()))

    def scale(self) -> float:
        return 1.0  # the residual is already relative (scale-free)

    def is_trivial(self) -> bool:
        """r = 0 solves the problem iff every q_n >= 0 (u~ = q + mu||q_t|| e_n lies in K* iff q_n >= 0)."""
        return self.n == 0 or bool(np.all(self.q[::self.dim] >= 0.0))

    def dense_W(self) -> np.ndarray:
        return self.W.toarray() if self.is_sparse else self.W

    def csr(self) -> sp.csr_matrix:
        """W as a sorted CSR matrix (the layout of the numba kernels)."""
        W = sp.csr_matrix(self.W)
        W.sort_indices()
        return W

    # -- the pyramid route -------------------------------------------------------------------
    def pyramid_lcp(self, d: int = 8):
        """Stewart-Trinkle LCP with ``d`` friction directions per contact (2D: d = 2, +-t).

        Unknowns per contact (r_n, beta_1..d, lambda) with r_t = D beta; rows
            u_n = W_n r + q_n >= 0            ⊥ r_n >= 0
            lambda e + D' u_t >= 0            ⊥ beta >= 0
            mu r_n - e' beta >= 0             ⊥ lambda >= 0
        (Stewart and Trinkle 1996, eq. 17-19, with the velocities of the local problem).
        Returns ``(LCP, lift)``; ``lift`` maps the LCP answer to r. The pyramid is inscribed in the
        cone, so the lifted r is feasible; its exact-cone residual is what solve() reports.
        """
        from .lcp import LCP
        dim, nc = self.dim, self.nc
        if dim == 2:
            d = 2
            dirs = np.array([[1.0, -1.0]])
        else:
            if d < 3:
                raise ProblemError(f"a 3D friction pyramid needs d >= 3 directions, got d = {d}")
            ang = 2 * np.pi * np.arange(d) / d
            dirs = np.vstack([np.cos(ang), np.sin(ang)])
        # r = P [r_n; beta]
        rows, cols, vals = [], [], []
        for i in range(nc):
            rows.append(i * dim); cols.append(i); vals.append(1.0)
            for k in range(d):
                for a in range(dim - 1):
                    rows.append(i * dim + 1 + a); cols.append(nc + i * d + k); vals.append(dirs[a, k])
        P = sp.csr_matrix((vals, (rows, cols)), shape=(self.n, nc + nc * d))
        E = sp.csr_matrix((np.ones(nc * d), (np.arange(nc * d), np.repeat(np.arange(nc), d))), shape=(nc * d, nc))
        E0 = sp.vstack([sp.csr_matrix((nc, nc)), E])
        last = sp.hstack([sp.diags(self.mu), -E.T])
        M = sp.bmat([[P.T @ sp.csr_matrix(self.W) @ P, E0], [last, None]], format="csr")
        qq = np.concatenate([P.T @ self.q, np.zeros(nc)])
        Mout = M if self.is_sparse else M.toarray()

        def lift(x):
            return P @ np.asarray(x)[:P.shape[1]]

        return LCP(Mout, qq), lift

    def __repr__(self):
        return f"FrictionContact(nc={self.nc}, dim={self.dim}, sparse={self.is_sparse})"


class GlobalFrictionContact(Problem):
    """Global frictional contact problem: M v = H r + q, u = H' v + b, Coulomb's law on (r, u).

    ``M`` (ndof, ndof) symmetric positive definite, ``H`` (ndof, n) with n = nc * dim, dense or
    ``scipy.sparse``; ``q`` (ndof,), ``b`` (n,), ``mu`` (nc,). ``z`` of :func:`contactlab.solve` is r;
    v is recovered by :meth:`velocity` (``Solution.x``). The residual is the local one of the
    condensed problem W = H' M^-1 H, q_loc = H' M^-1 q + b (:meth:`local`), evaluated with the
    factorised M, so a global answer is certified by the same definition.
    """

    def __init__(self, M, H, q, b, mu, dim: int = 3):
        self.dim = _check_dim(dim)
        self.M = as_matrix("M", M, square=True)
        ndof = self.M.shape[0]
        self.H = as_matrix("H", H, (ndof, None))
        n = self.H.shape[1]
        if n % self.dim:
            raise ProblemError(f"H has {n} columns; it must be a multiple of dim = {self.dim}")
        self.q = as_vector("q", q, ndof)
        self.b = as_vector("b", b, n)
        self.n = n
        self.nc = n // self.dim
        self.ndof = ndof
        self.mu = _check_mu(mu, self.nc)
        self._factor = None
        self._local = None

    def _solve_M(self, x):
        if self._factor is None:
            try:
                if sp.issparse(self.M):
                    lu = spla.splu(sp.csc_matrix(self.M))
                    if not np.all(np.isfinite(lu.U.diagonal())) or np.any(lu.U.diagonal() == 0):
                        raise RuntimeError
                    self._factor = lu.solve
                else:
                    c = sla.cho_factor(self.M)
                    self._factor = lambda y, c=c: sla.cho_solve(c, y)
            except (RuntimeError, np.linalg.LinAlgError, ValueError):
                raise ProblemError("M is singular or not positive definite; the global problem needs an "
                                   "invertible mass matrix M") from None
        return self._factor(x)

    def velocity(self, r) -> np.ndarray:
        """v = M^-1 (H r + q)."""
        return np.asarray(self._solve_M(matvec(self.H, r) + self.q)).ravel()

    def w(self, z):
        return matvec(self.H.T, self.velocity(z)) + self.b

    def local(self) -> FrictionContact:
        """The condensed local problem W = H' M^-1 H, q = H' M^-1 q + b (cached)."""
        if self._local is None:
            H = self.H
            Hd = H.toarray() if sp.issparse(H) else H
            X = np.asarray(self._solve_M(Hd)).reshape(self.ndof, self.n)
            W = (H.T @ X) if sp.issparse(H) else Hd.T @ X
            W = 0.5 * (np.asarray(W) + np.asarray(W).T)
            W[np.abs(W) < 1e-15 * max(1.0, np.abs(W).max(initial=0.0))] = 0.0
            if sp.issparse(self.H) or sp.issparse(self.M):
                W = sp.csr_matrix(W)
            ql = matvec(H.T, self._solve_M(self.q)) + self.b
            self._local = FrictionContact(W, ql, self.mu, self.dim)
        return self._local

    def residuals(self, z, w=None) -> Residuals:
        return self.local().residuals(z, self.w(z) if w is None else w)

    def scale(self) -> float:
        return 1.0

    def is_trivial(self) -> bool:
        return self.n == 0 or self.local().is_trivial()

    def __repr__(self):
        return f"GlobalFrictionContact(nc={self.nc}, dim={self.dim}, ndof={self.ndof})"


def from_system(sys, form: str = "local"):
    """The frictional contact problem of one simulator step (``mechanics.system.ConstraintSystem``).

    Per contact the rows (N_i, S_i, T_i) of the contact Jacobian G (3D); M v+ = M v_free + G' r,
    u = G v+ + (n_bias_i, 0, 0). ``form='global'`` keeps M and H = G'; ``'local'`` condenses
    W = G M^-1 G'. Steps with joints, limits or motors have rows FCLIB's plain problems cannot
    hold: a ProblemError says so.
    """
    if form not in ("local", "global"):
        raise ProblemError(f"form must be 'local' or 'global', got {form!r}")
    extra = [name for name, k in (("joint", sys.nj), ("joint-limit", sys.nl), ("motor", sys.nm)) if k]
    if extra:
        raise ProblemError(f"this step has {', '.join(extra)} rows; an FCLIB friction problem holds "
                           "contacts only (export scenes without joints)")
    nc = sys.nc
    if nc == 0:
        raise ProblemError("this step has no contacts; there is no friction problem to export")
    G = sp.vstack([sys.N, sys.S, sys.T]).tocsr()
    perm = np.arange(3 * nc).reshape(3, nc).T.ravel()   # contact-major: n_i, t1_i, t2_i
    G = G[perm]
    b = np.zeros(3 * nc)
    b[0::3] = sys.n_bias
    vfree = sys.v_free()
    live = np.asarray(G.getnnz(axis=0) > 0) | (np.asarray(sys.M.diagonal()) > 0)
    M = sp.csr_matrix(sys.M)[live][:, live]
    Gl = G[:, live]
    if form == "global":
        return GlobalFrictionContact(M, Gl.T.tocsr(), M @ vfree[live], b, sys.mu, 3)
    Minv = sp.csr_matrix(sys.Minv)[live][:, live]
    W = (Gl @ Minv @ Gl.T).tocsr()
    return FrictionContact(W, Gl @ vfree[live] + b, sys.mu, 3)
