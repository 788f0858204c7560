"""Matrix-free PGS (kernels/pgs_matrix_free/): the iterates of ``pgs`` on the assembled
box-friction LCP (arechavaleta eq. 16-17) without forming H M^-1 H', and the simulator's
fixed-budget mode on it."""
import numpy as np
import pytest

from contactlab import solve
from contactlab.kernels.pgs_matrix_free import solve_matrix_free
from contactlab.models import box_friction as bf
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _state(name, count, steps, **kw):
    sim = Simulator(make_scene(name, count=count, **kw), "box-friction", "pgs", iterations=30)
    for _ in range(steps):
        sim.step()
    return sim, sim.last_system


@pytest.mark.parametrize("name,count,steps", [("stack", 10, 3), ("stack", 40, 3), ("pile", 30, 45)])
def test_same_iterates_as_pgs_on_the_assembled_matrix(name, count, steps):
    sim, sys_ = _state(name, count, steps, **({"seed": 1} if name == "pile" else {}))
    P = bf.build(sys_)
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    assert P.n == H.shape[0] > 50 and np.array_equal(P.q, q)
    if name == "pile":
        assert np.count_nonzero(findex >= 0) > 0 and sys_.nc > 40
    for K in (1, 7, 60):
        # tol far below reach: both run exactly K sweeps in the same order
        ref = solve(P, "pgs", max_iterations=K, tol=1e-300)
        z, w, dv, code, st = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=K, check=0)
        assert ref.iterations == int(st[0]) == K
        assert np.abs(z - ref.z).max() <= 1e-12 * np.abs(ref.z).max()
        assert np.abs(w - (P.M @ z + P.q)).max() <= 1e-12 * np.abs(P.q).max()
        # dv = M^-1 H' z per body, and the residuals are solve()'s (problems/residual.py)
        assert np.allclose(dv.reshape(-1), sys_.Minv @ (H.T @ z), rtol=0, atol=1e-13 * np.abs(dv).max())
        assert st[2] == pytest.approx(ref.relative_residual, rel=1e-8)
        assert st[1] == pytest.approx(P.residuals(z).natural, rel=1e-8)
        if name == "pile":      # friction rows of a normal at 0 (held, skipped by the sweeps' lookahead)
            assert np.any((findex >= 0) & (ref.z[np.maximum(findex, 0)] == 0.0))


def test_residual_decreases_and_certifies_with_enough_sweeps():
    sim, sys_ = _state("stack", 10, 3)
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    res = []
    for K in (1, 10, 100, 1000):
        *_, code, st = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=K, check=0)
        res.append(st[2])
    assert all(b < a for a, b in zip(res, res[1:]))
    # a 2-box stack certifies within the cap; the stop is checked every 10 sweeps, and solve()
    # certifies the same z on the assembled problem
    sim, sys_ = _state("stack", 2, 3)
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    z, w, dv, code, st = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=20000,
                                           tol=1e-8, check=10)
    assert code == 0 and st[2] <= 1e-8 and int(st[0]) % 10 == 0 and st[0] < 20000
    P = bf.build(sys_)
    ref = solve(P, "pgs", max_iterations=int(st[0]), tol=1e-300)
    assert ref.relative_residual == pytest.approx(st[2], rel=1e-6) and ref.relative_residual <= 1e-8


def test_resting_box_normal_impulse_is_m_g_h():
    """One 1 kg box at rest on the ground: its contact normals carry m g h per step (the box stays)."""
    sim = Simulator(make_scene("stack", count=1), "box-friction", "pgs", iterations=2000)
    rec = sim.step()
    assert rec.success and sim.last_solution.info.get("matrix_free")
    m = float(sim.model.mass[sim.model.index("box0")])
    g = abs(float(sim.model.gravity[2]))
    assert sim.data.result.normal.sum() == pytest.approx(m * g * sim.h, rel=1e-6)
    assert np.abs(sim.data.linear_velocity[sim.model.index("box0")]).max() <= 1e-7


def test_fixed_budget_simulator_matches_the_assembled_pgs_path():
    """The same run with the matrix-free path and with the assembled one (omega=1 forces it:
    identical iterates) gives the same trajectory up to rounding; the lazily assembled problem is
    the one the step solved."""
    a = Simulator(make_scene("stack", count=8), "box-friction", "pgs", iterations=20)
    b = Simulator(make_scene("stack", count=8), "box-friction", "pgs", iterations=20, solver_options={"omega": 1.0})
    assert a.stages.matrix_free and not b.stages.matrix_free
    for _ in range(15):
        ra, rb = a.step(), b.step()
        assert ra.iterations == rb.iterations and ra.lcp_size == rb.lcp_size
        assert ra.residual == pytest.approx(rb.residual, rel=1e-6)
    assert a.last_solution.info.get("matrix_free") and not b.last_solution.info.get("matrix_free")
    assert np.abs(a.data.position - b.data.position).max() <= 1e-9
    assert a.last_problem.n == ra.lcp_size
    r = a.last_problem.residuals(a.last_solution.z)
    assert ra.residual == pytest.approx(r.natural, rel=1e-9)


def test_unreported_residual_is_a_lower_bound_and_dv_is_fresh():
    """report=False (the position correction): an answer that misses tol gets the screen's lower
    bound of its relative residual, never more than the exact value, and dv = M^-1 H' z still."""
    sim, sys_ = _state("pile", 30, 45, seed=1)
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    z1, _, dv1, c1, s1 = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=20, check=0)
    z2, _, dv2, c2, s2 = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=20, check=0,
                                           report=False)
    assert c1 == c2 == 1 and np.array_equal(z1, z2)
    assert 0 < s2[2] <= s1[2] and s2[1] == pytest.approx(s1[1], rel=1e-12)
    assert np.abs(dv2 - dv1).max() <= 1e-14 * np.abs(dv1).max()


def test_joint_rows_run_matrix_free_with_the_same_answers():
    """Free joint rows (lo = -inf, hi = inf) of a pendulum chain: matrix-free and assembled pgs agree."""
    a = Simulator(make_scene("pendulum-chain"), "box-friction", "pgs", iterations=30)
    b = Simulator(make_scene("pendulum-chain"), "box-friction", "pgs", iterations=30, solver_options={"omega": 1.0})
    assert a.stages.matrix_free and not b.stages.matrix_free and a.model.joints
    for _ in range(20):
        ra, rb = a.step(), b.step()
        assert ra.lcp_size == rb.lcp_size > 0 and ra.iterations == rb.iterations
        assert ra.residual == pytest.approx(rb.residual, rel=1e-6)
    assert a.last_solution.info.get("matrix_free")
    assert np.abs(a.data.position - b.data.position).max() <= 1e-12


def _w_steps(P, H, sys_, lo, hi, findex, mu, cfm, q, K):
    """Bullet's per-sweep measure, computed independently: sweeps 1..K with no stop (tol far
    below reach), and after each the largest |z_k - z_{k-1}|_i A_ii (each row moves once a sweep)."""
    A_ii = P.M.diagonal()
    prev, out = np.zeros(P.n), []
    for k in range(1, K + 1):
        z, *_ = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=k, check=0)
        out.append(float(np.max(np.abs(z - prev) * A_ii)))
        prev = z
    return out


def test_bullets_stop_ends_at_the_first_sweep_below_w_step_tol():
    """w_step_tol (Bullet's solverResidualThreshold, square-rooted): the sweeps end after the first
    sweep whose largest correction |dz_i| A_ii of a row's own w_i is <= w_step_tol; the assembled
    pgs and the matrix-free kernel stop at that same sweep, and an answer above tol is not SOLVED."""
    sim, sys_ = _state("pile", 30, 45, seed=1)
    P = bf.build(sys_)
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    steps = _w_steps(P, H, sys_, lo, hi, findex, mu, cfm, q, 40)
    tau = 0.5 * (steps[4] + steps[5])           # a threshold between two sweeps' measures
    K = next(k + 1 for k, s in enumerate(steps) if s <= tau)
    assert 3 <= K < 40 and all(s > tau for s in steps[:K - 1])
    z, w, dv, code, st = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=50,
                                           tol=1e-12, check=10, w_step_tol=tau)
    ref = solve(P, "pgs", max_iterations=50, tol=1e-12, w_step_tol=tau)
    assert int(st[0]) == ref.iterations == K
    assert code == 4 and ref.status == "NO_SOLUTION_FOUND" and st[2] > 1e-12
    assert np.abs(z - ref.z).max() <= 1e-12 * np.abs(ref.z).max()
    assert st[2] == pytest.approx(ref.relative_residual, rel=1e-8)
    # off (0) by default: the full budget
    *_, st0 = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=50, tol=1e-12)
    assert int(st0[0]) == 50 and solve(P, "pgs", max_iterations=50, tol=1e-12).iterations == 50
    with pytest.raises(Exception, match="w_step_tol"):
        solve(P, "pgs", w_step_tol=-1.0)


def test_fixed_budget_simulator_stops_as_bullet_with_w_step_tol():
    """The simulator's fixed-budget mode with w_step_tol takes the matrix-free path, stops early on
    a resting pile (fewer sweeps than without) and reports each step's residual."""
    kw = dict(iterations=50, model_options={"coupling": "current"})
    a = Simulator(make_scene("pile", count=10), "box-friction", "pgs", solver_options={"w_step_tol": 3.16e-4}, **kw)
    b = Simulator(make_scene("pile", count=10), "box-friction", "pgs", **kw)
    assert a.stages.matrix_free
    ia, ib = [], []
    for _ in range(150):
        ia.append(a.step().iterations)
        ib.append(b.step().iterations)
        assert np.isfinite(a.last_solution.relative_residual)
    assert sum(ia) < sum(ib) and max(ia) <= 50
    # the piles come to rest alike (no box moved more than 1 mm apart)
    assert np.abs(a.data.position - b.data.position).max() <= 1e-3


def test_sweep_order_is_top_down_within_each_class():
    """sweep_order: the uncoupled rows first, then the coupled ones; within each class by height,
    highest first, ties in H's order; no height: H's order within each class."""
    from contactlab.kernels.pgs_matrix_free import sweep_order
    findex = np.array([-1, -1, 0, -1, 1, 3, -1], dtype=np.int64)
    height = np.array([0.1, 0.5, 0.5, np.inf, 0.9, 0.1, 0.5])
    order = sweep_order(findex, height)
    assert order.tolist() == [3, 1, 6, 0, 4, 2, 5]
    assert sweep_order(findex, np.zeros(0)).tolist() == [0, 1, 3, 6, 2, 4, 5]


def test_assembled_pgs_sweeps_in_the_height_order():
    """pgs's ``height`` option gives the matrix-free kernel's iterates with the same heights (both
    sweep top down), and other iterates than H's order; a height of the wrong size is refused."""
    sim, sys_ = _state("pile", 30, 45, seed=1)
    P = bf.build(sys_)
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    height = bf.row_heights(np.ascontiguousarray(sys_.contacts.point, dtype=np.float64), sim.model.gravity, 0, 3)
    assert np.unique(height).size > 20
    z, *_ = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=7, check=0, height=height)
    ref = solve(P, "pgs", max_iterations=7, tol=1e-14, height=height)
    plain = solve(P, "pgs", max_iterations=7, tol=1e-14)
    assert ref.iterations == 7 and np.abs(z - ref.z).max() <= 1e-12 * np.abs(ref.z).max()
    assert np.abs(plain.z - ref.z).max() > 1e-6 * np.abs(ref.z).max()
    with pytest.raises(Exception, match="height"):
        solve(P, "pgs", height=height[:-1])
    with pytest.raises(Exception, match="height"):
        solve(P, "pgs", height=np.full(P.n, np.nan))


def test_all_row_terms_equal_the_row_by_row_terms():
    """all_row_terms (each pair of slots on a body once) gives every row's |q_i| + sum_j |A_ij| |z_j|,
    checked against the assembled matrix, on a pile (rows on one and on two moving bodies)."""
    from contactlab.kernels import pgs_matrix_free as PM
    sim, sys_ = _state("pile", 30, 45, seed=1)
    P = bf.build(sys_)
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    z, *_ = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=20, check=0)
    n, nbody = P.n, sys_.W_blocks.shape[0]
    ptr, body, hb, ok = PM.row_slots(H.indptr.astype(np.int64), H.indices.astype(np.int64), H.data, n, nbody)
    assert ok and np.any(body == nbody)          # ground contacts: one slot on no moving body
    g, diag, cf = np.empty_like(hb), np.empty(n), np.full(n, float(cfm))
    PM.prepare(ptr, body, hb, sys_.W_blocks, cf, g, diag)
    bptr, bslot, srow = PM.body_slots(ptr, body, nbody)
    t = np.empty(n)
    PM.all_row_terms(ptr, body, hb, g, bptr, bslot, srow, q, cf, z, t)
    M = P.M.toarray() if hasattr(P.M, "toarray") else np.asarray(P.M)
    expected = np.abs(q) + np.abs(M) @ np.abs(z)
    assert np.allclose(t, expected, rtol=1e-12, atol=0.0)


def test_fixed_budget_stack_stays_up():
    """A 10-box stack under 50 warm-started sweeps a step stays up for 8 s (top box within 1 cm, the
    motion dying out). Swept bottom up (H's order) it rocked with a growing amplitude: kinetic
    energy 7e-4 -> 3.5e-2 J, the top box 0.15 m off after 10 s."""
    sim = Simulator(make_scene("stack", count=10), "box-friction", "pgs", iterations=50,
                    model_options={"coupling": "current"})
    top = sim.model.index("box9")
    start = sim.data.position[top].copy()
    energy = [sim.step().kinetic_energy for _ in range(800)]
    assert np.linalg.norm(sim.data.position[top] - start) <= 1e-2
    assert max(energy[-100:]) <= 1e-5 and max(energy[-100:]) < 0.1 * max(energy[:100])


def test_warm_start_that_certifies_reports_solve_relative_residual():
    """A warm start that already certifies: no sweep, CONVERGED, and the reported relative residual
    is solve()'s on the assembled problem (max of natural and infeasibility of box_relative), from
    the check that refines the first screen; with a budget it cannot meet, the final check's exact
    value is solve()'s too."""
    from contactlab.problems.residual import relative_error
    sim, sys_ = _state("pile", 30, 45, seed=1)
    P = bf.build(sys_)
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    z, *_ = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=5000, tol=1e-9)
    expected = relative_error(P.relative_residuals(z))
    assert 1e-8 < expected < 1e-4          # PGS's answer after 5,000 sweeps: it stalls short of 1e-9
    z2, _, _, code, st = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, z0=z, max_sweeps=50,
                                           tol=2.0 * expected)
    assert code == 0 and st[0] == 0 and np.array_equal(z2, z)
    assert st[2] == pytest.approx(expected, rel=1e-9)
    z3, _, _, code, st = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=3, tol=1e-14)
    assert code == 1 and st[0] == 3
    assert st[2] == pytest.approx(relative_error(P.relative_residuals(z3)), rel=1e-9)


@pytest.mark.parametrize("name,count,steps,tol", [("stack", 3, 20, 1e-7), ("pile", 10, 60, 1e-7),
                                                  ("pile", 10, 60, 1e-8)])
def test_check_gate_stops_at_the_first_check_point_that_certifies(name, count, steps, tol):
    """The check points skipped by the gate (a sweep that still corrects a row's w by more than
    CHECK_RELATIVE tol of its scale) are ones that would not certify: the sweeps stop at the first
    multiple of ``check`` at which pgs on the assembled matrix, run that many sweeps, certifies."""
    sim, sys_ = _state(name, count, steps, **({"seed": 1} if name == "pile" else {}))
    H, q, cfm, lo, hi, findex, mu = bf.rows(sys_)
    z, w, dv, code, st = solve_matrix_free(H, sys_.W_blocks, q, cfm, lo, hi, findex, mu, max_sweeps=600,
                                           tol=tol, check=10)
    P = bf.build(sys_)
    first = next((K for K in range(10, 601, 10)
                  if solve(P, "pgs", max_iterations=K, tol=1e-300).relative_residual <= tol), None)
    assert first is not None and first > 10         # the gate had check points to skip
    assert code == 0 and int(st[0]) == first
