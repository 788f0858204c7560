"""The box-friction model's compiled stages on jointed scenes with the joints eliminated
(:class:`CompiledSchurRowStages`; :mod:`contactlab.sim.box_joint_kernels` for the call).

Planned where the contact model declares ``COMPILED_STEP = "box-rows"`` (models/box_friction.py),
its options eliminate the joint rows (``joints="schur"``, arechavaleta eq. 15, the paper's PGS /
PGS-SM runs) and the method is pgs-sm with its dense Cholesky subspace steps (``sm_solver``
"auto" or "cholesky"), on a compiled simulator without reuse, islands or a fixed budget, on a
scene with joints whose body blocks cover every coordinate (the Barrett hand). The step after
detection is one compiled call (:func:`~contactlab.sim.box_joint_kernels.box_schur_step`): the
system's terms, the Schur complement, pgs-sm, ``solve()``'s certificate, the model's recovery, the
integration and the joint projection, organised as the Stewart-Trinkle compiled step
(:mod:`contactlab.sim.st_stages`). The step's ConstraintSystem and problem are assembled from the
state before the step only when read (``Simulator.last_system``, ``last_problem``).

A step the call declines (module docstring of :mod:`~contactlab.sim.box_joint_kernels`: an A
outside the SPD branch, a trivial problem, a pgs-sm run that does not converge, an answer that
does not certify) is taken by the general stages on the same contacts, so its status and
fallbacks are theirs.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..collision.contacts import packed
from ..kernels.tolerances import CERTIFY
from ..mechanics.model import KIND_KINEMATIC
from ..mechanics.system import live_bodies
from ..models.common import StepResult
from ..solution import Solution, Status
from ..solvers.pgs_sm import PGSSMOptions, _params
from ..solvers.registry import DENSE_BYTES_LIMIT
from . import box_joint_kernels as BJ
from . import noslip_kernels as NK
from .faults import NOT_JUDGED, fault_statics, motor_targets
from .noslip_stages import NO_VALUES, CompiledJointCall, motion
from .stages import Stages, StepWork

#: what a model's ``COMPILED_STEP`` names for these stages (models/box_friction.py; the free-body
#: compiled step, sim/box_stages.py ``CompiledRowStages``, takes the same rows)
COMPILED_FORM = "box-rows"
_NO_TANGENT = np.zeros((0, 2))


class CompiledSchurRowStages(CompiledJointCall, Stages):
    """The general stages with the step after detection in one compiled call (module docstring)."""

    compiled = True

    @classmethod
    def plan(cls, sim, state):
        model = sim.contact_model
        m = sim.model
        o = sim.model_options
        if not (sim.compiled and getattr(model, "COMPILED_STEP", None) == COMPILED_FORM and sim.reuse is None
                and not sim.islands and sim.iterations is None and m.joints and getattr(o, "joints", None) == "schur"
                and not getattr(o, "cfm_centre", 0.0)     # centred cfm: the general build (centre_normals)
                and 6 * live_bodies(m).size == m.ndof):
            return None
        stages = cls(sim, state)
        spec = stages.spec
        if spec is None or spec.options is not PGSSMOptions:
            return None
        try:
            opts = spec.make_options({k: v for k, v in sim.solver_options.items() if k != "certify"})
        except Exception:       # a bad option: the general stages raise it at solve()
            return None
        if opts.sm_solver not in ("auto", "cholesky"):      # the dense call's subspace solves (solvers/pgs_sm.py)
            return None
        stages.opts = opts
        stages.params = _params(opts)
        certify = float(sim.solver_options.get("certify", CERTIFY))
        tol = float(opts.tol)
        stages.threshold = tol if tol > certify else certify    # solve()'s max(certify, tol)
        stages.joint_layout(m)
        return stages

    # -- build: the compiled call's inputs --------------------------------------------------------
    def build(self, w: StepWork) -> None:
        sim = self.sim
        data, m, P = sim.data, sim.model, self.packed
        # the general build's dense-size refusal (models/common.py refuse_dense) is the general path's
        rows = 3 * w.nc + 2 * len(m.joints) + m.ndof
        if 8 * rows * (2 * rows + 1) > DENSE_BYTES_LIMIT:
            return super().build(w)
        idx, tau, st_mt, st_mf = self.torque_inputs(data)
        f, mt, mf, _ = NK.call_inputs(idx, tau, P.kind, P.a, P.b, P.anchor_b, P.axis_a, m.dof_start, data.position,
                                      data.quaternion, m.ndof, P.motor_target, P.motor_max_force, st_mt, st_mf)
        st = m.settings     # read each step: the Model is frozen, its Settings object is not
        o = sim.model_options
        prev = data.result
        warm = bool(sim.warm_start and data.warm.get("z") is not None and prev is not None)
        f64 = np.ascontiguousarray
        w.compiled = True
        w.call = (f, packed(w.contacts, w.match), float(st.contact_zeta if st.contact_stabilization == "velocity"
                                                      else 0.0), float(st.slop), mt, mf, float(st.zeta),
                  float(o.cfm + st.cfm), float(o.new_contact_bound), o.coupling == "current", warm,
                  f64(prev.motor, dtype=np.float64) if warm else NO_VALUES,
                  f64(prev.limit, dtype=np.float64) if warm else NO_VALUES,
                  f64(prev.normal, dtype=np.float64) if warm else NO_VALUES,
                  f64(prev.tangent, dtype=np.float64).reshape(-1, 2) if warm else _NO_TANGENT,
                  st.contact_stabilization == "position", float(st.contact_zeta), bool(st.project_joints),
                  bool(st.gyroscopic),
                  (data.position.copy(), data.quaternion.copy(), data.linear_velocity.copy(),
                   data.angular_velocity.copy(), f.copy(), mt, mf))

    # -- solve: the step to the joint projection, compiled -----------------------------------------
    def solve(self, w: StepWork) -> None:
        if not w.compiled:
            return super().solve(w)
        sim = self.sim
        (f, contact, zeta, slop, mt, mf, zeta_j, cfm, new_bound, current, warm, p_motor, p_limit, p_normal,
         p_tangent, position_stage, position_zeta, project, gyro, before) = w.call
        contact_floats, contact_ints = contact
        w.t0 = time.perf_counter()
        res = self.step_call(w, f, contact_floats, contact_ints, zeta, slop, mt, mf, zeta_j, cfm, new_bound, current,
                             warm, p_motor, p_limit, p_normal, p_tangent, position_stage, position_zeta, project, gyro)
        w.t_solved = time.perf_counter()
        outcome, out, modes, e0, gain, ke, pe, pen, joint_error, v_free, nl, a_max = res[:12]
        if outcome == BJ.DECLINED:      # nothing changed: the general stages take the step
            w.compiled = False
            super().build(w)
            return super().solve(w)
        judged = None
        if len(res) > 12 and res[13][0] != NOT_JUDGED:      # the maximal call's checks (a DONE step: state final)
            turn, verdict, motion_judged = res[12:]
            statics, prev_error, actuated, radius = self.checks
            # the turn bound on the world's radii (turns.fires); the verdict with its inputs (faults.judged_verdict)
            w.turn_bound = turn if radius is getattr(sim.world, "body_radius", None) else None
            judged = (verdict, statics, (max(pen, 0.0) if math.isfinite(pen) else 0.0, prev_error, actuated, gain,
                                         ke, ke + pe, w.h, slop), motion_judged, v_free)
        ok, code, z, wv, x, numbers, stats, v_next, tangent, n = out
        sol = pgs_sm_solution(z, wv, numbers, stats, sim.method, w.t_solved - w.t0)
        w.sol, w.n = sol, int(n)
        w.e0, w.contact_gain = e0, gain
        w.call = (outcome, ke, pe, pen, joint_error, v_next, tangent, modes, int(nl), x, v_free, before, judged,
                  w.call)

    def step_call(self, w, f, contact_floats, contact_ints, zeta, slop, mt, mf, zeta_j, cfm, new_bound, current, warm,
                  p_motor, p_limit, p_normal, p_tangent, position_stage, position_zeta, project, gyro) -> tuple:
        """:func:`~contactlab.sim.box_joint_kernels.box_schur_step` on the simulator's state (a subclass
        may take the step another way: sim/tree_box_stages.py), with the per-step checks' inputs
        (faults.step_fault, turns.fires: the call forms both for a DONE step; ``self.checks`` keeps the
        statics, previous joint error, actuation and radii they were formed with). Returns the call's
        12 values, then the turn bound, the verdict and the judged motion."""
        sim = self.sim
        model, data = sim.model, sim.data
        radius, judge = self.judge_inputs(w.call[-1])
        return BJ.box_schur_step(
            self.body, model.ndof, KIND_KINEMATIC, gyro, motion(data), f, contact_floats, contact_ints, zeta, slop,
            self.joint_args, mt, mf, w.h, zeta_j, cfm, new_bound, current, self.kin, warm, p_motor, p_limit, p_normal,
            p_tangent, self.params, self.threshold, position_stage, position_zeta, project, 1e-10, 8, radius, judge)

    def judge_inputs(self, start) -> tuple:
        """(radius, judge): the per-step checks' inputs a compiled call takes (``box_schur_step``'s,
        ``tree_box_step``'s last two arguments) from the state ``start`` before the step (build's
        copies: position, orientation, linear and angular velocity), kept in ``self.checks`` (statics,
        previous joint error, actuation, radii) for :meth:`solve`'s ``judged``."""
        sim = self.sim
        statics = fault_statics(sim)
        kind, radius, jointed, mass = statics
        prev_error = float(getattr(sim, "_fault_joint_error", 0.0))
        actuated = bool(sim.has_actuation)
        self.checks = (statics, prev_error, actuated, radius)
        return radius, (start[0], start[2], start[3], kind, jointed, mass, prev_error, motor_targets(sim.data),
                        actuated)

    # -- integrate: done in the call but for a deep contact's position correction -----------------
    def integrate(self, w: StepWork) -> None:
        if not w.compiled:
            return super().integrate(w)
        data = self.sim.data
        outcome, ke, pe, pen, joint_error, v_next, tangent, modes, nl, x, v_free, before, judged, inputs = w.call
        zeta, slop, zeta_j, project, gyro = inputs[2], inputs[3], inputs[6], inputs[17], inputs[18]
        sol, nc = w.sol, w.nc
        z = sol.z
        nm = z.shape[0] - nl - 3 * nc
        o_n = nm + nl
        # models/box_friction.py recover's StepResult (joints="schur": z = [c_a, c_l, c_n, c_s, c_t])
        result = StepResult(v_next=v_next, normal=z[o_n:o_n + nc], tangent=tangent, joint=x, limit=z[nm:o_n],
                            motor=z[:nm], modes=modes)
        data.warm["z"] = z.copy()
        self.state.defer(w.contacts, w.h, self.system_terms, (before, gyro, w.contacts, zeta, slop, zeta_j, w.h))
        self.state.free_velocity = v_free      # the plausibility check's free motion (sim/faults.py)
        self.state.judged = judged              # the call's verdict with its inputs (faults.judged_verdict)
        self.finish(w, result, sol, outcome == BJ.DEEP, project, v_next, joint_error, (ke, pe, pen))


def pgs_sm_solution(z, wv, numbers, stats, method: str, seconds: float) -> Solution:
    """The Solution ``solve(problem, "pgs-sm")`` returns for a compiled call's certified answer
    (solvers/pgs_sm.py ``pgs_sm_solve``; :func:`~contactlab.sim.box_joint_kernels.box_solve_certified`'s
    ``numbers``: residual, complementarity, infeasibility, then the relative residuals, of which the
    certified one is the larger of the fourth and sixth; ``stats``: pgs_sm_dense_run's counts, outer
    iterations, sweeps and subspace steps first, subspace trials fifth), ``seconds`` the call's. One
    place for the staged step (:meth:`CompiledSchurRowStages.solve`) and the fused hand step
    (sim/grasp_step.py)."""
    sweeps, sm = int(stats[1]), int(stats[2])
    iterations, _ = pgs_sm_counts(numbers, stats)
    sol = Solution(z=z, w=wv, status=Status.SOLVED, iterations=iterations, method=method,
                   info={"reason": "residual below tol", "pgs_sweeps": sweeps, "sm_steps": sm,
                         "outer": int(stats[0]), "sm_trials": int(stats[4]),
                         "sm_solvers": ["cholesky"] if sm else [], "sparse": False, "kernel": "numba",
                         "compiled_step": True})
    sol.residual, sol.complementarity, sol.infeasibility = numbers[0], numbers[1], numbers[2]
    sol.relative_residual = max(numbers[3], numbers[5])
    sol.time_s = seconds
    return sol


def pgs_sm_counts(numbers, stats) -> tuple[int, float]:
    """The iterations (sweeps plus subspace steps) and the residual of :func:`pgs_sm_solution`'s
    Solution, without building it: the StepRecord's numbers where the Solution is built only when
    read."""
    return int(stats[1]) + int(stats[2]), float(numbers[0])


def pgs_sm_counts_at(out, d: int) -> tuple[int, float]:
    """:func:`pgs_sm_counts` of a compiled call's answer array ``out`` holding numbers (6) and stats
    (6) from index ``d`` (sim/grasp_step.py), read as Python numbers without slicing views."""
    item = out.item
    return int(item(d + 7)) + int(item(d + 8)), item(d)


#: the box-friction model's compiled stages on jointed scenes (sim/box_stages.py ``STAGES``)
SCHUR_STAGES = (CompiledSchurRowStages,)
