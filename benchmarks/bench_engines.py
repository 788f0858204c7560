"""Side by side with MuJoCo and PyBullet (issue 37 item 5): box stacks and piles, the quadruped and
Solo-12 trots and the Barrett grasp, each engine built from the same contactlab scene and, for the
robots, driven by the same controller, in one run.

    nice .venv/bin/python benchmarks/bench_engines.py [--sizes 10 100 1000 10000] [--rows stack pile quadruped solo12 barrett]
        [--engines contactlab contactlab-default mujoco pybullet] [--steps 200] [--budget 30] [--duration 2]
        [--json benchmarks/results/engines.json] [--out table.md]

Scenes (scene_export.py writes each one for the peers from the same bodies, masses, inertias,
shapes, joints and friction: MJCF for MuJoCo; URDF for PyBullet's articulated bodies, plain
multibodies for its free boxes and fixed walls):

* ``stack``: N 0.2 m cubes of 1 kg in one column at rest on the ground (mu 0.5, dt 0.01);
  ``pile``: N cubes dropped in layers into a walled bin (contactlab's ``pile`` scene). Ours:
  box-friction solved by box-qp, certified (bench_sim.py's "contactlab certified" mode, its
  warm-up included).
* ``quadruped`` (drumwright §VII-B, trotting forward at 0.05 m/s, mu 100, dt 1 ms) and ``solo12``
  (trotting in place, mu 100, dt 1 ms): contactlab's own LegController (gait, IK, joint PD with
  torque limits plus the foot-space PD, control/locomotion.py) computes joint torques every step
  from each engine's body poses and velocities (read back into a contactlab ``Data``), and the
  torques go to each engine's joints (MuJoCo ``qfrc_applied``, PyBullet TORQUE_CONTROL with its
  default joint motors off). Ours: the no-slip model solved by ppm (the paper's).
* ``barrett`` (arechavaleta §V, glass on a table, dt 5 ms): contactlab's GraspScript (close with
  force-limited velocity motors until the fingers stall, lift the wrist 0.1 m, hold 2 s).
  Motors: MuJoCo ``<velocity>`` actuators (kv 100, force-limited), PyBullet VELOCITY_CONTROL (its
  constraint motor with a force limit, as ours); the wrist: a MuJoCo mocap body moved by the
  script's velocity, a PyBullet prismatic joint under a velocity motor; the distal joint's 1/3
  coupling: a MuJoCo joint equality, a PyBullet gear constraint. Ours: box-friction with joints
  eliminated and previous-step bounds, pgs-sm (the paper's); engine ``contactlab-default``: the
  simulator's default for the scene, the configuration ``contactlab simulate barrett-grasp`` runs
  (Stewart-Trinkle's friction pyramid solved by Lemke), the same controller and warm-up.

Every row runs at most ``--steps`` steps (boxes) or ``--duration`` simulated seconds (robots;
the grasp script's own length for barrett), after one untimed step, and stops once ``--budget``
wall seconds have passed since that first step began (after at least 3 timed steps: a 10,000-box
row ends). Building the engines' models is not timed; our kernels are compiled or loaded from
numba's cache in throwaway runs first (bench_sim's warm-up for the boxes, 1.2 s of each robot).
The robots run first, then the boxes by size; ``--json`` is rewritten after every row. Reported: steps, ms per step of the physics (the engine's step
call; for the robots the controller and the state transfer are timed apart as "control ms"),
mean contacts, certified fraction (ours: steps whose solve was certified; "n/a" for the peers),
drift (stacks: largest displacement of any box at the end), penetration (deepest overlap of any
contact over the run, each engine's own contact distance), and the job: stacks stood (drift
< 1 cm), piles in the bin (boxes inside its walls at the end), walked (base forward distance),
stood (base height, start -> end), lifted (object rise).

Where the engines do different work (printed with the table, docs/benchmarks-engines.md):
MuJoCo solves soft contact (regularised, compliant) in joint coordinates with its Newton solver;
at mu = 100 it gets its elliptic cone (its pyramidal cone, the default, lets the feet sink:
``--engines mujoco-pyramidal`` runs it too). PyBullet runs sequential impulses (PGS) with a fixed
budget of 50 iterations, Featherstone joint coordinates for the robots, and combines two bodies'
friction as a product clamped at 10 (so mu = 100 is 10 there). Ours solves each step's
complementarity problem to a certified residual: the legged robots (no-slip) in joint coordinates
(sim/tree_stages.py: revolute, prismatic and fixed joints forming a forest), other scenes and the
Barrett hand in maximal coordinates with joint rows.
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from scene_export import mjcf, pybullet_load  # noqa: E402

from contactlab.files import atomic_write  # noqa: E402
from contactlab.heap import keep_freed_memory  # noqa: E402
from contactlab.mechanics.model import build_model  # noqa: E402
from contactlab.mechanics.rotation import quat_to_matrix  # noqa: E402
from contactlab.scenarios import make_scene  # noqa: E402

BOX_ROWS = ("stack", "pile")
MIN_STEPS = 3             # timed steps a row runs whatever its budget
#: the clock every engine's step and controller are timed by (``--clock``): wall time, or with ``--clock cpu``
#: the process's CPU time, which on a shared machine leaves out the time another process held the core
#: (every engine steps on the calling thread: BLAS on one thread, no solver threads)
CLOCK = time.perf_counter
ROBOT_ROWS = ("quadruped", "solo12", "barrett")
ENGINES = ("contactlab", "contactlab-default", "mujoco", "mujoco-pyramidal", "pybullet")
#: our engines: "contactlab" runs the papers' configuration (``OURS``); "contactlab-default" the simulator's
#: default for the scene (no model or method given: what ``contactlab simulate`` runs), on ``DEFAULT_ROWS``
OUR_ENGINES = ("contactlab", "contactlab-default")
#: rows that run "contactlab-default": where the papers' configuration is not the default
DEFAULT_ROWS = ("barrett",)
#: rows that run "mujoco-pyramidal" (MuJoCo's default cone at mu = 100)
PYRAMIDAL_ROWS = ("quadruped", "solo12")
#: our model, method and model options per robot (the papers' choices)
OURS = {"quadruped": ("no-slip", "ppm", None), "solo12": ("no-slip", "ppm", None),
        "barrett": ("box-friction", "pgs-sm", {"joints": "schur", "coupling": "previous"})}
SCENES = {"quadruped": ("quadruped", {}), "solo12": ("solo12", {}), "barrett": ("barrett-grasp", {"material": "rubber"})}

DIFFERENCES = """\
Where the engines do different work:
- contactlab: each step's complementarity problem solved to a certified residual (else a fallback,
  counted as uncertified); boxes: box-friction/box-qp; legged robots: no-slip/ppm in joint
  coordinates (sim/tree_stages.py); Barrett: box-friction (joints eliminated, previous-step
  bounds)/pgs-sm, maximal coordinates with joint rows; "contactlab-default" (barrett): the simulator's
  default for the scene, Stewart-Trinkle's friction pyramid (8 edges) solved by Lemke.
- MuJoCo 4: soft (regularised, compliant) contact in joint coordinates, Newton solver, default
  solref/solimp; boxes with its default pyramidal cone, robots (mu = 100) with the elliptic cone (the
  pyramidal one lets the feet sink: row "mujoco-pyramidal"); Barrett motors as velocity actuators
  (kv = force limit / closing speed, force-limited), its wrist a mocap body, the distal coupling a soft
  joint equality.
- PyBullet: sequential impulses (PGS), at most 50 iterations a step, its own contact ERP/slop;
  robots in Featherstone joint coordinates with self-collision (parent-child excluded); friction is
  the product of two bodies' coefficients, clamped at 10 (mu = 100 runs as 10); Barrett motors its
  velocity motors, the wrist a prismatic joint under a velocity motor, the coupling a gear constraint.
- The robots' controller is contactlab's, the same code in every engine, fed each engine's body
  poses and velocities; it applies joint torques (legged) or motor targets (Barrett)."""


def matrix_to_quat(R) -> np.ndarray:
    from scene_export import _quat
    return _quat(R)


# ------------------------------------------------------------------------------------------------ the shared controller
class PeerSim:
    """What a contactlab controller reads and writes of a Simulator (``model``, ``h``, ``data``
    with time, steps, poses and velocities; ``set_joint_torques``, ``set_motor``, ``set_velocity``),
    for a peer engine: the driver copies the peer's body states into ``data`` before each
    controller call and applies what the controller set after it. ``data.contacts`` stays None
    (the legged controller's slip log is then empty)."""

    def __init__(self, scene):
        self.model, self.data = build_model(scene)
        self.h = float(scene.settings.dt)
        self.torques = {}
        self.motors = {j.name: [j.motor.target_velocity, j.motor.max_force] for j in scene.joints if j.motor}
        self.velocity = {}

    def set_joint_torques(self, joints, torques):
        self.torques.update(zip(joints, np.asarray(torques, dtype=np.float64).reshape(-1)))

    def set_joint_torque(self, joint, torque):
        self.torques[joint] = float(torque)

    def set_motor(self, joint, target_velocity=None, max_force=None):
        m = self.motors[joint]
        if target_velocity is not None:
            m[0] = float(target_velocity)
        if max_force is not None:
            m[1] = float(max_force)

    def set_velocity(self, body, linear=None, angular=None):
        i = self.model.index(body)
        if linear is not None:
            self.velocity[body] = np.asarray(linear, dtype=np.float64)
            self.data.linear_velocity[i] = self.velocity[body]


# ------------------------------------------------------------------------------------------------ engines
_WARM = set()


def _warm_up_robot(row, seconds=1.2, default=False):
    """Once per process, robot and configuration (the papers' or, with ``default``, the simulator's
    default): ``seconds`` of the robot's run in a throwaway simulator, so the compiled kernels its
    timed run meets (contacts appearing, the grasp's phases) are compiled or loaded from numba's
    cache before any clock starts."""
    if (row, default) in _WARM:
        return
    _WARM.add((row, default))
    from contactlab.sim import Simulator
    model, method, opts = (None, None, None) if default else OURS[row]
    scene = build_scene(row, None)
    sim = Simulator(scene, model, method, model_options=opts, controllers=scene.controllers)
    for _ in range(int(round(seconds / sim.h))):
        sim.step()


class Ours:
    """contactlab's Simulator on the scene; for robots the scene's controllers, timed apart; with
    ``default`` (engine "contactlab-default") the simulator's default model and method for the scene."""
    name = "contactlab"

    def __init__(self, scene, row, default=False):
        from contactlab.sim import Simulator
        self.control_s = 0.0
        ctl = list(getattr(scene, "controllers", []) or [])
        timed = [self._timed(c) for c in ctl]
        if row in BOX_ROWS:
            import bench_sim
            bench_sim._warm_up(None)
            coupling = "previous" if row == "pile" else "current"
            self.sim = Simulator(scene, "box-friction", "box-qp", model_options={"coupling": coupling})
            self.method = f"box-friction({coupling})/box-qp"
        elif default:
            self.name = "contactlab-default"
            _warm_up_robot(row, default=True)
            self.sim = Simulator(scene, controllers=timed)
            self.method = f"{self.sim.model_name}/{self.sim.method} (default)"
        else:
            model, method, opts = OURS[row]
            _warm_up_robot(row)
            self.sim = Simulator(scene, model, method, model_options=opts, controllers=timed)
            self.method = f"{model}/{method}"
        self.rec = None

    def _timed(self, fn):
        def wrapper(sim):
            t0 = CLOCK()
            try:
                return fn(sim)
            finally:
                self.control_s += CLOCK() - t0
        wrapper.uses_blas = getattr(fn, "uses_blas", True)     # the controller's own declaration (Simulator)
        return wrapper

    def step(self):
        self.rec = self.sim.step()

    def measure(self):
        r = self.rec
        return r.contacts, float(r.max_penetration), bool(r.success)

    def positions(self, names):
        m = self.sim.model
        return self.sim.data.position[[m.index(n) for n in names]].copy()

    @property
    def state_sim(self):
        return self.sim


class MuJoCo:
    name = "mujoco"

    def __init__(self, scene, row, cone=None, integrator=None):
        import mujoco
        self.mj = mujoco
        robot = row in ROBOT_ROWS
        cone = cone or ("elliptic" if robot else None)
        # the legged robots' explicit PD torques (stiff foot-space gains on 0.05 kg shanks at 1 ms) went
        # unstable under Euler and implicitfast with the default soft contact; RK4 holds them. The hand's
        # velocity servos need their damping implicit: implicitfast
        integrator = integrator or {"quadruped": "RK4", "solo12": "RK4", "barrett": "implicitfast"}.get(row)
        self.method = f"Newton, {cone or 'pyramidal'} cone" + (f", {integrator}" if integrator else "")
        script = getattr(scene, "script", None)    # a grasp's velocity servos saturate at stall, not before:
        kv = script.max_torque / script.close_speed if script is not None else 100.0   # kv = limit / speed
        self.m = mujoco.MjModel.from_xml_string(mjcf(scene, cone=cone, integrator=integrator, motor_kv=kv,
                                                     memory_mb=min(2048, max(64, len(scene.bodies) // 2))))
        self.d = mujoco.MjData(self.m)
        mujoco.mj_forward(self.m, self.d)            # poses of the initial configuration
        self.names = [b.name for b in scene.bodies]
        self.control_s = 0.0
        self.ctl = list(getattr(scene, "controllers", []) or []) if robot else []
        if self.ctl:
            self.peer = PeerSim(scene)
            body = lambda n: mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_BODY, n)
            live = [i for i, b in enumerate(scene.bodies) if b.kind != "fixed"]
            self.live = np.array(live)
            self.ids = np.array([body(scene.bodies[i].name) for i in live])
            self.root = self.m.body_rootid[self.ids]
            jid = {j.name: mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_JOINT, j.name) for j in scene.joints
                   if j.kind != "fixed"}
            self.dof = {n: int(self.m.jnt_dofadr[k]) for n, k in jid.items()}
            self.act = {j.name: mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_ACTUATOR, j.name)
                        for j in scene.joints if j.motor}
            self.mocap = {b.name: int(self.m.body_mocapid[body(b.name)]) for b in scene.bodies if b.kind == "kinematic"}

    def _read(self):
        d, p = self.d, self.peer.data
        p.position[self.live] = d.xpos[self.ids]
        p.quaternion[self.live] = d.xquat[self.ids]
        w, v = d.cvel[self.ids, :3], d.cvel[self.ids, 3:]
        p.angular_velocity[self.live] = w
        p.linear_velocity[self.live] = v + np.cross(w, d.xpos[self.ids] - d.subtree_com[self.root])
        for name in self.mocap:
            i = self.peer.model.index(name)
            p.linear_velocity[i] = self.peer.velocity.get(name, np.zeros(3))
        p.time = float(d.time)

    def _control(self):
        t0 = CLOCK()
        self._read()
        for c in self.ctl:
            c(self.peer)
        d = self.d
        for n, tau in self.peer.torques.items():
            d.qfrc_applied[self.dof[n]] = tau
        for n, (target, force) in self.peer.motors.items():
            a = self.act[n]
            d.ctrl[a] = target
            if np.isfinite(force):
                self.m.actuator_forcerange[a] = (-force, force)
        for n, k in self.mocap.items():
            d.mocap_pos[k] += self.peer.h * self.peer.velocity.get(n, np.zeros(3))
        self.control_s += CLOCK() - t0

    def step(self):
        if self.ctl:
            self._control()
            self.mj.mj_step(self.m, self.d)
            self.peer.data.steps += 1
        else:
            self.mj.mj_step(self.m, self.d)

    def measure(self):
        n = int(self.d.ncon)
        pen = float(max(0.0, -self.d.contact.dist[:n].min())) if n else 0.0
        return n, pen, None

    def positions(self, names):
        ids = [self.mj.mj_name2id(self.m, self.mj.mjtObj.mjOBJ_BODY, n) for n in names]
        return self.d.xpos[ids].copy()

    @property
    def state_sim(self):
        self._read()
        return self.peer


class PyBullet:
    name = "pybullet"

    def __init__(self, scene, row):
        import pybullet as p
        self.p = p
        self.cid = cid = p.connect(p.DIRECT)
        self.method = "PGS, 50 iterations (defaults)"
        p.setGravity(*scene.gravity, physicsClientId=cid)
        p.setTimeStep(scene.settings.dt, physicsClientId=cid)
        self._tmp = tempfile.TemporaryDirectory()
        self.where = pybullet_load(p, cid, scene, Path(self._tmp.name))
        self.control_s = 0.0
        robot = row in ROBOT_ROWS
        self.ctl = list(getattr(scene, "controllers", []) or []) if robot else []
        self.bodies = sorted({b for b, _ in self.where.values()})
        if not self.ctl:
            return
        self.peer = PeerSim(scene)
        self.live = [(i, *self.where[b.name]) for i, b in enumerate(scene.bodies) if b.kind != "fixed"]
        # PyBullet turns an inertia with products into its principal axes: a base's reported orientation is
        # that frame's; the body (link) frame is R_inertial R_local^T (links report their link frame too)
        self.base_turn = {}
        for i, bid, link in self.live:
            if link < 0:
                x, y, z, w = p.getDynamicsInfo(bid, -1, physicsClientId=cid)[4]
                self.base_turn[i] = quat_to_matrix(np.array([w, x, y, z])).T
        self.joint = {}
        for bid in self.bodies:
            for k in range(p.getNumJoints(bid, physicsClientId=cid)):
                self.joint[p.getJointInfo(bid, k, physicsClientId=cid)[1].decode()] = (bid, k)
        for j in scene.joints:          # couplings: q_child' = ratio q_follows' as a gear constraint
            if j.follows is not None:
                (ba, ka), (bb, kb) = self.joint[j.follows], self.joint[j.name]
                c = p.createConstraint(ba, ka, bb, kb, p.JOINT_GEAR, [0, 0, 1], [0, 0, 0], [0, 0, 0],
                                       physicsClientId=cid)
                p.changeConstraint(c, gearRatio=-1.0 / float(j.ratio), maxForce=1e4, erp=0.2, physicsClientId=cid)
        self.kinematic = [b.name for b in scene.bodies if b.kind == "kinematic"]

    def _read(self):
        p, cid, d = self.p, self.cid, self.peer.data
        for i, bid, link in self.live:
            if link < 0:
                pos, orn = p.getBasePositionAndOrientation(bid, physicsClientId=cid)
                lin, ang = p.getBaseVelocity(bid, physicsClientId=cid)
                R = quat_to_matrix(np.array([orn[3], orn[0], orn[1], orn[2]])) @ self.base_turn[i]
                d.quaternion[i] = matrix_to_quat(R)
            else:
                s = p.getLinkState(bid, link, computeLinkVelocity=1, physicsClientId=cid)
                pos, orn, lin, ang = s[0], s[5], s[6], s[7]
                d.quaternion[i] = (orn[3], orn[0], orn[1], orn[2])
            d.position[i] = pos
            d.linear_velocity[i] = lin
            d.angular_velocity[i] = ang
        d.time = self.peer.data.steps * self.peer.h

    def _control(self):
        t0 = CLOCK()
        p, cid = self.p, self.cid
        self._read()
        for c in self.ctl:
            c(self.peer)
        for n, tau in self.peer.torques.items():
            bid, k = self.joint[n]
            p.setJointMotorControl2(bid, k, p.TORQUE_CONTROL, force=float(tau), physicsClientId=cid)
        for n, (target, force) in self.peer.motors.items():
            bid, k = self.joint[n]
            p.setJointMotorControl2(bid, k, p.VELOCITY_CONTROL, targetVelocity=float(target),
                                    force=float(force) if np.isfinite(force) else 1e6, physicsClientId=cid)
        for n in self.kinematic:
            bid, k = self.joint[f"{n}__lift"]
            v = self.peer.velocity.get(n, np.zeros(3))
            p.setJointMotorControl2(bid, k, p.VELOCITY_CONTROL, targetVelocity=float(v[2]), force=1e6,
                                    physicsClientId=cid)
        self.control_s += CLOCK() - t0

    def step(self):
        if self.ctl:
            self._control()
            self.p.stepSimulation(physicsClientId=self.cid)
            self.peer.data.steps += 1
        else:
            self.p.stepSimulation(physicsClientId=self.cid)

    def measure(self):
        pts = self.p.getContactPoints(physicsClientId=self.cid)
        return len(pts), float(max([0.0] + [-c[8] for c in pts])), None

    def positions(self, names):
        p, cid = self.p, self.cid
        out = []
        for n in names:
            bid, link = self.where[n]
            out.append(p.getBasePositionAndOrientation(bid, physicsClientId=cid)[0] if link < 0 else
                       p.getLinkState(bid, link, physicsClientId=cid)[0])
        return np.array(out)

    @property
    def state_sim(self):
        self._read()
        return self.peer

    def close(self):
        self.p.disconnect(self.cid)
        self._tmp.cleanup()


def make_engine(engine, scene, row):
    """The engine's runner, or None with the reason when its Python package does not import."""
    try:
        if engine in OUR_ENGINES:
            return Ours(scene, row, default=engine == "contactlab-default"), None
        if engine.startswith("mujoco"):
            return MuJoCo(scene, row, cone="pyramidal" if engine == "mujoco-pyramidal" else None), None
        if engine == "pybullet":
            return PyBullet(scene, row), None
    except ImportError as exc:
        return None, f"{engine} skipped: {exc} (bash benchmarks/setup_peers.sh installs it)"
    raise ValueError(engine)


# ------------------------------------------------------------------------------------------------ one row
def build_scene(row, n):
    if row in BOX_ROWS:
        return make_scene(row, count=n)
    name, kw = SCENES[row]
    return make_scene(name, **kw)


def job(row, scene, start, end) -> dict:
    """Whether the job was done, from the watched bodies' positions at start and end."""
    if row == "stack":
        drift = float(np.abs(end - start).max())
        return {"drift": drift, "job": f"stood: {'yes' if drift < 0.01 else 'no'}", "done": drift < 0.01}
    if row == "pile":
        walls = [s for s in scene.body("bin").shapes]
        half = min(abs(s.position[0]) - s.size[0] / 2 for s in walls if s.position[0] != 0)
        inside = int(np.sum(np.all(np.abs(end[:, :2]) <= half + 1e-3, axis=1) & (end[:, 2] > -1e-2)))
        return {"in_bin": inside, "job": f"in bin: {inside}/{len(end)}", "done": inside == len(end)}
    if row in ("quadruped", "solo12"):
        dx, z0, z1 = float(end[0, 0] - start[0, 0]), float(start[0, 2]), float(end[0, 2])
        walked = row == "quadruped"
        ok = abs(z1 - z0) < 0.3 * z0 and (dx > 0 if walked else True)
        what = f"walked {dx * 100:.1f} cm, " if walked else f"stood (x {dx * 100:+.1f} cm), "
        return {"distance_m": dx, "base_z_start": z0, "base_z_end": z1, "done": bool(ok),
                "job": what + f"base z {z0 * 100:.1f} -> {z1 * 100:.1f} cm"}
    rise = float(end[0, 2] - start[0, 2])
    lift = scene.script.lift
    return {"object_rise_m": rise, "done": rise > 0.5 * lift,
            "job": f"{'lifted' if rise > 0.5 * lift else 'not lifted'}: object rose {rise * 100:.1f} cm of the wrist's "
                   f"{lift * 100:.0f}"}


def run_row(engine, row, n, steps, budget):
    scene = build_scene(row, n)
    t_build = CLOCK()
    eng, why = make_engine(engine, scene, row)
    if eng is None:
        return {"engine": engine, "row": row, "n": n, "skipped": why}
    build_s = CLOCK() - t_build
    if row in BOX_ROWS:
        watch = [b.name for b in scene.bodies if b.kind == "dynamic"]
    elif row == "barrett":
        watch = ["object"]
    else:
        watch = [scene.controllers[0].setup.base]
    start = eng.positions(watch)
    out = {"engine": engine, "row": row, "n": n if row in BOX_ROWS else sum(b.kind != "fixed" for b in scene.bodies),
           "method": eng.method, "build_s": build_s}
    k = 0
    try:
        t_start = CLOCK()               # the budget counts the first step too
        eng.step()                                   # untimed first step (peers' set-up, our caches)
        out["first_step_s"] = CLOCK() - t_start
        contacts, pen, certified, step_ms, ctl_ms = 0, 0.0, 0, [], []
        while k < steps and (CLOCK() - t_start < budget or k < MIN_STEPS):
            c0 = eng.control_s
            t0 = CLOCK()
            eng.step()
            t1 = CLOCK()
            ctl_ms.append(1e3 * (eng.control_s - c0))        # the controller and the state transfer
            step_ms.append(1e3 * (t1 - t0) - ctl_ms[-1])     # the physics: the rest of the step call
            k += 1
            c, p, ok = eng.measure()
            contacts += c
            pen = max(pen, p)
            certified += bool(ok)
    except Exception as exc:      # a run that stops (a certified run's SimulationError, a peer's error)
        out.update(error=f"{type(exc).__name__}: {exc}"[:200], steps=k)
        return out
    end = eng.positions(watch)
    out.update(steps=k, simulated_s=k * scene.settings.dt, ms_per_step=float(np.mean(step_ms)),
               control_ms=float(np.mean(ctl_ms)) if any(ctl_ms) else None, step_ms=step_ms,
               contacts=contacts / k, penetration=pen,
               certified=certified / k if isinstance(eng, Ours) else None)
    out.update(job(row, scene, start, end))
    if hasattr(eng, "close"):
        eng.close()
    return out


# ------------------------------------------------------------------------------------------------ output
def table(rows) -> str:
    f = lambda v, spec="{:.3g}": "—" if v is None or (isinstance(v, float) and not np.isfinite(v)) else spec.format(v)
    lines = ["| row | N (bodies) | engine | method | steps (sim s) | ms/step | control ms/step | contacts | certified | "
             "drift (m) | penetration (m) | job |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['row']} | {r['n']} | {r['engine']} | {r['skipped']} | | | | | | | | |")
            continue
        if "error" in r:
            lines.append(f"| {r['row']} | {r['n']} | {r['engine']} | {r.get('method', '')} | {r.get('steps', 0)} | "
                         f"error: {r['error']} | | | | | | |")
            continue
        cert = "n/a" if r["certified"] is None else f"{100 * r['certified']:.0f} %"
        lines.append(f"| {r['row']} | {r['n']} | {r['engine']} | {r['method']} | {r['steps']} ({r['simulated_s']:.2f}) | "
                     f"{f(r['ms_per_step'])} | {f(r['control_ms'])} | {r['contacts']:.1f} | {cert} | "
                     f"{f(r.get('drift'), '{:.2g}')} | {f(r['penetration'], '{:.2g}')} | {r['job']} |")
    return "\n".join(lines)


def common_ratio(a, b) -> tuple[float, int]:
    """Our mean physics ms per step over the peer's, over the steps both rows ran (the first k of
    each: a budget-cut row of a falling pile stops at a different phase of the fall), and k."""
    k = min(len(a["step_ms"]), len(b["step_ms"]))
    return float(np.mean(a["step_ms"][:k]) / np.mean(b["step_ms"][:k])), k


def ratios(rows) -> str:
    """ms per step of contactlab over each peer, per row and size (the same run, common steps); a row
    with "contactlab-default" gets a second line for it ("barrett (default)")."""
    by = {(r["engine"], r["row"], r["n"]): r for r in rows if "ms_per_step" in r}
    keys = sorted({(r["row"], r["n"]) for r in by.values()}, key=lambda x: (x[0] not in BOX_ROWS, x))
    peers = [e for e in ENGINES if e not in OUR_ENGINES and any(k[0] == e for k in by)]
    lines = ["| row | N | " + " | ".join(f"ours / {p} (steps)" for p in peers) + " |", "|---|---|" + "---|" * len(peers)]
    keys = [(row, n, ours) for row, n in keys for ours in OUR_ENGINES
            if ours == "contactlab" or (ours, row, n) in by]
    for row, n, ours in keys:
        a = by.get((ours, row, n))
        cells = []
        for p in peers:
            if a and (p, row, n) in by:
                x, k = common_ratio(a, by[(p, row, n)])
                cells.append(f"{x:.2f} ({k})")
            else:
                cells.append("—")
        label = row if ours == "contactlab" else f"{row} (default)"
        lines.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def save(path, rows):
    payload = {"argv": sys.argv[1:], "machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "load_avg": os.getloadavg(), "time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(payload, indent=1, default=float)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000], help="boxes per stack/pile row")
    ap.add_argument("--rows", nargs="+", default=[*BOX_ROWS, *ROBOT_ROWS], choices=[*BOX_ROWS, *ROBOT_ROWS])
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES,
                    help="mujoco-pyramidal runs on the legged rows only (MuJoCo's default cone at mu = 100); "
                         "contactlab-default on the barrett row only (the simulator's default model and method)")
    ap.add_argument("--steps", type=int, default=200, help="steps per box row (at most)")
    ap.add_argument("--duration", type=float, default=2.0,
                    help="simulated seconds per legged-robot row (barrett: its grasp script's length)")
    ap.add_argument("--budget", type=float, default=30.0, help="wall seconds per row (at least 3 steps run)")
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown report here")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time steps by wall time, or by the process's CPU time (a shared machine)")
    a = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if a.clock == "cpu" else time.perf_counter
    if a.budget <= 0 or a.steps < 1 or a.duration <= 0:
        ap.error("--budget and --duration must be > 0, --steps >= 1")
    keep_freed_memory()      # the allocator setting a Simulator makes, set first for every engine alike
    rows = []
    # the robots first, then the boxes by size (each size's stack, then its pile): a run cut short
    # loses the largest sizes; the JSON is rewritten after every row
    plan = [(row, None) for row in a.rows if row in ROBOT_ROWS]
    plan += [(row, n) for n in sorted(a.sizes) for row in a.rows if row in BOX_ROWS]
    for row, n in plan:
        for engine in a.engines:
            if engine == "mujoco-pyramidal" and row not in PYRAMIDAL_ROWS:
                continue      # boxes: the MuJoCo row is pyramidal already; the hand: mu <= 1
            if engine == "contactlab-default" and row not in DEFAULT_ROWS:
                continue      # elsewhere the papers' configuration is the default's or its row's
            if row in BOX_ROWS:
                steps = a.steps
            else:
                sc = build_scene(row, None)
                steps = int(round((sc.duration if row == "barrett" else a.duration) / sc.settings.dt))
            r = run_row(engine, row, n, steps, a.budget)
            r["load"] = os.getloadavg()[0]
            rows.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "step_ms"}, default=float), flush=True)
            if a.json:
                save(a.json, rows)
    load = os.getloadavg()
    header = (f"Run: `python benchmarks/bench_engines.py {' '.join(argv if argv is not None else sys.argv[1:])}` on "
              f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average at the end "
              f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min), "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n")
    text = (header + "\n" + table(rows) + "\n\nOurs / peer, mean physics ms per step over the steps both ran (same run; "
            "the number of those steps in brackets):\n\n" + ratios(rows) + "\n\n"
            + DIFFERENCES + "\n")
    print(text)
    if a.json:
        save(a.json, rows)
    if a.out:
        atomic_write(a.out, lambda tmp: Path(tmp).write_text(text))
    return rows, text


if __name__ == "__main__":
    main()
