"""Problem types: validation, the one residual definition, conversions (boxed -> LCP, mixed -> LCP)."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import contactlab as cl
from contactlab.errors import ProblemError
from contactlab.problems import BoxedLCP
from contactlab.problems import box_residuals, lcp_residuals
from contactlab.problems import generators as gen

from tests.problems import boxed_coupled, boxed_static


@pytest.mark.parametrize("build,match", [
    (lambda: cl.LCP(np.eye(2), [1.0]), "q has length 1"),
    (lambda: cl.LCP(np.ones((2, 3)), [1.0, 2.0]), "M must be square"),
    (lambda: cl.LCP([[np.nan, 0], [0, 1]], [1.0, 2.0]), "M contains NaN"),
    (lambda: cl.LCP(np.eye(2), [np.inf, 1.0]), "q contains inf"),
    (lambda: cl.BoxedLCP(np.eye(2), [0, 0], [1, 0], [0, 1]), "lo > hi at row 0"),
    (lambda: cl.BoxedLCP(np.eye(2), [0, 0], [0, 0], [1, 1], findex=[-1, 0], mu=[0, -1]), "mu must be >= 0"),
    (lambda: cl.BoxedLCP(np.eye(2), [0, 0], [0, 0], [1, 1], findex=[-1, 5], mu=[0, 1]), "findex out of range"),
    (lambda: cl.BoxedLCP(np.eye(2), [0, 0], [0, 0], [1, 1], findex=[-1, 0]), "without mu"),
    (lambda: cl.BoxedLCP(np.eye(2), [0, 0], [0, 0], [1, 1], findex=[0, -1], mu=[1, 0]), "couples a row to itself"),
    (lambda: cl.FactoredLCP(np.ones((2, 2)), -np.eye(2), [1, 1]), "positive definite"),
    (lambda: cl.FactoredLCP(np.ones((2, 2)), np.eye(2)), "exactly one of f"),
    (lambda: cl.MixedLCP(np.eye(2), np.ones((2, 3)), np.ones((2, 2)), np.eye(2), [0, 0], [0, 0]), "C has shape"),
])
def test_bad_input_names_the_argument(build, match):
    with pytest.raises(cl.ProblemError, match=match):
        build()


def test_errors_are_value_errors():
    assert issubclass(cl.ProblemError, ValueError) and issubclass(cl.ParamError, ValueError)
    with pytest.raises(cl.ProblemError, match="contactlab problem"):
        cl.solve((np.eye(2), np.ones(2)))


def test_lcp_residual_definition():
    r = lcp_residuals(np.array([1.0, 0.0, 2.0]), np.array([0.0, 3.0, -0.5]))
    assert r.natural == 0.5 and r.infeasibility == 0.5 and r.complementarity == 1.0
    assert lcp_residuals(np.array([np.nan]), np.array([0.0])).natural == np.inf


def test_box_residual_definition():
    lo, hi = np.array([0.0, -1.0, -np.inf]), np.array([np.inf, 1.0, np.inf])
    # z at lo with w > 0, z at hi with w < 0, free with w = 0: a solution
    assert box_residuals(np.array([0.0, 1.0, 3.0]), np.array([2.0, -1.0, 0.0]), lo, hi).natural == 0.0
    # interior z with nonzero w
    r = box_residuals(np.array([0.5, 0.0, 0.0]), np.array([0.2, 0.0, 0.0]), lo, hi)
    assert r.natural == pytest.approx(0.2) and r.complementarity == pytest.approx(0.1)


def test_coupled_bounds_follow_z():
    p = boxed_coupled(2, np.random.default_rng(0))
    z = np.arange(6, dtype=float)
    lo, hi = p.bounds(z)
    assert hi[1] == pytest.approx(p.mu[1] * z[0]) and lo[4] == pytest.approx(-p.mu[4] * z[3])
    with pytest.raises(cl.ProblemError, match="no static LCP form"):
        p.to_lcp()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_boxed_to_lcp_solution_solves_boxed(seed):
    """The static-bound reduction preserves solutions: the lifted LCP answer solves the boxed LCP."""
    p = boxed_static(int(np.random.default_rng(seed).integers(1, 6)), np.random.default_rng(seed))
    sol = cl.solve(p, method="lemke")
    ref = cl.solve(p, method="interior-point")   # on the boxed form itself, no reduction (SPD: z unique)
    assert sol.success and ref.success
    np.testing.assert_allclose(sol.z, ref.z, atol=1e-8 * max(1.0, np.abs(ref.z).max()))
    if sol.status is not cl.Status.TRIVIAL:
        assert sol.info["reduced_n"] >= p.n


def test_boxed_reduction_keeps_symmetry_for_one_sided_rows():
    rng = np.random.default_rng(0)
    M = gen.spd_matrix(4, rng)
    p = cl.BoxedLCP(M, rng.standard_normal(4), [0, -np.inf, 0, -np.inf], [np.inf, 1, np.inf, np.inf])
    L = p.to_lcp()
    np.testing.assert_allclose(L.M, L.M.T)
    assert np.all(np.linalg.eigvalsh(L.M) >= -1e-12)


def _kkt_with_redundant_rows(rng, m=6, j=3, n=4):
    """drumwright eq. (29)-(40) shape: A = [[M, -J'], [J, 0]] with a duplicated joint row."""
    Mm = gen.spd_matrix(m, rng)
    J = rng.standard_normal((j, m))
    J = np.vstack([J, J[0] + J[1]])                      # redundant bilateral row
    N = rng.standard_normal((n, m))
    p = m + J.shape[0]
    A = np.block([[Mm, -J.T], [J, np.zeros((J.shape[0], J.shape[0]))]])
    C = np.vstack([-N.T, np.zeros((J.shape[0], n))])
    D = -C.T
    B = np.zeros((n, n))
    fstar = rng.standard_normal(m)
    g = np.concatenate([-fstar, np.zeros(J.shape[0])])
    return cl.MixedLCP(A, C, D, B, g, np.zeros(n)), Mm, J, N, fstar, p


def test_mixed_lcp_drops_redundant_rows_and_recovers_x():
    rng = np.random.default_rng(4)
    mixed, Mm, J, N, fstar, p = _kkt_with_redundant_rows(rng)
    assert mixed.dropped_rows.size == 1
    sol = cl.solve(mixed, method="lemke")
    assert sol.success and sol.residual <= 1e-9 * mixed.scale()
    # x = (v, f_j): the equalities hold with the dropped row too
    assert mixed.equality_residual(sol.x, sol.z) <= 1e-9
    v = sol.x[:Mm.shape[0]]
    np.testing.assert_allclose(J @ v, 0.0, atol=1e-9)
    # reference: the same contact problem with the redundant row removed by hand
    Jr = J[:3]
    K = np.block([[Mm, -Jr.T], [Jr, np.zeros((3, 3))]])
    ref = cl.MixedLCP(K, np.vstack([-N.T, np.zeros((3, N.shape[0]))]), np.hstack([N, np.zeros((N.shape[0], 3))]),
                      np.zeros((N.shape[0], N.shape[0])), np.concatenate([-fstar, np.zeros(3)]), np.zeros(N.shape[0]))
    np.testing.assert_allclose(cl.solve(ref, method="lemke").w, sol.w, atol=1e-8)


def test_mixed_reduction_formula():
    """F = B - D A^-1 C, e = h - D A^-1 g (drumwright eq. 9-10) on a nonsingular A."""
    rng = np.random.default_rng(1)
    A = gen.spd_matrix(3, rng)
    C, D, B = rng.standard_normal((3, 2)), rng.standard_normal((2, 3)), gen.spd_matrix(2, rng)
    g, h = rng.standard_normal(3), rng.standard_normal(2)
    L = cl.MixedLCP(A, C, D, B, g, h).to_lcp()
    np.testing.assert_allclose(L.M, B - D @ np.linalg.solve(A, C))
    np.testing.assert_allclose(L.q, h - D @ np.linalg.solve(A, g))


def test_factored_lcp_matches_explicit():
    rng = np.random.default_rng(2)
    N, Mm, f = rng.standard_normal((7, 4)), gen.spd_matrix(4, rng), rng.standard_normal(4)
    p = cl.FactoredLCP(N, Mm, f)
    L = p.to_lcp()
    np.testing.assert_allclose(L.M, N @ np.linalg.solve(Mm, N.T), atol=1e-12)
    np.testing.assert_allclose(L.q, N @ np.linalg.solve(Mm, f), atol=1e-12)
    z = rng.uniform(size=7)
    np.testing.assert_allclose(p.w(z), L.M @ z + L.q, atol=1e-12)
    ps = cl.FactoredLCP(sp.csr_matrix(N), sp.csr_matrix(Mm), f_star=np.linalg.solve(Mm, f))
    np.testing.assert_allclose(ps.q, p.q, atol=1e-12)
    assert cl.solve(ps, method="ppm").success


def test_factored_offset_and_npz_roundtrip(tmp_path):
    rng = np.random.default_rng(9)
    # full row rank N: with an offset outside range(N), drumwright's Theorem 1 needs independent rows
    N, Mm, f, off = rng.standard_normal((4, 6)), gen.spd_matrix(6, rng), rng.standard_normal(6), rng.standard_normal(4)
    p = cl.FactoredLCP(N, Mm, f, offset=off)
    L = p.to_lcp()
    np.testing.assert_allclose(L.q, N @ np.linalg.solve(Mm, f) + off, atol=1e-12)
    a, b = cl.solve(p, method="ppm"), cl.solve(L, method="lemke")
    assert a.success and b.success
    np.testing.assert_allclose(a.w, b.w, atol=1e-9)
    cl.save(p, tmp_path / "f.npz")
    np.testing.assert_allclose(cl.load(tmp_path / "f.npz").q, p.q)


def test_boxed_lcp_bounds_default_from_findex_and_mu():
    """A contact problem given by findex/mu needs no lo/hi: normal rows [0, inf), friction rows
    |z_t| <= mu z_n. One contact, M = I, q = (-1, -2): z_n = 1, z_t clamps at mu z_n = 0.5."""
    P = cl.BoxedLCP(np.eye(2), [-1.0, -2.0], findex=[-1, 0], mu=[0.0, 0.5])
    sol = cl.solve(P, "pgs")
    assert sol.success
    np.testing.assert_allclose(sol.z, [1.0, 0.5], atol=1e-9)


@pytest.mark.parametrize("change, message", [
    (lambda a: a["findex"].__setitem__(3, 9), "findex out of range"),
    (lambda a: a["findex"].__setitem__(3, 3), "couples a row to itself"),
    (lambda a: a["mu"].__setitem__(4, -0.1), "mu must be >= 0"),
    (lambda a: a["findex"].__setitem__(0, 1), "itself coupled"),
    (lambda a: a["lo"].__setitem__(1, -1.0), "lo >= 0"),
    (lambda a: a["lo"].__setitem__(0, np.inf), "lo must not be \\+inf"),
    (lambda a: a["hi"].__setitem__(0, -np.inf), "hi must not be -inf"),
    (lambda a: (a["lo"].__setitem__(1, 2.0), a["hi"].__setitem__(1, 1.0)), "lo > hi at row 1"),
])
def test_boxed_lcp_structure_errors_name_the_rule(change, message):
    """The compiled structure check (kernels/validation.py) raises each rule's own ProblemError; the
    unchanged problem (2 normals, 2 friction rows each) is accepted."""
    n = 6
    args = {"lo": np.zeros(n), "hi": np.full(n, np.inf), "findex": np.array([-1, -1, 0, 0, 1, 1]),
            "mu": np.full(n, 0.5)}
    BoxedLCP(np.eye(n), np.ones(n), **args)
    change(args)
    with pytest.raises(ProblemError, match=message):
        BoxedLCP(np.eye(n), np.ones(n), **args)


@pytest.mark.parametrize("sparse", [False, True])
def test_boxed_lcp_certify_equals_the_generic_residuals(sparse):
    """BoxedLCP.certify's one compiled pass (kernels/residual.py boxed_certify_dense, boxed_certify_csr
    for a sparse M) gives the w and both residual triples of the generic path (bounds at z,
    box_residuals, box_relative with row_terms), on random coupled and static problems, at solutions
    and at random points."""
    from contactlab.problems.base import Problem
    rng = np.random.default_rng(5)
    for trial in range(40):
        nc = int(rng.integers(1, 6))
        n = 3 * nc
        A = rng.normal(size=(n, n))
        M = A @ A.T + 1e-3 * np.eye(n)
        if sparse:      # zero entries off a band, kept symmetric and definite
            M = sp.csr_matrix(np.where(np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 2, M, 0.0)
                              + n * np.eye(n))
        q = rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3)
        fi = np.r_[np.full(nc, -1), np.tile(np.arange(nc), 2)]
        p = BoxedLCP(M, q, findex=fi, mu=np.r_[np.zeros(nc), np.full(2 * nc, rng.uniform(0, 1))]) if trial % 2 else \
            BoxedLCP(M, q, -rng.uniform(0, 1, n), rng.uniform(0, 1, n))
        z = cl.solve(p, "pgs", max_iterations=200).z if trial % 4 < 2 else rng.normal(size=n)
        z = np.ascontiguousarray(z, dtype=np.float64)
        w, r_abs, r_rel = p.certify(z)
        w0, a0, b0 = Problem.certify(p, z)
        assert np.allclose(w, w0, rtol=1e-13, atol=1e-13 * np.abs(q).max())
        # w is summed in another order: the residuals agree to its rounding (absolute: in units of the
        # data's size; relative: scale-free, 1e-13; complementarity carries a further factor |z|)
        size = np.abs(q).max() + abs(M).max() * np.abs(z).max()
        for x, y, unit in ((r_abs, a0, size), (r_rel, b0, 1.0)):
            for f in ("natural", "complementarity", "infeasibility"):
                u, v = getattr(x, f), getattr(y, f)
                scale = unit * (1.0 + np.abs(z).max() if f == "complementarity" and unit > 1 else 1.0)
                assert u == v or abs(u - v) <= 1e-10 * max(abs(u), abs(v)) + 1e-13 * scale, (f, u, v)


@pytest.mark.parametrize("sparse", [False, True])
def test_boxed_is_trivial_is_the_residual_definition(sparse):
    """BoxedLCP.is_trivial (w = q at z = 0, no product) equals the base definition (residuals at
    z = 0 from w(0)), on static and coupled bounds, with q of both signs and zero rows."""
    from contactlab.problems.base import Problem
    rng = np.random.default_rng(8)
    got = []
    for trial in range(60):
        nc = int(rng.integers(1, 4))
        n = 3 * nc
        M = np.eye(n) * 2.0 + 0.1
        M = sp.csr_matrix(M) if sparse else M
        q = rng.normal(size=n) * rng.integers(0, 2, size=n)         # some rows exactly 0
        if trial % 3 == 0:
            q = np.abs(q)
        if trial % 2:
            p = BoxedLCP(M, q, findex=np.r_[np.full(nc, -1), np.tile(np.arange(nc), 2)],
                         mu=np.r_[np.zeros(nc), np.full(2 * nc, 0.5)])
        else:
            lo = np.where(rng.random(n) < 0.5, 0.0, -rng.uniform(0, 1, n))
            p = BoxedLCP(M, q, lo, np.where(rng.random(n) < 0.3, np.inf, rng.uniform(0, 1, n)))
        got.append(p.is_trivial())
        assert got[-1] == Problem.is_trivial(p)
    assert any(got) and not all(got)


def test_row_terms_of_a_csr_matrix_equal_the_dense_formula():
    """row_terms' compiled CSR pass (kernels/residual.py csr_abs_terms) = |q| + |M| |z|."""
    from contactlab.problems.residual import row_terms
    rng = np.random.default_rng(12)
    M = sp.random(30, 30, density=0.2, format="csr", random_state=4)
    M.data = rng.normal(size=M.nnz)
    q, z = rng.normal(size=30), rng.normal(size=30)
    z[::4] = 0.0
    ref = np.abs(q) + np.abs(M.toarray()) @ np.abs(z)
    assert np.allclose(row_terms(M, z, q), ref, rtol=1e-14, atol=0)
    assert np.allclose(row_terms(M.toarray(), z, q), ref, rtol=1e-14, atol=0)
