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
