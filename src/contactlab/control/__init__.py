"""Controllers for the simulator's callback interface (``Simulator(..., controllers=[fn])``,
``sim.add_controller(fn)``: ``fn(sim)`` runs before every step and acts through
``sim.set_joint_torque`` / ``set_motor`` / ``set_velocity``).

Legged locomotion (issue 13, drumwright §VII-B): :class:`Gait` (phases, swing/stance, raised-cosine
swing), :class:`SerialLegs` / :class:`ThreeJointLegs` (forward and inverse kinematics),
:class:`JointPD` (torque-limited joint PD) and :class:`LegController` combining them. Only numpy
is imported here, so submodules (e.g. ``control.grasp``) import cheaply.
"""
from .gait import TROT_OFFSETS, Gait
from .ik import SerialLegs, ThreeJointLegs, axis_rotations
from .locomotion import LegController, LegSetup, attach
from .pd import JointPD, JointReader

__all__ = ["Gait", "TROT_OFFSETS", "SerialLegs", "ThreeJointLegs", "axis_rotations", "JointPD", "JointReader",
           "LegController", "LegSetup", "attach"]
