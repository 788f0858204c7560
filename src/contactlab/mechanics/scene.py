"""Scenes as data: bodies, shapes, joints, motors and step settings (validated before any step).

Everything is a plain dataclass so a scene round-trips through TOML/JSON
(:mod:`contactlab.scenarios.io`). Units: SI. Quaternions are (w, x, y, z).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ModelError

SHAPE_KINDS = ("halfspace", "sphere", "box", "capsule", "cylinder", "convex")
BODY_KINDS = ("dynamic", "fixed", "kinematic")
JOINT_KINDS = ("revolute", "prismatic", "fixed", "spherical")


#: the most friction-pyramid directions a scene may ask for (each adds a row per contact; 64 sides
#: approximate the cone within 0.12 %, and 100000 would allocate terabytes)
MAX_FRICTION_DIRECTIONS = 64


@dataclass
class Shape:
    """A collision shape attached to a body, placed by ``position``/``orientation`` in the body frame.

    kind: ``halfspace`` (``normal``, ``offset``: points x with normal.x <= offset are inside; alias
    ``plane``), ``sphere`` (``radius``), ``box`` (``size``: full side lengths), ``capsule`` and
    ``cylinder`` (``radius``, ``length``: full length along the local z axis), ``convex``
    (``vertices``: its convex hull). ``mu`` overrides the scene's friction for this shape.
    """
    kind: str
    size: tuple = (1.0, 1.0, 1.0)
    radius: float = 0.5
    length: float = 1.0
    normal: tuple = (0.0, 0.0, 1.0)
    offset: float = 0.0
    vertices: Any = None
    position: tuple = (0.0, 0.0, 0.0)
    orientation: tuple = (1.0, 0.0, 0.0, 0.0)
    mu: float | None = None
    name: str = ""
    faces: Any = None          # kind ``mesh`` (visual shapes only): triangles (k, 3) into ``vertices``


@dataclass
class Body:
    """A rigid body. ``kind``: ``dynamic``, ``fixed`` (never moves) or ``kinematic`` (moves with its
    given velocities whatever the forces: a velocity-driven body). ``inertia`` is the 3x3 tensor
    in the body frame about the centre of mass (None: computed from the first shape with uniform
    density). ``planar`` keeps the body in its initial plane z = const with rotation about z only
    (x, y, theta mechanics)."""
    name: str
    mass: float = 1.0
    inertia: Any = None
    position: tuple = (0.0, 0.0, 0.0)
    orientation: tuple = (1.0, 0.0, 0.0, 0.0)
    linear_velocity: tuple = (0.0, 0.0, 0.0)
    angular_velocity: tuple = (0.0, 0.0, 0.0)
    shapes: list = field(default_factory=list)
    kind: str = "dynamic"
    visuals: list = field(default_factory=list)   # Shapes drawn by replays only, never collide (URDF <visual>)
    planar: bool = False


@dataclass
class Motor:
    """Velocity motor on a revolute/prismatic joint: drives the joint rate to ``target_velocity``
    with at most ``max_force`` (force or torque; inf = an exact velocity constraint)."""
    target_velocity: float = 0.0
    max_force: float = float("inf")


@dataclass
class Joint:
    """A joint in maximal coordinates between ``parent`` (a body name or ``"world"``) and ``child``.

    ``anchor`` and ``axis`` are given in world coordinates in the scene's initial configuration.
    ``lower``/``upper`` limit the joint coordinate (angle for revolute, displacement for
    prismatic, measured from the initial configuration) as unilateral rows (arechavaleta eq. 12).
    ``follows`` names another revolute/prismatic joint whose coordinate this one copies times
    ``ratio`` (a joint coupling, e.g. the Barrett distal joint at 1/3 of the proximal one): one
    more bilateral row q_self' = ratio q_follows' with drift correction (eq. 10).
    """
    name: str
    kind: str
    parent: str
    child: str
    anchor: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 0.0, 1.0)
    lower: float | None = None
    upper: float | None = None
    motor: Motor | None = None
    follows: str | None = None
    ratio: float = 1.0


@dataclass
class Settings:
    """Step settings. zeta: joint drift correction (arechavaleta eq. 10), contact_zeta: share of a
    penetration deeper than ``slop`` removed per step; margin: contact detection distance
    (speculative contacts within it); friction_directions: d of the friction pyramid; cfm:
    constraint force mixing added to the contact diagonal; project_joints: Newton projection of
    joint position errors after each step (post-stabilisation); contact_stabilization:
    "position" (penetration beyond the slop is removed by a separate frictionless position
    projection after the step, so contact impulses never add kinetic energy) or "velocity"
    (Baumgarte: a bias zeta (phi + slop)/h in the normal rows, which can add energy)."""
    dt: float = 0.01
    zeta: float = 0.2
    contact_zeta: float = 0.2
    slop: float = 1e-4
    margin: float = 0.01
    friction_directions: int = 4
    cfm: float = 0.0
    project_joints: bool = True
    gyroscopic: bool = True
    contact_stabilization: str = "position"


@dataclass
class Scene:
    """Bodies, joints and settings; ``mu`` is the default friction and ``pair_mu`` maps
    ``"bodyA/bodyB"`` to a pair's friction (order free)."""
    name: str = "scene"
    bodies: list = field(default_factory=list)
    joints: list = field(default_factory=list)
    gravity: tuple = (0.0, 0.0, -9.81)
    mu: float = 0.5
    pair_mu: dict = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)

    def body(self, name: str) -> Body:
        for b in self.bodies:
            if b.name == name:
                return b
        raise ModelError(f"no body named {name!r}; bodies: {[b.name for b in self.bodies]}")

    def validate(self) -> None:
        """Raise :class:`ModelError` naming the offending field; called before any step."""
        validate_scene(self)


def _vec(where: str, value, n: int) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ModelError(f"{where} must be {n} numbers, got {value!r}") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ModelError(f"{where} must be {n} finite numbers, got {value!r}")
    return v


#: the shortest time step accepted (s). Shorter steps are no physics (a step's motion and its
#: checks divide by dt and by dt squared: dt = 1e-300 overflowed the fault check into a traceback)
MIN_DT = 1e-9


def check_dt(where: str, value) -> float:
    """``value`` as a time step in seconds: finite and >= :data:`MIN_DT`, else a ModelError naming ``where``."""
    x = _positive(where, value)
    if x < MIN_DT:
        raise ModelError(f"{where} must be at least {MIN_DT:g} s, got {value!r}")
    return x


def _positive(where: str, value) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ModelError(f"{where} must be a number, got {value!r}") from None
    if not np.isfinite(x) or x <= 0:
        raise ModelError(f"{where} must be > 0, got {value!r}")
    return x


def _unit_quat(where: str, q) -> np.ndarray:
    q = _vec(where, q, 4)
    if abs(np.linalg.norm(q) - 1.0) > 1e-6:
        raise ModelError(f"{where} must be a unit quaternion (w, x, y, z); its norm is {np.linalg.norm(q):.6g} "
                         "(normalise it)")
    return q


def validate_shape(where: str, s: Shape) -> None:
    if not isinstance(s, Shape):
        raise ModelError(f"{where} must be a Shape, got {type(s).__name__}")
    kind = "halfspace" if s.kind == "plane" else s.kind
    if kind not in SHAPE_KINDS:
        raise ModelError(f"{where}.kind: unknown shape {s.kind!r}; known shapes: {', '.join(SHAPE_KINDS)} (or plane)")
    _vec(f"{where}.position", s.position, 3)
    _unit_quat(f"{where}.orientation", s.orientation)
    if kind == "sphere":
        _positive(f"{where}.radius", s.radius)
    elif kind == "box":
        for i, x in enumerate(_vec(f"{where}.size", s.size, 3)):
            _positive(f"{where}.size[{i}]", x)
    elif kind in ("capsule", "cylinder"):
        _positive(f"{where}.radius", s.radius)
        _positive(f"{where}.length", s.length)
    elif kind == "halfspace":
        n = _vec(f"{where}.normal", s.normal, 3)
        if np.linalg.norm(n) < 1e-12:
            raise ModelError(f"{where}.normal must be non-zero")
        if not np.isfinite(float(s.offset)):
            raise ModelError(f"{where}.offset must be finite")
    elif kind == "convex":
        try:
            V = np.asarray(s.vertices, dtype=np.float64)
        except (TypeError, ValueError):
            raise ModelError(f"{where}.vertices must be an (k, 3) array of numbers") from None
        if V.ndim != 2 or V.shape[1] != 3 or V.shape[0] < 4 or not np.all(np.isfinite(V)):
            raise ModelError(f"{where}.vertices must be a finite (k, 3) array with k >= 4, got shape {V.shape}")
        if np.linalg.matrix_rank(V[1:] - V[0], tol=1e-9) < 3:
            raise ModelError(f"{where}.vertices are coplanar; a convex mesh needs volume")
    if s.mu is not None and not (np.isfinite(float(s.mu)) and float(s.mu) >= 0):
        raise ModelError(f"{where}.mu must be >= 0 (a friction coefficient), got {s.mu!r}")


def validate_scene(scene: Scene) -> None:
    names = set()
    if not scene.bodies:
        raise ModelError("scene.bodies is empty; add at least one Body")
    for i, b in enumerate(scene.bodies):
        where = f"bodies[{i}] ({getattr(b, 'name', '?')!r})"
        if not isinstance(b, Body):
            raise ModelError(f"{where} must be a Body, got {type(b).__name__}")
        if not b.name or b.name == "world" or b.name in names:
            raise ModelError(f"{where}.name must be a unique non-empty name other than 'world'")
        names.add(b.name)
        if b.kind not in BODY_KINDS:
            raise ModelError(f"{where}.kind: unknown body kind {b.kind!r}; use one of {BODY_KINDS}")
        _vec(f"{where}.position", b.position, 3)
        _unit_quat(f"{where}.orientation", b.orientation)
        _vec(f"{where}.linear_velocity", b.linear_velocity, 3)
        _vec(f"{where}.angular_velocity", b.angular_velocity, 3)
        if b.kind != "fixed":
            _positive(f"{where}.mass", b.mass)
            if b.inertia is not None:
                try:
                    I = np.asarray(b.inertia, dtype=np.float64)
                except (TypeError, ValueError):
                    raise ModelError(f"{where}.inertia must be a 3x3 matrix of numbers") from None
                if I.shape == (3,):
                    I = np.diag(I)
                if I.shape != (3, 3) or not np.all(np.isfinite(I)):
                    raise ModelError(f"{where}.inertia must be a 3x3 matrix (or 3 principal moments)")
                if not np.allclose(I, I.T, atol=1e-12 * max(1.0, np.abs(I).max())):
                    raise ModelError(f"{where}.inertia must be symmetric")
                ev = np.linalg.eigvalsh(I)
                if ev.min() <= 0:
                    raise ModelError(f"{where}.inertia must be positive definite; its eigenvalues are {ev}")
            elif not b.shapes:
                raise ModelError(f"{where}.inertia is None and the body has no shape to compute it from")
        for k, s in enumerate(b.shapes):
            validate_shape(f"{where}.shapes[{k}]", s)
    for i, j in enumerate(scene.joints):
        where = f"joints[{i}] ({getattr(j, 'name', '?')!r})"
        if not isinstance(j, Joint):
            raise ModelError(f"{where} must be a Joint, got {type(j).__name__}")
        if j.kind not in JOINT_KINDS:
            raise ModelError(f"{where}.kind: unknown joint kind {j.kind!r}; use one of {JOINT_KINDS}")
        for role in ("parent", "child"):
            nm = getattr(j, role)
            if nm != "world" and nm not in names:
                raise ModelError(f"{where}.{role}: no body named {nm!r}")
        if j.parent == j.child:
            raise ModelError(f"{where}: parent and child are the same body")
        if j.child == "world":
            raise ModelError(f"{where}.child must be a body (put 'world' as the parent)")
        _vec(f"{where}.anchor", j.anchor, 3)
        ax = _vec(f"{where}.axis", j.axis, 3)
        if np.linalg.norm(ax) < 1e-12:
            raise ModelError(f"{where}.axis must be non-zero")
        if (j.lower is not None or j.upper is not None or j.motor is not None) and j.kind not in ("revolute", "prismatic"):
            raise ModelError(f"{where}: limits and motors need a revolute or prismatic joint, not {j.kind!r}")
        if j.lower is not None and j.upper is not None and float(j.lower) > float(j.upper):
            raise ModelError(f"{where}: lower {j.lower} > upper {j.upper}")
        if j.follows is not None:
            leader = next((x for x in scene.joints if isinstance(x, Joint) and x.name == j.follows), None)
            if leader is None or leader is j or leader.kind not in ("revolute", "prismatic") or \
                    j.kind not in ("revolute", "prismatic"):
                raise ModelError(f"{where}.follows: {j.follows!r} must name another revolute/prismatic joint "
                                 "(and this joint must be revolute/prismatic)")
            if leader.follows is not None:
                raise ModelError(f"{where}.follows: {j.follows!r} itself follows a joint; couple to the leader")
            if not np.isfinite(float(j.ratio)):
                raise ModelError(f"{where}.ratio must be finite, got {j.ratio!r}")
        if j.motor is not None:
            if not (float(j.motor.max_force) > 0):
                raise ModelError(f"{where}.motor.max_force must be > 0")
            if not np.isfinite(float(j.motor.target_velocity)):
                raise ModelError(f"{where}.motor.target_velocity must be finite")
    if not (np.isfinite(float(scene.mu)) and float(scene.mu) >= 0):
        raise ModelError(f"scene.mu must be >= 0 (a friction coefficient), got {scene.mu!r}")
    for key, m in scene.pair_mu.items():
        parts = str(key).split("/")
        if len(parts) != 2 or any(p not in names for p in parts):
            raise ModelError(f"scene.pair_mu key {key!r} must be 'bodyA/bodyB' with existing bodies")
        if not (np.isfinite(float(m)) and float(m) >= 0):
            raise ModelError(f"scene.pair_mu[{key!r}] must be >= 0, got {m!r}")
    _vec("scene.gravity", scene.gravity, 3)
    st = scene.settings
    check_dt("settings.dt", st.dt)
    for nm in ("zeta", "contact_zeta"):
        x = float(getattr(st, nm))
        if not 0.0 <= x <= 1.0:
            raise ModelError(f"settings.{nm} must lie in [0, 1], got {x}")
    if not all(0 <= float(getattr(st, nm)) < np.inf for nm in ("slop", "margin", "cfm")):    # NaN fails too
        raise ModelError(f"settings.slop, settings.margin and settings.cfm must be finite and >= 0, got "
                         f"{st.slop!r}, {st.margin!r}, {st.cfm!r}")
    if st.contact_stabilization not in ("position", "velocity"):
        raise ModelError(f"settings.contact_stabilization must be 'position' or 'velocity', got {st.contact_stabilization!r}")
    if not 2 <= int(st.friction_directions) <= MAX_FRICTION_DIRECTIONS or int(st.friction_directions) % 2:
        raise ModelError(f"settings.friction_directions must be an even number from 2 to {MAX_FRICTION_DIRECTIONS}, "
                         f"got {st.friction_directions}")
