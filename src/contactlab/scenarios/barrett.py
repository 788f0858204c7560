"""``barrett-grasp``: the three-finger Barrett hand of arechavaleta §V (Figs. 2-3) closing on an object.

Geometry, masses and joints from GraspIt!'s Barrett model (GraspIt! model data §1.3): DH
chains in the palm frame (mm, degrees), proximal and distal flexion driven by one DOF per finger
(the distal joint follows the proximal one at 1/3, a joint coupling row, :class:`Joint.follows`),
the spread DOF on fingers 1 and 2 (finger 2 coupled to finger 1 at 1), the links as boxes of their
mesh extents with the listed masses (palm 1000 g, link1 200 g, link2 and link3 100 g each) and
inertias (I/m x m). Joint limits (proximal 0..144 deg of the DOF, spread 0..180 deg) are
unilateral rows (arechavaleta eq. 12), measured from the pre-shape.

The hand points down (palm approach -z in the world) over an object lying on a table (the
``barrettGlassDyn`` world of GraspIt!, spec §1.5): the palm is kinematic (the wrist: it moves with
the velocity the grasp script sets, whatever the forces), the fingers are dynamic. Friction of
every pair (fingers and palm on the object, object and links on the table) comes from the
material table (:mod:`.materials`): glass on plastic 0.2, on rubber 1.0, on wood 0.3.

The scene carries the grasp script (:class:`contactlab.control.grasp.GraspScript`) as its
``controllers`` and its result as ``summary(sim, trajectory)``; ``duration`` is the script's length.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..mechanics.rotation import quat_from_matrix
from ..mechanics.scene import Body, Joint, Motor, Scene, Settings, Shape
from .materials import check_material, pair_friction
from .objects import make_object

DEG = np.pi / 180.0

# link AABBs in each link's own (distal DH) frame, mm: (lo, hi); spec §1.3
# link2's box starts 5 mm (not 14 mm) behind its proximal axis: the mesh's rounded knuckle end clears
# the palm as the finger flexes, a box corner there would dig into the palm's top
LINK_BOX = {"link1": ((-61.9, -33.5, -12.4), (14.4, 13.8, 12.4)),
            "link2": ((-75.0, -11.8, -9.5), (7.7, 15.0, 9.4)),
            "link3": ((-65.5, -9.1, -11.5), (2.0, 10.7, 11.5))}
LINK_MASS = {"palm": 1.0, "link1": 0.2, "link2": 0.1, "link3": 0.1}
LINK_COG = {"link1": (-17.58, -15.10, 0.0), "link2": (-32.63, -0.818, 0.161), "link3": (-35.44, 1.823, 0.514)}
# I/m (mm^2): xx, yy, zz, xy, xz, yz
LINK_IM = {"link1": (419.778, 801.547, 1121.76, -370.501, 0.0, 0.0),
           "link2": (69.729, 1360.54, 1385.33, -26.94, 7.50, 0.0),
           "link3": (92.377, 1659.94, 1627.80, 37.83, 21.93, -0.746)}
PALM_IM = (3540.1, 3350.1, 1056.9, 0.0, 0.0, -42.614)
PALM_COG = (0.0034, -3.736, -47.83)
# the palm: a 89 x 89 mm block up to z = -34.5, then the top narrowed to 53 mm in y (spec §1.3 shape notes)
PALM_BOXES = (((-44.5, -44.5, -82.9), (44.5, 44.5, -34.5)), ((-44.3, -26.5, -34.5), (44.3, 26.5, 0.0)))


def _Rz(t):
    c, s = np.cos(t), np.sin(t)
    T = np.eye(4)
    T[:2, :2] = [[c, -s], [s, c]]
    return T


def _Rx(t):
    c, s = np.cos(t), np.sin(t)
    T = np.eye(4)
    T[1:3, 1:3] = [[c, -s], [s, c]]
    return T


def _Ry(t):
    c, s = np.cos(t), np.sin(t)
    T = np.eye(4)
    T[0, 0], T[0, 2], T[2, 0], T[2, 2] = c, s, -s, c
    return T


def _T(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def dh_chain(base: np.ndarray, rows) -> list:
    """Frames (before, after) of each DH row (theta rad, d, a, alpha rad) from ``base``; classic
    convention Rz(theta) Tz(d) Tx(a) Rx(alpha) (GraspIt! src/joint.cpp). Joint i turns about the z
    axis of its 'before' frame at that frame's origin; link i's geometry lives in the 'after' frame."""
    out, T = [], base
    for th, d, a, al in rows:
        Tn = T @ _Rz(th) @ _T(0.0, 0.0, d) @ _T(a, 0.0, 0.0) @ _Rx(al)
        out.append((T, Tn))
        T = Tn
    return out


def barrett_chains(spread: float, dof: tuple) -> dict:
    """Palm-frame (mm) DH frames of the three chains for spread ``spread`` and flexion DOFs
    ``dof`` = (d1, d2, d3) in radians (spec §1.3; check: all zero puts the fingertips at
    (+-25, 158.6, 44.0) and (0, -158.6, 44.0))."""
    d1, d2, d3 = dof
    f = lambda d: [(d + 5 * DEG, 0.0, 70.0, 0.0), (d / 3 + 40 * DEG, 0.0, 55.0, 0.0)]
    return {"f1": dh_chain(_T(25, 0, -1) @ _Ry(np.pi), [(spread + 90 * DEG, 0.0, 50.0, -90 * DEG), *f(d1)]),
            "f2": dh_chain(_T(-25, 0, -1), [(spread + 90 * DEG, 0.0, 50.0, 90 * DEG), *f(d2)]),
            "thumb": dh_chain(_T(0, -50, -1) @ _Ry(-np.pi / 2) @ _Rz(-np.pi / 2), f(d3))}


def _inertia(im, mass):
    xx, yy, zz, xy, xz, yz = im
    return mass * 1e-6 * np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def _link_body(name, kind, T_world, palm=False, box_name=None):
    """A body at the link frame T_world (m, rotation) with COM offset and box from the tables."""
    key = "palm" if palm else kind
    cog = np.array(PALM_COG if palm else LINK_COG[kind]) * 1e-3
    R, p = T_world[:3, :3], T_world[:3, 3]
    shapes = []
    for k, (lo, hi) in enumerate(PALM_BOXES if palm else (LINK_BOX[kind],)):
        lo, hi = np.array(lo) * 1e-3, np.array(hi) * 1e-3
        shapes.append(Shape("box", size=tuple(hi - lo), position=tuple(0.5 * (lo + hi) - cog),
                            name=f"{box_name or name}{k or ''}"))
    return Body(name, mass=LINK_MASS[key], inertia=_inertia(PALM_IM if palm else LINK_IM[kind], LINK_MASS[key]),
                position=tuple(p + R @ cog), orientation=quat_from_matrix(R), shapes=shapes,
                kind="kinematic" if palm else "dynamic")


def hand_bodies(world: np.ndarray, spread: float, preshape: float, grip_torque: float, spread_torque: float):
    """Palm + finger bodies and joints of the Barrett hand whose palm frame is ``world`` (4x4, m)."""
    S = np.diag([1e-3, 1e-3, 1e-3, 1.0])
    to_world = lambda T: world @ S @ T @ np.linalg.inv(S)     # palm mm frames -> world m frames
    chains = barrett_chains(spread, (preshape, preshape, preshape))
    bodies = [_link_body("palm", None, world, palm=True)]
    joints = []
    lim_flex = (-preshape, 144 * DEG - preshape)            # DOF 0..144 deg, from the pre-shape
    for finger, chain in chains.items():
        links = ["link2", "link3"] if finger == "thumb" else ["link1", "link2", "link3"]
        parent = "palm"
        for k, (link, (Tb, Ta)) in enumerate(zip(links, chain)):
            name = f"{finger}_{link}"
            bodies.append(_link_body(name, link, to_world(Ta)))
            Tj = to_world(Tb)
            anchor, axis = tuple(Tj[:3, 3]), tuple(Tj[:3, 2])
            if link == "link1":
                # DOF0 is GraspIt!'s "rigid" DOF (Kp 1e11): held at the pre-shape by an exact velocity
                # motor on finger 1, finger 2 coupled at 1; held, it never meets its 0..180 deg limits
                jn = f"{finger}_spread"
                if finger == "f1":
                    joints.append(Joint(jn, "revolute", parent, name, anchor, axis, motor=Motor(0.0, spread_torque)))
                else:
                    joints.append(Joint(jn, "revolute", parent, name, anchor, axis, follows="f1_spread", ratio=1.0))
            elif link == "link2":     # the thumb's DOF has twice the effort (GraspIt! 5e9 vs 2.5e9)
                joints.append(Joint(f"{finger}_proximal", "revolute", parent, name, anchor, axis, *lim_flex,
                                    motor=Motor(0.0, grip_torque * (2.0 if finger == "thumb" else 1.0))))
            else:
                joints.append(Joint(f"{finger}_distal", "revolute", parent, name, anchor, axis,
                                    follows=f"{finger}_proximal", ratio=1.0 / 3.0))
            parent = name
    return bodies, joints


FINGER_JOINTS = ("f1_proximal", "f2_proximal", "thumb_proximal")
GLASS_CENTRE = 0.007   # m along the glass axis (from GraspIt!'s origin) under the palm: equal bowl radii under both fingers


def build(object: str = "glass", material: str = "plastic", object_material: str = "glass",
          table_material: str = "wood", preshape: float = 0.9, spread: float = 0.0, palm_height: float = 0.17,
          object_offset: float = 0.0, grip_torque: float = 2.5, spread_torque: float = float("inf"),
          close_speed: float = 0.5, lift: float = 0.1, lift_speed: float = 0.1, hold: float = 2.0,
          settle: float = 0.05, close_timeout: float = 1.0, dt: float = 0.005, margin: float = 0.003,
          friction_directions: int = 4, object_mass: float = 0.2, cfm: float = 1e-6) -> Scene:
    """The Barrett hand over ``object`` on a table. ``material`` of the hand's links, and of object
    and table (friction from the material table); ``preshape``: flexion DOF at start (rad; GraspIt!'s
    world uses 0.9); ``spread`` (rad); ``palm_height``: palm face above the table (m);
    ``object_offset``: object centre along the closing direction (m, world y); ``grip_torque``:
    force limit of the flexion motors (N m; GraspIt! maxEffort 2.5e9 in its units, ~2.5 N m);
    script: close at ``close_speed`` (rad/s) until the fingers stall, lift the wrist by ``lift`` (m)
    at ``lift_speed`` (m/s), hold for ``hold`` (s). ``cfm``: constraint force mixing on the contact
    rows (arechavaleta §V-B regularises with a CFM too; 1e-6 keeps Lemke's pivots well conditioned
    when a finger face rests on the object with four coplanar contact points)."""
    for nm, m in (("material", material), ("object_material", object_material), ("table_material", table_material)):
        check_material(nm, m)
    for nm, val in (("grip_torque", grip_torque), ("spread_torque", spread_torque), ("close_speed", close_speed),
                    ("lift_speed", lift_speed), ("palm_height", palm_height), ("dt", dt)):
        if not val > 0:
            raise ModelError(f"{nm} must be > 0, got {val}")
    if not 0.0 <= preshape <= 144 * DEG:
        raise ModelError(f"preshape must lie in [0, {144 * DEG:.4f}] rad (the flexion DOF range), got {preshape}")
    if not 0.0 <= spread <= np.pi:
        raise ModelError(f"spread must lie in [0, pi] rad, got {spread}")
    if lift < 0 or hold < 0 or settle < 0:
        raise ModelError("lift, hold and settle must be >= 0")
    world = _T(0.0, 0.0, palm_height) @ _Rx(np.pi)             # palm approach +z -> world -z
    bodies, joints = hand_bodies(world, spread, preshape, grip_torque, spread_torque)
    obj = make_object(object, mass=object_mass, position=(0.0, object_offset, 0.0), centre=GLASS_CENTRE)
    table = Body("table", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0, name="table")])
    bodies += [obj, table]
    links = {b.name: material for b in bodies if b.name not in ("object", "table")}
    pair_mu = pair_friction(links, {"object": object_material, "table": table_material})
    pair_mu.update(pair_friction({"object": object_material}, {"table": table_material}))
    scene = Scene(name="barrett-grasp", bodies=bodies, joints=joints, mu=0.0, pair_mu=pair_mu,
                  settings=Settings(dt=dt, margin=margin, friction_directions=friction_directions, cfm=cfm))
    fingers = {j: grip_torque * (2.0 if j.startswith("thumb") else 1.0) for j in FINGER_JOINTS}
    attach_script(scene, fingers, close_speed, grip_torque, lift, lift_speed, hold, settle, close_timeout=close_timeout)
    return scene


def attach_script(scene, fingers, close_speed, grip_torque, lift, lift_speed, hold, settle, **kw):
    """Give ``scene`` its grasp script: ``controllers``, ``summary`` and ``duration`` attributes."""
    from ..control.grasp import GraspScript
    script = GraspScript(fingers=fingers, wrist="palm", obj="object", close_speed=close_speed,
                         max_torque=grip_torque, lift=lift, lift_speed=lift_speed, hold=hold, settle=settle, **kw)
    scene.controllers = [script]
    scene.summary = script.summary
    scene.duration = script.duration
    scene.script = script
    return script

