"""box-qp (solvers/box_qp/): certifying resting stacks and pile steps, the interior point against the
unique minimiser, and its sparse factorisations (QDLDL / CHOLMOD pattern cache, free-set solves)."""
import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.mechanics.system import build_system
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


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


def test_box_qp_certifies_a_resting_stack_every_step_without_drift():
    sim = Simulator(make_scene("stack", count=10), "box-friction", "box-qp")
    x0 = sim.data.position.copy()
    traj = sim.run(1.0)
    assert all(r.success for r in traj.records)
    assert traj.records[0].iterations <= 20                          # cold start
    assert max(r.iterations for r in traj.records[1:]) <= 3          # warm-started Newton steps
    assert np.abs(sim.data.position - x0).max() < 1e-6
    assert traj.metrics()["max_penetration"] <= sim.model.settings.slop


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
    monkeypatch.setattr(bq.factors, "CHOLMOD_MIN", cholmod_min)
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


def test_interior_point_stops_cleanly_where_an_iterate_rounds_onto_a_bound():
    """A bound of 1e17 with the problem's own scale 1: lo + scale_z rounds to lo (ulp 16), so the gap
    z - lo is exactly 0 and s / gap divides by zero (NaN iterates before; ZeroDivisionError where the
    kernel ran as Python, seen on a Stewart-Trinkle pile island). The interior point returns a finite
    iterate and does not claim convergence, and box-qp's default (Newton) certifies the minimiser."""
    import contactlab.solvers.box_qp as bq
    from contactlab import solve
    from contactlab.problems import BoxedLCP
    M, q = np.eye(2), np.array([1.0, -1.0])
    lo, hi = np.array([1e17, 0.0]), np.array([np.inf, np.inf])
    gl, gu, Dg = np.empty(2), np.empty(2), np.empty(2)
    L, U = np.isfinite(lo), np.isfinite(hi)
    mu = bq._ipm_gaps(np.array([1e17, 1.0]), np.ones(2), np.zeros(2), np.where(L, lo, 0.0), np.zeros(2),
                      L, U, gl, gu, Dg)
    assert mu == -1.0                                           # the gap 0 is reported, not divided by
    opts = bq.BoxQPOptions()
    z, w, ok = bq._ipm(M, q, lo, hi, opts, opts.tol, [0])
    assert np.all(np.isfinite(z)) and np.all(np.isfinite(w)) and not ok
    sol = solve(BoxedLCP(M, q, lo, hi), "box-qp")
    assert sol.success and np.allclose(sol.z, [1e17, 1.0], rtol=1e-12)
