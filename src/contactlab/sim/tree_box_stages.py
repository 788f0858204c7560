"""The box-friction model's compiled stages (``joints="schur"``, pgs-sm) in joint coordinates, for a
kinematic tree rooted at kinematic bodies with coupled joints: the Barrett hand
(:class:`CompiledTreeSchurRowStages`; :mod:`contactlab.sim.tree_box_kernels` for the step).

Planned where :class:`~contactlab.sim.box_joint_stages.CompiledSchurRowStages` would be and the
joints form a forest of revolute, prismatic and fixed joints whose roots may be kinematic
(:func:`contactlab.mechanics.tree.tree_topology` with ``kinematic_roots`` and ``couplings``);
declined at plan time (the maximal-coordinate stages take the scene): spherical joints, closed
loops, planar bodies, a kinematic body on a joint. A step the joint-space call declines (module
docstring of :mod:`~contactlab.sim.tree_box_kernels`) is taken by the maximal-coordinate call on
the same inputs, and a step that declines too by the general stages.

The step's records, Solution, last system and problem are those of the maximal stages (the system
and the problem assembled when read are the maximal-coordinate ones of the state before the step,
whose answer equals this step's in exact arithmetic but for the joints' drift correction).
``StepResult.joint`` is empty (joint coordinates carry no joint impulses), the Solution's info
says ``joint_space``; the joint error recorded is measured after the step on the tree's joints
(:func:`contactlab.mechanics.tree.tree_joint_error`): nothing is projected but after a deep
contact's position correction, as the maximal stages do. The call forms a DONE step's per-step
checks (the turn bound, the plausibility verdict with its inputs) as the maximal call does
(:meth:`~contactlab.sim.box_joint_stages.CompiledSchurRowStages.judge_inputs`). Where
``Simulator.fused`` is on, the steps are taken by :class:`contactlab.sim.grasp_step.FusedGraspStep`
(the same kernels, one Python method), which hands these stages any step it does not take.
"""
from __future__ import annotations

import numpy as np

from ..mechanics.model import KIND_KINEMATIC
from ..mechanics.tree import tree_topology
from .box_joint_stages import CompiledSchurRowStages
from . import noslip_kernels as NK
from . import tree_box_kernels as TB


class CompiledTreeSchurRowStages(CompiledSchurRowStages):
    """:class:`CompiledSchurRowStages` with the step in joint coordinates (module docstring)."""

    @classmethod
    def plan(cls, sim, state):
        tree, _why = tree_topology(sim.model, kinematic_roots=True, couplings=True)
        if tree is None:
            return None
        stages = super().plan(sim, state)
        if stages is None:
            return None
        m = sim.model
        stages.tree = tree
        stages.joint_of = np.array([j.b for j in m.joints], dtype=np.int64)
        stages.jq = np.array([tree.qstart[j.b] if tree.qcount[j.b] else -1 for j in m.joints], dtype=np.int64)
        stages.follows = np.array([j.follows for j in m.joints], dtype=np.int64)
        stages.ratio = np.array([j.ratio for j in m.joints], dtype=np.float64)
        stages.kinematic = (m.kind == KIND_KINEMATIC) & (m.dof_start >= 0)
        block = np.zeros(max(m.ndof // 6, 1), dtype=np.int64)
        for bb in np.flatnonzero(m.dof_start >= 0):
            block[m.dof_start[bb] // 6] = bb
        stages.body_of_block = block
        stages.joint_space = False
        return stages

    def step_call(self, w, f, contact_floats, contact_ints, zeta, slop, mt, mf, zeta_j, cfm, new_bound, current, warm,
                  p_motor, p_limit, p_normal, p_tangent, position_stage, position_zeta, project, gyro) -> tuple:
        """:func:`contactlab.sim.tree_box_kernels.tree_box_step` on the simulator's state; where it
        declines (nothing changed), the maximal-coordinate call."""
        model, data = self.sim.model, self.sim.data
        radius, judge = self.judge_inputs(w.call[-1])
        out = TB.tree_box_step(
            self.tree.args, self.joint_of, self.body_of_block, self.tree.nq, self.kinematic, self.jq, self.follows,
            self.ratio, self.live, model.dof_start, model.mass, model.inertia, model.inv_inertia, self.gravity, gyro,
            data.quaternion, data.position, data.linear_velocity, data.angular_velocity, f, contact_floats,
            contact_ints, zeta, slop, self.joint_args, mt, mf, w.h, zeta_j, cfm, new_bound, current,
            self.blk_cols, self.blk_ptr, warm, p_motor, p_limit, p_normal, p_tangent, self.params, self.threshold,
            self.passive, position_stage, position_zeta, radius, judge)
        self.joint_space = out[0] != NK.DECLINED
        if self.joint_space:
            return out
        return super().step_call(w, f, contact_floats, contact_ints, zeta, slop, mt, mf, zeta_j, cfm, new_bound,
                                 current, warm, p_motor, p_limit, p_normal, p_tangent, position_stage, position_zeta,
                                 project, gyro)

    def solve(self, w) -> None:
        self.joint_space = False
        super().solve(w)
        if self.joint_space and w.compiled:
            w.sol.info["joint_space"] = True


#: the box-friction model's compiled stages on jointed scenes, joint coordinates first
#: (sim/box_stages.py ``STAGES``)
TREE_SCHUR_STAGES = (CompiledTreeSchurRowStages,)
