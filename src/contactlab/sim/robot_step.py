"""The legged robots' step with its Python cut to a constant few calls (:class:`FusedRobotStep`).

Planned by :meth:`contactlab.sim.Simulator.step` where the stages are the no-slip model's in joint
coordinates (:class:`~contactlab.sim.tree_stages.CompiledTreeNoSlipStages`), the simulator's own
CollisionWorld detects every pair in its compiled routines, and every controller attached has a
compiled form (``compiled_form(sim)``: :class:`~contactlab.control.locomotion.LegController`'s
:class:`~contactlab.control.locomotion.LegKernel`). A step is then

1. the controller's kernel on the state (``LegKernel.call``: the same kernel as its ``fn(sim)``
   call: gait, inverse kinematics, PD torques, its log row), then the joint torques' generalized
   force and the motor state (:func:`contactlab.sim.noslip_kernels.call_inputs`, as the stages'
   ``build``), the torques handed over as an array, not by name through ``Data.joint_torque``;
   the state before the step copied once (the deferred system's and the plausibility check's);
2. the detection (``CollisionWorld.detect_matched``'s compiled call,
   :func:`contactlab.collision.boxes.narrow_phase.detect_and_match_packed`, on its arguments);
3. the physics step, :meth:`CompiledTreeNoSlipStages.step_call` (:func:`contactlab.sim.tree_kernels.tree_noslip_step`)
   with the arguments the stages' ``build`` makes (:meth:`FusedRobotStep._physics`, the one place
   this module calls it);
4. the step's bookkeeping (``Data``, the deferred system, the Solution, the StepRecord), the test
   of the turn correction (:func:`contactlab.sim.turns.turn_bound`) and the plausibility check
   (:func:`contactlab.sim.faults.free_plausibility`: the call's v_free split per body and the verdict in
   one call). (Each kernel is called from here rather than linked
   into one: a kernel linked into another is compiled again inside it, a cost at every cold start.)

The same kernels in the same order on the same arrays as the stages (sim/stages.py ``Stages``,
sim/noslip_stages.py): the same bits. Where the stages would do something else, the step is theirs
from that point, with the torques put into ``Data.joint_torque`` as the controller's ``fn(sim)``
would have: force-limited motors (their active set), a step the call declines (motors, a failed
reduction, no certificate: the maximal stages take it), a deep contact's position correction and a
fast turn's correction (sim/turns.py). The fused step is not planned where the state holds joint
torques set before the step (``Data.joint_torque`` not empty), where the world's detection is not
CollisionWorld's own (a subclass's or an instance's ``detect_matched``), or where
``Simulator.fused`` is False.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..collision import CollisionWorld
from ..collision.boxes.narrow_phase import detect_and_match_packed
from ..collision.contacts import PackedContactSet, previous_packed
from ..models.common import StepResult
from . import noslip_kernels as NK
from . import turns
from .faults import checked_step, fault_statics, fault_words, free_plausibility, motor_targets, step_depth
from .noslip_stages import EMPTY, NO_MOTORS, NO_VALUES, noslip_solution
from .recorder import StepRecord
from .stages import Stages, StepWork
from .tree_stages import CompiledTreeNoSlipStages

#: free_plausibility's gravity where the step's own free velocity is split (not read)
_NO_GRAVITY = np.zeros(0)


_NO_FLOATS, _NO_INTS = np.zeros(0), np.zeros(0, dtype=np.int64)


class FusedRobotStep:
    """One step of a legged robot as a constant few compiled calls (module docstring)."""

    #: whether Simulator.step may run this step outside its BLAS limit: no (its controllers' compiled
    #: forms aside, its paths to the stages do not open the limit themselves)
    blas_free = False

    @classmethod
    def plan(cls, sim, stages) -> "FusedRobotStep | None":
        """The fused step for ``sim`` with its planned ``stages``, or None where the stages take the steps."""
        if not getattr(sim, "fused", True) or type(stages) is not CompiledTreeNoSlipStages or stages.options is None:
            return None
        world, m = sim.world, sim.model
        if not (isinstance(world, CollisionWorld) and world.geoms and not m.pair_mu
                and type(world).detect is CollisionWorld.detect
                and getattr(world.detect_matched, "__func__", None) is CollisionWorld.detect_matched):
            return None
        kernels = []
        for fn in sim.controllers:
            form = getattr(fn, "compiled_form", None)
            if form is None:
                return None
            kernels.append(form(sim))
        if len(kernels) != 1:       # one controller kernel per call (a robot's controller)
            return None
        return cls(sim, stages, kernels[0])

    def __init__(self, sim, stages, kernel):
        self.sim, self.stages, self.kernel = sim, stages, kernel
        self.controllers = list(sim.controllers)
        m = sim.model
        P = stages.packed
        self.joint_args = (P.kind, P.a, P.b, P.anchor_b, P.axis_a, m.dof_start)
        self.motor_args = (m.ndof, P.motor_target, P.motor_max_force)
        self.kind, self.radius, self.jointed, self.mass = fault_statics(sim)
        world, data = sim.world, sim.data
        if world._shape_args is None:       # the detection's constant arguments, gathered at its first call
            world.detect_matched(data, float(m.settings.margin), sim.h, None, None, 2.0 * m.settings.margin + 1e-3)
        self.shapes = world._shape_args

    def valid(self, sim) -> bool:
        """Whether this plan is still the simulator's (the same stages and controllers)."""
        ctrl = sim.controllers
        return self.stages is sim.stages and len(ctrl) == len(self.controllers) and all(
            a is b for a, b in zip(ctrl, self.controllers))

    def rollout(self):
        """This plan's steps K at a time (:class:`~contactlab.sim.robot_rollout.RobotRollout`, made on first use)."""
        rollout = getattr(self, "_rollout", None)
        if rollout is None:
            from .robot_rollout import RobotRollout
            rollout = self._rollout = RobotRollout(self)
        return rollout

    def step(self) -> StepRecord:
        sim, stages, kernel = self.sim, self.stages, self.kernel
        data, model = sim.data, sim.model
        h = sim.h
        # 1, 2. the controller, the call's joint inputs, the state before the step, the detection
        have_prev, params, buffers, n = kernel.arguments()
        prev, res = data.contacts, data.result
        prev_floats, prev_ints, prev_normal = previous_packed(prev, None if res is None else res.normal)
        # the controller's previous contacts: those of a step with a result (LegController._contacts)
        ctrl_floats, ctrl_ints = (prev_floats, prev_ints) if res is not None else (_NO_FLOATS, _NO_INTS)
        st_mt = data.motor_target
        st_mt, st_mf = (NO_VALUES, NO_VALUES) if st_mt is None or not st_mt.size else (st_mt, data.motor_max_force)
        world = sim.world
        margin = float(model.settings.margin)
        world.margin = margin
        kernel.call(data.time, h, data.position, data.quaternion, data.linear_velocity, data.angular_velocity,
                    ctrl_floats, ctrl_ints, prev_normal, have_prev, params, buffers, n)
        # the stages' build: joint_torque_forces and motor_state in one compiled call
        f, mt, mf, limited = NK.call_inputs(kernel.joints, kernel.tau, *self.joint_args, data.position,
                                            data.quaternion, *self.motor_args, st_mt, st_mf)
        t_start = time.perf_counter()
        shapes = self.shapes        # CollisionWorld.detect_matched's compiled call
        left, floats, ints = detect_and_match_packed(
            model.dof_start, data.linear_velocity, data.angular_velocity, world.body_radius, h, data.quaternion,
            data.position, *shapes[0], margin, *shapes[1], prev_floats, prev_ints, prev_normal,
            2.0 * model.settings.margin + 1e-3, *shapes[2])
        t_detect = time.perf_counter()
        kernel.done(n)
        sim.has_actuation = True        # as Simulator.set_joint_torques
        x0, q0, v0, w0 = (data.position.copy(), data.quaternion.copy(), data.linear_velocity.copy(),
                          data.angular_velocity.copy())
        before = (x0, v0, w0, float(getattr(sim, "_fault_joint_error", 0.0)))
        stages = sim.plan()
        if stages is not self.stages:       # (the controllers' kernels change no configuration)
            return self._staged(before)
        if left:        # a pair for coal: the stages' detection
            w = stages.detect()
        else:
            world._sweep, world._reach = self.shapes[2]
            contacts = PackedContactSet(floats, ints)
            w = StepWork(contacts, contacts.match, contacts.count, h, t_start, t_detect)
        if limited:     # force-limited motors: the stages' build takes their active set
            return self._staged(before, w)
        # 3. the physics step
        st = model.settings
        o = sim.model_options
        position_stage = st.contact_stabilization == "position"
        zeta = float(st.contact_zeta if st.contact_stabilization == "velocity" else 0.0)
        gyro = bool(st.gyroscopic)
        contact = stages.contact_inputs(w.contacts)
        w.compiled = True
        w.call = (f, contact, zeta, float(st.slop), mt, mf, float(st.zeta), float(o.active_gap), float(o.tol),
                  float(float(st.cfm) + o.cfm), position_stage, float(st.contact_zeta), bool(st.project_joints), gyro,
                  (x0, q0, v0, w0, f.copy(), mt, mf))
        w.t0 = time.perf_counter()
        out = self._physics(w)
        w.t_solved = time.perf_counter()
        (outcome, trivial, case, code, z, wv, numbers, counts, nonbasic, positive, row0, e0, gain, ke, pe, pen,
         joint_error, v_next, joint, tangent, modes, nl, kept, d, v_free, t_solve) = out
        if outcome == NK.DECLINED:      # nothing changed: the general stages take the step
            return self._staged(before, w)
        nl = int(nl)
        w.n = nl + w.nc
        w.sol = sol = noslip_solution(trivial, case, code, z, wv, numbers, counts, nonbasic, positive, row0, int(d))
        sol.time_s = t_solve
        w.e0, w.contact_gain = e0, gain
        before_call = w.call[-1]
        if outcome == NK.DEEP:          # a deep contact: the stages' integration and records
            w.call = (outcome, ke, pe, pen, joint_error, v_next, joint, tangent, modes, nl, z, before_call,
                      position_stage, float(st.contact_zeta), bool(st.project_joints), gyro, f, contact, zeta,
                      float(st.slop), float(st.zeta), int(kept), v_free, NO_MOTORS)
            return self._finish(before, w)
        # 4. the bookkeeping of CompiledNoSlipStages.certify and integrate
        w.primary_ok, w.rescued, w.t_solve = True, False, t_solve
        result = StepResult(v_next=v_next, normal=z[nl:], tangent=tangent, joint=joint, limit=z[:nl], motor=EMPTY,
                            modes=modes, info={"kept_rows": int(kept), "motor_trials": 1, "motor_consistent": True,
                                               "motor_saturated": True})
        data.warm["z"] = z.copy()
        state = stages.state
        state.defer(w.contacts, h, stages.system_terms, (before_call, gyro, w.contacts, zeta, float(st.slop),
                                                         float(st.zeta), h))
        state.free_velocity = v_free
        w.joint_error = joint_error
        data.time += h
        data.steps += 1
        data.joint_torque.clear()
        data.contacts, data.result = w.contacts, result
        state.solution = sol
        w.result = result
        w.call = (ke, pe, pen)
        w.t_integrated = time.perf_counter()
        if position_stage and w.nc:     # a fast turn's correction (sim/turns.py): the stages' correct
            nc = w.nc
            fires = turns.fires(sim, w.contacts) if left else turns.turn_bound(
                ints[:nc], ints[nc:2 * nc], data.angular_velocity, world.body_radius, h) > turns.TURN_TRIGGER * st.slop
            if fires:
                stages.correct(w)
                return self._recorded(before, w)
        state.turn_overlap = 0.0
        e1 = ke + pe
        state.timing = {"detect": w.t_detect - w.t_start, "build": 0.0, "solve": w.t_solved - w.t0,
                        "integrate": w.t_integrated - w.t_solved, "record": 0.0}
        rec = StepRecord(time=data.time, contacts=w.nc, lcp_size=w.n, iterations=int(sol.iterations),
                         pivots=int(sol.pivots), residual=float(sol.residual), success=True, status=sol.status.name,
                         rescued=False, kinetic_energy=ke, energy=e1, energy_gain=e1 - w.e0,
                         contact_energy_gain=gain, max_penetration=pen, solve_time=t_solve, joint_error=joint_error)
        # the plausibility check (faults.checked_step) on the call's own free velocities
        depth = step_depth(sim, rec)
        verdict = free_plausibility(model.dof_start, self.kind, 2, self.radius, x0, v0, w0, v_free, True, _NO_GRAVITY,
                                    data.position, data.linear_velocity, data.angular_velocity, h, depth,
                                    float(st.slop), before[3], self.jointed, motor_targets(data), True, float(gain),
                                    float(ke), float(e1), self.mass)
        rec.fault = fault_words(sim, verdict, depth, before[3], rec) if verdict[0] else ""
        rec.plausible = not rec.fault
        sim._fault_joint_error = float(joint_error) if math.isfinite(joint_error) else 0.0
        return rec

    def _physics(self, w: StepWork) -> tuple:
        """The physics step: :meth:`CompiledTreeNoSlipStages.step_call` on the inputs ``w.call``
        (as :meth:`CompiledNoSlipStages.solve` calls it)."""
        f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage, position_zeta, project, gyro, _ = w.call
        return self.stages.step_call(w, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage,
                                     position_zeta, project, gyro)

    def _give_torques(self) -> None:
        """The controller's torques into ``Data.joint_torque``, as its ``fn(sim)`` sets them."""
        self.sim.set_joint_torques(self.kernel.names, self.kernel.tau)

    def _staged(self, before, w: StepWork | None = None) -> StepRecord:
        """The step from detection (``w`` None), or from build on ``w``'s contacts, by the stages
        (Simulator._advance), the controllers having run."""
        sim = self.sim
        self._give_torques()
        if w is None:
            return _checked(sim, before, sim._advance)
        stages = sim.stages
        w.compiled = False
        Stages.build(stages, w)
        Stages.solve(stages, w)
        return self._finish(before, w)

    def _finish(self, before, w: StepWork) -> StepRecord:
        """certify, integrate, correct by the stages, then :meth:`_recorded`."""
        stages = self.sim.stages
        stages.certify(w)
        stages.integrate(w)
        stages.correct(w)
        return self._recorded(before, w)

    def _recorded(self, before, w: StepWork) -> StepRecord:
        """The stages' record and the plausibility check of :func:`contactlab.sim.faults.checked_step`."""
        sim = self.sim
        return _checked(sim, before, lambda: sim.stages.record(w))


def _checked(sim, before, take) -> StepRecord:
    """:func:`contactlab.sim.faults.checked_step` from the state ``before`` taken ahead of the step."""
    return checked_step(sim, take, before)
