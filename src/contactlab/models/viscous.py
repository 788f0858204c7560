"""Purely viscous friction (drumwright Sec. IV, eq. 29-42): acceleration level, normal LCP only.

    M a = f + J' f_j + N' f_n - S' mu_v S v - T' mu_v T v,   J a = 0,   0 <= f_n _|_ N a >= 0.

The tangential forces are known before the solve (-mu_v v_s, -mu_v v_t per contact), so only the
normal rows are complementarity variables. Redundant rows of J are removed by FIND-INDICES (Alg. 2)
so A (eq. 33) is invertible; with Z a basis of null(J_J), F = N A^-1 N' (eq. 41) equals
N Z (Z' M Z)^-1 Z' N' and the problem is a factored LCP on (N Z, Z' M Z, Z' f*) (eq. 42; the
paper's g and h omit the Jdot v and Ndot v terms, eq. 39-40; ``J_rhs`` and ``normal_bias`` add
them back as constant offsets, keeping the problem factored for ``ppm``).

Integration: :func:`semi_implicit_euler` (v+ = v + dt a, then positions from v+) or :func:`rk4`
over a user dynamics callback; impacts: :func:`build_impact` is the inelastic velocity-level
impulse, in which viscous friction (a finite force) has no impulse.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ModelError
from .find_indices import (step_inputs, IndexSets, Reduced, ShiftedFactoredLCP, constraint_impulses, find_indices,
                           reduce_equalities, split_impulses)
from .noslip import SEPARATING, SLIDING, STICKING, ContactResult, check_dynamics


def _per_contact(name: str, x, n: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        x = np.full(n, float(x))
    if x.shape != (n,):
        raise ModelError(f"{name} must be a scalar or one value per contact ({n}), got shape {x.shape}")
    if np.any(x < 0) or not np.all(np.isfinite(x)):
        raise ModelError(f"{name} must be finite and >= 0")
    return x


@dataclass
class ViscousProblem:
    """Built viscous step: ``problem`` in reduced coordinates (a = a_p + Z u), plus recovery data."""

    problem: ShiftedFactoredLCP
    reduced: Reduced
    M: np.ndarray
    f_total: np.ndarray      # f - S' mu_v S v - T' mu_v T v
    N: np.ndarray
    friction_s: np.ndarray   # -mu_v (S v), per contact
    friction_t: np.ndarray
    v: np.ndarray
    n_joint: int

    @property
    def index_sets(self) -> IndexSets:
        return self.reduced.sets

    @property
    def lcp_variables(self) -> int:
        return self.N.shape[0]


def build_viscous(M, v, f, N, S, T, mu_v, J=None, *, J_rhs=None, normal_bias=None, cfm: float = 0.0,
                  tol: float = 1e-9) -> ViscousProblem:
    """Build the viscous-friction LCP (eq. 41-42) at the current state.

    M (m, m), v (m,), f (m,) generalized forces, N/S/T (n, m), mu_v scalar or (n,) viscous
    coefficients, J (j, m) with J a = J_rhs (default 0, eq. 39: the paper drops Jdot v).
    ``normal_bias`` (n,): w = N a + bias (Ndot v, or (N v + stabilisation)/dt in a time step);
    it is a constant offset of the factored problem, which stays factored.
    """
    M, v, f, N, J, S, T = check_dynamics(M, v, f, N, J, S, T)
    if S is None or T is None:
        raise ModelError("the viscous model needs both tangent Jacobians S and T")
    n = N.shape[0]
    mu_v = _per_contact("mu_v", mu_v, n)
    fs, ft = -mu_v * (S @ v), -mu_v * (T @ v)
    f_total = f + S.T @ fs + T.T @ ft
    bias, jr, cf, solve = step_inputs(M, n, J.shape[0], normal_bias, J_rhs)
    sets = find_indices(M, J if J.shape[0] else None, tol=tol, M_solve=solve)
    red = reduce_equalities(M, f_total, N, sets, lambda b, i: jr[i], bias, cfm, cf)
    return ViscousProblem(red.problem, red, M, f_total, N, fs, ft, v, J.shape[0])


def recover_viscous(built: ViscousProblem, z, *, separating_tol: float = 1e-9) -> ContactResult:
    """Acceleration, normal forces ``z``, viscous tangential forces and joint forces."""
    z = np.asarray(z, dtype=np.float64).ravel()
    n = built.N.shape[0]
    if z.shape != (n,):
        raise ModelError(f"z has length {z.shape[0]}; expected {n} (one normal force per contact)")
    a = built.reduced.x(z)
    r = built.M @ a - built.f_total - built.N.T @ z
    lam = constraint_impulses(built.index_sets, built.reduced.M_solve, r)
    joint = split_impulses(built.index_sets, lam, built.n_joint, 0)[0]
    an = built.N @ a
    slide = np.hypot(built.friction_s, built.friction_t) > 0
    modes = np.where((z <= 0) & (an > separating_tol), SEPARATING, np.where(slide, SLIDING, STICKING))
    return ContactResult(built.v.copy(), z, built.friction_s, built.friction_t, joint, modes.astype(np.int8), accel=a)


def build_impact(M, v, N, J=None, *, tol: float = 1e-9):
    """Inelastic impact with viscous friction: 0 <= p_n _|_ N v+ >= 0, M v+ = M v + N' p_n + J' p_j.

    Viscous friction is a finite force, so it has no impulse. Returns a ViscousProblem whose
    ``recover_viscous(...).accel`` is v+ (the same algebra with f := M v).
    """
    M = np.asarray(M, dtype=np.float64)
    zeros = np.zeros((np.shape(N)[0], M.shape[0]))
    return build_viscous(M, v, M @ np.asarray(v, dtype=np.float64), N, zeros, zeros, 0.0, J, tol=tol)


def semi_implicit_euler(q: np.ndarray, v: np.ndarray, a: np.ndarray, dt: float,
                        qdot: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None):
    """v+ = v + dt a; q+ = q + dt qdot(q, v+) (qdot defaults to v+, i.e. q and v of equal size)."""
    v_next = v + dt * a
    return q + dt * (v_next if qdot is None else qdot(q, v_next)), v_next


def rk4(q: np.ndarray, v: np.ndarray, dt: float, accel: Callable[[np.ndarray, np.ndarray], np.ndarray],
        qdot: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None):
    """Classical fourth-order Runge-Kutta on (q, v) with a = accel(q, v) (which solves the contact LCP)."""
    qd = (lambda q_, v_: v_) if qdot is None else qdot
    k1q, k1v = qd(q, v), accel(q, v)
    k2q, k2v = qd(q + 0.5 * dt * k1q, v + 0.5 * dt * k1v), accel(q + 0.5 * dt * k1q, v + 0.5 * dt * k1v)
    k3q, k3v = qd(q + 0.5 * dt * k2q, v + 0.5 * dt * k2v), accel(q + 0.5 * dt * k2q, v + 0.5 * dt * k2v)
    k4q, k4v = qd(q + dt * k3q, v + dt * k3v), accel(q + dt * k3q, v + dt * k3v)
    return (q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q), v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))


# -- the simulator's model interface (docs/architecture.md) ------------------------------------------------
NAME = "viscous"
DEFAULT_METHOD = "ppm"
DESCRIPTION = "acceleration level, tangential force -mu_v v_t, normal LCP only, factored (drumwright Sec. IV)"


@dataclass(frozen=True)
class Options:
    """mu_v: viscous coefficient (N s/m) at every contact; tol: FIND-INDICES threshold; cfm as no-slip's;
    integrator: "euler" or "rk4"; stage_method: solver of RK4's first three stages.

    "euler" (semi-implicit Euler): v+ = v + h a, with normal rows N a + (N v + n_bias)/h >= 0
    (N v+ + n_bias >= 0), so an approaching contact receives the inelastic impulse h f_n in the same
    LCP (viscous friction, a finite force, has no impulse); joints: J a = (j_rhs - J v)/h.
    "rk4": classical Runge-Kutta on the velocity over the step with the contact geometry of the step
    start (the simulator then moves positions with v+): stages a_i = a(v_i) each solve the contact
    LCP (rows as above, at the stage velocity), the first three with ``stage_method`` inside
    ``build``, the fourth by the simulator's method; v+ = v + h (a1 + 2 a2 + 2 a3 + a4) / 6. A stage
    whose solve is not certified makes the step's info["stage_failures"] nonzero."""
    mu_v: float = 0.1
    tol: float = 1e-9
    cfm: float = 0.0
    integrator: str = "euler"
    stage_method: str = "ppm"


def _stage(sys, o, v, f_motor):
    from .noslip import _dense
    m, h = sys.ndof, sys.h
    L = _dense(sys.L).reshape(-1, m)
    U = np.vstack([L, _dense(sys.N).reshape(-1, m)])
    J = _dense(sys.J).reshape(-1, m)
    bias = (U @ v + np.concatenate([sys.l_bias, sys.n_bias])) / h
    # viscous friction acts at the contacts only: zero rows for the limit rows
    S = np.vstack([np.zeros_like(L), _dense(sys.S).reshape(-1, m)])
    T = np.vstack([np.zeros_like(L), _dense(sys.T).reshape(-1, m)])
    return build_viscous(_dense(sys.M), v, sys.f + f_motor, U, S, T, o.mu_v, J,
                         J_rhs=(sys.j_rhs - J @ v) / h, normal_bias=bias, cfm=float(sys.cfm + o.cfm), tol=o.tol)


def build(sys, options: Options | None = None):
    from ..solvers import solve
    from .noslip import motor_forces
    o = options or Options()
    if o.integrator not in ("euler", "rk4"):
        raise ModelError(f"integrator must be 'euler' or 'rk4', got {o.integrator!r}")
    f_motor, _ = motor_forces(sys)
    stages, failures = [], 0
    v = sys.v
    if o.integrator == "rk4":
        for w in (0.5, 0.5, 1.0):
            b = _stage(sys, o, v, f_motor)
            sol = solve(b.problem, method=o.stage_method)
            failures += not sol.success
            res = recover_viscous(b, sol.z)
            stages.append(res)
            v = sys.v + w * sys.h * res.accel
    built = _stage(sys, o, v, f_motor)
    problem = built.problem
    problem.model_data = (built, stages, failures)
    problem.row_groups = {"limit": slice(0, sys.nl), "normal": slice(sys.nl, sys.nl + sys.nc)}
    return problem


def recover(sys, problem, solution, options: Options | None = None):
    from .common import StepResult, contact_modes
    from .noslip import motor_forces, motor_saturated
    built, stages, failures = problem.model_data
    res = recover_viscous(built, solution.z)
    h, nl = sys.h, sys.nl
    parts = stages + [res]
    wts = [1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6] if stages else [1.0]
    mix = lambda get: sum(w * get(r) for w, r in zip(wts, parts))
    v_next = sys.v + h * mix(lambda r: r.accel)
    normal_all = h * mix(lambda r: r.normal)
    normal = normal_all[nl:]
    _, motor = motor_forces(sys)
    return StepResult(v_next=v_next, normal=normal,
                      tangent=h * np.column_stack([mix(lambda r: r.tangent_s)[nl:], mix(lambda r: r.tangent_t)[nl:]]),
                      joint=h * mix(lambda r: r.joint), limit=normal_all[:nl], motor=motor,
                      modes=contact_modes(sys, v_next, normal),
                      info={"forces": res.normal, "stage_failures": failures,
                            "motor_saturated": motor_saturated(sys, v_next, motor)})
