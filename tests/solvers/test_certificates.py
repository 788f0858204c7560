"""A status must be true (issue 10): scale-free SOLVED, NO_SOLUTION only with a checked certificate,
methods outside their class honest. References are independent: exhaustive enumeration, HiGHS LPs
through scipy.optimize.linprog, analytic cases."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import contactlab as cl
from contactlab.problems import generators as gen
from contactlab.solvers import registry
from contactlab.solvers.certificates import check_farkas

LCP_METHODS = ["lemke", "dantzig", "enumerate", "pgs", "psor", "pgs-sm", "qp", "interior-point"]
BOX_METHODS = ["lemke", "pgs", "psor", "pgs-sm", "qp", "interior-point"]
SCALES = (1e-10, 1.0, 1e8)


def _robust_slack(M, q) -> float:
    """Independent LP: max t s.t. M z + q >= t max|q|, z >= 0, t <= 1 (t > 0: strictly feasible)."""
    n = q.size
    s = max(np.abs(M).max(), np.abs(q).max())
    c = np.zeros(n + 1)
    c[-1] = -1.0
    A = np.hstack([-M / s, np.full((n, 1), np.abs(q).max() / s)])
    res = linprog(c, A_ub=A, b_ub=q / s, bounds=[(0, None)] * n + [(None, 1.0)], method="highs")
    return float(res.x[-1]) if res.status == 0 else -np.inf


# ------------------------------------------------------------------------------------------------
# scale-free certification: the problem times 1e-10 or 1e8 has the same solution
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", LCP_METHODS)
def test_every_method_is_right_at_every_scale(method):
    rng = np.random.default_rng(5)
    P = gen.random_spd(8, rng)
    ref = cl.solve(P, "enumerate").z       # unique (SPD)
    zs = []
    for c in SCALES:
        sol = cl.solve(cl.LCP(c * P.M, c * P.q), method)
        assert sol.status is cl.Status.SOLVED, (c, sol, sol.info)
        np.testing.assert_allclose(sol.z, ref, atol=1e-7 * np.abs(ref).max(), err_msg=f"scale {c}")
        zs.append(sol.z)
    np.testing.assert_allclose(zs[0], zs[1], atol=1e-9 * np.abs(ref).max())
    np.testing.assert_allclose(zs[2], zs[1], atol=1e-9 * np.abs(ref).max())


@pytest.mark.parametrize("method", BOX_METHODS)
def test_boxed_methods_are_right_at_every_scale(method):
    rng = np.random.default_rng(6)
    M = gen.spd_matrix(7, rng)
    q = rng.standard_normal(7)
    lo, hi = np.full(7, -0.3), np.full(7, 0.5)
    ref = cl.solve(cl.BoxedLCP(M, q, lo, hi), "enumerate")   # through the static-bound reduction
    assert ref.success
    for c in SCALES:
        sol = cl.solve(cl.BoxedLCP(c * M, c * q, lo, hi), method)
        assert sol.status is cl.Status.SOLVED, (c, sol, sol.info)
        np.testing.assert_allclose(sol.z, ref.z, atol=1e-7, err_msg=f"scale {c}")


@pytest.mark.parametrize("method", ["ppm", "dantzig", "lemke"])
def test_factored_is_right_at_every_scale(method):
    F = gen.box_stack_factored(2, np.random.default_rng(3))
    ref = cl.solve(F.to_lcp(), "enumerate" if F.n <= 20 else "lemke")
    for c in SCALES:   # Q = N (M/c)^-1 N' = c Q, q = N (c f*) = c q
        sol = cl.solve(cl.FactoredLCP(F.N, F.M / c, f_star=c * F.f_star), method)
        assert sol.status is cl.Status.SOLVED, (c, sol)
        np.testing.assert_allclose(sol.w / c, ref.w, atol=1e-7 * np.abs(F.q).max())


def test_zero_is_not_accepted_on_a_tiny_problem():
    """Old defect: certification relative to max(1, ||q||) accepted z = 0 for q ~ -1e-10."""
    P = cl.LCP(1e-10 * np.array([[2.0, 1.0], [1.0, 2.0]]), -1e-10 * np.ones(2))
    sol = cl.solve(P, "pgs-sm")
    np.testing.assert_allclose(sol.z, [1 / 3, 1 / 3], rtol=1e-7)
    # a claimed z = 0 is refused by solve() whatever its absolute residual (1e-10)
    assert P.relative_residuals(np.zeros(2)).natural == 1.0


# ------------------------------------------------------------------------------------------------
# no false proofs
# ------------------------------------------------------------------------------------------------
def _contact_lcp(rng, n, m, big, offset):
    """Rank-deficient PSD contact LCP with integer normals; forces up to 1e6 give large |z|."""
    N = rng.integers(-2, 3, size=(n, m)).astype(float)
    q = N @ (rng.standard_normal(m) * big)
    if offset:
        q = q + rng.standard_normal(n) * big * 1e-3
    return cl.LCP(N @ N.T, q)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), big=st.sampled_from([1.0, 1e3, 1e6]), offset=st.booleans())
def test_psd_contact_lcps_are_solved_or_proven(seed, big, offset):
    """Feasible PSD LCPs are solvable: dantzig, lemke, auto and enumerate must solve every strictly
    feasible one (independent LP); any NO_SOLUTION must carry a Farkas vector that checks here."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    P = _contact_lcp(rng, n, int(rng.integers(1, n)), big, offset)
    slack = _robust_slack(P.M, P.q)
    for method in ("dantzig", "lemke", "auto", "enumerate"):
        sol = cl.solve(P, method)
        if slack > 1e-6:
            assert sol.success, (method, sol, sol.info)
        if sol.status is cl.Status.NO_SOLUTION:
            assert slack < 1e-6
            ok, detail = check_farkas(P.M, P.q, sol.info["certificate"]["y"])
            assert ok, detail


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_outside_p_and_psd_no_exception_no_false_proof(seed):
    """Integer matrices outside P/PSD: dantzig never raises; a NO_SOLUTION has a Farkas vector; a
    SOLVED answer agrees with the exhaustive reference's existence claim."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    M = rng.integers(-3, 4, size=(n, n)).astype(float)
    q = rng.integers(-3, 4, size=n).astype(float)
    P = cl.LCP(M, q)
    ref = cl.solve(P, "enumerate")
    assert ref.status in (cl.Status.SOLVED, cl.Status.TRIVIAL, cl.Status.NO_SOLUTION), ref
    for method in ("dantzig", "lemke"):
        sol = cl.solve(P, method)
        if sol.success:
            assert ref.success
        if sol.status is cl.Status.NO_SOLUTION:
            assert not ref.success
            y = sol.info["certificate"]["y"]
            assert y.min() >= 0 and (M.T @ y).max() <= 1e-9 * np.abs(y).sum() * np.abs(M).max() and q @ y < 0


def test_enumerate_finds_solutions_on_singular_supports():
    sol = cl.solve(cl.LCP([[0.0, 1.0], [0.0, 0.0]], [-1.0, 0.0]), "enumerate")
    assert sol.status is cl.Status.SOLVED
    np.testing.assert_allclose(sol.z, [0.0, 1.0])


def test_enumerate_proves_feasible_but_unsolvable_exhaustively():
    """w1 = 2 z1 + z2 + 3, w2 = z1 - z2 - 3: z = (3, 0) is feasible, but every support fails
    (by hand: {} w2 = -3; {1} z1 = -3/2; {2} z2 = -3; {1,2} z2 = -3), so no Farkas vector exists."""
    M, q = np.array([[2.0, 1.0], [1.0, -1.0]]), np.array([3.0, -3.0])
    assert _robust_slack(M, q) > 0
    sol = cl.solve(cl.LCP(M, q), "enumerate")
    assert sol.status is cl.Status.NO_SOLUTION and sol.info["certificate"]["kind"] == "exhaustive"
    # dantzig / lemke may not prove it (no short certificate exists)
    for method in ("dantzig", "lemke"):
        assert cl.solve(cl.LCP(M, q), method).status is not cl.Status.NO_SOLUTION


@pytest.fixture
def liar():
    """A method that claims NO_SOLUTION with whatever certificate the test sets."""
    box = {}

    @registry.register("test-liar", problems=(cl.LCP,))
    def _liar(problem, opts, warm_start=None):
        return cl.Solution(z=np.zeros(problem.n), w=np.empty(0), status=cl.Status.NO_SOLUTION,
                           info=dict(box))
    yield box
    del registry._REGISTRY["test-liar"]


def test_claims_without_a_valid_certificate_are_refused(liar):
    P = cl.LCP(np.eye(2), [-1.0, 1.0])          # solvable: z = (1, 0)
    assert cl.solve(P, "test-liar").status is cl.Status.NO_SOLUTION_FOUND
    liar["certificate"] = {"kind": "farkas", "y": np.array([1.0, 0.0])}  # M'y = (1, 0) > 0
    sol = cl.solve(P, "test-liar")
    assert sol.status is cl.Status.NO_SOLUTION_FOUND and "rejected" in sol.info["certificate_check"]
    liar["certificate"] = {"kind": "exhaustive", "supports": 4}         # only enumerate may say so
    assert cl.solve(P, "test-liar").status is cl.Status.NO_SOLUTION_FOUND
    Q = cl.LCP(-np.eye(2), [-1.0, -1.0])         # infeasible: a true certificate is accepted
    liar["certificate"] = {"kind": "farkas", "y": np.array([0.0, 2.0])}
    assert cl.solve(Q, "test-liar").status is cl.Status.NO_SOLUTION


# ------------------------------------------------------------------------------------------------
# ppm outside Theorem 1, CFM without forming the matrix
# ------------------------------------------------------------------------------------------------
def test_ppm_offset_problems_outside_theorem_1_are_decided():
    """q = N v + offset with more contacts than coordinates (rank-deficient N, outside Theorem 1):
    routed to dantzig up front; every problem is either solved (and w equals lemke's on the formed
    matrix) or proven infeasible, exactly as an independent LP decides."""
    decided = {True: 0, False: 0}
    for seed in range(30):
        rng = np.random.default_rng(seed)
        N = rng.standard_normal((8, 3))
        offset = np.abs(rng.standard_normal(8)) * (1.0 if seed % 2 else -0.2)
        p = cl.FactoredLCP(N, np.eye(3), rng.standard_normal(3), offset=offset)
        L = p.to_lcp()
        feasible = _robust_slack(L.M, L.q) > 1e-9
        sol = cl.solve(p, "ppm")
        assert p.is_trivial() or sol.info["routed"]["to"] == "dantzig"
        if feasible:
            ref = cl.solve(L, "lemke")
            assert sol.success and ref.success, (seed, sol)
            np.testing.assert_allclose(sol.w, ref.w, atol=1e-8 * np.abs(p.q).max())
        else:
            assert sol.status is cl.Status.NO_SOLUTION, (seed, sol)
            assert check_farkas(L.M, L.q, sol.info["certificate"]["y"])[0]
        decided[feasible] += 1
    assert decided[True] >= 5 and decided[False] >= 5


def test_ppm_cfm_keeps_the_problem_factored(monkeypatch):
    rng = np.random.default_rng(2)
    N, Mm, f = rng.standard_normal((30, 6)), gen.spd_matrix(6, rng), rng.standard_normal(6)
    p = cl.FactoredLCP(N, Mm, f, offset=rng.standard_normal(30), cfm=1e-3)
    ref = cl.solve(p.to_lcp(), "lemke")            # Q + cfm I formed explicitly
    monkeypatch.setattr(type(p), "lcp_reduction", lambda self: pytest.fail("formed N M^-1 N'"))
    sol = cl.solve(p, "ppm")
    assert sol.success and "routed" not in sol.info and p.m == 6
    np.testing.assert_allclose(sol.z, ref.z, atol=1e-9 * np.abs(ref.z).max())


# ------------------------------------------------------------------------------------------------
# one vocabulary, statuses
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method,old", [("lemke", "max_pivots"), ("dantzig", "max_pivots"), ("pgs", "max_sweeps"),
                                        ("pgs-sm", "max_outer"), ("interior-point", "max_iter"), ("qp", "max_iter"),
                                        ("ppm", None)])
def test_common_options(method, old):
    rng = np.random.default_rng(1)
    P = gen.box_stack_factored(3, rng) if method == "ppm" else gen.random_spd(40, rng, cond=1e6)
    a = cl.solve(P, method, tol=1e-7, max_iterations=1)
    # one iteration is too few: the cap is reached (qp's backend reports it as 'not found')
    assert a.status is (cl.Status.NO_SOLUTION_FOUND if method == "qp" else cl.Status.MAX_ITERATIONS), a
    if old:
        b = cl.solve(P, method, **{old: 1})
        assert b.status is a.status and b.iterations == a.iterations
        with pytest.raises(cl.ParamError, match="once"):
            cl.solve(P, method, **{old: 1, "max_iterations": 1})
    for bad in ({"tol": -1.0}, {"tol": 0.0}, {"max_iterations": 0}):
        with pytest.raises(cl.ParamError):
            cl.solve(P, method, **bad)


def test_status_equals_its_name():
    assert cl.Status.SOLVED == "SOLVED" and cl.Status.NO_SOLUTION != "SOLVED"
    assert {cl.Status.SOLVED: 1}[cl.Status.SOLVED] == 1


def test_lemke_certification_handed_to_solve_is_the_problems_own():
    """lemke's compiled call certifies with LCP.certify_numbers' kernel and hands w and the six
    numbers to solve() (registry.certified_by_kernel): they equal a fresh LCP.certify, bit for bit."""
    from contactlab.problems.residual import relative_error
    for P in (gen.random_spd(12, np.random.default_rng(0)), gen.friction_pyramid_lcp(3, np.random.default_rng(1)),
              gen.box_stack_factored(4, np.random.default_rng(2)).to_lcp()):
        sol = cl.solve(P, "lemke")
        assert sol.success
        w, r, rel = P.certify(np.ascontiguousarray(sol.z))
        assert np.array_equal(sol.w, w)
        assert (sol.residual, sol.complementarity, sol.infeasibility) == (r.natural, r.complementarity, r.infeasibility)
        assert sol.relative_residual == relative_error(rel)


def test_box_qp_certification_handed_to_solve_is_the_problems_own(monkeypatch):
    """box-qp's dense compiled call certifies with BoxedLCP.certify_numbers' kernel and hands w and
    the six numbers to solve(): they equal a fresh BoxedLCP.certify bit for bit, coupled or static
    bounds, warm or cold, and solve() takes them (it does not certify a second time)."""
    from contactlab.problems.residual import relative_error
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    problems = []
    for coupling in ("current", "previous"):
        sim = Simulator(make_scene("pile", count=4), "box-friction", "box-qp", model_options={"coupling": coupling})
        for _ in range(40):
            sim.step()
        problems.append((sim.last_problem, sim.last_solution.z))
    for P, z in problems:
        assert isinstance(P.M, np.ndarray) and P.n > 0
        for warm in (None, z):
            calls = []
            own = type(P).certify_numbers
            monkeypatch.setattr(type(P), "certify_numbers", lambda self, x: calls.append(1) or own(self, x))
            sol = cl.solve(P, "box-qp", warm_start=warm)
            monkeypatch.undo()
            assert sol.success and not calls and "_certified_by_kernel" not in sol.__dict__
            w, r, rel = P.certify(np.ascontiguousarray(sol.z))
            assert np.array_equal(sol.w, w)
            assert (sol.residual, sol.complementarity, sol.infeasibility) == (r.natural, r.complementarity, r.infeasibility)
            assert sol.relative_residual == relative_error(rel)


@pytest.fixture
def hander():
    """A method that hands solve() a (false) certification, then maybe replaces z."""
    box = {}

    @registry.register("test-hander", problems=(cl.LCP,))
    def _hander(problem, opts, warm_start=None):
        z = np.zeros(problem.n)
        sol = cl.Solution(z=z, w=np.empty(0), status=cl.Status.SOLVED)
        registry.certified_by_kernel(sol, box.get("problem", problem), np.zeros(problem.n), (0.0,) * 6)
        if box.get("other_z"):
            sol.z = np.zeros(problem.n)
        return sol
    yield box
    del registry._REGISTRY["test-hander"]


def test_solve_takes_a_handed_certification_only_for_its_problem_and_z(hander):
    """solve() reads a handed certification only when the problem and the z array are the ones it
    dispatched and got back; otherwise it certifies itself (z = 0 does not solve this LCP)."""
    P = cl.LCP(np.eye(2), [-1.0, 1.0])
    # taken as handed: only a compiled call that ran the certification kernel itself may hand one
    assert cl.solve(P, "test-hander").relative_residual == 0.0
    hander["other_z"] = True
    assert cl.solve(P, "test-hander").status is cl.Status.NUMERICAL_FAILURE
    hander["other_z"] = False
    hander["problem"] = cl.LCP(np.eye(2), [-1.0, 1.0])
    assert cl.solve(P, "test-hander").status is cl.Status.NUMERICAL_FAILURE
    assert "_certified_by_kernel" not in cl.solve(P, "lemke").__dict__
