"""``hand5-grasp``: a five-finger hand from GraspIt!'s HumanHand20DOF (GraspIt! model data
§1.4) picking up a ball, as arechavaleta Fig. 1 (metal hand, rubber ball, mu 1.0).

Four fingers (index, middle, ring, little), each with an abduction joint and three flexion joints
(MCP, PIP, DIP) from the spec's DH rows (theta = q, a = the listed bone length, alpha 90 deg for
the abduction row), at the listed base translations with Rx(-90 deg); the thumb from its four DH
rows at its base with the listed rotation matrix read as columns (the reading that puts the thumb
on the palm side, opposing the fingers: the spec marks the rows/columns question UNCERTAIN). The
abduction and MCP joints form GraspIt!'s "Universal" joint: an intermediate knuckle body (20 g, no
collision shape) between them. Links are boxes of the bone length (at most the mesh extents
listed, width and thickness capped at 18 mm so neighbouring fingers do not overlap), 150 g each
(the spec's mass for every link); the palm is a box (the mesh's 162.5 x 62.8 x 102.4 mm extents,
thickness 30 mm) and the kinematic wrist. The hand is turned palm-down (GraspIt!'s approach
direction (0, -1, 0) along world -z); the ball lies on a wood table under the fingers.

Pre-grasp, then closing (as a grasp planner hands it over): the fingers start flexed by
``preshape`` and the thumb rolled open (its second joint at ``thumb_roll``, its flexion joints at
``thumb_preshape``), so that at t = 0 every hand body is more than the contact margin from the
ball and from every body it is not jointed to; closing brings the thumb back across to oppose the
fingers. Script: the flexion joints (and the thumb's) close with force-limited velocity motors
until they stall, the wrist lifts, holds (:mod:`contactlab.control.grasp`). Every flexion joint
has its own motor, as in HumanHand20DOF (20 DOFs, no coupling); the thumb's motors have twice the
force limit.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..mechanics.rotation import quat_from_matrix
from ..mechanics.scene import Body, Joint, Motor, Scene, Settings, Shape
from .barrett import DEG, _T, _Rx, attach_script, dh_chain
from .materials import check_material, pair_friction

# base translation (mm), abduction limit (deg), bone lengths a (mm, signed as in the file)
FINGERS = {"index": ((-140.06, 11.20, 36.42), 20.0, (-43.19, -29.56, -25.35)),
           "middle": ((-145.66, 11.20, 8.40), 10.0, (-46.20, -30.99, -29.20)),
           "ring": ((-145.66, 5.60, -19.61), 20.0, (-39.12, -28.31, -24.48)),
           "little": ((-134.46, -8.40, -42.02), 30.0, (-29.91, -21.10, -23.16))}
THUMB_BASE = (-50.62, -11.51, 18.93)
THUMB_R = np.array([[-0.1486, -0.9003, 0.4089], [0.2665, 0.3618, 0.8933], [-0.9522, 0.2418, 0.1862]]).T
# thumb DH rows (theta offset deg, a mm, alpha deg) and limits (deg); the last link's 34 mm lives in its mesh
THUMB_ROWS = ((0.0, 0.0, 90.0, (-10, 70)), (49.5, 52.12, 44.0, (-50, 25)), (5.0, 40.76, 0.0, (0, 90)),
              (85.0, 0.0, 90.0, (0, 100)))
LINK_MASS = 0.15
KNUCKLE_MASS = 0.02
THUMB1_COVER = 0.4     # share of thumb1 its box covers, from the distal end (clear of the palm box by > the margin)
WIDTH = 18.0          # mm, finger link width / thickness cap
PALM = ((-125.0, -10.0, -51.2), (27.5, 15.0, 51.2))   # mm, palm box (mesh extents; 25 mm thick, clear of the finger bases)


def _box_body(name, T, lo, hi, mass):
    """A body with a box from ``lo`` to ``hi`` (mm, in frame T whose translation is in m)."""
    lo, hi = np.asarray(lo) * 1e-3, np.asarray(hi) * 1e-3
    c = 0.5 * (lo + hi)
    R = T[:3, :3]
    return Body(name, mass=mass, position=tuple(T[:3, 3] + R @ c), orientation=quat_from_matrix(R),
                shapes=[Shape("box", size=tuple(hi - lo), name=name)])


def build(material: str = "metal", object_material: str = "rubber", table_material: str = "wood",
          radius: float = 0.04, object_mass: float = 0.1, palm_height: float = 0.09, object_x: float = -0.16,
          preshape: float = 0.2, grip_torque: float = 0.6, close_speed: float = 1.0, lift: float = 0.1,
          lift_speed: float = 0.1, hold: float = 2.0, settle: float = 0.05, close_timeout: float = 2.0,
          dt: float = 0.005, margin: float = 0.003, friction_directions: int = 4, cfm: float = 1e-6,
          thumb_preshape: float = 0.0, thumb_roll: float = -0.34, thumb_abduction: float = 0.0,
          object_y: float = 0.0) -> Scene:
    """The hand palm-down with its palm face ``palm_height`` above the table, the ball (``radius``)
    under the fingers at world (``object_x``, ``object_y``); ``preshape``: every finger flexion DOF
    at start (rad). The thumb's pre-grasp: ``thumb_abduction`` (its first joint), ``thumb_roll``
    (its second; -0.34 rad turns its tip 3.3 mm clear of the ball, where the fingers' pre-shape
    would put it 9.4 mm inside) and ``thumb_preshape`` (its two flexion joints, at their lower
    limit 0). ``close_timeout`` 2 s: the fingers stall on the ball after ~1.5 s at 1 rad/s (with 1
    s the wrist rose while they were still closing, and the ball shifted 11 mm in the hand when it
    stopped)."""
    for nm, m in (("material", material), ("object_material", object_material), ("table_material", table_material)):
        check_material(nm, m)
    for nm, val in (("radius", radius), ("object_mass", object_mass), ("grip_torque", grip_torque),
                    ("close_speed", close_speed), ("dt", dt), ("palm_height", palm_height)):
        if not val > 0:
            raise ModelError(f"hand5-grasp: {nm} must be > 0, got {val}")
    # palm frame (mm) -> world (m): approach -y -> world -z, palm face (y = -10 mm) at palm_height
    W = _T(0.0, 0.0, palm_height + 0.010) @ _Rx(np.pi / 2)
    S = np.diag([1e-3, 1e-3, 1e-3, 1.0])
    to_world = lambda T: W @ S @ T @ np.linalg.inv(S)
    bodies = [_box_body("palm", W, *PALM, 0.4)]
    bodies[0].kind = "kinematic"
    joints, flex = [], {}
    for finger, (base, abd, lengths) in FINGERS.items():
        rows = [(0.0, 0.0, 0.0, 90 * DEG)] + [(preshape, 0.0, a, 0.0) for a in lengths]
        chain = dh_chain(_T(*base) @ _Rx(-90 * DEG), rows)
        parent = "palm"
        for k, (Tb, Ta) in enumerate(chain):
            Tj = to_world(Tb)
            anchor, axis = tuple(Tj[:3, 3]), tuple(Tj[:3, 2])
            if k == 0:
                name = f"{finger}_knuckle"
                bodies.append(Body(name, mass=KNUCKLE_MASS, inertia=np.eye(3) * 2e-6,
                                   position=tuple(to_world(Ta)[:3, 3]), orientation=quat_from_matrix(to_world(Ta)[:3, :3])))
                joints.append(Joint(f"{finger}_abd", "revolute", parent, name, anchor, axis, -abd * DEG, abd * DEG,
                                    motor=Motor(0.0, grip_torque)))
            else:
                L = abs(lengths[k - 1])
                name = f"{finger}_{k}"
                bodies.append(_box_body(name, to_world(Ta), (0.0, -WIDTH / 2, -WIDTH / 2), (L, WIDTH / 2, WIDTH / 2),
                                        LINK_MASS))
                jn = f"{finger}_{('mcp', 'pip', 'dip')[k - 1]}"
                joints.append(Joint(jn, "revolute", parent, name, anchor, axis, -10 * DEG - preshape,
                                    90 * DEG - preshape, motor=Motor(0.0, grip_torque)))
                flex[jn] = grip_torque
            parent = name
    B = _T(*THUMB_BASE)
    B[:3, :3] = THUMB_R
    tq = float(thumb_preshape)
    q_thumb = (thumb_abduction, thumb_roll, tq, tq)
    rows = [((off * DEG) + q_thumb[k], 0.0, a, al * DEG) for k, (off, a, al, _) in enumerate(THUMB_ROWS)]
    chain = dh_chain(B, rows)
    parent = "palm"
    for k, ((Tb, Ta), (_, a, _, lim)) in enumerate(zip(chain, THUMB_ROWS)):
        Tj = to_world(Tb)
        anchor, axis = tuple(Tj[:3, 3]), tuple(Tj[:3, 2])
        name = f"thumb_{k}"
        if k == 0:
            bodies.append(Body(name, mass=KNUCKLE_MASS, inertia=np.eye(3) * 2e-6,
                               position=tuple(to_world(Ta)[:3, 3]), orientation=quat_from_matrix(to_world(Ta)[:3, :3])))
        else:
            L = a if a > 0 else 34.0
            # thumb1's box covers its distal half (its base sits inside the palm box)
            lo = ((-L if k > 1 else -THUMB1_COVER * L), -WIDTH / 2, -WIDTH / 2) if a > 0 else (0.0, -WIDTH / 2, -WIDTH / 2)
            hi = (0.0, WIDTH / 2, WIDTH / 2) if a > 0 else (L, WIDTH / 2, WIDTH / 2)
            bodies.append(_box_body(name, to_world(Ta), lo, hi, LINK_MASS))
        q0 = q_thumb[k]
        joints.append(Joint(f"thumb_j{k + 1}", "revolute", parent, name, anchor, axis, lim[0] * DEG - q0,
                            lim[1] * DEG - q0, motor=Motor(0.0, 2 * grip_torque)))
        if k >= 1:
            flex[f"thumb_j{k + 1}"] = 2 * grip_torque
        parent = name
    ball = Body("object", mass=object_mass, position=(object_x, object_y, radius), shapes=[Shape("sphere", radius=radius)])
    table = Body("table", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    bodies += [ball, table]
    links = {b.name: material for b in bodies if b.name not in ("object", "table")}
    pair_mu = pair_friction(links, {"object": object_material, "table": table_material})
    pair_mu.update(pair_friction({"object": object_material}, {"table": table_material}))
    scene = Scene(name="hand5-grasp", bodies=bodies, joints=joints, mu=0.0, pair_mu=pair_mu,
                  settings=Settings(dt=dt, margin=margin, friction_directions=friction_directions, cfm=cfm))
    attach_script(scene, flex, close_speed, grip_torque, lift, lift_speed, hold, settle, close_timeout=close_timeout)
    return scene
