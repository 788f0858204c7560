"""Islands: a step's boxed LCP split into the independent groups of rows it is made of.

Two rows of a contact problem interact only through a body they share: the entry (i, j) of
H M^-1 H' is zero unless rows i and j touch a common moving body, and a friction row's bounds
couple it to its normal (``findex``). The connected components of that graph (rows as nodes, nonzero
entries and findex links as edges) are the islands: separate piles or stacks,
a grasped object apart from a box on the floor. Each island's boxed LCP is solved on its own
(``solve()`` on the sub-problem: a dense, compiled path where a whole scene's matrix would be a
sparse one), and the assembled answer is certified on the whole problem by its own ``certify``, so
the step's status means the same as for one solve of the whole.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..kernels.components import csr_components, dense_components
from ..kernels.tolerances import CERTIFY
from ..problems import BoxedLCP
from ..problems.islands import island_problem, island_rows
from ..solution import SUCCESS_STATUSES, Solution, Status


def island_labels(problem: BoxedLCP) -> tuple[int, np.ndarray]:
    """(count, label per row) of the connected components of the problem's coupling graph: nonzero
    off-diagonal entries of M and the friction rows' links to their normal (findex); one compiled
    union-find pass over M where it lies (:mod:`contactlab.kernels.components`)."""
    M = problem.M
    findex = getattr(problem, "findex", None)      # an LCP's rows couple through M alone
    if findex is None:
        findex = np.full(problem.n, -1, dtype=np.int64)
    if sp.issparse(M):
        M = sp.csr_matrix(M)
        return csr_components(M.indptr, M.indices, M.data, findex)
    return dense_components(np.ascontiguousarray(M, dtype=np.float64), findex)


#: ``Simulator(islands=None)`` splits an LCP step into its islands from this many rows on: below it a
#: solve() per island costs more than the whole solve saves (chosen on the column collapse and piles:
#: docs/benchmarks-sim.md, "Stewart-Trinkle piles island by island")
AUTO_MIN_ROWS = 100

#: islands of a sparse problem up to this many rows are solved as dense problems (the solvers'
#: compiled dense paths; :mod:`contactlab.problems.islands`), larger ones stay sparse (box friction's own dense_max)
DENSE_ISLAND = 200


def solve_islands(problem: BoxedLCP, method: str, solve_fn, warm_start=None, min_islands: int = 2,
                  **options) -> Solution | None:
    """Solve ``problem`` island by island with ``solve_fn(sub_problem, method, **options)`` (solve());
    None when it has fewer than ``min_islands`` islands (then solve the whole as usual). The islands
    are the problem's own ``islands`` (count, label per row) where its model set them (box friction's
    sparse problems, from the bodies each row touches: :func:`contactlab.kernels.components.row_block_components`),
    else found from the matrix (:func:`island_labels`).

    A dense factorisation costs n^3, the islands' sum n_i^3 (docs/benchmarks-tuning.md). box-qp solves a sparse problem's own islands itself, in one compiled call
    (box-qp's islands, :mod:`contactlab.solvers.box_qp.islands`), without a solve() per island: this path serves the other
    methods (``Simulator(islands=True)``).

    The answer is SOLVED when every island's solve is and the assembled z certifies on the whole
    problem (its relative residual at most max(tol, CERTIFY), as solve() decides); otherwise the
    worst island's status. Iterations and pivots are summed; ``info['islands']`` is the count and
    ``info['island_sizes']`` the rows per island."""
    own = getattr(problem, "islands", None)
    count, labels = own if own is not None else island_labels(problem)
    if count < min_islands:
        return None
    t0 = time.perf_counter()
    order, bounds = island_rows(count, labels)
    z = np.zeros(problem.n)
    its = pivots = 0
    statuses = []
    for k in range(count):
        idx = order[bounds[k]:bounds[k + 1]]
        sub = island_problem(problem, idx, DENSE_ISLAND)
        kw = dict(options)
        if warm_start is not None:
            kw["warm_start"] = np.asarray(warm_start, dtype=np.float64)[idx]
        s = solve_fn(sub, method, **kw)
        z[idx] = s.z
        its += int(s.iterations)
        pivots += int(s.pivots)
        statuses.append(s.status)
    w, absolute, relative = problem.certify(z)
    rel = max(relative.natural, relative.infeasibility)
    tol = max(float(options.get("tol", 0.0) or 0.0), CERTIFY)
    failed = [s for s in statuses if s not in SUCCESS_STATUSES]
    status = Status.SOLVED if not failed and rel <= tol else (failed[0] if failed else Status.NUMERICAL_FAILURE)
    return Solution(z=z, w=w, status=status, iterations=its, pivots=pivots, residual=absolute.natural,
                    method=method, complementarity=absolute.complementarity, infeasibility=absolute.infeasibility,
                    relative_residual=rel, time_s=time.perf_counter() - t0,
                    info={"islands": int(count), "island_sizes": np.diff(bounds).tolist()})
