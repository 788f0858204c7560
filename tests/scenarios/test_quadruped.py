"""The trotting quadruped of drumwright §VII-B (scenario-specs §2.2) and Solo-12 from
example-robot-data: the scenes as specified, the trot under no-slip / viscous / Coulomb mu 100,
the ``locomotion`` JSON of ``contactlab simulate`` (keep)."""
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from contactlab.cli import app
from contactlab.mechanics import build_model
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def test_quadruped_scene_as_specified():
    sc = make_scene("quadruped")
    model, data = build_model(sc)
    dyn = [b for b in sc.bodies if b.kind == "dynamic"]
    assert len(dyn) == 13 and len(sc.joints) == 12 and all(j.kind == "revolute" for j in sc.joints)
    assert abs(sum(b.mass for b in dyn) - 1.34) < 1e-12
    colliding = {b.name: [s.kind for s in b.shapes] for b in dyn if b.shapes}
    assert colliding == {"base": ["box", "box"], **{f"{l}_shank": ["sphere"] for l in ("LF", "RF", "LH", "RH")}}
    # the feet stand on the ground (sphere bottoms at z = 0 to 10 um), the paper's initial angles
    R = data.rotation()
    for leg in ("LF", "RF", "LH", "RH"):
        i = model.index(f"{leg}_shank")
        s = sc.bodies[i].shapes[0]
        z = data.position[i, 2] + (R[i] @ np.asarray(s.position))[2] - s.radius
        assert 0 <= z < 2e-5
    ctl = sc.controllers[0]
    np.testing.assert_allclose(ctl.setup.analytic.inverse(ctl.setup.nominal)[0], ctl.setup.q_offset, atol=1e-12)
    rough = make_scene("quadruped", terrain="rough", seed=3)
    bumps = [s for s in rough.bodies[0].shapes if s.kind == "box"]
    assert len(bumps) == 40 and max(s.size[2] for s in bumps) <= 2 * 0.004
    assert [s.position for s in bumps] == [s.position for s in make_scene("quadruped", terrain="rough", seed=3).bodies[0].shapes if s.kind == "box"]


@pytest.mark.slow
def test_trot_under_no_slip_viscous_and_coulomb():
    """0.45 s of trot (each diagonal pair lifts once) per model: upright, at the commanded speed
    (no-slip and Coulomb mu 100), stance feet fixed under no-slip and sliding under viscous
    (mu_v 0.1 N s/m cannot carry the robot: it slides in place), no contact energy gain,
    penetration below the margin."""
    out = {}
    for model in ("no-slip", "viscous", "stewart-trinkle"):
        sc = make_scene("quadruped", settle=0.05)
        ctl = sc.controllers[0]
        ctl.ramp = 0.0
        sim = Simulator(sc, model, controllers=sc.controllers)
        traj = sim.run(0.45)
        assert traj.error is None
        s = ctl.summary(sim, traj)
        a = ctl.arrays()
        m = traj.metrics()
        assert not s["fell"]
        assert np.abs(a["rpy"][:, :2]).max() < np.radians(5)
        assert np.abs(a["base"][:, 2] / ctl.setup.height - 1).max() < 0.05
        assert m["max_penetration"] < sc.settings.margin
        ke = traj.column("kinetic_energy").max()
        assert np.nanmax(traj.column("contact_energy_gain")) <= 1e-9 * max(ke, 1e-3)
        assert a["contact"][60:].any(axis=0).all() and (~a["contact"][60:]).any(axis=0).all()   # each foot steps
        out[model] = s
    expected = 0.05 * 0.4
    for model in ("no-slip", "stewart-trinkle"):
        assert abs(out[model]["distance_m"] / expected - 1) < 0.3, out
    assert out["no-slip"]["max_foot_slip_m_s"] < 1e-6
    assert out["viscous"]["max_foot_slip_m_s"] > 1e-3
    assert abs(out["viscous"]["distance_m"]) < 0.3 * expected


def test_simulate_json_has_locomotion():
    r = CliRunner().invoke(app, ["simulate", "quadruped", "--model", "no-slip", "--duration", "0.03", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    loc = out["locomotion"]
    assert set(loc) == {"distance_m", "mean_speed_m_s", "fell", "max_foot_slip_m_s"}
    assert loc["fell"] is False and out["steps"] == 30
    assert abs(loc["distance_m"] - (out["bodies"]["base"]["position"][0] - make_scene("quadruped").body("base").position[0])) < 1e-12


def test_solo12_from_example_robot_data_stands_and_steps():
    """Solo-12's URDF through load_urdf (package:// meshes resolved: the base keeps its convex hull),
    feet as spheres, posed crouching on the ground; it stands, then lifts its first diagonal pair."""
    sc = make_scene("solo12", settle=0.05)
    dyn = [b for b in sc.bodies if b.kind == "dynamic"]
    assert len(dyn) == 17 and sum(j.kind == "revolute" for j in sc.joints) == 12
    assert abs(sum(b.mass for b in dyn) - (1.16115091 + 4 * (2 * 0.14853845 + 0.03070001 + 0.00693606))) < 1e-9
    assert [s.kind for s in sc.body("base_link").shapes] == ["convex"]
    ctl = sc.controllers[0]
    q, ok = ctl.setup.kinematics.inverse(ctl.setup.nominal, np.zeros((4, 3)) + 0.3 * ctl.setup.q_offset)
    assert ok.all()
    np.testing.assert_allclose(ctl.setup.kinematics.forward(q), ctl.setup.nominal, atol=1e-9)
    sim = Simulator(sc, "no-slip", controllers=sc.controllers)
    traj = sim.run(0.15)
    assert traj.error is None
    s = ctl.summary(sim, traj)
    a = ctl.arrays()
    assert not s["fell"] and s["max_foot_slip_m_s"] < 1e-6
    assert np.abs(a["base"][:, 2] / ctl.setup.height - 1).max() < 0.05
    assert a["contact"][1:45].all()          # standing: four feet loaded (record 0 is before the first step)
    assert (~a["contact"][55:]).any(axis=0).sum() == 2            # a diagonal pair has lifted


def test_drag_law_distance_matches_the_closed_form():
    """The viscous drag law used to read the viscous runs: constant n feet and commanded speed u give
    x(T) = u (T - tau (1 - exp(-T / tau))), tau = M / (mu_v n) (first order in h)."""
    from contactlab.scenarios.quadruped import drag_law_distance
    h, steps, M, mu_v = 1e-3, 3001, 1.34, 0.9
    contact = np.zeros((steps, 4), bool)
    contact[:, :3] = True
    u = np.full(steps, 0.05)
    tau, T = M / (mu_v * 3), h * (steps - 1)
    exact = 0.05 * (T - tau * (1 - np.exp(-T / tau)))
    assert drag_law_distance(contact, u, mu_v, M, h) == pytest.approx(exact, rel=2 * h / tau)


def test_go1_from_example_robot_data_stands_and_trots_in_place():
    """go1's URDF with fixed-joint links merged (13 bodies, 12 revolute joints), feet the URDF's
    spheres, posed crouching (limits shifted by the pose); it stands, then trots in place a gait
    period without falling or slipping, each diagonal pair lifting in turn."""
    sc = make_scene("go1", settle=0.2)
    dyn = [b for b in sc.bodies if b.kind == "dynamic"]
    assert len(dyn) == 13 and [j.kind for j in sc.joints] == ["revolute"] * 12
    calf = sc.joints[2]                      # FR_calf_joint: URDF limits [-2.818, -0.888] about the pose -1.6
    assert (calf.lower, calf.upper) == pytest.approx((-2.818 + 1.6, -0.888 + 1.6))
    ctl = sc.controllers[0]
    q, ok = ctl.setup.kinematics.inverse(ctl.setup.nominal, 0.7 * ctl.setup.q_offset)
    assert ok.all()
    np.testing.assert_allclose(ctl.setup.kinematics.forward(q), ctl.setup.nominal, atol=1e-9)
    sim = Simulator(sc, "no-slip", controllers=sc.controllers)
    traj = sim.run(0.9)
    assert traj.error is None
    s = ctl.summary(sim, traj)
    a = ctl.arrays()
    assert not s["fell"] and s["max_foot_slip_m_s"] < 1e-6 and abs(s["distance_m"]) < 0.01
    assert np.abs(a["base"][:, 2] / ctl.setup.height - 1).max() < 0.05
    assert np.degrees(np.abs(a["rpy"][:, :2]).max()) < 5.0
    assert a["contact"][1:150].all()         # standing: four feet loaded
    lifted = ~a["contact"][250:]
    assert lifted.any(axis=0).all()          # every foot leaves the ground in the gait period
    assert not (lifted[:, 0] & lifted[:, 1]).any() and not (lifted[:, 2] & lifted[:, 3]).any()   # never both front or both hind
    assert traj.column("max_penetration").max() < sc.settings.margin


def test_stance_drift_counts_sliding_not_rolling():
    """stance_drift from poses alone: a ball of radius r rolling without slip (x = r theta about
    the axis y) drifts 0 over its stance (to O(h^2)); the same ball sliding at 3 mm/s without turning for 0.2 s
    drifts 0.6 mm (net and path); a stance is a run of contact flags, the second ball's flags split
    into two stances of 0.1 s each."""
    from contactlab.scenarios.quadruped import stance_drift
    r, h, n = 0.01, 1e-3, 201
    t = np.arange(n) * h
    theta = 2.0 * t                                        # rad, rolling forward along +x
    pos = np.zeros((n, 2, 3))
    pos[:, 0, 0] = r * theta
    pos[:, 1, 0] = 3e-3 * t
    pos[:, :, 2] = r
    quat = np.zeros((n, 2, 4))
    quat[:, 0, 0], quat[:, 0, 2] = np.cos(theta / 2), np.sin(theta / 2)
    quat[:, 1, 0] = 1.0
    contact = np.ones((n, 2), bool)
    contact[101, 1] = False                                # the sliding ball: two stances
    d = stance_drift(pos, quat, contact, np.array([0, 1]), np.zeros((2, 3)), r)
    roll = d["leg"] == 0
    # rolling: the centre moves 4 mm; the material point under it moves O(r dtheta^3) per step
    assert roll.sum() == 1 and d["net_m"][roll][0] < 1e-8 and d["path_m"][roll][0] < 1e-8
    slide = ~roll
    assert slide.sum() == 2
    np.testing.assert_allclose(d["net_m"][slide], [3e-3 * 0.1, 3e-3 * 0.099], rtol=1e-9)
    np.testing.assert_allclose(d["path_m"][slide], d["net_m"][slide], rtol=1e-12)
