"""No-slip model (drumwright Sec. VI): zero tangential velocity, Lemma 1, F PSD, eq. 56-57."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import contactlab as cl
from contactlab.errors import ModelError
from contactlab.models.noslip import STICKING, build_noslip, recover_noslip
from contactlab.models.trinkle_pang import build_stewart_trinkle, painleve_rod, recover_pyramid
from tests.problems import trot_systems, with_csc_mass


def _scene(seed, m, n, j):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    M = A @ A.T + m * np.eye(m)
    N, S, T = rng.normal(size=(n, m)), rng.normal(size=(n, m)), rng.normal(size=(n, m))
    J = rng.normal(size=(j, m)) if j else None
    if j >= 2:
        J = np.vstack([J, J[0] - J[1]])  # a redundant joint row
    v, f = rng.normal(size=m), rng.normal(size=m) * 10
    return M, v, f, N, S, T, J


def _check_step(M, v, f, N, S, T, J, dt, method):
    built = build_noslip(M, v, f, dt, N, S, T, J)
    assert built.lcp_variables == N.shape[0]  # one LCP variable per contact
    sol = cl.solve(built.problem, method=method)
    assert sol.success, sol
    res = recover_noslip(built, sol.z)
    vp = res.v_next
    scale = max(1.0, np.abs(vp).max())
    assert np.abs(S @ vp).max() < 1e-9 * scale and np.abs(T @ vp).max() < 1e-9 * scale
    if J is not None:
        assert np.abs(J @ vp).max() < 1e-9 * scale
    vn = N @ vp
    assert vn.min() > -1e-9 * scale and np.all(res.normal >= 0)
    assert np.abs(res.normal * vn).max() < 1e-7 * scale * max(1.0, res.normal.max())
    # momentum balance (eq. 23) with the recovered joint and tangential impulses
    Jt = 0 if J is None else J.T @ res.joint
    r = M @ (vp - v) - dt * f - Jt - N.T @ res.normal - S.T @ res.tangent_s - T.T @ res.tangent_t
    assert np.abs(r).max() < 1e-8 * max(1.0, np.abs(M @ v).max(), res.normal.max())
    assert np.all(res.modes[res.normal > 0] == STICKING)
    return built, sol, res


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(3, 12), n=st.integers(1, 10), j=st.integers(0, 3))
def test_tangential_velocity_vanishes_and_lemma_1(seed, m, n, j):
    M, v, f, N, S, T, J = _scene(seed, m, n, j)
    built, sol, res = _check_step(M, v, f, N, S, T, J, 0.01, "ppm")
    # the same step by Lemke (an independent method) agrees on the velocity (unique: F PSD, v+ is an
    # M-projection), and its basic solution obeys Lemma 1: a nonsingular principal block of the PSD F
    # has at most rank(F) <= m - rank(G) rows (ppm's own answer obeys it by construction: not tested)
    _, sol2, res2 = _check_step(M, v, f, N, S, T, J, 0.01, "lemke")
    np.testing.assert_allclose(res2.v_next, res.v_next, atol=1e-7 * max(1.0, np.abs(res.v_next).max()))
    F = built.problem.to_lcp().M
    rank = np.linalg.matrix_rank(F, tol=1e-9 * max(1.0, np.abs(F).max())) if F.size else 0
    support = int(np.sum(sol2.z > 1e-12 * max(1.0, sol2.z.max(initial=0.0))))
    assert support <= rank <= M.shape[0] - built.index_sets.rank


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(3, 10), n=st.integers(1, 8), j=st.integers(0, 3))
def test_F_is_psd_and_equals_eq_56_57(seed, m, n, j):
    """F = N X^-1 N' and e = N X^-1 (M v + dt f) from the KKT matrix A of eq. 47 on the kept rows."""
    M, v, f, N, S, T, J = _scene(seed, m, n, j)
    dt = 0.02
    built = build_noslip(M, v, f, dt, N, S, T, J)
    lcp = built.problem.to_lcp()
    F, e = lcp.M, lcp.q
    assert np.linalg.eigvalsh(F).min() > -1e-9 * max(1.0, np.abs(F).max())
    G = built.index_sets.G
    k = G.shape[0]
    A = np.block([[M, -G.T], [G, np.zeros((k, k))]])
    C = np.vstack([-N.T, np.zeros((k, N.shape[0]))])
    g = np.concatenate([-(M @ v + dt * f), np.zeros(k)])
    D = -C.T
    Ainv = np.linalg.inv(A)
    np.testing.assert_allclose(F, -D @ Ainv @ C, atol=1e-8 * max(1.0, np.abs(F).max()))   # eq. 9
    np.testing.assert_allclose(e, -D @ Ainv @ g, atol=1e-8 * max(1.0, np.abs(e).max()))   # eq. 10


def test_box_on_ground_does_not_slide_under_push():
    """A unit point mass pushed sideways on the ground keeps zero tangential velocity (no slip)."""
    M = np.eye(3)
    v = np.array([0.3, -0.2, 0.0])
    f = np.array([50.0, 0.0, -9.81])
    N, S, T = np.array([[0, 0, 1.0]]), np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]])
    built = build_noslip(M, v, f, 0.01, N, S, T)
    sol = cl.solve(built.problem, method="ppm")
    res = recover_noslip(built, sol.z)
    np.testing.assert_allclose(res.v_next, 0, atol=1e-12)
    np.testing.assert_allclose(res.normal, [0.0981], rtol=1e-12)            # cancels gravity's impulse
    np.testing.assert_allclose([res.tangent_s[0], res.tangent_t[0]], [-0.8, 0.2], rtol=1e-12)


def test_fully_locked_system_and_no_contacts():
    M = np.eye(2)
    S, T = np.array([[1.0, 0]]), np.array([[0, 1.0]])
    built = build_noslip(M, [1.0, 1.0], [0.0, -1.0], 0.1, [[0, 1.0]], S, T)
    res = recover_noslip(built, cl.solve(built.problem).z)
    np.testing.assert_allclose(res.v_next, 0)
    built = build_noslip(M, [1.0, 2.0], [0.0, -1.0], 0.1, np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2)))
    res = recover_noslip(built, cl.solve(built.problem).z)
    np.testing.assert_allclose(res.v_next, [1.0, 1.9])


@pytest.mark.parametrize("mu", [2.0, 3.0])
def test_velocity_level_models_step_through_painleve(mu):
    """The sliding rod that the acceleration model cannot solve is one ordinary step here."""
    M, v, f, N, S, T, mu = painleve_rod(mu=mu)
    built = build_noslip(M, v, f, 0.01, N, S, T)
    res = recover_noslip(built, cl.solve(built.problem, method="ppm").z)
    assert abs(S[0] @ res.v_next) < 1e-12 and N[0] @ res.v_next > -1e-12 and res.normal[0] > 0
    st_ = build_stewart_trinkle(M, v, f, 0.01, N, S, T, mu)
    sol = cl.solve(st_.problem, method="lemke")
    assert sol.success
    r = recover_pyramid(st_, sol)
    assert N[0] @ r.v_next > -1e-9 and r.normal[0] > 0
    assert np.hypot(r.tangent_s[0], r.tangent_t[0]) <= mu * r.normal[0] * (1 + 1e-9)


def test_bad_input():
    with pytest.raises(ModelError, match="same shape"):
        build_noslip(np.eye(2), [0, 0], [0, 0], 0.1, [[1.0, 0]], np.zeros((2, 2)), np.zeros((1, 2)))
    with pytest.raises(ModelError, match="dt"):
        build_noslip(np.eye(2), [0, 0], [0, 0], 0.0, [[1.0, 0]], [[0, 1.0]], [[0, 1.0]])
    with pytest.raises(ModelError, match="v has length"):
        build_noslip(np.eye(2), [0, 0, 0], [0, 0], 0.1, [[1.0, 0]], [[0, 1.0]], [[0, 1.0]])
    M, v, f, N, S, T, J = _scene(3, 6, 2, 2)
    for name in ("J", "S", "T", "N"):     # a non-finite row is named, wherever it sits
        args = {"J": J.copy(), "S": S.copy(), "T": T.copy(), "N": N.copy()}
        args[name][0, 2] = np.inf if name == "S" else np.nan
        with pytest.raises(ModelError, match="NaN or inf"):
            build_noslip(M, v, f, 0.1, args["N"], args["S"], args["T"], args["J"])


# -- scene level: the box gripper (drumwright Sec. VII-A) and Painleve's rod through the simulator ----------

def test_box_gripper_lcp_sizes_and_no_slip_holds():
    """36 contacts: no-slip has 36 LCP variables, Stewart-Trinkle 2 + d = 6 per contact (216) plus its
    motor rows; after no-slip steps every contact's tangential velocity is zero and the boxes are held."""
    from contactlab.models import get_model
    from contactlab.scenarios.box_gripper import make_simulator
    sim = make_simulator("no-slip", "ppm")
    held = [sim.model.index("box0"), sim.model.index("box1")]
    z0 = sim.data.position[held, 2].copy()
    for _ in range(5):
        rec = sim.step()
        assert rec.success and rec.contacts == 36 and rec.lcp_size == 36
        v = sim.data.velocity_vector(sim.model)
        sys_ = sim.last_system
        assert np.abs(sys_.S @ v).max() < 1e-9 and np.abs(sys_.T @ v).max() < 1e-9
        assert np.sum(sim.last_solution.z > 0) <= sim.model.ndof     # Lemma 1
    assert np.max(z0 - sim.data.position[held, 2]) < 1e-9
    st = get_model("stewart-trinkle").build(sim.last_system)
    contact_rows = st.row_groups["lambda"].stop - st.row_groups["normal"].start
    assert contact_rows == 36 * (2 + 4) == 216
    assert st.n == 216 + 2 * sim.last_system.nm


def test_box_gripper_reduced_basis_alone_never_applies_a_false_answer():
    """The reduced-basis Lemke alone on these degenerate mu = 100 pyramid LCPs (fallbacks off): every
    step the simulator applies satisfies the velocity-level contact rows N v+ + bias >= 0 (up to the
    uncertified-answer limit 1e-3 of the step's velocity scale) and keeps the boxes within 1 mm; a step
    that cannot be applied stops the run with an error naming a failure status, never SOLVED."""
    from contactlab.errors import SimulationError
    from contactlab.scenarios.box_gripper import make_simulator
    sim = make_simulator("stewart-trinkle", "lemke", solver_options={"basis": "reduced"})
    held = [i for i, n in enumerate(sim.model.names) if n.startswith("box")]
    z0 = sim.data.position[held, 2].copy()
    for _ in range(20):
        try:
            sim.step()
        except SimulationError as exc:
            assert "no usable answer" in str(exc) and "status SOLVED" not in str(exc)
            break
        sys_, v = sim.last_system, sim.data.velocity_vector(sim.model)
        scale = max(float(np.abs(sys_.N @ v).max()), float(np.abs(sys_.n_bias).max()), sys_.h * 9.81)
        assert (sys_.N @ v + sys_.n_bias).min() > -1e-3 * scale
        assert np.abs(z0 - sim.data.position[held, 2]).max() < 1e-3


@pytest.mark.parametrize("basis", ["tableau", "auto"])
def test_box_gripper_held_by_stewart_trinkle_with_lemke(basis):
    """The paper's boxes fell under Stewart-Trinkle through Lemke's numerical trouble; a certified
    Lemke keeps them: every step solved, no vertical drift."""
    from contactlab.scenarios.box_gripper import run_box_gripper
    r = run_box_gripper("stewart-trinkle", "lemke", steps=5, solver_options={"basis": basis})
    assert r.statuses.get("SOLVED", 0) == 5
    assert r.held and r.drift_m < 1e-6 and r.lcp_variables_mean == 220


def _rod_scene(mu=3.0, theta=np.pi / 4, length=1.0, speed=1.0):
    from contactlab.mechanics.rotation import quat_from_axis_angle
    from contactlab.mechanics.scene import Body, Scene, Settings, Shape
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    w = 0.02
    R = np.array([[np.cos(theta), 0, np.sin(theta)], [0, 1, 0], [-np.sin(theta), 0, np.cos(theta)]])
    centre = -R @ np.array([length / 2, 0, -w / 2])          # the leading (+x) lower edge on the ground
    rod = Body("rod", mass=1.0, position=tuple(centre), orientation=tuple(quat_from_axis_angle([0, 1, 0], theta)),
               linear_velocity=(speed, 0, 0), shapes=[Shape("box", size=(length, w, w))])
    return Scene(name="rod", bodies=[ground, rod], mu=mu, settings=Settings(dt=0.01))


def test_sliding_rod_in_the_simulator():
    """Painleve: the acceleration-level model's step fails with the solver's status; the
    velocity-level models step through it with an impulse."""
    from contactlab.sim.simulator import Simulator
    from contactlab.errors import SimulationError
    with pytest.raises(SimulationError, match="no usable answer") as info:   # never applied
        Simulator(_rod_scene(), model="trinkle-pang").step()
    assert "SOLVED" not in str(info.value)   # the message carries the solver's own failure status
    traj = Simulator(_rod_scene(), model="trinkle-pang").run(0.03)
    assert traj.error and not traj.records
    for model in ("no-slip", "stewart-trinkle"):
        sim = Simulator(_rod_scene(), model=model)
        recs = [sim.step() for _ in range(3)]
        assert all(r.success for r in recs)
        sys_ = sim.last_system
        v = sim.data.velocity_vector(sim.model)
        assert (sys_.N @ v + sys_.n_bias).min() > -1e-6     # N v+ + bias >= 0 (up to cfm * impulse)


@pytest.mark.parametrize("max_force", [0.05, 100.0])
def test_force_limited_motor_matches_stewart_trinkle(max_force):
    """A force-limited velocity motor (target 1 rad/s) swinging a two-link arm under gravity, no
    contacts: no-slip resolves its motor box exactly (active set over the motors), so every step
    equals stewart-trinkle's, whose motor is the complementarity pair (u, s) solved by Lemke. With
    0.05 N m the motor stays saturated, braking, and gravity swings the arm past the target rate;
    with 100 N m it holds the target rate."""
    from contactlab.mechanics.scene import Body, Joint, Motor, Scene, Settings, Shape
    from contactlab.sim import Simulator
    box = Shape("box", size=(0.1, 0.02, 0.02))
    bodies = [Body("a", mass=1.0, position=(0.05, 0, 0), shapes=[box]),
              Body("b", mass=0.5, position=(0.15, 0, 0), shapes=[box])]
    joints = [Joint("j1", "revolute", "world", "a", (0, 0, 0), (0, 1, 0), motor=Motor(1.0, max_force)),
              Joint("j2", "revolute", "a", "b", (0.1, 0, 0), (0, 1, 0), follows="j1", ratio=0.5)]
    scene = Scene("arm", bodies, joints, settings=Settings(dt=0.01))
    sims = [Simulator(scene, model) for model in ("no-slip", "stewart-trinkle")]
    for _ in range(30):
        recs = [s.step() for s in sims]
        assert all(r.success for r in recs)
        res = sims[0].data.result
        assert res.info["motor_consistent"]
        np.testing.assert_allclose(res.motor, sims[1].data.result.motor, rtol=1e-6, atol=1e-10)
        np.testing.assert_allclose(sims[0].data.velocity_vector(sims[0].model),
                                   sims[1].data.velocity_vector(sims[1].model), rtol=0, atol=1e-7)
    sys_ = sims[0].last_system
    rate = float((sys_.A @ sims[0].data.velocity_vector(sims[0].model))[0])
    a_max = float(sys_.a_max[0])
    if max_force < 1.0:
        assert res.motor[0] == pytest.approx(-a_max) and rate > 1.5    # saturated, braking: gravity wins
    else:
        assert rate == pytest.approx(1.0, abs=1e-9) and np.abs(res.motor[0]) < a_max


def test_model_build_equals_build_noslip_on_a_quadruped_step():
    """models/noslip.build (rows scattered once, M factored once, the compiled chain) poses the same
    factored LCP as build_noslip on the densified system, and both recover the same step, which
    satisfies the dense KKT conditions of eq. 23-25 and 45-46."""
    from contactlab.models import noslip
    from contactlab.models.built import touching
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("quadruped"), "no-slip", "ppm")
    for _ in range(5):
        sim.step()
    sys_ = sim.last_system
    assert sys_.nc >= 1 and sys_.nj > 0
    d = lambda X: X.toarray()
    keep = touching(sys_)[:, None]
    U = np.vstack([d(sys_.L).reshape(-1, sys_.ndof), d(sys_.N)])
    bias = np.concatenate([sys_.l_bias, sys_.n_bias])
    ref = build_noslip(d(sys_.M), sys_.v, sys_.f, sys_.h, U, d(sys_.S) * keep, d(sys_.T) * keep, d(sys_.J),
                       J_rhs=sys_.j_rhs, normal_bias=bias, cfm=sys_.cfm)
    built = noslip.build(sys_)
    a, b = built.problem.to_lcp(), ref.problem.to_lcp()
    np.testing.assert_allclose(a.M, b.M, atol=1e-12 * max(1.0, np.abs(b.M).max()))
    np.testing.assert_allclose(a.q, b.q, atol=1e-12 * max(1.0, np.abs(b.q).max()))
    sol = cl.solve(built.problem, method="ppm")
    assert sol.success
    res, res_ref = noslip.recover(sys_, built, sol), recover_noslip(ref, sol.z)
    np.testing.assert_allclose(res.v_next, res_ref.v_next, atol=1e-12)
    np.testing.assert_allclose(res.joint, res_ref.joint, atol=1e-9 * max(1.0, np.abs(res_ref.joint).max()))
    M, J = d(sys_.M), d(sys_.J)
    vp = res.v_next
    r = (M @ (vp - sys_.v) - sys_.h * sys_.f - J.T @ res.joint - U.T @ np.concatenate([res.limit, res.normal])
         - d(sys_.S).T @ res.tangent[:, 0] - d(sys_.T).T @ res.tangent[:, 1])
    assert np.abs(r).max() < 1e-9 * max(1.0, np.abs(M @ sys_.v).max())
    np.testing.assert_allclose(J @ vp, sys_.j_rhs, atol=1e-10)
    on = touching(sys_)
    assert np.abs(d(sys_.S)[on] @ vp).max() < 1e-10 and np.abs(d(sys_.T)[on] @ vp).max() < 1e-10


def test_fused_build_equals_general_path_bit_for_bit():
    """drumwright Sec. VI, eq. 56-57: the one-call build of a ConstraintSystem without motors
    (kernels/noslip.py ``noslip_system_chain``) runs the general path's kernels in the same order, so
    its kept rows, null-space basis, factored LCP and recovered step are the same floats."""
    from contactlab.models import noslip
    for sys_ in trot_systems("no-slip"):
        a, b = noslip.build(sys_), noslip.build(with_csc_mass(sys_))
        sa, sb = a.state.step, b.state.step
        for x, y in ((sa.index_sets.order, sb.index_sets.order), (np.tril(sa.index_sets.L), np.tril(sb.index_sets.L)), (sa.Z, sb.Z),
                     (a.problem.N, b.problem.N), (a.problem.M, b.problem.M), (a.problem.q, b.problem.q),
                     (sa.reduced.x_p, sb.reduced.x_p), (sa.M, sb.M), (sa.momentum, sb.momentum)):
            assert np.array_equal(x, y)
        sol = cl.solve(a.problem, method="ppm")
        ra, rb = noslip.recover(sys_, a, sol), noslip.recover(sys_, b, sol)
        for x, y in ((ra.v_next, rb.v_next), (ra.joint, rb.joint), (ra.tangent, rb.tangent), (ra.normal, rb.normal)):
            assert np.array_equal(x, y)
        # the model's recover (one compiled call without motors) and recover_noslip (Reduced.recover)
        rc = recover_noslip(sa, sol.z)
        assert np.array_equal(ra.v_next, rc.v_next) and np.array_equal(ra.joint, rc.joint)
        assert np.array_equal(ra.tangent, rc.tangent) and np.array_equal(ra.normal, rc.normal)


def _orthonormal_reference(M, v, f, dt, N, S, T, J, J_rhs=None, bias=None):
    """The reduction with the orthonormal null-space basis (tests/reference/find_indices.py ``reduce_step``,
    kernels/noslip.py ``noslip_chain``: Z' Z = I, Z' M Z formed and factored), the no-slip model's
    path before the M-metric basis."""
    from contactlab.models.find_indices import MassFactor, _candidates
    from tests.reference.find_indices import reduce_step
    m = M.shape[0]
    J = np.zeros((0, m)) if J is None else np.ascontiguousarray(J, dtype=np.float64)
    ST, _ = _candidates(None, S, T, m)
    rhs = np.zeros(J.shape[0]) if J_rhs is None else np.asarray(J_rhs, dtype=np.float64)
    b = np.zeros(N.shape[0]) if bias is None else np.asarray(bias, dtype=np.float64)
    return reduce_step(MassFactor(M), J, np.ascontiguousarray(ST), rhs, 1e-9, np.ascontiguousarray(v, dtype=np.float64),
                       np.ascontiguousarray(f, dtype=np.float64), dt, np.ascontiguousarray(N, dtype=np.float64), b)


def _agree(built, ref, M, G_rhs=None):
    """Same kept rows, same F and q (eq. 56-57) and the same step for the same z, to round-off; the
    M-metric basis spans null(G) with Z' M Z = I."""
    assert np.array_equal(built.index_sets.order, ref.sets.order)
    a, b = built.problem.to_lcp(), ref.problem.to_lcp()
    sc = max(1.0, np.abs(b.M).max())
    np.testing.assert_allclose(a.M, b.M, rtol=0, atol=1e-11 * sc)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-11 * max(1.0, np.abs(b.q).max()))
    Z, G = built.Z, built.index_sets.G
    assert Z.shape == ref.Z.shape
    assert np.abs(G @ Z).max(initial=0.0) < 1e-11 * max(1.0, np.abs(G).max(initial=0.0))
    if Z.shape[1] and np.any(Z):
        np.testing.assert_allclose(Z.T @ M @ Z, np.eye(Z.shape[1]), rtol=0, atol=1e-11)
    z = np.abs(np.random.default_rng(0).normal(size=built.problem.n))
    x1, lam1 = built.reduced.recover(z, built.n_joint, built.n_tangent)[:2]
    x2, lam2 = ref.recover(z, built.n_joint, built.n_tangent)[:2]
    np.testing.assert_allclose(x1, x2, rtol=0, atol=1e-10 * max(1.0, np.abs(x2).max()))
    np.testing.assert_allclose(lam1, lam2, rtol=0, atol=1e-9 * max(1.0, np.abs(lam2).max(initial=0.0)))
    np.testing.assert_allclose(built.reduced.x(z), x2, rtol=0, atol=1e-10 * max(1.0, np.abs(x2).max()))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(3, 14), n=st.integers(1, 8), j=st.integers(0, 6))
def test_metric_basis_agrees_with_orthonormal_basis_on_random_systems(seed, m, n, j):
    """drumwright eq. 56-57 in the M metric (Z = L_M^-T Q[:, free], Z' M Z = I; kernels/noslip.py
    ``noslip_metric_chain``) against the orthonormal basis (``noslip_chain``): same rows kept by
    FIND-INDICES (Alg. 2), same F, e, v+ and multipliers to round-off; with redundant joint rows,
    nonzero joint right-hand sides and normal biases."""
    M, v, f, N, S, T, J = _scene(seed, m, n, j)
    rng = np.random.default_rng(seed + 1)
    jr = None if J is None else rng.normal(size=J.shape[0])
    if J is not None:
        jr[-1] = jr[0] - jr[1] if J.shape[0] >= 3 else jr[-1]   # the redundant row stays consistent
    bias = rng.normal(size=n) * 0.1
    built = build_noslip(M, v, f, 0.01, N, S, T, J, J_rhs=jr, normal_bias=bias)
    ref = _orthonormal_reference(M, v, f, 0.01, N, S, T, J, jr, bias)
    _agree(built, ref, M)


def test_metric_basis_agrees_with_orthonormal_basis_on_the_trot():
    """The same comparison on the quadruped's constraint systems (60 joint rows, 2-4 feet)."""
    from contactlab.models import noslip
    from contactlab.models.built import touching
    for sys_ in trot_systems("no-slip"):
        d = lambda X: X.toarray()
        keep = touching(sys_)[:, None]
        U = np.vstack([d(sys_.L).reshape(-1, sys_.ndof), d(sys_.N)])
        bias = np.concatenate([sys_.l_bias, sys_.n_bias])
        M = d(sys_.M)
        built = noslip.build(sys_).state.step
        ref = _orthonormal_reference(M, sys_.v, sys_.f, sys_.h, U, d(sys_.S) * keep, d(sys_.T) * keep, d(sys_.J),
                                     sys_.j_rhs, bias)
        _agree(built, ref, M)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(4, 12), n=st.integers(2, 6), j=st.integers(2, 5))
def test_householder_find_indices_equals_brute_force_with_dependent_tangent_rows(seed, m, n, j):
    """drumwright Alg. 2 as the no-slip chain runs it (kernels/noslip.py ``householder_select``: one
    Householder QR in the M^-1 metric) keeps the rows of the brute-force rank test
    (tests/reference/find_indices.py ``find_indices_bruteforce``) with repeated contacts, a tangent row in the
    span of the joint rows and a redundant joint row."""
    from tests.reference.find_indices import find_indices_bruteforce
    M, v, f, N, S, T, J = _scene(seed, m, n, j)
    S[1] = S[0]                       # a repeated contact tangent
    T[-1] = J[0] - 2.0 * J[1]         # a tangent row in the span of the joint rows
    built = build_noslip(M, v, f, 0.01, N, S, T, J)
    ref = find_indices_bruteforce(M, J, S, T)
    sets = built.index_sets
    for got, want in zip((sets.J_rows, sets.S_rows, sets.T_rows), ref):
        assert np.array_equal(got, want)
    G = sets.G
    np.testing.assert_allclose(sets.L @ sets.L.T, G @ np.linalg.solve(M, G.T), rtol=0,
                               atol=1e-10 * max(1.0, np.abs(G @ np.linalg.solve(M, G.T)).max()))


def test_fused_build_names_a_non_finite_input():
    """The one-call build reports what the general path reports: a non-finite velocity is named, an
    indefinite M is called so."""
    import copy
    from contactlab.models import noslip
    sys_ = trot_systems("no-slip", steps=4)[0]
    bad = copy.copy(sys_)
    bad.v = sys_.v.copy()
    bad.v[3] = np.nan
    with pytest.raises(ModelError, match="v contains NaN"):
        noslip.build(bad)
    with pytest.raises(ModelError, match="v contains NaN"):
        noslip.build(with_csc_mass(bad))
    neg = copy.copy(sys_)
    neg.M = -sys_.M
    for s in (neg, with_csc_mass(neg)):
        with pytest.raises(ModelError, match="not positive definite"):
            noslip.build(s)


def test_barrett_grasp_step_metric_chain_keeps_independent_rows_only():
    """The recorded rubber Barrett grasp step (tests/data/noslip_barrett_step48.npz, 52 joint rows and
    16 tangent rows on 60 coordinates, an exactly dependent row with smallest singular value 5e-17)
    through the no-slip model's chain (kernels/noslip.py ``noslip_metric_chain``: FIND-INDICES as a
    Householder QR, whose test needs no second projection): the kept rows are those of the
    bordered-Cholesky chain, independent, as many as the rank of all candidates, and every row left
    out is a combination of them; Z spans their null space with Z' M Z = I."""
    from pathlib import Path
    from contactlab.kernels import noslip as K
    d = np.load(Path(__file__).parents[1] / "data" / "noslip_barrett_step48.npz")
    args = [d[k] for k in ("M", "Lm", "starts")] + [int(d["nb"])] + [d[k] for k in ("J", "ST", "rhs_j")] + \
        [float(d["tol"]), d["v"], d["f"], float(d["h"]), d["U"], d["bias"]]
    out = K.noslip_metric_chain(*args)
    status, kept = out[:2]
    assert status == 0
    assert np.array_equal(kept, K.noslip_chain(*args)[1])
    G = np.vstack([d["J"], d["ST"]])
    Gk = G[kept]
    s = np.linalg.svd(Gk, compute_uv=False)
    assert s[-1] > 1e-9 * s[0]
    assert kept.size == np.linalg.matrix_rank(G)
    for c in sorted(set(range(G.shape[0])) - set(kept.tolist())):
        x = np.linalg.lstsq(Gk.T, G[c], rcond=None)[0]
        assert np.abs(Gk.T @ x - G[c]).max() <= 1e-9 * np.abs(G[c]).max(), c
    Z = K.metric_basis(d["Lm"], d["starts"], int(d["nb"]), out[11], out[12], kept.size)
    M = d["M"]
    assert np.abs(Gk @ Z).max(initial=0.0) <= 1e-10 * np.abs(Gk).max()
    np.testing.assert_allclose(Z.T @ M @ Z, np.eye(Z.shape[1]), rtol=0, atol=1e-10)


def _block_spd(rng, sizes, couple=0):
    """A random SPD matrix with diagonal blocks of the given sizes (some entries inside a block exactly
    zero) and ``couple`` symmetric pairs of entries between blocks."""
    m = int(sum(sizes))
    M = np.zeros((m, m))
    s0 = 0
    for b in sizes:
        A = rng.normal(size=(b, b)) * (rng.random((b, b)) < 0.7)
        M[s0:s0 + b, s0:s0 + b] = A @ A.T + b * np.eye(b)
        s0 += b
    for _ in range(couple):
        i, j = rng.integers(0, m, size=2)
        if i != j:
            M[i, j] = M[j, i] = 0.1 * rng.normal()
    return M + m * np.eye(m) * (couple > 0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), couple=st.integers(0, 4))
def test_mass_blocks_from_stored_entries_equal_mass_factor(seed, couple):
    """kernels/noslip.py ``_mass_factor_stored`` (the no-slip and viscous system chains: M's diagonal
    blocks found from its CSR pattern) gives mass_factor's blocks and factor bit for bit, on
    block-diagonal and coupled SPD matrices, with explicitly stored zeros and unsorted, duplicated
    column indices in the pattern."""
    import scipy.sparse as sp
    from contactlab.kernels import noslip as K
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, size=rng.integers(1, 9))
    M = _block_spd(rng, sizes, couple)
    m = M.shape[0]
    C = sp.csr_matrix(M)
    extra = rng.integers(0, m, size=(4, 2))            # stored zeros (and duplicates) in the pattern
    rows = np.concatenate([np.repeat(np.arange(m), np.diff(C.indptr)), extra[:, 0]])
    cols = np.concatenate([C.indices, extra[:, 1]])
    perm = rng.permutation(rows.size)
    rows, cols = rows[perm], cols[perm]
    order = np.argsort(rows, kind="stable")
    Mi = cols[order].astype(np.int32)
    Mp = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=m))]).astype(np.int32)
    L1, s1 = np.empty((m, m)), np.empty(m + 1, dtype=np.int64)
    L2, s2 = np.empty((m, m)), np.empty(m + 1, dtype=np.int64)
    nb = K.mass_factor(M, L1, s1)
    assert nb == K._mass_factor_stored(M, Mp, Mi, np.empty(0, dtype=np.int64), 0, L2, s2)
    assert nb >= (1 if couple else sizes.size)         # a block-diagonal M splits at least at its blocks
    assert np.array_equal(s1[:nb + 1], s2[:nb + 1]) and np.array_equal(L1, L2)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), nc=st.integers(0, 4), nj=st.integers(0, 6))
def test_candidate_rows_from_csr_equal_the_dense_chain_bit_for_bit(seed, nc, nj):
    """drumwright Alg. 2, eq. 56-57 on CSR candidate rows (kernels/noslip.py ``candidate_rows_csr`` and
    ``metric_chain_rows``, the system chain's path: L_M^-1 g from each row's stored entries, no dense J,
    S or T) equals ``noslip_metric_chain`` on the dense rows [J; S_0; T_0; ...] (the non-touching
    contacts' rows zero) bit for bit, with unsorted and duplicated column indices, stored zeros and
    rows repeated or dependent."""
    import scipy.sparse as sp
    from contactlab.kernels import noslip as K
    rng = np.random.default_rng(seed)
    M = _block_spd(rng, rng.integers(1, 4, size=rng.integers(2, 8)))
    m = M.shape[0]

    def rand_csr(r):
        X = rng.normal(size=(r, m)) * (rng.random((r, m)) < 0.3)
        if r > 1:
            X[-1] = X[0]                                    # a repeated (dependent) row
        rows, cols, vals = [], [], []
        for i in range(r):
            c = np.flatnonzero(X[i])
            part = rng.random(c.size)                       # each entry split into two stored parts
            for cc, pp in zip(c, part):
                rows += [i, i]
                cols += [cc, cc]
                vals += [X[i, cc] * pp, X[i, cc] * (1.0 - pp)]
            z = rng.integers(0, m)
            rows.append(i), cols.append(z), vals.append(0.0)   # a stored zero
        perm = rng.permutation(len(rows))
        rows, cols, vals = np.array(rows, int)[perm], np.array(cols, int)[perm], np.array(vals)[perm]
        o = np.argsort(rows, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=r))]).astype(np.int32)
        C = sp.csr_matrix((vals[o], cols[o].astype(np.int32), indptr), shape=(r, m))
        D = np.zeros((r, m))
        K.csr_rows_into(C.indptr, C.indices, C.data, D, 0, 1, np.zeros(0, dtype=np.bool_), False)
        return C, D

    Jc, J = rand_csr(nj)
    Sc, S = rand_csr(nc)
    Tc, T = rand_csr(nc)
    touch = rng.random(nc) < 0.7
    ST = np.zeros((2 * nc, m))
    ST[0::2][touch], ST[1::2][touch] = S[touch], T[touch]
    L, starts = np.empty((m, m)), np.empty(m + 1, dtype=np.int64)
    nb = K.mass_factor(M, L, starts)
    n = max(nc, 1)
    U, bias = rng.normal(size=(n, m)), rng.normal(size=n)
    rhs, v, f = rng.normal(size=nj), rng.normal(size=m), rng.normal(size=m)
    gp, gi, gx = K.candidate_rows_csr(Jc.indptr, Jc.indices, Jc.data, Sc.indptr, Sc.indices, Sc.data, Tc.indptr,
                                      Tc.indices, Tc.data, touch)
    a = K.metric_chain_rows(M, L, starts, nb, gp, gi, gx, nj, rhs, 1e-9, v, f, 0.01, U, bias)
    b = K.noslip_metric_chain(M, L, starts, nb, J, ST, rhs, 1e-9, v, f, 0.01, U, bias)
    assert a[0] == b[0] == 0
    for x, y in zip(a[1:], b[1:]):
        assert x.shape == y.shape and np.array_equal(x, y)


def test_gripper_closing_from_a_gap_catches_and_holds_under_no_slip():
    """Motors as the paper's velocity constraints, solved with the contacts (drumwright eq. 23-25):
    the box gripper's motors close at their target speed (equality rows A v+ = a_target, the impulse
    inside its bound) while the two boxes fall freely; when the grippers meet the boxes the free
    motors' rows contradict the contacts (ppm's checked Farkas certificate), so they saturate at
    +-max force toward each other and no-slip holds the boxes: vertical velocity zero and no drift
    for the rest of the run, every step's motor state consistent."""
    from contactlab.scenarios.box_gripper import build
    from contactlab.sim import Simulator
    sc = build(push=50.0, closing_speed=0.1)
    gap = 0.004                       # each gripper starts 4 mm from its box: contact after 0.04 s
    for b in sc.bodies:
        if b.name.startswith("gripper"):
            s = -1.0 if b.name == "gripper_left" else 1.0
            b.position = (b.position[0] + s * gap, *b.position[1:])
    for j in sc.joints:
        s = -1.0 if j.name == "slide_left" else 1.0
        j.anchor = (j.anchor[0] + s * gap, *j.anchor[1:])
    sim = Simulator(sc, "no-slip", "ppm")
    held = [sim.model.index("box0"), sim.model.index("box1")]
    g, h = 9.81, sim.h
    caught = None
    for k in range(50):
        rec = sim.step()
        assert rec.success
        res, sys_ = sim.data.result, sim.last_system
        assert res.info["motor_consistent"]
        rate = sys_.A @ sim.data.velocity_vector(sim.model)
        if caught is None and np.all(np.abs(res.motor) < sys_.a_max):      # closing: at target, free fall
            assert np.allclose(rate, sys_.a_target, atol=1e-9)
            assert np.allclose(sim.data.linear_velocity[held, 2], -g * h * (k + 1), rtol=1e-6)
            continue
        if caught is None:
            caught = (k, sim.data.position[held, 2].copy())
            assert k >= 3                                                    # 4 mm at 0.1 m/s: 4 steps
        assert np.allclose(res.motor, sys_.a_max * np.sign(sys_.a_target), rtol=1e-12)   # squeezing
        assert np.abs(sim.data.linear_velocity[held, 2]).max() < 1e-9
        assert np.abs(sim.data.position[held, 2] - caught[1]).max() < 1e-9
    assert caught is not None and caught[0] <= 5
