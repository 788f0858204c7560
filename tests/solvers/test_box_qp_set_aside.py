"""box-qp's rows set aside (solvers/box_qp.py ``_set_aside``, ``_islands``): rows that z = 0 likely
solves (gaps) are left out of the islands, solved last, and brought back in where the others push
them in; the components of the rows kept (kernels/components.py ``kept_row_components``).
References: scipy's connected components, Lemke on the whole LCP, the interior point on the whole
position correction."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

import contactlab as cl
import contactlab.sim.simulator as simulator
from contactlab.kernels.components import kept_row_components, row_block_components
from contactlab.problems import BoxedLCP
from contactlab.problems.residual import box_relative, relative_error, row_terms
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.solvers import solve
from contactlab.solvers.box_qp import SET_ASIDE_GAP

from tests.problems import body_rows


def chain_rows(rng, nbody, nrows):
    """H (CSR, 6 columns per body) whose rows touch one or two neighbouring bodies of a chain, and
    W's SPD 6x6 blocks: the coupling of a column of boxes."""
    def bodies_of(r):
        b = int(rng.integers(nbody - 1))
        return (b,) if rng.random() < 0.15 else (b, b + 1)
    return body_rows(rng, nbody, nrows, bodies_of)


def lcp_with_rows(H, W, q, cfm=1e-6):
    M = (H @ sp.block_diag(list(W), format="csr") @ H.T + cfm * sp.identity(H.shape[0])).tocsr()
    M.sort_indices()
    P = BoxedLCP(M, q, np.zeros(q.size), np.full(q.size, np.inf))
    P.factors = (H, W, cfm)
    P.islands = row_block_components(H.indptr, H.indices, np.full(q.size, -1), 6)
    return P


def test_kept_row_components_are_scipys_on_the_kept_rows():
    rng = np.random.default_rng(4)
    for trial in range(20):
        H, _ = chain_rows(rng, int(rng.integers(3, 12)), int(rng.integers(5, 40)))
        n = H.shape[0]
        kept = rng.random(n) < 0.6
        findex = np.full(n, -1)
        link = rng.choice(n, size=n // 5, replace=False)
        findex[link] = rng.integers(n, size=link.size)
        count, labels = kept_row_components(H.indptr, H.indices, findex, 6, kept)
        assert np.all(labels[~kept] == -1) and np.all(labels[kept] >= 0)
        # reference: rows joined where they share a body or a findex link, among the kept rows only
        idx = np.flatnonzero(kept)
        touch = (abs(H[idx]) @ sp.kron(sp.identity(H.shape[1] // 6), np.ones((6, 1)))).astype(bool).astype(float)
        G = (touch @ touch.T).tolil()
        at = {r: a for a, r in enumerate(idx)}
        for i in idx:
            if findex[i] >= 0 and kept[findex[i]]:
                G[at[i], at[findex[i]]] = 1.0
        ref_count, ref = connected_components(G.tocsr(), directed=False)
        assert count == ref_count
        # the same partition: label pairs map one to one
        assert len(set(zip(labels[idx], ref))) == count


def test_rows_with_a_gap_are_solved_last_and_the_answer_is_the_whole_lcps():
    """Three chains (columns) joined into one island by rows with a wide gap (q >> max(-q)): set
    aside, the rest splits into the chains; the answer equals Lemke's on the whole LCP, certified."""
    rng = np.random.default_rng(7)
    parts = [chain_rows(rng, 6, 40) for _ in range(3)]
    H = sp.block_diag([p[0] for p in parts], format="csr")
    W = np.concatenate([p[1] for p in parts])
    # rows joining the chains: body 5 of chain 0 with body 0 of chain 1, and so on, each with a gap
    join = sp.lil_matrix((2, H.shape[1]))
    for r, (a, b) in enumerate(((5, 6), (11, 12))):
        join[r, 6 * a:6 * a + 6] = rng.normal(size=6)
        join[r, 6 * b:6 * b + 6] = rng.normal(size=6)
    H = sp.vstack([H, join.tocsr()], format="csr")
    H.sort_indices()
    q = rng.normal(size=H.shape[0])
    q[-2:] = 1e3                        # far beyond the largest push
    P = lcp_with_rows(H, W, q)
    assert P.islands[0] == 1
    sol = solve(P, "box-qp", set_aside=True)
    assert sol.success and sol.relative_residual <= 1e-6
    assert sol.info["islands"] == 3 and sol.info["set_aside"] >= 2 and sol.info["rounds"] == 1
    ref = solve(cl.LCP(P.M.toarray(), q), "lemke")
    assert ref.success
    assert np.abs(sol.z - ref.z).max() <= 1e-6 * np.abs(ref.z).max()
    assert np.allclose(sol.w, P.M @ sol.z + q, rtol=0, atol=1e-9 * np.abs(q).max())
    off = solve(P, "box-qp")            # the default: nothing set aside, the one island whole
    assert off.success and "islands" not in off.info
    assert np.abs(off.z - ref.z).max() <= 1e-6 * np.abs(ref.z).max()


def test_a_row_set_aside_that_the_others_push_in_joins_them():
    """A row with a gap wider than every push (set aside) whose body the deep row moves by a lever k:
    w = q - k M00 z0 < 0 at z = 0, so it joins the rest in a second round; the answer is Lemke's."""
    rng = np.random.default_rng(5)
    H, W = chain_rows(rng, 4, 12)
    H = H.tolil()
    g = rng.normal(size=6)
    H[0, :] = 0.0
    H[0, 0:6] = g                       # the deep row, on body 0 alone
    H[1, :] = 0.0
    H[1, 0:6] = -4.0 * g                # a row with a gap on body 0 (and 1): pushed in 4 x the push
    H[1, 6:12] = 1e-3 * rng.normal(size=6)
    H = H.tocsr()
    H.sort_indices()
    q = np.abs(rng.normal(size=12)) + 0.1
    q[0] = -1.0
    q[1] = 2.0 * SET_ASIDE_GAP          # set aside (above max(-q) = 1), yet 4 x the push closes it
    P = lcp_with_rows(H, W, q)
    sol = solve(P, "box-qp", set_aside=True)
    assert sol.success and sol.info["rounds"] >= 2
    ref = solve(cl.LCP(P.M.toarray(), q), "lemke")
    assert ref.success and ref.z[1] > 0        # the row set aside carries an impulse in the answer
    assert np.abs(sol.z - ref.z).max() <= 1e-6 * np.abs(ref.z).max()


def test_position_correction_with_rows_set_aside_is_the_whole_lcps():
    """The position corrections of a falling 100-box pile (simulator.position_lcp, rows with a gap
    set aside): each p solves the whole LCP to the correction's tolerance (residual computed here
    from A, c and p), and moves the bodies (dx = W N' p) as the interior point's answer on the whole
    LCP (nothing set aside, no islands) does; some corrections do set rows aside."""
    seen, aside = [], []
    original = simulator.position_lcp
    original_solve = simulator.solve

    def counting(problem, method, **options):
        sol = original_solve(problem, method, **options)
        aside.append(sol.info.get("set_aside", 0))
        return sol

    def compare(A, c, islands=None, groups=None, factors=None):
        p, rel = original(A, c, islands, groups, factors)
        lo, hi = np.zeros(c.size), np.full(c.size, np.inf)
        w = A @ p + c
        assert relative_error(box_relative(p, w, lo, hi, c, row_terms(A, p, c))) <= simulator.POSITION_TOL
        whole = solve(BoxedLCP(A, c, lo, hi), "box-qp", algorithm="ipm", tol=1e-9)
        assert whole.success
        N, W = factors[0], sp.block_diag(list(factors[1]), format="csr")
        dx, ref = W @ (N.T @ p), W @ (N.T @ whole.z)
        assert np.abs(dx - ref).max() <= 1e-2 * np.abs(ref).max()
        seen.append(c.size)
        return p, rel

    sim = Simulator(make_scene("pile", count=100), "box-friction", "box-qp", model_options={"coupling": "previous"})
    try:
        simulator.position_lcp, simulator.solve = compare, counting
        for _ in range(60):
            assert sim.step().success
    finally:
        simulator.position_lcp, simulator.solve = original, original_solve
    assert len(seen) >= 5 and max(aside) > 0
