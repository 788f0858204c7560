"""Solo-12 (Open Dynamic Robot Initiative) from the URDF shipped in the ``example-robot-data`` pip
package, loaded by :func:`contactlab.mechanics.load_urdf`, trotting in place with the quadruped's
controller scaled to its legs (issue 13).

Changes to the loaded mechanism, all stated: the legs' collision meshes are replaced by a sphere
of the foot's radius (0.016 m, the extent of ``solo_foot.stl``) on each FOOT link, so only the feet
and the base (convex hull of its mesh) touch the ground, as on the paper's robot; the robot is
posed by forward kinematics in a crouched stance (HFE +-``hfe``, KFE -+2 ``hfe``; front knees
backwards, hind knees forwards) with the feet on a ground plane, so the simulator's joint
coordinates are zero there and the controller adds the pose back (``LegSetup.q_offset``). Inverse
kinematics is numerical (damped least squares through the Jacobian of the URDF chain).
"""
from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np

from ..control import Gait, JointPD, LegController, LegSetup, SerialLegs, attach, axis_rotations
from ..errors import ModelError
from ..mechanics.rotation import quat_from_matrix, quat_to_matrix
from ..mechanics.scene import Body, Scene, Settings, Shape

LEGS = ("FL", "FR", "HL", "HR")
JOINTS = ("HAA", "HFE", "KFE")
FOOT_RADIUS = 0.016


def urdf_path(robot: str = "solo12") -> Path:
    """The URDF of ``robot`` (solo12, go1) inside the installed example-robot-data package."""
    rel = {"solo12": "solo_description/robots/solo12.urdf", "go1": "go1_description/urdf/go1.urdf"}
    if robot not in rel:
        raise ModelError(f"unknown robot {robot!r}; known: {sorted(rel)}")
    for root in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        p = Path(root) / "cmeel.prefix" / "share" / "example-robot-data" / "robots" / rel[robot]
        if p.exists():
            return p
    raise ModelError(f"{robot}: example-robot-data is not installed (pip install example-robot-data); "
                     f"looked for .../cmeel.prefix/share/example-robot-data/robots/{rel[robot]}")


def pose_scene(scene: Scene, angles: dict) -> None:
    """Turn revolute joints of ``scene`` (built at its zero configuration) by ``angles`` (name ->
    rad): every body below the joint rotates about the joint's axis, and the anchors and axes of
    the joints below move with them. Joints are taken in the scene's order, parents first."""
    children = {}
    for j in scene.joints:
        children.setdefault(j.parent, []).append(j)

    def subtree(body):
        out = [body]
        for j in children.get(body, []):
            out += subtree(j.child)
        return out

    bodies = {b.name: b for b in scene.bodies}
    for j in scene.joints:
        th = float(angles.get(j.name, 0.0))
        if th == 0.0:
            continue
        if j.kind != "revolute":
            raise ModelError(f"pose_scene: joint {j.name!r} is {j.kind}, not revolute")
        c, w = np.asarray(j.anchor, dtype=np.float64), np.asarray(j.axis, dtype=np.float64)
        R = axis_rotations(w / np.linalg.norm(w), th)
        below = subtree(j.child)
        for n in below:
            b = bodies[n]
            b.position = tuple(c + R @ (np.asarray(b.position) - c))
            b.orientation = quat_from_matrix(R @ quat_to_matrix(np.asarray(b.orientation, dtype=np.float64)))
        for k in scene.joints:
            if k.parent in below:
                k.anchor = tuple(c + R @ (np.asarray(k.anchor) - c))
                k.axis = tuple(R @ np.asarray(k.axis))


def build(hfe: float = 0.8, mu: float = 100.0, dt: float = 0.001, margin: float = 0.002, velocity: float = 0.0,
          period: float = 0.7, duty: float = 0.75, step_height: float = 0.024, kp: float = 20.0, kd: float = 0.2,
          foot_kp: float = 2000.0, foot_kd: float = 20.0, tau_max: float = 4.0, settle: float = 0.5,
          controller: bool = True) -> Scene:
    """Solo-12 standing on a plane; after ``settle`` s it trots (in place at ``velocity`` 0). Gains:
    the quadruped's scaled by the mass ratio (2.5 / 1.34 kg, rounded), step height by the leg
    length ratio (0.32 / 0.2 m)."""
    from ..mechanics.urdf import load_urdf
    sc = load_urdf(urdf_path("solo12"), fixed_base=False, name="solo12", settings=Settings(dt=dt, margin=margin))
    names = {b.name for b in sc.bodies}
    for b in sc.bodies:
        if b.name != "base_link":
            b.shapes = []
    for leg in LEGS:   # the foot link's frame is its centre of mass, 0.36 mm above the sphere centre
        sc.body(f"{leg}_FOOT").shapes = [Shape("sphere", radius=FOOT_RADIUS, position=(0.0, 0.0, -0.00035767),
                                               name=f"{leg}_foot")]
    # leg chains at the zero configuration, in the base frame (base_link: identity orientation)
    base0 = np.asarray(sc.body("base_link").position, dtype=np.float64)
    jd = {j.name: j for j in sc.joints}
    anchors = np.array([[np.asarray(jd[f"{l}_{k}"].anchor) - base0 for k in JOINTS] for l in LEGS])
    axes = np.array([[np.asarray(jd[f"{l}_{k}"].axis) for k in JOINTS] for l in LEGS])
    feet0 = np.array([np.asarray(sc.body(f"{l}_FOOT").position) + (0, 0, -0.00035767) - base0 for l in LEGS])
    kin = SerialLegs(anchors, axes, feet0)
    sign = np.array([1.0, 1.0, -1.0, -1.0])                 # hind knees bend the other way
    q0 = np.stack([np.zeros(4), sign * hfe, -2.0 * sign * hfe], axis=1)
    pose_scene(sc, {f"{l}_{k}": q0[i, m] for i, l in enumerate(LEGS) for m, k in enumerate(JOINTS)})
    feet = kin.forward(q0)
    lift = -(feet[:, 2].min() + base0[2]) + FOOT_RADIUS + 1e-5   # raise so the feet touch z = 0
    for b in sc.bodies:
        b.position = tuple(np.asarray(b.position) + (0.0, 0.0, lift))
    for j in sc.joints:
        j.anchor = tuple(np.asarray(j.anchor) + (0.0, 0.0, lift))
    assert "ground" not in names
    sc.bodies.insert(0, Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), name="ground")]))
    sc.mu = mu
    sc.validate()
    if controller:
        mass = float(sum(b.mass for b in sc.bodies if b.kind != "fixed"))
        setup = LegSetup(base="base_link", joints=[[f"{l}_{k}" for k in JOINTS] for l in LEGS],
                         feet=[f"{l}_FOOT" for l in LEGS], foot_radius=FOOT_RADIUS, kinematics=kin, q_offset=q0,
                         nominal=feet, height=float(base0[2] + lift), mass=mass)
        ctl = LegController(setup, Gait(period=period, duty=duty, step_height=step_height, velocity=velocity),
                            JointPD(kp, kd, tau_max), settle=settle, foot_kp=foot_kp, foot_kd=foot_kd)
        attach(sc, ctl)
    return sc


GO1_LEGS = ("FR", "FL", "RR", "RL")
GO1_JOINTS = ("hip", "thigh", "calf")
GO1_FOOT_RADIUS = 0.02


def build_go1(thigh: float = 0.8, mu: float = 100.0, dt: float = 0.001, margin: float = 0.002, velocity: float = 0.0,
              period: float = 0.7, duty: float = 0.75, step_height: float = 0.03, kp: float = 100.0, kd: float = 1.0,
              foot_kp: float = 5000.0, foot_kd: float = 50.0, settle: float = 0.5, controller: bool = True) -> Scene:
    """Unitree go1 (example-robot-data ``go1_description``) standing on a plane; after ``settle`` s it
    trots (in place at ``velocity`` 0). Loaded with ``load_urdf(..., merge_fixed=True)``: rotors,
    feet and sensor frames folded into their parents (13 bodies, 12 revolute joints, 13.1 kg). Only
    the trunk's boxes and the feet (the URDF's 0.02 m spheres, on the calves after merging) collide.
    Posed crouched (thigh ``thigh``, calf -2 ``thigh``, all knees backwards) so the simulator's joint
    coordinates are zero there; the URDF's joint limits are shifted by the pose accordingly. Gains:
    joint PD the quadruped's scaled by the mass ratio (13.1 / 1.34 kg, rounded to 10x), foot PD 5x
    (10x saturated the hip ab/adduction torques in a fifth of the trotting steps), torque limits the
    URDF's efforts (23.7, 23.7, 35.55 N m), step height by the leg length ratio (0.43 / 0.2 m)."""
    from ..mechanics.urdf import load_urdf
    sc = load_urdf(urdf_path("go1"), fixed_base=False, merge_fixed=True, name="go1",
                   settings=Settings(dt=dt, margin=margin))
    feet_local = {}
    for b in sc.bodies:
        if b.name == "base":
            b.shapes = [s for s in b.shapes if s.kind == "box"]
        elif b.name.endswith("_calf"):
            foot = [s for s in b.shapes if s.kind == "sphere"]
            if len(foot) != 1:
                raise ModelError(f"go1: expected one foot sphere on {b.name}, found {len(foot)}")
            b.shapes = foot
            feet_local[b.name] = np.asarray(foot[0].position, dtype=np.float64)
        else:
            b.shapes = []
    base0 = np.asarray(sc.body("base").position, dtype=np.float64)
    jd = {j.name: j for j in sc.joints}
    names = [[f"{l}_{k}_joint" for k in GO1_JOINTS] for l in GO1_LEGS]
    anchors = np.array([[np.asarray(jd[n].anchor) - base0 for n in leg] for leg in names])
    axes = np.array([[np.asarray(jd[n].axis) for n in leg] for leg in names])

    def foot_world(leg):
        b = sc.body(f"{leg}_calf")
        return np.asarray(b.position) + quat_to_matrix(np.asarray(b.orientation, dtype=np.float64)) @ feet_local[b.name]

    feet0 = np.array([foot_world(l) - base0 for l in GO1_LEGS])
    kin = SerialLegs(anchors, axes, feet0)
    q0 = np.tile([0.0, thigh, -2.0 * thigh], (4, 1))
    pose_scene(sc, {n: q0[i, m] for i, leg in enumerate(names) for m, n in enumerate(leg)})
    for i, leg in enumerate(names):        # limits are measured from the posed configuration
        for m, n in enumerate(leg):
            j = jd[n]
            j.lower = None if j.lower is None else j.lower - q0[i, m]
            j.upper = None if j.upper is None else j.upper - q0[i, m]
    feet = kin.forward(q0)
    lift = -(feet[:, 2].min() + base0[2]) + GO1_FOOT_RADIUS + 1e-5
    for b in sc.bodies:
        b.position = tuple(np.asarray(b.position) + (0.0, 0.0, lift))
    for j in sc.joints:
        j.anchor = tuple(np.asarray(j.anchor) + (0.0, 0.0, lift))
    sc.bodies.insert(0, Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), name="ground")]))
    sc.mu = mu
    sc.validate()
    if controller:
        mass = float(sum(b.mass for b in sc.bodies if b.kind != "fixed"))
        setup = LegSetup(base="base", joints=names, feet=[f"{l}_calf" for l in GO1_LEGS],
                         foot_radius=GO1_FOOT_RADIUS, kinematics=kin, q_offset=q0, nominal=feet,
                         height=float(base0[2] + lift), mass=mass)
        ctl = LegController(setup, Gait(period=period, duty=duty, step_height=step_height, velocity=velocity,
                                        offsets=(0.75, 0.25, 0.25, 0.75)),
                            JointPD(kp, kd, np.array([23.7, 23.7, 35.55])), settle=settle, foot_kp=foot_kp,
                            foot_kd=foot_kd)
        attach(sc, ctl)
    return sc
