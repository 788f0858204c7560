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
from .gait import Gait, foot_offsets_into, stance_into
from .ik import (SerialLegs, ThreeJointLegs, _position_jacobian_into, _serial_frames_into, ik_work, serial_inverse_into,
                 three_joint_inverse_into)
from .pd import JointPD, JointReader, _angles_rates_into, pd_torque_into


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
        self._gait_pd = None            # (gait, pd, gait arguments, gains) of self.gait and self.pd
        L, k = self.setup.kinematics.shape
        self._log = {"time": np.empty(0), "base": np.empty((0, 3)), "rpy": np.empty((0, 3)),
                     "stance": np.empty((0, L), bool), "contact": np.empty((0, L), bool),
                     "slip": np.empty((0, L)), "torque": np.empty((0, L * k))}
        self._rows = 0                  # filled rows of the log arrays

    # -- the callback ---------------------------------------------------------------------------------
    def __call__(self, sim) -> None:
        """Record the state after the previous step (:meth:`_record`), then set this step's joint
        torques (module docstring), all in one compiled call (:func:`_control_step`), the inverse
        kinematics included (closed form, or damped least squares from the last answer)."""
        if self._reader is None:
            self._start(sim)
        data = sim.data
        gait, gains = self._gait_and_gains()
        settle, ramp = float(self.settle), float(self.ramp)
        n = self._next_row()
        _control_step(data.time, sim.h, data.position, data.quaternion, data.linear_velocity, data.angular_velocity,
                      *self._contacts(sim), *self._bodies, *self._legs, self._q_ref, self._q_prev is not None,
                      *IK_OPTIONS, settle, ramp, *gait, float(self.foot_kp), float(self.foot_kd),
                      bool(self.weight_ff), *gains, self._tau, self._x_step, *self._log.values(), n)
        self._rows = n + 1
        self._q_prev = self._q_ref.copy()
        sim.set_joint_torques(self._joint_names, self._tau)

    # -- the compiled form (sim/robot_step.py) ---------------------------------------------------------
    def compiled_form(self, sim) -> "LegKernel":
        """This controller as the fused robot step takes it (:class:`LegKernel`: the arguments of
        :func:`control_kernel`, the torques' joint indices): the same computation as :meth:`__call__`,
        its torques handed to the step as an array instead of by name."""
        if self._reader is None:
            self._start(sim)
        return LegKernel(self, sim)

    def _start(self, sim) -> None:
        """First call: the model's indices and the controller's buffers (this step's torques, zero
        before the first; the IK answer; the body positions at the start of the coming step)."""
        s, model = self.setup, sim.model
        from ..models.built import ACTIVE_GAP
        self._reader = reader = JointReader(model, [n for leg in s.joints for n in leg])
        self._joint_names = tuple(reader.names)
        self._base = model.index(s.base)
        self._q_offset = np.ascontiguousarray(s.q_offset, dtype=np.float64)
        self._nominal = np.ascontiguousarray(s.nominal, dtype=np.float64)
        L, k = s.kinematics.shape
        a = s.analytic
        self._analytic = a is not None
        # analytic IK's arrays (placeholders of the same types without one: damped least squares here)
        ik = ((a.hips, a.side, a.signs, float(a.l1), float(a.l2)) if a is not None else
              (np.zeros((L, 3)), np.zeros(L), np.zeros((L, 3)), 1.0, 1.0))
        kin = s.kinematics
        # every array C-contiguous (an analytic IK's side is a strided view): one signature of
        # _control_step for this call, the compiled robot step's and the rollout's (sim/robot_rollout.py)
        contiguous = lambda *xs: tuple(np.ascontiguousarray(x) if isinstance(x, np.ndarray) else x for x in xs)
        self._bodies = contiguous(float(ACTIVE_GAP), self._base, np.array([model.index(f) for f in s.feet]),
                                  model.dof_start)
        self._legs = (*contiguous(reader.a, reader.b, reader.axis_a, reader.q_rel0_conj, self._q_offset,
                                  self._nominal, kin.anchors, kin.axes, kin.feet, float(s.mass), model.gravity, *ik,
                                  self._analytic), control_work(L, k))
        self._tau, self._q_ref = np.zeros((L, k)), np.zeros((L, k))
        self._x_step = sim.data.position.copy()

    def _gait_and_gains(self) -> tuple:
        """The kernels' arguments of ``self.gait`` (period, duty, offsets, stance_length, step_height)
        and of ``self.pd`` (kp, kd, tau_max as (legs, k) arrays), rebuilt when either is replaced."""
        c = self._gait_pd
        if c is None or c[0] is not self.gait or c[1] is not self.pd:
            g = self.gait
            c = self._gait_pd = (g, self.pd, (float(g.period), float(g.duty), g._offsets, float(g.stance_length),
                                              float(g.step_height)), self.pd.gains(self.setup.kinematics.shape))
        return c[2], c[3]

    def _contacts(self, sim) -> tuple:
        """The previous step's contacts for :func:`_foot_slip`: bodies a and b, normal impulse, phi,
        point, normal (empty arrays when there were none)."""
        cs, res = sim.data.contacts, sim.data.result
        if cs is not None and res is not None and cs.count:
            return cs.body_a, cs.body_b, np.asarray(res.normal, dtype=np.float64), cs.phi, cs.point, cs.normal
        return _NO_CONTACTS

    # -- logging ----------------------------------------------------------------------------------------
    @property
    def log(self) -> dict:
        """The records so far (views of the filled rows): the keys and shapes of :meth:`arrays`."""
        n = self._rows
        return {k: v[:n] for k, v in self._log.items()}

    def _next_row(self) -> int:
        """The index of the next log row, the log arrays doubled in length when they are full."""
        n = self._rows
        if n == self._log["time"].shape[0]:
            self._log = {k: np.concatenate([v, np.empty((max(n, 1024),) + v.shape[1:], v.dtype)])
                         for k, v in self._log.items()}
        return n

    def _record(self, sim) -> None:
        """Log the state after the previous step with the torques applied in it (:func:`_record_row`)."""
        if self._reader is None:
            self._start(sim)
        data = sim.data
        n = self._next_row()
        _record_row(data.time, data.position, data.quaternion, data.linear_velocity, data.angular_velocity,
                    *self._contacts(sim), *self._bodies, float(self.settle), *self._gait_and_gains()[0][:3],
                    self._tau, self._x_step, *self._log.values(), n)
        self._rows = n + 1

    def arrays(self) -> dict:
        """The log as arrays: time (n,), base (n, 3), rpy (n, 3), stance/contact (n, legs) bool,
        slip (n, legs) (NaN: foot not in contact), torque (n, joints)."""
        return {k: v.copy() for k, v in self.log.items()}

    def summary(self, sim=None, traj=None) -> dict:
        """``distance_m`` (base x travelled), ``mean_speed_m_s`` (over the gait's time),
        ``fell`` (base height off nominal by > fall_height share or |roll|/|pitch| > fall_angle_deg
        at any step), ``max_foot_slip_m_s`` (largest tangential speed of a loaded foot contact)."""
        if sim is not None and self._reader is not None and self.log["time"][-1] != sim.data.time:
            self._record(sim)                                # the state after the last step
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


class LegKernel:
    """A :class:`LegController` as one compiled call per step (:func:`control_kernel`), for the fused
    robot step (:mod:`contactlab.sim.robot_step`): ``static`` the model's and legs' arrays (fixed
    while the model is), :meth:`arguments` the per-step ones (the gait's and gains' arguments,
    rebuilt when ``gait`` or ``pd`` is replaced; the log buffers, grown as :meth:`LegController._next_row`
    grows them), :meth:`done` the bookkeeping after the call. ``joints``: the torques' joint indices
    (``Simulator.set_joint_torques``' lookup, in the order of ``tau``'s entries)."""

    def __init__(self, controller: LegController, sim):
        self.controller = c = controller
        self.joints = np.array([sim._torque_index(name) for name in c._joint_names], dtype=np.int64)
        self.names = c._joint_names
        self.tau = c._tau.reshape(-1)      # a view: the torques the call writes
        self.static = (*c._bodies, *c._legs)
        self._params = None

    def arguments(self) -> tuple:
        """(have_prev, params, logs, n) of this step's :func:`control_kernel` call."""
        c = self.controller
        gait, gains = c._gait_and_gains()
        p = self._params
        if p is None or p[0] is not gait or p[1] is not gains or p[2] != (c.settle, c.ramp, c.foot_kp, c.foot_kd,
                                                                          c.weight_ff):
            knobs = (c.settle, c.ramp, c.foot_kp, c.foot_kd, c.weight_ff)
            p = self._params = (gait, gains, knobs, (*IK_OPTIONS, float(c.settle), float(c.ramp), *gait,
                                                     float(c.foot_kp), float(c.foot_kd), bool(c.weight_ff), *gains))
        n = c._next_row()
        return c._q_prev is not None, p[3], (c._tau, c._x_step, *c._log.values()), n

    def call(self, time, h, position, quaternion, lin, ang, floats, ints, normal_impulse, have_prev, params, buffers,
             n) -> None:
        """The controller's compiled call (:func:`_control_step`, as :meth:`LegController.__call__` makes
        it) on the previous step's contacts packed (``floats``, ``ints``: collision/boxes/packed.py)
        with their normal impulses."""
        k = ints.size // 5
        contacts = (ints[:k], ints[k:2 * k], normal_impulse, floats[12 * k:13 * k], floats[:3 * k].reshape(k, 3),
                    floats[3 * k:6 * k].reshape(k, 3)) if k else _NO_CONTACTS
        _control_step(time, h, position, quaternion, lin, ang, *contacts, *self.static, self.controller._q_ref,
                      have_prev, *params, *buffers, n)

    def done(self, n: int) -> None:
        """After the call: the log row written, the IK answer kept as the next start."""
        c = self.controller
        c._rows = n + 1
        if c._q_prev is None:       # (read as "an answer to start from": the call keeps it in _q_ref)
            c._q_prev = c._q_ref.copy()


#: the damped least-squares IK's (tolerance, iterations, damping) each step, from the last answer
#: (:meth:`SerialLegs.inverse`'s tolerance and damping; ten iterations, the answer moves little a step)
IK_OPTIONS = (1e-10, 10, 1e-6)

#: the contact arrays of :func:`_foot_slip` when the previous step had no contacts
_NO_CONTACTS = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty((0, 3)),
                np.empty((0, 3)))


def control_work(L: int, k: int) -> tuple:
    """The work arrays of :func:`_control_step` for ``L`` legs of ``k`` joints, made once per controller
    (each call fills them: no array is allocated per step): joint angles and rates (L k,), q (L, k),
    foot targets, their values a step ahead and their rates (L, 3), the legs' frames, feet and
    Jacobians (:func:`~contactlab.control.ik._serial_frames_into`), the feed-forward torques and
    rate references (L, k), 64 floats of scratch, the stance and contact feet (L,) bool, the feet's
    slip (L,), the closed-form IK's reachable flags (L,) bool, the damped least squares' work
    (:func:`~contactlab.control.ik.ik_work`)."""
    return (np.empty(L * k), np.empty(L * k), np.empty((L, k)), np.empty((L, 3)), np.empty((L, 3)), np.empty((L, 3)),
            np.empty((L, k, 3)), np.empty((L, k, 3)), np.empty((L, 3)), np.empty((L, 3, k)), np.empty((L, k)),
            np.empty((L, k)), np.empty(64), np.empty(L, dtype=np.bool_), np.empty(L, dtype=np.bool_), np.empty(L),
            np.empty(L, dtype=np.bool_), ik_work(L, k))


@jit
def _control_step(time, h, position, quaternion, lin, ang, body_a, body_b, normal_impulse, phi, point, normal,
                  active_gap, base, feet, dof_start, joint_a, joint_b, joint_axis, q_rel0_conj, q_offset, nominal,
                  anchors, axes, foot_points, mass, gravity, hips, side, signs, l1, l2, analytic, work, q_ref, have_prev,
                  ik_tol, ik_iterations, ik_damping, settle, ramp,
                  period, duty, offsets, stance_length, step_height, foot_kp, foot_kd, weight_ff, kp, kd, tau_max,
                  tau, x_step, log_time, log_base, log_rpy, log_stance, log_contact, log_slip, log_torque, n):
    """One call of :class:`LegController` (drumwright §VII-B, scenario-specs §2.2), compiled whole:
    log row ``n`` (:func:`_record_row`: the state after the previous step, its torques ``tau``);
    ``x_step`` <- the body positions (the start of the coming step); the joint angles and rates
    (:func:`~contactlab.control.pd._angles_rates`, plus ``q_offset``); the foot targets and their
    rates (:func:`_foot_references`); into ``q_ref`` the IK: with ``analytic`` the closed form
    (:func:`~contactlab.control.ik.three_joint_inverse`), else damped least squares on the serial
    legs (:func:`~contactlab.control.ik.serial_inverse`, ``ik_tol``, ``ik_iterations``,
    ``ik_damping``) from the last answer ``q_ref`` when ``have_prev``, else from the joint angles;
    the stance feet (the gait's, all feet while settling); ``tau`` <- :func:`_leg_torques`. Each
    routine writes into ``work`` (:func:`control_work`), not into arrays of its own."""
    (angle, rate, q, target, ahead, xd_ref, w_out, c_out, p, J, tau_ff, qd_ref, scratch, stance, contact, slip,
     reachable, ik) = work
    _record_row_into(time, position, quaternion, lin, ang, body_a, body_b, normal_impulse, phi, point, normal,
                     active_gap, base, feet, dof_start, settle, period, duty, offsets, tau, x_step, log_time, log_base,
                     log_rpy, log_stance, log_contact, log_slip, log_torque, n, stance, contact, slip, scratch)
    x_step[:] = position
    L, k = q_offset.shape
    _angles_rates_into(joint_a, joint_b, joint_axis, q_rel0_conj, quaternion, ang, angle, rate, scratch)
    for l in range(L):
        for j in range(k):
            q[l, j] = angle[l * k + j] + q_offset[l, j]
    qd = rate.reshape((L, k))
    scale = _foot_references_into(time, h, settle, ramp, period, duty, offsets, stance_length, step_height, nominal,
                                  target, ahead, xd_ref)
    if analytic:
        three_joint_inverse_into(hips, side, signs, l1, l2, target, q_ref, reachable)
    else:
        if not have_prev:
            q_ref[:] = q
        serial_inverse_into(anchors, axes, foot_points, target, q_ref, ik_tol, ik_iterations, ik_damping, ik)
    if not scale > 0:
        stance[:] = True
    _leg_torques_into(anchors, axes, foot_points, q, qd, q_ref, target, xd_ref, foot_kp, foot_kd, weight_ff, stance,
                      mass, gravity, quaternion[base], kp, kd, tau_max, w_out, c_out, p, J, tau_ff, qd_ref, scratch, tau)


@jit
def _foot_references(time, h, settle, ramp, period, duty, offsets, stance_length, step_height, nominal):
    """(scale, target, xd_ref) at ``time``: the gait's time t = time - settle; ``scale`` 0 while
    settling, then t / ramp up to 1 (stride and step height grow over the ramp); the foot targets
    nominal + :func:`~contactlab.control.gait.foot_offsets_kernel` at max(t, 0) (legs, 3) in the
    base frame; their rates (target(t + h) - target(t)) / h (zero while settling)."""
    target, ahead, xd_ref = np.empty(nominal.shape), np.empty(nominal.shape), np.empty(nominal.shape)
    scale = _foot_references_into(time, h, settle, ramp, period, duty, offsets, stance_length, step_height, nominal,
                                  target, ahead, xd_ref)
    return scale, target, xd_ref


@jit
def _foot_references_into(time, h, settle, ramp, period, duty, offsets, stance_length, step_height, nominal, target,
                          ahead, xd_ref):
    """:func:`_foot_references` into ``target`` and ``xd_ref`` (legs, 3), ``ahead`` the offsets a step
    ahead; returns the scale."""
    t = time - settle
    scale = 0.0 if t < 0 else min(1.0, t / ramp) if ramp > 0 else 1.0
    L = nominal.shape[0]
    foot_offsets_into(max(t, 0.0), period, duty, offsets, stance_length * scale, step_height, scale, target)
    for f in range(L):
        for i in range(3):
            target[f, i] = nominal[f, i] + target[f, i]
    if scale > 0:
        foot_offsets_into(max(t + h, 0.0), period, duty, offsets, stance_length * scale, step_height, scale, ahead)
        for f in range(L):
            for i in range(3):
                xd_ref[f, i] = (nominal[f, i] + ahead[f, i] - target[f, i]) / h
    else:
        for f in range(L):
            for i in range(3):
                xd_ref[f, i] = 0.0 * target[f, i]
    return scale


@jit
def _record_row(time, position, quaternion, lin, ang, body_a, body_b, normal_impulse, phi, point, normal, active_gap,
                base, feet, dof_start, settle, period, duty, offsets, tau, x_step, log_time, log_base, log_rpy,
                log_stance, log_contact, log_slip, log_torque, n):
    """Log row ``n``, the state after the previous step: time, base position and attitude
    (:func:`_rpy`), the gait's stance feet at max(time - settle, 0), the feet in contact (a
    touching, loaded contact of that step: :func:`_foot_slip`, friction acts at touching contacts
    only) and their slip speed (the velocity of the contact point of the step's geometry, its
    start ``x_step``, after the step: what the model's tangential rows S v+, T v+ see), and the
    torques ``tau`` applied in it. Returns the stance feet."""
    L = feet.size
    stance = np.empty(L, dtype=np.bool_)
    _record_row_into(time, position, quaternion, lin, ang, body_a, body_b, normal_impulse, phi, point, normal,
                     active_gap, base, feet, dof_start, settle, period, duty, offsets, tau, x_step, log_time, log_base,
                     log_rpy, log_stance, log_contact, log_slip, log_torque, n, stance, np.empty(L, dtype=np.bool_),
                     np.empty(L), np.empty(64))
    return stance


@jit
def _record_row_into(time, position, quaternion, lin, ang, body_a, body_b, normal_impulse, phi, point, normal,
                     active_gap, base, feet, dof_start, settle, period, duty, offsets, tau, x_step, log_time, log_base,
                     log_rpy, log_stance, log_contact, log_slip, log_torque, n, stance, contact, slip, scratch):
    """:func:`_record_row` with the stance feet into ``stance``, the contact feet and slip into
    ``contact`` and ``slip`` (L,), 12 floats of ``scratch`` for the slip's velocity and R of the base."""
    stance_into(max(time - settle, 0.0), period, duty, offsets, stance)
    _foot_slip_into(body_a, body_b, normal_impulse, phi, point, normal, feet, dof_start, lin, ang, x_step, active_gap,
                    contact, slip, scratch[0:3])
    log_time[n] = time
    log_base[n] = position[base]
    _rpy_into(quaternion[base], scratch[3:12].reshape((3, 3)), log_rpy[n])
    log_stance[n] = stance
    log_contact[n] = contact
    log_slip[n] = slip
    log_torque[n] = tau.ravel()


@jit
def _leg_torques(anchors, axes, feet, q, qd, q_ref, target, xd_ref, foot_kp, foot_kd, weight_ff, stance, mass,
                 gravity, q_base, kp, kd, tau_max):
    """The joint torques of one control step (module docstring), legs (L, k) at once: foot positions
    x and Jacobians J at q (:class:`SerialLegs`' product of exponentials, base frame); the foot
    force F = foot_kp (target - x) + foot_kd (xd_ref - J qd) mapped by J'; with ``weight_ff``,
    stance feet add -J' R' (m g / n_stance) (R the base orientation ``q_base``); the joint-rate
    reference qd_ref = pinv(J) xd_ref; then the clipped PD :func:`pd_torque` with tau_ff = J' F."""
    L, k = q.shape
    tau = np.empty((L, k))
    _leg_torques_into(anchors, axes, feet, q, qd, q_ref, target, xd_ref, foot_kp, foot_kd, weight_ff, stance, mass,
                      gravity, q_base, kp, kd, tau_max, np.empty((L, k, 3)), np.empty((L, k, 3)), np.empty((L, 3)),
                      np.empty((L, 3, k)), np.empty((L, k)), np.empty((L, k)), np.empty(64), tau)
    return tau


@jit
def _leg_torques_into(anchors, axes, feet, q, qd, q_ref, target, xd_ref, foot_kp, foot_kd, weight_ff, stance, mass,
                      gravity, q_base, kp, kd, tau_max, w, c, x, J, tau_ff, qd_ref, scratch, tau):
    """:func:`_leg_torques` into ``tau`` (L, k): the frames, feet and Jacobians into ``w``, ``c``,
    ``x``, ``J``, the feed-forward torques and rate references into ``tau_ff``, ``qd_ref``; 48 floats
    of ``scratch``."""
    _serial_frames_into(anchors, axes, feet, q, w, c, x, scratch[0:33])
    _position_jacobian_into(w, c, x, J)
    L, k = q.shape
    R, push, F = scratch[33:42].reshape((3, 3)), scratch[42:45], scratch[45:48]
    push[:] = 0.0                                   # the ground push on a stance foot, base frame
    if weight_ff:
        quat_matrix(q_base, R)
        n = max(1, np.sum(stance))
        for i in range(3):
            push[i] = (R[0, i] * (-mass * gravity[0]) + R[1, i] * (-mass * gravity[1]) +
                       R[2, i] * (-mass * gravity[2])) / n
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
        _rate_reference_into(J[l], xd_ref[l], qd_ref[l])
    pd_torque_into(kp, kd, tau_max, q, qd, q_ref, qd_ref, tau_ff, tau)


@jit
def _rate_reference(J, xd):
    """pinv(J) xd: the joint rates of least norm (least squares) for the foot velocity xd. A square
    J that is far from singular (|det J| > 1e-9 ||J||_F^3, i.e. not a straight knee) by its
    adjugate, J^-1 = adj(J) / det J (the cofactors the determinant test already forms): pinv's answer
    to round-off without a factorisation; otherwise pinv."""
    out = np.empty(J.shape[1])
    _rate_reference_into(J, xd, out)
    return out


@jit
def _rate_reference_into(J, xd, out):
    """:func:`_rate_reference` into ``out`` (k,): the adjugate's answer written in place, pinv's
    (the rare near-singular or non-square J) copied."""
    if J.shape[0] == J.shape[1] == 3:
        c00 = J[1, 1] * J[2, 2] - J[1, 2] * J[2, 1]
        c01 = J[1, 2] * J[2, 0] - J[1, 0] * J[2, 2]
        c02 = J[1, 0] * J[2, 1] - J[1, 1] * J[2, 0]
        det = J[0, 0] * c00 + J[0, 1] * c01 + J[0, 2] * c02
        scale = 0.0
        for i in range(3):
            for j in range(3):
                scale += J[i, j] * J[i, j]
        if abs(det) > 1e-9 * scale ** 1.5:
            c10 = J[0, 2] * J[2, 1] - J[0, 1] * J[2, 2]
            c11 = J[0, 0] * J[2, 2] - J[0, 2] * J[2, 0]
            c12 = J[0, 1] * J[2, 0] - J[0, 0] * J[2, 1]
            c20 = J[0, 1] * J[1, 2] - J[0, 2] * J[1, 1]
            c21 = J[0, 2] * J[1, 0] - J[0, 0] * J[1, 2]
            c22 = J[0, 0] * J[1, 1] - J[0, 1] * J[1, 0]
            out[0] = (c00 * xd[0] + c10 * xd[1] + c20 * xd[2]) / det
            out[1] = (c01 * xd[0] + c11 * xd[1] + c21 * xd[2]) / det
            out[2] = (c02 * xd[0] + c12 * xd[1] + c22 * xd[2]) / det
            return
    out[:] = np.linalg.pinv(J) @ xd


@jit
def _rpy(q):
    """(roll, pitch, yaw) of the unit quaternion q: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    out = np.empty(3)
    _rpy_into(q, np.empty((3, 3)), out)
    return out


@jit
def _rpy_into(q, R, out):
    """:func:`_rpy` into ``out`` (3,), R (3, 3) its work."""
    quat_matrix(q, R)
    out[0] = np.arctan2(R[2, 1], R[2, 2])
    out[1] = np.arcsin(min(max(-R[2, 0], -1.0), 1.0))
    out[2] = np.arctan2(R[1, 0], R[0, 0])


@jit
def _foot_slip(body_a, body_b, normal_imp, phi, point, normal, feet, dof_start, lin, ang, x_start, active_gap):
    """Per foot: in contact (a touching, loaded contact: normal impulse > 0, phi <= active_gap)
    and the largest tangential speed |v - (v.n) n| over those contacts (NaN: none), v the relative
    velocity of the contact point P on the foot and on the other body, each body's point velocity
    lin + ang x (P - x_start) (zero for fixed bodies)."""
    L = feet.size
    contact, slip = np.empty(L, dtype=np.bool_), np.empty(L)
    _foot_slip_into(body_a, body_b, normal_imp, phi, point, normal, feet, dof_start, lin, ang, x_start, active_gap,
                    contact, slip, np.empty(3))
    return contact, slip


@jit
def _foot_slip_into(body_a, body_b, normal_imp, phi, point, normal, feet, dof_start, lin, ang, x_start, active_gap,
                    contact, slip, v):
    """:func:`_foot_slip` into ``contact`` and ``slip`` (feet,), ``v`` (3,) its work."""
    L = feet.size
    contact[:] = False
    slip[:] = np.nan
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
