"""Mechanics: joints hold, limits and motors act as specified, bad scenes fail before any step."""
import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.errors import ModelError
from contactlab.mechanics import Body, Joint, Motor, Scene, Settings, Shape, build_model, joint_rows
from contactlab.mechanics.system import build_system, delassus, pyramid_rows
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(1):
        yield


def _link(name, pos, mass=1.0, size=(0.4, 0.05, 0.05)):
    return Body(name, mass=mass, position=pos, shapes=[Shape("box", size=size)])


def test_pendulum_chain_joints_hold_and_limits_are_respected():
    limit = 30.0
    sim = Simulator(make_scene("pendulum-chain", links=3, limit_deg=limit), "stewart-trinkle", "lemke")
    from contactlab.sim import Trajectory
    traj = Trajectory(sim.model.names)
    angles = []
    for _ in range(60):
        traj = sim.run(sim.h, trajectory=traj)
        angles.append(joint_rows(sim.model, sim.data, sim.h)[3].coordinate[1:])
    m = traj.metrics()
    assert m["solver_failures"] == 0
    assert traj.column("joint_error").max() < 1e-6
    # the limit rows are active at some point, and no joint goes past its limit by more than 0.01 degree
    assert traj.column("lcp_size").max() >= 1
    assert np.degrees(np.abs(np.array(angles))).max() <= limit + 0.01
    assert np.degrees(np.abs(np.array(angles))).max() >= limit - 1.0
    # joints and limits do no work: total energy never rises beyond round-off of the projection
    E = traj.column("energy")
    assert E.max() <= E[0] + 1e-6 * abs(E[0])


def test_revolute_motor_reaches_its_velocity_unloaded_and_respects_its_force_limit():
    def scene(max_force):
        body = _link("arm", (0.2, 0.0, 0.0))
        j = Joint("hinge", "revolute", "world", "arm", anchor=(0, 0, 0), axis=(0, 0, 1),
                  motor=Motor(target_velocity=2.0, max_force=max_force))
        return Scene("motor", [body], [j], gravity=(0, 0, 0), settings=Settings(dt=0.01))

    sim = Simulator(scene(1e3), "stewart-trinkle", "lemke")
    sim.step()
    assert sim.data.angular_velocity[0][2] == pytest.approx(2.0, abs=1e-9)
    sim.run(0.2)
    assert sim.data.angular_velocity[0][2] == pytest.approx(2.0, abs=1e-9)
    # weak motor: torque saturates, omega = h * F / I_pivot after one step
    F = 0.01
    sim = Simulator(scene(F), "stewart-trinkle", "lemke")
    I_pivot = 1.0 * (0.4 ** 2 + 0.05 ** 2) / 12 + 1.0 * 0.2 ** 2
    sim.step()
    assert sim.data.angular_velocity[0][2] == pytest.approx(0.01 * F / I_pivot, rel=1e-6)
    assert sim.data.result.motor[0] == pytest.approx(0.01 * F, rel=1e-9)


@pytest.mark.parametrize("model,method", [("stewart-trinkle", "lemke"), ("box-friction", "pgs-sm")])
def test_prismatic_motor_drives_a_slider_and_stops_at_its_limit(model, method):
    import contactlab as cl
    if method not in cl.available_solvers():
        pytest.skip(method)
    slider = _link("slider", (0.0, 0.0, 1.0))
    j = Joint("rail", "prismatic", "world", "slider", anchor=(0, 0, 1.0), axis=(1, 0, 0), lower=-0.1, upper=0.05,
              motor=Motor(target_velocity=0.5, max_force=100.0))
    sim = Simulator(Scene("slider", [slider], [j], settings=Settings(dt=0.01)), model, method)
    sim.step()
    assert sim.data.linear_velocity[0][0] == pytest.approx(0.5, abs=1e-6)
    sim.run(0.5)
    # held against gravity on the rail, stopped by the upper limit
    assert sim.data.position[0][0] == pytest.approx(0.05, abs=1e-4)
    assert abs(sim.data.position[0][2] - 1.0) < 1e-6
    assert abs(sim.data.linear_velocity[0][0]) < 1e-5


def test_fixed_and_spherical_joints_hold_under_gravity():
    a = _link("a", (0.2, 0.0, 1.0))
    b = _link("b", (0.6, 0.0, 1.0))
    joints = [Joint("weld", "fixed", "world", "a", anchor=(0, 0, 1.0)),
              Joint("ball", "spherical", "a", "b", anchor=(0.4, 0, 1.0))]
    sim = Simulator(Scene("weld", [a, b], joints, settings=Settings(dt=0.01)), "stewart-trinkle", "lemke")
    traj = sim.run(0.5)
    assert np.abs(sim.data.position[0] - [0.2, 0, 1.0]).max() < 1e-6
    # b swings about the ball joint: its centre stays 0.2 from the anchor
    assert np.linalg.norm(sim.data.position[1] - [0.4, 0, 1.0]) == pytest.approx(0.2, abs=1e-6)
    assert sim.data.position[1][2] < 1.0 - 0.01
    assert traj.column("joint_error").max() < 1e-6


def test_kinematic_body_moves_with_its_velocity_and_pushes_a_box():
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))])
    pusher = Body("pusher", kind="kinematic", position=(-0.3, 0, 0.1), linear_velocity=(0.5, 0, 0),
                  shapes=[Shape("box", size=(0.2, 0.4, 0.2))])
    box = Body("box", mass=1.0, position=(0.0, 0, 0.1), shapes=[Shape("box", size=(0.2, 0.2, 0.2))])
    sim = Simulator(Scene("push", [ground, pusher, box], mu=0.3, settings=Settings(dt=0.01)),
                    "stewart-trinkle", "lemke")
    sim.run(1.0)
    assert sim.data.position[1][0] == pytest.approx(-0.3 + 0.5, abs=1e-9)
    # the box is pushed: it sits ahead of the pusher's face, moving with it
    assert sim.data.position[2][0] == pytest.approx(0.2 + 0.2, abs=0.01)
    assert sim.data.linear_velocity[2][0] == pytest.approx(0.5, abs=1e-3)


def test_planar_body_stays_in_its_plane():
    b = Body("puck", mass=1.0, planar=True, position=(0, 0, 1.0), linear_velocity=(1, 0.5, 0),
             angular_velocity=(0.0, 0.0, 3.0), shapes=[Shape("box", size=(0.2, 0.1, 0.05))])
    sim = Simulator(Scene("planar", [b], settings=Settings(dt=0.01)), "stewart-trinkle", "lemke")
    sim.run(0.5)
    assert sim.data.position[0][2] == pytest.approx(1.0, abs=1e-9)
    assert np.abs(sim.data.angular_velocity[0][:2]).max() < 1e-9
    assert sim.data.position[0][0] == pytest.approx(0.5, abs=1e-9)


def _scene_with(**changes):
    body = Body("b", mass=1.0, shapes=[Shape("box")])
    for k, v in changes.items():
        setattr(body, k, v)
    return Scene("bad", [body])


@pytest.mark.parametrize("scene,field", [
    (_scene_with(mass=-1.0), "mass"),
    (_scene_with(inertia=np.diag([1.0, -1.0, 1.0])), "inertia"),
    (_scene_with(inertia=[[1, 2, 0], [2, 1, 0], [0, 0, 1]]), "inertia"),
    (_scene_with(orientation=(1.0, 0.1, 0.0, 0.0)), "orientation"),
    (_scene_with(shapes=[Shape("torus")]), "kind"),
    (_scene_with(shapes=[Shape("box", size=(1, 0, 1))]), "size"),
    (_scene_with(shapes=[Shape("box", mu=-0.1)]), "mu"),
    (Scene("bad", [Body("b", shapes=[Shape("box")])], mu=-0.5), "mu"),
    (Scene("bad", [Body("b", shapes=[Shape("box")])], joints=[Joint("j", "hinge", "world", "b")]), "kind"),
    (Scene("bad", [Body("b", shapes=[Shape("box")])], joints=[Joint("j", "revolute", "world", "c")]), "child"),
    (Scene("bad", [Body("b", shapes=[Shape("box")])], joints=[Joint("j", "revolute", "world", "b", lower=1, upper=0)]),
     "lower"),
])
def test_bad_scenes_raise_naming_the_field_before_any_step(scene, field):
    with pytest.raises(ModelError, match=field):
        build_model(scene)
    with pytest.raises(ModelError, match=field):
        Simulator(scene)


def test_set_motor_between_steps_changes_the_driven_velocity():
    body = _link("arm", (0.2, 0.0, 0.0))
    j = Joint("hinge", "revolute", "world", "arm", anchor=(0, 0, 0), axis=(0, 0, 1),
              motor=Motor(target_velocity=1.0, max_force=1e3))
    sim = Simulator(Scene("m", [body], [j], gravity=(0, 0, 0)), "stewart-trinkle", "lemke")
    sim.step()
    assert sim.data.angular_velocity[0][2] == pytest.approx(1.0, abs=1e-9)
    sim.set_motor("hinge", target_velocity=-0.5)
    sim.step()
    assert sim.data.angular_velocity[0][2] == pytest.approx(-0.5, abs=1e-9)
    with pytest.raises(ModelError, match="nope"):
        sim.set_motor("nope", 1.0)


def test_joint_rows_are_the_time_derivatives_of_the_joint_errors_and_coordinates():
    """The compiled joint rows against central differences of their own position errors along a
    random velocity (revolute, spherical, fixed joints on a trotting quadruped's chain after a few
    steps: errors ~0, coordinates non-zero): J v = d err / dt, rate row . v = d coordinate / dt, and
    a limit row is sign x the rate row."""
    from contactlab.mechanics.rotation import integrate_quat
    sh = [Shape("box", size=(0.2, 0.1, 0.1))]
    bodies = [_link("a", (0.2, 0, 1)), _link("b", (0.6, 0, 1)), _link("c", (1.0, 0, 1)), _link("d", (1.4, 0, 1)),
              Body("e", mass=0.5, position=(1.8, 0.1, 1), shapes=sh)]
    joints = [Joint("weld", "fixed", "world", "a", anchor=(0, 0, 1.0)),
              Joint("ball", "spherical", "a", "b", anchor=(0.4, 0, 1.0)),
              Joint("h1", "revolute", "b", "c", anchor=(0.8, 0, 1.0), axis=(0, 1, 1), lower=-3.0),
              Joint("h2", "revolute", "c", "d", anchor=(1.2, 0, 1.0), axis=(0, 0, 1), upper=3.0),
              Joint("h3", "revolute", "d", "e", anchor=(1.6, 0, 1.0), axis=(0.3, 0.9, 0.1), follows="h2", ratio=0.5)]
    sim = Simulator(Scene("chain", bodies, joints, settings=Settings(dt=0.005)), "stewart-trinkle", "lemke")
    sim.data.angular_velocity[1:] = [[1.0, 2.0, 0.5], [0.0, 3.0, 1.0], [2.0, 0.0, -1.0], [0.5, 0.5, 4.0]]
    sim.run(0.1)
    model, data = sim.model, sim.data
    (J, _, err, labels), (L, _, llab), _, js = joint_rows(model, data, 0.005)
    assert sim.joint_error() < 1e-8 and np.abs(js.coordinate[2:]).min() > 1e-3
    rng = np.random.default_rng(3)
    v = rng.standard_normal(model.ndof)

    def moved(eps):
        d = data.copy()
        V = v.reshape(-1, 6)
        d.position += eps * V[:, :3]
        d.quaternion = integrate_quat(d.quaternion, V[:, 3:], eps)
        (_, _, e, _), _, _, s = joint_rows(model, d, 0.005)
        return e, s.coordinate

    eps = 1e-6
    (ep, cp), (em, cm) = moved(eps), moved(-eps)
    rows = np.isfinite(err)
    assert rows.sum() == 6 + 3 + 3 * 5 + 1              # weld 6, ball 3, revolutes 5 each, coupling 1
    np.testing.assert_allclose(J[rows] @ v, ((ep - em) / (2 * eps))[rows], atol=1e-6)
    np.testing.assert_allclose(js.rate_rows @ v, np.nan_to_num((cp - cm) / (2 * eps)), atol=1e-6)
    # the coupling row is h3's rate minus 0.5 h2's rate
    k = labels.index("h3:coupling")
    np.testing.assert_allclose(J[k].toarray(), (js.rate_rows[4] - 0.5 * js.rate_rows[3]).toarray(), atol=1e-15)
    # a limit row is the joint's rate row, signed (lower +, upper -), present only within reach
    (_, _, _, _), (L, bias, llab), _, js = joint_rows(model, data, 0.005)
    assert llab == []                                    # bounds 3 rad away: out of reach
    m2 = sim.model.joints[2]
    import dataclasses
    lim = dataclasses.replace(model, joints=model.joints[:2] + (dataclasses.replace(m2, lower=js.coordinate[2] - 0.01),)
                              + model.joints[3:])          # stale joint_arrays: repacked
    (_, _, _, _), (L, bias, llab), _, _ = joint_rows(lim, data, 0.005)
    assert llab == ["h1:lower"]
    np.testing.assert_allclose(L.toarray(), js.rate_rows[2].toarray(), atol=0)
    # a ConstraintSystem's rows and labels are joint_rows' (its own compiled call without the joint state)
    from contactlab.mechanics.system import build_system
    sys_ = build_system(lim, data, None, 0.005)
    (J2, rhs2, err2, lab2), (L2, bias2, llab2), (A2, at2, am2, alab2), _ = joint_rows(lim, data, 0.005)
    for got, ref in ((sys_.J, J2), (sys_.L, L2), (sys_.A, A2)):
        assert got.shape == ref.shape and np.array_equal(got.toarray(), ref.toarray())
    for got, ref in ((sys_.j_rhs, rhs2), (sys_.j_err, err2), (sys_.l_bias, bias2), (sys_.a_target, at2),
                     (sys_.a_max, am2)):
        np.testing.assert_array_equal(got, ref)
    assert dict(sys_.labels) == {"joint": lab2, "limit": llab2, "motor": alab2} and llab2 == ["h1:lower"]
    assert bias[0] == pytest.approx(0.01 / 0.005, rel=1e-9)


def test_contact_frame_rows_are_point_velocities_and_csr_of_is_a_valid_canonical_matrix():
    """N, S, T from the one compiled pass (point_rows with several directions) equal u.(v_b(P) - v_a(P))
    computed body by body from random velocities; csr_of gives what scipy's constructor gives and
    passes scipy's full format check; the mass blocks from quaternions equal diag(m I, R I R')."""
    import scipy.sparse as sp
    from contactlab.mechanics.rotation import quat_to_matrix, tangent_basis
    from contactlab.mechanics.system import _point_rows, csr_of, mass_blocks, point_rows
    model, data = build_model(make_scene("pile", count=6))
    rng = np.random.default_rng(3)
    live = np.flatnonzero(model.dof_start >= 0)
    q = rng.normal(size=(model.nb, 4))
    data.quaternion[:] = q / np.linalg.norm(q, axis=1, keepdims=True)
    data.linear_velocity[:] = rng.normal(size=(model.nb, 3))
    data.angular_velocity[:] = rng.normal(size=(model.nb, 3))
    k = 12
    a = rng.integers(-1, model.nb, size=k)
    b = (a + 1 + rng.integers(1, model.nb + 1, size=k)) % (model.nb + 1) - 1     # a != b (a contact's two bodies)
    P = rng.normal(size=(k, 3))
    n = rng.normal(size=(k, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    t1, t2 = tangent_basis(n)
    rows = point_rows(model, data, a, b, P, np.stack((n, t1, t2)))
    v = data.velocity_vector(model)

    def point_velocity(body, p):
        if body < 0 or model.dof_start[body] < 0:
            return np.zeros(3)
        return data.linear_velocity[body] + np.cross(data.angular_velocity[body], p - data.position[body])

    for M, U in zip(rows, (n, t1, t2)):
        M.check_format(full_check=True)
        expect = [U[r] @ (point_velocity(b[r], P[r]) - point_velocity(a[r], P[r])) for r in range(k)]
        assert np.allclose(M @ v, expect, rtol=0, atol=1e-12)
        ref = sp.csr_matrix((M.data.copy(), M.indices.copy(), M.indptr.copy()), shape=M.shape)
        assert (abs(ref - M)).max() == 0.0 and M.has_canonical_format
    single = point_rows(model, data, a, b, P, t2)
    assert (abs(single - rows[2])).max() == 0.0
    views, stacked = _point_rows(model, data, a, b, P, np.stack((n, t1, t2)))   # [N; S; T], N, S, T its views
    stacked.check_format(full_check=True)
    assert stacked.has_canonical_format and (abs(stacked - sp.vstack(rows, format="csr"))).max() == 0.0
    assert all(np.shares_memory(V.data, stacked.data) and (abs(V - R)).max() == 0.0 for V, R in zip(views, rows))
    E = csr_of(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(4, dtype=np.int64), (3, 7))
    E.check_format(full_check=True)
    assert E.shape == (3, 7) and E.nnz == 0 and np.array_equal(E.toarray(), np.zeros((3, 7)))
    Bm, Bw = mass_blocks(model, data)
    R = quat_to_matrix(data.quaternion[live])
    for t, body in enumerate(live):
        assert np.allclose(Bm[t, :3, :3], model.mass[body] * np.eye(3), rtol=1e-15)
        assert np.allclose(Bm[t, 3:, 3:], R[t] @ model.inertia[body] @ R[t].T, rtol=1e-13, atol=1e-15)
        assert np.allclose(Bm[t] @ Bw[t], np.eye(6), atol=1e-12)


def test_rows_transpose_times_and_tangential_speeds_equal_scipy():
    """H' z without a transposed copy, and |(S v, T v)| over the shared pattern, against scipy."""
    import scipy.sparse as sp
    from contactlab.mechanics.kernels import tangential_speeds
    from contactlab.mechanics.system import rows_transpose_times
    rng = np.random.default_rng(2)
    H = sp.random(40, 30, density=0.2, format="csr", random_state=3)
    z = rng.normal(size=40)
    z[::3] = 0.0
    assert np.allclose(rows_transpose_times(H, z), H.T @ z, rtol=1e-14, atol=1e-14)
    assert np.allclose(rows_transpose_times(H.tocsc(), z), H.T @ z, rtol=1e-14, atol=1e-14)
    T = H.copy()
    T.data = rng.normal(size=T.nnz)
    v = rng.normal(size=30)
    assert np.allclose(tangential_speeds(H.indptr, H.indices, H.data, T.data, v), np.hypot(H @ v, T @ v), rtol=1e-14)


def test_rows_times_equals_scipy():
    import scipy.sparse as sp
    from contactlab.mechanics.system import rows_times
    rng = np.random.default_rng(4)
    H = sp.random(25, 31, density=0.3, format="csr", random_state=5)
    x = rng.normal(size=31)
    assert np.allclose(rows_times(H, x), H @ x, rtol=1e-14, atol=1e-14)
    assert np.allclose(rows_times(H.toarray(), x), H @ x, rtol=1e-14, atol=1e-14)


def test_pyramid_rows_are_the_rotated_tangents():
    """D's row i d + k equals cos(2 pi k / d) S_i + sin(2 pi k / d) T_i, row by row."""
    import scipy.sparse as sp
    from contactlab.mechanics.system import pyramid_rows
    rng = np.random.default_rng(9)
    S = sp.random(6, 24, density=0.3, format="csr", random_state=2)
    T = sp.csr_matrix((rng.normal(size=S.nnz), S.indices, S.indptr), shape=S.shape)
    for d in (3, 4, 8):
        D = pyramid_rows(S, T, d).toarray()
        for i in range(6):
            for k in range(d):
                a = 2 * np.pi * k / d
                assert np.allclose(D[i * d + k], np.cos(a) * S[i].toarray() + np.sin(a) * T[i].toarray(), atol=1e-15)


def test_build_system_compiled_terms_equal_their_references():
    """build_system's two compiled calls (mechanics/kernels.py body_terms, contact_terms) give what the
    separate routines give: mass blocks, velocity vector, forces (gravity, gyroscopic, joint torques),
    N, S, T (S and T sharing one pattern object, the layout contact_modes reads) and the stacked
    [N; S; T]; the normal bias against its formula at a gap, within the slop and beyond it."""
    import scipy.sparse as sp
    from contactlab.collision import CollisionWorld
    from contactlab.mechanics.system import (build_system, contact_frame_rows, generalized_forces, mass_blocks,
                                             normal_bias)
    scene = make_scene("pile", count=6)
    scene.settings.gyroscopic = True
    model, data = build_model(scene)
    rng = np.random.default_rng(5)
    data.angular_velocity[:] = rng.normal(size=(model.nb, 3))
    data.linear_velocity[:] = rng.normal(size=(model.nb, 3))
    contacts = CollisionWorld(model).detect(data, margin=0.05)
    assert contacts.count > 0
    sys = build_system(model, data, contacts, 0.01)
    Bm, Bw = mass_blocks(model, data)
    assert np.array_equal(sys.W_blocks, Bw) and np.array_equal(sys.M.toarray(), sp.block_diag(list(Bm)).toarray())
    assert np.array_equal(sys.v, data.velocity_vector(model))
    assert np.array_equal(sys.f, generalized_forces(model, data))
    from contactlab.mechanics.system import rows_times
    assert np.array_equal(sys.v_free(), sys.v + sys.h * rows_times(sys.Minv, sys.f))     # kept at build time
    for got, ref in zip((sys.N, sys.S, sys.T), contact_frame_rows(model, data, contacts)):
        assert (abs(got - ref)).max() == 0.0
    assert sys.S.indices is sys.T.indices and sys.S.indptr is sys.T.indptr
    assert (abs(sys.NST - sp.vstack([sys.N, sys.S, sys.T], format="csr"))).max() == 0.0
    h, zeta, slop = 0.01, 0.2, 1e-3
    phi = np.array([0.02, 0.0, -0.0, -1e-9, -1e-7, -1e-6, -5e-4, -1e-3, -3e-3])
    ref = np.where(phi > 0, phi / h, 0.0)
    ref[phi < -slop] = zeta * (phi[phi < -slop] + slop) / h
    assert np.array_equal(normal_bias(phi, h, zeta, slop), ref)


def test_box_friction_q_compiled_equals_its_formula():
    """box friction's q = H v_free - [j_rhs; a_target; -l_bias; -n_bias; 0] in one compiled pass
    (models/box_friction.py _q_kernel) equals the concatenated formula, on a scene with joint,
    motor and contact rows."""
    from contactlab.models import box_friction as BF
    from contactlab.mechanics.system import rows_times
    sim = Simulator(make_scene("box-gripper"), "box-friction", "pgs")
    for _ in range(30):
        sim.step()
    sys = sim.last_system
    assert sys.nj and sys.nm and sys.nc
    sys.l_bias = np.linspace(0.1, 0.2, sys.nl) if sys.nl else sys.l_bias
    H = BF._rows(sys)
    rhs = np.concatenate([sys.j_rhs, sys.a_target, -sys.l_bias, -sys.n_bias, np.zeros(2 * sys.nc)])
    assert np.array_equal(BF._q(sys, H, BF.Options()), rows_times(H, sys.v_free()) - rhs)     # no centre by default


@pytest.mark.parametrize("fixed", [False, True], ids=["certified", "matrix-free"])
def test_box_friction_recover_compiled_equals_its_formula(fixed):
    """box friction's recover in one compiled call (models/box_friction.py _recover_parts, or
    _contact_parts with a matrix-free solver's M^-1 H' z) equals v_free + M^-1 H' z, the tangent
    columns of z and contact_modes, on sliding and resting pile steps."""
    from contactlab.models import box_friction as BF
    from contactlab.models.common import contact_modes
    scene = make_scene("pile", count=6)
    sim = Simulator(scene, "box-friction", "pgs", iterations=50) if fixed else \
        Simulator(scene, "box-friction", "box-qp", model_options={"coupling": "previous"})
    seen = set()
    for k in range(40):
        if k == 20:
            sim.set_velocity(sim.model.names[-1], linear=(0.5, 0.0, 0.0))    # something slides
        sim.step()
        if k < 18:
            continue
        sys, prob, sol = sim.last_system, sim.last_problem, sim.last_solution
        assert ("velocity_change" in sol.info) == fixed
        r = BF.recover(sys, prob, sol, sim.model_options)
        z = np.asarray(sol.z)
        nc, o_n = sys.nc, BF._layout(sys)[2]
        v_ref = sys.v_free() + sys.Minv @ (BF._rows(sys).T @ z)
        assert np.allclose(r.v_next, v_ref, rtol=1e-12, atol=1e-14)      # scipy sums in its own order
        seen.update(np.unique(r.modes).tolist())
        assert np.array_equal(r.tangent, np.column_stack([z[o_n + nc:o_n + 2 * nc], z[o_n + 2 * nc:o_n + 3 * nc]]))
        assert np.array_equal(r.modes, contact_modes(sys, r.v_next, r.normal))
        assert np.array_equal(r.normal, z[o_n:o_n + nc])
    assert len(seen) >= 2      # more than one contact mode among the steps checked


def test_position_targets_equal_their_formula():
    """The position correction's right-hand side in one compiled pass (mechanics/kernels.py
    position_targets) equals phi' = phi + h N v+, c = zeta (phi' + slop) where phi' < -slop (1 +
    SLOP_EXCESS) (deep), c = phi' + SINK_TARGET slop in the sink window -SINK_RESTORE slop <= phi' < 0
    (asked for where phi' < -SINK_TRIGGER slop) and max(phi' + slop, 0) elsewhere, with its flag: a
    contact within that tolerance of the slop is neither corrected nor pushed in, and a contact
    sunk by less than the trigger asks for no correction."""
    from contactlab.kernels import tolerances
    from contactlab.mechanics.kernels import position_targets, position_targets_window
    # the compiled kernel at the committed constants (the window on), and without the window (fixed budget)
    assert tolerances.SINK_RESTORE > 0.0
    _position_targets_against_formula(position_targets, tolerances.SINK_RESTORE, tolerances.SINK_TARGET,
                                      tolerances.SINK_TRIGGER)
    _position_targets_against_formula(lambda *a: position_targets_window(*a, 0.0), 0.0, tolerances.SINK_TARGET,
                                      tolerances.SINK_TRIGGER)


def _position_targets_against_formula(position_targets, SINK_RESTORE, SINK_TARGET, SINK_TRIGGER):
    import scipy.sparse as sp
    from contactlab.kernels.tolerances import SLOP_EXCESS
    on = SINK_RESTORE > 0
    assert not on or 0.0 < SINK_TARGET < SINK_TRIGGER < SINK_RESTORE < 1.0
    rng = np.random.default_rng(2)
    N = sp.random(30, 60, density=0.2, random_state=3, format="csr")
    v = rng.normal(size=60)
    h, slop, zeta = 0.01, 1e-3, 0.2
    Nv = N @ v
    for shift, sink, expect in ((-0.002, None, True), (0.2, None, False), (0.2, 0.5, False), (0.2, 1.5, on)):
        phi = rng.uniform(-0.004, 0.004, 30) + shift
        phi[:3] += -slop * (1 + 0.5 * SLOP_EXCESS) - (phi[:3] + h * Nv[:3])   # within the tolerance
        if sink is not None:    # contacts sunk by 0.5 or 1.5 times the trigger depth (and one at the window's edge)
            phi[3:8] = -sink * SINK_TRIGGER * slop - h * Nv[3:8]
            phi[8] = -(SINK_RESTORE if sink > 1 else sink * SINK_TRIGGER) * slop * (1 - 1e-6) - h * Nv[8]
            phi[9] = -SINK_RESTORE * slop * (1 + 1e-6) - h * Nv[9]     # just outside: left alone
        p = phi + h * Nv
        deep = p < -slop * (1 + SLOP_EXCESS)
        window = (p < 0) & (p >= -SINK_RESTORE * slop) & ~deep
        ref = np.where(deep, zeta * (p + slop), np.where(window, p + SINK_TARGET * slop, np.maximum(p + slop, 0.0)))
        c, flag = position_targets(Nv, phi, h, slop, zeta)
        assert np.allclose(c, ref, rtol=0, atol=1e-15)
        assert flag == bool(np.any(deep) or np.any(window & (p < -SINK_TRIGGER * slop))) == expect
        assert np.all(c[:3] == 0.0) and np.all(p[:3] < -slop)
        if sink is not None and on:
            assert np.all(window[3:9]) and not window[9] and c[9] > 0
            assert np.all(c[3:9] < 0)       # each is pushed back to SINK_TARGET slop


def _pile_system(count=12, steps=12):
    sim = Simulator(make_scene("pile", count=count, seed=1), "box-friction", "pgs", iterations=30)
    for _ in range(steps):
        sim.step()
    c = sim.world.detect(sim.data, reach=sim._reach())
    return sim, build_system(sim.model, sim.data, c, sim.h)


def test_block_delassus_equals_the_sparse_product():
    sim, sys = _pile_system()
    assert sys.nc > 20
    H = sp.vstack([sys.N, sys.S, sys.T], format="csr")
    ref = (H @ sys.Minv @ H.T).toarray() + 1e-8 * np.eye(H.shape[0])
    D = delassus(sys, H, 1e-8, dense=True)
    assert np.abs(D - ref).max() <= 1e-12 * np.abs(ref).max()
    assert np.array_equal(D, D.T)                                   # exactly symmetric
    Ds = delassus(sys, H, 1e-8, dense=False)
    assert sp.issparse(Ds) and np.abs(Ds.toarray() - ref).max() <= 1e-12 * np.abs(ref).max()
    assert Ds.has_canonical_format and np.array_equal(Ds.toarray(), Ds.toarray().T)


def test_contact_pair_delassus_equals_the_row_by_row_one():
    """The system's own [N; S; T] go by 3 x 3 blocks of contact pairs (delassus_frames_csr): the
    same matrix as the row-by-row merge and scipy's product (contacts on the ground and between two
    boxes, pairs sharing one body and both), exactly symmetric, canonical, int32 indices."""
    sim, sys = _pile_system(count=20, steps=40)
    H = sys.NST
    two = np.diff(sys.N.indptr) == 12
    assert sys.nc > 30 and two.any() and (~two).any()
    ref = (H @ sys.Minv @ H.T).toarray() + 1e-8 * np.eye(H.shape[0])
    Df = delassus(sys, H, 1e-8, dense=False)                        # H is sys.NST: by contact pairs
    Dr = delassus(sys, sp.csr_matrix(H.toarray()), 1e-8, dense=False)   # another H: row by row
    assert Df.has_canonical_format and Df.indices.dtype == np.int32 and Df.indptr.dtype == np.int32
    A = Df.toarray()
    assert np.array_equal(A, A.T)
    assert np.abs(A - ref).max() <= 1e-12 * np.abs(ref).max()
    assert np.abs(A - Dr.toarray()).max() <= 1e-14 * np.abs(ref).max()
    assert np.array_equal(Df.indptr, Dr.indptr) and np.array_equal(Df.indices, Dr.indices)


def test_contact_pair_delassus_reuses_the_pattern_of_the_same_rows_only(monkeypatch):
    """A matrix whose rows touch the bodies the last one's did takes the last pattern (none built)
    and its own values, equal to scipy's product on them; each matrix's indices are its own (writing
    to one leaves the next intact); rows on other bodies build the pattern again."""
    import dataclasses

    import contactlab.mechanics.delassus as MD
    sim, sys = _pile_system(count=20, steps=40)
    built = []
    real = MD.frame_pattern
    monkeypatch.setattr(MD, "frame_pattern", lambda *a: built.append(1) or real(*a))
    monkeypatch.setattr(MD, "_last_pattern", None)
    H = sys.NST

    def ref(s):
        return (H @ s.Minv @ H.T).toarray() + 1e-8 * np.eye(H.shape[0])

    D1 = delassus(sys, H, 1e-8, dense=False)
    assert len(built) == 1
    heavier = dataclasses.replace(sys, W_blocks=0.5 * sys.W_blocks, Minv=0.5 * sys.Minv)
    D2 = delassus(heavier, H, 1e-8, dense=False)
    assert len(built) == 1                                      # the same rows: the last pattern
    R2 = ref(heavier)
    assert np.abs(D2.toarray() - R2).max() <= 1e-12 * np.abs(R2).max()
    assert not np.shares_memory(D1.indices, D2.indices) and not np.shares_memory(D1.indptr, D2.indptr)
    D1.indices[:] = 0
    D1.indptr[:] = 0
    D3 = delassus(sys, H, 1e-8, dense=False)
    R1 = ref(sys)
    assert np.abs(D3.toarray() - R1).max() <= 1e-12 * np.abs(R1).max()
    assert len(built) == 1
    other, osys = _pile_system(count=12, steps=12)              # other bodies, other contacts
    assert osys.NST.shape != H.shape
    D4 = delassus(osys, osys.NST, 1e-8, dense=False)
    assert len(built) == 2
    R4 = (osys.NST @ osys.Minv @ osys.NST.T).toarray() + 1e-8 * np.eye(osys.NST.shape[0])
    assert np.abs(D4.toarray() - R4).max() <= 1e-12 * np.abs(R4).max()


def test_contact_pair_delassus_declines_what_it_cannot_build():
    """Not three directions, a row that is not whole 6-blocks, or more entries than the index type
    holds: nothing built (ok False), and delassus() goes row by row (same matrix)."""
    from contactlab.mechanics.kernels import delassus_frames_csr
    sim, sys = _pile_system(count=6, steps=30)
    nc, H = sys.nc, sys.NST
    ip, ix, data = H.indptr[:nc + 1], H.indices[:H.indptr[nc]], H.data.reshape(3, -1)
    diag = np.full(3 * nc, 1e-8)
    assert delassus_frames_csr(ip, ix, data, sys.W_blocks, diag, np.zeros(0, np.int32))[0]
    assert not delassus_frames_csr(ip, ix, data[:2], sys.W_blocks, diag[:2 * nc], np.zeros(0, np.int32))[0]
    assert not delassus_frames_csr(ip, ix + 1, data, sys.W_blocks, diag, np.zeros(0, np.int32))[0]
    assert not delassus_frames_csr(ip, ix, data, sys.W_blocks, diag, np.zeros(0, np.int8))[0]    # > 127 entries


def test_pyramid_rows_are_cos_s_plus_sin_t():
    sim, sys = _pile_system(count=6, steps=10)
    d = 6
    D = pyramid_rows(sys.S, sys.T, d).toarray()
    S, T = sys.S.toarray(), sys.T.toarray()
    for i in range(sys.nc):
        for k in range(d):
            a = 2 * np.pi * k / d
            assert np.allclose(D[i * d + k], np.cos(a) * S[i] + np.sin(a) * T[i], atol=1e-15)


def test_held_blocks_zero_the_kinematic_bodies_and_agree_with_the_compiled_mobility():
    """A position correction moves only bodies that yield: the kinematic pusher's block of M^-1 is
    0, every other block is M^-1's own (the compiled mobility_blocks computes the same at the pose)."""
    from contactlab.mechanics.system import held_blocks, mass_blocks, mobility_blocks
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))])
    pusher = Body("pusher", kind="kinematic", position=(-0.3, 0, 0.1), linear_velocity=(0.5, 0, 0),
                  shapes=[Shape("box", size=(0.2, 0.4, 0.2))])
    box = Body("box", mass=2.0, position=(0.0, 0, 0.1), orientation=tuple(np.array([0.9, 0.1, 0.3, 0.2]) / np.linalg.norm([0.9, 0.1, 0.3, 0.2])),
               shapes=[Shape("box", size=(0.2, 0.3, 0.1))])
    model, data = build_model(Scene("push", [ground, pusher, box]))
    _, W = mass_blocks(model, data)
    held = held_blocks(model, W)
    assert W.shape == (2, 6, 6) and np.all(held[0] == 0.0) and np.array_equal(held[1], W[1])
    assert np.any(W[0] != 0.0)                    # the input is not changed
    np.testing.assert_allclose(mobility_blocks(model, data), held, rtol=1e-14, atol=1e-15)
    # the box's block is diag(I3 / m, R I^-1 R') of its own inertia
    np.testing.assert_allclose(held[1, :3, :3], np.eye(3) / 2.0, rtol=1e-15)
    # without kinematic bodies the blocks come back as they are (no copy)
    model2, data2 = build_model(Scene("alone", [ground, box]))
    W2 = mass_blocks(model2, data2)[1]
    assert held_blocks(model2, W2) is W2
