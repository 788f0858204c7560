"""box-qp on a problem its bodies join into one island (solvers/box_qp/islands.py): the rows with a gap
set aside without ``set_aside`` where one island holds most rows (``_merged``), an interior point's
residue in the start counted as 0 (``AT_ZERO``), and set-aside rounds that re-solve only the islands a
pushed-in row joins (``_touched``). References: Lemke on the whole LCP, the whole problem solved
without islands, brute-force relabelling."""
import numpy as np
import pytest
import scipy.sparse as sp

import contactlab as cl
import contactlab.solvers.box_qp.islands as BI
from contactlab.solvers import solve

from tests.solvers.test_box_qp_set_aside import chain_rows, lcp_with_rows


def joined_chains(rng, chains=4, nbody=6, nrows=30, gap=0.5):
    """``chains`` columns of bodies (chain_rows, each connected by a row per neighbouring pair) joined
    into one island by rows with a gap (q = gap; 0.5, below the largest push: only a gap-0 set-aside
    leaves them out), every row separating (q > 0) but three deep ones a chain; the joining rows' indices."""
    parts = [chain_rows(rng, nbody, nrows) for _ in range(chains)]
    H = sp.block_diag([p[0] for p in parts], format="csr")
    W = np.concatenate([p[1] for p in parts])
    links = sp.lil_matrix((chains * (nbody - 1), H.shape[1]))        # each chain connected whatever the draw
    for r in range(chains * (nbody - 1)):
        a = nbody * (r // (nbody - 1)) + r % (nbody - 1)
        links[r, 6 * a:6 * a + 12] = rng.normal(size=12)
    H = sp.vstack([H, links.tocsr()], format="csr")
    join = sp.lil_matrix((chains - 1, H.shape[1]))
    for r in range(chains - 1):
        a, b = nbody * r + nbody - 1, nbody * (r + 1)
        join[r, 6 * a:6 * a + 6] = 0.1 * rng.normal(size=6)
        join[r, 6 * b:6 * b + 6] = 0.1 * rng.normal(size=6)
    H = sp.vstack([H, join.tocsr()], format="csr")
    H.sort_indices()
    q = np.abs(rng.normal(size=H.shape[0])) + 0.1       # separating rows, but for three deep ones a chain
    for c in range(chains):
        q[c * nrows + rng.choice(nrows, size=3, replace=False)] = -rng.uniform(0.5, 2.0, size=3)
    q[-(chains - 1):] = gap
    return H, W, q, np.arange(H.shape[0] - chains + 1, H.shape[0])


def lemke(P, q):
    ref = solve(cl.LCP(P.M.toarray(), q), "lemke")
    assert ref.success
    return ref


def test_touched_keeps_the_islands_holding_a_late_row_and_numbers_them_in_order():
    rng = np.random.default_rng(3)
    for _ in range(50):
        count = int(rng.integers(1, 9))
        labels = rng.integers(-1, count, size=int(rng.integers(1, 60)))
        late = rng.random(labels.size) < 0.1
        new_count, new = BI._touched(count, labels, late)
        held = sorted({int(x) for x in labels[late] if x >= 0})       # brute force
        assert new_count == len(held)
        for i, x in enumerate(labels):
            assert new[i] == (held.index(x) if x in held else -1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_merged_problem_is_split_by_its_gaps_and_the_answer_is_the_whole_lcps(monkeypatch, seed):
    """Four chains joined by rows with a gap below the largest push: one island of the problem's own,
    a few rows in play; with the merged rule (MERGED_ROWS lowered to this size) the default solve sets
    every separating row at 0 aside and solves the rest island by island (islands >= 4); the answer is
    Lemke's on the whole LCP and the whole problem's without islands. With most rows in play (q < 0)
    the problem is solved whole, as before."""
    rng = np.random.default_rng(seed)
    H, W, q, _ = joined_chains(rng)
    P = lcp_with_rows(H, W, q)
    assert P.islands[0] == 1
    monkeypatch.setattr(BI, "MERGED_ROWS", 50)
    sol = solve(P, "box-qp")
    assert sol.success and sol.relative_residual <= 1e-6
    assert sol.info["islands"] >= 4 and sol.info["set_aside"] > 0
    ref = lemke(P, q)
    whole = solve(P, "box-qp", islands=False)
    assert whole.success and "islands" not in whole.info
    scale = np.abs(ref.z).max()
    assert np.abs(sol.z - ref.z).max() <= 1e-6 * scale and np.abs(whole.z - ref.z).max() <= 1e-6 * scale
    monkeypatch.setattr(BI, "MERGED_ROWS", 10 ** 9)      # below the size: the problem whole, as before
    assert "set_aside" not in solve(P, "box-qp").info
    monkeypatch.setattr(BI, "MERGED_ROWS", 50)
    deep = lcp_with_rows(H, W, -q)                      # most rows in play
    sol = solve(deep, "box-qp")
    assert sol.success and "set_aside" not in sol.info


def test_rounds_resolve_only_the_islands_a_pushed_in_row_joins(monkeypatch):
    """Three chains, each with one deep row (q = -1) and every other row separating (set aside); in the
    first chain a row with a gap is pushed in by its deep row, 4 x the push (a second round). That round
    solves that chain's island alone; the answer is Lemke's."""
    rng = np.random.default_rng(11)
    H, W, q, _ = joined_chains(rng, chains=3, nrows=12, gap=1e3)
    q[:-2] = np.abs(q[:-2]) + 0.1           # every row separating but the deep ones
    q[[0, 12, 24]] = -1.0                   # each chain's deep row
    H = H.tolil()
    g = rng.normal(size=6)
    H[0, :] = 0.0
    H[0, 0:6] = g                           # the first chain's deep row, on its body 0 alone
    H[1, :] = 0.0
    H[1, 0:6] = -4.0 * g                    # a row with a gap on body 0 (and 1): pushed in 4 x the push
    H[1, 6:12] = 1e-3 * rng.normal(size=6)
    H = H.tocsr()
    H.sort_indices()
    q[1] = 2.0 * BI.SET_ASIDE_GAP           # above the largest push max(-q) = 1: set aside
    P = lcp_with_rows(H, W, q)
    rounds = []
    original = BI._island_solves

    def counting(problem, opts, count, labels, *args, **kw):
        rounds.append(count)
        return original(problem, opts, count, labels, *args, **kw)
    monkeypatch.setattr(BI, "_island_solves", counting)
    sol = solve(P, "box-qp", set_aside=True)
    assert sol.success and sol.info["rounds"] >= 2 and sol.info["islands"] >= 3
    assert rounds[0] >= 3 and all(c == 1 for c in rounds[1:])      # later rounds: the pushed chain's only
    ref = lemke(P, q)
    assert ref.z[1] > 0                     # the row set aside carries an impulse in the answer
    assert np.abs(sol.z - ref.z).max() <= 1e-6 * np.abs(ref.z).max()


def test_an_interior_points_residue_in_the_start_counts_as_zero():
    """The same rows are set aside from a start at 0 and from one whose gap rows carry an interior
    point's residue (1e-13 of max|z|); from a residue of 1e-3 of max|z| they are not. The answers are
    Lemke's."""
    rng = np.random.default_rng(5)
    H, W, q, joins = joined_chains(rng, gap=1e3)
    P = lcp_with_rows(H, W, q)
    ref = lemke(P, q)
    start = ref.z.copy()
    start[ref.z == 0.0] = 0.0
    residue = start.copy()
    residue[joins] = 1e-13 * np.abs(ref.z).max()
    at0, res = BI._set_aside(P, start), BI._set_aside(P, residue)
    assert at0 is not None and at0[joins].all() and np.array_equal(at0, res)
    residue[joins] = 1e-3 * np.abs(ref.z).max()
    assert not BI._set_aside(P, residue)[joins].any()
    for z0 in (start, residue):
        sol = solve(P, "box-qp", warm_start=z0, set_aside=True)
        assert sol.success and np.abs(sol.z - ref.z).max() <= 1e-6 * np.abs(ref.z).max()
