"""No-slip contact model (drumwright Sec. VI, eq. 45-57): one LCP variable per contact.

Velocity level (eq. 23-25) with S v+ = T v+ = 0 (eq. 45-46) and J v+ = 0 (eq. 24):

    M (v+ - v) = dt f + J' f_j + N' f_n + S' f_s + T' f_t,   0 <= f_n  _|_  N v+ >= 0.

FIND-INDICES (Alg. 2) keeps independent rows G = [J_J; S_S; T_T], so A (eq. 47) is nonsingular.
The LCP matrix F = N X^-1 N' (eq. 56) is kept factored: with Z an orthonormal basis of null(G),
X^-1 = Z (Z' M Z)^-1 Z' on the momentum, so the problem is the factored LCP (N Z, Z' M Z,
Z' (M v + dt f)) (eq. 57 plus the dt f of eq. 23; a ``ShiftedFactoredLCP``, whose constant offset
carries nonzero joint right-hand sides J v+ = J_rhs and normal biases); ``ppm`` (Alg. 1) solves it
without forming F, and at most rank(F) <= m - rank(G) normal impulses are positive (Lemma 1,
Theorem 1). Statuses are the solver's; a build never raises on a valid system.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .built import ACTIVE_GAP, Built, tangent_rows, touching
from .common import MODE_NAMES, MODE_SEPARATING, MODE_SLIDING, MODE_STICKING, StepResult  # noqa: F401
from .find_indices import (step_inputs, IndexSets, Reduced, ShiftedFactoredLCP, constraint_impulses, find_indices,
                           reduce_equalities, split_impulses)

# one set of contact-mode constants and one result type for every model (models/common.py)
SEPARATING, STICKING, SLIDING = MODE_SEPARATING, MODE_STICKING, MODE_SLIDING
ContactResult = StepResult


def check_dynamics(M, v, f, N, J=None, S=None, T=None):
    """Validate shapes (ModelError naming the argument) and return float64 arrays."""
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ModelError(f"M must be a square mass matrix, got shape {M.shape}")
    m = M.shape[0]
    if not np.allclose(M, M.T, atol=1e-10 * max(1.0, np.abs(M).max(initial=0.0))):
        raise ModelError("M must be symmetric (a mass matrix)")
    out = [M]
    for name, x in (("v", v), ("f", f)):
        x = np.asarray(x, dtype=np.float64).ravel()
        if x.shape != (m,):
            raise ModelError(f"{name} has length {x.shape[0]}; expected m = {m} (the size of M)")
        out.append(x)
    N = np.asarray(N, dtype=np.float64)
    if N.size == 0:
        N = np.zeros((0, m))
    elif N.ndim == 1:
        N = N[None, :]
    if N.ndim != 2 or N.shape[1] != m:
        raise ModelError(f"N must have m = {m} columns, got shape {N.shape}")
    n = N.shape[0]
    out.append(N)
    J = np.zeros((0, m)) if J is None else np.atleast_2d(np.asarray(J, dtype=np.float64))
    if J.size and J.shape[1] != m:
        raise ModelError(f"J must have m = {m} columns, got shape {J.shape}")
    out.append(J.reshape(-1, m))
    for name, X in (("S", S), ("T", T)):
        if X is None:
            out.append(None)
            continue
        X = np.asarray(X, dtype=np.float64).reshape(-1, m)
        if X.shape != (n, m):
            raise ModelError(f"{name} has shape {X.shape}; expected ({n}, {m}), one row per contact like N")
        out.append(X)
    for name, x in zip(("M", "v", "f", "N", "J"), out[:5]):
        if not np.all(np.isfinite(x)):
            raise ModelError(f"{name} contains NaN or inf")
    return out


@dataclass
class NoSlipProblem:
    """The built step: ``problem`` (a factored LCP in reduced coordinates, v+ = v_p + Z u) and what
    :func:`recover_noslip` needs. ``lcp_variables`` = number of unilateral rows (one per contact)."""

    problem: ShiftedFactoredLCP
    reduced: Reduced
    M: np.ndarray
    momentum: np.ndarray
    N: np.ndarray
    n_joint: int
    n_tangent: int
    reduction_s: float = 0.0     # wall time of FIND-INDICES + the null-space reduction (part of the method)

    @property
    def index_sets(self) -> IndexSets:
        return self.reduced.sets

    @property
    def Z(self) -> np.ndarray:
        return self.reduced.Z

    @property
    def lcp_variables(self) -> int:
        return self.N.shape[0]


def build_noslip(M, v, f, dt: float, N, S, T, J=None, *, J_rhs=None, normal_bias=None, cfm: float = 0.0,
                 tol: float = 1e-9) -> NoSlipProblem:
    """Build the no-slip LCP (eq. 56-57) for one step of length ``dt``.

    M (m, m) SPD mass matrix, v (m,) velocity, f (m,) generalized forces, N (n, m) unilateral rows
    (contact normals, and joint limits if any), S/T (k, m) contact tangent rows, J (j, m) bilateral
    rows with J v+ = J_rhs (default 0; e.g. drift correction). ``normal_bias`` (n,): w = N v+ + bias
    (penetration stabilisation, speculative gaps phi/dt); ``cfm`` adds cfm * z to w. ``tol``:
    FIND-INDICES' relative independence threshold.
    """
    M, v, f, N, J, _, _ = check_dynamics(M, v, f, N, J)
    if S is None or T is None:
        raise ModelError("no-slip needs both tangent Jacobians S and T")
    S = np.asarray(S, dtype=np.float64).reshape(-1, M.shape[0])
    T = np.asarray(T, dtype=np.float64).reshape(-1, M.shape[0])
    if S.shape != T.shape:
        raise ModelError(f"S {S.shape} and T {T.shape} must have the same shape (one row per contact)")
    if not dt > 0:
        raise ModelError(f"dt must be positive, got {dt}")
    n = N.shape[0]
    t0 = time.perf_counter()
    bias, jr, cf, solve = step_inputs(M, n, J.shape[0], normal_bias, J_rhs)
    sets = find_indices(M, J if J.shape[0] else None, S if S.shape[0] else None,
                        T if T.shape[0] else None, tol=tol, M_solve=solve)
    momentum = M @ v + dt * f
    red = reduce_equalities(M, momentum, N, sets, lambda b, i: jr[i] if b == 0 else 0.0, bias, cfm, cf)
    return NoSlipProblem(red.problem, red, M, momentum, N, J.shape[0], S.shape[0], time.perf_counter() - t0)


def recover_noslip(built: NoSlipProblem, z, *, separating_tol: float = 1e-9) -> StepResult:
    """Next velocity and impulses from the normal impulses ``z`` (n,) (e.g. ``Solution.z``).

    Tangential and joint impulses come from the kept rows' multipliers (dropped dependent rows
    carry zero), lam = (G M^-1 G')^-1 G M^-1 (M v+ - M v - dt f - N' z) with the FIND-INDICES factor.
    """
    z = np.asarray(z, dtype=np.float64).ravel()
    n = built.N.shape[0]
    if z.shape != (n,):
        raise ModelError(f"z has length {z.shape[0]}; expected {n} (one normal impulse per row of N)")
    v_next = built.reduced.x(z)
    r = built.M @ v_next - built.momentum - built.N.T @ z
    lam = constraint_impulses(built.index_sets, built.reduced.M_solve, r)
    joint, fs, ft = split_impulses(built.index_sets, lam, built.n_joint, built.n_tangent)
    vn = built.N @ v_next
    modes = np.where((z <= 0) & (vn > separating_tol), SEPARATING, STICKING).astype(np.int8)
    return StepResult.contact(v_next, z, fs, ft, joint, modes)


# -- the simulator's model interface (docs/architecture.md): build(system) -> problem, recover(...) ----------
NAME = "no-slip"
DEFAULT_METHOD = "ppm"
DESCRIPTION = "velocity level, S v+ = T v+ = 0; one LCP variable per contact, factored for ppm (drumwright Sec. VI)"


@dataclass(frozen=True)
class Options:
    """tol: FIND-INDICES' relative independence threshold; cfm: added to the unilateral rows'
    diagonal on top of the scene's settings.cfm (kept exact in factored form); active_gap: only
    contacts with gap phi <= active_gap (m) get the rows S v+ = T v+ = 0 (a speculative contact
    farther apart keeps its normal row only: no-slip holds at touching contacts, not across a gap);
    motor_trials: most factored LCPs solved per step to find the force-limited motors' states (see
    :func:`build`; a state seen before ends the search, and ``recover`` reports the answer's consistency)."""
    tol: float = 1e-9
    cfm: float = 0.0
    active_gap: float = ACTIVE_GAP
    motor_trials: int = 8

    def __post_init__(self):
        if not (isinstance(self.motor_trials, (int, np.integer)) and self.motor_trials >= 1):
            raise ModelError(f"no-slip motor_trials must be an integer >= 1, got {self.motor_trials!r}")


def _dense(X) -> np.ndarray:
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)


def motor_forces(sys) -> tuple[np.ndarray, np.ndarray]:
    """Force-limited velocity motors as force sources at their limit, toward their target (the
    approximation of the acceleration-level and viscous models; no-slip resolves its motors exactly
    in :func:`build`).

    Exact while a motor is saturated (a gripper squeezing an object: it cannot reach its target
    speed); an unloaded motor would overshoot its target, which :func:`motor_saturated` reports.
    Returns (generalized force (ndof,), motor impulses (nm,)).
    """
    if sys.nm == 0:
        return np.zeros(sys.ndof), np.zeros(0)
    sign = np.sign(sys.a_target - sys.A @ sys.v_free())
    impulse = sign * sys.a_max
    return np.asarray(sys.A.T @ impulse).ravel() / sys.h, impulse


def motor_saturated(sys, v_next: np.ndarray, impulse: np.ndarray, tol: float = 1e-9) -> bool:
    """True if every motor's rate at v+ has not passed its target (the force-source assumption held)."""
    if sys.nm == 0:
        return True
    gap = np.sign(impulse) * (sys.a_target - sys.A @ v_next)
    return bool(np.all(gap >= -tol * max(1.0, np.abs(sys.a_target).max())))


@dataclass
class MotorStep:
    """The no-slip step with its force-limited velocity motors resolved (``build``'s state).

    ``state`` (nm,) int8: 0 = the motor reaches its target (row A_i v+ = a_target_i among the
    equality rows, impulse from its multiplier), +1 / -1 = saturated (impulse +-a_max_i, a force);
    ``trials``: factored LCPs solved to find the state; ``consistent``: whether the state passed
    :func:`motor_violations` on the last trial; ``search_s``: wall time of those trial solves and of
    the reductions of the states left behind. ``reduction_s`` (the method's work done in build, as
    NoSlipProblem's: FIND-INDICES and the null-space reduction) includes ``search_s``."""
    step: NoSlipProblem
    state: np.ndarray
    n_joint: int
    trials: int = 1
    consistent: bool = True
    search_s: float = 0.0

    @property
    def reduction_s(self) -> float:
        return self.step.reduction_s + self.search_s


def _motor_impulses(sys, ms: MotorStep, joint: np.ndarray) -> np.ndarray:
    """Motor impulses (nm,): +-a_max for saturated motors, the row multiplier for the others."""
    c = ms.state * sys.a_max
    free = np.flatnonzero(ms.state == 0)
    c[free] = joint[ms.n_joint + np.arange(free.size)]
    return c


def motor_violations(sys, state: np.ndarray, v_next: np.ndarray, impulse: np.ndarray,
                     tol: float = 1e-9) -> np.ndarray:
    """The motor state that the step's answer calls for (equal to ``state`` when it is consistent).

    The box |c_i| <= a_max_i on A_i v+ - a_target_i (the mid-complementarity of the other models'
    motor rows, e.g. stewart-trinkle's pair u, s): a motor at its target must stay within its bound
    (else it saturates with the sign of its impulse); a saturated motor must not have passed its
    target (else it reaches it: the row returns)."""
    new = state.copy()
    if sys.nm == 0:
        return new
    err = sys.A @ v_next - sys.a_target
    vtol = tol * max(1.0, float(np.abs(sys.a_target).max()), float(np.abs(sys.A @ v_next).max()))
    over = (state == 0) & (np.abs(impulse) > sys.a_max * (1.0 + 1e-9) + 1e-300)
    new[over] = np.sign(impulse[over]).astype(np.int8)
    passed = (state != 0) & (state * err > vtol)
    new[passed] = 0
    return new


def _build_state(sys, o: Options, M, U, bias, S, T, J, state) -> MotorStep:
    """The no-slip step with the motors in ``state``: free motor rows join the equality rows,
    saturated ones act as forces +-a_max / h."""
    m = sys.ndof
    A = _dense(sys.A).reshape(-1, m)
    free = state == 0
    Jm = np.vstack([J, A[free]])
    f = sys.f + A.T @ (state * sys.a_max) / sys.h
    step = build_noslip(M, sys.v, f, sys.h, U, S, T, Jm, J_rhs=np.concatenate([sys.j_rhs, sys.a_target[free]]),
                        normal_bias=bias, cfm=float(sys.cfm + o.cfm), tol=o.tol)
    return MotorStep(step, state, J.shape[0])


def build(sys, options: Options | None = None) -> Built:
    """The no-slip problem of a ConstraintSystem: unilateral rows [L; N] (limits, contacts) with
    their biases, equality rows J (J v+ = j_rhs), S and T (= 0) of the touching contacts
    (:func:`~contactlab.models.built.touching`) reduced by FIND-INDICES.

    Force-limited velocity motors (|c_a| <= a_max on A v+ = a_target) are box rows, which the
    factored LCP of ppm cannot carry (its matrix is N X^-1 N', symmetric and one-sided), so each
    motor's side of the box is found by an active set over the motors (primal-dual, all violated
    motors switched at once, as in the box-constrained convex QP this step is: the no-slip step is
    the minimiser of a strictly convex quadratic in v+): start saturated toward the target, solve
    the factored LCP with ``ppm``, switch by :func:`motor_violations`, repeat. The problem returned
    is the one of the last state; ``recover`` reports whether its answer is consistent."""
    o = options or Options()
    m = sys.ndof
    U = np.vstack([_dense(sys.L).reshape(-1, m), _dense(sys.N).reshape(-1, m)])
    bias = np.concatenate([sys.l_bias, sys.n_bias])
    S, T = tangent_rows(sys, touching(sys, o.active_gap))     # zero rows: never kept by FIND-INDICES
    M, J = _dense(sys.M), _dense(sys.J).reshape(-1, m)
    rows = {"limit": slice(0, sys.nl), "normal": slice(sys.nl, sys.nl + sys.nc)}
    state = np.sign(sys.a_target - sys.A @ sys.v_free()).astype(np.int8) if sys.nm else np.zeros(0, np.int8)
    ms = _build_state(sys, o, M, U, bias, S, T, J, state)
    if sys.nm:
        from ..solvers import solve
        seen = {state.tobytes()}
        t0 = time.perf_counter()
        ms.consistent = False
        for trial in range(1, o.motor_trials + 1):
            sol = solve(ms.step.problem, "ppm")
            res = recover_noslip(ms.step, sol.z)
            new = motor_violations(sys, ms.state, res.v_next, _motor_impulses(sys, ms, res.joint))
            ms.trials = trial
            if np.array_equal(new, ms.state) or new.tobytes() in seen:
                ms.consistent = bool(np.array_equal(new, ms.state))
                break
            seen.add(new.tobytes())
            ms = _build_state(sys, o, M, U, bias, S, T, J, new)
            ms.trials, ms.consistent = trial, False     # trials solved so far (this state's is not, yet)
        # the kept state's reduction counts once (in step.reduction_s) when it was built in the loop
        ms.search_s = time.perf_counter() - t0 - (ms.step.reduction_s if ms.state is not state else 0.0)
    return Built(ms.step.problem, rows, ms)


def recover(sys, built: Built, solution, options: Options | None = None):
    from .common import contact_modes
    ms = built.state
    res = recover_noslip(ms.step, solution.z)
    nl = sys.nl
    normal = res.normal[nl:]
    motor = _motor_impulses(sys, ms, res.joint)
    consistent = bool(np.array_equal(motor_violations(sys, ms.state, res.v_next, motor), ms.state))
    return StepResult(v_next=res.v_next, normal=normal, tangent=np.column_stack([res.tangent_s, res.tangent_t]),
                      joint=res.joint[:ms.n_joint], limit=res.normal[:nl], motor=motor,
                      modes=contact_modes(sys, res.v_next, normal),
                      info={"kept_rows": ms.step.index_sets.rank, "motor_trials": ms.trials,
                            "motor_consistent": consistent, "motor_saturated": bool(np.all(ms.state != 0))})
