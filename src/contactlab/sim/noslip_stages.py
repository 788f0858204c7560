"""The no-slip model's compiled stages (:class:`contactlab.sim.stages.Stages` for the interface).

:class:`CompiledNoSlipStages`: a contact model declaring ``COMPILED_STEP = "noslip-metric"``
(models/noslip.py: its problem is the M-metric reduction of kernels/metric_chain.py) solved by a
method whose options are ppm's, in certified mode (no fixed budget, reuse or islands option), on a
scene whose moving bodies are free 6-dof bodies joined by joints (a legged robot, a hand): the
step after detection is one compiled call (:func:`contactlab.sim.noslip_kernels.noslip_step`: the
general stages' kernels in their order, the same bits). The step's ConstraintSystem, problem and
Solution's certification are those of the general path; the system and problem are assembled
only when read (``Simulator.last_system``, ``last_problem``) from the state before the step. A step
with force-limited velocity motors (a gripper's actuators, drumwright Sec. VII-A) is the motor
call's (:func:`contactlab.sim.noslip_kernels.noslip_motor_step`: models/noslip.py ``build``'s active
set over the motors' states, then the solve, in maximal coordinates for every plan). A step the
calls decline (a failed reduction, an answer that does not certify, an infinite force limit) is
taken by the general stages on the same contacts, fallbacks and errors included.
"""
from __future__ import annotations

import time

import numpy as np

from ..kernels.tolerances import CERTIFY
from ..mechanics import terms as _T
from ..mechanics.model import KIND_KINEMATIC
from ..mechanics.system import (assemble_system, block_pattern, contact_arrays, joint_groups, live_bodies,
                                packed_joints)
from ..models.common import StepResult
from ..solution import Solution, Status
from ..solvers.pivoting import PIVOTING_STATUS, PPMOptions, ppm_info
from . import noslip_kernels as NK
from .stages import CompiledCall, Stages, StepState, StepWork

#: what a model's ``COMPILED_STEP`` names for :class:`CompiledNoSlipStages` (:mod:`contactlab.models.noslip`)
COMPILED_FORM = "noslip-metric"

#: a read-only empty array: the stages' and the fused step's empty StepResult fields
EMPTY = np.zeros(0)
EMPTY.flags.writeable = False
#: no torques, no state motors: the compiled call_inputs' empty arguments (writable, as the state's
#: arrays are, so one compiled version serves both)
_NO_INDEX, NO_VALUES = np.zeros(0, dtype=np.int64), np.zeros(0)
#: a step without motors' StepResult motor fields (impulses, trials, consistent, saturated)
NO_MOTORS = (EMPTY, 1, True, True)
#: the motor trials' certification: ``solve(problem, "ppm")`` with its defaults, max(certify, ppm's tol)
TRIAL_THRESHOLD = max(CERTIFY, float(PPMOptions().tol or 0.0))


def motion(data) -> tuple:
    """The state's arrays as the compiled jointed steps take them, one argument (sim/noslip_kernels.py
    ``MOTION``; written in place by the call)."""
    return data.quaternion, data.position, data.linear_velocity, data.angular_velocity, data.planar_reference


def jointed_free_bodies(model) -> bool:
    """Whether every moving body of ``model`` is a free 6-dof body (no planar or kinematic body; the
    mass blocks cover every coordinate) and there are joints: the scenes the compiled no-slip step takes."""
    live = live_bodies(model)
    return bool(model.joints) and live.size > 0 and 6 * live.size == model.ndof and not np.any(model.planar) \
        and not np.any(model.kind == KIND_KINEMATIC)


class CompiledJointCall(CompiledCall):
    """What the compiled steps of jointed free-body scenes share (:class:`CompiledNoSlipStages`,
    :class:`~contactlab.sim.st_stages.CompiledSTStages`,
    :class:`~contactlab.sim.box_joint_stages.CompiledSchurRowStages`), mixed in before their general
    stages: the model's frozen layout the call takes (:meth:`joint_layout`), the joints' torques and
    motors as it takes them (:meth:`torque_inputs`), the certification it made as solve() does
    (``certify``), and the system assembled when read from the state before the step
    (:meth:`system_terms`)."""

    def joint_layout(self, m) -> None:
        """The call's arrays of the frozen model ``m`` (a new model is planned anew): the live bodies,
        M^-1's block pattern, gravity, the packed joints, no torques set yet, the model's arrays as one
        argument (``body``: sim/noslip_kernels.py ``BODY``), and the kinematic bodies'
        blocks (``kin``: the Stewart-Trinkle and box-friction calls eliminate them from their problems,
        kernels/joint_rows.py ``pin_rows``; the no-slip call takes no kinematic body)."""
        self.kin = (m.dof_start[(m.kind == KIND_KINEMATIC) & (m.dof_start >= 0)] // 6).astype(np.int64)
        self.live = live_bodies(m)
        self.blk_cols, self.blk_ptr = block_pattern(self.live.size)
        self.gravity = np.asarray(m.gravity, dtype=np.float64)
        self.packed = packed_joints(m)
        self.joint_args = self.packed.kernel_args       # the packed joints' arrays as the calls take them
        self.torque_keys, self.torque_idx = None, _NO_INDEX     # the joints the torques were last set on
        # the model's fixed arrays as the calls take them, one argument (noslip_kernels.BODY)
        self.body = (self.live, m.dof_start, m.kind, m.mass, m.inertia, m.inv_inertia, self.gravity, self.blk_cols,
                     self.blk_ptr, self.passive)

    def torque_inputs(self, data) -> tuple:
        """(joint indices, torques, motor targets, motor force limits) of ``data`` as the compiled call
        takes them: the joints' torques set this step (Simulator.set_joint_torque; their indices kept
        while the same joints get them), empty arrays where there are none."""
        jt = data.joint_torque      # joint index -> torque
        if jt:
            keys = tuple(jt)
            if keys != self.torque_keys:
                self.torque_keys, self.torque_idx = keys, np.array(keys, dtype=np.int64)
            idx, tau = self.torque_idx, np.array(tuple(jt.values()), dtype=np.float64)
        else:
            idx, tau = _NO_INDEX, NO_VALUES
        mt = data.motor_target
        return (idx, tau) + ((NO_VALUES, NO_VALUES) if mt is None or not mt.size else (mt, data.motor_max_force))

    # -- certify: the call certified its answer as solve() does -----------------------------------
    def certify(self, w: StepWork) -> None:
        if not w.compiled:
            return super().certify(w)
        w.primary_ok, w.rescued = True, False
        w.t_solve = w.sol.time_s

    def system_terms(self, before, gyro, contacts, zeta, slop, zeta_j, h):
        """:func:`contactlab.mechanics.system.assemble_system`'s arguments for the step this plan took,
        from the state before it (``before``: positions, orientations, velocities, the joint torques'
        force, the motor targets and limits) and its ``contacts``: the same compiled terms as the
        call's, for the system assembled when read (StepState.defer)."""
        m = self.sim.model
        pos, quat, lin, ang, f0, mt, mf = before
        f = f0.copy()
        a, b, point, normal, t1, t2, phi = contact_arrays(contacts)
        body, v_free, terms, rows = _T.system_terms(
            self.live, m.dof_start, quat, pos, m.mass, m.inertia, m.inv_inertia, self.gravity, lin, ang, gyro, f, True,
            a, b, point, normal, t1, t2, phi, zeta, slop, self.joint_args, mt, mf,
            self.sim.data.planar_reference, h, zeta_j)
        return f, body, terms if phi.shape[0] else None, v_free, joint_groups(m, self.packed, rows)


class CompiledNoSlipStages(CompiledJointCall, Stages):
    """The general stages with the step after detection in one compiled call (module docstring)."""

    compiled = True

    @classmethod
    def plan(cls, sim, state: StepState):
        model = sim.contact_model
        if not (sim.compiled and getattr(model, "COMPILED_STEP", None) == COMPILED_FORM and sim.reuse is None
                and not sim.islands and sim.iterations is None and jointed_free_bodies(sim.model)):
            return None
        stages = cls(sim, state)
        return stages if stages.options is not None else None

    def __init__(self, sim, state: StepState):
        super().__init__(sim, state)
        self.options = None
        spec = self.spec
        if spec is None or spec.options is not PPMOptions:
            return
        try:
            opts = spec.make_options({k: v for k, v in sim.solver_options.items() if k != "certify"})
        except Exception:       # a bad option: the general stages raise it at solve()
            return
        if set(sim.solver_options) - {"tol", "max_iterations", "certify"}:
            return
        self.options = opts
        certify = float(sim.solver_options.get("certify", CERTIFY))
        tol = float(opts.tol or 0.0)
        self.threshold = tol if tol > certify else certify      # solve()'s max(certify, tol)
        self.max_iterations = opts.max_iterations
        self.joint_layout(sim.model)

    # -- build: the compiled call's inputs --------------------------------------------------------
    def build(self, w: StepWork) -> None:
        sim = self.sim
        data = sim.data
        P, m = self.packed, sim.model
        idx, tau, st_mt, st_mf = self.torque_inputs(data)
        # joint_torque_forces and motor_state in one compiled call
        f, mt, mf, limited = NK.call_inputs(idx, tau, P.kind, P.a, P.b, P.anchor_b, P.axis_a, m.dof_start,
                                            data.position, data.quaternion, m.ndof, P.motor_target,
                                            P.motor_max_force, st_mt, st_mf)
        w.compiled = True
        st = m.settings     # read each step: the Model is frozen, its Settings object is not
        o = sim.model_options
        zeta = float(st.contact_zeta if st.contact_stabilization == "velocity" else 0.0)
        before = (data.position.copy(), data.quaternion.copy(), data.linear_velocity.copy(),
                  data.angular_velocity.copy(), f.copy(), mt, mf)
        cfm = float(float(st.cfm) + o.cfm)
        # force-limited motors: their active set (models/noslip.py build) in the maximal-coordinate call
        # (noslip_kernels.noslip_motor_step), whose contacts are the plain arrays; else this plan's call
        contact = contact_arrays(w.contacts) if limited else self.contact_inputs(w.contacts)
        w.call = (f, contact, zeta, float(st.slop), mt, mf, float(st.zeta), float(o.active_gap), float(o.tol), cfm,
                  st.contact_stabilization == "position", float(st.contact_zeta), bool(st.project_joints),
                  bool(st.gyroscopic), before, bool(limited))

    def contact_inputs(self, contacts) -> tuple:
        """The contacts as :meth:`step_call` takes them: (a, b, point, normal, t1, t2, phi)."""
        return contact_arrays(contacts)

    # -- solve: build to the joint projection, compiled ---------------------------------------------
    def solve(self, w: StepWork) -> None:
        if not w.compiled:
            return super().solve(w)
        f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage, position_zeta, project, gyro, before, \
            limited = w.call
        w.t0 = time.perf_counter()
        if limited:
            out = self.motor_call(w, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage,
                                  position_zeta, project, gyro)
            motors = out[26:]
        else:
            out = self.step_call(w, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage,
                                 position_zeta, project, gyro)
            motors = NO_MOTORS
        w.t_solved = time.perf_counter()
        (outcome, trivial, case, code, z, wv, numbers, counts, nonbasic, positive, row0, e0, gain, ke, pe, pen,
         joint_error, v_next, joint, tangent, modes, nl, kept, d, v_free, t_solve) = out[:26]
        if outcome == NK.DECLINED:      # nothing changed: the general stages take the step
            w.compiled = False
            super().build(w)
            return super().solve(w)
        n = w.n = int(nl) + w.nc
        w.sol = noslip_solution(trivial, case, code, z, wv, numbers, counts, nonbasic, positive, row0, int(d))
        w.sol.time_s = t_solve      # the solver's own seconds inside the call (StepRecord.solve_time)
        w.e0, w.contact_gain = e0, gain
        w.call = (outcome, ke, pe, pen, joint_error, v_next, joint, tangent, modes, int(nl), z, before,
                  position_stage, position_zeta, project, gyro, f, contact, zeta, slop, zeta_j, int(kept), v_free,
                  motors)

    def step_call(self, w: StepWork, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage,
                  position_zeta, project, gyro) -> tuple:
        """The compiled step on the simulator's state (:func:`contactlab.sim.noslip_kernels.noslip_step`)."""
        return NK.noslip_step(*self.maximal_arguments(w, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm,
                                                      position_stage, position_zeta, project, gyro))

    def motor_call(self, w: StepWork, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage,
                   position_zeta, project, gyro) -> tuple:
        """The compiled step with force-limited motors on the simulator's state, in maximal coordinates
        for every plan (:func:`contactlab.sim.noslip_kernels.noslip_motor_step`: the general path's
        active set, whose steps are maximal-coordinate ones): the trials' ppm with ``solve()``'s
        defaults, the last state's with the simulator's options."""
        return NK.noslip_motor_step(*self.maximal_arguments(w, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm,
                                                            position_stage, position_zeta, project, gyro),
                                    int(self.sim.model_options.motor_trials), TRIAL_THRESHOLD)

    def maximal_arguments(self, w: StepWork, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage,
                          position_zeta, project, gyro) -> tuple:
        """:func:`~contactlab.sim.noslip_kernels.noslip_step`'s arguments on the simulator's state (the
        contacts as plain arrays), which :func:`~contactlab.sim.noslip_kernels.noslip_motor_step` takes too."""
        max_it = self.max_iterations
        return (self.body, self.sim.model.ndof, KIND_KINEMATIC, gyro, motion(self.sim.data), f, contact, zeta, slop,
                self.joint_args, mt, mf, w.h, zeta_j, gap, tol, cfm, -1 if max_it is None else int(max_it),
                self.threshold, position_stage, position_zeta, project, 1e-10, 8)

    # -- integrate: done in the call but for a deep contact's position correction -----------------
    def integrate(self, w: StepWork) -> None:
        if not w.compiled:
            return super().integrate(w)
        data = self.sim.data
        (outcome, ke, pe, pen, joint_error, v_next, joint, tangent, modes, nl, z, before, position_stage,
         position_zeta, project, gyro, f, contact, zeta, slop, zeta_j, kept, v_free,
         (motor, trials, consistent, saturated)) = w.call
        h = w.h
        result = StepResult(v_next=v_next, normal=z[nl:], tangent=tangent, joint=joint, limit=z[:nl], motor=motor,
                            modes=modes, info={"kept_rows": kept, "motor_trials": int(trials),
                                               "motor_consistent": bool(consistent),
                                               "motor_saturated": bool(saturated)})
        data.warm["z"] = z.copy()
        self.state.defer(w.contacts, h, self.system_terms, (before, gyro, w.contacts, zeta, slop, zeta_j, h))
        self.state.free_velocity = v_free      # the plausibility check's free motion (sim/faults.py)
        self.finish(w, result, w.sol, outcome == NK.DEEP, project, v_next, joint_error, (ke, pe, pen))



def noslip_solution(trivial, case, code, z, w, numbers, counts, nonbasic, positive, row0, d: int) -> Solution:
    """The Solution ``solve(problem, "ppm")`` returns for the call's answer (solvers/pivoting.py
    ``_ppm_dense`` and solvers/registry.py ``solve``: status, counts, info, the certification), its
    ``info`` marked ``compiled_step`` as the other compiled steps' Solutions are."""
    if trivial:
        sol = Solution(z=z, w=w, status=Status.TRIVIAL, method="ppm", info={"compiled_step": True})
        rel = 0.0
    else:
        code = int(code)
        info = ppm_info(case, code, nonbasic, positive, row0, d, z.size)
        info["compiled_step"] = True
        sol = Solution(z=z, w=w, status=PIVOTING_STATUS[code], iterations=int(counts[0]), pivots=int(counts[1]),
                       method="ppm", info=info)
        rel = max(numbers[3], numbers[5])
    sol.residual, sol.complementarity, sol.infeasibility = numbers[0], numbers[1], numbers[2]
    sol.relative_residual = rel
    return sol

