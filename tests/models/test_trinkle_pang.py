"""Acceleration-level pyramid and cone models (Trinkle, Pang, Sudarsky, Lo 1997)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import contactlab as cl
from contactlab.models.noslip import SLIDING, STICKING
from contactlab.models.trinkle_pang import (build_stewart_trinkle, build_trinkle_pang, cone_residual,
                                            infeasibility_certificate, painleve_rod, recover_pyramid, solve_trinkle_pang,
                                            solve_trinkle_pang_cone)
from contactlab.solution import Status

G = 9.81


def _tilted_point(theta, phi=0.0, v=None, mass=2.0):
    """Point mass on the plane z = 0 with gravity tilted by theta (downslope = +x); tangents rotated by phi."""
    M = mass * np.eye(3)
    f = mass * G * np.array([np.sin(theta), 0.0, -np.cos(theta)])
    N = np.array([[0, 0, 1.0]])
    S = np.array([[np.cos(phi), np.sin(phi), 0.0]])
    T = np.array([[-np.sin(phi), np.cos(phi), 0.0]])
    return M, np.zeros(3) if v is None else np.asarray(v, float), f, N, S, T


def test_incline_sticks_below_and_slides_above_friction_angle():
    """Lemke alone (prove=False: no second method behind it) on the rolling-contact pyramid LCP."""
    mu = 0.5
    M, v, f, N, S, T = _tilted_point(np.arctan(0.4))           # tan < mu: sticks
    r = solve_trinkle_pang(M, v, f, N, S, T, mu, method="lemke", prove=False)
    assert r.solution.method == "lemke" and r.status in (Status.SOLVED, Status.TRIVIAL) and r.consistent
    np.testing.assert_allclose(r.result.accel, 0, atol=1e-8)
    np.testing.assert_allclose(r.result.tangent_s, [-2.0 * G * np.sin(np.arctan(0.4))], rtol=1e-8)
    assert r.result.modes[0] == STICKING
    th = np.arctan(0.8)                                         # tan > mu: starts sliding
    M, v, f, N, S, T = _tilted_point(th)
    r = solve_trinkle_pang(M, v, f, N, S, T, mu, method="lemke", prove=False)
    assert r.solution.method == "lemke" and r.consistent
    np.testing.assert_allclose(r.result.accel, [G * (np.sin(th) - mu * np.cos(th)), 0, 0], atol=1e-8)
    assert r.result.modes[0] == SLIDING


def test_interior_point_refuses_the_nonmonotone_pyramid_lcp_without_a_hidden_fallback():
    """The rolling-contact pyramid LCP is not monotone (the mu block makes it non-PSD), outside the
    interior-point method's theorem: it must say so (NO_SOLUTION_FOUND), and with prove=False no
    other method may answer in its place."""
    M, v, f, N, S, T = _tilted_point(np.arctan(0.4))
    built = build_trinkle_pang(M, v, f, N, S, T, 0.5)
    F = built.problem.lcp_reduction()[0].M
    assert np.linalg.eigvalsh(0.5 * (F + F.T)).min() < -1e-3          # not monotone
    r = solve_trinkle_pang(M, v, f, N, S, T, 0.5, method="interior-point", prove=False)
    assert r.solution.method == "interior-point" and r.status == Status.NO_SOLUTION_FOUND
    assert r.consistent is None and r.result is None


def test_sliding_contact_decelerates_along_pyramid_vertex():
    M, v, f, N, S, T = _tilted_point(0.0, v=[1.0, 0, 0])
    r = solve_trinkle_pang(M, v, f, N, S, T, 0.3)
    assert r.built.sliding.tolist() == [0] and r.built.lcp_variables == 1   # only c_n at a sliding contact
    np.testing.assert_allclose(r.result.accel, [-0.3 * G, 0, 0], atol=1e-12)
    np.testing.assert_allclose(r.result.normal, [2.0 * G])


def test_cone_variant_is_exact_where_the_pyramid_is_not():
    """Slope direction between two pyramid edges (phi = 30 deg): the 4-sided pyramid's force is off
    the slope line; successive refinement reaches the cone law a = g (sin - mu cos) downslope."""
    mu, th = 0.5, np.arctan(0.8)
    M, v, f, N, S, T = _tilted_point(th, phi=np.pi / 6)
    pyr = solve_trinkle_pang(M, v, f, N, S, T, mu)
    exact = np.array([G * (np.sin(th) - mu * np.cos(th)), 0, 0])
    assert np.abs(pyr.result.accel - exact).max() > 1e-2
    cone = solve_trinkle_pang_cone(M, v, f, N, S, T, mu, tol=1e-10)
    assert cone.status == Status.SOLVED and cone.refinements >= 1
    np.testing.assert_allclose(cone.result.accel, exact, atol=1e-9)
    assert cone_residual(cone.built, cone.result) <= 1e-10
    assert cone_residual(pyr.built, pyr.result) > 1e-3


def test_cone_variant_sliding_uses_exact_opposite_direction():
    vel = np.array([np.cos(0.3), np.sin(0.3), 0.0])
    M, v, f, N, S, T = _tilted_point(0.0, v=vel)
    r = solve_trinkle_pang_cone(M, v, f, N, S, T, 0.4)
    np.testing.assert_allclose(r.result.accel, -0.4 * G * vel, atol=1e-12)


@pytest.mark.parametrize("mu", [2.0, 5.0])
def test_painleve_sliding_rod_is_proven_inconsistent_with_a_checked_certificate(mu):
    M, v, f, N, S, T, mu = painleve_rod(theta=np.pi / 4, mu=mu)
    built = build_trinkle_pang(M, v, f, N, S, T, mu)
    lcp = built.problem.to_lcp()
    # the mathematics: a 1x1 LCP w = F c + q with F < 0 and q < 0 has no solution
    np.testing.assert_allclose(lcp.M, [[1 + 1.5 - 1.5 * mu]])
    assert lcp.q[0] < 0
    r = solve_trinkle_pang(M, v, f, N, S, T, mu)
    assert r.status == Status.NO_SOLUTION and r.consistent is False and r.result is None
    assert r.solution.info.get("certificate") is not None             # a proof, never a bare claim
    y = infeasibility_certificate(built.problem)                       # Farkas: y >= 0, F'y <= 0, q'y < 0
    assert y is not None and y.min() >= 0 and (lcp.M.T @ y).max() <= 0 and lcp.q @ y < 0
    cone = solve_trinkle_pang_cone(M, v, f, N, S, T, mu)
    assert cone.status == Status.NO_SOLUTION and cone.result is None


def test_no_proof_without_a_certificate():
    """The Farkas LP never 'proves' a solvable LCP infeasible, and finds the certificate of an
    infeasible one; a failed method without such a proof is reported as unknown (consistent None,
    the method's own status), never NO_SOLUTION."""
    solvable = cl.LCP(np.array([[-1.0, 2.0], [2.0, -1.0]]), np.array([1.0, -1.0]))  # z = (0, 1): w = (1, 0)
    assert infeasibility_certificate(solvable) is None
    infeasible = cl.LCP(np.array([[-1.0, 0.0], [0.0, 1.0]]), np.array([-1.0, 0.0]))  # row 1: -z - 1 >= 0 impossible
    y = infeasibility_certificate(infeasible)
    assert y is not None and y[0] > 0 and (infeasible.M.T @ y).max() <= 0 and infeasible.q @ y < 0
    M, v, f, N, S, T = _tilted_point(np.arctan(0.4))                  # solvable, but interior-point refuses it
    r = solve_trinkle_pang(M, v, f, N, S, T, 0.5, method="interior-point", prove=True, prove_max_n=0)
    assert r.consistent is None and r.status == Status.NO_SOLUTION_FOUND and r.result is None


def test_a_no_solution_without_certificate_is_not_a_proof(monkeypatch):
    """The rule itself: a second method's NO_SOLUTION that carries no certificate (the old
    ``enumerate``, which skipped singular supports) must not become 'proven inconsistent'."""
    import contactlab.solvers as solvers
    real = solvers.solve

    def uncertified_enumerate(problem, method="auto", **kw):
        sol = real(problem, method=method, **kw)
        if method == "enumerate":
            sol.status = Status.NO_SOLUTION
            sol.info.pop("certificate", None)
        return sol

    monkeypatch.setattr(solvers, "solve", uncertified_enumerate)
    M, v, f, N, S, T = _tilted_point(np.arctan(0.4))                  # solvable; interior-point refuses it
    r = solve_trinkle_pang(M, v, f, N, S, T, 0.5, method="interior-point", prove=True)
    assert r.consistent is None and r.status == Status.NO_SOLUTION_FOUND and r.result is None


def test_painleve_below_threshold_is_solved():
    M, v, f, N, S, T, mu = painleve_rod(theta=np.pi / 4, mu=1.0)
    r = solve_trinkle_pang(M, v, f, N, S, T, mu)
    assert r.consistent and r.status == Status.SOLVED
    # F = 1 (per unit mass), q = -g: c_n = g; the contact point keeps zero normal acceleration
    np.testing.assert_allclose(r.result.normal, [G])
    assert abs(N[0] @ r.result.accel) < 1e-10


def _random_contacts(seed, m, n, j):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    M = A @ A.T + m * np.eye(m)
    N, S, T = rng.normal(size=(n, m)), rng.normal(size=(n, m)), rng.normal(size=(n, m))
    J = rng.normal(size=(j, m)) if j else None
    v = rng.normal(size=m)
    if n > 1:  # make some contacts rolling: tangential velocity zero is a codimension-2 condition
        Zs = np.linalg.svd(np.vstack([S[:1], T[:1]] + ([J] if j else [])))[2][2 + j:]
        v = Zs.T @ rng.normal(size=Zs.shape[0])
    return M, v, rng.normal(size=m) * 5, N, S, T, J


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(4, 9), n=st.integers(1, 4), j=st.integers(0, 2),
       mu=st.floats(0.0, 0.3))
def test_small_friction_solutions_satisfy_the_model(seed, m, n, j, mu):
    """TPSL Thm. 1 (small mu): Lemke finds a solution; it satisfies dynamics, unilateral and pyramid laws."""
    M, v, f, N, S, T, J = _random_contacts(seed, m, n, j)
    r = solve_trinkle_pang(M, v, f, N, S, T, mu, J, prove=False)
    assert r.consistent and r.solution.method == "lemke", r.status   # Lemke alone, no second method
    res = r.result
    a = res.accel
    sc = max(1.0, np.abs(a).max(), np.abs(res.normal).max())
    rhs = f + N.T @ res.normal + S.T @ res.tangent_s + T.T @ res.tangent_t
    if J is not None:
        rhs = rhs + J.T @ res.joint
        assert np.abs(J @ a).max() < 1e-8 * sc
    assert np.abs(M @ a - rhs).max() < 1e-7 * sc
    an = N @ a
    assert an.min() > -1e-8 * sc and np.abs(an * res.normal).max() < 1e-6 * sc * sc
    ft = np.hypot(res.tangent_s, res.tangent_t)
    assert np.all(ft <= mu * res.normal * (1 + 1e-9) + 1e-9 * sc)
    for i in r.built.sliding:   # sliding friction is on the pyramid edge and dissipates
        assert abs(ft[i] - mu * res.normal[i]) <= 1e-9 * sc
        assert res.tangent_s[i] * (S[i] @ v) + res.tangent_t[i] * (T[i] @ v) <= 1e-12


def test_stewart_trinkle_has_2_plus_d_variables_per_contact():
    rng = np.random.default_rng(1)
    m, n = 6, 5
    M = np.eye(m)
    N, S, T = rng.normal(size=(n, m)), rng.normal(size=(n, m)), rng.normal(size=(n, m))
    for d in (4, 8):
        built = build_stewart_trinkle(M, np.zeros(m), np.zeros(m), 0.01, N, S, T, 0.5, d=d)
        assert built.lcp_variables == n * (2 + d)


def test_impact_with_pyramid_friction_stops_a_sliding_point():
    """Inelastic impact (dt = 0) of a point hitting the ground at 45 deg with mu = 1: it stops."""
    M = np.eye(3)
    v = np.array([1.0, 0.0, -1.0])
    N, S, T = np.array([[0, 0, 1.0]]), np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]])
    built = build_stewart_trinkle(M, v, np.zeros(3), 0.0, N, S, T, 1.0)
    sol = cl.solve(built.problem, method="lemke")
    res = recover_pyramid(built, sol)
    np.testing.assert_allclose(res.v_next, 0, atol=1e-12)
    built = build_stewart_trinkle(M, v, np.zeros(3), 0.0, N, S, T, 0.5)
    res = recover_pyramid(built, cl.solve(built.problem, method="lemke"))
    np.testing.assert_allclose(res.v_next, [0.5, 0, 0], atol=1e-12)


@pytest.mark.parametrize("integrator", ["euler", "rk4"])
def test_simulator_box_on_incline_slides_with_coulomb_acceleration(integrator):
    """Through the simulator (semi-implicit Euler or RK4): a box released on a 30 degree slope with
    mu = 0.3 moves with a = g (sin - mu cos) within 1%; at 20 degrees with mu = 0.5 it stays."""
    from contactlab.scenarios import make_scene
    from contactlab.sim.simulator import Simulator
    opts = {"integrator": integrator}
    sim = Simulator(make_scene("incline", angle_deg=30.0, mu=0.3), model="trinkle-pang", model_options=opts)
    i = sim.model.index("body")
    for _ in range(30):
        assert sim.step().success and sim.data.result.info["stage_failures"] == 0
    th = np.radians(30.0)
    down = np.array([np.cos(th), 0.0, -np.sin(th)])
    a = float(sim.data.linear_velocity[i] @ down) / sim.data.time
    assert abs(a - G * (np.sin(th) - 0.3 * np.cos(th))) < 0.01 * G * (np.sin(th) - 0.3 * np.cos(th))
    sim = Simulator(make_scene("incline", angle_deg=20.0, mu=0.5), model="trinkle-pang", model_options=opts)
    p0 = sim.data.position[i].copy()
    for _ in range(30):
        assert sim.step().success
    assert np.abs(sim.data.position[i] - p0).max() < 1e-4
