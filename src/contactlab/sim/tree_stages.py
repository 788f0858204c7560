"""The no-slip model's compiled stages in joint coordinates, for kinematic trees
(:class:`CompiledTreeNoSlipStages`; :mod:`contactlab.sim.tree_kernels` for the step).

Planned where :class:`~contactlab.sim.noslip_stages.CompiledNoSlipStages` would be (the no-slip model
solved by ppm in certified mode, moving bodies free and jointed) and the joints form a forest of
revolute, prismatic and fixed joints (:func:`contactlab.mechanics.tree.tree_topology`: a floating
base and its legs, a fixed-base arm, free objects beside them). Declined at plan time, so the
maximal-coordinate stages take the scene: spherical joints, couplings (``Joint.follows``), closed
loops, kinematic or planar bodies. Declined per step (the maximal stages take that step): motors
(a force-limited velocity motor's active set: the maximal-coordinate motor call,
:func:`contactlab.sim.noslip_kernels.noslip_motor_step`), a failed reduction, an answer that does not
certify.

The step's records, Solution, last system and problem are those of the maximal stages (the system
and the problem assembled when read are the maximal-coordinate ones of the state before the step,
whose answer equals this step's in exact arithmetic but for the velocity-product terms and the
joints' drift correction). ``StepResult.joint`` is empty: joint coordinates carry no joint impulses.
``Settings.project_joints`` has nothing to project here (forward kinematics puts the bodies on their
joints); the joint error recorded is measured after the step on the tree's joints
(:func:`contactlab.mechanics.tree.tree_joint_error`: anchor gaps and orientation errors).
"""
from __future__ import annotations

import numpy as np

from ..collision.contacts import packed
from ..kernels.mass_factor import coordinate_parents
from ..mechanics.tree import tree_topology
from .noslip_stages import CompiledNoSlipStages
from . import tree_kernels as TK


class CompiledTreeNoSlipStages(CompiledNoSlipStages):
    """:class:`CompiledNoSlipStages` with the step in joint coordinates (module docstring)."""

    @classmethod
    def plan(cls, sim, state):
        tree, _why = tree_topology(sim.model)
        if tree is None:
            return None
        stages = super().plan(sim, state)
        if stages is None:
            return None
        stages.tree = tree
        # the topology's arrays and each coordinate's parent (Featherstone's lambda, for the factor of H):
        # both the model's alone, so formed here once, not in every step's call
        stages.tree_args = (*tree.args, coordinate_parents(tree.order, tree.qstart, tree.qcount, tree.anc_ptr,
                                                           tree.anc_idx, tree.nq))
        m = sim.model
        stages.joint_of = np.array([j.b for j in m.joints], dtype=np.int64)
        block = np.zeros(max(m.ndof // 6, 1), dtype=np.int64)
        for bb in np.flatnonzero(m.dof_start >= 0):
            block[m.dof_start[bb] // 6] = bb
        stages.body_of_block = block
        return stages

    def contact_inputs(self, contacts) -> tuple:
        """The contacts as the call takes them: the detection's two packed buffers (floats, ints),
        packed here where a scene's own contact generator made them
        (:func:`contactlab.collision.contacts.packed`)."""
        return packed(contacts)

    def call_constants(self, gyro, zeta, slop, zeta_j, gap, tol, cfm, position_stage, position_zeta) -> tuple:
        """The arguments of :meth:`step_call`'s :func:`~contactlab.sim.tree_kernels.tree_noslip_step` that stay
        the same from step to step, bundled in the order the robot rollout unpacks them
        (:func:`contactlab.sim.robot_rollout._physics`)."""
        model, max_it = self.sim.model, self.max_iterations
        return (self.tree_args, self.joint_of, self.body_of_block, self.tree.nq, self.live, model.dof_start,
                model.mass, model.inertia, model.inv_inertia, self.gravity, gyro, zeta, slop, self.packed.kernel_args,
                zeta_j, self.blk_cols, self.blk_ptr, gap, tol, cfm, -1 if max_it is None else int(max_it),
                self.threshold, self.passive, position_stage, position_zeta)

    def step_call(self, w, f, contact, zeta, slop, mt, mf, zeta_j, gap, tol, cfm, position_stage, position_zeta,
                  project, gyro) -> tuple:
        """:func:`contactlab.sim.tree_kernels.tree_noslip_step` on the simulator's state."""
        sim = self.sim
        model, data = sim.model, sim.data
        floats, ints = contact
        max_it = self.max_iterations
        return TK.tree_noslip_step(
            self.tree_args, self.joint_of, self.body_of_block, self.tree.nq, self.live, model.dof_start, model.mass,
            model.inertia, model.inv_inertia, self.gravity, gyro, data.quaternion, data.position,
            data.linear_velocity, data.angular_velocity, f, floats, ints,
            zeta, slop, self.packed.kernel_args, mt, w.h, zeta_j, self.blk_cols, self.blk_ptr, gap, tol, cfm,
            -1 if max_it is None else int(max_it), self.threshold, self.passive, position_stage, position_zeta)


#: the model-specific stages of the no-slip model, most specific first (:func:`contactlab.sim.simulator.plan_stages`):
#: a forest of revolute, prismatic and fixed joints in joint coordinates, else maximal coordinates
NOSLIP_STAGES = (CompiledTreeNoSlipStages, CompiledNoSlipStages)
