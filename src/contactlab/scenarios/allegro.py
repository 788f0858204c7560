"""``allegro-grasp``: the Allegro hand (URDF of the pip package example-robot-data, loaded through
:func:`contactlab.mechanics.load_urdf` with its collision primitives: boxes for the links, spheres
for the fingertips) closing on a cylinder or cube lying on a table, with the grasp script of
:mod:`contactlab.control.grasp`.

The URDF's palm (its root link) becomes the kinematic wrist; the hand is turned palm-down (the
fingers curl towards the URDF's +x, which is put along world -z; the fingers point along world +y).
Every flexion joint (index, middle, ring: joints 1-3, 5-7, 9-11; thumb 14-15) gets a force-limited
velocity motor closed by the script; the abduction joints (0, 4, 8) and the thumb's opposition
joints (12, 13, posed at the start so the thumb faces the fingers) are held by motors at zero rate. URDF joint limits are active rows. The two thumb-base links keep no collision shape (their
URDF boxes overlap the palm's box as the thumb turns; there is no per-pair collision filter).
"""
from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..mechanics.rotation import quat_mul
from ..mechanics.scene import Body, Motor, Shape
from .barrett import _quat, attach_script
from .materials import check_material, pair_friction

URDF = "allegro_hand_description/urdf/allegro_right_hand.urdf"
FLEX = tuple(f"joint_{i}.0" for i in (1, 2, 3, 5, 6, 7, 9, 10, 11, 14, 15))
ABDUCTION = ("joint_0.0", "joint_4.0", "joint_8.0")
#: the thumb's opposition joints, posed at the start (``thumb_pose``) and held there by motors at
#: zero rate; the thumb then flexes (joints 14, 15) towards the fingers across the object
THUMB_OPPOSITION = ("joint_12.0", "joint_13.0")
THUMB_FLEX = ("joint_14.0", "joint_15.0")
THUMB_BASE = ("link_12.0", "link_13.0")   # no collision shapes: mounted on the palm's side, they overlap its box
# URDF hand frame -> world: hand x (palm normal side the fingers curl to) -> -z, hand z (fingers) -> +y
HAND_TO_WORLD = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])


def urdf_path() -> Path:
    for root in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        p = Path(root) / "cmeel.prefix" / "share" / "example-robot-data" / "robots" / URDF
        if p.exists():
            return p
    raise ModelError("allegro-grasp: example-robot-data is not installed (pip install example-robot-data); "
                     f"looked for .../cmeel.prefix/share/example-robot-data/robots/{URDF}")


def transform_scene(scene, R: np.ndarray, t) -> None:
    """Move every body and joint of ``scene`` (built in place) by x -> R x + t."""
    t = np.asarray(t, dtype=np.float64)
    qR = np.asarray(_quat(R))
    for b in scene.bodies:
        b.position = tuple(R @ np.asarray(b.position) + t)
        q = quat_mul(qR, np.asarray(b.orientation, dtype=np.float64))
        b.orientation = tuple(q / np.linalg.norm(q))
    for j in scene.joints:
        j.anchor = tuple(R @ np.asarray(j.anchor) + t)
        j.axis = tuple(R @ np.asarray(j.axis))


def pose_joint(scene, joint: str, angle: float) -> None:
    """Turn the subtree below ``joint`` (its child body and everything jointed further out) by
    ``angle`` about the joint's axis, and shift the joint's limits by -``angle``, so that the
    simulator's joint coordinate 0 is the new pose and the limits stay where the URDF puts them."""
    from scipy.spatial.transform import Rotation
    j0 = next(j for j in scene.joints if j.name == joint)
    p, R = np.asarray(j0.anchor, dtype=np.float64), Rotation.from_rotvec(np.asarray(j0.axis) * angle).as_matrix()
    qR = np.asarray(_quat(R))
    below, grow = {j0.child}, True
    while grow:                          # builder only (a few links), not a simulation step
        grow = False
        for j in scene.joints:
            if j.parent in below and j.child not in below:
                below.add(j.child)
                grow = True
    for b in scene.bodies:
        if b.name in below:
            b.position = tuple(p + R @ (np.asarray(b.position) - p))
            q = quat_mul(qR, np.asarray(b.orientation, dtype=np.float64))
            b.orientation = tuple(q / np.linalg.norm(q))
    for j in scene.joints:
        if j.parent in below:
            j.anchor = tuple(p + R @ (np.asarray(j.anchor) - p))
            j.axis = tuple(R @ np.asarray(j.axis))
    j0.lower = None if j0.lower is None else j0.lower - angle
    j0.upper = None if j0.upper is None else j0.upper - angle


def build(object: str = "cylinder", material: str = "rubber", object_material: str = "glass",
          table_material: str = "wood", size: float = 0.035, palm_height: float = 0.15, object_y: float = -0.006,
          grip_torque: float = 0.7, close_speed: float = 1.0, lift: float = 0.1, lift_speed: float = 0.1,
          hold: float = 2.0, settle: float = 0.05, close_timeout: float = 1.5, dt: float = 0.005,
          margin: float = 0.003, friction_directions: int = 4, object_mass: float = 0.1,
          thumb_pose: tuple = (1.35, -0.1), thumb_torque: tuple = (1.3, 2.0)):
    """Allegro hand palm-down at ``palm_height`` (palm link origin, m) over a ``cylinder`` (radius
    ``size``, along x) or ``cube`` (side 2 ``size``) centred at world y = ``object_y``. The thumb
    starts in opposition (``thumb_pose``: joints 12 and 13, rad; 1.35 turns it down below the palm,
    -0.1 puts its flexion plane across the fingers', at the index finger's x) and is held there;
    its flexion joints close it towards +y while the fingers curl towards -y, so the two press on
    the object from opposite sides. 150 mm puts the thumb's tip 7.5 mm above the table and every finger
    clear of the object at the start. ``close_timeout`` 1.5 s: the fingers reach the object after
    about 0.8 s at 1 rad/s. ``thumb_torque``: the thumb's motor force limits as multiples of
    ``grip_torque``, (flexion, opposition joints)."""
    from ..mechanics.urdf import load_urdf
    for nm, m in (("material", material), ("object_material", object_material), ("table_material", table_material)):
        check_material(nm, m)
    if object not in ("cylinder", "cube"):
        raise ModelError(f"allegro-grasp: object must be 'cylinder' or 'cube', got {object!r}")
    for nm, val in (("size", size), ("grip_torque", grip_torque), ("close_speed", close_speed), ("dt", dt)):
        if not val > 0:
            raise ModelError(f"allegro-grasp: {nm} must be > 0, got {val}")
    sc = load_urdf(urdf_path(), fixed_base=True, name="allegro-grasp")
    transform_scene(sc, HAND_TO_WORLD, (0.0, 0.0, palm_height))
    for name, angle in zip(THUMB_OPPOSITION, thumb_pose):
        pose_joint(sc, name, float(angle))
    palm = sc.bodies[0] if sc.bodies[0].kind == "fixed" else next(b for b in sc.bodies if b.kind == "fixed")
    palm.kind, palm.mass = "kinematic", 0.4
    for b in sc.bodies:
        if b.name in THUMB_BASE:
            b.shapes = []      # they sit against the palm box (overlapping it once the thumb turns)
    names = {b.name for b in sc.bodies}
    torque = {j: (thumb_torque[0] if j in THUMB_FLEX else 1.0) * grip_torque for j in FLEX}
    for j in sc.joints:
        if j.name in FLEX:
            j.motor = Motor(0.0, torque[j.name])
        elif j.name in ABDUCTION:
            j.motor = Motor(0.0, grip_torque)
        elif j.name in THUMB_OPPOSITION:
            j.motor = Motor(0.0, thumb_torque[1] * grip_torque)
    if object == "cylinder":
        from ..mechanics.rotation import quat_from_axis_angle
        q = tuple(quat_from_axis_angle((0.0, 1.0, 0.0), 0.5 * np.pi))
        r2, L2 = size * size, (4 * size) ** 2
        obj = Body("object", mass=object_mass, position=(0.0, object_y, size),
                   inertia=np.diag([0.5 * object_mass * r2, object_mass * (3 * r2 + L2) / 12, object_mass * (3 * r2 + L2) / 12]),
                   shapes=[Shape("cylinder", radius=size, length=4 * size, orientation=q)])
    else:
        obj = Body("object", mass=object_mass, position=(0.0, object_y, size),
                   shapes=[Shape("box", size=(2 * size, 2 * size, 2 * size))])
    table = Body("table", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    sc.bodies += [obj, table]
    links = {n: material for n in names}
    sc.pair_mu = pair_friction(links, {"object": object_material, "table": table_material})
    sc.pair_mu.update(pair_friction({"object": object_material}, {"table": table_material}))
    sc.mu = 0.0
    sc.settings.dt, sc.settings.margin, sc.settings.friction_directions = dt, margin, friction_directions
    sc.validate()
    # the script: the script's wrist is the URDF's palm link
    script = attach_script(sc, torque, close_speed, grip_torque, lift, lift_speed, hold,
                           settle, close_timeout=close_timeout)
    script.wrist = palm.name
    return sc
