"""Exact-cone Coulomb friction problems: the cone projection, the one residual, and the solvers
(nsgs, newton-ac, newton-fb, prox, pyramid) against analytic cases and an independent SLSQP reference."""
import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

import contactlab as cl
from contactlab.kernels.coulomb import project_cone

EXACT = ("nsgs", "newton-ac", "newton-fb", "prox")


def _random_spd(rng, n, cond=10.0):
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return Q @ np.diag(np.linspace(1.0, cond, n)) @ Q.T


def test_cone_projection_is_the_moreau_decomposition():
    rng = np.random.default_rng(1)
    for dim in (2, 3):
        for _ in range(300):
            x = rng.normal(size=dim) * 3
            mu = rng.uniform(0.0, 2.0)
            p = np.empty(dim)
            project_cone(x, mu, p)
            # p in K_mu, x - p in the polar cone {y: mu ||y_t|| <= -y_n}, p . (x - p) = 0
            assert np.linalg.norm(p[1:]) <= mu * p[0] + 1e-12
            y = x - p
            assert mu * np.linalg.norm(y[1:]) <= -y[0] + 1e-12
            assert abs(p @ y) <= 1e-12 * (1 + x @ x)
            pp = np.empty(dim)
            project_cone(p, mu, pp)
            np.testing.assert_allclose(pp, p, atol=1e-14)


@pytest.mark.parametrize("qt,mu", [((0.3, -0.2), 0.5), ((1.5, 0.8), 0.4), ((0.0, 0.0), 0.3)])
def test_single_contact_sticking_and_sliding_analytic(qt, mu):
    """W = I, q = (-1, q_t): sticking (r = -q, u = 0) if ||q_t|| <= mu, else sliding with
    r = (1, -mu q_t/||q_t||), u = (0, q_t (1 - mu/||q_t||))."""
    q = np.array([-1.0, *qt])
    nt = np.linalg.norm(q[1:])
    if nt <= mu:
        r_ref = -q
    else:
        r_ref = np.r_[1.0, -mu * q[1:] / nt]
    p = cl.FrictionContact(np.eye(3), q, [mu])
    assert p.residuals(r_ref).natural <= 1e-15
    for m in EXACT:
        sol = cl.solve(p, m)
        assert sol.status == cl.Status.SOLVED, m
        np.testing.assert_allclose(sol.z, r_ref, atol=1e-9)


def test_residual_is_scale_free_and_zero_only_at_solutions():
    rng = np.random.default_rng(2)
    W = _random_spd(rng, 6)
    q = rng.normal(size=6)
    p = cl.FrictionContact(W, q, [0.3, 0.6])
    r = cl.solve(p, "newton-ac").z
    assert p.residuals(r).natural <= 1e-8
    r_bad = r + 0.01 * rng.normal(size=6)
    base = p.residuals(r_bad)
    assert base.natural > 1e-4
    for s in (1e-6, 1e6):     # impulse units: q -> s q, r -> s r
        ps = cl.FrictionContact(W, s * q, p.mu)
        assert ps.residuals(s * r_bad).natural == pytest.approx(base.natural, rel=1e-9)
        pw = cl.FrictionContact(s * W, q, p.mu)    # mass units: W -> s W, r -> r / s
        assert pw.residuals(r_bad / s).natural == pytest.approx(base.natural, rel=1e-9)


def _slsqp_reference(W, q, mu, dim, iters=60):
    """Independent reference: De Saxce / Cadoux fixed point on s = mu ||u_t||; each step a convex
    second-order-cone QP min 1/2 r'Wr + (q + s e_n)'r, r in K_mu, solved by scipy SLSQP."""
    nc = len(mu)
    s = np.zeros(nc)
    r = np.zeros(nc * dim)
    cons = [{"type": "ineq", "fun": (lambda r, i=i: mu[i] * r[i * dim] - np.sqrt(np.sum(r[i * dim + 1:(i + 1) * dim] ** 2) + 1e-30))}
            for i in range(nc)] + [{"type": "ineq", "fun": (lambda r, i=i: r[i * dim])} for i in range(nc)]
    for _ in range(iters):
        qs = q.copy()
        qs[::dim] += s
        out = so.minimize(lambda r: 0.5 * r @ W @ r + qs @ r, r, jac=lambda r: W @ r + qs, constraints=cons,
                          method="SLSQP", options={"ftol": 1e-15, "maxiter": 500})
        r = out.x
        u = W @ r + q
        s_new = mu * np.linalg.norm(u.reshape(nc, dim)[:, 1:], axis=1)
        if np.max(np.abs(s_new - s)) < 1e-12:
            break
        s = s_new
    return r


@pytest.mark.parametrize("dim", [2, 3])
def test_solvers_agree_with_each_other_and_an_slsqp_reference(dim):
    rng = np.random.default_rng(3 + dim)
    nc = 3
    W = _random_spd(rng, nc * dim, cond=5.0)
    q = rng.normal(size=nc * dim)
    q[::dim] = -np.abs(q[::dim]) - 0.5
    mu = np.array([0.1, 0.2, 0.15])   # small mu: the solution is unique (W SPD)
    p = cl.FrictionContact(W, q, mu, dim=dim)
    ref = _slsqp_reference(W, q, mu, dim)
    assert p.residuals(ref).natural <= 1e-5        # the reference is itself a solution
    for m in EXACT:
        sol = cl.solve(p, m)
        assert sol.status == cl.Status.SOLVED, (m, sol.info)
        assert sol.residual <= 1e-8
        np.testing.assert_allclose(sol.z, ref, atol=1e-5 * np.abs(ref).max())


def test_global_problem_condenses_and_is_certified_in_global_form():
    rng = np.random.default_rng(5)
    ndof, nc = 9, 2
    M = sp.csr_matrix(_random_spd(rng, ndof))
    H = sp.csr_matrix(rng.normal(size=(ndof, 3 * nc)))
    f = rng.normal(size=ndof)
    b = rng.normal(size=3 * nc)
    b[::3] = -2.0
    g = cl.GlobalFrictionContact(M, H, f, b, [0.3, 0.5])
    for m in ("newton-ac", "nsgs"):
        sol = cl.solve(g, m)
        assert sol.status == cl.Status.SOLVED
        np.testing.assert_allclose(M @ sol.x, H @ sol.z + f, atol=1e-10)
        np.testing.assert_allclose(sol.w, H.T @ sol.x + b, atol=1e-10)
        assert g.local().residuals(sol.z).natural == pytest.approx(sol.residual, abs=1e-14)


def test_pyramid_route_reports_the_exact_cone_error():
    """A sliding contact: the 4-sided pyramid's answer is an LCP solution but not a Coulomb one."""
    p = cl.FrictionContact(np.eye(3), [-1.0, 1.0, 1.0], [0.5])
    sol = cl.solve(p, "pyramid", d=4)
    assert sol.info["pyramid_status"] == "SOLVED"
    assert sol.status == cl.Status.NO_SOLUTION_FOUND
    assert sol.info["cone_error"] == pytest.approx(sol.residual) and sol.residual > 1e-3
    # a sticking contact lies inside every pyramid: the route certifies it
    sol = cl.solve(cl.FrictionContact(np.eye(3), [-1.0, 0.01, 0.0], [0.5]), "pyramid", d=8)
    assert sol.status == cl.Status.SOLVED and sol.residual <= 1e-8


def test_bad_input_errors_name_the_argument():
    with pytest.raises(cl.ProblemError, match="dim"):
        cl.FrictionContact(np.eye(4), np.zeros(4), [0.1], dim=4)
    with pytest.raises(cl.ProblemError, match="multiple of dim"):
        cl.FrictionContact(np.eye(4), np.zeros(4), [0.1], dim=3)
    with pytest.raises(cl.ProblemError, match="mu"):
        cl.FrictionContact(np.eye(3), -np.ones(3), [-0.1])
    with pytest.raises(cl.ProblemError, match="q"):
        cl.FrictionContact(np.eye(3), [np.nan, 0, 0], [0.1])
    with pytest.raises(cl.ProblemError, match="M is singular"):
        cl.solve(cl.GlobalFrictionContact(np.zeros((3, 3)), np.eye(3), np.ones(3), -np.ones(3), [0.2]), "nsgs")
    with pytest.raises(cl.ParamError, match="omega"):
        cl.solve(cl.FrictionContact(np.eye(3), -np.ones(3), [0.1]), "nsgs", omega=2.5)


def test_solvers_stop_within_their_limits_with_honest_status():
    """A rank-deficient, hyperstatic W (four identical contacts under one box): bounded and honest."""
    rng = np.random.default_rng(7)
    G = rng.normal(size=(6, 12))
    W = G.T @ G          # rank 6 < 12
    q = -np.tile([1.0, 0.2, 0.1], 4)
    p = cl.FrictionContact(W, q, [0.5] * 4)
    for m, opts in (("nsgs", {"max_sweeps": 50}), ("newton-ac", {"max_iter": 5}), ("prox", {"max_outer": 3})):
        sol = cl.solve(p, m, **opts)
        assert np.all(np.isfinite(sol.z))
        assert sol.success == (sol.residual <= 1e-6)


@pytest.mark.parametrize("Fx,vx", [(2.0, 0.0), (8.0, 0.0), (-8.0, 0.0), (2.0, 1.0), (2.0, -0.5)])
def test_trinkle_pang_quadratic_cone_point_mass_analytic(Fx, vx):
    """A point mass on a plane (m = 1, g = 10, mu = 0.5), pushed by Fx: at rest it sticks while
    |Fx| <= mu m g (a = 0) and starts sliding otherwise (a_x = Fx - sign(Fx) mu m g); when sliding
    with velocity vx the friction is -mu m g sign(vx) whatever Fx."""
    from contactlab.problems.trinkle_pang_cone import solve_trinkle_pang_cone_exact
    m, g, mu = 1.0, 10.0, 0.5
    M = np.eye(3) * m
    f = np.array([Fx, 0.0, -m * g])
    N, S, T = np.array([[0.0, 0, 1]]), np.array([[1.0, 0, 0]]), np.array([[0.0, 1, 0]])
    if vx != 0.0:
        ax = (Fx - np.sign(vx) * mu * m * g) / m
    elif abs(Fx) <= mu * m * g:
        ax = 0.0
    else:
        ax = (Fx - np.sign(Fx) * mu * m * g) / m
    for method in EXACT:
        res = solve_trinkle_pang_cone_exact(M, [vx, 0, 0], f, N, S, T, mu, method=method)
        assert res.status == "SOLVED", method
        np.testing.assert_allclose(res.a, [ax, 0.0, 0.0], atol=1e-7)
        assert res.c[0, 0] == pytest.approx(m * g, rel=1e-8)


def test_pyramid_route_refuses_oversized_lcps_with_a_clear_error():
    p = cl.FrictionContact(np.eye(30), -np.ones(30), [0.3] * 10)
    with pytest.raises(cl.ParamError, match="max_variables"):
        cl.solve(p, "pyramid", max_variables=50)


def test_auto_picks_newton_ac_for_coulomb_problems():
    p = cl.FrictionContact(np.eye(3), [-1.0, 0.1, 0.0], [0.5])
    sol = cl.solve(p)
    assert sol.info["auto"]["method"] == "newton-ac" and sol.status == cl.Status.SOLVED
    np.testing.assert_allclose(sol.z, [1.0, -0.1, 0.0], atol=1e-12)


def test_time_cap_gives_an_honest_status_and_reason():
    """max_time already spent: every exact-cone method stops unsolved, says why, and returns finite r."""
    rng = np.random.default_rng(7)
    G = rng.normal(size=(6, 12))
    p = cl.FrictionContact(G.T @ G, -np.tile([1.0, 0.2, 0.1], 4), [0.5] * 4)   # hyperstatic: not 1-step
    for m in EXACT:
        sol = cl.solve(p, m, max_time=1e-12, tol=1e-14)
        assert sol.status == cl.Status.MAX_ITERATIONS, m
        assert sol.info["reason"] == "time limit reached", (m, sol.info)
        assert np.all(np.isfinite(sol.z))
