"""A legged-locomotion controller for the simulator's callback interface (``fn(sim)`` before each
step): gait -> foot targets in the base frame -> inverse kinematics -> joint-space PD torques
(clipped) applied with ``sim.set_joint_torque``; it also logs the base pose, foot contacts and the
slip speed of the feet in contact, and summarises a run (:meth:`LegController.summary`).

drumwright §VII-B / scenario-specs §2.2: the Pacer controller of the paper's robot (joint-space
PID kp 10, kv 0.1, 4 N m). Stance legs may add a feed-forward share of the robot's weight,
tau = -J' R' (m g / n_stance) (``weight_ff``), which the paper's operational-space PID supplied
through its large foot gains; the base is not otherwise stabilised (VIIP off, as in the paper).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ParamError
from ..kernels._jit import jit
from ..kernels.quaternion import quat_matrix
from .gait import Gait
from .ik import SerialLegs, ThreeJointLegs, _position_jacobian, _serial_frames
from .pd import JointPD, JointReader, pd_torque


@dataclass
class LegSetup:
    """What the controller needs to know about a legged scene.

    ``base``: base body name; ``joints``: (legs, k) joint names; ``feet``: foot body names (legs,)
    and ``foot_radius``; ``kinematics``: :class:`SerialLegs` in the base body frame, whose angles
    are the simulator's joint coordinates plus ``q_offset`` (legs, k); ``nominal`` (legs, 3): foot
    targets at rest in the base frame; ``analytic``: an optional closed-form IK in the same
    convention (else damped least squares on ``kinematics``); ``mass``: total mass (weight
    feed-forward); ``height``: nominal base height (for the fall test)."""
    base: str
    joints: list
    feet: list
    foot_radius: float
    kinematics: SerialLegs
    q_offset: np.ndarray
    nominal: np.ndarray
    height: float
    mass: float
    analytic: ThreeJointLegs | None = None


@dataclass
class LegController:
    """Trot (or any :class:`Gait`) controller. ``settle``: seconds standing before the gait starts;
    ``ramp``: seconds over which stride and step height grow to full size."""
    setup: LegSetup
    gait: Gait = field(default_factory=Gait)
    pd: JointPD = field(default_factory=JointPD)
    settle: float = 0.1
    ramp: float = 0.35
    weight_ff: bool = True
    foot_kp: float = 1000.0         # operational-space (foot xyz) PD of the paper's controller, N/m ...
    foot_kd: float = 10.0           # ... and N s/m; tau += J' (foot_kp (x_ref - x) + foot_kd (xd_ref - xd))
    fall_height: float = 0.3        # fell: base height off nominal by more than this share ...
    fall_angle_deg: float = 20.0    # ... or roll / pitch beyond this

    def __post_init__(self):
        check_setup(self.setup)
        self._reader = None
        self._q_prev = None
        self._gains = None              # (pd, kp, kd, tau_max): self.pd's gains as (legs, k) arrays
        self.log = {k: [] for k in ("time", "base", "rpy", "stance", "contact", "slip", "torque")}

    # -- the callback ---------------------------------------------------------------------------------
    def __call__(self, sim) -> None:
        s = self.setup
        gait_stance = self.gait.stance(max(sim.data.time - self.settle, 0.0))
        if self._reader is None:
            self._reader = JointReader(sim.model, [n for leg in s.joints for n in leg])
            self._base = sim.model.index(s.base)
            self._feet = np.array([sim.model.index(f) for f in s.feet])
            self._record(sim, None, gait_stance)
        else:
            self._record(sim, self._tau, gait_stance)
        self._x_step = sim.data.position.copy()     # body positions at the start of the coming step
        L, k = s.kinematics.shape
        data = sim.data
        q, qd = self._reader(data)
        q = q.reshape(L, k) + s.q_offset
        qd = qd.reshape(L, k)
        t = data.time - self.settle
        scale = 0.0 if t < 0 else min(1.0, t / self.ramp) if self.ramp > 0 else 1.0
        target = s.nominal + self.gait.foot_offsets(max(t, 0.0), scale)
        if s.analytic is not None:
            q_ref, _ = s.analytic.inverse(target)
        else:
            q_ref, _ = s.kinematics.inverse(target, q if self._q_prev is None else self._q_prev, max_iter=10)
        self._q_prev = q_ref
        h = sim.h
        xd_ref = (s.nominal + self.gait.foot_offsets(max(t + h, 0.0), scale) - target) / h if scale > 0 else 0.0 * target
        stance = gait_stance if scale > 0 else np.ones(L, bool)
        if self._gains is None or self._gains[0] is not self.pd:
            self._gains = (self.pd, *self.pd.gains((L, k)))
        kin = s.kinematics
        tau = _leg_torques(kin.anchors, kin.axes, kin.feet, q, qd, q_ref, target, xd_ref, float(self.foot_kp),
                           float(self.foot_kd), bool(self.weight_ff), stance, float(s.mass), sim.model.gravity,
                           data.quaternion[self._base], *self._gains[1:])
        self._tau = tau
        sim.set_joint_torques(self._reader.names, tau)

    # -- logging ----------------------------------------------------------------------------------------
    def _record(self, sim, tau, stance=None) -> None:
        """State after the previous step: base pose, commanded stance (``stance``: the gait's at this
        time when the caller has it), feet in contact (a touching, loaded contact of that step) and
        slip speed (tangential velocity of the contact point of the step's geometry after the step,
        i.e. what the model's tangential rows S v+, T v+ see)."""
        data, s = sim.data, self.setup
        i = self._base
        t = data.time - self.settle
        L = len(s.feet)
        contact = np.zeros(L, bool)
        slip = np.full(L, np.nan)
        cs, res = data.contacts, data.result
        if cs is not None and res is not None and cs.count:
            from ..models.built import ACTIVE_GAP
            # touching (not speculative: friction acts at touching contacts only) and loaded; the
            # velocity of the contact point of the step's own geometry (its start), i.e. S v+
            contact, slip = _foot_slip(cs.body_a, cs.body_b, np.asarray(res.normal, dtype=np.float64), cs.phi,
                                       cs.point, cs.normal, self._feet, sim.model.dof_start, data.linear_velocity,
                                       data.angular_velocity, self._x_step, float(ACTIVE_GAP))
        lg = self.log
        lg["time"].append(data.time)
        lg["base"].append(data.position[i].copy())
        lg["rpy"].append(_rpy(data.quaternion[i]))
        lg["stance"].append(self.gait.stance(max(t, 0.0)) if stance is None else stance)
        lg["contact"].append(contact)
        lg["slip"].append(slip)
        lg["torque"].append(np.zeros(np.size(s.q_offset)) if tau is None else np.ravel(tau).copy())

    def arrays(self) -> dict:
        """The log as arrays: time (n,), base (n, 3), rpy (n, 3), stance/contact (n, legs) bool,
        slip (n, legs) (NaN: foot not in contact), torque (n, joints)."""
        return {k: np.array(v) for k, v in self.log.items()}

    def summary(self, sim=None, traj=None) -> dict:
        """``distance_m`` (base x travelled), ``mean_speed_m_s`` (over the gait's time),
        ``fell`` (base height off nominal by > fall_height share or |roll|/|pitch| > fall_angle_deg
        at any step), ``max_foot_slip_m_s`` (largest tangential speed of a loaded foot contact)."""
        if sim is not None and self._reader is not None and self.log["time"][-1] != sim.data.time:
            self._record(sim, getattr(self, "_tau", None))   # the state after the last step
        a = self.arrays()
        if a["time"].size == 0:
            return {"distance_m": 0.0, "mean_speed_m_s": 0.0, "fell": False, "max_foot_slip_m_s": 0.0}
        x = a["base"][:, 0]
        dist = float(x[-1] - x[0])
        walk = a["time"][-1] - a["time"][0] - self.settle
        z = a["base"][:, 2]
        fell = bool(np.any(np.abs(z - self.setup.height) > self.fall_height * self.setup.height) or
                    np.any(np.abs(a["rpy"][:, :2]) > np.radians(self.fall_angle_deg)))
        slip = a["slip"]
        return {"distance_m": dist, "mean_speed_m_s": float(dist / walk) if walk > 0 else 0.0, "fell": fell,
                "max_foot_slip_m_s": float(np.nanmax(slip)) if np.any(np.isfinite(slip)) else 0.0}


@jit
def _leg_torques(anchors, axes, feet, q, qd, q_ref, target, xd_ref, foot_kp, foot_kd, weight_ff, stance, mass,
                 gravity, q_base, kp, kd, tau_max):
    """The joint torques of one control step (module docstring), legs (L, k) at once: foot positions
    x and Jacobians J at q (:class:`SerialLegs`' product of exponentials, base frame); the foot
    force F = foot_kp (target - x) + foot_kd (xd_ref - J qd) mapped by J'; with ``weight_ff``,
    stance feet add -J' R' (m g / n_stance) (R the base orientation ``q_base``); the joint-rate
    reference qd_ref = pinv(J) xd_ref; then the clipped PD :func:`pd_torque` with tau_ff = J' F."""
    w, c, x = _serial_frames(anchors, axes, feet, q)
    J = _position_jacobian(w, c, x)
    L, k = q.shape
    push = np.zeros(3)                              # the ground push on a stance foot, base frame
    if weight_ff:
        R = np.empty((3, 3))
        quat_matrix(q_base, R)
        n = max(1, np.sum(stance))
        for i in range(3):
            push[i] = (R[0, i] * (-mass * gravity[0]) + R[1, i] * (-mass * gravity[1]) +
                       R[2, i] * (-mass * gravity[2])) / n
    tau_ff, qd_ref, F = np.empty((L, k)), np.empty((L, k)), np.empty(3)
    for l in range(L):
        for i in range(3):
            xd = 0.0
            for j in range(k):
                xd += J[l, i, j] * qd[l, j]
            F[i] = foot_kp * (target[l, i] - x[l, i]) + foot_kd * (xd_ref[l, i] - xd)
        for j in range(k):
            tau_ff[l, j] = J[l, 0, j] * F[0] + J[l, 1, j] * F[1] + J[l, 2, j] * F[2]
            if weight_ff and stance[l]:
                tau_ff[l, j] -= J[l, 0, j] * push[0] + J[l, 1, j] * push[1] + J[l, 2, j] * push[2]
        qd_ref[l] = _rate_reference(J[l], xd_ref[l])
    return pd_torque(kp, kd, tau_max, q, qd, q_ref, qd_ref, tau_ff)


@jit
def _rate_reference(J, xd):
    """pinv(J) xd: the joint rates of least norm (least squares) for the foot velocity xd. A square
    J that is far from singular (|det J| > 1e-9 ||J||_F^3, i.e. not a straight knee) by a solve,
    which is pinv's answer to round-off at a seventh of its cost (no SVD); otherwise pinv."""
    if J.shape[0] == J.shape[1] == 3:
        det = (J[0, 0] * (J[1, 1] * J[2, 2] - J[1, 2] * J[2, 1]) - J[0, 1] * (J[1, 0] * J[2, 2] - J[1, 2] * J[2, 0])
               + J[0, 2] * (J[1, 0] * J[2, 1] - J[1, 1] * J[2, 0]))
        scale = 0.0
        for i in range(3):
            for j in range(3):
                scale += J[i, j] * J[i, j]
        if abs(det) > 1e-9 * scale ** 1.5:
            return np.linalg.solve(J, xd)
    return np.linalg.pinv(J) @ xd


@jit
def _rpy(q):
    """(roll, pitch, yaw) of the unit quaternion q: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    R = np.empty((3, 3))
    quat_matrix(q, R)
    return np.array([np.arctan2(R[2, 1], R[2, 2]), np.arcsin(min(max(-R[2, 0], -1.0), 1.0)),
                     np.arctan2(R[1, 0], R[0, 0])])


@jit
def _foot_slip(body_a, body_b, normal_imp, phi, point, normal, feet, dof_start, lin, ang, x_start, active_gap):
    """Per foot: in contact (a touching, loaded contact: normal impulse > 0, phi <= active_gap)
    and the largest tangential speed |v - (v.n) n| over those contacts (NaN: none), v the relative
    velocity of the contact point P on the foot and on the other body, each body's point velocity
    lin + ang x (P - x_start) (zero for fixed bodies)."""
    L = feet.size
    contact = np.zeros(L, dtype=np.bool_)
    slip = np.full(L, np.nan)
    v = np.empty(3)
    for c in range(phi.size):
        if not (normal_imp[c] > 0 and phi[c] <= active_gap):
            continue
        for side in range(2):
            body = body_a[c] if side == 0 else body_b[c]
            other = body_b[c] if side == 0 else body_a[c]
            for l in range(L):
                if feet[l] != body:
                    continue
                for i in range(3):
                    v[i] = 0.0
                for bb, sg in ((body, 1.0), (other, -1.0)):
                    if bb >= 0 and dof_start[bb] >= 0:
                        r0, r1, r2 = point[c, 0] - x_start[bb, 0], point[c, 1] - x_start[bb, 1], point[c, 2] - x_start[bb, 2]
                        w = ang[bb]
                        v[0] += sg * (lin[bb, 0] + w[1] * r2 - w[2] * r1)
                        v[1] += sg * (lin[bb, 1] + w[2] * r0 - w[0] * r2)
                        v[2] += sg * (lin[bb, 2] + w[0] * r1 - w[1] * r0)
                vn = v[0] * normal[c, 0] + v[1] * normal[c, 1] + v[2] * normal[c, 2]
                t0, t1, t2 = v[0] - vn * normal[c, 0], v[1] - vn * normal[c, 1], v[2] - vn * normal[c, 2]
                vt = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
                contact[l] = True
                if not (slip[l] >= vt):          # fmax: NaN (no contact yet) gives way
                    slip[l] = vt
    return contact, slip


def attach(scene, controller) -> None:
    """Make ``controller`` part of ``scene``: ``scene.controllers`` (passed by ``contactlab simulate``
    to ``Simulator(..., controllers=...)``) and ``scene.summary(sim, trajectory)`` -> ``{"locomotion":
    {...}}`` (merged into the JSON of ``simulate --json``)."""
    scene.controllers = [controller]
    scene.summary = lambda sim, trajectory=None: {"locomotion": controller.summary(sim, trajectory)}


def check_setup(setup: LegSetup) -> None:
    """ParamError unless the joint names, feet and nominal targets match the kinematics' shape."""
    L, k = setup.kinematics.shape
    if np.shape(setup.joints) != (L, k) or len(setup.feet) != L or np.shape(setup.nominal) != (L, 3):
        raise ParamError(f"LegSetup: joints must be ({L}, {k}) names, feet {L} names, nominal ({L}, 3)")
