"""contactlab.control: leg kinematics (analytic and numerical IK against forward kinematics),
gait timing, torque-limited PD and the joint reader (against the simulator's own coordinates)."""
import numpy as np
import pytest

from contactlab.control import Gait, JointPD, JointReader, SerialLegs, ThreeJointLegs
from contactlab.errors import ParamError
from contactlab.scenarios.quadruped import AXIS_SIGNS, Q_INIT, SIDE, build, leg_geometry


def _legs():
    anchors, axes, feet = leg_geometry()
    return SerialLegs(anchors, axes, feet), ThreeJointLegs(anchors[:, 1], SIDE[:, 0], AXIS_SIGNS)


def test_analytic_and_product_of_exponentials_forward_kinematics_agree():
    poe, ana = _legs()
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = Q_INIT + rng.uniform(-0.6, 0.6, size=(4, 3))
        np.testing.assert_allclose(ana.forward(q), poe.forward(q), atol=1e-12)
    # the paper's initial pose: feet 0.1414 m below the hip flexion joints, rolled out by 22.5 deg
    d = poe.forward(Q_INIT) - ana.hips
    np.testing.assert_allclose(np.hypot(d[:, 1], d[:, 2]), 0.1 * np.sqrt(2), atol=1e-4)
    np.testing.assert_allclose(np.abs(d[:, 1]), 0.1 * np.sqrt(2) * np.sin(0.3927), atol=1e-4)
    assert np.all(np.sign(d[:, 1]) == SIDE[:, 1])     # left feet out to +y, right feet to -y


def test_analytic_ik_round_trip_and_branch():
    poe, ana = _legs()
    rng = np.random.default_rng(2)
    x0 = poe.forward(Q_INIT)
    for _ in range(50):
        x = x0 + rng.uniform(-0.03, 0.03, size=(4, 3))
        q, ok = ana.inverse(x)
        assert ok.all()
        np.testing.assert_allclose(poe.forward(q), x, atol=1e-12)
    q, ok = ana.inverse(x0)
    np.testing.assert_allclose(q, Q_INIT, atol=1e-4)   # same knee branch as the paper's pose
    q, ok = ana.inverse(x0 + np.array([0, 0, -0.2]))    # beyond reach: flagged
    assert not ok.any()


def test_numerical_ik_round_trip_and_jacobian():
    poe, _ = _legs()
    rng = np.random.default_rng(3)
    q = Q_INIT + rng.uniform(-0.3, 0.3, size=(4, 3))
    p, J = poe.jacobian(q)
    eps = 1e-7
    for j in range(3):
        dq = np.zeros((4, 3))
        dq[:, j] = eps
        np.testing.assert_allclose((poe.forward(q + dq) - poe.forward(q - dq)) / (2 * eps), J[:, :, j], atol=1e-7)
    x = poe.forward(q)
    qs, ok = poe.inverse(x, Q_INIT)
    assert ok.all()
    np.testing.assert_allclose(poe.forward(qs), x, atol=1e-9)
    _, ok = poe.inverse(x + np.array([0, 0, -0.3]), Q_INIT)
    assert not ok.any()


def test_trot_gait_timing():
    g = Gait()   # period 0.7, duty 0.75, offsets LF .25 RF .75 LH .75 RH .25
    t = np.arange(0, 7.0, 1e-3)
    st = np.array([g.stance(x) for x in t])
    np.testing.assert_allclose(st.mean(axis=0), 0.75, atol=2e-3)
    np.testing.assert_array_equal(st[:, 0], st[:, 3])          # diagonal pairs move together
    np.testing.assert_array_equal(st[:, 1], st[:, 2])
    assert not np.any(~st[:, 0] & ~st[:, 1])                   # never both pairs in the air
    lift = np.flatnonzero(st[:-1, 0] & ~st[1:, 0])             # LF lifts at phase 0.75: t = 0.35 + k 0.7
    np.testing.assert_allclose(t[lift + 1][:3], [0.35, 1.05, 1.75], atol=1.5e-3)
    # foot offsets: stance moves back at the commanded speed, swing peaks at the step height,
    # and the path is continuous
    x = np.array([g.foot_offsets(v) for v in t])
    v = np.diff(x[:, 0, 0]) / 1e-3
    mid = st[1:, 0] & st[:-1, 0]
    np.testing.assert_allclose(v[mid], -g.velocity, rtol=1e-9)
    assert x[:, 0, 2].max() <= g.step_height
    np.testing.assert_allclose(g.foot_offsets((0.875 - 0.25) * 0.7)[0], [0.0, 0.0, g.step_height], atol=1e-12)
    assert np.abs(np.diff(x, axis=0)).max() < 2e-3 * max(g.step_height, g.stance_length) / (0.25 * 0.7) * 4
    np.testing.assert_allclose(x[:, :, 2][st], 0.0)
    with pytest.raises(ParamError):
        Gait(duty=1.0)


def test_pd_clips_torque():
    pd = JointPD(kp=10, kd=0.1, tau_max=4.0)
    tau = pd(np.array([0.0, 0.0, 0.0]), np.zeros(3), np.array([0.1, 1.0, -1.0]))
    np.testing.assert_allclose(tau, [1.0, 4.0, -4.0])


def test_joint_reader_matches_simulator_coordinates():
    from contactlab.mechanics.system import joint_rows
    from contactlab.sim import Simulator
    sc = build(controller=False)
    sim = Simulator(sc, "no-slip")
    names = [j.name for j in sc.joints]
    for _ in range(5):
        for k, n in enumerate(names):
            sim.set_joint_torque(n, 0.2 * (-1) ** k)
        sim.step()
    q, qd = JointReader(sim.model, names)(sim.data)
    (_, _, _, _), _, _, js = joint_rows(sim.model, sim.data, sim.h)
    np.testing.assert_allclose(q, js.coordinate, atol=1e-12)
    assert np.abs(q).max() > 1e-4
