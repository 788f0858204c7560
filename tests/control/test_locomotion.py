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


# -- the compiled controller pieces against the numpy formulas they replaced --------------------------

def _ref_foot_offsets(g, t, scale=1.0):
    p = np.mod(t / g.period + np.asarray(g.offsets, dtype=np.float64), 1.0)
    L = g.stance_length * scale
    out = np.zeros((p.size, 3))
    st = p < g.duty
    out[st, 0] = L * (0.5 - p[st] / g.duty)
    s = (p[~st] - g.duty) / (1.0 - g.duty)
    out[~st, 0] = L * (-0.5 + 0.5 * (1.0 - np.cos(np.pi * s)))
    out[~st, 2] = scale * g.step_height * 0.5 * (1.0 - np.cos(2.0 * np.pi * s))
    return out


def _ref_analytic_inverse(legs, x):
    d = np.asarray(x, dtype=np.float64).reshape(-1, 3) - legs.hips
    r = np.hypot(d[:, 1], d[:, 2])
    phi = np.arctan2(d[:, 1], -d[:, 2])
    X, Y = legs.side * d[:, 0], legs.side * r
    l1, l2 = legs.l1, legs.l2
    D = (X * X + Y * Y - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    t2 = legs.side * np.arccos(np.clip(D, -1.0, 1.0))
    t1 = np.arctan2(Y, X) - np.arctan2(l2 * np.sin(t2), l1 + l2 * np.cos(t2))
    return np.stack([phi, t1, t2], axis=1) * legs.signs, np.abs(D) <= 1.0


def test_compiled_gait_ik_and_pd_equal_the_array_formulas():
    g = Gait(period=0.6, duty=0.7, offsets=(0.1, 0.6, 0.35, 0.85), step_height=0.02, velocity=0.08)
    for t in np.linspace(0.0, 2.0, 401):
        for scale in (0.0, 0.3, 1.0):
            np.testing.assert_allclose(g.foot_offsets(t, scale), _ref_foot_offsets(g, t, scale), rtol=0, atol=1e-15)
        phase = np.array([(t / g.period + o) % 1.0 for o in g.offsets])      # Python's float remainder
        np.testing.assert_array_equal(g.phase(t), phase)
        np.testing.assert_array_equal(g.stance(t), phase < g.duty)
        np.testing.assert_array_equal(g.stance(t), np.mod(t / g.period + np.asarray(g.offsets), 1.0) < g.duty)
    poe, ana = _legs()
    rng = np.random.default_rng(5)
    x0 = poe.forward(Q_INIT)
    for _ in range(50):
        x = x0 + rng.uniform(-0.12, 0.12, size=(4, 3))          # some out of reach
        (q, ok), (qr, okr) = ana.inverse(x), _ref_analytic_inverse(ana, x)
        np.testing.assert_allclose(q, qr, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(ok, okr)
    pd = JointPD(kp=np.array([10.0, 5.0, 2.0]), kd=0.1, tau_max=np.array([4.0, 1.0, 0.5]))
    for _ in range(20):
        q, qd, qr, vr, ff = rng.standard_normal((5, 4, 3))
        ref = np.clip(pd.kp * (qr - q) + pd.kd * (vr - qd) + ff, -pd.tau_max, pd.tau_max)
        np.testing.assert_allclose(pd(q, qd, qr, vr, ff), ref, rtol=0, atol=1e-15)
    np.testing.assert_allclose(pd(np.zeros(3), np.zeros(3), np.ones(3)), [4.0, 1.0, 0.5])


def _reference_torques(ctl, sim):
    """LegController's torques by the numpy formulas of the controller before it was compiled."""
    from contactlab.mechanics.rotation import quat_to_matrix
    s, data = ctl.setup, sim.data
    L, k = s.kinematics.shape
    q, qd = ctl._reader(data)
    q, qd = q.reshape(L, k) + s.q_offset, qd.reshape(L, k)
    t = data.time - ctl.settle
    scale = 0.0 if t < 0 else min(1.0, t / ctl.ramp) if ctl.ramp > 0 else 1.0
    target = s.nominal + _ref_foot_offsets(ctl.gait, max(t, 0.0), scale)
    if s.analytic is not None:
        q_ref, _ = _ref_analytic_inverse(s.analytic, target)
    else:
        q_ref, _ = s.kinematics.inverse(target, q if ctl._q_prev is None else ctl._q_prev, max_iter=10)
    x, J = s.kinematics.jacobian(q)
    h = sim.h
    xd_ref = (s.nominal + _ref_foot_offsets(ctl.gait, max(t + h, 0.0), scale) - target) / h if scale > 0 else 0.0 * target
    xd = np.einsum("lij,lj->li", J, qd)
    F = ctl.foot_kp * (target - x) + ctl.foot_kd * (xd_ref - xd)
    tau_ff = np.einsum("lij,li->lj", J, F)
    if ctl.weight_ff:
        p = np.mod(max(t, 0.0) / ctl.gait.period + np.asarray(ctl.gait.offsets), 1.0)
        stance = p < ctl.gait.duty if scale > 0 else np.ones(L, bool)
        R = quat_to_matrix(data.quaternion[ctl._base])
        W = R.T @ (-s.mass * sim.model.gravity) / max(1, int(stance.sum()))
        tau_ff = tau_ff - np.einsum("lij,i->lj", J, W) * stance[:, None]
    qd_ref = np.einsum("lij,lj->li", np.linalg.pinv(J), xd_ref)
    pd = ctl.pd
    return np.clip(pd.kp * (q_ref - q) + pd.kd * (qd_ref - qd) + tau_ff, -pd.tau_max, pd.tau_max)


def _trot_checked(scene, steps, expect, check):
    """``steps`` of ``scene``'s trot under no-slip with its controller wrapped: once the controller
    has read the model, ``expect(ctl, sim)`` before each call and ``check(ctl, sim, expected)``
    after it. Returns (controller, simulator, steps checked)."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sc = make_scene(scene, settle=0.05) if scene == "solo12" else make_scene(scene)
    ctl = sc.controllers[0]
    checked = []

    def wrapped(sim):
        expected = expect(ctl, sim) if ctl._reader is not None else None
        ctl(sim)
        if expected is not None:
            check(ctl, sim, expected)
            checked.append(sim.data.time)
    sim = Simulator(sc, "no-slip", "ppm", controllers=[wrapped])
    sim.run(steps * sim.h)
    return ctl, sim, len(checked)


@pytest.mark.parametrize("scene,steps", [("quadruped", 400), ("solo12", 120)])
def test_compiled_controller_torques_equal_the_reference(scene, steps):
    """Along a trot (settle, ramp and gait; analytic IK on the quadruped, damped least squares on
    Solo-12), every step's torques equal the numpy formulas', and so does the logged base attitude."""
    from contactlab.mechanics.rotation import quat_to_matrix

    def check(ctl, sim, ref):
        np.testing.assert_allclose(ctl._tau, ref, rtol=0, atol=1e-12)
    ctl, sim, checked = _trot_checked(scene, steps, _reference_torques, check)
    assert checked == steps - 1 and np.abs(ctl.arrays()["torque"]).max() > 0.1
    R = quat_to_matrix(sim.data.quaternion[ctl._base])
    ctl._record(sim)
    np.testing.assert_allclose(ctl.log["rpy"][-1], [np.arctan2(R[2, 1], R[2, 2]), np.arcsin(np.clip(-R[2, 0], -1, 1)),
                                                    np.arctan2(R[1, 0], R[0, 0])], rtol=0, atol=1e-15)


def test_joint_rates_are_the_rate_rows_times_the_velocity():
    """JointReader's rates (and control.grasp.joint_rate) equal the simulator's rate rows . v."""
    from contactlab.control.grasp import joint_rate
    from contactlab.mechanics.system import joint_rows
    from contactlab.sim import Simulator
    sc = build(controller=False)
    sim = Simulator(sc, "no-slip")
    names = [j.name for j in sc.joints]
    for _ in range(5):
        for k, n in enumerate(names):
            sim.set_joint_torque(n, 0.3 * (-1) ** k)
        sim.step()
    _, qd = JointReader(sim.model, names)(sim.data)
    *_, js = joint_rows(sim.model, sim.data, sim.h)
    v = sim.data.velocity_vector(sim.model)
    np.testing.assert_allclose(qd, js.rate_rows @ v, rtol=0, atol=1e-12)
    assert np.abs(qd).max() > 1e-3
    assert joint_rate(sim, names[4]) == pytest.approx(qd[4], abs=1e-15)


def test_rate_reference_is_pinv_times_the_foot_velocity():
    """The controller's joint-rate reference: pinv(J) xd, by the adjugate where the 3x3 J is far from
    singular and by pinv itself at a straight knee (J rank 2) and for a non-square J."""
    from contactlab.control.locomotion import _rate_reference
    rng = np.random.default_rng(11)
    for _ in range(50):
        J, xd = rng.normal(size=(3, 3)), rng.normal(size=3)
        ref = np.linalg.pinv(J) @ xd
        assert np.allclose(_rate_reference(J, xd), ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())
    J = rng.normal(size=(3, 3))
    J[:, 2] = 2.0 * J[:, 1]                                   # straight knee: two parallel columns
    xd = rng.normal(size=3)
    assert np.allclose(_rate_reference(J, xd), np.linalg.pinv(J) @ xd, rtol=0, atol=1e-12)
    J4 = rng.normal(size=(3, 4))
    assert np.allclose(_rate_reference(J4, xd), np.linalg.pinv(J4) @ xd, rtol=0, atol=1e-12)


def _separate_routines_step(ctl, sim):
    """What one LegController call should log and apply, by the separate routines the compiled step
    composes (JointReader, Gait.stance / foot_offsets, the IK, _leg_torques, _foot_slip, _rpy)."""
    from contactlab.control.locomotion import _foot_slip, _leg_torques, _rpy
    from contactlab.models.built import ACTIVE_GAP
    s, data = ctl.setup, sim.data
    L, k = s.kinematics.shape
    t = data.time - ctl.settle
    stance = ctl.gait.stance(max(t, 0.0))
    cs, res = data.contacts, data.result
    contact, slip = np.zeros(L, bool), np.full(L, np.nan)
    if cs is not None and res is not None and cs.count:
        feet = np.array([sim.model.index(f) for f in s.feet])
        contact, slip = _foot_slip(cs.body_a, cs.body_b, res.normal, cs.phi, cs.point, cs.normal, feet,
                                   sim.model.dof_start, data.linear_velocity, data.angular_velocity, ctl._x_step,
                                   float(ACTIVE_GAP))
    i = sim.model.index(s.base)
    row = {"time": data.time, "base": data.position[i].copy(), "rpy": _rpy(data.quaternion[i]), "stance": stance,
           "contact": contact, "slip": slip, "torque": ctl._tau.ravel().copy()}
    q, qd = ctl._reader(data)
    q, qd = q.reshape(L, k) + s.q_offset, qd.reshape(L, k)
    scale = 0.0 if t < 0 else min(1.0, t / ctl.ramp) if ctl.ramp > 0 else 1.0
    target = s.nominal + ctl.gait.foot_offsets(max(t, 0.0), scale)
    if s.analytic is not None:
        q_ref, _ = s.analytic.inverse(target)
    else:
        q_ref, _ = s.kinematics.inverse(target, q if ctl._q_prev is None else ctl._q_prev, max_iter=10)
    h = sim.h
    xd_ref = (s.nominal + ctl.gait.foot_offsets(max(t + h, 0.0), scale) - target) / h if scale > 0 else 0.0 * target
    kin = s.kinematics
    tau = _leg_torques(kin.anchors, kin.axes, kin.feet, q, qd, q_ref, target, xd_ref, float(ctl.foot_kp),
                       float(ctl.foot_kd), bool(ctl.weight_ff), stance if scale > 0 else np.ones(L, bool),
                       float(s.mass), sim.model.gravity, data.quaternion[i], *ctl.pd.gains((L, k)))
    return row, tau


@pytest.mark.parametrize("scene,steps", [("quadruped", 500), ("solo12", 120)])
def test_one_compiled_control_step_equals_the_separate_routines(scene, steps):
    """LegController's single compiled call per step (_control_step) logs and applies bitwise what
    the separate routines give, along a trot (settle, ramp, gait; analytic IK on the quadruped,
    damped least squares on Solo-12); its log grows past its first allocation with the rows kept."""
    def check(ctl, sim, expected):
        row, tau = expected
        np.testing.assert_array_equal(ctl._tau, tau)
        for key, value in row.items():
            np.testing.assert_array_equal(ctl.log[key][-1], value, err_msg=key)
    ctl, sim, checked = _trot_checked(scene, steps, _separate_routines_step, check)
    assert checked == steps - 1
    a = ctl.arrays()
    assert a["contact"].any() and a["stance"].any() and not a["stance"].all() and np.isfinite(a["slip"]).any()
    for _ in range(1100):                        # past the first 1024 rows: the arrays double, rows kept
        ctl._record(sim)
    b = ctl.arrays()
    assert {k: v.shape[1:] for k, v in b.items()} == {k: v.shape[1:] for k, v in a.items()}
    assert b["time"].size == a["time"].size + 1100 and set(b) == {"time", "base", "rpy", "stance", "contact",
                                                                    "slip", "torque"}
    for k, v in a.items():
        np.testing.assert_array_equal(b[k][:v.shape[0]], v)
        assert b[k].dtype == v.dtype
    np.testing.assert_array_equal(b["torque"][-1], ctl._tau.ravel())


def _ref_damped_least_squares(legs, x, q0, tol=1e-10, max_iter=50, damping=1e-6):
    """The damped least squares of SerialLegs.inverse written with NumPy over all legs at once
    (the compiled kernel's independent reference)."""
    L, k = legs.shape
    q = np.array(q0, dtype=float).reshape(L, k)
    scale = np.maximum(1.0, np.abs(x).max(axis=1))
    lam = np.full(L, damping)
    p, J = legs.jacobian(q)
    e = x - p
    err = np.linalg.norm(e, axis=1)
    for _ in range(max_iter):
        if np.all(err <= tol * scale):
            break
        JT = np.swapaxes(J, 1, 2)
        dq = np.linalg.solve(JT @ J + lam[:, None, None] * np.eye(k), np.einsum("lij,lj->li", JT, e)[..., None])[..., 0]
        pn, Jn = legs.jacobian(q + dq)
        en = x - pn
        errn = np.linalg.norm(en, axis=1)
        better = errn < err
        q[better], p[better], J[better], e[better], err[better] = (q + dq)[better], pn[better], Jn[better], \
            en[better], errn[better]
        lam = np.where(better, np.maximum(lam * 0.3, damping), lam * 10.0)
    return q, err <= tol * scale


def test_compiled_damped_least_squares_follows_the_numpy_iteration():
    poe, _ = _legs()
    rng = np.random.default_rng(11)
    for trial in range(20):
        q_true = Q_INIT + rng.uniform(-0.4, 0.4, size=(4, 3))
        x = poe.forward(q_true) + (np.array([0, 0, -0.3]) if trial % 5 == 4 else 0.0)   # some out of reach
        for max_iter in (3, 10, 50):
            q, ok = poe.inverse(x, Q_INIT, max_iter=max_iter)
            q_ref, ok_ref = _ref_damped_least_squares(poe, x, Q_INIT, max_iter=max_iter)
            assert (ok == ok_ref).all()
            # a target out of reach: the leg stretches towards it, where J'J is singular and the damped
            # step along the null direction is set by rounding (the kernel's Cholesky solve, the
            # reference's LU): the foot's error agrees, the angles to the flat valley's width
            reach = trial % 5 != 4
            np.testing.assert_allclose(q, q_ref, rtol=0, atol=1e-9 if reach else 1e-7)
            np.testing.assert_allclose(np.linalg.norm(poe.forward(q) - x, axis=1),
                                       np.linalg.norm(poe.forward(q_ref) - x, axis=1), rtol=0, atol=1e-9)


def test_spd_solve_matches_the_general_solve_on_damped_normal_equations():
    """The Cholesky solve of the damped normal equations (J'J + lam I) x = b against LAPACK's general
    solve (np.linalg.solve), from the lower triangle only; a matrix that is not positive definite
    gives NaN (the trial step then fails its error test), not an exception."""
    from contactlab.control.ik import spd_solve_into
    rng = np.random.default_rng(5)
    for k in (1, 2, 3, 6):
        for lam in (1e-6, 1e-3, 1.0):
            J = rng.normal(size=(3, k))
            A = J.T @ J + lam * np.eye(k)
            b = rng.normal(size=k)
            lower = np.tril(A) + np.triu(rng.normal(size=(k, k)), 1)     # the upper triangle is not read
            x = np.empty(k)
            spd_solve_into(lower, b, x)
            ref = np.linalg.solve(A, b)
            np.testing.assert_allclose(x, ref, rtol=1e-9 * np.linalg.cond(A), atol=0)
    x = np.empty(2)
    spd_solve_into(np.array([[1.0, 0.0], [2.0, 1.0]]), np.ones(2), x)      # eigenvalues 1 +- 2: indefinite
    assert np.isnan(x).all()


def test_damped_least_squares_from_held_frames_is_the_fresh_solve():
    """A solve whose work holds the feet and Jacobians of its start (the controller's: from its last
    answer, with one work for every step) gives the bits of a solve that evaluates them afresh,
    along a moving target; a start that is not the held angles (a step taken again) evaluates anew."""
    from contactlab.control.ik import ik_work, serial_inverse, serial_inverse_into
    poe, _ = _legs()
    work = ik_work(4, 3)
    q_held, q_fresh = Q_INIT.copy(), Q_INIT.copy()
    x0 = poe.forward(Q_INIT)
    for step in range(12):
        x = x0 + 0.004 * step * np.array([1.0, 0.0, 0.5])
        if step == 6:
            q_held += 1e-3          # not the angles whose frames the work holds
            q_fresh += 1e-3
        serial_inverse_into(poe.anchors, poe.axes, poe.feet, x, q_held, 1e-10, 50, 1e-6, work)
        q_fresh, ok = serial_inverse(poe.anchors, poe.axes, poe.feet, x, q_fresh.copy(), 1e-10, 50, 1e-6)
        np.testing.assert_array_equal(q_held, q_fresh)
        np.testing.assert_array_equal(work[3], ok)
        assert ok.all()
        np.testing.assert_allclose(poe.forward(q_held), x, rtol=0, atol=1e-9)


@pytest.mark.parametrize("robot", ["quadruped", "solo12"])
def test_the_compiled_controllers_static_arrays_are_c_contiguous(robot):
    """The controller kernel's fixed arrays (an analytic IK's side is a column of SIDE: a strided
    view) reach the compiled call C-contiguous, with the values of the setup: the Python call, the
    fused step and the rollout then type _control_step alike (one compile, not one per layout)."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sc = make_scene(robot)
    sim = Simulator(sc, "no-slip", None, controllers=list(sc.controllers))
    c = sc.controllers[0]
    kernel = c.compiled_form(sim)
    arrays = [x for x in kernel.static if isinstance(x, np.ndarray)]
    assert len(arrays) >= 10 and all(x.flags.c_contiguous for x in arrays)
    a = c.setup.analytic
    if a is not None:
        side = kernel.static[len(c._bodies) + 12]
        assert side.flags.c_contiguous and np.array_equal(side, a.side)
