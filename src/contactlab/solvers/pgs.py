"""Projected Gauss-Seidel (``pgs``) and projected SOR (``psor``) on LCPs and boxed LCPs.

arechavaleta §III-A eq. (3), with box bounds and ODE-style friction-coupled bounds
(lo_i = -mu_i z_j, hi_i = mu_i z_j, j = findex[i], read inside the sweep). Dense arrays and
``scipy.sparse`` CSR matrices are swept by the numba kernels of :mod:`contactlab.kernels.pgs`,
which allocate nothing per sweep. The sweeps run on (M, q) / max|M| (the same iterates for the
problem times any constant). Stopping: the scale-free residual of problems/residual.py
(``box_relative``) <= ``tol`` (the kernel stops on the absolute residual <= tol * min(||z||, ||w||
units), which implies it, and is tightened if the units move), or ``||z^{k+1} - z^k||_inf <=
step_tol``, or a sweep whose largest correction of a row's own w_i (|dz_i| M_ii) is <= ``w_step_tol``
(Bullet's sequential-impulse stop, for engine-like fixed budgets; NO_SOLUTION_FOUND for either if
the residual is still above tol), or ``max_iterations`` sweeps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ParamError
from ..kernels import pgs as K
from ..kernels.pgs_matrix_free import sweep_order
from ..problems import LCP, BoxedLCP
from ..problems.residual import box_relative, relative_error, row_terms
from ..problems.validation import max_abs
from ..solution import Solution, Status
from .registry import check_common, register

_STATUS = {K.CONVERGED: Status.SOLVED, K.MAX_SWEEPS: Status.MAX_ITERATIONS,
           K.BAD_DIAGONAL: Status.NUMERICAL_FAILURE, K.NOT_FINITE: Status.NUMERICAL_FAILURE,
           K.STALLED: Status.NO_SOLUTION_FOUND}
_REASON = {K.CONVERGED: "residual below tol", K.MAX_SWEEPS: "sweep limit reached",
           K.BAD_DIAGONAL: "a diagonal entry of M (+cfm) is not positive; PGS needs M_ii > 0 (set cfm > 0)",
           K.NOT_FINITE: "iterate became non-finite (divergence)",
           K.STALLED: "step below step_tol (or w_step_tol) while the residual is above tol"}


#: PyBullet's default stop as ``w_step_tol``: its solverResidualThreshold 1e-7 bounds the square of a
#: sweep's largest velocity correction (btSequentialImpulseConstraintSolver, m_leastSquaresResidualThreshold)
BULLET_W_STEP_TOL = 1e-7 ** 0.5


@dataclass(frozen=True)
class PGSOptions:
    """tol: certified relative residual (scale-free, problems/residual.py); step_tol: stop when
    ||z^{k+1} - z^k||_inf <= step_tol (units of z; 0 disables all but an exact stall); w_step_tol:
    stop after a sweep in which no row corrected its own w_i by more than this, max_i |dz_i| M_ii
    (units of w, e.g. m/s for a velocity-level contact LCP; 0: off). This is the stop of Bullet's
    sequential-impulse solver, whose ``solverResidualThreshold`` is its square (PyBullet's default
    1e-7: w_step_tol = 3.16e-4); with a sweep budget it compares an engine's fixed budget like for
    like. Neither stop certifies: the answer is SOLVED only if the residual is below tol; max_iterations:
    sweep limit (alias max_sweeps);
    omega: relaxation (1 = Gauss-Seidel, 0 < omega < 2); shuffle/seed: randomised row order each sweep
    (fixed seed); cfm: constraint force mixing added to the diagonal (solves M + cfm I, arechavaleta
    §V-B); refresh: recompute w = Mz + q exactly every this many sweeps; normals_first: sweep
    uncoupled rows before friction-coupled rows (ODE's order); height: (n,) each row's height
    against gravity (the simulator's box-friction rows, models/box_friction.py ``row_heights``):
    within each class the highest row first, the top-down order that carries a stack's weight to
    the ground in one sweep (kernels/pgs_matrix_free/ ``sweep_order``; None: the rows' order)."""

    tol: float = 1e-10
    step_tol: float = 0.0
    w_step_tol: float = 0.0
    max_iterations: int = 10000
    omega: float = 1.0
    shuffle: bool = False
    seed: int = 0
    cfm: float = 0.0
    refresh: int = 50
    normals_first: bool = True
    height: object = None

    def __post_init__(self):
        check_common(self)
        if self.height is not None:
            h = np.asarray(self.height, dtype=np.float64)
            if h.ndim != 1 or np.isnan(h).any():
                raise ParamError("height must be a 1-D array of row heights without NaN (one per row of the problem)")
            object.__setattr__(self, "height", np.ascontiguousarray(h))
        if not (0.0 < self.omega < 2.0):
            raise ParamError(f"omega must lie in (0, 2), got {self.omega}")
        if not (self.step_tol >= 0 and self.w_step_tol >= 0 and self.cfm >= 0):
            raise ParamError(f"step_tol, w_step_tol and cfm must be >= 0, got {self.step_tol}, {self.w_step_tol}, "
                             f"{self.cfm}")
        if self.refresh < 0:
            raise ParamError(f"refresh must be >= 0, got {self.refresh}")


@dataclass(frozen=True)
class PSOROptions(PGSOptions):
    """As PGSOptions with over-relaxation omega = 1.2 by default."""

    omega: float = 1.2


class BoxSweeper:
    """A problem prepared once for repeated PGS sweeps: bounds, findex, column structure, diagonal.

    Used by ``pgs``/``psor`` and by the PGS stage of ``pgs-sm``. ``M`` includes ``cfm``.
    """

    def __init__(self, problem, cfm: float = 0.0, normals_first: bool = True, normalise: bool = True,
                 height=None):
        n = problem.n
        M = problem.M
        # one scale: sweep (M + cfm I, q) / max|M| (z unchanged, w divided by s)
        self.s = s = (max_abs(M) or float(np.max(np.abs(problem.q), initial=0.0)) or 1.0) if normalise else 1.0
        if s != 1.0:
            M = M / s
            cfm = cfm / s
        if isinstance(problem, BoxedLCP):
            self.lo, self.hi = problem.lo, problem.hi
            self.findex, self.mu = problem.findex, problem.mu
        else:
            self.lo, self.hi = np.zeros(n), np.full(n, np.inf)
            self.findex, self.mu = np.full(n, -1, dtype=np.int64), np.zeros(n)
        self.sparse = sp.issparse(M)
        if self.sparse:
            M = sp.csr_matrix(M)
            if cfm > 0:
                M = (M + cfm * sp.eye(n, format="csr")).tocsr()
            M.sort_indices()
            self.symmetric = (abs(M - M.T) > 0).nnz == 0   # exactly: then M' = M is read as is
            T = M if self.symmetric else M.T.tocsr()
            self.t_indptr = T.indptr.astype(np.int64)
            self.t_indices = T.indices.astype(np.int64)
            self.t_data = np.ascontiguousarray(T.data, dtype=np.float64)
            self.diag = np.ascontiguousarray(M.diagonal(), dtype=np.float64)
        else:
            if cfm > 0:
                M = M + cfm * np.eye(n)
            self.symmetric = bool(np.array_equal(M, M.T))   # exactly (a storage choice, not a tolerance)
            self.MT = M if self.symmetric else np.ascontiguousarray(M.T)
            self.diag = np.ascontiguousarray(np.diag(M), dtype=np.float64)
        self.M = M
        self.q = problem.q / s if s != 1.0 else problem.q
        self.mmax = max_abs(M)
        self.n = n
        if height is not None and height.shape != (n,):
            raise ParamError(f"height has {height.shape[0]} rows, the problem {n}: one height per row")
        # uncoupled rows first (normals_first), each class top down with heights (one order for
        # both PGS paths: kernels/pgs_matrix_free/ sweep_order)
        self.base_order = sweep_order(np.asarray(self.findex if normals_first else np.full(n, -1), dtype=np.int64),
                                      np.zeros(0) if height is None else height)
        self.order = self.base_order.copy()
        self.stats = np.zeros(3)
        self.rng_state = np.zeros(1, dtype=np.uint64)

    def start(self, warm_start) -> np.ndarray:
        """Initial z: zero or the warm start (a Solution or a vector), clipped into the static bounds."""
        if warm_start is None:
            z = np.zeros(self.n)
        else:
            z0 = warm_start.z if isinstance(warm_start, Solution) else warm_start
            z = np.array(z0, dtype=np.float64).ravel()
            if z.shape != (self.n,) or not np.all(np.isfinite(z)):
                raise ParamError(f"warm_start must be a finite vector of length {self.n} "
                                 f"(or a Solution of the same problem), got shape {z.shape}")
        static = self.findex < 0
        z[static] = np.clip(z[static], self.lo[static], self.hi[static])
        return z

    def seed(self, seed: int):
        self.rng_state[0] = np.uint64((seed * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) % (1 << 64) or 1)

    def sweep(self, z, w, max_sweeps, tol_res, tol_step=0.0, omega=1.0, shuffle=False, refresh=50,
              w_step_tol=0.0) -> int:
        """Run up to ``max_sweeps`` sweeps in place on z (w holds M z + q on exit); kernel status.
        ``tol_res`` is in the swept (scaled) units; ``w_step_tol`` in the problem's units of w."""
        tol_w = w_step_tol / self.s
        if self.sparse:
            return K.pgs_csr_kernel(self.t_indptr, self.t_indices, self.t_data, self.q, self.diag, self.lo,
                                    self.hi, self.findex, self.mu, z, w, self.order, omega, tol_res, tol_step,
                                    max_sweeps, refresh, shuffle, self.rng_state, self.stats, tol_w)
        return K.pgs_dense_kernel(self.MT, self.q, self.diag, self.lo, self.hi, self.findex, self.mu, z, w,
                                  self.order, omega, tol_res, tol_step, max_sweeps, refresh, shuffle,
                                  self.rng_state, self.stats, tol_w)

    def bounds(self, z):
        lo, hi = self.lo.copy(), self.hi.copy()
        c = self.findex >= 0
        if np.any(c):
            r = self.mu[c] * np.maximum(z[self.findex[c]], 0.0)
            lo[c], hi[c] = -r, r
        return lo, hi

    def w(self, z):
        return np.asarray(self.M @ z, dtype=np.float64).ravel() + self.q

    def residual(self, z, w):
        return K.box_natural_residual(z, w, self.lo, self.hi, self.findex, self.mu)

    def relative(self, z, w) -> float:
        """The scale-free residual (problems/residual.py box_relative) of the swept problem."""
        lo, hi = self.bounds(z)
        return relative_error(box_relative(z, w, lo, hi, self.q, row_terms(self.M, z, self.q)))

    def abs_target(self, z, w, tol) -> float:
        """A first absolute natural-residual target for a relative residual <= tol at (z, w):
        tol * min(||z||_inf, ||q||_inf, ||w - q||_inf); :meth:`run` tightens it while the relative
        residual (each w_i in units of its own terms) is above tol."""
        zs = float(np.max(np.abs(z), initial=0.0))
        ws = max(float(np.max(np.abs(self.q), initial=0.0)), float(np.max(np.abs(w - self.q), initial=0.0)))
        if zs == 0.0:
            fin = np.concatenate([self.lo[np.isfinite(self.lo)], self.hi[np.isfinite(self.hi)]])
            zs = float(np.max(np.abs(fin), initial=0.0)) or ws
        return tol * min(zs, ws)

    def run(self, z, w, tol, max_sweeps, step_tol=0.0, omega=1.0, shuffle=False, refresh=50, w_step_tol=0.0):
        """Sweep until the relative residual is <= tol (kernel status CONVERGED), the sweep limit,
        a stall or a failure; returns (kernel status, sweeps)."""
        w[:] = self.w(z)
        target = self.abs_target(z, w, tol)
        done = 0
        code = K.MAX_SWEEPS
        for _ in range(12):   # the target tightens only when the iterate's units moved
            code = self.sweep(z, w, max_sweeps - done, target, step_tol, omega, shuffle, refresh, w_step_tol)
            done += int(self.stats[0])
            if code != K.CONVERGED or self.relative(z, w) <= tol:
                return code, done
            if done >= max_sweeps:
                return K.MAX_SWEEPS, done
            target = min(0.1 * target, self.abs_target(z, w, tol))
        return K.MAX_SWEEPS, done


def _pgs(problem, opts: PGSOptions, warm_start) -> Solution:
    S = BoxSweeper(problem, opts.cfm, opts.normals_first, height=opts.height)
    z = S.start(warm_start)
    w = np.empty(problem.n)
    S.seed(opts.seed)
    code, sweeps = S.run(z, w, opts.tol, opts.max_iterations, opts.step_tol, opts.omega, opts.shuffle, opts.refresh,
                         opts.w_step_tol)
    _, res, step = S.stats
    return Solution(z=z, w=w, status=_STATUS[code], iterations=int(sweeps),
                    info={"reason": _REASON[code], "solver_residual": float(res), "last_step": float(step),
                          "sparse": S.sparse, "omega": opts.omega})


_GUARANTEE = ("converges for symmetric positive definite M (and boxes); friction-coupled bounds and "
              "non-symmetric M: no guarantee, the residual certifies the answer")


_CLASSES = ("spd", "boxed", "boxed-coupled")   # singular PSD: converges, but can be sublinear


@register("pgs", problems=(LCP, BoxedLCP), options=PGSOptions, warm_start=True, classes=_CLASSES,
          description="projected Gauss-Seidel (arechavaleta eq. 3), boxes and findex/mu friction bounds, dense/CSR",
          guarantees=_GUARANTEE)
def pgs_solve(problem, opts: PGSOptions, warm_start=None) -> Solution:
    return _pgs(problem, opts, warm_start)


@register("psor", problems=(LCP, BoxedLCP), options=PSOROptions, warm_start=True, classes=_CLASSES,
          description="projected SOR (PGS with relaxation omega), boxes and findex/mu friction bounds, dense/CSR",
          guarantees=_GUARANTEE + "; SPD M needs 0 < omega < 2")
def psor_solve(problem, opts: PSOROptions, warm_start=None) -> Solution:
    return _pgs(problem, opts, warm_start)
