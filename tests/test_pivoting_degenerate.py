"""Cottle-Dantzig on degenerate, rank-deficient PSD LCPs (issue 14 defect 1): the frictionless
acceleration LCP of the 91-brick pyramid (338 contacts, rank 182, 312 of the 338 entries of q are
exactly zero) is massively degenerate. With least-index ties throughout, the first major cycle
alone took 5655 zero-step-heavy pivots (7221 in all, 21 n); the tie rule (a z leaving before a w
entering, then the steepest rate, least index after n zero steps in a row) needs 1340 (4 n)."""
import numpy as np

from contactlab.planning.statics import StaticsModel
from contactlab.planning.structures import get_structure
from contactlab.problems import LCP
from contactlab.solvers import solve


def _pyramid_lcp():
    s = get_structure("pyramid-91")
    m = StaticsModel(s)
    idx = m.contacts_of(np.ones(s.n, dtype=bool))
    return m, idx, LCP(m.A[np.ix_(idx, idx)], m.b[idx])


def test_dantzig_degenerate_pyramid_pivots_of_order_n():
    m, idx, lcp = _pyramid_lcp()
    n = lcp.n
    assert np.linalg.matrix_rank(lcp.M) < n and np.count_nonzero(lcp.q) < n // 4   # degenerate, singular
    sol = solve(lcp, method="dantzig", max_iterations=100 * n)
    assert sol.success
    # physics, independently of the solver: the pyramid stands, every block acceleration vanishes
    assert m.acceleration(np.ones(m.structure.n, dtype=bool), idx, sol.z) <= 1e-8
    assert sol.iterations <= n                  # major cycles (Cottle-Dantzig: at most n)
    assert sol.pivots <= 5 * n, sol.pivots      # was 7221 = 21 n with least-index ties


def test_dantzig_degenerate_default_cap_suffices():
    """The default pivot cap 20 n + 100 is enough from scratch (the planner needed 50 n before)."""
    _, _, lcp = _pyramid_lcp()
    assert solve(lcp, method="dantzig").success
