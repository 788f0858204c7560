"""sim/islands.py: a step's problem split into independent islands gives the whole problem's answer."""
import numpy as np

from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


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


def test_stewart_trinkle_piles_are_solved_island_by_island_by_default():
    """A 15-box pile in a bin under Stewart-Trinkle + Lemke: by default (islands=None) each step's
    LCP is split into its islands (against scipy's connected components of M's graph), every island
    is a principal block of the whole LCP, and the assembled answer certifies on the whole problem
    by its own residual; the motion equals the whole solve's (islands=False) to 1e-8 m. Box
    friction's boxed LCPs are not split by default (box-qp splits its own)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    from contactlab.problems import LCP
    from contactlab.problems.islands import island_problem, island_rows
    from contactlab.sim.islands import island_labels
    scene = lambda: make_scene("pile", count=15)
    a = Simulator(scene(), "stewart-trinkle", "lemke")
    b = Simulator(scene(), "stewart-trinkle", "lemke", islands=False)
    split = 0
    for _ in range(40):
        ra, rb = a.step(), b.step()
        # Lemke on the whole 360-row LCP misses one step here (rescued by the fallback); on its
        # islands it certifies every step
        assert ra.success and (rb.success or rb.rescued)
        p, sol = a.last_problem, a.last_solution
        assert type(p) is LCP and "islands" not in b.last_solution.info
        if "islands" in sol.info:
            split += 1
            assert sum(sol.info["island_sizes"]) == p.n
            _, absolute, relative = p.certify(np.ascontiguousarray(sol.z))
            assert max(relative.natural, relative.infeasibility) <= 1e-6
    assert split >= 25            # the boxes apart on the floor, from their landing on
    # the same motion to 1e-8 m (the whole solve's rescued step is another certified answer)
    np.testing.assert_allclose(a.data.position, b.data.position, rtol=0, atol=1e-8)
    count, labels = island_labels(p)
    c_ref, l_ref = connected_components(sp.csr_matrix(p.M != 0), directed=False)
    assert count == c_ref >= 2 and len(set(zip(labels, l_ref))) == count
    order, bounds = island_rows(count, labels)
    idx = order[bounds[0]:bounds[1]]
    sub = island_problem(p, idx, 200)
    assert type(sub) is LCP and np.array_equal(sub.M, p.M[np.ix_(idx, idx)]) and np.array_equal(sub.q, p.q[idx])
    boxes = Simulator(scene(), "box-friction", "pgs-sm")
    boxes.step()
    assert "islands" not in boxes.last_solution.info
