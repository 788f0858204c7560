"""Lemke's complementary pivoting method (Lemke 1965; Cottle-Pang-Stone §4.4).

Dense product-form basis inverse updated by O(n^2) pivots in a numba kernel (kernels/lemke.py);
lexicographic minimum-ratio test so degenerate problems terminate; secondary-ray termination is
a status with the ray in ``info['ray']``; an optional regularised retry on M + eps I (as GraspIt!
and the RPI simulator do, drumwright §VII-A) whose answer is certified against the original M.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParamError
from ..kernels import lemke as K
from ..problems import LCP
from ..kernels.residual import lcp_certify_dense
from ..kernels.tolerances import CERTIFY, LEMKE_PIVOT, NORMWISE_FLOOR
from ..problems.residual import certified_error, lcp_natural_residual
from .certificates import check_farkas
from ..solution import Solution, Status
from .registry import certified_by_kernel, check_common, dense_matrix_for, register

#: up to this n a dense LCP's own M is passed to the kernel as it is (problems/validation.py as_matrix
#: made it C-contiguous float64); beyond it dense_matrix_for checks the work arrays fit in memory
_SMALL = 4096
#: pivots between drift checks of the reduced basis inverse, refactorised when it drifted
#: (kernels/lemke.py REFACTOR_DRIFT)
REFACTOR_EVERY = 64
#: empty: the reduced kernel's covering vector "all ones" (kernels/lemke.py lemke_reduced_run),
#: also the placeholder w of a Solution (solve() computes w)
_EMPTY = np.empty(0)

_K_SOLVED, _SOLVED = K.SOLVED, Status.SOLVED   # module constants: read on every call
_STATUS = {K.SOLVED: Status.SOLVED, K.RAY: Status.RAY_TERMINATION, K.MAX_PIVOTS: Status.MAX_ITERATIONS,
           K.NUMERICAL: Status.NUMERICAL_FAILURE}


@dataclass(frozen=True)
class LemkeOptions:
    """covering: covering vector d > 0 (default all ones); max_iterations: pivot limit per run,
    default 50 n + 1000 (alias max_pivots); regularize: retry on M + eps I after a ray or failure,
    eps from ``reg_eps`` times max|M_ij| (no floor: the shift scales with M); refine: one step of
    iterative refinement of the final basis system (tableau only); tol: certified relative residual
    (problems/residual.py ``lcp_relative``); basis: "reduced" keeps only the k x k block [M_WZ d_W] of the basis and its inverse,
    updated by rank-one formulas (O(k^2 + n k) per pivot), "tableau" the full n x n basis inverse,
    "auto" (default) runs reduced and, if its answer is not certified, the tableau; ties:
    "lexicographic" (default, terminates on degenerate problems) or "first-row" (the rule without
    lexicography, tableau only, kept to show cycling on Kostreva's example); pivot_tol: a pivot column
    entry blocks only above pivot_tol * max(1, max|entry|) (reduced basis); pivot_retries: larger
    pivot tolerances tried in turn (reduced basis) when the answer does not certify, before the
    regularised retries; restarts: how many times the reduced basis may restart Lemke from the
    complementary basis it ended on when that basis, refactorised, is infeasible (kernels/lemke.py
    ``_restart_from_basis``: degenerate rows whose tiny column entries the pivot tolerance did not
    take as blocking), each kept only if its answer certifies better; 0: none."""
    covering: object = None
    max_iterations: int | None = None
    regularize: bool = True
    reg_eps: tuple = (1e-10, 1e-8, 1e-6, 1e-4)
    refine: bool = True
    tol: float = 1e-8
    basis: str = "auto"
    ties: str = "lexicographic"
    pivot_tol: float = LEMKE_PIVOT
    pivot_retries: tuple = (1e-7, 1e-5)
    restarts: int = K.RESTARTS

    def __post_init__(self):
        check_common(self)
        if self.basis not in ("auto", "reduced", "tableau"):
            raise ParamError(f"basis must be 'auto', 'reduced' or 'tableau', got {self.basis!r}")
        if self.ties not in ("lexicographic", "first-row"):
            raise ParamError(f"ties must be 'lexicographic' or 'first-row', got {self.ties!r}")
        if self.ties == "first-row" and self.basis != "tableau":
            raise ParamError("ties='first-row' is implemented on the tableau only; pass basis='tableau'")
        if not (np.isfinite(self.pivot_tol) and 0 < self.pivot_tol < 1) or \
                not all(np.isfinite(t) and 0 < t < 1 for t in self.pivot_retries):
            raise ParamError(f"pivot_tol and pivot_retries must lie in (0, 1), got {self.pivot_tol!r}, "
                             f"{self.pivot_retries!r}")
        if isinstance(self.restarts, bool) or not isinstance(self.restarts, (int, np.integer)) or self.restarts < 0:
            raise ParamError(f"restarts must be an integer >= 0, got {self.restarts!r}")
        if not all(e > 0 for e in self.reg_eps):
            raise ParamError(f"reg_eps must be positive, got {self.reg_eps!r}")


def _rel(M, q, z) -> float:
    """The certified (scale-free) residual of z for the dense LCP (M, q) (one numba pass)."""
    n = q.size
    r = lcp_certify_dense(M, q, np.ascontiguousarray(z, dtype=np.float64), np.empty(n), np.empty(n),
                          NORMWISE_FLOOR)
    return max(r[3], r[5])


def _basis_solution(n, basis, xB):
    """z read off the final complementary basis."""
    z = np.zeros(n)
    for i, v in enumerate(basis):
        if n <= v < 2 * n:
            z[v - n] = xB[i]
    return np.maximum(z, 0.0)


def lemke_core(M: np.ndarray, q: np.ndarray, d: np.ndarray, max_pivots: int, refine: bool = True,
               basis: str = "reduced", first_row: bool = False):
    """Run one kernel once (d: covering vector, empty for all ones); returns (status, pivots, z, ray)."""
    if basis == "reduced":
        code, pivots, z, ray, _ = K.lemke_reduced_run(M, q, 1.0, d, max_pivots, REFACTOR_EVERY, LEMKE_PIVOT,
                                                      NORMWISE_FLOOR)
        return _STATUS[code], pivots, z, ray
    n = q.size
    if d.size == 0:
        d = np.ones(n)
    Binv = np.empty((n, n))
    xB = np.empty(n)
    basis = np.empty(n, dtype=np.int64)
    col = np.empty(n)
    cand = np.empty(n, dtype=np.int64)
    work = np.empty(n)
    ray = np.zeros(2 * n + 1)
    code, pivots = K.lemke_kernel(M, q, d, max_pivots, Binv, xB, basis, col, cand, work, np.empty(n), ray, first_row)
    status = _STATUS[code]
    z = _basis_solution(n, basis, xB)
    if status is Status.SOLVED and refine and pivots > 0:
        K.refine_basis(M, q, d, basis, xB, Binv, work)
        zr = _basis_solution(n, basis, xB)
        if lcp_natural_residual(zr, M @ zr + q) <= lcp_natural_residual(z, M @ z + q):
            z = zr
    return status, int(pivots), z, ray


@register("lemke", problems=(LCP,), options=LemkeOptions,
          classes=("spd", "psd", "p", "friction", "factored", "boxed"),
          description="Lemke's complementary pivoting, lexicographic, with regularised retry",
          guarantees="solves P-matrix and copositive-plus (incl. PSD) LCPs that have a solution; a ray is "
                     "reported as NO_SOLUTION only when its z part is a checked Farkas vector (proven for "
                     "copositive-plus M and a ray not caused by the pivot tolerance), else RAY_TERMINATION")
def lemke_solve(problem: LCP, opts: LemkeOptions, warm_start=None) -> Solution:
    n = problem.n
    M0 = problem.M   # a dense LCP's M is C-contiguous float64 (problems/validation.py as_matrix)
    if type(M0) is not np.ndarray or n > _SMALL:
        M0 = dense_matrix_for("lemke", problem, copies=4)
    # one scale: the kernels run on (M, q) / max|M|, so the problem times any c pivots identically
    s = problem.max_abs_M() or float(np.max(np.abs(problem.q), initial=0.0)) or 1.0
    if opts.covering is None:
        d = _EMPTY
    else:
        d = np.asarray(opts.covering, dtype=np.float64).ravel()
        if d.shape != (n,) or not np.all(np.isfinite(d)) or np.any(d <= 0):
            raise ParamError(f"covering must be a positive finite vector of length {n}")
    max_pivots = opts.max_iterations if opts.max_iterations is not None else 50 * n + 1000
    first_row = opts.ties == "first-row"
    basis = "reduced" if opts.basis == "auto" else opts.basis
    if basis == "reduced":   # one compiled call: scaling, work arrays, pivots and the certified residual
        code, pivots, out, c = K.lemke_reduced_certified(M0, problem.q, s, d, max_pivots, REFACTOR_EVERY,
                                                         opts.pivot_tol, NORMWISE_FLOOR, int(opts.restarts))
        z, residual = out[:n], certified_error(c[3], c[5])
        if code == _K_SOLVED and residual <= opts.tol:   # the usual case: certified at once
            sol = Solution(z=z, w=_EMPTY, status=_SOLVED, iterations=pivots, pivots=pivots,
                           info={"covering": "ones" if d is _EMPTY else "given", "basis": basis, "scale": s})
            if M0 is problem.M and type(problem) is LCP:   # certified on problem's own (M, q) with LCP's
                # own definition (LCP.certify_numbers runs the same kernel): solve() need not repeat it
                certified_by_kernel(sol, problem, out[n:2 * n], c, residual)
            return sol
        status = _STATUS[code]
        ray = out[2 * n:]
        M, q = M0 / s, problem.q / s   # the kernel's scaled problem (the same correctly rounded quotients)
    else:
        M, q = M0 / s, problem.q / s
        status, pivots, z, ray = lemke_core(M, q, d, max_pivots, opts.refine, basis, first_row)
        residual = _rel(M, q, z)
    info: dict = {"covering": "ones" if opts.covering is None else "given", "basis": basis, "scale": s}

    if opts.basis == "auto" and not (status is Status.SOLVED and residual <= opts.tol):
        # degenerate, ill-conditioned problems: rank-one updates of the small inverse can drift
        # where the full tableau does not (ties are then broken differently); retry once
        info["reduced_attempt"] = {"status": status.name, "pivots": pivots, "residual": residual}
        st2, pv2, z2, ray2 = lemke_core(M, q, d, max_pivots, opts.refine, "tableau")
        pivots += pv2
        res2 = _rel(M, q, z2)
        # keep the better answer: a solved one first, then the smaller residual
        if (st2 is Status.SOLVED, -res2) >= (status is Status.SOLVED, -residual):
            status, z, ray, residual = st2, z2, ray2, res2
            info["basis"] = "tableau"
        info["tableau_attempt"] = {"status": st2.name, "pivots": pv2, "residual": res2}
    if status is Status.SOLVED and residual > max(opts.tol, CERTIFY):
        status = Status.NUMERICAL_FAILURE  # uncertifiable: let the regularised retries try
    if status is Status.RAY_TERMINATION:
        y = ray[n:2 * n].copy()
        info["ray"] = {"z": y, "w": ray[:n].copy(), "z0": float(ray[2 * n])}
        if check_farkas(M, q, y)[0]:
            # the ray's z part proves {z >= 0, Mz + q >= 0} empty (copositive-plus M); solve() re-checks
            info["certificate"] = {"kind": "farkas", "y": y}
            return Solution(z=z, w=np.empty(0), status=Status.NO_SOLUTION, iterations=pivots, pivots=pivots,
                            info=info)
    total = pivots
    if status is not Status.SOLVED and opts.pivot_retries and opts.basis != "tableau":
        # a tiny pivot element taken as blocking can steer an ill-conditioned LCP (cond ~1e8 grasp
        # pyramids) to a wrong complementary basis; larger pivot tolerances skip it (measured: the
        # Barrett/wood step that stopped the sweep solves to 3e-11 with 1e-7)
        tries = []
        for ptol in opts.pivot_retries:
            code, pv, zp, _, resp = K.lemke_reduced_run(M0, problem.q, s, d, max_pivots, REFACTOR_EVERY, ptol,
                                                        NORMWISE_FLOOR, int(opts.restarts))
            total += pv
            tries.append({"pivot_tol": ptol, "status": _STATUS[code].name, "pivots": pv, "residual": resp})
            if _STATUS[code] is Status.SOLVED and resp <= max(opts.tol, CERTIFY):
                status, z = Status.SOLVED, zp
                info["pivot_tol"], info["basis"] = ptol, "reduced"
                break
            if resp < residual:   # not certified: keep the answer nearest to one (a caller may judge it)
                z, residual = zp, resp
        info["pivot_retries"] = tries
    if status is not Status.SOLVED and opts.regularize:
        tries = []
        for eps in opts.reg_eps:
            st, pv, zr, _ = lemke_core(M + eps * np.eye(n), q, d, max_pivots, opts.refine, "tableau")
            total += pv
            res = _rel(M, q, zr)
            tries.append({"eps": eps * s, "status": st.name, "pivots": pv, "residual_on_original": res})
            if st is Status.SOLVED and res <= max(opts.tol, CERTIFY):   # solve()'s own threshold
                status, z = Status.SOLVED, zr
                info["regularization"] = eps * s
                break
            if res < residual:
                z, residual = zr, res
        info["regularized_retries"] = tries
        info["first_status"] = "RAY_TERMINATION" if "ray" in info else status.name
    return Solution(z=z, w=np.empty(0), status=status, iterations=total, pivots=total, info=info)
