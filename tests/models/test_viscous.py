"""Viscous friction model (drumwright Sec. IV, eq. 29-42)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import contactlab as cl
from contactlab.errors import ModelError
from contactlab.models.viscous import (build_impact, build_viscous, recover_viscous, rk4,
                                       semi_implicit_euler)
from tests.problems import trot_systems, with_csc_mass


def _scene(seed, m, n, j):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    M = A @ A.T + m * np.eye(m)
    N, S, T = rng.normal(size=(n, m)), rng.normal(size=(n, m)), rng.normal(size=(n, m))
    J = None
    if j:
        J = rng.normal(size=(j, m))
        J = np.vstack([J, 2 * J[0]])  # a redundant row: A of eq. 33 would be singular without Alg. 2
    return M, rng.normal(size=m), rng.normal(size=m) * 10, N, S, T, J, rng.uniform(0, 2, size=n)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(3, 10), n=st.integers(1, 8), j=st.integers(0, 2))
def test_tangential_force_is_minus_mu_v_times_v_t(seed, m, n, j):
    M, v, f, N, S, T, J, mu_v = _scene(seed, m, n, j)
    built = build_viscous(M, v, f, N, S, T, mu_v, J)
    assert built.lcp_variables == n
    sol = cl.solve(built.problem, method="ppm")
    assert sol.success
    res = recover_viscous(built, sol.z)
    np.testing.assert_allclose(res.tangent_s, -mu_v * (S @ v), rtol=1e-12)
    np.testing.assert_allclose(res.tangent_t, -mu_v * (T @ v), rtol=1e-12)
    a = res.accel
    sc = max(1.0, np.abs(a).max())
    an = N @ a
    assert an.min() > -1e-9 * sc and np.abs(an * res.normal).max() < 1e-7 * sc * max(1.0, res.normal.max())
    if J is not None:
        assert np.abs(J @ a).max() < 1e-9 * sc
    r = M @ a - f - N.T @ res.normal - S.T @ res.tangent_s - T.T @ res.tangent_t
    if J is not None:
        r = r - J.T @ res.joint
    assert np.abs(r).max() < 1e-8 * max(1.0, np.abs(f).max(), res.normal.max())
    # eq. 41-42 with A of eq. 33 on the independent joint rows
    Jk = built.index_sets.G
    k = Jk.shape[0]
    A = np.block([[M, -Jk.T], [Jk, np.zeros((k, k))]])
    Ainv = np.linalg.inv(A)[:m, :m]
    lcp = built.problem.to_lcp()
    np.testing.assert_allclose(lcp.M, N @ Ainv @ N.T, atol=1e-9 * max(1.0, np.abs(lcp.M).max()))
    fstar = f - S.T @ (mu_v * (S @ v)) - T.T @ (mu_v * (T @ v))
    np.testing.assert_allclose(lcp.q, N @ Ainv @ fstar, atol=1e-9 * max(1.0, np.abs(lcp.q).max()))


def _sliding_point(mu_v=2.0, mass=1.5):
    M = mass * np.eye(3)
    N, S, T = np.array([[0, 0, 1.0]]), np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]])
    g = np.array([0, 0, -9.81 * mass])

    def accel(q, v):
        built = build_viscous(M, v, g, N, S, T, mu_v)
        return recover_viscous(built, cl.solve(built.problem, method="ppm").z).accel
    return accel


def test_rk4_matches_exponential_decay():
    """A point mass sliding on the ground under viscous friction: v_t(t) = v0 exp(-mu_v t / m)."""
    accel = _sliding_point()
    q, v = np.zeros(3), np.array([1.0, -0.5, 0.0])
    dt, steps = 0.01, 100
    for _ in range(steps):
        q, v = rk4(q, v, dt, accel)
    exact = np.array([1.0, -0.5]) * np.exp(-2.0 / 1.5 * dt * steps)
    np.testing.assert_allclose(v[:2], exact, rtol=1e-8)
    assert abs(v[2]) < 1e-12 and abs(q[2]) < 1e-12   # the ground holds it
    np.testing.assert_allclose(q[:2], np.array([1.0, -0.5]) * 1.5 / 2.0 * (1 - np.exp(-2.0 / 1.5)), rtol=1e-7)


def test_semi_implicit_euler_is_first_order():
    accel = _sliding_point()
    errs = []
    for dt in (0.02, 0.01):
        q, v = np.zeros(3), np.array([1.0, 0.0, 0.0])
        for _ in range(int(round(0.5 / dt))):
            q, v = semi_implicit_euler(q, v, accel(q, v), dt)
        errs.append(abs(v[0] - np.exp(-2.0 / 1.5 * 0.5)))
    assert 1.7 < errs[0] / errs[1] < 2.3


def test_inelastic_impact_has_no_friction_impulse():
    """A falling, sliding point mass hits the ground: normal velocity zeroed, tangential kept."""
    M = 2.0 * np.eye(3)
    v = np.array([1.0, 0.5, -3.0])
    N = np.array([[0, 0, 1.0]])
    built = build_impact(M, v, N)
    sol = cl.solve(built.problem, method="ppm")
    res = recover_viscous(built, sol.z)
    np.testing.assert_allclose(res.accel, [1.0, 0.5, 0.0], atol=1e-12)   # v+ (accel holds v+ here)
    np.testing.assert_allclose(res.normal, [6.0])


def test_normal_bias_is_a_constant_offset_of_the_factored_problem():
    M = np.eye(3)
    N, S, T = np.array([[0, 0, 1.0]]), np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]])
    built = build_viscous(M, np.zeros(3), np.array([0, 0, -1.0]), N, S, T, 0.1, normal_bias=[0.5])
    assert isinstance(built.problem, cl.FactoredLCP)
    res = recover_viscous(built, cl.solve(built.problem, method="ppm").z)
    np.testing.assert_allclose(res.normal, [0.5])     # N a + 0.5 = 0  ->  a_z = -0.5
    np.testing.assert_allclose(res.accel, [0, 0, -0.5])


def test_bad_mu_v():
    with pytest.raises(ModelError, match="mu_v"):
        build_viscous(np.eye(2), [0, 0], [0, 0], [[1.0, 0]], [[0, 1.0]], [[0, 1.0]], -1.0)


def test_viscous_in_the_simulator_decays_slip_geometrically():
    """A sphere sliding on the ground: semi-implicit Euler with the implicit viscous force -mu_v v_t+
    at the contact scales the contact slip by 1 / (1 + h mu_v (1/m + r^2/I)) = 1 / (1 + 3.5 h mu_v / m)
    per step (backward Euler on the slip; the explicit force would give 1 - 3.5 h mu_v / m)."""
    from contactlab.scenarios import make_scene
    from contactlab.sim.simulator import Simulator
    sim = Simulator(make_scene("incline", shape="sphere", angle_deg=0.0, speed=1.0, mass=2.0, size=0.2),
                    model="viscous", model_options={"mu_v": 0.5})
    slip = []
    for _ in range(4):
        assert sim.step().success
        slip.append((sim.last_system.S @ sim.data.velocity_vector(sim.model))[0])
    np.testing.assert_allclose(np.array(slip[1:]) / np.array(slip[:-1]), 1 / (1 + 3.5 * 0.01 * 0.5 / 2.0), rtol=1e-9)
    assert abs(sim.data.position[sim.model.index("body"), 2] - 0.1) < 1e-9   # stays on the ground


def test_viscous_rk4_in_the_simulator_has_the_rk4_amplification_factor():
    """Linear slip decay du/dt = -lambda u: one RK4 step multiplies u by 1 - z + z^2/2 - z^3/6 + z^4/24,
    z = h lambda, lambda = 3.5 mu_v / m (sphere); semi-implicit Euler (implicit drag) by 1 / (1 + z)."""
    from contactlab.scenarios import make_scene
    from contactlab.sim.simulator import Simulator
    mu_v, m, h = 20.0, 2.0, 0.01
    z = h * 3.5 * mu_v / m
    for integrator, factor in (("rk4", 1 - z + z**2 / 2 - z**3 / 6 + z**4 / 24), ("euler", 1 / (1 + z))):
        sim = Simulator(make_scene("incline", shape="sphere", angle_deg=0.0, speed=1.0, mass=m, size=0.2),
                        model="viscous", model_options={"mu_v": mu_v, "integrator": integrator})
        slip = []
        for _ in range(3):
            rec = sim.step()
            assert rec.success and sim.data.result.info["stage_failures"] == 0
            slip.append((sim.last_system.S @ sim.data.velocity_vector(sim.model))[0])
        np.testing.assert_allclose(np.array(slip[1:]) / np.array(slip[:-1]), factor, rtol=1e-9)


# -- the one-call reduction (issue 13) against the former two-step path -------------------------------------
def _former_viscous(M, v, f, N, S, T, mu_v, J, h, J_rhs, bias, cfm, tol=1e-9):
    """The former build_viscous/recover_viscous: FIND-INDICES (find_indices), then reduce_equalities,
    and the joint forces from constraint_impulses/split_impulses."""
    from contactlab.models.find_indices import (constraint_impulses, find_indices, reduce_equalities,
                                                split_impulses, step_inputs)
    mu_v = np.broadcast_to(np.asarray(mu_v, dtype=float), (N.shape[0],))
    C = S.T @ (mu_v[:, None] * S) + T.T @ (mu_v[:, None] * T)
    f_total = f - C @ v
    Mh = M + h * C if h > 0 else M
    j = 0 if J is None else J.shape[0]
    b, jr, cf, solve = step_inputs(Mh, N.shape[0], j, bias, J_rhs)
    sets = find_indices(Mh, J if j else None, tol=tol, M_solve=solve)
    red = reduce_equalities(Mh, f_total, N, sets, lambda _, i: jr[i], b, cfm, cf)

    def recover(z):
        a = red.x(z)
        lam = constraint_impulses(sets, red.M_solve, Mh @ a - f_total - N.T @ z)
        return a, split_impulses(sets, lam, j, 0)[0]
    return red, recover


@pytest.mark.parametrize("seed", range(12))
def test_one_call_reduction_equals_the_former_path(seed):
    m, n, j = 6 + seed % 5, 1 + seed % 4, seed % 3
    M, v, f, N, S, T, J, mu_v = _scene(seed, m, n, j)
    rng = np.random.default_rng(seed + 100)
    h = 0.0 if seed % 2 else 1e-2
    J_rhs = None if J is None else rng.normal(size=J.shape[0])
    J_rhs = None if J_rhs is None else J @ np.linalg.lstsq(J, J_rhs, rcond=None)[0]   # consistent with the redundant row
    bias, cfm = rng.normal(size=n), (1e-6 if seed % 3 == 0 else 0.0)
    built = build_viscous(M, v, f, N, S, T, mu_v, J, h=h, J_rhs=J_rhs, normal_bias=bias, cfm=cfm)
    red, recover = _former_viscous(M, v, f, N, S, T, mu_v, J, h, J_rhs, bias, cfm)
    np.testing.assert_array_equal(built.index_sets.kept if built.index_sets.kept is not None else [],
                                  red.sets.kept if red.sets.kept is not None else [])
    # the factored forms differ (Z in the Mh metric, Z' Mh Z = I, against the orthonormal Z of the former
    # path): the LCP they stand for, F = N A^-1 N' and q (eq. 41-42), is the same to round-off
    new, old = built.problem.to_lcp(), red.problem.to_lcp()
    np.testing.assert_allclose(new.M, old.M, rtol=0, atol=1e-12 * max(1.0, np.abs(old.M).max()))
    np.testing.assert_allclose(new.q, old.q, rtol=0, atol=1e-12 * max(1.0, np.abs(old.q).max()))
    np.testing.assert_allclose(built.problem.offset, red.problem.offset, rtol=1e-12, atol=1e-12)
    new = built.problem
    sol = cl.solve(new, method="ppm")
    assert sol.success
    res = recover_viscous(built, sol.z)
    a, joint = recover(sol.z)
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(res.accel, a, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(res.joint, joint, rtol=0, atol=1e-9 * max(1.0, np.abs(joint).max(initial=0.0)))
    vend = v + h * a
    np.testing.assert_allclose(res.tangent_s, -mu_v * (S @ vend), rtol=1e-12, atol=1e-12 * scale)


# -- the one-call build and recover of a ConstraintSystem (kernels/noslip.py viscous_system_chain) -----------
@pytest.mark.parametrize("mu_v", [0.1, 30.0])
def test_fused_build_and_recover_agree_with_the_general_path(mu_v):
    """drumwright eq. 41-42 with the implicit drag (Mh = M + h C, f* = f - C v): the one-call build keeps
    the same joint rows and gives the same LCP (F, q) and the same step (v+, impulses) to round-off (its
    products are summed over the stored entries, the general path's by BLAS)."""
    from contactlab.models import viscous
    o = viscous.Options(mu_v=mu_v)
    systems = trot_systems("viscous", mu_v=mu_v)
    assert any(s.nc for s in systems)
    for sys_ in systems:
        a, b = viscous.build(sys_, o), viscous.build(with_csc_mass(sys_), o)
        la, lb = a.state[0], b.state[0]
        assert type(la.reduced) is type(lb.reduced)
        assert np.array_equal(la.index_sets.order, lb.index_sets.order)
        for x, y in ((la.M, lb.M), (la.f_total, lb.f_total), (la.N, lb.N), (la.S, lb.S), (la.T, lb.T)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-13 * max(1.0, np.abs(y).max()))
        A, B = a.problem.to_lcp(), b.problem.to_lcp()
        np.testing.assert_allclose(A.M, B.M, rtol=0, atol=1e-12 * max(1.0, np.abs(B.M).max()))
        np.testing.assert_allclose(A.q, B.q, rtol=0, atol=1e-12 * max(1.0, np.abs(B.q).max()))
        sol = cl.solve(a.problem, method="ppm")
        assert sol.success
        ra, rb = viscous.recover(sys_, a, sol, o), viscous.recover(with_csc_mass(sys_), b, sol, o)
        for x, y in ((ra.v_next, rb.v_next), (ra.normal, rb.normal), (ra.joint, rb.joint), (ra.tangent, rb.tangent),
                     (ra.limit, rb.limit)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-10 * max(1.0, np.abs(y).max(initial=0.0)))
        assert np.array_equal(ra.modes, rb.modes) and ra.info == {**rb.info, "forces": ra.info["forces"]}


def test_fused_recover_equals_the_staged_recover():
    """The one-call recover of an Euler step (kernels/noslip.py viscous_recover_step) against
    recover_viscous and rk4.combine with weight 1 (the former recover) on the same built step: a, v+, the
    normal and joint impulses are the same floats; the drag impulses -h mu_v S v+ agree to round-off
    (rows times v+ summed in column order, not by BLAS)."""
    from contactlab.models import rk4 as staging
    from contactlab.models import viscous
    for sys_ in trot_systems("viscous", steps=24):
        built = viscous.build(sys_)
        last, st = built.state
        sol = cl.solve(built.problem, method="ppm")
        fast = viscous.recover(sys_, built, sol)
        res = recover_viscous(last, sol.z)
        v_next, mix = staging.combine(sys_, st, res)
        assert np.array_equal(fast.v_next, v_next)
        assert np.array_equal(fast.normal, mix(lambda r: r.normal)[sys_.nl:])
        assert np.array_equal(fast.joint, mix(lambda r: r.joint))
        tangent = np.column_stack([mix(lambda r: r.tangent_s), mix(lambda r: r.tangent_t)])[sys_.nl:]
        np.testing.assert_allclose(fast.tangent, tangent, rtol=1e-13, atol=1e-16)
        assert np.array_equal(fast.info["forces"], sol.z)


def test_fused_build_names_a_non_finite_input():
    """A non-finite velocity or an indefinite M: the one-call build hands over to the general path,
    which names the culprit."""
    import copy
    from contactlab.models import viscous
    sys_ = trot_systems("viscous", steps=4)[0]
    bad = copy.copy(sys_)
    bad.v = sys_.v.copy()
    bad.v[3] = np.nan
    with pytest.raises(ModelError, match="v contains NaN"):
        viscous.build(bad)
    neg = copy.copy(sys_)
    neg.M = -sys_.M
    with pytest.raises(ModelError, match="not positive definite"):
        viscous.build(neg)


def test_fused_rk4_stages_agree_with_the_general_path():
    """RK4 (drumwright Sec. VII-B, models/rk4.py): each stage's explicit-drag problem (Mh = M, f* = f - C v_i)
    from the one-call build gives the step of the general path (build_viscous on dense rows) to round-off."""
    from contactlab.models import viscous
    o = viscous.Options(integrator="rk4")
    systems = trot_systems("viscous", steps=24, integrator="rk4")
    assert any(s.nc for s in systems)
    for sys_ in systems:
        a, b = viscous.build(sys_, o), viscous.build(with_csc_mass(sys_), o)
        assert type(a.state[0].reduced) is type(b.state[0].reduced)
        assert len(a.state[1].stages) == len(b.state[1].stages) == 3
        A, B = a.problem.to_lcp(), b.problem.to_lcp()
        np.testing.assert_allclose(A.M, B.M, rtol=0, atol=1e-12 * max(1.0, np.abs(B.M).max()))
        np.testing.assert_allclose(A.q, B.q, rtol=0, atol=1e-11 * max(1.0, np.abs(B.q).max()))
        sol = cl.solve(a.problem, method="ppm")
        ra, rb = viscous.recover(sys_, a, sol, o), viscous.recover(with_csc_mass(sys_), b, sol, o)
        for x, y in ((ra.v_next, rb.v_next), (ra.normal, rb.normal), (ra.joint, rb.joint), (ra.tangent, rb.tangent)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-10 * max(1.0, np.abs(y).max(initial=0.0)))


def test_fused_build_factors_mh_as_mass_factor():
    """The one-call build finds Mh's diagonal blocks from the stored entries of M and the drag's columns
    (kernels/noslip.py _mass_factor_stored): the same blocks and the same Cholesky factor, bit for bit,
    as mass_factor's scan of the dense Mh = M + h C."""
    from contactlab.kernels import noslip as K
    from contactlab.models import viscous
    for mu_v in (0.1, 30.0):
        for sys_ in trot_systems("viscous", steps=24, mu_v=mu_v):
            last = viscous.build(sys_, viscous.Options(mu_v=mu_v)).state[0]
            cf = last.reduced.M_factor
            m = cf.M.shape[0]
            L, starts = np.empty((m, m)), np.empty(m + 1, dtype=np.int64)
            nb = K.mass_factor(cf.M, L, starts)
            assert nb == cf.nb and np.array_equal(starts[:nb + 1], cf.starts[:nb + 1]) and np.array_equal(L, cf.L)


def test_compiled_velocity_rows_violated_equals_the_sparse_products():
    """models/rk4.py velocity_rows_violated on a ConstraintSystem's CSR rows (one compiled pass) answers
    as the scipy products do (M^-1 given as CSC takes that path) on trot steps, at the step's velocity and
    perturbed ones, with and without CFM."""
    import copy
    from contactlab.models import rk4
    rng = np.random.default_rng(0)
    seen = set()
    for s in trot_systems("viscous", steps=40, every=2, integrator="rk4"):
        g = copy.copy(s)
        g.Minv = s.Minv.tocsc()
        for cfm in (0.0, 1e-3):
            for v in (s.v, s.v + 1e-3 * rng.normal(size=s.v.shape), s.v + 1e-7 * rng.normal(size=s.v.shape)):
                a = rk4.velocity_rows_violated(s, v, cfm)
                assert a == rk4.velocity_rows_violated(g, v, cfm)
                seen.add(a)
    assert seen == {True, False}


def test_drag_rate_by_the_block_factor_equals_rk4_drag_rate():
    """The RK4 stability bound as build computes it (models/viscous.py _drag_rate: M's block factor, the
    nonzero rows of S and T) against rk4_drag_rate (dense solve, every row) on trot systems, to round-off;
    exact for a sphere (3.5 mu_v / m)."""
    from contactlab.models import viscous
    o = viscous.Options(integrator="rk4")
    for s in trot_systems("viscous", steps=24, integrator="rk4"):
        M, _, S, T, _, _ = viscous._rows(s, o)
        a, b = viscous.rk4_drag_rate(M, S, T, np.full(S.shape[0], 0.1)), viscous._drag_rate(M, S, T, 0.1)
        assert abs(a - b) <= 1e-12 * a
    m, r = 2.0, 0.1
    M = np.diag([m, m, m, 0.4 * m * r * r, 0.4 * m * r * r, 0.4 * m * r * r])
    S = np.array([[1.0, 0, 0, 0, r, 0]])
    T = np.array([[0, 1.0, 0, -r, 0, 0]])
    np.testing.assert_allclose(viscous._drag_rate(M, S, T, 0.5), 3.5 * 0.5 / m, rtol=1e-14)


def test_fused_build_with_joint_limits_agrees_with_the_general_path():
    """A pendulum chain held at its joint limits (unilateral rows L before the contacts, no drag on them):
    the one-call build and recover give the general path's step, limit and joint impulses to round-off."""
    from contactlab.models import viscous
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("pendulum-chain", limit_deg=3.0), "viscous", "ppm")
    limited = 0
    for _ in range(30):
        sim.step()
        s = sim.last_system
        limited += s.nl > 0
        a, b = viscous.build(s), viscous.build(with_csc_mass(s))
        sol = cl.solve(a.problem, method="ppm")
        ra, rb = viscous.recover(s, a, sol), viscous.recover(with_csc_mass(s), b, sol)
        for x, y in ((ra.v_next, rb.v_next), (ra.limit, rb.limit), (ra.joint, rb.joint)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max(initial=0.0)))
    assert limited
