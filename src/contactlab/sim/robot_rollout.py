"""The legged robots' steps run K at a time in one compiled call (:func:`robot_rollout`,
:class:`RobotRollout`), for :meth:`contactlab.sim.Simulator.run`.

:class:`~contactlab.sim.robot_step.FusedRobotStep` takes one step as a constant few compiled calls;
what is left between them is the crossing (each array handed to a compiled call and back is boxed
and freed) and the Python of the step's objects. Here the same kernels, in the same order, are
linked into one loop over steps that keeps the state in the simulator's own arrays and writes each
step's record fields into preallocated arrays; the records (:class:`~contactlab.sim.recorder.StepRecord`)
are built from them after the call. Per step:

1. the controller's kernel (:func:`contactlab.control.locomotion._control_step`, as
   ``LegKernel.call``) on the previous step's contacts (:func:`contactlab.collision.boxes.packed.unpack_contacts`)
   and their normal impulses, then :func:`contactlab.sim.noslip_kernels.call_inputs`;
2. the detection, :func:`contactlab.collision.boxes.narrow_phase.detect_and_match_packed`;
3. the physics, :func:`contactlab.sim.tree_kernels.tree_noslip_step` (called from
   :func:`_physics` only);
4. the record's numbers as ``FusedRobotStep.step`` forms them (the Solution's counts and residual,
   energies, energy gain), the turn test (:func:`contactlab.sim.turns.turn_bound`) and the
   plausibility check (:func:`contactlab.sim.faults.plausibility` on the call's free velocities,
   :func:`contactlab.sim.faults.split_velocity`).

The loop stops at the first step that the fused step would hand to the stages (force-limited motors,
a pair for coal, a declined call, a deep contact's position correction, a fast turn's correction) or
whose check finds a fault (its words are Python's): that step's state, and the controller's IK
start ``q_ref``, torques and start poses (the next log row's), are put back as they were before it, and :class:`RobotRollout` returns; the
simulator then takes that step by :meth:`FusedRobotStep.step` (the same computation from the same
state: the same bits) and resumes. After a call that took all its steps, the
simulator's per-step objects (``data.result``, ``last_system``, ``last_problem``, ``last_solution``,
``timing``) are formed from its last step's answer and the state before it, as ``FusedRobotStep.step``
forms them (:meth:`RobotRollout._keep_last`).

Linking the kernels into one compiles each of them again inside it (numba compiles a callee into
its caller); the cost is paid once (cache=True) and ``contactlab warmup`` pays it ahead.

A call runs no Python, so a Ctrl-C (or SIGTERM) waits for its end: :class:`RobotRollout` sizes each
call from the seconds per step of the one before, to end within :data:`CALL_SECONDS` of wall time
(at most :data:`MAX_CHUNK` steps). The interrupt then surfaces as the call returns, before its steps
are handed to the simulator; :meth:`RobotRollout.run` puts back the state, the controller's and the
engine's as they were before the call, so the simulator stands at its last recorded step.
"""
from __future__ import annotations

import math
import time as _time

import numpy as np

from ..collision.boxes.narrow_phase import detect_and_match_packed
from ..collision.boxes.packed import unpack_contacts
from ..collision.contacts import PackedContactSet, previous_packed
from ..control.locomotion import _control_step
from ..kernels._jit import jit, jit_inline
from ..kernels.clock import perf_counter
from ..models.common import StepResult
from ..solvers.pivoting import PIVOTING_STATUS
from . import noslip_kernels as NK
from .faults import fault_statics, motor_targets, plausibility, split_velocity
from .noslip_stages import EMPTY, NO_VALUES, noslip_solution
from .recorder import StepRecord
from .tree_kernels import tree_noslip_step
from .turns import TURN_TRIGGER, turn_bound

#: :func:`robot_rollout`'s codes: every step taken, or the step it stopped at goes to the stages
ALL_TAKEN, HANDED_OVER = 0, 1

#: the most steps one call takes
MAX_CHUNK = 256

#: the wall seconds a call aims at: it runs no Python, so a Ctrl-C waits for its end; each call's
#: steps are this over the seconds per step of the call before (:func:`next_chunk`). A call's own cost
#: outside the loop (its arguments, the records) is some tens of microseconds (``Simulator.run`` calls
#: again after a call that took all its steps; only a step a call handed over goes to the single
#: step): a tenth of a second keeps it below a percent where a step takes 0.4 ms of wall time
#: (a robot's 0.08 ms on a machine loaded five times over), and leaves a machine's own pace alone
#: (MAX_CHUNK steps in less)
CALL_SECONDS = 0.1

#: the steps of the first call, before any call has been timed (a robot whose step takes 3 ms
#: answers a Ctrl-C within CALL_SECONDS from the first call on)
FIRST_CHUNK = 32

#: after a call whose first step was handed over, the calls declined before the next try (a scene
#: whose every step the stages take, a sunk start's deep contacts, would otherwise run each step twice)
RETRY_AFTER = 8

#: columns of the float record array (:func:`robot_rollout`'s ``rec_f``)
_F_TIME, _F_RESIDUAL, _F_KE, _F_ENERGY, _F_GAIN_E, _F_GAIN_C, _F_PEN, _F_SOLVE, _F_JOINT = range(9)
#: columns of the int record array: contacts, lcp size, iterations, pivots, status (-1: trivial)
_I_CONTACTS, _I_SIZE, _I_ITERATIONS, _I_PIVOTS, _I_STATUS = range(5)


@jit_inline
def _physics(physics, quaternion, position, lin, ang, f, floats, ints, mt, h):
    """:func:`contactlab.sim.tree_kernels.tree_noslip_step` on the rollout's bundled constant
    arguments (``physics``: ``CompiledTreeNoSlipStages.call_constants``), the one call of it here; inlined
    into :func:`robot_rollout` before typing, so that it is no compile unit of its own (each unit
    links, optimises and emits again the machine code of every kernel it calls)."""
    (tree, joint_of, body_of_block, nq, live, dof_start, mass, inertia, inv_inertia, gravity, gyro, zeta, slop,
     joints, zeta_j, blk_cols, blk_ptr, gap, tol, cfm, max_it, threshold, passive, position_stage,
     position_zeta) = physics
    return tree_noslip_step(tree, joint_of, body_of_block, nq, live, dof_start, mass, inertia, inv_inertia, gravity,
                            gyro, quaternion, position, lin, ang, f, floats, ints, zeta, slop, joints, mt, h, zeta_j,
                            blk_cols, blk_ptr, gap, tol, cfm, max_it, threshold, passive, position_stage,
                            position_zeta)


@jit
def robot_rollout(steps, time, h, state, control, inputs, detect, physics, checks, prev, rec_f, rec_i, pos_out,
                  quat_out):
    """Up to ``steps`` fused robot steps (module docstring) on ``state`` = (position, quaternion,
    linear velocity, angular velocity), changed in place.

    ``control``: (the controller kernel's static arguments, ``q_ref``, have_prev, its per-step
    parameters, its buffers (torques, x_step, log arrays), its first log row, whether the first
    step's controller sees the previous contacts); ``inputs``: call_inputs' (torque joints, torques,
    packed joint kind, a, b, anchor_b, axis_a, ndof, packed motor targets and limits, the state's);
    ``detect``: (body radii, the detection's shape arguments in three groups, margin, matching
    distance, sweep and reach outputs); ``physics``: :func:`_physics`'; ``checks``: (body kinds,
    radii, jointed, motor targets, moving mass, slop, the turn test on); ``prev``: the previous
    step's packed contacts, their normal impulses and its joint error. Row k of ``rec_f`` /
    ``rec_i`` (and of ``pos_out`` / ``quat_out`` where they have rows) gets step k's record.

    Returns (code, steps taken, time, the last step's contacts (floats, ints), its normal impulses,
    z, v+, tangential and joint impulses, modes, limit rows, kept rows, joint error)."""
    position, quaternion, lin, ang = state
    static, q_ref, have_prev, params, buffers, row, ctrl_prev = control
    idx, tau, jkind, ja, jb, anchor_b, axis_a, ndof, packed_target, packed_max_force, st_mt, st_mf = inputs
    radius_d, shapes0, margin, shapes1, near, sweep_out, reach_out = detect
    kind, radius, jointed, motors, mass, slop, turn_test = checks
    prev_floats, prev_ints, prev_normal, joint_error = prev
    dof_start = physics[5]
    nb = position.shape[0]
    # the state, IK start, torques and start poses before the step, in buffers of the call
    x0, q0, v0, w0 = np.empty_like(position), np.empty_like(quaternion), np.empty_like(lin), np.empty_like(ang)
    q_ref0, tau0, x_step0 = np.empty_like(q_ref), np.empty_like(buffers[0]), np.empty_like(buffers[1])
    # the last step's answer and inputs, from which RobotRollout.run forms the Solution and the deferred
    # system as FusedRobotStep.step does: (trivial, case, code, positive, row0, d); (numbers, e0, the
    # seconds of detection, the physics call and its solve)
    sol_i = np.zeros(6, dtype=np.int64)
    sol_f = np.zeros(10)
    w_last = np.zeros(0)
    counts_last = np.zeros(2, dtype=np.int64)
    nonbasic_last = np.zeros(0, dtype=np.int64)
    v_free_last = np.zeros(0)
    f_last = np.zeros(0)
    mt_last = np.zeros(0)
    mf_last = np.zeros(0)
    z_last = np.zeros(0)
    v_last = np.zeros(0)
    tangent_last = np.zeros((0, 2))
    joint_last = np.zeros(0)
    modes_last = np.zeros(0, dtype=np.int8)
    nl_last = 0
    kept_last = 0
    for k in range(steps):
        last = k == steps - 1
        x0[:] = position
        q0[:] = quaternion
        v0[:] = lin
        w0[:] = ang
        q_ref0[:] = q_ref
        tau0[:] = buffers[0]            # the torques and start poses of the step before: its log row
        x_step0[:] = buffers[1]
        # 1. the controller on the previous step's contacts (none before a step with a result)
        if k > 0 or ctrl_prev:
            cf, ci, cn = prev_floats, prev_ints, prev_normal
        else:
            cf, ci, cn = np.empty(0), np.empty(0, dtype=np.int64), np.empty(0)
        point, normal, _t1, _t2, phi, _mu, _g, ba, bb, _sa, _sb, _m = unpack_contacts(cf, ci)
        start = have_prev or k > 0      # (numba: no control flow inside a call with starred arguments)
        n_row = row + k
        _control_step(time, h, position, quaternion, lin, ang, ba, bb, cn, phi, point, normal, *static, q_ref, start,
                      *params, *buffers, n_row)
        f, mt, mf, limited = NK.call_inputs(idx, tau, jkind, ja, jb, anchor_b, axis_a, dof_start, position,
                                            quaternion, ndof, packed_target, packed_max_force, st_mt, st_mf)
        # 2. the detection
        t_start = perf_counter() if last else 0.0
        left, floats, ints = detect_and_match_packed(
            dof_start, lin, ang, radius_d, h, quaternion, position, *shapes0, margin, *shapes1, prev_floats,
            prev_ints, prev_normal, near, sweep_out, reach_out)
        t_detect = perf_counter() if last else 0.0
        handed = True
        while True:     # (one pass: each break hands the step over)
            if left or limited:
                break
            # 3. the physics (its force f is changed in place: the last step's kept before)
            if last:
                f_last = f.copy()
            (outcome, trivial, case, code, z, wv, numbers, counts, nonbasic, positive, row0, e0, gain, ke, pe, pen,
             je, v_next, joint, tangent, modes, nl, kept, d, v_free, t_solve) = _physics(
                physics, quaternion, position, lin, ang, f, floats, ints, mt, h)
            t_solved = perf_counter() if last else 0.0
            if outcome != NK.DONE:
                break
            nc = ints.shape[0] // 5
            if turn_test and nc > 0 and turn_bound(ints[:nc], ints[nc:2 * nc], ang, radius_d, h) > \
                    TURN_TRIGGER * slop:
                break
            # 4. the plausibility check, then the record
            e1 = ke + pe
            depth = max(pen, 0.0) if math.isfinite(pen) else 0.0
            vf, wf = split_velocity(dof_start, v_free, nb)
            # (int64 and bool, not numba's literal types of 2 and True: the signature the stages' and
            # the fused step's Python calls compiled, not a second compile of the check for literals)
            verdict = plausibility(dof_start, kind, np.int64(2), radius, x0, v0, w0, vf, wf, position, lin, ang, h,
                                   depth, slop, joint_error, jointed, motors, np.bool_(True), gain, ke, e1, mass)
            if verdict[0] != 0:
                break
            handed = False
            time += h
            rec_f[k, _F_TIME] = time
            rec_f[k, _F_RESIDUAL] = numbers[0]
            rec_f[k, _F_KE] = ke
            rec_f[k, _F_ENERGY] = e1
            rec_f[k, _F_GAIN_E] = e1 - e0
            rec_f[k, _F_GAIN_C] = gain
            rec_f[k, _F_PEN] = pen
            rec_f[k, _F_SOLVE] = t_solve
            rec_f[k, _F_JOINT] = je
            rec_i[k, _I_CONTACTS] = nc
            rec_i[k, _I_SIZE] = nl + nc
            rec_i[k, _I_ITERATIONS] = 0 if trivial else counts[0]
            rec_i[k, _I_PIVOTS] = 0 if trivial else counts[1]
            rec_i[k, _I_STATUS] = -1 if trivial else code
            if pos_out.shape[0]:
                pos_out[k] = position
                quat_out[k] = quaternion
            joint_error = je if math.isfinite(je) else 0.0
            prev_floats, prev_ints = floats, ints
            prev_normal = np.ascontiguousarray(z[nl:])
            z_last, v_last, tangent_last, joint_last, modes_last, nl_last, kept_last = (z, v_next, tangent, joint,
                                                                                         modes, nl, kept)
            if last:
                sol_i[0], sol_i[1], sol_i[2], sol_i[3], sol_i[4], sol_i[5] = trivial, case, code, positive, row0, d
                for i in range(6):
                    sol_f[i] = numbers[i]
                sol_f[6], sol_f[7], sol_f[8], sol_f[9] = e0, t_detect - t_start, t_solved - t_detect, t_solve
                w_last, counts_last, nonbasic_last, v_free_last, mt_last, mf_last = wv, counts, nonbasic, v_free, mt, mf
            break
        if handed:      # the step as it was before it: the simulator's stages take it
            position[:] = x0
            quaternion[:] = q0
            lin[:] = v0
            ang[:] = w0
            q_ref[:] = q_ref0
            buffers[0][:] = tau0
            buffers[1][:] = x_step0
            return (HANDED_OVER, k, time, prev_floats, prev_ints, prev_normal, z_last, v_last, tangent_last,
                    joint_last, modes_last, nl_last, kept_last, joint_error,
                    (x0, q0, v0, w0, f_last, mt_last, mf_last, sol_i, sol_f, w_last, counts_last, nonbasic_last,
                     v_free_last))
    return (ALL_TAKEN, steps, time, prev_floats, prev_ints, prev_normal, z_last, v_last, tangent_last, joint_last,
            modes_last, nl_last, kept_last, joint_error,
            (x0, q0, v0, w0, f_last, mt_last, mf_last, sol_i, sol_f, w_last, counts_last, nonbasic_last, v_free_last))


def next_chunk(steps: int, seconds: float) -> int:
    """The steps of the next call after one that ran ``steps`` steps (those taken, and one handed
    over) in ``seconds`` of wall time: as many as fit in :data:`CALL_SECONDS` at that pace, from 1 to
    :data:`MAX_CHUNK`."""
    if not seconds > 0.0:
        return MAX_CHUNK
    return max(1, int(min(MAX_CHUNK, max(steps, 1) * CALL_SECONDS / seconds)))


class RobotRollout:
    """:func:`robot_rollout` for a :class:`~contactlab.sim.robot_step.FusedRobotStep`: its constant
    arguments gathered once, the state handed over and back around each call (module docstring)."""

    def __init__(self, fused):
        self.fused = fused
        self.rest = 0       # steps left to the fused step after a call that took none
        self.chunk = FIRST_CHUNK        # the steps of the next call (next_chunk)

    def arguments(self):
        """The call's bundled arguments from the simulator's state now."""
        fused = self.fused
        sim, stages, kernel = fused.sim, fused.stages, fused.kernel
        data, model = sim.data, sim.model
        st, o = model.settings, sim.model_options
        have_prev, params, buffers, n = kernel.arguments()
        c = kernel.controller
        prev, res = data.contacts, data.result
        prev_floats, prev_ints, prev_normal = previous_packed(prev, None if res is None else res.normal)
        st_mt = data.motor_target
        st_mt, st_mf = (NO_VALUES, NO_VALUES) if st_mt is None or not st_mt.size else (st_mt, data.motor_max_force)
        margin = float(st.margin)
        world = sim.world
        world.margin = margin
        shapes = fused.shapes
        position_stage = st.contact_stabilization == "position"
        physics = stages.call_constants(bool(st.gyroscopic),
                                        float(st.contact_zeta if st.contact_stabilization == "velocity" else 0.0),
                                        float(st.slop), float(st.zeta), float(o.active_gap), float(o.tol),
                                        float(float(st.cfm) + o.cfm), position_stage, float(st.contact_zeta))
        kind, radius, jointed, mass = fused.kind, fused.radius, fused.jointed, fused.mass
        return dict(
            state=(data.position, data.quaternion, data.linear_velocity, data.angular_velocity),
            control=(kernel.static, c._q_ref, have_prev, params, buffers, n, res is not None),
            inputs=(kernel.joints, kernel.tau, *fused.joint_args[:5], *fused.motor_args, st_mt, st_mf),
            detect=(world.body_radius, shapes[0], margin, shapes[1], 2.0 * margin + 1e-3, *shapes[2]),
            physics=physics,
            checks=(kind, radius, jointed, motor_targets(data), mass, float(st.slop), position_stage),
            prev=(prev_floats, prev_ints, prev_normal, float(getattr(sim, "_fault_joint_error", 0.0))))

    def run(self, steps: int, record_poses: bool) -> tuple[list, list, list, bool]:
        """Up to ``steps`` steps (at most :attr:`chunk`, module docstring): (records, positions,
        orientations, whether the step after them goes to the fused step). The simulator's state, the
        controller's log and the previous contacts are left as the fused steps would have left them;
        an exception (a Ctrl-C) before this returns leaves them as they were before it
        (:meth:`_restore`)."""
        if self.rest:       # the last call took no step: the next few go to the fused step
            self.rest -= 1
            return [], [], [], True
        kept = self._saved()
        try:
            return self._run(min(int(steps), self.chunk), record_poses)
        except BaseException:
            self._restore(kept)
            raise

    def _saved(self) -> tuple:
        """What a call and its bookkeeping change: copies of the arrays changed in place (the state,
        the controller's IK start, torques and start poses, the detection's sweep and reach), and of
        the attributes of the objects whose attributes they replace."""
        fused = self.fused
        sim, c = fused.sim, fused.kernel.controller
        data = sim.data
        arrays = (data.position, data.quaternion, data.linear_velocity, data.angular_velocity, c._q_ref, c._tau,
                  c._x_step, *fused.shapes[2])
        objects = (self, sim, data, c, sim.world, sim.step_state)
        return (arrays, [a.copy() for a in arrays], objects, [dict(vars(o)) for o in objects], dict(data.warm),
                dict(data.joint_torque))

    def _restore(self, kept) -> None:
        """Everything :meth:`_saved` kept, put back."""
        arrays, copies, objects, attributes, warm, torques = kept
        for a, b in zip(arrays, copies):
            a[...] = b
        for o, d in zip(objects, attributes):
            now = vars(o)
            now.clear()
            now.update(d)
        data = self.fused.sim.data
        data.warm.clear()
        data.warm.update(warm)
        data.joint_torque.clear()
        data.joint_torque.update(torques)

    def _run(self, steps: int, record_poses: bool) -> tuple[list, list, list, bool]:
        """:meth:`run`'s call of ``steps`` steps and its bookkeeping."""
        fused = self.fused
        sim, kernel = fused.sim, fused.kernel
        data, model = sim.data, sim.model
        c = kernel.controller
        need = c._rows + steps          # the log's rows for the steps, grown as _next_row grows it
        while c._log["time"].shape[0] < need:
            c._rows, rows = c._log["time"].shape[0], c._rows
            c._next_row()
            c._rows = rows
        a = self.arguments()
        rec_f = np.empty((steps, 9))
        rec_i = np.empty((steps, 5), dtype=np.int64)
        nb = model.nb
        pos_out = np.empty((steps if record_poses else 0, nb, 3))
        quat_out = np.empty((steps if record_poses else 0, nb, 4))
        t0 = _time.perf_counter()
        (code, taken, t, floats, ints, normal, z, v_next, tangent, joint, modes, nl, kept, joint_error,
         last) = robot_rollout(
            steps, float(data.time), float(sim.h), a["state"], a["control"], a["inputs"], a["detect"], a["physics"],
            a["checks"], a["prev"], rec_f, rec_i, pos_out, quat_out)
        self.chunk = next_chunk(taken + (code == HANDED_OVER), _time.perf_counter() - t0)
        sim.world._sweep, sim.world._reach = fused.shapes[2]
        if not taken:
            self.rest = RETRY_AFTER
            return [], [], [], True
        # the state after the last step taken, as FusedRobotStep.step leaves it
        kernel.done(c._rows + taken - 1)
        sim.has_actuation = True
        data.time = t
        data.steps += taken
        data.joint_torque.clear()
        data.warm["z"] = z.copy()
        data.contacts = contacts = PackedContactSet(floats, ints)
        data.result = StepResult(v_next=v_next, normal=z[nl:], tangent=tangent, joint=joint, limit=z[:nl],
                                 motor=EMPTY, modes=modes, info={"kept_rows": int(kept), "motor_trials": 1,
                                                                 "motor_consistent": True, "motor_saturated": True})
        sim._fault_joint_error = float(joint_error)
        if code == ALL_TAKEN:
            self._keep_last(a, contacts, z, last)
        return (_records(rec_f[:taken], rec_i[:taken]), list(pos_out[:taken]), list(quat_out[:taken]),
                code == HANDED_OVER)

    def _keep_last(self, a, contacts, z, last) -> None:
        """The last step's objects (``Simulator.last_system``, ``last_problem``, ``last_solution``,
        ``timing``) as ``FusedRobotStep.step`` leaves them: its Solution (``noslip_solution`` of the
        call's answer), its system deferred to the terms of the state before it, its free velocity."""
        fused = self.fused
        sim, stages = fused.sim, fused.stages
        st = sim.model.settings
        x0, q0, v0, w0, f, mt, mf, sol_i, sol_f, w, counts, nonbasic, v_free = last
        trivial, case, code, positive, row0, d = sol_i.tolist()
        numbers = tuple(sol_f[:6].tolist())
        sol = noslip_solution(bool(trivial), case, code, z, w, numbers, counts, nonbasic, positive, row0, d)
        sol.time_s = float(sol_f[9])
        gyro, zeta = a["physics"][10], a["physics"][11]
        state = stages.state
        before = (x0, q0, v0, w0, f, mt, mf)        # (the call's own buffers: a new call makes new ones)
        state.defer(contacts, sim.h, stages.system_terms, (before, gyro, contacts, zeta, float(st.slop),
                                                           float(st.zeta), sim.h))
        state.free_velocity = v_free
        state.solution = sol
        state.turn_overlap = 0.0
        state.timing = {"detect": float(sol_f[7]), "build": 0.0, "solve": float(sol_f[8]), "integrate": 0.0,
                        "record": 0.0}


def _records(rec_f, rec_i) -> list:
    """The StepRecords of the rows of :func:`robot_rollout`'s record arrays: ``FusedRobotStep.step``'s
    fields (a certified, plausible step: success, not rescued, no fault; the values already the types
    and the Status name its constructor would make), each made by :meth:`StepRecord.solved` (its fields
    stored one by one in the dataclass' order, without the constructor's calls)."""
    names = {-1: "TRIVIAL", **{int(k): v.name for k, v in PIVOTING_STATUS.items()}}
    solved, out = StepRecord.solved, []
    append = out.append
    for (t, residual, ke, e1, gain_e, gain_c, pen, solve, je), (nc, size, iterations, pivots, status) in zip(
            rec_f.tolist(), rec_i.tolist()):
        append(solved(t, nc, size, iterations, residual, ke, e1, gain_e, gain_c, pen, solve, je, pivots, names[status]))
    return out
