"""Grasping hands (issue 12, arechavaleta §V): the Barrett scene, joint couplings, the grasp script."""
from __future__ import annotations

import numpy as np
import pytest

from contactlab.mechanics.scene import Body, Joint, Motor, Scene, Settings, Shape
from contactlab.scenarios import make_scene
from contactlab.scenarios.barrett import barrett_chains
from contactlab.scenarios.materials import friction
from contactlab.sim import Simulator

BF = {"joints": "schur", "coupling": "previous"}


def test_barrett_forward_kinematics_matches_the_spec_check_values():
    """scenario-specs §1.3: fingertip frames at DOFs 0 and 0.9 rad (palm frame, mm)."""
    for dof, tip, thumb in ((0.0, (25, 158.6, 44.0), (0, -158.6, 44.0)), (0.9, (25, 66.4, 107.8), (0, -66.4, 107.8))):
        ch = barrett_chains(0.0, (dof, dof, dof))
        np.testing.assert_allclose(ch["f1"][-1][1][:3, 3], tip, atol=0.06)
        np.testing.assert_allclose(ch["f2"][-1][1][:3, 3], (-tip[0], tip[1], tip[2]), atol=0.06)
        np.testing.assert_allclose(ch["thumb"][-1][1][:3, 3], thumb, atol=0.06)


def test_friction_comes_from_the_material_table():
    sc = make_scene("barrett-grasp", material="rubber")
    assert sc.pair_mu["f1_link3/object"] == 1.0 == friction("glass", "rubber")
    assert make_scene("barrett-grasp").pair_mu["thumb_link3/object"] == 0.2
    assert sc.pair_mu["object/table"] == 0.3
    assert friction("wood", "plastic") == friction("plastic", "wood") == 0.4


def _coupled_pair(ratio):
    """Two links hinged in a row about z, the second following the first at ``ratio``; a velocity
    motor drives the first at 1 rad/s (no gravity)."""
    box = Shape("box", size=(0.1, 0.02, 0.02))
    bodies = [Body("a", mass=1.0, position=(0.05, 0, 0), shapes=[box]), Body("b", mass=0.5, position=(0.15, 0, 0), shapes=[box])]
    joints = [Joint("j1", "revolute", "world", "a", (0, 0, 0), (0, 0, 1), motor=Motor(1.0, 100.0)),
              Joint("j2", "revolute", "a", "b", (0.1, 0, 0), (0, 0, 1), follows="j1", ratio=ratio)]
    return Scene("coupled", bodies, joints, gravity=(0, 0, 0), settings=Settings(dt=0.01))


@pytest.mark.parametrize("model,method,opts", [("stewart-trinkle", "lemke", None), ("box-friction", "pgs-sm", BF)])
def test_joint_coupling_keeps_the_ratio(model, method, opts):
    """After 0.3 s the second joint's angle is 1/3 of the first (planar chain, exact geometry:
    the angle of b's x axis is q1 + q2)."""
    sim = Simulator(_coupled_pair(1.0 / 3.0), model, method, model_options=opts)
    sim.run(0.3)
    R = sim.data.rotation()
    q1 = np.arctan2(R[0][1, 0], R[0][0, 0])
    q12 = np.arctan2(R[1][1, 0], R[1][0, 0])
    assert q1 == pytest.approx(0.3, abs=1e-3)        # the motor's 1 rad/s for 0.3 s
    assert q12 - q1 == pytest.approx(q1 / 3.0, abs=1e-6)


class ContactLog:
    """A controller that records, before every step, the previous step's hand-object contacts:
    the time, the script's phase, the object's and the wrist's heights and, per hand body touching
    the object, its total normal impulse (N s)."""

    def __init__(self, sc):
        self.sc, self.rows = sc, []

    def __call__(self, sim):
        d, script = sim.data, self.sc.script
        io, iw = sim.model.index(script.obj), sim.model.index(script.wrist)
        touch = {}
        if d.result is not None and d.contacts is not None and d.contacts.count:
            for a, b, pn in zip(d.contacts.body_a, d.contacts.body_b, d.result.normal):
                if io in (a, b) and sim.model.names[b if a == io else a] != "table":
                    name = sim.model.names[b if a == io else a]
                    touch[name] = touch.get(name, 0.0) + float(pn)
        self.rows.append((float(d.time), script.phase, float(d.position[io, 2]), float(d.position[iw, 2]), touch))

    def before(self, phase):
        """Rows before the script first entered ``phase``."""
        t = self.sc.script.events[phase]
        return [r for r in self.rows if r[0] < t - 1e-12]


def _start_gaps(sc):
    """Smallest distance (m) at t = 0 between each pair of bodies that may touch (detection at a
    5 cm margin; directly jointed pairs are never in contact)."""
    sim = Simulator(sc, "box-friction", "pgs-sm", model_options=BF)
    c = sim.world.detect(sim.data, margin=0.05)
    gaps = {}
    for a, b, phi in zip(c.body_a, c.body_b, c.phi):
        key = tuple(sorted((sim.model.names[a], sim.model.names[b])))
        gaps[key] = min(gaps.get(key, np.inf), float(phi))
    return gaps


@pytest.mark.parametrize("scene", ["hand5-grasp", "allegro-grasp"])
def test_hands_start_clear_of_the_object(scene):
    """A clean start (issue 39): at t = 0 no two bodies overlap, and every pair except the object
    resting on the table is at least the contact margin apart (no contact row before the fingers
    move), so nothing is shoved by the first step."""
    sc = make_scene(scene)
    gaps = _start_gaps(sc)
    assert gaps[("object", "table")] == pytest.approx(0.0, abs=1e-9)      # resting on the table
    others = {k: v for k, v in gaps.items() if k != ("object", "table")}
    assert min(others.values()) >= sc.settings.margin, sorted(others.items(), key=lambda kv: kv[1])[:3]
    assert any("object" in k for k in others)       # the hand is near the object (within 5 cm)


def _grasp(material, model, method, hold, opts=None, results=None):
    """Run the glass grasp (dt 5 ms); ``results`` (a list) receives every step's StepResult."""
    sc = make_scene("barrett-grasp", material=material, hold=hold)
    watch = [] if results is None else [lambda sim: sim.data.result is not None and results.append(sim.data.result)]
    sim = Simulator(sc, model, method, model_options=opts, controllers=sc.controllers + watch)
    traj = sim.run(sc.duration)
    assert traj.error is None
    return sc, sim, traj


@pytest.mark.slow
def test_rubber_holds_plastic_slips():
    """arechavaleta Figs. 2-3: glass in plastic fingers (mu 0.2) is grasped (at least two finger
    bodies press on it for 5 or more steps before the lift: a hand that missed the glass would
    leave it on the table too) and then stays on the table; in rubber fingers
    (mu 1.0) it rises with the wrist and stays within 5 mm of its grasped pose for 2 s. Penetration
    stays below the contact margin, joint error below 1e-6. Under no-slip (drumwright §VI, no mu:
    touching contacts do not slide at all) the rubber grasp holds too; the plastic case has no
    meaning there and is not run. No-slip's finger motors are exact force-limited velocity motors
    (every step's motor state consistent: not a constant push at the limit)."""
    lift = 0.1
    sc = make_scene("barrett-grasp", material="plastic", hold=0.0)
    log = ContactLog(sc)
    sim = Simulator(sc, "box-friction", "pgs-sm", model_options=BF, controllers=sc.controllers + [log])
    traj = sim.run(sc.duration)
    assert traj.error is None
    g = sc.summary(sim, traj)["grasp"]
    # the fingers reached the glass and pressed on it before the lift (a miss would also "slip") ...
    touching = [r for r in log.before("lift") if sum(v > 1e-4 for v in r[4].values()) >= 2]
    assert len(touching) >= 5, "the plastic fingers never grasped the glass"
    # ... and the glass then slipped out: it ends more than half the lift below the wrist
    assert not g["lifted"] and g["object_drop_m"] > 0.5 * lift
    for model, method, opts in (("stewart-trinkle", "lemke", None), ("box-friction", "pgs-sm", BF),
                                ("no-slip", "ppm", None)):
        results = []
        sc, sim, traj = _grasp("rubber", model, method, hold=2.0, opts=opts, results=results)
        g = sc.summary(sim, traj)["grasp"]
        assert g["lifted"], (model, g)
        assert sim.data.time - sc.script.events["hold"] >= 2.0 - 1e-9   # held for the whole 2 s
        assert g["hold_drift_m"] < 5e-3, (model, g)
        assert traj.column("max_penetration").max() < sc.settings.margin
        assert traj.column("joint_error").max() < 1e-6
        if model == "no-slip":
            assert all(r.info["motor_consistent"] for r in results) and len(results) >= len(traj.records) - 1
            t0 = sc.script.events["close"]        # closing in free space: the motors reach their target speed
            free = results[int((t0 + 0.02) / sc.settings.dt):int((t0 + 0.1) / sc.settings.dt)]
            assert free and not any(r.info["motor_saturated"] for r in free)


@pytest.mark.slow
@pytest.mark.parametrize("scene,model,method,opts", [("hand5-grasp", "box-friction", "pgs-sm", BF),
                                                     ("allegro-grasp", "box-friction", "pgs-sm", BF)])
def test_hands_grasp_lift_and_hold(scene, model, method, opts):
    """hand5-grasp (arechavaleta Fig. 1: metal hand, rubber ball, mu 1.0) and allegro-grasp (the
    example-robot-data URDF, rubber links, glass cylinder), from their clean start: (1) finger-object
    contacts with positive normal impulse, from at least two hand bodies, before the wrist rises;
    (2) the object rises with the wrist (lifted, within 5 cm of the wrist's 10 cm); (3) the hold:
    over the whole 2 s the object stays at least 9 cm above its start and its height relative to
    the wrist moves by less than 5 mm, and it stays within 5 mm of its grasped pose relative to the
    palm; penetration below the contact margin from the first step on, joint error below 1e-6.
    box-friction (eq. 15-17) + pgs-sm as the paper. (hand5's ball is pressed up into the hand while
    the fingers close, ~10 mm, so its height before the lift is not asserted.)"""
    sc = make_scene(scene)
    log = ContactLog(sc)
    sim = Simulator(sc, model, method, model_options=opts, controllers=sc.controllers + [log])
    traj = sim.run(sc.duration)
    assert traj.error is None
    g = sc.summary(sim, traj)["grasp"]
    z0 = log.rows[0][2]
    # (1) contact before the lift
    pressed = [r for r in log.before("lift") if sum(v > 1e-4 for v in r[4].values()) >= 2]
    assert pressed, (scene, "no two hand bodies pressed on the object before the lift")
    # (2) the lift
    assert g["lifted"] and abs(g["object_drop_m"]) < 0.05, (scene, g)
    # (3) the hold: heights over time
    hold = [r for r in log.rows if r[1] in ("hold", "done")]
    assert sim.data.time - sc.script.events["hold"] >= 2.0 - 1e-9 and len(hold) >= int(1.9 / sc.settings.dt)
    z = np.array([r[2] for r in hold])
    rel = z - np.array([r[3] for r in hold])
    assert z.min() > z0 + 0.09, (scene, z.min() - z0)
    assert np.ptp(rel) < 5e-3, (scene, np.ptp(rel))
    assert g["hold_drift_m"] < 5e-3, (scene, g)
    assert all(len(r[4]) >= 2 for r in hold)                        # held by the hand, not resting on it
    assert traj.column("max_penetration").max() < sc.settings.margin      # from t = 0
    assert traj.column("joint_error").max() < 1e-6


def test_grasp_is_reproducible_bit_for_bit():
    """Two runs of the same configuration (0.5 s: closing, first contacts) give identical states."""
    out = []
    for _ in range(2):
        sc = make_scene("barrett-grasp", object="cylinder", material="rubber", dt=0.01)
        sim = Simulator(sc, "box-friction", "pgs-sm", model_options=BF, controllers=sc.controllers)
        traj = sim.run(0.5)
        assert traj.error is None and traj.column("contacts").max() > 0
        out.append((sim.data.position.copy(), sim.data.quaternion.copy(), sim.data.linear_velocity.copy()))
    for a, b in zip(*out):
        assert np.array_equal(a, b)


def test_box_friction_schur_elimination_gives_the_same_step():
    """arechavaleta eq. 15: eliminating the joint rows before the solve (joints="schur") gives the
    same next velocity as keeping them as free rows of the boxed LCP (the ODE layout), on a grasp
    step with contacts, couplings, motors and a kinematic wrist (no CFM: the ODE layout puts CFM on
    the joint rows too, which softens the joints)."""
    from contactlab import solve
    from contactlab.models import get_model, make_options
    sc = make_scene("barrett-grasp", object="cylinder", material="rubber", dt=0.01)
    sim = Simulator(sc, "box-friction", "pgs-sm", model_options=BF, controllers=sc.controllers)
    sim.run(0.15)                     # closing: fingers moving, first contacts
    system = sim.last_system
    system.cfm = 0.0
    assert system.nc > 0 and system.nj > 0 and system.nm > 0
    bf = get_model("box-friction")
    v = []
    for joints, method in (("schur", "pgs-sm"), ("rows", "pgs-sm")):
        opts = make_options(bf, {"joints": joints, "coupling": "previous", "cfm": 0.0})
        prob = bf.build(system, opts)
        sol = solve(prob, method, **({"tol": 1e-12} if method == "pgs-sm" else {}))
        assert sol.success, (joints, sol)
        v.append(bf.recover(system, prob, sol, opts).v_next)
    assert np.abs(v[0]).max() > 1e-2                    # a moving hand, not a resting one
    assert np.allclose(v[0], v[1], rtol=0, atol=1e-9 * np.abs(v[1]).max())


def test_compiled_pgs_sm_residual_is_box_relative():
    """The compiled pgs-sm call (kernels/pgs_sm.pgs_sm_dense_run) stops on the relative residual of
    problems/residual.py box_relative with row_terms; its kernel copy agrees with it on random boxed
    LCPs with coupled (friction) rows, and solve() certifies pgs-sm on a grasp step's problem."""
    from contactlab import solve
    from contactlab.kernels.pgs_sm import box_relative_error
    from contactlab.kernels.tolerances import NORMWISE_FLOOR
    from contactlab.problems.residual import box_relative, relative_error, row_terms
    from contactlab.scenarios.grasp_runs import step_problems
    rng = np.random.default_rng(7)
    for trial in range(20):
        nc = 3
        n = 3 * nc
        A = rng.normal(size=(n, n))
        M = A @ A.T
        q = rng.normal(size=n)
        z = np.abs(rng.normal(size=n)) * (rng.random(n) < 0.7)
        z[nc:] = rng.normal(size=2 * nc) * (trial % 3 != 0)
        w = M @ z + q + rng.normal(size=n) * 1e-3
        lo, hi = np.zeros(n), np.full(n, np.inf)
        findex = np.r_[np.full(nc, -1), np.tile(np.arange(nc), 2)].astype(np.int64)
        mu = np.r_[np.zeros(nc), np.full(2 * nc, 0.5)]
        blo, bhi = lo.copy(), hi.copy()
        r = mu[nc:] * np.maximum(z[findex[nc:]], 0.0)
        blo[nc:], bhi[nc:] = -r, r
        ref = relative_error(box_relative(z, w, blo, bhi, q, row_terms(M, z, q)))
        assert box_relative_error(M, q, lo, hi, findex, mu, z, w, NORMWISE_FLOOR) == pytest.approx(ref, rel=1e-12, abs=1e-15)
    sc = make_scene("barrett-grasp", object="cylinder", material="rubber", dt=0.01)
    sim = Simulator(sc, "box-friction", "pgs-sm", model_options=BF, controllers=sc.controllers)
    while sim.data.steps < 60 and (sim.last_system is None or sim.last_system.nc < 4):
        sim.step()
    _, box = step_problems(sim.last_system)
    sol = solve(box, "pgs-sm")
    assert sim.last_system.nc >= 4 and sol.success and sol.info["kernel"] == "numba"


def test_pose_joint_turns_the_subtree_and_keeps_the_limits():
    """allegro.pose_joint: the joint's child and every body jointed below it turn rigidly about the
    joint's axis through its anchor (distances to the anchor and between them unchanged, the child
    turned by the angle about the axis), the bodies above it stay put, and the limits shift by -angle
    so that they stay where the URDF puts them."""
    from scipy.spatial.transform import Rotation

    from contactlab.scenarios.allegro import pose_joint
    a = make_scene("allegro-grasp", thumb_pose=(0.0, 0.0))
    b = make_scene("allegro-grasp", thumb_pose=(0.0, 0.0))
    j = next(x for x in a.joints if x.name == "joint_13.0")
    angle = 0.4
    pose_joint(b, "joint_13.0", angle)
    jb = next(x for x in b.joints if x.name == "joint_13.0")
    assert (jb.lower, jb.upper) == pytest.approx((j.lower - angle, j.upper - angle))
    R = Rotation.from_rotvec(np.asarray(j.axis) * angle).as_matrix()
    p = np.asarray(j.anchor)
    below = {"link_13.0", "link_14.0", "link_15.0", "link_15.0_tip"}
    for ba, bb in zip(a.bodies, b.bodies):
        want = p + R @ (np.asarray(ba.position) - p) if ba.name in below else np.asarray(ba.position)
        np.testing.assert_allclose(bb.position, want, atol=1e-12)
    Ra = Rotation.from_quat(np.roll(a.body("link_14.0").orientation, -1)).as_matrix()
    Rb = Rotation.from_quat(np.roll(b.body("link_14.0").orientation, -1)).as_matrix()
    np.testing.assert_allclose(Rb, R @ Ra, atol=1e-12)


def test_grasp_script_relative_pose_is_the_rotation_matrix_transposed():
    """control/grasp.py relative_pose (scalar quaternion rotation by the conjugate) against
    R(q)' (p_b - p_a) with R from mechanics/rotation.py quat_to_matrix, on random poses."""
    from types import SimpleNamespace
    from contactlab.control.grasp import relative_pose
    from contactlab.mechanics.rotation import quat_to_matrix
    rng = np.random.default_rng(7)
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        pos = rng.normal(size=(2, 3))
        sim = SimpleNamespace(data=SimpleNamespace(quaternion=np.array([q, [1.0, 0, 0, 0]]), position=pos))
        ref = quat_to_matrix(q).T @ (pos[1] - pos[0])
        assert np.allclose(relative_pose(sim, 0, 1), ref, rtol=0, atol=1e-14)
