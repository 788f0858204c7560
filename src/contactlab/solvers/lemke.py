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
from ..problems.residual import certified_error
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
    take as blocking), each kept only if its answer certifies better; 0: none; equilibrate: solve
    the symmetrically equilibrated LCP (D M D, D q), D from :func:`equilibration`, map its answer
    back by z = D y, refine it on (M, q) and certify it there: "auto" (default) when the reduced
    run on (M, q) does not certify, "first" before it (the unscaled run only if the scaled one does
    not certify), "never" (the reduced basis only: ignored with basis="tableau"); warm_basis (True or
    False, default True): in a time-stepping simulation whose Stewart-Trinkle step is one compiled call
    (sim/st_stages.py ``CompiledSTStages``), start each step from the previous step's complementary
    basis (loomis-balkcom §IV, computation reuse: sim/st_kernels.py ``_warm_answer`` takes that
    basis's answer without a pivot where it certifies, else Lemke from its usual start); False: Lemke
    from the artificial basis w = q + d z0 every step, as drumwright ran it (Sec. VII-A, Table I).
    Both end each step on a certified answer of the same LCP: where it has one solution, the same
    to within ``tol`` (a degenerate LCP may have several, the motion then alike only as far as they
    are). A single solve() has no previous step: there Lemke always starts from the artificial
    basis and the option changes nothing (it is accepted so that a simulator's options serve both)."""
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
    equilibrate: str = "auto"
    warm_basis: bool = True

    def __post_init__(self):
        check_common(self)
        if not isinstance(self.warm_basis, (bool, np.bool_)):
            raise ParamError(f"warm_basis must be True or False, got {self.warm_basis!r}")
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
        if self.equilibrate not in ("auto", "first", "never"):
            raise ParamError(f"equilibrate must be 'auto', 'first' or 'never', got {self.equilibrate!r}")
        if not all(e > 0 for e in self.reg_eps):
            raise ParamError(f"reg_eps must be positive, got {self.reg_eps!r}")


def _rel(M, q, z) -> float:
    """The certified (scale-free) residual of z for the dense LCP (M, q) (one numba pass)."""
    n = q.size
    r = lcp_certify_dense(M, q, np.ascontiguousarray(z, dtype=np.float64), np.empty(n), np.empty(n),
                          NORMWISE_FLOOR)
    return max(r[3], r[5])


def equilibration(M: np.ndarray, symmetric: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(R, C), each (n,) of powers of two, with every row and column of R M C of largest magnitude
    in [1/2, 2]: symmetric (R = C = D, kernels/lemke.py ``equilibrate_symmetric``, Ruiz's symmetric
    scaling) or rows and columns separately (``equilibrate_two_sided``).

    Why: Lemke's pivot tolerances and lexicographic ties compare entries of different rows, so
    they are not invariant to the rows' units. A jointed hand's Stewart-Trinkle LCP (eq. 15 of
    arechavaleta) puts motor rows (a finger's effective inertia, entries ~1e5) beside contact rows
    (cfm 1e-6): cond(M) ~1e11, and Lemke ends in numerical secondary rays on problems an LP shows
    feasible. z = D y, M -> D M D, q -> D q (D > 0) is a change of the impulses' units: the solution
    sets correspond one to one and copositivity (plus) and P-ness are kept (Cottle-Pang-Stone
    §4.1), so Lemke's guarantees carry over; the equilibrated matrix of those hands has cond ~1e9.
    The two-sided scaling (R M C, R q), z = C y, keeps the solutions and P-ness but not
    copositivity: a second try, for rows and columns in unrelated units."""
    n = M.shape[0]
    R = np.empty(n)
    if symmetric:
        K.equilibrate_symmetric(M, R, np.empty(n))
        return R, R
    C = np.empty(n)
    K.equilibrate_two_sided(M, R, C, np.empty(n), np.empty(n))
    return R, C


def refine_on_original(M: np.ndarray, q: np.ndarray, R: np.ndarray, C: np.ndarray, Ms: np.ndarray,
                       y: np.ndarray, steps: int = 2) -> np.ndarray | None:
    """z = C y refined on the unscaled LCP (M, q), y the answer of the equilibrated LCP
    (Ms = R M C, R q): kernels/lemke.py ``refine_scaled_answer`` (the basis y reads, ``steps`` of
    iterative refinement of its basis system on (M, q)). Returns the refined z (clipped at 0; the
    caller certifies it and keeps the better of the two), or None when the basis block is singular
    or the refined z not finite."""
    f = np.ascontiguousarray
    z = np.empty(np.shape(y)[0])
    ok = K.refine_scaled_answer(f(M, dtype=np.float64), f(q, dtype=np.float64), f(R, dtype=np.float64),
                                f(C, dtype=np.float64), f(Ms, dtype=np.float64), f(y, dtype=np.float64), int(steps), z)
    return z if ok else None


def _run_scaled(M0, q0, d, max_pivots, opts: LemkeOptions, symmetric: bool):
    """One reduced run on (R M0 C, R q0), z = C y, refined on (M0, q0) (kernels/lemke.py
    ``lemke_scaled_run``, the compiled Stewart-Trinkle step's retry too): (code, pivots, z, residual, info)."""
    code, pv, z, res, refined, lo, hi = K.lemke_scaled_run(M0, q0, d, symmetric, max_pivots, REFACTOR_EVERY,
                                                           opts.pivot_tol, NORMWISE_FLOOR, int(opts.restarts),
                                                           1e-3 * opts.tol)
    info = {"scaling": "symmetric" if symmetric else "two-sided", "status": _STATUS[code].name, "pivots": int(pv),
            "residual": float(res), "scale_range": (float(lo), float(hi))}
    if refined != -1.0:
        info["refined_residual"] = float(refined)
    return code, int(pv), z, float(res), info


def _solve_equilibrated(M0, q0, d, max_pivots, opts: LemkeOptions):
    """Lemke's reduced basis on the symmetrically equilibrated LCP (D M0 D, D q0), then, if that does
    not certify to ``opts.tol``, on the two-sided one (R M0 C, R q0); each answer mapped back, refined
    on (M0, q0) (:func:`refine_on_original`) and certified there. Returns (status, pivots, z,
    certified residual on (M0, q0), info, acceptable): SOLVED only with that residual within
    ``opts.tol`` (what the unscaled run must reach to return at once); ``acceptable``: the kernel
    ended on a complementary basis whose answer is within max(tol, CERTIFY), solve()'s threshold (the
    caller weighs it against its other retries); else the answer nearest to one."""
    best = None
    pivots = 0
    tries = []
    for symmetric in (True, False):
        code, pv, z, res, info = _run_scaled(M0, q0, d, max_pivots, opts, symmetric)
        pivots += pv
        tries.append(info)
        rank = (code == _K_SOLVED and res <= max(opts.tol, CERTIFY), -res)
        if best is None or rank > best[0]:
            best = (rank, code, z, res)
        if code == _K_SOLVED and res <= opts.tol:
            break
    _, code, z, res = best
    acceptable = code == _K_SOLVED and res <= max(opts.tol, CERTIFY)
    status = _SOLVED if code == _K_SOLVED and res <= opts.tol else (
        Status.NUMERICAL_FAILURE if code == _K_SOLVED else _STATUS[code])
    return status, pivots, z, res, {"tries": tries}, acceptable


def _equilibrated_solution(eq, d, s, pivots, first=None) -> Solution:
    """The Solution of a certified equilibrated run (solve() certifies z on the problem again)."""
    info = {"covering": "ones" if d is _EMPTY else "given", "basis": "reduced", "scale": s, "equilibrated": eq[4]}
    if first is not None:
        info["unscaled_attempt"] = first
    return Solution(z=eq[2], w=_EMPTY, status=_SOLVED, iterations=pivots, pivots=pivots, info=info)


def lemke_core(M: np.ndarray, q: np.ndarray, d: np.ndarray, max_pivots: int, refine: bool = True,
               basis: str = "reduced", first_row: bool = False):
    """Run one kernel once (d: covering vector, empty for all ones); returns (status, pivots, z, ray)."""
    if basis == "reduced":
        code, pivots, z, ray, _ = K.lemke_reduced_run(M, q, 1.0, d, max_pivots, REFACTOR_EVERY, LEMKE_PIVOT,
                                                      NORMWISE_FLOOR)
        return _STATUS[code], pivots, z, ray
    f64 = np.ascontiguousarray
    code, pivots, z, ray = K.lemke_tableau_run(f64(M, dtype=np.float64), f64(q, dtype=np.float64),
                                               f64(d, dtype=np.float64), int(max_pivots), bool(refine), bool(first_row))
    status = _STATUS[code]
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
    eq = None   # the equilibrated run's (status, pivots, z, residual on (M0, q), info, acceptable)
    if basis == "reduced" and opts.equilibrate == "first":
        eq = _solve_equilibrated(M0, problem.q, d, max_pivots, opts)
        if eq[0] is _SOLVED:
            return _equilibrated_solution(eq, d, s, eq[1])
    if basis == "reduced":   # one compiled call: scaling, work arrays, pivots and the certified residual
        code, pivots, out, c = K.lemke_reduced_certified(M0, problem.q, s, d, max_pivots, REFACTOR_EVERY,
                                                         opts.pivot_tol, NORMWISE_FLOOR, int(opts.restarts))
        z, residual = out[:n], certified_error(c[3], c[5])
        if eq is not None:
            pivots += eq[1]
        if code == _K_SOLVED and residual <= opts.tol:   # the usual case: certified at once
            sol = Solution(z=z, w=_EMPTY, status=_SOLVED, iterations=pivots, pivots=pivots,
                           info={"covering": "ones" if d is _EMPTY else "given", "basis": basis, "scale": s})
            if M0 is problem.M and type(problem) is LCP:   # certified on problem's own (M, q) with LCP's
                # own definition (LCP.certify_numbers runs the same kernel): solve() need not repeat it
                certified_by_kernel(sol, problem, out[n:2 * n], c, residual)
            if eq is not None:
                sol.info["equilibrated_attempt"] = eq[4]
            return sol
        if opts.equilibrate == "auto":
            # not certified on (M, q): the equilibrated LCP (badly scaled rows, e.g. a hand's motors
            # beside its contacts), certified on (M0, q) itself
            eq = _solve_equilibrated(M0, problem.q, d, max_pivots, opts)
            if eq[0] is _SOLVED:
                return _equilibrated_solution(eq, d, s, pivots + eq[1], first={
                    "status": _STATUS[code].name, "pivots": pivots, "residual": residual})
            pivots += eq[1]
        status = _STATUS[code]
        ray = out[2 * n:]
        M, q = M0 / s, problem.q / s   # the kernel's scaled problem (the same correctly rounded quotients)
    else:
        M, q = M0 / s, problem.q / s
        status, pivots, z, ray = lemke_core(M, q, d, max_pivots, opts.refine, basis, first_row)
        residual = _rel(M, q, z)
    info: dict = {"covering": "ones" if opts.covering is None else "given", "basis": basis, "scale": s}
    if eq is not None:
        info["equilibrated_attempt"] = eq[4]

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
                status, z, residual = Status.SOLVED, zp, resp
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
                status, z, residual = Status.SOLVED, zr, res
                info["regularization"] = eps * s
                break
            if res < residual:
                z, residual = zr, res
        info["regularized_retries"] = tries
        info["first_status"] = "RAY_TERMINATION" if "ray" in info else status.name
    if eq is not None and eq[3] < residual and (eq[5] or status is not Status.SOLVED):
        # the equilibrated answer is the better one: certified within solve()'s threshold where the
        # retries' is not, or closer to it (not certified: the answer nearest to one, a caller may judge it)
        z, residual = eq[2], eq[3]
        if eq[5]:
            status = Status.SOLVED
            info["equilibrated"] = info.pop("equilibrated_attempt")
    return Solution(z=z, w=np.empty(0), status=status, iterations=total, pivots=total, info=info)
