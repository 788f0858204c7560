"""``qp``: a symmetric positive semi-definite (boxed) LCP as the bound-constrained QP

    min 1/2 z'Mz + q'z   s.t.  lo <= z <= hi        (arechavaleta eq. 2; an LCP is lo = 0, hi = +inf)

whose KKT conditions are exactly the (boxed) LCP, solved by a maintained QP library through
``qpsolvers`` (proxsuite by default; any installed qpsolvers backend by name), as Drumwright
solved the contact LCP with an active-set QP. The answer is certified like every other.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ParamError
from ..problems import LCP, BoxedLCP
from ..solution import Solution, Status
from ..problems.validation import is_symmetric, max_abs
from .registry import check_common, register

_TOL_KWARGS = {"proxqp": ("eps_abs", "eps_rel"), "osqp": ("eps_abs", "eps_rel"),
               "clarabel": ("tol_gap_abs", "tol_feas"), "highs": ("primal_feasibility_tolerance",
                                                                   "dual_feasibility_tolerance")}


@dataclass(frozen=True)
class QPOptions:
    """backend: a qpsolvers solver name ("proxsuite", "quadprog", "osqp", ...); tol: the backend's
    tolerance on the QP (M, q) / max|M| (the same for the problem times any constant), and the
    certified relative residual; polish_pgs: sweeps of PGS started from the QP answer (0 = none),
    which tightens a first-order backend's answer; max_iterations: passed to backends that take it
    (alias max_iter)."""

    backend: str = "proxsuite"   # "proxsuite" is qpsolvers' "proxqp"
    tol: float = 1e-10
    crossover: bool = True
    polish_pgs: int = 0
    max_iterations: int = 10000

    def __post_init__(self):
        check_common(self)
        if self.polish_pgs < 0:
            raise ParamError(f"polish_pgs must be >= 0, got {self.polish_pgs}")


@register("qp", problems=(LCP, BoxedLCP), options=QPOptions, warm_start=True, classes=("spd", "psd", "factored", "boxed"),
          description="symmetric PSD (boxed) LCP as a bound-constrained QP through qpsolvers (proxsuite default)",
          guarantees="symmetric PSD M: the QP's KKT conditions are the LCP, solved to the backend's "
                     "tolerance on (M, q)/max|M| and certified by solve(); refuses non-symmetric M")
def qp_solve(problem, opts: QPOptions, warm_start=None) -> Solution:
    try:
        import qpsolvers
    except ImportError:  # pragma: no cover - a declared dependency
        raise ParamError("method 'qp' needs the qpsolvers package (pip install qpsolvers proxsuite)") from None
    backend = "proxqp" if opts.backend == "proxsuite" else opts.backend
    if backend not in qpsolvers.available_solvers:
        raise ParamError(f"QP backend {opts.backend!r} is not installed; available: "
                         f"{sorted(qpsolvers.available_solvers)} (proxsuite is named proxqp there)")
    n = problem.n
    s0 = max_abs(problem.M) or float(np.max(np.abs(problem.q), initial=0.0)) or 1.0
    M, q = problem.M / s0, problem.q / s0     # one scale: the problem times c gives the same QP
    if not is_symmetric(M):
        raise ParamError("method 'qp' needs a symmetric M (the LCP is then the KKT system of a QP); "
                         "use lemke or interior-point for non-symmetric M")
    if isinstance(problem, BoxedLCP):
        if problem.has_coupling:
            raise ParamError("method 'qp' does not solve friction-coupled bounds (findex); use pgs or pgs-sm")
        lo, hi = problem.lo, problem.hi
    else:
        lo, hi = np.zeros(n), np.full(n, np.inf)
    P = sp.csc_matrix(M) if sp.issparse(M) else M
    kwargs = {}
    for k in _TOL_KWARGS.get(backend, ()):
        kwargs[k] = opts.tol
    if backend in ("proxqp", "osqp"):
        kwargs["max_iter"] = opts.max_iterations
    if backend == "osqp":
        kwargs["polishing"] = True
    init = None
    if warm_start is not None:
        init = np.asarray(warm_start.z if isinstance(warm_start, Solution) else warm_start, dtype=np.float64)
        if init.shape != (n,):
            raise ParamError(f"warm_start must have length {n}")
    if backend == "quadprog":   # dense inequality form, finite bounds only
        keep_l, keep_u = np.isfinite(lo), np.isfinite(hi)
        Pd = P.toarray() if sp.issparse(P) else P
        G = np.vstack([-np.eye(n)[keep_l], np.eye(n)[keep_u]])
        h = np.concatenate([-lo[keep_l], hi[keep_u]])
        qp = qpsolvers.Problem(Pd, q, G if G.size else None, h if h.size else None)
    else:
        qp = qpsolvers.Problem(P, q, lb=lo, ub=hi)
    try:
        res = qpsolvers.solve_problem(qp, solver=backend, initvals=init, **kwargs)
    except Exception as exc:  # a backend error is a numerical failure of this method, not of the caller
        return Solution(z=np.zeros(n), w=np.zeros(n), status=Status.NUMERICAL_FAILURE,
                        info={"reason": f"{opts.backend} raised {type(exc).__name__}: {exc}", "backend": opts.backend})
    if res.x is None or not np.all(np.isfinite(res.x)):
        return Solution(z=np.zeros(n), w=np.zeros(n), status=Status.NO_SOLUTION_FOUND,
                        info={"reason": f"{opts.backend} found no solution", "backend": opts.backend})
    z = np.clip(np.asarray(res.x, dtype=np.float64), lo, hi)
    info = {"backend": opts.backend, "reason": "QP solved", "qp_found": bool(res.found)}
    iterations = 0
    if opts.crossover:
        from ..problems.residual import box_residuals
        from .interior_point import crossover

        def natural(v):
            return box_residuals(v, np.asarray(M @ v, dtype=np.float64).ravel() + q, lo, hi).natural
        zc = crossover(M, q, z, lo, hi)
        if zc is not None and natural(zc) < natural(z):
            z = zc
            info["crossover"] = True
    if opts.polish_pgs:
        from .pgs import BoxSweeper
        S = BoxSweeper(problem, normalise=False)
        w = np.empty(n)
        S.sweep(z, w, opts.polish_pgs, 1e-300)
        iterations = int(S.stats[0])
        info["polish_sweeps"] = iterations
    return Solution(z=z, w=np.zeros(n), status=Status.SOLVED if res.found is not False else Status.NO_SOLUTION_FOUND,
                    iterations=iterations, info=info)
