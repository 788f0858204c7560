"""Kinetic and potential energy of the bodies in one compiled pass (the simulator's diagnostics)."""
import numpy as np

from ._jit import jit
from .quaternion import quat_matrix


@jit
def energies(dof_start, mass, inertia, quat, lin, ang, pos, gravity):
    """(kinetic, potential) over the bodies with dofs (dof_start >= 0): sum 1/2 m |v|^2 +
    1/2 omega' R I R' omega (I the body-frame inertia, R of the unit quaternion (w, x, y, z)) and
    -sum m p . g."""
    ke = 0.0
    pe = 0.0
    work = np.empty(12)                 # R and b = R' omega (the angular velocity in body axes): one allocation
    R = work[:9].reshape((3, 3))
    b = work[9:]
    for k in range(mass.shape[0]):
        if dof_start[k] < 0:
            continue
        quat_matrix(quat[k], R)
        for i in range(3):
            b[i] = 0.0
            for j in range(3):
                b[i] += R[j, i] * ang[k, j]
        rot = 0.0
        for i in range(3):
            for j in range(3):
                rot += b[i] * inertia[k, i, j] * b[j]
        v2 = lin[k, 0] * lin[k, 0] + lin[k, 1] * lin[k, 1] + lin[k, 2] * lin[k, 2]
        ke += 0.5 * mass[k] * v2 + 0.5 * rot
        pe -= mass[k] * (pos[k, 0] * gravity[0] + pos[k, 1] * gravity[1] + pos[k, 2] * gravity[2])
    return ke, pe


@jit
def energies_and_depth(dof_start, mass, inertia, quat, lin, ang, pos, gravity, phi):
    """The simulator's after-step numbers in one call: :func:`energies` and the deepest overlap
    max(0, -min phi) of the step's contacts (0 without contacts)."""
    ke, pe = energies(dof_start, mass, inertia, quat, lin, ang, pos, gravity)
    depth = 0.0
    for i in range(phi.size):
        if -phi[i] > depth:
            depth = -phi[i]
    return ke, pe, depth
