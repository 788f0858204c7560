"""``box-qp``: projected Newton on the convex bound-constrained QP of a symmetric boxed LCP.

A boxed LCP with symmetric positive definite M (box friction with cfm > 0, arechavaleta eq. 16-17)
is the optimality condition of min 1/2 z'Mz + q'z over lo <= z <= hi. Bertsekas's projected
Newton method (SIAM J. Control Optim. 20(2), 1982): the rows at a bound whose gradient pushes
outward (within an epsilon that shrinks with the residual) are held; on the others, the exact
Newton step solves M_FF d_F = -g_F (dense Cholesky, or a sparse LU for large sparse M); an Armijo
search along the projection arc z(t) = clip(z + t d) keeps descent. Once the held set is the
solution's, the full step lands on the exact answer, so a warm-started step from the previous
time step typically needs one to three factorisations, not thousands of sweeps.

Friction-coupled bounds (``findex``, ``mu``): the bounds are frozen at the current normal values,
the QP solved, the bounds updated and the QP solved again from there (a fixed point of the
bounds, as in arechavaleta §IV-C eq. 16 with the estimate refined); ``max_outer`` cycles, and
solve() certifies the coupled residual. No convergence guarantee for the coupled problem: an
unconverged run is reported as MAX_ITERATIONS, never as SOLVED.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..kernels.tolerances import CERTIFY
from ..problems import BoxedLCP
from ..problems.residual import box_relative, relative_error
from ..solution import Solution, Status
from .registry import register


@dataclass(frozen=True)
class BoxQPOptions:
    """tol: relative residual target (problems/residual.py, the measure solve() certifies);
    max_iterations: Newton steps per QP; max_outer: bound updates for friction-coupled rows;
    dense_max: largest n factorised densely (above: sparse LU); armijo: sufficient decrease."""
    tol: float = 0.1 * CERTIFY
    max_iterations: int = 60
    max_outer: int = 30
    dense_max: int = 700
    armijo: float = 1e-4

    def __post_init__(self):
        if not (self.tol > 0 and self.max_iterations >= 1 and self.max_outer >= 1 and self.dense_max >= 0):
            raise ValueError("tol > 0, max_iterations >= 1, max_outer >= 1 and dense_max >= 0 are required")


def _factor_solve(M, F, rhs, dense_max):
    """Solve M_FF x = rhs (Cholesky when dense, LU when sparse)."""
    if F.size == 0:
        return np.zeros(0)
    if sp.issparse(M) and F.size > dense_max:
        A = M[F][:, F].tocsc()
        return spla.splu(A, permc_spec="MMD_AT_PLUS_A").solve(rhs)
    A = M[np.ix_(F, F)] if not sp.issparse(M) else M[F][:, F].toarray()
    try:
        return sla.cho_solve(sla.cho_factor(A, check_finite=False), rhs, check_finite=False)
    except np.linalg.LinAlgError:
        return sla.lstsq(A, rhs, check_finite=False)[0]


def _qp(M, q, lo, hi, z, opts, tol, counter):
    """Projected Newton on min 1/2 z'Mz + q'z, lo <= z <= hi from z; returns (z, w, converged)."""
    for _ in range(opts.max_iterations):
        w = M @ z + q
        if relative_error(box_relative(z, w, lo, hi, q)) <= tol:
            return z, w, True
        counter[0] += 1
        diag = M.diagonal() if sp.issparse(M) else np.diag(M)
        step = z - np.clip(z - w / diag, lo, hi)
        eps = min(1e-3 * max(float(np.max(np.abs(z), initial=0.0)), 1e-300),
                  float(np.max(np.abs(step), initial=0.0)))
        held = ((z <= lo + eps) & (w > 0)) | ((z >= hi - eps) & (w < 0))
        F = np.flatnonzero(~held)
        H = np.flatnonzero(held)
        f0 = 0.5 * z @ (w + q)
        zt = None
        for newton in (True, False):        # Newton on the free rows, else a scaled projected gradient
            d = -w / diag
            if newton:
                d[F] = _factor_solve(M, F, -w[F], opts.dense_max)
            t = 1.0
            for _ in range(30):
                cand = np.clip(z + t * d, lo, hi)
                dz = cand - z
                wt = w + M @ dz
                if 0.5 * cand @ (wt + q) <= f0 + opts.armijo * (w @ dz) and np.any(dz):
                    zt = cand
                    break
                t *= 0.5
            if zt is not None:
                break
        if zt is None:
            return z, w, False
        z = zt
    w = M @ z + q
    return z, w, relative_error(box_relative(z, w, lo, hi, q)) <= tol


def _solve(problem: BoxedLCP, opts: BoxQPOptions, warm_start) -> Solution:
    M, q, n = problem.M, problem.q, problem.n
    z = np.zeros(n) if warm_start is None else np.asarray(warm_start, dtype=np.float64).copy()
    counter = [0]
    if not problem.has_coupling:
        lo, hi = problem.lo, problem.hi
        z = np.clip(z, lo, hi)
        z, w, ok = _qp(M, q, lo, hi, z, opts, opts.tol, counter)
        return Solution(z=z, w=w, status=Status.SOLVED if ok else Status.MAX_ITERATIONS,
                        iterations=counter[0], info={"outer": 1})
    for outer in range(1, opts.max_outer + 1):
        lo, hi = problem.bounds(z)
        z = np.clip(z, lo, hi)
        z, w, ok = _qp(M, q, lo, hi, z, opts, opts.tol, counter)
        lo2, hi2 = problem.bounds(z)
        if ok and relative_error(box_relative(z, w, lo2, hi2, q)) <= opts.tol:
            return Solution(z=z, w=w, status=Status.SOLVED, iterations=counter[0], info={"outer": outer})
    return Solution(z=z, w=M @ z + q, status=Status.MAX_ITERATIONS, iterations=counter[0],
                    info={"outer": opts.max_outer, "reason": "bound updates did not settle"})


@register("box-qp", problems=(BoxedLCP,), options=BoxQPOptions, warm_start=True, convert=False,
          classes=("boxed",),
          description="projected Newton on the bound-constrained QP of a symmetric boxed LCP (exact "
                      "Newton steps on the free rows); friction-coupled bounds by fixed-point bound updates",
          guarantees="static bounds, SPD M: converges to the exact solution (Bertsekas 1982); "
                     "coupled bounds: no guarantee, the residual certifies the answer")
def box_qp_solve(problem, opts: BoxQPOptions, warm_start=None) -> Solution:
    return _solve(problem, opts, warm_start)
