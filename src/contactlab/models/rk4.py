"""Time stepping of the acceleration-level models (``viscous``, ``trinkle-pang``), written once.

drumwright Sec. VII-B: "when impacts occur ... the simulation uses an inelastic impact model";
the acceleration-level model treats sustained contact only. A step from velocity v is

1. **onset impact** (velocity level): if v violates a velocity row of the step (U v + bias < 0 on a
   contact or limit row, or J v != j_rhs), the model's inelastic impact law gives v0 = v + M^-1 p
   with U v0 + bias >= 0 and J v0 = j_rhs; otherwise v0 = v;
2. **stages** a_i = a(v_i) of the model's acceleration-level LCP with rows U a + (U v_i + bias)/h >= 0
   (semi-implicit Euler: one stage at v0; classical RK4: v_1 = v0, v_2 = v0 + h a_1 / 2,
   v_3 = v0 + h a_2 / 2, v_4 = v0 + h a_3, geometry of the step start);
3. v+ = v0 + h sum_i b_i a_i with b = (1) or (1/6, 1/3, 1/3, 1/6).

Why the onset impact is needed: with s = (U v0 + bias)/h the stage rows give a_1 >= -s,
a_2 >= -s - a_1/2, a_3 >= -s - a_2/2, a_4 >= -s - a_3, hence (chaining the bounds)
U v+ + bias = h (s + sum b_i a_i) >= 0.375 h s. For s >= 0 (after the impact) the combined update
keeps N v+ + bias >= 0; for s < 0 (an approaching contact without the impact) it would keep
37.5 % of the approach: the ball sinks. The same algebra holds for the joint rows J (equalities).

The first stages are solved here with the model's ``stage_method``; the last stage is the problem
handed back to the simulator's method. An internal solve that is not certified is counted in
``failures`` (the step is then not certified, ``info["certified"]`` False); one with no usable
answer (non-finite, or residual > 1e-3 x the problem's scale) raises SimulationError instead of
being integrated.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import ModelError, SimulationError
from ..kernels._jit import jit
from ..kernels.coulomb import abs_max as _abs_max_k
from ..mechanics.kernels import rows_times as _rows_times
from .common import f64

INTEGRATORS = ("euler", "rk4")
RK4_NODES = (0.5, 0.5, 1.0)                   # v_{i+1} = v0 + c_i h a_i
RK4_WEIGHTS = (1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6)
RK4_REAL_STABILITY = 2.785                    # |1 - z + z^2/2 - z^3/6 + z^4/24| <= 1 for 0 <= z <= 2.785
USABLE_RESIDUAL = 1e-3                        # the simulator's limit for an uncertified answer (x scale)


def check_integrator(name: str) -> str:
    if name not in INTEGRATORS:
        raise ModelError(f"integrator must be one of {INTEGRATORS}, got {name!r}")
    return name


def velocity_rows_violated(sys, v: np.ndarray, cfm: float = 0.0, rtol: float = 1e-6) -> bool:
    """True if v violates a velocity row of the step: a limit/contact row U v + bias < 0 or a joint
    row J v != j_rhs, by more than ``rtol`` times the step's velocity scale (the largest of |U v|,
    |bias|, |j_rhs| and the change h U M^-1 f the applied forces make in one step). ``rtol`` is the
    certification level of the stage solves (solve()'s 1e-6): a violation below it is what a certified
    stage may leave, not an impact (impact LCPs on such 1e-8 m/s velocities are all rounding). With CFM the stage rows are
    U v+ + bias + cfm p >= 0, so a resting contact may show -cfm p (p: its previous normal impulse,
    ``sys.normal_guess``); that is not an impact either. A ConstraintSystem's CSR rows are read by one
    compiled pass (:func:`_violated_rows`: the same products, summed in the rows' stored order as
    scipy's, the same maxima and tests)."""
    if all(getattr(X, "format", None) == "csr" for X in (sys.Minv, sys.L, sys.N, sys.J)):
        guess = np.zeros(0) if sys.normal_guess is None or not sys.nc else \
            np.nan_to_num(np.asarray(sys.normal_guess, dtype=np.float64))
        Mi, L, N, J = sys.Minv, sys.L, sys.N, sys.J
        return bool(_violated_rows(Mi.indptr, Mi.indices, Mi.data, L.indptr, L.indices, L.data, N.indptr, N.indices,
                                   N.data, J.indptr, J.indices, J.data, f64(sys.f), f64(sys.l_bias),
                                   f64(sys.n_bias), f64(sys.j_rhs), f64(v), guess, float(sys.h), float(cfm),
                                   float(rtol)))
    dv = sys.h * (sys.Minv @ sys.f)
    rows = [(sys.L, sys.l_bias), (sys.N, sys.n_bias), (sys.J, -sys.j_rhs)]
    scale = 0.0
    for U, b in rows:
        if U.shape[0]:
            scale = max(scale, float(np.abs(U @ v).max()), float(np.abs(b).max()), float(np.abs(U @ dv).max()))
    tol = rtol * scale
    if sys.nl and float((sys.L @ v + sys.l_bias).min()) < -tol:
        return True
    if sys.nc:
        guess = np.zeros(sys.nc) if sys.normal_guess is None else np.nan_to_num(np.asarray(sys.normal_guess, float))
        if float((sys.N @ v + sys.n_bias + cfm * np.maximum(guess, 0.0)).min()) < -tol:
            return True
    return bool(sys.nj and float(np.abs(sys.J @ v - sys.j_rhs).max()) > tol)


@jit
def _violated_rows(Wp, Wi, Wx, Lp, Li, Lx, Np, Ni, Nx, Jp, Ji, Jx, f, l_bias, n_bias, j_rhs, v, guess, h, cfm, rtol):
    """:func:`velocity_rows_violated` on CSR rows (W = M^-1, L, N, J) in one pass: dv = h (W f), the scale
    (the largest of |U v|, |bias|, |U dv| over the blocks with rows), then the limit, contact (with
    cfm max(guess, 0); ``guess`` empty: zero) and joint tests."""
    dv = _rows_times(Wp, Wi, Wx, f)
    for i in range(dv.shape[0]):
        dv[i] = h * dv[i]
    nl, nc, nj = Lp.shape[0] - 1, Np.shape[0] - 1, Jp.shape[0] - 1
    Lv = _rows_times(Lp, Li, Lx, v)
    Nv = _rows_times(Np, Ni, Nx, v)
    Jv = _rows_times(Jp, Ji, Jx, v)
    scale = 0.0
    if nl:
        scale = max(scale, _abs_max_k(Lv), _abs_max_k(l_bias), _abs_max_k(_rows_times(Lp, Li, Lx, dv)))
    if nc:
        scale = max(scale, _abs_max_k(Nv), _abs_max_k(n_bias), _abs_max_k(_rows_times(Np, Ni, Nx, dv)))
    if nj:
        scale = max(scale, _abs_max_k(Jv), _abs_max_k(j_rhs), _abs_max_k(_rows_times(Jp, Ji, Jx, dv)))
    tol = rtol * scale
    for i in range(nl):
        if Lv[i] + l_bias[i] < -tol:
            return True
    for i in range(nc):
        g = guess[i] if guess.shape[0] else 0.0
        if Nv[i] + n_bias[i] + cfm * max(g, 0.0) < -tol:
            return True
    for i in range(nj):
        if abs(Jv[i] - j_rhs[i]) > tol:
            return True
    return False


@dataclass
class Staging:
    """What the step's recover needs besides the last stage: the step-start velocity after the
    onset impact ``v0``, the impact's recovered result (``None`` if there was none; its
    ``v_next`` is v0), the recovered first stages, and the count of uncertified internal solves."""
    v0: np.ndarray
    impact: object = None
    stages: list = field(default_factory=list)
    failures: int = 0


def _solve_internal(problem, method: str, what: str):
    from ..solvers import solve
    sol = solve(problem, method=method)
    rel = getattr(sol, "relative_residual", None)       # solve()'s scale-free measure where it has one
    err = rel if rel is not None and np.isfinite(rel) else sol.residual / problem.scale()
    if not sol.success and not (np.all(np.isfinite(sol.z)) and err <= USABLE_RESIDUAL):
        raise SimulationError(f"{what}: no usable answer from {method!r} (status {sol.status.name}, "
                              f"residual {sol.residual:.3g})")
    return sol, int(not sol.success)


def stage(sys, integrator: str, method: str, make_stage: Callable, recover_stage: Callable,
          make_impact: Callable | None = None, recover_impact: Callable | None = None, cfm: float = 0.0):
    """Steps 1-2 above. ``make_stage(v)`` -> the model's built stage at velocity v (with ``.problem``),
    ``recover_stage(built, solution)`` -> its result (with ``.accel``); ``make_impact(v)`` /
    ``recover_impact`` likewise for the velocity-level impact (result with ``.v_next``); ``cfm``:
    the model's CFM on the normal rows (see :func:`velocity_rows_violated`).
    Returns (the last stage's built problem, Staging)."""
    check_integrator(integrator)
    st = Staging(np.asarray(sys.v, dtype=np.float64).copy())
    if integrator == "rk4" and make_impact is not None and velocity_rows_violated(sys, st.v0, cfm):
        b = make_impact(st.v0)
        sol, bad = _solve_internal(b.problem, method, "onset impact")
        st.impact = recover_impact(b, sol)
        st.v0 = st.impact.v_next
        st.failures += bad
    if integrator == "rk4":
        v = st.v0
        for c in RK4_NODES:
            b = make_stage(v)
            sol, bad = _solve_internal(b.problem, method, "RK4 stage")
            res = recover_stage(b, sol)
            st.stages.append(res)
            st.failures += bad
            v = st.v0 + c * sys.h * res.accel
        return make_stage(v), st
    return make_stage(st.v0), st


def combine(sys, st: Staging, last) -> tuple[np.ndarray, Callable]:
    """Step 3: (v+, mix) where mix(get) = h sum_i b_i get(stage_i) (forces -> impulses), plus the
    impact's get() when ``get`` is applied to the impact result too (see :func:`impulse`)."""
    parts = st.stages + [last]
    wts = RK4_WEIGHTS if st.stages else (1.0,)
    h = sys.h

    def mix(get):
        return h * sum(w * get(r) for w, r in zip(wts, parts))

    v_next = st.v0 + mix(lambda r: r.accel)
    return v_next, mix


def impulse(st: Staging, mix: Callable, get: Callable) -> np.ndarray:
    """Impulse over the step of one force component: the stages' h sum b_i f_i plus the onset
    impact's impulse (zero without an impact)."""
    total = mix(get)
    return total if st.impact is None else total + get(st.impact)
