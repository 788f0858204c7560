"""``box-qp``'s islands factorised block by block over their body-pair groups (kernels/box_qp.py
``island_groups``, ``_grouped_solve``, ``_panel_solve``) against numpy's dense solves and the dense
islands' minimiser, and the compiled islands call on CSR blocks (kernels/box_qp_islands.py
``box_qp_islands``: a large island from a poor start left to the whole method, a good start landing on
the interior point's minimiser, cached symbolic layouts the same bits as recomputed ones), on the
problems of stacked box columns."""
import numpy as np
import scipy.sparse as sp

from contactlab.kernels.box_qp import SOLVED
from contactlab.solution import Status
from contactlab.solvers import solve
import contactlab.solvers.box_qp as BQ
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _stacked_columns_problem(count=8, columns=3, steps=20):
    sim = Simulator(make_scene("stack", count=count, columns=columns), "box-friction", "box-qp")
    for _ in range(steps):
        assert sim.step().success
    return sim.last_system, sim.last_problem


def test_body_pair_groups_are_the_rows_first_and_last_body():
    sys_, p = _stacked_columns_problem()
    H = sys_.NST
    assert sp.issparse(p.M) and p.body_groups.shape == (p.n,)
    keys = [(H.indices[H.indptr[r]] // 6, H.indices[H.indptr[r + 1] - 1] // 6) for r in range(H.shape[0])]
    ids = {}
    expected = np.array([ids.setdefault(k, len(ids)) for k in keys])
    # the same partition of the rows (numbering aside)
    assert len(set(zip(expected, p.body_groups))) == len(ids) == p.body_groups.max() + 1


def _island_structures(p, label):
    """Per island of p: (idx, the island's CSR block (ptr, idx, val), island_groups' structure, the dense block)."""
    from contactlab.kernels.box_qp import csr_sub_block, island_groups
    from contactlab.problems.islands import island_rows
    M = p.M.tocsr()
    ip, ii = M.indptr.astype(np.int64), M.indices.astype(np.int64)
    order, bounds = island_rows(*p.islands)
    at = np.full(p.n, -1, dtype=np.int64)
    scratch = np.full(label.max() + 1, -1, dtype=np.int64)
    for k in range(bounds.size - 1):
        idx = np.sort(order[bounds[k]:bounds[k + 1]])
        at[idx] = np.arange(idx.size)
        groups = island_groups(ip, ii, idx, at, label, scratch)
        at[idx] = -1
        assert np.all(scratch == -1) and sorted(groups[1]) == list(range(groups[1].size))
        val, sidx, sptr = csr_sub_block(ip, ii, M.data, idx, p.n)
        yield idx, (sptr, sidx, val), groups, M[idx][:, idx].toarray()


def test_grouped_newton_solves_are_the_dense_solves():
    """On each island of stacked columns (8 body pairs of 12 rows, a path), the block Cholesky over
    the groups, on the dense block (``_grouped_solve``) and on the island's CSR block in panels
    (``_panel_solve``), solves M_FF x = r for random free sets to the backward error of a dense
    solve; the groups' order is the minimum-degree order of kernels/dense.py's dense version."""
    from contactlab.kernels.box_qp import _grouped_solve, _panel_solve
    from contactlab.kernels.dense import elimination_steps
    _, p = _stacked_columns_problem()
    rng = np.random.default_rng(4)
    checked = 0
    for idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A in _island_structures(p, p.body_groups):
        G = gstep.size
        gstart = np.concatenate([[0], np.cumsum(np.bincount(grp, minlength=G))])
        adj = np.zeros((G, G), dtype=np.bool_)
        for i, j in zip(*np.nonzero(A)):
            adj[grp[i], grp[j]] = grp[i] != grp[j]
        _, step_of, nbr_d, nnb_d = elimination_steps(gstart, adj)
        assert np.array_equal(step_of, gstep) and np.array_equal(nnb_d, nnb)
        assert all(np.array_equal(nbr_d[s, :nnb[s]], nbr[s, :nnb[s]]) for s in range(G))
        for _ in range(5):
            F = np.flatnonzero(rng.random(idx.size) < 0.8)
            r = rng.normal(size=F.size)
            AF = A[np.ix_(F, F)]
            ref = np.linalg.solve(AF, r)
            for ok, x in (_grouped_solve(A, F, F.size, r, grp, gstep, nbr, nnb),
                          _panel_solve(sptr, sidx, val, F, F.size, r, grp, gstep, nbr, nnb)):
                assert ok
                scale = np.abs(AF).max() * np.abs(x).max()
                assert np.abs(AF @ x - r).max() <= 1e-9 * scale
                assert np.abs(AF @ ref - r).max() <= 1e-9 * scale
            checked += 1
    assert checked >= 15


def test_panel_solves_take_islands_of_many_groups():
    """An island of a group per row (more groups than the dense ordering took: fill between the
    rows of a body pair's contacts) and islands of 120 body pairs, columns: the panels solve
    M_FF x = r as a dense solve does, and report a matrix that is not positive definite."""
    from contactlab.kernels.box_qp import _panel_solve
    rng = np.random.default_rng(6)
    for count, columns, per_row in ((10, 2, True), (120, 2, False)):
        _, p = _stacked_columns_problem(count=count, columns=columns, steps=5)
        label = np.arange(p.n, dtype=np.int64) if per_row else p.body_groups
        for idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A in _island_structures(p, label):
            assert gstep.size > 96
            F = np.flatnonzero(rng.random(idx.size) < 0.7)
            r = rng.normal(size=F.size)
            AF = A[np.ix_(F, F)]
            ok, x = _panel_solve(sptr, sidx, val, F, F.size, r, grp, gstep, nbr, nnb)
            assert ok
            assert np.abs(AF @ x - r).max() <= 1e-9 * np.abs(AF).max() * np.abs(x).max()
            bad = val.copy()
            bad[sidx == np.repeat(np.arange(idx.size), np.diff(sptr))] *= -1.0     # negative diagonal
            assert not _panel_solve(sptr, sidx, bad, F, F.size, r, grp, gstep, nbr, nnb)[0]


def test_grouped_islands_reach_the_dense_islands_minimiser():
    """box-qp on the stacked columns with the islands' Newton steps factorised by groups (default) and
    densely (grouped_max=0): both certified, the same minimiser (SPD: unique)."""
    _, p = _stacked_columns_problem(count=10, columns=4)
    grouped = solve(p, "box-qp")
    dense = solve(p, "box-qp", grouped_max=0)
    assert grouped.status is Status.SOLVED and dense.status is Status.SOLVED
    assert grouped.info["islands"] == dense.info["islands"] == 4
    assert np.allclose(grouped.z, dense.z, rtol=1e-5, atol=1e-6 * np.abs(dense.z).max())


def test_a_large_island_from_a_poor_start_is_left_to_the_whole_method():
    """box_qp_islands gives an island above POOR_LEFT_FROM rows whose start is poor POOR_LEFT_STEPS Newton
    steps (on its CSR block, the face step tried first; one where the first does not cut the error below
    POOR_PROGRESS of the start's) and, where they do not certify it, leaves it untouched (LEFT: the whole
    method takes it): from impulses 10^6 times too large with friction at the cone's edge, alternately the
    wrong way, and from normal impulses 0.5-2 times the answer's with friction at the edge, signs at random
    (neither first step cuts the error: left after it). From five times too large, alternately the wrong
    way, its POOR_LEFT_STEPS steps land it (one factorisation for them: kernels/box_qp_panels.py). From
    z = 0 (poor by the scale-free measure, yet every row free: one Newton step is the answer) and from
    a good start it solves the island itself (SOLVED, on its CSR block); box-qp certifies the same
    minimiser (SPD: unique) either way, and as the interior point alone."""
    from contactlab.kernels.box_qp import LEFT
    from contactlab.kernels.box_qp_islands import POOR_LEFT_FROM, POOR_LEFT_STEPS, box_qp_islands, new_island_layouts
    from contactlab.problems.islands import island_rows
    from contactlab.solvers.box_qp.interior_point import IPM_WARM_MAX
    _, p = _stacked_columns_problem(count=60, columns=2, steps=5)
    ref = solve(p, "box-qp", algorithm="ipm", tol=1e-12)
    order, bounds = island_rows(*p.islands)
    assert np.diff(bounds).min() > POOR_LEFT_FROM and ref.success
    M = p.M.tocsr()
    opts = BQ.BoxQPOptions()
    normal = p.findex < 0
    wrong = ref.z * 5
    wrong[~normal] = np.where(np.arange(p.n)[~normal] % 2, 1.0, -1.0) * p.mu[~normal] * wrong[p.findex[~normal]]
    rng = np.random.default_rng(0)
    poor = ref.z * rng.uniform(0.5, 2.0, p.n)
    poor[~normal] = rng.choice([-1.0, 1.0], (~normal).sum()) * p.mu[~normal] * poor[p.findex[~normal]]
    for start, expected in ((wrong, {SOLVED}), (wrong * 1e6, {LEFT}), (poor, {LEFT}), (np.zeros(p.n), {SOLVED}),
                            (ref.z.copy(), {SOLVED})):
        z, w = np.full(p.n, np.nan), np.empty(p.n)
        codes, its, outers = (np.zeros(bounds.size - 1, dtype=np.int64) for _ in range(3))
        box_qp_islands(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data, p.q, p.lo, p.hi, p.findex,
                       p.mu, start, order, bounds, opts.tol, 20, opts.armijo, False, opts.max_outer, z, w, codes,
                       its, outers, p.body_groups, 64, p.n, opts.newton_steps, 8, IPM_WARM_MAX,
                       *new_island_layouts())
        assert set(codes.tolist()) == expected
        assert np.all(np.isnan(z)) if expected == {LEFT} else np.allclose(z, ref.z, atol=1e-6 * np.abs(ref.z).max())
        if expected == {LEFT}:      # the Newton steps it was given: one where the first does not gain
            # (the scale-free error stays 1, POOR_PROGRESS)
            assert np.all(its == 1)
        elif start is wrong:        # a poor start that the first step improves: landed within POOR_LEFT_STEPS
            assert np.all((its >= 2) & (its <= POOR_LEFT_STEPS))
    cold = solve(p, "box-qp")
    assert cold.success and np.allclose(cold.z, ref.z, rtol=1e-5, atol=1e-6 * np.abs(ref.z).max())


def test_csr_islands_from_a_good_start_land_on_the_interior_points_minimiser():
    """box_qp_islands on the 720-row islands of two 60-box columns (CSR blocks, where projected Newton
    tries the face step first, kernels/box_qp.py ``_face_step``) from the answer perturbed by 1 % (a
    good start: its error below IPM_WARM_MAX): SOLVED in the compiled call within a few Newton steps,
    at the interior point's minimiser alone (SPD: unique); and box-qp certifies it from there."""
    from contactlab.kernels.box_qp_islands import CSR_FROM, box_qp_islands, new_island_layouts
    from contactlab.problems.islands import island_rows
    from contactlab.solvers.box_qp.interior_point import IPM_WARM_MAX
    opts = BQ.BoxQPOptions()
    _, p = _stacked_columns_problem(count=60, columns=2, steps=5)
    ref = solve(p, "box-qp", algorithm="ipm", tol=1e-12)
    order, bounds = island_rows(*p.islands)
    assert np.diff(bounds).min() > CSR_FROM and ref.success
    scale = np.abs(ref.z).max()
    start = ref.z * (1.0 + 1e-2 * np.where(np.arange(p.n) % 2, 1.0, -1.0))
    assert BQ.solver._certified(p.M, p.q, *p.bounds(start), start, np.empty(p.n), np.empty((5, p.n)))[1] <= IPM_WARM_MAX
    M = p.M.tocsr()
    z, w = np.full(p.n, np.nan), np.empty(p.n)
    codes, its, outers = (np.zeros(bounds.size - 1, dtype=np.int64) for _ in range(3))
    box_qp_islands(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data, p.q, p.lo, p.hi, p.findex,
                   p.mu, start, order, bounds, opts.tol, 20, opts.armijo, False, opts.max_outer, z, w, codes,
                   its, outers, p.body_groups, 64, p.n, opts.newton_steps, 8, IPM_WARM_MAX, *new_island_layouts())
    assert np.all(codes == SOLVED) and np.all(its <= 3 * outers)
    assert np.allclose(z, ref.z, rtol=1e-5, atol=1e-6 * scale)
    sol = solve(p, "box-qp", warm_start=start)
    assert sol.success and np.allclose(sol.z, ref.z, rtol=1e-5, atol=1e-6 * scale)


def _islands_call(p, M, order, bounds, cache):
    """box_qp_islands on (order, bounds) of p with M (CSR) from z = 0, the layout cache ``cache``:
    (z, w, codes, its, outers, the returned layouts)."""
    from contactlab.kernels.box_qp_islands import box_qp_islands
    from contactlab.solvers.box_qp.interior_point import IPM_WARM_MAX
    opts = BQ.BoxQPOptions()
    z, w = np.full(p.n, np.nan), np.full(p.n, np.nan)
    codes, its, outers = (np.zeros(bounds.size - 1, dtype=np.int64) for _ in range(3))
    out = box_qp_islands(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data, p.q, p.lo, p.hi, p.findex,
                         p.mu, np.zeros(p.n), order, bounds, opts.tol, 20, opts.armijo, False, opts.max_outer, z, w,
                         codes, its, outers, p.body_groups, 64, p.n, opts.newton_steps, 8, np.inf, *cache)
    return z, w, codes, its, outers, out


def test_cached_island_layouts_are_the_recomputed_ones_and_a_changed_island_recomputes_its_own():
    """box_qp_islands reuses an island's symbolic layout (groups, order, block pattern) from the
    previous call only where it is that island's: the same rows, groups and pattern. Reused, the
    answers are the same bits as with the layout computed afresh; an island that loses a contact
    (its normal and friction rows) or a coupling (two entries of M) fails the check and is
    recomputed -- again the same bits as a fresh call -- while the unchanged island keeps its cache."""
    from contactlab.kernels.box_qp import csr_sub_block
    from contactlab.kernels.box_qp_islands import CSR_FROM, _layout_values, new_island_layouts
    from contactlab.problems.islands import island_rows
    _, p = _stacked_columns_problem(count=30, columns=2, steps=5)
    M = p.M.tocsr()
    order, bounds = island_rows(*p.islands)
    assert bounds.size == 3 and np.diff(bounds).min() > CSR_FROM      # two islands, both on the CSR path
    fresh = _islands_call(p, M, order, bounds, new_island_layouts())
    layout, at_ = fresh[5]
    assert set(fresh[2].tolist()) == {SOLVED}
    spare = np.empty(0, dtype=np.int64)
    again = _islands_call(p, M, order, bounds, (layout, at_, spare))
    for a, b in zip(fresh[:5], again[:5]):
        assert np.array_equal(a, b)
    assert np.array_equal(again[5][0], layout) and np.array_equal(again[5][1], at_)
    ip, ii = M.indptr.astype(np.int64), M.indices.astype(np.int64)
    scratch = np.full(p.body_groups.max() + 1, -1, dtype=np.int64)

    def holds(M_, k, idx):
        at = np.full(p.n, -1, dtype=np.int64)
        at[idx] = np.arange(idx.size)
        ok, val = _layout_values(layout, at_[k], at_[k + 1], M_.indptr.astype(np.int64),
                                 M_.indices.astype(np.int64), M_.data, idx, at, p.body_groups, scratch)
        if ok:      # the block's values, as csr_sub_block gathers them
            assert np.array_equal(val, csr_sub_block(M_.indptr.astype(np.int64), M_.indices.astype(np.int64),
                                                     M_.data, idx, p.n)[0])
        return ok

    isl = [order[bounds[k]:bounds[k + 1]] for k in range(2)]
    assert holds(M, 0, isl[0]) and holds(M, 1, isl[1]) and not holds(M, 1, isl[0])
    # island 0 loses a contact: its normal row and the friction rows tied to it
    normal = next(r for r in isl[0] if p.findex[r] < 0 and np.any(p.findex[isl[0]] == r))
    lost = np.concatenate([isl[0][(isl[0] != normal) & (p.findex[isl[0]] != normal)], isl[1]])
    bounds_lost = np.array([0, lost.size - isl[1].size, lost.size])
    assert not holds(M, 0, lost[:bounds_lost[1]]) and holds(M, 1, isl[1])
    cached = _islands_call(p, M, lost, bounds_lost, (layout, at_, spare))
    new = _islands_call(p, M, lost, bounds_lost, new_island_layouts())
    for a, b in zip(cached[:5], new[:5]):
        assert np.array_equal(a, b, equal_nan=True)
    assert np.array_equal(cached[5][0], new[5][0]) and not np.array_equal(cached[5][0], layout)
    # island 1 loses a coupling between two of its rows (an entry pair of M): its pattern changes
    i, j = isl[1][0], next(c for c in M.indices[M.indptr[isl[1][0]]:M.indptr[isl[1][0] + 1]] if c != isl[1][0])
    rows_of = np.repeat(np.arange(p.n), np.diff(M.indptr))
    keep = ~(((rows_of == i) & (M.indices == j)) | ((rows_of == j) & (M.indices == i)))
    assert keep.sum() == M.nnz - 2          # the same entries in the same order, less (i, j) and (j, i)
    M2 = sp.csr_matrix((M.data[keep], M.indices[keep], np.concatenate([[0], np.cumsum(np.bincount(
        rows_of[keep], minlength=p.n))])), shape=M.shape)
    assert holds(M2, 0, isl[0]) and not holds(M2, 1, isl[1])
    cached = _islands_call(p, M2, order, bounds, (layout, at_, spare))
    new = _islands_call(p, M2, order, bounds, new_island_layouts())
    for a, b in zip(cached[:5], new[:5]):
        assert np.array_equal(a, b, equal_nan=True)
    assert np.array_equal(cached[5][0], new[5][0])
