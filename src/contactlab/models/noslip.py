"""No-slip contact model (drumwright Sec. VI, eq. 45-57): one LCP variable per contact.

Velocity level (eq. 23-25) with S v+ = T v+ = 0 (eq. 45-46) and J v+ = 0 (eq. 24):

    M (v+ - v) = dt f + J' f_j + N' f_n + S' f_s + T' f_t,   0 <= f_n  _|_  N v+ >= 0.

FIND-INDICES (Alg. 2) keeps independent rows G = [J_J; S_S; T_T], so A (eq. 47) is nonsingular.
The LCP matrix F = N X^-1 N' (eq. 56) is kept factored: with Z a basis of null(G),
X^-1 = Z (Z' M Z)^-1 Z' on the momentum, so the problem is the factored LCP (N Z, Z' M Z,
Z' (M v + dt f)) (eq. 57 plus the dt f of eq. 23; a ``ShiftedFactoredLCP``, whose constant offset
carries nonzero joint right-hand sides J v+ = J_rhs and normal biases); ``ppm`` (Alg. 1) solves it
without forming F, and at most rank(F) <= m - rank(G) normal impulses are positive (Lemma 1,
Theorem 1). Z is taken in the M metric (Z = L_M^-T Q[:, free] from the Householder QR of
L_M^-1 G', M = L_M L_M'; :class:`MetricReduced`), so Z' M Z = I is neither formed nor factored and
the factored LCP is (N Z, I, Z' (M v + dt f)). Statuses are the solver's; a build never raises on a
valid system.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..solution import Status
from ..kernels import motor_set as KM
from ..kernels import noslip as K
from ..kernels.noslip import csr_rows_into, noslip_system_chain, symmetric_finite
from .built import ACTIVE_GAP, Built, touching
from .common import MODE_NAMES, MODE_SEPARATING, MODE_SLIDING, MODE_STICKING, StepResult, contact_modes, f64  # noqa: F401
from .find_indices import (NOT_FINITE, IndexSets, MassFactor, Reduced, ShiftedFactoredLCP, _candidates,
                           step_inputs)

# one set of contact-mode constants and one result type for every model (models/common.py)
SEPARATING, STICKING, SLIDING = MODE_SEPARATING, MODE_STICKING, MODE_SLIDING
ContactResult = StepResult


def check_dynamics(M, v, f, N, J=None, S=None, T=None):
    """Validate shapes (ModelError naming the argument) and return float64 arrays."""
    M = np.ascontiguousarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ModelError(f"M must be a square mass matrix, got shape {M.shape}")
    m = M.shape[0]
    sym_finite = symmetric_finite(M, 1e-10)       # compiled; numpy's test only when it fails (the message)
    if not sym_finite and not np.allclose(M, M.T, atol=1e-10 * max(1.0, np.abs(M).max(initial=0.0))):
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
        if not (sym_finite and name == "M") and not np.isfinite(x).all():
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
    bias, jr, cf, _ = step_inputs(M, n, J.shape[0], normal_bias, J_rhs)
    ST, _ = _candidates(None, S if S.shape[0] else None, T if S.shape[0] else None, M.shape[0])
    return _reduce_step(cf, v, f, dt, N, J, ST, jr, bias, cfm, tol, S.shape[0], t0)


def _reduce_step(cf: MassFactor, v, f, dt, N, J, ST, rhs_j, bias, cfm, tol, n_tangent, t0) -> NoSlipProblem:
    """FIND-INDICES on the equality rows J (J v+ = rhs_j) and the tangent rows ST (S_i, T_i
    interleaved: Alg. 2's order) and the factored LCP of eq. 57, in one compiled call
    (kernels/noslip.py ``noslip_metric_chain``); shapes already checked (:func:`build_noslip`) or
    built by the library (:func:`build`). A non-finite input is named."""
    c = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    J, v, f = c(J), c(v), c(f)
    N = c(N)
    chain = K.noslip_metric_chain(cf.M, cf.L, cf.starts, cf.nb, J, c(ST), c(rhs_j), float(tol), v, f, float(dt), N,
                                  c(bias))
    if chain[0] == 3:
        check_dynamics(cf.M, v, f, N, J)      # names v, f, N or J when one of them is the culprit
    red = _metric_reduced(cf, chain, cfm, N)
    return NoSlipProblem(red.problem, red, cf.M, red.p, red.U, J.shape[0], n_tangent, time.perf_counter() - t0)


class MetricReduced(Reduced):
    """:class:`~contactlab.models.find_indices.Reduced` of the no-slip reduction in the M metric
    (kernels/noslip.py ``noslip_metric_chain``): x = x_p + Z u with Z = L_M^-T Q[:, free]
    (M = L_M L_M', Q the Householder reflectors of L_M^-1 G'), so Z' M Z = I and the factored LCP is
    (U Z, I, Z' p) (drumwright eq. 56-57: F = U Z Z' U' = N X^-1 N'). Z is formed only when read
    (``Z``; recovery applies the reflectors to one vector, ``recover``)."""

    def __init__(self, problem, x_p, sets, M_factor, p, U, refl, d):
        super().__init__(problem, None, x_p, sets, M_factor, p, U)
        self.refl, self.d = refl, d

    @property
    def Z(self) -> np.ndarray:
        if self._Z is None:
            cf = self.M_factor
            Z = K.metric_basis(cf.L, cf.starts, cf.nb, *self.refl, self.sets.G.shape[0])
            # every coordinate fixed: the inert coordinate of find_indices._reduced (Z = 0 (m, 1))
            self._Z = Z if self.d else np.zeros((Z.shape[0], 1))
        return self._Z

    @Z.setter
    def Z(self, value):
        self._Z = value

    def recover(self, z: np.ndarray, n_joint: int, n_contact: int):
        """(x, lam, joint, s, t, U x) for the contact impulses z (n,) as :meth:`Reduced.recover`, in one
        compiled pass (kernels/noslip.py ``recover_metric_kernel``)."""
        cf, sets, pr = self.M_factor, self.sets, self.problem
        return K.recover_metric_kernel(cf.M, cf.L, cf.starts, cf.nb, sets.G, sets.L, sets.order, self.x_p,
                                       *self.refl, pr.N, pr.f_star, self.p, self.U,
                                       np.ascontiguousarray(z, dtype=np.float64), n_joint, n_contact)


_IDENTITY: dict = {}


def _identity(d: int) -> np.ndarray:
    """np.eye(d): a copy of the one kept for each size (cheaper than np.eye; one a build)."""
    eye = _IDENTITY.get(d)
    if eye is None:
        eye = _IDENTITY[d] = np.eye(d)
    return eye.copy()


_CHAIN_ERRORS = {1: "FIND-INDICES kept dependent rows (numerical failure)", 3: NOT_FINITE,
                 4: "M is not positive definite; a mass matrix must be SPD"}


def _metric_reduced(cf: MassFactor, chain, cfm: float, U: np.ndarray) -> MetricReduced:
    """The MetricReduced of ``noslip_metric_chain``'s output (ModelError on a failed status)."""
    st, kept, order, p, Lg, Gk, x_p, UZ, Zp, offset, q, fpack, ipack = chain
    if st:
        raise ModelError(_CHAIN_ERRORS[st])
    d = UZ.shape[1]
    if d == 0:   # every coordinate is fixed: one inert coordinate keeps the factored form
        one = np.ones((1, 1))
        problem = ShiftedFactoredLCP.from_factor(np.zeros((offset.shape[0], 1)), one, one, np.zeros(1), np.zeros(1),
                                                 offset, offset.copy(), cfm)
    else:
        eye = _identity(d)
        problem = ShiftedFactoredLCP.from_factor(UZ, eye, eye, Zp, Zp.copy(), offset, q, cfm)
    return MetricReduced(problem, x_p, IndexSets(Gk, Lg, order, kept), cf, p, U, (fpack, ipack), d)


def _impulses(built: NoSlipProblem, z) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64).ravel()
    n = built.N.shape[0]
    if z.shape != (n,):
        raise ModelError(f"z has length {z.shape[0]}; expected {n} (one normal impulse per row of N)")
    return z


def recover_noslip(built: NoSlipProblem, z, *, separating_tol: float = 1e-9) -> StepResult:
    """Next velocity and impulses from the normal impulses ``z`` (n,) (e.g. ``Solution.z``).

    Tangential and joint impulses come from the kept rows' multipliers (dropped dependent rows
    carry zero), lam = (G M^-1 G')^-1 G M^-1 (M v+ - M v - dt f - N' z) with the FIND-INDICES factor.
    """
    z = _impulses(built, z)
    v_next, _, joint, fs, ft, vn = built.reduced.recover(z, built.n_joint, built.n_tangent)
    modes = np.where((z <= 0) & (vn > separating_tol), SEPARATING, STICKING).astype(np.int8)
    return StepResult.contact(v_next, z, fs, ft, joint, modes)


# -- the simulator's model interface (docs/architecture.md): build(system) -> problem, recover(...) ----------
NAME = "no-slip"
DEFAULT_METHOD = "ppm"
DESCRIPTION = "velocity level, S v+ = T v+ = 0; one LCP variable per contact, factored for ppm (drumwright Sec. VI)"
#: the compiled step of this model's problem on jointed free bodies (sim/noslip_stages.py: build, ppm, recover
#: and the integration in one call, the same kernels as build/recover below)
COMPILED_STEP = "noslip-metric"


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
    """Motor impulses (nm,): +-a_max for saturated motors, the row multiplier for the others
    (kernels/motor_set.py ``motor_impulses``)."""
    return KM.motor_impulses(ms.state, f64(sys.a_max), f64(joint), ms.n_joint)


def _motor_csr(sys) -> tuple:
    """The motor rows A as CSR arrays (indptr, indices, data) for kernels/motor_set.py."""
    A = sys.A if getattr(sys.A, "format", None) == "csr" else sp.csr_matrix(_dense(sys.A).reshape(-1, sys.ndof))
    return A.indptr.astype(np.int64, copy=False), A.indices.astype(np.int64, copy=False), f64(A.data)


def saturate_free_motors(sys, state: np.ndarray) -> np.ndarray:
    """The motor state after a trial whose LCP has no solution (ppm's checked Farkas certificate):
    with its free motors as equality rows A_i v+ = a_target_i the contacts cannot be satisfied
    (e.g. two grippers closing at their target speed onto a held box), so no finite impulse keeps
    every free motor at its target: each free motor saturates, pushing toward its target (the sign
    of a_target_i - A_i v, else of a_target_i, else +1); a wrong side is switched back by
    :func:`motor_violations` on the next trial (drumwright eq. 23-25 with the motors' box rows)."""
    new = state.copy()
    free = state == 0
    d = np.sign(sys.a_target - sys.A @ sys.v)
    d = np.where(d != 0, d, np.sign(sys.a_target))
    d = np.where(d != 0, d, 1.0)
    new[free] = d[free].astype(np.int8)
    return new


def motor_violations(sys, state: np.ndarray, v_next: np.ndarray, impulse: np.ndarray,
                     tol: float = 1e-9) -> np.ndarray:
    """The motor state that the step's answer calls for (equal to ``state`` when it is consistent).

    The box |c_i| <= a_max_i on A_i v+ - a_target_i (the mid-complementarity of the other models'
    motor rows, e.g. stewart-trinkle's pair u, s): a motor at its target must stay within its bound
    (else it saturates with the sign of its impulse); a saturated motor must not have passed its
    target (else it reaches it: the row returns)."""
    if sys.nm == 0:
        return state.copy()
    return KM.motor_violations(*_motor_csr(sys), f64(sys.a_target), f64(sys.a_max), state, f64(v_next), f64(impulse),
                               float(tol))


_ALL = np.zeros(0, dtype=np.bool_)


def _rows_into(out: np.ndarray, X, r0: int, step: int = 1, keep=None) -> None:
    """out[r0 + step * i] += row i of X (CSR or dense) for the rows i where ``keep`` (default all),
    into a zeroed ``out`` (one compiled scatter of the nonzeros: no scipy conversion per matrix)."""
    if hasattr(X, "indptr"):
        X = X.tocsr() if X.format != "csr" else X
        csr_rows_into(X.indptr, X.indices, X.data, out, r0, step, _ALL if keep is None else keep, keep is not None)
    else:
        X = np.asarray(X, dtype=np.float64).reshape(-1, out.shape[1])
        out[r0:r0 + step * X.shape[0]:step] += X if keep is None else X * keep[:, None]


def _build_state(sys, o: Options, cf: MassFactor, U, bias, J, ST, state, t0=None) -> MotorStep:
    """The no-slip step with the motors in ``state``: free motor rows join the equality rows,
    saturated ones act as forces +-a_max / h. ``J`` (nj, m) dense joint rows, ``ST`` (2 nc, m) the
    touching contacts' S_i, T_i rows interleaved (Alg. 2's order; zero rows for the others).
    ``t0``: start of the reduction's clock (default now; before M's factorisation for the first state)."""
    t0 = time.perf_counter() if t0 is None else t0
    m, nj = sys.ndof, J.shape[0]
    f = sys.f
    rhs_j = sys.j_rhs
    if sys.nm:      # the free motors' rows join J, the saturated ones' forces f (kernels/motor_set.py)
        Ap, Ai, Ax = _motor_csr(sys)
        J, rhs_j = KM.motor_rows(f64(J), f64(_dense(sys.A).reshape(-1, m)), state, f64(rhs_j), f64(sys.a_target))
        f = KM.motor_force(Ap, Ai, Ax, state, f64(sys.a_max), float(sys.h), f64(f))
    step = _reduce_step(cf, sys.v, f, sys.h, U, J, ST, rhs_j, bias, float(sys.cfm + o.cfm), o.tol, ST.shape[0] // 2,
                        t0)
    return MotorStep(step, state, nj)


def _build_csr(sys, o: Options) -> Built | None:
    """:func:`build` without motors when the system's M, J, L, N, S, T are CSR matrices (a
    ConstraintSystem's are): M, L, N scattered into dense rows, M's block factor (its blocks found
    from M's stored entries) and the reduction (FIND-INDICES, null space, eq. 57) on the candidate
    rows J, S, T read from their CSR rows, in one compiled call (kernels/noslip.py
    ``noslip_system_chain``: the general path's arithmetic below on the same nonzeros in the same
    order, so the same numbers; tests/models/test_noslip.py compares both). None when a matrix is not CSR
    (the general path then runs). ``reduction_s`` counts from the scatter."""
    mats = (sys.M, sys.J, sys.L, sys.N, sys.S, sys.T)
    for X in mats:
        if getattr(X, "format", None) != "csr":
            return None
    Mc, Jc, Lc, Nc, Sc, Tc = mats
    nj, nl, nc = Jc.shape[0], Lc.shape[0], Nc.shape[0]
    t0 = time.perf_counter()
    nb, M, Lm, starts, U, chain = noslip_system_chain(
        sys.ndof, Mc.indptr, Mc.indices, Mc.data, Jc.indptr, Jc.indices, Jc.data, Lc.indptr, Lc.indices, Lc.data,
        Nc.indptr, Nc.indices, Nc.data, Sc.indptr, Sc.indices, Sc.data, Tc.indptr, Tc.indices, Tc.data,
        touching(sys, o.active_gap), f64(sys.v), f64(sys.f), f64(sys.j_rhs), f64(sys.l_bias), f64(sys.n_bias),
        float(o.tol), float(sys.h))
    if chain[0] in (3, 4):     # the general path's errors: a non-finite argument named first
        J = np.zeros((nj, sys.ndof))
        _rows_into(J, Jc, 0)
        check_dynamics(M, sys.v, sys.f, U, J)
    cf = MassFactor.__new__(MassFactor)
    cf.M, cf.L, cf.starts, cf.nb = M, Lm, starts, nb
    red = _metric_reduced(cf, chain, float(sys.cfm + o.cfm), U)
    step = NoSlipProblem(red.problem, red, M, red.p, U, nj, nc, time.perf_counter() - t0)
    return Built(red.problem, {"limit": slice(0, nl), "normal": slice(nl, nl + nc)},
                 MotorStep(step, np.zeros(0, np.int8), nj))


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
    is the one of the last state; ``recover`` reports whether its answer is consistent.

    The system's rows are scattered once into dense arrays and M is factored once (block
    Cholesky, :class:`~contactlab.models.find_indices.MassFactor`) for every motor state. The
    system's M is symmetric by construction (no test per step); a non-finite or indefinite M fails
    its factorisation, and non-finite rows, velocities or forces are named as :func:`build_noslip`
    names them."""
    o = options or Options()
    if not sys.nm:
        built = _build_csr(sys, o)
        if built is not None:
            return built
    m, nl, nc = sys.ndof, sys.nl, sys.nc
    from .common import refuse_dense
    refuse_dense("no-slip", {"M": (m, m), "[L; N]": (nl + nc, m), "[S; T]": (2 * nc, m)}, "use fewer bodies, or model box-friction (sparse)")
    U = np.zeros((nl + nc, m))
    _rows_into(U, sys.L, 0)
    _rows_into(U, sys.N, nl)
    bias = np.concatenate([sys.l_bias, sys.n_bias])
    ST = np.zeros((2 * nc, m))       # zero rows (not touching): never kept by FIND-INDICES
    touch = touching(sys, o.active_gap)
    _rows_into(ST, sys.S, 0, 2, touch)
    _rows_into(ST, sys.T, 1, 2, touch)
    M = np.zeros((m, m))
    _rows_into(M, sys.M, 0)
    J = np.zeros((sys.nj, m))
    _rows_into(J, sys.J, 0)
    t0 = time.perf_counter()
    try:
        cf = MassFactor(M)   # the system's M is symmetric by construction; NaN or inf fail the factor
    except ModelError:
        check_dynamics(M, sys.v, sys.f, U, J)     # names a non-finite argument
        raise
    rows = {"limit": slice(0, sys.nl), "normal": slice(sys.nl, sys.nl + sys.nc)}
    state = KM.motor_start(*_motor_csr(sys), f64(sys.a_target), sys.v_free()) if sys.nm else np.zeros(0, np.int8)
    ms = _build_state(sys, o, cf, U, bias, J, ST, state, t0)
    if sys.nm:
        from ..solvers import solve
        seen = {state.tobytes()}
        t0 = time.perf_counter()
        ms.consistent = False
        for trial in range(1, o.motor_trials + 1):
            sol = solve(ms.step.problem, "ppm")
            if sol.status is Status.NO_SOLUTION and np.any(ms.state == 0):
                new = saturate_free_motors(sys, ms.state)     # the free motors' targets contradict the contacts
            else:
                res = recover_noslip(ms.step, sol.z)
                new = motor_violations(sys, ms.state, res.v_next, _motor_impulses(sys, ms, res.joint))
            ms.trials = trial
            if np.array_equal(new, ms.state) or new.tobytes() in seen:
                ms.consistent = bool(np.array_equal(new, ms.state))
                break
            seen.add(new.tobytes())
            ms = _build_state(sys, o, cf, U, bias, J, ST, new)
            ms.trials, ms.consistent = trial, False     # trials solved so far (this state's is not, yet)
        # the kept state's reduction counts once (in step.reduction_s) when it was built in the loop
        ms.search_s = time.perf_counter() - t0 - (ms.step.reduction_s if ms.state is not state else 0.0)
    return Built(ms.step.problem, rows, ms)


def recover(sys, built: Built, solution, options: Options | None = None):
    ms = built.state
    step = ms.step
    z = _impulses(step, solution.z)
    red = step.reduced
    if not ms.state.shape[0] and type(red) is MetricReduced:    # no motors: one compiled call
        cf, sets, pr = red.M_factor, red.sets, red.problem
        v_next, joint, tangent = K.recover_metric_step(cf.M, cf.L, cf.starts, cf.nb, sets.G, sets.L, sets.order,
                                                       red.x_p, *red.refl, pr.N, pr.f_star, red.p, red.U,
                                                       np.ascontiguousarray(z, dtype=np.float64), step.n_joint,
                                                       step.n_tangent)
        nl = sys.nl
        normal = z[nl:]
        return StepResult(v_next=v_next, normal=normal, tangent=tangent, joint=joint, limit=z[:nl], motor=np.zeros(0),
                          modes=contact_modes(sys, v_next, normal),
                          info={"kept_rows": sets.G.shape[0], "motor_trials": ms.trials, "motor_consistent": True,
                                "motor_saturated": True})
    v_next, _, joint, fs, ft, _ = step.reduced.recover(z, step.n_joint, step.n_tangent)
    nl = sys.nl
    normal = z[nl:]
    if sys.nm:
        motor = _motor_impulses(sys, ms, joint)
        consistent = bool(np.array_equal(motor_violations(sys, ms.state, v_next, motor), ms.state))
    else:
        motor, consistent = np.zeros(0), True
    return StepResult(v_next=v_next, normal=normal, tangent=np.column_stack([fs, ft]),
                      joint=joint[:ms.n_joint], limit=z[:nl], motor=motor,
                      modes=contact_modes(sys, v_next, normal),
                      info={"kept_rows": ms.step.index_sets.rank, "motor_trials": ms.trials,
                            "motor_consistent": consistent, "motor_saturated": bool(np.all(ms.state != 0))})
