"""``newton-ac``: semismooth Newton on the Alart-Curnier function, and ``prox``: proximal point with
an adaptive regularisation around it, for the exact-cone Coulomb problem.

Alart and Curnier (1991), "A mixed formulation for frictional contact problems prone to Newton
like solution methods", CMAME 92; Christensen, Klarbring, Pang, Stroemberg (1998) eq. 3.3 (the
function), Acary, Bremond, Huber (2018) section 5.3 (Siconos' NSN_AC, which this follows: a
damped semismooth Newton with a line search on 1/2 |Phi|^2). Phi(r) = Phi_AC(r, W r + q) per
contact (kernels/coulomb.ac_block), generalised Jacobian A + B W with A, B block diagonal; the
Newton system is solved by a sparse LU (scipy SuperLU), with a Levenberg-Marquardt shift when the
Jacobian is singular (rank-deficient W: hyperstatic stacks).

``prox`` (Acary, Bremond, Huber 2018 section 5.4, Siconos' PROX): outer iterations
r_{k+1} = solution of the problem with W + sigma I and q - sigma r_k (strongly monotone, solved
by newton-ac); sigma shrinks when the inner solve converges quickly and grows when it does not.
Its fixed points are the solutions of the original problem; the stopping test is the one residual.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ParamError
from ..kernels import coulomb as K
from ..problems.friction_contact import FrictionContact, GlobalFrictionContact
from ..solution import Status
from ._fc_common import FC_PROBLEMS, TIME_LIMIT, Deadline, finish, local_problem, measure, start
from .registry import register


@dataclass(frozen=True)
class NewtonACOptions:
    """tol: natural-map residual target (relative); max_iter: Newton iterations; ls_max: halvings of
    the line search (a failed search raises the shift; 15 measured against 30 on the benchmark collections,
    docs/fclib.md: all 33 3D problems solved instead of 31, half the time, as the first iterations on
    hyperstatic piles no longer accept steps of 2^-20..2^-30 that barely move; prox 2x faster too);
    lm: Levenberg-Marquardt shift (relative to max |J_ij|) added to every Newton system (the Jacobian
    is singular on hyperstatic contact sets, rank-deficient W), raised x100 when the system is
    singular or the step fails the line search; adaptive: the shift is
    min(lm, |Phi| / |rho q|) (Yamashita-Fukushima), else lm; max_time: wall-clock cap in
    seconds (0: none), checked every iteration; form: "local" (condensed W, the default) or "global"
    (GlobalFrictionContact only: Newton on (v, r) with M and H, newton_global_run)."""

    tol: float = 1e-8
    max_iter: int = 200
    ls_max: int = 15
    lm: float = 1e-8
    max_time: float = 0.0
    adaptive: bool = True
    form: str = "local"

    def __post_init__(self):
        if self.form not in ("local", "global"):
            raise ValueError(f"form must be 'local' or 'global', got {self.form!r}")
        if not self.tol > 0 or self.lm < 0:
            raise ValueError("tol must be > 0 and lm >= 0")
        if self.max_iter < 1 or self.ls_max < 1:
            raise ValueError("max_iter and ls_max must be >= 1")


DENSE_N = 96   # up to this size the Newton system is assembled and factorised densely (numba LU); above,
# SuperLU on the sparse system (the crossover measured on piles and stacks, docs/benchmarks-tuning.md)


LM_MAX = 1e2   # the shift grows x100 per failed line search up to this (a short gradient-like step), then stop


class _NewtonSystem:
    """J = A + B W + shift I assembled by numba kernels on a fixed pattern, solved by a numba LU with
    partial pivoting (small problems) or SuperLU (large ones); no scipy.sparse construction per
    iteration beyond the factorisation."""

    def __init__(self, W, dim):
        n = W.shape[0]
        self.dim, self.n, self.W = dim, n, W
        self.Wd = W.toarray() if n <= DENSE_N else None
        if self.Wd is None:
            nc = n // dim
            blk = sp.bsr_matrix((np.ones((nc, dim, dim)), np.arange(nc), np.arange(nc + 1)), shape=(n, n))
            pat = (abs(blk) @ abs(W) + blk).tocsr()
            pat.sort_indices()
            self.Jindptr, self.Jindices = pat.indptr.astype(np.int64), pat.indices.astype(np.int64)
            self.Jdata = np.zeros(self.Jindices.size)
            self.pos = np.zeros(n, dtype=np.int64)
            self.ip, self.ix = W.indptr.astype(np.int64), W.indices.astype(np.int64)
        else:
            self.J = np.empty((n, n))

    def solve(self, Ablk, Bblk, phi, lm):
        """d with (A + B W + lm max|J| I) d = -phi, or None if singular / not finite."""
        try:
            if self.Wd is not None:
                K.ac_jacobian_dense(self.Wd, Ablk, Bblk, self.dim, self.J, 0.0)
                if lm:
                    self.J[np.diag_indices(self.n)] += lm * max(1.0, K.abs_max(self.J))
                d = np.empty(self.n)
                if not K._solve_small(self.J, -phi, d):   # numba LU: no BLAS threads to oversubscribe
                    return None
            else:
                K.ac_jacobian_csr(self.ip, self.ix, self.W.data, self.Jindptr, self.Jindices, self.Jdata, Ablk, Bblk,
                                  self.dim, self.pos, 0.0)
                if lm:
                    K.ac_jacobian_csr(self.ip, self.ix, self.W.data, self.Jindptr, self.Jindices, self.Jdata, Ablk,
                                      Bblk, self.dim, self.pos, lm * max(1.0, K.abs_max(self.Jdata)))
                # the CSR arrays of J read as CSC are J': factorise J' and solve with its transpose
                # (no CSR -> CSC conversion per iteration)
                Jt = sp.csc_matrix((self.Jdata, self.Jindices, self.Jindptr), shape=(self.n, self.n))
                d = spla.splu(Jt).solve(-phi, trans="T")
        except (RuntimeError, np.linalg.LinAlgError):
            return None
        return d if np.all(np.isfinite(d)) else None


# the nonsmooth reformulations Phi(r, W r + q) = 0: (Phi and its Jacobian blocks, |Phi|^2 only)
FUNCTIONS = {"ac": (K.ac_system, K.ac_merit), "fb": (K.fb_system, K.fb_merit)}


def _damped_newton(x, evaluate, merit, direction, certify, opts: NewtonACOptions, denom: float):
    """The damped semismooth Newton loop of both forms (Siconos NSN_AC / NSN_FB's scheme): Armijo
    backtracking on |Phi|^2, a Levenberg-Marquardt shift that follows |Phi| and grows x100 per failed
    line search. evaluate(x): |Phi(x)|^2, keeping Phi and its Jacobian for direction(lm) (the step,
    None if singular); merit(x): |Phi(x)|^2 only; certify(x): what solve() certifies. x is updated in
    place. Returns (status, iterations, residual, reason)."""
    m = evaluate(x)
    res = certify(x)

    def base_shift(m):
        # Levenberg-Marquardt parameter proportional to |Phi| (Yamashita-Fukushima): quadratic
        # convergence where J is nonsingular, a usable step where W is rank-deficient
        return min(opts.lm, np.sqrt(m) / denom) if opts.adaptive else opts.lm

    lm = base_shift(m)
    deadline = Deadline(opts.max_time)
    for it in range(1, opts.max_iter + 1):
        if res <= opts.tol:
            return Status.SOLVED, it - 1, res, "residual below tol"
        if deadline.passed():
            return Status.MAX_ITERATIONS, it - 1, res, TIME_LIMIT
        if not np.isfinite(m):
            return Status.NUMERICAL_FAILURE, it - 1, res, "merit not finite"
        d = None
        for _ in range(8):
            d = direction(lm)
            if d is not None:
                break
            lm = max(1e-10, 100.0 * lm)
        if d is None:
            return Status.NUMERICAL_FAILURE, it, res, "Newton system singular at every shift"
        t = 1.0
        accepted = False
        for _ in range(opts.ls_max):
            xt = x + t * d
            mt = merit(xt)
            if mt <= (1.0 - 1e-4 * t) * m:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            if lm < LM_MAX:
                lm = max(1e-10, 100.0 * lm)   # try again with a more regularised system
                continue
            return Status.NO_SOLUTION_FOUND, it, res, "line search failed at the largest shift"
        lm = base_shift(mt) if t == 1.0 else lm
        x[:] = xt
        m = evaluate(x)
        res = certify(x)
    if res <= opts.tol:
        return Status.SOLVED, opts.max_iter, res, "residual below tol"
    return Status.MAX_ITERATIONS, opts.max_iter, res, "iteration limit reached"


def newton_ac_run(lp: FrictionContact, r: np.ndarray, opts: NewtonACOptions, function: str = "ac"):
    """Damped semismooth Newton on ``function`` ("ac": Alart-Curnier, "fb": Fischer-Burmeister) of
    the local problem, from r (updated in place). Returns (status, iterations, residual, reason)."""
    system_fn, merit_fn = FUNCTIONS[function]
    W = lp.csr()
    system = _NewtonSystem(W, lp.dim)
    ip, ix = W.indptr.astype(np.int64), W.indices.astype(np.int64)
    dim, nc = lp.dim, lp.nc
    phi = np.empty(lp.n)
    Ablk = np.empty((nc, dim, dim))
    Bblk = np.empty((nc, dim, dim))
    u = np.empty(lp.n)

    def velocity(r):
        K.csr_matvec(ip, ix, W.data, r, lp.q, u)
        return u

    def evaluate(r):
        return system_fn(r, velocity(r), lp.mu, lp.rho, dim, phi, Ablk, Bblk)

    def merit(r):
        return merit_fn(r, velocity(r), lp.mu, lp.rho, dim)

    return _damped_newton(r, evaluate, merit, lambda lm: system.solve(Ablk, Bblk, phi, lm),
                          lambda r: measure(lp, r, velocity(r)), opts, lp.denominator())


def newton_global_run(gp: GlobalFrictionContact, r: np.ndarray, opts: NewtonACOptions, function: str = "ac"):
    """The same Newton in global form: unknowns (v, r), equations M v - H r - q = 0 and
    Phi(r, H' v + b) = 0, Jacobian [[M, -H], [B H', A + shift I]] factorised by SuperLU (size ndof + n;
    W = H' M^-1 H is never used by the iteration). rho_i and the stopping test are the condensed
    problem's (solve() certifies every global answer through it). r is updated in place."""
    lp = gp.local()
    system_fn, merit_fn = FUNCTIONS[function]
    M, H = sp.csr_matrix(gp.M), sp.csr_matrix(gp.H)
    Ht = H.T.tocsr()
    ndof, n, dim, nc = gp.ndof, gp.n, gp.dim, gp.nc
    x = np.r_[gp.velocity(r), r]
    phi = np.empty(n)
    Ablk = np.empty((nc, dim, dim))
    Bblk = np.empty((nc, dim, dim))
    F = np.empty(ndof + n)
    top = sp.hstack([M, -H]).tocsr()
    eye = sp.identity(n, format="csr")
    blocks = (np.arange(nc), np.arange(nc + 1))

    def evaluate(x):
        v, rr = x[:ndof], x[ndof:]
        F[:ndof] = M @ v - H @ rr - gp.q
        m = system_fn(np.ascontiguousarray(rr), Ht @ v + gp.b, lp.mu, lp.rho, dim, phi, Ablk, Bblk)
        F[ndof:] = phi
        return float(F[:ndof] @ F[:ndof]) + m

    def merit(x):
        v, rr = x[:ndof], x[ndof:]
        f = M @ v - H @ rr - gp.q
        return float(f @ f) + merit_fn(np.ascontiguousarray(rr), Ht @ v + gp.b, lp.mu, lp.rho, dim)

    def direction(lm):
        A = sp.bsr_matrix((Ablk, *blocks), shape=(n, n))
        B = sp.bsr_matrix((Bblk, *blocks), shape=(n, n))
        bottom = sp.hstack([B @ Ht, A]).tocsr()
        if lm:
            bottom = bottom + sp.hstack([sp.csr_matrix((n, ndof)), lm * max(1.0, abs(bottom).max()) * eye])
        J = sp.vstack([top, bottom]).tocsc()
        try:
            d = spla.splu(J).solve(-F)
        except RuntimeError:
            return None
        return d if np.all(np.isfinite(d)) else None

    out = _damped_newton(x, evaluate, merit, direction, lambda x: measure(lp, x[ndof:]), opts, lp.denominator())
    r[:] = x[ndof:]
    return out


def _run(problem, opts: NewtonACOptions, warm_start, function: str):
    if opts.form == "global" and not isinstance(problem, GlobalFrictionContact):
        raise ParamError("form='global' needs a GlobalFrictionContact (M, H, q, b); this is a local "
                         "problem: leave form at 'local'")
    lp = local_problem(problem)
    r = start(lp, warm_start)
    run = newton_global_run if opts.form == "global" else newton_ac_run
    status, its, res, reason = run(problem if opts.form == "global" else lp, r, opts, function)
    return finish(problem, r, status, its, residual_claimed=res, form=opts.form, reason=reason)


@register("newton-ac", problems=FC_PROBLEMS, options=NewtonACOptions, warm_start=True, convert=False,
          description="semismooth Newton on Alart-Curnier with line search (Siconos NSN_AC), sparse LU",
          guarantees="bounded iterations; local quadratic convergence near nondegenerate solutions; "
                     "SOLVED only at the natural-map residual <= tol")
def newton_ac(problem, opts: NewtonACOptions, warm_start=None):
    return _run(problem, opts, warm_start, "ac")


@register("newton-fb", problems=FC_PROBLEMS, options=NewtonACOptions, warm_start=True, convert=False,
          description="semismooth Newton on the second-order-cone Fischer-Burmeister function with line search "
                      "(Siconos NSN_FB), sparse LU",
          guarantees="bounded iterations; local quadratic convergence near nondegenerate solutions; "
                     "SOLVED only at the natural-map residual <= tol")
def newton_fb(problem, opts: NewtonACOptions, warm_start=None):
    """Same damped Newton, line search and Levenberg-Marquardt shift as ``newton-ac``, on Phi_FB
    (kernels/coulomb.fb_block): x = (mu r_n, r_t), y = rho (u_n + mu ||u_t||, mu u_t) on the Lorentz cone."""
    return _run(problem, opts, warm_start, "fb")


@dataclass(frozen=True)
class ProxOptions:
    """tol: natural-map residual target; max_outer: proximal steps; sigma0: initial regularisation
    relative to the mean diagonal of W; inner_iter: Newton iterations per proximal step; max_time:
    wall-clock cap in seconds (0: none)."""

    tol: float = 1e-8
    max_outer: int = 200
    sigma0: float = 1.0
    inner_iter: int = 30
    max_time: float = 0.0

    def __post_init__(self):
        if not self.tol > 0 or not self.sigma0 > 0:
            raise ValueError("tol and sigma0 must be > 0")
        if self.max_outer < 1 or self.inner_iter < 1:
            raise ValueError("max_outer and inner_iter must be >= 1")


@register("prox", problems=FC_PROBLEMS, options=ProxOptions, warm_start=True, convert=False,
          description="proximal point on W + sigma I with adaptive sigma, newton-ac inside (Siconos PROX)",
          guarantees="bounded outer and inner iterations; SOLVED only at the natural-map residual <= tol")
def prox(problem, opts: ProxOptions, warm_start=None):
    lp = local_problem(problem)
    r = start(lp, warm_start)
    W = lp.csr()
    scale = float(np.mean(1.0 / lp.rho))
    sigma = opts.sigma0 * scale
    inner = NewtonACOptions(tol=opts.tol * 0.1, max_iter=opts.inner_iter, max_time=opts.max_time)
    deadline = Deadline(opts.max_time)
    eye = sp.identity(lp.n, format="csr")
    total = 0
    res = measure(lp, r)
    for k in range(1, opts.max_outer + 1):
        if res <= opts.tol:
            return finish(problem, r, Status.SOLVED, total, outer=k - 1, residual_claimed=res, sigma=sigma)
        if deadline.passed():
            return finish(problem, r, Status.MAX_ITERATIONS, total, outer=k - 1, residual_claimed=res,
                          sigma=sigma, reason=TIME_LIMIT)
        sub = FrictionContact(W + sigma * eye, lp.q - sigma * r, lp.mu, lp.dim)
        rk = r.copy()
        # inexact proximal point: the inner tolerance follows the outer residual
        inner_k = dataclasses.replace(inner, tol=max(inner.tol, 0.1 * res), max_time=deadline.left())
        status, its, _, _ = newton_ac_run(sub, rk, inner_k)
        total += its
        if not np.all(np.isfinite(rk)):
            sigma *= 10.0
            continue
        r = rk
        res = measure(lp, r)
        sigma = sigma * 0.2 if status == Status.SOLVED and its <= 5 else (sigma * 5.0 if status != Status.SOLVED else sigma)
        sigma = min(max(sigma, 1e-12 * scale), 1e6 * scale)
    status = Status.SOLVED if res <= opts.tol else Status.MAX_ITERATIONS
    return finish(problem, r, status, total, outer=opts.max_outer, residual_claimed=res, sigma=sigma)
