"""Purely viscous friction (drumwright Sec. IV, eq. 29-42): acceleration level, normal LCP only.

    M a = f + J' f_j + N' f_n - S' mu_v S v - T' mu_v T v,   J a = 0,   0 <= f_n _|_ N a >= 0.

The tangential forces are known before the solve (-mu_v v_s, -mu_v v_t per contact), so only the
normal rows are complementarity variables. Redundant rows of J are removed by FIND-INDICES (Alg. 2)
so A (eq. 33) is invertible; with Z a basis of null(J_J), F = N A^-1 N' (eq. 41) equals
N Z (Z' M Z)^-1 Z' N' and the problem is a factored LCP on (N Z, Z' M Z, Z' f*) (eq. 42; the
paper's g and h omit the Jdot v and Ndot v terms, eq. 39-40; ``J_rhs`` and ``normal_bias`` add
them back as constant offsets, keeping the problem factored for ``ppm``).

In a time step of length h the drag is implicit (``build_viscous(..., h=h)``): -mu_v S v+ replaces
-mu_v S v, M becomes M + h C (C = S' mu_v S + T' mu_v T, still SPD, still factored), so the drag
dissipates for every mu_v (the explicit force of eq. 29 pumps energy in once h mu_v (1/m + r^2/I) > 2).
Only touching contacts (gap <= ``active_gap``) carry drag.

The reduction is the no-slip model's (drumwright Sec. VI) without tangent rows: FIND-INDICES and the
null space in one Householder QR in the M + h C metric (kernels/noslip.py ``noslip_metric_chain``), so
Z' (M + h C) Z = I and the factored LCP is (N Z, I, Z' f*). For a ConstraintSystem (CSR rows) a step's
build and recover are one compiled call each (``viscous_system_chain``: the rows, C, M + h C, f* and
the right-hand sides, M + h C's block factor and the chain; ``viscous_recover_step``).

Integration: :func:`semi_implicit_euler` (v+ = v + dt a, then positions from v+) or :func:`rk4`
over a user dynamics callback; impacts: :func:`build_impact` is the inelastic velocity-level
impulse, in which viscous friction (a finite force) has no impulse.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ModelError
from ..kernels import noslip as K
from .find_indices import IndexSets, MassFactor, Reduced, ShiftedFactoredLCP, step_inputs
from . import rk4 as staging
from .built import ACTIVE_GAP, Built, touching
from .common import StepResult, contact_modes, f64
from .noslip import (SEPARATING, SLIDING, STICKING, MetricReduced, _metric_reduced, _rows_into, check_dynamics,
                     motor_forces, motor_saturated)
from .rk4 import RK4_REAL_STABILITY, check_integrator


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
    """Built viscous step: ``problem`` in reduced coordinates (a = a_p + Z u), plus recovery data.
    ``M`` is the step's matrix M + h C (C = S' mu_v S + T' mu_v T; M itself when h = 0)."""

    problem: ShiftedFactoredLCP
    reduced: Reduced
    M: np.ndarray
    f_total: np.ndarray      # f - C v
    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    mu_v: np.ndarray
    v: np.ndarray
    h: float
    n_joint: int

    @property
    def index_sets(self) -> IndexSets:
        return self.reduced.sets

    @property
    def lcp_variables(self) -> int:
        return self.N.shape[0]


def build_viscous(M, v, f, N, S, T, mu_v, J=None, *, h: float = 0.0, J_rhs=None, normal_bias=None,
                  cfm: float = 0.0, tol: float = 1e-9) -> ViscousProblem:
    """Build the viscous-friction LCP (eq. 41-42) at the current state.

    M (m, m), v (m,), f (m,) generalized forces, N/S/T (n, m), mu_v scalar or (n,) viscous
    coefficients, J (j, m) with J a = J_rhs (default 0, eq. 39: the paper drops Jdot v).
    ``normal_bias`` (n,): w = N a + bias (Ndot v, or (N v + stabilisation)/dt in a time step);
    it is a constant offset of the factored problem, which stays factored.

    ``h`` > 0 makes the drag implicit over a step of length h: the tangential force is
    -mu_v S (v + h a) (the velocity at the step's end), i.e. (M + h C) a = f - C v + N' f_n + J' f_j
    with C = S' mu_v S + T' mu_v T. Then v+ = v + h a has kinetic energy
    KE(v+) <= KE(v + h M^-1 f) + (contact work) for every mu_v >= 0 (drag dissipates
    v+' C v+ >= 0); h = 0 is the explicit force -mu_v S v of eq. 29 (the ODE right-hand side).
    """
    M, v, f, N, J, S, T = check_dynamics(M, v, f, N, J, S, T)
    if S is None or T is None:
        raise ModelError("the viscous model needs both tangent Jacobians S and T")
    if not (np.isfinite(h) and h >= 0):
        raise ModelError(f"h (implicit drag step) must be finite and >= 0, got {h}")
    n = N.shape[0]
    mu_v = _per_contact("mu_v", mu_v, n)
    C = S.T @ (mu_v[:, None] * S) + T.T @ (mu_v[:, None] * T)
    f_total = f - C @ v
    Mh = M + h * C if h > 0 else M
    bias, jr, cf, _ = step_inputs(Mh, n, J.shape[0], normal_bias, J_rhs)
    # FIND-INDICES on the rows of J (Alg. 2) and the reduction of eq. 41-42 in one compiled call, the
    # no-slip model's (kernels/noslip.py noslip_metric_chain, no tangent rows) for
    # Mh a = f_total + N' z + J' f_j, i.e. its M x = M v + h f + ... with v = 0, h = 1, f = f_total
    red = _reduce(cf, J, jr, tol, f_total, N, bias, cfm)
    return ViscousProblem(red.problem, red, Mh, f_total, N, S, T, mu_v, v, float(h), J.shape[0])


def _reduce(cf: MassFactor, J, rhs_j, tol: float, f_total, N, bias, cfm: float) -> MetricReduced:
    """drumwright eq. 41-42 for Mh a = f_total + N' z + J' f_j, J a = rhs_j (Mh = cf.M, factored):
    FIND-INDICES (Alg. 2) on the rows of J and A^-1 on the momentum as Z (Z' Mh Z)^-1 Z' with the
    Mh-metric basis Z = L^-T Q[:, free] of null(J_kept) (Z' Mh Z = I, so F = (N Z)(N Z)', e = N Z Z' f*
    plus the offsets), in one compiled call: the no-slip model's ``noslip_metric_chain`` (kernels/
    noslip.py) with no tangent rows and p = Mh 0 + 1 f_total = f_total exactly. ModelError when an input
    is not finite (those the chain reads: f_total, J, J_rhs, N, bias) or Mh is not positive definite."""
    m = cf.M.shape[0]
    c = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    N = c(N)
    chain = K.noslip_metric_chain(cf.M, cf.L, cf.starts, cf.nb, c(J), np.zeros((0, m)), c(rhs_j), float(tol),
                                  np.zeros(m), c(f_total), 1.0, N, c(bias))
    return _metric_reduced(cf, chain, cfm, N)


def _normal_forces(z, built: ViscousProblem) -> np.ndarray:
    """``z`` as the problem's normal forces: a contiguous float64 vector, one per contact (ModelError
    naming the length otherwise)."""
    z = np.ascontiguousarray(np.asarray(z, dtype=np.float64).ravel())
    n = built.N.shape[0]
    if z.shape != (n,):
        raise ModelError(f"z has length {z.shape[0]}; expected {n} (one normal force per contact)")
    return z


def recover_viscous(built: ViscousProblem, z, *, separating_tol: float = 1e-9) -> StepResult:
    """Acceleration, normal forces ``z``, viscous tangential forces -mu_v S (v + h a) and joint forces."""
    z = _normal_forces(z, built)
    # a = a_p + Z u, the kept joint rows' multipliers from M a - f_total - N' z = J' f_j, N a and the drag
    # -mu_v S (v + h a), -mu_v T (v + h a): one compiled pass (kernels/noslip.py viscous_forces, on the
    # Mh-metric reduction of build_viscous and build)
    red = built.reduced
    cf, sets, pr = red.M_factor, red.sets, red.problem
    a, joint, an, _, fs, ft = K.viscous_forces(cf.M, cf.L, cf.starts, cf.nb, sets.G, sets.L, sets.order, red.x_p,
                                               *red.refl, pr.N, pr.f_star, red.p, red.U, z, built.n_joint,
                                               f64(built.v), float(built.h), f64(built.S), f64(built.T),
                                               f64(built.mu_v))
    slide = np.hypot(fs, ft) > 0
    modes = np.where((z <= 0) & (an > separating_tol), SEPARATING, np.where(slide, SLIDING, STICKING))
    return StepResult.contact(built.v.copy(), z, fs, ft, joint, modes.astype(np.int8), accel=a)


def build_impact(M, v, N, J=None, *, J_rhs=None, normal_bias=None, tol: float = 1e-9):
    """Inelastic impact with viscous friction: 0 <= p_n _|_ N v+ + bias >= 0, J v+ = J_rhs,
    M v+ = M v + N' p_n + J' p_j.

    Viscous friction is a finite force, so it has no impulse. Returns a ViscousProblem whose
    ``recover_viscous(...).accel`` is v+ (the same algebra with f := M v); :func:`impact_result`
    gives it as a result with ``v_next``.
    """
    M = np.asarray(M, dtype=np.float64)
    zeros = np.zeros((np.shape(N)[0], M.shape[0]))
    return build_viscous(M, v, M @ np.asarray(v, dtype=np.float64), N, zeros, zeros, 0.0, J, J_rhs=J_rhs,
                         normal_bias=normal_bias, tol=tol)


def impact_result(built: ViscousProblem, sol) -> StepResult:
    """The impact's v+ (``v_next``) and impulses from a solution of :func:`build_impact`."""
    res = recover_viscous(built, sol.z)
    res.v_next, res.accel = res.accel, None
    return res


def rk4_drag_rate(M, S, T, mu_v) -> float:
    """An upper bound of the largest drag rate lambda_max(M^-1 C), C = S' mu_v S + T' mu_v T: the
    Gershgorin bound of D^1/2 G M^-1 G' D^1/2 (G = [S; T], D = diag(mu_v, mu_v)), whose nonzero
    eigenvalues are those of M^-1 C. Exact for one contact of a sphere (3.5 mu_v / m)."""
    G = np.vstack([S, T])
    if G.shape[0] == 0:
        return 0.0
    d = np.sqrt(np.concatenate([mu_v, mu_v]))
    K = d[:, None] * (G @ np.linalg.solve(M, G.T)) * d[None, :]
    return float(np.abs(K).sum(axis=1).max())


def _drag_rate(M, S, T, mu_v: float) -> float:
    """:func:`rk4_drag_rate` for one coefficient mu_v on the rows of S and T that are not zero (a zero
    row adds a zero row and column to K), with M^-1 by M's block factor (:class:`MassFactor`) instead of
    a dense solve: the same bound to round-off."""
    G = np.vstack([S, T])
    G = np.ascontiguousarray(G[np.any(G != 0.0, axis=1)])
    if G.shape[0] == 0:
        return 0.0
    K_ = mu_v * (G @ MassFactor(M).solve_rows(G).T)
    return float(np.abs(K_).sum(axis=1).max())


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
    """mu_v: viscous coefficient (N s/m) at every touching contact; tol: FIND-INDICES threshold;
    cfm as no-slip's; integrator: "euler" or "rk4"; stage_method: solver of the internal solves
    (RK4's first three stages and the onset impact); active_gap: a contact carries drag only when its
    gap phi <= active_gap (m; speculative contacts farther apart keep their normal row only).

    "euler" (semi-implicit Euler): v+ = v + h a with the drag implicit, -mu_v S v+ (so no
    coefficient adds energy: the drag is inside the step's linear system, (M + h C) a = f - C v + ...),
    normal rows N a + (N v + n_bias)/h >= 0 (N v+ + n_bias >= 0), so an approaching contact receives
    the inelastic impulse h f_n in the same LCP; joints: J a = (j_rhs - J v)/h.
    "rk4" (drumwright Sec. VII-B): an inelastic impact (no friction impulse) when the step starts with
    a violated velocity row, then classical Runge-Kutta on the velocity with the explicit drag
    -mu_v S v_i of eq. 29 at each stage (see :mod:`contactlab.models.rk4`); N v+ + n_bias >= 0 holds
    for the combined update. Explicit drag is stable only for h lambda_max(M^-1 C) <= 2.785: beyond
    it build raises ModelError (use "euler", a smaller step or a smaller mu_v)."""
    mu_v: float = 0.1
    tol: float = 1e-9
    cfm: float = 0.0
    integrator: str = "euler"
    stage_method: str = "ppm"
    active_gap: float = ACTIVE_GAP

    def __post_init__(self):
        check_integrator(self.integrator)
        if not (np.isfinite(self.mu_v) and self.mu_v >= 0):
            raise ModelError(f"mu_v must be finite and >= 0, got {self.mu_v}")


def _rows(sys, o):
    """Dense M, U = [L; N], S and T of the touching contacts (zero rows for the limits and the
    others: :func:`~contactlab.models.built.tangent_rows`), J and the biases [l_bias; n_bias]: the
    system's CSR rows scattered once into zeroed arrays (the no-slip model's compiled scatter)."""
    m, nl, nc = sys.ndof, sys.nl, sys.nc
    from .common import refuse_dense
    refuse_dense("viscous", {"M": (m, m), "[L; N], S, T": (3 * (nl + nc), m)}, "use fewer bodies, or model box-friction (sparse)")
    M, U, J = np.zeros((m, m)), np.zeros((nl + nc, m)), np.zeros((sys.nj, m))
    S, T = np.zeros((nl + nc, m)), np.zeros((nl + nc, m))
    _rows_into(M, sys.M, 0)
    _rows_into(U, sys.L, 0)
    _rows_into(U, sys.N, nl)
    touch = touching(sys, o.active_gap)
    _rows_into(S, sys.S, nl, 1, touch)
    _rows_into(T, sys.T, nl, 1, touch)
    _rows_into(J, sys.J, 0)
    return M, U, S, T, J, np.concatenate([sys.l_bias, sys.n_bias])


def _stage_csr(sys, o: Options, v: np.ndarray, hc: float) -> ViscousProblem | None:
    """The step's :class:`ViscousProblem` at velocity v (drag implicit over hc: hc = h for
    semi-implicit Euler, 0 for an RK4 stage's explicit drag) when the system's M, J, L, N, S, T are
    CSR matrices (a ConstraintSystem's are), in one compiled call (kernels/noslip.py
    ``viscous_system_chain``: the rows scattered as :func:`_rows` does, C = S' mu_v S + T' mu_v T,
    Mh = M + hc C, f* = f - C v, J a = (j_rhs - J v) / h, the normal biases (U v + bias) / h, Mh's block
    factor and the no-slip model's chain (``metric_chain_rows``, on J's CSR rows: no dense J) on
    them: :func:`build_viscous` as
    :func:`build`'s general path calls it, the same numbers to round-off (the products summed over
    the stored entries instead of by BLAS)). None when a matrix is not CSR, or when an input is not
    finite or Mh not positive definite (the general path then runs and names the culprit)."""
    mats = (sys.M, sys.J, sys.L, sys.N, sys.S, sys.T)
    for X in mats:
        if getattr(X, "format", None) != "csr":
            return None
    Mc, Jc, Lc, Nc, Sc, Tc = mats
    nl, nc = Lc.shape[0], Nc.shape[0]
    f = sys.f + motor_forces(sys)[0] if sys.nm else sys.f
    mu_v = np.full(nl + nc, float(o.mu_v))
    nb, Mh, Lm, starts, U, S, T, f_total, chain = K.viscous_system_chain(
        sys.ndof, Mc.indptr, Mc.indices, Mc.data, Jc.indptr, Jc.indices, Jc.data, Lc.indptr, Lc.indices, Lc.data,
        Nc.indptr, Nc.indices, Nc.data, Sc.indptr, Sc.indices, Sc.data, Tc.indptr, Tc.indices, Tc.data,
        touching(sys, o.active_gap), mu_v, f64(v), f64(f), f64(sys.j_rhs), f64(sys.l_bias), f64(sys.n_bias),
        float(o.tol), float(sys.h), float(hc))
    if chain[0]:
        return None
    cf = MassFactor.__new__(MassFactor)
    cf.M, cf.L, cf.starts, cf.nb = Mh, Lm, starts, nb
    red = _metric_reduced(cf, chain, float(sys.cfm + o.cfm), U)
    return ViscousProblem(red.problem, red, Mh, f_total, U, S, T, mu_v, v, float(hc), Jc.shape[0])


def build(sys, options: Options | None = None) -> Built:
    """The viscous problem of a ConstraintSystem (drumwright Sec. IV, eq. 41-42): unilateral rows
    [L; N] with their biases, joint rows J, the drag -mu_v S v, -mu_v T v of the touching contacts
    (implicit over the step with ``integrator="euler"``, explicit at each RK4 stage, :mod:`.rk4`).
    Each stage in one compiled call (:func:`_stage_csr`) where the system's matrices are CSR."""
    o = options or Options()
    rows = {"limit": slice(0, sys.nl), "normal": slice(sys.nl, sys.nl + sys.nc)}
    h = sys.h
    if o.integrator == "euler":
        st = staging.Staging(np.array(sys.v, dtype=np.float64))
        last = _stage_csr(sys, o, st.v0, h)
        if last is not None:
            return Built(last.problem, rows, (last, st))
    f_motor, _ = motor_forces(sys)
    M, U, S, T, J, bias0 = _rows(sys, o)
    implicit = h if o.integrator == "euler" else 0.0
    if o.integrator == "rk4" and sys.nc:
        rate = _drag_rate(M, S, T, o.mu_v)
        if h * rate > RK4_REAL_STABILITY:
            raise ModelError(f"viscous integrator='rk4' with mu_v = {o.mu_v:g}: h * drag rate <= {h * rate:.3g} "
                             f"exceeds RK4's stability limit {RK4_REAL_STABILITY} (explicit drag would add energy); "
                             f"use integrator='euler' (implicit drag, stable for every mu_v), a smaller dt or mu_v")

    def make_stage(v):
        fused = _stage_csr(sys, o, v, implicit) if o.integrator == "rk4" else None
        if fused is not None:
            return fused
        return build_viscous(M, v, sys.f + f_motor, U, S, T, o.mu_v, J, h=implicit, J_rhs=(sys.j_rhs - J @ v) / h,
                             normal_bias=(U @ v + bias0) / h, cfm=float(sys.cfm + o.cfm), tol=o.tol)

    def make_impact(v):
        return build_impact(M, v, U, J, J_rhs=sys.j_rhs, normal_bias=bias0, tol=o.tol)

    last, st = staging.stage(sys, o.integrator, o.stage_method, make_stage, lambda b, sol: recover_viscous(b, sol.z),
                         make_impact, impact_result, cfm=float(sys.cfm + o.cfm))
    return Built(last.problem, rows, (last, st))


def recover(sys, built: Built, solution, options: Options | None = None):
    last, st = built.state
    if not st.stages and st.impact is None and type(last.reduced) is MetricReduced and last.h == sys.h:
        return _recover_euler(sys, last, st, solution.z)
    res = recover_viscous(last, solution.z)
    nl = sys.nl
    v_next, mix = staging.combine(sys, st, res)
    imp = lambda get: staging.impulse(st, mix, get)
    normal_all = imp(lambda r: r.normal)
    normal = normal_all[nl:]
    _, motor = motor_forces(sys)
    return StepResult(v_next=v_next, normal=normal,
                      tangent=np.column_stack([mix(lambda r: r.tangent_s)[nl:], mix(lambda r: r.tangent_t)[nl:]]),
                      joint=imp(lambda r: r.joint), limit=normal_all[:nl], motor=motor,
                      modes=contact_modes(sys, v_next, normal),
                      info={"forces": res.normal, "stage_failures": st.failures, "impact": st.impact is not None,
                            "certified": st.failures == 0, "motor_saturated": motor_saturated(sys, v_next, motor)})


def _recover_euler(sys, last: ViscousProblem, st, z) -> StepResult:
    """:func:`recover` of a semi-implicit Euler step (one stage, no impact; ``last.h`` = the step) in one
    compiled call (kernels/noslip.py ``viscous_recover_step``: a and the joint forces as
    :func:`recover_viscous`, v+ = v + h a, the drag -mu_v S v+, -mu_v T v+ and the impulses h x force,
    what :func:`recover` forms through :func:`~contactlab.models.rk4.combine` with weight 1)."""
    z = _normal_forces(z, last)
    red = last.reduced
    cf, sets, pr = red.M_factor, red.sets, red.problem
    v_next, _, zi, joint, tangent, _, _ = K.viscous_recover_step(
        cf.M, cf.L, cf.starts, cf.nb, sets.G, sets.L, sets.order, red.x_p, *red.refl, pr.N, pr.f_star, red.p, red.U,
        z, last.n_joint, st.v0, float(sys.h), f64(last.S), f64(last.T), last.mu_v, sys.nl)
    nl = sys.nl
    normal = zi[nl:]
    motor = motor_forces(sys)[1] if sys.nm else np.zeros(0)
    return StepResult(v_next=v_next, normal=normal, tangent=tangent, joint=joint, limit=zi[:nl], motor=motor,
                      modes=contact_modes(sys, v_next, normal),
                      info={"forces": z, "stage_failures": st.failures, "impact": False,
                            "certified": st.failures == 0, "motor_saturated": motor_saturated(sys, v_next, motor)})
