"""Lemke, Cottle-Dantzig, PPM and enumerate: textbook cases, bounds from the papers, statuses."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import contactlab as cl
from contactlab.problems import generators as gen

from tests.problems import TEXTBOOK, cottle_textbook, infeasible, robot_steps


@pytest.mark.parametrize("name", sorted(TEXTBOOK))
@pytest.mark.parametrize("method", ["lemke", "dantzig", "enumerate"])
def test_textbook_cases(name, method):
    problem = TEXTBOOK[name]()
    sol = cl.solve(problem, method=method, **({"max_pivots": 200} if method != "enumerate" else {}))
    # every textbook case has a unique solution (P-matrices): compare with an independent method
    ref = cl.solve(problem, method="lemke" if method == "enumerate" else "enumerate")
    assert sol.success and ref.success
    np.testing.assert_allclose(sol.z, ref.z, atol=1e-12 * max(1.0, np.abs(ref.z).max()))


def test_known_solution():
    problem, z = cottle_textbook()
    for method in ("lemke", "dantzig", "enumerate"):
        np.testing.assert_allclose(cl.solve(problem, method=method).z, z, atol=1e-14)


@pytest.mark.parametrize("n", [8, 10, 12, 14, 16])
def test_murty_exponential_pivots(n):
    """Murty (1978): Lemke with covering vector e visits 2^n bases (2^n - 1 pivots after z0 enters)."""
    problem = gen.murty(n)
    sol = cl.solve(problem, method="lemke", max_pivots=2**n + 10)
    assert sol.success
    assert sol.pivots == 2**n
    expected = np.zeros(n)
    expected[-1] = 2.0**n
    np.testing.assert_allclose(sol.z, expected, atol=1e-9 * 2**n)


def test_murty_hits_pivot_limit_honestly():
    sol = cl.solve(gen.murty(12), method="lemke", max_pivots=100, regularize=False)
    assert sol.status is cl.Status.MAX_ITERATIONS and not sol.success


def test_kostreva_degenerate_terminates():
    """Every first ratio ties; the lexicographic rule must still terminate at z = e/3, while the
    rule without lexicography (first tied row) cycles until the pivot limit (Kostreva 1979)."""
    for basis in ("reduced", "tableau"):
        sol = cl.solve(gen.kostreva_cycling(), method="lemke", max_pivots=50, regularize=False, basis=basis)
        assert sol.success and sol.pivots == 4
        np.testing.assert_allclose(sol.z, np.ones(3) / 3, atol=1e-14)
    cyc = cl.solve(gen.kostreva_cycling(), method="lemke", max_pivots=200, regularize=False,
                   basis="tableau", ties="first-row")
    assert cyc.status is cl.Status.MAX_ITERATIONS and cyc.pivots == 200
    with pytest.raises(cl.ParamError, match="tableau"):
        cl.solve(gen.kostreva_cycling(), method="lemke", ties="first-row")


def test_infeasible_is_proven_with_a_checked_certificate():
    """-I, -1: w = -z - 1 < 0; every method proves it with a Farkas vector that solve() checked."""
    problem = infeasible()
    for method in ("lemke", "dantzig", "enumerate"):
        sol = cl.solve(problem, method=method)
        assert sol.status is cl.Status.NO_SOLUTION, method
        y = sol.info["certificate"]["y"]
        assert np.all(y >= 0) and np.all(problem.M.T @ y <= 0) and problem.q @ y < 0
        assert sol.info["certificate_check"] == "Farkas vector checked"


def test_lemke_ray_is_a_ray():
    """On the secondary ray (w, z, z0) + t * ray stays a solution of w - Mz - d z0 = q."""
    problem = infeasible()
    sol = cl.solve(problem, method="lemke", regularize=False)
    ray = sol.info["ray"]
    resid = ray["w"] - problem.M @ ray["z"] - np.ones(2) * ray["z0"]
    np.testing.assert_allclose(resid, 0.0, atol=1e-12)
    assert np.all(ray["z"] >= -1e-12) and np.all(ray["w"] >= -1e-12)


def test_skew_symmetric_psd_problem():
    """Skew-symmetric M (PSD, copositive-plus): Lemke's guarantee covers it."""
    M = np.array([[0.0, 1.0], [-1.0, 0.0]])  # skew: PSD, copositive
    q = np.array([-1.0, 1.0])
    sol = cl.solve(cl.LCP(M, q), method="lemke")
    # by hand: w = (z2 - 1, 1 - z1) >= 0 and z'w = 0 force z = (1, 1), the only solution
    assert sol.success
    np.testing.assert_allclose(sol.z, [1.0, 1.0], atol=1e-9)


def test_trivial_and_solution_fields():
    sol = cl.solve(cl.LCP(np.eye(2), [1.0, 2.0]), method="lemke")
    assert sol.status is cl.Status.TRIVIAL and sol.success and sol.pivots == 0
    np.testing.assert_array_equal(sol.z, 0.0)
    np.testing.assert_array_equal(sol.w, [1.0, 2.0])


def test_dantzig_warm_start_major_cycle_bound():
    """loomis-balkcom Theorem 1: from a k-index sub-problem solution, at most n - k major cycles."""
    rng = np.random.default_rng(7)
    for trial in range(20):
        problem = gen.random_spd(30, rng)
        n = problem.n
        k = int(rng.integers(1, n))
        idx = np.sort(rng.choice(n, size=k, replace=False))
        sub = cl.solve(cl.LCP(problem.M[np.ix_(idx, idx)], problem.q[idx]), method="dantzig")
        cold = cl.solve(problem, method="dantzig")
        warm = cl.solve(problem, method="dantzig", warm_start=(idx, sub.z))
        assert warm.success and cold.success
        assert warm.iterations <= n - k
        assert warm.info["major_cycle_bound"] == n - k
        np.testing.assert_allclose(warm.z, cold.z, atol=1e-9)


def test_dantzig_warm_start_from_previous_solution_reuses_work():
    rng = np.random.default_rng(3)
    problem = gen.random_spd(60, rng)
    cold = cl.solve(problem, method="dantzig")
    perturbed = cl.LCP(problem.M, problem.q + 1e-3 * rng.standard_normal(problem.n))
    warm = cl.solve(perturbed, method="dantzig", warm_start=cold)
    again = cl.solve(perturbed, method="dantzig")
    assert warm.success and warm.pivots < again.pivots
    np.testing.assert_allclose(warm.z, again.z, atol=1e-9)


def test_warm_start_pair_must_solve_subproblem():
    problem = gen.random_spd(5, np.random.default_rng(0))
    with pytest.raises(cl.ParamError, match="sub-problem"):
        cl.solve(problem, method="dantzig", warm_start=(np.array([0, 1]), np.array([5.0, 5.0])))
    with pytest.raises(cl.ParamError, match="warm_start"):
        cl.solve(problem, method="lemke", warm_start=np.zeros(5))


@pytest.mark.parametrize("seed", range(8))
def test_ppm_agrees_with_lemke_on_the_formed_matrix(seed):
    """w of a symmetric PSD LCP is unique: ppm on the factored form equals lemke on N M^-1 N'."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(3, 12)), int(rng.integers(10, 60))
    N = rng.standard_normal((n, m))
    Mm = gen.spd_matrix(m, rng)
    problem = cl.FactoredLCP(N, Mm, rng.standard_normal(m))
    sol = cl.solve(problem, method="ppm")
    ref = cl.solve(problem.to_lcp(), method="lemke")
    assert sol.success and ref.success and "routed" not in sol.info
    np.testing.assert_allclose(sol.w, ref.w, atol=1e-8 * np.abs(problem.q).max())


def test_ppm_box_stacks():
    rng = np.random.default_rng(11)
    for nb in (2, 5, 12):
        problem = gen.box_stack_factored(nb, rng)
        sol = cl.solve(problem, method="ppm")
        ref = cl.solve(problem.to_lcp(), method="dantzig")
        assert sol.success and ref.success
        np.testing.assert_allclose(sol.w, ref.w, atol=1e-8 * np.abs(problem.q).max())


def test_ppm_never_forms_the_matrix(monkeypatch):
    problem = gen.box_stack_factored(4, np.random.default_rng(0))
    monkeypatch.setattr(type(problem), "lcp_reduction", lambda self: pytest.fail("formed N M^-1 N'"))
    assert cl.solve(problem, method="ppm").success


def test_dantzig_on_larger_psd_contact_problem():
    rng = np.random.default_rng(5)
    N = rng.standard_normal((400, 50))
    problem = cl.FactoredLCP(N, np.eye(50), rng.standard_normal(50)).to_lcp()
    sol = cl.solve(problem, method="dantzig")
    ref = cl.solve(problem, method="lemke")        # w is unique for a symmetric PSD LCP
    assert sol.success and ref.success
    np.testing.assert_allclose(sol.w, ref.w, atol=1e-8 * np.abs(problem.q).max())


def test_friction_pyramid_lemke():
    rng = np.random.default_rng(2)
    for nc in (2, 6, 12):
        problem = gen.friction_pyramid_lcp(nc, rng, d=4, mu=0.6)
        sol = cl.solve(problem, method="lemke")
        assert sol.status is cl.Status.SOLVED   # copositive-plus and feasible: Lemke's guarantee
        if problem.n <= 12:                     # the exhaustive reference agrees that a solution exists
            assert cl.solve(problem, method="enumerate").success


def test_auto_choices():
    rng = np.random.default_rng(0)
    spd = cl.solve(gen.random_spd(6, rng))
    assert spd.info["auto"]["method"] == "lemke" and spd.success
    psd = cl.solve(gen.random_psd(6, rng, rank=3))
    assert psd.info["auto"]["method"] == "dantzig" and psd.success
    p = cl.solve(gen.random_p_matrix(6, rng))
    assert p.info["auto"]["method"] == "lemke" and p.success
    f = cl.solve(gen.box_stack_factored(3, rng))
    assert f.info["auto"]["method"] == "ppm" and f.success


def test_enumerate_refuses_large_and_counts_bases():
    with pytest.raises(cl.ParamError, match="n <= 20"):
        cl.solve(cl.LCP(np.eye(21), -np.ones(21)), method="enumerate")
    sol = cl.solve(cl.LCP(np.eye(3), -np.ones(3)), method="enumerate")
    assert sol.info["bases_tested"] == 8  # support size 3 is the last visited
    np.testing.assert_allclose(sol.z, 1.0)


def test_unknown_method_lists_known():
    with pytest.raises(cl.SolverNotFound, match="lemke"):
        cl.solve(cl.LCP(np.eye(2), -np.ones(2)), method="simplex")
    with pytest.raises(ValueError):
        cl.solve(cl.LCP(np.eye(2), -np.ones(2)), method="lemke", bogus=1)


def test_sparse_input_accepted():
    import scipy.sparse as sp
    rng = np.random.default_rng(1)
    dense = gen.random_spd(20, rng)
    sol = cl.solve(cl.LCP(sp.csr_matrix(dense.M), dense.q), method="lemke")
    ref = cl.solve(dense, method="lemke")
    np.testing.assert_allclose(sol.z, ref.z, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_reduced_basis_follows_the_tableau(seed):
    """The reduced-basis kernel makes the same pivots as the full tableau (same lexicographic rule)
    where the LCP's answer is unique (M positive definite or a P-matrix: the pivots and z agree). The
    friction pyramid's and the box stack's LCPs have ties that the two forms' round-off may break
    differently (a contact's friction split between two pyramid directions): there each kernel's
    answer must solve the LCP, checked apart from both (min(z, Mz + q) = 0)."""
    rng = np.random.default_rng(seed)
    unique = (gen.random_spd(40, rng), gen.random_p_matrix(30, rng), gen.murty(7))
    degenerate = (gen.friction_pyramid_lcp(8, rng), gen.box_stack_contact_lcp(6, rng))
    for problem in unique + degenerate:
        a = cl.solve(problem, method="lemke", basis="tableau", regularize=False)
        b = cl.solve(problem, method="lemke", basis="reduced", regularize=False)
        assert a.status is b.status is cl.Status.SOLVED
        if any(problem is u for u in unique):
            assert a.pivots == b.pivots
            np.testing.assert_allclose(a.z, b.z, atol=1e-9 * problem.scale())
            continue
        M = problem.M.toarray() if hasattr(problem.M, "toarray") else np.asarray(problem.M)
        for sol in (a, b):
            natural = np.minimum(sol.z, M @ sol.z + problem.q)
            assert np.max(np.abs(natural)) <= 1e-9 * problem.scale()


def test_dense_pivoting_refuses_huge_sparse_problems():
    import scipy.sparse as sp
    n = 40000
    big = cl.LCP(sp.identity(n, format="csr"), -np.ones(n))
    for method in ("lemke", "dantzig"):
        with pytest.raises(cl.ParamError, match="pgs"):
            cl.solve(big, method=method)


@pytest.mark.parametrize("boxes", [8, 16])
def test_lemke_on_degenerate_rank_deficient_contact_stacks(boxes):
    """25 contacts per face pair: massively dependent rows; both bases must stay nonsingular."""
    F = gen.box_stack_factored(boxes, np.random.default_rng([5, boxes, 0]), contacts_per_face=25)
    problem = F.to_lcp()
    for basis in ("reduced", "tableau"):
        sol = cl.solve(problem, method="lemke", basis=basis, regularize=False)
        ref = cl.solve(problem, method="dantzig")      # w unique (symmetric PSD)
        assert sol.success and ref.success, basis
        np.testing.assert_allclose(sol.w, ref.w, atol=1e-8 * np.abs(problem.q).max())
        assert sol.pivots < 4 * problem.n


def test_dantzig_reuse_on_block_pyramid_sequence():
    """loomis-balkcom §V: sub-assemblies of a running-bond pyramid (PSD, massively rank-deficient);
    every cold and warm solve certified, warm ones within Theorem 1's n - k bound, fewer pivots."""
    from contactlab.problems.generators import box_contacts, box_pyramid, box_structure_factored
    s = box_pyramid(9)
    full = box_structure_factored(s).to_lcp()
    uppers = np.array([u for _, u, _ in box_contacts(s)])
    prev, cold_piv, warm_piv = None, 0, 0
    for k in range(1, s.n_boxes + 1):
        nk = int(np.sum(uppers < k))
        L = cl.LCP(full.M[:nk, :nk], full.q[:nk])
        cold = cl.solve(L, method="dantzig")
        assert cold.success
        if prev is not None:
            warm = cl.solve(L, method="dantzig", warm_start=(np.arange(prev.z.size), prev.z))
            assert warm.success and warm.iterations <= L.n - prev.z.size
            np.testing.assert_allclose(warm.w, cold.w, atol=1e-7 * L.scale())
            cold_piv, warm_piv = cold_piv + cold.pivots, warm_piv + warm.pivots
            prev = warm
        else:
            prev = cold
    assert warm_piv < cold_piv / 5


def test_lemke_pivot_tolerance_retry_on_an_ill_conditioned_grasp_lcp():
    """A Stewart-Trinkle LCP from the Barrett hand closing on a wood object (step 565 of `simulate
    barrett-grasp --set material=plastic --set object_material=wood`, n = 84, cond ~4e8): with the
    default pivot tolerance and no restart Lemke takes a spurious tiny pivot and ends on a
    complementary basis whose re-solve has z_A < 0 (relative residual 0.44); the retry with a larger
    pivot tolerance finds a basis that certifies, and so does (by default, before any retry) the
    restart from the refactorised final basis (kernels/lemke.py ``_restart_from_basis``). Each answer
    is checked here independently of the solver's own figures."""
    from pathlib import Path
    p = cl.load(Path(__file__).parents[1] / "data" / "barrett_wood_step565.npz")
    bare = cl.solve(p, method="lemke", pivot_retries=(), regularize=False, restarts=0, equilibrate="never")
    assert bare.relative_residual > 0.1            # the failure the retry and the restart exist for
    retried = cl.solve(p, method="lemke", restarts=0, equilibrate="never")
    assert retried.status == cl.Status.SOLVED and retried.info["pivot_tol"] > 1e-9
    # the equilibrated retry (solvers/lemke.py: D M D, D q, mapped back and certified on (M, q)) too
    equilibrated = cl.solve(p, method="lemke", pivot_retries=(), regularize=False, restarts=0)
    assert equilibrated.status == cl.Status.SOLVED and "equilibrated" in equilibrated.info
    restarted = cl.solve(p, method="lemke", pivot_retries=(), regularize=False)
    assert restarted.status == cl.Status.SOLVED and "pivot_tol" not in restarted.info \
        and "reduced_attempt" not in restarted.info            # the reduced run's own answer
    M, q = p.dense_M(), p.q
    scale = np.abs(q).max()
    for sol in (retried, restarted, equilibrated):
        z = sol.z
        w = M @ z + q
        assert z.min() >= 0 and w.min() >= -1e-9 * scale and np.abs(z * w).max() <= 1e-9 * scale * max(z.max(), 1)
    # the retry's active set re-solved from scratch gives the same z (a genuine complementary basis);
    # (the restarted answer is another solution of this degenerate LCP, its basis holding z's at 0)
    z = retried.z
    act = np.flatnonzero(z > 1e-12 * z.max())
    zA = np.linalg.solve(M[np.ix_(act, act)], -q[act])
    assert zA.min() >= 0 and np.allclose(zA, z[act], rtol=1e-6, atol=1e-12 * z.max())


def test_reduced_kernel_matvec_and_drift_probe():
    """kernels/lemke.py leaf helpers against numpy: _matvec (four rows at a time) is A x, and the
    O(k^2) drift probe that decides a refactorisation reads ~eps on an exact inverse and basic
    solution, and sees an error planted in either."""
    from contactlab.kernels import lemke as K
    rng = np.random.default_rng(0)
    for k in (1, 3, 4, 5, 8, 11):
        A = rng.standard_normal((k + 2, k + 2))
        x = rng.standard_normal(k + 1)
        y = np.zeros(k + 1)
        K._matvec(A, x, y, k)
        np.testing.assert_allclose(y[:k], A[:k, :k] @ x[:k], rtol=1e-13, atol=1e-13)
    # a reduced basis of an n = 6 LCP: equations (rows of W) 0, 2, 5; unknowns z_1, z_4, z0
    n = 6
    M = gen.random_p_matrix(n, rng).dense_M()
    d = np.ones(n)
    q = rng.standard_normal(n)
    MTd = np.ascontiguousarray(np.vstack([M.T, d]))          # [M d]'
    eq_rows = np.array([0, 2, 5, 0], dtype=np.int64)
    unk = np.array([n + 1, n + 4, 2 * n, 0], dtype=np.int64)
    k = 3
    Ablk = np.column_stack([M[[0, 2, 5], 1], M[[0, 2, 5], 4], d[[0, 2, 5]]])
    Ainv = np.zeros((n + 1, n + 1))
    Ainv[:k, :k] = np.linalg.inv(Ablk)
    x = np.zeros(n + 1)
    x[:k] = -Ainv[:k, :k] @ q[[0, 2, 5]]
    v, u = np.empty(n + 1), np.empty(n + 1)
    assert K._basis_drift(n, k, MTd, q, eq_rows, unk, Ainv, x, v, u) < 1e-12
    bad = Ainv.copy()
    bad[1, 2] += 1e-6
    assert K._basis_drift(n, k, MTd, q, eq_rows, unk, bad, x, v, u) > K.REFACTOR_DRIFT
    xb = x.copy()
    xb[0] += 1e-6 * (1 + abs(x[0]))
    assert K._basis_drift(n, k, MTd, q, eq_rows, unk, Ainv, xb, v, u) > K.REFACTOR_DRIFT


@pytest.mark.parametrize("seed", range(3))
def test_reduced_kernel_answers_do_not_depend_on_checkpoints_or_covering_form(seed):
    """The refactorisation checkpoint (every pivot, every 64, never) changes no status and no answer
    beyond rounding on P-matrix problems (unique solution: checked against the full tableau), and an
    empty covering vector is exactly the all-ones one."""
    from contactlab.kernels import lemke as K
    from contactlab.kernels.tolerances import LEMKE_PIVOT, NORMWISE_FLOOR
    rng = np.random.default_rng(seed)
    for problem in (gen.random_p_matrix(40, rng), gen.random_spd(60, rng, cond=1e6), gen.murty(9)):
        M, q, n = np.ascontiguousarray(problem.dense_M()), problem.q, problem.n
        s = float(np.abs(M).max())
        ref = cl.solve(problem, method="lemke", basis="tableau", regularize=False)
        assert ref.success
        runs = [K.lemke_reduced_run(M, q, s, np.ones(n), 50 * n + 1000, every, LEMKE_PIVOT, NORMWISE_FLOOR)
                for every in (1, 64, 10**9)]
        for code, pivots, z, _, residual in runs:
            assert code == K.SOLVED and pivots == ref.pivots and residual < 1e-12
            np.testing.assert_allclose(z, ref.z, atol=1e-9 * max(1.0, np.abs(ref.z).max()))
        empty = K.lemke_reduced_run(M, q, s, np.empty(0), 50 * n + 1000, 64, LEMKE_PIVOT, NORMWISE_FLOOR)
        assert empty[:2] == runs[1][:2] and np.array_equal(empty[2], runs[1][2])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 8), m=st.integers(1, 8), cfm=st.sampled_from([0.0, 1e-6]),
       offset=st.booleans())
def test_ppm_one_call_equals_general_path(seed, n, m, cfm, offset):
    """ppm (drumwright Alg. 1) on a dense N in one compiled call (kernels/factored.py ``ppm_dense``,
    with Theorem 1's clear cases and the certification solve() reads) gives the general path's
    z, w, status, pivots, info and certification numbers exactly; FactoredLCP.certify_numbers
    equals certify."""
    from contactlab.problems import FactoredLCP
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    M = A @ A.T + m * np.eye(m)
    N = rng.normal(size=(n, m))
    if n >= 2 and seed % 3 == 0:
        N[-1] = N[0]                                   # rank-deficient N: Theorem 1 by offset or routed
    f = rng.normal(size=m) * 3
    off = rng.normal(size=n) if offset else None
    from unittest import mock
    from contactlab.solvers import pivoting
    P = FactoredLCP(N, M, f, offset=off, cfm=cfm)
    a = cl.solve(P, "ppm")
    with mock.patch.object(pivoting, "_ppm_dense", lambda problem, opts: None):
        b = cl.solve(FactoredLCP(N, M, f, offset=off, cfm=cfm), "ppm")
    assert a.status == b.status and a.pivots == b.pivots and a.iterations == b.iterations
    assert np.array_equal(a.z, b.z) and np.array_equal(a.w, b.w)
    for attr in ("residual", "complementarity", "infeasibility", "relative_residual"):
        assert getattr(a, attr) == getattr(b, attr)
    assert a.info.keys() == b.info.keys()
    for key in a.info:
        if key == "certificate":
            assert np.array_equal(a.info[key]["y"], b.info[key]["y"])
        elif isinstance(a.info[key], np.ndarray):
            assert np.array_equal(a.info[key], b.info[key])
        else:
            assert a.info[key] == b.info[key]
    if a.success:                     # the LCP conditions on the formed F = N M^-1 N' + cfm I
        lcp = P.to_lcp()
        F, q = np.asarray(lcp.M), np.asarray(lcp.q)
        wf = F @ a.z + q
        scale = max(1.0, float(np.abs(q).max()), float(np.abs(F).max()) * float(np.abs(a.z).max(initial=0.0)))
        assert np.all(a.z >= 0.0) and wf.min(initial=0.0) >= -1e-9 * scale
        assert abs(float(a.z @ wf)) <= 1e-9 * scale * max(1.0, float(np.abs(a.z).sum()))
    z = np.abs(rng.normal(size=n))
    w, nums = P.certify_numbers(z)
    w2, r, rel = P.certify(z)
    assert np.array_equal(w, w2)
    assert nums == (r.natural, r.complementarity, r.infeasibility, rel.natural, rel.complementarity, rel.infeasibility)


def _robot_problems(scene: str, steps: int, every: int):
    """The no-slip step's factored LCPs (drumwright eq. 57) of a robot scene as the simulator builds
    them, with its controllers running: one every ``every`` steps."""
    return robot_steps(scene, "no-slip", "last_problem", steps, every)


@pytest.mark.parametrize("scene", ["quadruped", "solo12"])
def test_compiled_ppm_equals_general_path_on_recorded_robot_steps(scene):
    """ppm in one compiled call (kernels/factored.py ``ppm_dense``) gives the general path's answer
    (kernels/pivoting.py ``ppm_kernel`` on N's CSR rows, Theorem 1 decided in Python) bit for bit
    on the factored LCPs the quadruped's and Solo-12's no-slip steps build, and that answer
    satisfies the LCP conditions on the formed matrix F = N M^-1 N' + cfm I, with w equal to
    Lemke's on F (w is unique for a symmetric PSD LCP)."""
    from unittest import mock
    from contactlab.solvers import pivoting
    problems = _robot_problems(scene, 150, 10)
    assert len(problems) == 15 and any(p.n >= 2 for p in problems)
    for P in problems:
        a = cl.solve(P, "ppm")
        with mock.patch.object(pivoting, "_ppm_dense", lambda problem, opts: None):
            b = cl.solve(P, "ppm")
        assert a.success and b.success
        assert a.status == b.status and a.pivots == b.pivots and a.iterations == b.iterations
        assert np.array_equal(a.z, b.z) and np.array_equal(a.w, b.w)
        assert a.residual == b.residual and a.relative_residual == b.relative_residual
        lcp = P.to_lcp()
        F, q = np.asarray(lcp.M), np.asarray(lcp.q)
        w = F @ a.z + q
        scale = max(1.0, float(np.abs(q).max()), float(np.abs(F).max()) * float(np.abs(a.z).max(initial=0.0)))
        assert np.all(a.z >= 0.0)
        assert w.min(initial=0.0) >= -1e-9 * scale
        assert abs(float(a.z @ w)) <= 1e-9 * scale * max(1.0, float(np.abs(a.z).sum()))
        ref = cl.solve(lcp, method="lemke")
        assert ref.success
        np.testing.assert_allclose(w, F @ ref.z + q, atol=1e-8 * scale)


def _same_solution(a, b):
    """Every field of two Solutions equal (z and w to the bit)."""
    assert a.status is b.status and a.method == b.method
    assert np.array_equal(a.z, b.z) and np.array_equal(a.w, b.w)
    assert (a.iterations, a.pivots) == (b.iterations, b.pivots)
    assert (a.residual, a.complementarity, a.infeasibility, a.relative_residual) == \
        (b.residual, b.complementarity, b.infeasibility, b.relative_residual)
    assert a.info.keys() == b.info.keys()
    for key in a.info:
        assert np.array_equal(a.info[key], b.info[key])


@pytest.mark.parametrize("seed", range(8))
def test_dantzig_direct_is_solve(seed):
    """solvers/pivoting.py ``dantzig_direct`` (the reuse path's call, without solve()'s dispatch)
    returns solve()'s Solution, cold and warm-started from a principal sub-problem's answer
    (loomis-balkcom Theorem 1), on rank-deficient PSD contact LCPs; solve()'s answer is checked
    against enumeration (w = M z + q is unique for PSD M)."""
    from contactlab.solvers.pivoting import dantzig_direct
    from contactlab.sim.reuse import principal_subproblem
    rng = np.random.default_rng(seed)
    J = rng.standard_normal((10, 7))
    zs = np.where(rng.random(10) < 0.5, rng.random(10), 0.0)          # a solution by construction
    P = cl.LCP(J @ J.T, np.where(zs > 0, 0.0, rng.random(10)) - J @ J.T @ zs)
    rows = np.sort(rng.choice(10, size=6, replace=False))
    sub = cl.solve(principal_subproblem(P, rows), "dantzig")
    warm = np.zeros(10)
    warm[rows] = sub.z
    ref = cl.solve(P, "enumerate")
    from contactlab.kernels.tolerances import CERTIFY
    from contactlab.solvers.pivoting import DantzigWork
    lean = DantzigWork().lean
    for ws in (None, warm):
        general = cl.solve(P, "dantzig", warm_start=ws)
        direct = dantzig_direct(P, ws)
        assert general.success and direct is not None
        _same_solution(direct, general)
        np.testing.assert_allclose(P.M @ direct.z + P.q, P.M @ ref.z + P.q, atol=1e-9)
        # the lean call (sim/reuse_stages.py): the same Solution from eight arguments
        _same_solution(lean(P.M, P.q, np.zeros(0) if ws is None else ws, -1, CERTIFY), general)


def test_dantzig_direct_leaves_the_rest_to_solve():
    """None (the caller then calls solve()) where solve() answers otherwise: a trivial problem (q >= 0:
    TRIVIAL), a nonsymmetric M with a zero diagonal entry (refused), an infeasible PSD LCP (a Farkas
    ray: NO_SOLUTION after solve() checks it), a sparse M."""
    from contactlab.solvers.pivoting import dantzig_direct
    assert dantzig_direct(cl.LCP(np.eye(2), np.ones(2))) is None
    assert cl.solve(cl.LCP(np.eye(2), np.ones(2)), "dantzig").status is cl.Status.TRIVIAL
    st = cl.LCP(np.array([[1.0, -1.0], [1.0, 0.0]]), np.array([-1.0, -1.0]))
    assert dantzig_direct(st) is None and cl.solve(st, "dantzig").info.get("refused")
    bad = cl.LCP(np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([-1.0, -1.0]))
    assert dantzig_direct(bad) is None and cl.solve(bad, "dantzig").status is cl.Status.NO_SOLUTION
    import scipy.sparse as sp
    assert dantzig_direct(cl.LCP(sp.csr_matrix(np.eye(2)), -np.ones(2))) is None
    from contactlab.kernels.tolerances import CERTIFY
    from contactlab.solvers.pivoting import DantzigWork
    lean, cold = DantzigWork().lean, np.zeros(0)
    for P in (cl.LCP(np.eye(2), np.ones(2)), st, bad):
        assert lean(P.M, P.q, cold, -1, CERTIFY) is None
    # a pivot limit the answer needs more than: MAX_ITERATIONS is solve()'s to report
    M = np.eye(4) + 0.1
    assert lean(M, -np.ones(4), cold, 1, CERTIFY) is None
    assert cl.solve(cl.LCP(M, -np.ones(4)), "dantzig", max_iterations=1).status is cl.Status.MAX_ITERATIONS


def test_lean_call_bound_to_machine_code_takes_only_its_types():
    """``DantzigWork.into`` becomes numba's machine code after the first call (``bind``: the
    dispatcher's typing skipped, kernels/pivoting.py ``dantzig_into``), which reads its arguments
    without checking them; so ``lean_takes`` admits only C-contiguous float64 arrays (a strided q,
    a float32 or strided warm start, a sparse M go to the checked paths), and the bound call gives
    the dispatcher's answer bit for bit on a problem of another size."""
    import scipy.sparse as sp
    from contactlab.kernels import pivoting as KP
    from contactlab.kernels.tolerances import CERTIFY
    from contactlab.solvers.pivoting import DantzigWork, lean_takes
    rng = np.random.default_rng(3)
    J = rng.standard_normal((12, 8))
    P = cl.LCP(J @ J.T, -rng.random(12))
    work = DantzigWork()
    first = work.lean(P.M, P.q, np.zeros(0), -1, CERTIFY)
    assert work.into is not KP.dantzig_into            # compile mode: bound after the first call
    Q = cl.LCP(J[:7] @ J[:7].T, -rng.random(7))
    bound = work.lean(Q.M, Q.q, np.zeros(0), -1, CERTIFY)
    _same_solution(bound, cl.solve(Q, "dantzig"))
    _same_solution(work.lean(P.M, P.q, np.zeros(0), -1, CERTIFY), first)
    assert lean_takes(P, None) and lean_takes(P, np.zeros(12))
    strided = cl.LCP.trusted(P.M, np.repeat(P.q, 2)[::2])
    assert not strided.q.flags.c_contiguous and not lean_takes(strided, None)
    assert not lean_takes(P, np.zeros(12, dtype=np.float32)) and not lean_takes(P, np.zeros(24)[::2])
    assert not lean_takes(P, np.zeros(11)) and not lean_takes(cl.LCP(sp.csr_matrix(P.M), P.q), None)


_RANK_DEFICIENT = ("noslip_quadruped_boxfeet_rank_deficient", "noslip_box_gripper_rank_deficient")


def _recorded_rank_deficient(name: str):
    """Factored LCPs recorded from no-slip steps whose coplanar contact points make N rank-deficient:
    the box-footed quadruped on rough terrain (``make_scene("quadruped", foot="box",
    terrain="rough")``) and drumwright §VII-A's box gripper; those Theorem 1 admits and those it
    routes (tests/data/<name>.npz: p<j>_N, _M, _f, _offset)."""
    from pathlib import Path
    from contactlab.problems import FactoredLCP
    d = np.load(Path(__file__).parents[1] / "data" / f"{name}.npz")
    count = len({key.split("_")[0] for key in d.files})
    return [FactoredLCP(d[f"p{j}_N"], d[f"p{j}_M"], d[f"p{j}_f"], offset=d[f"p{j}_offset"]) for j in range(count)]


@pytest.mark.parametrize("name", _RANK_DEFICIENT)
def test_compiled_theorem1_decision_and_routed_dantzig_on_recorded_box_problems(name):
    """On rank-deficient no-slip problems (box feet, box gripper) ppm decides Theorem 1 and solves
    inside its one compiled call (kernels/factored.py ``ppm_dense``; the Python test is never run):
    the same decision as :func:`theorem1_holds` (numpy's SVD rank and least squares), the same z, w,
    counts and info as the general path (ppm_kernel inside Theorem 1, Dantzig on the formed
    N M^-1 N' outside it), an answer that meets the LCP conditions on the formed F, and F z + q and
    N'z equal to Lemke's on F (both unique for a symmetric PSD LCP, z itself need not be)."""
    from unittest import mock
    from contactlab.solvers import pivoting
    problems = _recorded_rank_deficient(name)
    decisions = [pivoting.theorem1_holds(P) for P in problems]
    assert any(ok for ok, _ in decisions) and not all(ok for ok, _ in decisions)
    for P, (ok, why) in zip(problems, decisions):
        assert np.linalg.matrix_rank(P.N) < P.n and np.any(P.offset) and P.cfm == 0.0
        with mock.patch.object(pivoting, "theorem1_holds", side_effect=AssertionError("Python's Theorem 1 test ran")):
            a = cl.solve(P, "ppm")
        assert a.success
        if ok:
            assert a.info["theorem1"] == why and "routed" not in a.info
        else:
            assert a.info["routed"] == {"to": "dantzig", "reason": why} and "theorem1" not in a.info
        with mock.patch.object(pivoting, "_ppm_dense", lambda problem, opts: None):
            b = cl.solve(P, "ppm")
        assert a.status == b.status and a.pivots == b.pivots and a.iterations == b.iterations
        assert np.array_equal(a.z, b.z) and np.array_equal(a.w, b.w) and a.relative_residual == b.relative_residual
        assert a.info.keys() == b.info.keys()
        for key in a.info:
            assert np.array_equal(a.info[key], b.info[key]) if isinstance(a.info[key], np.ndarray) \
                else a.info[key] == b.info[key]
        lcp = P.to_lcp()
        F, q = np.asarray(lcp.M), np.asarray(lcp.q)
        w = F @ a.z + q
        scale = max(1.0, float(np.abs(q).max()), float(np.abs(F).max()) * float(np.abs(a.z).max(initial=0.0)))
        assert np.all(a.z >= 0.0) and w.min() >= -1e-9 * scale
        assert abs(float(a.z @ w)) <= 1e-9 * scale * max(1.0, float(np.abs(a.z).sum()))
        ref = cl.solve(lcp, method="lemke")
        assert ref.success
        np.testing.assert_allclose(w, F @ ref.z + q, rtol=0, atol=1e-8 * scale)
        np.testing.assert_allclose(P.N.T @ a.z, P.N.T @ ref.z, rtol=0,
                                   atol=1e-8 * max(1.0, float(np.abs(P.N.T @ ref.z).max())))


@pytest.mark.parametrize("case", ["svd-full-rank", "offset-in-range", "outside"])
def test_compiled_theorem1_decision_analytic(case):
    """The three answers of Theorem 1's SVD / least-squares test, made inside ppm's compiled call
    (kernels/factored.py ``theorem1_decide``) as :func:`theorem1_holds` makes them: an
    ill-conditioned N of full row rank (sigma_min ~ 7e-8: not clear from the Gram test, above
    numpy's matrix_rank threshold), a repeated row with the offset in range(N), and the same N with
    an offset outside it (routed to Dantzig on the formed N M^-1 N'). The answer is checked on the
    formed LCP against enumerate (w and N'z are unique for a symmetric PSD LCP)."""
    from unittest import mock
    from contactlab.kernels import factored as KF
    from contactlab.problems import FactoredLCP
    from contactlab.solvers import pivoting
    if case == "svd-full-rank":
        N, off, want = np.array([[1.0, 0.0, 0.0], [1.0, 1e-7, 0.0]]), np.array([0.5, -0.3]), "N has full row rank"
    else:
        N = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        off, want = ((N @ np.array([0.2, -0.4]), "offset in range(N)") if case == "offset-in-range" else
                     (np.array([0.3, -0.3, 0.1]), "offset outside range(N) and N rank-deficient (outside Theorem 1)"))
    M = np.diag(np.arange(1.0, N.shape[1] + 1.0))
    P = FactoredLCP(N, M, -np.arange(1.0, N.shape[1] + 1.0), offset=off)
    assert not KF.clear_full_row_rank(N) and pivoting.theorem1_holds(P) == (case != "outside", want)
    with mock.patch.object(pivoting, "theorem1_holds", side_effect=AssertionError("Python's Theorem 1 test ran")):
        a = cl.solve(P, "ppm")
    assert a.success
    assert (a.info["routed"] == {"to": "dantzig", "reason": want}) if case == "outside" else (a.info["theorem1"] == want)
    lcp = P.to_lcp()
    F, q = np.asarray(lcp.M), np.asarray(lcp.q)
    np.testing.assert_allclose(KF.formed_gram(N, P.lower_factor(), 0.0), F, rtol=1e-14, atol=0)
    ref = cl.solve(lcp, method="enumerate")
    assert ref.success
    np.testing.assert_allclose(F @ a.z + q, F @ ref.z + q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(N.T @ a.z, N.T @ ref.z, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_dantzig_work_arrays_need_no_clearing(seed):
    """kernels/pivoting.py ``dantzig_work`` reads none of its scratch before writing it: with work
    arrays full of NaN, huge values and random indices left by other solves, and with fresh ones,
    the results are the same to the bit (z, w, numbers, active set, counts, the ray of an infeasible
    problem): symmetric PSD and nonsymmetric P-matrix LCPs, cold and warm-started, and a smaller
    problem after a larger one (sim/reuse.py keeps one DantzigWork for a whole run)."""
    from contactlab.kernels import pivoting as K
    from contactlab.kernels.tolerances import NORMWISE_FLOOR
    rng = np.random.default_rng(seed)
    n = 12
    J = rng.standard_normal((n, 8))
    A = rng.standard_normal((n, n))
    problems = [(J @ J.T, J @ rng.standard_normal(8) - 0.1 * rng.random(n)),          # PSD, rank deficient
                (A @ A.T + n * np.eye(n) + 0.3 * (A - A.T), rng.standard_normal(n)),  # P, nonsymmetric
                (np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([-1.0, -1.0])),    # PSD, infeasible: a ray
                (np.array([[2.0]]), np.array([-1.0]))]                             # n = 1
    for M, q in problems:
        m = q.size
        warm = np.where(rng.random(m) < 0.5, rng.random(m), 0.0)
        for zw in (np.zeros(0), warm):
            sizes = K.work_sizes(m)
            fresh = K.dantzig_work(M, q, zw, 20 * m + 100, True, NORMWISE_FLOOR, False, 0.0,
                                   np.zeros(sizes[0]), np.zeros(sizes[1], dtype=np.int64),
                                   np.zeros(sizes[2], dtype=np.bool_))
            ref = (np.zeros(sizes[0]), np.zeros(sizes[1], dtype=np.int64))
            K.dantzig_work(M, q, zw, 20 * m + 100, True, NORMWISE_FLOOR, False, 0.0, *ref,
                           np.zeros(sizes[2], dtype=np.bool_))
            big = K.work_sizes(3 * m)
            f = np.full(big[0], np.nan)
            f[::3] = 1e300
            i = rng.integers(-5, 3 * m, size=big[1])
            b = rng.random(big[2]) < 0.5
            dirty = K.dantzig_work(M, q, zw, 20 * m + 100, True, NORMWISE_FLOOR, False, 0.0, f, i, b)
            assert dirty == fresh
            # exactly work_sizes(m): views of larger arrays whose tails must stay untouched (no write past them)
            F, I, B = np.full(sizes[0] + 64, -7.0), np.full(sizes[1] + 64, -7), np.zeros(sizes[2] + 64, dtype=np.bool_)
            exact = K.dantzig_work(M, q, zw, 20 * m + 100, True, NORMWISE_FLOOR, False, 0.0, F[:sizes[0]],
                                   I[:sizes[1]], B[:sizes[2]])
            assert exact == fresh and np.all(F[sizes[0]:] == -7.0) and np.all(I[sizes[1]:] == -7) \
                and not B[sizes[2]:].any()
            k = fresh[5]
            assert np.array_equal(f[:2 * m], ref[0][:2 * m])                           # z, w
            assert np.array_equal(f[8 * m:8 * m + 6], ref[0][8 * m:8 * m + 6])         # the residual numbers
            assert np.array_equal(i[:k], ref[1][:k]) and np.all(np.diff(i[:k]) > 0)    # the active set, sorted
            if fresh[0] == K.UNBOUNDED:
                assert np.array_equal(f[2 * m:3 * m], ref[0][2 * m:3 * m])


@pytest.mark.parametrize("seed", range(4))
def test_natural_pair_is_two_natural_residuals(seed):
    """kernels/pivoting.py ``_natural_pair`` (the refinement's test in ``dantzig_work``): w = M z + q for
    both vectors (numpy's, to roundoff; ``_natural``'s bit for bit, the same sums in the same order) and
    whether ||min(za, wa)||_inf <= ||min(zb, wb)||_inf."""
    from contactlab.kernels import pivoting as K
    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(1, 30))
        M, q = rng.standard_normal((n, n)), rng.standard_normal(n)
        za, zb = (np.where(rng.random(n) < 0.5, rng.random(n), 0.0) for _ in range(2))
        wa, wb, w1, w2 = (np.empty(n) for _ in range(4))
        verdict = K._natural_pair(M, q, za, zb, wa, wb)
        np.testing.assert_allclose(wa, M @ za + q, atol=1e-12)
        np.testing.assert_allclose(wb, M @ zb + q, atol=1e-12)
        na, nb = np.abs(np.minimum(za, M @ za + q)).max(), np.abs(np.minimum(zb, M @ zb + q)).max()
        if abs(na - nb) > 1e-12:
            assert verdict == (na <= nb)
        assert verdict == (K._natural(M, q, za, w1) <= K._natural(M, q, zb, w2))
        assert np.array_equal(wa, w1) and np.array_equal(wb, w2)


def test_dense_csr_lists_each_rows_nonzeros_in_order():
    """kernels/factored.py ``dense_csr`` (N's CSR arrays; also the sparsity pattern the Stewart-Trinkle
    call's Schur complement skips exact zeros by) against numpy's nonzero, on a matrix with an empty
    row and a -0.0 (an exact zero: left out)."""
    from contactlab.kernels.factored import dense_csr
    rng = np.random.default_rng(3)
    C = rng.normal(size=(9, 11)) * (rng.random((9, 11)) < 0.3)
    C[4] = 0.0
    C[2, 5] = -0.0
    ptr, cols, data = dense_csr(C)
    assert ptr[0] == 0 and ptr.shape == (10,) and ptr[-1] == np.count_nonzero(C)
    for i in range(9):
        assert cols[ptr[i]:ptr[i + 1]].tolist() == np.flatnonzero(C[i]).tolist()
        assert data[ptr[i]:ptr[i + 1]].tolist() == C[i][C[i] != 0.0].tolist()
