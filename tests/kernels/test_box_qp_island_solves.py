"""Islands of ``box-qp`` (independent row groups): their labels from the rows' bodies (kernels/components.py
``row_block_components``) against scipy's connected components, and box-qp's island-by-island solve
(``_islands``, kernels/box_qp.py ``box_qp_islands``; dense problems' ``island_blocks``) against each
island solved alone on every path it takes, its budgets, labels that are wrong (never certified), and
in the simulator against the whole-problem solve. The contact problems are tests/kernels/test_box_qp.py's."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from contactlab.problems import BoxedLCP
from contactlab.solution import Status
from contactlab.solvers import solve
import contactlab.solvers.box_qp as BQ
from contactlab.kernels.components import row_block_components
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.sim.islands import island_labels
from tests.kernels.test_box_qp import contact_problem


def test_row_block_components_match_scipy_on_random_row_matrices():
    """Rows joined by a shared 6-column block or a findex link: the same partition as scipy's
    connected components of the row-block graph, numbered in order of first row, with each row's
    columns sorted or shuffled."""
    rng = np.random.default_rng(3)
    for trial in range(40):
        n, nb = int(rng.integers(1, 60)), int(rng.integers(1, 30))
        rows, cols = [], []
        for i in range(n):
            for b in rng.choice(nb, size=int(rng.integers(0, min(nb, 2) + 1)), replace=False):   # 0-2 bodies a row
                for c in rng.choice(6, size=int(rng.integers(1, 4)), replace=False):
                    rows.append(i)
                    cols.append(6 * b + c)
        H = sp.csr_matrix((rng.normal(size=len(rows)), (rows, cols)), shape=(n, 6 * nb))
        H.sum_duplicates()
        if trial % 2:           # any column order within a row: each row's entries shuffled
            for i in range(n):
                a, b = H.indptr[i], H.indptr[i + 1]
                perm = a + rng.permutation(b - a)
                H.indices[a:b], H.data[a:b] = H.indices[perm].copy(), H.data[perm].copy()
            H.has_sorted_indices = False
        findex = np.full(n, -1, dtype=np.int64)
        linked = rng.random(n) < 0.3
        findex[linked] = rng.integers(0, n, size=int(linked.sum()))
        count, labels = row_block_components(H.indptr, H.indices, findex, 6)
        # the reference: rows and blocks as nodes of one graph
        block_of = H.indices // 6
        row_of = np.repeat(np.arange(n), np.diff(H.indptr))
        links = np.flatnonzero(findex >= 0)
        G = sp.coo_matrix((np.ones(row_of.size + links.size),
                           (np.concatenate([row_of, links]), np.concatenate([n + block_of, findex[links]]))),
                          shape=(n + nb, n + nb))
        _, ref = connected_components(G, directed=False)
        ref = ref[:n]
        assert count == np.unique(ref).size
        assert np.array_equal(labels[np.argsort(labels, kind="stable")], np.sort(labels))
        # the same partition: label pairs correspond one to one, numbered by first row
        assert len(set(zip(labels.tolist(), ref.tolist()))) == count
        first = [int(np.flatnonzero(labels == k)[0]) for k in range(count)]
        assert first == sorted(first)


def block_problem(rng, blocks):
    """A block-diagonal sparse boxed LCP of random contact problems (tests/kernels/test_box_qp.py), one
    island each, with its islands set as a model sets them; and the blocks."""
    parts = [contact_problem(rng, nc, coupled, psd=False) for nc, coupled in blocks]
    M = sp.block_diag([p.M for p in parts], format="csr")
    M.sort_indices()
    offs = np.cumsum([0] + [p.n for p in parts])
    fi = np.concatenate([np.where(p.findex >= 0, p.findex + o, -1) for p, o in zip(parts, offs)])
    mu = np.concatenate([p.mu for p in parts])
    P = BoxedLCP(M, np.concatenate([p.q for p in parts]), np.concatenate([p.lo for p in parts]),
                 np.concatenate([p.hi for p in parts]), fi, mu)
    P.islands = (len(parts), np.repeat(np.arange(len(parts)), [p.n for p in parts]))
    return P, parts, offs


@pytest.mark.parametrize("options", [{}, {"max_iterations": 1}, {"island_iterations": 1},
                                     {"island_poor_iterations": 1}, {"dense_max": 20},
                                     {"small_n": 10}, {"island_search_max": 10, "newton_steps": 0}],
                         ids=["compiled-newton", "interior-point-after-newton", "island-budget-one-step",
                              "poor-start-budget-one-step", "large-islands-sparse",
                              "islands-above-small_n-whole-method", "islands-above-island_search_max-ipm"])
def test_islands_are_solved_as_each_island_alone(options, monkeypatch):
    """A block-diagonal problem with its islands: SOLVED, each island's z the one box-qp finds for that
    island alone (SPD blocks: one minimiser), on the compiled Newton path, with Newton cut to one
    step (the interior point takes over on the islands it leaves) and with islands above dense_max
    (their sliced sparse blocks through the whole method) or above small_n (the whole method, full
    Newton steps then the interior point, on their dense blocks), and with the compiled call's islands
    above island_search_max given newton_steps (here 0) full steps, then one interior point on the
    union of the islands it leaves. The islands are the problem's own labels (island_labels on the
    matrix agrees)."""
    rng = np.random.default_rng(11)
    P, parts, offs = block_problem(rng, [(2, True), (5, False), (9, True), (1, False), (12, True), (4, True)])
    assert island_labels(P)[0] == len(parts) and np.array_equal(island_labels(P)[1], P.islands[1])
    calls = []
    original = BQ._python_path
    monkeypatch.setattr(BQ.solver, "_python_path", lambda *a: calls.append(a[4][0]) or original(*a))
    sol = solve(P, "box-qp", **options)
    assert sol.status is Status.SOLVED and sol.relative_residual <= 1e-6
    assert sol.info["islands"] == len(parts)
    if 1 in (options.get("max_iterations"), options.get("island_iterations"), options.get("island_poor_iterations")):
        assert "ipm" in calls       # some island's Newton gave up and the interior point went on
    if "island_search_max" in options:      # the four islands of more than 10 rows: no Newton step,
        assert calls == ["ipm"]             # one interior point on their union
    for p, a, b in zip(parts, offs[:-1], offs[1:]):
        alone = solve(p, "box-qp", algorithm="ipm", tol=1e-9)
        assert alone.success
        assert np.allclose(sol.z[a:b], alone.z, rtol=1e-5, atol=1e-6 * np.abs(alone.z).max())
    whole = solve(P, "box-qp", islands=False)
    assert whole.success and "islands" not in whole.info


def test_newton_only_islands_report_max_iterations_when_an_island_does_not_settle():
    """algorithm="newton" with one step: an island whose answer needs more is UNSETTLED, so the
    whole answer is MAX_ITERATIONS (never SOLVED), and its residual says so."""
    rng = np.random.default_rng(5)
    P, parts, _ = block_problem(rng, [(6, False), (8, False), (7, False)])
    one_step = [solve(p, "box-qp", algorithm="newton", max_iterations=1) for p in parts]
    assert not all(s.success for s in one_step)         # this data: some island needs more than one step
    sol = solve(P, "box-qp", algorithm="newton", max_iterations=1)
    assert sol.status is Status.MAX_ITERATIONS and sol.relative_residual > 1e-6
    # Newton alone has no interior point to hand over to: its islands keep max_iterations, whatever
    # island_iterations says (the "auto" islands' budget before the interior point)
    full = solve(P, "box-qp", algorithm="newton", island_iterations=1)
    assert full.status is Status.SOLVED and full.relative_residual <= 1e-6 and full.iterations > len(parts)


def test_simulator_islands_give_the_whole_problems_motion():
    """Six separate 4-box stacks (288 rows: sparse, friction-coupled bounds): the model's islands,
    solved apart, move the boxes as the whole-problem solve does; a 50-box pile (25 columns of two)
    certifies every step solved island by island."""
    scene = lambda: make_scene("stack", count=4, columns=6)
    a = Simulator(scene(), "box-friction", "box-qp")
    b = Simulator(scene(), "box-friction", "box-qp", solver_options={"islands": False})
    for sim in (a, b):      # box-qp every step (not the warm start certified without it, most steps here)
        sim.stages.warm_start_certify = False
    for _ in range(30):
        ra, rb = a.step(), b.step()
        assert ra.success and rb.success
        assert a.last_solution.info["islands"] == 6 and "islands" not in b.last_solution.info
    p = a.last_problem                  # the model's labels (bodies of the rows) = the matrix's components
    assert p.islands[0] == 6 and np.array_equal(p.islands[1], island_labels(p)[1])
    assert np.abs(a.data.position - b.data.position).max() <= 1e-9
    pile = Simulator(make_scene("pile", count=50), "box-friction", "box-qp", model_options={"coupling": "previous"})
    for _ in range(60):
        assert pile.step().success
    assert pile.last_solution.info["islands"] == 25 and pile.last_solution.relative_residual <= 1e-6


def test_wrong_island_labels_are_never_certified():
    """Labels that split rows M couples (a builder's bug): box-qp solves the blocks apart, and
    solve()'s certification, computed on the whole problem, refuses the answer (no false SOLVED)."""
    rng = np.random.default_rng(4)
    p = contact_problem(rng, 8, coupled=False, psd=False)
    P = BoxedLCP(sp.csr_matrix(p.M), p.q, p.lo, p.hi)
    P.islands = (2, (np.arange(P.n) >= P.n // 2).astype(np.int64))
    whole = solve(P, "box-qp", islands=False)
    assert whole.status is Status.SOLVED
    split = solve(P, "box-qp")
    assert split.info.get("islands") == 2 and split.info.get("claimed_status") == "SOLVED"
    assert split.status is Status.NUMERICAL_FAILURE and split.relative_residual > 1e-6


@pytest.mark.parametrize("algorithm", ["ipm", "auto", "newton"])
def test_islands_whose_answer_is_zero_are_solved_by_every_algorithm(algorithm):
    """A sparse problem with islands, some of them separating contacts (z = 0 solves them: q >= 0 on
    their normals, their friction rows boxed to 0): box-qp certifies the whole problem with every
    algorithm. The interior point alone never reaches z = 0 exactly, and the scale-free residual
    measures z in units of max|z|, so such an island was reported MAX_ITERATIONS (residual ~1)."""
    rng = np.random.default_rng(8)
    blocks, qs, los, his = [], [], [], []
    for k in range(4):
        m = 3 * (k + 1)
        J = rng.normal(size=(m, m))
        blocks.append(J @ J.T + 0.5 * np.eye(m))
        trivial = k % 2 == 1
        q = np.abs(rng.normal(size=m)) + 0.5 if trivial else rng.normal(size=m)
        lo = np.zeros(m)
        hi = np.where(np.arange(m) < m // 3, np.inf, 0.0) if trivial else np.full(m, np.inf)
        qs.append(q), los.append(lo), his.append(hi)
    M = sp.block_diag(blocks, format="csr")
    labels = np.concatenate([np.full(b.shape[0], k, dtype=np.int64) for k, b in enumerate(blocks)])
    p = BoxedLCP(M, np.concatenate(qs), np.concatenate(los), np.concatenate(his))
    p.islands = (len(blocks), labels)
    sol = solve(p, "box-qp", algorithm=algorithm, dense_max=2, small_n=2)
    assert sol.success and sol.relative_residual <= 1e-7, (sol.status, sol.relative_residual)
    off = 0
    for k, b in enumerate(blocks):
        if k % 2 == 1:
            assert np.all(sol.z[off:off + b.shape[0]] == 0.0)
        off += b.shape[0]


def test_box_qp_refuses_an_island_budget_below_one_step():
    from contactlab.errors import ParamError
    P, _, _ = block_problem(np.random.default_rng(5), [(3, False), (4, True)])
    with pytest.raises(ParamError, match="island_iterations"):
        solve(P, "box-qp", island_iterations=0)
    with pytest.raises(ParamError, match="island_poor_iterations"):
        solve(P, "box-qp", island_poor_iterations=0)


def test_a_poor_start_gets_the_poor_budget_and_a_good_one_the_full_budget(monkeypatch):
    """box_qp_islands (kernels/box_qp.py projected_newton): from z = 0 (relative error above
    IPM_WARM_MAX) each island gets island_poor_iterations Newton steps, then the interior point; from
    a start near its answer, island_iterations (it lands). Both certify the same minimiser."""
    rng = np.random.default_rng(5)
    P, parts, _ = block_problem(rng, [(9, False), (12, False)])
    for p in parts:         # each island's Newton alone needs more than one step from z = 0
        assert solve(p, "box-qp", algorithm="newton").iterations > 1
    ref = solve(P, "box-qp", algorithm="ipm", tol=1e-12, islands=False)
    seen = []
    original = BQ._python_path
    monkeypatch.setattr(BQ.solver, "_python_path", lambda *a: seen.append(a[3][0]) or original(*a))
    cold = solve(P, "box-qp", island_poor_iterations=1)
    assert ref.success and cold.success
    assert np.allclose(cold.z, ref.z, rtol=1e-5, atol=1e-6 * np.abs(ref.z).max())
    assert seen == [2]      # one Newton step per island (2 counted), then one interior point on both
    seen.clear()
    warm = ref.z * (1 + 1e-7 * rng.normal(size=ref.z.size))
    good = solve(P, "box-qp", island_poor_iterations=1, warm_start=warm)
    assert good.success and not seen        # a good start: Newton lands, no interior point


def test_dense_islands_factorise_island_by_island_to_the_dense_minimiser():
    """A dense block-diagonal problem carrying its islands (as box friction's dense build sets them):
    box-qp's compiled Newton factorises its systems island by island (kernels/box_qp.py
    ``island_blocks``, no dense Cholesky of the whole free block) and reaches the minimiser the
    dense factorisation reaches (SPD: unique), certified, in as many Newton steps; one island is the
    dense path itself."""
    import contactlab.kernels.box_qp as KQ
    rng = np.random.default_rng(21)
    for blocks in ([(3, False), (2, True), (4, False)], [(1, False)] * 6, [(5, True)]):
        P, parts, offs = block_problem(rng, blocks)
        dense_M = P.M.toarray()
        with_islands = BoxedLCP(dense_M, P.q, P.lo, P.hi, P.findex, P.mu)
        with_islands.islands = P.islands
        plain = BoxedLCP(dense_M, P.q, P.lo, P.hi, P.findex, P.mu)
        cache = BQ._dense_factors(P.n)                      # the factor cache of problems of this size
        cache[3][0] = -1                                    # no factor: a dense solve sets its rows, a block solve 0
        a = solve(with_islands, "box-qp", algorithm="newton")
        grouped = cache[3][0] == 0
        b = solve(plain, "box-qp", algorithm="newton")
        assert cache[3][0] > 0                              # the dense solve cached its factor
        assert grouped == (len(blocks) > 1)
        assert a.status is Status.SOLVED and b.status is Status.SOLVED
        assert a.iterations == b.iterations
        assert np.abs(a.z - b.z).max() <= 1e-9 * max(1.0, np.abs(b.z).max())
        grp, gstep, nbr, nnb = KQ.island_blocks(*P.islands)
        if len(blocks) == 1:
            assert grp.size == 0                            # one island: the dense factorisation
        else:
            assert np.array_equal(grp, P.islands[1]) and np.array_equal(gstep, np.arange(len(blocks)))
            assert nbr.shape == (len(blocks), 0) and not nnb.any()
        for k, part in enumerate(parts):                   # each island's z is that island's own minimiser
            alone = solve(part, "box-qp", algorithm="newton")
            assert np.abs(a.z[offs[k]:offs[k + 1]] - alone.z).max() <= 1e-7 * max(1.0, np.abs(alone.z).max())


def test_box_friction_dense_problems_carry_the_islands_of_their_matrix():
    """The dense problem of a falling 10-box pile (the general path's build) carries islands
    (box_friction.py ``row_islands``) whose partition is that of scipy's connected components of the
    matrix's pattern, at every step."""
    sim = Simulator(make_scene("pile", count=10), "box-friction", "box-qp", model_options={"coupling": "previous"},
                    compiled=False)
    seen = 0
    for _ in range(60):
        sim.step()
        p = sim.last_problem
        if p is None or p.n == 0 or sp.issparse(p.M):
            continue
        count, label = p.islands
        ref_count, ref = connected_components(sp.csr_matrix(p.M != 0.0), directed=False)
        assert count == ref_count
        pairs = set(zip(label.tolist(), ref.tolist()))
        assert len(pairs) == count                         # the same partition, label for label
        seen += count > 1
    assert seen >= 10


def test_dense_island_labels_that_are_wrong_or_not_labels_are_never_certified_falsely():
    """A dense problem whose islands split rows M couples: Newton systems factorised on the wrong
    blocks do not converge, and the answer is refused (projected Newton alone: MAX_ITERATIONS at the
    residual it reached, certified on the whole M), while the default method's interior point then
    certifies the whole problem's minimiser; labels out of range, of the wrong size or type fall back
    to the dense factorisation: the minimiser in as many Newton steps."""
    rng = np.random.default_rng(4)
    p = contact_problem(rng, 8, coupled=False, psd=False)
    ref = solve(p, "box-qp", algorithm="newton")
    assert ref.status is Status.SOLVED

    def with_islands(islands):
        P = BoxedLCP(p.M.copy(), p.q, p.lo, p.hi)
        P.islands = islands
        return P

    split = with_islands((2, (np.arange(p.n) >= p.n // 2).astype(np.int64)))
    newton = solve(split, "box-qp", algorithm="newton")
    assert newton.status is Status.MAX_ITERATIONS and newton.relative_residual > 1e-6
    auto = solve(split, "box-qp")
    assert auto.status is Status.SOLVED
    assert np.abs(auto.z - ref.z).max() <= 1e-6 * max(1.0, np.abs(ref.z).max())
    for islands in ((2, np.full(p.n, 5)), (3, np.zeros(p.n - 1, dtype=np.int64)), (2, np.linspace(0, 1, p.n))):
        got = solve(with_islands(islands), "box-qp", algorithm="newton")
        assert got.status is Status.SOLVED and got.iterations == ref.iterations
        assert np.abs(got.z - ref.z).max() <= 1e-12 * max(1.0, np.abs(ref.z).max())
