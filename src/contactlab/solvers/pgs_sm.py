"""PGS-SM: projected Gauss-Seidel sweeps plus subspace minimisation (arechavaleta §III-B, Algorithm PGS-SM,
after Morales, Nocedal and Smelyanskiy 2008).

PGS stage: ``k_pgs`` sweeps (kernels/pgs.py) estimate the active set; exit when the natural residual is
below ``tol``. SM stage: up to ``k_sm`` times, solve the reduced system M_FF z_F = -(q_F + M_FA z_A) on the
free set F (rows strictly inside their box; rows at either bound leave the system, as the paper adapts
the method to boxes), project onto the bounds, shrink F; stop early when the solution is inside its
bounds. Coupled (friction) bounds are taken from the current normal values (arechavaleta §IV-C, eq. 16-17).
Dense symmetric M: the whole call is one compiled function (kernels/pgs_sm.py ``pgs_sm_dense_run``;
this module's loop is the reference and takes sparse, non-symmetric and singular cases).
Reduced systems: Cholesky for dense M (LU if M_FF is not symmetric positive definite), preconditioned
conjugate gradients for sparse M with a sparse direct solve as fallback. ``cfm`` adds
constraint force mixing to the diagonal (§V-B: CFM = diag(1e-11)).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ParamError
from ..kernels import pgs as K
from ..kernels import pgs_sm as KSM
from ..kernels.tolerances import NORMWISE_FLOOR
from ..problems import LCP, BoxedLCP
from ..solution import Solution, Status
from .pgs import BoxSweeper, _REASON
from .registry import check_common, register


@dataclass(frozen=True)
class PGSSMOptions:
    """k_pgs: PGS sweeps per stage (paper: 3-6); k_sm: subspace steps per stage (paper: 1-3); tol:
    certified relative residual (scale-free, problems/residual.py; paper: 1e-8); max_iterations: limit
    on PGS+SM cycles (alias max_outer); cfm: constraint force mixing added to the diagonal (paper:
    1e-11; solves M + cfm I);
    sm_solver: "auto" (Cholesky dense, CG sparse), "cholesky", "lu", "cg" or "direct" (sparse LU);
    cg_tol/cg_maxiter: relative tolerance and iteration limit of the CG solves (0: min(max(100, 2 |F|), 1000))."""

    k_pgs: int = 5
    k_sm: int = 2
    tol: float = 1e-8
    max_iterations: int = 500
    cfm: float = 0.0
    sm_solver: str = "auto"
    cg_tol: float = 1e-12
    cg_maxiter: int = 0
    normals_first: bool = True
    max_halvings: int = 8

    def __post_init__(self):
        check_common(self)
        if self.k_pgs < 1 or self.k_sm < 1:
            raise ParamError(f"k_pgs and k_sm must be >= 1, got {self.k_pgs}, {self.k_sm}")
        if self.cfm < 0 or self.cg_tol <= 0 or self.cg_maxiter < 0 or self.max_halvings < 0:
            raise ParamError("cfm, cg_maxiter, max_halvings must be >= 0 and cg_tol > 0")
        if self.sm_solver not in ("auto", "cholesky", "lu", "cg", "direct"):
            raise ParamError(f"sm_solver must be auto, cholesky, lu, cg or direct, got {self.sm_solver!r}")


def _solve_dense(A, b, how):
    """Cholesky (SPD), else LU, else the minimum-norm least-squares solution (singular PSD M_FF)."""
    if how in ("auto", "cholesky"):
        try:
            return sla.cho_solve(sla.cho_factor(A, check_finite=False), b, check_finite=False), "cholesky"
        except np.linalg.LinAlgError:
            pass
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            lu = sla.lu_factor(A, check_finite=False)
            d = np.abs(np.diag(lu[0]))
            if d.size and d.min() > 1e-13 * d.max():
                x = sla.lu_solve(lu, b, check_finite=False)
                if np.all(np.isfinite(x)):
                    return x, "lu"
            x = sla.lstsq(A, b, check_finite=False, lapack_driver="gelsd")[0]
            return (x, "lstsq") if np.all(np.isfinite(x)) else (None, "singular")
        except (np.linalg.LinAlgError, ValueError):
            return None, "singular"


def _solve_sparse(A, b, opts):
    """Jacobi-preconditioned CG; when it stops short of cg_tol its iterate is still used if it reduced
    ||A x - b|| by half (an inexact subspace step: the projected search keeps phi decreasing), otherwise
    ("direct" or a CG breakdown) a sparse LU solve."""
    how = opts.sm_solver
    if how in ("auto", "cg"):
        d = A.diagonal()
        pre = spla.LinearOperator(A.shape, matvec=lambda x: x / d) if np.all(d > 0) else None
        maxiter = opts.cg_maxiter or min(max(100, 2 * A.shape[0]), 1000)
        x, info = spla.cg(A, b, rtol=opts.cg_tol, atol=0.0, maxiter=maxiter, M=pre)
        if info == 0 or how == "cg":
            return x, "cg"
        if np.all(np.isfinite(x)) and np.linalg.norm(A @ x - b) <= 0.5 * np.linalg.norm(b):
            return x, "cg-inexact"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = spla.spsolve(sp.csc_matrix(A), b)
        return (x, "direct") if np.all(np.isfinite(x)) else (None, "singular")
    except RuntimeError:
        return None, "singular"


def _phi(S, z, w=None) -> float:
    """The QP objective 1/2 z'Mz + q'z = 1/2 z'(w + q) (arechavaleta eq. 2)."""
    if w is None:
        w = S.w(z)
    return 0.5 * float(z @ (w + S.q))


def _project(S, z, free, side_hi) -> bool:
    """Project z onto the box, static rows first, then coupled rows with bounds from the new normals;
    coupled rows that were at a bound stay on the same side. True if nothing had to move."""
    coupled = S.findex >= 0
    st = ~coupled
    zs = np.clip(z[st], S.lo[st], S.hi[st])
    inside = bool(np.all(zs == z[st]))
    z[st] = zs
    if np.any(coupled):
        lo, hi = S.bounds(z)
        at_bound = coupled & ~free
        z[at_bound] = np.where(side_hi[at_bound], hi[at_bound], lo[at_bound])
        zc = np.clip(z[coupled], lo[coupled], hi[coupled])
        inside = inside and bool(np.all(zc == z[coupled]))
        z[coupled] = zc
    return inside


def _first_breakpoint(zF, dz, loF, hiF) -> float:
    """Largest alpha in (0, 1] with lo <= zF + alpha dz <= hi (current bounds)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(dz > 0, (hiF - zF) / dz, np.inf)
        down = np.where(dz < 0, (loF - zF) / dz, np.inf)
    a = float(min(np.min(up, initial=np.inf), np.min(down, initial=np.inf), 1.0))
    return max(a, 0.0)


def _subspace_step(S: BoxSweeper, z, w, opts) -> tuple[int, bool, str]:
    """Up to k_sm reduced solves from z (in place). Returns (steps taken, stopped inside bounds, solver used)."""
    coupled = S.findex >= 0
    lo, hi = S.bounds(z)
    free = (z > lo) & (z < hi)
    used = ""
    for k in range(opts.k_sm):
        F = np.flatnonzero(free)
        if F.size == 0:
            return k, True, used
        side_hi = coupled & (z >= hi) & (hi > 0)  # coupled rows at their upper bound keep that side
        if S.sparse:
            MFF = S.M[F][:, F]
            dz, used = _solve_sparse(MFF, -w[F], opts)
        else:
            MFF = S.M[np.ix_(F, F)]
            dz, used = _solve_dense(MFF, -w[F], opts.sm_solver)
        if dz is None:
            return k, False, used
        z_old = z.copy()
        z[F] += dz
        inside = _project(S, z, free, side_hi)
        if not inside and S.symmetric:
            phi0 = _phi(S, z_old, w)
            if _phi(S, z) > phi0:
                # projected Newton step rose: step to the first bound along dz instead (an active-set
                # step, which decreases phi since dz points at the minimiser on the face)
                z[:] = z_old
                alpha = _first_breakpoint(z_old[F], dz, lo[F], hi[F])
                for _ in range(opts.max_halvings + 1):
                    z[F] = z_old[F] + alpha * dz
                    _project(S, z, free, side_hi)
                    if _phi(S, z) <= phi0:
                        break
                    alpha *= 0.5
                else:
                    z[:] = z_old  # no decrease: keep z, let PGS continue
                    w[:] = S.w(z)
                    return k, False, used
        w[:] = S.w(z)
        if inside:
            return k + 1, True, used
        lo, hi = S.bounds(z)
        free &= (z > lo) & (z < hi)
    return opts.k_sm, False, used


_LCP_BOUNDS: dict = {}
_PARAMS: dict = {}
_STATUS_OF = {K.CONVERGED: Status.SOLVED, KSM.MAX_OUTER: Status.MAX_ITERATIONS}
_REASON_OF = {K.CONVERGED: "residual below tol", KSM.MAX_OUTER: "outer iteration limit reached"}


def _params(opts: PGSSMOptions) -> np.ndarray:
    """The kernel's parameter array of an options instance (solve() shares instances: built once)."""
    hit = _PARAMS.get(id(opts))
    if hit is None or hit[0] is not opts:
        if len(_PARAMS) > 64:
            _PARAMS.clear()
        arr = np.array([opts.cfm, float(opts.normals_first), opts.k_pgs, opts.k_sm, opts.tol, opts.max_iterations,
                        opts.max_halvings, NORMWISE_FLOOR], dtype=np.float64)
        arr.flags.writeable = False
        hit = _PARAMS[id(opts)] = (opts, arr)
    return hit[1]


def _dense_run(problem, opts: PGSSMOptions, warm_start):
    """The dense solver call in one compiled function (kernels/pgs_sm.py ``pgs_sm_dense_run``):
    (z, w, status code, stats). A plain LCP is the box [0, inf) with no coupled rows."""
    n = problem.n
    if isinstance(problem, BoxedLCP):
        lo, hi, findex, mu = problem.lo, problem.hi, problem.findex, problem.mu
    else:
        b = _LCP_BOUNDS.get(n)
        if b is None:     # read-only, shared by every LCP of this size
            b = (np.zeros(n), np.full(n, np.inf), np.full(n, -1, dtype=np.int64), np.zeros(n))
            for x in b:
                x.flags.writeable = False
            _LCP_BOUNDS[n] = b
        lo, hi, findex, mu = b
    if warm_start is None:
        z = np.zeros(n)
    else:
        z0 = warm_start.z if isinstance(warm_start, Solution) else warm_start
        z = np.array(z0, dtype=np.float64).ravel()
        if z.shape != (n,) or not np.all(np.isfinite(z)):
            raise ParamError(f"warm_start must be a finite vector of length {n} "
                             f"(or a Solution of the same problem), got shape {z.shape}")
    w = np.empty(n)
    stats = np.zeros(6)
    code = KSM.pgs_sm_dense_run(problem.M, problem.q, lo, hi, findex, mu, z, w, _params(opts), stats)
    return z, w, code, stats


@register("pgs-sm", problems=(LCP, BoxedLCP), options=PGSSMOptions, warm_start=True,
          description="PGS + subspace minimisation (arechavaleta Alg. PGS-SM / Morales-Nocedal-Smelyanskiy), "
                      "boxes, findex/mu friction bounds, CFM, dense (Cholesky) and CSR (CG)",
          guarantees="designed for symmetric positive definite M; other matrices and coupled bounds: "
                     "no guarantee, the residual certifies the answer")
def pgs_sm_solve(problem, opts: PGSSMOptions, warm_start=None) -> Solution:
    sweeps = sm_steps = outer0 = 0
    solvers: set[str] = set()
    z = None
    if isinstance(problem.M, np.ndarray) and opts.sm_solver in ("auto", "cholesky"):
        z, w, code, stats = _dense_run(problem, opts, warm_start)
        if code != KSM.CHOLESKY_FAILED and code != KSM.NOT_SYMMETRIC:
            sweeps, sm_steps = int(stats[1]), int(stats[2])
            return Solution(z=z, w=w, status=_STATUS_OF.get(code, Status.NUMERICAL_FAILURE),
                            iterations=sweeps + sm_steps,
                            info={"reason": _REASON_OF.get(code) or _REASON.get(code, "failure"), "pgs_sweeps": sweeps,
                                  "sm_steps": sm_steps, "outer": int(stats[0]), "sm_trials": int(stats[4]),
                                  "sm_solvers": ["cholesky"] if sm_steps else [], "sparse": False, "kernel": "numba"})
        if code == KSM.CHOLESKY_FAILED:   # a singular M_FF: go on in Python (LU / least squares) from z
            outer0, sweeps, sm_steps = int(stats[0]), int(stats[1]), int(stats[2])
            solvers.add("cholesky")
        else:
            z = None
    S = BoxSweeper(problem, opts.cfm, opts.normals_first)
    if z is None:
        z = S.start(warm_start)
    w = S.w(z)
    tol = S.abs_target(z, w, opts.tol)   # absolute target on the normalised problem; tightened below
    code, status, reason = K.MAX_SWEEPS, Status.MAX_ITERATIONS, "outer iteration limit reached"
    outer = outer0
    singular = 0
    for outer in range(outer0 + 1, opts.max_iterations + 1):
        code = S.sweep(z, w, opts.k_pgs, tol)
        sweeps += int(S.stats[0])
        if code == K.CONVERGED:
            if S.relative(z, w) <= opts.tol:
                status, reason = Status.SOLVED, "residual below tol after a PGS stage"
                break
            tol = min(0.1 * tol, S.abs_target(z, w, opts.tol))
        if code in (K.BAD_DIAGONAL, K.NOT_FINITE):
            status, reason = Status.NUMERICAL_FAILURE, _REASON[code]
            break
        steps, _, used = _subspace_step(S, z, w, opts)
        sm_steps += steps
        if used:
            solvers.add(used)
        if used == "singular":   # no subspace step this cycle: PGS goes on (max_iterations bounds the loop)
            singular += 1
        if S.relative(z, w) <= opts.tol:
            status, reason = Status.SOLVED, "residual below tol after a subspace step"
            break
    return Solution(z=z, w=w, status=status, iterations=sweeps + sm_steps,
                    info={"reason": reason, "pgs_sweeps": sweeps, "sm_steps": sm_steps, "outer": outer,
                          "sm_solvers": sorted(solvers), "sparse": S.sparse, "kernel": "python",
                          "singular_reduced_systems": singular})
