"""Rigid-body mechanics: scenes as data, the compiled Model and mutable Data, constraint rows."""
from .mass_ratio import MAX_MASS_RATIO, check_mass_ratio, mass_ratio_limit
from .model import Data, JointInfo, Model, build_model, shape_inertia
from .rotation import integrate_quat, quat_from_axis_angle, quat_mul, quat_to_matrix, tangent_basis
from .scene import Body, Joint, Motor, Scene, Settings, Shape
from .system import ConstraintSystem, build_system, joint_rows, point_rows
from .urdf import load_urdf

__all__ = ["Scene", "Body", "Shape", "Joint", "Motor", "Settings", "Model", "Data", "JointInfo", "build_model",
           "shape_inertia", "ConstraintSystem", "build_system", "joint_rows", "point_rows", "quat_to_matrix",
           "quat_mul", "quat_from_axis_angle", "integrate_quat", "tangent_basis", "load_urdf", "check_mass_ratio",
           "mass_ratio_limit", "MAX_MASS_RATIO"]
