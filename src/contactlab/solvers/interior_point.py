"""``interior-point``: primal-dual infeasible interior point method with Mehrotra's predictor-corrector
for monotone LCPs and boxed LCPs (trinkle-pang-sudarsky-lo propose an interior point method for the
contact LCP; the algorithm is the standard one of Wright, *Primal-Dual Interior-Point Methods*, ch. 8/10,
applied to the monotone box-constrained variational inequality).

Boxed form (an LCP is lo = 0, hi = +inf): find z with lo <= z <= hi and multipliers y_l, y_u >= 0,

    M z + q - y_l + y_u = 0,   s_l = z - lo,  s_u = hi - z,   s_l y_l = 0,  s_u y_u = 0.

Each Newton system reduces to (M + diag(y_l/s_l + y_u/s_u)) dz = rhs, factored once per iteration
(Cholesky/LU dense, SuperLU sparse) and solved twice (predictor, corrector). Near the end the active set
read from the iterate (s < y) is tried by one reduced solve (a crossover, "polish") so the certified
residual reaches 1e-10 even on degenerate problems. Monotone means x'Mx >= 0 for all x; the method
checks it (eigenvalues of (M + M')/2, dense or n <= 4000) and returns NO_SOLUTION_FOUND before starting
when it fails, unless ``require_monotone=False``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ParamError
from ..problems import LCP, BoxedLCP
from ..kernels.tolerances import PSD
from ..problems.residual import box_relative, box_residuals, relative_error, row_terms
from ..problems.validation import max_abs
from ..solution import Solution, Status
from .pgs_sm import _solve_dense
from .registry import check_common, register


@dataclass(frozen=True)
class InteriorPointOptions:
    """tol: certified relative residual (scale-free, problems/residual.py; the iteration runs on
    (M, q) / max|M|); max_iterations: Newton iterations (alias max_iter);
    step_fraction: fraction of the step to the boundary; require_monotone: refuse non-monotone M
    (status NO_SOLUTION_FOUND) instead of trying; polish: try the active-set crossover near the end."""

    tol: float = 1e-10
    max_iterations: int = 100
    step_fraction: float = 0.995
    require_monotone: bool = True
    polish: bool = True

    def __post_init__(self):
        check_common(self)
        if not (0.5 < self.step_fraction < 1.0):
            raise ParamError(f"step_fraction must lie in (0.5, 1), got {self.step_fraction}")


def monotonicity(M) -> tuple[bool | None, float]:
    """(monotone?, smallest eigenvalue of (M + M')/2 relative to its largest magnitude); None if unchecked."""
    n = M.shape[0]
    if sp.issparse(M):
        S = (0.5 * (M + M.T)).tocsr()
        d = S.diagonal()
        off = np.asarray(abs(S).sum(axis=1)).ravel() - np.abs(d)
        if np.all(d >= off):   # diagonally dominant with a non-negative diagonal: PSD (Gershgorin)
            return True, float("nan")
        if n > 1000:
            return None, float("nan")
        M = M.toarray()
    S = 0.5 * (M + M.T)
    ev = np.linalg.eigvalsh(S)
    scale = max(float(np.max(np.abs(ev), initial=0.0)), 1e-300)
    rel = float(ev[0] / scale)
    return rel >= -PSD, rel


class _Factor:
    def __init__(self, M, symmetric):
        self.M, self.sparse, self.symmetric = M, sp.issparse(M), symmetric

    def factor(self, d):
        if self.sparse:
            K = (self.M + sp.diags(d)).tocsc()
            if self.symmetric:   # symmetric ordering and diagonal pivots keep the fill of an LDL'
                self.lu = spla.splu(K, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                    options={"SymmetricMode": True})
            else:
                self.lu = spla.splu(K)
            self.solve = self.lu.solve
            return
        K = self.M + np.diag(d)
        if self.symmetric:
            try:
                cf = sla.cho_factor(K, check_finite=False)
                self.solve = lambda b: sla.cho_solve(cf, b, check_finite=False)
                return
            except np.linalg.LinAlgError:
                pass
        lu = sla.lu_factor(K, check_finite=False)
        if not np.all(np.isfinite(lu[0])) or np.min(np.abs(np.diag(lu[0]))) == 0.0:
            raise np.linalg.LinAlgError("singular Newton matrix")
        self.solve = lambda b: sla.lu_solve(lu, b, check_finite=False)


def _max_step(v, dv):
    neg = dv < 0
    if not np.any(neg):
        return np.inf
    return float(np.min(-v[neg] / dv[neg]))


def crossover(M, q, z, lo, hi, y_lo=None, y_hi=None):
    """Active-set crossover: rows whose distance to a bound is below their multiplier sit at that bound
    (multipliers y_lo, y_hi; by default read from w = Mz + q), the rest solve M_FF z_F = -(q + M z)_F.
    Returns the new z, or None when the reduced system cannot be solved."""
    w = np.asarray(M @ z, dtype=np.float64).ravel() + q
    y_lo = np.maximum(w, 0.0) if y_lo is None else y_lo
    y_hi = np.maximum(-w, 0.0) if y_hi is None else y_hi
    with np.errstate(invalid="ignore"):
        at_lo = np.isfinite(lo) & (z - lo < y_lo)
        at_hi = np.isfinite(hi) & (hi - z < y_hi) & ~at_lo
    zp = z.copy()
    zp[at_lo] = lo[at_lo]
    zp[at_hi] = hi[at_hi]
    F = np.flatnonzero(~(at_lo | at_hi))
    if F.size:
        r = np.asarray(M @ zp, dtype=np.float64).ravel() + q
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if sp.issparse(M):
                    dz = spla.splu(sp.csc_matrix(M[F][:, F]), permc_spec="MMD_AT_PLUS_A").solve(-r[F])
                else:
                    dz, _ = _solve_dense(M[np.ix_(F, F)], -r[F], "lu")
        except (np.linalg.LinAlgError, RuntimeError, ValueError):
            return None
        if dz is None:
            return None
        zp[F] += dz
    return zp if np.all(np.isfinite(zp)) else None


def _with_fixed_rows(problem, opts) -> Solution:
    """A boxed LCP with rows of lo_i = hi_i: z_i = lo_i there, whatever w_i (the box condition holds
    for every w_i), so those rows leave the problem: the interior point, whose slacks z - lo and hi - z
    are 0 on such a row (no interior), solves the boxed LCP of the other rows F with
    q_F + M_FX z_X; solve() certifies the assembled z on the whole problem."""
    from ..problems.validation import matvec
    n = problem.n
    fixed = problem.lo == problem.hi
    free = np.flatnonzero(~fixed)
    z = np.where(fixed, problem.lo, 0.0)
    if free.size == 0:
        return Solution(z=z, w=np.zeros(n), status=Status.SOLVED, iterations=0,
                        info={"reason": "every variable fixed (lo = hi)", "fixed_rows": n})
    M = problem.M
    rows = M[free]
    sub = BoxedLCP(rows[:, free], problem.q[free] + matvec(rows[:, np.flatnonzero(fixed)], z[fixed]),
                   problem.lo[free], problem.hi[free])
    sol = interior_point_solve(sub, opts)
    z[free] = sol.z
    sol.z, sol.w = z, np.zeros(n)
    sol.info["fixed_rows"] = int(n - free.size)
    return sol


@register("interior-point", problems=(LCP, BoxedLCP), options=InteriorPointOptions,
          classes=("spd", "p", "factored", "boxed"),
          description="primal-dual interior point, Mehrotra predictor-corrector, monotone LCP and boxed LCP "
                      "(static bounds), dense and sparse, relative residual 1e-10",
          guarantees="designed for monotone (PSD, symmetric or not) M (Mehrotra's heuristic: no "
                     "convergence proof); refuses non-monotone M with NO_SOLUTION_FOUND; friction-coupled "
                     "bounds are not supported; SOLVED only when solve() certifies the answer")
def interior_point_solve(problem, opts: InteriorPointOptions, warm_start=None) -> Solution:
    n = problem.n
    s0 = max_abs(problem.M) or float(np.max(np.abs(problem.q), initial=0.0)) or 1.0
    M, q = problem.M / s0, problem.q / s0     # one scale: the problem times c iterates identically
    if isinstance(problem, BoxedLCP):
        if problem.has_coupling:
            raise ParamError("interior-point does not solve friction-coupled bounds (findex); "
                             "use method='pgs' or 'pgs-sm', or give static bounds")
        lo, hi = problem.lo, problem.hi
        if np.any(lo == hi):
            return _with_fixed_rows(problem, opts)
    else:
        lo, hi = np.zeros(n), np.full(n, np.inf)
    info: dict = {}
    mono, rel = monotonicity(M)
    info["monotone"] = "unverified" if mono is None else bool(mono)
    info["min_sym_eig_rel"] = rel
    if mono is False and opts.require_monotone:
        return Solution(z=np.zeros(n), w=np.zeros(n), status=Status.NO_SOLUTION_FOUND,
                        info={**info, "reason": f"M is not monotone (smallest eigenvalue of (M+M')/2 is "
                                                f"{rel:.3g} x its largest); use lemke, or pass "
                                                f"require_monotone=False to try anyway"})
    sparse = sp.issparse(M)
    symmetric = (abs(M - M.T) > 0).nnz == 0 if sparse else bool(np.array_equal(M, M.T))
    fac = _Factor(M, symmetric)
    L = np.flatnonzero(np.isfinite(lo))
    U = np.flatnonzero(np.isfinite(hi))
    m = L.size + U.size
    # starting point: strictly inside the box
    z = np.zeros(n)
    both = np.isfinite(lo) & np.isfinite(hi)
    only_lo = np.isfinite(lo) & ~np.isfinite(hi)
    only_hi = ~np.isfinite(lo) & np.isfinite(hi)
    z[both] = 0.5 * (lo[both] + hi[both])
    z[only_lo] = lo[only_lo] + 1.0
    z[only_hi] = hi[only_hi] - 1.0
    w = np.asarray(M @ z, dtype=np.float64).ravel() + q
    yl = np.maximum(1.0, w[L])
    yu = np.maximum(1.0, -w[U])
    scale = float(np.max(np.abs(q), initial=0.0)) or 1.0

    def rel_res(v, wv):
        return relative_error(box_relative(v, wv, lo, hi, q, row_terms(M, v, q)))
    tol = opts.tol
    status, reason, polished = Status.MAX_ITERATIONS, "iteration limit reached", False
    best_z, best_res = z.copy(), np.inf
    it = 0
    mu = np.inf
    for it in range(1, opts.max_iterations + 1):
        sl, su = z[L] - lo[L], hi[U] - z[U]
        mu = (sl @ yl + su @ yu) / max(m, 1)
        rd = w.copy()
        rd[L] -= yl
        rd[U] += yu
        d = np.zeros(n)
        d[L] += yl / sl
        d[U] += yu / su
        try:
            fac.factor(d)
        except (np.linalg.LinAlgError, RuntimeError, ValueError):
            status, reason = Status.NUMERICAL_FAILURE, "singular Newton matrix"
            break

        def direction(rcl, rcu):
            rhs = -rd
            rhs[L] += rcl / sl
            rhs[U] -= rcu / su
            dz = np.asarray(fac.solve(rhs), dtype=np.float64).ravel()
            return dz, (rcl - yl * dz[L]) / sl, (rcu + yu * dz[U]) / su

        dz, dyl, dyu = direction(-sl * yl, -su * yu)          # predictor (affine scaling)
        a_aff = min(1.0, _max_step(sl, dz[L]), _max_step(su, -dz[U]), _max_step(yl, dyl), _max_step(yu, dyu))
        mu_aff = ((sl + a_aff * dz[L]) @ (yl + a_aff * dyl) + (su - a_aff * dz[U]) @ (yu + a_aff * dyu)) / max(m, 1)
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        dz, dyl, dyu = direction(sigma * mu - sl * yl - dz[L] * dyl, sigma * mu - su * yu + dz[U] * dyu)
        a = min(1.0, opts.step_fraction * min(_max_step(sl, dz[L]), _max_step(su, -dz[U]),
                                              _max_step(yl, dyl), _max_step(yu, dyu)))
        if not np.all(np.isfinite(dz)) or not np.isfinite(a):
            status, reason = Status.NUMERICAL_FAILURE, "non-finite Newton direction"
            break
        z += a * dz
        yl += a * dyl
        yu += a * dyu
        w = np.asarray(M @ z, dtype=np.float64).ravel() + q
        res = rel_res(z, w)
        if res < best_res:
            best_z, best_res = z.copy(), res
        if res <= tol:
            status, reason = Status.SOLVED, "residual below tol"
            break
        sl, su = z[L] - lo[L], hi[U] - z[U]
        mu = (sl @ yl + su @ yu) / max(m, 1)
        if opts.polish and mu <= 1e-6 * scale:
            y_lo, y_hi = np.zeros(n), np.zeros(n)
            y_lo[L], y_hi[U] = yl, yu
            zp = crossover(M, q, z, lo, hi, y_lo, y_hi)
            if zp is not None:
                rp = rel_res(zp, np.asarray(M @ zp, dtype=np.float64).ravel() + q)
                if rp < best_res:
                    best_z, best_res = zp, rp
                if rp <= tol:
                    status, reason, polished = Status.SOLVED, "residual below tol after crossover", True
                    break
        if mu <= 1e-3 * np.finfo(float).eps * scale and a < 1e-8:
            status, reason = Status.NO_SOLUTION_FOUND, "stalled at the boundary without reaching tol"
            break
    info.update({"reason": reason, "gap": float(mu * max(m, 1)) if np.isfinite(mu) else float("inf"),
                 "mu": float(mu), "polished": polished, "iterate_residual": float(best_res)})
    return Solution(z=best_z, w=np.zeros(n), status=status, iterations=it, info=info)
