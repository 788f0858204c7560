"""The compiled step pipeline (issue 11): block Delassus and pyramid rows against scipy products,
fixed-budget mode, box-qp certifying a resting stack, per-shape speculative reach."""
import ctypes
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.errors import ModelError
from contactlab.mechanics.system import build_system, delassus, pyramid_rows
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _pile_system(count=12, steps=12):
    sim = Simulator(make_scene("pile", count=count, seed=1), "box-friction", "pgs", iterations=30)
    for _ in range(steps):
        sim.step()
    c = sim.world.detect(sim.data, reach=sim._reach())
    return sim, build_system(sim.model, sim.data, c, sim.h)


def test_block_delassus_equals_the_sparse_product():
    sim, sys = _pile_system()
    assert sys.nc > 20
    H = sp.vstack([sys.N, sys.S, sys.T], format="csr")
    ref = (H @ sys.Minv @ H.T).toarray() + 1e-8 * np.eye(H.shape[0])
    D = delassus(sys, H, 1e-8, dense=True)
    assert np.abs(D - ref).max() <= 1e-12 * np.abs(ref).max()
    assert np.array_equal(D, D.T)                                   # exactly symmetric
    Ds = delassus(sys, H, 1e-8, dense=False)
    assert sp.issparse(Ds) and np.abs(Ds.toarray() - ref).max() <= 1e-12 * np.abs(ref).max()
    assert Ds.has_canonical_format and np.array_equal(Ds.toarray(), Ds.toarray().T)


def test_contact_pair_delassus_equals_the_row_by_row_one():
    """The system's own [N; S; T] go by 3 x 3 blocks of contact pairs (delassus_frames_csr): the
    same matrix as the row-by-row merge and scipy's product (contacts on the ground and between two
    boxes, pairs sharing one body and both), exactly symmetric, canonical, int32 indices."""
    sim, sys = _pile_system(count=20, steps=40)
    H = sys.NST
    two = np.diff(sys.N.indptr) == 12
    assert sys.nc > 30 and two.any() and (~two).any()
    ref = (H @ sys.Minv @ H.T).toarray() + 1e-8 * np.eye(H.shape[0])
    Df = delassus(sys, H, 1e-8, dense=False)                        # H is sys.NST: by contact pairs
    Dr = delassus(sys, sp.csr_matrix(H.toarray()), 1e-8, dense=False)   # another H: row by row
    assert Df.has_canonical_format and Df.indices.dtype == np.int32 and Df.indptr.dtype == np.int32
    A = Df.toarray()
    assert np.array_equal(A, A.T)
    assert np.abs(A - ref).max() <= 1e-12 * np.abs(ref).max()
    assert np.abs(A - Dr.toarray()).max() <= 1e-14 * np.abs(ref).max()
    assert np.array_equal(Df.indptr, Dr.indptr) and np.array_equal(Df.indices, Dr.indices)


def test_contact_pair_delassus_reuses_the_pattern_of_the_same_rows_only(monkeypatch):
    """A matrix whose rows touch the bodies the last one's did takes the last pattern (none built)
    and its own values, equal to scipy's product on them; each matrix's indices are its own (writing
    to one leaves the next intact); rows on other bodies build the pattern again."""
    import dataclasses

    import contactlab.mechanics.kernels as MK
    import contactlab.mechanics.system as MS
    sim, sys = _pile_system(count=20, steps=40)
    built = []
    real = MK.frame_pattern
    monkeypatch.setattr(MK, "frame_pattern", lambda *a: built.append(1) or real(*a))
    monkeypatch.setattr(MS, "_last_frame_pattern", None)
    H = sys.NST

    def ref(s):
        return (H @ s.Minv @ H.T).toarray() + 1e-8 * np.eye(H.shape[0])

    D1 = delassus(sys, H, 1e-8, dense=False)
    assert len(built) == 1
    heavier = dataclasses.replace(sys, W_blocks=0.5 * sys.W_blocks, Minv=0.5 * sys.Minv)
    D2 = delassus(heavier, H, 1e-8, dense=False)
    assert len(built) == 1                                      # the same rows: the last pattern
    R2 = ref(heavier)
    assert np.abs(D2.toarray() - R2).max() <= 1e-12 * np.abs(R2).max()
    assert not np.shares_memory(D1.indices, D2.indices) and not np.shares_memory(D1.indptr, D2.indptr)
    D1.indices[:] = 0
    D1.indptr[:] = 0
    D3 = delassus(sys, H, 1e-8, dense=False)
    R1 = ref(sys)
    assert np.abs(D3.toarray() - R1).max() <= 1e-12 * np.abs(R1).max()
    assert len(built) == 1
    other, osys = _pile_system(count=12, steps=12)              # other bodies, other contacts
    assert osys.NST.shape != H.shape
    D4 = delassus(osys, osys.NST, 1e-8, dense=False)
    assert len(built) == 2
    R4 = (osys.NST @ osys.Minv @ osys.NST.T).toarray() + 1e-8 * np.eye(osys.NST.shape[0])
    assert np.abs(D4.toarray() - R4).max() <= 1e-12 * np.abs(R4).max()


def test_contact_pair_delassus_declines_what_it_cannot_build():
    """Not three directions, a row that is not whole 6-blocks, or more entries than the index type
    holds: nothing built (ok False), and delassus() goes row by row (same matrix)."""
    from contactlab.mechanics.kernels import delassus_frames_csr
    sim, sys = _pile_system(count=6, steps=30)
    nc, H = sys.nc, sys.NST
    ip, ix, data = H.indptr[:nc + 1], H.indices[:H.indptr[nc]], H.data.reshape(3, -1)
    diag = np.full(3 * nc, 1e-8)
    assert delassus_frames_csr(ip, ix, data, sys.W_blocks, diag, np.zeros(0, np.int32))[0]
    assert not delassus_frames_csr(ip, ix, data[:2], sys.W_blocks, diag[:2 * nc], np.zeros(0, np.int32))[0]
    assert not delassus_frames_csr(ip, ix + 1, data, sys.W_blocks, diag, np.zeros(0, np.int32))[0]
    assert not delassus_frames_csr(ip, ix, data, sys.W_blocks, diag, np.zeros(0, np.int8))[0]    # > 127 entries


def test_pyramid_rows_are_cos_s_plus_sin_t():
    sim, sys = _pile_system(count=6, steps=10)
    d = 6
    D = pyramid_rows(sys.S, sys.T, d).toarray()
    S, T = sys.S.toarray(), sys.T.toarray()
    for i in range(sys.nc):
        for k in range(d):
            a = 2 * np.pi * k / d
            assert np.allclose(D[i * d + k], np.cos(a) * S[i] + np.sin(a) * T[i], atol=1e-15)


def test_fixed_budget_caps_iterations_and_reports_the_residual_reached():
    K = 7
    sim = Simulator(make_scene("stack", count=6), "box-friction", "pgs", iterations=K)
    for _ in range(5):
        rec = sim.step()
        assert 1 <= rec.iterations <= K
        # the reported residual is the problem's own residual at the applied answer
        r = sim.last_problem.residuals(sim.last_solution.z)
        assert rec.residual == pytest.approx(r.natural, rel=1e-9, abs=1e-15)
    assert not rec.success            # 7 sweeps do not certify a 6-box stack: reported, not hidden
    with pytest.raises(ModelError, match="iterations"):
        Simulator(make_scene("stack", count=2), "box-friction", "pgs", iterations=0)


def test_box_qp_certifies_a_resting_stack_every_step_without_drift():
    sim = Simulator(make_scene("stack", count=10), "box-friction", "box-qp")
    x0 = sim.data.position.copy()
    traj = sim.run(1.0)
    assert all(r.success for r in traj.records)
    assert traj.records[0].iterations <= 20                          # cold start
    assert max(r.iterations for r in traj.records[1:]) <= 3          # warm-started Newton steps
    assert np.abs(sim.data.position - x0).max() < 1e-6
    assert traj.metrics()["max_penetration"] <= sim.model.settings.slop


def test_warm_start_certified_without_the_delassus_matrix_is_box_qps_answer():
    """A resting 30-box stack (360 rows, past box friction's dense_max) in certified mode: a step
    whose warm start box-qp would return without a Newton step takes it without the Delassus
    matrix (sim/box_stages.py RowStages.certified_warm_start), and only such a step: on the assembled problem,
    box-qp from the same warm start returns that very z with 0 iterations exactly where the
    shortcut took it (and iterates where it did not), solve() certifies it there with a relative
    residual at most the bound reported, and the trajectory is the assembled path's bit for bit."""
    from contactlab import solve
    from contactlab.models.built import problem_of

    def run(shortcut):
        sim = Simulator(make_scene("stack", count=30), "box-friction", "box-qp", model_options={"coupling": "current"})
        seen = []
        if shortcut:
            inner = sim.stages.certified_warm_start

            def spy(sys, warm):
                out = inner(sys, warm)
                seen.append((sys, warm.copy(), out))
                return out
            sim.stages.certified_warm_start = spy
        else:
            sim.stages.warm_start_certify = False
        for _ in range(60):
            sim.step()
            if shortcut and seen and seen[-1][2] is not None:
                assert sim.last_solution is seen[-1][2][1] and sim.last_problem is not None
        return sim, seen

    sim, seen = run(True)
    ref, _ = run(False)
    assert np.array_equal(sim.data.position, ref.data.position)
    assert np.array_equal(sim.data.quaternion, ref.data.quaternion)
    taken = [s for s in seen if s[2] is not None]
    assert len(taken) >= 15 and len(seen) - len(taken) >= 5
    for sys_, warm, out in seen:
        P = problem_of(sim.contact_model.build(sys_, sim.model_options))
        assert P.n > sim.model_options.dense_max
        s = solve(P, "box-qp", warm_start=warm)
        assert s.status.name == "SOLVED"
        if out is None:
            assert s.iterations >= 1
            continue
        n, sol = out
        assert s.iterations == 0 and np.array_equal(s.z, sol.z) and sol.iterations == 0
        assert sol.status.name == "SOLVED" and sol.info["warm_start_certified"]
        assert s.relative_residual <= sol.relative_residual <= 1e-7
        assert np.abs(sol.w - (P.M @ sol.z + P.q)).max() <= 1e-12 * np.abs(P.q).max()


def test_speculative_reach_grows_only_the_fast_pairs_margin():
    """A box falling at 5 m/s gets speculative contacts with the ground 4 cm below (h v = 5 cm),
    while a resting box 4 cm above the ground gets none (the settings' 1 cm margin)."""
    scene = make_scene("stack", count=1)
    from contactlab.mechanics.scene import Body, Shape
    scene.bodies[1].position = (0.0, 0.0, 0.14)
    scene.bodies.append(Body("slow", position=(1.0, 0.0, 0.14), shapes=[Shape("box", size=(0.2, 0.2, 0.2))]))
    scene.bodies[1].linear_velocity = (0.0, 0.0, -5.0)
    sim = Simulator(scene, "box-friction", "pgs")
    c = sim.world.detect(sim.data, reach=sim._reach())
    names = {sim.model.names[b] for b in c.body_a}
    assert names == {"box0"} and c.count == 4
    assert np.allclose(c.phi, 0.04)


def test_pair_reach_follows_the_relative_motion_and_a_possible_stop():
    """A pair's speculative distance is h max(|v_a - v_b|, |v_a|, |v_b|) (+ spin): two boxes falling
    side by side at 2.5 m/s, 4 cm apart, get none (2.5 cm); two boxes closing head-on at 2.5 m/s
    each get their 4 contacts (5 cm); a box falling at 5 m/s onto a resting one gets them too."""
    from contactlab.collision.boxes import pair_reach
    from contactlab.mechanics.scene import Body, Shape
    scene = make_scene("stack", count=1)
    scene.bodies[1].position = (0.0, 0.0, 5.0)            # box0 out of the way
    placed = {"c": (2.0, 1.0, -2.5), "d": (2.0, 1.24, -2.5),  # side by side (x, z, vz)
              "e": (4.0, 1.0, 2.5), "f": (4.0, 1.24, -2.5),   # head-on
              "g": (6.0, 1.0, 0.0), "h": (6.0, 1.24, -5.0)}   # onto a resting box
    for name, (x, z, vz) in placed.items():
        scene.bodies.append(Body(name, position=(x, 0.0, z), linear_velocity=(0.0, 0.0, vz),
                                 shapes=[Shape("box", size=(0.2, 0.2, 0.2))]))
    sim = Simulator(scene, "box-friction", "pgs")
    c = sim.world.detect(sim.data, sweep=sim._sweep())
    pairs = {tuple(sorted((sim.model.names[a], sim.model.names[b]))) for a, b in zip(c.body_a, c.body_b)}
    assert pairs == {("e", "f"), ("g", "h")} and c.count == 8
    assert np.allclose(c.phi, 0.04)
    sw = sim._sweep()
    k = {sim.model.names[b]: s for s, b in enumerate(sim.world.shape_body)}
    assert np.isclose(pair_reach(sw, k["c"], k["d"]), 0.025) and np.isclose(pair_reach(sw, k["e"], k["f"]), 0.05)
    # the per-shape reach (no sweep): reach_a + reach_b, the bound used before
    c2 = sim.world.detect(sim.data, reach=sim._reach())
    assert {tuple(sorted((sim.model.names[a], sim.model.names[b]))) for a, b in zip(c2.body_a, c2.body_b)} == \
        {("c", "d"), ("e", "f"), ("g", "h")}


def test_success_is_the_methods_own_not_a_small_residual(monkeypatch):
    """Issue 10: a step whose method returned a non-success (here NUMERICAL_FAILURE) with an answer
    that certifies is recorded as rescued, never as the method's success."""
    import dataclasses

    import contactlab.sim.simulator as simmod
    import contactlab.sim.stages as stages
    from contactlab.scenarios import make_scene
    from contactlab.solution import Status

    real = stages.solve

    def failing(problem, method, **kw):
        sol = real(problem, method, **kw)
        return dataclasses.replace(sol, status=Status.NUMERICAL_FAILURE) if problem.n else sol

    sim = simmod.Simulator(make_scene("stack", count=2), "box-friction", "pgs-sm")
    honest = sim.step()
    assert honest.lcp_size > 0 and honest.success and not honest.rescued
    monkeypatch.setattr(stages, "solve", failing)     # the solve stage's solve() (sim/stages.py)
    rec = sim.step()
    assert rec.lcp_size > 0 and not rec.success and rec.rescued and rec.status == "NUMERICAL_FAILURE"


def _pile_lcp(count=30, steps=40):
    """A recorded pile step's box-friction problem with the previous step's normals as bounds
    (arechavaleta §IV-C: a convex bound-constrained QP with redundant face contacts)."""
    from contactlab.collision import match_previous
    from contactlab.models import get_model, make_options
    sim = Simulator(make_scene("pile", count=count, seed=1), "box-friction", "pgs", iterations=30)
    for _ in range(steps):
        sim.step()
    c = sim.world.detect(sim.data, reach=sim._reach())
    c.normal_guess = match_previous(sim.data.contacts, sim.data.result.normal, c, 0.021)
    bf = get_model("box-friction")
    built = bf.build(build_system(sim.model, sim.data, c, sim.h), make_options(bf, {"coupling": "previous"}))
    return getattr(built, "problem", built)


def test_box_qp_interior_point_certifies_a_pile_step_where_newton_and_pgs_stall():
    from contactlab import solve
    p = _pile_lcp()
    assert p.n > 300 and not p.has_coupling
    newton = solve(p, "box-qp", algorithm="newton")
    pgs = solve(p, "pgs", max_iterations=3000)
    sol = solve(p, "box-qp")
    assert not newton.success and not pgs.success           # the stall this method exists for
    assert sol.success and sol.relative_residual <= 1e-6
    # independent check of the answer: inside the box, and the QP's minimum (a strictly convex QP
    # has one minimiser: no feasible point, PGS's included, may have a lower objective)
    M = p.M.toarray() if sp.issparse(p.M) else p.M
    z = sol.z
    assert np.all(z >= p.lo) and np.all(z <= p.hi)
    f = lambda x: 0.5 * x @ M @ x + p.q @ x
    zp = np.clip(pgs.z, p.lo, p.hi)
    assert f(z) <= f(zp) + 1e-12 * abs(f(zp))
    # optimality row by row (z in units of max|z|, w_i in units of its terms |q_i| + |M_i||z|):
    # each row is at lo with w_i >= 0, at hi with w_i <= 0, or has w_i = 0, to 1e-6
    w = M @ z + p.q
    t = np.abs(p.q) + np.abs(M) @ np.abs(z)
    zs, tol = np.abs(z).max(), 1e-6
    at_lo = (z - p.lo <= tol * zs) & (w >= -tol * t)
    at_hi = (p.hi - z <= tol * zs) & (w <= tol * t)
    assert np.all(at_lo | at_hi | (np.abs(w) <= tol * t))
    assert np.any(np.abs(w) > tol * t)                     # not a trivial problem: bounds are active


def test_box_qp_interior_point_matches_the_unique_minimiser_on_random_box_qps():
    """Random strictly convex box QPs (some rows fixed, some free, some one-sided): the interior point
    reaches the same z as an LCP pivoting method (dantzig on the LCP of the QP's KKT, through solve's
    boxed reduction), to 1e-7 relative."""
    from contactlab import solve
    from contactlab.problems import BoxedLCP
    rng = np.random.default_rng(3)
    for n in (5, 20, 40):
        B = rng.normal(size=(n, n))
        M = B @ B.T / n + 1e-3 * np.eye(n)
        q = rng.normal(size=n)
        lo = np.where(rng.random(n) < 0.7, -rng.random(n), -np.inf)
        hi = np.where(rng.random(n) < 0.7, rng.random(n), np.inf)
        lo[:2] = hi[:2] = 0.3                                  # fixed rows are eliminated
        p = BoxedLCP(M, q, lo, hi)
        sol = solve(p, "box-qp", algorithm="ipm")
        ref = solve(p, "lemke")
        assert sol.success and ref.success
        assert np.abs(sol.z - ref.z).max() <= 1e-7 * max(1.0, np.abs(ref.z).max())


@pytest.mark.parametrize("sparse", [False, True])
def test_position_lcp_solves_the_whole_lcp(sparse):
    """The position correction's LCP (box-qp from p = 0, a few rows deep) gives the whole
    LCP's unique solution (A SPD), the one lemke pivots to, and its relative residual as solve()
    measures it."""
    from contactlab import solve
    from contactlab.problems import LCP
    from contactlab.problems.residual import box_relative, relative_error, row_terms
    from contactlab.sim.simulator import position_lcp
    rng = np.random.default_rng(5)
    n = 60
    B = rng.normal(size=(n, n)) * (rng.random((n, n)) < 0.1)
    A = B @ B.T + 0.1 * np.eye(n)
    c = rng.uniform(0.0, 1.0, n)
    deep = np.zeros(n, dtype=bool)
    deep[rng.choice(n, 6, replace=False)] = True
    c[deep] = -rng.uniform(0.5, 2.0, 6)
    p, rel = position_lcp(sp.csr_matrix(A) if sparse else A, c)
    ref = solve(LCP(A, c), "lemke")
    assert ref.success and rel <= 1e-8
    assert np.abs(p - ref.z).max() <= 1e-8 * max(1.0, np.abs(ref.z).max())
    assert np.count_nonzero(p) > deep.sum()        # rows beyond the deep ones are pushed: the growth is exercised
    w = A @ p + c
    assert rel == pytest.approx(relative_error(box_relative(p, w, np.zeros(n), np.full(n, np.inf), c,
                                                            t=row_terms(A, p, c))), abs=1e-15)


def test_box_qp_ldl_refactorisations_solve_the_shifted_system():
    """The interior point's sparse factorisations of M + diag(d) (QDLDL: one symbolic analysis, then
    numeric refactorisations for each new d) solve the system as scipy's spsolve does, also when
    d spans 1e-3 to 1e8 x the row sizes (rows at their bounds at the end of an interior point), and
    a matrix that is not quasi-definite falls back to SuperLU."""
    import contactlab.solvers.box_qp as bq
    p = _pile_lcp(count=100, steps=40)
    keep = p.lo != p.hi
    M = sp.csr_matrix(p.M)[keep][:, keep]
    n = M.shape[0]
    rng = np.random.default_rng(2)
    rowmax = np.asarray(abs(M).max(axis=1).todense()).ravel()
    shifted = bq._Shifted(M, dense_max=0)
    for k in range(3):
        frozen = rng.random(n) < 0.3 * k
        d = np.where(frozen, 1e8 * rowmax, rng.uniform(0.0, 1e-3, n) * rowmax)
        b = rng.normal(size=n)
        x = shifted.solver(d)(b)
        ref = sp.linalg.spsolve((M + sp.diags(d)).tocsc(), b)
        assert np.abs(x - ref).max() <= 1e-8 * np.abs(ref).max()
        assert shifted.ldl is not None                      # the LDL' path, refactorised in place
    # a zero pivot for LDL' without pivoting (not quasi-definite) takes the SuperLU path
    K = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    S = bq._Shifted(sp.csr_matrix(K), dense_max=0)
    x = S.solver(np.zeros(3))(np.array([1.0, 2.0, 3.0]))
    assert S.ldl is None and np.allclose(K @ x, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("cholmod_min", [10 ** 9, 0], ids=["qdldl", "cholmod"])
def test_ldl_pattern_cache_refactorises_a_repeated_pattern_only(cholmod_min, monkeypatch):
    """box-qp's sparse factorisations (QDLDL's LDL', and CHOLMOD's supernodal Cholesky from
    CHOLMOD_MIN rows, forced here on small matrices) keep their symbolic analysis while the sparsity
    pattern repeats: new values on the same pattern are refactorised in place and solve the new
    system; another pattern gets a new analysis and both stay cached; a zero pivot raises and caches
    nothing; CHOLMOD hands an indefinite matrix to LDL' and refuses indefinite new values."""
    import scipy.sparse as sp
    import contactlab.solvers.box_qp as bq
    from contactlab.solvers.box_qp import _PatternCache
    monkeypatch.setattr(bq, "CHOLMOD_MIN", cholmod_min)
    kind = bq._CholmodFactor if cholmod_min == 0 else bq._QDLDLFactor
    rng = np.random.default_rng(3)
    n = 300
    B = sp.random(n, n, density=0.02, random_state=4, format="csr")
    A = (B @ B.T + sp.identity(n)).tocsr()
    cache = _PatternCache()
    first, fresh = cache.ldl(A)
    assert fresh and type(first) is kind
    b = rng.normal(size=n)
    assert np.abs(A @ first.solve(b) - b).max() <= 1e-10 * np.abs(b).max()
    A2 = A.copy()
    A2.data = A2.data * rng.uniform(0.5, 2.0, A2.data.size)
    A2 = (0.5 * (A2 + A2.T) + 5.0 * sp.identity(n)).tocsr()       # same pattern, other values
    assert np.array_equal(A2.indptr, A.indptr) and np.array_equal(A2.indices, A.indices)
    again, _ = cache.ldl(A2)
    assert again is first                                          # refactorised, not analysed again
    assert np.abs(A2 @ again.solve(b) - b).max() <= 1e-10 * np.abs(b).max()
    C = (A + sp.random(n, n, density=0.01, random_state=5) @ sp.random(n, n, density=0.01, random_state=6).T).tocsr()
    C = (C + C.T + 10.0 * sp.identity(n)).tocsr()
    other, _ = cache.ldl(C)
    assert other is not first and np.abs(C @ other.solve(b) - b).max() <= 1e-10 * np.abs(b).max()
    Z = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert cache.ldl(A2)[0] is first                                  # both patterns kept (2 of 64 entries)
    with pytest.raises(RuntimeError):
        cache.ldl(Z)
    assert len(cache.entries) == 2
    # least recently used out first: with room for two, A (used last) stays and C goes when D comes
    small = _PatternCache(size=2)
    a0, c0 = small.ldl(A)[0], small.ldl(C)[0]
    assert small.ldl(A)[0] is a0
    D = (A + 2.0 * sp.identity(n) + sp.random(n, n, density=0.005, random_state=8)).tocsr()
    D = (D + D.T).tocsr()
    d0 = small.ldl(D)[0]
    assert len(small.entries) == 2 and small.holds(A.tocsc()) and small.holds(D.tocsc()) and not small.holds(C.tocsc())
    assert small.ldl(A)[0] is a0 and small.ldl(C)[0] is not c0       # C analysed again
    # an indefinite (nonsingular) matrix: CHOLMOD refuses it, LDL' factors it
    E = (A - 3.0 * sp.identity(n)).tocsr()
    E.data[E.indices == np.repeat(np.arange(n), np.diff(E.indptr))] += np.where(np.arange(n) % 2, 0.0, 6.0)
    e0, _ = _PatternCache().ldl(E)
    assert type(e0) is bq._QDLDLFactor and np.abs(E @ e0.solve(b) - b).max() <= 1e-8 * np.abs(b).max()
    if cholmod_min == 0:        # new values that are not positive definite on a CHOLMOD pattern
        bad = A.copy()
        bad.data = -bad.data
        with pytest.raises(ValueError):
            cache.ldl(bad)
        assert not cache.holds(A.tocsc())


def test_free_set_solves_reuse_the_matrix_pattern():
    """box-qp's Newton solve on the free rows F of a sparse M: with at least EMBED_FREE of the rows
    free, M_FF embedded in M's pattern (held rows' off-diagonal entries zeroed, kernels/box_qp.py
    csr_masked) solves M_FF x = b as the sliced block does, through the pattern cache's one analysis
    of M (the same entry for every such free set, and the interior point's M + diag); with fewer, the
    sliced block (its own analysis); a free set of at most dense_max rows is gathered dense
    (csr_dense_block) as scipy slices it."""
    import scipy.sparse as sp
    import contactlab.solvers.box_qp as bq
    from contactlab.kernels.box_qp import csr_dense_block
    rng = np.random.default_rng(11)
    n = 400
    B = sp.random(n, n // 2, density=0.03, random_state=7, format="csr")
    M = (B @ B.T + 1e-3 * sp.identity(n)).tocsr()
    M.sort_indices()
    bq._LDL.entries.clear()
    analysed = []
    sizes = [int(bq.EMBED_FREE * n) + 1, n - 1, int(bq.EMBED_FREE * n) + 20, int(0.55 * n)]
    for trial, k in enumerate(sizes):
        F = np.sort(rng.choice(n, size=k, replace=False))
        b = rng.normal(size=F.size)
        x = bq._factor_solve(M, F, b, dense_max=200)
        ref = np.linalg.solve(M[F][:, F].toarray(), b)
        assert np.abs(x - ref).max() <= 1e-8 * np.abs(ref).max(), trial
        analysed.append(len(bq._LDL.entries))
    assert analysed == [1, 1, 1, 2]                    # one ordering of M's pattern served the large free sets
    S = bq._Shifted(M, dense_max=200)
    S.solver(np.ones(n))
    assert len(bq._LDL.entries) == 2                   # the interior point's M + diag: M's entry
    F = np.sort(rng.choice(n, size=60, replace=False))
    assert np.array_equal(csr_dense_block(M.indptr, M.indices.astype(np.int64), M.data, F, n), M[F][:, F].toarray())


def test_interior_point_embeds_fixed_rows_in_an_analysed_pattern():
    """box-qp's interior point with a few fixed rows (lo = hi): where M's pattern has an LDL' analysis
    already (Newton's free-set solves), the fixed rows are decoupled in M's own pattern (no second
    analysis); otherwise the free block is sliced. Both give the same iterates: the same iteration
    count and the same certified minimiser."""
    import scipy.sparse as sp
    import contactlab.solvers.box_qp as bq
    rng = np.random.default_rng(4)
    n = 360
    B = sp.random(n, n // 2, density=0.03, random_state=9, format="csr")
    M = (B @ B.T + 1e-2 * sp.identity(n)).tocsr()
    M.sort_indices()
    q = rng.normal(size=n)
    lo = np.where(rng.random(n) < 0.5, 0.0, -1.0)
    hi = np.where(lo == 0.0, np.inf, 1.0)
    fixed = rng.choice(n, size=n // 10, replace=False)
    lo[fixed] = hi[fixed] = rng.uniform(-0.5, 0.5, fixed.size)
    opts = bq.BoxQPOptions()
    bq._LDL.entries.clear()
    z1, w1, ok1 = bq._ipm(M, q, lo, hi, opts, opts.tol, c1 := [0])
    assert not bq._LDL.holds(bq._symmetric_csc(M, M.data))          # sliced: M's pattern not analysed
    bq._factor_solve(M, np.arange(n), np.ones(n), opts.dense_max)   # Newton analyses M's pattern
    entries = len(bq._LDL.entries)
    z2, w2, ok2 = bq._ipm(M, q, lo, hi, opts, opts.tol, c2 := [0])
    assert len(bq._LDL.entries) == entries                           # embedded: no new analysis
    assert ok1 and ok2 and c1[0] == c2[0]
    assert np.array_equal(z1[fixed], lo[fixed]) and np.array_equal(z2[fixed], lo[fixed])
    assert np.abs(z1 - z2).max() <= 1e-6 * max(1.0, np.abs(z1).max())


def test_kinetic_gain_is_the_quadratic_form():
    """mechanics/kernels.py kinetic_gain (the step's contact energy gain) equals
    1/2 (a'Ma - b'Mb) with a, b the weighted velocities, on a block-diagonal CSR M with a body left out."""
    import scipy.sparse as sp
    from contactlab.mechanics.kernels import kinetic_gain
    rng = np.random.default_rng(6)
    blocks = []
    for _ in range(4):
        B = rng.normal(size=(6, 6))
        blocks.append(B @ B.T + np.eye(6))
    M = sp.block_diag(blocks, format="csr")
    a, b = rng.normal(size=24), rng.normal(size=24)
    w = np.ones(24)
    w[12:18] = 0.0
    ref = 0.5 * ((a * w) @ (M @ (a * w)) - (b * w) @ (M @ (b * w)))
    assert kinetic_gain(M.indptr, M.indices, M.data, a, b, w) == pytest.approx(ref, rel=1e-13, abs=1e-13)


def test_compiled_energies_equal_the_array_formulas():
    """kernels/energy.py against the numpy expressions (1/2 m v^2 + 1/2 w' R I R' w, -m p.g) on a
    tumbling pile, and the rotational part against a hand value for one spinning box."""
    from contactlab.sim.simulator import energies, kinetic_energy, potential_energy
    sim = Simulator(make_scene("pile", count=20, seed=1), "box-friction", "pgs", iterations=20)
    for _ in range(25):
        sim.step()
    rng = np.random.default_rng(3)                     # turned boxes spinning about every axis
    sim.data.angular_velocity[:] = rng.normal(size=sim.data.angular_velocity.shape)
    assert np.abs(sim.data.quaternion[1:, 1:]).max() > 1e-2
    ke, pe = energies(sim.model, sim.data)
    assert ke == pytest.approx(kinetic_energy(sim.model, sim.data), rel=1e-12)
    assert pe == pytest.approx(potential_energy(sim.model, sim.data), rel=1e-12)
    one = Simulator(make_scene("stack", count=1), "box-friction", "pgs")
    i = one.model.index("box0")
    one.data.linear_velocity[i] = (0.0, 0.0, 0.0)
    one.data.angular_velocity[i] = (0.0, 0.0, 3.0)     # about z: I_zz = m (0.2^2 + 0.2^2) / 12
    ke1, _ = energies(one.model, one.data)
    assert ke1 == pytest.approx(0.5 * (1.0 * 0.08 / 12) * 9.0, rel=1e-12)


def test_an_interrupt_inside_a_compiled_call_is_raised_as_the_interrupt():
    """A Ctrl-C that fires while a numba call boxes its result surfaces from CPython as SystemError
    with the KeyboardInterrupt as cause; step() and solve() raise it as KeyboardInterrupt (the CLI then
    keeps the partial output and exits 130). Other SystemErrors pass through unchanged."""
    import contactlab as cl
    from contactlab.errors import interrupt_behind
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    from contactlab.solvers import registry

    def interrupted_call(*_):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as k:
            raise SystemError("CPUDispatcher(...) returned a result with an exception set") from k

    sim = Simulator(make_scene("stack", count=2), "box-friction", "pgs", controllers=[interrupted_call])
    with pytest.raises(KeyboardInterrupt):
        sim.step()
    sim = Simulator(make_scene("stack", count=2), "box-friction", "pgs",
                    controllers=[lambda s: (_ for _ in ()).throw(SystemError("a genuine one"))])
    with pytest.raises(SystemError, match="genuine"):
        sim.step()
    spec = registry.get_solver("lemke")
    import dataclasses
    registry._REGISTRY["lemke"] = dataclasses.replace(spec, func=interrupted_call)
    try:
        with pytest.raises(KeyboardInterrupt):
            cl.solve(cl.LCP(np.eye(2), -np.ones(2)), method="lemke")
    finally:
        registry._REGISTRY["lemke"] = spec
    assert interrupt_behind(SystemError("no cause")) is None

    def boxing_many_objects(*_):
        """The chain seen from the simulator's detection (detect_and_match) under SIGALRM-driven
        interrupts: the interrupt wrapped in 16 SystemErrors, one per object still to box."""
        err = KeyboardInterrupt()
        for _ in range(16):
            try:
                raise err
            except BaseException as inner:
                try:
                    raise SystemError("<function _numba_unpickle> returned a result with an exception set") \
                        from inner
                except SystemError as outer:
                    err = outer
        raise err

    sim = Simulator(make_scene("stack", count=2), "box-friction", "pgs", controllers=[boxing_many_objects])
    with pytest.raises(KeyboardInterrupt):
        sim.step()


def _joint_like_rows(rng, nbody, pairs, width=5, extra=()):
    """CSR rows J (width rows per body pair, values in both bodies' six columns; ``extra``: rows
    on any set of bodies) and W (nbody, 6, 6) SPD blocks."""
    import scipy.sparse as sp
    dense = []
    for bodies in [p for p in pairs for _ in range(width)] + list(extra):
        row = np.zeros(6 * nbody)
        for b in bodies:
            row[6 * b:6 * b + 6] = rng.standard_normal(6)
        dense.append(row)
    J = sp.csr_matrix(np.array(dense))
    B = rng.standard_normal((nbody, 6, 6))
    W = np.einsum("kij,klj->kil", B, B) + 0.1 * np.eye(6)
    return J, W


def _grouped_solve(J, W, b, live=None):
    from contactlab.mechanics.joint_projection import grouped_order, rows_solve
    live = np.ones(W.shape[0], dtype=bool) if live is None else live
    indices = J.indices.astype(np.int64)
    return rows_solve(J.indptr.astype(np.int64), indices, J.data, W, b, live), \
        grouped_order(J.indptr.astype(np.int64), indices, live)


def _dense_delassus(J, W):
    Wd = np.zeros((6 * W.shape[0],) * 2)
    for k in range(W.shape[0]):
        Wd[6 * k:6 * k + 6, 6 * k:6 * k + 6] = W[k]
    return J.toarray() @ Wd @ J.toarray().T


def test_joint_projection_solve_is_exact_on_spd_and_minimum_norm_on_dependent_rows():
    """The joint projection solves J M^-1 J' lam = -err by a Cholesky factorisation over the row
    groups (a joint's rows: the bodies they touch) when the matrix is clearly positive definite, and
    by the minimum-norm least squares otherwise (redundant joint rows): against numpy's dense solve
    and pinv, on a tree of bodies (a floating base with four three-joint legs: no fill), the same
    with a loop closed and a row on four bodies (fill), and rows repeated."""
    rng = np.random.default_rng(3)
    tree = [(0, 1), (1, 2), (2, 3), (0, 4), (4, 5), (5, 6), (0, 7), (7, 8), (8, 9), (0, 10), (10, 11), (11, 12)]
    for pairs, extra in ((tree, ()), (tree + [(3, 6)], [(2, 5, 8, 11)]), ([(0,)], ())):
        J, W = _joint_like_rows(rng, 13, pairs, extra=extra)
        b = rng.standard_normal(J.shape[0])
        x, (q, gs, nbr, nnb) = _grouped_solve(J, W, b)
        A = _dense_delassus(J, W)
        assert np.allclose(x, np.linalg.solve(A, b), rtol=0, atol=1e-9 * np.abs(np.linalg.solve(A, b)).max())
        assert sorted(q) == list(range(J.shape[0]))
        assert gs.size - 1 == len(set(pairs)) + len(extra)     # one group per body pair, coupling alone
        assert all(np.all(nbr[s, :nnb[s]] > s) for s in range(gs.size - 1))     # neighbours come later
    # a body that does not yield (kinematic: W = 0) couples nothing: the four legs' groups on it are
    # not neighbours, and the answer is still exact
    J, W = _joint_like_rows(rng, 13, tree)
    W[0] = 0.0
    live = np.ones(13, dtype=bool)
    live[0] = False
    b = rng.standard_normal(J.shape[0])
    x, (q, gs, nbr, nnb) = _grouped_solve(J, W, b, live)
    assert np.allclose(_dense_delassus(J, W) @ x, b, rtol=0, atol=1e-9 * np.abs(b).max())
    assert nnb.sum() == 8      # each leg: hip-knee, knee-foot, eliminated from the foot (the base joins nothing)
    # rows repeated: singular, b in the range: minimum-norm least squares
    Jd, W = _joint_like_rows(rng, 4, [(0, 1), (1, 2)])
    import scipy.sparse as sp
    Jd = sp.csr_matrix(np.vstack([Jd.toarray(), Jd.toarray()[:3]]))
    Ad = _dense_delassus(Jd, W)
    bd = Ad @ rng.standard_normal(Ad.shape[0])
    x, _ = _grouped_solve(Jd, W, bd)
    assert np.allclose(Ad @ x, bd, atol=1e-8 * np.abs(bd).max())
    assert np.allclose(x, np.linalg.pinv(Ad, rcond=1e-12) @ bd, atol=1e-8 * np.abs(x).max())
    from contactlab.mechanics.joint_projection import rows_solve
    assert rows_solve(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), W, np.zeros(0),
                      np.ones(4, dtype=bool)).shape == (0,)


def test_box_friction_bounds_match_their_definition():
    """box_friction._bounds (one compiled pass) against the layout written out: joints free, motors
    +-a_max, limits and normals [0, inf), friction rows coupled to their normal (findex, mu) or boxed
    by mu x the matched previous normal (new contacts: new_contact_bound)."""
    from types import SimpleNamespace
    from contactlab.models import box_friction as bf
    rng = np.random.default_rng(8)
    nj, nm, nl, nc = 3, 2, 1, 4
    guess = rng.uniform(0, 2, nc)
    guess[1] = np.nan
    sys = SimpleNamespace(nj=nj, nm=nm, nl=nl, nc=nc, a_max=rng.uniform(1, 2, nm), mu=rng.uniform(0, 1, nc),
                          normal_guess=guess)
    n = nj + nm + nl + 3 * nc
    o_n = nj + nm + nl
    for coupling in ("current", "previous"):
        opts = bf.Options(coupling=coupling, new_contact_bound=0.25)
        lo, hi, fi, mu = bf._bounds(sys, opts, n)
        assert np.all(lo[:nj] == -np.inf) and np.all(hi[:nj] == np.inf)
        assert np.array_equal(lo[nj:nj + nm], -sys.a_max) and np.array_equal(hi[nj:nj + nm], sys.a_max)
        assert np.all(lo[nj + nm:o_n + nc] == 0) and np.all(hi[nj + nm:o_n + nc] == np.inf)
        if coupling == "current":
            assert np.array_equal(fi, np.r_[np.full(o_n + nc, -1), np.tile(o_n + np.arange(nc), 2)])
            assert np.array_equal(mu, np.r_[np.zeros(o_n + nc), np.tile(sys.mu, 2)])
        else:
            assert fi is None and mu is None
            b = np.tile(sys.mu * np.where(np.isfinite(guess), guess, 0.25), 2)
            assert np.array_equal(hi[o_n + nc:], b) and np.array_equal(lo[o_n + nc:], -b)


def test_islands_split_separate_stacks_and_give_the_whole_problems_answer():
    """Three separate stacks (make_scene("stack", columns=3)) are three islands of the step's boxed LCP
    (kernels/components.py against scipy's connected components on the same graph); solved island by
    island every step certifies on the whole problem and the motion equals the whole solve's."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    from contactlab.sim.islands import island_labels
    scene = lambda: make_scene("stack", count=4, columns=3)
    a = Simulator(scene(), "box-friction", "box-qp", islands=True)
    b = Simulator(scene(), "box-friction", "box-qp")
    for _ in range(30):
        ra, rb = a.step(), b.step()
        assert ra.success and rb.success
        assert a.last_solution.info["islands"] == 3 and "islands" not in b.last_solution.info
        assert sum(a.last_solution.info["island_sizes"]) == a.last_problem.n
        assert a.last_solution.relative_residual <= 1e-6
    assert np.allclose(a.data.position, b.data.position, atol=1e-9)
    p = a.last_problem
    count, labels = island_labels(p)
    M = p.M if sp.issparse(p.M) else sp.csr_matrix(p.M)
    rows = np.flatnonzero(p.findex >= 0)
    G = (M != 0).astype(np.int8) + sp.csr_matrix((np.ones(rows.size), (rows, p.findex[rows])), shape=M.shape)
    c_ref, l_ref = connected_components(G, directed=False)
    assert count == c_ref == 3 and len(set(zip(labels, l_ref))) == 3
    from contactlab.problems import BoxedLCP
    sparse = BoxedLCP(sp.csr_matrix(p.M), p.q, p.lo, p.hi, p.findex, p.mu)
    c_sp, l_sp = island_labels(sparse)
    assert c_sp == 3 and np.array_equal(l_sp, labels)
    single = Simulator(make_scene("stack", count=4), "box-friction", "box-qp", islands=True)
    single.step()
    assert "islands" not in single.last_solution.info          # one island: the whole solve


def test_component_kernels_match_scipy_on_random_graphs():
    """kernels/components.py (row-scan search, union-find; dense and CSR) give scipy's connected
    components on random symmetric and nonsymmetric patterns with findex links."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    from contactlab.kernels.components import csr_components, dense_components
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 40))
        A = (rng.random((n, n)) < rng.uniform(0.01, 0.2)) * rng.normal(size=(n, n))
        if trial % 2:
            A = A + A.T
        fi = np.full(n, -1)
        for i in rng.integers(0, n, size=n // 4):
            j = int(rng.integers(0, n))
            if j != i:
                fi[i] = j
        rows = np.flatnonzero(fi >= 0)
        G = sp.csr_matrix((A != 0).astype(int)) + sp.csr_matrix((np.ones(rows.size), (rows, fi[rows])), shape=(n, n))
        c_ref, l_ref = connected_components(G, directed=False)
        S = sp.csr_matrix(A)
        for c, lab in (dense_components(A, fi), csr_components(S.indptr, S.indices, S.data, fi)):
            assert c == c_ref and len(set(zip(l_ref, lab))) == c_ref


def test_box_friction_warm_start_follows_each_contact_through_a_reordering():
    """box_friction.warm_start maps the previous impulses contact by contact (collision.match_indices:
    same shape pair, nearest point): with the step's contacts reported in another order, every
    contact starts from its own previous normal and friction impulses, and a contact on a new shape
    pair from 0; without a reordering the warm start is the previous answer itself."""
    import dataclasses
    from contactlab.collision import match_indices
    from contactlab.mechanics.system import build_system
    from contactlab.models import box_friction as bf
    sim = Simulator(make_scene("stack", count=3), "box-friction", "box-qp")
    for _ in range(5):
        sim.step()
    prev, result, z = sim.data.contacts, sim.data.result, sim.data.warm["z"]
    nc = prev.count
    same = match_indices(prev, prev, np.inf)
    assert np.array_equal(same, np.arange(nc))
    sys0 = build_system(sim.model, sim.data, prev, sim.h)
    assert np.array_equal(bf.warm_start(sys0, result, same, sim.model_options), z)
    perm = np.random.default_rng(2).permutation(nc)
    moved = dataclasses.replace(prev, **{f: getattr(prev, f)[perm] for f in
                                         ("body_a", "body_b", "shape_a", "shape_b", "point", "normal", "phi", "mu", "t1", "t2")})
    match = match_indices(prev, moved, np.inf)
    assert np.array_equal(match, perm)
    match[0] = -1                                    # as if contact 0 were on a new pair
    z0 = bf.warm_start(build_system(sim.model, sim.data, moved, sim.h), result, match, sim.model_options)
    o_n = z0.size - 3 * nc
    np.testing.assert_array_equal(z0[o_n + 1:o_n + nc], result.normal[perm[1:]])
    np.testing.assert_array_equal(z0[o_n + nc + 1:o_n + 2 * nc], result.tangent[perm[1:], 0])
    np.testing.assert_array_equal(z0[o_n + 2 * nc + 1:], result.tangent[perm[1:], 1])
    assert z0[o_n] == z0[o_n + nc] == z0[o_n + 2 * nc] == 0.0


@pytest.mark.parametrize("coupling", ["current", "previous"])
def test_box_friction_builds_the_checked_problem(coupling):
    """box_friction.build assembles its problem through BoxedLCP.trusted: the same arrays as the
    checked constructor gives (which accepts them), and with a non-finite q (a blown-up state) the
    checked constructor itself, so the error names the argument."""
    from contactlab.errors import ProblemError
    from contactlab.models import box_friction as bf
    from contactlab.problems import BoxedLCP
    sim = Simulator(make_scene("pile", count=6, seed=2), "box-friction", "pgs", model_options={"coupling": coupling})
    for _ in range(30):
        sim.step()
    p = sim.last_problem
    ref = BoxedLCP(p.M, p.q, p.lo, p.hi, *((p.findex, p.mu) if p.has_coupling else ()))
    for f in ("q", "lo", "hi", "findex", "mu"):
        np.testing.assert_array_equal(getattr(p, f), getattr(ref, f))
        assert getattr(p, f).dtype == getattr(ref, f).dtype
    assert p.n == ref.n and type(p.M) is type(ref.M)
    import dataclasses
    sys_ = dataclasses.replace(sim.last_system, v=np.full_like(sim.last_system.v, np.nan))
    sys_._box_rows = None
    with pytest.raises(ProblemError, match="q contains NaN"):
        bf.build(sys_, sim.model_options)


def test_blas_threads_limits_and_restores_and_rescans_after_an_import():
    """blas_threads(n) limits every loaded BLAS to n threads while open and restores them after;
    threadpoolctl's library scan is taken once and again only after a module was imported."""
    import sys
    import types

    from threadpoolctl import threadpool_info

    import contactlab.blas as blas

    from threadpoolctl import threadpool_limits

    def blas_counts():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    initial = blas_counts()
    with threadpool_limits(limits=2, user_api="blas"):     # (the test session runs BLAS on one thread)
        before = blas_counts()
        with blas.blas_threads(1):
            assert blas_counts() and all(n == 1 for n in blas_counts())
        assert blas_counts() == before
    first = blas._thread_pools()
    assert blas._thread_pools() is first
    sys.modules["_contactlab_test_new_module"] = types.ModuleType("_contactlab_test_new_module")
    try:
        assert blas._thread_pools() is not first
    finally:
        del sys.modules["_contactlab_test_new_module"]
    assert blas_counts() == initial
    with blas.blas_threads(None):
        assert blas_counts() == initial


def test_step_record_energies_and_depth_are_their_definitions():
    """The record's kinetic energy, energy and deepest overlap (one compiled pass after the step)
    equal energies() of the state after the step and max(0, -min phi) of the step's contacts."""
    from contactlab.scenarios import make_scene
    from contactlab.sim.simulator import Simulator, energies

    sim = Simulator(make_scene("pile", count=6), "box-friction", "box-qp")
    seen_overlap = False
    for _ in range(120):
        rec = sim.step()
        ke, pe = energies(sim.model, sim.data)
        phi = sim.data.contacts.phi
        assert rec.kinetic_energy == ke and rec.energy == ke + pe
        assert rec.max_penetration == (max(0.0, float(-phi.min())) if phi.size else 0.0)
        seen_overlap |= rec.max_penetration > 0
    assert seen_overlap          # the pile's contacts overlapped at some step: the depth was measured


_HEAP_PROBE = """
import resource, numpy as np
from contactlab.heap import keep_freed_memory
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
Simulator(make_scene("stack", count=2), "box-friction", "pgs", iterations=5)     # applies it
def step_like():        # 200 arrays of 100 kB allocated and freed, as a large step's kernels do
    arrs = [np.ones(12_500) for _ in range(200)]
    del arrs
step_like()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    step_like()
print(keep_freed_memory(), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 4)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"),
                    reason="the heap thresholds are glibc's")
def test_simulator_keeps_freed_memory_so_steps_do_not_fault_it_back():
    """Built, a Simulator sets glibc's thresholds (contactlab/heap.py): memory a step frees stays in
    the process, and the next step's allocations of the same size take no page fault (20 MB in
    100 kB arrays: glibc's defaults give most of it back to the system and fault it in again, 4,900
    pages);
    CONTACTLAB_KEEP_HEAP=0 leaves the allocator as it is."""
    import subprocess

    def run(env_value):
        env = dict(os.environ, CONTACTLAB_KEEP_HEAP=env_value)
        out = subprocess.run([sys.executable, "-c", _HEAP_PROBE], env=env, capture_output=True, text=True,
                             check=True).stdout.split()
        return out[0] == "True", float(out[1])

    kept, faults = run("1")
    assert kept and faults < 50
    kept, faults = run("0")
    assert not kept and faults > 2000
