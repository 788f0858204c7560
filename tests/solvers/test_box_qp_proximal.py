"""box-qp's ``proximal`` option (solvers/box_qp/solver.py ``_proximal``: one proximal-point step from the warm
start, M + rho I and q - rho z0, its answer returned only where it certifies on the original problem): the
answer from a start whose faces split their load differently (each normal row's impulse moved by up to 30 %)
is checked against the box-friction LCP's conditions computed with numpy from the original problem's data
alone (as the interior point's answer at 1e-12 passes them). The answer need not be the interior point's: the
four normal impulses of a face are pinned only along M's near-null directions (eigenvalue cfm), which the
certificate does not resolve."""
from functools import lru_cache

import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.problems import BoxedLCP
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.solvers import solve

from .test_box_qp_left_islands import _columns_problem, _kkt_error


@lru_cache(maxsize=1)
def _stack():
    """The last problem of a resting 10-box stack (four contacts on each face; a dense M: the compiled dense call) and
    its answer by box-qp's interior point alone at 1e-12."""
    sim = Simulator(make_scene("stack", count=10), "box-friction", "box-qp")
    for _ in range(5):
        assert sim.step().success
    p = sim.last_problem
    assert not sp.issparse(p.M)
    ref = solve(p, "box-qp", algorithm="ipm", tol=1e-12)
    assert ref.success
    return p, ref.z


@pytest.mark.parametrize("resting", [_stack, _columns_problem], ids=["stack10-dense", "columns60x2-csr"])
def test_the_proximal_answer_solves_the_original_problem(resting):
    p, ref = resting()
    # _kkt_error reads a sparse M: the same problem with M in CSR for the check (the solver has the dense one)
    check = p if sp.issparse(p.M) else BoxedLCP(sp.csr_matrix(p.M), p.q, p.lo, p.hi, p.findex, p.mu)
    assert _kkt_error(check, ref) < 1e-6
    rng = np.random.default_rng(3)
    normal = p.findex < 0
    z0 = ref.copy()
    z0[normal] *= 1.0 + 0.3 * rng.uniform(-1.0, 1.0, normal.sum())     # another split of each face's load
    assert _kkt_error(check, z0) > 1e-3                                      # the start is not an answer
    s = solve(p, "box-qp", warm_start=z0, proximal=1e-7)
    assert s.success and s.info["proximal"] > 0.0
    assert s.relative_residual <= 1e-6
    assert _kkt_error(check, s.z) < 1e-6                                     # the original LCP, from its data
