"""Quasistatic manipulation as a UCP (Pang, Trinkle & Lo 1994): model, solvers, CLI.

Every solution is checked against eq. (2)-(10) from the recovered physical quantities
(:func:`equation_residuals`), independently of the polyhedra X, Y and of the solver.
"""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import contactlab as cl
from contactlab.errors import ModelError, ParamError, ProblemError
from contactlab.models.quasistatic import (QuasistaticTask, build_ucp, equation_residuals, null_space_rows,
                                           recover, wrench_matrices)
from contactlab.problems.ucp import UCP
from contactlab.scenarios.quasistatic_data import data_set, random_task, table1_task

EQ_TOL = 1e-8


def _check_solution(task, problem, sol):
    assert sol.status == cl.Status.SOLVED, sol.info
    x, y = problem.split(sol.z)
    assert float(x @ y) <= 1e-9 * max(1.0, np.abs(x).max() * np.abs(y).max())
    motion = recover(task, x, y)
    res = equation_residuals(task, motion)
    assert max(res.values()) <= EQ_TOL, res
    return motion


# ------------------------------------------------------------------ the paper's data sets

@pytest.mark.parametrize("k", [1, 2, 3])
def test_data_sets_1_to_3_bilinear_lp_within_two_pairs(k):
    """Section 5: Data Sets 1-3 solved with x'y = 0 after at most two (x, y) pairs (6 LPs)."""
    task = data_set(k)
    problem = build_ucp(task)
    sol = cl.solve(problem, method="bilinear-lp")
    _check_solution(task, problem, sol)
    assert sol.info["pairs"] <= 2
    assert sol.info["lps"] <= 6


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("method", ["mip", "mode-enumeration"])
def test_data_sets_1_to_3_exact_methods(k, method):
    task = data_set(k)
    problem = build_ucp(task)
    _check_solution(task, problem, cl.solve(problem, method=method))


def test_data_set_4_jamming_proven_without_solution():
    """Data Set 4 lies in the jamming region: the MIP and the enumeration prove that no motion
    satisfies eq. (2)-(10); bilinear-lp stops (cycling) without a crash and without a false claim."""
    problem = build_ucp(data_set(4))
    s = cl.solve(problem, method="mip")
    assert s.status == cl.Status.NO_SOLUTION
    assert len(s.info["mip_runs"]) == 2 and all("Infeasible" in r for r in s.info["mip_runs"])
    assert cl.solve(problem, method="mode-enumeration").status == cl.Status.NO_SOLUTION
    sol = cl.solve(problem, method="bilinear-lp")
    assert sol.status == cl.Status.NO_SOLUTION_FOUND
    assert sol.info["pairs"] > 0 and sol.info["lps"] >= 2 and sol.info["xTy"] > 1e-6


def test_data_set_2_motion_is_the_known_one():
    """Data Set 2: the unique mode assignment found by exhaustive enumeration is (slide+, slide-, slide-),
    and the object's velocity does not depend on the method."""
    task = data_set(2)
    problem = build_ucp(task)
    sol = cl.solve(problem, method="mode-enumeration", find_all=True)
    assert sol.info["solutions"] == 1
    assert sol.info["modes"] == [["sliding+", "sliding-", "sliding-"]]
    motions = [_check_solution(task, problem, cl.solve(problem, method=m))
               for m in ("bilinear-lp", "mip", "mode-enumeration")]
    for m in motions[1:]:
        np.testing.assert_allclose(m.q_dot, motions[0].q_dot, atol=1e-9)
        assert m.modes == ["sliding+", "sliding-", "sliding-"]


# ------------------------------------------------------------------ analytic cases

def _one_finger(g_obj, mu=0.5, theta_dot=(0.1, 0.0)):
    """A finger touching the object at its origin from below (inward normal +y), two prismatic joints
    moving the fingertip along the normal and the tangent; both position-controlled."""
    return QuasistaticTask.from_contacts([[0.0, 0.0]], [[0.0, 1.0]], [[1.0, 0.0]], [[0.0, 1.0]], [mu], g_obj,
                                         [0.0, 0.0], [0, 1], theta_dot, [])


def test_finger_lifting_a_weight_rolls_with_it():
    """Weight 1 on a finger rising at 0.1: c_n = 1, c_t = 0, the contact rolls and the object
    follows the fingertip (q_dot_y = 0.1, q_dot_x = -theta_dot_t since t = (-1, 0))."""
    task = _one_finger([0.0, -1.0, 0.0], theta_dot=(0.1, 0.3))
    problem = build_ucp(task)
    for method in ("bilinear-lp", "mip", "mode-enumeration"):
        m = _check_solution(task, problem, cl.solve(problem, method=method))
        np.testing.assert_allclose([m.c_n[0], m.c_t[0]], [1.0, 0.0], atol=1e-12)
        np.testing.assert_allclose(m.q_dot[:2], [-0.3, 0.1], atol=1e-12)
        assert m.modes == ["rolling"]


def test_side_load_beyond_friction_has_no_quasistatic_motion():
    """A side load 2 > mu * weight = 0.5 cannot be balanced by one contact: no solution (eq. 2 and 7)."""
    problem = build_ucp(_one_finger([2.0, -1.0, 0.0]))
    assert cl.solve(problem, method="mip").status == cl.Status.NO_SOLUTION
    assert cl.solve(problem, method="mode-enumeration").status == cl.Status.NO_SOLUTION
    assert cl.solve(problem, method="bilinear-lp").status == cl.Status.NO_SOLUTION  # Y is empty
    ok = build_ucp(_one_finger([0.3, -1.0, 0.0]))
    assert cl.solve(ok, method="mip").status == cl.Status.SOLVED


def test_wrench_matrix_eq1_and_null_space():
    """W_i = [n t; r (x) n  r (x) t] (eq. 1) and Z P = 0 with rank(Z) = 2 n_c - rank(P); in the square
    nonsingular case Z spans the rows of the paper's [W_n^-T  -W_t^-T]."""
    W_n, W_t = wrench_matrices([[1.0, 2.0]], [[0.0, -1.0]])
    np.testing.assert_allclose(W_n[:, 0], [0.0, -1.0, -1.0])   # r x n = 1*(-1) - 2*0
    np.testing.assert_allclose(W_t[:, 0], [1.0, 0.0, -2.0])    # t = (1, 0): r x t = 1*0 - 2*1
    rng = np.random.default_rng(3)
    Wn, Wt = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    P = np.vstack([Wn.T, Wt.T])
    Z = null_space_rows(P)
    assert Z.shape == (3, 6)
    np.testing.assert_allclose(Z @ P, 0, atol=1e-12)
    Zp = np.hstack([np.linalg.inv(Wn).T, -np.linalg.inv(Wt).T])
    np.testing.assert_allclose(Zp @ P, 0, atol=1e-10)
    # same row space: stacking them does not raise the rank
    assert np.linalg.matrix_rank(np.vstack([Z, Zp]), tol=1e-9) == 3


def test_sparse_lifted_x_describes_the_same_polyhedron():
    """UCP.x_lift (G x + F u = g, u free) and the projected form (A x = a, A = Z G) agree: A = Z G,
    a = Z g with Z P = 0, and a vertex of X from the projected form satisfies the lifted equations."""
    task = random_task(np.random.default_rng(4), 6, mu_max=1.0, n_alpha_bar=3)
    p = build_ucp(task)
    G, F, g = p.x_lift
    Z = null_space_rows(task.P)
    np.testing.assert_allclose(Z @ G.toarray(), p.A, atol=1e-12)
    np.testing.assert_allclose(Z @ g, p.a, atol=1e-12)
    sol = cl.solve(p, method="bilinear-lp")
    x, _ = p.split(sol.z)
    u = np.linalg.lstsq(F.toarray(), g - G @ x, rcond=None)[0]
    np.testing.assert_allclose(G @ x + F @ u, g, atol=1e-9)


def test_ucp_residuals_measure_complementarity_and_feasibility():
    A, a = np.array([[1.0, 1.0]]), np.array([1.0])
    B, b = np.array([[1.0, -1.0]]), np.array([0.5])
    p = UCP(A, a, B, b)
    r = p.residuals(UCP.stack([0.0, 1.0], [0.5, 0.0]))
    assert r.natural == 0.0 and r.complementarity == 0.0 and r.infeasibility == 0.0
    r = p.residuals(UCP.stack([0.5, 0.5], [1.0, 0.5]))
    assert r.complementarity == pytest.approx(0.5) and r.natural == pytest.approx(0.5)
    r = p.residuals(UCP.stack([1.0, 1.0], [0.5, 0.0]))
    assert r.infeasibility == pytest.approx(1.0)
    assert cl.solve(p, method="mip").status == cl.Status.SOLVED


# ------------------------------------------------------------------ exact methods agree

def _brute_force_ucp(p: UCP) -> bool:
    """Reference: try every split of indices into {x_i = 0} and {y_i = 0} with two LPs each."""
    from scipy.optimize import linprog
    for mask in itertools.product([False, True], repeat=p.m):
        zx = np.array(mask)
        bx = [(0, 0) if z else (0, None) for z in zx]
        by = [(0, None) if z else (0, 0) for z in zx]
        rx = linprog(np.zeros(p.m), A_eq=p.A, b_eq=p.a, bounds=bx, method="highs")
        ry = linprog(np.zeros(p.m), A_eq=p.B, b_eq=p.b, bounds=by, method="highs")
        if rx.status == 0 and ry.status == 0:
            return True
    return False


def _zero_one_ucp(A, b):
    """Proposition 2: {z in {0,1}^n : A z = b} as a UCP on (z, w) and (u, v)."""
    m, n = A.shape
    I, O = np.eye(n), np.zeros((m, n))
    X = np.block([[A, O], [I, I]])
    Y = np.block([[O, A], [I, I]])
    rhs = np.concatenate([b, np.ones(n)])
    return UCP(X, rhs, Y, rhs)


def test_zero_one_feasibility_reduction_decided_exactly():
    """Proposition 2's reduction: the MIP and the enumeration agree with brute force over {0,1}^n."""
    rng = np.random.default_rng(11)
    answers = []
    for _ in range(12):
        n = int(rng.integers(3, 6))
        A = rng.integers(-2, 3, size=(2, n)).astype(float)
        if rng.random() < 0.5:
            b = A @ rng.integers(0, 2, n)          # feasible by construction
        else:
            b = rng.integers(-3, 4, 2).astype(float)
        truth = any(np.allclose(A @ np.array(z), b) for z in itertools.product([0, 1], repeat=n))
        p = _zero_one_ucp(A, b)
        for method in ("mip", "mode-enumeration"):
            sol = cl.solve(p, method=method)
            assert sol.status == (cl.Status.SOLVED if truth else cl.Status.NO_SOLUTION), (method, A, b)
            if truth:
                assert sol.residual <= 1e-8
        answers.append(truth)
    assert any(answers) and not all(answers)


def test_mip_and_enumeration_agree_on_small_random_quasistatic_cases():
    """Random tasks with 2-4 contacts, with and without effort-controlled joints and with large mu:
    the two exact methods decide alike, and pruned and exhaustive enumeration count solutions alike."""
    decided = {True: 0, False: 0}
    for seed in range(24):
        rng = np.random.default_rng([5, seed])
        n_c = int(rng.integers(2, 5))
        task = random_task(rng, n_c, mu_max=float(rng.choice([0.3, 1.0, 2.0])),
                           n_alpha_bar=int(rng.integers(0, n_c + 1)))
        # jamming-prone variant: external load outside the generator's construction
        if seed % 3 == 0:
            task = QuasistaticTask(task.W_n, task.W_t, task.J_n, task.J_t, task.mu,
                                   task.g_obj + rng.normal(size=3) * 3, task.g_man, task.alpha,
                                   task.theta_dot_alpha, task.tau_alpha_bar)
        problem = build_ucp(task)
        s_mip = cl.solve(problem, method="mip", tighten=bool(seed % 2))
        s_enum = cl.solve(problem, method="mode-enumeration", find_all=True)
        assert s_mip.status in (cl.Status.SOLVED, cl.Status.NO_SOLUTION)
        assert s_mip.status == s_enum.status, seed
        if n_c <= 3:
            s_full = cl.solve(problem, method="mode-enumeration", find_all=True, prune=False)
            assert s_full.info["solutions"] == s_enum.info["solutions"]
            if "empty" not in s_full.info.get("reason", ""):
                assert s_full.info["candidates"] == 4 ** n_c
        if s_mip.status == cl.Status.SOLVED:
            _check_solution(task, problem, s_mip)
            _check_solution(task, problem, s_enum)
        decided[s_mip.status == cl.Status.SOLVED] += 1
    assert decided[True] > 0 and decided[False] > 0


def test_generic_small_ucp_against_brute_force():
    rng = np.random.default_rng(2)
    for _ in range(10):
        m = int(rng.integers(2, 5))
        A, B = rng.normal(size=(1, m)), rng.normal(size=(2, m))
        x0, y0 = rng.exponential(size=m), rng.exponential(size=m)
        p = UCP(A, A @ x0, B, B @ y0)
        truth = _brute_force_ucp(p)
        for method in ("mip", "mode-enumeration"):
            assert cl.solve(p, method=method).success == truth


def test_table1_problem_with_effort_control_decided():
    """Table 1, problem 17 (n_c = 10, |alpha-bar| = 5; undecided in the paper) is decided by the MIP,
    and whatever bilinear-lp reports is consistent with that decision."""
    task = table1_task(17)
    problem = build_ucp(task)
    s = cl.solve(problem, method="mip")
    assert s.status in (cl.Status.SOLVED, cl.Status.NO_SOLUTION)
    b = cl.solve(problem, method="bilinear-lp")
    if s.status == cl.Status.SOLVED:
        _check_solution(task, problem, s)
    else:
        assert b.status != cl.Status.SOLVED
    if b.status == cl.Status.SOLVED:
        _check_solution(task, problem, b)


def test_mip_heuristic_first_keeps_the_decision():
    for k, expect in ((2, cl.Status.SOLVED), (4, cl.Status.NO_SOLUTION)):
        task = data_set(k)
        problem = build_ucp(task)
        s = cl.solve(problem, method="mip", heuristic_first=True)
        assert s.status == expect
        if expect == cl.Status.SOLVED:
            assert s.info["decided_by"] == "bilinear-lp"
            _check_solution(task, problem, s)


def test_bilinear_lp_original_variant_and_options():
    problem = build_ucp(data_set(4))
    s = cl.solve(problem, method="bilinear-lp", variant="original", max_restarts=5)
    assert s.status == cl.Status.NO_SOLUTION_FOUND and s.info["restarts"] == 5
    with pytest.raises(ParamError):
        cl.solve(problem, method="bilinear-lp", variant="sideways")
    with pytest.raises(ParamError):
        cl.solve(problem, method="mip", bogus=1)


# ------------------------------------------------------------------ bad inputs

def test_bad_inputs_get_clear_errors():
    t = data_set(1)
    with pytest.raises(ModelError, match="W_t"):
        QuasistaticTask(t.W_n, t.W_t[:, :2], t.J_n, t.J_t, t.mu, t.g_obj, t.g_man, t.alpha,
                        t.theta_dot_alpha, t.tau_alpha_bar)
    with pytest.raises(ModelError, match="mu"):
        t.with_mu([0.5, -0.1, 0.3])
    with pytest.raises(ModelError, match="alpha out of range"):
        QuasistaticTask(t.W_n, t.W_t, t.J_n, t.J_t, t.mu, t.g_obj, t.g_man, [0, 1, 2, 3, 4, 6],
                        t.theta_dot_alpha, t.tau_alpha_bar)
    with pytest.raises(ModelError, match="theta_dot_alpha"):
        QuasistaticTask(t.W_n, t.W_t, t.J_n, t.J_t, t.mu, t.g_obj, t.g_man, t.alpha, [0.1, 0.2],
                        t.tau_alpha_bar)
    with pytest.raises(ModelError, match="J_t"):
        QuasistaticTask(t.W_n, t.W_t, t.J_n, t.J_t[:, :5], t.mu, t.g_obj, t.g_man, t.alpha,
                        t.theta_dot_alpha, t.tau_alpha_bar)
    with pytest.raises(ProblemError, match="columns"):
        UCP(np.ones((1, 3)), [1.0], np.ones((1, 4)), [1.0])
    with pytest.raises(ProblemError, match="contacts"):
        UCP(np.ones((1, 3)), [1.0], np.ones((1, 3)), [1.0], contacts=2)
    with pytest.raises(ModelError):
        random_task(np.random.default_rng(0), 3, n_alpha_bar=7)


# ------------------------------------------------------------------ CLI

def test_cli_json_contract():
    from typer.testing import CliRunner

    from contactlab.cli import app
    runner = CliRunner()
    keys = {"case", "method", "status", "pairs", "lps", "xTy", "c_n", "c_t", "q_dot", "theta_dot", "tau", "modes"}
    r = runner.invoke(app, ["quasistatic", "data-set-2", "--json"])
    assert r.exit_code == 0, r.output
    rec = json.loads(r.output)
    assert set(rec) == keys and rec["status"] == "SOLVED" and rec["pairs"] <= 2
    assert rec["modes"] == ["sliding+", "sliding-", "sliding-"] and rec["xTy"] == pytest.approx(0.0, abs=1e-10)
    r = runner.invoke(app, ["quasistatic", "data-set-4", "--method", "mode-enumeration", "--json"])
    rec = json.loads(r.output)
    assert rec["status"] == "NO_SOLUTION" and rec["c_n"] is None and rec["pairs"] > 0
    r = runner.invoke(app, ["quasistatic", "data-set-4", "--method", "enumerate", "--json"])  # old spelling
    assert json.loads(r.stdout)["method"] == "mode-enumeration" and "old spelling" in r.stderr
    r = runner.invoke(app, ["quasistatic", "random", "--contacts", "4", "--seed", "3", "--method", "mip", "--json"])
    rec = json.loads(r.output)
    assert rec["status"] in ("SOLVED", "NO_SOLUTION")
    if rec["status"] == "SOLVED":
        assert len(rec["c_n"]) == 4 and len(rec["theta_dot"]) == 8 and len(rec["q_dot"]) == 3
    r = runner.invoke(app, ["quasistatic", "data-set-9"])
    assert r.exit_code != 0 and "data-set-1" in r.output


# ------------------------------------------------------------------ Step 3 pivots, property tests

def test_adjacent_vertices_of_the_simplex_and_a_degenerate_vertex():
    """On {x >= 0 : sum x = 1} the vertices adjacent to e_1 are e_2 .. e_m (Murty 3.7.1); on the
    degenerate vertex (0, 0, 1) of {x1 + x3 = 1, x2 + x3 = 1} the only neighbour is (1, 1, 0)."""
    from contactlab.solvers.ucp import _adjacent_vertices
    m = 5
    A = np.ones((1, m))
    V = _adjacent_vertices(A, np.eye(m)[0], None, 1e-12)
    np.testing.assert_allclose(V[np.lexsort(V.T)], np.eye(m)[1:][np.lexsort(np.eye(m)[1:].T)])
    A = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    V = _adjacent_vertices(A, np.array([0.0, 0.0, 1.0]), None, 1e-12)
    np.testing.assert_allclose(V, [[1.0, 1.0, 0.0]])


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(2, 4).flatmap(lambda m: st.tuples(
    st.lists(st.integers(-3, 3), min_size=2 * m, max_size=2 * m),
    st.lists(st.integers(0, 3), min_size=m, max_size=m),
    st.lists(st.integers(0, 3), min_size=m, max_size=m))))
def test_mip_decides_small_integer_ucps_like_brute_force(data):
    """Integer UCPs with one equation per polyhedron, feasible by construction (X, Y nonempty):
    the MIP's decision equals the exhaustive split of indices."""
    coeffs, x0, y0 = data
    m = len(x0)
    A, B = np.array(coeffs[:m], dtype=float)[None, :], np.array(coeffs[m:], dtype=float)[None, :]
    p = UCP(A, A @ np.array(x0, float), B, B @ np.array(y0, float))
    assert cl.solve(p, method="mip").success == _brute_force_ucp(p)
