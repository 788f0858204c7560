"""A step's constraint-system terms in one compiled call (numba, with the project's compile flags).

:func:`system_terms` computes what :func:`~contactlab.mechanics.system.build_system` assembles: the
bodies' mass blocks, velocity and forces (:func:`~.bodies.body_terms`), the free velocity
v + h M^-1 f (:func:`~.bodies.free_velocity`), the contact rows N, S, T with the normal bias
(:func:`~.rows.contact_terms`) and the joint rows J, L, A
(:func:`~.joint_kernels.constraint_rows_kernel`), the same kernels in the same order as the
separate calls, so the same numbers; one crossing of the Python/compiled boundary per step instead
of four.
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit
from .bodies import body_terms, free_velocity
from .joint_kernels import constraint_rows_kernel
from .rows import contact_terms


@jit
def system_terms(live, dof_start, quaternion, position, mass, inertia, inv_inertia, gravity, linear_velocity,
                 angular_velocity, gyroscopic, f, with_free, a, b, P, normal, t1, t2, phi, zeta_c, slop, joints,
                 motor_target, motor_max_force, planar_reference, h, zeta_j):
    """(body, v_free, contact, joint) terms of one step: ``body`` = (M_blocks, W_blocks, v) with f += the bodies'
    gravity and gyroscopic forces in place; ``v_free`` = v + h M^-1 f where ``with_free`` (the blocks
    cover every dof), else empty; ``contact`` = (rows data (3, nnz), indices, indptr, normal bias) of
    the k contacts (a, b, P, normal, t1, t2, phi; k may be 0); ``joint`` = the J, L and A groups of
    :func:`~.joint_kernels.constraint_rows_kernel` for the packed joints ``joints``
    (:attr:`~.joint_kernels.JointArrays.kernel_args`) with the state's motor targets and force
    limits (``motor_target``, ``motor_max_force``) and the velocity v, bias gain ``zeta_j``."""
    body = body_terms(live, dof_start, quaternion, mass, inertia, inv_inertia, gravity, linear_velocity,
                      angular_velocity, gyroscopic, f)
    v = body[2]
    v_free = free_velocity(body[1], v, f, h) if with_free else np.empty(0)
    contact = contact_terms(a, b, dof_start, position, P, normal, t1, t2, phi, h, zeta_c, slop)
    joint = constraint_rows_kernel(joints[0], joints[1], joints[2], joints[3], joints[4], joints[5], joints[6],
                                   joints[7], joints[8], motor_target, motor_max_force, joints[11], joints[12],
                                   joints[13], joints[14], joints[15], joints[16], dof_start, position, quaternion,
                                   linear_velocity, angular_velocity, planar_reference, v, h, zeta_j)
    return body, v_free, contact, joint
