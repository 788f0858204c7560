"""Model/data split (as in Pinocchio and MuJoCo): an immutable compiled :class:`Model` and a
mutable :class:`Data` holding the state.

Generalised velocity: 6 numbers per non-fixed body, ``[v (world linear), omega (world angular)]``
starting at ``model.dof_start[i]``; fixed bodies have no coordinates (``dof_start = -1``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from .joint_kernels import pack_joints
from .bodies import velocity_vector as _velocity_vector
from .rotation import quat_conj, quat_mul, quat_to_matrix
from .scene import Scene, Shape

KIND_DYNAMIC, KIND_FIXED, KIND_KINEMATIC = 0, 1, 2
_KIND = {"dynamic": KIND_DYNAMIC, "fixed": KIND_FIXED, "kinematic": KIND_KINEMATIC}


def shape_inertia(shape: Shape, mass: float) -> np.ndarray:
    """Inertia of a uniform solid ``shape`` of ``mass`` about its centre, in the body frame."""
    kind = shape.kind
    if kind == "sphere":
        I = np.eye(3) * 0.4 * mass * shape.radius ** 2
    elif kind == "box":
        x, y, z = shape.size
        I = mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    elif kind in ("cylinder", "capsule"):
        r, L = shape.radius, shape.length
        if kind == "capsule":  # treat as a cylinder of length L + 4r/3 (same volume order); adequate for dynamics
            L = L + 4.0 * r / 3.0
        Ixx = mass * (3 * r * r + L * L) / 12.0
        I = np.diag([Ixx, Ixx, 0.5 * mass * r * r])
    elif kind == "convex":
        V = np.asarray(shape.vertices, dtype=np.float64)
        c = V.mean(axis=0)
        ext = V.max(axis=0) - V.min(axis=0)
        I = mass / 12.0 * np.diag([ext[1] ** 2 + ext[2] ** 2, ext[0] ** 2 + ext[2] ** 2, ext[0] ** 2 + ext[1] ** 2])
        I = I + mass * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
    else:
        raise ModelError(f"cannot compute the inertia of a {kind!r}; give Body.inertia explicitly")
    R = quat_to_matrix(np.asarray(shape.orientation, dtype=np.float64))
    p = np.asarray(shape.position, dtype=np.float64)
    return R @ I @ R.T + mass * (np.dot(p, p) * np.eye(3) - np.outer(p, p))


@dataclass(frozen=True)
class JointInfo:
    """A compiled joint; ``a`` is the parent body index (-1 = world), ``b`` the child."""
    name: str
    kind: str
    a: int
    b: int
    anchor_a: np.ndarray      # anchor in A's frame (world coordinates if a == -1)
    anchor_b: np.ndarray      # anchor in B's frame
    axis_a: np.ndarray        # unit axis in A's frame (world if a == -1)
    q_rel0: np.ndarray        # initial relative rotation conj(qA) * qB
    lower: float | None
    upper: float | None
    motor_target: float | None
    motor_max_force: float
    follows: int = -1         # index of the joint this one is coupled to (Joint.follows), -1: none
    ratio: float = 1.0


@dataclass(frozen=True)
class Model:
    """Compiled scene, frozen: nothing in it changes while a simulation runs (what does lives in
    :class:`Data`). Arrays are indexed by body (``nb``): kind (nb,), mass (nb,), inertia (nb, 3, 3)
    and its inverse in body frames, dof_start (nb,). ``settings`` (dt, margin, ...) and ``joints``
    are copies taken at build time: editing the scene afterwards does not change the model."""
    scene: Scene
    names: list
    kind: np.ndarray
    mass: np.ndarray
    inertia: np.ndarray
    inv_inertia: np.ndarray
    dof_start: np.ndarray
    ndof: int
    planar: np.ndarray
    joints: tuple
    shapes: list              # (body index, Shape)
    gravity: np.ndarray
    mu_default: float
    settings: object = None    # a copy of the scene's Settings
    pair_mu: dict = field(default_factory=dict)
    joint_arrays: object = None   # the joints packed for the compiled rows (joint_kernels.JointArrays)

    @property
    def nb(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ModelError(f"no body named {name!r}; bodies: {self.names}") from None


@dataclass
class Data:
    """Mutable state: positions (nb, 3), quaternions (nb, 4), linear and angular velocities
    (nb, 3) in the world frame, time and step count, plus the last step's contacts and impulses
    (used for warm starts and the 'previous' friction bounds)."""
    position: np.ndarray
    quaternion: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray
    planar_reference: np.ndarray   # (nb, 4): initial z and initial quaternion's tilt reference
    time: float = 0.0
    steps: int = 0
    contacts: object = None
    result: object = None
    warm: dict = field(default_factory=dict)
    joint_torque: dict = field(default_factory=dict)   # joint index -> torque (force) for the next step
    motor_target: np.ndarray = None      # (nj,) motor target velocity per joint, NaN: no motor
    motor_max_force: np.ndarray = None   # (nj,) motor force limit (inf: an exact velocity constraint)

    def copy(self) -> "Data":
        return copy.deepcopy(self)

    def velocity_vector(self, model: Model) -> np.ndarray:
        """(v, omega) of every body with dofs, at its dof_start (0, 6, 12, ...), one compiled pass."""
        return _velocity_vector(model.dof_start, self.linear_velocity, self.angular_velocity)

    def set_velocity_vector(self, model: Model, v: np.ndarray) -> None:
        live = model.dof_start >= 0
        V = np.asarray(v, dtype=np.float64).reshape(-1, 6)
        self.linear_velocity[live] = V[:, :3]
        self.angular_velocity[live] = V[:, 3:]

    def rotation(self) -> np.ndarray:
        return quat_to_matrix(self.quaternion)


def build_model(scene: Scene) -> tuple[Model, Data]:
    """Validate ``scene`` (raising :class:`ModelError` naming the field) and compile it."""
    scene.validate()
    nb = len(scene.bodies)
    names = [b.name for b in scene.bodies]
    kind = np.array([_KIND[b.kind] for b in scene.bodies], dtype=np.int64)
    mass = np.zeros(nb)
    inertia = np.zeros((nb, 3, 3))
    inv_inertia = np.zeros((nb, 3, 3))
    dof_start = np.full(nb, -1, dtype=np.int64)
    ndof = 0
    for i, b in enumerate(scene.bodies):
        if kind[i] == KIND_FIXED:
            continue
        mass[i] = float(b.mass)
        if b.inertia is None:
            I = shape_inertia(b.shapes[0], mass[i])
        else:
            I = np.asarray(b.inertia, dtype=np.float64)
            I = np.diag(I) if I.shape == (3,) else I
        inertia[i] = I
        inv_inertia[i] = np.linalg.inv(I)
        dof_start[i] = ndof
        ndof += 6
    pos = np.array([b.position for b in scene.bodies], dtype=np.float64).reshape(nb, 3)
    quat = np.array([b.orientation for b in scene.bodies], dtype=np.float64).reshape(nb, 4)
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    R = quat_to_matrix(quat)
    joints = []
    for j in scene.joints:
        a = -1 if j.parent == "world" else names.index(j.parent)
        b = names.index(j.child)
        anchor = np.asarray(j.anchor, dtype=np.float64)
        axis = np.asarray(j.axis, dtype=np.float64)
        axis = axis / np.linalg.norm(axis)
        if a >= 0:
            anchor_a, axis_a, qa = R[a].T @ (anchor - pos[a]), R[a].T @ axis, quat[a]
        else:
            anchor_a, axis_a, qa = anchor.copy(), axis.copy(), np.array([1.0, 0, 0, 0])
        anchor_b = R[b].T @ (anchor - pos[b])
        m = j.motor
        joints.append(JointInfo(j.name, j.kind, a, b, anchor_a, anchor_b, axis_a,
                                quat_mul(quat_conj(qa), quat[b]),
                                None if j.lower is None else float(j.lower),
                                None if j.upper is None else float(j.upper),
                                None if m is None else float(m.target_velocity),
                                float("inf") if m is None else float(m.max_force),
                                -1 if j.follows is None else [x.name for x in scene.joints].index(j.follows),
                                float(j.ratio)))
    shapes = [(i, s) for i, b in enumerate(scene.bodies) for s in b.shapes]
    pair_mu = {}
    for key, m in scene.pair_mu.items():
        x, y = (names.index(p) for p in str(key).split("/"))
        pair_mu[(min(x, y), max(x, y))] = float(m)
    joints = tuple(joints)
    planar = np.array([b.planar for b in scene.bodies], dtype=bool)
    model = Model(scene, names, kind, mass, inertia, inv_inertia, dof_start, ndof, planar, joints, shapes,
                  np.asarray(scene.gravity, dtype=np.float64), float(scene.mu),
                  settings=copy.deepcopy(scene.settings), pair_mu=pair_mu,
                  joint_arrays=pack_joints(joints, names, kind, dof_start, planar, KIND_KINEMATIC))
    data = Data(pos, quat,
                np.array([b.linear_velocity for b in scene.bodies], dtype=np.float64).reshape(nb, 3),
                np.array([b.angular_velocity for b in scene.bodies], dtype=np.float64).reshape(nb, 3),
                np.column_stack([pos[:, 2], quat]),
                motor_target=np.array([np.nan if j.motor_target is None else j.motor_target for j in joints]),
                motor_max_force=np.array([j.motor_max_force for j in joints], dtype=np.float64))
    return model, data
