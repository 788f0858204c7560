"""The trotting quadruped of drumwright §VII-B (the "LINKS" robot of the NSV experiments, Moby +
Pacer; geometry, masses, joints and gait from scenario-specs §2.2).

1.34 kg: a base (centre plate, front and rear blocks, head, cameras, board, battery, IMU, all
fixed together, so one rigid body with their summed inertia) and four legs of a hip
ab/adduction link, a thigh and a shank carrying the foot sphere (r 0.01 m), joined by 12
revolute joints. Only the two end blocks and the four feet collide. The robot starts standing in
the paper's initial joint angles (legs built at q = 0 along +-x, then posed by forward
kinematics), feet on the ground; the simulator's joint coordinates are zero there, so the
controller adds the initial angles back (``LegSetup.q_offset``).

``terrain``: ``flat`` (a ground plane) or ``rough`` (the plane plus ``bumps`` boxes of height up to
``bump_height`` at seeded random places along the path; the paper's own heightmap is flat to
+-5 um, its rough alternative unused). ``build`` attaches the trot controller: the scene carries
``controllers`` (callables fn(sim)) and ``summaries`` ({"locomotion": fn(sim, traj) -> dict}),
which ``contactlab simulate`` passes to the simulator and adds to its JSON.
"""
from __future__ import annotations

import numpy as np

from ..control import Gait, JointPD, LegController, LegSetup, SerialLegs, ThreeJointLegs, attach, axis_rotations
from ..errors import ModelError
from ..mechanics.rotation import quat_from_matrix
from ..mechanics.scene import Body, Joint, Scene, Settings, Shape

LEGS = ("LF", "RF", "LH", "RH")
SIDE = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=np.float64)       # (x, y) sign per leg
AXIS_SIGNS = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, 1], [-1, -1, -1]], dtype=np.float64)
Q_INIT = np.array([[0.3927, 0.7854, 1.5708], [-0.3927, -0.7854, -1.5708],
                   [-0.3927, -0.7854, -1.5708], [0.3927, 0.7854, 1.5708]])
FOOT_RADIUS = 0.01
#: the box foot's orientation in the world at the start: turned 45 deg about y, so that its sole is
#: one edge across the direction of travel (two points on a plane) r below its centre
_EDGE_DOWN = np.array([[np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4)], [0.0, 1.0, 0.0],
                       [-np.sin(np.pi / 4), 0.0, np.cos(np.pi / 4)]])

# base parts (Moby frame of BODY0): mass, position, principal inertia (as listed, after any yaw)
_BASE_PARTS = [
    (0.10, (0.0, 0.0, 0.0), (1.667e-4, 8.667e-5, 2.467e-4)),           # BODY0 centre plate
    (0.05, (0.075, 0.0, 0.0), (1.133e-4, 1.708e-5, 1.171e-4)),         # BODY1 front block
    (0.05, (-0.075, 0.0, 0.0), (1.133e-4, 1.708e-5, 1.171e-4)),        # BODYN rear block
    (0.005, (0.1, 0.0, 0.0325), (2.93e-6, 9.27e-7, 3.33e-6)),          # HEAD1
    (0.005, (0.12, 0.025, 0.0341), (6e-8, 6e-8, 6e-8)),                # CAMERA1
    (0.005, (0.12, -0.025, 0.0341), (6e-8, 6e-8, 6e-8)),               # CAMERA2
    (0.025, (0.0, 0.0, 0.02), (2.60e-5, 1.54e-5, 3.10e-5)),            # RPI board
    (0.05, (-0.075, 0.0, 0.035), (8.54e-5, 1.04e-5, 8.83e-5)),         # BATTERY
    (0.05, (0.065, 0.06, 0.0275), (6.04e-6, 3.54e-6, 7.71e-6)),        # IMU
]


def _composite(parts) -> tuple[float, np.ndarray, np.ndarray]:
    """Total mass, centre of mass and inertia about it of point-placed parts (parallel axes)."""
    m = np.array([p[0] for p in parts])
    x = np.array([p[1] for p in parts], dtype=np.float64)
    M = m.sum()
    c = (m[:, None] * x).sum(axis=0) / M
    I = np.zeros((3, 3))
    for mi, xi, Ii in zip(m, x, (p[2] for p in parts)):   # builder only (nine parts), not a step
        r = xi - c
        I += np.diag(Ii) + mi * (r @ r * np.eye(3) - np.outer(r, r))
    return float(M), c, I


def leg_geometry():
    """Per leg in the Moby base frame at q = 0: joint centres (4, 3, 3), axes (4, 3, 3), foot
    centres (4, 3), and the link parts (mass, centre, inertia) of hip, thigh and shank+foot."""
    sx, sy = SIDE[:, 0], SIDE[:, 1]
    y = 0.06 * sy
    anchors = np.stack([np.stack([sx * d, y, 0 * sx], axis=1) for d in (0.10, 0.15, 0.25)], axis=1)
    ex, ey = np.array([1.0, 0, 0]), np.array([0, 1.0, 0])
    axes = np.stack([AXIS_SIGNS[:, 0, None] * ex, AXIS_SIGNS[:, 1, None] * ey, AXIS_SIGNS[:, 2, None] * ey], axis=1)
    feet = np.stack([sx * 0.35, y, 0 * sx], axis=1)
    return anchors, axes, feet


def _link_parts(sx: float, y: float):
    hip = [(0.10, (sx * 0.125, y, 0.0), (1.5e-5, 2.833e-5, 2.833e-5))]
    thigh = [(0.10, (sx * 0.2, y, 0.0), (1.083e-5, 1.233e-4, 1.275e-4))]
    shank = [(0.04, (sx * 0.3, y, 0.0), (5.0e-7, 3.358e-5, 3.358e-5)), (0.01, (sx * 0.35, y, 0.0), (4e-7, 4e-7, 4e-7))]
    return hip, thigh, shank


def build(terrain: str = "flat", mu: float = 100.0, bumps: int = 40, bump_height: float = 0.004,
          seed: int = 0, dt: float = 0.001, margin: float = 0.002, velocity: float = 0.05,
          period: float = 0.7, duty: float = 0.75, step_height: float = 0.015, kp: float = 10.0,
          kd: float = 0.1, tau_max: float = 4.0, settle: float = 0.1, controller: bool = True,
          foot: str = "sphere") -> Scene:
    """The quadruped standing on ``terrain`` with its trot controller (``controller=False``: none).
    ``mu``: Coulomb friction (the paper's Coulomb comparison uses 100; the no-slip and viscous
    models ignore it). ``foot``: ``sphere`` (the paper's r 0.01 m ball: one contact point per
    foot) or ``box`` (a cube of side sqrt(2) r with the ball's centre, standing on one edge across the
    direction of travel, r below its centre: two points per foot on a plane, four when it rocks
    onto a face, more on a bump's edge, so that the contact counts per step come near those of
    the paper's Moby runs, 1-30 and 6 on average, drumwright §VII-B)."""
    if terrain not in ("flat", "rough"):
        raise ModelError(f"quadruped: terrain must be 'flat' or 'rough', got {terrain!r}")
    if foot not in ("sphere", "box"):
        raise ModelError(f"quadruped: foot must be 'sphere' or 'box', got {foot!r}")
    anchors, axes, feet0 = leg_geometry()
    kin0 = SerialLegs(anchors, axes, feet0)
    # pose of every leg link at the initial angles: g1, g1 g2, g1 g2 g3
    frames = []
    R = np.broadcast_to(np.eye(3), (4, 3, 3)).copy()
    t = np.zeros((4, 3))
    for i in range(3):
        c = anchors[:, i]
        Ri = axis_rotations(axes[:, i], Q_INIT[:, i])
        t = np.einsum("lij,lj->li", R, c - np.einsum("lij,lj->li", Ri, c)) + t
        R = R @ Ri
        frames.append((R.copy(), t.copy()))
    feet = kin0.forward(Q_INIT)
    M0, com0, I0 = _composite(_BASE_PARTS)
    z0 = -feet[:, 2].min() + FOOT_RADIUS + 1e-5        # Moby base origin height: feet on the ground
    origin = np.array([0.0, 0.0, z0])
    bodies = [Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), name="ground")])]
    if terrain == "rough":      # boxes half sunk in the plane, none under the feet at the start
        rng = np.random.default_rng(seed)
        k = 0
        while k < int(bumps):
            h = float(rng.uniform(0.3, 1.0) * bump_height)
            size = (float(rng.uniform(0.02, 0.05)), float(rng.uniform(0.02, 0.05)), 2 * h)
            p = (float(rng.uniform(-0.25, 0.85)), float(rng.uniform(-0.2, 0.2)), 0.0)
            if np.any(np.all(np.abs(feet[:, :2] + origin[:2] - p[:2]) < np.array(size[:2]) / 2 + 0.02, axis=1)):
                continue
            bodies[0].shapes.append(Shape("box", size=size, position=p, name=f"bump{k}"))
            k += 1
    block = (0.05, 0.16, 0.04)
    bodies.append(Body("base", mass=M0, inertia=I0, position=tuple(origin + com0),
                       shapes=[Shape("box", size=block, position=tuple(np.array([0.075, 0, 0]) - com0), name="front"),
                               Shape("box", size=block, position=tuple(np.array([-0.075, 0, 0]) - com0), name="rear")]))
    joints = []
    names = ("hip", "thigh", "shank")
    jnames = ("X_1", "Y_2", "Y_3")
    for l, leg in enumerate(LEGS):
        parts = _link_parts(SIDE[l, 0], 0.06 * SIDE[l, 1])
        parent = "base"
        for i in range(3):
            Rl, tl = frames[i][0][l], frames[i][1][l]
            m, c, I = _composite(parts[i])
            shapes = [] if i < 2 else [
                Shape("sphere", radius=FOOT_RADIUS, position=tuple(feet0[l] - c), name=f"{leg}_foot") if foot == "sphere"
                else Shape("box", size=(np.sqrt(2) * FOOT_RADIUS,) * 3, position=tuple(feet0[l] - c),
                           orientation=quat_from_matrix(Rl.T @ _EDGE_DOWN), name=f"{leg}_foot")]
            name = f"{leg}_{names[i]}"
            bodies.append(Body(name, mass=m, inertia=I, position=tuple(origin + Rl @ c + tl),
                               orientation=quat_from_matrix(Rl), shapes=shapes))
            Rp, tp = (np.eye(3), np.zeros(3)) if i == 0 else (frames[i - 1][0][l], frames[i - 1][1][l])
            joints.append(Joint(f"{leg}_{jnames[i]}", "revolute", parent, name,
                                anchor=tuple(origin + Rp @ anchors[l, i] + tp), axis=tuple(Rp @ axes[l, i])))
            parent = name
    settings = Settings(dt=dt, margin=margin)
    scene = Scene("quadruped", bodies, joints, mu=mu, settings=settings)
    if controller:
        # kinematics in the base body frame (origin at its centre of mass), paper's angle convention
        setup = LegSetup(base="base", joints=[[f"{leg}_{j}" for j in jnames] for leg in LEGS],
                         feet=[f"{leg}_shank" for leg in LEGS], foot_radius=FOOT_RADIUS,
                         kinematics=SerialLegs(anchors - com0, axes, feet0 - com0), q_offset=Q_INIT.copy(),
                         nominal=feet - com0, height=float(z0 + com0[2]), mass=M0 + 4 * 0.25,
                         analytic=ThreeJointLegs(anchors[:, 1] - com0, SIDE[:, 0], AXIS_SIGNS))
        ctl = LegController(setup, Gait(period=period, duty=duty, step_height=step_height, velocity=velocity),
                            JointPD(kp, kd, tau_max), settle=settle)
        attach(scene, ctl)
    return scene


#: drumwright Tables II-III (s for the 10 s run, Moby on a 2.27 GHz Xeon) and the contacts per step of §VII-B
PAPER_TABLE_II = {("stewart-trinkle", "lemke"): 416.284, ("no-slip", "ppm"): 301.796}
PAPER_TABLE_III = {("viscous", "lemke"): 2936.36, ("viscous", "ppm"): 2139.73}
PAPER_CONTACTS = {"min": 1, "max": 30, "mean": 6, "std": 8}


def run_trot(model: str = "no-slip", method: str | None = None, duration: float = 10.0, *, scene: str = "quadruped",
             progress=None, model_options: dict | None = None, compiled: bool = True, **params) -> dict:
    """Simulate the trot and time all of it: returns the controller's log arrays, the per-step
    records (contacts, LCP size, pivots, solve time, ...), the locomotion summary and the wall
    time split into collision detection (``sim.world.detect``), control (the controller callback),
    LCP solve (``StepRecord.solve_time``) and the rest (assembly of the constraint system, the
    model's build/recover, integration and position projections); ``cpu_s`` is the process CPU
    time of the run (the fair measure on a loaded machine). ``progress``: called every 100 steps;
    ``model_options``: passed to the contact model (e.g. ``{"mu_v": 1.0}``); ``compiled``: the
    Simulator's (False: every model through the general stages, as a comparison of models rather
    than of their engines wants)."""
    import time

    from ..sim import Simulator
    from .registry import make_scene
    sc = make_scene(scene, **params)
    ctl = sc.controllers[0]
    clock = {"collision": 0.0, "control": 0.0}

    def timed(key, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                clock[key] += time.perf_counter() - t0
        return wrapper

    sim = Simulator(sc, model, method, controllers=[timed("control", ctl)], model_options=model_options,
                    compiled=compiled)
    sim.world.detect = timed("collision", sim.world.detect)
    steps = int(round(duration / sim.h))
    from ..sim.recorder import Trajectory
    traj = Trajectory(list(sim.model.names))
    t0, c0 = time.perf_counter(), time.process_time()
    while len(traj.records) < steps and traj.error is None:
        sim.run(min(100, steps - len(traj.records)) * sim.h, trajectory=traj, record_poses=True)
        if progress is not None:
            progress()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    col = {k: traj.column(k) for k in ("contacts", "lcp_size", "pivots", "iterations", "solve_time",
                                          "contact_energy_gain", "max_penetration", "kinetic_energy", "success")}
    solve = float(col["solve_time"].sum())
    return {"model": model, "method": sim.method, "duration": len(traj.records) * sim.h, "steps": len(traj.records),
            "error": traj.error, "wall_s": wall, "cpu_s": cpu, "collision_s": clock["collision"], "control_s": clock["control"],
            "solve_s": solve, "dynamics_s": wall - clock["collision"] - clock["control"] - solve,
            "summary": ctl.summary(sim, traj), "log": ctl.arrays(), "records": col, "metrics": traj.metrics(),
            "height": ctl.setup.height, "mass": float(sim.model.mass.sum()), "h": sim.h,
            "commanded_speed": commanded_speed(ctl, ctl.arrays()["time"]),
            "drift": _run_drift(sc, sim, traj, ctl),
            "mu_v": float(getattr(sim.model_options, "mu_v", np.nan))}


def _run_drift(sc, sim, traj, ctl) -> dict | None:
    """:func:`stance_drift` of a run (None when the feet carry no shape to measure from)."""
    feet = [sc.body(name) for name in ctl.setup.feet]
    if not all(b.shapes for b in feet) or not traj.positions:
        return None
    pos, quat = traj.poses()
    n = min(pos.shape[0], ctl.arrays()["contact"].shape[0])
    return stance_drift(pos[:n], quat[:n], ctl.arrays()["contact"][:n], np.array([sim.model.index(b.name) for b in feet]),
                        np.array([b.shapes[0].position for b in feet]), ctl.setup.foot_radius)


def commanded_speed(ctl, t: np.ndarray) -> np.ndarray:
    """The controller's commanded forward speed at times ``t``: 0 while settling, then the gait's
    velocity grown linearly over the ramp."""
    w = np.asarray(t, dtype=np.float64) - ctl.settle
    scale = np.where(w < 0, 0.0, np.minimum(1.0, w / ctl.ramp) if ctl.ramp > 0 else 1.0)
    return ctl.gait.velocity * scale


def drag_law_distance(contact: np.ndarray, u: np.ndarray, mu_v: float, mass: float, h: float) -> float:
    """Distance of a rigid body of ``mass`` driven only by viscous drag at its feet (drumwright
    eq. 15: -mu_v times the contact's tangential velocity, per contact) when its stance feet move
    backwards at the commanded speed ``u`` (per step) relative to it: with n(t) feet in contact
    (``contact`` (steps, feet) bool), M x'' = mu_v n(t) (u(t) - x'), integrated with step ``h``;
    time constant M / (mu_v n)."""
    n = np.asarray(contact).sum(axis=1)
    v = x = 0.0
    for k in range(n.size - 1):           # (post-run analysis over logged steps, not a simulation step)
        v += h * mu_v * n[k] / mass * (u[k] - v)
        x += h * v
    return x


def stance_drift(position: np.ndarray, quaternion: np.ndarray, contact: np.ndarray, feet: np.ndarray,
                 foot_offset: np.ndarray, radius: float = FOOT_RADIUS) -> dict:
    """Foot slip measured from the recorded poses alone (not from any contact model's rows): for
    each stance (a maximal run of steps with the foot in contact), the horizontal displacement of
    the foot's material point under its centre, ``radius`` below it, summed over the stance's
    steps: step k moves the point a = R_{k-1}^T (c_{k-1} - r e_z - x_{k-1}) (body frame) by
    (x_k + R_k a) - (x_{k-1} + R_{k-1} a), so rolling about the contact point counts zero and
    sliding counts its distance. ``position`` (states, bodies, 3) and ``quaternion`` (states,
    bodies, 4) as recorded (state 0 before the first step), ``contact`` (states, legs) the
    controller's foot-in-contact flags (row k: the step ending at state k), ``feet`` (legs,) the
    foot bodies, ``foot_offset`` (legs, 3) each foot centre in its body's frame. Returns per stance
    the net drift (m, the norm of the summed displacements) and its path (m, the summed norms),
    with the leg index and first state."""
    from ..mechanics.rotation import quat_to_matrix
    P = np.asarray(position, dtype=np.float64)[:, feet]                     # (S, L, 3)
    Q = np.asarray(quaternion, dtype=np.float64)[:, feet]
    S, L = P.shape[:2]
    R = quat_to_matrix(Q.reshape(-1, 4)).reshape(S, L, 3, 3)
    centre = P + np.einsum("slij,lj->sli", R, np.asarray(foot_offset, dtype=np.float64))
    ground = centre - np.array([0.0, 0.0, radius])                         # the point under the centre
    a = np.einsum("slji,slj->sli", R[:-1], ground[:-1] - P[:-1])           # body frame, per step
    moved = (P[1:] + np.einsum("slij,slj->sli", R[1:], a)) - ground[:-1]    # (S-1, L, 3)
    d = moved[..., :2]
    c = np.asarray(contact, dtype=bool)[1:S]
    out = {"leg": [], "start": [], "net_m": [], "path_m": []}
    for l in range(L):                    # post-run analysis of the log, not a simulation step
        on = np.flatnonzero(np.diff(np.concatenate([[0], c[:, l].astype(np.int8), [0]])) == 1)
        off = np.flatnonzero(np.diff(np.concatenate([[0], c[:, l].astype(np.int8), [0]])) == -1)
        for s0, s1 in zip(on, off):
            seg = d[s0:s1, l]
            out["leg"].append(l)
            out["start"].append(int(s0 + 1))
            out["net_m"].append(float(np.linalg.norm(seg.sum(axis=0))))
            out["path_m"].append(float(np.linalg.norm(seg, axis=1).sum()))
    return {k: np.asarray(v) for k, v in out.items()}
