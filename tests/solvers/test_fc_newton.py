"""newton-fb: semismooth Newton on the second-order-cone Fischer-Burmeister function of the Coulomb
problem. The function's blocks against finite differences, its zeros against Coulomb's law, and the
solver against analytic single contacts, newton-ac / nsgs and scaling."""
from pathlib import Path

import numpy as np
import pytest

import contactlab as cl
from contactlab import data
from contactlab.kernels.coulomb import fb_block

SAMPLES = data.ROOT / "fclib"       # shipped with the package (contactlab/data/fclib)


def _fb(r, u, mu, rho):
    d = r.size
    phi, A, B = np.empty(d), np.empty((d, d)), np.empty((d, d))
    fb_block(r, u, mu, rho, phi, A, B, np.empty((5, d + 1, d)))
    return phi, A, B


def _spd(rng, n, cond=10.0):
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return Q @ np.diag(np.linspace(1.0, cond, n)) @ Q.T


@pytest.mark.parametrize("dim", [2, 3])
def test_jacobian_blocks_are_the_derivatives(dim):
    """Where Phi_FB is differentiable (almost everywhere) A = dPhi/dr and B = dPhi/du: central differences."""
    rng = np.random.default_rng(dim)
    h = 1e-6
    for k in range(150):
        r, u = rng.normal(size=dim), rng.normal(size=dim)
        mu = 0.0 if k % 5 == 0 else rng.uniform(0.05, 1.5)
        rho = rng.uniform(0.3, 3.0)
        _, A, B = _fb(r, u, mu, rho)
        for j in range(dim):
            e = np.zeros(dim)
            e[j] = h
            np.testing.assert_allclose((_fb(r + e, u, mu, rho)[0] - _fb(r - e, u, mu, rho)[0]) / (2 * h), A[:, j],
                                       atol=1e-6)
            np.testing.assert_allclose((_fb(r, u + e, mu, rho)[0] - _fb(r, u - e, mu, rho)[0]) / (2 * h), B[:, j],
                                       atol=1e-6)


def test_zeros_are_exactly_coulombs_law():
    """Phi_FB = 0 at sticking, sliding and separating pairs (r, u); nonzero when any condition fails."""
    mu = 0.5
    cases_zero = [
        ([1.0, 0.2, -0.1], [0.0, 0.0, 0.0]),          # sticking inside the cone
        ([2.0, -0.6, -0.8], [0.0, 0.3, 0.4]),         # sliding: r_t on the cone edge, opposite u_t
        ([0.0, 0.0, 0.0], [1.0, 0.3, -0.2]),          # separating
    ]
    for r, u in cases_zero:
        assert np.abs(_fb(np.array(r), np.array(u), mu, 1.3)[0]).max() <= 1e-15
    cases_not = [
        ([2.0, 0.6, 0.8], [0.0, 0.3, 0.4]),           # friction along the sliding velocity
        ([1.0, 0.8, 0.0], [0.0, 0.0, 0.0]),           # outside the cone
        ([1.0, 0.0, 0.0], [0.5, 0.0, 0.0]),           # pushing while separating
        ([0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]),          # penetrating
    ]
    for r, u in cases_not:
        assert np.abs(_fb(np.array(r), np.array(u), mu, 1.3)[0]).max() > 1e-3


@pytest.mark.parametrize("dim", [2, 3])
def test_single_contacts_analytic(dim):
    """W = diag(w): separation (q_n >= 0: r = 0), sticking (||q_t|| / w_t <= mu |q_n| / w_n: r = -W^-1 q),
    sliding (r_n = -q_n / w_n, r_t = -mu r_n q_t/||q_t||)."""
    w = np.array([2.0] + [1.0] * (dim - 1))
    mu = 0.4
    qt = np.array([0.1, -0.05][:dim - 1])
    for q, kind in ((np.r_[1.0, qt], "separate"), (np.r_[-1.0, qt], "stick"), (np.r_[-1.0, 10 * qt], "slide")):
        if kind == "separate":
            ref = np.zeros(dim)
        elif kind == "stick":
            ref = -q / w
        else:
            rn = -q[0] / w[0]
            ref = np.r_[rn, -mu * rn * q[1:] / np.linalg.norm(q[1:])]
        p = cl.FrictionContact(np.diag(w), q, [mu], dim=dim)
        assert p.residuals(ref).natural <= 1e-15, kind
        sol = cl.solve(p, "newton-fb")
        assert sol.status in (cl.Status.SOLVED, cl.Status.TRIVIAL), kind
        np.testing.assert_allclose(sol.z, ref, atol=1e-10)


@pytest.mark.parametrize("dim", [2, 3])
def test_agrees_with_newton_ac_and_nsgs_on_random_problems(dim):
    """SPD W and small mu (unique solution): the three methods find the same r."""
    rng = np.random.default_rng(11 + dim)
    for _ in range(8):
        nc = int(rng.integers(2, 10))
        W = _spd(rng, nc * dim)
        q = rng.normal(size=nc * dim)
        q[::dim] -= 0.5
        mu = rng.uniform(0.0, 0.25, nc)
        mu[0] = 0.0          # a frictionless contact among them
        p = cl.FrictionContact(W, q, mu, dim=dim)
        fb = cl.solve(p, "newton-fb")
        assert fb.status == cl.Status.SOLVED and fb.residual <= 1e-8
        for m in ("newton-ac", "nsgs"):
            other = cl.solve(p, m)
            assert other.status == cl.Status.SOLVED, m
            np.testing.assert_allclose(fb.z, other.z, atol=1e-6 * (1 + np.abs(other.z).max()))


def test_scale_invariance():
    """q -> a q, W -> b W: the answer scales as a / b, with the same iterations and status."""
    rng = np.random.default_rng(5)
    nc, dim = 6, 3
    W = _spd(rng, nc * dim, cond=50.0)
    q = rng.normal(size=nc * dim)
    q[::dim] -= 0.3
    mu = rng.uniform(0.2, 0.8, nc)
    base = cl.solve(cl.FrictionContact(W, q, mu), "newton-fb")
    assert base.status == cl.Status.SOLVED
    for a, b in ((1e-5, 1.0), (1e4, 1e-3), (1.0, 1e6)):
        s = cl.solve(cl.FrictionContact(b * W, a * q, mu), "newton-fb")
        assert s.status == cl.Status.SOLVED and s.iterations == base.iterations
        np.testing.assert_allclose(s.z * b / a, base.z, atol=1e-8 * np.abs(base.z).max())


def test_solves_the_fclib_sample_and_stops_honestly():
    p = cl.load(SAMPLES / "fclib_local_problem_test.hdf5")     # FCLIB's 48-contact box stack
    sol = cl.solve(p, "newton-fb")
    assert sol.status == cl.Status.SOLVED and p.residuals(sol.z).natural <= 1e-8
    # hyperstatic, rank-deficient W with two iterations allowed: finite and not claimed
    rng = np.random.default_rng(7)
    G = rng.normal(size=(6, 12))
    hyper = cl.FrictionContact(G.T @ G, -np.tile([1.0, 0.2, 0.1], 4), [0.5] * 4)
    sol = cl.solve(hyper, "newton-fb", max_iter=2)
    assert np.all(np.isfinite(sol.z))
    assert sol.success == (sol.residual <= 1e-8)


def _fb_reference(r, u, mu, rho):
    """Phi_FB in 60-digit decimal arithmetic, from the spectral definition."""
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 60
        r = [Decimal(float(v)) for v in r]
        u = [Decimal(float(v)) for v in u]
        mu, rho = Decimal(float(mu)), Decimal(float(rho))
        nut = sum(v * v for v in u[1:]).sqrt()
        x = [mu * r[0]] + r[1:]
        y = [rho * (u[0] + mu * nut)] + [rho * mu * v for v in u[1:]]
        z0 = sum(v * v for v in x) + sum(v * v for v in y)
        zb = [2 * (x[0] * a + y[0] * b) for a, b in zip(x[1:], y[1:])]
        nz = sum(v * v for v in zb).sqrt()
        s1, s2 = (z0 - nz).sqrt(), (z0 + nz).sqrt()
        w = [(s1 + s2) / 2] + [(s2 - s1) / 2 * v / nz for v in zb]
        return np.array([float(a + b - c) for a, b, c in zip(x, y, w)])


def test_function_is_accurate_near_the_cone_boundary():
    """Degenerate pairs near the solution set, where z = x o x + y o y lies near the boundary of L:
    r on the cone's edge with u ~ 0, and r ~ 0 with u on the dual cone's edge. z0 - |zb| loses half the
    digits there (1.5e-8 errors); from det(z) Phi is accurate to rounding of |x| + |y|."""
    rng = np.random.default_rng(9)
    for k in range(100):
        mu = rng.uniform(0.2, 1.0)
        t = rng.normal(size=2)
        t /= np.linalg.norm(t)
        rn = rng.uniform(0.5, 2.0)
        eps = 10.0 ** rng.uniform(-12, -6)
        if k % 2 == 0:
            r, u = np.r_[rn, mu * rn * t * (1 - eps)], eps * rng.normal(size=3)
        else:
            r, u = eps * rng.normal(size=3), np.r_[eps * rng.normal(), rn * t]
        phi = _fb(r, u, mu, 1.0)[0]
        ref = _fb_reference(r, u, mu, 1.0)
        assert np.abs(phi - ref).max() <= 1e-14 * (1 + rn), (phi, ref)
